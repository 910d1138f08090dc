/* Lifetime and threads through the C ABI (the header's "Callbacks, threads and close"): which thread runs callbacks and what they
 * may call, calls racing the last close, open racing close, remove/register soup racing
 * readers, and cursors across alter_soup. Syncs use a custom target (no server needed). Each
 * race is looped with several threads so that it happens, not by luck. */
#define _GNU_SOURCE
#include "check.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A system that refuses new threads, on demand: this pthread_create takes the library's calls
 * (the executable's definition comes first) and forwards them unless told to refuse. Not under
 * sanitizers, whose runtimes define pthread_create themselves. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define REFUSE_THREADS 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define REFUSE_THREADS 0
#endif
#endif
#ifndef REFUSE_THREADS
#define REFUSE_THREADS 1
static atomic_int refuse_threads;
int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    if (atomic_load(&refuse_threads)) return EAGAIN;
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
    return real(thread, attr, start, arg);
}
#endif

static const char *root;
static const char *ID_SPECS = "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"n\",\"type\":\"integer\"}]";

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char *dup_text(const char *s) {
    char *copy = malloc(strlen(s) + 1);
    if (copy) strcpy(copy, s);
    return copy;
}

static int state_is_terminal(const char *json) {
    return strstr(json, "\"DONE\"") || strstr(json, "\"FAILED\"") || strstr(json, "\"STOPPED\"");
}

/* ---- 1. Every callback of a run on the sync worker; close and wait refused inside ---- */

typedef struct {
    syncstore_store *store;
    int64_t sync_id;
    int pages;           /* pages each run serves */
    pthread_mutex_t mu; /* guards status_thread: with the bug, fetches ran beside status callbacks */
    pthread_t status_thread;
    int status_seen;
    atomic_int fetches, other_thread, wait_not_state, close_not_state, slow_wait;
} reentry_ctx;

static int reentry_fetch(void *context, const char *target_json, int64_t since_ms, const char *continuation,
                         char **out_page_json, syncstore_error *err) {
    (void)target_json; (void)since_ms; (void)err;
    reentry_ctx *c = context;
    int page = continuation ? atoi(continuation) : 0;
    atomic_fetch_add(&c->fetches, 1);
    /* The run's RUNNING state came before its first fetch, on the thread every callback of
     * the store must use. */
    pthread_mutex_lock(&c->mu);
    int on_worker = c->status_seen && pthread_equal(c->status_thread, pthread_self());
    pthread_mutex_unlock(&c->mu);
    if (!on_worker) {
        atomic_fetch_add(&c->other_thread, 1);
    } else {
        /* Only on the worker: elsewhere (the bug) close would deadlock this test. */
        syncstore_error e;
        char *state = NULL;
        double t0 = now_s();
        int rc = syncstore_wait_sync(c->store, c->sync_id, 300, &state, &e);
        if (now_s() - t0 > 0.2) atomic_fetch_add(&c->slow_wait, 1);
        if (rc != SYNCSTORE_ERR_STATE) atomic_fetch_add(&c->wait_not_state, 1);
        syncstore_free(state);
        if (syncstore_close(c->store, &e) != SYNCSTORE_ERR_STATE) atomic_fetch_add(&c->close_not_state, 1);
    }
    char page_json[256];
    if (page + 1 < c->pages) {
        snprintf(page_json, sizeof page_json,
                 "{\"records\":[{\"Id\":\"p%d\",\"n\":%d,\"LastModifiedDate\":\"2026-01-01T00:00:00.000Z\"}],\"next\":\"%d\"}",
                 page, page, page + 1);
    } else {
        snprintf(page_json, sizeof page_json,
                 "{\"records\":[{\"Id\":\"p%d\",\"n\":%d,\"LastModifiedDate\":\"2026-01-01T00:00:00.000Z\"}]}", page, page);
    }
    *out_page_json = dup_text(page_json);
    return SYNCSTORE_OK;
}

static void reentry_status(const char *state_json, void *context) {
    (void)state_json;
    reentry_ctx *c = context;
    pthread_mutex_lock(&c->mu);
    c->status_thread = pthread_self();
    c->status_seen = 1;
    pthread_mutex_unlock(&c->mu);
}

static void test_callbacks_run_on_the_worker(void) {
    syncstore_error err;
    syncstore_store *s = NULL;
    EXPECT(syncstore_open(root, "{\"storeName\":\"reentry\"}", &s, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(s, "things", ID_SPECS, &err), SYNCSTORE_OK, &err);
    reentry_ctx c = {.store = s, .pages = 4, .mu = PTHREAD_MUTEX_INITIALIZER};
    syncstore_custom_target target = {&c, reentry_fetch, NULL, NULL};
    EXPECT(syncstore_register_custom_target(s, "pages", &target, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_create_sync_down(s, "{\"type\":\"pages\"}", "things", NULL, "paged", &c.sync_id, &err), SYNCSTORE_OK, &err);
    for (int run = 0; run < 10; run++) {
        pthread_mutex_lock(&c.mu);
        c.status_seen = 0;
        pthread_mutex_unlock(&c.mu);
        EXPECT(syncstore_resync(s, c.sync_id, reentry_status, &c, &err), SYNCSTORE_OK, &err);
        char *state = NULL;
        EXPECT(syncstore_wait_sync(s, c.sync_id, 20000, &state, &err), SYNCSTORE_OK, &err);
        CHECK(state && strstr(state, "\"DONE\""));
        syncstore_free(state);
    }
    CHECK(atomic_load(&c.fetches) == 40);
    CHECK(atomic_load(&c.other_thread) == 0);
    CHECK(atomic_load(&c.wait_not_state) == 0);
    CHECK(atomic_load(&c.close_not_state) == 0);
    CHECK(atomic_load(&c.slow_wait) == 0);
    if (atomic_load(&c.other_thread)) fprintf(stderr, "%d of %d fetches ran off the sync worker thread\n", atomic_load(&c.other_thread), atomic_load(&c.fetches));
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
}

/* ---- A sync worker thread the system refuses: BUSY, not a hang ---- */

#if REFUSE_THREADS
static int quick_fetch(void *, const char *, int64_t, const char *, char **, syncstore_error *);

/* In a child process (before this process starts threads), so a hang is a failure, not a stall. */
static void test_worker_thread_refused(void) {
    pid_t child = fork();
    if (child == 0) {
        alarm(20);
        syncstore_error err;
        syncstore_store *s = NULL;
        syncstore_custom_target target = {NULL, quick_fetch, NULL, NULL};
        int ok = syncstore_open(root, "{\"storeName\":\"no-threads\"}", &s, &err) == SYNCSTORE_OK &&
                 syncstore_register_soup(s, "things", ID_SPECS, &err) == SYNCSTORE_OK &&
                 syncstore_register_custom_target(s, "quick", &target, &err) == SYNCSTORE_OK;
        int64_t id = 0;
        ok = ok && syncstore_create_sync_down(s, "{\"type\":\"quick\"}", "things", NULL, NULL, &id, &err) == SYNCSTORE_OK;
        atomic_store(&refuse_threads, 1);
        int rc = syncstore_resync(s, id, NULL, NULL, &err);
        atomic_store(&refuse_threads, 0);
        if (rc != SYNCSTORE_ERR_BUSY || !err.retryable) { fprintf(stderr, "refused thread: %s %s\n", syncstore_status_name(rc), err.message); ok = 0; }
        /* The run was not left registered: it starts again once threads can be made. */
        ok = ok && syncstore_resync(s, id, NULL, NULL, &err) == SYNCSTORE_OK &&
             syncstore_wait_sync(s, id, 10000, NULL, &err) == SYNCSTORE_OK &&
             syncstore_close(s, &err) == SYNCSTORE_OK;
        if (!ok) fprintf(stderr, "refused thread: %s\n", err.message);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (WIFSIGNALED(status)) fprintf(stderr, "refused thread: the child hung (signal %d)\n", WTERMSIG(status));
}
#endif

/* ---- 2. Sync calls racing the last close: no engine left behind, no callback after close ---- */

#define RACERS 8

/* One open..close of the store; racers take all of it through one atomic pointer. */
typedef struct {
    syncstore_store *store;
    int64_t sync_id;
    atomic_int closed;    /* set once syncstore_close returned */
    atomic_int late;      /* callbacks that arrived after that */
    atomic_int terminal;  /* terminal callbacks */
} round_ctx;

typedef struct {
    round_ctx *_Atomic round; /* NULL between rounds */
    atomic_int stop;
    atomic_int started_runs, unexpected;
} race_shared;

static void race_status(const char *state_json, void *context) {
    round_ctx *r = context;
    if (atomic_load(&r->closed)) atomic_fetch_add(&r->late, 1);
    if (state_json && state_is_terminal(state_json)) atomic_fetch_add(&r->terminal, 1);
}

static int quick_fetch(void *context, const char *target_json, int64_t since_ms, const char *continuation,
                       char **out_page_json, syncstore_error *err) {
    (void)context; (void)target_json; (void)since_ms; (void)continuation; (void)err;
    *out_page_json = dup_text("{\"records\":[{\"Id\":\"a\",\"n\":1,\"LastModifiedDate\":\"2026-01-01T00:00:00.000Z\"}]}");
    return SYNCSTORE_OK;
}

static void *racer_main(void *arg) {
    race_shared *sh = arg;
    int me = 0;
    while (!atomic_load(&sh->stop)) {
        round_ctx *r = atomic_load(&sh->round);
        if (!r) { sleep_ms(1); continue; }
        syncstore_store *s = r->store;
        syncstore_error e;
        int rc;
        if (me++ % 2 == 0) {
            char *state = NULL;
            rc = syncstore_get_sync_status(s, r->sync_id, &state, &e);
            syncstore_free(state);
        } else {
            rc = syncstore_resync(s, r->sync_id, race_status, r, &e);
            if (rc == SYNCSTORE_OK) atomic_fetch_add(&sh->started_runs, 1);
        }
        /* OK before the close, STATE (closed handle or store) after it; BUSY only for a run
         * of this sync already queued, never the sync lock of an engine left behind. */
        if (rc != SYNCSTORE_OK && rc != SYNCSTORE_ERR_STATE && rc != SYNCSTORE_ERR_NOT_FOUND &&
            !(rc == SYNCSTORE_ERR_BUSY && strstr(e.message, "already running"))) {
            if (atomic_fetch_add(&sh->unexpected, 1) < 3) fprintf(stderr, "racing call: %s %s\n", syncstore_status_name(rc), e.message);
        }
    }
    return NULL;
}

static void test_sync_calls_racing_close(void) {
    syncstore_error err;
    syncstore_custom_target target = {NULL, quick_fetch, NULL, NULL};
    const char *config = "{\"storeName\":\"race-close\"}";
    /* The sync outlives the rounds (it is stored); each round opens the store, lets the racers
     * call through the new handle, and closes it. The racers are the first to touch the sync
     * engine in a round: a lookup that loses the race must not build one after the close. */
    syncstore_store *s = NULL;
    int64_t id = 0;
    EXPECT(syncstore_open(root, config, &s, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(s, "things", ID_SPECS, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_custom_target(s, "quick", &target, &err), SYNCSTORE_OK, &err);
    /* In the rounds the type is not registered: runs end FAILED at once, callbacks and all. */
    EXPECT(syncstore_create_sync_down(s, "{\"type\":\"quick\"}", "things", NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    race_shared sh = {0};
    pthread_t threads[RACERS];
    for (int k = 0; k < RACERS; k++) pthread_create(&threads[k], NULL, racer_main, &sh);
    enum { ROUNDS = 400 };
    round_ctx *rounds = calloc(ROUNDS, sizeof *rounds);
    int busy_after = 0, late = 0, terminal = 0;
    double deadline = now_s() + 5;
    int played = 0;
    for (int i = 0; i < ROUNDS && now_s() < deadline; i++, played++) {
        if (syncstore_open(root, config, &s, &err) != SYNCSTORE_OK) { EXPECT(SYNCSTORE_ERR_INTERNAL, SYNCSTORE_OK, &err); break; }
        rounds[i].store = s;
        rounds[i].sync_id = id;
        atomic_store(&sh.round, &rounds[i]);
        sleep_ms(i % 3);
        EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
        atomic_store(&rounds[i].closed, 1);
        atomic_store(&sh.round, NULL);
        /* No sync engine of this round is left holding the store's sync lock. */
        EXPECT(syncstore_open(root, config, &s, &err), SYNCSTORE_OK, &err);
        char *state = NULL;
        int rc = syncstore_get_sync_status(s, id, &state, &err);
        syncstore_free(state);
        if (rc != SYNCSTORE_OK && busy_after++ < 3) fprintf(stderr, "round %d: get_sync_status %s %s\n", i, syncstore_status_name(rc), err.message);
        EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    }
    atomic_store(&sh.stop, 1);
    for (int k = 0; k < RACERS; k++) pthread_join(threads[k], NULL);
    sleep_ms(200); /* callbacks of an engine left behind would arrive by now */
    for (int i = 0; i < played; i++) {
        late += atomic_load(&rounds[i].late);
        terminal += atomic_load(&rounds[i].terminal);
    }
    CHECK(busy_after == 0);
    CHECK(late == 0);
    CHECK(atomic_load(&sh.unexpected) == 0);
    CHECK(atomic_load(&sh.started_runs) > 0);
    /* Every run started ended with exactly one terminal callback, before its close returned. */
    CHECK(terminal == atomic_load(&sh.started_runs));
    if (late) fprintf(stderr, "%d callbacks arrived after syncstore_close returned\n", late);
    if (terminal != atomic_load(&sh.started_runs)) fprintf(stderr, "%d runs started, %d terminal callbacks\n", atomic_load(&sh.started_runs), terminal);
    /* The store opens and syncs at once afterwards. */
    EXPECT(syncstore_open(root, config, &s, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_custom_target(s, "quick", &target, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_resync(s, id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    char *state = NULL;
    EXPECT(syncstore_wait_sync(s, id, 10000, &state, &err), SYNCSTORE_OK, &err);
    CHECK(state && strstr(state, "\"DONE\""));
    syncstore_free(state);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    free(rounds);
}

/* ---- 6. Open racing the last close: one store object per file ---- */

typedef struct {
    atomic_int stop, busy, failures, rounds;
    pthread_barrier_t barrier;
} churn_shared;

static int slow_fetch(void *context, const char *target_json, int64_t since_ms, const char *continuation,
                      char **out_page_json, syncstore_error *err) {
    (void)context; (void)target_json; (void)since_ms; (void)continuation; (void)err;
    sleep_ms(3);
    *out_page_json = dup_text("{\"records\":[]}");
    return SYNCSTORE_OK;
}

static void *churn_main(void *arg) {
    churn_shared *sh = arg;
    syncstore_custom_target target = {NULL, slow_fetch, NULL, NULL};
    pthread_barrier_wait(&sh->barrier);
    for (int i = 0; i < 60; i++) {
        syncstore_error e;
        syncstore_store *s = NULL;
        if (syncstore_open(root, "{\"storeName\":\"churn\"}", &s, &e) != SYNCSTORE_OK) {
            fprintf(stderr, "open: %s\n", e.message);
            atomic_fetch_add(&sh->failures, 1);
            continue;
        }
        syncstore_register_custom_target(s, "slow", &target, NULL);
        /* A run in flight makes the close of the last handle take a while. */
        int rc = syncstore_sync_down(s, "{\"type\":\"slow\"}", "things", NULL, NULL, NULL, NULL, NULL, &e);
        if (rc == SYNCSTORE_ERR_BUSY && strstr(e.message, "Another process")) atomic_fetch_add(&sh->busy, 1);
        else if (rc != SYNCSTORE_OK) { fprintf(stderr, "sync_down: %s %s\n", syncstore_status_name(rc), e.message); atomic_fetch_add(&sh->failures, 1); }
        if (syncstore_close(s, &e) != SYNCSTORE_OK) atomic_fetch_add(&sh->failures, 1);
        atomic_fetch_add(&sh->rounds, 1);
    }
    return NULL;
}

static void test_open_racing_close(void) {
    syncstore_error err;
    syncstore_store *s = NULL;
    EXPECT(syncstore_open(root, "{\"storeName\":\"churn\"}", &s, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(s, "things", ID_SPECS, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    enum { CHURNERS = 4 };
    churn_shared sh = {0};
    pthread_barrier_init(&sh.barrier, NULL, CHURNERS);
    pthread_t threads[CHURNERS];
    for (int k = 0; k < CHURNERS; k++) pthread_create(&threads[k], NULL, churn_main, &sh);
    for (int k = 0; k < CHURNERS; k++) pthread_join(threads[k], NULL);
    pthread_barrier_destroy(&sh.barrier);
    CHECK(atomic_load(&sh.rounds) == CHURNERS * 60);
    CHECK(atomic_load(&sh.busy) == 0);
    CHECK(atomic_load(&sh.failures) == 0);
    if (atomic_load(&sh.busy)) fprintf(stderr, "%d sync calls found a second store object's sync lock\n", atomic_load(&sh.busy));
}

/* ---- Open inside callbacks while stores close: BUSY, never a deadlock ---- */

typedef struct {
    atomic_int *entered;      /* counts callbacks waiting for go */
    atomic_int *go;           /* the callback acts once it is set */
    syncstore_store *close_me; /* closed from inside (another store's last handle), or NULL */
    const char *open_config;  /* opened from inside once its store is closing, or NULL */
    atomic_int close_rc, open_rc;
    syncstore_store *opened;
} gate_ctx;

static int gate_fetch(void *context, const char *target_json, int64_t since_ms, const char *continuation,
                      char **out_page_json, syncstore_error *err) {
    (void)target_json; (void)since_ms; (void)continuation; (void)err;
    gate_ctx *g = context;
    atomic_fetch_add(g->entered, 1);
    for (int i = 0; i < 10000 && !atomic_load(g->go); i++) sleep_ms(1);
    syncstore_error e;
    if (g->close_me) atomic_store(&g->close_rc, syncstore_close(g->close_me, &e));
    if (g->open_config) {
        sleep_ms(100); /* the store's last close has begun by now */
        atomic_store(&g->open_rc, syncstore_open(root, g->open_config, &g->opened, &e));
    }
    *out_page_json = dup_text("{\"records\":[]}");
    return SYNCSTORE_OK;
}

static syncstore_store *gated_store(const char *config, gate_ctx *g, syncstore_error *err) {
    syncstore_store *s = NULL;
    EXPECT(syncstore_open(root, config, &s, err), SYNCSTORE_OK, err);
    syncstore_custom_target target = {g, gate_fetch, NULL, NULL};
    EXPECT(syncstore_register_soup(s, "things", ID_SPECS, err), SYNCSTORE_OK, err);
    EXPECT(syncstore_register_custom_target(s, "gate", &target, err), SYNCSTORE_OK, err);
    EXPECT(syncstore_sync_down(s, "{\"type\":\"gate\"}", "things", NULL, NULL, NULL, NULL, NULL, err), SYNCSTORE_OK, err);
    return s;
}

static void test_open_inside_callbacks_during_close(void) {
    syncstore_error err;
    const char *x_config = "{\"storeName\":\"gate-x\"}", *y_config = "{\"storeName\":\"gate-y\"}";
    for (int round = 0; round < 3; round++) {
        atomic_int go = 0, entered = 0;
        /* X's callback closes Y's last handle while Y's callback opens X, whose last close
         * waits for X's callback; and X's own callback opens X. */
        gate_ctx gx = {.entered = &entered, .go = &go, .open_config = x_config, .close_rc = -1, .open_rc = -1};
        gate_ctx gy = {.entered = &entered, .go = &go, .open_config = x_config, .close_rc = -1, .open_rc = -1};
        syncstore_store *y = gated_store(y_config, &gy, &err);
        gx.close_me = y;
        syncstore_store *x = gated_store(x_config, &gx, &err);
        /* Both callbacks are running before X's close starts (it then waits for them). */
        for (int i = 0; i < 10000 && atomic_load(&entered) < 2; i++) sleep_ms(1);
        CHECK(atomic_load(&entered) == 2);
        atomic_store(&go, 1);
        EXPECT(syncstore_close(x, &err), SYNCSTORE_OK, &err);
        CHECK(atomic_load(&gx.close_rc) == SYNCSTORE_OK);
        CHECK(atomic_load(&gx.open_rc) == SYNCSTORE_ERR_BUSY);
        CHECK(atomic_load(&gy.open_rc) == SYNCSTORE_ERR_BUSY);
        if (atomic_load(&gx.open_rc) != SYNCSTORE_ERR_BUSY || atomic_load(&gy.open_rc) != SYNCSTORE_ERR_BUSY)
            fprintf(stderr, "round %d: open inside callbacks: X %s, Y %s (close of Y inside X: %s)\n", round, syncstore_status_name(atomic_load(&gx.open_rc)), syncstore_status_name(atomic_load(&gy.open_rc)), syncstore_status_name(atomic_load(&gx.close_rc)));
        if (gx.opened) syncstore_close(gx.opened, NULL);
        if (gy.opened) syncstore_close(gy.opened, NULL);
    }
}

/* ---- 3. remove_soup / register_soup racing readers ---- */

#define READERS 4

typedef struct {
    syncstore_store *store;
    atomic_int stop;
} readers_shared;

static void *soup_reader_main(void *arg) {
    readers_shared *sh = arg;
    int k = 0;
    while (!atomic_load(&sh->stop)) {
        char *out = NULL;
        int exists = 0;
        switch (k++ % 3) {
        case 0:
            syncstore_query_page(sh->store, "volatile", "{\"queryType\":\"range\",\"indexPath\":\"Id\",\"pageSize\":5}", 0, &out, NULL);
            break;
        case 1: syncstore_soup_exists(sh->store, "volatile", &exists, NULL); break;
        default: syncstore_retrieve(sh->store, "volatile", "[1,2]", &out, NULL); break;
        }
        syncstore_free(out);
    }
    return NULL;
}

static void test_remove_register_racing_readers(void) {
    syncstore_error err;
    readers_shared sh = {0};
    EXPECT(syncstore_open(root, "{\"storeName\":\"soups\"}", &sh.store, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(sh.store, "volatile", ID_SPECS, &err), SYNCSTORE_OK, &err);
    pthread_t threads[READERS];
    for (int k = 0; k < READERS; k++) pthread_create(&threads[k], NULL, soup_reader_main, &sh);
    int bad = 0;
    /* Back to back, as a host would: a reader's catalog read from the file just before the
     * removal commits must not bring the soup back afterwards. */
    double deadline = now_s() + 5;
    for (int i = 0; i < 1000 && bad < 5 && now_s() < deadline; i++) {
        int rc = syncstore_remove_soup(sh.store, "volatile", &err);
        if (rc != SYNCSTORE_OK) { bad++; fprintf(stderr, "round %d: remove_soup %s\n", i, err.message); continue; }
        rc = syncstore_register_soup(sh.store, "volatile", ID_SPECS, &err);
        if (rc != SYNCSTORE_OK) { bad++; fprintf(stderr, "round %d: register_soup %s\n", i, err.message); continue; }
        rc = syncstore_upsert(sh.store, "volatile", "{\"Id\":\"x\",\"n\":1}", NULL, NULL, &err);
        if (rc != SYNCSTORE_OK) {
            bad++;
            fprintf(stderr, "round %d: register_soup said OK, then upsert %s %s\n", i, syncstore_status_name(rc), err.message);
        }
    }
    atomic_store(&sh.stop, 1);
    for (int k = 0; k < READERS; k++) pthread_join(threads[k], NULL);
    CHECK(bad == 0);
    EXPECT(syncstore_close(sh.store, &err), SYNCSTORE_OK, &err);
}

/* ---- 5. A cursor opened before alter_soup pages after it ---- */

static int cursor_page_ids(syncstore_store *s, int64_t cursor, int64_t page, char *ids, size_t size, syncstore_error *err) {
    char *out = NULL;
    int rc = syncstore_cursor_move_to_page(s, cursor, page, &out, err);
    ids[0] = 0;
    if (rc != SYNCSTORE_OK) return rc;
    json_t *c = check_parse(out);
    json_t *entries = json_object_get(c, "currentPageOrderedEntries");
    size_t i;
    json_t *entry;
    json_array_foreach(entries, i, entry) {
        const char *id = json_is_array(entry) ? json_string_value(json_array_get(entry, 0))
                                              : json_string_value(json_object_get(entry, "Id"));
        strncat(ids, id ? id : "?", size - strlen(ids) - 1);
        strncat(ids, ",", size - strlen(ids) - 1);
    }
    json_decref(c);
    return rc;
}

static int64_t open_cursor(syncstore_store *s, const char *spec, int smart, syncstore_error *err) {
    char *out = NULL;
    int rc = smart ? syncstore_run_smart_query(s, spec, &out, err) : syncstore_query_soup(s, "people", spec, &out, err);
    EXPECT(rc, SYNCSTORE_OK, err);
    json_t *c = check_parse(out);
    int64_t id = json_integer_value(json_object_get(c, "cursorId"));
    json_decref(c);
    return id;
}

static void test_cursor_across_alter(void) {
    syncstore_error err;
    syncstore_store *s = NULL;
    EXPECT(syncstore_open(root, "{\"storeName\":\"alter\"}", &s, &err), SYNCSTORE_OK, &err);
    const char *with_n = "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"n\",\"type\":\"integer\"}]";
    const char *without_n = "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"name\",\"type\":\"string\"}]";
    EXPECT(syncstore_register_soup(s, "people", with_n, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_upsert(s, "people",
                            "[{\"Id\":\"a\",\"n\":5,\"name\":\"A\"},{\"Id\":\"b\",\"n\":4,\"name\":\"B\"},{\"Id\":\"c\",\"n\":3,\"name\":\"C\"},"
                            "{\"Id\":\"d\",\"n\":2,\"name\":\"D\"},{\"Id\":\"e\",\"n\":1,\"name\":\"E\"}]",
                            NULL, NULL, &err), SYNCSTORE_OK, &err);
    for (int round = 0; round < 3; round++) {
        /* Cursors planned on the index of n: a range on it, and Smart SQL naming it. */
        int64_t range = open_cursor(s, "{\"queryType\":\"range\",\"indexPath\":\"n\",\"beginKey\":2,\"orderPath\":\"n\",\"pageSize\":2}", 0, &err);
        int64_t smart = open_cursor(s, "{\"queryType\":\"smart\",\"smartSql\":\"select {people:Id} from {people} where {people:n} >= 2 order by {people:n}\",\"pageSize\":2}", 1, &err);
        EXPECT(syncstore_alter_soup(s, "people", without_n, round % 2, &err), SYNCSTORE_OK, &err);
        char ids[128];
        EXPECT(cursor_page_ids(s, range, 1, ids, sizeof ids, &err), SYNCSTORE_OK, &err);
        CHECK(strcmp(ids, "b,a,") == 0);
        EXPECT(cursor_page_ids(s, smart, 1, ids, sizeof ids, &err), SYNCSTORE_OK, &err);
        CHECK(strcmp(ids, "b,a,") == 0);
        EXPECT(cursor_page_ids(s, range, 0, ids, sizeof ids, &err), SYNCSTORE_OK, &err);
        CHECK(strcmp(ids, "d,c,") == 0);
        syncstore_cursor_close(s, range, NULL);
        syncstore_cursor_close(s, smart, NULL);
        EXPECT(syncstore_alter_soup(s, "people", with_n, 1, &err), SYNCSTORE_OK, &err);
    }
    /* A cursor whose soup was removed says so. */
    int64_t gone = open_cursor(s, "{\"queryType\":\"range\",\"indexPath\":\"n\",\"pageSize\":2}", 0, &err);
    EXPECT(syncstore_remove_soup(s, "people", &err), SYNCSTORE_OK, &err);
    char ids[128];
    EXPECT(cursor_page_ids(s, gone, 1, ids, sizeof ids, &err), SYNCSTORE_ERR_NOT_FOUND, &err);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
}

int main(int argc, char **argv) {
    root = argc > 1 ? argv[1] : "test-stores/lifetime";
    const char *only = argc > 2 ? argv[2] : "";
    check_fresh_dir(root);
#if REFUSE_THREADS
    if (!*only || strstr(only, "refused")) test_worker_thread_refused();
#endif
    if (!*only || strstr(only, "worker")) test_callbacks_run_on_the_worker();
    if (!*only || strstr(only, "close")) test_sync_calls_racing_close();
    if (!*only || strstr(only, "open")) test_open_racing_close();
    if (!*only || strstr(only, "inside")) test_open_inside_callbacks_during_close();
    if (!*only || strstr(only, "soup")) test_remove_register_racing_readers();
    if (!*only || strstr(only, "cursor")) test_cursor_across_alter();
    return check_finish();
}
