/*
 * WAL framing: where page images sit in the database file and in the WAL, which page number an
 * image is bound to, and the batches in which a WAL's appended frames are encoded and written.
 */
#include "cipher_internal.h"

#include <stdlib.h>
#include <string.h>

/* Where page images sit in a file: 1 and the start of the image holding the byte at `offset`. */
int cipher_page_at(const CipherFile *f, sqlite3_int64 offset, sqlite3_int64 *start) {
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
sqlite3_int64 cipher_plain_run_end(sqlite3_int64 offset, sqlite3_int64 end) {
    sqlite3_int64 stop = WAL_HEADER;
    if (offset >= WAL_HEADER) stop = WAL_HEADER + (offset - WAL_HEADER) / WAL_FRAME * WAL_FRAME + WAL_FRAME_HEADER;
    return stop < end ? stop : end;
}

/* The database page number of the image at `start`: from its offset in the database file; in
 * the WAL from the frame header before it, found in `buf` (the bytes at `bufAt`, `bufLen` long)
 * when it is there, else (`writing`) the header this file wrote just before, else read from the
 * file (another connection may have written the frame since). */
uint32_t cipher_image_pgno(CipherFile *f, sqlite3_int64 start, const unsigned char *buf, sqlite3_int64 bufAt,
                           sqlite3_int64 bufLen, int writing) {
    if (f->kind == KIND_MAIN) return (uint32_t)(start / PAGE + 1);
    sqlite3_int64 header = start - WAL_FRAME_HEADER;
    if (buf && header >= bufAt && header + 4 <= bufAt + bufLen) return cipher_be32(buf + (header - bufAt));
    if (writing && header == f->lastHeaderAt) return f->lastHeaderPgno;
    unsigned char n[4];
    if (f->real->pMethods->xRead(f->real, n, 4, header) != SQLITE_OK) return 0; /* fails the HMAC check */
    return cipher_be32(n);
}

/* A WAL frame whose page fails its HMAC check while SQLite reads the whole frame (recovery):
 * torn rather than damaged when its header is not of the log's current generation (SQLite drops
 * it by its salts) or when it is the generation's last frame (a crash between the header and the
 * page: the image there is an older one, bound to another page). A bad frame followed by one of
 * the same generation was written whole before the next: damaged, an error. */
int cipher_wal_frame_may_be_torn(CipherFile *f, const unsigned char *header, sqlite3_int64 frameStart) {
    unsigned char walSalts[8], next[16];
    if (f->real->pMethods->xRead(f->real, walSalts, 8, 16) != SQLITE_OK) return 1;
    if (memcmp(walSalts, header + 8, 8) != 0) return 1;
    int rc = f->real->pMethods->xRead(f->real, next, 16, frameStart + WAL_FRAME);
    if (rc != SQLITE_OK) return 1;
    return memcmp(next + 8, header + 8, 8) != 0;
}

/* ------------------------------------------------------------------------------------------
 * WAL batches. A commit is SQLite appending frames to the WAL, each as two writes (the 24-byte
 * frame header, then the page), and every page must be encrypted and authenticated (about
 * 13 us) on the writing thread, one after another. So a WAL file keeps the frames SQLite
 * appends (up to WAL_BATCH) and writes them when the commit frame comes (its header carries
 * the database size), when the batch is full, or before anything else is done with the file
 * (another write, a read, truncate, sync, size, close): then their pages are encoded by the
 * writing thread and, when it is free, the encoder thread (cipher_pool.c), and all go out in one
 * write. Frames SQLite wrote are in no reader's view before its commit publishes them, which the
 * commit frame's write precedes; a write error fails that commit (or the call that found it).
 * ---------------------------------------------------------------------------------------- */

/* Writes the batch (its pages encoded; a header whose page has not come yet as it is). */
int cipher_wal_flush(CipherFile *f) {
    if (f->batchFrames == 0 && !f->batchHeaderOnly) return SQLITE_OK;
    int frames = f->batchFrames;
    size_t bytes = (size_t)frames * WAL_FRAME + (f->batchHeaderOnly ? WAL_FRAME_HEADER : 0);
    if (f->batchHeaderOnly) {
        f->lastHeaderAt = f->batchAt + (sqlite3_int64)frames * WAL_FRAME;
        f->lastHeaderPgno = cipher_be32(f->batch + (size_t)frames * WAL_FRAME);
    }
    f->batchFrames = 0;
    f->batchHeaderOnly = 0;
    int rc = cipher_encode_frames(f, f->batch, frames);
    /* The unix VFS writes at most 128 KB - 1 per call (it masks the length): 31 frames a write. */
    for (size_t done = 0; rc == SQLITE_OK && done < bytes; done += WAL_WRITE_MAX) {
        size_t chunk = bytes - done < WAL_WRITE_MAX ? bytes - done : WAL_WRITE_MAX;
        rc = f->real->pMethods->xWrite(f->real, f->batch + done, (int)chunk, f->batchAt + (sqlite3_int64)done);
    }
    return rc;
}

/* Takes a WAL write into the batch when it appends to it: 1 and `*rc` when taken. */
int cipher_wal_batch_write(CipherFile *f, const unsigned char *in, int amt, sqlite3_int64 offset, int *rc) {
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
        int commit = cipher_be32(frame + 4) != 0;
        *rc = commit || f->batchFrames == WAL_BATCH ? cipher_wal_flush(f) : SQLITE_OK;
        return 1;
    }
    return 0;
}
