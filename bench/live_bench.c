/* Live sync benchmark (not part of the tests; docs/benchmarks.md, "Live sync"):
 *   SYNCSTORE_DEVSERVER=<syncstore-devserver> bench-live DIR [--writes N] [--debounce MS] [--server-writes N]
 * A store in live sync with a sync up and a sync down against a dev server process on 127.0.0.1;
 * N host writes, each a new local record, 400 ms apart: the time from the write's return to the
 * record's arrival on the server (the server polled every 2 ms), p50 / p99 against the goal
 * (debounce + 100 ms). Then the server unreachable while 1000 records are written, and the time
 * from the server coming back (the remote set again) to all 1000 on the server, with the number
 * of sync up runs that took them. Then change events (docs/sync.md#change-events): N writes on the
 * server (REST, behind the engine's back), 200 ms apart, each timed from the server's answer to
 * the record in the local soup (polled every 1 ms), p50 / p99 against the goals (300 ms / 1 s);
 * and 5 s idle: the requests the server saw (its counter) and the CPU this process used. */
#define _DEFAULT_SOURCE
#include "../Tests/c/devserver.h"
#include "bench_stats.h"
#include <jansson.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syncstore.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void ok(int rc, const char *what, const syncstore_error *err) {
    if (rc != SYNCSTORE_OK) {
        fprintf(stderr, "%s: %s\n", what, err->message);
        exit(1);
    }
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int live_events, up_runs, offline_events, streaming;
static void on_event(const char *json, void *context) {
    (void)context;
    json_t *e = json_loads(json, 0, NULL);
    pthread_mutex_lock(&lock);
    const char *state = json_string_value(json_object_get(e, "state"));
    if (state && strcmp(state, "live") == 0) live_events++;
    if (state && strcmp(state, "offline") == 0) offline_events++;
    const char *stream = json_string_value(json_object_get(json_object_get(e, "changeEvents"), "state"));
    if (stream) streaming = strcmp(stream, "live") == 0;
    json_t *sync = json_object_get(e, "sync");
    const char *type = json_string_value(json_object_get(sync, "type")), *status = json_string_value(json_object_get(sync, "status"));
    if (type && status && strcmp(type, "syncUp") == 0 && strcmp(status, "DONE") == 0) up_runs++;
    pthread_mutex_unlock(&lock);
    json_decref(e);
}

static int stream_live(void) {
    pthread_mutex_lock(&lock);
    int n = streaming;
    pthread_mutex_unlock(&lock);
    return n;
}

/* Requests the server answered other than Streaming API long polls (its admin counter; the
 * counter's own request is not counted). */
static long requests_seen(const devserver *server) {
    long status = 0;
    json_t *answer = devserver_call(server, "GET", "/__devserver/requests", NULL, &status);
    long n = (long)json_integer_value(json_object_get(answer, "requests"));
    json_decref(answer);
    return n;
}

static int counter(int *c) {
    pthread_mutex_lock(&lock);
    int n = *c;
    pthread_mutex_unlock(&lock);
    return n;
}

static long remote_count(const devserver *server, const char *where) {
    char soql[256];
    snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE %s", where);
    return devserver_count(server, soql);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: SYNCSTORE_DEVSERVER=<binary> %s DIR [--writes N] [--debounce MS]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    int writes = 50, debounce = 100, server_writes = 50;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--writes")) writes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--debounce")) debounce = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--server-writes")) server_writes = atoi(argv[i + 1]);
    }
    char command[1024];
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(command) != 0) return 1;
    devserver server;
    const char *args[] = {"--seed", "Contact=100", "--admin", NULL};
    devserver_start(&server, devserver_binary(), args);
    syncstore_error err;
    syncstore_store *store = NULL;
    ok(syncstore_open(dir, "{\"storeName\":\"live\"}", &store, &err), "open", &err);
    char *remote = devserver_remote_json(&server, NULL);
    ok(syncstore_set_remote(store, remote, &err), "remote", &err);
    ok(syncstore_register_soup(store, "contacts", "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"__local__\",\"type\":\"string\"}]", &err),
       "register", &err);
    int64_t id;
    ok(syncstore_create_sync_up(store, NULL, "contacts", "{\"fieldlist\":[\"LastName\"]}", "up", &id, &err), "create up", &err);
    ok(syncstore_create_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT LastName FROM Contact\"}", "contacts", NULL, "down", &id, &err),
       "create down", &err);
    char options[128];
    snprintf(options, sizeof options, "{\"debounceMs\":%d,\"retryMinMs\":200,\"retryMaxMs\":1000}", debounce);
    ok(syncstore_start_live_sync(store, options, on_event, NULL, &err), "start live sync", &err);
    while (counter(&live_events) == 0) usleep(5000);
    printf("libsyncstore %s, live sync, debounce %d ms\n", syncstore_version(), debounce);
    print_load("at start");

    double *lat = malloc(sizeof *lat * (size_t)writes);
    for (int i = 0; i < writes; i++) {
        char entry[160], where[64];
        snprintf(entry, sizeof entry, "{\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"Bench%d\",\"__local__\":true,\"__locally_created__\":true}", i);
        snprintf(where, sizeof where, "LastName = 'Bench%d'", i);
        ok(syncstore_upsert(store, "contacts", entry, NULL, NULL, &err), "upsert", &err);
        double t0 = now_ms();
        while (remote_count(&server, where) == 0) usleep(2000);
        lat[i] = now_ms() - t0;
        usleep(400000);
    }
    qsort(lat, (size_t)writes, sizeof *lat, cmp_double);
    double p50 = lat[writes / 2], p99 = lat[(writes * 99) / 100];
    printf("a local write to the server (%d writes, 400 ms apart): p50 %.0f ms, p99 %.0f ms; goal p50 <= debounce + 100 = %d ms: %s\n",
           writes, p50, p99, debounce + 100, p50 <= debounce + 100 ? "met" : "NOT met");

    /* offline, 1000 writes, back */
    ok(syncstore_set_remote(store, "{\"instanceUrl\":\"http://127.0.0.1:9\",\"accessToken\":\"t\"}", &err), "remote off", &err);
    int offline_before = counter(&offline_events);
    double went = now_ms();
    for (int i = 0; i < 1000; i++) {
        char entry[160];
        snprintf(entry, sizeof entry, "{\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"Away%d\",\"__local__\":true,\"__locally_created__\":true}", i);
        ok(syncstore_upsert(store, "contacts", entry, NULL, NULL, &err), "upsert", &err);
    }
    usleep(1500000);
    /* 10 s more offline: how often it tries (each failed attempt is one "offline" state) */
    sleep(10);
    printf("offline for %.1f s: %d attempts (retries from 200 ms doubling to 1 s, with jitter: no storm)\n",
           (now_ms() - went) / 1e3, counter(&offline_events) - offline_before);
    int runs_before = counter(&up_runs);
    double back = now_ms();
    ok(syncstore_set_remote(store, remote, &err), "remote back", &err);
    while (remote_count(&server, "LastName LIKE 'Away%'") < 1000) usleep(10000);
    double caught_up = now_ms() - back;
    usleep(500000);
    printf("offline while 1000 records were written, then back: all on the server %.0f ms after (retries were at most 1 s apart), "
           "in %d sync up run(s); records on the server: %ld (each once)\n",
           caught_up, counter(&up_runs) - runs_before, remote_count(&server, "LastName LIKE 'Away%'"));
    /* change events: server writes to the local soup */
    while (!stream_live()) usleep(5000);
    double *in = malloc(sizeof *in * (size_t)server_writes);
    for (int i = 0; i < server_writes; i++) {
        char body[96], spec[160];
        snprintf(body, sizeof body, "{\"LastName\":\"Remote%d\"}", i);
        long status = 0;
        json_t *created = devserver_call(&server, "POST", "sobjects/Contact", body, &status);
        double t0 = now_ms();
        const char *new_id = json_string_value(json_object_get(created, "id"));
        if (status != 201 || !new_id) { fprintf(stderr, "server create failed: HTTP %ld\n", status); return 1; }
        snprintf(spec, sizeof spec, "{\"queryType\":\"exact\",\"indexPath\":\"Id\",\"matchKey\":\"%s\",\"pageSize\":1}", new_id);
        json_decref(created);
        for (;;) {
            char *page = NULL;
            ok(syncstore_query_page(store, "contacts", spec, 0, &page, &err), "query", &err);
            int found = strcmp(page, "[]") != 0;
            syncstore_free(page);
            if (found) break;
            if (now_ms() - t0 > 30000) { fprintf(stderr, "Remote%d never arrived\n", i); return 1; }
            usleep(1000);
        }
        in[i] = now_ms() - t0;
        usleep(200000);
    }
    qsort(in, (size_t)server_writes, sizeof *in, cmp_double);
    double i50 = in[server_writes / 2], i99 = in[(server_writes * 99) / 100];
    printf("a server write to the local soup by change events (%d writes, 200 ms apart, no pull): p50 %.0f ms, p99 %.0f ms; "
           "goals p50 <= 300 ms, p99 <= 1000 ms: %s\n", server_writes, i50, i99, i50 <= 300 && i99 <= 1000 ? "met" : "NOT met");
    free(in);

    /* idle: the server's request counter and this process's CPU over 5 s */
    usleep(500000);
    long before = requests_seen(&server);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    sleep(5);
    getrusage(RUSAGE_SELF, &r1);
    long after = requests_seen(&server);
    double cpu = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) * 1e3 + (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e3
               + (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1e3 + (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e3;
    printf("idle for 5 s in live sync: %ld requests other than long polls reached the server (goal 0), %.1f ms of CPU in this process\n",
           after - before, cpu);

    ok(syncstore_stop_live_sync(store, &err), "stop", &err);
    ok(syncstore_close(store, &err), "close", &err);
    free(remote);
    devserver_stop(&server);
    print_load("at end");
    return 0;
}
