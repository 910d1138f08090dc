#ifndef SYNCSTORE_CCURL_SHIM_H
#define SYNCSTORE_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt / curl_easy_getinfo are variadic; Swift needs typed entry points. */
static inline CURLcode ccurl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }

typedef size_t (*ccurl_write_fn)(char *data, size_t size, size_t count, void *context);
typedef int (*ccurl_progress_fn)(void *context, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);

/* Body sink. */
static inline CURLcode ccurl_set_writer(CURL *h, ccurl_write_fn fn, void *context) {
    CURLcode rc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, fn);
    return rc != CURLE_OK ? rc : curl_easy_setopt(h, CURLOPT_WRITEDATA, context);
}

/* Progress hook: returning non-zero aborts the transfer (how a stopped sync cancels). */
static inline CURLcode ccurl_set_progress(CURL *h, ccurl_progress_fn fn, void *context) {
    CURLcode rc = curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, fn);
    if (rc == CURLE_OK) rc = curl_easy_setopt(h, CURLOPT_XFERINFODATA, context);
    return rc != CURLE_OK ? rc : curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
}
#endif
