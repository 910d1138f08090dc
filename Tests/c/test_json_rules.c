/* The JSON rule through the C ABI (header, "JSON"): a custom target's callbacks are held to it
 * like any other source: text that is not UTF-8 is refused (never repaired to U+FFFD) with the
 * callback's name, a U+0000 key or an entry nested deeper than SYNCSTORE_JSON_MAX_DEPTH fails
 * the run by the record's Id and stores nothing of the page; optional JSON arguments take NULL
 * or "" and refuse whitespace alone. No server: the callbacks are the backend. */
#include "check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the callbacks answer, set by each test. */
static const char *page_text, *ids_text, *push_text;

static char *dup(const char *text) {
    size_t n = strlen(text) + 1;
    char *copy = malloc(n);
    memcpy(copy, text, n);
    return copy;
}

static int fetch_page(void *context, const char *target_json, int64_t since_ms, const char *continuation, char **out, syncstore_error *err) {
    (void)context; (void)target_json; (void)since_ms; (void)continuation; (void)err;
    *out = dup(page_text);
    return 0;
}

static int remote_ids(void *context, const char *target_json, char **out, syncstore_error *err) {
    (void)context; (void)target_json; (void)err;
    *out = dup(ids_text);
    return 0;
}

static int push_record(void *context, const char *target_json, const char *action, const char *record_json, char **out, syncstore_error *err) {
    (void)context; (void)target_json; (void)action; (void)record_json; (void)err;
    *out = dup(push_text);
    return 0;
}

static syncstore_store *s;

/* The terminal state of a run; the caller frees it. */
static json_t *wait_state(int64_t id) {
    char *text = NULL;
    syncstore_error err;
    EXPECT(syncstore_wait_sync(s, id, 30000, &text, &err), SYNCSTORE_OK, &err);
    return check_parse(text);
}

static int count(const char *where) {
    char spec[512], *out = NULL;
    snprintf(spec, sizeof spec, "{\"queryType\":\"smart\",\"smartSql\":\"select count(*) from {c} where %s\",\"pageSize\":1}", where);
    syncstore_error err;
    EXPECT(syncstore_run_smart_query(s, spec, &out, &err), SYNCSTORE_OK, &err);
    json_t *c = check_parse(out);
    int n = (int)json_integer_value(json_array_get(json_array_get(json_object_get(c, "currentPageOrderedEntries"), 0), 0));
    json_decref(c);
    return n;
}

/* A sync down of `page` must end FAILED with a message holding `a` and `b`, storing nothing. */
static void down_fails(const char *page, const char *a, const char *b, int line) {
    page_text = page;
    int before = count("1 = 1");
    int64_t id = 0;
    syncstore_error err;
    EXPECT(syncstore_sync_down(s, "{\"type\":\"memory\"}", "c", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(id);
    const char *message = str_or_empty(json_object_get(state, "error"));
    int ok = !strcmp(str_or_empty(json_object_get(state, "status")), "FAILED") && strstr(message, a) && strstr(message, b);
    if (!ok) fprintf(stderr, "line %d: state %s\n", line, message);
    check_true(ok, "the run fails naming the source and the rule", __FILE__, line);
    check_true(count("1 = 1") == before, "nothing of the page is stored", __FILE__, line);
    json_decref(state);
}

/* A record {"Id": id, "x": <depth - 1 nested arrays>} of `depth` levels. */
static char *deep_record(const char *id, int depth) {
    size_t n = (size_t)depth * 2 + 64;
    char *text = malloc(n), *p = text;
    p += sprintf(p, "{\"Id\":\"%s\",\"x\":", id);
    for (int i = 1; i < depth; i++) *p++ = '[';
    *p++ = '1';
    for (int i = 1; i < depth; i++) *p++ = ']';
    strcpy(p, "}");
    return text;
}

static void test_callbacks(void) {
    syncstore_error err;
    /* 4. invalid UTF-8 from each callback is refused with the callback's name */
    down_fails("{\"records\":[{\"Id\":\"ok\"},{\"Id\":\"bad\xff\"}]}", "fetch_page", "UTF-8", __LINE__);
    down_fails("{\"records\":[{\"Id\":\"ok\",\"Name\":\"\xed\xa0\x80\"}]}", "fetch_page", "UTF-8", __LINE__);
    CHECK(count("{c:Id} like '%\xef\xbf\xbd%'") == 0); /* no U+FFFD stored */

    page_text = "{\"records\":[{\"Id\":\"r1\"},{\"Id\":\"r2\"}]}";
    int64_t id = 0;
    EXPECT(syncstore_sync_down(s, "{\"type\":\"memory\"}", "c", NULL, "down", NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    json_decref(wait_state(id));
    CHECK(count("1 = 1") == 2);
    ids_text = "[\"r1\xc3(\"]";
    EXPECT(syncstore_clean_resync_ghosts(s, id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(id);
    json_decref(state);
    CHECK(count("1 = 1") == 2); /* no ghost removed on an id list that is not UTF-8 */
    /* the ghost report is the callback's; the sync's own state is untouched, so check by a run
     * that succeeds once the ids are valid */
    ids_text = "[\"r1\"]";
    EXPECT(syncstore_clean_resync_ghosts(s, id, NULL, NULL, &err), SYNCSTORE_OK, &err);
    json_decref(wait_state(id));
    CHECK(count("1 = 1") == 1);

    EXPECT(syncstore_upsert(s, "c", "{\"Name\":\"new\",\"__local__\":true,\"__locally_created__\":true}", NULL, NULL, &err), SYNCSTORE_OK, &err);
    push_text = "{\"id\":\"srv\xc0\xaf\"}";
    int64_t up = 0;
    EXPECT(syncstore_sync_up(s, "{\"type\":\"memory\"}", "c", NULL, NULL, NULL, NULL, &up, &err), SYNCSTORE_OK, &err);
    state = wait_state(up);
    const char *message = str_or_empty(json_object_get(state, "error"));
    CHECK(!strcmp(str_or_empty(json_object_get(state, "status")), "FAILED") && strstr(message, "push_record") && strstr(message, "UTF-8"));
    if (!strstr(message, "push_record")) fprintf(stderr, "sync up: %s\n", message);
    json_decref(state);
    CHECK(count("{c:Name} = 'new' and {c:__local__} = 1 and {c:Id} is null") == 1); /* still dirty, no repaired id */

    /* 1. a U+0000 key anywhere in a record; 3. a record deeper than the limit: by Id */
    down_fails("{\"records\":[{\"Id\":\"k1\",\"o\":[{\"a\\u0000\":1}]}]}", "U+0000", "fetch_page", __LINE__);
    char *deep = deep_record("deep1", SYNCSTORE_JSON_MAX_DEPTH + 1), page[4200];
    snprintf(page, sizeof page, "{\"records\":[{\"Id\":\"fine\"},%s]}", deep);
    down_fails(page, "'deep1'", "1000", __LINE__);
    free(deep);
    deep = deep_record("deep2", 2001);
    char *big = malloc(strlen(deep) + 64);
    sprintf(big, "{\"records\":[%s]}", deep);
    down_fails(big, "'deep2'", "SYNCSTORE_JSON_MAX_DEPTH", __LINE__);
    free(big);
    free(deep);
    /* at the limit is stored, and read by SQLite's JSON functions */
    deep = deep_record("atLimit", SYNCSTORE_JSON_MAX_DEPTH);
    snprintf(page, sizeof page, "{\"records\":[%s]}", deep);
    free(deep);
    page_text = page;
    EXPECT(syncstore_sync_down(s, "{\"type\":\"memory\"}", "c", NULL, NULL, NULL, NULL, &id, &err), SYNCSTORE_OK, &err);
    state = wait_state(id);
    CHECK(!strcmp(str_or_empty(json_object_get(state, "status")), "DONE"));
    json_decref(state);
    CHECK(count("json_extract({c:_soup}, '$.x') is not null and {c:Id} = 'atLimit'") == 1);
}

/* 5. NULL and "" mean "not given" for optional JSON; whitespace alone is not JSON */
static void test_empty_strings(const char *root) {
    syncstore_error err;
    syncstore_store *other = NULL;
    EXPECT(syncstore_open(root, "", &other, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_close(other, &err), SYNCSTORE_OK, &err);
    const char *blanks[] = {" ", "\n", "\t \r\n"};
    for (size_t i = 0; i < sizeof blanks / sizeof blanks[0]; i++) {
        other = NULL;
        EXPECT(syncstore_open(root, blanks[i], &other, &err), SYNCSTORE_ERR_ARGUMENT, &err);
        CHECK(other == NULL);
        EXPECT(syncstore_remove_store(root, blanks[i], &err), SYNCSTORE_ERR_ARGUMENT, &err);
        EXPECT(syncstore_create_sync_down(s, "{\"type\":\"memory\"}", "c", blanks[i], NULL, NULL, &err), SYNCSTORE_ERR_ARGUMENT, &err);
        EXPECT(syncstore_create_sync_up(s, blanks[i], "c", NULL, NULL, NULL, &err), SYNCSTORE_ERR_ARGUMENT, &err);
        EXPECT(syncstore_create_sync_up(s, NULL, "c", blanks[i], NULL, NULL, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    }
    int64_t a = 0, b = 0;
    EXPECT(syncstore_create_sync_down(s, "{\"type\":\"memory\"}", "c", "", "empty-options", &a, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_create_sync_down(s, "{\"type\":\"memory\"}", "c", NULL, "null-options", &b, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_create_sync_up(s, "", "c", "", "empty-target", &a, &err), SYNCSTORE_OK, &err);
    /* required JSON refuses "" */
    EXPECT(syncstore_create_sync_down(s, "", "c", NULL, NULL, NULL, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_upsert(s, "c", "", NULL, NULL, &err), SYNCSTORE_ERR_ARGUMENT, &err);
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : "test-stores/json_rules";
    check_fresh_dir(root);
    syncstore_error err;
    EXPECT(syncstore_open(root, "{\"storeName\":\"rules\"}", &s, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_register_soup(s, "c", "[{\"path\":\"Id\",\"type\":\"string\"}]", &err), SYNCSTORE_OK, &err);
    syncstore_custom_target target = {NULL, fetch_page, remote_ids, push_record};
    EXPECT(syncstore_register_custom_target(s, "memory", &target, &err), SYNCSTORE_OK, &err);
    test_callbacks();
    test_empty_strings(root);
    EXPECT(syncstore_close(s, &err), SYNCSTORE_OK, &err);
    return check_finish();
}
