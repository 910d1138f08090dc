/*
 * The crypto of one page: AES-256-CBC and HMAC-SHA512 as SQLCipher 4 lays them out (see
 * cipher_vfs.c), and the derivation of a store's keys from its key text and salt.
 */
#include "cipher_internal.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

const unsigned char cipher_sqlite_header[16] = "SQLite format 3";

/* ------------------------------------------------------------------------------------------
 * The page codec
 * ---------------------------------------------------------------------------------------- */

static EVP_MAC *hmacAlg;
static void fetchHmac(void) { hmacAlg = EVP_MAC_fetch(NULL, "HMAC", NULL); }

static EVP_MAC *hmacAlgorithm(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fetchHmac);
    return hmacAlg;
}

void cipher_codec_free(Codec *c) {
    OPENSSL_cleanse(c->ivs, sizeof c->ivs);
    c->ivsLeft = 0;
    EVP_CIPHER_CTX_free(c->enc);
    EVP_CIPHER_CTX_free(c->dec);
    EVP_MAC_CTX_free(c->mac);
    c->enc = c->dec = NULL;
    c->mac = NULL;
}

int cipher_codec_init(Codec *c, CipherKey *key) {
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
    cipher_codec_free(c);
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
int cipher_encode_page(Codec *c, unsigned char *page, uint32_t pgno, int first) {
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
int cipher_decode_page(Codec *c, unsigned char *page, uint32_t pgno, int first) {
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
    if (first) memcpy(page, cipher_sqlite_header, SALT_SIZE);
    return SQLITE_OK;
}

/* Encrypts a plaintext page (not page 1) in place under the IV in `tail` and puts `tail` (that
 * IV and the HMAC of the image it gives) in its reserved bytes: an image written before again. */
int cipher_encrypt_under(Codec *c, unsigned char *page, const unsigned char tail[RESERVE]) {
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

int cipher_derive_keys(CipherKey *k, const char *key, size_t key_len, int kdf_iter, const unsigned char *page,
                       int existing) {
    int rc = SS_CIPHER_OK;
    unsigned char raw[KEY_SIZE + SALT_SIZE];
    if (parseRawKey(key, key_len, raw, KEY_SIZE + SALT_SIZE)) {
        memcpy(k->key, raw, KEY_SIZE);
        memcpy(k->salt, raw + KEY_SIZE, SALT_SIZE);
        if (existing && memcmp(page, k->salt, SALT_SIZE) != 0) { rc = SS_CIPHER_WRONG_KEY; }
    } else {
        if (existing) memcpy(k->salt, page, SALT_SIZE);
        else if (RAND_bytes(k->salt, SALT_SIZE) != 1) return SS_CIPHER_CRYPTO;
        if (parseRawKey(key, key_len, raw, KEY_SIZE)) {
            memcpy(k->key, raw, KEY_SIZE);
        } else if (PKCS5_PBKDF2_HMAC(key, (int)key_len, k->salt, SALT_SIZE, kdf_iter, EVP_sha512(), KEY_SIZE,
                                     k->key) != 1) {
            rc = SS_CIPHER_CRYPTO;
        }
    }
    OPENSSL_cleanse(raw, sizeof raw);
    if (rc != SS_CIPHER_OK) return rc;

    /* The HMAC key, as SQLCipher derives it: 2 iterations over the salt XOR 0x3a. */
    unsigned char macSalt[SALT_SIZE];
    for (int i = 0; i < SALT_SIZE; i++) macSalt[i] = k->salt[i] ^ 0x3a;
    if (PKCS5_PBKDF2_HMAC((const char *)k->key, KEY_SIZE, macSalt, SALT_SIZE, 2, EVP_sha512(), KEY_SIZE,
                          k->hmacKey) != 1) return SS_CIPHER_CRYPTO;
    return SS_CIPHER_OK;
}
