/* Listener benchmark (not part of the tests; docs/benchmarks.md, "Listeners"):
 *   bench-listeners DIR [--writes N] [--rounds R] [--result N] [--samples N]
 * 1. commit to callback: a soup listener; each single-entry upsert waits for its notice; the time
 *    from the upsert's return (the commit is inside it) to the callback's start, p50 / p99.
 * 2. write throughput: N single-entry upserts with no listener, with 10 soup + 10 query
 *    listeners, with 100 + 100, and after 10,000 listeners were added and removed; alternating
 *    rounds, ratios to "none" in the same run (median of R rounds).
 * 3. a 1-entry change under a query listener whose result has --result entries (exact and
 *    range): upsert return to callback (judge, diff, first page, JSON), against re-running the
 *    query's whole result (Smart SQL of the ids and modification times, as a listener that could
 *    not judge from the entry would) in the same run.
 * 4. another process's commit: this program run again as a writer that upserts --samples
 *    entries, one every 15 ms, each holding its time; the listener's notice, read against it,
 *    p50 / p99. */
#define _GNU_SOURCE
#include "bench_stats.h"
#include <jansson.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <syncstore.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what, const syncstore_error *err) {
    fprintf(stderr, "%s: %s\n", what, err ? err->message : "failed");
    exit(1);
}

#define OK(call, what) do { syncstore_error err_; if ((call_rc = (call)) != SYNCSTORE_OK) die(what, &err_); } while (0)
static int call_rc;
#define E (&err_)

static const char *root;

static syncstore_store *open_store(const char *name) {
    char config[128];
    snprintf(config, sizeof config, "{\"storeName\":\"%s\"}", name);
    syncstore_store *s = NULL;
    OK(syncstore_open(root, config, &s, E), "open");
    return s;
}

/* A listener that notes when it was last called and how often. */
typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    long calls;
    double last_ms;
    json_t *last;       /* the last notice, when kept */
    int keep;
} probe_t;

static void probe_init(probe_t *p, int keep) {
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mutex, NULL);
    pthread_cond_init(&p->cond, NULL);
    p->keep = keep;
}

static void on_notice(const char *json, void *context) {
    probe_t *p = context;
    double t = now_ms();
    json_t *notice = p->keep ? json_loads(json, 0, NULL) : NULL;
    pthread_mutex_lock(&p->mutex);
    p->calls++;
    p->last_ms = t;
    if (notice) {
        json_decref(p->last);
        p->last = notice;
    }
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->mutex);
}

static atomic_long quiet_calls;
static void on_quiet(const char *json, void *context) {
    (void)json;
    (void)context;
    atomic_fetch_add(&quiet_calls, 1);
}

/* Waits until the probe has more than `calls` calls; returns the time of the last one. */
static double wait_past(probe_t *p, long calls) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&p->mutex);
    while (p->calls <= calls)
        if (pthread_cond_timedwait(&p->cond, &p->mutex, &deadline) != 0) {
            pthread_mutex_unlock(&p->mutex);
            fprintf(stderr, "no notice within 10 s\n");
            exit(1);
        }
    double t = p->last_ms;
    pthread_mutex_unlock(&p->mutex);
    return t;
}

static long calls_of(probe_t *p) {
    pthread_mutex_lock(&p->mutex);
    long n = p->calls;
    pthread_mutex_unlock(&p->mutex);
    return n;
}

static double percentile(double *v, int n, double q) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int i = (int)(q * (n - 1) + 0.5);
    return v[i];
}

static const char *SPECS = "[{\"path\":\"k\",\"type\":\"string\"},{\"path\":\"n\",\"type\":\"integer\"}]";

static void latency(int samples) {
    syncstore_store *s = open_store("latency");
    OK(syncstore_register_soup(s, "s", SPECS, E), "register");
    probe_t p;
    probe_init(&p, 0);
    syncstore_listener_token *t = NULL;
    OK(syncstore_add_soup_listener(s, "s", on_notice, &p, &t, E), "listen");
    double *lat = malloc(sizeof *lat * (size_t)samples);
    for (int i = 0; i < samples; i++) {
        long before = calls_of(&p);
        double start = now_ms();
        OK(syncstore_upsert(s, "s", "{\"k\":\"x\",\"n\":1}", NULL, NULL, E), "upsert");
        /* the commit is inside the upsert: from its start is an upper bound */
        lat[i] = wait_past(&p, before) - start;
    }
    printf("commit to callback, at most (upsert start to callback; %d single-entry commits, soup listener): p50 %.3f ms, p99 %.3f ms (goal: <= 2, <= 10)\n",
           samples, percentile(lat, samples, 0.5), percentile(lat, samples, 0.99));
    free(lat);
    OK(syncstore_close(s, E), "close");
}

/* Single-entry upserts per second into soup "s" of store `s`. */
static double write_rate(syncstore_store *s, int writes) {
    char entry[96];
    double t0 = now_ms();
    for (int i = 0; i < writes; i++) {
        snprintf(entry, sizeof entry, "{\"k\":\"w%d\",\"n\":%d}", i % 500, i);
        OK(syncstore_upsert(s, "s", entry, NULL, NULL, E), "upsert");
    }
    return writes / ((now_ms() - t0) / 1000);
}

static void add_listeners(syncstore_store *s, int soups, int queries, syncstore_listener_token **tokens) {
    int n = 0;
    for (int i = 0; i < soups; i++) OK(syncstore_add_soup_listener(s, "s", on_quiet, NULL, &tokens[n++], E), "listen");
    for (int i = 0; i < queries; i++) {
        char spec[160];
        snprintf(spec, sizeof spec, "{\"soupName\":\"s\",\"queryType\":\"exact\",\"indexPath\":\"k\",\"matchKey\":\"w%d\"}", i);
        OK(syncstore_add_query_listener(s, spec, on_quiet, NULL, &tokens[n++], E), "query listen");
    }
}

static void remove_listeners(syncstore_store *s, syncstore_listener_token **tokens, int n) {
    for (int i = 0; i < n; i++) OK(syncstore_remove_listener(s, tokens[i], E), "remove");
}

static void throughput(int writes, int rounds) {
    enum { CASES = 5 };
    const char *names[CASES] = {"none", "10 soup + 10 query listeners", "100 soup + 100 query listeners",
                                "after 10,000 added and removed", "100 + 100, buffered, never sent"};
    const int soups[CASES] = {0, 10, 100, 0, 100}, queries[CASES] = {0, 10, 100, 0, 100};
    double rate[CASES][16];
    syncstore_listener_token **tokens = malloc(sizeof *tokens * 10000);
    for (int r = 0; r < rounds; r++) {
        for (int c = 0; c < CASES; c++) {
            char name[32];
            snprintf(name, sizeof name, "write-%d-%d", r, c);
            syncstore_store *s = open_store(name);
            OK(syncstore_register_soup(s, "s", SPECS, E), "register");
            if (c == 3) {
                for (int i = 0; i < 10000; i++) OK(syncstore_add_soup_listener(s, "s", on_quiet, NULL, &tokens[i], E), "listen");
                remove_listeners(s, tokens, 10000);
            }
            /* the last case: what the writer alone pays (nothing is ever told) */
            if (c == 4) OK(syncstore_buffer_notifications(s, NULL, NULL, E), "buffer");
            add_listeners(s, soups[c], queries[c], tokens);
            rate[c][r] = write_rate(s, writes);
            remove_listeners(s, tokens, soups[c] + queries[c]);
            OK(syncstore_close(s, E), "close");
        }
    }
    double base = median_of(rate[0], rounds);
    printf("write throughput, %d single-entry upserts, median of %d alternating rounds:\n", writes, rounds);
    for (int c = 0; c < CASES; c++)
        printf("  %-32s %9.0f upserts/s  %.2fx none%s\n", names[c], median_of(rate[c], rounds), median_of(rate[c], rounds) / base,
               c == 1 ? " (goal >= 0.9)" : c == 2 ? " (goal >= 0.75)" : c == 3 ? " (goal ~1.0)" : c == 4 ? " (the writer's own cost)" : "");
    free(tokens);
}

static void query_change(int result, int samples) {
    syncstore_store *s = open_store("query");
    OK(syncstore_register_soup(s, "s", SPECS, E), "register");
    char *batch = malloc(64 * 1000 + 16);
    for (int done = 0; done < result; done += 1000) {
        size_t at = 0;
        batch[at++] = '[';
        for (int i = done; i < done + 1000 && i < result; i++)
            at += (size_t)sprintf(batch + at, "%s{\"k\":\"big\",\"n\":%d}", i == done ? "" : ",", i);
        batch[at++] = ']';
        batch[at] = 0;
        OK(syncstore_upsert(s, "s", batch, NULL, NULL, E), "fill");
    }
    free(batch);
    /* closed and opened again: the fill's WAL checkpointed, as a store at rest is */
    OK(syncstore_close(s, E), "close");
    s = open_store("query");
    const char *specs[2] = {
        "{\"soupName\":\"s\",\"queryType\":\"exact\",\"indexPath\":\"k\",\"matchKey\":\"big\",\"pageSize\":10}",
        "{\"soupName\":\"s\",\"queryType\":\"range\",\"indexPath\":\"n\",\"beginKey\":-1000000,\"endKey\":100000000,\"pageSize\":10}"};
    const char *rerun = "{\"queryType\":\"smart\",\"smartSql\":\"select {s:_soupEntryId}, {s:_soupLastModifiedDate} from {s} where {s:k} = 'big'\",\"pageSize\":100000}";
    for (int q = 0; q < 2; q++) {
        probe_t p;
        probe_init(&p, 0);
        syncstore_listener_token *t = NULL;
        OK(syncstore_add_query_listener(s, specs[q], on_notice, &p, &t, E), "query listen");
        wait_past(&p, 0);
        double *judge = malloc(sizeof *judge * (size_t)samples), *full = malloc(sizeof *full * (size_t)samples);
        for (int i = 0; i < samples; i++) {
            long before = calls_of(&p);
            char entry[64];
            snprintf(entry, sizeof entry, "{\"k\":\"big\",\"n\":%d}", -1 - i);
            double start = now_ms();
            OK(syncstore_upsert(s, "s", entry, NULL, NULL, E), "upsert");
            double committed = now_ms();
            double told = wait_past(&p, before);
            /* told before the upsert returned: the judging fit inside the upsert's own time */
            judge[i] = told > committed ? told - committed : told - start;
            double t0 = now_ms();
            char *out = NULL;
            OK(syncstore_run_smart_query(s, rerun, &out, E), "rerun");
            full[i] = now_ms() - t0;
            syncstore_free(out);
        }
        printf("1-entry change under a %s query listener on %d entries: %.3f ms p50 (%.3f p99) from the commit to judge, diff and tell; "
               "re-running its result %.2f ms p50: %.1fx faster (goal <= 1 ms)\n",
               q == 0 ? "exact" : "range", result, percentile(judge, samples, 0.5), percentile(judge, samples, 0.99),
               percentile(full, samples, 0.5), percentile(full, samples, 0.5) / percentile(judge, samples, 0.5));
        OK(syncstore_remove_listener(s, t, E), "remove");
        free(judge);
        free(full);
    }
    OK(syncstore_close(s, E), "close");
}

static int run_writer(const char *dir, int samples) {
    root = dir;
    syncstore_store *s = open_store("shared");
    for (int i = 0; i < samples; i++) {
        char entry[96];
        snprintf(entry, sizeof entry, "{\"k\":\"far\",\"n\":%d,\"at\":%.3f}", i, now_ms());
        OK(syncstore_upsert(s, "s", entry, NULL, NULL, E), "writer upsert");
        usleep(15000);
    }
    OK(syncstore_close(s, E), "close");
    return 0;
}

static void other_process(const char *self, int samples) {
    syncstore_store *s = open_store("shared");
    OK(syncstore_register_soup(s, "s", SPECS, E), "register");
    probe_t p;
    probe_init(&p, 1);
    syncstore_listener_token *t = NULL;
    OK(syncstore_add_query_listener(s, "{\"soupName\":\"s\",\"queryType\":\"exact\",\"indexPath\":\"k\",\"matchKey\":\"far\",\"orderPath\":\"n\",\"order\":\"descending\",\"pageSize\":1}",
                                    on_notice, &p, &t, E), "query listen");
    wait_past(&p, 0);
    char count[16];
    snprintf(count, sizeof count, "%d", samples);
    char *args[] = {(char *)self, "--writer", (char *)root, count, NULL};
    pid_t pid;
    if (posix_spawn(&pid, self, NULL, NULL, args, environ) != 0) { perror("posix_spawn"); exit(1); }
    double *lat = malloc(sizeof *lat * (size_t)samples);
    int seen = 0, last = -1;
    long calls = calls_of(&p);
    while (seen < samples) {
        double told = wait_past(&p, calls);
        pthread_mutex_lock(&p.mutex);
        calls = p.calls;
        json_t *entry = json_array_get(json_object_get(p.last, "currentPageOrderedEntries"), 0);
        int n = (int)json_integer_value(json_object_get(entry, "n"));
        double at = json_real_value(json_object_get(entry, "at"));
        pthread_mutex_unlock(&p.mutex);
        if (n <= last) continue;
        /* entries merged into one notice are told when it is: each waited from its own commit */
        (void)told;
        for (int i = last + 1; i <= n && seen < samples; i++) lat[seen++] = told - at;
        last = n;
    }
    int status;
    waitpid(pid, &status, 0);
    printf("another process's commit to callback (%d commits, 15 ms apart, poll every 10 ms): p50 %.1f ms, p99 %.1f ms (goal p99 <= 50)\n",
           samples, percentile(lat, samples, 0.5), percentile(lat, samples, 0.99));
    free(lat);
    OK(syncstore_close(s, E), "close");
}

int main(int argc, char **argv) {
    if (argc > 3 && strcmp(argv[1], "--writer") == 0) return run_writer(argv[2], atoi(argv[3]));
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [--writes N] [--rounds R] [--result N] [--samples N]\n", argv[0]);
        return 2;
    }
    root = argv[1];
    int writes = 5000, rounds = 3, result = 100000, samples = 200;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--writes")) writes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--result")) result = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--samples")) samples = atoi(argv[i + 1]);
    }
    if (rounds > 16) rounds = 16;
    char command[512];
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s'", root, root);
    if (system(command) != 0) return 1;
    printf("libsyncstore %s, listeners\n", syncstore_version());
    print_load("at start");
    latency(samples * 5);
    throughput(writes, rounds);
    query_change(result, samples / 4 > 10 ? samples / 4 : 10);
    other_process(argv[0], samples);
    print_load("at end");
    return 0;
}
