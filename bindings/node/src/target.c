/* Custom sync targets written in JS. The engine calls a target on its sync worker thread; the
 * call is handed to the JS thread through a thread-safe function and the worker thread waits
 * (on a condition variable, never the JS thread) until the JS promise settles and the JS layer
 * calls resolveTarget(). At exit every waiting call fails, so closing a store never hangs. */

#include "addon.h"
#include <stdlib.h>
#include <string.h>

typedef struct target_rec {
    env_state *owner;
    store_rec *store; /* the handle it was registered through */
    napi_threadsafe_function tsfn; /* NULL once finalized */
    struct target_rec *next;
} target_rec;

typedef struct pending {
    uint64_t id;
    env_state *owner;
    store_rec *store;
    pthread_cond_t cond;
    int done, status;
    char *out;
    char message[SYNCSTORE_ERROR_MESSAGE_SIZE];
    struct pending *next;
} pending;

typedef struct {
    uint64_t id;
    const char *kind;
    char *a, *b, *c; /* target JSON, then per kind: continuation | action, record JSON */
    int64_t since;
} request;

/* Target records stay allocated for the life of the process: the engine keeps the context
 * pointer as long as the store is open, possibly through another handle. */
static target_rec *g_targets;
static pending *g_pending;
static uint64_t g_next_id = 1;

static void free_request(request *r) {
    free(r->a); free(r->b); free(r->c); free(r);
}

/* Caller holds g_mu. */
static void finish(pending *p, int status, const char *message, const char *out) {
    if (p->done) return;
    p->done = 1;
    p->status = status;
    snprintf(p->message, sizeof p->message, "%s", message ? message : "");
    p->out = out ? strdup(out) : NULL;
    pthread_cond_signal(&p->cond);
}

static pending *find(uint64_t id) {
    for (pending *p = g_pending; p; p = p->next) if (p->id == id) return p;
    return NULL;
}

/* The handle whose run is on this engine thread. The engine runs a store's runs one at a time
 * on its sync worker thread, custom target calls included, and every run reports its RUNNING
 * state (sync.c notes its handle) before it calls a target. */
static __thread store_rec *tl_run_store;

void target_note_run(store_rec *rec) { tl_run_store = rec; }

/* Caller holds g_mu. The handle that made this call: the noted run's when it is a handle of the
 * target's environment (so the pointer is alive), else the handle the target was registered
 * through. Closing it fails the call, so a promise that never settles cannot hang that close. */
static store_rec *calling_store(target_rec *t) {
    for (store_rec *r = t->owner->stores; r; r = r->next)
        if (r == tl_run_store) return r;
    return t->store;
}

/* Engine worker thread: hands the request to JS and waits for its answer. */
static int run_on_js(target_rec *t, request *req, char **out, syncstore_error *err) {
    pending p = {0};
    pthread_cond_init(&p.cond, NULL);
    int status;
    pthread_mutex_lock(&g_mu);
    store_rec *caller = t->tsfn && t->owner && !t->owner->closing ? calling_store(t) : NULL;
    if (!caller || caller->closed) {
        pthread_mutex_unlock(&g_mu);
        free_request(req);
        status = SYNCSTORE_ERR_STATE;
        p.out = NULL;
        snprintf(p.message, sizeof p.message, "%s", caller ? "the store is closing"
                 : "the JavaScript environment of this custom target has ended");
    } else {
        p.id = req->id = g_next_id++;
        p.owner = t->owner;
        p.store = caller;
        p.next = g_pending;
        g_pending = &p;
        if (napi_call_threadsafe_function(t->tsfn, req, napi_tsfn_nonblocking) != napi_ok) {
            free_request(req);
            finish(&p, SYNCSTORE_ERR_STATE, "the JavaScript environment of this custom target is closing", NULL);
        }
        while (!p.done) pthread_cond_wait(&p.cond, &g_mu);
        for (pending **q = &g_pending; *q; q = &(*q)->next)
            if (*q == &p) { *q = p.next; break; }
        pthread_mutex_unlock(&g_mu);
        status = p.status;
    }
    pthread_cond_destroy(&p.cond);
    if (status != SYNCSTORE_OK) {
        free(p.out);
        if (err) {
            err->code = status;
            err->retryable = status == SYNCSTORE_ERR_NETWORK;
            snprintf(err->message, sizeof err->message, "%s", p.message);
        }
        return status;
    }
    if (out) *out = p.out; /* malloc'd: the library frees it with free() */
    else free(p.out);
    return SYNCSTORE_OK;
}

static request *new_request(const char *kind, const char *a, const char *b, const char *c, int64_t since) {
    request *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->kind = kind;
    r->since = since;
    r->a = a ? strdup(a) : NULL;
    r->b = b ? strdup(b) : NULL;
    r->c = c ? strdup(c) : NULL;
    return r;
}

static int oom(syncstore_error *err) {
    if (err) { err->code = SYNCSTORE_ERR_INTERNAL; snprintf(err->message, sizeof err->message, "out of memory"); }
    return SYNCSTORE_ERR_INTERNAL;
}

static int fetch_page(void *context, const char *target_json, int64_t since_ms, const char *continuation,
                      char **out_page_json, syncstore_error *err) {
    request *r = new_request("fetchPage", target_json, continuation, NULL, since_ms);
    return r ? run_on_js(context, r, out_page_json, err) : oom(err);
}

static int remote_ids(void *context, const char *target_json, char **out_ids_json, syncstore_error *err) {
    request *r = new_request("remoteIds", target_json, NULL, NULL, -1);
    return r ? run_on_js(context, r, out_ids_json, err) : oom(err);
}

static int push_record(void *context, const char *target_json, const char *action, const char *record_json,
                       char **out_result_json, syncstore_error *err) {
    request *r = new_request("pushRecord", target_json, action, record_json, -1);
    return r ? run_on_js(context, r, out_result_json, err) : oom(err);
}

static void str_or_null(napi_env env, const char *s, napi_value *v) {
    if (s) napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, v);
    else napi_get_null(env, v);
}

/* JS thread: dispatcher(callId, kind, targetJson, sinceMs, b, c). */
static void call_js(napi_env env, napi_value fn, void *context, void *data) {
    (void)context;
    request *r = data;
    if (!env || !fn) {
        pthread_mutex_lock(&g_mu);
        pending *p = find(r->id);
        if (p) finish(p, SYNCSTORE_ERR_STATE, "the JavaScript environment of this custom target has ended", NULL);
        pthread_mutex_unlock(&g_mu);
        free_request(r);
        return;
    }
    napi_value argv[6], undefined, result;
    napi_create_double(env, (double)r->id, &argv[0]);
    napi_create_string_utf8(env, r->kind, NAPI_AUTO_LENGTH, &argv[1]);
    str_or_null(env, r->a, &argv[2]);
    napi_create_int64(env, r->since, &argv[3]);
    str_or_null(env, r->b, &argv[4]);
    str_or_null(env, r->c, &argv[5]);
    napi_get_undefined(env, &undefined);
    uint64_t id = r->id;
    free_request(r);
    if (napi_call_function(env, undefined, fn, 6, argv, &result) != napi_ok) {
        /* The dispatcher threw: answer now so the worker does not wait forever. */
        napi_value exc;
        napi_get_and_clear_last_exception(env, &exc);
        pthread_mutex_lock(&g_mu);
        pending *p = find(id);
        if (p) finish(p, SYNCSTORE_ERR_INTERNAL, "the custom target's dispatcher threw", NULL);
        pthread_mutex_unlock(&g_mu);
    }
}

static void tsfn_finalize(napi_env env, void *data, void *hint) {
    (void)env; (void)hint;
    target_rec *t = data;
    pthread_mutex_lock(&g_mu);
    t->tsfn = NULL;
    pthread_mutex_unlock(&g_mu);
}

/* registerTarget(store, type, dispatcher) */
static napi_value js_register_target(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3], name;
    env_state *es;
    char *type = NULL;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    napi_get_instance_data(env, (void **)&es);
    if (!ss_loaded) { throw_error(env, SYNCSTORE_ERR_STATE, "libsyncstore is not loaded"); return NULL; }
    store_rec *rec = arg_store(env, argv[0]);
    if (!rec || !arg_string(env, argv[1], &type, "target type")) return NULL;
    target_rec *t = calloc(1, sizeof *t);
    if (!t) { free(type); throw_error(env, SYNCSTORE_ERR_INTERNAL, "out of memory"); return NULL; }
    napi_create_string_utf8(env, "syncstore-target", NAPI_AUTO_LENGTH, &name);
    if (napi_create_threadsafe_function(env, argv[2], NULL, name, 0, 1, t, tsfn_finalize, NULL, call_js,
                                        &t->tsfn) != napi_ok) {
        free(type); free(t);
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "the dispatcher must be a function");
        return NULL;
    }
    napi_unref_threadsafe_function(env, t->tsfn);
    t->owner = es;
    t->store = rec;
    syncstore_custom_target ct = {t, fetch_page, remote_ids, push_record};
    syncstore_error err = {0};
    pthread_mutex_lock(&g_mu);
    int closed = rec->closed;
    t->next = g_targets;
    g_targets = t;
    pthread_mutex_unlock(&g_mu);
    int status = closed ? SYNCSTORE_ERR_STATE : SS.syncstore_register_custom_target(rec->store, type, &ct, &err);
    free(type);
    if (status != SYNCSTORE_OK) {
        napi_throw(env, make_error(env, status, err.retryable, closed ? "the store is closed" : err.message));
    }
    return NULL;
}

/* resolveTarget(callId, status, text): text is the result JSON, or the message on failure. */
static napi_value js_resolve_target(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3];
    double id;
    int32_t status;
    char *text = NULL;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (argc < 3 || napi_get_value_double(env, argv[0], &id) != napi_ok ||
        napi_get_value_int32(env, argv[1], &status) != napi_ok) {
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "bad resolveTarget call");
        return NULL;
    }
    if (!arg_string(env, argv[2], &text, "target result")) return NULL;
    pthread_mutex_lock(&g_mu);
    pending *p = find((uint64_t)id);
    if (p) {
        if (status == SYNCSTORE_OK) finish(p, SYNCSTORE_OK, "", text);
        else finish(p, status, text, NULL);
    }
    pthread_mutex_unlock(&g_mu);
    free(text);
    return NULL;
}

void target_abort_calls(env_state *es) {
    pthread_mutex_lock(&g_mu);
    for (pending *p = g_pending; p; p = p->next)
        if (p->owner == es) finish(p, SYNCSTORE_ERR_STATE, "the JavaScript environment is shutting down", NULL);
    pthread_mutex_unlock(&g_mu);
}

void target_abort_store(store_rec *rec) {
    pthread_mutex_lock(&g_mu);
    for (pending *p = g_pending; p; p = p->next)
        if (p->store == rec) finish(p, SYNCSTORE_ERR_STATE, "the store is closing or its syncs are stopping", NULL);
    pthread_mutex_unlock(&g_mu);
}

void target_env_teardown(env_state *es) {
    pthread_mutex_lock(&g_mu);
    for (target_rec *t = g_targets; t; t = t->next)
        if (t->owner == es) t->owner = NULL;
    pthread_mutex_unlock(&g_mu);
}

napi_value target_init(napi_env env, napi_value exports) {
    napi_property_descriptor props[] = {
        {"registerTarget", NULL, js_register_target, NULL, NULL, NULL, napi_default, NULL},
        {"resolveTarget", NULL, js_resolve_target, NULL, NULL, NULL, napi_default, NULL},
    };
    napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
    return exports;
}
