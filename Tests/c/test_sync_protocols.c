/* The built-in non-Salesforce targets through the C ABI, as a C host uses them
 * (docs/sync.md#datasync, docs/sync.md#two-phase): sync down, local edits flagged by the host,
 * sync up, the server's rows checked over HTTP, a reSync after a server-side change; and bad
 * targets refused with SYNCSTORE_ERR_ARGUMENT. A real syncstore-devserver process on 127.0.0.1.
 * Usage: test_sync_protocols <work_dir> */
#define _POSIX_C_SOURCE 200809L
#include "sync_support.h"
#include <curl/curl.h>
#include <time.h>

static const char *root, *binary;
static const char *TODO_INDEXES = "[{\"path\":\"id\",\"type\":\"string\"},{\"path\":\"__local__\",\"type\":\"string\"}]";
static const char *DATASYNC = "{\"type\":\"datasync\",\"table\":\"todo\"}";
static const char *TWOPHASE = "{\"type\":\"twophase\",\"tables\":[{\"name\":\"todo\",\"idKey\":\"id\"}]}";
static const char *LEAVE = "{\"mergeMode\":\"LEAVE_IF_CHANGED\"}";

/* A run's callbacks: the shared recorder plus the first status seen (RUNNING). Callbacks of a
 * store come one at a time from its worker thread. */
typedef struct events {
    recorder r;
    char first[16];
} events;

static void on_state(const char *state_json, void *context) {
    events *e = context;
    if (e->r.calls == 0) {
        json_t *state = json_loads(state_json, 0, NULL);
        snprintf(e->first, sizeof e->first, "%s", str_or_empty(json_object_get(state, "status")));
        json_decref(state);
    }
    record_state(state_json, &e->r);
}

/* A clean run's callbacks: RUNNING first, progress never down, exactly one terminal DONE last. */
static void check_events(events *e, const char *what) {
    int ok = strcmp(e->first, "RUNNING") == 0 && e->r.calls >= 2 && e->r.terminal == 1 && e->r.order_ok &&
             strcmp(e->r.last_status, "DONE") == 0;
    if (!ok) fprintf(stderr, "%s: first %s, %d calls, %d terminal, order %d, last %s\n", what, e->first, e->r.calls,
                     e->r.terminal, e->r.order_ok, e->r.last_status);
    CHECK(ok);
}

static syncstore_store *open_todo_store(const char *name, const devserver *server) {
    return open_soup_store(root, name, "todo", TODO_INDEXES, server, "\"retryBaseDelayMs\":20");
}

static void upsert_todo(syncstore_store *store, json_t *entries) {
    char *text = json_dumps(entries, 0);
    syncstore_error err;
    EXPECT(syncstore_upsert(store, "todo", text, NULL, NULL, &err), SYNCSTORE_OK, &err);
    free(text);
    json_decref(entries);
}

/* Every entry of soup todo, in insertion order (caller decrefs). */
static json_t *local_entries(syncstore_store *store) {
    syncstore_error err;
    char *out = NULL;
    const char *spec = "{\"queryType\":\"smart\",\"smartSql\":\"select {todo:_soup} from {todo} order by {todo:_soupEntryId}\",\"pageSize\":10000}";
    EXPECT(syncstore_run_smart_query(store, spec, &out, &err), SYNCSTORE_OK, &err);
    json_t *cursor = check_parse(out);
    json_t *entries = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(cursor, "currentPageOrderedEntries"), i, row) json_array_append(entries, json_array_get(row, 0));
    syncstore_cursor_close(store, json_integer_value(json_object_get(cursor, "cursorId")), NULL);
    json_decref(cursor);
    return entries;
}

/* The first object of `items` whose `key` is the string `value` (borrowed), or NULL. */
static json_t *find_in(json_t *items, const char *key, const char *value) {
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item) if (strcmp(str_or_empty(json_object_get(item, key)), value) == 0) return item;
    return NULL;
}

static int is_false(json_t *value) { return json_is_false(value) || strcmp(str_or_empty(value), "false") == 0; }

/* The host's offline edit: the entry with `key` set to `value`, flagged dirty with `flag`. */
static void mark_dirty(syncstore_store *store, const char *id, const char *flag, const char *key, const char *value) {
    json_t *all = local_entries(store);
    json_t *entry = find_in(all, "id", id);
    CHECK(entry != NULL);
    if (entry) {
        json_t *copy = json_deep_copy(entry);
        if (key) json_object_set_new(copy, key, json_string(value));
        json_object_set_new(copy, "__local__", json_true());
        json_object_set_new(copy, flag, json_true());
        upsert_todo(store, json_pack("[o]", copy));
    }
    json_decref(all);
}

typedef enum { DOWN, UP } direction;

/* Starts a sync (named when `name` is given) and waits for its end; the final state (caller
 * decrefs). */
static json_t *run_sync(syncstore_store *store, direction dir, const char *target, const char *options, const char *name, events *e) {
    syncstore_error err;
    int64_t id = 0;
    recorder_init(&e->r);
    e->first[0] = 0;
    int rc = dir == DOWN ? syncstore_sync_down(store, target, "todo", options, name, on_state, e, &id, &err)
                         : syncstore_sync_up(store, target, "todo", options, name, on_state, e, &id, &err);
    EXPECT(rc, SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, id);
    if (strcmp(status_of(state), "DONE") != 0 || json_integer_value(json_object_get(state, "errorCode")) != 0)
        fprintf(stderr, "sync ended %s: %s\n", status_of(state), str_or_empty(json_object_get(state, "error")));
    return state;
}

static json_t *resync(syncstore_store *store, const char *name, events *e) {
    syncstore_error err;
    int64_t id = 0;
    recorder_init(&e->r);
    e->first[0] = 0;
    EXPECT(syncstore_resync_by_name(store, name, on_state, e, &id, &err), SYNCSTORE_OK, &err);
    return wait_state(store, id);
}

static long long state_int(json_t *state, const char *key) { return json_integer_value(json_object_get(state, key)); }

/* A sync up that ended DONE with no conflict and no error, its callbacks in order; frees both. */
static void check_clean_up(json_t *state, events *e, const char *what) {
    CHECK(strcmp(status_of(state), "DONE") == 0);
    CHECK(state_int(state, "conflicts") == 0 && state_int(state, "errors") == 0 && state_int(state, "errorCode") == 0);
    check_events(e, what);
    recorder_free(&e->r);
    json_decref(state);
}

/* ---- Datasync ---- */

/* Every row of the server's table, soft-deleted ones included, following nextLink. */
static json_t *datasync_rows(const devserver *server) {
    json_t *rows = json_array();
    char path[4096] = "/tables/todo?__includedeleted=true";
    for (int page = 0; page < 100; page++) {
        long status = 0;
        json_t *answer = devserver_call(server, "GET", path, NULL, &status);
        CHECK(status == 200);
        json_array_extend(rows, json_object_get(answer, "items"));
        const char *next = json_string_value(json_object_get(answer, "nextLink"));
        size_t base = strlen(server->url);
        int more = next && strncmp(next, server->url, base) == 0 && strlen(next + base) < sizeof path;
        if (more) snprintf(path, sizeof path, "%s", next + base);
        json_decref(answer);
        if (!more) break;
    }
    return rows;
}

static void test_datasync_round_trip(void) {
    devserver server;
    /* 60 rows in runs of 7 sharing one updatedAt, 25 a page: runs straddle page ends. */
    const char *args[] = {"--datasync", "--datasync-seed", "todo=60/7", "--datasync-page-size", "25", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_todo_store("datasync", &server);
    events e;

    /* Sync down: every row once, clean, with the server's system fields. */
    json_t *state = run_sync(store, DOWN, DATASYNC, NULL, "pull", &e);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    CHECK(state_int(state, "totalSize") == 60);
    CHECK(state_int(state, "progress") == 100);
    CHECK(state_int(state, "maxTimeStamp") > 0);
    check_events(&e, "datasync sync down");
    CHECK(e.r.calls >= 4); /* RUNNING, a state per page of 25 (3 pages), DONE */
    recorder_free(&e.r);
    json_decref(state);
    json_t *local = local_entries(store);
    CHECK(json_array_size(local) == 60);
    int seen[61] = {0}, clean = 0, stamped = 0;
    size_t i;
    json_t *entry;
    json_array_foreach(local, i, entry) {
        int n = 0;
        if (sscanf(str_or_empty(json_object_get(entry, "id")), "seed-todo-%d", &n) == 1 && n >= 1 && n <= 60) seen[n]++;
        clean += is_false(json_object_get(entry, "__local__"));
        stamped += json_is_string(json_object_get(entry, "version")) && json_is_string(json_object_get(entry, "updatedAt"));
    }
    int each_once = 1;
    for (int n = 1; n <= 60; n++) each_once &= seen[n] == 1;
    CHECK(each_once);
    CHECK(clean == 60);
    CHECK(stamped == 60);
    json_decref(local);

    /* Offline: one edit, one delete, one create, flagged the way a host flags them. */
    mark_dirty(store, "seed-todo-000003", "__locally_updated__", "title", "edited here");
    mark_dirty(store, "seed-todo-000004", "__locally_deleted__", NULL, NULL);
    upsert_todo(store, json_pack("[{s:s,s:i,s:b,s:b,s:b}]", "title", "made here", "rank", 1000, "complete", 0,
                                 "__local__", 1, "__locally_created__", 1));
    check_clean_up(run_sync(store, UP, DATASYNC, LEAVE, NULL, &e), &e, "datasync sync up");

    json_t *rows = datasync_rows(&server);
    CHECK(json_array_size(rows) == 61); /* the soft-deleted row stays, the create made one */
    int made = 0;
    json_array_foreach(rows, i, entry) made += strcmp(str_or_empty(json_object_get(entry, "title")), "made here") == 0;
    CHECK(made == 1);
    json_t *edited = find_in(rows, "id", "seed-todo-000003");
    CHECK(edited && strcmp(str_or_empty(json_object_get(edited, "title")), "edited here") == 0);
    CHECK(edited && json_integer_value(json_object_get(edited, "rank")) == 3); /* the fields not edited are kept */
    CHECK(edited && json_is_false(json_object_get(edited, "deleted")));
    json_t *removed = find_in(rows, "id", "seed-todo-000004");
    CHECK(removed && json_is_true(json_object_get(removed, "deleted")));
    json_t *created_row = find_in(rows, "title", "made here");

    local = local_entries(store);
    CHECK(json_array_size(local) == 60);
    CHECK(find_in(local, "id", "seed-todo-000004") == NULL);
    json_t *created = find_in(local, "title", "made here");
    CHECK(created && created_row);
    if (created && created_row) {
        CHECK(strcmp(str_or_empty(json_object_get(created, "id")), str_or_empty(json_object_get(created_row, "id"))) == 0);
        CHECK(strcmp(str_or_empty(json_object_get(created, "version")), str_or_empty(json_object_get(created_row, "version"))) == 0);
        CHECK(is_false(json_object_get(created, "__local__")));
    }
    int dirty = 0;
    json_array_foreach(local, i, entry) dirty += !is_false(json_object_get(entry, "__local__"));
    CHECK(dirty == 0);
    json_decref(local);
    json_decref(rows);

    /* Server-side changes behind the engine's back; reSync picks them up incrementally. */
    long status = 0;
    json_decref(devserver_call(&server, "PUT", "/tables/todo/seed-todo-000010", "{\"id\":\"seed-todo-000010\",\"title\":\"changed there\",\"rank\":10}", &status));
    CHECK(status == 200);
    json_decref(devserver_call(&server, "DELETE", "/tables/todo/seed-todo-000011", NULL, &status));
    CHECK(status == 204);
    state = resync(store, "pull", &e);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    CHECK(state_int(state, "totalSize") >= 2 && state_int(state, "totalSize") < 60); /* only what changed since */
    check_events(&e, "datasync reSync");
    recorder_free(&e.r);
    json_decref(state);
    local = local_entries(store);
    CHECK(json_array_size(local) == 59);
    json_t *changed = find_in(local, "id", "seed-todo-000010");
    CHECK(changed && strcmp(str_or_empty(json_object_get(changed, "title")), "changed there") == 0);
    CHECK(find_in(local, "id", "seed-todo-000011") == NULL);
    json_decref(local);

    /* A local edit of a row another client changed since: under LEAVE_IF_CHANGED a conflict the
     * state reports, the entry left dirty with the server's copy; OVERWRITE then forces it. */
    json_decref(devserver_call(&server, "PUT", "/tables/todo/seed-todo-000020", "{\"id\":\"seed-todo-000020\",\"title\":\"theirs\",\"rank\":20}", &status));
    CHECK(status == 200);
    mark_dirty(store, "seed-todo-000020", "__locally_updated__", "title", "ours");
    state = run_sync(store, UP, DATASYNC, LEAVE, NULL, &e);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    CHECK(state_int(state, "conflicts") == 1 && state_int(state, "errorCode") == SYNCSTORE_ERR_CONFLICT);
    recorder_free(&e.r);
    local = local_entries(store);
    json_t *mine = find_in(local, "id", "seed-todo-000020");
    CHECK(mine && !is_false(json_object_get(mine, "__local__")));
    CHECK(mine && json_integer_value(json_array_get(json_object_get(state, "conflictEntryIds"), 0)) ==
                      json_integer_value(json_object_get(mine, "_soupEntryId")));
    json_t *last_error = mine ? json_loads(str_or_empty(json_object_get(mine, "__last_error__")), 0, NULL) : NULL;
    json_t *first_error = json_array_get(last_error, 0);
    CHECK(strcmp(str_or_empty(json_object_get(first_error, "errorCode")), "CONFLICT") == 0);
    CHECK(strcmp(str_or_empty(json_object_get(json_object_get(first_error, "serverRecord"), "title")), "theirs") == 0);
    json_decref(last_error);
    json_decref(local);
    json_decref(state);
    state = run_sync(store, UP, DATASYNC, NULL, NULL, &e);
    CHECK(strcmp(status_of(state), "DONE") == 0 && state_int(state, "conflicts") == 0 && state_int(state, "errorCode") == 0);
    recorder_free(&e.r);
    json_decref(state);
    rows = datasync_rows(&server);
    json_t *forced = find_in(rows, "id", "seed-todo-000020");
    CHECK(forced && strcmp(str_or_empty(json_object_get(forced, "title")), "ours") == 0);
    json_decref(rows);

    syncstore_error err;
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* ---- Two-phase ---- */

/* The server's todo rows by the protocol itself: phase 1 for the ids, a get for the rows (the
 * answer per operation, or plain: per table the rows). */
static json_t *twophase_rows(const devserver *server) {
    long status = 0;
    json_t *fetched = devserver_call(server, "GET", "/twophase/fetch?tables=todo", NULL, &status);
    CHECK(status == 200);
    json_t *ids = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(fetched, "todo"), i, item) json_array_append(ids, json_object_get(item, "id"));
    json_decref(fetched);
    json_t *request = json_pack("{s:{s:o}}", "get", "todo", ids);
    char *body = json_dumps(request, 0);
    json_decref(request);
    json_t *answer = devserver_call(server, "POST", "/twophase/synchronise", body, &status);
    free(body);
    CHECK(status == 200);
    json_t *get = json_object_get(answer, "get");
    json_t *rows = json_incref(json_object_get(json_is_object(get) ? get : answer, "todo"));
    json_decref(answer);
    return rows ? rows : json_array();
}

/* A two-phase call straight to the server (a change made by another client). */
static void synchronise(const devserver *server, json_t *request) {
    char *body = json_dumps(request, 0);
    long status = 0;
    json_decref(devserver_call(server, "POST", "/twophase/synchronise", body, &status));
    CHECK(status == 200);
    free(body);
    json_decref(request);
}

/* `plain`: the server answers phase 2 per table with the rows, as one written from the protocol's
 * description (--twophase-plain); else per operation. */
static void test_twophase_round_trip(int plain) {
    devserver server;
    const char *args[] = {"--twophase", "--twophase-seed", "5", plain ? "--twophase-plain" : NULL, NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_todo_store(plain ? "twophase-plain" : "twophase", &server);
    events e;

    json_t *state = run_sync(store, DOWN, TWOPHASE, NULL, "tp-pull", &e);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    check_events(&e, "twophase sync down");
    recorder_free(&e.r);
    json_decref(state);
    json_t *rows = twophase_rows(&server), *local = local_entries(store);
    CHECK(json_array_size(rows) == 5);
    CHECK(json_array_size(local) == 5);
    size_t i;
    json_t *entry;
    int same = 0;
    json_array_foreach(local, i, entry) {
        json_t *row = find_in(rows, "id", str_or_empty(json_object_get(entry, "id")));
        same += row && is_false(json_object_get(entry, "__local__")) &&
                strcmp(str_or_empty(json_object_get(row, "last_update")), str_or_empty(json_object_get(entry, "last_update"))) == 0 &&
                strlen(str_or_empty(json_object_get(entry, "last_update"))) == 19; /* YYYY-MM-DD HH:MM:SS */
    }
    CHECK(same == 5);
    char ids[5][64];
    for (int n = 0; n < 5; n++) snprintf(ids[n], sizeof ids[n], "%s", str_or_empty(json_object_get(json_array_get(local, (size_t)n), "id")));
    json_decref(local);
    json_decref(rows);

    /* Offline: an edit, a delete, a create (no id: the engine gives it a UUID). */
    mark_dirty(store, ids[0], "__locally_updated__", "title", "edited here");
    mark_dirty(store, ids[1], "__locally_deleted__", NULL, NULL);
    upsert_todo(store, json_pack("[{s:s,s:b,s:b}]", "title", "made here", "__local__", 1, "__locally_created__", 1));
    check_clean_up(run_sync(store, UP, TWOPHASE, NULL, NULL, &e), &e, "twophase sync up");

    rows = twophase_rows(&server);
    local = local_entries(store);
    CHECK(json_array_size(rows) == 5);
    CHECK(json_array_size(local) == 5);
    json_t *edited = find_in(rows, "id", ids[0]);
    CHECK(edited && strcmp(str_or_empty(json_object_get(edited, "title")), "edited here") == 0);
    CHECK(find_in(rows, "id", ids[1]) == NULL);
    CHECK(find_in(local, "id", ids[1]) == NULL);
    json_t *created = find_in(local, "title", "made here");
    CHECK(created && strlen(str_or_empty(json_object_get(created, "id"))) == 36); /* a UUID */
    json_t *created_row = created ? find_in(rows, "id", str_or_empty(json_object_get(created, "id"))) : NULL;
    CHECK(created_row && strcmp(str_or_empty(json_object_get(created_row, "title")), "made here") == 0);
    CHECK(created_row && strcmp(str_or_empty(json_object_get(created_row, "last_update")), str_or_empty(json_object_get(created, "last_update"))) == 0);
    int made = 0, dirty = 0;
    json_array_foreach(rows, i, entry) made += strcmp(str_or_empty(json_object_get(entry, "title")), "made here") == 0;
    json_array_foreach(local, i, entry) dirty += !is_false(json_object_get(entry, "__local__"));
    CHECK(made == 1);
    CHECK(dirty == 0);

    /* Another client updates a row (stamped a minute ahead: newer) and deletes one. */
    json_t *row = json_deep_copy(find_in(rows, "id", ids[2]));
    CHECK(row != NULL);
    char stamp[32];
    time_t later = time(NULL) + 60;
    struct tm utc;
    gmtime_r(&later, &utc);
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &utc);
    json_object_set_new(row, "title", json_string("changed there"));
    json_object_set_new(row, "last_update", json_string(stamp));
    synchronise(&server, json_pack("{s:{s:[o]},s:{s:[s]}}", "update", "todo", row, "delete", "todo", ids[3]));
    json_decref(local);
    json_decref(rows);

    state = resync(store, "tp-pull", &e);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    check_events(&e, "twophase reSync");
    recorder_free(&e.r);
    json_decref(state);
    local = local_entries(store);
    CHECK(json_array_size(local) == 4);
    json_t *changed = find_in(local, "id", ids[2]);
    CHECK(changed && strcmp(str_or_empty(json_object_get(changed, "title")), "changed there") == 0);
    CHECK(changed && strcmp(str_or_empty(json_object_get(changed, "last_update")), stamp) == 0);
    CHECK(find_in(local, "id", ids[3]) == NULL);
    json_decref(local);

    syncstore_error err;
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* ---- Bad targets ---- */

/* Refused at the call with ARGUMENT and a message; no sync is created under the name, and the
 * store goes on working. */
static void test_bad_targets(void) {
    devserver server;
    const char *args[] = {"--datasync", "--twophase", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_todo_store("bad-targets", &server);
    upsert_todo(store, json_pack("[{s:s,s:s}]", "id", "kept", "title", "kept"));
    const char *bad[] = {
        "{\"type\":\"datasync\"}",                                       /* no table */
        "{\"type\":\"datasync\",\"table\":\"\"}",                        /* empty table */
        "{\"type\":\"datasync\",\"table\":\"todo\",\"idFieldName\":\"Id\"}", /* keyed by id only */
        "{\"type\":\"datasync\",\"table\":42}",
        "{\"type\":\"twophase\"}",                                       /* no tables */
        "{\"type\":\"twophase\",\"tables\":[]}",
        "{\"type\":\"twophase\",\"tables\":[{\"name\":\"todo\",\"timestampFormat\":\"unix\"}]}",
        "{\"type\":\"twophase\",\"tables\":[{\"name\":\"todo\",\"idKey\":\"uuid\"}]}", /* no index on uuid */
    };
    for (size_t n = 0; n < sizeof bad / sizeof bad[0]; n++) {
        for (int up = 0; up < 2; up++) {
            syncstore_error err;
            int64_t id = -7;
            int rc = up ? syncstore_sync_up(store, bad[n], "todo", NULL, "bad", NULL, NULL, &id, &err)
                        : syncstore_sync_down(store, bad[n], "todo", NULL, "bad", NULL, NULL, &id, &err);
            if (rc != SYNCSTORE_ERR_ARGUMENT) fprintf(stderr, "%s %s: %s (%s)\n", up ? "up" : "down", bad[n], syncstore_status_name(rc), err.message);
            CHECK(rc == SYNCSTORE_ERR_ARGUMENT);
            CHECK(err.code == SYNCSTORE_ERR_ARGUMENT && err.message[0] != 0);
            char *out = NULL;
            CHECK(syncstore_get_sync_status_by_name(store, "bad", &out, &err) == SYNCSTORE_ERR_NOT_FOUND);
            syncstore_free(out);
        }
    }
    /* A datasync sync down into a soup without an index on id: refused too. */
    syncstore_error err;
    EXPECT(syncstore_register_soup(store, "noid", "[{\"path\":\"title\",\"type\":\"string\"}]", &err), SYNCSTORE_OK, &err);
    int rc = syncstore_sync_down(store, DATASYNC, "noid", NULL, NULL, NULL, NULL, NULL, &err);
    if (rc != SYNCSTORE_ERR_ARGUMENT) fprintf(stderr, "datasync into a soup without an id index: %s (%s)\n", syncstore_status_name(rc), err.message);
    CHECK(rc == SYNCSTORE_ERR_ARGUMENT);
    /* The store is unchanged and still syncs. */
    json_t *local = local_entries(store);
    CHECK(json_array_size(local) == 1 && find_in(local, "id", "kept") != NULL);
    json_decref(local);
    events e;
    json_t *state = run_sync(store, DOWN, DATASYNC, NULL, "bad", &e);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    recorder_free(&e.r);
    json_decref(state);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s work_dir\n", argv[0]); return 2; }
    root = argv[1];
    binary = devserver_binary();
    check_fresh_dir(root);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    test_datasync_round_trip();
    test_twophase_round_trip(0);
    test_twophase_round_trip(1);
    test_bad_targets();
    return check_finish();
}
