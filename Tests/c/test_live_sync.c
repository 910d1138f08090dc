/* Live sync through the C header against a real syncstore-devserver process (docs/sync.md#live-sync):
 * catching up at start, a host write pushed after the debounce, an unreachable server reported
 * offline with a retry time and the write pushed once it answers, the state read at any time,
 * stop and close ending it, bad input codes; a server write brought in by a change event
 * (docs/sync.md#change-events), with no pull. Usage: test_live_sync <work_dir> */
#define _DEFAULT_SOURCE
#include "sync_support.h"
#include <time.h>
#include <unistd.h>

static const char *root, *binary;
static const char *INDEXES = "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},"
                             "{\"path\":\"__local__\",\"type\":\"string\"}]";

/* The live sync events heard, in order. */
typedef struct {
    pthread_mutex_t lock;
    json_t *events;
} heard_t;

static void on_event(const char *json, void *context) {
    heard_t *h = context;
    json_t *event = json_loads(json, 0, NULL);
    pthread_mutex_lock(&h->lock);
    json_array_append_new(h->events, event ? event : json_string(json));
    pthread_mutex_unlock(&h->lock);
}

/* How many "state" events with `state` were heard; the last state heard into *last. */
static int states(heard_t *h, const char *state, char *last, size_t size) {
    int n = 0;
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < json_array_size(h->events); i++) {
        json_t *e = json_array_get(h->events, i);
        const char *s = json_string_value(json_object_get(e, "state"));
        if (!s) continue;
        if (last) snprintf(last, size, "%s", s);
        if (state && strcmp(s, state) == 0) n++;
    }
    pthread_mutex_unlock(&h->lock);
    return n;
}

static int wait_state_count(heard_t *h, const char *state, int count) {
    for (int i = 0; i < 2000 && states(h, state, NULL, 0) < count; i++) usleep(10000);
    return states(h, state, NULL, 0) >= count;
}

static long remote_count(const devserver *server, const char *last_name) {
    char soql[256];
    snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE LastName = '%s'", last_name);
    return devserver_count(server, soql);
}

static int wait_remote(const devserver *server, const char *last_name, long count) {
    for (int i = 0; i < 2000 && remote_count(server, last_name) != count; i++) usleep(10000);
    return remote_count(server, last_name) == count;
}

static void write_local(syncstore_store *store, const char *last_name) {
    char entry[256];
    snprintf(entry, sizeof entry, "{\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"%s\",\"__local__\":true,\"__locally_created__\":true}", last_name);
    syncstore_error err;
    EXPECT(syncstore_upsert(store, "contacts", entry, NULL, NULL, &err), SYNCSTORE_OK, &err);
}

static void create_syncs(syncstore_store *store) {
    syncstore_error err;
    int64_t id = 0;
    EXPECT(syncstore_create_sync_up(store, NULL, "contacts", "{\"fieldlist\":[\"LastName\"]}", "up", &id, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_create_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT LastName FROM Contact\"}", "contacts", NULL, "down",
                                      &id, &err), SYNCSTORE_OK, &err);
}

static void test_live(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=4", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_sync_store(root, "live", INDEXES, &server, NULL);
    syncstore_error err;
    heard_t h = {PTHREAD_MUTEX_INITIALIZER, json_array()};
    /* bad input: nothing starts */
    EXPECT(syncstore_start_live_sync(NULL, NULL, on_event, &h, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_start_live_sync(store, NULL, on_event, &h, &err), SYNCSTORE_ERR_ARGUMENT, &err); /* no syncs yet */
    create_syncs(store);
    EXPECT(syncstore_start_live_sync(store, "{\"debounceMs\":-5}", on_event, &h, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_start_live_sync(store, "{\"syncs\":[\"nope\"]}", on_event, &h, &err), SYNCSTORE_ERR_NOT_FOUND, &err);
    EXPECT(syncstore_start_live_sync(store, "{oops", on_event, &h, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    char *state = NULL;
    EXPECT(syncstore_get_live_sync_state(store, &state, &err), SYNCSTORE_OK, &err);
    json_t *parsed = check_parse(state);
    CHECK(strcmp(json_string_value(json_object_get(parsed, "state")), "stopped") == 0);
    json_decref(parsed);
    CHECK(json_array_size(h.events) == 0);

    /* catching up: the sync down brings the server's 4 */
    EXPECT(syncstore_start_live_sync(store, "{\"debounceMs\":100}", on_event, &h, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_start_live_sync(store, NULL, NULL, NULL, &err), SYNCSTORE_ERR_STATE, &err);
    CHECK(wait_state_count(&h, "live", 1));
    CHECK(soup_count(store, "contacts", NULL) == 4);
    char last[32] = "";
    states(&h, NULL, last, sizeof last);
    CHECK(strcmp(last, "live") == 0);
    /* a host write goes up after the debounce */
    write_local(store, "LiveC");
    CHECK(wait_remote(&server, "LiveC", 1));
    EXPECT(syncstore_get_live_sync_state(store, &state, &err), SYNCSTORE_OK, &err);
    parsed = check_parse(state);
    CHECK(json_array_size(json_object_get(parsed, "syncs")) == 2);
    json_decref(parsed);

    /* the server unreachable: offline with a retry time; back: the write made meanwhile goes up */
    EXPECT(syncstore_stop_live_sync(store, &err), SYNCSTORE_OK, &err);
    states(&h, NULL, last, sizeof last);
    CHECK(strcmp(last, "stopped") == 0);
    EXPECT(syncstore_set_remote(store, "{\"instanceUrl\":\"http://127.0.0.1:9\",\"accessToken\":\"t\"}", &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_start_live_sync(store, "{\"debounceMs\":50,\"retryMinMs\":200,\"retryMaxMs\":400}", on_event, &h, &err),
           SYNCSTORE_OK, &err);
    CHECK(wait_state_count(&h, "offline", 1));
    write_local(store, "Meanwhile");
    char *remote = devserver_remote_json(&server, NULL);
    EXPECT(syncstore_set_remote(store, remote, &err), SYNCSTORE_OK, &err);
    free(remote);
    CHECK(wait_remote(&server, "Meanwhile", 1));
    CHECK(wait_state_count(&h, "live", 2));
    pthread_mutex_lock(&h.lock);
    long long retry_at = 0;
    for (size_t i = 0; i < json_array_size(h.events); i++) {
        json_t *e = json_array_get(h.events, i);
        if (json_is_string(json_object_get(e, "state")) && strcmp(json_string_value(json_object_get(e, "state")), "offline") == 0)
            retry_at = json_integer_value(json_object_get(e, "nextRetryAt"));
    }
    pthread_mutex_unlock(&h.lock);
    CHECK(retry_at > 0);
    /* closing the handle stops it: no event after close returns */
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    size_t at_close = json_array_size(h.events);
    states(&h, NULL, last, sizeof last);
    CHECK(strcmp(last, "stopped") == 0);
    usleep(300000);
    CHECK(json_array_size(h.events) == at_close);
    json_decref(h.events);
    devserver_stop(&server);
}

/* The "changeEvents" state of the last state event that has one, into buf. */
static void stream_state(heard_t *h, char *buf, size_t size, long long *events) {
    buf[0] = 0;
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < json_array_size(h->events); i++) {
        json_t *stream = json_object_get(json_array_get(h->events, i), "changeEvents");
        if (!stream) continue;
        snprintf(buf, size, "%s", json_string_value(json_object_get(stream, "state")) ? json_string_value(json_object_get(stream, "state")) : "?");
        if (events) *events = json_integer_value(json_object_get(stream, "events"));
    }
    pthread_mutex_unlock(&h->lock);
}

static void test_change_events(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=2", "--cometd-timeout-ms", "3000", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_sync_store(root, "events", INDEXES, &server, NULL);
    syncstore_error err;
    heard_t h = {PTHREAD_MUTEX_INITIALIZER, json_array()};
    create_syncs(store);
    EXPECT(syncstore_start_live_sync(store, "{\"changeEvents\":\"yes\"}", on_event, &h, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_start_live_sync(store, "{\"debounceMs\":50}", on_event, &h, &err), SYNCSTORE_OK, &err);
    char stream[32] = "";
    for (int i = 0; i < 2000; i++) {
        stream_state(&h, stream, sizeof stream, NULL);
        if (strcmp(stream, "live") == 0) break;
        usleep(10000);
    }
    CHECK(strcmp(stream, "live") == 0);
    CHECK(soup_count(store, "contacts", NULL) == 2);
    /* a write on the server, behind the engine's back: no pull is set, the event brings it */
    long status = 0;
    json_t *created = devserver_call(&server, "POST", "sobjects/Contact", "{\"LastName\":\"FromServer\"}", &status);
    CHECK(status == 201);
    json_decref(created);
    json_t *entry = NULL;
    for (int i = 0; i < 2000 && !(entry = find_entry(store, "contacts", "LastName", "FromServer")); i++) usleep(10000);
    CHECK(entry != NULL);
    json_decref(entry);
    long long events = 0;
    stream_state(&h, stream, sizeof stream, &events);
    CHECK(events >= 1);
    char *state = NULL;
    EXPECT(syncstore_get_live_sync_state(store, &state, &err), SYNCSTORE_OK, &err);
    json_t *parsed = check_parse(state);
    json_t *channels = json_object_get(json_object_get(parsed, "changeEvents"), "channels");
    CHECK(json_array_size(channels) == 1 && strcmp(json_string_value(json_array_get(channels, 0)), "/data/ContactChangeEvent") == 0);
    json_decref(parsed);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    json_decref(h.events);
    devserver_stop(&server);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s work_dir\n", argv[0]); return 2; }
    root = argv[1];
    binary = devserver_binary();
    check_fresh_dir(root);
    test_live();
    test_change_events();
    return check_finish();
}
