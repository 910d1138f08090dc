/* The hybrid plugins' shared case table (Tests/plugin/cases.json) driven through the C ABI:
 * syncstore_plugin_exec() with the args cordova.exec receives, answers checked as the table
 * says, sync events recorded by the plugin's listener. Python and Node run the same table. */
#include "check.h"
#include "devserver.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- events ---- */

static pthread_mutex_t events_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *events; /* array of details */

/* Set by a test: the listener tries to free this plugin (from the sync thread) and keeps the status. */
static syncstore_plugin *free_from_listener;
static int free_from_listener_status = -1;

static void on_event(void *context, const char *event, const char *detail_json) {
    (void)context;
    if (free_from_listener) {
        syncstore_error err;
        free_from_listener_status = syncstore_plugin_free(free_from_listener, &err);
        free_from_listener = NULL;
    }
    json_t *detail = json_loads(detail_json, 0, NULL);
    if (!detail || strcmp(event, "sync") != 0) {
        fprintf(stderr, "FAIL unexpected event %s: %s\n", event, detail_json);
        __atomic_fetch_add(&check_failed, 1, __ATOMIC_RELAXED);
        json_decref(detail);
        return;
    }
    pthread_mutex_lock(&events_lock);
    json_array_append_new(events, detail);
    pthread_mutex_unlock(&events_lock);
}

/* ---- answers ---- */

typedef struct answer {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int calls;
    int status;
    json_t *value; /* NULL: no value */
} answer;

static void on_answer(void *context, int status, const char *json) {
    answer *a = context;
    json_t *value = json ? json_loads(json, JSON_DECODE_ANY, NULL) : NULL;
    if (json && !value) fprintf(stderr, "FAIL answer is not JSON: %s\n", json);
    pthread_mutex_lock(&a->lock);
    a->calls++;
    a->status = status;
    a->value = value;
    pthread_cond_signal(&a->done);
    pthread_mutex_unlock(&a->lock);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000.0 + t.tv_nsec / 1e6;
}

/* ---- the table's language ---- */

static json_t *saved; /* name -> value */

/* "$name.a.0.b" -> that part of a saved value (new reference), or NULL. */
static json_t *lookup(const char *reference) {
    char buffer[512];
    snprintf(buffer, sizeof buffer, "%s", reference + 1);
    char *rest = NULL;
    char *part = strtok_r(buffer, ".", &rest);
    json_t *value = part ? json_object_get(saved, part) : NULL;
    while (value && (part = strtok_r(NULL, ".", &rest))) {
        if (json_is_array(value)) value = json_array_get(value, (size_t)atoi(part));
        else value = json_object_get(value, part);
    }
    return value ? json_incref(value) : NULL;
}

/* A copy of `value` with every "$..." string replaced by what it stands for. */
static json_t *substitute(json_t *value) {
    if (json_is_string(value) && json_string_value(value)[0] == '$') {
        json_t *found = lookup(json_string_value(value));
        if (!found) { fprintf(stderr, "FAIL unknown reference %s\n", json_string_value(value)); __atomic_fetch_add(&check_failed, 1, __ATOMIC_RELAXED); return json_null(); }
        return found;
    }
    if (json_is_object(value)) {
        json_t *copy = json_object();
        const char *key;
        json_t *member;
        json_object_foreach(value, key, member) json_object_set_new(copy, key, substitute(member));
        return copy;
    }
    if (json_is_array(value)) {
        json_t *copy = json_array();
        size_t i;
        json_t *item;
        json_array_foreach(value, i, item) json_array_append_new(copy, substitute(item));
        return copy;
    }
    return json_incref(value);
}

/* got "contains" want: objects by their members, arrays element by element (same length). */
static int like(json_t *got, json_t *want) {
    if (json_is_object(want)) {
        if (!json_is_object(got)) return 0;
        const char *key;
        json_t *member;
        json_object_foreach(want, key, member) if (!like(json_object_get(got, key), member)) return 0;
        return 1;
    }
    if (json_is_array(want)) {
        if (!json_is_array(got) || json_array_size(got) != json_array_size(want)) return 0;
        for (size_t i = 0; i < json_array_size(want); i++)
            if (!like(json_array_get(got, i), json_array_get(want, i))) return 0;
        return 1;
    }
    if (json_is_number(want) && json_is_number(got)) return json_number_value(got) == json_number_value(want);
    return got && json_equal(got, want);
}

static int status_of(const char *name) {
    for (int code = 1; code <= 11; code++) {
        const char *known = syncstore_status_name(code);
        /* Names are "SYNCSTORE_ERR_ARGUMENT" or "ARGUMENT": accept either form of the table's. */
        const char *tail = strrchr(known, '_') && strncmp(known, "SYNCSTORE_ERR_", 14) == 0 ? known + 14 : known;
        if (strcmp(tail, name) == 0 || strcmp(known, name) == 0) return code;
    }
    return -1;
}

static const char *service_of(const char *name) {
    if (strcmp(name, "smartstore") == 0) return "com.salesforce.smartstore";
    if (strcmp(name, "mobilesync") == 0) return "com.salesforce.mobilesync";
    return name;
}

static void fail_step(const char *step, const char *what, json_t *got) {
    char *text = got ? json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    fprintf(stderr, "FAIL step '%s': %s (got %s)\n", step, what, text ? text : "no value");
    free(text);
    __atomic_fetch_add(&check_failed, 1, __ATOMIC_RELAXED);
}

static void run_exec(syncstore_plugin *plugin, const char *name, json_t *step) {
    json_t *args = substitute(json_object_get(step, "args"));
    char *args_text = json_dumps(args, JSON_COMPACT);
    answer a = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL};
    syncstore_error err;
    int rc = syncstore_plugin_exec(plugin, service_of(json_string_value(json_object_get(step, "service"))),
                                   json_string_value(json_object_get(step, "action")), args_text, on_answer, &a, &err);
    EXPECT(rc, SYNCSTORE_OK, &err);
    /* Answers come once, at once but for cleanResyncGhosts (from the sync thread). */
    pthread_mutex_lock(&a.lock);
    double deadline = now_ms() + 30000;
    while (a.calls == 0 && now_ms() < deadline) {
        pthread_mutex_unlock(&a.lock);
        usleep(5000);
        pthread_mutex_lock(&a.lock);
    }
    int calls = a.calls;
    pthread_mutex_unlock(&a.lock);
    usleep(calls ? 0 : 1);
    if (calls != 1) { fail_step(name, "no answer (or more than one)", NULL); goto done; }

    json_t *expect = substitute(json_object_get(step, "expect"));
    json_t *error = json_object_get(expect, "error");
    if (error) {
        int wanted = status_of(json_string_value(error));
        if (a.status != wanted) fail_step(name, "wrong status (or success)", a.value);
        else if (!json_is_string(a.value)) fail_step(name, "an error answers a message string", a.value);
        else {
            const char *message = json_object_get(expect, "message") ? json_string_value(json_object_get(expect, "message")) : NULL;
            if (message && !strstr(json_string_value(a.value), message)) fail_step(name, "the message does not name the problem", a.value);
            else __atomic_fetch_add(&check_passed, 1, __ATOMIC_RELAXED);
        }
    } else if (a.status != SYNCSTORE_OK) {
        fail_step(name, "failed", a.value);
    } else {
        int ok = 1;
        ok = ok && a.value != NULL; /* every success has a value ("OK" where the platforms say nothing else) */
        if (json_object_get(expect, "ok")) ok = ok && a.value && json_equal(a.value, json_object_get(expect, "ok"));
        if (json_object_get(expect, "okLike")) ok = ok && like(a.value, json_object_get(expect, "okLike"));
        if (json_object_get(expect, "okPositive")) ok = ok && json_is_number(a.value) && json_number_value(a.value) > 0;
        json_t *keys = json_object_get(expect, "okHas");
        size_t i;
        json_t *key;
        json_array_foreach(keys, i, key) ok = ok && json_object_get(a.value, json_string_value(key)) != NULL;
        if (ok) __atomic_fetch_add(&check_passed, 1, __ATOMIC_RELAXED);
        else fail_step(name, "unexpected value", a.value);
        if (json_object_get(step, "save") && a.value) json_object_set(saved, json_string_value(json_object_get(step, "save")), a.value);
    }
    json_decref(expect);
done:
    json_decref(a.value);
    free(args_text);
    json_decref(args);
}

/* Index of the first event from `from` on whose detail contains `want`, or -1. */
static long event_like(json_t *want, size_t from) {
    pthread_mutex_lock(&events_lock);
    long found = -1;
    for (size_t i = from; i < json_array_size(events) && found < 0; i++)
        if (like(json_array_get(events, i), want)) found = (long)i;
    pthread_mutex_unlock(&events_lock);
    return found;
}

static size_t events_seen; /* events up to the one the last waitEvent matched */

static void run_step(syncstore_plugin *plugin, const devserver *server, json_t *step) {
    const char *name = json_string_value(json_object_get(step, "name"));
    const char *kind = json_string_value(json_object_get(step, "kind"));
    if (strcmp(kind, "exec") == 0) {
        run_exec(plugin, name, step);
    } else if (strcmp(kind, "waitEvent") == 0) {
        json_t *want = substitute(json_object_get(step, "like"));
        double deadline = now_ms() + (double)json_integer_value(json_object_get(step, "timeoutMs"));
        long found;
        while ((found = event_like(want, events_seen)) < 0 && now_ms() < deadline) usleep(10000);
        if (found >= 0) {
            __atomic_fetch_add(&check_passed, 1, __ATOMIC_RELAXED);
            events_seen = (size_t)found + 1;
        } else {
            fail_step(name, "no such event", events);
        }
        json_decref(want);
    } else if (strcmp(kind, "noEvent") == 0) {
        json_t *want = substitute(json_object_get(step, "like"));
        if (event_like(want, 0) >= 0) fail_step(name, "an event it should not fire", events);
        else __atomic_fetch_add(&check_passed, 1, __ATOMIC_RELAXED);
        json_decref(want);
    } else if (strcmp(kind, "http") == 0) {
        json_t *parts = substitute(json_object_get(step, "path"));
        json_t *path = json_is_string(parts) ? json_incref(parts) : json_string("");
        size_t k;
        json_t *part;
        json_array_foreach(parts, k, part) {
            char joined[2048];
            snprintf(joined, sizeof joined, "%s%s", json_string_value(path), json_string_value(part));
            json_string_set(path, joined);
        }
        json_decref(parts);
        json_t *body = json_object_get(step, "body");
        char *body_text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        long status = 0;
        json_t *got = devserver_call(server, json_string_value(json_object_get(step, "method")), json_string_value(path), body_text, &status);
        if (status >= 300) fail_step(name, "the server refused", got);
        else if (json_object_get(step, "expect") && !like(got, json_object_get(step, "expect"))) fail_step(name, "unexpected answer", got);
        else __atomic_fetch_add(&check_passed, 1, __ATOMIC_RELAXED);
        if (json_object_get(step, "save") && got) json_object_set(saved, json_string_value(json_object_get(step, "save")), got);
        json_decref(got);
        free(body_text);
        json_decref(path);
    } else {
        fail_step(name, "unknown step kind", NULL);
    }
}

/* ---- host settings outside the table: key provider, per-store remotes ---- */

static int provider_calls;

/* "vault" is encrypted with the Mobile SDK's kdfIter; "locked" fails; the rest are plaintext. */
static int give_key(void *context, const char *store_json, char **out_key, int *out_kdf_iter, syncstore_error *err) {
    (void)context;
    provider_calls++;
    json_t *store = json_loads(store_json, 0, NULL);
    const char *name = json_string_value(json_object_get(store, "storeName"));
    int status = SYNCSTORE_OK;
    if (name && strcmp(name, "vault") == 0) {
        *out_key = strdup("correct horse battery staple");
        *out_kdf_iter = 4000;
    } else if (name && strcmp(name, "locked") == 0) {
        err->code = status = SYNCSTORE_ERR_AUTH;
        snprintf(err->message, sizeof err->message, "the keychain is locked");
    }
    json_decref(store);
    return status;
}

/* One exec whose answer comes before it returns; its status, and its value in *value. */
static int exec_now(syncstore_plugin *plugin, const char *service, const char *action, const char *args, json_t **value) {
    answer a = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL};
    syncstore_error err;
    EXPECT(syncstore_plugin_exec(plugin, service, action, args, on_answer, &a, &err), SYNCSTORE_OK, &err);
    CHECK(a.calls == 1);
    if (value) *value = a.value;
    else json_decref(a.value);
    return a.status;
}

/* syncstore_plugin_api(): every action its table names is one the dispatcher knows (a call with
 * no fields is answered, with its own error at most, never "Unknown action"), and the table has
 * what the bindings read. */
static void test_api(const char *root) {
    syncstore_error err;
    EXPECT(syncstore_plugin_api(NULL, &err), SYNCSTORE_ERR_ARGUMENT, &err);
    char *text = NULL;
    EXPECT(syncstore_plugin_api(&text, &err), SYNCSTORE_OK, &err);
    json_error_t jerr;
    json_t *api = text ? json_loads(text, 0, &jerr) : NULL;
    CHECK(api != NULL);
    syncstore_free(text);
    if (!api) return;
    CHECK(json_array_size(json_object_get(json_object_get(api, "querySpec"), "builders")) == 6);
    CHECK(json_integer_value(json_object_get(json_object_get(json_object_get(api, "querySpec"), "fields"), "pageSize")) == 10);
    CHECK(json_array_size(json_object_get(json_object_get(api, "syncStatuses"), "terminal")) == 3);
    json_t *statuses = json_object_get(api, "statuses");
    CHECK(json_array_size(statuses) == 12);
    for (size_t i = 0; i < json_array_size(statuses); i++) {
        json_t *status = json_array_get(statuses, i);
        int code = (int)json_integer_value(json_object_get(status, "code"));
        CHECK(strcmp(json_string_value(json_object_get(status, "name")), syncstore_status_name(code)) == 0);
        CHECK(json_is_true(json_object_get(status, "retryable")) == (code == SYNCSTORE_ERR_BUSY || code == SYNCSTORE_ERR_NETWORK));
    }
    syncstore_plugin *plugin = NULL;
    EXPECT(syncstore_plugin_new(root, NULL, &plugin, &err), SYNCSTORE_OK, &err);
    const char *keys[] = {"smartstore", "mobilesync"};
    size_t count = 0;
    for (int k = 0; k < 2; k++) {
        json_t *service = json_object_get(json_object_get(api, "services"), keys[k]);
        const char *name = json_string_value(json_object_get(service, "service"));
        CHECK(name != NULL);
        json_t *functions = json_object_get(service, "functions");
        for (size_t i = 0; name && i < json_array_size(functions); i++, count++) {
            const char *action = json_string_value(json_object_get(json_array_get(functions, i), "action"));
            json_t *value = NULL;
            int status = exec_now(plugin, name, action, "[{}]", &value);
            if (status != SYNCSTORE_OK && json_is_string(value) && strstr(json_string_value(value), "Unknown action")) {
                fail_step(action, "the table names an action the dispatcher does not know", value);
            }
            json_decref(value);
        }
    }
    CHECK(count >= 30);
    EXPECT(syncstore_plugin_free(plugin, &err), SYNCSTORE_OK, &err);
    json_decref(api);
}

static void test_key_provider(const char *root) {
    syncstore_error err;
    syncstore_plugin *plugin = NULL;
    EXPECT(syncstore_plugin_new(root, NULL, &plugin, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_plugin_set_key_provider(plugin, give_key, NULL, &err), SYNCSTORE_OK, &err);
    const char *soup = "[{\"soupName\":\"notes\",\"indexes\":[{\"path\":\"t\",\"type\":\"string\"}],\"storeName\":\"vault\"}]";
    CHECK(exec_now(plugin, "com.salesforce.smartstore", "pgRegisterSoup", soup, NULL) == SYNCSTORE_OK);
    CHECK(exec_now(plugin, "com.salesforce.smartstore", "pgSoupExists", "[{\"soupName\":\"notes\",\"storeName\":\"vault\"}]", NULL) == SYNCSTORE_OK);
    CHECK(provider_calls == 1); /* once per open, not per call */
    json_t *message = NULL;
    CHECK(exec_now(plugin, "com.salesforce.smartstore", "pgGetDatabaseSize", "[{\"storeName\":\"locked\"}]", &message) == SYNCSTORE_ERR_AUTH);
    CHECK(strstr(str_or_empty(message), "the keychain is locked") != NULL);
    json_decref(message);
    EXPECT(syncstore_plugin_free(plugin, &err), SYNCSTORE_OK, &err);

    /* The store the plugin made is encrypted with the provided key and kdfIter. */
    syncstore_store *store = NULL;
    EXPECT(syncstore_open(root, "{\"storeName\":\"vault\"}", &store, &err), SYNCSTORE_ERR_AUTH, &err);
    EXPECT(syncstore_open(root, "{\"storeName\":\"vault\",\"key\":\"correct horse battery staple\",\"kdfIter\":4000}", &store, &err),
           SYNCSTORE_OK, &err);
    int exists = 0;
    EXPECT(syncstore_soup_exists(store, "notes", &exists, &err), SYNCSTORE_OK, &err);
    CHECK(exists == 1);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
}

/* The terminal status of the run a syncDown answer started, from the recorded events. */
static const char *terminal_status(json_t *state, const char *store_name, int is_global) {
    json_int_t id = json_integer_value(json_object_get(state, "_soupEntryId"));
    for (int waited = 0; waited < 3000; waited++) {
        const char *found = NULL;
        pthread_mutex_lock(&events_lock);
        size_t i;
        json_t *detail;
        json_array_foreach(events, i, detail) {
            const char *status = str_or_empty(json_object_get(detail, "status"));
            if (json_integer_value(json_object_get(detail, "_soupEntryId")) == id &&
                strcmp(str_or_empty(json_object_get(detail, "storeName")), store_name) == 0 &&
                json_is_true(json_object_get(detail, "isGlobalStore")) == is_global &&
                (strcmp(status, "DONE") == 0 || strcmp(status, "FAILED") == 0)) found = status;
        }
        pthread_mutex_unlock(&events_lock);
        if (found) return found;
        usleep(10000);
    }
    return "none";
}

static void test_remotes(const char *root, const devserver *server) {
    pthread_mutex_lock(&events_lock);
    json_array_clear(events); /* sync ids start again at 1 in this root */
    pthread_mutex_unlock(&events_lock);
    syncstore_error err;
    syncstore_plugin *plugin = NULL;
    EXPECT(syncstore_plugin_new(root, NULL, &plugin, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_plugin_set_listener(plugin, on_event, NULL, &err), SYNCSTORE_OK, &err);
    const char *reg = "[{\"soupName\":\"c\",\"indexes\":[{\"path\":\"Id\",\"type\":\"string\"}],\"isGlobalStore\":%s}]";
    const char *down = "[{\"soupName\":\"c\",\"isGlobalStore\":%s,\"syncName\":null,\"options\":{},"
                       "\"target\":{\"type\":\"soql\",\"query\":\"SELECT Id, LastModifiedDate FROM Contact\"}}]";
    char args[1024];
    json_t *state = NULL;
    snprintf(args, sizeof args, reg, "false");
    CHECK(exec_now(plugin, "com.salesforce.smartstore", "pgRegisterSoup", args, NULL) == SYNCSTORE_OK);
    snprintf(args, sizeof args, reg, "true");
    CHECK(exec_now(plugin, "com.salesforce.smartstore", "pgRegisterSoup", args, NULL) == SYNCSTORE_OK);

    /* No remote yet: the run starts and fails, saying so. */
    snprintf(args, sizeof args, down, "false");
    CHECK(exec_now(plugin, "com.salesforce.mobilesync", "syncDown", args, &state) == SYNCSTORE_OK);
    CHECK(strcmp(terminal_status(state, "smartstore", 0), "FAILED") == 0);
    json_decref(state);

    /* A remote for the user store only, set while it is open. */
    char *remote = devserver_remote_json(server, NULL);
    EXPECT(syncstore_plugin_set_remote(plugin, "{\"storeName\":\"smartstore\",\"isGlobalStore\":false}", remote, &err), SYNCSTORE_OK, &err);
    CHECK(exec_now(plugin, "com.salesforce.mobilesync", "syncDown", args, &state) == SYNCSTORE_OK);
    CHECK(strcmp(terminal_status(state, "smartstore", 0), "DONE") == 0);
    json_decref(state);
    snprintf(args, sizeof args, down, "true");
    CHECK(exec_now(plugin, "com.salesforce.mobilesync", "syncDown", args, &state) == SYNCSTORE_OK);
    CHECK(strcmp(terminal_status(state, "smartstore", 1), "FAILED") == 0);
    json_decref(state);

    /* The default remote reaches the global store, already open. A listener cannot free the
     * plugin (it would wait for its own callback): STATE, and the plugin goes on. */
    EXPECT(syncstore_plugin_set_remote(plugin, NULL, remote, &err), SYNCSTORE_OK, &err);
    free_from_listener = plugin;
    CHECK(exec_now(plugin, "com.salesforce.mobilesync", "syncDown", args, &state) == SYNCSTORE_OK);
    CHECK(strcmp(terminal_status(state, "smartstore", 1), "DONE") == 0);
    json_decref(state);
    CHECK(free_from_listener_status == SYNCSTORE_ERR_STATE);
    CHECK(exec_now(plugin, "com.salesforce.smartstore", "pgGetDatabaseSize", "[{}]", NULL) == SYNCSTORE_OK);
    EXPECT(syncstore_plugin_set_remote(plugin, NULL, "{\"instanceUrl\":", &err), SYNCSTORE_ERR_ARGUMENT, &err);
    free(remote);
    EXPECT(syncstore_plugin_free(plugin, &err), SYNCSTORE_OK, &err);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s STORE_DIR CASES_JSON\n", argv[0]); return 2; }
    check_fresh_dir(argv[1]);
    json_error_t jerr;
    json_t *table = json_load_file(argv[2], 0, &jerr);
    if (!table) { fprintf(stderr, "cannot read %s: %s\n", argv[2], jerr.text); return 2; }

    const char *extra[16] = {0};
    json_t *server_args = json_object_get(json_object_get(table, "server"), "args");
    for (size_t i = 0; i < json_array_size(server_args) && i < 15; i++) extra[i] = json_string_value(json_array_get(server_args, i));
    devserver server;
    devserver_start(&server, devserver_binary(), extra);

    events = json_array();
    saved = json_object();
    char *remote = devserver_remote_json(&server, NULL);
    char options[1200];
    snprintf(options, sizeof options, "{\"remote\":%s}", remote);
    free(remote);

    syncstore_error err;
    syncstore_plugin *plugin = NULL;
    EXPECT(syncstore_plugin_new(argv[1], options, &plugin, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_plugin_set_listener(plugin, on_event, NULL, &err), SYNCSTORE_OK, &err);

    size_t i;
    json_t *step;
    json_array_foreach(json_object_get(table, "steps"), i, step) run_step(plugin, &server, step);

    /* The C contract around the table: misuse is the call's status, not an answer. */
    answer a = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL};
    EXPECT(syncstore_plugin_exec(plugin, "com.salesforce.smartstore", "pgGetAllStores", "[{}]", NULL, NULL, &err),
           SYNCSTORE_ERR_ARGUMENT, &err);
    EXPECT(syncstore_plugin_exec(NULL, "com.salesforce.smartstore", "pgGetAllStores", "[{}]", on_answer, &a, &err),
           SYNCSTORE_ERR_ARGUMENT, &err);
    CHECK(a.calls == 0);
    /* Not JSON: the action's error answer, ARGUMENT. */
    EXPECT(syncstore_plugin_exec(plugin, "com.salesforce.smartstore", "pgGetAllStores", "[{", on_answer, &a, &err), SYNCSTORE_OK, &err);
    CHECK(a.calls == 1 && a.status == SYNCSTORE_ERR_ARGUMENT && json_is_string(a.value));
    json_decref(a.value);

    EXPECT(syncstore_plugin_free(plugin, &err), SYNCSTORE_OK, &err);
    /* A freed plugin is a STATE error, never a crash. */
    a.calls = 0;
    EXPECT(syncstore_plugin_exec(plugin, "com.salesforce.smartstore", "pgGetAllStores", "[{}]", on_answer, &a, &err),
           SYNCSTORE_ERR_STATE, &err);
    CHECK(a.calls == 0);
    EXPECT(syncstore_plugin_free(plugin, &err), SYNCSTORE_ERR_STATE, &err);

    char other[4096];
    snprintf(other, sizeof other, "%s/keys", argv[1]);
    check_fresh_dir(other);
    test_key_provider(other);
    snprintf(other, sizeof other, "%s/remotes", argv[1]);
    check_fresh_dir(other);
    test_remotes(other, &server);
    snprintf(other, sizeof other, "%s/api", argv[1]);
    check_fresh_dir(other);
    test_api(other);

    devserver_stop(&server);
    json_decref(saved);
    json_decref(events);
    json_decref(table);
    return check_finish();
}
