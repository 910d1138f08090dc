/* Static page server for bench-sync: serves query pages from memory, so a sync down
 * from it measures the client alone, without the dev server's CPU in the figure.
 *
 * Recording: a GET it does not hold yet is forwarded to --upstream (libcurl, the request's
 * Authorization and Sforce-Query-Options headers passed on) and the answer kept in memory under
 * the request target (path and query, nextRecordsUrl paging included: the pages keep the
 * upstream's relative next URLs, which name the same targets here). GET /__bench/seal ends
 * recording: from then on a target not held is answered 404, so a timed run can never reach
 * the upstream; GET /__bench/stats answers {"pages":N,"served":S,"forwarded":F}.
 * HTTP/1.1 keep-alive, one thread per connection, GET only (anything else: 501).
 *
 * Usage: bench-sync-static --host 127.0.0.1 --port 0 --token T --upstream URL
 *   (the dev server's arguments, so bench-sync starts it as it starts a dev server); prints its
 *   base URL as the first line on stdout. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include "bench_io.h"

typedef struct {
    char *target;
    long status;
    char *body;
    size_t len;
} page;

static struct {
    pthread_mutex_t lock;
    page *pages;
    size_t n, cap;
    int sealed;
    long long served, forwarded;
} cache = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0, 0};

static const char *upstream;

static void die(const char *what, const char *detail) {
    fprintf(stderr, "bench-sync-static: %s: %s\n", what, detail ? detail : "");
    exit(1);
}

/* The page held for target (copied out under the lock), or forwarded and kept while recording.
 * Returns 0 when it is neither held nor fetchable. */
static int lookup(const char *target, const char *auth, const char *options, page *out) {
    pthread_mutex_lock(&cache.lock);
    for (size_t i = 0; i < cache.n; i++)
        if (!strcmp(cache.pages[i].target, target)) {
            *out = cache.pages[i];
            cache.served++;
            pthread_mutex_unlock(&cache.lock);
            return 1;
        }
    int sealed = cache.sealed;
    pthread_mutex_unlock(&cache.lock);
    if (sealed) return 0;

    CURL *curl = curl_easy_init();
    if (!curl) return 0;
    size_t url_len = strlen(upstream) + strlen(target) + 1;
    char *url = malloc(url_len);
    snprintf(url, url_len, "%s%s", upstream, target);
    struct curl_slist *headers = NULL;
    if (auth) headers = curl_slist_append(headers, auth);
    if (options) headers = curl_slist_append(headers, options);
    headers = curl_slist_append(headers, "Accept: application/json");
    buffer body = {0};
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    free(url);
    if (rc != CURLE_OK) { free(body.data); return 0; }
    page p = {strdup(target), status, body.data ? body.data : strdup(""), body.len};
    pthread_mutex_lock(&cache.lock);
    if (cache.n == cache.cap) {
        cache.cap = cache.cap ? cache.cap * 2 : 256;
        cache.pages = realloc(cache.pages, sizeof *cache.pages * cache.cap);
        if (!cache.pages) die("memory", "pages");
    }
    cache.pages[cache.n++] = p;
    cache.forwarded++;
    pthread_mutex_unlock(&cache.lock);
    *out = p;
    return 1;
}

static int send_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n <= 0) return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static int respond(int fd, long status, const char *body, size_t len) {
    char head[256];
    const char *reason = status == 200 ? "OK" : status == 404 ? "Not Found" : status == 501 ? "Not Implemented" : "Status";
    int n = snprintf(head, sizeof head, "HTTP/1.1 %ld %s\r\nContent-Type: application/json;charset=UTF-8\r\nContent-Length: %zu\r\n\r\n",
                     status, reason, len);
    return send_all(fd, head, (size_t)n) || send_all(fd, body, len);
}

static int respond_text(int fd, long status, const char *body) { return respond(fd, status, body, strlen(body)); }

/* A request header's whole line ("Name: value"), copied into out; NULL when absent. */
static const char *header_line(const char *head, const char *name, char *out, size_t size) {
    size_t n = strlen(name);
    for (const char *line = strstr(head, "\r\n"); line && line[2] && line[2] != '\r'; line = strstr(line + 2, "\r\n")) {
        if (!strncasecmp(line + 2, name, n) && line[2 + n] == ':') {
            const char *end = strstr(line + 2, "\r\n");
            snprintf(out, size, "%.*s", (int)(end - line - 2), line + 2);
            return out;
        }
    }
    return NULL;
}

static void *connection(void *arg) {
    int fd = (int)(long)arg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    size_t cap = 1 << 16, len = 0;
    char *in = malloc(cap);
    for (;;) {
        char *end;
        while (!(in[len] = 0, end = strstr(in, "\r\n\r\n"))) {
            if (len + 1 >= cap) goto done;  /* a head larger than 64 KB: not a client of ours */
            ssize_t n = recv(fd, in + len, cap - 1 - len, 0);
            if (n <= 0) goto done;
            len += (size_t)n;
        }
        size_t head_len = (size_t)(end - in) + 4;
        char method[16], target[16384], auth[4096], options[256], value[64];
        if (sscanf(in, "%15s %16383s", method, target) != 2) goto done;
        const char *a = header_line(in, "Authorization", auth, sizeof auth);
        const char *o = header_line(in, "Sforce-Query-Options", options, sizeof options);
        int close_after = header_line(in, "Connection", value, sizeof value) && strcasestr(value, "close");
        size_t body_len = header_line(in, "Content-Length", value, sizeof value) ? strtoul(strchr(value, ':') + 1, NULL, 10) : 0;
        /* Drop the request (and a body, which no GET of ours has) from the buffer. */
        size_t used = head_len + body_len;
        if (used >= cap) goto done;
        while (len < used) {
            ssize_t n = recv(fd, in + len, cap - 1 - len, 0);
            if (n <= 0) goto done;
            len += (size_t)n;
        }
        memmove(in, in + used, len - used);
        len -= used;
        int rc;
        if (strcmp(method, "GET") != 0) {
            rc = respond_text(fd, 501, "[{\"message\":\"bench-sync-static serves GET only\",\"errorCode\":\"NOT_IMPLEMENTED\"}]");
        } else if (!strcmp(target, "/__bench/seal") || !strcmp(target, "/__bench/stats")) {
            char body[256];
            pthread_mutex_lock(&cache.lock);
            if (!strcmp(target, "/__bench/seal")) cache.sealed = 1;
            int n = snprintf(body, sizeof body, "{\"pages\":%zu,\"served\":%lld,\"forwarded\":%lld}", cache.n, cache.served, cache.forwarded);
            pthread_mutex_unlock(&cache.lock);
            rc = respond(fd, 200, body, (size_t)n);
        } else {
            page p;
            if (lookup(target, a, o, &p)) rc = respond(fd, p.status, p.body, p.len);
            else rc = respond_text(fd, 404, "[{\"message\":\"bench-sync-static: no such page recorded\",\"errorCode\":\"NOT_FOUND\"}]");
        }
        if (rc || close_after) break;
    }
done:
    free(in);
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1";
    int port = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--host")) host = argv[i + 1];
        else if (!strcmp(argv[i], "--port")) port = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--upstream")) upstream = argv[i + 1];
        else if (strcmp(argv[i], "--token") != 0) die("unknown argument", argv[i]);
    }
    if (!upstream) die("usage", "bench-sync-static --host H --port P --token T --upstream URL");
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) die("host", host);
    if (bind(s, (struct sockaddr *)&addr, sizeof addr) || listen(s, 64)) die("bind", host);
    socklen_t alen = sizeof addr;
    getsockname(s, (struct sockaddr *)&addr, &alen);
    printf("http://%s:%d\n", host, ntohs(addr.sin_port));
    fflush(stdout);
    for (;;) {
        int fd = accept(s, NULL, NULL);
        if (fd < 0) continue;
        pthread_t t;
        if (pthread_create(&t, NULL, connection, (void *)(long)fd) != 0) { close(fd); continue; }
        pthread_detach(t);
    }
}
