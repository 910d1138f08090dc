/*
 * The VFS of encrypted stores: the files SQLite opens through it, each read and write encoded or
 * decoded on its way, and the calls passed on to the system SQLite's default VFS. The keys, the
 * page crypto, WAL framing and the encoder thread are in the other cipher_*.c files
 * (cipher_internal.h lists them).
 *
 * The page codec writes SQLCipher 4's file format (docs/encryption.md), as a VFS shim over the
 * system SQLite's default VFS, so the process keeps one SQLite library.
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
 * cache in cipher_keys.c). Decrypted pages always carry zeros in the reserved bytes, so the WAL's
 * checksums (which SQLite computes over the pages it hands over) hold when the log is read back.
 * The rollback journal (SQLite writes one while a store switches to or from WAL mode, and for
 * the copy a change of key writes) has its page images encoded the same way with N = 0. Temporary files are encrypted with AES-256-CTR
 * under a key drawn when the file opens and lost when it closes.
 */
#include "cipher_internal.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

static const char kVfsName[] = "syncstore-cipher";

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

static int allZero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* Decodes the image in `page` in place, through the page cache. */
static int decodeImage(CipherFile *f, unsigned char *page, uint32_t pgno) {
    return cipher_decode_cached(&f->codec, f->copy, page, pgno, f->kind == KIND_MAIN && pgno == 1, f->kind == KIND_WAL);
}

/* Encodes the plaintext in `page` in place, through the page cache. */
static int encodeImage(CipherFile *f, unsigned char *page, uint32_t pgno) {
    return cipher_encode_cached(&f->codec, f->copy, page, pgno, f->kind == KIND_MAIN && pgno == 1);
}

/* Reads one whole page image at `start` and decodes it into `out`; zeros past the end of file. */
static int readPage(CipherFile *f, sqlite3_int64 start, unsigned char *out) {
    int rc = f->real->pMethods->xRead(f->real, out, PAGE, start);
    if (rc == SQLITE_IOERR_SHORT_READ && allZero(out, PAGE)) return SQLITE_OK;
    if (rc == SQLITE_IOERR_SHORT_READ) return SQLITE_IOERR_DATA; /* a torn page */
    if (rc != SQLITE_OK) return rc;
    return decodeImage(f, out, cipher_image_pgno(f, start, NULL, 0, 0, 0));
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
        if (rc == SQLITE_OK && journalImage(amt, offset)) rc = cipher_decode_page(&f->codec, out, 0, 0);
        return rc;
    }
    /* Main database and WAL: one read of the whole range, then each page image decoded in place;
     * an image only partly inside the range is read and decoded on its own. */
    int rc = f->kind == KIND_WAL ? cipher_wal_flush(f) : SQLITE_OK;
    if (rc != SQLITE_OK) return rc;
    rc = f->real->pMethods->xRead(f->real, buf, amt, offset);
    int shortRead = rc == SQLITE_IOERR_SHORT_READ;
    if (rc != SQLITE_OK && !shortRead) return rc;
    sqlite3_int64 end = offset + amt;
    sqlite3_int64 at = offset;
    while (at < end) {
        sqlite3_int64 start;
        if (!cipher_page_at(f, at, &start)) {
            at = cipher_plain_run_end(at, end);
            continue;
        }
        sqlite3_int64 stop = start + PAGE < end ? start + PAGE : end;
        unsigned char *dst = out + (at - offset);
        if (start == at && stop == start + PAGE) {
            if (!(shortRead && allZero(dst, PAGE))) {
                int drc = decodeImage(f, dst, cipher_image_pgno(f, start, out, offset, amt, 0));
                if (drc == SQLITE_IOERR_DATA && f->kind == KIND_WAL && start - WAL_FRAME_HEADER >= offset
                    && cipher_wal_frame_may_be_torn(f, out + (start - WAL_FRAME_HEADER - offset), start - WAL_FRAME_HEADER)) {
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
            int rc = cipher_encode_page(&f->codec, out, 0, 0);
            if (rc != SQLITE_OK) return rc;
        }
        return f->real->pMethods->xWrite(f->real, out, amt, offset);
    }
    if (f->kind == KIND_WAL) {
        int rc;
        if (cipher_wal_batch_write(f, in, amt, offset, &rc)) return rc;
        if ((rc = cipher_wal_flush(f)) != SQLITE_OK) return rc;
    }
    /* Main database and WAL: SQLite writes one page image, or one WAL header, per call. Each
     * piece of the range goes out on its own: headers as they are, page images encoded, a part
     * of a page (SQLite does not write one; kept correct anyway) read, patched and encoded. */
    sqlite3_int64 end = offset + amt;
    sqlite3_int64 at = offset;
    while (at < end) {
        sqlite3_int64 start;
        int rc;
        if (!cipher_page_at(f, at, &start)) {
            sqlite3_int64 stop = cipher_plain_run_end(at, end);
            if (f->kind == KIND_WAL && at >= WAL_HEADER && (at - WAL_HEADER) % WAL_FRAME == 0 && stop - at >= 4) {
                f->lastHeaderAt = at; /* a frame header: its page comes next */
                f->lastHeaderPgno = cipher_be32(in + (at - offset));
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
        rc = encodeImage(f, page, cipher_image_pgno(f, start, in, offset, amt, 1));
        if (rc == SQLITE_OK) rc = f->real->pMethods->xWrite(f->real, page, PAGE, start);
        if (rc != SQLITE_OK) return rc;
        at = stop;
    }
    return SQLITE_OK;
}

static int cipherClose(sqlite3_file *file) {
    CipherFile *f = (CipherFile *)file;
    int flushed = f->kind == KIND_WAL && f->real->pMethods ? cipher_wal_flush(f) : SQLITE_OK;
    int rc = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
    if (rc == SQLITE_OK) rc = flushed;
    if (f->batch) OPENSSL_cleanse(f->batch, (size_t)WAL_BATCH * WAL_FRAME);
    free(f->batch);
    f->batch = NULL;
    cipher_codec_free(&f->helperCodec);
    cipher_codec_free(&f->codec);
    if (f->codec.key) cipher_key_unref(f->codec.key);
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
            int settled = cipher_wal_flush((CipherFile *)(f)); \
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
            key = cipher_key_lookup(id);
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
        if (key) cipher_key_unref(key);
        return rc;
    }
    f->kind = kind;
    f->base.pMethods = &cipherMethods;
    if (key && !cipher_codec_init(&f->codec, key)) rc = SQLITE_NOMEM;
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
