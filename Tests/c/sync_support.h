/* Shared pieces of the C sync tests: a callback recorder and store setup. */
#ifndef SYNCSTORE_TEST_SYNC_SUPPORT_H
#define SYNCSTORE_TEST_SYNC_SUPPORT_H
#include "check.h"
#include "devserver.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Everything the callbacks of one run reported. */
typedef struct recorder {
    pthread_mutex_t lock;
    int calls;
    int terminal;          /* DONE/FAILED/STOPPED callbacks seen */
    int order_ok;          /* 0 once a callback came after a terminal one or progress went down */
    int last_progress;
    char last_status[16];
    json_t *last;          /* the last state */
} recorder;

static inline void recorder_init(recorder *r) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    r->order_ok = 1;
}

static inline void recorder_free(recorder *r) {
    json_decref(r->last);
    pthread_mutex_destroy(&r->lock);
}

static inline void record_state(const char *state_json, void *context) {
    recorder *r = context;
    json_t *state = json_loads(state_json, 0, NULL);
    pthread_mutex_lock(&r->lock);
    r->calls++;
    const char *status = json_string_value(json_object_get(state, "status"));
    int progress = (int)json_integer_value(json_object_get(state, "progress"));
    if (r->terminal > 0) r->order_ok = 0;
    if (status && (!strcmp(status, "DONE") || !strcmp(status, "FAILED") || !strcmp(status, "STOPPED"))) r->terminal++;
    else if (progress < r->last_progress) r->order_ok = 0;
    r->last_progress = progress;
    snprintf(r->last_status, sizeof r->last_status, "%s", status ? status : "?");
    json_decref(r->last);
    r->last = state;
    pthread_mutex_unlock(&r->lock);
}

/* Opens store `name` under `root` with soup `soup` of the given indexes and, when a server is
 * given, its remote (remote_extra: more members for the remote JSON, or NULL). */
static inline syncstore_store *open_soup_store(const char *root, const char *name, const char *soup, const char *indexes,
                                               const devserver *server, const char *remote_extra) {
    syncstore_error err;
    syncstore_store *store = NULL;
    char config[128];
    snprintf(config, sizeof config, "{\"storeName\":\"%s\"}", name);
    EXPECT(syncstore_open(root, config, &store, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(store, soup, indexes, &err), SYNCSTORE_OK, &err);
    if (server) {
        char *remote = devserver_remote_json(server, remote_extra);
        EXPECT(syncstore_set_remote(store, remote, &err), SYNCSTORE_OK, &err);
        free(remote);
    }
    return store;
}

/* open_soup_store with the "contacts" soup. */
static inline syncstore_store *open_sync_store(const char *root, const char *name, const char *indexes,
                                               const devserver *server, const char *remote_extra) {
    return open_soup_store(root, name, "contacts", indexes, server, remote_extra);
}

/* Waits for a sync and returns its final state (caller decrefs). */
static inline json_t *wait_state(syncstore_store *store, int64_t id) {
    syncstore_error err;
    char *out = NULL;
    int rc = syncstore_wait_sync(store, id, 120000, &out, &err);
    EXPECT(rc, SYNCSTORE_OK, &err);
    return check_parse(out);
}

static inline const char *status_of(json_t *state) {
    const char *s = json_string_value(json_object_get(state, "status"));
    return s ? s : "";
}

/* Number of entries of a soup matching an optional Smart SQL WHERE condition. */
static inline long long soup_count(syncstore_store *store, const char *soup, const char *condition) {
    char sql[1024], *out = NULL;
    json_t *spec = json_object();
    snprintf(sql, sizeof sql, "select count(*) from {%s}%s%s", soup, condition ? " where " : "", condition ? condition : "");
    json_object_set_new(spec, "queryType", json_string("smart"));
    json_object_set_new(spec, "smartSql", json_string(sql));
    json_object_set_new(spec, "pageSize", json_integer(1));
    char *text = json_dumps(spec, 0);
    syncstore_error err;
    int rc = syncstore_run_smart_query(store, text, &out, &err);
    free(text);
    json_decref(spec);
    if (rc != SYNCSTORE_OK) { fprintf(stderr, "count failed: %s (%s)\n", err.message, sql); return -1; }
    json_t *c = check_parse(out);
    long long n = json_integer_value(json_array_get(json_array_get(json_object_get(c, "currentPageOrderedEntries"), 0), 0));
    syncstore_cursor_close(store, json_integer_value(json_object_get(c, "cursorId")), NULL);
    json_decref(c);
    return n;
}

/* The first entry matching an exact query (caller decrefs), or NULL. */
static inline json_t *find_entry(syncstore_store *store, const char *soup, const char *path, const char *value) {
    json_t *spec = json_pack("{s:s,s:s,s:s,s:i}", "queryType", "exact", "indexPath", path, "matchKey", value, "pageSize", 2);
    char *text = json_dumps(spec, 0), *out = NULL;
    syncstore_error err;
    int rc = syncstore_query_soup(store, soup, text, &out, &err);
    free(text);
    json_decref(spec);
    if (rc != SYNCSTORE_OK) return NULL;
    json_t *c = check_parse(out);
    json_t *entry = json_incref(json_array_get(json_object_get(c, "currentPageOrderedEntries"), 0));
    syncstore_cursor_close(store, json_integer_value(json_object_get(c, "cursorId")), NULL);
    json_decref(c);
    return entry;
}
#endif
