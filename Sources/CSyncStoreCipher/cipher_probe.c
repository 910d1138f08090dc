/*
 * What a file is (plaintext, encrypted, neither), and the key of a store: made from the key text
 * and the file's salt, and checked against the file's page 1 before it is registered.
 */
#include "cipher_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

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
    else if (got >= 16 && memcmp(page, cipher_sqlite_header, 16) == 0) rc = SS_CIPHER_PLAINTEXT;
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
    if (existing && got >= 16 && memcmp(page, cipher_sqlite_header, 16) == 0) { rc = SS_CIPHER_PLAINTEXT; goto done; }
    if (existing && !looksEncrypted(page, got < PAGE ? got : PAGE)) { rc = SS_CIPHER_NOT_A_DATABASE; goto done; }

    rc = cipher_derive_keys(k, key, key_len, kdf_iter, page, existing);
    if (rc != SS_CIPHER_OK) goto wipe;

    if (!cipher_key_digest(key, key_len, kdf_iter, k->digest)) { rc = SS_CIPHER_CRYPTO; goto wipe; }

    if (existing) {
        Codec c = {0};
        if (!cipher_codec_init(&c, k)) { rc = SS_CIPHER_CRYPTO; goto wipe; }
        int drc = cipher_decode_page(&c, page, 1, 1);
        /* Page 1 that fails while page 2 passes: the key is right and page 1 is damaged. */
        int second = drc != SQLITE_OK && got >= 2 * PAGE && cipher_decode_page(&c, page + PAGE, 2, 0) == SQLITE_OK;
        cipher_codec_free(&c);
        /* A page 1 that decrypts must also be a page of the layout this codec writes. */
        if (second) rc = SS_CIPHER_DAMAGED;
        else if (drc != SQLITE_OK || page[16] != (PAGE >> 8) || page[17] != (PAGE & 0xff) || page[20] != RESERVE)
            rc = SS_CIPHER_WRONG_KEY;
    }
    if (rc != SS_CIPHER_OK) goto wipe;

    *out_id = cipher_key_register(k);
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
