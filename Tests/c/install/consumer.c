/* Built against an installed SyncStore (pkg-config or find_package): checks that the header and
 * the library agree and that the library works. Usage: consumer ROOT_DIR */
#include <stdio.h>
#include <string.h>
#include <syncstore.h>

int main(int argc, char **argv) {
    syncstore_error err;
    syncstore_store *store = NULL;
    char *json = NULL;
    int rc;

    if (argc != 2) return 2;
    if (syncstore_abi_version() != SYNCSTORE_ABI_VERSION) {
        fprintf(stderr, "ABI mismatch\n");
        return 1;
    }
    rc = syncstore_open(argv[1], NULL, &store, &err);
    if (rc == SYNCSTORE_OK) rc = syncstore_register_soup(store, "s", "[{\"path\":\"k\",\"type\":\"string\"}]", &err);
    if (rc == SYNCSTORE_OK) rc = syncstore_upsert(store, "s", "{\"k\":\"installed\"}", NULL, &json, &err);
    if (rc != SYNCSTORE_OK || strstr(json, "installed") == NULL) {
        fprintf(stderr, "%s: %s\n", syncstore_status_name(rc), err.message);
        return 1;
    }
    syncstore_free(json);
    rc = syncstore_close(store, &err);
    printf("libsyncstore %s works\n", syncstore_version());
    return rc;
}
