/*
 * The encrypted page codec (Sources/CSyncStoreCipher): damaged database files and WALs must be
 * refused, never read as data. A reference store (several pages, WAL mode, three commits in its
 * WAL) is made once; each input damages a copy of it and opens it through the VFS:
 *   byte 0 % 6: 0 flip bits of the database file, 1 flip bits of the WAL (4 bytes per bit: a
 *   position), 2 replace a database page, 3 replace a WAL frame's image (byte 1 picks it, the rest
 *   repeated fills it), 4 the input is the whole database file (no WAL), 5 the input is the
 *   whole WAL.
 * The oracle: a read either fails with an I/O, corruption or not-a-database code (the store
 * reports these as STORAGE) or returns exactly one of the committed states (SQLite ends a WAL at
 * a frame whose checksum fails, which gives an earlier commit; never a mix, never altered rows).
 * A write after the read may fail with those codes only.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>
#include "cipher_vfs.h"

#define PAGE SS_CIPHER_PAGE_SIZE
#define FRAME (24 + PAGE)
#define STATES 4

static const char kKey[] = "x'000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f'";
static char dir[256], dbPath[300], walPath[310], shmPath[310];
static unsigned char *refDb, *refWal;
static size_t refDbSize, refWalSize;
static char *states[STATES];

static void die(const char *what, sqlite3 *db) {
    fprintf(stderr, "FUZZ ORACLE FAILED: %s%s%s\n", what, db ? ": " : "", db ? sqlite3_errmsg(db) : "");
    abort();
}

static unsigned char *readFile(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot read a reference file", NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) die("short read of a reference file", NULL);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static void writeFile(const char *path, const unsigned char *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size)) die("cannot write a scratch file", NULL);
    close(fd);
}

static sqlite3 *openStore(int64_t *keyId) {
    if (ss_cipher_key_create(dbPath, kKey, strlen(kKey), 1, keyId) != SS_CIPHER_OK) return NULL;
    char uri[400];
    snprintf(uri, sizeof uri, "file:%s?sskey=%lld", dbPath, (long long)*keyId);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, ss_cipher_vfs_name()) != SQLITE_OK) {
        sqlite3_close_v2(db);
        ss_cipher_key_release(*keyId);
        return NULL;
    }
    sqlite3_extended_result_codes(db, 1);
    int reserve = SS_CIPHER_RESERVE;
    sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve);
    sqlite3_exec(db, "PRAGMA temp_store=MEMORY", NULL, NULL, NULL);
    return db;
}

static void closeStore(sqlite3 *db, int64_t keyId) {
    sqlite3_close_v2(db);
    ss_cipher_key_release(keyId);
}

/* The table's rows as one text; NULL with *rc set when the read fails. */
static char *snapshot(sqlite3 *db, int *rc) {
    sqlite3_stmt *st = NULL;
    *rc = sqlite3_prepare_v2(db, "SELECT group_concat(id || ':' || v, ';') FROM (SELECT id, v FROM t ORDER BY id)", -1, &st, NULL);
    if (*rc != SQLITE_OK) return NULL;
    char *out = NULL;
    *rc = sqlite3_step(st);
    if (*rc == SQLITE_ROW) {
        const unsigned char *text = sqlite3_column_text(st, 0);
        out = strdup(text ? (const char *)text : "");
        *rc = SQLITE_OK;
    }
    int frc = sqlite3_finalize(st);
    if (*rc == SQLITE_OK && frc != SQLITE_OK) *rc = frc;
    if (*rc != SQLITE_OK) { free(out); out = NULL; }
    return out;
}

static void exec(sqlite3 *db, const char *sql) {
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) die(sql, db);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof dir, "%s/syncstore-fuzz-codec-XXXXXX", base);
    if (!mkdtemp(dir)) die("mkdtemp", NULL);
    snprintf(dbPath, sizeof dbPath, "%s/store.db", dir);
    snprintf(walPath, sizeof walPath, "%s-wal", dbPath);
    snprintf(shmPath, sizeof shmPath, "%s-shm", dbPath);
    if (ss_cipher_vfs_register() != SQLITE_OK) die("VFS registration", NULL);
    int64_t keyId;
    sqlite3 *db = openStore(&keyId);
    if (!db) die("cannot create the reference store", NULL);
    exec(db, "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"
             "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);"
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)"
             " INSERT INTO t SELECT i, printf('%.*c', 300 + i, 'a') FROM n;"
             "PRAGMA wal_checkpoint(TRUNCATE);");
    int rc;
    states[0] = snapshot(db, &rc);
    const char *commits[STATES - 1] = {
        "UPDATE t SET v = 'one' || v WHERE id % 3 = 0",
        /* One transaction: as two, the state between them is a committed state too (a long
         * run's first finding was this oracle missing it, not a codec bug). */
        "BEGIN; DELETE FROM t WHERE id > 35; INSERT INTO t VALUES (100, 'hundred'); COMMIT",
        "UPDATE t SET v = upper(v) WHERE id < 5",
    };
    for (int i = 0; i < STATES - 1; i++) {
        exec(db, commits[i]);
        states[i + 1] = snapshot(db, &rc);
    }
    /* Copies of the files as they are with the connection still open: the WAL holds the commits. */
    refDb = readFile(dbPath, &refDbSize);
    refWal = readFile(walPath, &refWalSize);
    if (refDbSize < 3 * PAGE || refWalSize < 32 + 3 * FRAME) die("reference store too small", NULL);
    closeStore(db, keyId);
    return 0;
}

static void flipBits(unsigned char *buf, size_t size, const uint8_t *data, size_t n) {
    for (size_t i = 0; i + 4 <= n && size > 0; i += 4) {
        uint32_t bit = (uint32_t)data[i] | (uint32_t)data[i + 1] << 8 | (uint32_t)data[i + 2] << 16 | (uint32_t)data[i + 3] << 24;
        bit %= (uint32_t)(size * 8);
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
}

static void fill(unsigned char *dst, size_t len, const uint8_t *data, size_t n) {
    for (size_t i = 0; i < len; i++) dst[i] = n ? data[i % n] : 0;
}

static int refused(int rc) {
    int primary = rc & 0xff;
    return primary == SQLITE_IOERR || primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int mode = data[0] % 6;
    unsigned char *db = malloc(refDbSize > size ? refDbSize : size), *wal = malloc(refWalSize > size ? refWalSize : size);
    size_t dbSize = refDbSize, walSize = refWalSize;
    memcpy(db, refDb, refDbSize);
    memcpy(wal, refWal, refWalSize);
    const uint8_t *rest = data + 1;
    size_t n = size - 1;
    switch (mode) {
    case 0: flipBits(db, dbSize, rest, n); break;
    case 1: flipBits(wal, walSize, rest, n); break;
    case 2: if (n) fill(db + (rest[0] % (dbSize / PAGE)) * PAGE, PAGE, rest + 1, n - 1); break;
    case 3: if (n) fill(wal + 32 + (rest[0] % ((walSize - 32) / FRAME)) * FRAME + 24, PAGE, rest + 1, n - 1); break;
    case 4: memcpy(db, rest, n); dbSize = n; walSize = 0; break;
    case 5: memcpy(wal, rest, n); walSize = n; break;
    }
    writeFile(dbPath, db, dbSize);
    writeFile(walPath, wal, walSize);
    unlink(shmPath);
    free(db);
    free(wal);

    int64_t keyId;
    sqlite3 *conn = openStore(&keyId);
    if (!conn) return 0; /* refused at open (damaged page 1, not a database): never data */
    int rc;
    char *seen = snapshot(conn, &rc);
    if (!seen) {
        /* An empty file is a new, empty store: it has no table t. */
        if (!refused(rc) && !(dbSize == 0 && rc == SQLITE_ERROR)) {
            fprintf(stderr, "read failed with %d (%s)\n", rc, sqlite3_errstr(rc));
            die("a damaged store failed with a code that is not STORAGE", conn);
        }
    } else {
        int known = 0;
        for (int i = 0; i < STATES; i++) known |= strcmp(seen, states[i]) == 0;
        /* The whole-file modes may hold an empty store (no table): that read fails above. */
        if (!known) die("a damaged store returned rows of no committed state", NULL);
        free(seen);
        rc = sqlite3_exec(conn, "UPDATE t SET v = v || 'x' WHERE id = 1", NULL, NULL, NULL);
        if (rc != SQLITE_OK && !refused(rc) && (rc & 0xff) != SQLITE_BUSY) {
            fprintf(stderr, "write failed with %d (%s)\n", rc, sqlite3_errstr(rc));
            die("a write to a damaged store failed with a code that is not STORAGE", conn);
        }
    }
    closeStore(conn, keyId);
    return 0;
}
