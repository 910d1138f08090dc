/* Sync down through the C ABI against a real syncstore-devserver process (docs/sync.md).
 * Usage: test_sync_down <work_dir> */
#define _POSIX_C_SOURCE 200809L
#include "sync_support.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *root, *binary;
static const char *CONTACT_INDEXES =
    "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},"
    "{\"path\":\"__local__\",\"type\":\"string\"},{\"path\":\"__sync_id__\",\"type\":\"integer\"}]";

static syncstore_store *open_store(const char *name, const devserver *server) {
    return open_sync_store(root, name, CONTACT_INDEXES, server, NULL);
}

/* Full sync down, callbacks, persisted state; then an incremental reSync that fetches only changes. */
static void test_full_and_incremental(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=3000,Account=20", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_store("full", &server);
    syncstore_error err;
    recorder r;
    recorder_init(&r);
    int64_t id = 0;
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT FirstName, LastName FROM Contact\",\"maxBatchSize\":500}",
                               "contacts", "{\"mergeMode\":\"OVERWRITE\"}", "contacts-down", record_state, &r, &id, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, id);
    if (strcmp(status_of(state), "DONE")) fprintf(stderr, "sync down: %s\n", json_string_value(json_object_get(state, "error")));
    CHECK(strcmp(status_of(state), "DONE") == 0);
    CHECK(json_integer_value(json_object_get(state, "totalSize")) == 3000);
    CHECK(json_integer_value(json_object_get(state, "progress")) == 100);
    CHECK(json_integer_value(json_object_get(state, "maxTimeStamp")) > 0);
    CHECK(strcmp(str_or_empty(json_object_get(state, "name")), "contacts-down") == 0);
    json_decref(state);
    CHECK(r.terminal == 1 && r.order_ok && strcmp(r.last_status, "DONE") == 0);
    CHECK(r.calls >= 7); /* RUNNING + 6 pages of 500 + DONE */
    CHECK(soup_count(store, "contacts", NULL) == 3000);
    char condition[128];
    snprintf(condition, sizeof condition, "{contacts:__sync_id__} = %lld and {contacts:__local__} = 'false'", (long long)id);
    CHECK(soup_count(store, "contacts", condition) == 3000);
    /* every record has Id and LastModifiedDate even though the query did not ask for them */
    CHECK(soup_count(store, "contacts", "json_extract({contacts:_soup}, '$.LastModifiedDate') is null") == 0);

    /* the same name cannot be created twice; the state is found by name */
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT Id FROM Contact\"}", "contacts", NULL, "contacts-down",
                               NULL, NULL, NULL, &err), SYNCSTORE_ERR_EXISTS, &err);
    char *out = NULL;
    EXPECT(syncstore_get_sync_status_by_name(store, "contacts-down", &out, &err), SYNCSTORE_OK, &err);
    state = check_parse(out);
    CHECK(json_integer_value(json_object_get(state, "_soupEntryId")) == id);
    json_decref(state);

    /* change three records on the server, then reSync: only changes come down */
    json_t *page = devserver_call(&server, "GET", "query?q=SELECT+Id+FROM+Contact+ORDER+BY+Id+LIMIT+3", NULL, NULL);
    const char *changed[3];
    for (int i = 0; i < 3; i++) {
        changed[i] = json_string_value(json_object_get(json_array_get(json_object_get(page, "records"), (size_t)i), "Id"));
        char path[256];
        snprintf(path, sizeof path, "sobjects/Contact/%s", changed[i]);
        long status = 0;
        json_decref(devserver_call(&server, "PATCH", path, "{\"LastName\":\"Changed\"}", &status));
        CHECK(status == 204);
    }
    recorder r2;
    recorder_init(&r2);
    int64_t again = 0;
    EXPECT(syncstore_resync_by_name(store, "contacts-down", record_state, &r2, &again, &err), SYNCSTORE_OK, &err);
    CHECK(again == id);
    state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    /* >= maxTimeStamp: the three changes plus at most the few seeded rows at the old maximum */
    long long fetched = json_integer_value(json_object_get(state, "totalSize"));
    if (fetched < 3 || fetched > 10) {
        char *dump = json_dumps(state, 0);
        fprintf(stderr, "reSync state: %s\n", dump);
        free(dump);
    }
    CHECK(fetched >= 3 && fetched <= 10);
    json_decref(state);
    CHECK(r2.terminal == 1 && r2.order_ok);
    CHECK(soup_count(store, "contacts", "{contacts:LastName} = 'Changed'") == 3);
    CHECK(soup_count(store, "contacts", NULL) == 3000);
    json_t *entry = find_entry(store, "contacts", "Id", changed[0]);
    CHECK(entry && strcmp(json_string_value(json_object_get(entry, "LastName")), "Changed") == 0);
    json_decref(entry);
    json_decref(page);

    /* a reSync while the sync is running is refused */
    EXPECT(syncstore_resync(store, id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    int rc = syncstore_resync(store, id, NULL, NULL, &err);
    CHECK(rc == SYNCSTORE_ERR_BUSY || rc == SYNCSTORE_OK); /* OK only if the first already finished */
    json_decref(wait_state(store, id));

    recorder_free(&r);
    recorder_free(&r2);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* OVERWRITE replaces a locally modified record; LEAVE_IF_CHANGED keeps it. */
static void test_merge_modes(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=50", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_store("merge", &server);
    syncstore_error err;
    int64_t id = 0;
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT Id, LastName FROM Contact\"}", "contacts", NULL, NULL,
                               NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    json_decref(wait_state(store, id));
    json_t *entry = find_entry(store, "contacts", "LastName", "Smith");
    if (!entry) { /* any record will do */
        json_t *page = devserver_call(&server, "GET", "query?q=SELECT+Id+FROM+Contact+LIMIT+1", NULL, NULL);
        entry = find_entry(store, "contacts", "Id", json_string_value(json_object_get(json_array_get(json_object_get(page, "records"), 0), "Id")));
        json_decref(page);
    }
    CHECK(entry != NULL);
    char server_id[64];
    snprintf(server_id, sizeof server_id, "%s", json_string_value(json_object_get(entry, "Id")));
    json_object_set_new(entry, "LastName", json_string("LocalEdit"));
    json_object_set_new(entry, "__local__", json_true());
    json_object_set_new(entry, "__locally_updated__", json_true());
    char *text = json_dumps(entry, 0);
    EXPECT(syncstore_upsert(store, "contacts", text, NULL, NULL, &err), SYNCSTORE_OK, &err);
    free(text);
    json_decref(entry);
    /* the server copy changes too */
    char path[256];
    snprintf(path, sizeof path, "sobjects/Contact/%s", server_id);
    json_decref(devserver_call(&server, "PATCH", path, "{\"LastName\":\"ServerEdit\"}", NULL));

    int64_t leave = 0;
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT Id, LastName FROM Contact\"}", "contacts",
                               "{\"mergeMode\":\"LEAVE_IF_CHANGED\"}", NULL, NULL, NULL, &leave, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, leave);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    entry = find_entry(store, "contacts", "Id", server_id);
    CHECK(entry && strcmp(json_string_value(json_object_get(entry, "LastName")), "LocalEdit") == 0);
    CHECK(entry && json_is_true(json_object_get(entry, "__local__")));
    json_decref(entry);

    EXPECT(syncstore_resync(store, id, NULL, NULL, &err), SYNCSTORE_OK, &err); /* OVERWRITE */
    json_decref(wait_state(store, id));
    entry = find_entry(store, "contacts", "Id", server_id);
    CHECK(entry && strcmp(json_string_value(json_object_get(entry, "LastName")), "ServerEdit") == 0);
    CHECK(entry && json_is_false(json_object_get(entry, "__local__")));
    json_decref(entry);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* 10k records sharing one LastModifiedDate, synced in pages of 500; stopped mid-way, then
 * reSync: all there, none doubled. A WHERE with OR keeps its meaning on reSync. */
static void test_ties_stop_and_or(void) {
    char import_path[1024];
    snprintf(import_path, sizeof import_path, "%s/ties.json", root);
    FILE *f = fopen(import_path, "w");
    fputs("{\"Contact\":[", f);
    for (int i = 0; i < 10000; i++)
        fprintf(f, "%s{\"LastName\":\"Tie%05d\",\"FirstName\":\"%s\",\"LastModifiedDate\":\"2025-06-01T12:00:00.000+0000\"}",
                i ? "," : "", i, i % 2 ? "Odd" : "Even");
    fputs("]}", f);
    fclose(f);
    devserver server;
    const char *args[] = {"--import", import_path, "--faults", "GET */query/* latency=30", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_store("ties", &server);
    syncstore_error err;
    recorder r;
    recorder_init(&r);
    int64_t id = 0;
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT Id, LastName, FirstName FROM Contact\",\"maxBatchSize\":500}",
                               "contacts", NULL, "ties", record_state, &r, &id, &err), SYNCSTORE_OK, &err);
    /* stop after a few pages have landed */
    for (int i = 0; i < 400; i++) {
        long long n = soup_count(store, "contacts", NULL);
        if (n >= 2000) break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EXPECT(syncstore_stop_syncs(store, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, id);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double stop_seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("stopped after %.3f s with %lld of 10000 records\n", stop_seconds, soup_count(store, "contacts", NULL));
    CHECK(strcmp(status_of(state), "STOPPED") == 0);
    CHECK(stop_seconds < 1.0);
    json_decref(state);
    CHECK(r.terminal == 1 && strcmp(r.last_status, "STOPPED") == 0);
    long long partial = soup_count(store, "contacts", NULL);
    CHECK(partial % 500 == 0 && partial < 10000); /* whole pages only */
    /* stopped manager refuses new runs until restart */
    EXPECT(syncstore_resync(store, id, NULL, NULL, &err), SYNCSTORE_ERR_STATE, &err);
    recorder r2;
    recorder_init(&r2);
    EXPECT(syncstore_restart_syncs(store, 1, record_state, &r2, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(r2.terminal == 1);
    CHECK(soup_count(store, "contacts", NULL) == 10000);
    CHECK(soup_count(store, "contacts", "1 = 1 group by {contacts:Id} having count(*) > 1") == 0);

    /* OR in the WHERE clause: the timestamp filter must not swallow the OR */
    json_decref(devserver_call(&server, "POST", "sobjects/Contact", "{\"LastName\":\"NewOdd\",\"FirstName\":\"Odd\"}", NULL));
    int64_t or_id = 0;
    EXPECT(syncstore_create_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT Id, LastName, FirstName FROM Contact WHERE FirstName = 'Odd' OR LastName = 'Tie00000'\"}",
                                      "contacts", NULL, "or-sync", &or_id, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_resync(store, or_id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, or_id);
    CHECK(json_integer_value(json_object_get(state, "totalSize")) == 5002);
    json_decref(state);
    json_decref(devserver_call(&server, "POST", "sobjects/Contact", "{\"LastName\":\"NewEven\",\"FirstName\":\"Even\"}", NULL));
    EXPECT(syncstore_resync(store, or_id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, or_id);
    /* only the newest Odd record matches (>= maxTimeStamp); an unparenthesized filter would pull all Evens */
    CHECK(json_integer_value(json_object_get(state, "totalSize")) == 1);
    json_decref(state);
    CHECK(soup_count(store, "contacts", "{contacts:LastName} = 'NewEven'") == 0);

    recorder_free(&r);
    recorder_free(&r2);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* Ghosts: records deleted on the server go; records of another sync sharing the soup and
 * locally modified records stay; the sync is not left running. */
static void test_ghosts(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=40,Account=10", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_store("ghosts", &server);
    syncstore_error err;
    int64_t contacts = 0, accounts = 0;
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT Id, LastName FROM Contact\"}", "contacts", NULL, NULL,
                               NULL, NULL, &contacts, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT Id, Name FROM Account\"}", "contacts", NULL, NULL,
                               NULL, NULL, &accounts, &err), SYNCSTORE_OK, &err);
    json_decref(wait_state(store, contacts));
    json_decref(wait_state(store, accounts));
    CHECK(soup_count(store, "contacts", NULL) == 50);
    json_t *page = devserver_call(&server, "GET", "query?q=SELECT+Id+FROM+Contact+ORDER+BY+Id+LIMIT+3", NULL, NULL);
    json_t *records = json_object_get(page, "records");
    for (size_t i = 0; i < 3; i++) {
        char path[256];
        snprintf(path, sizeof path, "sobjects/Contact/%s", json_string_value(json_object_get(json_array_get(records, i), "Id")));
        json_decref(devserver_call(&server, "DELETE", path, NULL, NULL));
    }
    /* the third deleted one is locally modified: it must survive */
    json_t *kept = find_entry(store, "contacts", "Id", json_string_value(json_object_get(json_array_get(records, 2), "Id")));
    json_object_set_new(kept, "__local__", json_true());
    char *text = json_dumps(kept, 0);
    EXPECT(syncstore_upsert(store, "contacts", text, NULL, NULL, &err), SYNCSTORE_OK, &err);
    free(text);
    json_decref(kept);
    json_decref(page);
    recorder r;
    recorder_init(&r);
    EXPECT(syncstore_clean_resync_ghosts(store, contacts, record_state, &r, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, contacts);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(r.terminal == 1 && r.last && json_integer_value(json_object_get(r.last, "removed")) == 2);
    CHECK(soup_count(store, "contacts", NULL) == 48); /* 10 accounts untouched */
    EXPECT(syncstore_clean_resync_ghosts(store, accounts, NULL, NULL, &err), SYNCSTORE_OK, &err);
    json_decref(wait_state(store, accounts));
    CHECK(soup_count(store, "contacts", NULL) == 48);
    recorder_free(&r);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* Other targets: sosl, mru, refresh. The server sends query pages of 7 records, so mru and
 * refresh must follow nextRecordsUrl within a query (refresh: within one chunk of ids). */
static void test_other_targets(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=30,Account=10", "--default-batch-size", "7", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_store("targets", &server);
    syncstore_error err;
    json_decref(devserver_call(&server, "POST", "sobjects/Contact", "{\"LastName\":\"Zyxwvut\",\"FirstName\":\"Sosl\"}", NULL));
    int64_t id = 0;
    EXPECT(syncstore_sync_down(store, "{\"type\":\"sosl\",\"query\":\"FIND {Zyxwvut} IN ALL FIELDS RETURNING Contact(Id, LastName, LastModifiedDate)\"}",
                               "contacts", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    if (strcmp(status_of(state), "DONE")) fprintf(stderr, "sosl: %s\n", json_string_value(json_object_get(state, "error")));
    json_decref(state);
    CHECK(soup_count(store, "contacts", "{contacts:LastName} = 'Zyxwvut'") == 1);

    EXPECT(syncstore_sync_down(store, "{\"type\":\"mru\",\"sobjectType\":\"Contact\",\"fieldlist\":[\"Id\",\"LastName\"]}",
                               "contacts", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    if (strcmp(status_of(state), "DONE")) fprintf(stderr, "mru: %s\n", json_string_value(json_object_get(state, "error")));
    json_decref(state);

    /* refresh: hold all 31 contacts, change three server copies spread over the pages (first,
     * middle, last by Id), refresh brings all three back */
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT LastName, FirstName FROM Contact\"}",
                               "contacts", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    json_decref(wait_state(store, id));
    CHECK(soup_count(store, "contacts", NULL) == 31);
    int picks[] = {0, 15, 30};
    for (size_t i = 0; i < 3; i++) {
        char query[128], path[256];
        snprintf(query, sizeof query, "query?q=SELECT+Id+FROM+Contact+ORDER+BY+Id+LIMIT+1+OFFSET+%d", picks[i]);
        json_t *one = devserver_call(&server, "GET", query, NULL, NULL);
        const char *picked = json_string_value(json_object_get(json_array_get(json_object_get(one, "records"), 0), "Id"));
        CHECK(picked != NULL);
        snprintf(path, sizeof path, "sobjects/Contact/%s", picked ? picked : "none");
        json_decref(devserver_call(&server, "PATCH", path, "{\"FirstName\":\"Refreshed\"}", NULL));
        json_decref(one);
    }
    EXPECT(syncstore_sync_down(store, "{\"type\":\"refresh\",\"sobjectType\":\"Contact\",\"fieldlist\":[\"Id\",\"LastName\",\"FirstName\"]}",
                               "contacts", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(soup_count(store, "contacts", "json_extract({contacts:_soup}, '$.FirstName') = 'Refreshed'") == 3);
    CHECK(soup_count(store, "contacts", NULL) == 31);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* parent_children, briefcase, layout and metadata targets, each into the soups they name.
 * The server returns at most 2 children inline per parent, so parent_children must follow each
 * parent's nested nextRecordsUrl (about 4 contacts per account). */
static void test_multi_soup_targets(void) {
    devserver server;
    const char *args[] = {"--seed", "Account=15,Contact=60,Widget__c=30", "--child-batch-size", "2", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_store("multi", &server);
    syncstore_error err;
    const char *id_index = "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"AccountId\",\"type\":\"string\"}]";
    EXPECT(syncstore_register_soup(store, "accounts", id_index, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(store, "widgets", id_index, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(store, "meta", id_index, &err), SYNCSTORE_OK, &err);
    int64_t id = 0;
    EXPECT(syncstore_sync_down(store,
        "{\"type\":\"parent_children\",\"parent\":{\"sobjectType\":\"Account\",\"soupName\":\"accounts\"},"
        "\"parentFieldlist\":[\"Id\",\"Name\"],\"children\":{\"sobjectType\":\"Contact\",\"sobjectTypePlural\":\"Contacts\","
        "\"soupName\":\"contacts\",\"parentIdFieldName\":\"AccountId\"},\"childrenFieldlist\":[\"LastName\"],"
        "\"relationshipType\":\"LOOKUP\"}", "accounts", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, id);
    if (strcmp(status_of(state), "DONE")) fprintf(stderr, "parent_children: %s\n", json_string_value(json_object_get(state, "error")));
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(soup_count(store, "accounts", NULL) == 15);
    long server_children = devserver_count(&server, "SELECT Id FROM Contact WHERE AccountId != null");
    CHECK(server_children > 0 && soup_count(store, "contacts", NULL) == server_children);
    CHECK(soup_count(store, "accounts", "json_extract({accounts:_soup}, '$.Contacts') is not null") == 0);
    /* ghosts: a child deleted on the server goes, found through the nested pages too */
    json_t *kid = devserver_call(&server, "GET", "query?q=SELECT+Id+FROM+Contact+WHERE+AccountId+%21%3D+null+ORDER+BY+Id+DESC+LIMIT+1", NULL, NULL);
    char kid_path[256];
    snprintf(kid_path, sizeof kid_path, "sobjects/Contact/%s", json_string_value(json_object_get(json_array_get(json_object_get(kid, "records"), 0), "Id")));
    json_decref(kid);
    json_decref(devserver_call(&server, "DELETE", kid_path, NULL, NULL));
    EXPECT(syncstore_clean_resync_ghosts(store, id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    json_decref(wait_state(store, id));
    CHECK(soup_count(store, "contacts", NULL) == server_children - 1);
    CHECK(soup_count(store, "accounts", NULL) == 15);
    server_children -= 1;

    /* briefcase: Account, Contact (with an account), active Widgets, each into its soup */
    EXPECT(syncstore_clear_soup(store, "accounts", &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_clear_soup(store, "contacts", &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_sync_down(store,
        "{\"type\":\"briefcase\",\"infos\":[{\"sobjectType\":\"Account\",\"fieldlist\":[\"Name\"],\"soupName\":\"accounts\"},"
        "{\"sobjectType\":\"Contact\",\"fieldlist\":[\"LastName\",\"AccountId\"],\"soupName\":\"contacts\"},"
        "{\"sobjectType\":\"Widget__c\",\"fieldlist\":[\"Name\",\"Active__c\"],\"soupName\":\"widgets\"}]}",
        "accounts", NULL, "briefcase", NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, id);
    if (strcmp(status_of(state), "DONE")) fprintf(stderr, "briefcase: %s\n", json_string_value(json_object_get(state, "error")));
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(soup_count(store, "accounts", NULL) == 15);
    CHECK(soup_count(store, "contacts", NULL) == server_children);
    long active = devserver_count(&server, "SELECT Id FROM Widget__c WHERE Active__c = true");
    CHECK(soup_count(store, "widgets", NULL) == active);
    /* incremental: one changed widget comes down again */
    json_t *w = devserver_call(&server, "GET", "query?q=SELECT+Id+FROM+Widget__c+WHERE+Active__c+%3D+true+LIMIT+1", NULL, NULL);
    char path[256];
    snprintf(path, sizeof path, "sobjects/Widget__c/%s", json_string_value(json_object_get(json_array_get(json_object_get(w, "records"), 0), "Id")));
    json_decref(devserver_call(&server, "PATCH", path, "{\"Name\":\"Renamed widget\"}", NULL));
    json_decref(w);
    EXPECT(syncstore_resync(store, id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    CHECK(json_integer_value(json_object_get(state, "totalSize")) < 10);
    json_decref(state);
    CHECK(soup_count(store, "widgets", "json_extract({widgets:_soup}, '$.Name') = 'Renamed widget'") == 1);

    /* layout and metadata: one record each */
    EXPECT(syncstore_sync_down(store, "{\"type\":\"layout\",\"sobjectType\":\"Account\",\"layoutType\":\"Compact\"}",
                               "meta", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    EXPECT(syncstore_sync_down(store, "{\"type\":\"metadata\",\"sobjectType\":\"Contact\"}", "meta", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    json_t *layout = find_entry(store, "meta", "Id", "Account-Compact-View");
    CHECK(layout && json_is_array(json_object_get(layout, "sections")));
    json_decref(layout);
    json_t *describe = find_entry(store, "meta", "Id", "Contact");
    CHECK(describe && json_is_array(json_object_get(describe, "fields")));
    json_decref(describe);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* HTTPS: TLS verification is on; a private CA is accepted through caBundle only. */
static void test_tls(void) {
    char cert[1024], key[1024], command[4096];
    snprintf(cert, sizeof cert, "%s/tls-cert.pem", root);
    snprintf(key, sizeof key, "%s/tls-key.pem", root);
    snprintf(command, sizeof command,
             "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
             "-keyout '%s' -out '%s' >/dev/null 2>&1", key, cert);
    if (system(command) != 0) { fprintf(stderr, "openssl failed; skipping the TLS test\n"); CHECK(0); return; }
    devserver server;
    const char *args[] = {"--seed", "Contact=30", "--tls-cert", cert, "--tls-key", key, NULL};
    devserver_start(&server, binary, args);
    CHECK(strncmp(server.url, "https://", 8) == 0);
    syncstore_store *store = open_store("tls", &server);   /* remote without caBundle */
    syncstore_error err;
    int64_t id = 0;
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT Id FROM Contact\"}", "contacts", NULL, "tls",
                               NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "FAILED") == 0);
    CHECK(json_integer_value(json_object_get(state, "errorCode")) == SYNCSTORE_ERR_NETWORK);
    json_decref(state);
    char extra[1200];
    snprintf(extra, sizeof extra, "\"caBundle\":\"%s\"", cert);
    char *remote = devserver_remote_json(&server, extra);
    EXPECT(syncstore_set_remote(store, remote, &err), SYNCSTORE_OK, &err);
    free(remote);
    EXPECT(syncstore_resync(store, id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(soup_count(store, "contacts", NULL) == 30);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* The second process of test_second_process: opens the store and tries a sync call.
 * Exit 0: it got `expected` (and, for BUSY, the retryable flag); 1 otherwise. */
static int second_process(const char *dir, const char *name, int64_t id, int expected) {
    syncstore_error err;
    syncstore_store *store = NULL;
    char config[128];
    snprintf(config, sizeof config, "{\"storeName\":\"%s\"}", name);
    if (syncstore_open(dir, config, &store, &err) != SYNCSTORE_OK) return 1;
    char *out = NULL;
    int rc = syncstore_get_sync_status(store, id, &out, &err);
    syncstore_free(out);
    int ok = rc == expected && (expected != SYNCSTORE_ERR_BUSY || err.retryable);
    /* the store itself stays usable */
    ok = ok && soup_count(store, "contacts", NULL) >= 0;
    if (!ok) fprintf(stderr, "second process: rc %d (%s)\n", rc, rc ? err.message : "");
    syncstore_close(store, &err);
    return ok ? 0 : 1;
}

static int run_second_process(const char *name, int64_t id, int expected) {
    char id_text[32], expected_text[16];
    snprintf(id_text, sizeof id_text, "%lld", (long long)id);
    snprintf(expected_text, sizeof expected_text, "%d", expected);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test_sync_down", "--second-process", root, name, id_text, expected_text, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Only one process runs a store's syncs: while this one has the store open (here running a slow
 * sync), another process opening it gets BUSY from sync calls, before its sync engine could
 * take the running sync for one a crash left RUNNING; once this process has closed it, it may. */
static void test_second_process(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=1000", "--faults", "GET */query* latency=400", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_store("shared", &server);
    syncstore_error err;
    int64_t id = 0;
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT LastName FROM Contact\",\"maxBatchSize\":200}",
                               "contacts", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    CHECK(run_second_process("shared", id, SYNCSTORE_ERR_BUSY) == 0);
    json_t *state = wait_state(store, id);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    CHECK(soup_count(store, "contacts", NULL) == 1000);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    CHECK(run_second_process("shared", id, SYNCSTORE_OK) == 0);
    devserver_stop(&server);
}

/* A proxy's HTML error page: the run fails SERVER (retryable) and "error" names the status and the
 * page's heading, never its markup (docs/errors.md). */
static void test_html_error_page(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=5", "--faults", "* html=502", NULL};
    devserver_start(&server, binary, args);
    syncstore_store *store = open_sync_store(root, "html", CONTACT_INDEXES, &server, "\"maxAttempts\":1");
    syncstore_error err;
    int64_t id = 0;
    EXPECT(syncstore_sync_down(store, "{\"type\":\"soql\",\"query\":\"SELECT LastName FROM Contact\"}",
                               "contacts", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, id);
    const char *message = json_string_value(json_object_get(state, "error"));
    CHECK(strcmp(status_of(state), "FAILED") == 0);
    CHECK(json_integer_value(json_object_get(state, "errorCode")) == SYNCSTORE_ERR_SERVER);
    CHECK(message && strstr(message, "HTTP 502: 502 Bad Gateway"));
    CHECK(message && !strchr(message, '<') && !strchr(message, '>') && strlen(message) < 300);
    if (message && strchr(message, '<')) fprintf(stderr, "message: %.300s\n", message);
    json_decref(state);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

int main(int argc, char **argv) {
    if (argc == 6 && !strcmp(argv[1], "--second-process")) return second_process(argv[2], argv[3], atoll(argv[4]), atoi(argv[5]));
    if (argc < 2) { fprintf(stderr, "usage: %s work_dir\n", argv[0]); return 2; }
    root = argv[1];
    binary = devserver_binary();
    check_fresh_dir(root);
    fprintf(stderr, "-- test_full_and_incremental\n");
    test_full_and_incremental();
    fprintf(stderr, "-- test_merge_modes\n");
    test_merge_modes();
    fprintf(stderr, "-- test_ties_stop_and_or\n");
    test_ties_stop_and_or();
    fprintf(stderr, "-- test_ghosts\n");
    test_ghosts();
    fprintf(stderr, "-- test_other_targets\n");
    test_other_targets();
    fprintf(stderr, "-- test_multi_soup_targets\n");
    test_multi_soup_targets();
    fprintf(stderr, "-- test_tls\n");
    test_tls();
    fprintf(stderr, "-- test_second_process\n");
    test_second_process();
    fprintf(stderr, "-- test_html_error_page\n");
    test_html_error_page();
    return check_finish();
}
