/*
 * cipher_vfs.h — encryption at rest for SyncStore stores, in SQLCipher 4's file format, as an
 * SQLite VFS over the system SQLite's default VFS (docs/encryption.md has the format and why).
 *
 * Not part of the public ABI: only the Swift core calls these. A store's key is made once per
 * store open (ss_cipher_key_create), registered under a number, and every connection of that
 * store opens the URI `file:<path>?sskey=<number>` with the VFS named by ss_cipher_vfs_name().
 * The database file, its WAL and its rollback journal then hold no plaintext page; temporary
 * files of such connections are encrypted with a throw-away key.
 */
#ifndef SYNCSTORE_CIPHER_VFS_H
#define SYNCSTORE_CIPHER_VFS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Results of ss_cipher_key_create and ss_cipher_probe. */
enum {
    SS_CIPHER_OK = 0,
    /** The key text is invalid (empty, bad raw-key form) or kdfIter < 1. */
    SS_CIPHER_BAD_KEY = 1,
    /** The file is a plaintext SQLite database. */
    SS_CIPHER_PLAINTEXT = 2,
    /** Page 1 failed its HMAC check with this key: wrong key, wrong kdfIter, or not a store. */
    SS_CIPHER_WRONG_KEY = 3,
    /** The file could not be read. */
    SS_CIPHER_IO = 4,
    /** OpenSSL failed (out of memory). */
    SS_CIPHER_CRYPTO = 5,
    /** The file does not exist or is empty (ss_cipher_probe). */
    SS_CIPHER_EMPTY = 6,
    /** The file is not a plaintext SQLite database (ss_cipher_probe): encrypted, or not a database. */
    SS_CIPHER_NOT_PLAINTEXT = 7,
    /** Page 1 failed its HMAC check but page 2 passed: the key is right, page 1 is damaged. */
    SS_CIPHER_DAMAGED = 8,
    /** Neither a plaintext SQLite file nor one that looks encrypted (ss_cipher_probe). */
    SS_CIPHER_NOT_A_DATABASE = 9,
};

/** SQLite's SQLITE_IOERR_DATA: what a read of a page that fails its HMAC check returns. */
enum { SS_CIPHER_IOERR_DATA = 10 | (32 << 8) };

/** Page size and reserved bytes per page of an encrypted store (SQLCipher 4 defaults). */
#define SS_CIPHER_PAGE_SIZE 4096
#define SS_CIPHER_RESERVE 80
#define SS_CIPHER_DEFAULT_KDF_ITER 256000

/** The library's process-wide SQLite settings (memory statistics off), made once before its
 *  first connection when SQLite is not initialized yet. Returns sqlite3_config's result code
 *  (SQLITE_MISUSE when the host initialized SQLite first: its settings stay). */
int ss_sqlite_configure(void);

/** Registers the VFS (idempotent, thread-safe). Returns an SQLite result code. */
int ss_cipher_vfs_register(void);

/** The VFS's name, for sqlite3_open_v2. */
const char *ss_cipher_vfs_name(void);

/** What the file at `path` is: SS_CIPHER_EMPTY, SS_CIPHER_PLAINTEXT, SS_CIPHER_NOT_PLAINTEXT
 *  (looks encrypted: a whole page of high-entropy bytes), SS_CIPHER_NOT_A_DATABASE or
 *  SS_CIPHER_IO. Reads the first page; never writes. */
int ss_cipher_probe(const char *path);

/**
 * Makes the key of the database at `path` and registers it; *out_id receives its number.
 * key: a passphrase (key_len bytes, any content), or x'<64 hex>' (the 32-byte key itself, no KDF)
 * or x'<96 hex>' (key then salt). kdf_iter: PBKDF2-HMAC-SHA512 iterations for a passphrase.
 * An existing, non-empty file gives its salt and must open with the key (page 1's HMAC is
 * checked); for a new file a random salt is drawn. The file is never written.
 * Returns SS_CIPHER_OK or another SS_CIPHER_* code.
 */
int ss_cipher_key_create(const char *path, const char *key, size_t key_len, int kdf_iter,
                         int64_t *out_id);

/** 1 when `key` and `kdf_iter` are the ones key `id` was made from, else 0. Cheap (no KDF). */
int ss_cipher_key_matches(int64_t id, const char *key, size_t key_len, int kdf_iter);

/** Unregisters a key. Its bytes are wiped once no open file uses them. Unknown ids are ignored. */
void ss_cipher_key_release(int64_t id);

#ifdef __cplusplus
}
#endif

#endif
