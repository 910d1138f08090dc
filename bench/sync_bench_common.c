/* What the sync benchmarks share: failing, the engine children's common steps (open, wait,
 * count), child processes with their time, CPU and peak RSS, and the dev servers of a run. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync_bench.h"

void fail(const char *what, const char *detail) {
    fprintf(stderr, "bench-sync: %s: %s\n", what, detail ? detail : "");
    exit(1);
}

void check(int rc, const char *what, const syncstore_error *err) {
    if (rc != SYNCSTORE_OK) fail(what, err->message);
}

/* ---------------------------------------------------------------------------------------------
 * Children: the engine, in a process of its own so its peak RSS is its own
 * ------------------------------------------------------------------------------------------- */

double cpu_self(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

syncstore_store *engine_open(const char *dir, const char *url, const char *token, const char *cafile,
                                    const char *indexes) {
    char command[2048];
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(command) != 0) fail("work dir", dir);
    syncstore_error err;
    syncstore_store *store = NULL;
    const char *config = getenv(STORE_CONFIG_ENV);
    check(syncstore_open(dir, config && *config ? config : "{\"storeName\":\"bench\"}", &store, &err), "open", &err);
    check(syncstore_register_soup(store, "contacts", indexes, &err), "register_soup", &err);
    json_t *remote = json_pack("{s:s,s:s}", "instanceUrl", url, "accessToken", token);
    if (cafile && strcmp(cafile, "-") != 0) json_object_set_new(remote, "caBundle", json_string(cafile));
    char *text = json_dumps(remote, JSON_COMPACT);
    check(syncstore_set_remote(store, text, &err), "set_remote", &err);
    free(text);
    json_decref(remote);
    return store;
}

/* Waits for a sync; fails unless it ends DONE. */
void wait_done(syncstore_store *store, int64_t id, const char *what) {
    syncstore_error err;
    char *out = NULL;
    check(syncstore_wait_sync(store, id, -1, &out, &err), "wait_sync", &err);
    json_t *state = json_loads(out, 0, NULL);
    const char *status = json_string_value(json_object_get(state, "status"));
    if (!status || strcmp(status, "DONE") != 0) {
        fprintf(stderr, "bench-sync: %s ended %s: %s\n", what, status ? status : "?", out);
        exit(1);
    }
    json_decref(state);
    syncstore_free(out);
}

long long count_where(syncstore_store *store, const char *condition) {
    char sql[512];
    snprintf(sql, sizeof sql, "select count(*) from {contacts}%s%s", condition ? " where " : "", condition ? condition : "");
    json_t *spec = json_pack("{s:s,s:s,s:i}", "queryType", "smart", "smartSql", sql, "pageSize", 1);
    char *text = json_dumps(spec, JSON_COMPACT), *out = NULL;
    syncstore_error err;
    check(syncstore_run_smart_query(store, text, &out, &err), "count", &err);
    json_t *cursor = json_loads(out, 0, NULL);
    long long n = json_integer_value(json_array_get(json_array_get(json_object_get(cursor, "currentPageOrderedEntries"), 0), 0));
    syncstore_cursor_close(store, json_integer_value(json_object_get(cursor, "cursorId")), NULL);
    json_decref(cursor);
    syncstore_free(out);
    free(text);
    json_decref(spec);
    return n;
}

char *soql_target(const char *soql) {
    json_t *target = json_pack("{s:s,s:s,s:i}", "type", "soql", "query", soql, "maxBatchSize", 2000);
    char *text = json_dumps(target, JSON_COMPACT);
    json_decref(target);
    return text;
}

/* ---------------------------------------------------------------------------------------------
 * The parent: servers, children, ratios
 * ------------------------------------------------------------------------------------------- */

/* Servers started by this run: stopped at exit, and checked when a child fails. */
static devserver *live_servers[8];

void track_server(devserver *server, int on) {
    for (int i = 0; i < 8; i++)
        if (on ? !live_servers[i] : live_servers[i] == server) { live_servers[i] = on ? server : NULL; return; }
}

void stop_servers(void) {
    for (int i = 0; i < 8; i++)
        if (live_servers[i]) { devserver_stop(live_servers[i]); live_servers[i] = NULL; }
}

/* Says so when a server this run started is gone (a failed request may be the server's fault). */
static void report_dead_servers(void) {
    for (int i = 0; i < 8; i++) {
        devserver *s = live_servers[i];
        int status = 0;
        if (s && s->pid > 0 && waitpid(s->pid, &status, WNOHANG) == s->pid) {
            if (WIFSIGNALED(status)) fprintf(stderr, "bench-sync: the devserver %s was killed by signal %d\n", s->url, WTERMSIG(status));
            else fprintf(stderr, "bench-sync: the devserver %s exited with status %d\n", s->url, WEXITSTATUS(status));
            s->pid = 0;
        }
    }
}

/* Runs argv (NULL-ended) with stdout captured; exits on failure or if it prints no records=. */
child_result run_child(char *const argv[]) {
    child_result r;
    memset(&r, 0, sizeof r);
    int fds[2];
    if (pipe(fds) != 0) fail("pipe", strerror(errno));
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) fail("fork", strerror(errno));
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t got;
    char sink[4096];
    while ((got = read(fds[0], len + 1 < sizeof r.out ? r.out + len : sink,
                       len + 1 < sizeof r.out ? sizeof r.out - 1 - len : sizeof sink)) > 0)
        if (len + 1 < sizeof r.out) len += (size_t)got;
    r.out[len] = 0;
    close(fds[0]);
    int status = 0;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) < 0) fail("wait4", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench-sync: child %s %s failed (status %d): %s\n", argv[0], argv[1], status, r.out);
        report_dead_servers();
        exit(1);
    }
    const char *rec = strstr(r.out, "records="), *sec = strstr(r.out, "seconds=");
    if (!rec || !sec) fail("child printed no result", r.out);
    r.records = atoll(rec + 8);
    r.seconds = atof(sec + 8);
    r.maxrss_kb = usage.ru_maxrss;
    r.cpu = (double)usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + (double)usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
    return r;
}

void add(series *s, child_result r, long long expected) {
    if (r.records != expected) {
        fprintf(stderr, "bench-sync: %s stored %lld records, expected %lld\n", s->name, r.records, expected);
        exit(1);
    }
    if (s->runs == 0 || r.seconds < s->best) { s->best = r.seconds; s->cpu = r.cpu; }
    if (r.maxrss_kb > s->maxrss_kb) s->maxrss_kb = r.maxrss_kb;
    s->records = r.records;
    s->runs++;
}

double rate(const series *s) { return s->runs ? (double)s->records / s->best : 0; }

void print_series(const series *s) {
    if (!s->runs) return;
    printf("  %-34s %10.0f rec/s  %7.3f s  peak RSS %7.1f MB  CPU %6.2f s  (best of %d)\n", s->name, rate(s), s->best,
           s->maxrss_kb / 1024.0, s->cpu, s->runs);
}

char self_path[4096], baseline_path[4096], limit_path[4096], static_path[4096];

/* A program built beside bench-sync. */
static void beside(char *path, size_t size, const char *name) {
    snprintf(path, size, "%s", self_path);
    char *slash = strrchr(path, '/');
    snprintf(slash + 1, size - (size_t)(slash + 1 - path), "%s", name);
    if (access(path, X_OK) != 0) fail("not found beside bench-sync (build the bench-sync target)", path);
}

void find_programs(void) {
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0) fail("readlink", "/proc/self/exe");
    self_path[n] = 0;
    beside(baseline_path, sizeof baseline_path, "bench-sync-baseline");
    beside(limit_path, sizeof limit_path, "bench-sync-limit");
    beside(static_path, sizeof static_path, "bench-sync-static");
}

void make_dir(const char *dir) {
    char command[2048];
    snprintf(command, sizeof command, "mkdir -p '%s'", dir);
    if (system(command) != 0) fail("mkdir", dir);
}

void start_server(devserver *server, const char *binary, const char *seed, const char *faults, const char *cert, const char *key) {
    const char *args[16];
    int n = 0;
    args[n++] = "--seed"; args[n++] = seed;
    if (faults) { args[n++] = "--faults"; args[n++] = faults; }
    if (cert) { args[n++] = "--tls-cert"; args[n++] = cert; args[n++] = "--tls-key"; args[n++] = key; }
    args[n] = NULL;
    double t0 = now_s();
    devserver_start(server, binary, args);
    track_server(server, 1);
    printf("  server %s  --seed %s%s%s%s: ready in %.1f s\n", server->url, seed, faults ? "  --faults " : "", faults ? faults : "",
           cert ? "  (TLS)" : "", now_s() - t0);
    fflush(stdout);
}

void stop_server(devserver *server) {
    track_server(server, 0);
    devserver_stop(server);
}

const char *verdict(int ok) { return ok ? "MET" : "MISSED"; }

/* The number after "name=" in a child's output (0 when absent). */
double field(const char *out, const char *name) {
    char key[64];
    snprintf(key, sizeof key, " %s=", name);
    const char *p = strstr(out, key);
    return p ? atof(p + strlen(key)) : 0;
}

/* The Ids of the first n Contacts by LastModifiedDate (the order a sync down stores them in). */
json_t *server_ids(const devserver *server, long long n) {
    char soql[256], path[8192];
    snprintf(soql, sizeof soql, "SELECT Id FROM Contact ORDER BY LastModifiedDate LIMIT %lld", n);
    char *escaped = curl_easy_escape(NULL, soql, 0);
    snprintf(path, sizeof path, "query?q=%s", escaped);
    curl_free(escaped);
    json_t *ids = json_array();
    while (path[0]) {
        long status = 0;
        json_t *page = devserver_call(server, "GET", path, NULL, &status);
        if (status != 200) fail("server ids", "query failed");
        size_t i;
        json_t *record;
        json_array_foreach(json_object_get(page, "records"), i, record) json_array_append(ids, json_object_get(record, "Id"));
        const char *next = json_string_value(json_object_get(page, "nextRecordsUrl"));
        snprintf(path, sizeof path, "%s", next ? next : "");
        json_decref(page);
    }
    if ((long long)json_array_size(ids) != n) fail("server ids", "fewer records than asked for");
    return ids;
}

/* The store config JSON {"storeName":"bench","key":K,"kdfIter":N} (no key: plaintext). */
char *bench_store_config(const char *key, int kdf_iter) {
    json_t *config = json_pack("{s:s}", "storeName", "bench");
    if (key) json_object_set_new(config, "key", json_string(key));
    if (key && kdf_iter > 0) json_object_set_new(config, "kdfIter", json_integer(kdf_iter));
    char *text = json_dumps(config, JSON_COMPACT);
    json_decref(config);
    return text;
}

