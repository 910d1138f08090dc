/* Sections 1L and 5 of bench-sync: the storage limit (SQLite alone in the engine's layout,
 * bench-sync-limit) and the engine syncing down from the static page server beside it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync_bench.h"

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

/* Rounds of: the limit (bench-sync-limit; its fetch, before its clock, records the pages in the
 * static server, which is then sealed), the engine syncing down from the static server, and
 * with `dev_engine` the engine from the dev server itself. */
limit_results bench_limit(const options *o, const devserver *server, long long records, int rounds, int dev_engine) {
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

/* The summary's storage-limit lines; `dev`: the engine's rate from the dev server (HTTP, or HTTPS
 * with --no-http). */
void limit_summary(const options *o, const limit_results *lim, const limit_results *lim_m, double dev) {
    char value[64];
    double limit = rate(&lim->limit);
    printf("%-58s %-22s\n", "storage limit, SQLite alone in the engine's layout, rec/s",
           (snprintf(value, sizeof value, "%.0f", limit), value));
    printf("%-58s %-22s %-16s %s\n", o->http ? "  engine (dev server, HTTP) / limit" : "  engine (dev server, HTTPS) / limit",
           (snprintf(value, sizeof value, "%.0f%%", 100 * dev / limit), value), ">= 85%", verdict(dev / limit >= 0.85));
    printf("%-58s %-22s %-16s %s\n", "  engine (static page server) / limit",
           (snprintf(value, sizeof value, "%.0f%% (%.0f rec/s)", 100 * rate(&lim->engine_static) / limit, rate(&lim->engine_static)), value),
           ">= 85%", verdict(rate(&lim->engine_static) / limit >= 0.85));
    printf("%-58s %-22s\n", "  engine (static page server) / limit at 5 pages a transaction",
           (snprintf(value, sizeof value, "%.0f%% (limit %.0f rec/s)", 100 * rate(&lim->engine_static) / rate(&lim->limit_grouped),
                     rate(&lim->limit_grouped)), value));
    printf("%-58s %-22s\n", "  (plaintext limit: the cipher VFS is reachable only through the engine)", "");
    if (o->limit_records > 0) {
        char figure[96];
        limit = rate(&lim_m->limit);
        snprintf(figure, sizeof figure, "storage limit at %lld records, rec/s", o->limit_records);
        printf("%-58s %-22s\n", figure, (snprintf(value, sizeof value, "%.0f", limit), value));
        printf("%-58s %-22s %-16s %s\n", "  engine (dev server, HTTP) / limit",
               (snprintf(value, sizeof value, "%.0f%% (%.0f rec/s)", 100 * rate(&lim_m->engine_dev) / limit, rate(&lim_m->engine_dev)), value),
               ">= 85%", verdict(rate(&lim_m->engine_dev) / limit >= 0.85));
        printf("%-58s %-22s %-16s %s\n", "  engine (static page server) / limit",
               (snprintf(value, sizeof value, "%.0f%% (%.0f rec/s)", 100 * rate(&lim_m->engine_static) / limit, rate(&lim_m->engine_static)), value),
               ">= 85%", verdict(rate(&lim_m->engine_static) / limit >= 0.85));
        printf("%-58s %-22s\n", "  engine (static page server) / limit at 5 pages a transaction",
               (snprintf(value, sizeof value, "%.0f%% (limit %.0f rec/s)", 100 * rate(&lim_m->engine_static) / rate(&lim_m->limit_grouped),
                         rate(&lim_m->limit_grouped)), value));
        printf("%-58s %-22s\n", "  peak RSS engine (dev server / static server), MB",
               (snprintf(value, sizeof value, "%.0f / %.0f", lim_m->engine_dev.maxrss_kb / 1024.0, lim_m->engine_static.maxrss_kb / 1024.0), value));
    }
}
