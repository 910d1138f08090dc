/* Live sync (syncstore_start_live_sync; lib/live.js): the store's syncs run by themselves. The
 * library calls the live sync's callback on its own thread (its "state" events) and on the sync
 * worker thread (the states of the runs it starts, "run" events); each start gets a thread-safe
 * function that carries every event's text to the JS thread.
 *
 * The thread-safe function keeps the process alive only while the JS layer says someone waits
 * (an iteration's pending next(), a stop() in flight, keepAlive). A run that live sync started
 * may still report after its "stopped" event (stop does not wait for it), and only the close of
 * the handle that started live sync waits for those runs: so the function is released when that
 * close completes (or the environment ends), after which the library calls none of its callbacks. */
#include "addon.h"
#include <stdlib.h>
#include <string.h>

typedef struct live_ctx {
    env_state *owner;
    store_rec *store;              /* the handle live sync was started through */
    napi_threadsafe_function tsfn; /* under g_mu; NULL once finalized */
    int released;                  /* under g_mu: the tsfn was released (no ref/unref any more) */
    int engine_ref, tsfn_ref, js_ref;
    struct live_ctx *next;
} live_ctx;

static live_ctx *g_lives; /* under g_mu */

/* Caller holds g_mu. Frees the context when nobody can reach it any more. */
static void maybe_free(live_ctx *ctx) {
    if (ctx->engine_ref || ctx->tsfn_ref || ctx->js_ref) return;
    for (live_ctx **p = &g_lives; *p; p = &(*p)->next)
        if (*p == ctx) { *p = ctx->next; break; }
    free(ctx);
}

/* The live sync thread ("state") or the sync worker thread ("run"). Never blocks. */
static void on_event(const char *event_json, void *context) {
    live_ctx *ctx = context;
    if (!event_json) return;
    /* A run's custom target calls that follow belong to this handle (src/target.c). */
    if (strncmp(event_json, "{\"event\":\"run\"", 14) == 0) target_note_run(ctx->store);
    char *copy = strdup(event_json);
    if (!copy) return;
    pthread_mutex_lock(&g_mu);
    int posted = ctx->tsfn && napi_call_threadsafe_function(ctx->tsfn, copy, napi_tsfn_nonblocking) == napi_ok;
    pthread_mutex_unlock(&g_mu);
    if (!posted) free(copy);
}

static void call_js(napi_env env, napi_value fn, void *context, void *data) {
    (void)context;
    char *text = data;
    if (env && fn) {
        napi_value arg, undefined;
        napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &arg);
        napi_get_undefined(env, &undefined);
        if (napi_call_function(env, undefined, fn, 1, &arg, NULL) == napi_pending_exception) {
            napi_value error;
            if (napi_get_and_clear_last_exception(env, &error) == napi_ok) napi_fatal_exception(env, error);
        }
    }
    free(text);
}

static void tsfn_finalize(napi_env env, void *data, void *hint) {
    (void)env; (void)hint;
    live_ctx *ctx = data;
    pthread_mutex_lock(&g_mu);
    ctx->tsfn = NULL;
    ctx->released = 1;
    ctx->tsfn_ref = 0;
    maybe_free(ctx);
    pthread_mutex_unlock(&g_mu);
}

static void external_finalize(napi_env env, void *data, void *hint) {
    (void)env; (void)hint;
    live_ctx *ctx = data;
    pthread_mutex_lock(&g_mu);
    ctx->js_ref = 0;
    maybe_free(ctx);
    pthread_mutex_unlock(&g_mu);
}

/* The library will not call this context again (its start failed, or its handle closed). JS
 * thread. `drain`: the events still queued (the "stopped" event of a close) keep the process
 * alive until they are delivered (the function closes once they are). */
static void release_engine(napi_env env, live_ctx *ctx, int drain) {
    napi_threadsafe_function tsfn = NULL;
    pthread_mutex_lock(&g_mu);
    if (ctx->engine_ref) {
        ctx->engine_ref = 0;
        if (!ctx->released) { ctx->released = 1; tsfn = ctx->tsfn; }
    }
    pthread_mutex_unlock(&g_mu);
    /* Outside the lock: the release may finalize at once, and the finalizer takes the lock. Items
     * still queued are delivered first. */
    if (tsfn && drain) napi_ref_threadsafe_function(env, tsfn);
    if (tsfn) napi_release_threadsafe_function(tsfn, napi_tsfn_release);
}

/* ---- start ---- */

typedef struct {
    napi_async_work work;
    napi_deferred deferred;
    live_ctx *ctx;
    store_rec *rec;
    char *options;
    int status;
    syncstore_error err;
} start_t;

static void start_execute(napi_env env, void *data) {
    (void)env;
    start_t *c = data;
    pthread_mutex_lock(&g_mu);
    int closed = c->rec->closed;
    pthread_mutex_unlock(&g_mu);
    if (closed) {
        c->status = c->err.code = SYNCSTORE_ERR_STATE;
        snprintf(c->err.message, sizeof c->err.message, "the store is closed");
        return;
    }
    c->status = SS.syncstore_start_live_sync(c->rec->store, c->options, on_event, c->ctx, &c->err);
}

static void start_complete(napi_env env, napi_status napi_st, void *data) {
    start_t *c = data;
    if (napi_st == napi_cancelled && c->status == SYNCSTORE_OK) {
        c->status = SYNCSTORE_ERR_STATE;
        snprintf(c->err.message, sizeof c->err.message, "the call was cancelled");
    }
    if (c->status != SYNCSTORE_OK) {
        release_engine(env, c->ctx, 0);
        napi_reject_deferred(env, c->deferred, make_error(env, c->status, c->err.retryable, c->err.message));
    } else {
        /* The handle closed while this start ran: its close is done and no callback will come. */
        pthread_mutex_lock(&g_mu);
        int closed = c->rec->closed && c->ctx->store == NULL;
        pthread_mutex_unlock(&g_mu);
        if (closed) release_engine(env, c->ctx, 1);
        napi_value undefined;
        napi_get_undefined(env, &undefined);
        napi_resolve_deferred(env, c->deferred, undefined);
    }
    free(c->options);
    napi_delete_async_work(env, c->work);
    free(c);
}

/* liveStart(store, optionsJsonOrNull, onEvent(text)) -> [ctx, Promise<undefined>] */
static napi_value js_live_start(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3], promise, name, external, pair;
    env_state *es;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    napi_get_instance_data(env, (void **)&es);
    if (!ss_loaded) { throw_error(env, SYNCSTORE_ERR_STATE, "libsyncstore is not loaded"); return NULL; }
    if (argc < 3) { throw_error(env, SYNCSTORE_ERR_ARGUMENT, "bad live sync call"); return NULL; }
    start_t *c = calloc(1, sizeof *c);
    live_ctx *ctx = calloc(1, sizeof *ctx);
    if (!c || !ctx) { free(c); free(ctx); throw_error(env, SYNCSTORE_ERR_INTERNAL, "out of memory"); return NULL; }
    int ok = (c->rec = arg_store(env, argv[0])) != NULL && arg_string(env, argv[1], &c->options, "live sync options");
    if (ok) {
        napi_create_string_utf8(env, "syncstore-live-sync", NAPI_AUTO_LENGTH, &name);
        ok = napi_create_threadsafe_function(env, argv[2], NULL, name, 0, 1, ctx, tsfn_finalize, NULL, call_js, &ctx->tsfn) == napi_ok;
        if (!ok) throw_error(env, SYNCSTORE_ERR_ARGUMENT, "the event callback must be a function");
    }
    if (!ok) {
        free(c->options);
        free(c);
        free(ctx);
        return NULL;
    }
    /* Live sync alone never keeps the process alive; the JS layer refs it while someone waits. */
    napi_unref_threadsafe_function(env, ctx->tsfn);
    ctx->owner = es;
    ctx->store = c->rec;
    ctx->engine_ref = ctx->tsfn_ref = ctx->js_ref = 1;
    pthread_mutex_lock(&g_mu);
    ctx->next = g_lives;
    g_lives = ctx;
    pthread_mutex_unlock(&g_mu);
    c->ctx = ctx;
    napi_create_external(env, ctx, external_finalize, NULL, &external);
    napi_create_promise(env, &c->deferred, &promise);
    napi_create_async_work(env, NULL, name, start_execute, start_complete, c, &c->work);
    napi_queue_async_work(env, c->work);
    napi_create_array_with_length(env, 2, &pair);
    napi_set_element(env, pair, 0, external);
    napi_set_element(env, pair, 1, promise);
    return pair;
}

/* liveRef(ctx, keepAlive): whether this live sync's events keep the event loop alive. */
static napi_value js_live_ref(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2];
    bool keep = false;
    void *p = NULL;
    napi_valuetype t;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (argc < 2 || napi_typeof(env, argv[0], &t) != napi_ok || t != napi_external || napi_get_value_external(env, argv[0], &p) != napi_ok || !p) {
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "not a live sync");
        return NULL;
    }
    live_ctx *ctx = p;
    napi_get_value_bool(env, argv[1], &keep);
    pthread_mutex_lock(&g_mu);
    napi_threadsafe_function tsfn = ctx->released ? NULL : ctx->tsfn;
    pthread_mutex_unlock(&g_mu);
    /* Only the JS thread releases or finalizes, so tsfn stays valid across these lines. */
    if (tsfn) {
        if (keep) napi_ref_threadsafe_function(env, tsfn);
        else napi_unref_threadsafe_function(env, tsfn);
    }
    return NULL;
}

/* JS thread, when the close of a handle completed: the library calls none of the callbacks of
 * the live syncs started through it (the close stopped them and waited for their runs). */
void live_store_closed(napi_env env, store_rec *rec) {
    for (;;) {
        live_ctx *next = NULL;
        pthread_mutex_lock(&g_mu);
        for (live_ctx *ctx = g_lives; ctx && !next; ctx = ctx->next)
            if (ctx->store == rec && ctx->engine_ref) next = ctx;
        if (next) next->store = NULL; /* a start still in flight sees it (start_complete) */
        pthread_mutex_unlock(&g_mu);
        if (!next) return;
        release_engine(env, next, 1);
    }
}

/* After env_shutdown closed the environment's stores the library calls none of its live syncs. */
void live_env_teardown(env_state *es) {
    pthread_mutex_lock(&g_mu);
    live_ctx *ctx = g_lives;
    while (ctx) {
        live_ctx *next = ctx->next;
        if (ctx->owner == es) {
            ctx->owner = NULL;
            ctx->engine_ref = 0;
            maybe_free(ctx);
        }
        ctx = next;
    }
    pthread_mutex_unlock(&g_mu);
}

napi_value live_init(napi_env env, napi_value exports) {
    napi_property_descriptor props[] = {
        {"liveStart", NULL, js_live_start, NULL, NULL, NULL, napi_default, NULL},
        {"liveRef", NULL, js_live_ref, NULL, NULL, NULL, napi_default, NULL},
    };
    napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
    return exports;
}
