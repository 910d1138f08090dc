#ifndef SYNCSTORE_CCURL_SHIM_H
#define SYNCSTORE_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt / curl_easy_getinfo are variadic; Swift needs typed entry points. */
static inline CURLcode ccurl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }

typedef size_t (*ccurl_write_fn)(char *data, size_t size, size_t count, void *context);
typedef size_t (*ccurl_read_fn)(char *buffer, size_t size, size_t count, void *context);
typedef int (*ccurl_progress_fn)(void *context, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);

/* Body sink. */
static inline CURLcode ccurl_set_writer(CURL *h, ccurl_write_fn fn, void *context) {
    CURLcode rc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, fn);
    return rc != CURLE_OK ? rc : curl_easy_setopt(h, CURLOPT_WRITEDATA, context);
}

/* Request body source. No seek callback is set on purpose: when a reused connection dies after
 * the body was sent, libcurl would rewind and resend the request on a new connection; without a
 * way to rewind it fails with CURLE_SEND_FAIL_REWIND instead, so a write the server may have
 * committed is never sent twice by the transport. */
static inline CURLcode ccurl_set_reader(CURL *h, ccurl_read_fn fn, void *context) {
    CURLcode rc = curl_easy_setopt(h, CURLOPT_READFUNCTION, fn);
    return rc != CURLE_OK ? rc : curl_easy_setopt(h, CURLOPT_READDATA, context);
}

/* Response header lines (for the Date header: the server's clock). */
static inline CURLcode ccurl_set_header_fn(CURL *h, ccurl_write_fn fn, void *context) {
    CURLcode rc = curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, fn);
    return rc != CURLE_OK ? rc : curl_easy_setopt(h, CURLOPT_HEADERDATA, context);
}

/* Progress hook: returning non-zero aborts the transfer (how a stopped sync cancels). */
static inline CURLcode ccurl_set_progress(CURL *h, ccurl_progress_fn fn, void *context) {
    CURLcode rc = curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, fn);
    if (rc == CURLE_OK) rc = curl_easy_setopt(h, CURLOPT_XFERINFODATA, context);
    return rc != CURLE_OK ? rc : curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
}
#endif
