#ifndef SYNCSTORE_CCURL_SHIM_H
#define SYNCSTORE_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt / curl_easy_getinfo are variadic; Swift needs typed entry points. */
static inline CURLcode ccurl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
#endif
