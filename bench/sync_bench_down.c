/* Sections 1 and 2 of bench-sync: sync down N records, the engine against the C and Python
 * baselines and fetching alone (over HTTPS, then HTTP), and the engine's peak RSS at M records. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <pthread.h>
#include <unistd.h>

#include "sync_bench.h"

/* Listeners attached during a sync down (SYNCSTORE_BENCH_LISTENERS set): how many notices they
 * were told, and the query's last size. */
static pthread_mutex_t told_mutex = PTHREAD_MUTEX_INITIALIZER;
static long long soup_notices, query_notices, query_total;

static void on_soup_notice(const char *json, void *context) {
    (void)json;
    (void)context;
    pthread_mutex_lock(&told_mutex);
    soup_notices++;
    pthread_mutex_unlock(&told_mutex);
}

static void on_query_notice(const char *json, void *context) {
    (void)context;
    json_t *notice = json_loads(json, 0, NULL);
    pthread_mutex_lock(&told_mutex);
    query_notices++;
    query_total = json_integer_value(json_object_get(notice, "totalEntries"));
    pthread_mutex_unlock(&told_mutex);
    json_decref(notice);
}

/* engine-down URL TOKEN DIR CAFILE|- SOQL: one sync down into a fresh store. */
int engine_down(char **argv) {
    const char *url = argv[0], *token = argv[1], *dir = argv[2], *cafile = argv[3], *soql = argv[4];
    syncstore_store *store = engine_open(dir, url, token, cafile, INDEXES);
    char *target = soql_target(soql);
    syncstore_error err;
    int64_t id = 0;
    readers rd;
    int reading = readers_start(&rd, store, dir);
    int listening = getenv(LISTENERS_ENV) != NULL;
    if (listening) {
        syncstore_listener_token *soup = NULL, *query = NULL;
        check(syncstore_add_soup_listener(store, "contacts", on_soup_notice, NULL, &soup, &err), "add_soup_listener", &err);
        check(syncstore_add_query_listener(store, "{\"soupName\":\"contacts\",\"queryType\":\"range\",\"indexPath\":\"LastName\",\"pageSize\":10}",
                                           on_query_notice, NULL, &query, &err), "add_query_listener", &err);
    }
    double c0 = cpu_self();
    double t0 = now_s();
    check(syncstore_sync_down(store, target, "contacts", NULL, getenv(SYNC_NAME_ENV), NULL, NULL, &id, &err), "sync_down", &err);
    wait_done(store, id, "sync down");
    double elapsed = now_s() - t0;
    double cpu = cpu_self() - c0;
    char latencies[1200] = "";
    if (reading) readers_stop(&rd, latencies, sizeof latencies);
    long long n = count_where(store, NULL);
    if (listening) {
        /* the notices of the last commits, told after the run's end */
        for (int i = 0; i < 3000; i++) {
            pthread_mutex_lock(&told_mutex);
            int caught_up = query_total == n;
            pthread_mutex_unlock(&told_mutex);
            if (caught_up) break;
            usleep(1000);
        }
    }
    long hwm = vm_hwm_kb();
    check(syncstore_close(store, &err), "close", &err);
    free(target);
    char told[128] = "";
    if (listening) snprintf(told, sizeof told, " soup_notices=%lld query_notices=%lld query_total=%lld", soup_notices, query_notices, query_total);
    printf("records=%lld seconds=%.6f hwm_kb=%ld sync_cpu=%.6f%s%s\n", n, elapsed, hwm, cpu, latencies, told);
    return 0;
}


down_results bench_down(const options *o, const devserver *server, const char *cafile, int with_python, int rounds) {
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

/* Section 2: one run each of the engine and (a) syncing down --rss-records over HTTP. */
rss_results bench_rss(const options *o) {
    rss_results r = {{"engine (libsyncstore)", 0, 0, 0, 0, 0}, {"baseline (a) C: curl+jansson+sqlite", 0, 0, 0, 0, 0},
                     {"engine with a soup and a query listener", 0, 0, 0, 0, 0}, 0, 0, 0};
    if (o->rss_records > 0) {
        static devserver big;
        char seed[128], command[8192];
        printf("\n[2] peak RSS: sync down %lld Contacts over HTTP, one run each\n", o->rss_records);
        snprintf(seed, sizeof seed, "Account=1000,Contact=%lld", o->rss_records);
        start_server(&big, o->devserver, seed, NULL, NULL, NULL);
        char engine_dir[2048], a_db[2048];
        snprintf(engine_dir, sizeof engine_dir, "%s/engine-rss", o->work);
        snprintf(a_db, sizeof a_db, "%s/baseline-a-rss.db", o->work);
        char *engine_argv[] = {self_path, "engine-down", big.url, DEVSERVER_TOKEN, engine_dir, "-", SOQL, NULL};
        add(&r.engine, run_child(engine_argv), o->rss_records);
        /* the same with a soup and a query listener attached: notices per commit, memory flat */
        snprintf(command, sizeof command, "rm -rf '%s'", engine_dir);
        if (system(command) != 0) fprintf(stderr, "bench-sync: could not remove %s\n", engine_dir);
        setenv(LISTENERS_ENV, "1", 1);
        child_result listened = run_child(engine_argv);
        unsetenv(LISTENERS_ENV);
        add(&r.listened, listened, o->rss_records);
        const char *told = strstr(listened.out, "soup_notices=");
        if (told) sscanf(told, "soup_notices=%lld query_notices=%lld query_total=%lld", &r.soup_notices, &r.query_notices, &r.query_total);
        char *a_argv[] = {baseline_path, big.url, DEVSERVER_TOKEN, a_db, "--soql", SOQL, NULL};
        add(&r.a, run_child(a_argv), o->rss_records);
        stop_server(&big);
        print_series(&r.engine);
        print_series(&r.a);
        print_series(&r.listened);
        snprintf(command, sizeof command, "rm -rf '%s' '%s'*", engine_dir, a_db);
        if (system(command) != 0) fprintf(stderr, "bench-sync: could not remove %s\n", engine_dir);
    }
    return r;
}

/* The summary's sync-down lines. */
void down_summary(const options *o, const down_results *https, const down_results *http, int with_python) {
    double e = rate(&https->engine), a = rate(&https->base_a), b = rate(&https->base_b), f = rate(&https->fetch);
    char value[64];
    printf("%-58s %-22s\n", "sync down HTTPS, records/s: engine", (snprintf(value, sizeof value, "%.0f", e), value));
    printf("%-58s %-22s\n", "  baseline (a) C curl+jansson+sqlite", (snprintf(value, sizeof value, "%.0f", a), value));
    if (with_python) printf("%-58s %-22s\n", "  baseline (b) simple-salesforce+sqlite3", (snprintf(value, sizeof value, "%.0f", b), value));
    printf("%-58s %-22s\n", "  fetch only (server + curl)", (snprintf(value, sizeof value, "%.0f", f), value));
    if (with_python)
        printf("%-58s %-22s %-16s %s\n", "  engine / (b)", (snprintf(value, sizeof value, "%.2fx", e / b), value), ">= 1.5x", verdict(e / b >= 1.5));
    printf("%-58s %-22s %-16s %s\n", "  engine / (a)", (snprintf(value, sizeof value, "%.0f%%", 100 * e / a), value), ">= 70%", verdict(e / a >= 0.70));
    printf("%-58s %-22s\n", "  CPU s (user+sys) engine / (a) / (b), best runs",
           (snprintf(value, sizeof value, "%.2f / %.2f / %.2f", https->engine.cpu, https->base_a.cpu, https->base_b.cpu), value));
    printf("%-58s %-22s\n", "  peak RSS engine / (a) / (b), MB",
           (snprintf(value, sizeof value, "%.0f / %.0f / %.0f", https->engine.maxrss_kb / 1024.0, https->base_a.maxrss_kb / 1024.0,
                     https->base_b.maxrss_kb / 1024.0), value));
    if (o->http) {
        double eh = rate(&http->engine), ah = rate(&http->base_a);
        printf("%-58s %-22s\n", "sync down HTTP, records/s: engine / (a) / fetch only",
               (snprintf(value, sizeof value, "%.0f / %.0f / %.0f", eh, ah, rate(&http->fetch)), value));
        printf("%-58s %-22s %-16s %s\n", "  engine / (a)", (snprintf(value, sizeof value, "%.0f%%", 100 * eh / ah), value), ">= 70%",
               verdict(eh / ah >= 0.70));
        printf("%-58s %-22s\n", "  CPU s (user+sys) engine / (a), best runs",
               (snprintf(value, sizeof value, "%.2f / %.2f", http->engine.cpu, http->base_a.cpu), value));
    }
}

/* The summary's peak RSS lines. */
void rss_summary(const options *o, const rss_results *r) {
    char value[64];
    if (o->rss_records > 0) {
        char figure[96];
        snprintf(figure, sizeof figure, "peak RSS engine, sync down %lld records", o->rss_records);
        printf("%-58s %-22s %-16s %s\n", figure, (snprintf(value, sizeof value, "%.1f MB", r->engine.maxrss_kb / 1024.0), value),
               "< 150 MB", o->rss_records >= 1000000 ? verdict(r->engine.maxrss_kb < 150 * 1024) : "(smaller run)");
        printf("%-58s %-22s\n", "  (a) at the same size", (snprintf(value, sizeof value, "%.1f MB", r->a.maxrss_kb / 1024.0), value));
        printf("%-58s %-22s\n", "  engine with a soup and a query listener",
               (snprintf(value, sizeof value, "%.1f MB, %.0f rec/s", r->listened.maxrss_kb / 1024.0, rate(&r->listened)), value));
        printf("%-58s %-22s %-16s %s\n", "  notices told: soup / query (query's last size)",
               (snprintf(value, sizeof value, "%lld / %lld (%lld)", r->soup_notices, r->query_notices, r->query_total), value),
               "<= commits", verdict(r->query_total == o->rss_records && r->soup_notices <= o->rss_records / 2000 + 1));
    }
}
