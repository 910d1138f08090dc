/* Optional out pointers through the C ABI: every out pointer the header documents as optional
 * is passed NULL and the call must still have its whole effect (the sync runs, the entries are
 * stored or removed); and every function that takes a syncstore_error * is called with NULL
 * for it at least once, on success and on failure, returning the right status.
 * Usage: test_null_outs <work_dir> */
#define _POSIX_C_SOURCE 200809L
#include "sync_support.h"
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *root, *binary;
static const char *CONTACT_INDEXES =
    "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},{\"path\":\"__local__\",\"type\":\"string\"}]";
static const char *ALL_CONTACTS = "{\"type\":\"soql\",\"query\":\"SELECT Id, LastName FROM Contact\"}";

static long server_count(const devserver *server, const char *where) {
    char soql[512];
    snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE %s", where);
    return devserver_count(server, soql);
}

/* The state of a named sync (caller decrefs), or NULL when there is no such sync. */
static json_t *state_by_name(syncstore_store *store, const char *name) {
    char *out = NULL;
    if (syncstore_get_sync_status_by_name(store, name, &out, NULL) != SYNCSTORE_OK) return NULL;
    return check_parse(out);
}

static int64_t id_by_name(syncstore_store *store, const char *name) {
    json_t *state = state_by_name(store, name);
    int64_t id = state ? (int64_t)json_integer_value(json_object_get(state, "_soupEntryId")) : 0;
    json_decref(state);
    return id;
}

/* Waits for a sync with out_state_json and err NULL, then reads its status by id. */
static char *finished_status(syncstore_store *store, int64_t id, char *buffer, size_t size) {
    EXPECT(syncstore_wait_sync(store, id, 120000, NULL, NULL), SYNCSTORE_OK, NULL);
    char *out = NULL;
    EXPECT(syncstore_get_sync_status(store, id, &out, NULL), SYNCSTORE_OK, NULL);
    json_t *state = check_parse(out);
    snprintf(buffer, size, "%s", status_of(state));
    if (strcmp(buffer, "DONE") != 0)
        fprintf(stderr, "sync %lld ended %s: %s\n", (long long)id, buffer, str_or_empty(json_object_get(state, "error")));
    json_decref(state);
    return buffer;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) { fprintf(stderr, "cannot write %s\n", path); exit(2); }
}

static int list_has(const char *name) {
    char *out = NULL;
    EXPECT(syncstore_list_stores(root, 0, &out, NULL), SYNCSTORE_OK, NULL);
    json_t *names = check_parse(out);
    int found = 0;
    for (size_t i = 0; i < json_array_size(names); i++)
        if (!strcmp(str_or_empty(json_array_get(names, i)), name)) found = 1;
    json_decref(names);
    return found;
}

/* ---- stores, soups, entries, queries: err NULL everywhere; upsert and remove_by_query with
 * their optional outs NULL ---- */

static void test_store_calls(void) {
    syncstore_store *s = NULL, *refused = (syncstore_store *)1;
    EXPECT(syncstore_open(root, "{\"storeName\":\"plain\"}", &s, NULL), SYNCSTORE_OK, NULL);
    CHECK(s != NULL);
    EXPECT(syncstore_open(root, "{\"storeName\":\"bad/name\"}", &refused, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);
    CHECK(refused == NULL);
    EXPECT(syncstore_open(root, NULL, NULL, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);
    CHECK(list_has("plain"));
    EXPECT(syncstore_list_stores(NULL, 0, NULL, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);

    char path[2048];
    snprintf(path, sizeof path, "%s/userstore.json", root);
    write_file(path, "{\"soups\":[{\"soupName\":\"from_file\",\"indexes\":[{\"path\":\"Id\",\"type\":\"string\"}]}]}");
    EXPECT(syncstore_load_store_config(s, path, NULL), SYNCSTORE_OK, NULL);
    int exists = 0;
    EXPECT(syncstore_soup_exists(s, "from_file", &exists, NULL), SYNCSTORE_OK, NULL);
    CHECK(exists == 1);
    snprintf(path, sizeof path, "%s/missing.json", root);
    EXPECT(syncstore_load_store_config(s, path, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);

    EXPECT(syncstore_register_soup(s, "things", "[{\"path\":\"n\",\"type\":\"integer\"}]", NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_register_soup(s, "", "[{\"path\":\"n\",\"type\":\"integer\"}]", NULL), SYNCSTORE_ERR_ARGUMENT, NULL);
    EXPECT(syncstore_soup_exists(s, "things", NULL, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);

    /* upsert: out_json NULL, the entries are stored all the same */
    json_t *entries = json_array();
    for (int i = 0; i < 100; i++) json_array_append_new(entries, json_pack("{s:i,s:s}", "n", i, "tag", i % 2 ? "odd" : "even"));
    char *text = json_dumps(entries, 0);
    json_decref(entries);
    EXPECT(syncstore_upsert(s, "things", text, NULL, NULL, NULL), SYNCSTORE_OK, NULL);
    free(text);
    CHECK(soup_count(s, "things", NULL) == 100);
    CHECK(soup_count(s, "things", "{things:n} = 99") == 1);
    EXPECT(syncstore_upsert(s, "no_such_soup", "[{}]", NULL, NULL, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);
    /* by external id with out_json NULL: updates, does not duplicate */
    EXPECT(syncstore_upsert(s, "things", "{\"n\":99,\"tag\":\"changed\"}", "n", NULL, NULL), SYNCSTORE_OK, NULL);
    CHECK(soup_count(s, "things", NULL) == 100);

    int64_t bytes = 0;
    EXPECT(syncstore_database_size(s, &bytes, NULL), SYNCSTORE_OK, NULL);
    CHECK(bytes > 0);
    EXPECT(syncstore_database_size(s, NULL, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);

    char *out = NULL;
    EXPECT(syncstore_get_soup_index_specs(s, "things", &out, NULL), SYNCSTORE_OK, NULL);
    json_t *specs = check_parse(out);
    CHECK(json_array_size(specs) == 1);
    json_decref(specs);
    EXPECT(syncstore_get_soup_index_specs(s, "no_such_soup", &out, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);
    CHECK(out == NULL);

    EXPECT(syncstore_alter_soup(s, "things", "[{\"path\":\"n\",\"type\":\"integer\"},{\"path\":\"tag\",\"type\":\"string\"}]", 0, NULL),
           SYNCSTORE_OK, NULL);
    EXPECT(syncstore_get_soup_index_specs(s, "things", &out, NULL), SYNCSTORE_OK, NULL);
    specs = check_parse(out);
    CHECK(json_array_size(specs) == 2);
    json_decref(specs);
    EXPECT(syncstore_alter_soup(s, "no_such_soup", "[{\"path\":\"n\",\"type\":\"integer\"}]", 0, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);
    EXPECT(syncstore_reindex_soup(s, "things", "[\"tag\"]", NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_reindex_soup(s, "things", "[\"unindexed\"]", NULL), SYNCSTORE_ERR_ARGUMENT, NULL);
    /* the new index is filled (reindex ran): an exact query on it finds the odd half */
    json_t *odd = find_entry(s, "things", "tag", "odd");
    CHECK(odd != NULL);
    json_decref(odd);

    EXPECT(syncstore_retrieve(s, "things", "[1,2,424242]", &out, NULL), SYNCSTORE_OK, NULL);
    json_t *got = check_parse(out);
    CHECK(json_array_size(got) == 2);
    json_decref(got);
    EXPECT(syncstore_retrieve(s, "things", "[1]", NULL, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);

    EXPECT(syncstore_remove_entries(s, "things", "[1,2]", NULL), SYNCSTORE_OK, NULL);
    CHECK(soup_count(s, "things", NULL) == 98);
    EXPECT(syncstore_remove_entries(s, "things", "not json", NULL), SYNCSTORE_ERR_ARGUMENT, NULL);

    /* remove_by_query: out_count NULL, the entries are removed all the same (n 2..49: 48) */
    EXPECT(syncstore_remove_by_query(s, "things", "{\"queryType\":\"range\",\"indexPath\":\"n\",\"beginKey\":0,\"endKey\":49}", NULL, NULL),
           SYNCSTORE_OK, NULL);
    CHECK(soup_count(s, "things", NULL) == 50);
    CHECK(soup_count(s, "things", "{things:n} < 50") == 0);
    /* and with a count wanted, the number is right */
    int64_t removed = -1;
    EXPECT(syncstore_remove_by_query(s, "things", "{\"queryType\":\"exact\",\"indexPath\":\"tag\",\"matchKey\":\"changed\"}", &removed, NULL),
           SYNCSTORE_OK, NULL);
    CHECK(removed == 1);
    CHECK(soup_count(s, "things", NULL) == 49);
    EXPECT(syncstore_remove_by_query(s, "no_such_soup", "{\"queryType\":\"range\",\"indexPath\":\"n\"}", NULL, NULL),
           SYNCSTORE_ERR_NOT_FOUND, NULL);

    EXPECT(syncstore_query_soup(s, "things", "{\"queryType\":\"range\",\"indexPath\":\"n\",\"pageSize\":10}", &out, NULL), SYNCSTORE_OK, NULL);
    json_t *cursor = check_parse(out);
    int64_t cursor_id = (int64_t)json_integer_value(json_object_get(cursor, "cursorId"));
    CHECK(json_integer_value(json_object_get(cursor, "totalEntries")) == 49);
    json_decref(cursor);
    EXPECT(syncstore_cursor_move_to_page(s, cursor_id, 4, &out, NULL), SYNCSTORE_OK, NULL);
    cursor = check_parse(out);
    CHECK(json_array_size(json_object_get(cursor, "currentPageOrderedEntries")) == 9);
    json_decref(cursor);
    EXPECT(syncstore_cursor_close(s, cursor_id, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_cursor_move_to_page(s, cursor_id, 0, &out, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);
    EXPECT(syncstore_query_soup(s, "things", "{\"queryType\":\"bogus\"}", &out, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);

    /* query_page: the same pages as the cursor, as bare arrays; no cursor is left open */
    EXPECT(syncstore_query_page(s, "things", "{\"queryType\":\"range\",\"indexPath\":\"n\",\"pageSize\":10}", 4, &out, NULL), SYNCSTORE_OK, NULL);
    json_t *page = check_parse(out);
    CHECK(json_is_array(page) && json_array_size(page) == 9);
    json_decref(page);
    EXPECT(syncstore_query_page(s, "things", "{\"queryType\":\"range\",\"indexPath\":\"n\",\"pageSize\":10}", 5, &out, NULL), SYNCSTORE_OK, NULL);
    page = check_parse(out);
    CHECK(json_is_array(page) && json_array_size(page) == 0);
    json_decref(page);
    EXPECT(syncstore_query_page(s, "things", "{\"queryType\":\"range\",\"pageSize\":100000}", INT64_MAX, &out, NULL), SYNCSTORE_OK, NULL);
    page = check_parse(out);
    CHECK(json_is_array(page) && json_array_size(page) == 0);
    json_decref(page);
    EXPECT(syncstore_query_page(NULL, NULL, "{\"queryType\":\"smart\",\"smartSql\":\"select count(*) from {things}\"}", 0, &out, NULL),
           SYNCSTORE_ERR_ARGUMENT, NULL);
    EXPECT(syncstore_query_page(s, NULL, "{\"queryType\":\"smart\",\"smartSql\":\"select count(*) from {things}\"}", 0, &out, NULL),
           SYNCSTORE_OK, NULL);
    page = check_parse(out);
    CHECK(json_integer_value(json_array_get(json_array_get(page, 0), 0)) == 49);
    json_decref(page);
    EXPECT(syncstore_query_page(s, NULL, "{\"queryType\":\"range\"}", 0, &out, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);
    EXPECT(syncstore_query_page(s, "things", "{\"queryType\":\"range\"}", -1, &out, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);
    EXPECT(syncstore_query_page(s, "no_such_soup", "{\"queryType\":\"range\"}", 0, &out, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);
    EXPECT(syncstore_query_page(s, "things", "{\"queryType\":\"range\"}", 0, NULL, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);

    EXPECT(syncstore_run_smart_query(s, "{\"queryType\":\"smart\",\"smartSql\":\"select count(*) from {things}\",\"pageSize\":1}", &out, NULL),
           SYNCSTORE_OK, NULL);
    cursor = check_parse(out);
    CHECK(json_integer_value(json_array_get(json_array_get(json_object_get(cursor, "currentPageOrderedEntries"), 0), 0)) == 49);
    syncstore_cursor_close(s, json_integer_value(json_object_get(cursor, "cursorId")), NULL);
    json_decref(cursor);
    EXPECT(syncstore_run_smart_query(s, "{\"queryType\":\"smart\",\"smartSql\":\"delete from {things}\"}", &out, NULL),
           SYNCSTORE_ERR_ARGUMENT, NULL);

    EXPECT(syncstore_clear_soup(s, "things", NULL), SYNCSTORE_OK, NULL);
    CHECK(soup_count(s, "things", NULL) == 0);
    EXPECT(syncstore_clear_soup(s, "no_such_soup", NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);
    EXPECT(syncstore_remove_soup(s, "things", NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_soup_exists(s, "things", &exists, NULL), SYNCSTORE_OK, NULL);
    CHECK(exists == 0);
    EXPECT(syncstore_remove_soup(NULL, "things", NULL), SYNCSTORE_ERR_ARGUMENT, NULL);

    /* stores: remove one, then all */
    EXPECT(syncstore_remove_store(root, "{\"storeName\":\"plain\"}", NULL), SYNCSTORE_ERR_BUSY, NULL);
    EXPECT(syncstore_close(s, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_close(s, NULL), SYNCSTORE_ERR_STATE, NULL);
    EXPECT(syncstore_close(NULL, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_remove_store(root, "{\"storeName\":\"plain\"}", NULL), SYNCSTORE_OK, NULL);
    CHECK(!list_has("plain"));
    EXPECT(syncstore_remove_store(root, "{\"storeName\":\"plain\"}", NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);
    syncstore_store *one = NULL;
    EXPECT(syncstore_open(root, "{\"storeName\":\"one\"}", &one, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_remove_all_stores(root, 0, NULL), SYNCSTORE_ERR_BUSY, NULL);
    CHECK(list_has("one"));
    EXPECT(syncstore_close(one, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_remove_all_stores(root, 0, NULL), SYNCSTORE_OK, NULL);
    CHECK(!list_has("one"));
    EXPECT(syncstore_remove_all_stores(NULL, 0, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);
}

/* ---- a custom target (no server): 12 records in one page ---- */

static int fetch_page(void *context, const char *target_json, int64_t since_ms, const char *continuation, char **out, syncstore_error *err) {
    (void)context; (void)target_json; (void)since_ms; (void)continuation; (void)err;
    json_t *records = json_array();
    for (int i = 0; i < 12; i++) {
        char id[16];
        snprintf(id, sizeof id, "mem-%02d", i);
        json_array_append_new(records, json_pack("{s:s,s:s,s:s}", "Id", id, "LastName", "Memory", "LastModifiedDate", "2026-01-01T00:00:00.000Z"));
    }
    json_t *page = json_pack("{s:o,s:i}", "records", records, "totalSize", 12);
    *out = json_dumps(page, 0);
    json_decref(page);
    return 0;
}

/* ---- sync: every sync call with err NULL; sync ids and the waited-for state not wanted ---- */

static void test_sync_calls(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=20", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *s = open_sync_store(root, "syncs", CONTACT_INDEXES, NULL, NULL);
    char *remote = devserver_remote_json(&server, NULL);
    EXPECT(syncstore_set_remote(s, remote, NULL), SYNCSTORE_OK, NULL);
    free(remote);
    EXPECT(syncstore_set_remote(s, "{\"accessToken\":\"x\"}", NULL), SYNCSTORE_ERR_ARGUMENT, NULL);
    char status[32];

    /* sync_down, out_sync_id NULL: the run happens */
    EXPECT(syncstore_sync_down(s, ALL_CONTACTS, "contacts", NULL, "down", NULL, NULL, NULL, NULL), SYNCSTORE_OK, NULL);
    int64_t down = id_by_name(s, "down");
    CHECK(down > 0);
    CHECK(strcmp(finished_status(s, down, status, sizeof status), "DONE") == 0);
    CHECK(soup_count(s, "contacts", NULL) == 20);
    EXPECT(syncstore_sync_down(s, ALL_CONTACTS, "contacts", NULL, "down", NULL, NULL, NULL, NULL), SYNCSTORE_ERR_EXISTS, NULL);
    EXPECT(syncstore_sync_down(s, ALL_CONTACTS, "no_such_soup", NULL, NULL, NULL, NULL, NULL, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);

    /* resync by id with err NULL */
    json_decref(devserver_call(&server, "POST", "sobjects/Contact", "{\"LastName\":\"AfterDown\"}", NULL));
    EXPECT(syncstore_resync(s, down, NULL, NULL, NULL), SYNCSTORE_OK, NULL);
    CHECK(strcmp(finished_status(s, down, status, sizeof status), "DONE") == 0);
    CHECK(soup_count(s, "contacts", "{contacts:LastName} = 'AfterDown'") == 1);
    EXPECT(syncstore_resync(s, 424242, NULL, NULL, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);

    /* create_sync_down, out_sync_id NULL: the sync exists, NEW */
    EXPECT(syncstore_create_sync_down(s, ALL_CONTACTS, "contacts", NULL, "created-down", NULL, NULL), SYNCSTORE_OK, NULL);
    json_t *state = state_by_name(s, "created-down");
    CHECK(state != NULL && strcmp(status_of(state), "NEW") == 0);
    CHECK(state && !strcmp(str_or_empty(json_object_get(state, "type")), "syncDown"));
    json_decref(state);
    EXPECT(syncstore_create_sync_down(s, ALL_CONTACTS, "contacts", NULL, "created-down", NULL, NULL), SYNCSTORE_ERR_EXISTS, NULL);

    /* resync_by_name, out_sync_id NULL: the run happens (it used to be skipped, returning OK) */
    json_decref(devserver_call(&server, "POST", "sobjects/Contact", "{\"LastName\":\"ByNameDown\"}", NULL));
    EXPECT(syncstore_resync_by_name(s, "created-down", NULL, NULL, NULL, NULL), SYNCSTORE_OK, NULL);
    int64_t created_down = id_by_name(s, "created-down");
    CHECK(strcmp(finished_status(s, created_down, status, sizeof status), "DONE") == 0);
    CHECK(soup_count(s, "contacts", "{contacts:LastName} = 'ByNameDown'") == 1);
    /* ... and with a callback, the callback hears the run */
    recorder r;
    recorder_init(&r);
    EXPECT(syncstore_resync_by_name(s, "created-down", record_state, &r, NULL, NULL), SYNCSTORE_OK, NULL);
    CHECK(strcmp(finished_status(s, created_down, status, sizeof status), "DONE") == 0);
    pthread_mutex_lock(&r.lock);
    CHECK(r.terminal == 1 && strcmp(r.last_status, "DONE") == 0);
    pthread_mutex_unlock(&r.lock);
    recorder_free(&r);
    /* and with an id wanted, it is the sync's */
    int64_t resynced = 0;
    EXPECT(syncstore_resync_by_name(s, "created-down", NULL, NULL, &resynced, NULL), SYNCSTORE_OK, NULL);
    CHECK(resynced == created_down);
    CHECK(strcmp(finished_status(s, created_down, status, sizeof status), "DONE") == 0);
    EXPECT(syncstore_resync_by_name(s, "no-such-sync", NULL, NULL, NULL, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);

    /* clean_resync_ghosts with err NULL: a record deleted on the server goes (created-down wrote
     * every record last, so they are its records) */
    json_t *victim = find_entry(s, "contacts", "LastName", "AfterDown");
    char path[256];
    snprintf(path, sizeof path, "sobjects/Contact/%s", victim ? str_or_empty(json_object_get(victim, "Id")) : "none");
    json_decref(victim);
    long deleted = 0;
    json_decref(devserver_call(&server, "DELETE", path, NULL, &deleted));
    CHECK(deleted == 204);
    long long before = soup_count(s, "contacts", NULL);
    EXPECT(syncstore_clean_resync_ghosts(s, created_down, NULL, NULL, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_wait_sync(s, created_down, 120000, NULL, NULL), SYNCSTORE_OK, NULL);
    CHECK(soup_count(s, "contacts", "{contacts:LastName} = 'AfterDown'") == 0);
    CHECK(soup_count(s, "contacts", NULL) == before - 1);
    EXPECT(syncstore_clean_resync_ghosts(s, 424242, NULL, NULL, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);

    /* sync_up, out_sync_id NULL: the record reaches the server */
    EXPECT(syncstore_upsert(s, "contacts", "{\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"UpNull\",\"__local__\":true,\"__locally_created__\":true}",
                            NULL, NULL, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_sync_up(s, NULL, "contacts", NULL, "up", NULL, NULL, NULL, NULL), SYNCSTORE_OK, NULL);
    int64_t up = id_by_name(s, "up");
    CHECK(up > 0);
    CHECK(strcmp(finished_status(s, up, status, sizeof status), "DONE") == 0);
    CHECK(server_count(&server, "LastName = 'UpNull'") == 1);
    EXPECT(syncstore_sync_up(s, NULL, "no_such_soup", NULL, NULL, NULL, NULL, NULL, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);

    /* create_sync_up, out_sync_id NULL, then resync_by_name with out_sync_id NULL */
    EXPECT(syncstore_create_sync_up(s, NULL, "contacts", NULL, "created-up", NULL, NULL), SYNCSTORE_OK, NULL);
    state = state_by_name(s, "created-up");
    CHECK(state != NULL && strcmp(status_of(state), "NEW") == 0);
    CHECK(state && !strcmp(str_or_empty(json_object_get(state, "type")), "syncUp"));
    json_decref(state);
    EXPECT(syncstore_create_sync_up(s, NULL, "contacts", NULL, "created-up", NULL, NULL), SYNCSTORE_ERR_EXISTS, NULL);
    EXPECT(syncstore_upsert(s, "contacts", "{\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"UpByName\",\"__local__\":true,\"__locally_created__\":true}",
                            NULL, NULL, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_resync_by_name(s, "created-up", NULL, NULL, NULL, NULL), SYNCSTORE_OK, NULL);
    int64_t created_up = id_by_name(s, "created-up");
    CHECK(strcmp(finished_status(s, created_up, status, sizeof status), "DONE") == 0);
    CHECK(server_count(&server, "LastName = 'UpByName'") == 1);
    CHECK(soup_count(s, "contacts", "{contacts:__local__} = 'true' or {contacts:__local__} = '1'") == 0);

    /* stop / restart with err NULL */
    EXPECT(syncstore_stop_syncs(s, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_resync(s, down, NULL, NULL, NULL), SYNCSTORE_ERR_STATE, NULL);
    EXPECT(syncstore_resync_by_name(s, "down", NULL, NULL, NULL, NULL), SYNCSTORE_ERR_STATE, NULL);
    EXPECT(syncstore_restart_syncs(s, 0, NULL, NULL, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_resync_by_name(s, "down", NULL, NULL, NULL, NULL), SYNCSTORE_OK, NULL);
    CHECK(strcmp(finished_status(s, down, status, sizeof status), "DONE") == 0);
    EXPECT(syncstore_restart_syncs(NULL, 0, NULL, NULL, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);
    EXPECT(syncstore_stop_syncs(NULL, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);

    /* status and wait errors with err NULL */
    char *out = NULL;
    EXPECT(syncstore_get_sync_status(s, 424242, &out, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);
    EXPECT(syncstore_get_sync_status_by_name(s, "no-such-sync", &out, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);
    EXPECT(syncstore_wait_sync(s, 424242, 1000, NULL, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);

    /* delete by id and by name with err NULL */
    EXPECT(syncstore_delete_sync(s, created_down, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_get_sync_status(s, created_down, &out, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);
    EXPECT(syncstore_delete_sync(s, created_down, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);
    EXPECT(syncstore_delete_sync_by_name(s, "created-up", NULL), SYNCSTORE_OK, NULL);
    CHECK(state_by_name(s, "created-up") == NULL);
    EXPECT(syncstore_delete_sync_by_name(s, "created-up", NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);

    /* load_sync_config with err NULL */
    char file[2048];
    snprintf(file, sizeof file, "%s/usersyncs.json", root);
    write_file(file, "{\"syncs\":[{\"syncName\":\"from-file\",\"syncType\":\"syncDown\",\"soupName\":\"contacts\","
                     "\"target\":{\"type\":\"soql\",\"query\":\"SELECT Id, LastName FROM Contact\"}}]}");
    EXPECT(syncstore_load_sync_config(s, file, NULL), SYNCSTORE_OK, NULL);
    state = state_by_name(s, "from-file");
    CHECK(state != NULL && strcmp(status_of(state), "NEW") == 0);
    json_decref(state);
    snprintf(file, sizeof file, "%s/missing.json", root);
    EXPECT(syncstore_load_sync_config(s, file, NULL), SYNCSTORE_ERR_NOT_FOUND, NULL);

    /* register_custom_target with err NULL, then a sync down of it with out_sync_id NULL */
    syncstore_custom_target target = {NULL, fetch_page, NULL, NULL};
    EXPECT(syncstore_register_custom_target(s, "memory", &target, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_register_custom_target(s, "soql", &target, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);
    EXPECT(syncstore_register_custom_target(s, "other", NULL, NULL), SYNCSTORE_ERR_ARGUMENT, NULL);
    EXPECT(syncstore_register_soup(s, "memory", "[{\"path\":\"Id\",\"type\":\"string\"}]", NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_sync_down(s, "{\"type\":\"memory\"}", "memory", NULL, "memory-down", NULL, NULL, NULL, NULL), SYNCSTORE_OK, NULL);
    CHECK(strcmp(finished_status(s, id_by_name(s, "memory-down"), status, sizeof status), "DONE") == 0);
    CHECK(soup_count(s, "memory", NULL) == 12);

    EXPECT(syncstore_close(s, NULL), SYNCSTORE_OK, NULL);
    EXPECT(syncstore_set_remote(s, "{}", NULL), SYNCSTORE_ERR_STATE, NULL);
    devserver_stop(&server);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s work_dir\n", argv[0]); return 2; }
    root = argv[1];
    binary = devserver_binary();
    check_fresh_dir(root);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    test_store_calls();
    test_sync_calls();
    curl_global_cleanup();
    return check_finish();
}
