/* Sync benchmarks (not part of the tests), each with its baselines in the same run.
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
 *    request) on the server: "collection" target (batches of 200, the default), the
 *    "parent_children" target (accounts synced down too; each account with its dirty contacts
 *    in composite requests) and "single" (one request per record). The per-record run pushes
 *    S records (default 1,000) and is scaled to U linearly unless S = U; the output says which.
 *
 * 1L. The storage limit, over plain HTTP at N records, in alternating rounds:
 *      limit         bench-sync-limit: the store created by the engine (same soup, same indexes,
 *                    its sync state row), closed, then written with sqlite3 alone: rows prepared
 *                    in memory before the clock, one transaction per page with the by-Id lookup,
 *                    the INSERTs and the sync state's UPDATE, the engine's PRAGMAs and its
 *                    background checkpoint (see bench/sync_limit.c); plaintext only; and the
 *                    same at 5 pages a transaction, as the engine writes when its writer is
 *                    behind the server (every page fetched ahead, up to 10,000 records, at once)
 *      static        the engine syncing down from bench-sync-static, which holds the pages in
 *                    memory (recorded from the dev server during the limit's first, untimed
 *                    fetch, then sealed: a timed run never reaches the dev server)
 *    The summary prints engine/limit for the dev server and for the static page server.
 * 5. (--limit-records M) the same at M records, with the engine from the dev server beside it
 *    (--limit-rounds R, default 1; the "best of 3 paired runs" is --limit-rounds 3).
 * 6. (--scale-records M) a sync at M records over HTTP: a named sync down, 1% of the records
 *    changed on the server then reSync (beside: the full sync, and fetching only the changed
 *    records), a first cleanResyncGhosts (every id compared; it sets the sync's mark), 1% deleted
 *    on the server then cleanResyncGhosts again (the records deleted since the mark), each in a
 *    process of its own (time, peak RSS; beside: fetching only the remaining Ids with curl), then an exact query on Id and
 *    a Smart SQL aggregate on the soup, engine vs sqlite3 alone on the same file.
 * 7. (--stall-records M, --stall-up-records U) reads during syncs: exact indexed queries
 *    (syncstore_query_page on Id, the first 1000 records' Ids, one read per ms) from a thread on
 *    the sync's handle and from another process with its own handle, during a sync down of M
 *    records and during a sync up (collection) of U records at --latency; p50, p99 and max of
 *    each (goal p99 <= 1 ms, max <= 20 ms).
 *    All 1M figures in one run (about 15 minutes on 2 shared cores):
 *      scripts/bench-sync.sh --rounds 3 --limit-records 1000000 --limit-rounds 3 --scale-records 1000000 \
 *          --up-records 100000 --single-records 1000 --stall-records 1000000 --stall-up-records 100000
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
 *                   [--limit-records M] [--limit-rounds R] [--scale-records M] [--stall-records M]
 *                   [--stall-up-records U] [--sqlite-memstatus-off]
 *   --sqlite-memstatus-off: an experiment, not a setting of the engine: every engine child calls
 *   sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) before the engine initializes SQLite.
 *   --key K, --kdf-iter N: the engine's stores are encrypted (in 1-3: every engine run).
 * Internal (the children): bench-sync engine-down URL TOKEN DIR CAFILE|- SOQL
 *                          bench-sync engine-up URL TOKEN DIR MODE N TAG
 *                          bench-sync engine-resync|engine-ghosts URL TOKEN DIR SYNC_NAME
 *                          bench-sync engine-queries DIR,  bench-sync engine-reader DIR IDS_FILE
 *   engine-down names its sync $SYNCSTORE_BENCH_SYNC_NAME; with $SYNCSTORE_BENCH_READ_IDS (a file
 *   of Ids) engine-down and engine-up run the readers of section 7 around the timed sync.
 *   with the store config JSON in the environment variable SYNCSTORE_BENCH_STORE_CONFIG
 *   (default {"storeName":"bench"}). */
#define _GNU_SOURCE
#include "../Tests/c/devserver.h"
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sqlite3.h>
#include <curl/curl.h>
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
#include "bench_io.h"

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

/* ---------------------------------------------------------------------------------------------
 * At scale: readers during a sync, reSync, cleanResyncGhosts, queries on a big soup
 * ------------------------------------------------------------------------------------------- */

#define READ_IDS_ENV "SYNCSTORE_BENCH_READ_IDS"   /* file of record Ids, one a line: readers run */
#define SYNC_NAME_ENV "SYNCSTORE_BENCH_SYNC_NAME" /* engine-down names its sync (for reSync, ghosts) */
#define READ_PAUSE_US 1000                        /* between two reads: a UI reading, not a flood */
#define MEMSTATUS_ENV "SYNCSTORE_BENCH_SQLITE_MEMSTATUS" /* "0": see --sqlite-memstatus-off */

/* Latencies in ms, and what each read over 1 ms did meanwhile (getrusage of its thread):
 * preempted: only involuntary context switches (it was runnable but another process had the
 * CPU: the machine's load, not the store); blocked: a voluntary switch (it slept: a lock, a
 * busy wait, I/O); neither: it ran all the time (the read itself was slow). */
typedef struct { double *v; size_t n, cap; size_t preempted, blocked, neither; double slow_cpu_max; } samples;

static void sample_add(samples *s, double v) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->v = realloc(s->v, sizeof *s->v * s->cap);
        if (!s->v) fail("memory", "samples");
    }
    s->v[s->n++] = v;
}

/* "PREFIX_n=.. PREFIX_p50_ms=.. PREFIX_p99_ms=.. PREFIX_max_ms=.. PREFIX_over1ms=.. PREFIX_over20ms=.." and the
 * causes of the reads over 1 ms. */
static void format_latencies(samples *s, const char *prefix, char *out, size_t size) {
    if (!s->n) { snprintf(out, size, "%s_n=0", prefix); return; }
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    size_t over1 = 0, over20 = 0;
    for (size_t i = 0; i < s->n; i++) { over1 += s->v[i] > 1.0; over20 += s->v[i] > 20.0; }
    snprintf(out, size, "%s_n=%zu %s_p50_ms=%.3f %s_p99_ms=%.3f %s_max_ms=%.3f %s_over1ms=%zu %s_over20ms=%zu "
             "%s_slow_preempted=%zu %s_slow_blocked=%zu %s_slow_running=%zu %s_slow_cpu_max_ms=%.3f", prefix, s->n,
             prefix, s->v[s->n / 2], prefix, s->v[(size_t)((double)s->n * 0.99)], prefix, s->v[s->n - 1], prefix, over1,
             prefix, over20, prefix, s->preempted, prefix, s->blocked, prefix, s->neither, prefix, s->slow_cpu_max);
}

/* The exact-query specs of the Ids in `file` (at most 1000). */
static int load_read_specs(const char *file, char ***out) {
    FILE *f = fopen(file, "r");
    if (!f) fail("read ids", file);
    char line[256], **specs = calloc(1000, sizeof *specs);
    int n = 0;
    while (n < 1000 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) continue;
        json_t *spec = json_pack("{s:s,s:s,s:s,s:i}", "queryType", "exact", "indexPath", "Id", "matchKey", line, "pageSize", 10);
        specs[n++] = json_dumps(spec, JSON_COMPACT);
        json_decref(spec);
    }
    fclose(f);
    if (!n) fail("read ids", "no Id in the file");
    *out = specs;
    return n;
}

/* One exact indexed query (the cheapest read: one page, no cursor); its latency in ms, added
 * to `lat` (may be NULL) with its cause when over 1 ms. */
static double timed_read(syncstore_store *store, const char *spec, samples *lat) {
    char *out = NULL;
    syncstore_error err;
    struct rusage u0, u1;
    if (lat) getrusage(RUSAGE_THREAD, &u0);
    double t0 = now_s();
    int rc = syncstore_query_page(store, "contacts", spec, 0, &out, &err);
    double ms = (now_s() - t0) * 1000;
    if (rc != SYNCSTORE_OK) fail("read during the sync", err.message);
    syncstore_free(out);
    if (lat) {
        sample_add(lat, ms);
        if (ms > 1.0) {
            getrusage(RUSAGE_THREAD, &u1);
            long vol = u1.ru_nvcsw - u0.ru_nvcsw, invol = u1.ru_nivcsw - u0.ru_nivcsw;
            double cpu = (double)(u1.ru_utime.tv_sec - u0.ru_utime.tv_sec + u1.ru_stime.tv_sec - u0.ru_stime.tv_sec) * 1000 +
                         (double)(u1.ru_utime.tv_usec - u0.ru_utime.tv_usec + u1.ru_stime.tv_usec - u0.ru_stime.tv_usec) / 1000;
            if (vol > 0) lat->blocked++;
            else if (invol > 0) lat->preempted++;
            else lat->neither++;
            if (cpu > lat->slow_cpu_max) lat->slow_cpu_max = cpu;
        }
    }
    return ms;
}

typedef struct {
    syncstore_store *store;
    char **specs;
    int nspecs;
    volatile int stop;
    samples lat;
    pthread_t thread;
} reader;

static void *reader_main(void *arg) {
    reader *r = arg;
    for (long i = 0; !r->stop; i++) {
        timed_read(r->store, r->specs[i % r->nspecs], &r->lat);
        usleep(READ_PAUSE_US);
    }
    return NULL;
}

/* The readers of one timed sync: a thread on the same handle, and a process of its own
 * (bench-sync engine-reader) with another handle on the same store. */
typedef struct {
    reader thread;
    pid_t pid;
    int to_child, from_child;
} readers;

static int readers_start(readers *r, syncstore_store *store, const char *dir) {
    const char *ids = getenv(READ_IDS_ENV);
    if (!ids || !*ids) return 0;
    memset(r, 0, sizeof *r);
    int down[2], up[2];
    if (pipe(down) || pipe(up)) fail("pipe", strerror(errno));
    fflush(stdout);
    r->pid = fork();
    if (r->pid < 0) fail("fork", strerror(errno));
    if (r->pid == 0) {
        dup2(down[0], STDIN_FILENO);
        dup2(up[1], STDOUT_FILENO);
        close(down[0]); close(down[1]); close(up[0]); close(up[1]);
        execl("/proc/self/exe", "bench-sync", "engine-reader", dir, ids, (char *)NULL);
        _exit(127);
    }
    close(down[0]);
    close(up[1]);
    r->to_child = down[1];
    r->from_child = up[0];
    char ready[16] = "";
    if (read(r->from_child, ready, 6) != 6 || strncmp(ready, "ready\n", 6)) fail("reader process", "did not start");
    r->thread.store = store;
    r->thread.nspecs = load_read_specs(ids, &r->thread.specs);
    pthread_create(&r->thread.thread, NULL, reader_main, &r->thread);
    return 1;
}

/* Stops both readers; out gets their latency fields. */
static void readers_stop(readers *r, char *out, size_t size) {
    r->thread.stop = 1;
    pthread_join(r->thread.thread, NULL);
    close(r->to_child);
    char proc[512] = "";
    ssize_t n = read(r->from_child, proc, sizeof proc - 1);
    proc[n > 0 ? n : 0] = 0;
    proc[strcspn(proc, "\n")] = 0;
    close(r->from_child);
    waitpid(r->pid, NULL, 0);
    char thread[512];
    format_latencies(&r->thread.lat, "rt", thread, sizeof thread);
    snprintf(out, size, " %s %s", thread, proc);
}

/* engine-reader DIR IDS_FILE: opens the store (another process), says "ready", reads until its
 * stdin closes, prints its latencies. */
static int engine_reader(char **argv) {
    const char *dir = argv[0];
    char **specs;
    int nspecs = load_read_specs(argv[1], &specs);
    syncstore_error err;
    syncstore_store *store = NULL;
    const char *config = getenv(STORE_CONFIG_ENV);
    check(syncstore_open(dir, config && *config ? config : "{\"storeName\":\"bench\"}", &store, &err), "reader open", &err);
    if (write(STDOUT_FILENO, "ready\n", 6) != 6) return 1;
    samples lat = {0};
    struct pollfd in = {STDIN_FILENO, POLLIN, 0};
    for (long i = 0; poll(&in, 1, 0) == 0; i++) {
        timed_read(store, specs[i % nspecs], &lat);
        usleep(READ_PAUSE_US);
    }
    char line[512];
    format_latencies(&lat, "rp", line, sizeof line);
    printf("%s\n", line);
    syncstore_close(store, &err);
    return 0;
}

/* Opens the store a previous child made in DIR (not wiped), with the remote. */
static syncstore_store *engine_reopen(const char *dir, const char *url, const char *token) {
    syncstore_error err;
    syncstore_store *store = NULL;
    const char *config = getenv(STORE_CONFIG_ENV);
    check(syncstore_open(dir, config && *config ? config : "{\"storeName\":\"bench\"}", &store, &err), "open", &err);
    if (url) {
        json_t *remote = json_pack("{s:s,s:s}", "instanceUrl", url, "accessToken", token);
        char *text = json_dumps(remote, JSON_COMPACT);
        check(syncstore_set_remote(store, text, &err), "set_remote", &err);
        free(text);
        json_decref(remote);
    }
    return store;
}

/* engine-resync URL TOKEN DIR NAME [warm]: one reSync of the named sync in the store left in
 * DIR. warm: as in an app that synced this soup before in the same process, a sync down that
 * fetches nothing runs first, untimed (the first sync down of a process scans the soup for
 * creates in flight; later ones skip the scan while none is). */
static int engine_resync(char **argv, int warm) {
    syncstore_store *store = engine_reopen(argv[2], argv[0], argv[1]);
    syncstore_error err;
    int64_t id = 0;
    if (warm) {
        char *none = soql_target("SELECT Id, LastName FROM Contact WHERE LastName = 'bench-none'");
        check(syncstore_sync_down(store, none, "contacts", NULL, NULL, NULL, NULL, &id, &err), "sync_down", &err);
        wait_done(store, id, "warm-up sync down");
        free(none);
    }
    double c0 = cpu_self(), t0 = now_s();
    check(syncstore_resync_by_name(store, argv[3], NULL, NULL, &id, &err), "resync", &err);
    char *out = NULL;
    check(syncstore_wait_sync(store, id, -1, &out, &err), "wait_sync", &err);
    double elapsed = now_s() - t0, cpu = cpu_self() - c0;
    json_t *state = json_loads(out, 0, NULL);
    const char *status = json_string_value(json_object_get(state, "status"));
    if (!status || strcmp(status, "DONE")) fail("resync did not end DONE", out);
    long long fetched = json_integer_value(json_object_get(state, "totalSize"));
    json_decref(state);
    syncstore_free(out);
    long long n = count_where(store, NULL);
    check(syncstore_close(store, &err), "close", &err);
    printf("records=%lld seconds=%.6f fetched=%lld sync_cpu=%.6f\n", n, elapsed, fetched, cpu);
    return 0;
}

typedef struct { pthread_mutex_t lock; pthread_cond_t cond; char *final; } ghost_wait;

static void ghost_callback(const char *state_json, void *context) {
    ghost_wait *w = context;
    json_t *state = json_loads(state_json, 0, NULL);
    const char *status = json_string_value(json_object_get(state, "status"));
    if (status && strcmp(status, "RUNNING") != 0) {
        pthread_mutex_lock(&w->lock);
        w->final = strdup(state_json);
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
    }
    json_decref(state);
}

/* engine-ghosts URL TOKEN DIR NAME: cleanResyncGhosts of the named sync; peak RSS is this
 * process's (no sync down ran in it). */
static int engine_ghosts(char **argv) {
    syncstore_store *store = engine_reopen(argv[2], argv[0], argv[1]);
    syncstore_error err;
    char *out = NULL;
    check(syncstore_get_sync_status_by_name(store, argv[3], &out, &err), "sync status", &err);
    json_t *state = json_loads(out, 0, NULL);
    int64_t id = json_integer_value(json_object_get(state, "_soupEntryId"));
    json_decref(state);
    syncstore_free(out);
    long long before = count_where(store, NULL);
    long hwm_open = vm_hwm_kb();
    ghost_wait w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL};
    double c0 = cpu_self(), t0 = now_s();
    check(syncstore_clean_resync_ghosts(store, id, ghost_callback, &w, &err), "clean_resync_ghosts", &err);
    pthread_mutex_lock(&w.lock);
    while (!w.final) pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    double elapsed = now_s() - t0, cpu = cpu_self() - c0;
    state = json_loads(w.final, 0, NULL);
    if (strcmp(json_string_value(json_object_get(state, "status")), "DONE")) fail("cleanResyncGhosts did not end DONE", w.final);
    long long removed = json_integer_value(json_object_get(state, "removed"));
    json_decref(state);
    long long after = count_where(store, NULL);
    check(syncstore_close(store, &err), "close", &err);
    printf("records=%lld seconds=%.6f removed=%lld before=%lld hwm_open_kb=%ld cpu=%.6f\n", after, elapsed, removed, before,
           hwm_open, cpu);
    return 0;
}

/* The engine's table and index column of `path` in soup "contacts", read from its catalog. */
static void soup_column(sqlite3 *db, const char *path, char *table, size_t tsize, char *column, size_t csize) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT a.id, m.slot FROM soup_attrs a JOIN soup_index_map m ON m.soupName = a.soupName "
                               "WHERE a.soupName = 'contacts' AND m.path = ?", -1, &s, NULL) != SQLITE_OK)
        fail("catalog", sqlite3_errmsg(db));
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_ROW) fail("catalog: no index on", path);
    snprintf(table, tsize, "TABLE_%lld", (long long)sqlite3_column_int64(s, 0));
    snprintf(column, csize, "TABLE_%lld_%lld", (long long)sqlite3_column_int64(s, 0), (long long)sqlite3_column_int64(s, 1));
    sqlite3_finalize(s);
}

/* engine-queries DIR: on the soup left in DIR, an exact query on Id (1000 Ids, one page each)
 * and a Smart SQL aggregate (entries per LastName, top 10), through the engine, then the same
 * SQL on the file with sqlite3 alone (a connection of its own, statements prepared once). */
static int engine_queries(char **argv) {
    const char *dir = argv[0];
    syncstore_store *store = engine_reopen(dir, NULL, NULL);
    syncstore_error err;
    char *out = NULL, ids_spec[256];
    long long n = count_where(store, NULL);
    /* About 1000 Ids spread over the soup. */
    snprintf(ids_spec, sizeof ids_spec, "{\"queryType\":\"smart\",\"smartSql\":\"select {contacts:Id} from {contacts} "
             "where {contacts:_soupEntryId} %% %lld = 0\",\"pageSize\":1000}", n / 1000 > 1 ? n / 1000 : 1);
    check(syncstore_query_page(store, NULL, ids_spec, 0, &out, &err), "ids", &err);
    json_t *rows = json_loads(out, 0, NULL);
    syncstore_free(out);
    size_t nids = json_array_size(rows);
    if (!nids) fail("queries", "no entries");
    char **specs = calloc(nids, sizeof *specs);
    for (size_t i = 0; i < nids; i++) {
        json_t *spec = json_pack("{s:s,s:s,s:O,s:i}", "queryType", "exact", "indexPath", "Id", "matchKey",
                                 json_array_get(json_array_get(rows, i), 0), "pageSize", 10);
        specs[i] = json_dumps(spec, JSON_COMPACT);
        json_decref(spec);
    }
    double t0 = now_s();
    for (size_t i = 0; i < nids; i++) timed_read(store, specs[i], NULL);
    double exact = (now_s() - t0) / (double)nids;
    const char *agg = "{\"queryType\":\"smart\",\"smartSql\":\"select {contacts:LastName}, count(*) from {contacts} "
                      "group by {contacts:LastName} order by count(*) desc, {contacts:LastName} limit 10\",\"pageSize\":10}";
    double best_agg = 1e9;
    char *engine_top = NULL;
    for (int r = 0; r < 3; r++) {
        t0 = now_s();
        check(syncstore_query_page(store, NULL, agg, 0, &out, &err), "aggregate", &err);
        double s = now_s() - t0;
        if (s < best_agg) best_agg = s;
        free(engine_top);
        engine_top = strdup(out);
        syncstore_free(out);
    }
    check(syncstore_close(store, &err), "close", &err);

    /* sqlite3 alone, on the same file. */
    char path[4096], table[64], id_col[96], last_col[96], sql[1024];
    snprintf(path, sizeof path, "%s/user/bench.db", dir);  /* StoreRegistry: ROOT/user/NAME.db */
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) fail("sqlite3 open", path);
    soup_column(db, "Id", table, sizeof table, id_col, sizeof id_col);
    soup_column(db, "LastName", table, sizeof table, last_col, sizeof last_col);
    sqlite3_stmt *exact_stmt = NULL, *agg_stmt = NULL;
    snprintf(sql, sizeof sql, "SELECT soup FROM %s WHERE %s = ? ORDER BY %s LIMIT 10", table, id_col, id_col);
    if (sqlite3_prepare_v2(db, sql, -1, &exact_stmt, NULL) != SQLITE_OK) fail("prepare", sqlite3_errmsg(db));
    snprintf(sql, sizeof sql, "SELECT %s, count(*) FROM %s GROUP BY %s ORDER BY count(*) DESC, %s LIMIT 10", last_col, table,
             last_col, last_col);
    if (sqlite3_prepare_v2(db, sql, -1, &agg_stmt, NULL) != SQLITE_OK) fail("prepare", sqlite3_errmsg(db));
    t0 = now_s();
    size_t bytes = 0;
    for (size_t i = 0; i < nids; i++) {
        sqlite3_bind_text(exact_stmt, 1, json_string_value(json_array_get(json_array_get(rows, i), 0)), -1, SQLITE_STATIC);
        while (sqlite3_step(exact_stmt) == SQLITE_ROW) {
            char *copy = strdup((const char *)sqlite3_column_text(exact_stmt, 0));
            bytes += strlen(copy);
            free(copy);
        }
        sqlite3_reset(exact_stmt);
    }
    double exact_sqlite = (now_s() - t0) / (double)nids;
    double best_agg_sqlite = 1e9;
    long long top = 0;
    for (int r = 0; r < 3; r++) {
        t0 = now_s();
        for (int k = 0; sqlite3_step(agg_stmt) == SQLITE_ROW; k++) if (!k) top = sqlite3_column_int64(agg_stmt, 1);
        sqlite3_reset(agg_stmt);
        double s = now_s() - t0;
        if (s < best_agg_sqlite) best_agg_sqlite = s;
    }
    sqlite3_finalize(exact_stmt);
    sqlite3_finalize(agg_stmt);
    sqlite3_close(db);
    /* Both must have found the same largest group. */
    json_t *engine_rows = json_loads(engine_top, 0, NULL);
    long long engine_first = json_integer_value(json_array_get(json_array_get(engine_rows, 0), 1));
    json_decref(engine_rows);
    free(engine_top);
    if (engine_first != top || bytes == 0) fail("queries", "the engine and sqlite3 disagree on the aggregate");
    printf("records=%lld seconds=%.6f exact_ms=%.4f exact_sqlite_ms=%.4f agg_s=%.4f agg_sqlite_s=%.4f ids=%zu\n", n, exact,
           exact * 1000, exact_sqlite * 1000, best_agg, best_agg_sqlite, nids);
    json_decref(rows);
    return 0;
}

/* engine-down URL TOKEN DIR CAFILE|- SOQL: one sync down into a fresh store. */
static int engine_down(char **argv) {
    const char *url = argv[0], *token = argv[1], *dir = argv[2], *cafile = argv[3], *soql = argv[4];
    syncstore_store *store = engine_open(dir, url, token, cafile, INDEXES);
    char *target = soql_target(soql);
    syncstore_error err;
    int64_t id = 0;
    readers rd;
    int reading = readers_start(&rd, store, dir);
    double c0 = cpu_self();
    double t0 = now_s();
    check(syncstore_sync_down(store, target, "contacts", NULL, getenv(SYNC_NAME_ENV), NULL, NULL, &id, &err), "sync_down", &err);
    wait_done(store, id, "sync down");
    double elapsed = now_s() - t0;
    double cpu = cpu_self() - c0;
    char latencies[1200] = "";
    if (reading) readers_stop(&rd, latencies, sizeof latencies);
    long long n = count_where(store, NULL);
    long hwm = vm_hwm_kb();
    check(syncstore_close(store, &err), "close", &err);
    free(target);
    printf("records=%lld seconds=%.6f hwm_kb=%ld sync_cpu=%.6f%s\n", n, elapsed, hwm, cpu, latencies);
    return 0;
}

/* engine-up URL TOKEN DIR MODE N TAG: sync down everything, modify the first N entries
 * (LastName, Title = TAG, dirty flags), then time one sync up with target type MODE. */
static int engine_up(char **argv) {
    const char *url = argv[0], *token = argv[1], *dir = argv[2], *mode = argv[3], *tag = argv[5];
    long long n = atoll(argv[4]);
    int composite = strcmp(mode, "parent_children") == 0;
    syncstore_store *store = engine_open(dir, url, token, "-", UP_INDEXES);
    syncstore_error err;
    int64_t id = 0;
    double t0 = now_s();
    if (composite) {
        /* The parents too: the children's entries are dirty, their accounts go with them. */
        check(syncstore_register_soup(store, "accounts", "[{\"path\":\"Id\",\"type\":\"string\"},"
                                      "{\"path\":\"__local__\",\"type\":\"string\"}]", &err), "register_soup", &err);
        char *accounts = soql_target("SELECT Id, Name FROM Account");
        check(syncstore_sync_down(store, accounts, "accounts", NULL, NULL, NULL, NULL, &id, &err), "sync_down", &err);
        wait_done(store, id, "sync down accounts");
        free(accounts);
    }
    char *target = soql_target("SELECT Id, FirstName, LastName, Email, Title, AccountId FROM Contact");
    check(syncstore_sync_down(store, target, "contacts", NULL, NULL, NULL, NULL, &id, &err), "sync_down", &err);
    wait_done(store, id, "sync down");
    double down = now_s() - t0;
    free(target);
    long long total = count_where(store, NULL);
    if (total < n) fail("sync up", "fewer records on the server than --up-records");

    /* The first n entries by _soupEntryId, modified in memory, then written back in batches.
     * parent_children pushes children with their parent: a contact the server seeded without
     * an account is given one locally (AccountId is not among the fields sent). */
    char some_account[64] = "";
    if (composite) {
        char *accounts = NULL;
        check(syncstore_run_smart_query(store, "{\"queryType\":\"smart\",\"smartSql\":\"select {accounts:Id} from {accounts}\",\"pageSize\":1}",
                                        &accounts, &err), "accounts", &err);
        json_t *page = json_loads(accounts, 0, NULL);
        const char *first = json_string_value(json_array_get(json_array_get(json_object_get(page, "currentPageOrderedEntries"), 0), 0));
        snprintf(some_account, sizeof some_account, "%s", first ? first : "");
        syncstore_cursor_close(store, json_integer_value(json_object_get(page, "cursorId")), NULL);
        json_decref(page);
        syncstore_free(accounts);
        if (!some_account[0]) fail("sync up", "no account was synced down");
    }
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
            if (composite && !json_is_string(json_object_get(entry, "AccountId")))
                json_object_set_new(entry, "AccountId", json_string(some_account));
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

    json_t *up = composite
        ? json_pack("{s:s,s:{s:s,s:s},s:{s:s,s:s,s:s},s:[s,s]}", "type", mode,
                    "parent", "sobjectType", "Account", "soupName", "accounts",
                    "children", "sobjectType", "Contact", "soupName", "contacts", "parentIdFieldName", "AccountId",
                    "childrenUpdateFieldlist", "LastName", "Title")
        : json_pack("{s:s,s:[s,s]}", "type", mode, "updateFieldlist", "LastName", "Title");
    char *up_text = json_dumps(up, JSON_COMPACT);
    json_decref(up);
    readers rd;
    int reading = readers_start(&rd, store, dir);
    t0 = now_s();
    check(syncstore_sync_up(store, up_text, composite ? "accounts" : "contacts", NULL, NULL, NULL, NULL, &id, &err), "sync_up", &err);
    wait_done(store, id, "sync up");
    double elapsed = now_s() - t0;
    char latencies[1200] = "";
    if (reading) readers_stop(&rd, latencies, sizeof latencies);
    free(up_text);
    long long after = count_where(store, dirty);
    check(syncstore_close(store, &err), "close", &err);
    if (after != 0) {
        fprintf(stderr, "bench-sync: %lld entries still dirty after the sync up\n", after);
        return 1;
    }
    printf("records=%lld seconds=%.6f down_seconds=%.6f%s\n", n, elapsed, down, latencies);
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

static char self_path[4096], baseline_path[4096], limit_path[4096], static_path[4096];

/* A program built beside bench-sync. */
static void beside(char *path, size_t size, const char *name) {
    snprintf(path, size, "%s", self_path);
    char *slash = strrchr(path, '/');
    snprintf(slash + 1, size - (size_t)(slash + 1 - path), "%s", name);
    if (access(path, X_OK) != 0) fail("not found beside bench-sync (build the bench-sync target)", path);
}

static void find_programs(void) {
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0) fail("readlink", "/proc/self/exe");
    self_path[n] = 0;
    beside(baseline_path, sizeof baseline_path, "bench-sync-baseline");
    beside(limit_path, sizeof limit_path, "bench-sync-limit");
    beside(static_path, sizeof static_path, "bench-sync-static");
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
    /* 0: off. The limit at a second size, reSync/ghosts/queries, reads during syncs */
    long long limit_records, scale_records, stall_records, stall_up_records;
    int limit_rounds;
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

/* ---- The storage limit, the static page server, a sync at 1M, reads during syncs ---- */

/* The number after "name=" in a child's output (0 when absent). */
static double field(const char *out, const char *name) {
    char key[64];
    snprintf(key, sizeof key, " %s=", name);
    const char *p = strstr(out, key);
    return p ? atof(p + strlen(key)) : 0;
}

/* The static page server in front of `upstream` (bench/static_pages.c). */
static void start_static(devserver *st, const devserver *upstream) {
    const char *args[] = {"--upstream", upstream->url, NULL};
    devserver_start(st, static_path, args);
    track_server(st, 1);
}

/* GET /__bench/seal or /__bench/stats of the static page server; returns its answer's "forwarded". */
static long long static_call(const devserver *st, const char *what) {
    long status = 0;
    json_t *answer = devserver_call(st, "GET", what, NULL, &status);
    if (status != 200) fail("static page server", what);
    long long forwarded = json_integer_value(json_object_get(answer, "forwarded"));
    json_decref(answer);
    return forwarded;
}

typedef struct { series limit, limit_grouped, engine_static, engine_dev; double prepare; long long pages_recorded; } limit_results;

/* Rounds of: the limit (bench-sync-limit; its fetch, before its clock, records the pages in the
 * static server, which is then sealed), the engine syncing down from the static server, and
 * with `dev_engine` the engine from the dev server itself. */
static limit_results bench_limit(const options *o, const devserver *server, long long records, int rounds, int dev_engine) {
    limit_results d = {{"storage limit: SQLite alone (engine layout)", 0, 0, 0, 0, 0},
                       {"the limit, 5 pages a transaction", 0, 0, 0, 0, 0},
                       {"engine from the static page server", 0, 0, 0, 0, 0}, {"engine from the dev server (HTTP)", 0, 0, 0, 0, 0}, 0, 0};
    static devserver st;
    start_static(&st, server);
    char limit_dir[2048], engine_dir[2048];
    snprintf(limit_dir, sizeof limit_dir, "%s/limit", o->work);
    snprintf(engine_dir, sizeof engine_dir, "%s/engine-limit", o->work);
    for (int r = 0; r < rounds; r++) {
        char *limit_argv[] = {limit_path, st.url, DEVSERVER_TOKEN, limit_dir, "--soql", SOQL, NULL};
        child_result rl = run_child(limit_argv);
        add(&d.limit, rl, records);
        if (r == 0) {
            d.pages_recorded = static_call(&st, "/__bench/seal");
            d.prepare = field(rl.out, "prepare_seconds");
        }
        /* As the engine when its writer is behind: every page fetched ahead (up to 10,000
         * records) in one transaction. */
        char *grouped_argv[] = {limit_path, st.url, DEVSERVER_TOKEN, limit_dir, "--soql", SOQL, "--pages-per-transaction", "5", NULL};
        add(&d.limit_grouped, run_child(grouped_argv), records);
        char *static_argv[] = {self_path, "engine-down", st.url, DEVSERVER_TOKEN, engine_dir, "-", SOQL, NULL};
        add(&d.engine_static, run_child(static_argv), records);
        if (dev_engine) {
            char *dev_argv[] = {self_path, "engine-down", (char *)server->url, DEVSERVER_TOKEN, engine_dir, "-", SOQL, NULL};
            add(&d.engine_dev, run_child(dev_argv), records);
        }
    }
    if (static_call(&st, "/__bench/stats") != d.pages_recorded) fail("static page server", "a timed run reached the dev server");
    track_server(&st, 0);
    devserver_stop(&st);
    print_series(&d.limit);
    printf("    (the limit's rows prepared in %.2f s before its clock; its RSS holds them all: not comparable)\n", d.prepare);
    print_series(&d.limit_grouped);
    print_series(&d.engine_static);
    print_series(&d.engine_dev);
    printf("    %lld pages recorded by the static page server, none fetched from the dev server after that\n", d.pages_recorded);
    char command[4200];
    snprintf(command, sizeof command, "rm -rf '%s' '%s'", limit_dir, engine_dir);
    if (system(command) != 0) fprintf(stderr, "bench-sync: could not remove %s\n", limit_dir);
    return d;
}

/* The Ids of the first n Contacts by LastModifiedDate (the order a sync down stores them in). */
static json_t *server_ids(const devserver *server, long long n) {
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

static void write_ids(const char *file, json_t *ids, size_t from, size_t count) {
    FILE *f = fopen(file, "w");
    if (!f) fail("write", file);
    for (size_t i = from; i < from + count && i < json_array_size(ids); i++) fprintf(f, "%s\n", json_string_value(json_array_get(ids, i)));
    fclose(f);
}

/* Changes (Title = tag) or deletes ids[from, from+count) on the server, 200 per request. */
static void change_on_server(const devserver *server, json_t *ids, size_t from, size_t count, const char *tag) {
    for (size_t at = from; at < from + count; at += 200) {
        size_t end = at + 200 < from + count ? at + 200 : from + count;
        long status = 0;
        json_t *answer;
        if (tag) {
            json_t *records = json_array();
            for (size_t i = at; i < end; i++)
                json_array_append_new(records, json_pack("{s:{s:s},s:O,s:s}", "attributes", "type", "Contact", "id",
                                                         json_array_get(ids, i), "Title", tag));
            json_t *body = json_pack("{s:b,s:o}", "allOrNone", 1, "records", records);
            char *text = json_dumps(body, JSON_COMPACT);
            answer = devserver_call(server, "PATCH", "composite/sobjects", text, &status);
            free(text);
            json_decref(body);
        } else {
            char path[8192] = "composite/sobjects?allOrNone=true&ids=";
            for (size_t i = at; i < end; i++)
                snprintf(path + strlen(path), sizeof path - strlen(path), "%s%s", i > at ? "," : "", json_string_value(json_array_get(ids, i)));
            answer = devserver_call(server, "DELETE", path, NULL, &status);
        }
        if (status != 200) fail(tag ? "update on the server" : "delete on the server", json_dumps(answer, 0));
        json_decref(answer);
    }
}

typedef struct {
    int done;
    long long records, changed, deleted;
    series full, resync, resync_warm, resync_fetch, ghosts_full, ghosts, ids_fetch, queries;
    double exact_ms, exact_sqlite_ms, agg_s, agg_sqlite_s, ghost_cpu;
    long long removed, fetched;
} scale_results;

/* reSync with 1% changed, cleanResyncGhosts with 1% deleted, queries: on M records. */
static scale_results bench_scale(const options *o) {
    scale_results d;
    memset(&d, 0, sizeof d);
    long long m = o->scale_records, pct = m / 100;
    d.records = m; d.changed = pct; d.deleted = pct;
    d.full.name = "full sync down (named)"; d.resync.name = "reSync, 1% changed on the server";
    d.resync_warm.name = "  the same, after a sync down in that process";
    d.resync_fetch.name = "  fetch only of the changed records"; d.ghosts.name = "cleanResyncGhosts, 1% deleted since the last";
    d.ghosts_full.name = "cleanResyncGhosts, first (full comparison)";
    d.ids_fetch.name = "  fetch only of the remaining Ids"; d.queries.name = "exact query (per query)";
    char seed[128], dir[2048], soql[256];
    snprintf(seed, sizeof seed, "Account=1000,Contact=%lld", m);
    static devserver srv;
    start_server(&srv, o->devserver, seed, NULL, NULL, NULL);
    json_t *ids = server_ids(&srv, 3 * pct);
    snprintf(dir, sizeof dir, "%s/engine-scale", o->work);
    setenv(SYNC_NAME_ENV, "bench", 1);
    char *down_argv[] = {self_path, "engine-down", srv.url, DEVSERVER_TOKEN, dir, "-", SOQL, NULL};
    add(&d.full, run_child(down_argv), m);
    unsetenv(SYNC_NAME_ENV);
    print_series(&d.full);

    double t0 = now_s();
    change_on_server(&srv, ids, 0, (size_t)pct, "resync1pct");
    printf("  %lld records changed on the server in %.1f s\n", pct, now_s() - t0);
    char *resync_argv[] = {self_path, "engine-resync", srv.url, DEVSERVER_TOKEN, dir, "bench", NULL};
    child_result rr = run_child(resync_argv);
    add(&d.resync, rr, m);
    d.fetched = (long long)field(rr.out, "fetched");
    print_series(&d.resync);
    printf("    records fetched by the reSync: %lld (changed: %lld)\n", d.fetched, pct);
    snprintf(soql, sizeof soql, "SELECT Id, FirstName, LastName, Email, Phone, Title, AccountId, MailingCity, LastModifiedDate "
             "FROM Contact WHERE Title = 'resync1pct'");
    char fetch_db[2048];
    snprintf(fetch_db, sizeof fetch_db, "%s/unused.db", o->work);
    char *rf_argv[] = {baseline_path, srv.url, DEVSERVER_TOKEN, fetch_db, "--fetch-only", "--soql", soql, NULL};
    add(&d.resync_fetch, run_child(rf_argv), pct);
    print_series(&d.resync_fetch);
    /* Another 1% (the records after the ghosts' slice), reSynced by a process that synced before. */
    change_on_server(&srv, ids, (size_t)(2 * pct), (size_t)pct, "resyncwarm");
    char *warm_argv[] = {self_path, "engine-resync", srv.url, DEVSERVER_TOKEN, dir, "bench", "warm", NULL};
    add(&d.resync_warm, run_child(warm_argv), m);
    print_series(&d.resync_warm);

    /* The first clean compares every id (and sets the sync's mark); the next one, after 1% is
     * deleted, asks the server only for the records deleted since (docs/sync.md#ghosts). */
    char *ghost_argv[] = {self_path, "engine-ghosts", srv.url, DEVSERVER_TOKEN, dir, "bench", NULL};
    add(&d.ghosts_full, run_child(ghost_argv), m);
    print_series(&d.ghosts_full);
    t0 = now_s();
    change_on_server(&srv, ids, (size_t)pct, (size_t)pct, NULL);
    printf("  %lld records deleted on the server in %.1f s\n", pct, now_s() - t0);
    child_result rg = run_child(ghost_argv);
    add(&d.ghosts, rg, m - pct);
    d.removed = (long long)field(rg.out, "removed");
    print_series(&d.ghosts);
    printf("    removed %lld local entries (deleted on the server: %lld); RSS after opening the store %.1f MB\n", d.removed, pct,
           field(rg.out, "hwm_open_kb") / 1024);
    char *if_argv[] = {baseline_path, srv.url, DEVSERVER_TOKEN, fetch_db, "--fetch-only", "--soql", "SELECT Id FROM Contact", NULL};
    add(&d.ids_fetch, run_child(if_argv), m - pct);
    print_series(&d.ids_fetch);
    stop_server(&srv);
    json_decref(ids);

    char *q_argv[] = {self_path, "engine-queries", dir, NULL};
    child_result rq = run_child(q_argv);
    add(&d.queries, rq, m - pct);
    d.exact_ms = field(rq.out, "exact_ms");
    d.exact_sqlite_ms = field(rq.out, "exact_sqlite_ms");
    d.agg_s = field(rq.out, "agg_s");
    d.agg_sqlite_s = field(rq.out, "agg_sqlite_s");
    printf("  exact query on Id, %lld-entry soup: engine %.3f ms, sqlite3 alone %.3f ms (mean of %.0f)\n", m - pct, d.exact_ms,
           d.exact_sqlite_ms, field(rq.out, "ids"));
    printf("  Smart SQL aggregate (count per LastName, top 10): engine %.1f ms, sqlite3 alone %.1f ms (best of 3)\n",
           d.agg_s * 1000, d.agg_sqlite_s * 1000);
    char command[4200];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0) fprintf(stderr, "bench-sync: could not remove %s\n", dir);
    d.done = 1;
    return d;
}

typedef struct { int done; char down[1024], up[1024]; long long down_records, up_records; } stall_results;

static void print_stalls(const char *what, const char *out) {
    const char *who[2][2] = {{"rt", "thread, same handle"}, {"rp", "another process"}};
    for (int k = 0; k < 2; k++) {
        char key[32];
        snprintf(key, sizeof key, "%s_n", who[k][0]);
        double count = field(out, key);
        double v[5];
        const char *names[5] = {"p50_ms", "p99_ms", "max_ms", "over1ms", "over20ms"};
        for (int i = 0; i < 5; i++) { snprintf(key, sizeof key, "%s_%s", who[k][0], names[i]); v[i] = field(out, key); }
        char figure[128], value[128];
        snprintf(figure, sizeof figure, "reads during %s, %s", what, who[k][1]);
        snprintf(value, sizeof value, "p50 %.3f  p99 %.3f  max %.1f ms  (%.0f reads, %.0f > 1 ms, %.0f > 20 ms)", v[0], v[1], v[2],
                 count, v[3], v[4]);
        printf("%-58s %-68s %-22s %s\n", figure, value, "p99<=1ms max<=20ms", verdict(count > 0 && v[1] <= 1.0 && v[2] <= 20.0));
        double c[4];
        const char *causes[4] = {"slow_preempted", "slow_blocked", "slow_running", "slow_cpu_max_ms"};
        for (int i = 0; i < 4; i++) { snprintf(key, sizeof key, "%s_%s", who[k][0], causes[i]); c[i] = field(out, key); }
        printf("%-58s reads over 1 ms: %.0f preempted (CPU taken by other processes), %.0f blocked (slept: lock or I/O),\n"
               "%-58s %.0f running; the most CPU one of them used: %.2f ms\n", "", c[0], c[1], "", c[2], c[3]);
    }
}

/* One sync child (argv[1..]: its mode and arguments, after the server URL) with readers on the
 * first 1000 records' Ids, against a server started with seed and faults; the child's output
 * (its reader latencies) into out. */
static void run_with_readers(const options *o, const char *seed, const char *faults, const char *ids_file, series *s,
                             long long records, char **child_args, char *out, size_t out_size) {
    static devserver server;
    start_server(&server, o->devserver, seed, faults, NULL, NULL);
    json_t *ids = server_ids(&server, 1000);
    write_ids(ids_file, ids, 0, 1000);
    json_decref(ids);
    char *argv[12] = {self_path, child_args[0], server.url, DEVSERVER_TOKEN};
    for (int i = 1; child_args[i] && i + 3 < 11; i++) argv[i + 3] = child_args[i];
    setenv(READ_IDS_ENV, ids_file, 1);
    child_result r = run_child(argv);
    unsetenv(READ_IDS_ENV);
    add(s, r, records);
    snprintf(out, out_size, "%s", r.out);
    stop_server(&server);
    print_series(s);
    printf("    %s", r.out);
}

/* Exact indexed queries (the first 1000 records' Ids, one read per ms) from a thread and from
 * another process during a sync down of M records and a sync up of U. */
static stall_results bench_stalls(const options *o) {
    stall_results d;
    memset(&d, 0, sizeof d);
    char seed[128], dir[2048], ids_file[2048];
    snprintf(ids_file, sizeof ids_file, "%s/read-ids.txt", o->work);
    snprintf(dir, sizeof dir, "%s/engine-stall", o->work);
    series down = {"sync down with readers", 0, 0, 0, 0, 0}, up = {"sync up with readers", 0, 0, 0, 0, 0};
    if (o->stall_records > 0) {
        snprintf(seed, sizeof seed, "Account=1000,Contact=%lld", o->stall_records);
        char *args[] = {"engine-down", dir, "-", SOQL, NULL};
        run_with_readers(o, seed, NULL, ids_file, &down, o->stall_records, args, d.down, sizeof d.down);
        d.down_records = o->stall_records;
    }
    if (o->stall_up_records > 0) {
        char faults[64], n[32];
        snprintf(faults, sizeof faults, "latency=%dms", o->latency);
        snprintf(seed, sizeof seed, "Account=100,Contact=%lld", o->stall_up_records);
        snprintf(n, sizeof n, "%lld", o->stall_up_records);
        char *args[] = {"engine-up", dir, "collection", n, "benchstall", NULL};
        run_with_readers(o, seed, faults, ids_file, &up, o->stall_up_records, args, d.up, sizeof d.up);
        d.up_records = o->stall_up_records;
    }
    char command[4200];
    snprintf(command, sizeof command, "rm -rf '%s' '%s'", dir, ids_file);
    if (system(command) != 0) fprintf(stderr, "bench-sync: could not remove %s\n", dir);
    d.done = 1;
    return d;
}

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
    /* --sqlite-memstatus-off (an experiment, inherited by the children): SQLite's memory
     * statistics off in this process before the engine initializes SQLite, so sqlite3_malloc
     * takes no process-wide mutex (the one a read on the sync's handle was found waiting for). */
    const char *memstatus = getenv(MEMSTATUS_ENV);
    if (memstatus && !strcmp(memstatus, "0") && sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) != SQLITE_OK)
        fail("sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0)", "SQLite was already initialized");
    if (argc >= 2 && !strcmp(argv[1], "engine-down") && argc == 7) return engine_down(argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "engine-up") && argc == 8) return engine_up(argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "engine-reader") && argc == 4) return engine_reader(argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "engine-resync") && (argc == 6 || (argc == 7 && !strcmp(argv[6], "warm"))))
        return engine_resync(argv + 2, argc == 7);
    if (argc >= 2 && !strcmp(argv[1], "engine-ghosts") && argc == 6) return engine_ghosts(argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "engine-queries") && argc == 3) return engine_queries(argv + 2);

    options o = {SYNCSTORE_BENCH_DEVSERVER, "/tmp/syncstore-bench-sync", "python3", 100000, 1000000, 10000, 1000, 5, 20, 1,
                 NULL, 0, 0, 0, 0, 0, 0, 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-http")) { o.http = 0; continue; }
        if (!strcmp(a, "--encryption")) { o.encryption = 1; continue; }
        if (!strcmp(a, "--sqlite-memstatus-off")) { setenv(MEMSTATUS_ENV, "0", 1); continue; }
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
        else if (!strcmp(a, "--limit-records")) o.limit_records = atoll(v);
        else if (!strcmp(a, "--limit-rounds")) o.limit_rounds = atoi(v);
        else if (!strcmp(a, "--scale-records")) o.scale_records = atoll(v);
        else if (!strcmp(a, "--stall-records")) o.stall_records = atoll(v);
        else if (!strcmp(a, "--stall-up-records")) o.stall_up_records = atoll(v);
        else fail("unknown option", a);
    }
    if (o.records <= 0 || o.rounds <= 0 || o.rounds > 20) fail("options", "--records must be > 0 and --rounds 1..20");
    if (o.limit_rounds <= 0 || o.limit_rounds > 20) fail("options", "--limit-rounds must be 1..20");
    if (o.scale_records < 0 || (o.scale_records > 0 && o.scale_records < 1000)) fail("options", "--scale-records must be 0 or >= 1000");
    if ((o.stall_records > 0 && o.stall_records < 1000) || (o.stall_up_records > 0 && o.stall_up_records < 1000))
        fail("options", "--stall-records and --stall-up-records must be 0 or >= 1000 (the readers read the first 1000)");
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
    if (getenv(MEMSTATUS_ENV)) printf("  EXPERIMENT: SQLite memory statistics off in the engine's processes (--sqlite-memstatus-off)\n");

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
    } else {
        start_server(&plain, o.devserver, seed, NULL, NULL, NULL);
    }
    printf("\n[1L] the storage limit at %lld records (SQLite alone in the engine's layout, rows prepared before the clock)\n"
           "     and the engine syncing down from the static page server (pages in memory), %d alternating rounds\n",
           o.records, o.rounds);
    limit_results lim = bench_limit(&o, &plain, o.records, o.rounds, 0);
    stop_server(&plain);

    /* ---- 5. the same at --limit-records M, with the engine from the dev server beside it ---- */
    limit_results lim_m;
    memset(&lim_m, 0, sizeof lim_m);
    if (o.limit_records > 0) {
        static devserver lserver;
        printf("\n[5] the storage limit at %lld records, engine from the static page server and from the dev server, %d rounds\n",
               o.limit_records, o.limit_rounds);
        snprintf(seed, sizeof seed, "Account=1000,Contact=%lld", o.limit_records);
        start_server(&lserver, o.devserver, seed, NULL, NULL, NULL);
        lim_m = bench_limit(&o, &lserver, o.limit_records, o.limit_rounds, 1);
        stop_server(&lserver);
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
    series up_composite = {"sync up, parent_children (composite)", 0, 0, 0, 0, 0};
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
        /* The same edits through the parent_children target: each account with its dirty
         * contacts in composite requests of at most 25 subrequests. */
        char *composite_argv[] = {self_path, "engine-up", slow.url, DEVSERVER_TOKEN, dir, "parent_children", n, "benchcomposite", NULL};
        add(&up_composite, run_child(composite_argv), o.up_records);
        snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE Title = 'benchcomposite'");
        long on_server_composite = devserver_count(&slow, soql);
        snprintf(n, sizeof n, "%lld", o.single_records);
        char *single_argv[] = {self_path, "engine-up", slow.url, DEVSERVER_TOKEN, dir, "single", n, "benchsingle", NULL};
        add(&up_single, run_child(single_argv), o.single_records);
        snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE Title = 'benchsingle'");
        long on_server_single = devserver_count(&slow, soql);
        stop_server(&slow);
        if (on_server_batch != o.up_records || on_server_composite != o.up_records || on_server_single != o.single_records) {
            fprintf(stderr, "bench-sync: the server has %ld/%ld edited records, expected %lld/%lld\n", on_server_batch,
                    on_server_single, o.up_records, o.single_records);
            return 1;
        }
        single_scaled = up_single.best * (double)o.up_records / (double)o.single_records;
        printf("  %-34s %lld records %8.3f s  (%.0f rec/s)  sync down before it: %.3f s\n", up_batch.name, o.up_records,
               up_batch.best, o.up_records / up_batch.best, atof(strstr(rb.out, "down_seconds=") + 13));
        printf("  %-34s %lld records %8.3f s  (%.0f rec/s)\n", up_composite.name, o.up_records, up_composite.best,
               o.up_records / up_composite.best);
        printf("  %-34s %lld records %8.3f s  (%.1f ms/record)%s\n", up_single.name, o.single_records, up_single.best,
               up_single.best * 1000 / o.single_records, o.single_records == o.up_records ? "" : "  MEASURED ON FEWER RECORDS");
        if (o.single_records != o.up_records)
            printf("  single scaled linearly to %lld records: %.1f s (= %.3f s x %lld / %lld; not measured at full size)\n",
                   o.up_records, single_scaled, up_single.best, o.up_records, o.single_records);
        printf("  server check: %ld + %ld + %ld edited records found on the server\n", on_server_batch, on_server_composite,
               on_server_single);
    }

    /* ---- 6. reSync, cleanResyncGhosts and queries at --scale-records M ---- */
    scale_results scale;
    memset(&scale, 0, sizeof scale);
    if (o.scale_records > 0) {
        printf("\n[6] a sync at %lld records: reSync with 1%% changed, cleanResyncGhosts with 1%% deleted, queries\n", o.scale_records);
        scale = bench_scale(&o);
    }

    /* ---- 7. reads during a sync down of --stall-records and a sync up of --stall-up-records ---- */
    stall_results stalls;
    memset(&stalls, 0, sizeof stalls);
    if (o.stall_records > 0 || o.stall_up_records > 0) {
        printf("\n[7] exact indexed reads (one per ms, the first 1000 Ids) from a thread and from another process during\n"
               "    a sync down of %lld and a sync up of %lld records (%d ms latency)\n", o.stall_records, o.stall_up_records, o.latency);
        stalls = bench_stalls(&o);
    }
    print_load("at the end");

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
    {
        double limit = rate(&lim.limit), dev = o.http ? rate(&http.engine) : e;
        printf("%-58s %-22s\n", "storage limit, SQLite alone in the engine's layout, rec/s",
               (snprintf(value, sizeof value, "%.0f", limit), value));
        printf("%-58s %-22s %-16s %s\n", o.http ? "  engine (dev server, HTTP) / limit" : "  engine (dev server, HTTPS) / limit",
               (snprintf(value, sizeof value, "%.0f%%", 100 * dev / limit), value), ">= 85%", verdict(dev / limit >= 0.85));
        printf("%-58s %-22s %-16s %s\n", "  engine (static page server) / limit",
               (snprintf(value, sizeof value, "%.0f%% (%.0f rec/s)", 100 * rate(&lim.engine_static) / limit, rate(&lim.engine_static)), value),
               ">= 85%", verdict(rate(&lim.engine_static) / limit >= 0.85));
        printf("%-58s %-22s\n", "  engine (static page server) / limit at 5 pages a transaction",
               (snprintf(value, sizeof value, "%.0f%% (limit %.0f rec/s)", 100 * rate(&lim.engine_static) / rate(&lim.limit_grouped),
                         rate(&lim.limit_grouped)), value));
        printf("%-58s %-22s\n", "  (plaintext limit: the cipher VFS is reachable only through the engine)", "");
    }
    if (o.limit_records > 0) {
        char figure[96];
        double limit = rate(&lim_m.limit);
        snprintf(figure, sizeof figure, "storage limit at %lld records, rec/s", o.limit_records);
        printf("%-58s %-22s\n", figure, (snprintf(value, sizeof value, "%.0f", limit), value));
        printf("%-58s %-22s %-16s %s\n", "  engine (dev server, HTTP) / limit",
               (snprintf(value, sizeof value, "%.0f%% (%.0f rec/s)", 100 * rate(&lim_m.engine_dev) / limit, rate(&lim_m.engine_dev)), value),
               ">= 85%", verdict(rate(&lim_m.engine_dev) / limit >= 0.85));
        printf("%-58s %-22s %-16s %s\n", "  engine (static page server) / limit",
               (snprintf(value, sizeof value, "%.0f%% (%.0f rec/s)", 100 * rate(&lim_m.engine_static) / limit, rate(&lim_m.engine_static)), value),
               ">= 85%", verdict(rate(&lim_m.engine_static) / limit >= 0.85));
        printf("%-58s %-22s\n", "  engine (static page server) / limit at 5 pages a transaction",
               (snprintf(value, sizeof value, "%.0f%% (limit %.0f rec/s)", 100 * rate(&lim_m.engine_static) / rate(&lim_m.limit_grouped),
                         rate(&lim_m.limit_grouped)), value));
        printf("%-58s %-22s\n", "  peak RSS engine (dev server / static server), MB",
               (snprintf(value, sizeof value, "%.0f / %.0f", lim_m.engine_dev.maxrss_kb / 1024.0, lim_m.engine_static.maxrss_kb / 1024.0), value));
    }
    if (scale.done) {
        char figure[96];
        snprintf(figure, sizeof figure, "reSync, %lld of %lld changed: reSync / full sync", scale.changed, scale.records);
        printf("%-58s %-22s %-16s\n", figure,
               (snprintf(value, sizeof value, "%.2f%% (%.2f s / %.2f s)", 100 * scale.resync.best / scale.full.best, scale.resync.best,
                         scale.full.best), value), "~1% (proportional)");
        printf("%-58s %-22s\n", "  fetch only of the changed records",
               (snprintf(value, sizeof value, "%.2f s", scale.resync_fetch.best), value));
        printf("%-58s %-22s\n", "  reSync after a sync down in its process / full sync",
               (snprintf(value, sizeof value, "%.2f%% (%.2f s)", 100 * scale.resync_warm.best / scale.full.best, scale.resync_warm.best), value));
        snprintf(figure, sizeof figure, "cleanResyncGhosts, %lld local / %lld remote", scale.records, scale.records - scale.deleted);
        printf("%-58s %-22s\n", figure,
               (snprintf(value, sizeof value, "%.2f s, peak RSS %.0f MB, removed %lld", scale.ghosts.best, scale.ghosts.maxrss_kb / 1024.0,
                         scale.removed), value));
        printf("%-58s %-22s\n", "  the first clean (nothing deleted, every id compared)",
               (snprintf(value, sizeof value, "%.2f s, peak RSS %.0f MB", scale.ghosts_full.best, scale.ghosts_full.maxrss_kb / 1024.0), value));
        printf("%-58s %-22s\n", "  fetch only of the remaining Ids (curl)",
               (snprintf(value, sizeof value, "%.2f s, peak RSS %.0f MB", scale.ids_fetch.best, scale.ids_fetch.maxrss_kb / 1024.0), value));
        printf("%-58s %-22s\n", "  ghosts / fetching the Ids alone",
               (snprintf(value, sizeof value, "%.2fx", scale.ghosts.best / scale.ids_fetch.best), value));
        snprintf(figure, sizeof figure, "exact query on Id, %lld-entry soup: engine / sqlite3", scale.records - scale.deleted);
        printf("%-58s %-22s\n", figure,
               (snprintf(value, sizeof value, "%.3f / %.3f ms (%.1fx)", scale.exact_ms, scale.exact_sqlite_ms,
                         scale.exact_ms / scale.exact_sqlite_ms), value));
        printf("%-58s %-22s\n", "Smart SQL aggregate (count per LastName): engine / sqlite3",
               (snprintf(value, sizeof value, "%.1f / %.1f ms (%.2fx)", scale.agg_s * 1000, scale.agg_sqlite_s * 1000,
                         scale.agg_s / scale.agg_sqlite_s), value));
    }
    if (stalls.done) {
        char what[96];
        if (stalls.down_records) {
            snprintf(what, sizeof what, "sync down %lld", stalls.down_records);
            print_stalls(what, stalls.down);
        }
        if (stalls.up_records) {
            snprintf(what, sizeof what, "sync up %lld", stalls.up_records);
            print_stalls(what, stalls.up);
        }
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
        /* What the latency alone costs: one request per batch of 200, one after another. */
        double floor_s = (double)((o.up_records + 199) / 200) * o.latency / 1000.0;
        printf("%-58s %-22s\n", "  latency floor (requests x latency)",
               (snprintf(value, sizeof value, "%.2f s (collection = %.2fx)", floor_s, up_batch.best / floor_s), value));
        printf("%-58s %-22s\n", "  parent_children (composite requests)",
               (snprintf(value, sizeof value, "%.2f s (%.2fx collection)", up_composite.best, up_composite.best / up_batch.best), value));
        printf("%-58s %-22s\n", o.single_records == o.up_records ? "  single" : "  single (scaled from a smaller run)",
               (snprintf(value, sizeof value, "%.1f s", single_scaled), value));
        printf("%-58s %-22s %-16s %s\n", "  single / collection", (snprintf(value, sizeof value, "%.1fx", single_scaled / up_batch.best), value),
               ">= 20x", verdict(single_scaled / up_batch.best >= 20));
    }
    return 0;
}
