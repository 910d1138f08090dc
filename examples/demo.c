/* SyncStore demo: opens a store, registers a soup, upserts contacts and queries them,
 * printing each step. Usage: syncstore-example [root_dir] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syncstore.h>

static int fail(const char *step, int status, const syncstore_error *err) {
    fprintf(stderr, "%s failed: %s: %s\n", step, syncstore_status_name(status), err->message);
    return 1;
}

static int show_query(syncstore_store *store, const char *title, const char *soup, const char *spec) {
    syncstore_error err;
    char *cursor = NULL;
    int rc = soup ? syncstore_query_soup(store, soup, spec, &cursor, &err)
                  : syncstore_run_smart_query(store, spec, &cursor, &err);
    if (rc != SYNCSTORE_OK) return fail(title, rc, &err);
    printf("\n%s\n  spec:   %s\n  cursor: %s\n", title, spec, cursor);
    syncstore_free(cursor);
    return 0;
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : "demo-stores";
    syncstore_error err;
    syncstore_store *store = NULL;
    int rc;

    printf("libsyncstore %s (ABI %d)\n", syncstore_version(), syncstore_abi_version());
    rc = syncstore_open(root, "{\"isGlobalStore\": false, \"storeName\": \"demo\"}", &store, &err);
    if (rc != SYNCSTORE_OK) return fail("open", rc, &err);
    printf("opened user store 'demo' under %s\n", root);

    syncstore_remove_soup(store, "contacts", &err);
    rc = syncstore_register_soup(store, "contacts",
        "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},"
        "{\"path\":\"Title\",\"type\":\"full_text\"},{\"path\":\"Age\",\"type\":\"integer\"},"
        "{\"path\":\"__local__\",\"type\":\"string\"}]", &err);
    if (rc != SYNCSTORE_OK) return fail("register_soup", rc, &err);
    printf("registered soup 'contacts' (Id, LastName, Title full_text, Age integer, __local__)\n");

    char *stored = NULL;
    rc = syncstore_upsert(store, "contacts",
        "[{\"Id\":\"003A\",\"FirstName\":\"Ada\",\"LastName\":\"Lovelace\",\"Title\":\"Engineer of engines\",\"Age\":36},"
        " {\"Id\":\"003B\",\"FirstName\":\"Grace\",\"LastName\":\"Hopper\",\"Title\":\"Rear admiral\",\"Age\":85},"
        " {\"Id\":\"003C\",\"FirstName\":\"Alan\",\"LastName\":\"Turing\",\"Title\":\"Engineer and mathematician\",\"Age\":41},"
        " {\"Id\":\"003D\",\"FirstName\":\"Edsger\",\"LastName\":\"Dijkstra\",\"Title\":\"Professor\",\"Age\":72,"
        "  \"__local__\":true,\"__locally_created__\":true}]", NULL, &stored, &err);
    if (rc != SYNCSTORE_OK) return fail("upsert", rc, &err);
    printf("\nupserted 4 contacts:\n  %s\n", stored);
    syncstore_free(stored);

    rc = syncstore_upsert(store, "contacts", "{\"Id\":\"003B\",\"FirstName\":\"Grace\",\"LastName\":\"Hopper\",\"Title\":\"Rear admiral, COBOL\",\"Age\":85}",
                          "Id", &stored, &err);
    if (rc != SYNCSTORE_OK) return fail("upsert by external id", rc, &err);
    printf("\nupdated Hopper by external id path 'Id':\n  %s\n", stored);
    syncstore_free(stored);

    if (show_query(store, "exact LastName = Turing", "contacts",
                   "{\"queryType\":\"exact\",\"indexPath\":\"LastName\",\"matchKey\":\"Turing\",\"pageSize\":10}")) return 1;
    if (show_query(store, "range Age 40..80, descending, selected paths", "contacts",
                   "{\"queryType\":\"range\",\"indexPath\":\"Age\",\"beginKey\":40,\"endKey\":80,\"order\":\"descending\","
                   "\"selectPaths\":[\"LastName\",\"Age\"],\"pageSize\":10}")) return 1;
    if (show_query(store, "full-text match 'engineer'", "contacts",
                   "{\"queryType\":\"match\",\"indexPath\":\"Title\",\"matchKey\":\"engineer\",\"orderPath\":\"LastName\",\"pageSize\":10}")) return 1;
    if (show_query(store, "Smart SQL aggregate", NULL,
                   "{\"queryType\":\"smart\",\"smartSql\":\"select count(*), avg({contacts:Age}) from {contacts}\",\"pageSize\":1}")) return 1;
    if (show_query(store, "locally changed records (flag set offline)", NULL,
                   "{\"queryType\":\"smart\",\"smartSql\":\"select {contacts:LastName} from {contacts} where {contacts:__local__} = 'true'\",\"pageSize\":10}")) return 1;

    char *cursor = NULL;
    rc = syncstore_query_soup(store, "contacts", "{\"queryType\":\"range\",\"indexPath\":\"LastName\",\"pageSize\":2,\"selectPaths\":[\"LastName\"]}", &cursor, &err);
    if (rc != SYNCSTORE_OK) return fail("query", rc, &err);
    printf("\npaging all contacts by LastName, 2 per page:\n  page 0: %s\n", cursor);
    long long cursor_id = strtoll(strstr(cursor, "\"cursorId\":") + 11, NULL, 10);
    syncstore_free(cursor);
    rc = syncstore_cursor_move_to_page(store, cursor_id, 1, &cursor, &err);
    if (rc != SYNCSTORE_OK) return fail("move cursor", rc, &err);
    printf("  page 1: %s\n", cursor);
    syncstore_free(cursor);
    syncstore_cursor_close(store, cursor_id, &err);

    const char *hostile = "{\"queryType\":\"smart\",\"smartSql\":\"select * from {contacts}; delete from {contacts}\",\"pageSize\":1}";
    rc = syncstore_run_smart_query(store, hostile, &cursor, &err);
    printf("\nhostile Smart SQL refused: %s: %s\n", syncstore_status_name(rc), err.message);

    int64_t size = 0;
    syncstore_database_size(store, &size, &err);
    printf("\ndatabase size: %lld bytes\n", (long long)size);
    syncstore_close(store, &err);
    printf("closed\n");
    return 0;
}
