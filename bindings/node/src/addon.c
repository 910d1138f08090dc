/* Node-API addon over libsyncstore: module setup, library loading, errors and argument helpers,
 * and the shutdown that closes an environment's stores. The calls live in calls.c (store),
 * sync.c (sync runs), target.c (custom targets written in JS), plugin.c (the hybrid plugins'
 * dispatcher), watch.c (store watches) and live.c (live sync). */

#include "addon.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

ss_api SS;
int ss_loaded;
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- errors and arguments ---- */

/* The name of a status: the library's, or before it is loaded (syncstore_status_name lives in
 * it) the header's own macro name, so .code always agrees with .status. */
static const char *status_name(int status) {
    if (ss_loaded) return SS.syncstore_status_name(status);
    switch (status) {
#define SS_NAME(code) case code: return #code;
        SYNCSTORE_STATUSES(SS_NAME)
#undef SS_NAME
    default: return "SYNCSTORE_ERR_INTERNAL";
    }
}

napi_value make_error(napi_env env, int status, int retryable, const char *message) {
    napi_value msg, error, code, num, retry;
    const char *name = status_name(status);
    napi_create_string_utf8(env, message && *message ? message : name, NAPI_AUTO_LENGTH, &msg);
    napi_create_error(env, NULL, msg, &error);
    napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code);
    napi_create_int32(env, status, &num);
    napi_get_boolean(env, retryable != 0, &retry);
    napi_set_named_property(env, error, "code", code);
    napi_set_named_property(env, error, "status", num);
    napi_set_named_property(env, error, "retryable", retry);
    return error;
}

void throw_error(napi_env env, int status, const char *message) {
    napi_throw(env, make_error(env, status, 0, message));
}

int arg_string(napi_env env, napi_value v, char **out, const char *what) {
    return arg_string_in(env, v, NULL, 0, out, what);
}

int arg_string_in(napi_env env, napi_value v, char *buf, size_t cap, char **out, const char *what) {
    napi_valuetype t;
    *out = NULL;
    if (napi_typeof(env, v, &t) != napi_ok) return 0;
    if (t == napi_null || t == napi_undefined) return 1;
    if (t != napi_string) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s must be a string", what);
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, msg);
        return 0;
    }
    size_t len;
    if (cap > 1) {
        /* One copy when it fits; a string that filled the buffer may have been cut short. */
        napi_get_value_string_utf8(env, v, buf, cap, &len);
        if (len < cap - 1) { *out = buf; return 1; }
    }
    napi_get_value_string_utf8(env, v, NULL, 0, &len);
    *out = malloc(len + 1);
    if (!*out) { throw_error(env, SYNCSTORE_ERR_INTERNAL, "out of memory"); return 0; }
    napi_get_value_string_utf8(env, v, *out, len + 1, &len);
    return 1;
}

int arg_int64(napi_env env, napi_value v, int64_t *out, const char *what) {
    napi_valuetype t;
    double d;
    *out = 0;
    if (napi_typeof(env, v, &t) != napi_ok) return 0;
    if (t == napi_undefined || t == napi_null) return 1;
    if (t != napi_number || napi_get_value_double(env, v, &d) != napi_ok || d != d) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s must be a number", what);
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, msg);
        return 0;
    }
    /* Clamp instead of converting out of range (undefined behaviour in C). */
    *out = d > 9.2e18 ? INT64_MAX : d < -9.2e18 ? INT64_MIN : (int64_t)d;
    return 1;
}

store_rec *arg_store(napi_env env, napi_value v) {
    void *p = NULL;
    napi_valuetype t;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external ||
        napi_get_value_external(env, v, &p) != napi_ok || !p) {
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "not a store handle");
        return NULL;
    }
    return p;
}

napi_value export_numbers(napi_env env, napi_value exports, const char *key, const char *const *names,
                          const int *values, size_t count) {
    napi_value object, number;
    NAPI_OK(napi_create_object(env, &object));
    for (size_t k = 0; k < count; k++) {
        NAPI_OK(napi_create_int32(env, values ? values[k] : (int)k, &number));
        NAPI_OK(napi_set_named_property(env, object, names[k], number));
    }
    NAPI_OK(napi_object_freeze(env, object));
    NAPI_OK(napi_set_named_property(env, exports, key, object));
    return exports;
}

/* addon.STATUS: the header's codes under their names without "SYNCSTORE_" / "SYNCSTORE_ERR_". */
static napi_value export_statuses(napi_env env, napi_value exports) {
#define SS_SHORT(code) &#code[strncmp(#code, "SYNCSTORE_ERR_", 14) ? 10 : 14],
#define SS_VALUE(code) code,
    const char *const names[] = { SYNCSTORE_STATUSES(SS_SHORT) };
    static const int values[] = { SYNCSTORE_STATUSES(SS_VALUE) };
#undef SS_SHORT
#undef SS_VALUE
    return export_numbers(env, exports, "STATUS", names, values, sizeof values / sizeof values[0]);
}

/* addon.statusName(code): the library's name of a status (the header's before it is loaded). */
static napi_value js_status_name(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1], result;
    int32_t status = SYNCSTORE_ERR_INTERNAL;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (argc < 1 || napi_get_value_int32(env, argv[0], &status) != napi_ok) {
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "the status must be a number");
        return NULL;
    }
    napi_create_string_utf8(env, status_name(status), NAPI_AUTO_LENGTH, &result);
    return result;
}

/* ---- library loading ---- */

static napi_value js_load(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1], result;
    char *path = NULL;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (!arg_string(env, argv[0], &path, "library path")) return NULL;
    pthread_mutex_lock(&g_mu);
    const char *problem = NULL;
    if (!ss_loaded) {
        /* RTLD_NODELETE: engine threads may outlive a worker environment. (Not RTLD_DEEPBIND:
         * it would keep libcurl on the system libssl rather than node's exported OpenSSL, but
         * the process then crashes at the first HTTPS sync.) */
        void *lib = dlopen(path ? path : SS_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (!lib) problem = dlerror();
        else {
#define SS_LOAD(name) if (!problem && !(SS.name = (__typeof__(name) *)dlsym(lib, #name))) problem = #name " is missing";
            SYNCSTORE_FUNCTIONS(SS_LOAD)
#undef SS_LOAD
            if (!problem && SS.syncstore_abi_version() != SYNCSTORE_ABI_VERSION) problem = "ABI version mismatch";
            if (!problem) ss_loaded = 1;
        }
    }
    pthread_mutex_unlock(&g_mu);
    free(path);
    if (problem) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s", problem); /* lib/native.js says where it looked and what to do */
        throw_error(env, SYNCSTORE_ERR_STATE, msg);
        return NULL;
    }
    napi_create_string_utf8(env, SS.syncstore_version(), NAPI_AUTO_LENGTH, &result);
    return result;
}

/* ---- shutdown ---- */

static void *close_store(void *arg) {
    SS.syncstore_close(((store_rec *)arg)->store, NULL);
    return NULL;
}

void env_shutdown(env_state *es) {
    pthread_mutex_lock(&g_mu);
    es->closing = 1;
    size_t count = 0;
    for (store_rec *r = es->stores; r; r = r->next) count += !r->closed;
    store_rec **open = calloc(count ? count : 1, sizeof *open);
    size_t n = 0;
    for (store_rec *r = es->stores; r && open; r = r->next)
        if (!r->closed) { r->closed = 1; open[n++] = r; }
    pthread_mutex_unlock(&g_mu);
    target_abort_calls(es);
    plugin_env_shutdown(es);
    if (!open) return;
    /* Each close stops that handle's syncs and waits for their terminal callbacks, so no
     * engine thread calls into this environment after it is gone. They run side by side:
     * stopping a transfer can take up to a second per store. */
    pthread_t *threads = calloc(n ? n : 1, sizeof *threads);
    int *started = calloc(n ? n : 1, sizeof *started);
    int parallel = threads && started;
    for (size_t k = 0; k < n; k++) {
        target_abort_store(open[k]);
        if (parallel && pthread_create(&threads[k], NULL, close_store, open[k]) == 0) started[k] = 1;
        else close_store(open[k]);
    }
    for (size_t k = 0; parallel && k < n; k++) if (started[k]) pthread_join(threads[k], NULL);
    free(started);
    free(threads);
    free(open);
}

static napi_value js_shutdown(napi_env env, napi_callback_info info) {
    (void)info;
    env_state *es;
    napi_get_instance_data(env, (void **)&es);
    if (ss_loaded) env_shutdown(es);
    return NULL;
}

static void env_cleanup(void *arg) {
    env_state *es = arg;
    if (ss_loaded) env_shutdown(es);
    sync_env_teardown(es);
    target_env_teardown(es);
    plugin_env_teardown(es);
    watch_env_teardown(es);
    live_env_teardown(es);
    pthread_mutex_lock(&g_mu);
    store_rec *r = es->stores;
    es->stores = NULL;
    pthread_mutex_unlock(&g_mu);
    while (r) { store_rec *next = r->next; free(r); r = next; }
    free(es);
}

static napi_value init(napi_env env, napi_value exports) {
    env_state *es = calloc(1, sizeof *es);
    if (!es) return NULL;
    es->env = env;
    napi_set_instance_data(env, es, NULL, NULL);
    napi_add_env_cleanup_hook(env, env_cleanup, es);
    napi_property_descriptor props[] = {
        {"load", NULL, js_load, NULL, NULL, NULL, napi_default, NULL},
        {"shutdown", NULL, js_shutdown, NULL, NULL, NULL, napi_default, NULL},
        {"statusName", NULL, js_status_name, NULL, NULL, NULL, napi_default, NULL},
    };
    napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
    napi_value soname;
    napi_create_string_utf8(env, SS_SONAME, NAPI_AUTO_LENGTH, &soname);
    napi_set_named_property(env, exports, "SONAME", soname);
    export_statuses(env, exports);
    calls_init(env, exports);
    sync_init(env, exports);
    target_init(env, exports);
    plugin_init(env, exports);
    watch_init(env, exports);
    live_init(env, exports);
    return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
