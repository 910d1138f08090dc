/* Encrypted store example: open a store with a key, write, reopen (a wrong key is refused), change
 * the key. Usage: encrypted-example ROOT_DIR   (the key comes from $EXAMPLE_KEY, else a demo key)
 * Build against an installed SyncStore:
 *   cc encrypted_example.c $(pkg-config --cflags --libs syncstore) -o encrypted-example */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syncstore.h>

static int failed(const char *step, int status, const syncstore_error *err) {
    fprintf(stderr, "%s: %s: %s\n", step, syncstore_status_name(status), err->message);
    return 1;
}

int main(int argc, char **argv) {
    syncstore_error err;
    syncstore_store *store = NULL;
    char config[512];
    const char *key = getenv("EXAMPLE_KEY") ? getenv("EXAMPLE_KEY") : "correct horse battery staple";
    int rc;

    if (argc != 2) {
        fprintf(stderr, "usage: %s ROOT_DIR\n", argv[0]);
        return 2;
    }
    /* A real key comes from a keychain or a secrets manager, never from source code; it must
     * not hold '"' or '\' here, as it is pasted into JSON text. */
    snprintf(config, sizeof config, "{\"storeName\": \"vault\", \"key\": \"%s\", \"kdfIter\": 256000}", key);

    /* The key in the store config: the file is encrypted (SQLCipher 4 format) from its first page. */
    rc = syncstore_open(argv[1], config, &store, &err);
    if (rc != SYNCSTORE_OK) return failed("open", rc, &err);
    rc = syncstore_register_soup(store, "patients", "[{\"path\": \"Id\", \"type\": \"string\"}]", &err);
    if (rc != SYNCSTORE_OK) return failed("register_soup", rc, &err);
    rc = syncstore_upsert(store, "patients", "[{\"Id\": \"P-1\", \"Diagnosis\": \"confidential\"}]", NULL, NULL, &err);
    if (rc != SYNCSTORE_OK) return failed("upsert", rc, &err);
    rc = syncstore_close(store, &err);
    if (rc != SYNCSTORE_OK) return failed("close", rc, &err);

    /* A wrong key (or none) is SYNCSTORE_ERR_AUTH, and the file is left as it was. */
    rc = syncstore_open(argv[1], "{\"storeName\": \"vault\", \"key\": \"guess\"}", &store, &err);
    printf("open with a wrong key: %s\n", syncstore_status_name(rc));

    rc = syncstore_open(argv[1], config, &store, &err);
    if (rc != SYNCSTORE_OK) return failed("reopen", rc, &err);
    /* Re-encrypt under a new key, atomically (NULL would decrypt the store). */
    rc = syncstore_change_key(store, "a new passphrase", &err);
    if (rc != SYNCSTORE_OK) return failed("change_key", rc, &err);
    rc = syncstore_close(store, &err);
    if (rc != SYNCSTORE_OK) return failed("close", rc, &err);

    rc = syncstore_open(argv[1], config, &store, &err);
    printf("open with the old key after the change: %s\n", syncstore_status_name(rc));
    rc = syncstore_open(argv[1], "{\"storeName\": \"vault\", \"key\": \"a new passphrase\"}", &store, &err);
    if (rc != SYNCSTORE_OK) return failed("open with the new key", rc, &err);
    syncstore_close(store, &err);
    printf("done\n");
    return 0;
}
