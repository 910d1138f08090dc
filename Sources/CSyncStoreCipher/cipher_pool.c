/*
 * The encoder thread: one per process, encoding the pages of a WAL batch side by side with the
 * writing thread, so a commit's crypto takes about half the time on the writer.
 */
#include "cipher_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

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
        int rc = cipher_encode_cached(c, copy, frame + WAL_FRAME_HEADER, cipher_be32(frame), 0);
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

int cipher_encode_frames(CipherFile *f, unsigned char *frames, int count) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, registerForkHandler);
    EncodeJob job = {.frames = frames, .count = count};
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, SQLITE_OK);
    int posted = 0;
    if (count >= 4 && (f->helperCodec.enc || cipher_codec_init(&f->helperCodec, f->codec.key))) {
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
