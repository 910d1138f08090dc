/* Hostile and malformed input through the C ABI: every call returns an error code with a
 * message, nothing traps, and the store is unchanged afterwards (docs/queries.md#smart-sql, docs/architecture.md#c-abi-rules rule 4). */
#include "check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static syncstore_store *s;
static const char *soups[] = {"contacts", "123This should-be a_valid.soup+name!?100", "quote'\"soup", "semi;colon{}", "drop table x; --"};
#define NSOUPS (sizeof soups / sizeof soups[0])

/* Everything observable: each soup's specs and entries. */
static char *snapshot(void) {
    size_t cap = 1 << 16, len = 0;
    char *all = malloc(cap);
    all[0] = 0;
    for (size_t i = 0; i < NSOUPS; i++) {
        syncstore_error err;
        char *specs = NULL, *cursor = NULL;
        int exists = 0;
        syncstore_soup_exists(s, soups[i], &exists, &err);
        if (!exists) continue;
        syncstore_get_soup_index_specs(s, soups[i], &specs, &err);
        syncstore_query_soup(s, soups[i], "{\"queryType\":\"range\",\"pageSize\":1000}", &cursor, &err);
        size_t need = strlen(specs) + (cursor ? strlen(cursor) : 0) + 8;
        if (len + need >= cap) { cap = (len + need) * 2; all = realloc(all, cap); }
        /* cursor ids differ between calls; compare entries only */
        const char *entries = cursor ? strstr(cursor, "\"currentPageOrderedEntries\"") : "";
        len += (size_t)sprintf(all + len, "%s|%s\n", specs, entries ? entries : "");
        if (cursor) {
            json_t *c = json_loads(cursor, 0, NULL);
            syncstore_cursor_close(s, json_integer_value(json_object_get(c, "cursorId")), NULL);
            json_decref(c);
        }
        syncstore_free(specs);
        syncstore_free(cursor);
    }
    return all;
}

static char *before;

/* The call must fail with `expected`, give a message, and leave the store as it was. */
static void refused(int rc, int expected, const syncstore_error *err, const char *what, int line) {
    check_status(rc, expected, err, what, __FILE__, line);
    check_true(strlen(err->message) > 0, "error has a message", __FILE__, line);
    char *after = snapshot();
    check_true(strcmp(before, after) == 0, "store unchanged", __FILE__, line);
    free(after);
}
#define REFUSED(call, expected) do { syncstore_error e_; memset(&e_, 0x55, sizeof e_); \
    int rc_ = (call); refused(rc_, expected, &e_, #call, __LINE__); } while (0)
#define E (&e_)

static void smart(const char *sql, int expected, int line) {
    syncstore_error err;
    char *out = (char *)1;
    json_t *spec = json_pack("{s:s,s:s,s:i}", "queryType", "smart", "smartSql", sql, "pageSize", 10);
    char *text = json_dumps(spec, 0);
    int rc = syncstore_run_smart_query(s, text, &out, &err);
    check_true(out == NULL, "no result on error", __FILE__, line);
    refused(rc, expected, &err, sql, line);
    free(text);
    json_decref(spec);
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : "test-stores/bad_input";
    check_fresh_dir(root);
    syncstore_error err;
    EXPECT(syncstore_open(root, "{\"storeName\":\"bad\"}", &s, &err), SYNCSTORE_OK, &err);
    /* hostile soup names are ordinary names */
    for (size_t i = 0; i < NSOUPS; i++) {
        EXPECT(syncstore_register_soup(s, soups[i], "[{\"path\":\"name\",\"type\":\"string\"},{\"path\":\"bio\",\"type\":\"full_text\"}]", &err), SYNCSTORE_OK, &err);
        EXPECT(syncstore_upsert(s, soups[i], "[{\"name\":\"a\",\"bio\":\"first\"},{\"name\":\"b\",\"bio\":\"second\"}]", NULL, NULL, &err), SYNCSTORE_OK, &err);
    }
    char *out = NULL;
    EXPECT(syncstore_run_smart_query(s, "{\"queryType\":\"smart\",\"smartSql\":\"select count(*) from {drop table x; --}\",\"pageSize\":1}", &out, &err), SYNCSTORE_OK, &err);
    json_t *c = check_parse(out);
    CHECK(json_integer_value(json_array_get(json_array_get(json_object_get(c, "currentPageOrderedEntries"), 0), 0)) == 2);
    json_decref(c);
    before = snapshot();

    /* NULL and malformed arguments */
    REFUSED(syncstore_open(NULL, NULL, NULL, E), SYNCSTORE_ERR_ARGUMENT);
    syncstore_store *other = NULL;
    REFUSED(syncstore_open(root, "{\"storeName\":\"../escape\"}", &other, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_open(root, "{\"storeName\":", &other, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_open(root, "[1]", &other, E), SYNCSTORE_ERR_ARGUMENT);
    CHECK(other == NULL);
    REFUSED(syncstore_upsert(s, "contacts", "[{\"name\":\"c\"", NULL, &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_upsert(s, "contacts", "{\"name\":\"c\"} trailing", NULL, &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_upsert(s, "contacts", NULL, NULL, &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_upsert(s, NULL, "[]", NULL, &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_upsert(NULL, "contacts", "[]", NULL, &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_upsert((syncstore_store *)(intptr_t)987654, "contacts", "[]", NULL, &out, E), SYNCSTORE_ERR_STATE);
    /* wrong types: not objects, ids not integers, _soupEntryId a string, a bad entry in the middle */
    REFUSED(syncstore_upsert(s, "contacts", "[{\"name\":\"ok\"}, 42]", NULL, &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_upsert(s, "contacts", "[{\"name\":\"ok\"}, {\"_soupEntryId\":\"1\"}]", NULL, &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_upsert(s, "contacts", "[{\"name\":\"ok\"}, {\"_soupEntryId\":424242}]", NULL, &out, E), SYNCSTORE_ERR_NOT_FOUND);
    REFUSED(syncstore_retrieve(s, "contacts", "[\"1\"]", &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_remove_entries(s, "contacts", "{\"id\":1}", E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_register_soup(s, "new", "{\"path\":\"a\"}", E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_register_soup(s, "new", "[]", E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_register_soup(s, "new", "[{\"path\":\"a\",\"type\":\"blob\"}]", E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_register_soup(s, "new", "[{\"path\":\"a..b\",\"type\":\"string\"}]", E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_register_soup(s, "", "[{\"path\":\"a\",\"type\":\"string\"}]", E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_alter_soup(s, "contacts", "[{\"path\":\"a\",\"type\":\"nope\"}]", 1, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_query_soup(s, "contacts", "{\"queryType\":\"exact\",\"indexPath\":\"name\"}", &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_query_soup(s, "contacts", "{\"queryType\":\"sideways\"}", &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_query_soup(s, "contacts", "{\"queryType\":\"range\",\"pageSize\":0}", &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_query_soup(s, "contacts", "{\"queryType\":\"smart\",\"smartSql\":\"select 1\"}", &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_run_smart_query(s, "{\"queryType\":\"exact\",\"indexPath\":\"name\",\"matchKey\":\"a\"}", &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_query_soup(s, "contacts", "{\"queryType\":\"match\",\"indexPath\":\"name\",\"matchKey\":\"a\"}", &out, E), SYNCSTORE_ERR_ARGUMENT);
    /* out pointer NULL where a result is required */
    REFUSED(syncstore_query_soup(s, "contacts", "{\"queryType\":\"range\"}", NULL, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_cursor_move_to_page(s, 99999, 0, &out, E), SYNCSTORE_ERR_NOT_FOUND);

    /* unknown soups */
    REFUSED(syncstore_upsert(s, "nope", "[{}]", NULL, &out, E), SYNCSTORE_ERR_NOT_FOUND);
    REFUSED(syncstore_query_soup(s, "nope", "{\"queryType\":\"range\"}", &out, E), SYNCSTORE_ERR_NOT_FOUND);
    REFUSED(syncstore_clear_soup(s, "nope", E), SYNCSTORE_ERR_NOT_FOUND);
    REFUSED(syncstore_get_soup_index_specs(s, "nope", &out, E), SYNCSTORE_ERR_NOT_FOUND);
    REFUSED(syncstore_alter_soup(s, "nope", "[{\"path\":\"a\",\"type\":\"string\"}]", 1, E), SYNCSTORE_ERR_NOT_FOUND);
    REFUSED(syncstore_reindex_soup(s, "nope", "[\"a\"]", E), SYNCSTORE_ERR_NOT_FOUND);
    REFUSED(syncstore_retrieve(s, "nope", "[1]", &out, E), SYNCSTORE_ERR_NOT_FOUND);

    /* invalid UTF-8, in JSON text and in plain string arguments */
    REFUSED(syncstore_upsert(s, "contacts", "[{\"name\":\"\xff\xfe\"}]", NULL, &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_upsert(s, "contacts", "[{\"name\":\"\xc3\x28\"}]", NULL, &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_upsert(s, "con\xfftacts", "[{}]", NULL, &out, E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_register_soup(s, "\xed\xa0\x80", "[{\"path\":\"a\",\"type\":\"string\"}]", E), SYNCSTORE_ERR_ARGUMENT);
    REFUSED(syncstore_open(root, "\"\xff\"", &other, E), SYNCSTORE_ERR_ARGUMENT);

    /* huge values: an integer beyond 64 bits; a deeply nested document */
    REFUSED(syncstore_upsert(s, "contacts", "[{\"name\":\"n\",\"big\":123456789012345678901234567890}]", NULL, &out, E), SYNCSTORE_ERR_ARGUMENT);
    size_t depth = 100000;
    char *deep = malloc(depth * 2 + 16);
    strcpy(deep, "[{\"a\":");
    size_t len = strlen(deep);
    for (size_t i = 0; i < depth; i++) deep[len++] = '[';
    for (size_t i = 0; i < depth; i++) deep[len++] = ']';
    strcpy(deep + len, "}]");
    REFUSED(syncstore_upsert(s, "contacts", deep, NULL, &out, E), SYNCSTORE_ERR_ARGUMENT);
    free(deep);

    /* Smart SQL that is not one read-only SELECT */
    smart("select * from {contacts}; delete from {contacts}", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("delete from {contacts}", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("insert into {contacts} (soup, created, lastModified) values ('{}', 0, 0)", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("update {contacts} set soup = '{}'", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("drop table {contacts}", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("ATTACH DATABASE '/tmp/x.db' AS x", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("select * from {contacts} where 1 = (select 1); ATTACH DATABASE ':memory:' AS y", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("PRAGMA writable_schema = 1", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("select * from pragma_table_info('soup_attrs')", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("select * from {contacts} where {contacts:name} = ?", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("select {contacts:name from {contacts}", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("select {contacts:name}} from {contacts}", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("select * from {nosuchsoup}", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("select {contacts:} from {contacts}", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("select 'unterminated from {contacts}", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("select * from {contacts} where soup match '{contacts:name}:a'", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("select load_extension('/tmp/evil.so')", SYNCSTORE_ERR_ARGUMENT, __LINE__);
    smart("", SYNCSTORE_ERR_ARGUMENT, __LINE__);

    /* a valid SELECT that would run for minutes (2^30 rows) is stopped at its timeoutMs */
    {
        char sql[2048] = "select count(*) from {contacts} t0";
        for (int i = 1; i < 30; i++) snprintf(sql + strlen(sql), sizeof sql - strlen(sql), ", {contacts} t%d", i);
        json_t *spec = json_pack("{s:s,s:s,s:i}", "queryType", "smart", "smartSql", sql, "timeoutMs", 200);
        char *text = json_dumps(spec, 0);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        REFUSED(syncstore_run_smart_query(s, text, &out, E), SYNCSTORE_ERR_ARGUMENT);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        CHECK((t1.tv_sec - t0.tv_sec) < 5);
        free(text);
        json_decref(spec);
    }

    /* a braces-in-string query is fine and reads only */
    EXPECT(syncstore_run_smart_query(s, "{\"queryType\":\"smart\",\"smartSql\":\"select '{contacts:name}', count(*) from {contacts}\",\"pageSize\":10}", &out, &err), SYNCSTORE_OK, &err);
    c = check_parse(out);
    CHECK(strcmp(str_or_empty(json_array_get(json_array_get(json_object_get(c, "currentPageOrderedEntries"), 0), 0)), "{contacts:name}") == 0);
    json_decref(c);

    char *after = snapshot();
    CHECK(strcmp(before, after) == 0);
    free(after);
    free(before);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    return check_finish();
}
