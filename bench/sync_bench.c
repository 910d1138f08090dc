/* Sync benchmarks (issue 4; not part of the tests), each with its baselines in the same run.
 *
 * 1. Sync down N Contacts (9 fields; soup with 3 string indexes: Id, LastName, Email) from a
 *    syncstore-devserver started here on 127.0.0.1 (--seed Account=1000,Contact=N):
 *      engine        syncstore_sync_down (soql target, maxBatchSize 2000) + syncstore_wait_sync
 *      baseline (a)  bench-sync-baseline: libcurl keep-alive + jansson + SQLite by hand, same
 *                    pages, same table shape, one transaction per page
 *      baseline (b)  bench/sync_down_python.py: simple-salesforce query_all + sqlite3
 *      fetch only    bench-sync-baseline --fetch-only: the HTTP pages alone (server + libcurl)
 *    Over HTTPS (simple-salesforce only speaks https; self-signed certificate made with the
 *    openssl CLI) for all of them, then engine vs (a) again over plain HTTP.
 *    Every client runs in its own child process: records/s from the child's own timer (first
 *    request to last commit), peak RSS = ru_maxrss from wait4(), CPU = user + sys of the child.
 *    Rounds (default 5) alternate the clients; the best time of each is kept, and the highest
 *    RSS. Wall times on a shared 2-core machine with the store on disk swing by +-50% from run
 *    to run; the CPU seconds printed beside them are steadier.
 * 2. Peak RSS of the engine syncing down M records (default 1,000,000) over HTTP, with (a) beside
 *    it for reference.
 * 3. Sync up: U records (default 10,000) synced down, then modified locally (__local__,
 *    __locally_updated__, new LastName and Title) and pushed with --faults 'latency=MS' (every
 *    request) on the server: "collection" target (batches of 200, the default) vs "single"
 *    (one request per record). The per-record run pushes S records (default 1,000) and is
 *    scaled to U linearly unless S = U; the output says which.
 *
 * 4. (--encryption, instead of 1-3) Encryption at rest: sync down N Contacts into a plaintext
 *    store and into an encrypted one ("key": K, default a passphrase; "kdfIter": N, default
 *    256000; the store is opened before the timer starts, so the KDF is not in the figure), in
 *    alternating rounds (P E, E P, ...), over HTTPS and over plain HTTP (--no-http: HTTPS only),
 *    with fetch only beside them; best and median records/s, CPU seconds of the sync itself, and
 *    encrypted/plaintext ratios. Lines starting with "ENC|" are the summary.
 *
 * Usage: bench-sync [--devserver PATH] [--work DIR] [--python PATH|none] [--records N]
 *                   [--rounds R] [--rss-records M|0] [--up-records U|0] [--single-records S]
 *                   [--latency MS] [--no-http] [--key K] [--kdf-iter N] [--encryption]
 *   --key K, --kdf-iter N: the engine's stores are encrypted (in 1-3: every engine run).
 * Internal (the children): bench-sync engine-down URL TOKEN DIR CAFILE|- SOQL
 *                          bench-sync engine-up URL TOKEN DIR MODE N TAG
 *   with the store config JSON in the environment variable SYNCSTORE_BENCH_STORE_CONFIG
 *   (default {"storeName":"bench"}). */
#define _GNU_SOURCE
#include "../Tests/c/devserver.h"
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <syncstore.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"

#ifndef SYNCSTORE_BENCH_DEVSERVER
#define SYNCSTORE_BENCH_DEVSERVER ".build/release/syncstore-devserver"
#endif
#ifndef SYNCSTORE_SOURCE_DIR
#define SYNCSTORE_SOURCE_DIR "."
#endif

#define SOQL "SELECT Id, FirstName, LastName, Email, Phone, Title, AccountId, MailingCity, LastModifiedDate " \
             "FROM Contact ORDER BY LastModifiedDate"
#define INDEXES "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},{\"path\":\"Email\",\"type\":\"string\"}]"
#define UP_INDEXES "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},{\"path\":\"Email\",\"type\":\"string\"}," \
                   "{\"path\":\"__local__\",\"type\":\"string\"}]"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "bench-sync: %s: %s\n", what, detail ? detail : "");
    exit(1);
}

static void check(int rc, const char *what, const syncstore_error *err) {
    if (rc != SYNCSTORE_OK) fail(what, err->message);
}

/* ---------------------------------------------------------------------------------------------
 * Children: the engine, in a process of its own so its peak RSS is its own
 * ------------------------------------------------------------------------------------------- */

static long vm_hwm_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    return kb;
}

static double cpu_self(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

#define STORE_CONFIG_ENV "SYNCSTORE_BENCH_STORE_CONFIG"

static syncstore_store *engine_open(const char *dir, const char *url, const char *token, const char *cafile,
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
static void wait_done(syncstore_store *store, int64_t id, const char *what) {
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

static long long count_where(syncstore_store *store, const char *condition) {
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

static char *soql_target(const char *soql) {
    json_t *target = json_pack("{s:s,s:s,s:i}", "type", "soql", "query", soql, "maxBatchSize", 2000);
    char *text = json_dumps(target, JSON_COMPACT);
    json_decref(target);
    return text;
}

/* engine-down URL TOKEN DIR CAFILE|- SOQL: one sync down into a fresh store. */
static int engine_down(char **argv) {
    const char *url = argv[0], *token = argv[1], *dir = argv[2], *cafile = argv[3], *soql = argv[4];
    syncstore_store *store = engine_open(dir, url, token, cafile, INDEXES);
    char *target = soql_target(soql);
    syncstore_error err;
    int64_t id = 0;
    double c0 = cpu_self();
    double t0 = now_s();
    check(syncstore_sync_down(store, target, "contacts", NULL, NULL, NULL, NULL, &id, &err), "sync_down", &err);
    wait_done(store, id, "sync down");
    double elapsed = now_s() - t0;
    double cpu = cpu_self() - c0;
    long long n = count_where(store, NULL);
    long hwm = vm_hwm_kb();
    check(syncstore_close(store, &err), "close", &err);
    free(target);
    printf("records=%lld seconds=%.6f hwm_kb=%ld sync_cpu=%.6f\n", n, elapsed, hwm, cpu);
    return 0;
}

/* engine-up URL TOKEN DIR MODE N TAG: sync down everything, modify the first N entries
 * (LastName, Title = TAG, dirty flags), then time one sync up with target type MODE. */
static int engine_up(char **argv) {
    const char *url = argv[0], *token = argv[1], *dir = argv[2], *mode = argv[3], *tag = argv[5];
    long long n = atoll(argv[4]);
    syncstore_store *store = engine_open(dir, url, token, "-", UP_INDEXES);
    syncstore_error err;
    int64_t id = 0;
    char *target = soql_target("SELECT Id, FirstName, LastName, Email, Title FROM Contact");
    double t0 = now_s();
    check(syncstore_sync_down(store, target, "contacts", NULL, NULL, NULL, NULL, &id, &err), "sync_down", &err);
    wait_done(store, id, "sync down");
    double down = now_s() - t0;
    free(target);
    long long total = count_where(store, NULL);
    if (total < n) fail("sync up", "fewer records on the server than --up-records");

    /* The first n entries by _soupEntryId, modified in memory, then written back in batches. */
    char spec[256];
    snprintf(spec, sizeof spec, "{\"queryType\":\"range\",\"indexPath\":\"_soupEntryId\",\"beginKey\":1,\"endKey\":%lld,"
             "\"orderPath\":\"_soupEntryId\",\"pageSize\":1000}", n);
    char *out = NULL;
    check(syncstore_query_soup(store, "contacts", spec, &out, &err), "query_soup", &err);
    json_t *cursor = json_loads(out, 0, NULL);
    syncstore_free(out);
    int64_t cursor_id = json_integer_value(json_object_get(cursor, "cursorId"));
    long long pages = json_integer_value(json_object_get(cursor, "totalPages"));
    for (long long p = 0; p < pages && p < 100000; p++) {
        if (p > 0) {
            json_decref(cursor);
            check(syncstore_cursor_move_to_page(store, cursor_id, p, &out, &err), "move_to_page", &err);
            cursor = json_loads(out, 0, NULL);
            syncstore_free(out);
        }
        json_t *entries = json_object_get(cursor, "currentPageOrderedEntries");
        size_t i;
        json_t *entry;
        json_array_foreach(entries, i, entry) {
            char last[128];
            snprintf(last, sizeof last, "%s-%s", json_string_value(json_object_get(entry, "LastName")), tag);
            json_object_set_new(entry, "LastName", json_string(last));
            json_object_set_new(entry, "Title", json_string(tag));
            json_object_set_new(entry, "__local__", json_true());
            json_object_set_new(entry, "__locally_updated__", json_true());
        }
        char *text = json_dumps(entries, JSON_COMPACT);
        check(syncstore_upsert(store, "contacts", text, NULL, NULL, &err), "upsert", &err);
        free(text);
    }
    json_decref(cursor);
    syncstore_cursor_close(store, cursor_id, NULL);
    const char *dirty = "{contacts:__local__} in ('true', '1')";
    long long before = count_where(store, dirty);
    if (before != n) {
        fprintf(stderr, "bench-sync: %lld dirty entries, expected %lld\n", before, n);
        return 1;
    }

    json_t *up = json_pack("{s:s,s:[s,s]}", "type", mode, "updateFieldlist", "LastName", "Title");
    char *up_text = json_dumps(up, JSON_COMPACT);
    json_decref(up);
    t0 = now_s();
    check(syncstore_sync_up(store, up_text, "contacts", NULL, NULL, NULL, NULL, &id, &err), "sync_up", &err);
    wait_done(store, id, "sync up");
    double elapsed = now_s() - t0;
    free(up_text);
    long long after = count_where(store, dirty);
    check(syncstore_close(store, &err), "close", &err);
    if (after != 0) {
        fprintf(stderr, "bench-sync: %lld entries still dirty after the sync up\n", after);
        return 1;
    }
    printf("records=%lld seconds=%.6f down_seconds=%.6f\n", n, elapsed, down);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The parent: servers, children, ratios
 * ------------------------------------------------------------------------------------------- */

/* Servers started by this run: stopped at exit, and checked when a child fails. */
static devserver *live_servers[8];

static void track_server(devserver *server, int on) {
    for (int i = 0; i < 8; i++)
        if (on ? !live_servers[i] : live_servers[i] == server) { live_servers[i] = on ? server : NULL; return; }
}

static void stop_servers(void) {
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

typedef struct {
    double seconds;   /* the child's own timer */
    long long records;
    long maxrss_kb;   /* ru_maxrss from wait4 */
    double cpu;       /* user + sys seconds of the child */
    char out[1024];
} child_result;

/* Runs argv (NULL-ended) with stdout captured; exits on failure or if it prints no records=. */
static child_result run_child(char *const argv[]) {
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

typedef struct {
    const char *name;
    int runs;
    double best;       /* seconds */
    long long records;
    long maxrss_kb;    /* highest of the runs */
    double cpu;        /* of the best run */
} series;

static void add(series *s, child_result r, long long expected) {
    if (r.records != expected) {
        fprintf(stderr, "bench-sync: %s stored %lld records, expected %lld\n", s->name, r.records, expected);
        exit(1);
    }
    if (s->runs == 0 || r.seconds < s->best) { s->best = r.seconds; s->cpu = r.cpu; }
    if (r.maxrss_kb > s->maxrss_kb) s->maxrss_kb = r.maxrss_kb;
    s->records = r.records;
    s->runs++;
}

static double rate(const series *s) { return s->runs ? (double)s->records / s->best : 0; }

static void print_series(const series *s) {
    if (!s->runs) return;
    printf("  %-34s %10.0f rec/s  %7.3f s  peak RSS %7.1f MB  CPU %6.2f s  (best of %d)\n", s->name, rate(s), s->best,
           s->maxrss_kb / 1024.0, s->cpu, s->runs);
}

static char self_path[4096], baseline_path[4096];

static void find_programs(void) {
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0) fail("readlink", "/proc/self/exe");
    self_path[n] = 0;
    snprintf(baseline_path, sizeof baseline_path, "%s", self_path);
    char *slash = strrchr(baseline_path, '/');
    snprintf(slash + 1, sizeof baseline_path - (size_t)(slash + 1 - baseline_path), "bench-sync-baseline");
    if (access(baseline_path, X_OK) != 0) fail("bench-sync-baseline not found beside bench-sync", baseline_path);
}

static void make_dir(const char *dir) {
    char command[2048];
    snprintf(command, sizeof command, "mkdir -p '%s'", dir);
    if (system(command) != 0) fail("mkdir", dir);
}

static void start_server(devserver *server, const char *binary, const char *seed, const char *faults, const char *cert, const char *key) {
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

static void stop_server(devserver *server) {
    track_server(server, 0);
    devserver_stop(server);
}

typedef struct {
    const char *devserver, *work, *python;
    long long records, rss_records, up_records, single_records;
    int rounds, latency, http;
    const char *key;  /* --key: the engine's stores are encrypted */
    int kdf_iter;     /* --kdf-iter (0: the library's default) */
    int encryption;   /* --encryption: section 4 only */
} options;

/* One sync-down comparison against one server. */
typedef struct { series engine, base_a, base_b, fetch; } down_results;

static down_results bench_down(const options *o, const devserver *server, const char *cafile, int with_python, int rounds) {
    down_results d = {{"engine (libsyncstore)", 0, 0, 0, 0, 0}, {"baseline (a) C: curl+jansson+sqlite", 0, 0, 0, 0, 0},
                      {"baseline (b) simple-salesforce+sqlite3", 0, 0, 0, 0, 0}, {"fetch only (curl, no parse/store)", 0, 0, 0, 0, 0}};
    char engine_dir[2048], a_db[2048], b_db[2048], fetch_db[2048], script[2048];
    snprintf(engine_dir, sizeof engine_dir, "%s/engine", o->work);
    snprintf(a_db, sizeof a_db, "%s/baseline-a.db", o->work);
    snprintf(b_db, sizeof b_db, "%s/baseline-b.db", o->work);
    snprintf(fetch_db, sizeof fetch_db, "%s/unused.db", o->work);
    snprintf(script, sizeof script, "%s/bench/sync_down_python.py", SYNCSTORE_SOURCE_DIR);
    const char *ca = cafile ? cafile : "-";
    for (int r = 0; r < rounds; r++) {
        char *engine_argv[] = {self_path, "engine-down", (char *)server->url, DEVSERVER_TOKEN, engine_dir, (char *)ca, SOQL, NULL};
        child_result re = run_child(engine_argv), ra, rb = {0};
        add(&d.engine, re, o->records);
        char *a_argv[] = {baseline_path, (char *)server->url, DEVSERVER_TOKEN, a_db, "--soql", SOQL,
                          cafile ? "--cafile" : NULL, (char *)cafile, NULL};
        ra = run_child(a_argv);
        add(&d.base_a, ra, o->records);
        if (with_python) {
            char *b_argv[] = {(char *)o->python, script, (char *)server->url, DEVSERVER_TOKEN, b_db, "--soql", SOQL,
                              "--cafile", (char *)cafile, NULL};
            rb = run_child(b_argv);
            add(&d.base_b, rb, o->records);
        }
        char *f_argv[] = {baseline_path, (char *)server->url, DEVSERVER_TOKEN, fetch_db, "--fetch-only", "--soql", SOQL,
                          cafile ? "--cafile" : NULL, (char *)cafile, NULL};
        add(&d.fetch, run_child(f_argv), o->records);
        printf("  round %d: engine %.3f s (CPU %.2f s), (a) %.3f s (CPU %.2f s)%s", r + 1, re.seconds, re.cpu, ra.seconds, ra.cpu,
               with_python ? "" : "\n");
        if (with_python) printf(", (b) %.3f s (CPU %.2f s)\n", rb.seconds, rb.cpu);
        fflush(stdout);
    }
    print_series(&d.engine);
    print_series(&d.base_a);
    print_series(&d.base_b);
    print_series(&d.fetch);
    return d;
}

static const char *verdict(int ok) { return ok ? "MET" : "MISSED"; }

/* ---------------------------------------------------------------------------------------------
 * 4. --encryption: plaintext vs encrypted engine stores, same server, alternating rounds
 * ------------------------------------------------------------------------------------------- */

/* The store config JSON {"storeName":"bench","key":K,"kdfIter":N} (no key: plaintext). */
static char *bench_store_config(const char *key, int kdf_iter) {
    json_t *config = json_pack("{s:s}", "storeName", "bench");
    if (key) json_object_set_new(config, "key", json_string(key));
    if (key && kdf_iter > 0) json_object_set_new(config, "kdfIter", json_integer(kdf_iter));
    char *text = json_dumps(config, JSON_COMPACT);
    json_decref(config);
    return text;
}

typedef struct { int n; long long records; double secs[20], cpus[20]; } enc_series;

static void enc_add(enc_series *s, child_result r, long long expected, const char *what) {
    if (r.records != expected) {
        fprintf(stderr, "bench-sync: %s stored %lld records, expected %lld\n", what, r.records, expected);
        exit(1);
    }
    const char *c = strstr(r.out, "sync_cpu=");
    s->secs[s->n] = r.seconds;
    s->cpus[s->n] = c ? atof(c + 9) : r.cpu; /* the sync's own CPU (not the open's KDF) when the child says */
    s->records = r.records;
    s->n++;
}




typedef struct { enc_series plain, enc, fetch; } enc_results;

static enc_results bench_encryption(const options *o, const devserver *server, const char *cafile, const char *enc_config) {
    enc_results d;
    memset(&d, 0, sizeof d);
    char engine_dir[2048], fetch_db[2048];
    snprintf(engine_dir, sizeof engine_dir, "%s/engine", o->work);
    snprintf(fetch_db, sizeof fetch_db, "%s/unused.db", o->work);
    const char *ca = cafile ? cafile : "-";
    for (int r = 0; r < o->rounds; r++) {
        for (int j = 0; j < 2; j++) {
            int m = r % 2 ? 1 - j : j;
            if (m) setenv(STORE_CONFIG_ENV, enc_config, 1);
            else unsetenv(STORE_CONFIG_ENV);
            char *engine_argv[] = {self_path, "engine-down", (char *)server->url, DEVSERVER_TOKEN, engine_dir, (char *)ca, SOQL, NULL};
            enc_add(m ? &d.enc : &d.plain, run_child(engine_argv), o->records, m ? "engine (encrypted)" : "engine (plaintext)");
        }
        unsetenv(STORE_CONFIG_ENV);
        char *f_argv[] = {baseline_path, (char *)server->url, DEVSERVER_TOKEN, fetch_db, "--fetch-only", "--soql", SOQL,
                          cafile ? "--cafile" : NULL, (char *)cafile, NULL};
        enc_add(&d.fetch, run_child(f_argv), o->records, "fetch only");
        printf("  round %d (%s first): plaintext %.3f s (sync CPU %.2f s)   encrypted %.3f s (sync CPU %.2f s)   fetch only %.3f s\n",
               r + 1, r % 2 ? "encrypted" : "plaintext", d.plain.secs[r], d.plain.cpus[r], d.enc.secs[r], d.enc.cpus[r],
               d.fetch.secs[r]);
        fflush(stdout);
    }
    return d;
}


static void enc_line(const char *figure, double plain, double enc, const char *unit, double ratio, double target) {
    char a[48], b[48], r[24], t[24] = "-";
    snprintf(a, sizeof a, "%.0f %s", plain, unit);
    snprintf(b, sizeof b, "%.0f %s", enc, unit);
    if (unit[0] == 's') { snprintf(a, sizeof a, "%.2f s", plain); snprintf(b, sizeof b, "%.2f s", enc); }
    snprintf(r, sizeof r, "%.3fx", ratio);
    if (target > 0) snprintf(t, sizeof t, ">= %.2fx", target);
    printf("ENC| %-50s | %-22s | %-22s | %-8s | %-8s | %s\n", figure, a, b, r, t, target > 0 ? verdict(ratio >= target) : "-");
}

static void enc_summary(const char *transport, long long records, const enc_results *d) {
    char figure[96];
    double pb = records / min_of(d->plain.secs, d->plain.n), eb = records / min_of(d->enc.secs, d->enc.n);
    double pm = records / median_of(d->plain.secs, d->plain.n), em = records / median_of(d->enc.secs, d->enc.n);
    snprintf(figure, sizeof figure, "sync down %lld, %s, best", records, transport);
    enc_line(figure, pb, eb, "rec/s", eb / pb, 0.80);
    snprintf(figure, sizeof figure, "sync down %lld, %s, median", records, transport);
    enc_line(figure, pm, em, "rec/s", em / pm, 0.80);
    double pc = median_of(d->plain.cpus, d->plain.n), ec = median_of(d->enc.cpus, d->enc.n);
    snprintf(figure, sizeof figure, "  sync CPU s, median (plain/enc = speed)");
    enc_line(figure, pc, ec, "s", pc / ec, 0);
    char fetch[48];
    snprintf(fetch, sizeof fetch, "%.0f rec/s", records / min_of(d->fetch.secs, d->fetch.n));
    printf("ENC| %-50s | %-22s | %-22s | %-8s | %-8s | %s\n", "  fetch only (server + curl, no store), best", fetch, "(same)", "-", "-", "-");
}

static int encryption_main(const options *o, const char *cert, const char *tls_key, const char *seed) {
    const char *key = o->key ? o->key : "bench passphrase";
    char *enc_config = bench_store_config(key, o->kdf_iter);
    printf("\n[4] encryption at rest: sync down %lld Contacts into a plaintext and an encrypted store (\"key\": %s, kdfIter %d),\n"
           "    %d alternating rounds; the store is opened (KDF) before each timer starts\n",
           o->records, key[0] == 'x' || key[0] == 'X' ? "raw x'...'" : "a passphrase", o->kdf_iter > 0 ? o->kdf_iter : 256000, o->rounds);
    static devserver tls, plain;
    printf("\n[4a] over HTTPS\n");
    start_server(&tls, o->devserver, seed, NULL, cert, tls_key);
    enc_results https = bench_encryption(o, &tls, cert, enc_config);
    stop_server(&tls);
    print_load("after HTTPS");
    enc_results http;
    memset(&http, 0, sizeof http);
    if (o->http) {
        printf("\n[4b] over plain HTTP\n");
        start_server(&plain, o->devserver, seed, NULL, NULL, NULL);
        http = bench_encryption(o, &plain, NULL, enc_config);
        stop_server(&plain);
        print_load("after HTTP");
    }
    printf("\nENC| %-50s | %-22s | %-22s | %-8s | %-8s | %s\n", "figure (sync)", "plaintext", "encrypted", "enc/plain", "target",
           "verdict");
    enc_summary("HTTPS", o->records, &https);
    if (o->http) enc_summary("HTTP", o->records, &http);
    printf("(enc/plain: encrypted throughput / plaintext throughput; for CPU seconds, plaintext / encrypted)\n");
    free(enc_config);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "engine-down") && argc == 7) return engine_down(argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "engine-up") && argc == 8) return engine_up(argv + 2);

    options o = {SYNCSTORE_BENCH_DEVSERVER, "/tmp/syncstore-bench-sync", "python3", 100000, 1000000, 10000, 1000, 5, 20, 1,
                 NULL, 0, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-http")) { o.http = 0; continue; }
        if (!strcmp(a, "--encryption")) { o.encryption = 1; continue; }
        if (!v) fail("missing value for", a);
        i++;
        if (!strcmp(a, "--devserver")) o.devserver = v;
        else if (!strcmp(a, "--work")) o.work = v;
        else if (!strcmp(a, "--python")) o.python = v;
        else if (!strcmp(a, "--records")) o.records = atoll(v);
        else if (!strcmp(a, "--rounds")) o.rounds = atoi(v);
        else if (!strcmp(a, "--rss-records")) o.rss_records = atoll(v);
        else if (!strcmp(a, "--up-records")) o.up_records = atoll(v);
        else if (!strcmp(a, "--single-records")) o.single_records = atoll(v);
        else if (!strcmp(a, "--latency")) o.latency = atoi(v);
        else if (!strcmp(a, "--key")) o.key = v;
        else if (!strcmp(a, "--kdf-iter")) o.kdf_iter = atoi(v);
        else fail("unknown option", a);
    }
    if (o.records <= 0 || o.rounds <= 0 || o.rounds > 20) fail("options", "--records must be > 0 and --rounds 1..20");
    if (o.single_records > o.up_records) o.single_records = o.up_records;
    if (o.kdf_iter < 0 || (o.kdf_iter > 0 && !o.key && !o.encryption)) fail("options", "--kdf-iter needs --key (or --encryption)");
    if (o.key && !o.encryption) {
        /* Sections 1-3 with encrypted engine stores: every engine child opens this config. */
        char *config = bench_store_config(o.key, o.kdf_iter);
        setenv(STORE_CONFIG_ENV, config, 1);
        free(config);
    }
    find_programs();
    if (access(o.devserver, X_OK) != 0) fail("no devserver binary (build it: swift build -c release --product syncstore-devserver)", o.devserver);
    make_dir(o.work);
    atexit(stop_servers);
    int with_python = strcmp(o.python, "none") != 0;
    char loadavg[128] = "?";
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) { if (!fgets(loadavg, sizeof loadavg, la)) loadavg[0] = 0; fclose(la); loadavg[strcspn(loadavg, "\n")] = 0; }
    printf("sync benchmark: libsyncstore %s, devserver %s, %ld CPUs, load average at start %s%s\n", syncstore_version(),
           o.devserver, sysconf(_SC_NPROCESSORS_ONLN), loadavg,
           o.key && !o.encryption ? "\n  engine stores ENCRYPTED (--key)" : "");

    /* ---- 1. sync down N over HTTPS: engine, (a), (b), fetch only ---- */
    char cert[2048], key[2048], command[8192], seed[128];
    snprintf(cert, sizeof cert, "%s/cert.pem", o.work);
    snprintf(key, sizeof key, "%s/key.pem", o.work);
    snprintf(command, sizeof command,
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout '%s' -out '%s' -days 1 "
             "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1", key, cert);
    if (system(command) != 0) fail("openssl", "cannot make a self-signed certificate");
    snprintf(seed, sizeof seed, "Account=1000,Contact=%lld", o.records);
    if (o.encryption) return encryption_main(&o, cert, key, seed);
    printf("\n[1] sync down %lld Contacts over HTTPS (9 fields, 3 indexes, pages of 2000), %d alternating rounds\n", o.records, o.rounds);
    static devserver tls, plain, big, slow;
    start_server(&tls, o.devserver, seed, NULL, cert, key);
    down_results https = bench_down(&o, &tls, cert, with_python, o.rounds);
    stop_server(&tls);

    down_results http = {0};
    if (o.http) {
        printf("\n[1'] the same over plain HTTP (engine vs (a); simple-salesforce cannot do http)\n");
        start_server(&plain, o.devserver, seed, NULL, NULL, NULL);
        http = bench_down(&o, &plain, NULL, 0, o.rounds);
        stop_server(&plain);
    }

    /* ---- 2. peak RSS at M records ---- */
    series rss_engine = {"engine (libsyncstore)", 0, 0, 0, 0, 0}, rss_a = {"baseline (a) C: curl+jansson+sqlite", 0, 0, 0, 0, 0};
    if (o.rss_records > 0) {
        printf("\n[2] peak RSS: sync down %lld Contacts over HTTP, one run each\n", o.rss_records);
        snprintf(seed, sizeof seed, "Account=1000,Contact=%lld", o.rss_records);
        start_server(&big, o.devserver, seed, NULL, NULL, NULL);
        char engine_dir[2048], a_db[2048];
        snprintf(engine_dir, sizeof engine_dir, "%s/engine-rss", o.work);
        snprintf(a_db, sizeof a_db, "%s/baseline-a-rss.db", o.work);
        char *engine_argv[] = {self_path, "engine-down", big.url, DEVSERVER_TOKEN, engine_dir, "-", SOQL, NULL};
        add(&rss_engine, run_child(engine_argv), o.rss_records);
        char *a_argv[] = {baseline_path, big.url, DEVSERVER_TOKEN, a_db, "--soql", SOQL, NULL};
        add(&rss_a, run_child(a_argv), o.rss_records);
        stop_server(&big);
        print_series(&rss_engine);
        print_series(&rss_a);
        snprintf(command, sizeof command, "rm -rf '%s' '%s'*", engine_dir, a_db);
        if (system(command) != 0) fprintf(stderr, "bench-sync: could not remove %s\n", engine_dir);
    }

    /* ---- 3. sync up with latency: collection vs single ---- */
    series up_batch = {"sync up, collection (200/request)", 0, 0, 0, 0, 0}, up_single = {"sync up, single (1/request)", 0, 0, 0, 0, 0};
    double single_scaled = 0;
    if (o.up_records > 0) {
        char faults[64];
        snprintf(faults, sizeof faults, "latency=%dms", o.latency);
        printf("\n[3] sync up %lld modified Contacts, %d ms latency on every request\n", o.up_records, o.latency);
        snprintf(seed, sizeof seed, "Account=100,Contact=%lld", o.up_records);
        start_server(&slow, o.devserver, seed, faults, NULL, NULL);
        char dir[2048], n[32], soql[256];
        snprintf(dir, sizeof dir, "%s/engine-up", o.work);
        snprintf(n, sizeof n, "%lld", o.up_records);
        char *batch_argv[] = {self_path, "engine-up", slow.url, DEVSERVER_TOKEN, dir, "collection", n, "benchcollection", NULL};
        child_result rb = run_child(batch_argv);
        add(&up_batch, rb, o.up_records);
        /* The server has the edits (checked after each run: the runs may edit the same records). */
        snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE Title = 'benchcollection'");
        long on_server_batch = devserver_count(&slow, soql);
        snprintf(n, sizeof n, "%lld", o.single_records);
        char *single_argv[] = {self_path, "engine-up", slow.url, DEVSERVER_TOKEN, dir, "single", n, "benchsingle", NULL};
        add(&up_single, run_child(single_argv), o.single_records);
        snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE Title = 'benchsingle'");
        long on_server_single = devserver_count(&slow, soql);
        stop_server(&slow);
        if (on_server_batch != o.up_records || on_server_single != o.single_records) {
            fprintf(stderr, "bench-sync: the server has %ld/%ld edited records, expected %lld/%lld\n", on_server_batch,
                    on_server_single, o.up_records, o.single_records);
            return 1;
        }
        single_scaled = up_single.best * (double)o.up_records / (double)o.single_records;
        printf("  %-34s %lld records %8.3f s  (%.0f rec/s)  sync down before it: %.3f s\n", up_batch.name, o.up_records,
               up_batch.best, o.up_records / up_batch.best, atof(strstr(rb.out, "down_seconds=") + 13));
        printf("  %-34s %lld records %8.3f s  (%.1f ms/record)%s\n", up_single.name, o.single_records, up_single.best,
               up_single.best * 1000 / o.single_records, o.single_records == o.up_records ? "" : "  MEASURED ON FEWER RECORDS");
        if (o.single_records != o.up_records)
            printf("  single scaled linearly to %lld records: %.1f s (= %.3f s x %lld / %lld; not measured at full size)\n",
                   o.up_records, single_scaled, up_single.best, o.up_records, o.single_records);
        printf("  server check: %ld + %ld edited records found on the server\n", on_server_batch, on_server_single);
    }

    /* ---- summary ---- */
    printf("\n==== summary (libsyncstore %s; %ld CPUs shared with the server) ====\n", syncstore_version(), sysconf(_SC_NPROCESSORS_ONLN));
    printf("%-58s %-22s %-16s %s\n", "figure", "value", "target", "verdict");
    double e = rate(&https.engine), a = rate(&https.base_a), b = rate(&https.base_b), f = rate(&https.fetch);
    char value[64];
    printf("%-58s %-22s\n", "sync down HTTPS, records/s: engine", (snprintf(value, sizeof value, "%.0f", e), value));
    printf("%-58s %-22s\n", "  baseline (a) C curl+jansson+sqlite", (snprintf(value, sizeof value, "%.0f", a), value));
    if (with_python) printf("%-58s %-22s\n", "  baseline (b) simple-salesforce+sqlite3", (snprintf(value, sizeof value, "%.0f", b), value));
    printf("%-58s %-22s\n", "  fetch only (server + curl)", (snprintf(value, sizeof value, "%.0f", f), value));
    if (with_python)
        printf("%-58s %-22s %-16s %s\n", "  engine / (b)", (snprintf(value, sizeof value, "%.2fx", e / b), value), ">= 1.5x", verdict(e / b >= 1.5));
    printf("%-58s %-22s %-16s %s\n", "  engine / (a)", (snprintf(value, sizeof value, "%.0f%%", 100 * e / a), value), ">= 70%", verdict(e / a >= 0.70));
    printf("%-58s %-22s\n", "  CPU s (user+sys) engine / (a) / (b), best runs",
           (snprintf(value, sizeof value, "%.2f / %.2f / %.2f", https.engine.cpu, https.base_a.cpu, https.base_b.cpu), value));
    printf("%-58s %-22s\n", "  peak RSS engine / (a) / (b), MB",
           (snprintf(value, sizeof value, "%.0f / %.0f / %.0f", https.engine.maxrss_kb / 1024.0, https.base_a.maxrss_kb / 1024.0,
                     https.base_b.maxrss_kb / 1024.0), value));
    if (o.http) {
        double eh = rate(&http.engine), ah = rate(&http.base_a);
        printf("%-58s %-22s\n", "sync down HTTP, records/s: engine / (a) / fetch only",
               (snprintf(value, sizeof value, "%.0f / %.0f / %.0f", eh, ah, rate(&http.fetch)), value));
        printf("%-58s %-22s %-16s %s\n", "  engine / (a)", (snprintf(value, sizeof value, "%.0f%%", 100 * eh / ah), value), ">= 70%",
               verdict(eh / ah >= 0.70));
        printf("%-58s %-22s\n", "  CPU s (user+sys) engine / (a), best runs",
               (snprintf(value, sizeof value, "%.2f / %.2f", http.engine.cpu, http.base_a.cpu), value));
    }
    if (o.rss_records > 0) {
        char figure[96];
        snprintf(figure, sizeof figure, "peak RSS engine, sync down %lld records", o.rss_records);
        printf("%-58s %-22s %-16s %s\n", figure, (snprintf(value, sizeof value, "%.1f MB", rss_engine.maxrss_kb / 1024.0), value),
               "< 150 MB", o.rss_records >= 1000000 ? verdict(rss_engine.maxrss_kb < 150 * 1024) : "(smaller run)");
        printf("%-58s %-22s\n", "  (a) at the same size", (snprintf(value, sizeof value, "%.1f MB", rss_a.maxrss_kb / 1024.0), value));
    }
    if (o.up_records > 0) {
        char figure[96];
        snprintf(figure, sizeof figure, "sync up %lld records, %d ms latency: collection", o.up_records, o.latency);
        printf("%-58s %-22s\n", figure, (snprintf(value, sizeof value, "%.2f s", up_batch.best), value));
        printf("%-58s %-22s\n", o.single_records == o.up_records ? "  single" : "  single (scaled from a smaller run)",
               (snprintf(value, sizeof value, "%.1f s", single_scaled), value));
        printf("%-58s %-22s %-16s %s\n", "  single / collection", (snprintf(value, sizeof value, "%.1fx", single_scaled / up_batch.best), value),
               ">= 20x", verdict(single_scaled / up_batch.best >= 20));
    }
    return 0;
}
