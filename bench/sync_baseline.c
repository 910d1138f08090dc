/* Sync-down baseline (a) for bench-sync: the work of a sync down done by hand with the same
 * stack as the engine, without the engine.
 *
 *   libcurl, one easy handle reused (keep-alive), Accept-Encoding as the engine sends it,
 *   GET /query?q=SOQL with Sforce-Query-Options: batchSize=2000, then every nextRecordsUrl;
 *   jansson parses each page once; per record the sync flags the engine writes are set
 *   (__local__ and the three __locally_*__ = false, __sync_id__, _soupEntryId,
 *   _soupLastModifiedDate), the record is looked up by Id (a sync down is an upsert on Id) and
 *   inserted (or updated) with its JSON text and 3 index columns (Id, LastName, Email) in a
 *   table of the engine's shape; one transaction per page. The next page is fetched after the
 *   current one is written (no prefetch thread).
 *
 * Usage: bench-sync-baseline URL TOKEN DB_PATH [--cafile PEM] [--fetch-only] [--soql QUERY]
 * Prints one line: records=N pages=P seconds=T (time from the first request to the last
 * commit; opening the database and creating the table are not timed).
 * --fetch-only: only the HTTP fetches (bodies read fully, nextRecordsUrl found by strstr),
 * no parse, no SQLite: what the server and libcurl alone can do. */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_io.h"

#define DEFAULT_SOQL "SELECT Id, FirstName, LastName, Email, Phone, Title, AccountId, MailingCity, LastModifiedDate " \
                     "FROM Contact ORDER BY LastModifiedDate"
#define MAX_PAGES 100000

static void die(const char *what, const char *detail) {
    fprintf(stderr, "bench-sync-baseline: %s: %s\n", what, detail ? detail : "");
    exit(1);
}

static void exec_or_die(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) die(sql, msg);
}

static const char *str_at(json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bench-sync-baseline URL TOKEN DB_PATH [--cafile PEM] [--fetch-only] [--soql QUERY]\n");
        return 2;
    }
    const char *base = argv[1], *token = argv[2], *db_path = argv[3];
    const char *cafile = NULL, *soql = DEFAULT_SOQL;
    int fetch_only = 0;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--cafile") && i + 1 < argc) cafile = argv[++i];
        else if (!strcmp(argv[i], "--fetch-only")) fetch_only = 1;
        else if (!strcmp(argv[i], "--soql") && i + 1 < argc) soql = argv[++i];
        else die("unknown argument", argv[i]);
    }

    sqlite3 *db = NULL;
    sqlite3_stmt *lookup = NULL, *insert = NULL, *update = NULL;
    if (!fetch_only) {
        remove(db_path);
        if (sqlite3_open(db_path, &db) != SQLITE_OK) die("open", db_path);
        exec_or_die(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
            "CREATE TABLE contacts (id INTEGER PRIMARY KEY AUTOINCREMENT, soup TEXT NOT NULL, created INTEGER NOT NULL,"
            " lastModified INTEGER NOT NULL, c0 TEXT, c1 TEXT, c2 TEXT);"
            "CREATE INDEX c0_idx ON contacts(c0); CREATE INDEX c1_idx ON contacts(c1); CREATE INDEX c2_idx ON contacts(c2);"
            "CREATE INDEX created_idx ON contacts(created); CREATE INDEX lm_idx ON contacts(lastModified);");
        if (sqlite3_prepare_v2(db, "SELECT id FROM contacts WHERE c0 = ? LIMIT 2", -1, &lookup, NULL) ||
            sqlite3_prepare_v2(db, "INSERT INTO contacts (id, soup, created, lastModified, c0, c1, c2) VALUES (?,?,?,?,?,?,?)", -1, &insert, NULL) ||
            sqlite3_prepare_v2(db, "UPDATE contacts SET soup = ?, lastModified = ?, c0 = ?, c1 = ?, c2 = ? WHERE id = ?", -1, &update, NULL))
            die("prepare", sqlite3_errmsg(db));
    }

    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *curl = curl_easy_init();
    char auth[1024];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, auth);
    headers = curl_slist_append(headers, "Sforce-Query-Options: batchSize=2000");
    headers = curl_slist_append(headers, "Accept: application/json");
    buffer body = {0};
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  /* as the engine: gzip/deflate if offered */
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (cafile) curl_easy_setopt(curl, CURLOPT_CAINFO, cafile);

    char *escaped = curl_easy_escape(curl, soql, 0);
    size_t url_cap = strlen(base) + strlen(escaped) + 4096;
    char *url = malloc(url_cap);
    snprintf(url, url_cap, "%s/services/data/v62.0/query?q=%s", base, escaped);
    curl_free(escaped);

    long long records = 0, next_id = 1;
    int pages = 0;
    double t0 = now_s();
    while (url[0] && pages < MAX_PAGES) {
        body.len = 0;
        curl_easy_setopt(curl, CURLOPT_URL, url);
        CURLcode rc = curl_easy_perform(curl);
        if (rc != CURLE_OK) die("GET", curl_easy_strerror(rc));
        long status = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        if (status != 200) die("HTTP status", body.data);
        pages++;
        url[0] = 0;

        if (fetch_only) {
            /* nextRecordsUrl and totalSize come before the records in the devserver's pages. */
            const char *next = strstr(body.data, "\"nextRecordsUrl\":\"");
            if (next) {
                next += strlen("\"nextRecordsUrl\":\"");
                const char *end = strchr(next, '"');
                if (!end) die("page", "unterminated nextRecordsUrl");
                snprintf(url, url_cap, "%s%.*s", base, (int)(end - next), next);
            }
            /* Count records by their "attributes" objects (one per record). */
            for (const char *p = body.data; (p = strstr(p, "\"attributes\":")); p++) records++;
            continue;
        }

        json_error_t error;
        json_t *page = json_loadb(body.data, body.len, 0, &error);
        if (!page) die("parse", error.text);
        const char *next = str_at(page, "nextRecordsUrl");
        if (next) snprintf(url, url_cap, "%s%s", base, next);
        json_t *list = json_object_get(page, "records");
        long long now = now_ms();
        exec_or_die(db, "BEGIN IMMEDIATE");
        size_t i;
        json_t *record;
        json_array_foreach(list, i, record) {
            json_object_set_new(record, "__local__", json_false());
            json_object_set_new(record, "__locally_created__", json_false());
            json_object_set_new(record, "__locally_updated__", json_false());
            json_object_set_new(record, "__locally_deleted__", json_false());
            json_object_set_new(record, "__sync_id__", json_integer(1));
            const char *sf_id = str_at(record, "Id");
            sqlite3_bind_text(lookup, 1, sf_id, -1, SQLITE_STATIC);
            long long existing = 0;
            if (sqlite3_step(lookup) == SQLITE_ROW) existing = sqlite3_column_int64(lookup, 0);
            sqlite3_reset(lookup);
            long long id = existing ? existing : next_id++;
            json_object_set_new(record, "_soupEntryId", json_integer(id));
            json_object_set_new(record, "_soupLastModifiedDate", json_integer(now));
            char *soup = json_dumps(record, JSON_COMPACT);
            if (!soup) die("dump", sf_id);
            sqlite3_stmt *s = existing ? update : insert;
            if (existing) {
                sqlite3_bind_text(s, 1, soup, -1, free);
                sqlite3_bind_int64(s, 2, now);
                sqlite3_bind_text(s, 3, sf_id, -1, SQLITE_STATIC);
                sqlite3_bind_text(s, 4, str_at(record, "LastName"), -1, SQLITE_STATIC);
                sqlite3_bind_text(s, 5, str_at(record, "Email"), -1, SQLITE_STATIC);
                sqlite3_bind_int64(s, 6, id);
            } else {
                sqlite3_bind_int64(s, 1, id);
                sqlite3_bind_text(s, 2, soup, -1, free);
                sqlite3_bind_int64(s, 3, now);
                sqlite3_bind_int64(s, 4, now);
                sqlite3_bind_text(s, 5, sf_id, -1, SQLITE_STATIC);
                sqlite3_bind_text(s, 6, str_at(record, "LastName"), -1, SQLITE_STATIC);
                sqlite3_bind_text(s, 7, str_at(record, "Email"), -1, SQLITE_STATIC);
            }
            if (sqlite3_step(s) != SQLITE_DONE) die("insert", sqlite3_errmsg(db));
            sqlite3_reset(s);
            records++;
        }
        exec_or_die(db, "COMMIT");
        json_decref(page);
    }
    double elapsed = now_s() - t0;
    if (pages >= MAX_PAGES) die("paging", "too many pages");
    printf("records=%lld pages=%d seconds=%.6f\n", records, pages, elapsed);

    free(url);
    free(body.data);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    curl_global_cleanup();
    if (db) {
        sqlite3_finalize(lookup);
        sqlite3_finalize(insert);
        sqlite3_finalize(update);
        sqlite3_close(db);
    }
    return 0;
}
