/* What the sync benchmarks' files share (bench-sync: bench/sync_bench.c has its usage and main):
 * the engine children's common steps, child processes and their figures, the dev servers, and
 * one declaration per benchmark (each in a file of its own). */
#ifndef SYNCSTORE_SYNC_BENCH_H
#define SYNCSTORE_SYNC_BENCH_H
#include "../Tests/c/devserver.h"
#include <jansson.h>
#include <pthread.h>
#include <sys/types.h>
#include <syncstore.h>

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

#define STORE_CONFIG_ENV "SYNCSTORE_BENCH_STORE_CONFIG"
#define READ_IDS_ENV "SYNCSTORE_BENCH_READ_IDS"   /* file of record Ids, one a line: readers run */
#define SYNC_NAME_ENV "SYNCSTORE_BENCH_SYNC_NAME" /* engine-down names its sync (for reSync, ghosts) */
#define LISTENERS_ENV "SYNCSTORE_BENCH_LISTENERS" /* engine-down attaches a soup and a query listener */
#define READ_PAUSE_US 1000                        /* between two reads: a UI reading, not a flood */
#define MEMSTATUS_ENV "SYNCSTORE_BENCH_SQLITE_MEMSTATUS" /* "0": see --sqlite-memstatus-off */

void fail(const char *what, const char *detail);
void check(int rc, const char *what, const syncstore_error *err);

/* ---- The children: the engine, in a process of its own so its peak RSS is its own ---- */

double cpu_self(void);
syncstore_store *engine_open(const char *dir, const char *url, const char *token, const char *cafile, const char *indexes);
void wait_done(syncstore_store *store, int64_t id, const char *what);
long long count_where(syncstore_store *store, const char *condition);
char *soql_target(const char *soql);

/* Latencies in ms, and what each read over 1 ms did meanwhile (getrusage of its thread):
 * preempted: only involuntary context switches (it was runnable but another process had the
 * CPU: the machine's load, not the store); blocked: a voluntary switch (it slept: a lock, a
 * busy wait, I/O); neither: it ran all the time (the read itself was slow). */
typedef struct { double *v; size_t n, cap; size_t preempted, blocked, neither; double slow_cpu_max; } samples;

/* One thread reading during a timed sync (sync_bench_stalls.c). */
typedef struct {
    syncstore_store *store;
    char **specs;
    int nspecs;
    volatile int stop;
    samples lat;
    pthread_t thread;
} reader;

/* The readers of one timed sync: a thread on the same handle, and a process of its own
 * (bench-sync engine-reader) with another handle on the same store. */
typedef struct {
    reader thread;
    pid_t pid;
    int to_child, from_child;
} readers;

double timed_read(syncstore_store *store, const char *spec, samples *lat);
int readers_start(readers *r, syncstore_store *store, const char *dir);
void readers_stop(readers *r, char *out, size_t size);

/* The children's commands (bench-sync engine-...). */
int engine_down(char **argv);
int engine_up(char **argv);
int engine_reader(char **argv);
int engine_resync(char **argv, int warm);
int engine_ghosts(char **argv);
int engine_queries(char **argv);

/* ---- The parent: servers, children, ratios ---- */

typedef struct {
    double seconds;   /* the child's own timer */
    long long records;
    long maxrss_kb;   /* ru_maxrss from wait4 */
    double cpu;       /* user + sys seconds of the child */
    char out[1024];
} child_result;

typedef struct {
    const char *name;
    int runs;
    double best;       /* seconds */
    long long records;
    long maxrss_kb;    /* highest of the runs */
    double cpu;        /* of the best run */
} series;

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

extern char self_path[4096], baseline_path[4096], limit_path[4096], static_path[4096];

void track_server(devserver *server, int on);
void stop_servers(void);
child_result run_child(char *const argv[]);
void add(series *s, child_result r, long long expected);
double rate(const series *s);
void print_series(const series *s);
void find_programs(void);
void make_dir(const char *dir);
void start_server(devserver *server, const char *binary, const char *seed, const char *faults, const char *cert, const char *key);
void stop_server(devserver *server);
const char *verdict(int ok);
double field(const char *out, const char *name);
json_t *server_ids(const devserver *server, long long n);
char *bench_store_config(const char *key, int kdf_iter);

/* ---- The benchmarks (the numbers are the sections of the usage in sync_bench.c) ---- */

/* 1, 2 (sync_bench_down.c): sync down against the baselines, and peak RSS at M records. */
typedef struct { series engine, base_a, base_b, fetch; } down_results;
typedef struct {
    series engine, a, listened;
    long long soup_notices, query_notices, query_total;
} rss_results;
down_results bench_down(const options *o, const devserver *server, const char *cafile, int with_python, int rounds);
rss_results bench_rss(const options *o);
void down_summary(const options *o, const down_results *https, const down_results *http, int with_python);
void rss_summary(const options *o, const rss_results *r);

/* 1L, 5 (sync_bench_limit.c): the storage limit and the static page server. */
typedef struct { series limit, limit_grouped, engine_static, engine_dev; double prepare; long long pages_recorded; } limit_results;
limit_results bench_limit(const options *o, const devserver *server, long long records, int rounds, int dev_engine);
void limit_summary(const options *o, const limit_results *lim, const limit_results *lim_m, double dev);

/* 3 (sync_bench_up.c): sync up with latency, collection vs parent_children vs single. */
typedef struct { series batch, composite, single; double single_scaled; } up_results;
up_results bench_up(const options *o);
void up_summary(const options *o, const up_results *u);

/* 4 (sync_bench_encryption.c): plaintext vs encrypted engine stores. */
int encryption_main(const options *o, const char *cert, const char *tls_key, const char *seed);

/* 6 (sync_bench_scale.c): reSync, cleanResyncGhosts and queries at M records. */
typedef struct {
    int done;
    long long records, changed, deleted;
    series full, resync, resync_warm, resync_fetch, ghosts_full, ghosts, ids_fetch, queries;
    double exact_ms, exact_sqlite_ms, agg_s, agg_sqlite_s, ghost_cpu;
    long long removed, fetched;
} scale_results;
scale_results bench_scale(const options *o);
void scale_summary(const scale_results *s);

/* 7 (sync_bench_stalls.c): reads during a sync down and a sync up. */
typedef struct { int done; char down[1024], up[1024]; long long down_records, up_records; } stall_results;
stall_results bench_stalls(const options *o);
void stalls_summary(const stall_results *s);

#endif
