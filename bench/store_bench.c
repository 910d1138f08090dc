/* Store benchmark: libsyncstore against a baseline doing the same work with plain SQLite
 * prepared statements and jansson, in the same run on the same machine.
 *
 *   upsert   N Contact-like entries (3 string indexes) in batches of 1000
 *   exact    exact query on an indexed path (cursor open + first page + close), p50/p99
 *   smart    a Smart SQL aggregate (group by LastName)
 *
 * Usage: bench-store [work_dir] [entries=100000]. Prints rows/s, latencies and ratios. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syncstore.h>
#include <time.h>

#define BATCH 1000

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *first_names[] = {"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Ken", "Dennis", "Margaret", "John"};
static const char *titles[] = {"Engineer", "Director", "VP Sales", "Analyst", "Buyer", "CEO", "Consultant", "Manager"};

/* Batches of JSON text, generated before any timing. */
static char **make_batches(int entries, int *count) {
    int batches = (entries + BATCH - 1) / BATCH;
    char **texts = calloc((size_t)batches, sizeof *texts);
    for (int b = 0; b < batches; b++) {
        json_t *array = json_array();
        for (int i = b * BATCH; i < entries && i < (b + 1) * BATCH; i++) {
            char id[32], last[32], email[64], phone[32], account[32];
            snprintf(id, sizeof id, "003%015d", i);
            snprintf(last, sizeof last, "Last%04d", (i * 7919) % 1000);
            snprintf(email, sizeof email, "person%d@example.com", i);
            snprintf(phone, sizeof phone, "+1-555-%07d", i);
            snprintf(account, sizeof account, "001%015d", i % 500);
            json_t *attributes = json_pack("{s:s,s:s}", "type", "Contact", "url", "/services/data/v62.0/sobjects/Contact");
            json_array_append_new(array, json_pack("{s:o,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}",
                "attributes", attributes, "Id", id, "FirstName", first_names[i % 10], "LastName", last,
                "Email", email, "Title", titles[i % 8], "Phone", phone, "MailingCity", "Springfield",
                "AccountId", account, "LastModifiedDate", "2026-01-21T23:51:33.000+0000"));
        }
        texts[b] = json_dumps(array, JSON_COMPACT);
        json_decref(array);
    }
    *count = batches;
    return texts;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void percentiles(double *samples, int n, double *p50, double *p99) {
    qsort(samples, (size_t)n, sizeof *samples, cmp_double);
    *p50 = samples[n / 2];
    *p99 = samples[(n * 99) / 100];
}

static void die(const char *what, const syncstore_error *err) {
    fprintf(stderr, "%s failed: %s\n", what, err ? err->message : "");
    exit(1);
}

/* ---- baseline: what a C program does by hand with SQLite + jansson ---- */

typedef struct { sqlite3 *db; sqlite3_stmt *insert; } baseline;

static void exec_or_die(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) { fprintf(stderr, "%s: %s\n", sql, msg); exit(1); }
}

static void baseline_open(baseline *b, const char *path) {
    remove(path);
    if (sqlite3_open(path, &b->db) != SQLITE_OK) { fprintf(stderr, "open baseline\n"); exit(1); }
    exec_or_die(b->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
        "CREATE TABLE contacts (id INTEGER PRIMARY KEY AUTOINCREMENT, soup TEXT NOT NULL, created INTEGER NOT NULL,"
        " lastModified INTEGER NOT NULL, c0 TEXT, c1 TEXT, c2 TEXT);"
        "CREATE INDEX c0_idx ON contacts(c0); CREATE INDEX c1_idx ON contacts(c1); CREATE INDEX c2_idx ON contacts(c2);"
        "CREATE INDEX created_idx ON contacts(created); CREATE INDEX lm_idx ON contacts(lastModified);");
    sqlite3_prepare_v2(b->db, "INSERT INTO contacts (id, soup, created, lastModified, c0, c1, c2) VALUES (?,?,?,?,?,?,?)", -1, &b->insert, NULL);
}

static const char *str_at(json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

static void baseline_upsert(baseline *b, const char *text, long long *next_id) {
    json_t *array = json_loads(text, 0, NULL);
    long long now = (long long)(now_s() * 1000);
    exec_or_die(b->db, "BEGIN IMMEDIATE");
    size_t i;
    json_t *entry;
    json_array_foreach(array, i, entry) {
        long long id = (*next_id)++;
        json_object_set_new(entry, "_soupEntryId", json_integer(id));
        json_object_set_new(entry, "_soupLastModifiedDate", json_integer(now));
        char *soup = json_dumps(entry, JSON_COMPACT);
        sqlite3_bind_int64(b->insert, 1, id);
        sqlite3_bind_text(b->insert, 2, soup, -1, free);
        sqlite3_bind_int64(b->insert, 3, now);
        sqlite3_bind_int64(b->insert, 4, now);
        sqlite3_bind_text(b->insert, 5, str_at(entry, "Id"), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(b->insert, 6, str_at(entry, "LastName"), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(b->insert, 7, str_at(entry, "Email"), -1, SQLITE_TRANSIENT);
        if (sqlite3_step(b->insert) != SQLITE_DONE) { fprintf(stderr, "baseline insert: %s\n", sqlite3_errmsg(b->db)); exit(1); }
        sqlite3_reset(b->insert);
    }
    exec_or_die(b->db, "COMMIT");
    json_decref(array);
}

/* Exact query as a hand-written page: count + first page of 10, then the JSON array text. */
static void baseline_exact(sqlite3_stmt *count, sqlite3_stmt *page, const char *key) {
    sqlite3_bind_text(count, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_step(count);
    long long total = sqlite3_column_int64(count, 0);
    sqlite3_reset(count);
    sqlite3_bind_text(page, 1, key, -1, SQLITE_TRANSIENT);
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    buf[len++] = '[';
    while (sqlite3_step(page) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(page, 0);
        size_t n = (size_t)sqlite3_column_bytes(page, 0);
        if (len + n + 2 > cap) { cap = (len + n + 2) * 2; buf = realloc(buf, cap); }
        if (len > 1) buf[len++] = ',';
        memcpy(buf + len, t, n);
        len += n;
    }
    buf[len++] = ']';
    sqlite3_reset(page);
    free(buf);
    (void)total;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "bench-work";
    int entries = argc > 2 ? atoi(argv[2]) : 100000;
    int queries = 20000;
    char path[1024], command[1200];
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(command) != 0) return 1;

    int batches = 0;
    char **texts = make_batches(entries, &batches);
    printf("store benchmark: %d Contact entries (3 string indexes), batches of %d, libsyncstore %s\n",
           entries, BATCH, syncstore_version());

    /* ---- upsert: alternate engine and baseline rounds on fresh databases, keep each best ---- */
    syncstore_error err;
    syncstore_store *store = NULL;
    baseline base = {0};
    double engine_upsert = 1e9, base_upsert = 1e9;
    const int rounds_upsert = 3;
    for (int round = 0; round < rounds_upsert; round++) {
        if (store) syncstore_close(store, NULL);
        if (base.db) { sqlite3_finalize(base.insert); sqlite3_close(base.db); }
        char config[64];
        snprintf(config, sizeof config, "{\"storeName\":\"bench%d\"}", round);
        if (syncstore_open(dir, config, &store, &err)) die("open", &err);
        if (syncstore_register_soup(store, "contacts",
                "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},{\"path\":\"Email\",\"type\":\"string\"}]", &err))
            die("register", &err);
        snprintf(path, sizeof path, "%s/baseline%d.db", dir, round);
        baseline_open(&base, path);

        double t0 = now_s();
        long long next_id = 1;
        for (int b = 0; b < batches; b++) baseline_upsert(&base, texts[b], &next_id);
        double t = now_s() - t0;
        if (t < base_upsert) base_upsert = t;

        t0 = now_s();
        for (int b = 0; b < batches; b++) {
            char *out = NULL;
            if (syncstore_upsert(store, "contacts", texts[b], NULL, &out, &err)) die("upsert", &err);
            syncstore_free(out);
        }
        t = now_s() - t0;
        if (t < engine_upsert) engine_upsert = t;
    }
    double t0;

    double engine_rate = entries / engine_upsert, base_rate = entries / base_upsert;
    printf("\nupsert      engine %9.0f rows/s   baseline %9.0f rows/s   engine/baseline %.2f (target >= 0.70; best of %d alternating rounds)\n",
           engine_rate, base_rate, engine_rate / base_rate, rounds_upsert);

    /* ---- exact query on an indexed path ---- */
    double *samples = malloc(sizeof(double) * (size_t)queries);
    char spec[256], key[32];
    for (int q = 0; q < queries; q++) {
        snprintf(key, sizeof key, "003%015d", (q * 7) % entries);
        snprintf(spec, sizeof spec, "{\"queryType\":\"exact\",\"indexPath\":\"Id\",\"matchKey\":\"%s\",\"pageSize\":10}", key);
        double s = now_s();
        char *cursor = NULL;
        if (syncstore_query_soup(store, "contacts", spec, &cursor, &err)) die("query", &err);
        long long id = strtoll(strstr(cursor, "\"cursorId\":") + 11, NULL, 10);
        syncstore_free(cursor);
        syncstore_cursor_close(store, id, NULL);
        samples[q] = now_s() - s;
    }
    double e50, e99;
    percentiles(samples, queries, &e50, &e99);

    sqlite3_stmt *count, *page;
    sqlite3_prepare_v2(base.db, "SELECT count(*) FROM contacts WHERE c0 = ?", -1, &count, NULL);
    sqlite3_prepare_v2(base.db, "SELECT soup FROM contacts WHERE c0 = ? ORDER BY c0, id LIMIT 10 OFFSET 0", -1, &page, NULL);
    for (int q = 0; q < queries; q++) {
        snprintf(key, sizeof key, "003%015d", (q * 7) % entries);
        double s = now_s();
        baseline_exact(count, page, key);
        samples[q] = now_s() - s;
    }
    double b50, b99;
    percentiles(samples, queries, &b50, &b99);
    printf("exact query engine p50 %6.1f us p99 %6.1f us   baseline p50 %6.1f us p99 %6.1f us   engine/baseline p50 %.2fx (target p50 < 100 us)\n",
           e50 * 1e6, e99 * 1e6, b50 * 1e6, b99 * 1e6, e50 / b50);

    /* ---- Smart SQL aggregate ---- */
    const char *smart = "{\"queryType\":\"smart\",\"smartSql\":\"select {contacts:LastName}, count(*) from {contacts} group by {contacts:LastName} order by count(*) desc, {contacts:LastName}\",\"pageSize\":10}";
    int rounds = 20;
    t0 = now_s();
    for (int r = 0; r < rounds; r++) {
        char *cursor = NULL;
        if (syncstore_run_smart_query(store, smart, &cursor, &err)) die("smart query", &err);
        long long id = strtoll(strstr(cursor, "\"cursorId\":") + 11, NULL, 10);
        syncstore_free(cursor);
        syncstore_cursor_close(store, id, NULL);
    }
    double engine_smart = (now_s() - t0) / rounds;
    sqlite3_stmt *agg_count, *agg_page;
    sqlite3_prepare_v2(base.db, "SELECT count(*) FROM (SELECT c1, count(*) FROM contacts GROUP BY c1)", -1, &agg_count, NULL);
    sqlite3_prepare_v2(base.db, "SELECT c1, count(*) FROM contacts GROUP BY c1 ORDER BY count(*) DESC, c1 LIMIT 10", -1, &agg_page, NULL);
    t0 = now_s();
    for (int r = 0; r < rounds; r++) {
        while (sqlite3_step(agg_count) == SQLITE_ROW) {}
        sqlite3_reset(agg_count);
        while (sqlite3_step(agg_page) == SQLITE_ROW) {}
        sqlite3_reset(agg_page);
    }
    double base_smart = (now_s() - t0) / rounds;
    printf("smart agg   engine %8.2f ms          baseline %8.2f ms          engine/baseline %.2fx time\n",
           engine_smart * 1e3, base_smart * 1e3, engine_smart / base_smart);

    sqlite3_finalize(count); sqlite3_finalize(page); sqlite3_finalize(agg_count); sqlite3_finalize(agg_page);
    sqlite3_finalize(base.insert);
    sqlite3_close(base.db);
    syncstore_close(store, NULL);
    for (int b = 0; b < batches; b++) free(texts[b]);
    free(texts);
    free(samples);
    return 0;
}
