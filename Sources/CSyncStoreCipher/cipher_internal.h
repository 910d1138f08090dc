/*
 * What the page codec's files share (not a public header: include/cipher_vfs.h is the module's).
 * The format is described at the top of cipher_vfs.c and in docs/encryption.md.
 *
 *   cipher_keys.c    the key registry and each key's page cache
 *   cipher_crypto.c  a page's encryption and HMAC, and the key derivation
 *   cipher_probe.c   what a file is, and making the key of a store (checked on its page 1)
 *   cipher_wal.c     where page images sit in the database and the WAL, and WAL batches
 *   cipher_pool.c    the encoder thread that encodes a batch beside the writing thread
 *   cipher_vfs.c     the VFS: files opened through it, and the calls passed to the default VFS
 *
 * Everything declared here is hidden: the library exports only syncstore_* (exports.map), and
 * hidden symbols also keep the calls between these files direct.
 */
#ifndef SYNCSTORE_CIPHER_INTERNAL_H
#define SYNCSTORE_CIPHER_INTERNAL_H

#include "cipher_vfs.h"

#include <pthread.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <sqlite3.h>

#define PAGE SS_CIPHER_PAGE_SIZE
#define RESERVE SS_CIPHER_RESERVE
#define IV_SIZE 16
#define HMAC_SIZE 64
#define KEY_SIZE 32
#define SALT_SIZE 16
#define WAL_HEADER 32
#define WAL_FRAME_HEADER 24
#define WAL_FRAME (WAL_FRAME_HEADER + PAGE)
#define JOURNAL_RECORD (4 + PAGE + 4)
/* The page cache (cipher_keys.c): 16384 pages (64 MB of plaintext) a store; calloc leaves
 * untouched slots to the OS, so a store smaller than that costs about its own size, and only for
 * the pages read. */
#define CACHE_SLOTS 16384
#define RECENT_IMAGES 8
#define CACHE_LOCKS 64
/* WAL batches (cipher_wal.c): frames kept before they are written, and the most one write takes. */
#define WAL_BATCH 64
#define WAL_WRITE_MAX ((size_t)31 * WAL_FRAME)

#pragma GCC visibility push(hidden)

/* "SQLite format 3\0": the first 16 bytes of a plaintext database (the salt's place when encrypted). */
extern const unsigned char cipher_sqlite_header[16];

/* ------------------------------------------------------------------------------------------
 * Keys (cipher_keys.c): registered by number; files hold a reference, so a store can close while
 * SQLite still finishes with a file (the bytes are wiped when the last user lets go).
 * ---------------------------------------------------------------------------------------- */

typedef struct CachedPage {
    uint32_t pgno;
    unsigned char tail[RESERVE]; /* the image's IV and HMAC */
    unsigned char plain[PAGE];
} CachedPage;

typedef struct CipherKey {
    int64_t id;
    int refs;
    struct CipherKey *next;
    unsigned char key[KEY_SIZE];
    unsigned char hmacKey[KEY_SIZE];
    unsigned char salt[SALT_SIZE];
    /* Identifies the key text and kdfIter it was made from (see cipher_key_digest). */
    unsigned char digest[32];
    /* Pages this key encoded or decoded lately, shared by every connection of the store. */
    /* Striped by slot (8 neighbouring slots, one byte of cacheUsed, share a lock): the writing
     * thread and the encoder thread encode pages side by side. recentLock guards `recent`. */
    pthread_mutex_t cacheLocks[CACHE_LOCKS];
    pthread_mutex_t recentLock;
    struct CachedPage *cache;
    unsigned char cacheUsed[CACHE_SLOTS / 8]; /* which slots hold a page */
    /* The last WAL images read, whole: what a checkpoint writes into the database next. */
    struct { uint32_t pgno; unsigned char image[PAGE]; } recent[RECENT_IMAGES];
    int recentNext;
} CipherKey;

/* The key registered as `id`, with a reference the caller lets go with cipher_key_unref; NULL
 * when there is none. */
CipherKey *cipher_key_lookup(int64_t id);
void cipher_key_unref(CipherKey *k);
/* Gives `k` (made and checked by ss_cipher_key_create) its page cache and a number, and
 * registers it with one reference; returns the number. */
int64_t cipher_key_register(CipherKey *k);
/* HMAC-SHA256 of the key text and kdfIter under a secret of the process: 1 when made. */
int cipher_key_digest(const char *key, size_t len, int kdfIter, unsigned char out[32]);

/* ------------------------------------------------------------------------------------------
 * The page codec (cipher_crypto.c)
 * ---------------------------------------------------------------------------------------- */

/* Per-file crypto state: contexts keyed once, re-armed with an IV per page. One file handle is
 * used by one thread at a time (SQLite's connection), so this needs no lock. */
typedef struct Codec {
    CipherKey *key;
    EVP_CIPHER_CTX *enc;
    EVP_CIPHER_CTX *dec;
    EVP_MAC_CTX *mac;
    /* Random IVs drawn 64 at a time (one RAND_bytes call each 64 page writes). */
    unsigned char ivs[IV_SIZE * 64];
    int ivsLeft;
} Codec;

int cipher_codec_init(Codec *c, CipherKey *key);
void cipher_codec_free(Codec *c);
/* Encrypts a plaintext page in place (`first`: the database file's page 1, which carries the salt). */
int cipher_encode_page(Codec *c, unsigned char *page, uint32_t pgno, int first);
/* Checks and decrypts a page in place; the reserved bytes come back as zeros. */
int cipher_decode_page(Codec *c, unsigned char *page, uint32_t pgno, int first);
/* Encrypts a plaintext page (not page 1) in place under the IV in `tail`, which it then carries. */
int cipher_encrypt_under(Codec *c, unsigned char *page, const unsigned char tail[RESERVE]);
/* The key, salt and HMAC key of `k` from the key text (`page`: the file's first bytes when
 * `existing`, for its salt). Returns SS_CIPHER_OK or another SS_CIPHER_* code. */
int cipher_derive_keys(CipherKey *k, const char *key, size_t key_len, int kdf_iter, const unsigned char *page,
                       int existing);

/* Through the page cache (cipher_keys.c): decodes the image in `page` in place (`wal`: it was
 * read from the WAL), or encodes the plaintext in `page` in place; `copy` is a page of scratch
 * owned by the calling thread. */
int cipher_decode_cached(Codec *c, unsigned char *copy, unsigned char *page, uint32_t pgno, int first, int wal);
int cipher_encode_cached(Codec *c, unsigned char *copy, unsigned char *page, uint32_t pgno, int first);

/* ------------------------------------------------------------------------------------------
 * Files opened through the VFS (cipher_vfs.c)
 * ---------------------------------------------------------------------------------------- */

enum FileKind { KIND_PLAIN, KIND_MAIN, KIND_WAL, KIND_JOURNAL, KIND_TEMP };

typedef struct CipherFile {
    sqlite3_file base;
    sqlite3_file *real;
    enum FileKind kind;
    Codec codec;
    unsigned char *scratch;
    size_t scratchSize;
    /* A page's other form while it is encoded or decoded (for the page cache). */
    unsigned char copy[PAGE];
    /* KIND_WAL: the frame header this file wrote last (SQLite writes it just before the page). */
    sqlite3_int64 lastHeaderAt;
    uint32_t lastHeaderPgno;
    /* KIND_WAL: frames appended and not written yet (see WAL batches): `batchFrames` whole ones
     * from file offset `batchAt`, then the header of the next when `batchHeaderOnly`. */
    unsigned char *batch;
    sqlite3_int64 batchAt;
    int batchFrames;
    int batchHeaderOnly;
    /* The encoder thread's contexts for this file's batches (keyed on first use). */
    Codec helperCodec;
    /* KIND_TEMP: AES-256-CTR under a key that lives as long as the file. */
    EVP_CIPHER_CTX *stream;
    unsigned char streamKey[KEY_SIZE];
    unsigned char streamNonce[8];
} CipherFile;

static inline uint32_t cipher_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* ------------------------------------------------------------------------------------------
 * Where page images sit, and WAL batches (cipher_wal.c)
 * ---------------------------------------------------------------------------------------- */

int cipher_page_at(const CipherFile *f, sqlite3_int64 offset, sqlite3_int64 *start);
sqlite3_int64 cipher_plain_run_end(sqlite3_int64 offset, sqlite3_int64 end);
uint32_t cipher_image_pgno(CipherFile *f, sqlite3_int64 start, const unsigned char *buf, sqlite3_int64 bufAt,
                           sqlite3_int64 bufLen, int writing);
int cipher_wal_frame_may_be_torn(CipherFile *f, const unsigned char *header, sqlite3_int64 frameStart);
int cipher_wal_flush(CipherFile *f);
int cipher_wal_batch_write(CipherFile *f, const unsigned char *in, int amt, sqlite3_int64 offset, int *rc);

/* The encoder thread (cipher_pool.c): encodes the pages of `count` frames in place; SQLITE_OK or
 * the first failure. */
int cipher_encode_frames(CipherFile *f, unsigned char *frames, int count);

#pragma GCC visibility pop

#endif
