/* Store benchmark: libsyncstore against a baseline doing the same work with plain SQLite
 * prepared statements and jansson, in the same run on the same machine.
 *
 *   upsert   N Contact-like entries (3 string indexes) in batches of 1000
 *   exact    exact query on an indexed path (cursor open + first page + close), p50/p99
 *   lookup   the same lookup as one page without a cursor (syncstore_query_page), p50/p99
 *   smart    a Smart SQL aggregate (group by LastName)
 * Two baselines: "baseline" parses each document with jansson and writes it back with the
 * engine's members, in the engine's layout (count + page per query); "hand-written" is the
 * table a C programmer writes instead of using a document store: the document as text, the
 * indexed values as indexed columns (values the program holds already: taken out before the
 * clock), one transaction per batch, a lookup that returns the stored text; its upsert is also
 * timed with the engine's created and lastModified columns, each indexed, as SmartStore's soup
 * tables have them (the share of the gap that is the layout's).
 *
 * Usage: bench-store [work_dir] [entries=100000] [--key K] [--kdf-iter N] [--encryption]
 *   --key K, --kdf-iter N   the engine's store is encrypted with "key": K, "kdfIter": N
 *                           (K a passphrase or x'<64 hex>'); the baseline stays plain SQLite
 *   --encryption            instead of the above: the engine against itself, plaintext vs
 *                           encrypted (K, default a passphrase at kdfIter N, default 256000), in
 *                           the same run: upsert, exact query by Id, store open (see
 *                           encryption_bench below); --rounds R (default 3), --queries Q
 * Prints rows/s, latencies and ratios. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syncstore.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_stats.h"

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

/* Store config JSON for storeName `name`, with "key" and "kdfIter" when key is not NULL
 * (kdf_iter 0: the library's default). Free with free(). */
static char *store_config(const char *name, const char *key, int kdf_iter) {
    json_t *config = json_pack("{s:s}", "storeName", name);
    if (key) json_object_set_new(config, "key", json_string(key));
    if (key && kdf_iter > 0) json_object_set_new(config, "kdfIter", json_integer(kdf_iter));
    char *text = json_dumps(config, JSON_COMPACT);
    json_decref(config);
    return text;
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

/* ---- hand-written: the document as text, the indexed values as indexed columns ---- */

typedef struct { sqlite3 *db; sqlite3_stmt *insert, *lookup; int smartstore_layout; } hand_written;

/* The indexed values of every entry of a batch, as the program holding them would have them. */
typedef struct { char **id, **last, **email; int n; } batch_values;

static batch_values *extract_values(char **texts, int batches) {
    batch_values *all = calloc((size_t)batches, sizeof *all);
    for (int b = 0; b < batches; b++) {
        json_t *array = json_loads(texts[b], 0, NULL);
        int n = (int)json_array_size(array);
        all[b].n = n;
        all[b].id = calloc((size_t)n, sizeof(char *));
        all[b].last = calloc((size_t)n, sizeof(char *));
        all[b].email = calloc((size_t)n, sizeof(char *));
        for (int i = 0; i < n; i++) {
            json_t *e = json_array_get(array, (size_t)i);
            all[b].id[i] = strdup(json_string_value(json_object_get(e, "Id")));
            all[b].last[i] = strdup(json_string_value(json_object_get(e, "LastName")));
            all[b].email[i] = strdup(json_string_value(json_object_get(e, "Email")));
        }
        json_decref(array);
    }
    return all;
}

/* The documents of a batch, one text each (the batch's JSON array split before the clock). */
static char **split_documents(const char *text, int *n) {
    json_t *array = json_loads(text, 0, NULL);
    *n = (int)json_array_size(array);
    char **docs = calloc((size_t)*n, sizeof *docs);
    for (int i = 0; i < *n; i++) docs[i] = json_dumps(json_array_get(array, (size_t)i), JSON_COMPACT);
    json_decref(array);
    return docs;
}

/* smartstore_layout: the table also has SmartStore's created and lastModified columns, each indexed
 * (what SmartStore's soup tables hold), set to the batch's clock as the engine does. */
static void hand_open(hand_written *h, const char *path, int smartstore_layout) {
    remove(path);
    if (sqlite3_open(path, &h->db) != SQLITE_OK) { fprintf(stderr, "open hand-written\n"); exit(1); }
    exec_or_die(h->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    exec_or_die(h->db, smartstore_layout
        ? "CREATE TABLE contacts (id INTEGER PRIMARY KEY, doc TEXT NOT NULL, created INTEGER NOT NULL, lastModified INTEGER NOT NULL, c0 TEXT, c1 TEXT, c2 TEXT);"
          "CREATE INDEX created_idx ON contacts(created); CREATE INDEX lastModified_idx ON contacts(lastModified);"
        : "CREATE TABLE contacts (id INTEGER PRIMARY KEY, doc TEXT NOT NULL, c0 TEXT, c1 TEXT, c2 TEXT);");
    exec_or_die(h->db, "CREATE INDEX c0_idx ON contacts(c0); CREATE INDEX c1_idx ON contacts(c1); CREATE INDEX c2_idx ON contacts(c2);");
    sqlite3_prepare_v2(h->db, smartstore_layout
        ? "INSERT INTO contacts (doc, c0, c1, c2, created, lastModified) VALUES (?,?,?,?,?5,?5)"
        : "INSERT INTO contacts (doc, c0, c1, c2) VALUES (?,?,?,?)", -1, &h->insert, NULL);
    sqlite3_prepare_v2(h->db, "SELECT doc FROM contacts WHERE c0 = ? LIMIT 10", -1, &h->lookup, NULL);
    h->smartstore_layout = smartstore_layout;
}

static void hand_close(hand_written *h) {
    sqlite3_finalize(h->insert);
    sqlite3_finalize(h->lookup);
    sqlite3_close(h->db);
    h->db = NULL;
}

static void hand_insert(hand_written *h, char **docs, const batch_values *v) {
    exec_or_die(h->db, "BEGIN IMMEDIATE");
    struct timespec clock;
    clock_gettime(CLOCK_REALTIME, &clock);
    if (h->smartstore_layout) sqlite3_bind_int64(h->insert, 5, (sqlite3_int64)clock.tv_sec * 1000 + clock.tv_nsec / 1000000);
    for (int i = 0; i < v->n; i++) {
        sqlite3_bind_text(h->insert, 1, docs[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(h->insert, 2, v->id[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(h->insert, 3, v->last[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(h->insert, 4, v->email[i], -1, SQLITE_STATIC);
        if (sqlite3_step(h->insert) != SQLITE_DONE) { fprintf(stderr, "hand-written insert: %s\n", sqlite3_errmsg(h->db)); exit(1); }
        sqlite3_reset(h->insert);
    }
    exec_or_die(h->db, "COMMIT");
}

/* Opens a new hand-written table at `path` and inserts every batch; the seconds that took. */
static double hand_fill(hand_written *h, const char *path, int smartstore_layout, char ***docs, const batch_values *values, int batches) {
    hand_open(h, path, smartstore_layout);
    double t0 = now_s();
    for (int b = 0; b < batches; b++) hand_insert(h, docs[b], &values[b]);
    return now_s() - t0;
}

/* Upserts every batch into the engine's soup; the seconds that took. */
static double engine_fill(syncstore_store *store, char **texts, int batches) {
    syncstore_error err;
    double t0 = now_s();
    for (int b = 0; b < batches; b++) {
        char *out = NULL;
        if (syncstore_upsert(store, "contacts", texts[b], NULL, &out, &err)) die("upsert", &err);
        syncstore_free(out);
    }
    return now_s() - t0;
}

/* A lookup returning the stored texts as a JSON array, as a page of the engine is. */
static void hand_lookup(hand_written *h, const char *key) {
    sqlite3_bind_text(h->lookup, 1, key, -1, SQLITE_TRANSIENT);
    size_t cap = 1024, len = 1;
    char *out = malloc(cap);
    out[0] = '[';
    while (sqlite3_step(h->lookup) == SQLITE_ROW) {
        size_t n = (size_t)sqlite3_column_bytes(h->lookup, 0);
        if (len + n + 3 > cap) { cap = (len + n + 3) * 2; out = realloc(out, cap); }
        if (len > 1) out[len++] = ',';
        memcpy(out + len, sqlite3_column_text(h->lookup, 0), n);
        len += n;
    }
    out[len++] = ']';
    out[len] = 0;
    sqlite3_reset(h->lookup);
    free(out);
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

static int encryption_bench(const char *dir, int entries, const char *key, int kdf_iter, int rounds, int queries);

int main(int argc, char **argv) {
    const char *dir = "bench-work", *store_key = NULL;
    int entries = 100000, kdf_iter = 0, encryption = 0, enc_rounds = 3, enc_queries = 20000, positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--encryption")) { encryption = 1; continue; }
        if (!strncmp(a, "--", 2)) {
            if (i + 1 >= argc) { fprintf(stderr, "bench-store: missing value for %s\n", a); return 2; }
            const char *v = argv[++i];
            if (!strcmp(a, "--key")) store_key = v;
            else if (!strcmp(a, "--kdf-iter")) kdf_iter = atoi(v);
            else if (!strcmp(a, "--rounds")) enc_rounds = atoi(v);
            else if (!strcmp(a, "--queries")) enc_queries = atoi(v);
            else { fprintf(stderr, "bench-store: unknown option %s\n", a); return 2; }
            continue;
        }
        if (positional == 0) dir = a;
        else if (positional == 1) entries = atoi(a);
        else { fprintf(stderr, "bench-store: extra argument %s\n", a); return 2; }
        positional++;
    }
    if (entries <= 0 || enc_rounds < 1 || enc_rounds > 50 || enc_queries < 1) {
        fprintf(stderr, "bench-store: entries > 0, --rounds 1..50, --queries > 0\n");
        return 2;
    }
    if (encryption) return encryption_bench(dir, entries, store_key ? store_key : "bench passphrase", kdf_iter, enc_rounds, enc_queries);
    int queries = 20000;
    char path[1024], command[1200];
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(command) != 0) return 1;

    int batches = 0;
    char **texts = make_batches(entries, &batches);
    printf("store benchmark: %d Contact entries (3 string indexes), batches of %d, libsyncstore %s%s\n",
           entries, BATCH, syncstore_version(), store_key ? ", engine store ENCRYPTED (--key)" : "");

    /* ---- upsert: alternate engine and baseline rounds on fresh databases, keep each best ---- */
    syncstore_error err;
    syncstore_store *store = NULL;
    baseline base = {0};
    hand_written hand = {0};
    batch_values *values = extract_values(texts, batches);
    char ***docs = calloc((size_t)batches, sizeof *docs);
    for (int b = 0; b < batches; b++) {
        int n = 0;
        docs[b] = split_documents(texts[b], &n);
    }
    double engine_upsert = 1e9, base_upsert = 1e9, hand_upsert = 1e9, layout_upsert = 1e9;
    hand_written layout = {0};
    /* Besides each side's best, the engine/hand-written ratio of each round (the two run next to
     * each other, in turn first): their median does not move with a single lucky or slow round. */
    enum { rounds_upsert = 5 };
    double paired[rounds_upsert];
    for (int round = 0; round < rounds_upsert; round++) {
        if (store) syncstore_close(store, NULL);
        if (base.db) { sqlite3_finalize(base.insert); sqlite3_close(base.db); }
        if (hand.db) hand_close(&hand);
        char name[32];
        snprintf(name, sizeof name, "bench%d", round);
        char *config = store_config(name, store_key, kdf_iter);
        if (syncstore_open(dir, config, &store, &err)) die("open", &err);
        free(config);
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

        snprintf(path, sizeof path, "%s/layout%d.db", dir, round);
        t = hand_fill(&layout, path, 1, docs, values, batches);
        if (t < layout_upsert) layout_upsert = t;
        hand_close(&layout);

        snprintf(path, sizeof path, "%s/hand%d.db", dir, round);
        double hand_t, engine_t;
        if (round % 2 == 0) {
            hand_t = hand_fill(&hand, path, 0, docs, values, batches);
            engine_t = engine_fill(store, texts, batches);
        } else {
            engine_t = engine_fill(store, texts, batches);
            hand_t = hand_fill(&hand, path, 0, docs, values, batches);
        }
        if (hand_t < hand_upsert) hand_upsert = hand_t;
        if (engine_t < engine_upsert) engine_upsert = engine_t;
        paired[round] = hand_t / engine_t;
    }
    qsort(paired, rounds_upsert, sizeof paired[0], cmp_double);
    double t0;

    double engine_rate = entries / engine_upsert, base_rate = entries / base_upsert, hand_rate = entries / hand_upsert;
    printf("\nupsert      engine %9.0f rows/s   baseline %9.0f rows/s   engine/baseline %.2f (target >= 0.70; best of %d alternating rounds)\n",
           engine_rate, base_rate, engine_rate / base_rate, rounds_upsert);
    printf("            hand-written %9.0f rows/s   engine/hand-written %.2f (target >= 0.9); median of the %d rounds' ratios %.2f (%.2f-%.2f)\n",
           hand_rate, engine_rate / hand_rate, rounds_upsert, paired[rounds_upsert / 2], paired[0], paired[rounds_upsert - 1]);
    printf("            hand-written in SmartStore's layout (+ created, lastModified indexed) %9.0f rows/s   its /hand-written %.2f   engine/it %.2f\n",
           entries / layout_upsert, hand_upsert / layout_upsert, layout_upsert / engine_upsert);

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

    /* ---- the same lookup as one page, no cursor, against the hand-written table ---- */
    for (int q = 0; q < queries; q++) {
        snprintf(key, sizeof key, "003%015d", (q * 7) % entries);
        snprintf(spec, sizeof spec, "{\"queryType\":\"exact\",\"indexPath\":\"Id\",\"matchKey\":\"%s\",\"pageSize\":10}", key);
        double s = now_s();
        char *page_json = NULL;
        if (syncstore_query_page(store, "contacts", spec, 0, &page_json, &err)) die("query_page", &err);
        syncstore_free(page_json);
        samples[q] = now_s() - s;
    }
    double l50, l99;
    percentiles(samples, queries, &l50, &l99);
    for (int q = 0; q < queries; q++) {
        snprintf(key, sizeof key, "003%015d", (q * 7) % entries);
        double s = now_s();
        hand_lookup(&hand, key);
        samples[q] = now_s() - s;
    }
    double h50, h99;
    percentiles(samples, queries, &h50, &h99);
    printf("lookup      engine p50 %6.1f us p99 %6.1f us   hand-written p50 %6.1f us p99 %6.1f us   engine/hand-written p50 %.2fx (target <= 1.3x)\n",
           l50 * 1e6, l99 * 1e6, h50 * 1e6, h99 * 1e6, l50 / h50);

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
    hand_close(&hand);
    syncstore_close(store, NULL);
    for (int b = 0; b < batches; b++) free(texts[b]);
    free(texts);
    free(samples);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * --encryption: the engine against itself, plaintext store vs encrypted store, in one run.
 *
 *   upsert   `entries` entries into a fresh store per round; rounds alternate the order
 *            (P E, E P, P E, ...); rows/s of the best and the median round, and CPU seconds
 *   exact    exact query on the indexed Id (query_soup + cursor close, as above), Q queries a
 *            pass, passes alternating between the two stores of the last upsert round (both
 *            open, one warm-up pass each first): keys in a pseudo-random order (most pages not
 *            in SQLite's 2 MB page cache: each miss is a page read, HMAC check and decryption),
 *            and keys in order with stride 7 as the default run does (pages mostly cached)
 *   open     syncstore_open of an existing closed store (1000 entries) then close, timed to the
 *            open's return: plaintext, raw key x'<64 hex>' (no KDF), passphrase at kdfIter
 *            256000 (the default) and at 4000 (the Mobile SDK's); 2 x rounds + 1 alternating
 *            opens each, median and best in ms
 * Lines starting with "ENC|" are the summary (scripts/bench-encryption.sh collects them).
 * ------------------------------------------------------------------------------------------- */

static double cpu_s(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}




typedef struct { const char *label; const char *key; int kdf_iter; } enc_mode;

static syncstore_store *enc_open(const char *dir, const char *name, const enc_mode *m, double *seconds) {
    char *config = store_config(name, m->key, m->kdf_iter);
    syncstore_error err;
    syncstore_store *store = NULL;
    double t0 = now_s();
    if (syncstore_open(dir, config, &store, &err)) die("open", &err);
    if (seconds) *seconds = now_s() - t0;
    free(config);
    return store;
}

static void enc_remove(const char *dir, const char *name, const enc_mode *m) {
    char *config = store_config(name, m->key, m->kdf_iter);
    syncstore_error err;
    if (syncstore_remove_store(dir, config, &err)) die("remove_store", &err);
    free(config);
}

static void enc_register(syncstore_store *store) {
    syncstore_error err;
    if (syncstore_register_soup(store, "contacts",
            "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},{\"path\":\"Email\",\"type\":\"string\"}]", &err))
        die("register", &err);
}

static void enc_upsert(syncstore_store *store, char **texts, int batches) {
    syncstore_error err;
    for (int b = 0; b < batches; b++) {
        char *out = NULL;
        if (syncstore_upsert(store, "contacts", texts[b], NULL, &out, &err)) die("upsert", &err);
        syncstore_free(out);
    }
}

static void enc_query(syncstore_store *store, int index) {
    char spec[256], key[32];
    syncstore_error err;
    snprintf(key, sizeof key, "003%015d", index);
    snprintf(spec, sizeof spec, "{\"queryType\":\"exact\",\"indexPath\":\"Id\",\"matchKey\":\"%s\",\"pageSize\":10}", key);
    char *cursor = NULL;
    if (syncstore_query_soup(store, "contacts", spec, &cursor, &err)) die("query", &err);
    const char *at = strstr(cursor, "\"cursorId\":");
    if (!at || !strstr(cursor, key)) { fprintf(stderr, "bench-store: query for %s found nothing: %s\n", key, cursor); exit(1); }
    long long id = strtoll(at + 11, NULL, 10);
    syncstore_free(cursor);
    syncstore_cursor_close(store, id, NULL);
}

/* One pass of `n` queries over keys[]; per-query latencies go to samples (may be NULL). */
static double enc_query_pass(syncstore_store *store, const int *keys, int n, double *samples, double *cpu) {
    double c0 = cpu_s(), t0 = now_s();
    for (int q = 0; q < n; q++) {
        double s = samples ? now_s() : 0;
        enc_query(store, keys[q]);
        if (samples) samples[q] = now_s() - s;
    }
    double t = now_s() - t0;
    if (cpu) *cpu = cpu_s() - c0;
    return t;
}

static const char *verdict_of(double ratio, double target) { return target <= 0 ? "-" : ratio >= target ? "MET" : "MISSED"; }

static void enc_summary(const char *figure, const char *plain, const char *enc, double ratio, double target) {
    char t[32] = "-", r[32];
    if (target > 0) snprintf(t, sizeof t, ">= %.2fx", target);
    snprintf(r, sizeof r, "%.3fx", ratio);
    printf("ENC| %-50s | %-22s | %-22s | %-8s | %-8s | %s\n", figure, plain, enc, r, t, verdict_of(ratio, target));
}

static int encryption_bench(const char *dir, int entries, const char *key, int kdf_iter, int rounds, int queries) {
    char command[2200];
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(command) != 0) return 1;
    int batches = 0;
    char **texts = make_batches(entries, &batches);
    int raw = key[0] == 'x' || key[0] == 'X';
    printf("encryption benchmark (store): libsyncstore %s, %d Contact entries (3 string indexes), batches of %d,\n"
           "  encrypted = \"key\": %s, kdfIter %d; %d alternating rounds, %d queries a pass\n",
           syncstore_version(), entries, BATCH, raw ? "raw x'...'" : "a passphrase", kdf_iter > 0 ? kdf_iter : 256000,
           rounds, queries);
    print_load("at start");
    enc_mode modes[2] = {{"plaintext", NULL, 0}, {"encrypted", key, kdf_iter}};

    /* ---- upsert ---- */
    printf("\n[upsert] %d entries into a fresh store, %d rounds (order alternates)\n", entries, rounds);
    double *up_wall[2], *up_cpu[2];
    syncstore_store *last[2] = {NULL, NULL};
    char last_name[2][32] = {"", ""};
    for (int m = 0; m < 2; m++) {
        up_wall[m] = calloc((size_t)rounds, sizeof(double));
        up_cpu[m] = calloc((size_t)rounds, sizeof(double));
    }
    for (int r = 0; r < rounds; r++) {
        for (int j = 0; j < 2; j++) {
            int m = r % 2 ? 1 - j : j;
            if (last[m]) {
                syncstore_close(last[m], NULL);
                enc_remove(dir, last_name[m], &modes[m]);
            }
            snprintf(last_name[m], sizeof last_name[m], "%s%d", m ? "enc" : "plain", r);
            last[m] = enc_open(dir, last_name[m], &modes[m], NULL);
            enc_register(last[m]);
            double c0 = cpu_s(), t0 = now_s();
            enc_upsert(last[m], texts, batches);
            up_wall[m][r] = now_s() - t0;
            up_cpu[m][r] = cpu_s() - c0;
        }
        printf("  round %d: plaintext %.3f s (CPU %.2f s, %.0f rows/s)   encrypted %.3f s (CPU %.2f s, %.0f rows/s)\n", r + 1,
               up_wall[0][r], up_cpu[0][r], entries / up_wall[0][r], up_wall[1][r], up_cpu[1][r], entries / up_wall[1][r]);
        fflush(stdout);
    }

    /* ---- exact query by Id ---- */
    int *random_keys = malloc(sizeof(int) * (size_t)queries), *ordered_keys = malloc(sizeof(int) * (size_t)queries);
    uint32_t x = 2463534242u;
    for (int q = 0; q < queries; q++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        random_keys[q] = (int)(x % (uint32_t)entries);
        ordered_keys[q] = (q * 7) % entries;
    }
    const char *pattern_name[2] = {"random keys", "keys in order, stride 7"};
    const int *pattern_keys[2] = {random_keys, ordered_keys};
    int passes = rounds;
    double *q_wall[2][2], *q_cpu[2][2], *q_lat[2][2];
    for (int p = 0; p < 2; p++)
        for (int m = 0; m < 2; m++) {
            q_wall[p][m] = calloc((size_t)passes, sizeof(double));
            q_cpu[p][m] = calloc((size_t)passes, sizeof(double));
            q_lat[p][m] = calloc((size_t)passes * (size_t)queries, sizeof(double));
        }
    for (int p = 0; p < 2; p++) {
        printf("\n[exact query by Id, %s] %d queries a pass, %d passes each (order alternates), after a warm-up pass each\n",
               pattern_name[p], queries, passes);
        for (int m = 0; m < 2; m++) enc_query_pass(last[m], pattern_keys[p], queries, NULL, NULL);
        for (int r = 0; r < passes; r++) {
            for (int j = 0; j < 2; j++) {
                int m = r % 2 ? 1 - j : j;
                q_wall[p][m][r] = enc_query_pass(last[m], pattern_keys[p], queries, q_lat[p][m] + (size_t)r * (size_t)queries,
                                                 &q_cpu[p][m][r]);
            }
            printf("  pass %d: plaintext %.0f queries/s (CPU %.2f s)   encrypted %.0f queries/s (CPU %.2f s)\n", r + 1,
                   queries / q_wall[p][0][r], q_cpu[p][0][r], queries / q_wall[p][1][r], q_cpu[p][1][r]);
            fflush(stdout);
        }
    }
    for (int m = 0; m < 2; m++) {
        syncstore_close(last[m], NULL);
        enc_remove(dir, last_name[m], &modes[m]);
    }

    /* ---- store open ---- */
    char raw_key[80];
    if (raw) snprintf(raw_key, sizeof raw_key, "%s", key);
    else {
        strcpy(raw_key, "x'");
        for (int i = 0; i < 32; i++) snprintf(raw_key + 2 + 2 * i, 3, "%02x", (unsigned)((i * 37 + 11) & 0xff));
        strcat(raw_key, "'");
    }
    const char *pass = raw ? "bench passphrase" : key;
    enc_mode open_modes[4] = {{"plaintext", NULL, 0}, {"raw key x'<64 hex>'", raw_key, 0},
                              {"passphrase, kdfIter 256000", pass, 256000}, {"passphrase, kdfIter 4000", pass, 4000}};
    const char *open_names[4] = {"open-plain", "open-raw", "open-kdf256000", "open-kdf4000"};
    int open_rounds = 2 * rounds + 1;
    double *open_ms[4];
    printf("\n[store open] existing store with 1000 entries, closed; %d opens each, order rotates\n", open_rounds);
    for (int m = 0; m < 4; m++) {
        open_ms[m] = calloc((size_t)open_rounds, sizeof(double));
        syncstore_store *s = enc_open(dir, open_names[m], &open_modes[m], NULL);
        enc_register(s);
        enc_upsert(s, texts, 1);
        syncstore_close(s, NULL);
    }
    for (int r = 0; r < open_rounds; r++) {
        for (int j = 0; j < 4; j++) {
            int m = (j + r) % 4;
            double t = 0;
            syncstore_store *s = enc_open(dir, open_names[m], &open_modes[m], &t);
            open_ms[m][r] = t * 1e3;
            syncstore_close(s, NULL);
        }
    }
    for (int m = 0; m < 4; m++)
        printf("  %-28s median %8.2f ms   best %8.2f ms\n", open_modes[m].label, median_of(open_ms[m], open_rounds),
               min_of(open_ms[m], open_rounds));
    print_load("at end");

    /* ---- summary ---- */
    char a[64], b[64];
    printf("\nENC| %-50s | %-22s | %-22s | %-8s | %-8s | %s\n", "figure (store)", "plaintext", "encrypted", "enc/plain", "target",
           "verdict");
    double pb = entries / min_of(up_wall[0], rounds), eb = entries / min_of(up_wall[1], rounds);
    double pm = entries / median_of(up_wall[0], rounds), em = entries / median_of(up_wall[1], rounds);
    snprintf(a, sizeof a, "%.0f rows/s", pb);
    snprintf(b, sizeof b, "%.0f rows/s", eb);
    enc_summary("upsert, best round", a, b, eb / pb, 0.75);
    snprintf(a, sizeof a, "%.0f rows/s", pm);
    snprintf(b, sizeof b, "%.0f rows/s", em);
    enc_summary("upsert, median round", a, b, em / pm, 0.75);
    double pc = median_of(up_cpu[0], rounds), ec = median_of(up_cpu[1], rounds);
    snprintf(a, sizeof a, "%.2f s", pc);
    snprintf(b, sizeof b, "%.2f s", ec);
    enc_summary("upsert CPU s (median; plain/enc = speed)", a, b, pc / ec, 0);
    for (int p = 0; p < 2; p++) {
        char figure[96];
        double qpb = queries / min_of(q_wall[p][0], passes), qeb = queries / min_of(q_wall[p][1], passes);
        double qpm = queries / median_of(q_wall[p][0], passes), qem = queries / median_of(q_wall[p][1], passes);
        double target = p == 0 ? 0.75 : 0;
        snprintf(figure, sizeof figure, "exact query by Id, %s, best", pattern_name[p]);
        snprintf(a, sizeof a, "%.0f q/s", qpb);
        snprintf(b, sizeof b, "%.0f q/s", qeb);
        enc_summary(figure, a, b, qeb / qpb, target);
        snprintf(figure, sizeof figure, "exact query by Id, %s, median", pattern_name[p]);
        snprintf(a, sizeof a, "%.0f q/s", qpm);
        snprintf(b, sizeof b, "%.0f q/s", qem);
        enc_summary(figure, a, b, qem / qpm, target);
        double l50p, l99p, l50e, l99e;
        percentiles(q_lat[p][0], passes * queries, &l50p, &l99p);
        percentiles(q_lat[p][1], passes * queries, &l50e, &l99e);
        snprintf(figure, sizeof figure, "  latency p50 / p99 (us; plain/enc = speed)");
        snprintf(a, sizeof a, "%.1f / %.1f us", l50p * 1e6, l99p * 1e6);
        snprintf(b, sizeof b, "%.1f / %.1f us", l50e * 1e6, l99e * 1e6);
        enc_summary(figure, a, b, l50p / l50e, 0);
    }
    double plain_open = median_of(open_ms[0], open_rounds);
    for (int m = 1; m < 4; m++) {
        char figure[96];
        snprintf(figure, sizeof figure, "store open ms, median, %s", open_modes[m].label);
        snprintf(a, sizeof a, "%.2f ms", plain_open);
        snprintf(b, sizeof b, "%.2f ms", median_of(open_ms[m], open_rounds));
        enc_summary(figure, a, b, plain_open / median_of(open_ms[m], open_rounds), 0);
    }
    printf("(enc/plain: encrypted throughput / plaintext throughput; for times, plaintext time / encrypted time)\n");

    for (int m = 0; m < 4; m++) { enc_remove(dir, open_names[m], &open_modes[m]); free(open_ms[m]); }
    for (int m = 0; m < 2; m++) { free(up_wall[m]); free(up_cpu[m]); }
    for (int p = 0; p < 2; p++)
        for (int m = 0; m < 2; m++) { free(q_wall[p][m]); free(q_cpu[p][m]); free(q_lat[p][m]); }
    free(random_keys);
    free(ordered_keys);
    for (int b2 = 0; b2 < batches; b2++) free(texts[b2]);
    free(texts);
    return 0;
}
