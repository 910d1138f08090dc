/* The C side of the Python binding benchmark (bindings/python/bench/bench_store.py): the same
 * workload the Python package runs, through the C ABI directly.
 *
 *   upsert   every line of BATCH_FILE (a JSON array of 1000 entries) into a fresh store; with
 *            RETURNED=1 the stored entries are returned (out_json) and freed
 *   exact    QUERIES exact queries on the indexed Id (cursor open with its first page + close)
 *   find     the same lookups through syncstore_query_page (one page, no cursor)
 *
 * Usage: bench-binding WORK_DIR STORE_NAME BATCH_FILE ENTRIES QUERIES RETURNED(0|1)
 * Prints: upsert_s=<seconds> exact_s=<seconds> find_s=<seconds> */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syncstore.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const syncstore_error *err) {
    fprintf(stderr, "%s: %s\n", what, err ? err->message : "failed");
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s WORK_DIR STORE_NAME BATCH_FILE ENTRIES QUERIES RETURNED\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1], *name = argv[2], *file = argv[3];
    long entries = atol(argv[4]), queries = atol(argv[5]);
    int returned = atoi(argv[6]);

    /* Read every batch before timing. */
    FILE *in = fopen(file, "r");
    if (!in) die("open batch file", NULL);
    size_t cap = 16, count = 0, len = 0;
    char **batches = malloc(cap * sizeof *batches), *line = NULL;
    size_t line_cap = 0;
    ssize_t got;
    while ((got = getline(&line, &line_cap, in)) > 0) {
        if (count == cap) batches = realloc(batches, (cap *= 2) * sizeof *batches);
        len = (size_t)got;
        if (line[len - 1] == '\n') line[len - 1] = '\0';
        batches[count++] = strdup(line);
    }
    free(line);
    fclose(in);

    syncstore_error err;
    syncstore_store *store = NULL;
    char config[256];
    snprintf(config, sizeof config, "{\"storeName\":\"%s\"}", name);
    if (syncstore_open(dir, config, &store, &err)) die("open", &err);
    if (syncstore_register_soup(store, "contacts",
            "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},"
            "{\"path\":\"Email\",\"type\":\"string\"}]", &err))
        die("register", &err);

    double t0 = now_s();
    for (size_t b = 0; b < count; b++) {
        char *out = NULL;
        if (syncstore_upsert(store, "contacts", batches[b], NULL, returned ? &out : NULL, &err)) die("upsert", &err);
        syncstore_free(out);
    }
    double upsert_s = now_s() - t0;

    char spec[256];
    t0 = now_s();
    for (long q = 0; q < queries; q++) {
        snprintf(spec, sizeof spec, "{\"queryType\":\"exact\",\"indexPath\":\"Id\",\"matchKey\":\"003%015ld\",\"pageSize\":10}",
                 (q * 7) % entries);
        char *cursor = NULL;
        if (syncstore_query_soup(store, "contacts", spec, &cursor, &err)) die("query", &err);
        long long id = strtoll(strstr(cursor, "\"cursorId\":") + 11, NULL, 10);
        syncstore_free(cursor);
        syncstore_cursor_close(store, id, NULL);
    }
    double exact_s = now_s() - t0;
    t0 = now_s();
    for (long q = 0; q < queries; q++) {
        snprintf(spec, sizeof spec, "{\"queryType\":\"exact\",\"indexPath\":\"Id\",\"matchKey\":\"003%015ld\",\"pageSize\":10}",
                 (q * 7) % entries);
        char *page = NULL;
        if (syncstore_query_page(store, "contacts", spec, 0, &page, &err)) die("query_page", &err);
        syncstore_free(page);
    }
    double find_s = now_s() - t0;
    printf("upsert_s=%.6f exact_s=%.6f find_s=%.6f\n", upsert_s, exact_s, find_s);
    syncstore_close(store, NULL);
    for (size_t b = 0; b < count; b++) free(batches[b]);
    free(batches);
    return 0;
}
