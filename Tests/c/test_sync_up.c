/* Sync up, auth, custom targets and close through the C ABI against a real syncstore-devserver
 * process (docs/sync.md, docs/architecture.md#c-abi-rules rule 5). Usage: test_sync_up <work_dir> <devserver> */
#define _POSIX_C_SOURCE 200809L
#include "sync_support.h"
#include <curl/curl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char *root, *binary;
static const char *INDEXES =
    "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},{\"path\":\"Name\",\"type\":\"string\"},"
    "{\"path\":\"__local__\",\"type\":\"string\"}]";

static syncstore_store *open_store(const char *name, const devserver *server, const char *remote_extra) {
    return open_sync_store(root, name, INDEXES, server, remote_extra);
}

static void upsert(syncstore_store *store, const char *json) {
    syncstore_error err;
    EXPECT(syncstore_upsert(store, "contacts", json, NULL, NULL, &err), SYNCSTORE_OK, &err);
}

static void mark_local(syncstore_store *store, const char *field, const char *value, const char *flag, const char *set_key, const char *set_value) {
    json_t *entry = find_entry(store, "contacts", field, value);
    CHECK(entry != NULL);
    if (!entry) return;
    json_object_set_new(entry, "__local__", json_true());
    json_object_set_new(entry, flag, json_true());
    if (set_key) json_object_set_new(entry, set_key, json_string(set_value));
    char *text = json_dumps(entry, 0);
    upsert(store, text);
    free(text);
    json_decref(entry);
}

static long server_count(const devserver *server, const char *where) {
    char soql[512];
    snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE %s", where);
    return devserver_count(server, soql);
}

static json_t *sync_up_and_wait(syncstore_store *store, const char *target, const char *options, recorder *r) {
    syncstore_error err;
    int64_t id = 0;
    EXPECT(syncstore_sync_up(store, target, "contacts", options, NULL, r ? record_state : NULL, r, &id, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, id);
    if (strcmp(status_of(state), "DONE") != 0)
        fprintf(stderr, "sync up ended %s: %s\n", status_of(state), json_string_value(json_object_get(state, "error")));
    return state;
}

static void sync_down_all(syncstore_store *store) {
    syncstore_error err;
    int64_t id = 0;
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT Id, FirstName, LastName FROM Contact\"}", "contacts",
                               NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    json_decref(wait_state(store, id));
}

/* Creates, updates, deletes, a create-then-delete, in batches and one by one. */
static void test_basic(const char *mode) {
    devserver server;
    const char *args[] = {"--seed", "Contact=20", NULL};
    devserver_start(&server, binary, args);
    char name[64];
    snprintf(name, sizeof name, "basic-%s", mode);
    syncstore_store *store = open_store(name, &server, NULL);
    sync_down_all(store);
    json_t *page = devserver_call(&server, "GET", "query?q=SELECT+Id+FROM+Contact+ORDER+BY+Id+LIMIT+3", NULL, NULL);
    json_t *records = json_object_get(page, "records");
    const char *upd1 = json_string_value(json_object_get(json_array_get(records, 0), "Id"));
    const char *upd2 = json_string_value(json_object_get(json_array_get(records, 1), "Id"));
    const char *del = json_string_value(json_object_get(json_array_get(records, 2), "Id"));
    mark_local(store, "Id", upd1, "__locally_updated__", "LastName", "UpdatedOne");
    mark_local(store, "Id", upd2, "__locally_updated__", "LastName", "UpdatedTwo");
    mark_local(store, "Id", del, "__locally_deleted__", NULL, NULL);
    upsert(store, "[{\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"NewA\",\"FirstName\":\"Ann\",\"__local__\":true,\"__locally_created__\":true},"
                  " {\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"NewB\",\"__local__\":\"true\",\"__locally_created__\":\"true\"},"
                  " {\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"Ghost\",\"__local__\":true,\"__locally_created__\":true,\"__locally_deleted__\":true}]");
    CHECK(soup_count(store, "contacts", NULL) == 23);

    char target[128];
    snprintf(target, sizeof target, "{\"type\":\"%s\",\"createFieldlist\":[\"LastName\",\"FirstName\"],\"updateFieldlist\":[\"LastName\"]}", mode);
    recorder r;
    recorder_init(&r);
    json_t *state = sync_up_and_wait(store, target, NULL, &r);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    CHECK(json_integer_value(json_object_get(state, "totalSize")) == 6);
    json_decref(state);
    CHECK(r.terminal == 1 && r.order_ok && strcmp(r.last_status, "DONE") == 0);
    /* server side */
    CHECK(server_count(&server, "LastName = 'NewA' AND FirstName = 'Ann'") == 1);
    CHECK(server_count(&server, "LastName = 'NewB'") == 1);
    CHECK(server_count(&server, "LastName = 'Ghost'") == 0);
    CHECK(server_count(&server, "LastName IN ('UpdatedOne', 'UpdatedTwo')") == 2);
    CHECK(devserver_count(&server, "SELECT Id FROM Contact") == 21);
    /* local side: created ones carry server ids, nothing is dirty, deleted ones are gone */
    CHECK(soup_count(store, "contacts", NULL) == 21);
    CHECK(soup_count(store, "contacts", "{contacts:__local__} = 'true' or {contacts:__local__} = '1'") == 0);
    json_t *created = find_entry(store, "contacts", "LastName", "NewA");
    const char *new_id = created ? json_string_value(json_object_get(created, "Id")) : NULL;
    CHECK(new_id && strncmp(new_id, "003", 3) == 0 && strlen(new_id) == 18);
    CHECK(created && json_is_false(json_object_get(created, "__locally_created__")));
    json_decref(created);
    json_decref(page);
    recorder_free(&r);
    syncstore_error err;
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* A record the server refuses inside a batch gets __last_error__ and stays dirty; the rest commit. */
static void test_partial_failure(void) {
    devserver server;
    devserver_start(&server, binary, NULL);
    syncstore_store *store = open_store("partial", &server, NULL);
    upsert(store, "[{\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"Good1\",\"__local__\":true,\"__locally_created__\":true},"
                  " {\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"Bad\",\"NoSuchField__c\":1,\"__local__\":true,\"__locally_created__\":true},"
                  " {\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"Good2\",\"__local__\":true,\"__locally_created__\":true}]");
    json_t *state = sync_up_and_wait(store, NULL, NULL, NULL);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(server_count(&server, "LastName IN ('Good1', 'Good2')") == 2);
    CHECK(server_count(&server, "LastName = 'Bad'") == 0);
    json_t *bad = find_entry(store, "contacts", "LastName", "Bad");
    CHECK(bad && json_is_true(json_object_get(bad, "__local__")));
    const char *error = bad ? json_string_value(json_object_get(bad, "__last_error__")) : NULL;
    CHECK(error && strstr(error, "INVALID_FIELD") != NULL);
    if (error && !strstr(error, "INVALID_FIELD")) fprintf(stderr, "last error: %s\n", error);
    json_decref(bad);
    syncstore_error err;
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* LEAVE_IF_CHANGED records a conflict when the server copy is newer; OVERWRITE writes. 404 on
 * update: OVERWRITE re-creates, LEAVE_IF_CHANGED leaves it. */
static void test_merge_modes(const char *mode) {
    devserver server;
    const char *args[] = {"--seed", "Contact=5", NULL};
    devserver_start(&server, binary, args);
    char name[64];
    snprintf(name, sizeof name, "merge-%s", mode);
    syncstore_store *store = open_store(name, &server, NULL);
    sync_down_all(store);
    json_t *page = devserver_call(&server, "GET", "query?q=SELECT+Id+FROM+Contact+ORDER+BY+Id+LIMIT+2", NULL, NULL);
    const char *changed = json_string_value(json_object_get(json_array_get(json_object_get(page, "records"), 0), "Id"));
    const char *gone = json_string_value(json_object_get(json_array_get(json_object_get(page, "records"), 1), "Id"));
    char path[256];
    snprintf(path, sizeof path, "sobjects/Contact/%s", changed);
    json_decref(devserver_call(&server, "PATCH", path, "{\"LastName\":\"ServerWins\"}", NULL));
    snprintf(path, sizeof path, "sobjects/Contact/%s", gone);
    json_decref(devserver_call(&server, "DELETE", path, NULL, NULL));
    mark_local(store, "Id", changed, "__locally_updated__", "LastName", "LocalWins");
    mark_local(store, "Id", gone, "__locally_updated__", "LastName", "Resurrected");

    char target[64];
    snprintf(target, sizeof target, "{\"type\":\"%s\",\"updateFieldlist\":[\"LastName\"]}", mode);
    json_t *state = sync_up_and_wait(store, target, "{\"mergeMode\":\"LEAVE_IF_CHANGED\"}", NULL);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    CHECK(json_integer_value(json_object_get(state, "conflicts")) == 1);
    json_decref(state);
    CHECK(server_count(&server, "LastName = 'ServerWins'") == 1);
    CHECK(server_count(&server, "LastName = 'Resurrected'") == 0);
    json_t *entry = find_entry(store, "contacts", "Id", changed);
    const char *error = entry ? json_string_value(json_object_get(entry, "__last_error__")) : NULL;
    CHECK(error && strstr(error, "CONFLICT"));
    CHECK(entry && json_is_true(json_object_get(entry, "__local__")));
    json_decref(entry);

    state = sync_up_and_wait(store, target, "{\"mergeMode\":\"OVERWRITE\"}", NULL);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    CHECK(json_integer_value(json_object_get(state, "conflicts")) == 0);
    json_decref(state);
    CHECK(server_count(&server, "LastName = 'LocalWins'") == 1);
    CHECK(server_count(&server, "LastName = 'Resurrected'") == 1); /* re-created with a new id */
    entry = find_entry(store, "contacts", "LastName", "Resurrected");
    const char *new_id = entry ? json_string_value(json_object_get(entry, "Id")) : NULL;
    CHECK(new_id && strcmp(new_id, gone) != 0);
    CHECK(entry && json_is_false(json_object_get(entry, "__local__")));
    json_decref(entry);
    CHECK(soup_count(store, "contacts", "{contacts:__local__} = 'true'") == 0);
    json_decref(page);
    syncstore_error err;
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* The server commits a create but the connection drops before the answer: the sync fails
 * (network, retryable), and running it again does not create a second record. */
static void test_lost_create_response(const char *mode, const char *fault, const char *target) {
    devserver server;
    const char *args[] = {"--faults", fault, NULL};
    devserver_start(&server, binary, args);
    char name[64];
    snprintf(name, sizeof name, "lost-%s", mode);
    syncstore_store *store = open_store(name, &server, "\"maxAttempts\":1");
    EXPECT(syncstore_register_soup(store, "widgets", "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"Name\",\"type\":\"string\"}]", NULL), SYNCSTORE_OK, NULL);
    upsert(store, "[{\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"Once\",\"__local__\":true,\"__locally_created__\":true},"
                  " {\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"Twice\",\"__local__\":true,\"__locally_created__\":true}]");
    json_t *state = sync_up_and_wait(store, target, NULL, NULL);
    CHECK(strcmp(status_of(state), "FAILED") == 0);
    CHECK(json_integer_value(json_object_get(state, "errorCode")) == SYNCSTORE_ERR_NETWORK);
    json_decref(state);
    long after_failure = server_count(&server, "LastName IN ('Once', 'Twice')");
    CHECK(after_failure >= 1); /* the server did commit */
    state = sync_up_and_wait(store, target, NULL, NULL);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(server_count(&server, "LastName = 'Once'") == 1);
    CHECK(server_count(&server, "LastName = 'Twice'") == 1);
    CHECK(soup_count(store, "contacts", "{contacts:__local__} = 'true'") == 0);
    /* the local records carry the ids of the server records */
    json_t *once = find_entry(store, "contacts", "LastName", "Once");
    char soql[256];
    snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE Id = '%s' AND LastName = 'Once'",
             once ? json_string_value(json_object_get(once, "Id")) : "none");
    CHECK(devserver_count(&server, soql) == 1);
    json_decref(once);
    syncstore_error err;
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* Upsert by external id: a lost answer cannot duplicate either (Widget__c.External_Id__c). */
static void test_lost_upsert_response(void) {
    devserver server;
    const char *args[] = {"--faults", "PATCH */composite/sobjects/Widget__c/* drop=after times=1", NULL};
    devserver_start(&server, binary, args);
    syncstore_error err;
    syncstore_store *store = NULL;
    EXPECT(syncstore_open(root, "{\"storeName\":\"widgets\"}", &store, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(store, "widgets", "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"Name\",\"type\":\"string\"},{\"path\":\"__local__\",\"type\":\"string\"}]", &err), SYNCSTORE_OK, &err);
    char *remote = devserver_remote_json(&server, "\"maxAttempts\":1");
    syncstore_set_remote(store, remote, &err);
    free(remote);
    EXPECT(syncstore_upsert(store, "widgets", "[{\"attributes\":{\"type\":\"Widget__c\"},\"Name\":\"W1\",\"__local__\":true,\"__locally_created__\":true}]", NULL, NULL, &err), SYNCSTORE_OK, &err);
    const char *target = "{\"externalIdFieldName\":\"External_Id__c\",\"createFieldlist\":[\"Name\"]}";
    int64_t id = 0;
    EXPECT(syncstore_sync_up(store, target, "widgets", NULL, "widgets-up", NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "FAILED") == 0);
    json_decref(state);
    EXPECT(syncstore_resync(store, id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(devserver_count(&server, "SELECT Id FROM Widget__c WHERE Name = 'W1'") == 1);
    json_t *w = find_entry(store, "widgets", "Name", "W1");
    CHECK(w && json_string_value(json_object_get(w, "External_Id__c")) && json_string_value(json_object_get(w, "Id")));
    json_decref(w);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

typedef struct { syncstore_store *store; const char *id; } editor_args;

/* Edits the record while the sync up that sends it waits on the slow server. */
static void *edit_during_sync(void *arg) {
    editor_args *a = arg;
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    mark_local(a->store, "Id", a->id, "__locally_updated__", "LastName", "SecondEdit");
    return NULL;
}

/* An edit made while its own sync up is in flight stays dirty and goes up next time. */
static void test_edit_in_flight(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=3", "--faults", "PATCH */composite/sobjects latency=900", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_store("inflight", &server, NULL);
    sync_down_all(store);
    json_t *page = devserver_call(&server, "GET", "query?q=SELECT+Id+FROM+Contact+LIMIT+1", NULL, NULL);
    const char *id = json_string_value(json_object_get(json_array_get(json_object_get(page, "records"), 0), "Id"));
    mark_local(store, "Id", id, "__locally_updated__", "LastName", "FirstEdit");
    pthread_t editor;
    editor_args a = {store, id};
    pthread_create(&editor, NULL, edit_during_sync, &a);
    json_t *state = sync_up_and_wait(store, "{\"updateFieldlist\":[\"LastName\"]}", NULL, NULL);
    pthread_join(editor, NULL);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(server_count(&server, "LastName = 'FirstEdit'") == 1);
    json_t *entry = find_entry(store, "contacts", "Id", id);
    CHECK(entry && strcmp(str_or_empty(json_object_get(entry, "LastName")), "SecondEdit") == 0);
    CHECK(entry && json_is_true(json_object_get(entry, "__local__")));
    json_decref(entry);
    state = sync_up_and_wait(store, "{\"updateFieldlist\":[\"LastName\"]}", NULL, NULL);
    json_decref(state);
    CHECK(server_count(&server, "LastName = 'SecondEdit'") == 1);
    CHECK(soup_count(store, "contacts", "{contacts:__local__} = 'true'") == 0);
    json_decref(page);
    syncstore_error err;
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* Reads a refresh token with the password grant. */
static char *refresh_token(const devserver *server) {
    CURL *curl = curl_easy_init();
    char url[512];
    snprintf(url, sizeof url, "%s/services/oauth2/token", server->url);
    FILE *mem = tmpfile();
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "grant_type=password&client_id=test&username=dev%40example.com&password=devpassword");
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, mem);
    curl_easy_perform(curl);
    curl_easy_cleanup(curl);
    rewind(mem);
    json_t *answer = json_loadf(mem, 0, NULL);
    fclose(mem);
    char *token = strdup(str_or_empty(json_object_get(answer, "refresh_token")));
    json_decref(answer);
    return token;
}

/* Expired tokens are refreshed mid-sync; when refresh fails the run ends FAILED with AUTH and
 * works again after new credentials. */
static void test_auth(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=3000", "--faults", "GET */query/* expire-tokens times=1", NULL};
    devserver_start(&server, binary, args);
    char *refresh = refresh_token(&server);
    CHECK(strlen(refresh) > 0);
    syncstore_error err;
    syncstore_store *store = NULL;
    EXPECT(syncstore_open(root, "{\"storeName\":\"auth\"}", &store, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(store, "contacts", INDEXES, &err), SYNCSTORE_OK, &err);
    char remote[1024];
    snprintf(remote, sizeof remote, "{\"instanceUrl\":\"%s\",\"accessToken\":\"not-a-valid-token\",\"refreshToken\":\"%s\",\"clientId\":\"test\"}",
             server.url, refresh);
    EXPECT(syncstore_set_remote(store, remote, &err), SYNCSTORE_OK, &err);
    int64_t id = 0;
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT Id, LastName FROM Contact\",\"maxBatchSize\":500}",
                               "contacts", NULL, "auth-down", NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    if (strcmp(status_of(state), "DONE")) fprintf(stderr, "auth: %s\n", json_string_value(json_object_get(state, "error")));
    json_decref(state);
    CHECK(soup_count(store, "contacts", NULL) == 3000);

    /* a refresh token the server does not know: AUTH */
    snprintf(remote, sizeof remote, "{\"instanceUrl\":\"%s\",\"accessToken\":\"bad\",\"refreshToken\":\"bad\",\"clientId\":\"test\"}", server.url);
    EXPECT(syncstore_set_remote(store, remote, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_resync(store, id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "FAILED") == 0);
    CHECK(json_integer_value(json_object_get(state, "errorCode")) == SYNCSTORE_ERR_AUTH);
    json_decref(state);
    char *good = devserver_remote_json(&server, NULL);
    EXPECT(syncstore_set_remote(store, good, &err), SYNCSTORE_OK, &err);
    free(good);
    EXPECT(syncstore_resync(store, id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    free(refresh);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* ---- a custom target: an in-memory "backend" of 25 records served in pages of 10 ---- */

typedef struct { int pushed_creates, pushed_updates, pushed_deletes; } backend;

static char *copy(const char *s) { return strdup(s); }

static int fetch_page(void *context, const char *target_json, int64_t since_ms, const char *continuation, char **out, syncstore_error *err) {
    (void)context; (void)target_json; (void)since_ms; (void)err;
    int start = continuation ? atoi(continuation) : 0;
    json_t *page = json_object(), *records = json_array();
    for (int i = start; i < start + 10 && i < 25; i++) {
        char id[16];
        snprintf(id, sizeof id, "ext-%02d", i);
        json_array_append_new(records, json_pack("{s:s,s:s,s:s}", "Id", id, "LastName", "Custom", "LastModifiedDate", "2026-01-01T00:00:00.000Z"));
    }
    json_object_set_new(page, "records", records);
    json_object_set_new(page, "totalSize", json_integer(25));
    if (start + 10 < 25) { char next[16]; snprintf(next, sizeof next, "%d", start + 10); json_object_set_new(page, "next", json_string(next)); }
    *out = json_dumps(page, 0);
    json_decref(page);
    return 0;
}

static int remote_ids(void *context, const char *target_json, char **out, syncstore_error *err) {
    (void)context; (void)target_json; (void)err;
    json_t *ids = json_array();
    for (int i = 0; i < 20; i++) { char id[16]; snprintf(id, sizeof id, "ext-%02d", i); json_array_append_new(ids, json_string(id)); }
    *out = json_dumps(ids, 0);
    json_decref(ids);
    return 0;
}

static int push_record(void *context, const char *target_json, const char *action, const char *record_json, char **out, syncstore_error *err) {
    backend *b = context;
    (void)target_json;
    if (strstr(record_json, "\"Reject\"")) {
        snprintf(err->message, sizeof err->message, "backend refuses this record");
        return SYNCSTORE_ERR_SERVER;
    }
    if (!strcmp(action, "create")) { b->pushed_creates++; *out = copy("{\"id\":\"ext-new\"}"); }
    else if (!strcmp(action, "update")) { b->pushed_updates++; *out = copy("{}"); }
    else b->pushed_deletes++;
    return 0;
}

static void test_custom_target(void) {
    backend b = {0, 0, 0};
    syncstore_custom_target target = {&b, fetch_page, remote_ids, push_record};
    syncstore_store *store = open_store("custom", NULL, NULL);
    syncstore_error err;
    EXPECT(syncstore_register_custom_target(store, "memory", &target, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_custom_target(store, "soql", &target, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    int64_t id = 0;
    recorder r;
    recorder_init(&r);
    EXPECT(syncstore_sync_down(store, "{\"type\":\"memory\"}", "contacts", NULL, NULL, record_state, &r, &id, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(r.calls == 5 && r.terminal == 1); /* RUNNING, 3 pages, DONE */
    CHECK(soup_count(store, "contacts", NULL) == 25);
    EXPECT(syncstore_clean_resync_ghosts(store, id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    json_decref(wait_state(store, id));
    CHECK(soup_count(store, "contacts", NULL) == 20);
    upsert(store, "[{\"LastName\":\"Fresh\",\"__local__\":true,\"__locally_created__\":true},"
                  " {\"LastName\":\"Reject\",\"__local__\":true,\"__locally_created__\":true}]");
    mark_local(store, "Id", "ext-01", "__locally_updated__", "LastName", "Edited");
    mark_local(store, "Id", "ext-02", "__locally_deleted__", NULL, NULL);
    state = sync_up_and_wait(store, "{\"type\":\"memory\"}", NULL, NULL);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(b.pushed_creates == 1 && b.pushed_updates == 1 && b.pushed_deletes == 1);
    CHECK(soup_count(store, "contacts", "{contacts:Id} = 'ext-new'") == 1);
    json_t *rejected = find_entry(store, "contacts", "LastName", "Reject");
    CHECK(rejected && strstr(str_or_empty(json_object_get(rejected, "__last_error__")), "backend refuses"));
    json_decref(rejected);
    recorder_free(&r);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
}

/* parent_children through /composite: a parent created offline with children that point at its
 * temporary id; they arrive linked, and the local children then point at the server id. */
static void test_parent_children(void) {
    devserver server;
    const char *args[] = {"--seed", "Account=1", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_store("parent-children", &server, NULL);
    syncstore_error err;
    EXPECT(syncstore_register_soup(store, "accounts", "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"Name\",\"type\":\"string\"},{\"path\":\"__local__\",\"type\":\"string\"}]", &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(store, "kids", "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"AccountId\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"}]", &err), SYNCSTORE_OK, &err);
    json_t *existing = devserver_call(&server, "GET", "query?q=SELECT+Id+FROM+Account+LIMIT+1", NULL, NULL);
    const char *existing_id = json_string_value(json_object_get(json_array_get(json_object_get(existing, "records"), 0), "Id"));
    char entries[1024];
    snprintf(entries, sizeof entries, "[{\"Id\":\"%s\",\"Name\":\"Existing\",\"__local__\":false}, {\"Id\":\"local_1\",\"Name\":\"Offline Co\",\"__local__\":true,\"__locally_created__\":true}]", existing_id);
    EXPECT(syncstore_upsert(store, "accounts", entries, NULL, NULL, &err), SYNCSTORE_OK, &err);
    snprintf(entries, sizeof entries, "[{\"AccountId\":\"local_1\",\"LastName\":\"KidOne\",\"__local__\":true,\"__locally_created__\":true},"
             "{\"AccountId\":\"local_1\",\"LastName\":\"KidTwo\",\"__local__\":true,\"__locally_created__\":true},"
             "{\"AccountId\":\"%s\",\"LastName\":\"KidOfExisting\",\"__local__\":true,\"__locally_created__\":true}]", existing_id);
    EXPECT(syncstore_upsert(store, "kids", entries, NULL, NULL, &err), SYNCSTORE_OK, &err);
    int64_t id = 0;
    EXPECT(syncstore_sync_up(store, "{\"type\":\"parent_children\",\"parent\":{\"sobjectType\":\"Account\",\"soupName\":\"accounts\"},"
                             "\"children\":{\"sobjectType\":\"Contact\",\"soupName\":\"kids\",\"parentIdFieldName\":\"AccountId\"},"
                             "\"parentCreateFieldlist\":[\"Name\"],\"childrenCreateFieldlist\":[\"LastName\",\"AccountId\"]}",
                             "accounts", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, id);
    if (strcmp(status_of(state), "DONE")) fprintf(stderr, "parent_children up: %s\n", json_string_value(json_object_get(state, "error")));
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    json_t *parent = find_entry(store, "accounts", "Name", "Offline Co");
    const char *server_parent = parent ? str_or_empty(json_object_get(parent, "Id")) : "";
    CHECK(strncmp(server_parent, "001", 3) == 0);
    CHECK(parent && json_is_false(json_object_get(parent, "__local__")));
    char soql[256];
    snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE AccountId = '%s'", server_parent);
    CHECK(devserver_count(&server, soql) == 2);
    snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE AccountId = '%s' AND LastName = 'KidOfExisting'", existing_id);
    CHECK(devserver_count(&server, soql) == 1);
    char condition[128];
    snprintf(condition, sizeof condition, "{kids:AccountId} = '%s'", server_parent);
    CHECK(soup_count(store, "kids", condition) == 2);
    CHECK(soup_count(store, "kids", "{kids:AccountId} = 'local_1'") == 0);
    CHECK(soup_count(store, "kids", "{kids:Id} like '003%'") == 3);
    json_decref(parent);
    json_decref(existing);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

static atomic_int after_close;
static atomic_int closed_flag;

static void count_after_close(const char *state_json, void *context) {
    (void)state_json;
    (void)context;
    if (atomic_load(&closed_flag)) atomic_fetch_add(&after_close, 1);
}

/* close() stops running syncs, waits for their terminal callback, and none comes after. */
static void test_close_waits(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=5000", "--faults", "GET */query* latency=200", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_store("close", &server, NULL);
    syncstore_error err;
    recorder r;
    recorder_init(&r);
    int64_t id = 0;
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT Id FROM Contact\",\"maxBatchSize\":200}", "contacts",
                               NULL, NULL, record_state, &r, &id, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT Id FROM Contact\"}", "contacts",
                               NULL, NULL, count_after_close, NULL, NULL, &err), SYNCSTORE_OK, &err);
    struct timespec ts = {0, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    atomic_store(&closed_flag, 1);
    CHECK(r.terminal == 1 && strcmp(r.last_status, "STOPPED") == 0);
    nanosleep(&ts, NULL);
    CHECK(atomic_load(&after_close) == 0);
    /* reopened, the sync is STOPPED (not left RUNNING) and can be resumed */
    store = open_store("close", &server, NULL);
    char *out = NULL;
    EXPECT(syncstore_get_sync_status(store, id, &out, &err), SYNCSTORE_OK, &err);
    json_t *state = check_parse(out);
    CHECK(strcmp(status_of(state), "STOPPED") == 0);
    json_decref(state);
    recorder_free(&r);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s work_dir\n", argv[0]); return 2; }
    root = argv[1];
    binary = devserver_binary();
    check_fresh_dir(root);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    test_basic("collection");
    test_basic("single");
    test_partial_failure();
    test_merge_modes("collection");
    test_merge_modes("single");
    test_lost_create_response("collection", "POST */composite/sobjects drop=after times=1", NULL);
    test_lost_create_response("single", "POST */sobjects/Contact drop=after times=1", "{\"type\":\"single\"}");
    test_lost_upsert_response();
    test_edit_in_flight();
    test_auth();
    test_custom_target();
    test_parent_children();
    test_close_waits();
    return check_finish();
}
