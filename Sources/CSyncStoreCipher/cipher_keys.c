/*
 * The key registry and each key's page cache: keys are registered by number and counted by the
 * files that use them, and the plaintext of a store's pages is kept so that SQLite's repeated
 * reads and writes of a page cost no second encryption or HMAC.
 */
#include "cipher_internal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

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

int cipher_decode_cached(Codec *c, unsigned char *copy, unsigned char *page, uint32_t pgno, int first, int wal) {
    CipherKey *k = c->key;
    if (wal && k->cache) recentPut(k, pgno, page);
    if (cacheDecode(k, pgno, page)) return SQLITE_OK;
    memcpy(copy, page, PAGE);
    int rc = cipher_decode_page(c, page, pgno, first);
    if (rc == SQLITE_OK) cachePut(k, pgno, copy, page);
    return rc;
}

int cipher_encode_cached(Codec *c, unsigned char *copy, unsigned char *page, uint32_t pgno, int first) {
    CipherKey *k = c->key;
    unsigned char tail[RESERVE];
    if (cacheEncode(k, pgno, page, tail))
        return recentGet(k, pgno, tail, page) ? SQLITE_OK : cipher_encrypt_under(c, page, tail);
    memcpy(copy, page, PAGE);
    int rc = cipher_encode_page(c, page, pgno, first);
    if (rc == SQLITE_OK) cachePut(k, pgno, page, copy);
    return rc;
}

/* ------------------------------------------------------------------------------------------
 * The registry
 * ---------------------------------------------------------------------------------------- */

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

void cipher_key_unref(CipherKey *k) {
    pthread_mutex_lock(&keysLock);
    int last = --k->refs == 0;
    pthread_mutex_unlock(&keysLock);
    if (last) keyFree(k);
}

CipherKey *cipher_key_lookup(int64_t id) {
    pthread_mutex_lock(&keysLock);
    CipherKey *k = keys;
    while (k && k->id != id) k = k->next;
    if (k) k->refs++;
    pthread_mutex_unlock(&keysLock);
    return k;
}

int64_t cipher_key_register(CipherKey *k) {
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
    int64_t id = k->id;
    pthread_mutex_unlock(&keysLock);
    return id;
}

/* HMAC-SHA256 of the key text and kdfIter under a secret drawn once per process: a second
 * handle's key can be compared without running the KDF again and without keeping the text. */
static unsigned char processSecret[32];
static int processSecretOk;
static void drawSecret(void) { processSecretOk = RAND_bytes(processSecret, sizeof processSecret) == 1; }

int cipher_key_digest(const char *key, size_t len, int kdfIter, unsigned char out[32]) {
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
    if (!key || !cipher_key_digest(key, key_len, kdf_iter, digest)) return 0;
    CipherKey *k = cipher_key_lookup(id);
    if (!k) return 0;
    int same = CRYPTO_memcmp(digest, k->digest, sizeof digest) == 0;
    cipher_key_unref(k);
    return same;
}

void ss_cipher_key_release(int64_t id) {
    pthread_mutex_lock(&keysLock);
    CipherKey **p = &keys;
    while (*p && (*p)->id != id) p = &(*p)->next;
    CipherKey *k = *p;
    if (k) *p = k->next;
    pthread_mutex_unlock(&keysLock);
    if (k) cipher_key_unref(k);
}
