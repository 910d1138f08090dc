/* Sync benchmarks (not part of the tests), each with its baselines in the same run. This file
 * has the options, the order of the sections and the summary; each benchmark is in a file of its
 * own (sync_bench_down.c: 1 and 2, _up.c: 3, _encryption.c: 4, _limit.c: 1L and 5, _scale.c: 6,
 * _stalls.c: 7), what they share in sync_bench_common.c (declared in sync_bench.h).
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
 *    (--limit-rounds R, default 1; "best of 3 paired runs" is --limit-rounds 3).
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
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sync_bench.h"

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
    static devserver tls, plain;
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
    rss_results rss = bench_rss(&o);

    /* ---- 3. sync up with latency: collection vs single ---- */
    up_results up = bench_up(&o);

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
    down_summary(&o, &https, &http, with_python);
    limit_summary(&o, &lim, &lim_m, o.http ? rate(&http.engine) : rate(&https.engine));
    scale_summary(&scale);
    stalls_summary(&stalls);
    rss_summary(&o, &rss);
    up_summary(&o, &up);
    return 0;
}
