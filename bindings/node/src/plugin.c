/* The hybrid plugins' dispatcher (syncstore_plugin_*): the Cordova / React Native bridges of
 * lib/plugin.js forward every call to it. An exec runs off the JS thread (the call lane, else the
 * libuv pool) like a store call. Its answer comes on that thread before the exec returns, or, for
 * cleanResyncGhosts, later from a sync worker thread: then it travels to the JS thread through
 * the plugin's thread-safe function, which also carries the plugin's "sync" events.
 *
 * Keys: the library asks the key provider on the thread that runs the exec, and JS cannot answer
 * there. So the JS layer resolves the key of the store the call names before it calls exec (its
 * provider may be async) and passes it along; the C provider hands that key back (a thread-local
 * points at the exec being run). */
#include "addon.h"
#include <stdlib.h>
#include <string.h>

typedef struct plugin_rec {
    syncstore_plugin *plugin;
    env_state *owner;
    napi_threadsafe_function tsfn; /* NULL once finalized */
    int freed;                     /* under g_mu */
    /* JS thread only: */
    int late;      /* execs whose answer is still to come from another thread */
    int keep;      /* the JS layer waits for events (runs in flight) */
    int refd;
    struct plugin_rec *next;
} plugin_rec;

/* Records live until the environment ends, so a JS handle never dangles. */
static plugin_rec *g_plugins;

typedef struct exec_call {
    napi_async_work work;
    napi_deferred deferred;
    plugin_rec *rec;
    char *service, *action, *args, *key;
    int kdf_iter;
    int call_status;       /* syncstore_plugin_exec's own status */
    syncstore_error err;
    /* under g_mu: */
    int answered, waiting; /* waiting: the JS thread saw the exec return without an answer */
    int status;
    char *json;
} exec_call;

enum { ITEM_EVENT, ITEM_ANSWER };

typedef struct item {
    int kind;
    char *event, *detail; /* ITEM_EVENT */
    exec_call *call;      /* ITEM_ANSWER */
} item;

static __thread exec_call *tl_exec; /* the exec this thread runs, for the key provider */

static void wipe_free(char *s) {
    if (s) { explicit_bzero(s, strlen(s)); free(s); }
}

static void free_exec(exec_call *c) {
    free(c->service); free(c->action); free(c->args); wipe_free(c->key); free(c->json);
    free(c);
}

/* JS thread: the tsfn keeps the process alive while an answer is awaited or a run is watched. */
static void update_ref(napi_env env, plugin_rec *rec) {
    int want = rec->late > 0 || rec->keep;
    pthread_mutex_lock(&g_mu);
    napi_threadsafe_function tsfn = rec->tsfn;
    pthread_mutex_unlock(&g_mu);
    if (!tsfn || want == rec->refd) return;
    rec->refd = want;
    if (want) napi_ref_threadsafe_function(env, tsfn);
    else napi_unref_threadsafe_function(env, tsfn);
}

/* Caller holds g_mu. Hands an item to the JS thread; dropped when the environment is going away. */
static int post(plugin_rec *rec, item *it) {
    return rec->tsfn && napi_call_threadsafe_function(rec->tsfn, it, napi_tsfn_nonblocking) == napi_ok;
}

/* ---- library callbacks (any thread) ---- */

static void on_event(void *context, const char *event, const char *detail_json) {
    plugin_rec *rec = context;
    item *it = calloc(1, sizeof *it);
    if (!it) return;
    it->kind = ITEM_EVENT;
    it->event = strdup(event ? event : "");
    it->detail = strdup(detail_json ? detail_json : "null");
    pthread_mutex_lock(&g_mu);
    int posted = it->event && it->detail && post(rec, it);
    pthread_mutex_unlock(&g_mu);
    if (!posted) { free(it->event); free(it->detail); free(it); }
}

static void on_answer(void *context, int status, const char *json) {
    exec_call *c = context;
    char *copy = json ? strdup(json) : NULL;
    pthread_mutex_lock(&g_mu);
    c->status = json && !copy ? SYNCSTORE_ERR_INTERNAL : status;
    c->json = json && !copy ? strdup("\"out of memory\"") : copy;
    c->answered = 1;
    if (c->waiting) {
        item *it = calloc(1, sizeof *it);
        if (it) {
            it->kind = ITEM_ANSWER;
            it->call = c;
            if (!post(c->rec, it)) free(it); /* the environment is going away */
        }
    }
    pthread_mutex_unlock(&g_mu);
}

static int key_provider(void *context, const char *store_json, char **out_key, int *out_kdf_iter, syncstore_error *err) {
    (void)context; (void)store_json;
    exec_call *c = tl_exec;
    if (!c) {
        err->code = SYNCSTORE_ERR_STATE;
        snprintf(err->message, sizeof err->message, "no key was resolved for this call");
        return SYNCSTORE_ERR_STATE;
    }
    if (c->key) {
        *out_key = strdup(c->key);
        if (!*out_key) { err->code = SYNCSTORE_ERR_INTERNAL; snprintf(err->message, sizeof err->message, "out of memory"); return SYNCSTORE_ERR_INTERNAL; }
    }
    *out_kdf_iter = c->kdf_iter;
    return SYNCSTORE_OK;
}

/* ---- JS thread ---- */

static napi_value answer_value(napi_env env, int status, const char *json) {
    napi_value pair, s, text;
    napi_create_array_with_length(env, 2, &pair);
    napi_create_int32(env, status, &s);
    if (json) napi_create_string_utf8(env, json, NAPI_AUTO_LENGTH, &text);
    else napi_get_null(env, &text);
    napi_set_element(env, pair, 0, s);
    napi_set_element(env, pair, 1, text);
    return pair;
}

static void call_js(napi_env env, napi_value fn, void *context, void *data) {
    plugin_rec *rec = context;
    item *it = data;
    if (it->kind == ITEM_EVENT) {
        if (env && fn) {
            napi_value argv[2], undefined;
            napi_create_string_utf8(env, it->event, NAPI_AUTO_LENGTH, &argv[0]);
            napi_create_string_utf8(env, it->detail, NAPI_AUTO_LENGTH, &argv[1]);
            napi_get_undefined(env, &undefined);
            napi_call_function(env, undefined, fn, 2, argv, NULL);
        }
        free(it->event); free(it->detail);
    } else {
        exec_call *c = it->call;
        if (env) {
            rec->late--;
            update_ref(env, rec);
            napi_resolve_deferred(env, c->deferred, answer_value(env, c->status, c->json));
        }
        free_exec(c);
    }
    free(it);
}

static void tsfn_finalize(napi_env env, void *data, void *hint) {
    (void)env; (void)hint;
    plugin_rec *rec = data;
    pthread_mutex_lock(&g_mu);
    rec->tsfn = NULL;
    pthread_mutex_unlock(&g_mu);
}

static plugin_rec *arg_plugin(napi_env env, napi_value v) {
    void *p = NULL;
    napi_valuetype t;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external || napi_get_value_external(env, v, &p) != napi_ok || !p) {
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "not a plugin handle");
        return NULL;
    }
    return p;
}

/* pluginNew(root, optionsJson, onEvent(event, detailJson)) -> handle */
static napi_value js_plugin_new(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3], name, handle;
    env_state *es;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    napi_get_instance_data(env, (void **)&es);
    if (!ss_loaded) { throw_error(env, SYNCSTORE_ERR_STATE, "libsyncstore is not loaded"); return NULL; }
    char *root = NULL, *options = NULL;
    if (!arg_string(env, argv[0], &root, "root directory") || !arg_string(env, argv[1], &options, "plugin options")) {
        free(root);
        return NULL;
    }
    plugin_rec *rec = calloc(1, sizeof *rec);
    syncstore_error err = {0};
    int status = rec ? SS.syncstore_plugin_new(root, options, &rec->plugin, &err) : SYNCSTORE_ERR_INTERNAL;
    free(root);
    wipe_free(options); /* the default remote's token */
    if (status != SYNCSTORE_OK) {
        throw_error(env, status, rec ? err.message : "out of memory");
        free(rec);
        return NULL;
    }
    napi_create_string_utf8(env, "syncstore-plugin", NAPI_AUTO_LENGTH, &name);
    if (napi_create_threadsafe_function(env, argv[2], NULL, name, 0, 1, rec, tsfn_finalize, rec, call_js, &rec->tsfn) != napi_ok) {
        SS.syncstore_plugin_free(rec->plugin, NULL);
        free(rec);
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "the event callback must be a function");
        return NULL;
    }
    napi_unref_threadsafe_function(env, rec->tsfn);
    rec->owner = es;
    SS.syncstore_plugin_set_listener(rec->plugin, on_event, rec, NULL);
    pthread_mutex_lock(&g_mu);
    rec->next = g_plugins;
    g_plugins = rec;
    pthread_mutex_unlock(&g_mu);
    napi_create_external(env, rec, NULL, NULL, &handle);
    return handle;
}

static void exec_run(void *data) {
    exec_call *c = data;
    pthread_mutex_lock(&g_mu);
    int freed = c->rec->freed;
    pthread_mutex_unlock(&g_mu);
    if (freed) {
        c->call_status = c->err.code = SYNCSTORE_ERR_STATE;
        snprintf(c->err.message, sizeof c->err.message, "the plugin was freed; create a new one");
    } else {
        tl_exec = c;
        c->call_status = SS.syncstore_plugin_exec(c->rec->plugin, c->service, c->action, c->args, on_answer, c, &c->err);
        tl_exec = NULL;
    }
    wipe_free(c->key);
    c->key = NULL;
}

static void exec_execute(napi_env env, void *data) { (void)env; exec_run(data); }

static void exec_complete(napi_env env, napi_status napi_st, void *data) {
    exec_call *c = data;
    if (c->work) napi_delete_async_work(env, c->work);
    c->work = NULL;
    if (napi_st == napi_cancelled && c->call_status == SYNCSTORE_OK) {
        c->call_status = SYNCSTORE_ERR_STATE;
        snprintf(c->err.message, sizeof c->err.message, "the call was cancelled");
    }
    if (c->call_status != SYNCSTORE_OK) { /* the answer is not called */
        napi_reject_deferred(env, c->deferred, make_error(env, c->call_status, c->err.retryable, c->err.message));
        free_exec(c);
        return;
    }
    pthread_mutex_lock(&g_mu);
    int answered = c->answered;
    if (!answered) c->waiting = 1;
    pthread_mutex_unlock(&g_mu);
    if (answered) {
        napi_resolve_deferred(env, c->deferred, answer_value(env, c->status, c->json));
        free_exec(c);
    } else {
        /* The exec returned: settle its promise with [-1, a promise of the answer], so the JS
         * layer lets the next calls run while this one waits. */
        napi_deferred returned = c->deferred;
        napi_value pair, later, marker;
        napi_create_promise(env, &c->deferred, &later);
        napi_create_array_with_length(env, 2, &pair);
        napi_create_int32(env, -1, &marker);
        napi_set_element(env, pair, 0, marker);
        napi_set_element(env, pair, 1, later);
        napi_resolve_deferred(env, returned, pair);
        c->rec->late++;
        update_ref(env, c->rec);
    }
}

static void exec_done(napi_env env, void *data) { exec_complete(env, napi_ok, data); }
static void exec_drop(void *data) { free_exec(data); }

/* pluginExec(handle, service, action, argsJson, key, kdfIter) -> Promise<[status, json|null]>:
 * the action's answer (its errors included), or [-1, Promise<[status, json|null]>] when the exec
 * returned before its answer (cleanResyncGhosts); rejects only when the call could not be made. */
static napi_value js_plugin_exec(napi_env env, napi_callback_info info) {
    size_t argc = 6;
    napi_value argv[6], promise, name;
    env_state *es;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    napi_get_instance_data(env, (void **)&es);
    plugin_rec *rec = arg_plugin(env, argv[0]);
    if (!rec) return NULL;
    exec_call *c = calloc(1, sizeof *c);
    if (!c) { throw_error(env, SYNCSTORE_ERR_INTERNAL, "out of memory"); return NULL; }
    c->rec = rec;
    int64_t kdf = 0;
    int ok = arg_string(env, argv[1], &c->service, "service") && arg_string(env, argv[2], &c->action, "action") &&
             arg_string(env, argv[3], &c->args, "args") && arg_string(env, argv[4], &c->key, "key") &&
             arg_int64(env, argv[5], &kdf, "kdfIter");
    c->kdf_iter = kdf < 0 || kdf > 100000000 ? -1 : (int)kdf;
    if (!ok || napi_create_promise(env, &c->deferred, &promise) != napi_ok) {
        free_exec(c);
        return NULL;
    }
    if (lane_submit(es, exec_run, exec_done, exec_drop, c)) return promise;
    napi_create_string_utf8(env, "syncstore-plugin-exec", NAPI_AUTO_LENGTH, &name);
    napi_create_async_work(env, NULL, name, exec_execute, exec_complete, c, &c->work);
    napi_queue_async_work(env, c->work);
    return promise;
}

/* pluginSetRemote(handle, storeJsonOrNull, remoteJson): cheap, so on the JS thread; throws. */
static napi_value js_plugin_set_remote(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    plugin_rec *rec = arg_plugin(env, argv[0]);
    char *store = NULL, *remote = NULL;
    if (!rec || !arg_string(env, argv[1], &store, "store config") || !arg_string(env, argv[2], &remote, "remote")) {
        free(store);
        return NULL;
    }
    syncstore_error err = {0};
    int status = SS.syncstore_plugin_set_remote(rec->plugin, store, remote, &err);
    free(store);
    wipe_free(remote);
    if (status != SYNCSTORE_OK) throw_error(env, status, err.message);
    return NULL;
}

/* pluginApi() -> the JSON text of syncstore_plugin_api(): the plugins' JavaScript half as data. */
static napi_value js_plugin_api(napi_env env, napi_callback_info info) {
    (void)info;
    char *text = NULL;
    syncstore_error err = {0};
    int status = SS.syncstore_plugin_api(&text, &err);
    if (status != SYNCSTORE_OK) {
        throw_error(env, status, err.message);
        return NULL;
    }
    napi_value result;
    napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &result);
    SS.syncstore_free(text);
    return result;
}

/* pluginSetKeyProvider(handle, on): whether stores open with the key each exec carries. */
static napi_value js_plugin_set_key_provider(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2];
    bool on = false;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    plugin_rec *rec = arg_plugin(env, argv[0]);
    if (!rec) return NULL;
    napi_get_value_bool(env, argv[1], &on);
    syncstore_error err = {0};
    int status = SS.syncstore_plugin_set_key_provider(rec->plugin, on ? key_provider : NULL, NULL, &err);
    if (status != SYNCSTORE_OK) throw_error(env, status, err.message);
    return NULL;
}

/* pluginKeepAlive(handle, keep): the JS layer watches runs in flight. */
static napi_value js_plugin_keep_alive(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2];
    bool keep = false;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    plugin_rec *rec = arg_plugin(env, argv[0]);
    if (!rec) return NULL;
    napi_get_value_bool(env, argv[1], &keep);
    rec->keep = keep;
    update_ref(env, rec);
    return NULL;
}

/* ---- free ---- */

typedef struct {
    napi_async_work work;
    napi_deferred deferred;
    plugin_rec *rec;
    int status;
    syncstore_error err;
} free_call;

/* Caller holds g_mu. Marks the record freed; 1 when it was not yet. */
static int mark_freed(plugin_rec *rec) {
    if (rec->freed) return 0;
    rec->freed = 1;
    return 1;
}

static void free_execute(napi_env env, void *data) {
    (void)env;
    free_call *f = data;
    /* Closes the plugin's stores: their runs stop and report their last state first. */
    f->status = SS.syncstore_plugin_free(f->rec->plugin, &f->err);
}

static void free_complete(napi_env env, napi_status napi_st, void *data) {
    (void)napi_st;
    free_call *f = data;
    f->rec->keep = 0;
    update_ref(env, f->rec);
    if (f->status != SYNCSTORE_OK) napi_reject_deferred(env, f->deferred, make_error(env, f->status, 0, f->err.message));
    else {
        napi_value undefined;
        napi_get_undefined(env, &undefined);
        napi_resolve_deferred(env, f->deferred, undefined);
    }
    napi_delete_async_work(env, f->work);
    free(f);
}

/* pluginFree(handle) -> Promise: closes its stores (off the JS thread: closing waits for runs).
 * Freeing twice resolves at once. */
static napi_value js_plugin_free(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1], promise, name;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    plugin_rec *rec = arg_plugin(env, argv[0]);
    if (!rec) return NULL;
    free_call *f = calloc(1, sizeof *f);
    if (!f) { throw_error(env, SYNCSTORE_ERR_INTERNAL, "out of memory"); return NULL; }
    f->rec = rec;
    napi_create_promise(env, &f->deferred, &promise);
    pthread_mutex_lock(&g_mu);
    int first = mark_freed(rec);
    pthread_mutex_unlock(&g_mu);
    if (!first) {
        napi_value undefined;
        napi_get_undefined(env, &undefined);
        napi_resolve_deferred(env, f->deferred, undefined);
        free(f);
        return promise;
    }
    napi_create_string_utf8(env, "syncstore-plugin-free", NAPI_AUTO_LENGTH, &name);
    napi_create_async_work(env, NULL, name, free_execute, free_complete, f, &f->work);
    napi_queue_async_work(env, f->work);
    return promise;
}

/* At exit (env_shutdown): frees this environment's plugins, so no run outlives it. */
void plugin_env_shutdown(env_state *es) {
    for (;;) {
        plugin_rec *next = NULL;
        pthread_mutex_lock(&g_mu);
        for (plugin_rec *r = g_plugins; r && !next; r = r->next)
            if (r->owner == es && mark_freed(r)) next = r;
        pthread_mutex_unlock(&g_mu);
        if (!next) return;
        SS.syncstore_plugin_free(next->plugin, NULL);
    }
}

void plugin_env_teardown(env_state *es) {
    pthread_mutex_lock(&g_mu);
    for (plugin_rec **p = &g_plugins; *p;) {
        plugin_rec *r = *p;
        /* A record whose thread-safe function was not finalized stays: its finalizer uses it. */
        if (r->owner == es && !r->tsfn) { *p = r->next; free(r); }
        else p = &r->next;
    }
    pthread_mutex_unlock(&g_mu);
}

napi_value plugin_init(napi_env env, napi_value exports) {
    napi_property_descriptor props[] = {
        {"pluginNew", NULL, js_plugin_new, NULL, NULL, NULL, napi_default, NULL},
        {"pluginApi", NULL, js_plugin_api, NULL, NULL, NULL, napi_default, NULL},
        {"pluginExec", NULL, js_plugin_exec, NULL, NULL, NULL, napi_default, NULL},
        {"pluginSetRemote", NULL, js_plugin_set_remote, NULL, NULL, NULL, napi_default, NULL},
        {"pluginSetKeyProvider", NULL, js_plugin_set_key_provider, NULL, NULL, NULL, napi_default, NULL},
        {"pluginKeepAlive", NULL, js_plugin_keep_alive, NULL, NULL, NULL, napi_default, NULL},
        {"pluginFree", NULL, js_plugin_free, NULL, NULL, NULL, napi_default, NULL},
    };
    napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
    return exports;
}
