/* Storage limit for bench-sync: what SQLite alone can write of a sync down, in the
 * engine's own layout, with every row prepared before the clock starts.
 *
 *   1. The store is created by the engine (syncstore_open, syncstore_register_soup with the
 *      bench's index specs, syncstore_create_sync_down for the sync state row) and closed, so
 *      tables, columns and indexes are exactly the engine's.
 *   2. Every page of the query is fetched (libcurl, as bench-sync-baseline) and every row built
 *      in memory: the record's text with the members a sync down adds (__local__ and the three
 *      __locally_*__ = false, __sync_id__, _soupEntryId, _soupLastModifiedDate) and the index
 *      column values, read by the paths of soup_index_map in the store.
 *   3. Clock: the file is opened with sqlite3 directly, with the PRAGMAs the engine's writer
 *      connection sets (Sources/SyncStoreCore/Database/Connection.swift); per page of the server
 *      one BEGIN IMMEDIATE transaction holding, per record, the by-Id lookup merging needs (the
 *      engine's statement: id and dirty flag on the Id index) and the INSERT, then the sync
 *      state's existence check and UPDATE of its row, then COMMIT. As the engine, a second
 *      connection runs a PASSIVE checkpoint every 4 transactions on another thread
 *      (--no-background-checkpoint: the writer's autocheckpoint only). --pages-per-transaction K:
 *      K pages a transaction (the state updated once in each), as the engine's writer does when
 *      pages fetched ahead wait for it.
 *   Plaintext only: the engine's cipher VFS is reachable through the engine alone, so there is
 *   no encrypted limit (compare an encrypted engine with this plaintext limit knowingly).
 *
 * Usage: bench-sync-limit URL TOKEN DIR [--cafile PEM] [--soql QUERY] [--no-background-checkpoint]
 *                        [--pages-per-transaction K]
 * Prints: records=N pages=P seconds=T prepare_seconds=S hwm_kb=K (T: first BEGIN to last COMMIT). */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syncstore.h>
#include <time.h>
#include <unistd.h>
#include "bench_io.h"

#define DEFAULT_SOQL "SELECT Id, FirstName, LastName, Email, Phone, Title, AccountId, MailingCity, LastModifiedDate " \
                     "FROM Contact ORDER BY LastModifiedDate"
/* As bench-sync's sync down soup (INDEXES in sync_bench.c). */
#define INDEXES "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},{\"path\":\"Email\",\"type\":\"string\"}]"
#define MAX_COLUMNS 16
#define MAX_PAGES 100000

static void die(const char *what, const char *detail) {
    fprintf(stderr, "bench-sync-limit: %s: %s\n", what, detail ? detail : "");
    exit(1);
}

static void exec_or_die(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) die(sql, msg);
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) die(sqlite3_errmsg(db), sql);
    return s;
}

/* ---- 1. the store, made by the engine ---- */

static long long engine_create(const char *dir, const char *soql, char *path, size_t path_size) {
    char command[4096];
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(command) != 0) die("work dir", dir);
    syncstore_error err;
    syncstore_store *store = NULL;
    if (syncstore_open(dir, "{\"storeName\":\"bench\"}", &store, &err) != SYNCSTORE_OK) die("syncstore_open", err.message);
    if (syncstore_register_soup(store, "contacts", INDEXES, &err) != SYNCSTORE_OK) die("register_soup", err.message);
    json_t *target = json_pack("{s:s,s:s,s:i}", "type", "soql", "query", soql, "maxBatchSize", 2000);
    char *text = json_dumps(target, JSON_COMPACT);
    int64_t sync_id = 0;
    if (syncstore_create_sync_down(store, text, "contacts", NULL, "limit", &sync_id, &err) != SYNCSTORE_OK)
        die("create_sync_down", err.message);
    free(text);
    json_decref(target);
    if (syncstore_close(store, &err) != SYNCSTORE_OK) die("close", err.message);
    /* Where the engine keeps a user store named "bench" (StoreRegistry: ROOT/user/NAME.db). */
    snprintf(path, path_size, "%s/user/bench.db", dir);
    if (access(path, R_OK | W_OK) != 0) die("no database file (has the store layout changed?)", path);
    return sync_id;
}

/* A soup as the catalog describes it: table and its index columns (name, path, type). */
typedef struct {
    char table[64];
    int ncolumns;
    char column[MAX_COLUMNS][80], path[MAX_COLUMNS][256], type[MAX_COLUMNS][16];
} soup_layout;

static soup_layout read_layout(sqlite3 *db, const char *soup) {
    soup_layout l;
    memset(&l, 0, sizeof l);
    sqlite3_stmt *s = prepare(db, "SELECT id FROM soup_attrs WHERE soupName = ?");
    sqlite3_bind_text(s, 1, soup, -1, SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_ROW) die("no soup in soup_attrs", soup);
    long long table_id = (long long)sqlite3_column_int64(s, 0);
    snprintf(l.table, sizeof l.table, "TABLE_%lld", table_id);
    sqlite3_finalize(s);
    s = prepare(db, "SELECT path, type, slot FROM soup_index_map WHERE soupName = ? ORDER BY position");
    sqlite3_bind_text(s, 1, soup, -1, SQLITE_STATIC);
    while (sqlite3_step(s) == SQLITE_ROW) {
        if (!strcmp((const char *)sqlite3_column_text(s, 1), "json1")) continue;  /* no column */
        if (l.ncolumns == MAX_COLUMNS) die("too many index columns", soup);
        int c = l.ncolumns++;
        snprintf(l.path[c], sizeof l.path[c], "%s", sqlite3_column_text(s, 0));
        snprintf(l.type[c], sizeof l.type[c], "%s", sqlite3_column_text(s, 1));
        snprintf(l.column[c], sizeof l.column[c], "TABLE_%lld_%lld", table_id, (long long)sqlite3_column_int64(s, 2));
    }
    sqlite3_finalize(s);
    /* The columns must be in the table the engine made (else the catalog was read wrong). */
    for (int c = 0; c < l.ncolumns; c++) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT 1 FROM pragma_table_info('%s') WHERE name = '%s'", l.table, l.column[c]);
        s = prepare(db, sql);
        if (sqlite3_step(s) != SQLITE_ROW) die("index column not in the table", l.column[c]);
        sqlite3_finalize(s);
    }
    return l;
}

/* ---- 2. the rows, prepared in memory ---- */

typedef struct {
    char *soup;
    int len;
    int type[MAX_COLUMNS];  /* SQLITE_TEXT / INTEGER / FLOAT / NULL */
    const char *text[MAX_COLUMNS];  /* into soup_values */
    long long i[MAX_COLUMNS];
    double d[MAX_COLUMNS];
} row;

/* The value at a dotted path of a record (NULL when absent). */
static json_t *at_path(json_t *record, const char *path) {
    char part[256];
    json_t *v = record;
    while (v && *path) {
        size_t n = strcspn(path, ".");
        snprintf(part, sizeof part, "%.*s", (int)n, path);
        v = json_object_get(v, part);
        path += n + (path[n] == '.');
    }
    return v;
}

/* Sets column c of r as the engine binds a JSON value to an index column of `type`. */
static void set_value(row *r, int c, json_t *v, const char *type) {
    int string_column = !strcmp(type, "string") || !strcmp(type, "full_text");
    if (json_is_string(v)) { r->type[c] = SQLITE_TEXT; r->text[c] = strdup(json_string_value(v)); }
    else if (json_is_integer(v)) { r->type[c] = SQLITE_INTEGER; r->i[c] = json_integer_value(v); }
    else if (json_is_real(v)) { r->type[c] = SQLITE_FLOAT; r->d[c] = json_real_value(v); }
    else if (json_is_boolean(v)) {
        if (string_column) { r->type[c] = SQLITE_TEXT; r->text[c] = json_is_true(v) ? "true" : "false"; }
        else { r->type[c] = SQLITE_INTEGER; r->i[c] = json_is_true(v); }
    } else r->type[c] = SQLITE_NULL;
}

static void bind_value(sqlite3_stmt *s, int position, const row *r, int c) {
    switch (r->type[c]) {
    case SQLITE_TEXT: sqlite3_bind_text(s, position, r->text[c], -1, SQLITE_STATIC); break;
    case SQLITE_INTEGER: sqlite3_bind_int64(s, position, r->i[c]); break;
    case SQLITE_FLOAT: sqlite3_bind_double(s, position, r->d[c]); break;
    default: sqlite3_bind_null(s, position);
    }
}

typedef struct {
    row *rows;
    long long nrows, cap;
    long long page_end[MAX_PAGES];  /* rows of page p: [page_end[p-1], page_end[p]) */
    int pages;
} prepared;

/* Fetches every page of soql and builds the rows the engine would store, with ids from 1. */
static void prepare_rows(prepared *out, const soup_layout *l, const char *base, const char *token, const char *cafile,
                         const char *soql, long long sync_id) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *curl = curl_easy_init();
    char auth[1024];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    struct curl_slist *headers = curl_slist_append(NULL, auth);
    headers = curl_slist_append(headers, "Sforce-Query-Options: batchSize=2000");
    headers = curl_slist_append(headers, "Accept: application/json");
    buffer body = {0};
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (cafile) curl_easy_setopt(curl, CURLOPT_CAINFO, cafile);
    char *escaped = curl_easy_escape(curl, soql, 0);
    size_t url_cap = strlen(base) + strlen(escaped) + 4096;
    char *url = malloc(url_cap);
    snprintf(url, url_cap, "%s/services/data/v62.0/query?q=%s", base, escaped);
    curl_free(escaped);
    long long stamp = now_ms();
    char added[256];
    while (url[0]) {
        if (out->pages == MAX_PAGES) die("paging", "too many pages");
        body.len = 0;
        curl_easy_setopt(curl, CURLOPT_URL, url);
        CURLcode rc = curl_easy_perform(curl);
        if (rc != CURLE_OK) die("GET", curl_easy_strerror(rc));
        long status = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        if (status != 200) die("HTTP status", body.data);
        json_error_t error;
        json_t *page = json_loadb(body.data, body.len, 0, &error);
        if (!page) die("parse", error.text);
        const char *next = json_string_value(json_object_get(page, "nextRecordsUrl"));
        if (next) snprintf(url, url_cap, "%s%s", base, next);
        else url[0] = 0;
        size_t i;
        json_t *record;
        json_array_foreach(json_object_get(page, "records"), i, record) {
            if (out->nrows == out->cap) {
                out->cap = out->cap ? out->cap * 2 : 1 << 16;
                out->rows = realloc(out->rows, sizeof *out->rows * (size_t)out->cap);
                if (!out->rows) die("memory", "rows");
            }
            row *r = &out->rows[out->nrows];
            memset(r, 0, sizeof *r);
            for (int c = 0; c < l->ncolumns; c++) set_value(r, c, at_path(record, l->path[c]), l->type[c]);
            /* The server's text (compact, as the dev server sends it), its closing brace replaced
             * by the members the engine appends. */
            char *text = json_dumps(record, JSON_COMPACT);
            if (!text) die("dump", "record");
            size_t n = strlen(text);
            int k = snprintf(added, sizeof added,
                             "%s\"__local__\":false,\"__locally_created__\":false,\"__locally_updated__\":false,"
                             "\"__locally_deleted__\":false,\"__sync_id__\":%lld,\"_soupEntryId\":%lld,\"_soupLastModifiedDate\":%lld}",
                             n > 2 ? "," : "", sync_id, out->nrows + 1, stamp);
            r->soup = malloc(n - 1 + (size_t)k + 1);
            memcpy(r->soup, text, n - 1);
            memcpy(r->soup + n - 1, added, (size_t)k + 1);
            r->len = (int)(n - 1 + (size_t)k);
            free(text);
            out->nrows++;
        }
        out->page_end[out->pages++] = out->nrows;
        json_decref(page);
    }
    free(url);
    free(body.data);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
}

/* ---- 3. the writes ---- */

/* The engine's BackgroundCheckpoint: a connection of its own, a PASSIVE checkpoint every 4
 * transactions the writer made, on a thread other than the writer's. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int pending, done;
    sqlite3 *db;
} checkpointer;

static void *checkpoint_thread(void *arg) {
    checkpointer *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (c->pending < 4 && !c->done) pthread_cond_wait(&c->cond, &c->lock);
        if (c->done) break;
        c->pending = 0;
        pthread_mutex_unlock(&c->lock);
        sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static sqlite3 *open_like_engine(const char *path) {
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) die("open", path);
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, 10000);
    exec_or_die(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=8192;"
                    " PRAGMA journal_size_limit=33554432; PRAGMA foreign_keys=OFF");
    return db;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bench-sync-limit URL TOKEN DIR [--cafile PEM] [--soql QUERY] [--no-background-checkpoint]\n"
                        "                        [--pages-per-transaction K]\n");
        return 2;
    }
    const char *base = argv[1], *token = argv[2], *dir = argv[3], *cafile = NULL, *soql = DEFAULT_SOQL;
    /* K pages a transaction: 1 as a sync down whose writer keeps up with the server, 5 (10,000
     * records) as one whose writer is behind and takes every page fetched ahead at once. */
    int per_transaction = 1;
    int background_checkpoint = 1;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--cafile") && i + 1 < argc) cafile = argv[++i];
        else if (!strcmp(argv[i], "--soql") && i + 1 < argc) soql = argv[++i];
        else if (!strcmp(argv[i], "--no-background-checkpoint")) background_checkpoint = 0;
        else if (!strcmp(argv[i], "--pages-per-transaction") && i + 1 < argc) per_transaction = atoi(argv[++i]);
        else die("unknown argument", argv[i]);
    }
    if (per_transaction < 1) die("--pages-per-transaction", "must be 1 or more");
    char path[4096];
    long long sync_id = engine_create(dir, soql, path, sizeof path);

    sqlite3 *db = open_like_engine(path);
    soup_layout soup = read_layout(db, "contacts"), syncs = read_layout(db, "syncs_soup");
    double p0 = now_s();
    static prepared rows;
    prepare_rows(&rows, &soup, base, token, cafile, soql, sync_id);
    double prepare_seconds = now_s() - p0;

    /* The engine's statements (EntryWriter, SyncStateStore.save). */
    char sql[4096], names[2048] = "", marks[512] = "", sets[2048] = "";
    for (int c = 0; c < soup.ncolumns; c++) {
        snprintf(names + strlen(names), sizeof names - strlen(names), ", %s", soup.column[c]);
        snprintf(marks + strlen(marks), sizeof marks - strlen(marks), ", ?");
    }
    snprintf(sql, sizeof sql, "INSERT INTO %s (id, soup, created, lastModified%s) VALUES (?, ?, ?, ?%s)", soup.table, names, marks);
    sqlite3_stmt *insert = prepare(db, sql);
    if (soup.ncolumns == 0 || strcmp(soup.path[0], "Id")) die("layout", "the first index of the soup must be Id");
    snprintf(sql, sizeof sql,
             "SELECT id, (CASE WHEN json_valid(soup) THEN json_extract(soup, '$.\"__local__\"') END IN (1, 'true', '1')) "
             "FROM %s WHERE %s = ? LIMIT 2", soup.table, soup.column[0]);
    sqlite3_stmt *lookup = prepare(db, sql);
    for (int c = 0; c < syncs.ncolumns; c++)
        snprintf(sets + strlen(sets), sizeof sets - strlen(sets), ", %s = ?", syncs.column[c]);
    snprintf(sql, sizeof sql, "UPDATE %s SET soup = ?, lastModified = ?%s WHERE id = ?", syncs.table, sets);
    sqlite3_stmt *state_update = prepare(db, sql);
    snprintf(sql, sizeof sql, "SELECT 1 FROM %s WHERE id = ?", syncs.table);
    sqlite3_stmt *state_exists = prepare(db, sql);
    /* The sync state row as the engine wrote it: rewritten whole once per page. */
    names[0] = 0;
    for (int c = 0; c < syncs.ncolumns; c++) snprintf(names + strlen(names), sizeof names - strlen(names), ", %s", syncs.column[c]);
    snprintf(sql, sizeof sql, "SELECT soup%s FROM %s WHERE id = ?", names, syncs.table);
    sqlite3_stmt *state_read = prepare(db, sql);
    sqlite3_bind_int64(state_read, 1, sync_id);
    if (sqlite3_step(state_read) != SQLITE_ROW) die("no sync state row", syncs.table);
    char *state_text = strdup((const char *)sqlite3_column_text(state_read, 0));
    sqlite3_value *state_columns[MAX_COLUMNS];
    for (int c = 0; c < syncs.ncolumns; c++) state_columns[c] = sqlite3_value_dup(sqlite3_column_value(state_read, 1 + c));
    sqlite3_finalize(state_read);

    checkpointer cp = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL};
    pthread_t cp_thread;
    if (background_checkpoint) {
        cp.db = open_like_engine(path);
        pthread_create(&cp_thread, NULL, checkpoint_thread, &cp);
    }

    double t0 = now_s();
    long long first = 0;
    for (int p = 0; p < rows.pages; p++) {
        long long now = now_ms();
        if (p % per_transaction == 0) exec_or_die(db, "BEGIN IMMEDIATE");
        for (long long k = first; k < rows.page_end[p]; k++) {
            const row *r = &rows.rows[k];
            bind_value(lookup, 1, r, 0);
            int found = 0;
            while (sqlite3_step(lookup) == SQLITE_ROW) found++;
            sqlite3_reset(lookup);
            if (found) die("lookup", "a record of the run is already stored (duplicate Id on the server?)");
            sqlite3_bind_int64(insert, 1, k + 1);
            sqlite3_bind_text(insert, 2, r->soup, r->len, SQLITE_STATIC);
            sqlite3_bind_int64(insert, 3, now);
            sqlite3_bind_int64(insert, 4, now);
            for (int c = 0; c < soup.ncolumns; c++) bind_value(insert, 5 + c, r, c);
            if (sqlite3_step(insert) != SQLITE_DONE) die("insert", sqlite3_errmsg(db));
            sqlite3_reset(insert);
        }
        first = rows.page_end[p];
        if ((p + 1) % per_transaction != 0 && p + 1 < rows.pages) continue;
        sqlite3_bind_int64(state_exists, 1, sync_id);
        if (sqlite3_step(state_exists) != SQLITE_ROW) die("sync state", "row gone");
        sqlite3_reset(state_exists);
        sqlite3_bind_text(state_update, 1, state_text, -1, SQLITE_STATIC);
        sqlite3_bind_int64(state_update, 2, now);
        for (int c = 0; c < syncs.ncolumns; c++) sqlite3_bind_value(state_update, 3 + c, state_columns[c]);
        sqlite3_bind_int64(state_update, 3 + syncs.ncolumns, sync_id);
        if (sqlite3_step(state_update) != SQLITE_DONE) die("state update", sqlite3_errmsg(db));
        sqlite3_reset(state_update);
        exec_or_die(db, "COMMIT");
        if (background_checkpoint) {
            pthread_mutex_lock(&cp.lock);
            cp.pending++;
            pthread_cond_signal(&cp.cond);
            pthread_mutex_unlock(&cp.lock);
        }
    }
    double elapsed = now_s() - t0;
    if (background_checkpoint) {
        pthread_mutex_lock(&cp.lock);
        cp.done = 1;
        pthread_cond_signal(&cp.cond);
        pthread_mutex_unlock(&cp.lock);
        pthread_join(cp_thread, NULL);
        sqlite3_close(cp.db);
    }
    sqlite3_stmt *count = prepare(db, (snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", soup.table), sql));
    long long stored = sqlite3_step(count) == SQLITE_ROW ? sqlite3_column_int64(count, 0) : -1;
    sqlite3_finalize(count);
    printf("records=%lld pages=%d seconds=%.6f prepare_seconds=%.3f hwm_kb=%ld\n", stored, rows.pages, elapsed,
           prepare_seconds, vm_hwm_kb());
    sqlite3_finalize(insert);
    sqlite3_finalize(lookup);
    sqlite3_finalize(state_update);
    sqlite3_finalize(state_exists);
    for (int c = 0; c < syncs.ncolumns; c++) sqlite3_value_free(state_columns[c]);
    free(state_text);
    sqlite3_close(db);
    return 0;
}
