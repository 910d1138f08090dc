/* Stress harness for lifetime and threads through the C ABI (the header's "Callbacks, threads and close"), written as a
 * multi-threaded host would use the library, for plain, ThreadSanitizer and AddressSanitizer
 * builds (their flags come from the build, not from here). For a set time, at once:
 *   - open/close churn on one store name from several threads, each round maybe starting a
 *     sync and closing during it (close must deliver the terminal callback first, and none
 *     after: the run's context is freed right after close, so ASan sees a late callback);
 *   - sync calls (status, resync, stop/restart) racing those closes through every handle;
 *   - custom target and status callbacks re-entering the API (reads, writes, open; close and
 *     wait must answer STATE from inside);
 *   - remove_soup/register_soup racing readers (a registered soup must exist);
 *   - cursors paged from several threads while alter_soup changes the indexes they use.
 * Usage: test_stress_lifetime <root> [seconds]; SYNCSTORE_STRESS_SECONDS also sets the time
 * (default 3). */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *root;
static double deadline;
static const char *CHURN = "{\"storeName\":\"churn\"}";
static const char *SPECS = "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"n\",\"type\":\"integer\"}]";
static const char *SPECS_NO_N = "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"name\",\"type\":\"string\"}]";

/* Problems found, by kind; each must stay 0. */
static atomic_int bad_busy_lock;      /* BUSY "Another process": a sync engine left behind */
static atomic_int bad_late_callback;  /* a callback after the close of its run's handle */
static atomic_int bad_terminal;       /* a run without exactly one terminal callback at close */
static atomic_int bad_reentry;        /* close/wait inside a callback not STATE */
static atomic_int bad_status;         /* a call answered a code it must not */
static atomic_int bad_soup;           /* register_soup OK but the soup missing */
static atomic_int bad_cursor;         /* a cursor page failed */
/* Work done, to show each part ran. */
static atomic_int n_opens, n_runs, n_racing_calls, n_reentries, n_soup_rounds, n_cursor_pages, n_alters;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static int running(void) { return now_s() < deadline; }

static unsigned next_rand(unsigned *seed) {
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 16) & 0x7fff;
}

static char *dup_text(const char *s) {
    char *copy = malloc(strlen(s) + 1);
    if (copy) strcpy(copy, s);
    return copy;
}

static void note(atomic_int *counter, const char *what, int rc, const syncstore_error *e) {
    if (atomic_fetch_add(counter, 1) < 5)
        fprintf(stderr, "%s: %s %s\n", what, syncstore_status_name(rc), e ? e->message : "");
}

/* A code a call racing a close, or made through a closed handle, may answer. */
static int racing_ok(int rc, const syncstore_error *e) {
    if (rc == SYNCSTORE_ERR_BUSY && strstr(e->message, "Another process")) {
        note(&bad_busy_lock, "BUSY from the sync lock", rc, e);
        return 1; /* counted apart */
    }
    return rc == SYNCSTORE_OK || rc == SYNCSTORE_ERR_STATE || rc == SYNCSTORE_ERR_NOT_FOUND ||
           rc == SYNCSTORE_ERR_BUSY;
}

/* ---- handles of the churn store, published for racers and callbacks ---- */

#define SLOTS 4
static syncstore_store *_Atomic slots[SLOTS];
/* Syncs of the churn store, created up front (runs of them are started again and again). */
#define SYNCS 3
static int64_t churn_sync_ids[SYNCS];
static atomic_llong churn_sync_id; /* the one racers and callbacks use */

static syncstore_store *any_handle(unsigned *seed) { return atomic_load(&slots[next_rand(seed) % SLOTS]); }

/* Handles opened inside callbacks: they cannot be closed there (STATE), so churners close them. */
static pthread_mutex_t adopted_mu = PTHREAD_MUTEX_INITIALIZER;
static syncstore_store *adopted[64];
static int adopted_count;

static void close_adopted(void) {
    pthread_mutex_lock(&adopted_mu);
    int n = adopted_count;
    syncstore_store *mine[64];
    memcpy(mine, adopted, sizeof(syncstore_store *) * (size_t)n);
    adopted_count = 0;
    pthread_mutex_unlock(&adopted_mu);
    for (int i = 0; i < n; i++) {
        syncstore_error e;
        int rc = syncstore_close(mine[i], &e);
        if (rc != SYNCSTORE_OK) note(&bad_status, "close of a handle opened in a callback", rc, &e);
    }
}

/* ---- callbacks that re-enter the API ---- */

static void reenter(unsigned *seed) {
    syncstore_store *h = any_handle(seed);
    if (!h) return;
    syncstore_error e;
    char *out = NULL;
    int rc;
    atomic_fetch_add(&n_reentries, 1);
    switch (next_rand(seed) % 6) {
    case 0:
        rc = syncstore_wait_sync(h, atomic_load(&churn_sync_id), 100, &out, &e);
        if (rc != SYNCSTORE_ERR_STATE) note(&bad_reentry, "wait_sync inside a callback", rc, &e);
        break;
    case 1:
        /* Any handle of this store: the close would wait for this callback. */
        rc = syncstore_close(h, &e);
        if (rc != SYNCSTORE_ERR_STATE) note(&bad_reentry, "close inside a callback", rc, &e);
        break;
    case 2:
        rc = syncstore_get_sync_status(h, atomic_load(&churn_sync_id), &out, &e);
        if (!racing_ok(rc, &e)) note(&bad_status, "get_sync_status inside a callback", rc, &e);
        break;
    case 3:
        rc = syncstore_query_page(h, "things", "{\"queryType\":\"range\",\"indexPath\":\"Id\",\"pageSize\":3}", 0, &out, &e);
        if (rc != SYNCSTORE_OK && rc != SYNCSTORE_ERR_STATE) note(&bad_status, "query_page inside a callback", rc, &e);
        break;
    case 4:
        rc = syncstore_upsert(h, "notes", "{\"Id\":\"from-callback\",\"n\":1}", "Id", NULL, &e);
        if (rc != SYNCSTORE_OK && rc != SYNCSTORE_ERR_STATE) note(&bad_status, "upsert inside a callback", rc, &e);
        break;
    default: {
        /* Open from inside: OK, or BUSY while the store's last handle is closing. */
        syncstore_store *extra = NULL;
        rc = syncstore_open(root, CHURN, &extra, &e);
        if (rc == SYNCSTORE_OK) {
            pthread_mutex_lock(&adopted_mu);
            if (adopted_count < 64) adopted[adopted_count++] = extra;
            else extra = NULL;
            pthread_mutex_unlock(&adopted_mu);
            if (!extra) note(&bad_status, "too many handles opened in callbacks", 0, NULL);
        } else if (rc != SYNCSTORE_ERR_BUSY) {
            note(&bad_status, "open inside a callback", rc, &e);
        }
    }
    }
    syncstore_free(out);
}

typedef struct {
    unsigned magic;      /* RUN_MAGIC while alive: a late callback on freed memory shows here */
    atomic_int calls, terminal;
    atomic_int closed;   /* the handle's close returned */
    unsigned seed;
} run_ctx;
#define RUN_MAGIC 0x5eed1234u

static int is_terminal(const char *json) {
    return json && (strstr(json, "\"status\":\"DONE\"") || strstr(json, "\"status\":\"FAILED\"") ||
                    strstr(json, "\"status\":\"STOPPED\""));
}

static void run_status(const char *state_json, void *context) {
    run_ctx *c = context;
    if (c->magic != RUN_MAGIC || atomic_load(&c->closed)) { note(&bad_late_callback, "callback after close", 0, NULL); return; }
    atomic_fetch_add(&c->calls, 1);
    if (is_terminal(state_json)) atomic_fetch_add(&c->terminal, 1);
    reenter(&c->seed);
}

/* Racers' runs report here; it is never freed. */
static run_ctx racer_ctx = {.magic = RUN_MAGIC};

static void racer_status(const char *state_json, void *context) {
    (void)state_json; (void)context;
    atomic_fetch_add(&racer_ctx.calls, 1);
}

static atomic_uint target_seed = 7;

/* Five pages of three records, a little slow: closes land during runs. */
static int churn_fetch(void *context, const char *target_json, int64_t since_ms, const char *continuation,
                       char **out_page_json, syncstore_error *err) {
    (void)context; (void)target_json; (void)since_ms; (void)err;
    unsigned seed = atomic_fetch_add(&target_seed, 7919);
    int page = continuation ? atoi(continuation) : 0;
    reenter(&seed);
    sleep_us(300);
    char text[512];
    int len = snprintf(text, sizeof text, "{\"records\":[");
    for (int i = 0; i < 3; i++)
        len += snprintf(text + len, sizeof text - (size_t)len, "%s{\"Id\":\"r%d-%d\",\"n\":%d,\"LastModifiedDate\":\"2026-01-01T00:00:00.000Z\"}",
                        i ? "," : "", page, i, page);
    if (page < 4) snprintf(text + len, sizeof text - (size_t)len, "],\"next\":\"%d\"}", page + 1);
    else snprintf(text + len, sizeof text - (size_t)len, "]}");
    *out_page_json = dup_text(text);
    return *out_page_json ? SYNCSTORE_OK : SYNCSTORE_ERR_INTERNAL;
}

static const syncstore_custom_target churn_target = {NULL, churn_fetch, NULL, NULL};

/* ---- open/close churn, closing during syncs ---- */

static void *churner_main(void *arg) {
    int me = (int)(intptr_t)arg;
    unsigned seed = 1000u + (unsigned)me;
    while (running()) {
        syncstore_error e;
        syncstore_store *h = NULL;
        int rc = syncstore_open(root, CHURN, &h, &e);
        if (rc != SYNCSTORE_OK) { note(&bad_status, "open", rc, &e); continue; }
        atomic_fetch_add(&n_opens, 1);
        rc = syncstore_register_custom_target(h, "churn", &churn_target, &e);
        if (rc != SYNCSTORE_OK && !racing_ok(rc, &e)) note(&bad_status, "register_custom_target", rc, &e);
        atomic_store(&slots[me % SLOTS], h);
        run_ctx *runs[3] = {NULL, NULL, NULL};
        int nruns = (int)(next_rand(&seed) % 4);
        for (int r = 0; r < nruns && r < 3; r++) {
            run_ctx *c = calloc(1, sizeof *c);
            c->magic = RUN_MAGIC;
            c->seed = next_rand(&seed);
            rc = syncstore_resync(h, churn_sync_ids[(me + r) % SYNCS], run_status, c, &e);
            if (rc == SYNCSTORE_OK) { runs[r] = c; atomic_fetch_add(&n_runs, 1); continue; }
            free(c);
            /* BUSY while another handle's run of it is queued; STATE while a racer's
             * stop_syncs holds runs back */
            if (!racing_ok(rc, &e)) note(&bad_status, "resync", rc, &e);
        }
        /* Some reads and writes through the handle, then close: during the runs, or after. */
        char *out = NULL;
        rc = syncstore_query_page(h, "things", "{\"queryType\":\"range\",\"indexPath\":\"Id\",\"pageSize\":5}", 0, &out, &e);
        if (rc != SYNCSTORE_OK) note(&bad_status, "query_page", rc, &e);
        syncstore_free(out);
        sleep_us((long)(next_rand(&seed) % 3000));
        atomic_store(&slots[me % SLOTS], NULL);
        rc = syncstore_close(h, &e);
        if (rc != SYNCSTORE_OK) note(&bad_status, "close", rc, &e);
        for (int r = 0; r < 3; r++) {
            if (!runs[r]) continue;
            atomic_store(&runs[r]->closed, 1);
            if (atomic_load(&runs[r]->terminal) != 1) note(&bad_terminal, "terminal callbacks at close", atomic_load(&runs[r]->terminal), NULL);
            runs[r]->magic = 0;
            free(runs[r]);
        }
        close_adopted();
    }
    return NULL;
}

/* ---- sync calls racing the closes ---- */

static void *racer_main(void *arg) {
    unsigned seed = 77u + (unsigned)(intptr_t)arg;
    while (running()) {
        syncstore_store *h = any_handle(&seed);
        if (!h) { sleep_us(200); continue; }
        syncstore_error e;
        char *out = NULL;
        int rc;
        int64_t id = atomic_load(&churn_sync_id);
        switch (next_rand(&seed) % 10) {
        case 0: case 1: case 2: case 3: rc = syncstore_get_sync_status(h, id, &out, &e); break;
        case 4: case 5: case 6: rc = syncstore_resync(h, id, racer_status, &racer_ctx, &e); break;
        case 7: rc = syncstore_wait_sync(h, id, 5, &out, &e); break;
        case 8: rc = syncstore_stop_syncs(h, &e); break;
        default: rc = syncstore_restart_syncs(h, (int)(next_rand(&seed) % 2), racer_status, &racer_ctx, &e); break;
        }
        syncstore_free(out);
        atomic_fetch_add(&n_racing_calls, 1);
        if (!racing_ok(rc, &e)) note(&bad_status, "racing sync call", rc, &e);
    }
    return NULL;
}

/* ---- remove/register racing readers ---- */

static syncstore_store *soups_store;

static void *soup_writer_main(void *arg) {
    (void)arg;
    while (running()) {
        syncstore_error e;
        int rc = syncstore_remove_soup(soups_store, "volatile", &e);
        if (rc != SYNCSTORE_OK) { note(&bad_status, "remove_soup", rc, &e); continue; }
        rc = syncstore_register_soup(soups_store, "volatile", SPECS, &e);
        if (rc != SYNCSTORE_OK) { note(&bad_status, "register_soup", rc, &e); continue; }
        rc = syncstore_upsert(soups_store, "volatile", "[{\"Id\":\"a\",\"n\":1},{\"Id\":\"b\",\"n\":2},{\"Id\":\"c\",\"n\":3}]", NULL, NULL, &e);
        if (rc != SYNCSTORE_OK) note(&bad_soup, "upsert right after register_soup", rc, &e);
        atomic_fetch_add(&n_soup_rounds, 1);
    }
    return NULL;
}

static void *soup_reader_main(void *arg) {
    unsigned seed = 5u + (unsigned)(intptr_t)arg;
    while (running()) {
        syncstore_error e;
        char *out = NULL;
        int exists = 0, rc;
        switch (next_rand(&seed) % 4) {
        case 0: rc = syncstore_query_page(soups_store, "volatile", "{\"queryType\":\"range\",\"indexPath\":\"n\",\"pageSize\":2}", 0, &out, &e); break;
        case 1: rc = syncstore_soup_exists(soups_store, "volatile", &exists, &e); break;
        case 2: rc = syncstore_retrieve(soups_store, "volatile", "[1,2,3]", &out, &e); break;
        default: {
            rc = syncstore_query_soup(soups_store, "volatile", "{\"queryType\":\"range\",\"indexPath\":\"n\",\"pageSize\":1}", &out, &e);
            if (rc == SYNCSTORE_OK) {
                json_t *c = check_parse(out);
                out = NULL;
                int64_t id = json_integer_value(json_object_get(c, "cursorId"));
                json_decref(c);
                rc = syncstore_cursor_move_to_page(soups_store, id, 1, &out, &e);
                syncstore_cursor_close(soups_store, id, NULL);
            }
        }
        }
        syncstore_free(out);
        /* The soup comes and goes: NOT_FOUND is an answer, anything else but OK is not. */
        if (rc != SYNCSTORE_OK && rc != SYNCSTORE_ERR_NOT_FOUND) note(&bad_status, "soup reader", rc, &e);
    }
    return NULL;
}

/* ---- cursors from several threads while alter_soup changes their indexes ---- */

static syncstore_store *cursor_store;

static void *cursor_main(void *arg) {
    unsigned seed = 31u + (unsigned)(intptr_t)arg;
    while (running()) {
        syncstore_error e;
        char *out = NULL;
        int smart = next_rand(&seed) % 2;
        int rc = smart
            ? syncstore_run_smart_query(cursor_store, "{\"queryType\":\"smart\",\"smartSql\":\"select {people:Id} from {people} where {people:n} >= 10 order by {people:n}\",\"pageSize\":7}", &out, &e)
            : syncstore_query_soup(cursor_store, "people", "{\"queryType\":\"range\",\"indexPath\":\"n\",\"beginKey\":10,\"orderPath\":\"n\",\"pageSize\":7}", &out, &e);
        if (rc != SYNCSTORE_OK) { note(&bad_cursor, "open cursor", rc, &e); continue; }
        json_t *c = check_parse(out);
        int64_t id = json_integer_value(json_object_get(c, "cursorId"));
        int64_t pages = json_integer_value(json_object_get(c, "totalPages"));
        json_decref(c);
        for (int64_t p = 1; p < pages && running(); p++) {
            out = NULL;
            rc = syncstore_cursor_move_to_page(cursor_store, id, p, &out, &e);
            if (rc != SYNCSTORE_OK) { note(&bad_cursor, "cursor_move_to_page", rc, &e); break; }
            json_t *page = check_parse(out);
            if (json_array_size(json_object_get(page, "currentPageOrderedEntries")) == 0) note(&bad_cursor, "empty page", 0, NULL);
            json_decref(page);
            atomic_fetch_add(&n_cursor_pages, 1);
        }
        syncstore_cursor_close(cursor_store, id, NULL);
    }
    return NULL;
}

static void *alter_main(void *arg) {
    (void)arg;
    int k = 0;
    while (running()) {
        syncstore_error e;
        /* Adding the index of n back re-indexes (else it stays empty for stored entries, as
         * documented); dropping it may or may not. */
        int rc = syncstore_alter_soup(cursor_store, "people", k % 2 ? SPECS : SPECS_NO_N, k % 2 || k % 4 == 0, &e);
        if (rc != SYNCSTORE_OK) note(&bad_status, "alter_soup", rc, &e);
        k++;
        atomic_fetch_add(&n_alters, 1);
        sleep_us(2000);
    }
    return NULL;
}

/* ---- setup and the run ---- */

static void setup(void) {
    syncstore_error err;
    syncstore_store *s = NULL;
    EXPECT(syncstore_open(root, CHURN, &s, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(s, "things", SPECS, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(s, "notes", SPECS, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_custom_target(s, "churn", &churn_target, &err), SYNCSTORE_OK, &err);
    for (int i = 0; i < SYNCS; i++) {
        char name[32];
        snprintf(name, sizeof name, "churned%d", i);
        EXPECT(syncstore_create_sync_down(s, "{\"type\":\"churn\"}", "things", NULL, name, &churn_sync_ids[i], &err), SYNCSTORE_OK, &err);
    }
    atomic_store(&churn_sync_id, churn_sync_ids[0]);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);

    EXPECT(syncstore_open(root, "{\"storeName\":\"soups\"}", &soups_store, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(soups_store, "volatile", SPECS, &err), SYNCSTORE_OK, &err);

    EXPECT(syncstore_open(root, "{\"storeName\":\"cursors\"}", &cursor_store, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(cursor_store, "people", SPECS, &err), SYNCSTORE_OK, &err);
    json_t *people = json_array();
    for (int i = 0; i < 100; i++) {
        char id_text[16];
        snprintf(id_text, sizeof id_text, "p%03d", i);
        json_array_append_new(people, json_pack("{s:s,s:i,s:s}", "Id", id_text, "n", i, "name", id_text));
    }
    char *text = json_dumps(people, JSON_COMPACT);
    json_decref(people);
    EXPECT(syncstore_upsert(cursor_store, "people", text, NULL, NULL, &err), SYNCSTORE_OK, &err);
    free(text);
}

int main(int argc, char **argv) {
    root = argc > 1 ? argv[1] : "test-stores/stress_lifetime";
    double seconds = 3;
    const char *env = getenv("SYNCSTORE_STRESS_SECONDS");
    if (argc > 2) seconds = atof(argv[2]);
    else if (env && *env) seconds = atof(env);
    if (seconds <= 0) seconds = 3;
    check_fresh_dir(root);
    setup();

    enum { CHURNERS = 3, RACERS = 2, SOUP_READERS = 3, CURSORS = 3 };
    pthread_t threads[CHURNERS + RACERS + 1 + SOUP_READERS + CURSORS + 1];
    int n = 0;
    deadline = now_s() + seconds;
    for (int i = 0; i < CHURNERS; i++) pthread_create(&threads[n++], NULL, churner_main, (void *)(intptr_t)i);
    for (int i = 0; i < RACERS; i++) pthread_create(&threads[n++], NULL, racer_main, (void *)(intptr_t)i);
    pthread_create(&threads[n++], NULL, soup_writer_main, NULL);
    for (int i = 0; i < SOUP_READERS; i++) pthread_create(&threads[n++], NULL, soup_reader_main, (void *)(intptr_t)i);
    for (int i = 0; i < CURSORS; i++) pthread_create(&threads[n++], NULL, cursor_main, (void *)(intptr_t)i);
    pthread_create(&threads[n++], NULL, alter_main, NULL);
    for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
    close_adopted();

    syncstore_error err;
    EXPECT(syncstore_close(soups_store, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_close(cursor_store, &err), SYNCSTORE_OK, &err);
    /* Every churn handle is closed: the store opens and syncs at once, with no engine left. */
    syncstore_store *s = NULL;
    EXPECT(syncstore_open(root, CHURN, &s, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_custom_target(s, "churn", &churn_target, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_restart_syncs(s, 0, NULL, NULL, &err), SYNCSTORE_OK, &err);
    int64_t id = 0;
    EXPECT(syncstore_sync_down(s, "{\"type\":\"churn\"}", "things", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    char *state = NULL;
    EXPECT(syncstore_wait_sync(s, id, 60000, &state, &err), SYNCSTORE_OK, &err);
    CHECK(state && strstr(state, "\"DONE\""));
    syncstore_free(state);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);

    printf("%.1f s: %d opens, %d runs, %d racing sync calls, %d callback re-entries, %d remove/register rounds, "
           "%d cursor pages, %d alters; racers' runs called back %d times\n",
           seconds, atomic_load(&n_opens), atomic_load(&n_runs), atomic_load(&n_racing_calls), atomic_load(&n_reentries),
           atomic_load(&n_soup_rounds), atomic_load(&n_cursor_pages), atomic_load(&n_alters), atomic_load(&racer_ctx.calls));
    CHECK(atomic_load(&bad_busy_lock) == 0);
    CHECK(atomic_load(&bad_late_callback) == 0);
    CHECK(atomic_load(&bad_terminal) == 0);
    CHECK(atomic_load(&bad_reentry) == 0);
    CHECK(atomic_load(&bad_status) == 0);
    CHECK(atomic_load(&bad_soup) == 0);
    CHECK(atomic_load(&bad_cursor) == 0);
    CHECK(atomic_load(&n_opens) > 0 && atomic_load(&n_runs) > 0 && atomic_load(&n_racing_calls) > 0);
    CHECK(atomic_load(&n_reentries) > 0 && atomic_load(&n_soup_rounds) > 0 && atomic_load(&n_cursor_pages) > 0);
    return check_finish();
}
