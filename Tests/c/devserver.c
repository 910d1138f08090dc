#define _POSIX_C_SOURCE 200809L
#include "devserver.h"
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

const char *devserver_binary(void) {
    const char *binary = getenv("SYNCSTORE_DEVSERVER");
    if (!binary || !*binary) {
        fprintf(stderr, "SYNCSTORE_DEVSERVER is not set: it names the syncstore-devserver binary (ctest sets it)\n");
        exit(2);
    }
    if (access(binary, X_OK) != 0) {
        fprintf(stderr, "devserver binary %s is missing: build it first (swift build)\n", binary);
        exit(2);
    }
    return binary;
}

void devserver_start(devserver *server, const char *binary, const char *const *extra_args) {
    int fds[2];
    if (pipe(fds) != 0) { perror("pipe"); exit(2); }
    const char *args[64];
    int n = 0;
    args[n++] = binary;
    args[n++] = "--host"; args[n++] = "127.0.0.1";
    args[n++] = "--port"; args[n++] = "0";
    args[n++] = "--token"; args[n++] = DEVSERVER_TOKEN;
    for (int i = 0; extra_args && extra_args[i] && n < 62; i++) args[n++] = extra_args[i];
    args[n] = NULL;
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(2); }
    if (pid == 0) {
        /* A test that crashes or aborts (a sanitizer report) takes its server with it: an
         * orphaned server would hold CTest's output pipe open and hang the run. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(binary, (char *const *)args);
        perror("exec devserver");
        _exit(127);
    }
    close(fds[1]);
    FILE *out = fdopen(fds[0], "r");
    if (!out || !fgets(server->url, sizeof server->url, out)) {
        fprintf(stderr, "devserver %s did not print its URL\n", binary);
        kill(pid, SIGKILL);
        exit(2);
    }
    server->url[strcspn(server->url, "\r\n")] = 0;
    server->pid = pid;
    /* The server prints only its URL on stdout (logs go to stderr); keep the pipe open until stop. */
    server->out = out;
}

void devserver_stop(devserver *server) {
    if (server->pid > 0) {
        kill(server->pid, SIGTERM);
        waitpid(server->pid, NULL, 0);
        server->pid = 0;
        fclose(server->out);
        server->out = NULL;
    }
}

typedef struct { char *data; size_t len; } buffer;

static size_t collect(char *data, size_t size, size_t count, void *ctx) {
    buffer *b = ctx;
    size_t n = size * count;
    char *grown = realloc(b->data, b->len + n + 1);
    if (!grown) return 0;
    b->data = grown;
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = 0;
    return n;
}

json_t *devserver_call(const devserver *server, const char *method, const char *path, const char *body, long *status) {
    char url[8192];
    if (path[0] == '/') snprintf(url, sizeof url, "%s%s", server->url, path);
    else snprintf(url, sizeof url, "%s/services/data/v62.0/%s", server->url, path);
    CURL *curl = curl_easy_init();
    buffer b = {NULL, 0};
    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, "Authorization: Bearer " DEVSERVER_TOKEN);
    headers = curl_slist_append(headers, "Content-Type: application/json");
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &b);
    if (body) curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    CURLcode rc = curl_easy_perform(curl);
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    if (status) *status = rc == CURLE_OK ? code : -1;
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    json_t *result = b.len ? json_loads(b.data, JSON_DECODE_ANY, NULL) : NULL;
    free(b.data);
    return result;
}

long devserver_count(const devserver *server, const char *soql) {
    char *escaped = curl_easy_escape(NULL, soql, 0);
    char path[8192];
    snprintf(path, sizeof path, "query?q=%s", escaped);
    curl_free(escaped);
    long status = 0;
    json_t *answer = devserver_call(server, "GET", path, NULL, &status);
    long total = status == 200 ? (long)json_integer_value(json_object_get(answer, "totalSize")) : -1;
    json_decref(answer);
    return total;
}

char *devserver_remote_json(const devserver *server, const char *extra_members) {
    char *json = malloc(1024);
    snprintf(json, 1024, "{\"instanceUrl\":\"%s\",\"accessToken\":\"%s\"%s%s}", server->url, DEVSERVER_TOKEN,
             extra_members ? "," : "", extra_members ? extra_members : "");
    return json;
}
