/* Encrypted stores through the C header: the key in the store config, AUTH for a wrong or missing
 * key (the file untouched), no plaintext in any file, syncstore_change_key with other handles and
 * writing threads. */
#include "check.h"
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char root[1024];
static const char canary[] = "CANARY-c-test-91b2f0e4";

#define CONFIG(key) "{\"storeName\":\"vault\",\"key\":\"" key "\",\"kdfIter\":1000}"

/* Occurrences of `needle` in every file under root/user. */
static int hits_in_store_files(const char *needle) {
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/user", root);
    DIR *d = opendir(dir);
    if (!d) return -1;
    int hits = 0;
    struct dirent *e;
    size_t n = strlen(needle);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 0, SEEK_SET);
        char *bytes = size > 0 ? malloc((size_t)size) : NULL;
        if (bytes && fread(bytes, 1, (size_t)size, f) == (size_t)size) {
            for (long i = 0; i + (long)n <= size; i++)
                if (memcmp(bytes + i, needle, n) == 0) hits++;
        }
        free(bytes);
        fclose(f);
    }
    closedir(d);
    return hits;
}

static long long count_entries(syncstore_store *s) {
    syncstore_error err;
    char *out = NULL;
    EXPECT(syncstore_query_page(s, NULL, "{\"queryType\":\"smart\",\"smartSql\":\"select count(*) from {secrets}\",\"pageSize\":1}",
                                0, &out, &err), SYNCSTORE_OK, &err);
    json_t *rows = check_parse(out);
    long long n = (long long)json_integer_value(json_array_get(json_array_get(rows, 0), 0));
    json_decref(rows);
    return n;
}

static void upsert_canaries(syncstore_store *s, int from, int count) {
    syncstore_error err;
    for (int i = from; i < from + count; i++) {
        char entry[256];
        snprintf(entry, sizeof entry, "[{\"Id\":\"%d\",\"Secret\":\"%s %d\"}]", i, canary, i);
        EXPECT(syncstore_upsert(s, "secrets", entry, NULL, NULL, &err), SYNCSTORE_OK, &err);
    }
}

static void test_open_and_keys(void) {
    syncstore_error err;
    syncstore_store *s = NULL;
    EXPECT(syncstore_open(root, CONFIG("pass-one"), &s, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(s, "secrets", "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"Secret\",\"type\":\"full_text\"}]", &err),
           SYNCSTORE_OK, &err);
    upsert_canaries(s, 0, 200);
    /* While open (pages in the WAL) and after close: no file holds the text or SQLite's header. */
    CHECK(hits_in_store_files(canary) == 0);
    CHECK(hits_in_store_files("SQLite format 3") == 0);

    /* A second handle must bring the same key. */
    syncstore_store *other = NULL;
    EXPECT(syncstore_open(root, CONFIG("pass-two"), &other, &err), SYNCSTORE_ERR_AUTH, &err);
    CHECK(other == NULL);
    EXPECT(syncstore_open(root, "{\"storeName\":\"vault\"}", &other, &err), SYNCSTORE_ERR_AUTH, &err);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    CHECK(hits_in_store_files(canary) == 0);

    EXPECT(syncstore_open(root, CONFIG("wrong-pass"), &s, &err), SYNCSTORE_ERR_AUTH, &err);
    CHECK(strstr(err.message, "key") != NULL);
    CHECK(strstr(err.message, "wrong-pass") == NULL);
    EXPECT(syncstore_open(root, "{\"storeName\":\"vault\",\"key\":\"pass-one\",\"kdfIter\":1001}", &s, &err), SYNCSTORE_ERR_AUTH, &err);
    EXPECT(syncstore_open(root, "{\"storeName\":\"vault\"}", &s, &err), SYNCSTORE_ERR_AUTH, &err);
    CHECK(strstr(err.message, "encrypted") != NULL);
    EXPECT(syncstore_open(root, "{\"storeName\":\"vault\",\"key\":\"\"}", &s, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_open(root, "{\"storeName\":\"vault\",\"key\":42}", &s, &err), SYNCSTORE_ERR_ARGUMENT, &err);

    EXPECT(syncstore_open(root, CONFIG("pass-one"), &s, &err), SYNCSTORE_OK, &err);
    CHECK(count_entries(s) == 200);
    char *found = NULL;
    EXPECT(syncstore_query_page(s, "secrets", "{\"queryType\":\"exact\",\"indexPath\":\"Id\",\"matchKey\":\"7\",\"pageSize\":5}", 0,
                                &found, &err), SYNCSTORE_OK, &err);
    CHECK(found && strstr(found, canary) != NULL);
    syncstore_free(found);
    char *list = NULL;
    EXPECT(syncstore_list_stores(root, 0, &list, &err), SYNCSTORE_OK, &err);
    CHECK(list && strstr(list, "vault") && !strstr(list, "pass-one"));
    syncstore_free(list);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
}

struct writer_args {
    syncstore_store *store;
    int from, count, failures;
};

static void *writer(void *p) {
    struct writer_args *a = p;
    for (int i = a->from; i < a->from + a->count; i++) {
        char entry[256];
        snprintf(entry, sizeof entry, "[{\"Id\":\"%d\",\"Secret\":\"%s %d\"}]", i, canary, i);
        syncstore_error err;
        if (syncstore_upsert(a->store, "secrets", entry, NULL, NULL, &err) != SYNCSTORE_OK) a->failures++;
    }
    return NULL;
}

static void test_change_key(void) {
    syncstore_error err;
    syncstore_store *s = NULL, *second = NULL;
    EXPECT(syncstore_open(root, CONFIG("pass-one"), &s, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_open(root, CONFIG("pass-one"), &second, &err), SYNCSTORE_OK, &err);

    /* A thread keeps writing through the other handle while the key changes: every write lands. */
    struct writer_args args = {second, 1000, 300, 0};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, writer, &args) == 0);
    EXPECT(syncstore_change_key(s, "pass-three", &err), SYNCSTORE_OK, &err);
    pthread_join(thread, NULL);
    CHECK(args.failures == 0);
    CHECK(count_entries(s) == 500);
    CHECK(count_entries(second) == 500);
    EXPECT(syncstore_change_key(s, "", &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_change_key(NULL, "x", &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_close(second, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    CHECK(hits_in_store_files(canary) == 0);

    EXPECT(syncstore_open(root, CONFIG("pass-one"), &s, &err), SYNCSTORE_ERR_AUTH, &err);
    EXPECT(syncstore_open(root, CONFIG("pass-three"), &s, &err), SYNCSTORE_OK, &err);
    /* Decrypted: the same entries, now readable in the file (the control for the scans above). */
    EXPECT(syncstore_change_key(s, NULL, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    CHECK(hits_in_store_files(canary) >= 500);
    EXPECT(syncstore_open(root, CONFIG("pass-three"), &s, &err), SYNCSTORE_ERR_AUTH, &err);
    EXPECT(syncstore_open(root, "{\"storeName\":\"vault\"}", &s, &err), SYNCSTORE_OK, &err);
    CHECK(count_entries(s) == 500);
    /* And encrypted again from plaintext, with a raw key. */
    EXPECT(syncstore_change_key(s, "x'00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff'", &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    CHECK(hits_in_store_files(canary) == 0);
    EXPECT(syncstore_open(root, "{\"storeName\":\"vault\",\"key\":\"x'00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff'\"}",
                          &s, &err), SYNCSTORE_OK, &err);
    CHECK(count_entries(s) == 500);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
}

int main(int argc, char **argv) {
    snprintf(root, sizeof root, "%s", argc > 1 ? argv[1] : "test-stores/encryption");
    check_fresh_dir(root);
    test_open_and_keys();
    test_change_key();
    return check_finish();
}
