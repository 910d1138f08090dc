/* Store example: open a store, register a soup, upsert entries, page through a query with a
 * cursor, close. Usage: store-example ROOT_DIR
 * Build against an installed SyncStore:
 *   cc store_example.c $(pkg-config --cflags --libs syncstore) -o store-example */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syncstore.h>

/* Prints the failed step and the library's message; returns 1 for main. */
static int failed(const char *step, int status, const syncstore_error *err) {
    fprintf(stderr, "%s: %s: %s\n", step, syncstore_status_name(status), err->message);
    return 1;
}

int main(int argc, char **argv) {
    syncstore_error err;
    syncstore_store *store = NULL;
    char *json = NULL;
    int64_t cursor_id = 0;
    const char *at;
    int rc;

    if (argc != 2) {
        fprintf(stderr, "usage: %s ROOT_DIR\n", argv[0]);
        return 2;
    }
    if (syncstore_abi_version() != SYNCSTORE_ABI_VERSION) {
        fprintf(stderr, "header ABI %d, library ABI %d\n", SYNCSTORE_ABI_VERSION, syncstore_abi_version());
        return 1;
    }
    rc = syncstore_open(argv[1], "{\"storeName\": \"example\"}", &store, &err);
    if (rc != SYNCSTORE_OK) return failed("open", rc, &err);

    rc = syncstore_register_soup(store, "contacts",
                                 "[{\"path\": \"Id\", \"type\": \"string\"},"
                                 " {\"path\": \"Age\", \"type\": \"integer\"}]", &err);
    if (rc != SYNCSTORE_OK) return failed("register_soup", rc, &err);

    /* One transaction; out_json may be NULL when the stored entries are not wanted. */
    rc = syncstore_upsert(store, "contacts",
                          "[{\"Id\": \"003A\", \"Age\": 34}, {\"Id\": \"003B\", \"Age\": 27},"
                          " {\"Id\": \"003C\", \"Age\": 41}]", NULL, NULL, &err);
    if (rc != SYNCSTORE_OK) return failed("upsert", rc, &err);

    /* Errors carry a stable code: decide on it, never on the message. */
    rc = syncstore_upsert(store, "no-such-soup", "{}", NULL, NULL, &err);
    printf("upsert into a missing soup: %s\n", syncstore_status_name(rc));

    /* A range query, two entries per page: read page 0, then move to page 1. */
    rc = syncstore_query_soup(store, "contacts",
                              "{\"queryType\": \"range\", \"indexPath\": \"Age\", \"orderPath\": \"Age\","
                              " \"pageSize\": 2, \"selectPaths\": [\"Id\", \"Age\"]}", &json, &err);
    if (rc != SYNCSTORE_OK) return failed("query_soup", rc, &err);
    printf("page 0: %s\n", json);
    /* A real program would read the cursor JSON with its JSON library; the id is an integer. */
    at = strstr(json, "\"cursorId\":");
    if (at == NULL) return failed("cursorId", SYNCSTORE_ERR_INTERNAL, &err);
    cursor_id = strtoll(at + strlen("\"cursorId\":"), NULL, 10);
    syncstore_free(json);
    rc = syncstore_cursor_move_to_page(store, cursor_id, 1, &json, &err);
    if (rc != SYNCSTORE_OK) return failed("cursor_move_to_page", rc, &err);
    printf("page 1: %s\n", json);
    syncstore_free(json);
    syncstore_cursor_close(store, cursor_id, NULL);

    rc = syncstore_close(store, &err);
    if (rc != SYNCSTORE_OK) return failed("close", rc, &err);
    printf("done\n");
    return 0;
}
