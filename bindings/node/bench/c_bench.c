/* The Node benchmark's C side: exactly the workload of bench.js through the C ABI directly.
 *   upsert  N Contact-like entries (3 string indexes) in batches of 1000, stored entries returned
 *   exact   Q exact queries on the indexed Id: cursor open with its first page, then close
 *           (what store.query + cursor.close do), and syncstore_query_page (what store.find does)
 *   handoff the query_page lookups run by a second thread, woken for each one and waking the
 *           caller when done: what any host that keeps its own thread free pays
 * Usage: c_bench <dir> [entries=100000] [queries=10000] [rounds=3] (best upsert round).
 * Prints one JSON line of results. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include "syncstore.h"

#define BATCH 1000

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *first_names[] = {"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Ken", "Dennis", "Margaret", "John"};
static const char *titles[] = {"Engineer", "Director", "VP Sales", "Analyst", "Buyer", "CEO", "Consultant", "Manager"};

/* The same JSON text bench.js builds with JSON.stringify (same keys, same order). */
static char *batch_text(int from, int to) {
    size_t cap = (size_t)(to - from) * 400 + 16, len = 0;
    char *out = malloc(cap);
    out[len++] = '[';
    for (int i = from; i < to; i++) {
        len += (size_t)snprintf(out + len, cap - len,
            "%s{\"attributes\":{\"type\":\"Contact\",\"url\":\"/services/data/v62.0/sobjects/Contact\"},"
            "\"Id\":\"003%015d\",\"FirstName\":\"%s\",\"LastName\":\"Last%04d\",\"Email\":\"person%d@example.com\","
            "\"Title\":\"%s\",\"Phone\":\"+1-555-%07d\",\"MailingCity\":\"Springfield\",\"AccountId\":\"001%015d\","
            "\"LastModifiedDate\":\"2026-01-21T23:51:33.000+0000\"}",
            i > from ? "," : "", i, first_names[i % 10], (i * 7919) % 1000, i, titles[i % 8], i, i % 500);
    }
    out[len++] = ']';
    out[len] = 0;
    return out;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what, const syncstore_error *err) {
    fprintf(stderr, "%s failed: %s\n", what, err->message);
    exit(1);
}

static void exact_query(syncstore_store *store, int entries, int q, int page_only) {
    char spec[256];
    syncstore_error err;
    snprintf(spec, sizeof spec, "{\"queryType\":\"exact\",\"indexPath\":\"Id\",\"matchKey\":\"003%015d\",\"pageSize\":10}", (q * 7) % entries);
    char *out = NULL;
    if (page_only) {
        if (syncstore_query_page(store, "contacts", spec, 0, &out, &err)) die("query_page", &err);
        syncstore_free(out);
        return;
    }
    if (syncstore_query_soup(store, "contacts", spec, &out, &err)) die("query", &err);
    long long id = strtoll(strstr(out, "\"cursorId\":") + 11, NULL, 10);
    syncstore_free(out);
    syncstore_cursor_close(store, id, NULL);
}

/* One request at a time between the main thread and a worker, through a condition variable. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int pending, done, stop, q, entries;
    syncstore_store *store;
} handoff;

static void *handoff_worker(void *arg) {
    handoff *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->pending && !h->stop) pthread_cond_wait(&h->cond, &h->mu);
        if (h->stop) break;
        h->pending = 0;
        pthread_mutex_unlock(&h->mu);
        exact_query(h->store, h->entries, h->q, 1);
        pthread_mutex_lock(&h->mu);
        h->done = 1;
        pthread_cond_broadcast(&h->cond);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "c-bench-work";
    int entries = argc > 2 ? atoi(argv[2]) : 100000;
    int queries = argc > 3 ? atoi(argv[3]) : 10000;
    int rounds = argc > 4 ? atoi(argv[4]) : 3;
    if (queries < 1) queries = 1;
    if (rounds < 1) rounds = 1;
    int batches = (entries + BATCH - 1) / BATCH;
    char **texts = calloc((size_t)batches, sizeof *texts);
    for (int b = 0; b < batches; b++) texts[b] = batch_text(b * BATCH, (b + 1) * BATCH < entries ? (b + 1) * BATCH : entries);

    syncstore_error err;
    syncstore_store *store = NULL;
    double best = 1e9;
    for (int round = 0; round < rounds; round++) {
        if (store) syncstore_close(store, NULL);
        char config[64];
        snprintf(config, sizeof config, "{\"storeName\":\"c%d\"}", round);
        syncstore_remove_store(dir, config, NULL);
        if (syncstore_open(dir, config, &store, &err)) die("open", &err);
        if (syncstore_register_soup(store, "contacts",
                "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},{\"path\":\"Email\",\"type\":\"string\"}]", &err))
            die("register", &err);
        double t0 = now_s();
        for (int b = 0; b < batches; b++) {
            char *out = NULL;
            if (syncstore_upsert(store, "contacts", texts[b], NULL, &out, &err)) die("upsert", &err);
            syncstore_free(out);
        }
        double t = now_s() - t0;
        if (t < best) best = t;
    }

    double *samples = malloc(sizeof(double) * (size_t)queries);
    double *paged = malloc(sizeof(double) * (size_t)queries);
    double *handed = malloc(sizeof(double) * (size_t)queries);
    handoff h = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, entries, store};
    pthread_t worker;
    pthread_create(&worker, NULL, handoff_worker, &h);
    /* Blocks of 100 alternate between the two ways, so machine load hits both alike. */
    for (int q0 = 0; q0 < queries; q0 += 100) {
        for (int q = q0; q < queries && q < q0 + 100; q++) {
            double s = now_s();
            exact_query(store, entries, q, 0);
            samples[q] = now_s() - s;
        }
        for (int q = q0; q < queries && q < q0 + 100; q++) {
            double s = now_s();
            exact_query(store, entries, q, 1);
            paged[q] = now_s() - s;
        }
        for (int q = q0; q < queries && q < q0 + 100; q++) {
            double s = now_s();
            pthread_mutex_lock(&h.mu);
            h.q = q;
            h.pending = 1;
            h.done = 0;
            pthread_cond_broadcast(&h.cond);
            while (!h.done) pthread_cond_wait(&h.cond, &h.mu);
            pthread_mutex_unlock(&h.mu);
            handed[q] = now_s() - s;
        }
    }
    pthread_mutex_lock(&h.mu);
    h.stop = 1;
    pthread_cond_broadcast(&h.cond);
    pthread_mutex_unlock(&h.mu);
    pthread_join(worker, NULL);
    qsort(handed, (size_t)queries, sizeof *handed, cmp);
    qsort(samples, (size_t)queries, sizeof *samples, cmp);
    qsort(paged, (size_t)queries, sizeof *paged, cmp);
    printf("{\"entries\":%d,\"upsertSeconds\":%.6f,\"queries\":%d,\"queryP50us\":%.2f,\"queryP99us\":%.2f,"
           "\"pageP50us\":%.2f,\"pageP99us\":%.2f,\"handoffP50us\":%.2f,\"handoffP99us\":%.2f}\n",
           entries, best, queries, samples[queries / 2] * 1e6, samples[(queries * 99) / 100] * 1e6,
           paged[queries / 2] * 1e6, paged[(queries * 99) / 100] * 1e6,
           handed[queries / 2] * 1e6, handed[(queries * 99) / 100] * 1e6);
    syncstore_close(store, NULL);
    return 0;
}
