#ifndef BK_CCURL_SHIM_H
#define BK_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt / curl_multi_setopt / curl_easy_getinfo are variadic: Swift cannot call them.
   These typed wrappers pass each argument with the exact C type curl expects (integers as long). */
static inline CURLcode bk_curl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode bk_curl_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode bk_curl_easy_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode bk_curl_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode bk_curl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
/* Also used for CURLOPT_HEADERFUNCTION, which has the same signature. */
typedef size_t (*bk_curl_write_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);
static inline CURLcode bk_curl_easy_setopt_write_function(CURL *h, CURLoption o, bk_curl_write_callback v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode bk_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode bk_curl_easy_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode bk_curl_easy_getinfo_pointer(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLMcode bk_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLcode bk_curl_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
/* CURL_GLOBAL_DEFAULT is a macro expression Swift does not import. */
static inline CURLcode bk_curl_global_init_default(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }
#endif
