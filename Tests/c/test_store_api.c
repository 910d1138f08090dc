/* The store through the C header: every call's success path and its documented errors. */
#include "check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char root[1024];

static json_t *cursor_entries(json_t *cursor) { return json_object_get(cursor, "currentPageOrderedEntries"); }
static long long num(json_t *obj, const char *key) { return (long long)json_integer_value(json_object_get(obj, key)); }

static json_t *query(syncstore_store *s, const char *soup, const char *spec) {
    syncstore_error err;
    char *out = NULL;
    int rc = soup ? syncstore_query_soup(s, soup, spec, &out, &err) : syncstore_run_smart_query(s, spec, &out, &err);
    EXPECT(rc, SYNCSTORE_OK, &err);
    return check_parse(out);
}

static void test_library(void) {
    CHECK(syncstore_abi_version() == SYNCSTORE_ABI_VERSION);
    CHECK(strcmp(syncstore_version(), SYNCSTORE_VERSION) == 0);
    /* The library's names are the header's macro names, for every code. */
#define NAMED(code) CHECK(strcmp(syncstore_status_name(code), #code) == 0);
    NAMED(SYNCSTORE_OK) NAMED(SYNCSTORE_ERR_ARGUMENT) NAMED(SYNCSTORE_ERR_NOT_FOUND) NAMED(SYNCSTORE_ERR_EXISTS)
    NAMED(SYNCSTORE_ERR_BUSY) NAMED(SYNCSTORE_ERR_NETWORK) NAMED(SYNCSTORE_ERR_AUTH) NAMED(SYNCSTORE_ERR_SERVER)
    NAMED(SYNCSTORE_ERR_CONFLICT) NAMED(SYNCSTORE_ERR_STORAGE) NAMED(SYNCSTORE_ERR_INTERNAL) NAMED(SYNCSTORE_ERR_STATE)
#undef NAMED
    CHECK(strcmp(syncstore_status_name(999), "SYNCSTORE_ERR_UNKNOWN") == 0);
    syncstore_free(NULL);
}

static void test_stores(void) {
    syncstore_error err;
    syncstore_store *user = NULL, *global = NULL, *again = NULL;
    EXPECT(syncstore_open(root, "{\"isGlobalStore\":false,\"storeName\":\"shared\"}", &user, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_open(root, "{\"isGlobalStore\":true,\"storeName\":\"shared\"}", &global, &err), SYNCSTORE_OK, &err);
    CHECK(user != NULL && global != NULL && user != global);
    /* docs/smartstore.md#stores: user and global stores with the same name are different stores */
    EXPECT(syncstore_register_soup(user, "only_user", "[{\"path\":\"a\",\"type\":\"string\"}]", &err), SYNCSTORE_OK, &err);
    int exists = -1;
    EXPECT(syncstore_soup_exists(global, "only_user", &exists, &err), SYNCSTORE_OK, &err);
    CHECK(exists == 0);
    EXPECT(syncstore_soup_exists(user, "only_user", &exists, &err), SYNCSTORE_OK, &err);
    CHECK(exists == 1);
    /* a second handle to an open store sees the same soups */
    EXPECT(syncstore_open(root, "{\"storeName\":\"shared\"}", &again, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_soup_exists(again, "only_user", &exists, &err), SYNCSTORE_OK, &err);
    CHECK(exists == 1);

    char *list = NULL;
    EXPECT(syncstore_list_stores(root, 0, &list, &err), SYNCSTORE_OK, &err);
    json_t *names = check_parse(list);
    CHECK(json_is_array(names) && json_array_size(names) >= 1);
    int found = 0;
    for (size_t i = 0; i < json_array_size(names); i++)
        if (strcmp(json_string_value(json_array_get(names, i)), "shared") == 0) found = 1;
    CHECK(found);
    json_decref(names);

    /* database size grows as data is added */
    int64_t before = 0, after = 0;
    EXPECT(syncstore_database_size(user, &before, &err), SYNCSTORE_OK, &err);
    char big[8192];
    memset(big, 'x', sizeof big);
    char entries[9000];
    snprintf(entries, sizeof entries, "[{\"a\":\"%.*s\"}]", 8000, big);
    for (int i = 0; i < 20; i++) EXPECT(syncstore_upsert(user, "only_user", entries, NULL, NULL, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_database_size(user, &after, &err), SYNCSTORE_OK, &err);
    CHECK(after > before);

    /* removing an open store is refused; closing all handles allows it */
    EXPECT(syncstore_remove_store(root, "{\"storeName\":\"shared\"}", &err), SYNCSTORE_ERR_BUSY, &err);
    CHECK(err.code == SYNCSTORE_ERR_BUSY && err.retryable == 1 && strlen(err.message) > 0);
    EXPECT(syncstore_close(user, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_close(user, &err), SYNCSTORE_ERR_STATE, &err);
    EXPECT(syncstore_soup_exists(user, "only_user", &exists, &err), SYNCSTORE_ERR_STATE, &err);
    EXPECT(syncstore_remove_store(root, "{\"storeName\":\"shared\"}", &err), SYNCSTORE_ERR_BUSY, &err);
    EXPECT(syncstore_close(again, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_remove_store(root, "{\"storeName\":\"shared\"}", &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_remove_store(root, "{\"storeName\":\"shared\"}", &err), SYNCSTORE_ERR_NOT_FOUND, &err);
    /* the global one is still there */
    EXPECT(syncstore_list_stores(root, 1, &list, &err), SYNCSTORE_OK, &err);
    names = check_parse(list);
    CHECK(json_array_size(names) == 1);
    json_decref(names);
    EXPECT(syncstore_remove_all_stores(root, 1, &err), SYNCSTORE_ERR_BUSY, &err);
    EXPECT(syncstore_close(global, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_remove_all_stores(root, 1, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_list_stores(root, 1, &list, &err), SYNCSTORE_OK, &err);
    names = check_parse(list);
    CHECK(json_array_size(names) == 0);
    json_decref(names);
    EXPECT(syncstore_close(NULL, &err), SYNCSTORE_OK, &err);

    /* bool and null store configs */
    syncstore_store *def = NULL;
    EXPECT(syncstore_open(root, NULL, &def, &err), SYNCSTORE_OK, &err);
    syncstore_close(def, NULL);
    EXPECT(syncstore_open(root, "true", &def, &err), SYNCSTORE_OK, &err);
    syncstore_close(def, NULL);
    EXPECT(syncstore_list_stores(root, 1, &list, &err), SYNCSTORE_OK, &err);
    names = check_parse(list);
    CHECK(json_array_size(names) == 1 && strcmp(json_string_value(json_array_get(names, 0)), "smartstore") == 0);
    json_decref(names);
}

static void test_soups_and_entries(syncstore_store *s) {
    syncstore_error err;
    EXPECT(syncstore_register_soup(s, "animals",
        "[{\"path\":\"name\",\"type\":\"full_text\"},{\"path\":\"color\",\"type\":\"string\"},"
        "{\"path\":\"legs\",\"type\":\"integer\"},{\"path\":\"weight\",\"type\":\"floating\"},"
        "{\"path\":\"owner.city\",\"type\":\"json1\"}]", &err), SYNCSTORE_OK, &err);
    /* registering again is a no-op */
    EXPECT(syncstore_register_soup(s, "animals", "[{\"path\":\"other\",\"type\":\"string\"}]", &err), SYNCSTORE_OK, &err);
    char *specs = NULL;
    EXPECT(syncstore_get_soup_index_specs(s, "animals", &specs, &err), SYNCSTORE_OK, &err);
    json_t *spec_list = check_parse(specs);
    CHECK(json_array_size(spec_list) == 5);
    CHECK(strcmp(str_or_empty(json_object_get(json_array_get(spec_list, 0), "type")), "full_text") == 0);
    json_decref(spec_list);

    char *out = NULL;
    EXPECT(syncstore_upsert(s, "animals",
        "[{\"name\":\"grey cat\",\"color\":\"grey\",\"legs\":4,\"weight\":4.5,\"owner\":{\"city\":\"Paris\"}},"
        " {\"name\":\"black tabby\",\"color\":\"black\",\"legs\":4,\"weight\":5.25,\"owner\":{\"city\":\"Lyon\"}},"
        " {\"name\":\"black cat\",\"color\":\"black\",\"legs\":3,\"weight\":3.0,\"owner\":{\"city\":\"Paris\"}},"
        " {\"name\":\"parrot\",\"color\":\"green\",\"legs\":2,\"weight\":0.5}]", NULL, &out, &err), SYNCSTORE_OK, &err);
    json_t *stored = check_parse(out);
    CHECK(json_array_size(stored) == 4);
    CHECK(num(json_array_get(stored, 0), "_soupEntryId") == 1);
    CHECK(num(json_array_get(stored, 3), "_soupEntryId") == 4);
    CHECK(num(json_array_get(stored, 0), "_soupLastModifiedDate") > 0);
    json_decref(stored);

    /* update through _soupEntryId */
    EXPECT(syncstore_upsert(s, "animals", "{\"_soupEntryId\":4,\"name\":\"parrot\",\"color\":\"red\",\"legs\":2}", NULL, &out, &err), SYNCSTORE_OK, &err);
    syncstore_free(out);
    EXPECT(syncstore_retrieve(s, "animals", "[4, 99, 1]", &out, &err), SYNCSTORE_OK, &err);
    json_t *got = check_parse(out);
    CHECK(json_array_size(got) == 2);
    CHECK(strcmp(str_or_empty(json_object_get(json_array_get(got, 0), "color")), "red") == 0);
    CHECK(num(json_array_get(got, 1), "_soupEntryId") == 1);
    json_decref(got);

    /* queries: exact, range on integer, like, match, json1, selectPaths, order */
    json_t *c = query(s, "animals", "{\"queryType\":\"exact\",\"indexPath\":\"color\",\"matchKey\":\"black\",\"pageSize\":10}");
    CHECK(num(c, "totalEntries") == 2);
    json_decref(c);
    c = query(s, "animals", "{\"queryType\":\"range\",\"indexPath\":\"legs\",\"beginKey\":3,\"endKey\":4,\"order\":\"descending\",\"orderPath\":\"weight\",\"selectPaths\":[\"weight\"],\"pageSize\":10}");
    CHECK(num(c, "totalEntries") == 3);
    CHECK(json_real_value(json_array_get(json_array_get(cursor_entries(c), 0), 0)) == 5.25);
    json_decref(c);
    c = query(s, "animals", "{\"queryType\":\"like\",\"indexPath\":\"name\",\"likeKey\":\"%cat\",\"pageSize\":10}");
    CHECK(num(c, "totalEntries") == 2);
    json_decref(c);
    c = query(s, "animals", "{\"queryType\":\"match\",\"indexPath\":\"name\",\"matchKey\":\"black NOT tabby\",\"pageSize\":10}");
    CHECK(num(c, "totalEntries") == 1);
    json_decref(c);
    c = query(s, "animals", "{\"queryType\":\"match\",\"indexPath\":null,\"matchKey\":\"gr*\",\"pageSize\":10}");
    CHECK(num(c, "totalEntries") == 1);
    json_decref(c);
    c = query(s, "animals", "{\"queryType\":\"exact\",\"indexPath\":\"owner.city\",\"matchKey\":\"Paris\",\"pageSize\":10}");
    CHECK(num(c, "totalEntries") == 2);
    json_decref(c);
    c = query(s, NULL, "{\"queryType\":\"smart\",\"smartSql\":\"select {animals:color}, count(*) from {animals} group by {animals:color} order by {animals:color}\",\"pageSize\":10}");
    json_t *rows = cursor_entries(c);
    CHECK(json_array_size(rows) == 3);
    CHECK(strcmp(str_or_empty(json_array_get(json_array_get(rows, 0), 0)), "black") == 0);
    CHECK(json_integer_value(json_array_get(json_array_get(rows, 0), 1)) == 2);
    json_decref(c);
    c = query(s, NULL, "{\"queryType\":\"smart\",\"smartSql\":\"select {animals:_soup} from {animals} where {animals:_soupEntryId} in (select rowid from {animals}_fts where {animals}_fts match '{animals:name}:gr*')\",\"pageSize\":10}");
    CHECK(num(c, "totalEntries") == 1);
    CHECK(json_is_object(json_array_get(json_array_get(cursor_entries(c), 0), 0)));
    json_decref(c);

    /* cursors: paging, clamping, close */
    c = query(s, "animals", "{\"queryType\":\"range\",\"indexPath\":\"name\",\"pageSize\":3,\"selectPaths\":[\"name\"]}");
    CHECK(num(c, "totalPages") == 2 && num(c, "totalEntries") == 4);
    long long cursor_id = num(c, "cursorId");
    json_decref(c);
    EXPECT(syncstore_cursor_move_to_page(s, cursor_id, 7, &out, &err), SYNCSTORE_OK, &err);
    c = check_parse(out);
    CHECK(num(c, "currentPageIndex") == 1 && json_array_size(cursor_entries(c)) == 1);
    json_decref(c);
    EXPECT(syncstore_cursor_close(s, cursor_id, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_cursor_move_to_page(s, cursor_id, 0, &out, &err), SYNCSTORE_ERR_NOT_FOUND, &err);
    CHECK(out == NULL);

    /* external id upsert */
    EXPECT(syncstore_upsert(s, "animals", "{\"color\":\"grey\",\"name\":\"grey cat renamed\"}", "color", &out, &err), SYNCSTORE_OK, &err);
    got = check_parse(out);
    CHECK(num(json_array_get(got, 0), "_soupEntryId") == 1);
    json_decref(got);
    EXPECT(syncstore_upsert(s, "animals", "{\"color\":\"black\"}", "color", &out, &err), SYNCSTORE_ERR_CONFLICT, &err);
    EXPECT(syncstore_upsert(s, "animals", "{\"name\":\"x\"}", "color", &out, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_upsert(s, "animals", "{\"nick\":\"x\"}", "nick", &out, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_upsert(s, "animals", "{\"_soupEntryId\":12345}", NULL, &out, &err), SYNCSTORE_ERR_NOT_FOUND, &err);

    /* alter + reindex */
    EXPECT(syncstore_alter_soup(s, "animals", "[{\"path\":\"name\",\"type\":\"full_text\"},{\"path\":\"habitat\",\"type\":\"string\"}]", 0, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_upsert(s, "animals", "{\"_soupEntryId\":2,\"name\":\"black tabby\",\"habitat\":\"house\"}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    c = query(s, "animals", "{\"queryType\":\"exact\",\"indexPath\":\"habitat\",\"matchKey\":\"house\",\"pageSize\":10}");
    CHECK(num(c, "totalEntries") == 1);
    json_decref(c);
    EXPECT(syncstore_reindex_soup(s, "animals", "[\"habitat\"]", &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_reindex_soup(s, "animals", "[\"color\"]", &err), SYNCSTORE_ERR_ARGUMENT, &err);

    /* remove by query and by ids */
    int64_t removed = -1;
    EXPECT(syncstore_remove_by_query(s, "animals", "{\"queryType\":\"match\",\"indexPath\":\"name\",\"matchKey\":\"cat*\",\"pageSize\":1}", &removed, &err), SYNCSTORE_OK, &err);
    if (removed != 2) fprintf(stderr, "removed %lld\n", (long long)removed);
    CHECK(removed == 2);
    EXPECT(syncstore_remove_entries(s, "animals", "[4]", &err), SYNCSTORE_OK, &err);
    c = query(s, "animals", "{\"queryType\":\"range\",\"pageSize\":10}");
    CHECK(num(c, "totalEntries") == 1);
    json_decref(c);
    EXPECT(syncstore_clear_soup(s, "animals", &err), SYNCSTORE_OK, &err);
    c = query(s, "animals", "{\"queryType\":\"range\",\"pageSize\":10}");
    CHECK(num(c, "totalEntries") == 0 && num(c, "totalPages") == 0);
    json_decref(c);
    EXPECT(syncstore_remove_soup(s, "animals", &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_remove_soup(s, "animals", &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_clear_soup(s, "animals", &err), SYNCSTORE_ERR_NOT_FOUND, &err);
}

static void test_store_config_file(syncstore_store *s) {
    syncstore_error err;
    char path[1200];
    snprintf(path, sizeof path, "%s/userstore.json", root);
    FILE *f = fopen(path, "w");
    fputs("{\"soups\":[{\"soupName\":\"accounts\",\"indexes\":[{\"path\":\"Id\",\"type\":\"string\"},"
          "{\"path\":\"Name\",\"type\":\"string\"},{\"path\":\"__local__\",\"type\":\"string\"}]},"
          "{\"soupName\":\"contacts\",\"indexes\":[{\"path\":\"Id\",\"type\":\"string\"}]}]}", f);
    fclose(f);
    EXPECT(syncstore_load_store_config(s, path, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_load_store_config(s, path, &err), SYNCSTORE_OK, &err); /* existing soups skipped */
    int exists = 0;
    syncstore_soup_exists(s, "contacts", &exists, &err);
    CHECK(exists == 1);
    snprintf(path, sizeof path, "%s/missing.json", root);
    EXPECT(syncstore_load_store_config(s, path, &err), SYNCSTORE_ERR_NOT_FOUND, &err);
}

int main(int argc, char **argv) {
    snprintf(root, sizeof root, "%s", argc > 1 ? argv[1] : "test-stores/store_api");
    check_fresh_dir(root);
    test_library();
    test_stores();
    syncstore_error err;
    syncstore_store *s = NULL;
    EXPECT(syncstore_open(root, "{\"storeName\":\"api\"}", &s, &err), SYNCSTORE_OK, &err);
    test_soups_and_entries(s);
    test_store_config_file(s);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    return check_finish();
}
