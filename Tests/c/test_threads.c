/* Threads through the C ABI: many threads on one handle (and on separate handles of one
 * store), and readers that keep going while a long write transaction runs (WAL). */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WRITERS 4
#define READERS 2
#define BATCHES 20
#define PER_BATCH 100

static syncstore_store *store;
static atomic_int failures;
static atomic_int writing;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *batch_text(int writer, int batch, int size) {
    json_t *array = json_array();
    for (int i = 0; i < size; i++) {
        char key[64];
        snprintf(key, sizeof key, "w%d-b%d-i%d", writer, batch, i);
        json_array_append_new(array, json_pack("{s:s,s:i}", "key", key, "writer", writer));
    }
    char *text = json_dumps(array, JSON_COMPACT);
    json_decref(array);
    return text;
}

static long long count_entries(syncstore_store *s, const char *sql) {
    syncstore_error err;
    char spec[512], *out = NULL;
    snprintf(spec, sizeof spec, "{\"queryType\":\"smart\",\"smartSql\":\"%s\",\"pageSize\":1}", sql);
    if (syncstore_run_smart_query(s, spec, &out, &err) != SYNCSTORE_OK) {
        fprintf(stderr, "count failed: %s\n", err.message);
        atomic_fetch_add(&failures, 1);
        return -1;
    }
    json_t *c = check_parse(out);
    long long n = json_integer_value(json_array_get(json_array_get(json_object_get(c, "currentPageOrderedEntries"), 0), 0));
    syncstore_cursor_close(s, json_integer_value(json_object_get(c, "cursorId")), NULL);
    json_decref(c);
    return n;
}

static void *writer_main(void *arg) {
    int writer = (int)(intptr_t)arg;
    for (int b = 0; b < BATCHES; b++) {
        char *text = batch_text(writer, b, PER_BATCH);
        syncstore_error err;
        if (syncstore_upsert(store, "items", text, NULL, NULL, &err) != SYNCSTORE_OK) {
            fprintf(stderr, "writer %d: %s\n", writer, err.message);
            atomic_fetch_add(&failures, 1);
        }
        free(text);
    }
    return NULL;
}

static void *reader_main(void *arg) {
    (void)arg;
    long long last = 0;
    for (int i = 0; i < 200; i++) {
        long long n = count_entries(store, "select count(*) from {items}");
        /* committed batches only: counts are whole batches and never go backwards */
        if (n < last || n % PER_BATCH != 0) { fprintf(stderr, "reader saw %lld after %lld\n", n, last); atomic_fetch_add(&failures, 1); }
        last = n;
    }
    return NULL;
}

typedef struct { const char *text; double seconds; } long_write;

static void *long_writer_main(void *arg) {
    long_write *w = arg;
    syncstore_error err;
    double t0 = now_s();
    atomic_store(&writing, 1);
    if (syncstore_upsert(store, "bulk", w->text, NULL, NULL, &err) != SYNCSTORE_OK) {
        fprintf(stderr, "bulk: %s\n", err.message);
        atomic_fetch_add(&failures, 1);
    }
    w->seconds = now_s() - t0;
    atomic_store(&writing, 0);
    return NULL;
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : "test-stores/threads";
    check_fresh_dir(root);
    syncstore_error err;
    EXPECT(syncstore_open(root, "{\"storeName\":\"threads\"}", &store, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(store, "items", "[{\"path\":\"key\",\"type\":\"string\"},{\"path\":\"writer\",\"type\":\"integer\"}]", &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(store, "bulk", "[{\"path\":\"key\",\"type\":\"string\"}]", &err), SYNCSTORE_OK, &err);

    /* 1. concurrent writers and readers on one handle */
    pthread_t threads[WRITERS + READERS];
    for (int i = 0; i < WRITERS; i++) pthread_create(&threads[i], NULL, writer_main, (void *)(intptr_t)i);
    for (int i = 0; i < READERS; i++) pthread_create(&threads[WRITERS + i], NULL, reader_main, NULL);
    for (int i = 0; i < WRITERS + READERS; i++) pthread_join(threads[i], NULL);
    CHECK(atomic_load(&failures) == 0);
    CHECK(count_entries(store, "select count(*) from {items}") == WRITERS * BATCHES * PER_BATCH);
    CHECK(count_entries(store, "select count(distinct {items:_soupEntryId}) from {items}") == WRITERS * BATCHES * PER_BATCH);
    CHECK(count_entries(store, "select count(*) from {items} where {items:writer} = 3") == BATCHES * PER_BATCH);

    /* 2. a reader is not blocked by a long write */
    long_write w = { batch_text(9, 0, 150000), 0 };
    pthread_t bulk;
    pthread_create(&bulk, NULL, long_writer_main, &w);
    while (!atomic_load(&writing)) { struct timespec ts = {0, 100000}; nanosleep(&ts, NULL); }
    int during = 0, torn = 0;
    double worst = 0;
    while (atomic_load(&writing)) {
        double t0 = now_s();
        long long n = count_entries(store, "select count(*) from {bulk}");
        double t = now_s() - t0;
        if (atomic_load(&writing)) {
            during++;
            if (t > worst) worst = t;
            if (n != 0 && n != 150000) torn++; /* all or nothing: an uncommitted write is invisible */
        }
    }
    pthread_join(bulk, NULL);
    printf("long write %.2f s; %d reads completed during it, slowest %.1f ms\n", w.seconds, during, worst * 1e3);
    CHECK(torn == 0);
    CHECK(during >= 10);
    CHECK(worst < w.seconds / 2);
    CHECK(count_entries(store, "select count(*) from {bulk}") == 150000);
    free((void *)w.text);

    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    return check_finish();
}
