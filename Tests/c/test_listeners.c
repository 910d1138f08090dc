/* Listeners through the C header: the soup filter, a NULL (every soup) listener, the notice's
 * JSON, none for a rolled-back write, remove (also inside its own callback), a write inside a
 * callback, close with live listeners (no callback after close returns), bad input codes; query
 * listeners (first notice, diff, page), a minimum interval, a buffered handle sending on its own
 * thread, and another process's commit (this program run again as the writer). */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *root;
static const char *SPECS = "[{\"path\":\"k\",\"type\":\"string\"}]";

/* What one listener heard: the notices, parsed, and whether a callback is running. */
typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    json_t *notices;        /* array */
    atomic_int running;     /* callbacks in progress */
    int sleep_ms;           /* each callback sleeps this long (a slow listener) */
    /* set for the listener that removes itself and writes in its callback */
    syncstore_store *store;
    syncstore_listener_token *self;
    int remove_status, write_status;
    pthread_t thread;
} heard_t;

static void heard_init(heard_t *h) {
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->mutex, NULL);
    pthread_cond_init(&h->cond, NULL);
    h->notices = json_array();
    h->remove_status = h->write_status = -1;
}

static void heard_free(heard_t *h) {
    json_decref(h->notices);
    pthread_mutex_destroy(&h->mutex);
    pthread_cond_destroy(&h->cond);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void on_change(const char *change_json, void *context) {
    heard_t *h = context;
    atomic_fetch_add(&h->running, 1);
    json_error_t error;
    json_t *notice = json_loads(change_json, 0, &error);
    if (!notice) notice = json_string(change_json);
    if (h->sleep_ms) sleep_ms(h->sleep_ms);
    if (h->store && h->self) {
        syncstore_error err;
        /* a write inside a callback: heard later, as any other */
        h->write_status = syncstore_upsert(h->store, "t", "{\"k\":\"echo\"}", NULL, NULL, &err);
        /* removing itself inside its own callback returns at once */
        h->remove_status = syncstore_remove_listener(h->store, h->self, &err);
        h->self = NULL;
    }
    pthread_mutex_lock(&h->mutex);
    h->thread = pthread_self();
    json_array_append_new(h->notices, notice);
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->mutex);
    atomic_fetch_sub(&h->running, 1);
}

/* Waits (up to 5 s) for `count` notices; returns how many arrived. */
static size_t wait_for(heard_t *h, size_t count) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    pthread_mutex_lock(&h->mutex);
    while (json_array_size(h->notices) < count)
        if (pthread_cond_timedwait(&h->cond, &h->mutex, &deadline) != 0) break;
    size_t n = json_array_size(h->notices);
    pthread_mutex_unlock(&h->mutex);
    return n;
}

/* How many commits the notices heard tell of (merged notices tell of several). */
static long long commits_locked(heard_t *h) {
    long long n = 0;
    for (size_t i = 0; i < json_array_size(h->notices); i++)
        n += json_integer_value(json_object_get(json_array_get(h->notices, i), "commits"));
    return n;
}

/* Waits (up to 5 s) until the notices tell of `count` commits; returns how many they tell of. */
static long long wait_commits(heard_t *h, long long count) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    pthread_mutex_lock(&h->mutex);
    while (commits_locked(h) < count)
        if (pthread_cond_timedwait(&h->cond, &h->mutex, &deadline) != 0) break;
    long long n = commits_locked(h);
    pthread_mutex_unlock(&h->mutex);
    return n;
}

static size_t heard_count(heard_t *h) {
    pthread_mutex_lock(&h->mutex);
    size_t n = json_array_size(h->notices);
    pthread_mutex_unlock(&h->mutex);
    return n;
}

static json_t *notice(heard_t *h, size_t i) { return json_array_get(h->notices, i); }
static json_t *first_soup(json_t *n) { return json_array_get(json_object_get(n, "soups"), 0); }
static const char *soup_name(json_t *n) { return str_or_empty(json_object_get(first_soup(n), "soup")); }
static const char *origin_kind(json_t *n) { return str_or_empty(json_object_get(json_object_get(n, "origin"), "kind")); }
static long long kind_count(json_t *n, const char *kind) {
    return (long long)json_integer_value(json_object_get(json_object_get(first_soup(n), kind), "count"));
}

static syncstore_store *open_store(const char *name) {
    char config[128];
    snprintf(config, sizeof config, "{\"storeName\":\"%s\"}", name);
    syncstore_error err;
    syncstore_store *s = NULL;
    EXPECT(syncstore_open(root, config, &s, &err), SYNCSTORE_OK, &err);
    return s;
}

static void test_bad_input(void) {
    syncstore_error err;
    syncstore_store *s = open_store("bad");
    EXPECT(syncstore_register_soup(s, "s", SPECS, &err), SYNCSTORE_OK, &err);
    heard_t h;
    heard_init(&h);
    syncstore_listener_token *token = (syncstore_listener_token *)1;
    EXPECT(syncstore_add_soup_listener(s, "s", NULL, &h, &token, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    CHECK(token == NULL);
    EXPECT(syncstore_add_soup_listener(s, "s", on_change, &h, NULL, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_add_soup_listener(NULL, "s", on_change, &h, &token, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_add_soup_listener(s, "nope", on_change, &h, &token, &err), SYNCSTORE_ERR_NOT_FOUND, &err);
    CHECK(token == NULL);
    EXPECT(syncstore_remove_listener(s, NULL, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    /* none of those added a listener: a write is heard by nobody */
    EXPECT(syncstore_upsert(s, "s", "{\"k\":\"a\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    sleep_ms(100);
    CHECK(heard_count(&h) == 0);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    /* a closed handle */
    EXPECT(syncstore_add_soup_listener(s, NULL, on_change, &h, &token, &err), SYNCSTORE_ERR_STATE, &err);
    heard_free(&h);
}

static void test_filter_origin_and_rollback(void) {
    syncstore_error err;
    syncstore_store *h1 = open_store("main"), *h2 = open_store("main"), *other = open_store("other");
    EXPECT(syncstore_register_soup(h1, "s", SPECS, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(h1, "t", SPECS, &err), SYNCSTORE_OK, &err);
    heard_t on_s, on_all;
    heard_init(&on_s);
    heard_init(&on_all);
    syncstore_listener_token *ts = NULL, *tall = NULL;
    EXPECT(syncstore_add_soup_listener(h1, "s", on_change, &on_s, &ts, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_add_soup_listener(h1, NULL, on_change, &on_all, &tall, &err), SYNCSTORE_OK, &err);
    CHECK(ts != NULL && tall != NULL && ts != tall);

    /* each commit waited for: commits made while a notice waits would be merged into it */
    EXPECT(syncstore_upsert(h1, "s", "[{\"k\":\"a\"},{\"k\":\"b\"}]", NULL, NULL, &err), SYNCSTORE_OK, &err);
    CHECK(wait_commits(&on_all, 1) == 1);
    EXPECT(syncstore_upsert(h2, "t", "{\"k\":\"c\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    CHECK(wait_commits(&on_all, 2) == 2);
    /* rolled back (the second entry is not an object): heard by nobody */
    EXPECT(syncstore_upsert(h1, "s", "[{\"k\":\"d\"}, 3]", NULL, NULL, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_remove_entries(h2, "t", "[999999]", &err), SYNCSTORE_OK, &err); /* changed nothing */
    EXPECT(syncstore_clear_soup(h2, "s", &err), SYNCSTORE_OK, &err);

    CHECK(wait_for(&on_all, 3) == 3);
    CHECK(wait_for(&on_s, 2) == 2);
    sleep_ms(100);
    CHECK(heard_count(&on_all) == 3);
    CHECK(heard_count(&on_s) == 2);
    CHECK(!pthread_equal(on_all.thread, pthread_self()));
    /* the NULL listener: one notice per commit, each naming its soup */
    CHECK(strcmp(soup_name(notice(&on_all, 0)), "s") == 0);
    CHECK(strcmp(soup_name(notice(&on_all, 1)), "t") == 0);
    CHECK(strcmp(soup_name(notice(&on_all, 2)), "s") == 0);
    CHECK(json_array_size(json_object_get(notice(&on_all, 0), "soups")) == 1);
    CHECK(strcmp(origin_kind(notice(&on_all, 0)), "handle") == 0);
    CHECK(strcmp(origin_kind(notice(&on_all, 1)), "otherHandle") == 0);
    CHECK(json_integer_value(json_object_get(notice(&on_all, 0), "sequence")) <
          json_integer_value(json_object_get(notice(&on_all, 1), "sequence")));
    /* the soup listener: only s */
    json_t *n0 = notice(&on_s, 0);
    CHECK(strcmp(soup_name(n0), "s") == 0);
    CHECK(kind_count(n0, "inserted") == 2 && kind_count(n0, "updated") == 0 && kind_count(n0, "deleted") == 0);
    CHECK(json_array_size(json_object_get(json_object_get(first_soup(n0), "inserted"), "ids")) == 2);
    CHECK(json_is_false(json_object_get(json_object_get(first_soup(n0), "inserted"), "cut")));
    CHECK(json_is_false(json_object_get(first_soup(n0), "cleared")));
    CHECK(json_is_false(json_object_get(first_soup(n0), "removed")));
    CHECK(json_is_true(json_object_get(first_soup(notice(&on_s, 1)), "cleared")));
    CHECK(strcmp(origin_kind(notice(&on_s, 1)), "otherHandle") == 0);

    /* removed: nothing more; twice, or through another store: STATE */
    EXPECT(syncstore_remove_listener(other, ts, &err), SYNCSTORE_ERR_STATE, &err);
    EXPECT(syncstore_remove_listener(h2, ts, &err), SYNCSTORE_OK, &err); /* any handle of its store */
    EXPECT(syncstore_remove_listener(h1, ts, &err), SYNCSTORE_ERR_STATE, &err);
    EXPECT(syncstore_upsert(h1, "s", "{\"k\":\"e\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    CHECK(wait_for(&on_all, 4) == 4);
    CHECK(heard_count(&on_s) == 2);
    /* the soup removed: its listener hears "removed" */
    heard_t on_t;
    heard_init(&on_t);
    syncstore_listener_token *tt = NULL;
    EXPECT(syncstore_add_soup_listener(h2, "t", on_change, &on_t, &tt, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_remove_soup(h1, "t", &err), SYNCSTORE_OK, &err);
    CHECK(wait_for(&on_t, 1) == 1);
    CHECK(json_is_true(json_object_get(first_soup(notice(&on_t, 0)), "removed")));
    EXPECT(syncstore_remove_listener(h1, tt, &err), SYNCSTORE_OK, &err);

    EXPECT(syncstore_remove_listener(h1, tall, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_close(h2, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_close(h1, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_close(other, &err), SYNCSTORE_OK, &err);
    heard_free(&on_s);
    heard_free(&on_all);
    heard_free(&on_t);
}

static void test_remove_and_write_inside_callback(void) {
    syncstore_error err;
    syncstore_store *s = open_store("inside");
    EXPECT(syncstore_register_soup(s, "s", SPECS, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(s, "t", SPECS, &err), SYNCSTORE_OK, &err);
    heard_t self, on_t;
    heard_init(&self);
    heard_init(&on_t);
    syncstore_listener_token *token = NULL, *tt = NULL;
    EXPECT(syncstore_add_soup_listener(s, "s", on_change, &self, &token, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_add_soup_listener(s, "t", on_change, &on_t, &tt, &err), SYNCSTORE_OK, &err);
    self.store = s;
    self.self = token;
    EXPECT(syncstore_upsert(s, "s", "{\"k\":\"a\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    CHECK(wait_for(&self, 1) == 1);
    CHECK(self.remove_status == SYNCSTORE_OK);
    CHECK(self.write_status == SYNCSTORE_OK);
    CHECK(wait_for(&on_t, 1) == 1); /* the callback's write was heard */
    EXPECT(syncstore_upsert(s, "s", "{\"k\":\"b\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    sleep_ms(100);
    CHECK(heard_count(&self) == 1);
    EXPECT(syncstore_remove_listener(s, token, &err), SYNCSTORE_ERR_STATE, &err);
    /* tt is never removed: the close releases it */
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    heard_free(&self);
    heard_free(&on_t);
}

static void test_remove_waits_and_close(void) {
    syncstore_error err;
    syncstore_store *h1 = open_store("closing"), *h2 = open_store("closing");
    EXPECT(syncstore_register_soup(h1, "s", SPECS, &err), SYNCSTORE_OK, &err);
    heard_t slow, by_h2, by_h1;
    heard_init(&slow);
    heard_init(&by_h2);
    heard_init(&by_h1);
    slow.sleep_ms = 300;
    by_h2.sleep_ms = 300;
    syncstore_listener_token *tslow = NULL, *t2 = NULL, *t1 = NULL;
    /* remove waits for a running callback of its token */
    EXPECT(syncstore_add_soup_listener(h1, "s", on_change, &slow, &tslow, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_upsert(h1, "s", "{\"k\":\"a\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    while (atomic_load(&slow.running) == 0 && heard_count(&slow) == 0) sleep_ms(5);
    EXPECT(syncstore_remove_listener(h1, tslow, &err), SYNCSTORE_OK, &err);
    CHECK(atomic_load(&slow.running) == 0);
    CHECK(heard_count(&slow) == 1);

    /* closing a handle (not the last) takes its listeners, waiting for a callback in progress */
    EXPECT(syncstore_add_soup_listener(h2, NULL, on_change, &by_h2, &t2, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_add_soup_listener(h1, NULL, on_change, &by_h1, &t1, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_upsert(h1, "s", "{\"k\":\"b\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    while (atomic_load(&by_h2.running) == 0 && heard_count(&by_h2) == 0) sleep_ms(5);
    EXPECT(syncstore_close(h2, &err), SYNCSTORE_OK, &err);
    CHECK(atomic_load(&by_h2.running) == 0);
    size_t h2_heard = heard_count(&by_h2);
    EXPECT(syncstore_remove_listener(h1, t2, &err), SYNCSTORE_ERR_STATE, &err);
    EXPECT(syncstore_upsert(h1, "s", "{\"k\":\"c\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    CHECK(wait_for(&by_h1, 2) == 2);
    CHECK(heard_count(&by_h2) == h2_heard);

    /* the last close with live listeners: no callback runs after it returns */
    by_h1.sleep_ms = 50;
    for (int i = 0; i < 20; i++) {
        char entry[64];
        snprintf(entry, sizeof entry, "{\"k\":\"x%d\"}", i);
        EXPECT(syncstore_upsert(h1, "s", entry, NULL, NULL, &err), SYNCSTORE_OK, &err);
    }
    EXPECT(syncstore_close(h1, &err), SYNCSTORE_OK, &err);
    CHECK(atomic_load(&by_h1.running) == 0);
    size_t at_close = heard_count(&by_h1);
    sleep_ms(300);
    CHECK(heard_count(&by_h1) == at_close);
    CHECK(at_close < 22); /* queued notices were dropped, not delivered late */
    /* the store opens again at once, without listeners */
    syncstore_store *again = open_store("closing");
    EXPECT(syncstore_upsert(again, "s", "{\"k\":\"d\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    sleep_ms(100);
    CHECK(heard_count(&by_h1) == at_close);
    EXPECT(syncstore_close(again, &err), SYNCSTORE_OK, &err);
    heard_free(&slow);
    heard_free(&by_h2);
    heard_free(&by_h1);
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_query_listener(void) {
    syncstore_error err;
    syncstore_store *s = open_store("query");
    EXPECT(syncstore_register_soup(s, "s", SPECS, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_upsert(s, "s", "[{\"k\":\"a\"},{\"k\":\"b\"}]", NULL, NULL, &err), SYNCSTORE_OK, &err);
    heard_t h;
    heard_init(&h);
    syncstore_listener_token *token = (syncstore_listener_token *)1;
    /* bad specs: nothing added */
    EXPECT(syncstore_add_query_listener(s, NULL, on_change, &h, &token, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    CHECK(token == NULL);
    EXPECT(syncstore_add_query_listener(s, "{\"queryType\":\"range\"}", on_change, &h, &token, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_add_query_listener(s, "{\"soupName\":\"nope\",\"queryType\":\"range\"}", on_change, &h, &token, &err),
           SYNCSTORE_ERR_NOT_FOUND, &err);
    EXPECT(syncstore_add_query_listener(s, "{\"queryType\":\"smart\",\"smartSql\":\"drop table soup_attrs\"}", on_change, &h,
                                        &token, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_add_query_listener(s, "{\"soupName\":\"s\",\"queryType\":\"range\"}", NULL, &h, &token, &err),
           SYNCSTORE_ERR_ARGUMENT, &err);
    sleep_ms(50);
    CHECK(heard_count(&h) == 0);

    const char *spec = "{\"soupName\":\"s\",\"queryType\":\"exact\",\"indexPath\":\"k\",\"matchKey\":\"a\",\"pageSize\":1}";
    EXPECT(syncstore_add_query_listener(s, spec, on_change, &h, &token, &err), SYNCSTORE_OK, &err);
    CHECK(wait_for(&h, 1) == 1);
    json_t *first = notice(&h, 0);
    CHECK(strcmp(origin_kind(first), "initial") == 0);
    CHECK(json_integer_value(json_object_get(first, "totalEntries")) == 1);
    CHECK(json_integer_value(json_object_get(json_object_get(first, "added"), "count")) == 1);
    CHECK(json_array_size(json_object_get(first, "currentPageOrderedEntries")) == 1);
    /* a write outside the result is not heard; one inside is, with the diff */
    EXPECT(syncstore_upsert(s, "s", "{\"k\":\"zz\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_upsert(s, "s", "{\"k\":\"a\",\"second\":true}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    CHECK(wait_for(&h, 2) == 2);
    sleep_ms(100);
    CHECK(heard_count(&h) == 2);
    json_t *second = notice(&h, 1);
    CHECK(strcmp(origin_kind(second), "handle") == 0);
    CHECK(json_integer_value(json_object_get(second, "totalEntries")) == 2);
    CHECK(json_integer_value(json_object_get(json_object_get(second, "added"), "count")) == 1);
    CHECK(json_integer_value(json_object_get(json_object_get(second, "removed"), "count")) == 0);
    CHECK(json_array_size(json_object_get(second, "currentPageOrderedEntries")) == 1); /* pageSize */
    /* an interval: bad values refused; commits inside it merged */
    EXPECT(syncstore_set_listener_interval(s, token, -1, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_set_listener_interval(s, NULL, 10, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_set_listener_interval(s, token, 300, &err), SYNCSTORE_OK, &err);
    for (int i = 0; i < 10; i++) EXPECT(syncstore_upsert(s, "s", "{\"k\":\"a\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    sleep_ms(800);
    size_t after = heard_count(&h);
    CHECK(after >= 3 && after <= 4);
    long long added = 0;
    for (size_t i = 2; i < after; i++) added += json_integer_value(json_object_get(json_object_get(notice(&h, i), "added"), "count"));
    CHECK(added == 10);
    EXPECT(syncstore_remove_listener(s, token, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_set_listener_interval(s, token, 10, &err), SYNCSTORE_ERR_STATE, &err);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    heard_free(&h);
}

/* The buffered handle's ready callback: counts calls. */
static atomic_int ready_calls;
static void on_ready(void *context) {
    (void)context;
    atomic_fetch_add(&ready_calls, 1);
}

static void test_buffered_handle(void) {
    syncstore_error err;
    syncstore_store *s = open_store("buffered"), *writer = open_store("buffered");
    EXPECT(syncstore_register_soup(s, "s", SPECS, &err), SYNCSTORE_OK, &err);
    int64_t sent = -1;
    EXPECT(syncstore_send_notifications(s, &sent, &err), SYNCSTORE_ERR_STATE, &err); /* not buffered */
    EXPECT(syncstore_send_notifications(NULL, &sent, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_buffer_notifications(NULL, on_ready, NULL, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_buffer_notifications(s, on_ready, NULL, &err), SYNCSTORE_OK, &err);
    heard_t h;
    heard_init(&h);
    syncstore_listener_token *token = NULL;
    EXPECT(syncstore_add_soup_listener(s, "s", on_change, &h, &token, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_upsert(writer, "s", "{\"k\":\"a\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_upsert(writer, "s", "{\"k\":\"b\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    for (int i = 0; i < 500 && atomic_load(&ready_calls) == 0; i++) sleep_ms(10);
    sleep_ms(100);
    CHECK(atomic_load(&ready_calls) == 1);
    CHECK(heard_count(&h) == 0);
    EXPECT(syncstore_send_notifications(s, &sent, &err), SYNCSTORE_OK, &err);
    CHECK(sent == 1);
    CHECK(heard_count(&h) == 1);
    CHECK(pthread_equal(h.thread, pthread_self()));
    CHECK(json_integer_value(json_object_get(notice(&h, 0), "commits")) == 2);
    CHECK(strcmp(origin_kind(notice(&h, 0)), "otherHandle") == 0);
    EXPECT(syncstore_send_notifications(s, NULL, &err), SYNCSTORE_OK, &err);
    CHECK(heard_count(&h) == 1);
    EXPECT(syncstore_upsert(writer, "s", "{\"k\":\"c\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    for (int i = 0; i < 500 && atomic_load(&ready_calls) == 1; i++) sleep_ms(10);
    CHECK(atomic_load(&ready_calls) == 2);
    /* closing the buffered handle drops what it did not send */
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    CHECK(heard_count(&h) == 1);
    EXPECT(syncstore_close(writer, &err), SYNCSTORE_OK, &err);
    heard_free(&h);
}

/* Run as "--writer ROOT": another process writing the store "shared". */
static int run_writer(const char *dir) {
    root = dir;
    syncstore_error err;
    syncstore_store *s = open_store("shared");
    char entry[96];
    snprintf(entry, sizeof entry, "{\"k\":\"far\",\"at\":%lld}", now_ms());
    int rc = syncstore_upsert(s, "s", entry, NULL, NULL, &err);
    syncstore_close(s, &err);
    return rc == SYNCSTORE_OK ? 0 : 1;
}

static void test_other_process(const char *self) {
    syncstore_error err;
    syncstore_store *s = open_store("shared");
    EXPECT(syncstore_register_soup(s, "s", SPECS, &err), SYNCSTORE_OK, &err);
    heard_t h, q;
    heard_init(&h);
    heard_init(&q);
    syncstore_listener_token *token = NULL, *qt = NULL;
    EXPECT(syncstore_add_soup_listener(s, "s", on_change, &h, &token, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_add_query_listener(s, "{\"soupName\":\"s\",\"queryType\":\"exact\",\"indexPath\":\"k\",\"matchKey\":\"far\"}",
                                        on_change, &q, &qt, &err), SYNCSTORE_OK, &err);
    CHECK(wait_for(&q, 1) == 1);
    char *args[] = {(char *)self, "--writer", (char *)root, NULL};
    pid_t pid;
    CHECK(posix_spawn(&pid, self, NULL, NULL, args, environ) == 0);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(wait_for(&h, 1) == 1);
    CHECK(strcmp(origin_kind(notice(&h, 0)), "otherProcess") == 0);
    CHECK(json_is_true(json_object_get(first_soup(notice(&h, 0)), "unknown")));
    CHECK(wait_for(&q, 2) == 2);
    CHECK(json_integer_value(json_object_get(notice(&q, 1), "totalEntries")) == 1);
    json_t *entry = json_array_get(json_object_get(notice(&q, 1), "currentPageOrderedEntries"), 0);
    long long delay = now_ms() - json_integer_value(json_object_get(entry, "at"));
    printf("another process's commit told after at most %lld ms (with the writer's exit)\n", delay);
    /* this process's own write is told as its own */
    EXPECT(syncstore_upsert(s, "s", "{\"k\":\"near\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    CHECK(wait_for(&h, 2) == 2);
    sleep_ms(100);
    CHECK(heard_count(&h) == 2);
    CHECK(strcmp(origin_kind(notice(&h, 1)), "handle") == 0);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    heard_free(&h);
    heard_free(&q);
}

/* A callback that adds a query listener and removes another listener, on its first call. */
typedef struct {
    heard_t heard;
    syncstore_store *store;
    syncstore_listener_token *victim, *added;
    heard_t *added_heard;
    int add_status, remove_status;
} juggler_t;

static void on_juggle(const char *change_json, void *context) {
    juggler_t *j = context;
    if (j->victim) {
        syncstore_error err;
        j->add_status = syncstore_add_query_listener(j->store, "{\"soupName\":\"s\",\"queryType\":\"range\",\"indexPath\":\"k\"}",
                                                     on_change, j->added_heard, &j->added, &err);
        j->remove_status = syncstore_remove_listener(j->store, j->victim, &err);
        j->victim = NULL;
    }
    on_change(change_json, &j->heard);
}

static void test_add_and_remove_inside_callbacks(void) {
    syncstore_error err;
    syncstore_store *s = open_store("juggle");
    EXPECT(syncstore_register_soup(s, "s", SPECS, &err), SYNCSTORE_OK, &err);
    juggler_t j;
    memset(&j, 0, sizeof j);
    heard_init(&j.heard);
    heard_t victim, added;
    heard_init(&victim);
    heard_init(&added);
    victim.sleep_ms = 20;
    syncstore_listener_token *jt = NULL;
    EXPECT(syncstore_add_soup_listener(s, "s", on_change, &victim, &j.victim, &err), SYNCSTORE_OK, &err);
    j.store = s;
    j.added_heard = &added;
    EXPECT(syncstore_add_soup_listener(s, "s", on_juggle, &j, &jt, &err), SYNCSTORE_OK, &err);
    /* commits while the callbacks juggle */
    for (int i = 0; i < 30; i++) {
        char entry[64];
        snprintf(entry, sizeof entry, "{\"k\":\"j%d\"}", i);
        EXPECT(syncstore_upsert(s, "s", entry, NULL, NULL, &err), SYNCSTORE_OK, &err);
    }
    CHECK(wait_commits(&j.heard, 30) == 30);
    CHECK(j.add_status == SYNCSTORE_OK && j.remove_status == SYNCSTORE_OK);
    CHECK(wait_for(&added, 1) >= 1); /* its first notice: the result when it was added */
    size_t victim_heard = heard_count(&victim);
    EXPECT(syncstore_upsert(s, "s", "{\"k\":\"last\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    CHECK(wait_commits(&j.heard, 31) == 31);
    sleep_ms(100);
    CHECK(heard_count(&victim) == victim_heard); /* removed: nothing more */
    /* the listener added inside the callback hears the last write */
    json_t *last = notice(&added, heard_count(&added) - 1);
    CHECK(json_integer_value(json_object_get(last, "totalEntries")) == 31);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    heard_free(&j.heard);
    heard_free(&victim);
    heard_free(&added);
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--writer") == 0) return run_writer(argv[2]);
    root = argc > 1 ? argv[1] : "test-stores/listeners";
    check_fresh_dir(root);
    test_query_listener();
    test_buffered_handle();
    test_other_process(argv[0]);
    test_add_and_remove_inside_callbacks();
    test_bad_input();
    test_filter_origin_and_rollback();
    test_remove_and_write_inside_callback();
    test_remove_waits_and_close();
    return check_finish();
}
