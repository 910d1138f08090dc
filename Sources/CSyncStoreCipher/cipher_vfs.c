/*
 * The page codec of encrypted stores: SQLCipher 4's file format (docs/encryption.md), written as
 * a VFS shim over the system SQLite's default VFS, so the process keeps one SQLite library.
 *
 * Page N of P = 4096 bytes, R = 80 reserved bytes (SQLite never writes them):
 *   [0, P-R)          AES-256-CBC ciphertext of the plaintext page (page 1: from byte 16; its
 *                     first 16 bytes hold the file's salt instead of "SQLite format 3\0")
 *   [P-R, P-R+16)     the IV, random for every write
 *   [P-R+16, P)       HMAC-SHA512(hmac key, ciphertext || IV || N as 4 bytes little-endian)
 * The HMAC is checked before decrypting; a mismatch is SQLITE_IOERR_DATA, never data.
 *
 * The WAL keeps SQLite's own header and frame headers; each frame's page image is encoded as
 * above with the page number of its frame header (always without the salt: that is the database
 * file's page 1 only), so a checkpoint can copy it into the database as it is (see the page
 * cache). Decrypted pages always carry zeros in the reserved bytes, so the WAL's checksums (which
 * SQLite computes over the pages it hands over) hold when the log is read back.
 * The rollback journal (SQLite writes one while a store switches to or from WAL mode, and for
 * the copy a change of key writes) has its page images encoded the same way with N = 0. Temporary files are encrypted with AES-256-CTR
 * under a key drawn when the file opens and lost when it closes.
 */
#include "cipher_vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
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
/* The page cache (below): 16384 pages (64 MB of plaintext) a store; calloc leaves untouched slots
 * to the OS, so a store smaller than that costs about its own size, and only for the pages read. */
#define CACHE_SLOTS 16384
#define RECENT_IMAGES 8
#define CACHE_LOCKS 64

static const char kVfsName[] = "syncstore-cipher";
static const unsigned char kSqliteHeader[16] = "SQLite format 3";

/* ------------------------------------------------------------------------------------------
 * Keys: registered by number; files hold a reference, so a store can close while SQLite still
 * finishes with a file (the bytes are wiped when the last user lets go).
 * ---------------------------------------------------------------------------------------- */

typedef struct CipherKey {
    int64_t id;
    int refs;
    struct CipherKey *next;
    unsigned char key[KEY_SIZE];
    unsigned char hmacKey[KEY_SIZE];
    unsigned char salt[SALT_SIZE];
    /* Identifies the key text and kdfIter it was made from (see keyDigest). */
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

/* ------------------------------------------------------------------------------------------
 * The page cache: the codec's work is the cost of encryption (an HMAC-SHA512 of every page read
 * and written, AES-CBC of every page written), and SQLite repeats it: it reads back the WAL
 * frames it just wrote, a checkpoint reads each frame and writes the same page into the
 * database, each connection (the writer, the pooled readers) has its own page cache, and a store
 * larger than those caches reads its pages again and again. So each store keeps the plaintext of
 * its pages with the IV and HMAC of the image it came from (or went to), by page number:
 *   - a read whose image carries the cached IV and HMAC gets the cached plaintext without a
 *     check or decryption. IVs are random for every page written, so a legitimate image with
 *     these bytes is the cached image; an image damaged on disk after it was checked is served
 *     from the cache as it was (as SQLite's own page cache would), and reported as soon as it is
 *     read while not cached (after an eviction, or in any other store handle or process);
 *   - a write of the cached plaintext writes the cached image again (an image is bound to its
 *     page number only, in the database and in the WAL alike): copied when it is one of the last
 *     WAL images read (a checkpoint reads each frame, then writes it into the database), else
 *     encrypted under the cached IV, with the cached HMAC.
 * Page 1 stays out of it (its image in the database carries the salt, in the WAL not).
 * ---------------------------------------------------------------------------------------- */

typedef struct CachedPage {
    uint32_t pgno;
    unsigned char tail[RESERVE]; /* the image's IV and HMAC */
    unsigned char plain[PAGE];
} CachedPage;

static pthread_mutex_t *slotLock(CipherKey *k, uint32_t slot) { return &k->cacheLocks[(slot / 8) % CACHE_LOCKS]; }

/* With the slot's lock held: whether the slot holds a page. Checked before the slot is read:
 * reading an untouched slot would map the zero page, and the first write then costs a
 * copy-on-write fault that stops every thread of the process to flush its TLB. */
static int slotUsed(CipherKey *k, uint32_t slot) { return k->cacheUsed[slot / 8] & (1u << (slot % 8)); }

/* `page` holds an image read from disk: replaced by its plaintext when the cache has it. */
static int cacheDecode(CipherKey *k, uint32_t pgno, unsigned char *page) {
    if (!k->cache || pgno <= 1) return 0;
    uint32_t i = pgno % CACHE_SLOTS;
    CachedPage *slot = &k->cache[i];
    pthread_mutex_lock(slotLock(k, i));
    int hit = slotUsed(k, i) && slot->pgno == pgno && memcmp(slot->tail, page + PAGE - RESERVE, RESERVE) == 0;
    if (hit) memcpy(page, slot->plain, PAGE);
    pthread_mutex_unlock(slotLock(k, i));
    return hit;
}

/* `page` holds plaintext to write: 1 and the IV and HMAC of its cached image in `tail` when the
 * cache has it. */
static int cacheEncode(CipherKey *k, uint32_t pgno, const unsigned char *page, unsigned char tail[RESERVE]) {
    if (!k->cache || pgno <= 1) return 0;
    uint32_t i = pgno % CACHE_SLOTS;
    CachedPage *slot = &k->cache[i];
    pthread_mutex_lock(slotLock(k, i));
    int hit = slotUsed(k, i) && slot->pgno == pgno && memcmp(slot->plain, page, PAGE) == 0;
    if (hit) memcpy(tail, slot->tail, RESERVE);
    pthread_mutex_unlock(slotLock(k, i));
    return hit;
}

/* Remembers a WAL image about to be decoded: a checkpoint reads each frame and then writes the
 * same page into the database, which then costs a copy rather than an encryption. */
static void recentPut(CipherKey *k, uint32_t pgno, const unsigned char *image) {
    if (pgno <= 1) return;
    pthread_mutex_lock(&k->recentLock);
    k->recent[k->recentNext].pgno = pgno;
    memcpy(k->recent[k->recentNext].image, image, PAGE);
    k->recentNext = (k->recentNext + 1) % RECENT_IMAGES;
    pthread_mutex_unlock(&k->recentLock);
}

/* Copies into `page` the remembered image of `pgno` that carries `tail` (its IV and HMAC): 1 if
 * there is one. */
static int recentGet(CipherKey *k, uint32_t pgno, const unsigned char tail[RESERVE], unsigned char *page) {
    int hit = 0;
    pthread_mutex_lock(&k->recentLock);
    for (int i = 0; i < RECENT_IMAGES && !hit; i++) {
        hit = k->recent[i].pgno == pgno && memcmp(k->recent[i].image + PAGE - RESERVE, tail, RESERVE) == 0;
        if (hit) memcpy(page, k->recent[i].image, PAGE);
    }
    pthread_mutex_unlock(&k->recentLock);
    return hit;
}

static void cachePut(CipherKey *k, uint32_t pgno, const unsigned char *image, const unsigned char *plain) {
    if (!k->cache || pgno <= 1) return;
    uint32_t i = pgno % CACHE_SLOTS;
    CachedPage *slot = &k->cache[i];
    pthread_mutex_lock(slotLock(k, i));
    slot->pgno = pgno;
    memcpy(slot->tail, image + PAGE - RESERVE, RESERVE);
    memcpy(slot->plain, plain, PAGE);
    k->cacheUsed[i / 8] |= (unsigned char)(1u << (i % 8));
    pthread_mutex_unlock(slotLock(k, i));
}

static void keyFree(CipherKey *k) {
    if (k->cache) {
        /* Only the slots in use: the others were never touched (nor given memory by the OS). */
        for (int i = 0; i < CACHE_SLOTS; i++)
            if (k->cacheUsed[i / 8] & (1u << (i % 8))) OPENSSL_cleanse(&k->cache[i], sizeof(CachedPage));
        free(k->cache);
        for (int i = 0; i < CACHE_LOCKS; i++) pthread_mutex_destroy(&k->cacheLocks[i]);
        pthread_mutex_destroy(&k->recentLock);
    }
    OPENSSL_cleanse(k, sizeof *k);
    free(k);
}

static pthread_mutex_t keysLock = PTHREAD_MUTEX_INITIALIZER;
static CipherKey *keys;
static int64_t nextKeyId = 1;

static void keyUnref(CipherKey *k) {
    pthread_mutex_lock(&keysLock);
    int last = --k->refs == 0;
    pthread_mutex_unlock(&keysLock);
    if (last) keyFree(k);
}

static CipherKey *keyLookup(int64_t id) {
    pthread_mutex_lock(&keysLock);
    CipherKey *k = keys;
    while (k && k->id != id) k = k->next;
    if (k) k->refs++;
    pthread_mutex_unlock(&keysLock);
    return k;
}

/* HMAC-SHA256 of the key text and kdfIter under a secret drawn once per process: a second
 * handle's key can be compared without running the KDF again and without keeping the text. */
static unsigned char processSecret[32];
static int processSecretOk;
static void drawSecret(void) { processSecretOk = RAND_bytes(processSecret, sizeof processSecret) == 1; }

static int keyDigest(const char *key, size_t len, int kdfIter, unsigned char out[32]) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, drawSecret);
    if (!processSecretOk) return 0;
    unsigned char iter[4] = {(unsigned char)kdfIter, (unsigned char)(kdfIter >> 8), (unsigned char)(kdfIter >> 16),
                             (unsigned char)(kdfIter >> 24)};
    unsigned char *text = malloc(len + 4);
    if (!text) return 0;
    memcpy(text, key, len);
    memcpy(text + len, iter, 4);
    unsigned int outLen = 0;
    int ok = HMAC(EVP_sha256(), processSecret, sizeof processSecret, text, len + 4, out, &outLen) != NULL;
    OPENSSL_cleanse(text, len + 4);
    free(text);
    return ok && outLen == 32;
}

int ss_cipher_key_matches(int64_t id, const char *key, size_t key_len, int kdf_iter) {
    unsigned char digest[32];
    if (!key || !keyDigest(key, key_len, kdf_iter, digest)) return 0;
    CipherKey *k = keyLookup(id);
    if (!k) return 0;
    int same = CRYPTO_memcmp(digest, k->digest, sizeof digest) == 0;
    keyUnref(k);
    return same;
}

void ss_cipher_key_release(int64_t id) {
    pthread_mutex_lock(&keysLock);
    CipherKey **p = &keys;
    while (*p && (*p)->id != id) p = &(*p)->next;
    CipherKey *k = *p;
    if (k) *p = k->next;
    pthread_mutex_unlock(&keysLock);
    if (k) keyUnref(k);
}

/* ------------------------------------------------------------------------------------------
 * The page codec
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

static EVP_MAC *hmacAlg;
static void fetchHmac(void) { hmacAlg = EVP_MAC_fetch(NULL, "HMAC", NULL); }

static EVP_MAC *hmacAlgorithm(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fetchHmac);
    return hmacAlg;
}

static void codecFree(Codec *c) {
    OPENSSL_cleanse(c->ivs, sizeof c->ivs);
    c->ivsLeft = 0;
    EVP_CIPHER_CTX_free(c->enc);
    EVP_CIPHER_CTX_free(c->dec);
    EVP_MAC_CTX_free(c->mac);
    c->enc = c->dec = NULL;
    c->mac = NULL;
}

static int codecInit(Codec *c, CipherKey *key) {
    c->key = key;
    c->enc = EVP_CIPHER_CTX_new();
    c->dec = EVP_CIPHER_CTX_new();
    EVP_MAC *alg = hmacAlgorithm();
    c->mac = alg ? EVP_MAC_CTX_new(alg) : NULL;
    if (!c->enc || !c->dec || !c->mac) goto fail;
    if (EVP_EncryptInit_ex(c->enc, EVP_aes_256_cbc(), NULL, key->key, NULL) != 1) goto fail;
    if (EVP_DecryptInit_ex(c->dec, EVP_aes_256_cbc(), NULL, key->key, NULL) != 1) goto fail;
    EVP_CIPHER_CTX_set_padding(c->enc, 0);
    EVP_CIPHER_CTX_set_padding(c->dec, 0);
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA512", 0),
                           OSSL_PARAM_construct_end()};
    if (EVP_MAC_init(c->mac, key->hmacKey, KEY_SIZE, params) != 1) goto fail;
    return 1;
fail:
    codecFree(c);
    return 0;
}

/* HMAC-SHA512 over the ciphertext and IV (contiguous in the page) and the page number. `first`:
 * the layout of the database file's page 1, whose first 16 bytes hold the salt. */
static int pageMac(Codec *c, const unsigned char *page, uint32_t pgno, int first, unsigned char out[HMAC_SIZE]) {
    size_t start = first ? SALT_SIZE : 0;
    unsigned char n[4] = {(unsigned char)pgno, (unsigned char)(pgno >> 8), (unsigned char)(pgno >> 16),
                          (unsigned char)(pgno >> 24)};
    size_t len = 0;
    return EVP_MAC_init(c->mac, NULL, 0, NULL) == 1
        && EVP_MAC_update(c->mac, page + start, PAGE - RESERVE + IV_SIZE - start) == 1
        && EVP_MAC_update(c->mac, n, 4) == 1
        && EVP_MAC_final(c->mac, out, &len, HMAC_SIZE) == 1 && len == HMAC_SIZE;
}

/* Encrypts a plaintext page in place. Page 1 must say page size 4096 and 80 reserved bytes:
 * anything else would put SQLite's data where the IV and HMAC go, so it is refused. */
static int encodePage(Codec *c, unsigned char *page, uint32_t pgno, int first) {
    size_t start = first ? SALT_SIZE : 0;
    if (first && (page[16] != (PAGE >> 8) || page[17] != (PAGE & 0xff) || page[20] != RESERVE)) {
        sqlite3_log(SQLITE_IOERR_WRITE, "syncstore-cipher: page 1 without 80 reserved bytes refused");
        return SQLITE_IOERR_WRITE;
    }
    unsigned char *iv = page + PAGE - RESERVE;
    if (c->ivsLeft == 0) {
        if (RAND_bytes(c->ivs, sizeof c->ivs) != 1) return SQLITE_IOERR_WRITE;
        c->ivsLeft = (int)(sizeof c->ivs / IV_SIZE);
    }
    c->ivsLeft--;
    memcpy(iv, c->ivs + c->ivsLeft * IV_SIZE, IV_SIZE);
    OPENSSL_cleanse(c->ivs + c->ivsLeft * IV_SIZE, IV_SIZE);
    int outl = 0, finl = 0;
    int len = (int)(PAGE - RESERVE - start);
    if (EVP_EncryptInit_ex(c->enc, NULL, NULL, NULL, iv) != 1
        || EVP_EncryptUpdate(c->enc, page + start, &outl, page + start, len) != 1
        || EVP_EncryptFinal_ex(c->enc, page + start + outl, &finl) != 1 || outl + finl != len)
        return SQLITE_IOERR_WRITE;
    if (!pageMac(c, page, pgno, first, iv + IV_SIZE)) return SQLITE_IOERR_WRITE;
    if (first) memcpy(page, c->key->salt, SALT_SIZE);
    return SQLITE_OK;
}

/* Checks and decrypts a page in place; the reserved bytes come back as zeros. */
static int decodePage(Codec *c, unsigned char *page, uint32_t pgno, int first) {
    size_t start = first ? SALT_SIZE : 0;
    unsigned char mac[HMAC_SIZE];
    unsigned char iv[IV_SIZE];
    if (!pageMac(c, page, pgno, first, mac)) return SQLITE_IOERR_READ;
    if (CRYPTO_memcmp(mac, page + PAGE - RESERVE + IV_SIZE, HMAC_SIZE) != 0) {
        sqlite3_log(SQLITE_IOERR_DATA, "syncstore-cipher: page %u failed its HMAC check", pgno);
        return SQLITE_IOERR_DATA;
    }
    memcpy(iv, page + PAGE - RESERVE, IV_SIZE);
    int outl = 0, finl = 0;
    int len = (int)(PAGE - RESERVE - start);
    if (EVP_DecryptInit_ex(c->dec, NULL, NULL, NULL, iv) != 1
        || EVP_DecryptUpdate(c->dec, page + start, &outl, page + start, len) != 1
        || EVP_DecryptFinal_ex(c->dec, page + start + outl, &finl) != 1 || outl + finl != len)
        return SQLITE_IOERR_READ;
    memset(page + PAGE - RESERVE, 0, RESERVE);
    if (first) memcpy(page, kSqliteHeader, SALT_SIZE);
    return SQLITE_OK;
}

/* Encrypts a plaintext page (not page 1) in place under the IV in `tail` and puts `tail` (that
 * IV and the HMAC of the image it gives) in its reserved bytes: an image written before again. */
static int encryptUnder(Codec *c, unsigned char *page, const unsigned char tail[RESERVE]) {
    int outl = 0, finl = 0;
    int len = PAGE - RESERVE;
    if (EVP_EncryptInit_ex(c->enc, NULL, NULL, NULL, tail) != 1
        || EVP_EncryptUpdate(c->enc, page, &outl, page, len) != 1
        || EVP_EncryptFinal_ex(c->enc, page + outl, &finl) != 1 || outl + finl != len)
        return SQLITE_IOERR_WRITE;
    memcpy(page + PAGE - RESERVE, tail, RESERVE);
    return SQLITE_OK;
}

/* ------------------------------------------------------------------------------------------
 * Key derivation
 * ---------------------------------------------------------------------------------------- */

static int hexValue(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* x'<hex>' with `bytes` bytes of hex; 1 when `key` has that form. */
static int parseRawKey(const char *key, size_t len, unsigned char *out, size_t bytes) {
    if (len != bytes * 2 + 3 || (key[0] != 'x' && key[0] != 'X') || key[1] != '\'' || key[len - 1] != '\'') return 0;
    for (size_t i = 0; i < bytes; i++) {
        int hi = hexValue(key[2 + 2 * i]), lo = hexValue(key[3 + 2 * i]);
        if (hi < 0 || lo < 0) return 0;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 1;
}

static int readFully(int fd, unsigned char *buf, size_t len, off_t offset, size_t *got) {
    *got = 0;
    while (*got < len) {
        ssize_t n = pread(fd, buf + *got, len - *got, offset + (off_t)*got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return 0;
        if (n == 0) break;
        *got += (size_t)n;
    }
    return 1;
}

/* An encrypted page 1 is a salt and ciphertext: nearly every byte value occurs in it. */
static int looksEncrypted(const unsigned char *page, size_t got) {
    int seen[256] = {0}, distinct = 0;
    for (size_t i = 0; i < got; i++)
        if (!seen[page[i]]++) distinct++;
    return got >= PAGE && distinct >= 200;
}

int ss_cipher_probe(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? SS_CIPHER_EMPTY : SS_CIPHER_IO;
    unsigned char *page = malloc(PAGE);
    size_t got = 0;
    int ok = page && readFully(fd, page, PAGE, 0, &got);
    close(fd);
    int rc;
    if (!ok) rc = SS_CIPHER_IO;
    else if (got == 0) rc = SS_CIPHER_EMPTY;
    else if (got >= 16 && memcmp(page, kSqliteHeader, 16) == 0) rc = SS_CIPHER_PLAINTEXT;
    else rc = looksEncrypted(page, got) ? SS_CIPHER_NOT_PLAINTEXT : SS_CIPHER_NOT_A_DATABASE;
    free(page);
    return rc;
}

int ss_cipher_key_create(const char *path, const char *key, size_t key_len, int kdf_iter, int64_t *out_id) {
    *out_id = 0;
    if (!key || key_len == 0 || kdf_iter < 1) return SS_CIPHER_BAD_KEY;
    CipherKey *k = calloc(1, sizeof *k);
    unsigned char *page = malloc(2 * PAGE);
    int rc = SS_CIPHER_OK;
    if (!k || !page) { rc = SS_CIPHER_CRYPTO; goto done; }

    /* The salt: the file's first 16 bytes, or new. */
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno != ENOENT) { rc = SS_CIPHER_IO; goto done; }
    if (fd >= 0) {
        int ok = readFully(fd, page, 2 * PAGE, 0, &got);
        close(fd);
        if (!ok) { rc = SS_CIPHER_IO; goto done; }
    }
    int existing = got > 0;
    if (existing && got >= 16 && memcmp(page, kSqliteHeader, 16) == 0) { rc = SS_CIPHER_PLAINTEXT; goto done; }
    if (existing && !looksEncrypted(page, got < PAGE ? got : PAGE)) { rc = SS_CIPHER_NOT_A_DATABASE; goto done; }

    unsigned char raw[KEY_SIZE + SALT_SIZE];
    if (parseRawKey(key, key_len, raw, KEY_SIZE + SALT_SIZE)) {
        memcpy(k->key, raw, KEY_SIZE);
        memcpy(k->salt, raw + KEY_SIZE, SALT_SIZE);
        if (existing && memcmp(page, k->salt, SALT_SIZE) != 0) { rc = SS_CIPHER_WRONG_KEY; }
    } else {
        if (existing) memcpy(k->salt, page, SALT_SIZE);
        else if (RAND_bytes(k->salt, SALT_SIZE) != 1) { rc = SS_CIPHER_CRYPTO; goto wipe; }
        if (parseRawKey(key, key_len, raw, KEY_SIZE)) {
            memcpy(k->key, raw, KEY_SIZE);
        } else if (PKCS5_PBKDF2_HMAC(key, (int)key_len, k->salt, SALT_SIZE, kdf_iter, EVP_sha512(), KEY_SIZE,
                                     k->key) != 1) {
            rc = SS_CIPHER_CRYPTO;
        }
    }
    OPENSSL_cleanse(raw, sizeof raw);
    if (rc != SS_CIPHER_OK) goto wipe;

    /* The HMAC key, as SQLCipher derives it: 2 iterations over the salt XOR 0x3a. */
    unsigned char macSalt[SALT_SIZE];
    for (int i = 0; i < SALT_SIZE; i++) macSalt[i] = k->salt[i] ^ 0x3a;
    if (PKCS5_PBKDF2_HMAC((const char *)k->key, KEY_SIZE, macSalt, SALT_SIZE, 2, EVP_sha512(), KEY_SIZE,
                          k->hmacKey) != 1) { rc = SS_CIPHER_CRYPTO; goto wipe; }

    if (!keyDigest(key, key_len, kdf_iter, k->digest)) { rc = SS_CIPHER_CRYPTO; goto wipe; }

    if (existing) {
        Codec c = {0};
        if (!codecInit(&c, k)) { rc = SS_CIPHER_CRYPTO; goto wipe; }
        int drc = decodePage(&c, page, 1, 1);
        /* Page 1 that fails while page 2 passes: the key is right and page 1 is damaged. */
        int second = drc != SQLITE_OK && got >= 2 * PAGE && decodePage(&c, page + PAGE, 2, 0) == SQLITE_OK;
        codecFree(&c);
        /* A page 1 that decrypts must also be a page of the layout this codec writes. */
        if (second) rc = SS_CIPHER_DAMAGED;
        else if (drc != SQLITE_OK || page[16] != (PAGE >> 8) || page[17] != (PAGE & 0xff) || page[20] != RESERVE)
            rc = SS_CIPHER_WRONG_KEY;
    }
    if (rc != SS_CIPHER_OK) goto wipe;

    k->cache = calloc(CACHE_SLOTS, sizeof(CachedPage)); /* none: slower, still correct */
    if (k->cache) {
        for (int i = 0; i < CACHE_LOCKS; i++) pthread_mutex_init(&k->cacheLocks[i], NULL);
        pthread_mutex_init(&k->recentLock, NULL);
    }
    pthread_mutex_lock(&keysLock);
    k->id = nextKeyId++;
    k->refs = 1;
    k->next = keys;
    keys = k;
    *out_id = k->id;
    pthread_mutex_unlock(&keysLock);
    k = NULL;
    goto done;
wipe:
    OPENSSL_cleanse(k, sizeof *k);
done:
    if (page) {
        OPENSSL_cleanse(page, 2 * PAGE);
        free(page);
    }
    free(k);
    return rc;
}

/* ------------------------------------------------------------------------------------------
 * The VFS
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

static sqlite3_vfs cipherVfs;
static sqlite3_vfs *baseVfs;
static const sqlite3_io_methods cipherMethods;

static unsigned char *scratch(CipherFile *f, size_t size) {
    if (f->scratchSize < size) {
        unsigned char *p = realloc(f->scratch, size);
        if (!p) return NULL;
        f->scratch = p;
        f->scratchSize = size;
    }
    return f->scratch;
}

/* Where page images sit in a file: 1 and the start of the image holding the byte at `offset`. */
static int pageAt(const CipherFile *f, sqlite3_int64 offset, sqlite3_int64 *start) {
    switch (f->kind) {
    case KIND_MAIN:
        *start = offset - offset % PAGE;
        return 1;
    case KIND_WAL: {
        if (offset < WAL_HEADER) return 0;
        sqlite3_int64 frameStart = WAL_HEADER + (offset - WAL_HEADER) / WAL_FRAME * WAL_FRAME;
        if (offset < frameStart + WAL_FRAME_HEADER) return 0;
        *start = frameStart + WAL_FRAME_HEADER;
        return 1;
    }
    default:
        return 0;
    }
}

/* The extent of the non-page bytes at `offset` (WAL headers), up to `end`. */
static sqlite3_int64 plainRunEnd(sqlite3_int64 offset, sqlite3_int64 end) {
    sqlite3_int64 stop = WAL_HEADER;
    if (offset >= WAL_HEADER) stop = WAL_HEADER + (offset - WAL_HEADER) / WAL_FRAME * WAL_FRAME + WAL_FRAME_HEADER;
    return stop < end ? stop : end;
}

static uint32_t bigEndian32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The database page number of the image at `start`: from its offset in the database file; in
 * the WAL from the frame header before it, found in `buf` (the bytes at `bufAt`, `bufLen` long)
 * when it is there, else (`writing`) the header this file wrote just before, else read from the
 * file (another connection may have written the frame since). */
static uint32_t imagePageNumber(CipherFile *f, sqlite3_int64 start, const unsigned char *buf, sqlite3_int64 bufAt,
                                sqlite3_int64 bufLen, int writing) {
    if (f->kind == KIND_MAIN) return (uint32_t)(start / PAGE + 1);
    sqlite3_int64 header = start - WAL_FRAME_HEADER;
    if (buf && header >= bufAt && header + 4 <= bufAt + bufLen) return bigEndian32(buf + (header - bufAt));
    if (writing && header == f->lastHeaderAt) return f->lastHeaderPgno;
    unsigned char n[4];
    if (f->real->pMethods->xRead(f->real, n, 4, header) != SQLITE_OK) return 0; /* fails the HMAC check */
    return bigEndian32(n);
}

/* A WAL frame whose page fails its HMAC check while SQLite reads the whole frame (recovery):
 * torn rather than damaged when its header is not of the log's current generation (SQLite drops
 * it by its salts) or when it is the generation's last frame (a crash between the header and the
 * page: the image there is an older one, bound to another page). A bad frame followed by one of
 * the same generation was written whole before the next: damaged, an error. */
static int walFrameMayBeTorn(CipherFile *f, const unsigned char *header, sqlite3_int64 frameStart) {
    unsigned char walSalts[8], next[16];
    if (f->real->pMethods->xRead(f->real, walSalts, 8, 16) != SQLITE_OK) return 1;
    if (memcmp(walSalts, header + 8, 8) != 0) return 1;
    int rc = f->real->pMethods->xRead(f->real, next, 16, frameStart + WAL_FRAME);
    if (rc != SQLITE_OK) return 1;
    return memcmp(next + 8, header + 8, 8) != 0;
}

static int allZero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* Decodes the image in `page` in place, through the page cache. */
static int decodeImage(CipherFile *f, unsigned char *page, uint32_t pgno) {
    CipherKey *k = f->codec.key;
    if (f->kind == KIND_WAL && k->cache) recentPut(k, pgno, page);
    if (cacheDecode(k, pgno, page)) return SQLITE_OK;
    memcpy(f->copy, page, PAGE);
    int rc = decodePage(&f->codec, page, pgno, f->kind == KIND_MAIN && pgno == 1);
    if (rc == SQLITE_OK) cachePut(k, pgno, f->copy, page);
    return rc;
}

/* Encodes the plaintext in `page` in place with codec `c`, through the page cache; `copy` is a
 * page of scratch owned by the calling thread. `first`: the database file's page 1. */
static int encodeWith(Codec *c, unsigned char *copy, unsigned char *page, uint32_t pgno, int first) {
    CipherKey *k = c->key;
    unsigned char tail[RESERVE];
    if (cacheEncode(k, pgno, page, tail))
        return recentGet(k, pgno, tail, page) ? SQLITE_OK : encryptUnder(c, page, tail);
    memcpy(copy, page, PAGE);
    int rc = encodePage(c, page, pgno, first);
    if (rc == SQLITE_OK) cachePut(k, pgno, page, copy);
    return rc;
}

static int encodeImage(CipherFile *f, unsigned char *page, uint32_t pgno) {
    return encodeWith(&f->codec, f->copy, page, pgno, f->kind == KIND_MAIN && pgno == 1);
}

/* ------------------------------------------------------------------------------------------
 * WAL batches. A commit is SQLite appending frames to the WAL, each as two writes (the 24-byte
 * frame header, then the page), and every page must be encrypted and authenticated (about
 * 13 us) on the writing thread, one after another. So a WAL file keeps the frames SQLite
 * appends (up to WAL_BATCH) and writes them when the commit frame comes (its header carries
 * the database size), when the batch is full, or before anything else is done with the file
 * (another write, a read, truncate, sync, size, close): then their pages are encoded by the
 * writing thread and, when it is free, the encoder thread below, and all go out in one write.
 * Frames SQLite wrote are in no reader's view before its commit publishes them, which the
 * commit frame's write precedes; a write error fails that commit (or the call that found it).
 * ---------------------------------------------------------------------------------------- */

#define WAL_BATCH 64
#define WAL_WRITE_MAX ((size_t)31 * WAL_FRAME)

/* One batch's pages, claimed one at a time by the writing thread and the encoder thread. */
typedef struct EncodeJob {
    Codec *helperCodec;
    unsigned char *frames;
    int count;
    _Atomic int next;
    _Atomic int failed;
    int helperIn; /* guarded by poolLock: the encoder thread works on this job */
} EncodeJob;

static void encodeClaimed(EncodeJob *job, Codec *c, unsigned char *copy) {
    for (;;) {
        int i = atomic_fetch_add(&job->next, 1);
        if (i >= job->count) return;
        unsigned char *frame = job->frames + (size_t)i * WAL_FRAME;
        int rc = encodeWith(c, copy, frame + WAL_FRAME_HEADER, bigEndian32(frame), 0);
        if (rc != SQLITE_OK) atomic_store(&job->failed, rc);
    }
}

/* One encoder thread per process, started on first use (again in a forked child). It takes the
 * one posted job; a writer finding it busy encodes its batch alone, and a writer never waits
 * for it to start: it only waits for the page the encoder is in the middle of. */
static pthread_mutex_t poolLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t poolWake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t poolDone = PTHREAD_COND_INITIALIZER;
static EncodeJob *poolJob;
static pid_t poolPid;

static void *encoderMain(void *arg) {
    (void)arg;
    unsigned char *copy = malloc(PAGE);
    pthread_mutex_lock(&poolLock);
    for (;;) {
        while (!poolJob) pthread_cond_wait(&poolWake, &poolLock);
        EncodeJob *job = poolJob;
        poolJob = NULL;
        job->helperIn = 1;
        pthread_mutex_unlock(&poolLock);
        if (copy) encodeClaimed(job, job->helperCodec, copy);
        pthread_mutex_lock(&poolLock);
        job->helperIn = 0;
        pthread_cond_broadcast(&poolDone);
    }
    return NULL;
}

/* With poolLock held: whether the encoder thread runs in this process (started if not). */
static int encoderRunning(void) {
    pid_t pid = getpid();
    if (poolPid == pid) return 1;
    pthread_t thread;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return 0;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int ok = pthread_create(&thread, &attr, encoderMain, NULL) == 0;
    pthread_attr_destroy(&attr);
    if (ok) {
        poolPid = pid;
        poolJob = NULL;
    }
    return ok;
}

/* The child of a fork has no encoder thread and may have inherited the lock held. */
static void poolAfterFork(void) {
    pthread_mutex_init(&poolLock, NULL);
    pthread_cond_init(&poolWake, NULL);
    pthread_cond_init(&poolDone, NULL);
    poolJob = NULL;
    poolPid = 0;
}

static void registerForkHandler(void) { pthread_atfork(NULL, NULL, poolAfterFork); }

/* Encodes the pages of `count` frames in place; SQLITE_OK or the first failure. */
static int encodeFrames(CipherFile *f, unsigned char *frames, int count) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, registerForkHandler);
    EncodeJob job = {.frames = frames, .count = count};
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, SQLITE_OK);
    int posted = 0;
    if (count >= 4 && (f->helperCodec.enc || codecInit(&f->helperCodec, f->codec.key))) {
        job.helperCodec = &f->helperCodec;
        pthread_mutex_lock(&poolLock);
        if (!poolJob && encoderRunning()) {
            poolJob = &job;
            posted = 1;
            pthread_cond_signal(&poolWake);
        }
        pthread_mutex_unlock(&poolLock);
    }
    encodeClaimed(&job, &f->codec, f->copy);
    if (posted) {
        pthread_mutex_lock(&poolLock);
        if (poolJob == &job) poolJob = NULL; /* never taken: every page is done here */
        while (job.helperIn) pthread_cond_wait(&poolDone, &poolLock);
        pthread_mutex_unlock(&poolLock);
    }
    return atomic_load(&job.failed);
}

/* Writes the batch (its pages encoded; a header whose page has not come yet as it is). */
static int walFlush(CipherFile *f) {
    if (f->batchFrames == 0 && !f->batchHeaderOnly) return SQLITE_OK;
    int frames = f->batchFrames;
    size_t bytes = (size_t)frames * WAL_FRAME + (f->batchHeaderOnly ? WAL_FRAME_HEADER : 0);
    if (f->batchHeaderOnly) {
        f->lastHeaderAt = f->batchAt + (sqlite3_int64)frames * WAL_FRAME;
        f->lastHeaderPgno = bigEndian32(f->batch + (size_t)frames * WAL_FRAME);
    }
    f->batchFrames = 0;
    f->batchHeaderOnly = 0;
    int rc = encodeFrames(f, f->batch, frames);
    /* The unix VFS writes at most 128 KB - 1 per call (it masks the length): 31 frames a write. */
    for (size_t done = 0; rc == SQLITE_OK && done < bytes; done += WAL_WRITE_MAX) {
        size_t chunk = bytes - done < WAL_WRITE_MAX ? bytes - done : WAL_WRITE_MAX;
        rc = f->real->pMethods->xWrite(f->real, f->batch + done, (int)chunk, f->batchAt + (sqlite3_int64)done);
    }
    return rc;
}

/* Takes a WAL write into the batch when it appends to it: 1 and `*rc` when taken. */
static int walBatchWrite(CipherFile *f, const unsigned char *in, int amt, sqlite3_int64 offset, int *rc) {
    sqlite3_int64 end = f->batchAt + (sqlite3_int64)f->batchFrames * WAL_FRAME;
    int empty = f->batchFrames == 0 && !f->batchHeaderOnly;
    if (amt == WAL_FRAME_HEADER && !f->batchHeaderOnly && offset >= WAL_HEADER && (offset - WAL_HEADER) % WAL_FRAME == 0
        && (empty || offset == end)) {
        if (!f->batch && !(f->batch = malloc((size_t)WAL_BATCH * WAL_FRAME))) return 0;
        if (empty) f->batchAt = offset;
        memcpy(f->batch + (size_t)f->batchFrames * WAL_FRAME, in, WAL_FRAME_HEADER);
        f->batchHeaderOnly = 1;
        *rc = SQLITE_OK;
        return 1;
    }
    if (amt == PAGE && f->batchHeaderOnly && offset == end + WAL_FRAME_HEADER) {
        unsigned char *frame = f->batch + (size_t)f->batchFrames * WAL_FRAME;
        memcpy(frame + WAL_FRAME_HEADER, in, PAGE);
        f->batchHeaderOnly = 0;
        f->batchFrames++;
        int commit = bigEndian32(frame + 4) != 0;
        *rc = commit || f->batchFrames == WAL_BATCH ? walFlush(f) : SQLITE_OK;
        return 1;
    }
    return 0;
}

/* Reads one whole page image at `start` and decodes it into `out`; zeros past the end of file. */
static int readPage(CipherFile *f, sqlite3_int64 start, unsigned char *out) {
    int rc = f->real->pMethods->xRead(f->real, out, PAGE, start);
    if (rc == SQLITE_IOERR_SHORT_READ && allZero(out, PAGE)) return SQLITE_OK;
    if (rc == SQLITE_IOERR_SHORT_READ) return SQLITE_IOERR_DATA; /* a torn page */
    if (rc != SQLITE_OK) return rc;
    return decodeImage(f, out, imagePageNumber(f, start, NULL, 0, 0, 0));
}

static void streamXor(CipherFile *f, unsigned char *buf, int amt, sqlite3_int64 offset) {
    unsigned char iv[16];
    unsigned char skip[16];
    uint64_t block = (uint64_t)offset / 16;
    memcpy(iv, f->streamNonce, 8);
    for (int i = 0; i < 8; i++) iv[8 + i] = (unsigned char)(block >> (56 - 8 * i));
    int outl = 0;
    EVP_EncryptInit_ex(f->stream, NULL, NULL, NULL, iv);
    int pad = (int)(offset % 16);
    if (pad) EVP_EncryptUpdate(f->stream, skip, &outl, skip, pad);
    EVP_EncryptUpdate(f->stream, buf, &outl, buf, amt);
}

/* A page image in the journal: a page-sized access that is not at a sector boundary (journal
 * headers are; records are [page number][image][checksum] after them). */
static int journalImage(int amt, sqlite3_int64 offset) { return amt == PAGE && offset % 512 != 0; }

static int cipherRead(sqlite3_file *file, void *buf, int amt, sqlite3_int64 offset) {
    CipherFile *f = (CipherFile *)file;
    unsigned char *out = buf;
    if (f->kind == KIND_PLAIN) return f->real->pMethods->xRead(f->real, buf, amt, offset);
    if (f->kind == KIND_TEMP) {
        int rc = f->real->pMethods->xRead(f->real, buf, amt, offset);
        if (rc == SQLITE_OK || rc == SQLITE_IOERR_SHORT_READ) streamXor(f, out, amt, offset);
        /* Past the end SQLite expects zeros, not keystream. */
        if (rc == SQLITE_IOERR_SHORT_READ) {
            sqlite3_int64 size = 0;
            f->real->pMethods->xFileSize(f->real, &size);
            sqlite3_int64 valid = size > offset ? size - offset : 0;
            if (valid < amt) memset(out + valid, 0, (size_t)(amt - valid));
        }
        return rc;
    }
    if (f->kind == KIND_JOURNAL) {
        /* Journal records are [page number][page image][checksum] after a header of one sector;
         * a read of one page image is the only kind that carries page content. */
        int rc = f->real->pMethods->xRead(f->real, buf, amt, offset);
        if (rc == SQLITE_OK && journalImage(amt, offset)) rc = decodePage(&f->codec, out, 0, 0);
        return rc;
    }
    /* Main database and WAL: one read of the whole range, then each page image decoded in place;
     * an image only partly inside the range is read and decoded on its own. */
    int rc = f->kind == KIND_WAL ? walFlush(f) : SQLITE_OK;
    if (rc != SQLITE_OK) return rc;
    rc = f->real->pMethods->xRead(f->real, buf, amt, offset);
    int shortRead = rc == SQLITE_IOERR_SHORT_READ;
    if (rc != SQLITE_OK && !shortRead) return rc;
    sqlite3_int64 end = offset + amt;
    sqlite3_int64 at = offset;
    while (at < end) {
        sqlite3_int64 start;
        if (!pageAt(f, at, &start)) {
            at = plainRunEnd(at, end);
            continue;
        }
        sqlite3_int64 stop = start + PAGE < end ? start + PAGE : end;
        unsigned char *dst = out + (at - offset);
        if (start == at && stop == start + PAGE) {
            if (!(shortRead && allZero(dst, PAGE))) {
                int drc = decodeImage(f, dst, imagePageNumber(f, start, out, offset, amt, 0));
                if (drc == SQLITE_IOERR_DATA && f->kind == KIND_WAL && start - WAL_FRAME_HEADER >= offset
                    && walFrameMayBeTorn(f, out + (start - WAL_FRAME_HEADER - offset), start - WAL_FRAME_HEADER)) {
                    /* SQLite is reading the log to recover it: a frame whose page never made it
                     * to the disk ends the log, as its checksum would tell SQLite. Zeros fail the
                     * checksum (computed over the page that was to be written) just the same. */
                    memset(dst, 0, PAGE);
                    drc = SQLITE_OK;
                }
                if (drc != SQLITE_OK) return drc;
            }
        } else {
            unsigned char *page = scratch(f, PAGE);
            if (!page) return SQLITE_IOERR_NOMEM;
            int prc = readPage(f, start, page);
            if (prc != SQLITE_OK) return prc;
            memcpy(dst, page + (at - start), (size_t)(stop - at));
        }
        at = stop;
    }
    return rc;
}

static int cipherWrite(sqlite3_file *file, const void *buf, int amt, sqlite3_int64 offset) {
    CipherFile *f = (CipherFile *)file;
    const unsigned char *in = buf;
    if (f->kind == KIND_PLAIN) return f->real->pMethods->xWrite(f->real, buf, amt, offset);
    if (f->kind == KIND_TEMP || f->kind == KIND_JOURNAL) {
        unsigned char *out = scratch(f, (size_t)amt);
        if (!out) return SQLITE_IOERR_NOMEM;
        memcpy(out, in, (size_t)amt);
        if (f->kind == KIND_TEMP) streamXor(f, out, amt, offset);
        else if (journalImage(amt, offset)) {
            int rc = encodePage(&f->codec, out, 0, 0);
            if (rc != SQLITE_OK) return rc;
        }
        return f->real->pMethods->xWrite(f->real, out, amt, offset);
    }
    if (f->kind == KIND_WAL) {
        int rc;
        if (walBatchWrite(f, in, amt, offset, &rc)) return rc;
        if ((rc = walFlush(f)) != SQLITE_OK) return rc;
    }
    /* Main database and WAL: SQLite writes one page image, or one WAL header, per call. Each
     * piece of the range goes out on its own: headers as they are, page images encoded, a part
     * of a page (SQLite does not write one; kept correct anyway) read, patched and encoded. */
    sqlite3_int64 end = offset + amt;
    sqlite3_int64 at = offset;
    while (at < end) {
        sqlite3_int64 start;
        int rc;
        if (!pageAt(f, at, &start)) {
            sqlite3_int64 stop = plainRunEnd(at, end);
            if (f->kind == KIND_WAL && at >= WAL_HEADER && (at - WAL_HEADER) % WAL_FRAME == 0 && stop - at >= 4) {
                f->lastHeaderAt = at; /* a frame header: its page comes next */
                f->lastHeaderPgno = bigEndian32(in + (at - offset));
            }
            rc = f->real->pMethods->xWrite(f->real, in + (at - offset), (int)(stop - at), at);
            if (rc != SQLITE_OK) return rc;
            at = stop;
            continue;
        }
        sqlite3_int64 stop = start + PAGE < end ? start + PAGE : end;
        unsigned char *page = scratch(f, PAGE);
        if (!page) return SQLITE_IOERR_NOMEM;
        if (start != at || stop != start + PAGE) {
            rc = readPage(f, start, page);
            if (rc != SQLITE_OK) return rc;
        }
        memcpy(page + (at - start), in + (at - offset), (size_t)(stop - at));
        rc = encodeImage(f, page, imagePageNumber(f, start, in, offset, amt, 1));
        if (rc == SQLITE_OK) rc = f->real->pMethods->xWrite(f->real, page, PAGE, start);
        if (rc != SQLITE_OK) return rc;
        at = stop;
    }
    return SQLITE_OK;
}

static int cipherClose(sqlite3_file *file) {
    CipherFile *f = (CipherFile *)file;
    int flushed = f->kind == KIND_WAL && f->real->pMethods ? walFlush(f) : SQLITE_OK;
    int rc = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
    if (rc == SQLITE_OK) rc = flushed;
    if (f->batch) OPENSSL_cleanse(f->batch, (size_t)WAL_BATCH * WAL_FRAME);
    free(f->batch);
    f->batch = NULL;
    codecFree(&f->helperCodec);
    codecFree(&f->codec);
    if (f->codec.key) keyUnref(f->codec.key);
    f->codec.key = NULL;
    EVP_CIPHER_CTX_free(f->stream);
    OPENSSL_cleanse(f->streamKey, sizeof f->streamKey);
    if (f->scratch) OPENSSL_cleanse(f->scratch, f->scratchSize);
    OPENSSL_cleanse(f->copy, sizeof f->copy);
    free(f->scratch);
    f->scratch = NULL;
    return rc;
}

#define REAL(f) (((CipherFile *)(f))->real)
/* A WAL's batch is written before anything else is done with the file. */
#define SETTLE(f) do { \
        if (((CipherFile *)(f))->kind == KIND_WAL) { \
            int settled = walFlush((CipherFile *)(f)); \
            if (settled != SQLITE_OK) return settled; \
        } \
    } while (0)
static int cipherTruncate(sqlite3_file *f, sqlite3_int64 size) { SETTLE(f); return REAL(f)->pMethods->xTruncate(REAL(f), size); }
static int cipherSync(sqlite3_file *f, int flags) { SETTLE(f); return REAL(f)->pMethods->xSync(REAL(f), flags); }
static int cipherFileSize(sqlite3_file *f, sqlite3_int64 *size) { SETTLE(f); return REAL(f)->pMethods->xFileSize(REAL(f), size); }
static int cipherLock(sqlite3_file *f, int lock) { SETTLE(f); return REAL(f)->pMethods->xLock(REAL(f), lock); }
static int cipherUnlock(sqlite3_file *f, int lock) { SETTLE(f); return REAL(f)->pMethods->xUnlock(REAL(f), lock); }
static int cipherCheckReserved(sqlite3_file *f, int *out) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out); }
static int cipherFileControl(sqlite3_file *f, int op, void *arg) { SETTLE(f); return REAL(f)->pMethods->xFileControl(REAL(f), op, arg); }
static int cipherSectorSize(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int cipherDeviceCharacteristics(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int cipherShmMap(sqlite3_file *f, int region, int size, int extend, void volatile **p) {
    return REAL(f)->pMethods->xShmMap(REAL(f), region, size, extend, p);
}
static int cipherShmLock(sqlite3_file *f, int offset, int n, int flags) { return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags); }
static void cipherShmBarrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int cipherShmUnmap(sqlite3_file *f, int deleteFlag) { return REAL(f)->pMethods->xShmUnmap(REAL(f), deleteFlag); }
/* No memory mapping: SQLite would read ciphertext straight from the map. */
static int cipherFetch(sqlite3_file *f, sqlite3_int64 offset, int amt, void **p) {
    (void)f; (void)offset; (void)amt;
    *p = NULL;
    return SQLITE_OK;
}
static int cipherUnfetch(sqlite3_file *f, sqlite3_int64 offset, void *p) { (void)f; (void)offset; (void)p; return SQLITE_OK; }

static const sqlite3_io_methods cipherMethods = {
    3, cipherClose, cipherRead, cipherWrite, cipherTruncate, cipherSync, cipherFileSize, cipherLock, cipherUnlock,
    cipherCheckReserved, cipherFileControl, cipherSectorSize, cipherDeviceCharacteristics, cipherShmMap,
    cipherShmLock, cipherShmBarrier, cipherShmUnmap, cipherFetch, cipherUnfetch,
};

static int cipherOpen(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *outFlags) {
    (void)vfs;
    CipherFile *f = (CipherFile *)file;
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *)(f + 1);
    enum FileKind kind = KIND_PLAIN;
    CipherKey *key = NULL;
    if (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL)) {
        /* The key travels as a URI parameter of the database's name (the WAL's and journal's
         * names lead back to it). No parameter: a plaintext file. */
        sqlite3_filename db = !name ? NULL : (flags & SQLITE_OPEN_MAIN_DB) ? name : sqlite3_filename_database(name);
        sqlite3_int64 id = db ? sqlite3_uri_int64(db, "sskey", 0) : 0;
        if (id > 0) {
            key = keyLookup(id);
            if (!key) return SQLITE_CANTOPEN; /* the store closed: its key is gone */
            kind = (flags & SQLITE_OPEN_MAIN_DB) ? KIND_MAIN : (flags & SQLITE_OPEN_WAL) ? KIND_WAL : KIND_JOURNAL;
        }
    } else if (!(flags & SQLITE_OPEN_SUPER_JOURNAL)) {
        /* Temporary databases and journals, statement journals: nothing in them outlives the
         * file, so a key drawn now serves. (Super-journals hold only file names.) */
        kind = KIND_TEMP;
    }
    int rc = baseVfs->xOpen(baseVfs, name, f->real, flags, outFlags);
    if (rc != SQLITE_OK) {
        if (key) keyUnref(key);
        return rc;
    }
    f->kind = kind;
    f->base.pMethods = &cipherMethods;
    if (key && !codecInit(&f->codec, key)) rc = SQLITE_NOMEM;
    f->codec.key = key;
    if (kind == KIND_TEMP) {
        f->stream = EVP_CIPHER_CTX_new();
        if (!f->stream || RAND_bytes(f->streamKey, KEY_SIZE) != 1 || RAND_bytes(f->streamNonce, 8) != 1
            || EVP_EncryptInit_ex(f->stream, EVP_aes_256_ctr(), NULL, f->streamKey, NULL) != 1)
            rc = SQLITE_NOMEM;
    }
    if (rc != SQLITE_OK) {
        cipherClose(file);
        f->base.pMethods = NULL;
    }
    return rc;
}

static int vfsDelete(sqlite3_vfs *v, const char *name, int syncDir) { (void)v; return baseVfs->xDelete(baseVfs, name, syncDir); }
static int vfsAccess(sqlite3_vfs *v, const char *name, int flags, int *out) { (void)v; return baseVfs->xAccess(baseVfs, name, flags, out); }
static int vfsFullPathname(sqlite3_vfs *v, const char *name, int n, char *out) { (void)v; return baseVfs->xFullPathname(baseVfs, name, n, out); }
static void *vfsDlOpen(sqlite3_vfs *v, const char *name) { (void)v; return baseVfs->xDlOpen(baseVfs, name); }
static void vfsDlError(sqlite3_vfs *v, int n, char *msg) { (void)v; baseVfs->xDlError(baseVfs, n, msg); }
static void (*vfsDlSym(sqlite3_vfs *v, void *h, const char *sym))(void) { (void)v; return baseVfs->xDlSym(baseVfs, h, sym); }
static void vfsDlClose(sqlite3_vfs *v, void *h) { (void)v; baseVfs->xDlClose(baseVfs, h); }
static int vfsRandomness(sqlite3_vfs *v, int n, char *out) { (void)v; return baseVfs->xRandomness(baseVfs, n, out); }
static int vfsSleep(sqlite3_vfs *v, int us) { (void)v; return baseVfs->xSleep(baseVfs, us); }
static int vfsCurrentTime(sqlite3_vfs *v, double *out) { (void)v; return baseVfs->xCurrentTime(baseVfs, out); }
static int vfsGetLastError(sqlite3_vfs *v, int n, char *out) { (void)v; return baseVfs->xGetLastError(baseVfs, n, out); }
static int vfsCurrentTimeInt64(sqlite3_vfs *v, sqlite3_int64 *out) { (void)v; return baseVfs->xCurrentTimeInt64(baseVfs, out); }

static int registerResult = SQLITE_ERROR;
static void registerOnce(void) {
    ss_sqlite_configure(); /* before sqlite3_vfs_find initializes SQLite */
    baseVfs = sqlite3_vfs_find(NULL);
    if (!baseVfs || baseVfs->iVersion < 2) return;
    cipherVfs.iVersion = 2;
    cipherVfs.szOsFile = (int)sizeof(CipherFile) + baseVfs->szOsFile;
    cipherVfs.mxPathname = baseVfs->mxPathname;
    cipherVfs.zName = kVfsName;
    cipherVfs.xOpen = cipherOpen;
    cipherVfs.xDelete = vfsDelete;
    cipherVfs.xAccess = vfsAccess;
    cipherVfs.xFullPathname = vfsFullPathname;
    cipherVfs.xDlOpen = vfsDlOpen;
    cipherVfs.xDlError = vfsDlError;
    cipherVfs.xDlSym = vfsDlSym;
    cipherVfs.xDlClose = vfsDlClose;
    cipherVfs.xRandomness = vfsRandomness;
    cipherVfs.xSleep = vfsSleep;
    cipherVfs.xCurrentTime = vfsCurrentTime;
    cipherVfs.xGetLastError = vfsGetLastError;
    cipherVfs.xCurrentTimeInt64 = vfsCurrentTimeInt64;
    registerResult = sqlite3_vfs_register(&cipherVfs, 0);
}

int ss_cipher_vfs_register(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, registerOnce);
    return registerResult;
}

const char *ss_cipher_vfs_name(void) { return kVfsName; }
