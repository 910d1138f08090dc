/* Section 7 of bench-sync: exact indexed reads, from a thread on the sync's handle and from
 * another process, during a sync down and a sync up; their latencies and what slowed them. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync_bench.h"

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
double timed_read(syncstore_store *store, const char *spec, samples *lat) {
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

static void *reader_main(void *arg) {
    reader *r = arg;
    for (long i = 0; !r->stop; i++) {
        timed_read(r->store, r->specs[i % r->nspecs], &r->lat);
        usleep(READ_PAUSE_US);
    }
    return NULL;
}

int readers_start(readers *r, syncstore_store *store, const char *dir) {
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
void readers_stop(readers *r, char *out, size_t size) {
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
int engine_reader(char **argv) {
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

static void write_ids(const char *file, json_t *ids, size_t from, size_t count) {
    FILE *f = fopen(file, "w");
    if (!f) fail("write", file);
    for (size_t i = from; i < from + count && i < json_array_size(ids); i++) fprintf(f, "%s\n", json_string_value(json_array_get(ids, i)));
    fclose(f);
}

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
stall_results bench_stalls(const options *o) {
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

/* The summary's lines of section 7. */
void stalls_summary(const stall_results *s) {
    if (s->done) {
        char what[96];
        if (s->down_records) {
            snprintf(what, sizeof what, "sync down %lld", s->down_records);
            print_stalls(what, s->down);
        }
        if (s->up_records) {
            snprintf(what, sizeof what, "sync up %lld", s->up_records);
            print_stalls(what, s->up);
        }
    }
}
