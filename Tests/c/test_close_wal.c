/* A cleanly closed store is one file: after the last handle closes, the .db file alone (no -wal,
 * no -shm) holds every entry, and the -wal file is empty or gone. Closing while another
 * connection (standing in for another process) holds a read transaction still succeeds, quickly.
 * While the store is open, its checkpoint thread copies a WAL past 32 MB into the .db file,
 * beside readers and changes of key.
 * Usage: test_close_wal <work_dir> */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

static const char *root;

static void store_path(char *out, size_t size, const char *dir, const char *name, const char *suffix) {
    snprintf(out, size, "%s/user/%s.db%s", dir, name, suffix);
}

/* Size of a file, or -1 when it does not exist. */
static long long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    int ok = in && out;
    char buffer[65536];
    size_t n;
    while (ok && (n = fread(buffer, 1, sizeof buffer, in)) > 0) ok = fwrite(buffer, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok;
}

static syncstore_store *open_named(const char *dir, const char *name) {
    char config[128];
    snprintf(config, sizeof config, "{\"storeName\":\"%s\"}", name);
    syncstore_error err;
    syncstore_store *s = NULL;
    EXPECT(syncstore_open(dir, config, &s, &err), SYNCSTORE_OK, &err);
    return s;
}

/* Upserts `count` entries {"n": first..first+count-1, "payload": ...} in batches of 50 (one
 * transaction each, so the WAL gets many commits). */
static void add_entries(syncstore_store *s, int first, int count) {
    syncstore_error err;
    for (int start = first; start < first + count; start += 50) {
        json_t *batch = json_array();
        for (int n = start; n < start + 50 && n < first + count; n++)
            json_array_append_new(batch, json_pack("{s:i,s:s}", "n", n, "payload", "some text to fill the pages of the write-ahead log"));
        char *text = json_dumps(batch, 0);
        EXPECT(syncstore_upsert(s, "items", text, NULL, NULL, &err), SYNCSTORE_OK, &err);
        free(text);
        json_decref(batch);
    }
}

static long long count_entries(syncstore_store *s, const char *condition) {
    char spec[512], *out = NULL;
    snprintf(spec, sizeof spec, "{\"queryType\":\"smart\",\"smartSql\":\"select count(*) from {items}%s%s\",\"pageSize\":1}",
             condition ? " where " : "", condition ? condition : "");
    syncstore_error err;
    int rc = syncstore_run_smart_query(s, spec, &out, &err);
    if (rc != SYNCSTORE_OK) { fprintf(stderr, "count failed: %s\n", err.message); return -1; }
    json_t *cursor = check_parse(out);
    long long n = json_integer_value(json_array_get(json_array_get(json_object_get(cursor, "currentPageOrderedEntries"), 0), 0));
    syncstore_cursor_close(s, json_integer_value(json_object_get(cursor, "cursorId")), NULL);
    json_decref(cursor);
    return n;
}

/* After close: the -wal is empty or absent; a copy of the .db alone has all `expected` entries,
 * read with SQLite directly and through the library. */
static void check_single_file(const char *name, long long expected) {
    char db[2048], wal[2048], copy_dir[1024], copy_user[2048], copy_db[2048];
    store_path(db, sizeof db, root, name, "");
    store_path(wal, sizeof wal, root, name, "-wal");
    long long wal_size = file_size(wal);
    if (wal_size > 0) fprintf(stderr, "%s: -wal still has %lld bytes after close\n", name, wal_size);
    CHECK(wal_size <= 0);

    snprintf(copy_dir, sizeof copy_dir, "%s/copy-%s", root, name);
    check_fresh_dir(copy_dir);
    snprintf(copy_user, sizeof copy_user, "%s/user", copy_dir);
    check_fresh_dir(copy_user);
    store_path(copy_db, sizeof copy_db, copy_dir, name, "");
    CHECK(copy_file(db, copy_db));

    /* SQLite alone, read-only, on the copied file */
    sqlite3 *raw = NULL;
    CHECK(sqlite3_open_v2(copy_db, &raw, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    sqlite3_stmt *statement = NULL;
    long long tables = -1;
    if (sqlite3_prepare_v2(raw, "SELECT count(*) FROM sqlite_master WHERE type = 'table'", -1, &statement, NULL) == SQLITE_OK &&
        sqlite3_step(statement) == SQLITE_ROW)
        tables = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    if (tables <= 0) fprintf(stderr, "%s: the copied .db has no tables (%s)\n", name, sqlite3_errmsg(raw));
    CHECK(tables > 0);
    sqlite3_close(raw);

    /* the library, on the copy */
    syncstore_store *s = open_named(copy_dir, name);
    syncstore_error err;
    int exists = 0;
    EXPECT(syncstore_soup_exists(s, "items", &exists, &err), SYNCSTORE_OK, &err);
    CHECK(exists == 1);
    if (exists) {
        long long found = count_entries(s, NULL);
        if (found != expected) fprintf(stderr, "%s: the copy has %lld entries, expected %lld\n", name, found, expected);
        CHECK(found == expected);
        CHECK(count_entries(s, "{items:n} = 0") == 1);
        char last[64];
        snprintf(last, sizeof last, "{items:n} = %lld", expected - 1);
        CHECK(count_entries(s, last) == 1);
    }
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
}

/* One handle: open, register, upsert many, close, copy the .db alone. */
static void test_one_handle(void) {
    syncstore_store *s = open_named(root, "single");
    syncstore_error err;
    EXPECT(syncstore_register_soup(s, "items", "[{\"path\":\"n\",\"type\":\"integer\"}]", &err), SYNCSTORE_OK, &err);
    add_entries(s, 0, 3000);
    CHECK(count_entries(s, NULL) == 3000); /* readers were used too */
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    check_single_file("single", 3000);
}

/* Two handles on one store: closing the first leaves the store open; the last close makes it
 * one file, with what both wrote. */
static void test_shared_handles(void) {
    syncstore_store *a = open_named(root, "shared"), *b = open_named(root, "shared");
    syncstore_error err;
    EXPECT(syncstore_register_soup(a, "items", "[{\"path\":\"n\",\"type\":\"integer\"}]", &err), SYNCSTORE_OK, &err);
    add_entries(a, 0, 1000);
    EXPECT(syncstore_close(a, &err), SYNCSTORE_OK, &err);
    add_entries(b, 1000, 1000);
    CHECK(count_entries(b, NULL) == 2000);
    EXPECT(syncstore_close(b, &err), SYNCSTORE_OK, &err);
    check_single_file("shared", 2000);
}

/* Another connection is inside a read transaction when the last handle closes: the checkpoint
 * cannot finish, but close succeeds without a long wait. When that reader is done, the next
 * clean close makes the store one file. */
static void test_close_while_other_reads(void) {
    syncstore_store *s = open_named(root, "reader");
    syncstore_error err;
    EXPECT(syncstore_register_soup(s, "items", "[{\"path\":\"n\",\"type\":\"integer\"}]", &err), SYNCSTORE_OK, &err);
    add_entries(s, 0, 500);

    char db[2048];
    store_path(db, sizeof db, root, "reader", "");
    sqlite3 *other = NULL;
    CHECK(sqlite3_open_v2(db, &other, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    sqlite3_stmt *statement = NULL;
    CHECK(sqlite3_exec(other, "BEGIN", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(other, "SELECT count(*) FROM sqlite_master", -1, &statement, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(statement) == SQLITE_ROW); /* the read transaction now holds a WAL snapshot */
    add_entries(s, 500, 500);                     /* commits the reader's snapshot does not see */

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("close with another reader took %.3f s\n", seconds);
    CHECK(seconds < 3.0);

    sqlite3_finalize(statement);
    CHECK(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
    /* the store opens again while the other connection is still open; its close is then not
     * SQLite's last one, so the checkpoint on close is what empties the WAL */
    s = open_named(root, "reader");
    CHECK(count_entries(s, NULL) == 1000);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    char wal[2048];
    store_path(wal, sizeof wal, root, "reader", "-wal");
    long long wal_size = file_size(wal);
    if (wal_size > 0) fprintf(stderr, "reader: -wal still has %lld bytes after close\n", wal_size);
    CHECK(wal_size <= 0);
    sqlite3_close(other);
    check_single_file("reader", 1000);
}

static atomic_int readers_stop;

/* Reads pages of the store until told to stop; every read must succeed. */
static void *read_pages(void *arg) {
    syncstore_store *s = arg;
    int failures = 0;
    for (long n = 0; !atomic_load(&readers_stop); n++) {
        char spec[160], *out = NULL;
        snprintf(spec, sizeof spec, "{\"queryType\":\"range\",\"indexPath\":\"n\",\"beginKey\":%ld,\"pageSize\":5}", n % 2000);
        syncstore_error err;
        if (syncstore_query_page(s, "items", spec, 0, &out, &err) != SYNCSTORE_OK) {
            fprintf(stderr, "a read beside the checkpoints failed: %s\n", err.message);
            failures++;
        }
        syncstore_free(out);
    }
    return (void *)(long)failures;
}

/* Writes about 60 MB in 1 MB transactions while two threads read, changing the key twice on the
 * way (each writes the whole store into a new file); the 40 MB written after that pass the 32 MB
 * checkpoint threshold, and the .db file grows by them while the store is open (the checkpoint
 * thread copied the WAL into it). The closed store is one file. */
static void test_checkpoints_beside_readers_and_changes_of_key(void) {
    syncstore_store *s = open_named(root, "loaded");
    syncstore_error err;
    EXPECT(syncstore_register_soup(s, "items", "[{\"path\":\"n\",\"type\":\"integer\"}]", &err), SYNCSTORE_OK, &err);
    pthread_t readers[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&readers[i], NULL, read_pages, s) == 0);
    char *payload = malloc(20001);
    memset(payload, 'x', 20000);
    payload[20000] = 0;
    const int entries = 3000;
    char db[2048] = "";
    long long rekeyed = 0;
    for (int start = 0; start < entries; start += 50) {
        json_t *batch = json_array();
        for (int n = start; n < start + 50; n++) json_array_append_new(batch, json_pack("{s:i,s:s}", "n", n, "payload", payload));
        char *text = json_dumps(batch, 0);
        EXPECT(syncstore_upsert(s, "items", text, NULL, NULL, &err), SYNCSTORE_OK, &err);
        free(text);
        json_decref(batch);
        if (start == 500) EXPECT(syncstore_change_key(s, "x'00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff'", &err), SYNCSTORE_OK, &err);
        if (start == 1000) {
            EXPECT(syncstore_change_key(s, NULL, &err), SYNCSTORE_OK, &err);
            store_path(db, sizeof db, root, "loaded", "");
            rekeyed = file_size(db);
        }
    }
    free(payload);
    long long size = 0;
    struct timespec pause = {0, 50 * 1000000L};
    for (int waited = 0; waited < 600 && (size = file_size(db)) < rekeyed + 25000000; waited++) nanosleep(&pause, NULL);
    if (size < rekeyed + 25000000)
        fprintf(stderr, "loaded: the open store's .db grew from %lld to %lld bytes only: its WAL was not checkpointed\n", rekeyed, size);
    CHECK(size >= rekeyed + 25000000);
    atomic_store(&readers_stop, 1);
    for (int i = 0; i < 2; i++) {
        void *failures = NULL;
        CHECK(pthread_join(readers[i], &failures) == 0);
        CHECK(failures == NULL);
    }
    CHECK(count_entries(s, NULL) == entries);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    check_single_file("loaded", entries);
}

int main(int argc, char **argv) {
    root = argc > 1 ? argv[1] : "test-stores/close_wal";
    check_fresh_dir(root);
    test_one_handle();
    test_shared_handles();
    test_close_while_other_reads();
    test_checkpoints_beside_readers_and_changes_of_key();
    return check_finish();
}
