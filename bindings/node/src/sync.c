/* Sync runs: the engine reports states on its sync worker thread; each run gets a thread-safe
 * function that carries the state text to the JS thread. It keeps the process alive only while
 * the JS layer says someone waits (for the run's first state, or for its end). */
#include "addon.h"
#include <stdlib.h>
#include <string.h>

typedef struct sync_ctx {
    env_state *owner;
    store_rec *store; /* the handle the run was started through */
    napi_threadsafe_function tsfn; /* NULL once finalized */
    int released;                  /* the tsfn was released: no ref/unref any more */
    int engine_ref, tsfn_ref, js_ref;
    struct sync_ctx *next;
} sync_ctx;

static sync_ctx *g_syncs;

/* Caller holds g_mu. Frees the context when nobody can reach it any more. */
static void maybe_free(sync_ctx *ctx) {
    if (ctx->engine_ref || ctx->tsfn_ref || ctx->js_ref) return;
    for (sync_ctx **p = &g_syncs; *p; p = &(*p)->next)
        if (*p == ctx) { *p = ctx->next; break; }
    free(ctx);
}

/* Engine worker thread. Never blocks: the queue is unbounded and the call is non-blocking. */
static void on_state(const char *state_json, void *context) {
    sync_ctx *ctx = context;
    target_note_run(ctx->store);
    pthread_mutex_lock(&g_mu);
    if (ctx->tsfn && state_json) {
        char *copy = strdup(state_json);
        if (copy && napi_call_threadsafe_function(ctx->tsfn, copy, napi_tsfn_nonblocking) != napi_ok) free(copy);
    }
    pthread_mutex_unlock(&g_mu);
}

static void call_js(napi_env env, napi_value fn, void *context, void *data) {
    (void)context;
    char *text = data;
    if (env && fn) {
        napi_value arg, undefined;
        napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &arg);
        napi_get_undefined(env, &undefined);
        napi_call_function(env, undefined, fn, 1, &arg, NULL);
    }
    free(text);
}

static void tsfn_finalize(napi_env env, void *data, void *hint) {
    (void)env; (void)hint;
    sync_ctx *ctx = data;
    pthread_mutex_lock(&g_mu);
    ctx->tsfn = NULL;
    ctx->released = 1;
    ctx->tsfn_ref = 0;
    maybe_free(ctx);
    pthread_mutex_unlock(&g_mu);
}

static void external_finalize(napi_env env, void *data, void *hint) {
    (void)env; (void)hint;
    sync_ctx *ctx = data;
    pthread_mutex_lock(&g_mu);
    ctx->js_ref = 0;
    maybe_free(ctx);
    pthread_mutex_unlock(&g_mu);
}

/* The engine will not call again (terminal state seen, or the start failed). JS thread. */
static void release_engine(sync_ctx *ctx) {
    napi_threadsafe_function tsfn = NULL;
    pthread_mutex_lock(&g_mu);
    if (ctx->engine_ref) {
        ctx->engine_ref = 0;
        if (!ctx->released) { ctx->released = 1; tsfn = ctx->tsfn; }
    }
    pthread_mutex_unlock(&g_mu);
    /* Outside the lock: the release may finalize at once, and the finalizer takes the lock. */
    if (tsfn) napi_release_threadsafe_function(tsfn, napi_tsfn_release);
}

/* The runs js_start_sync starts; their numbers reach lib/native.js as addon.SYNC_OP (written only here). */
#define SYNC_OPS(X) X(DOWN) X(UP) X(RESYNC) X(RESYNC_BY_NAME) X(CLEAN_GHOSTS) X(RESTART)

enum {
#define SS_SYNC_OP(name) S_##name,
    SYNC_OPS(SS_SYNC_OP)
#undef SS_SYNC_OP
    S_COUNT
};

typedef struct {
    napi_async_work work;
    napi_deferred deferred;
    sync_ctx *ctx;
    store_rec *rec;
    int op, status;
    char *s[4];
    int64_t i0, id;
    syncstore_error err;
} start_t;

static void start_execute(napi_env env, void *data) {
    (void)env;
    start_t *c = data;
    syncstore_error *e = &c->err;
    pthread_mutex_lock(&g_mu);
    int closed = c->rec->closed;
    pthread_mutex_unlock(&g_mu);
    if (closed) {
        c->status = e->code = SYNCSTORE_ERR_STATE;
        snprintf(e->message, sizeof e->message, "the store is closed");
        return;
    }
    syncstore_store *st = c->rec->store;
    void *cx = c->ctx;
    c->id = c->i0;
    switch (c->op) {
    case S_DOWN: c->status = SS.syncstore_sync_down(st, c->s[0], c->s[1], c->s[2], c->s[3], on_state, cx, &c->id, e); break;
    case S_UP: c->status = SS.syncstore_sync_up(st, c->s[0], c->s[1], c->s[2], c->s[3], on_state, cx, &c->id, e); break;
    case S_RESYNC: c->status = SS.syncstore_resync(st, c->i0, on_state, cx, e); break;
    case S_RESYNC_BY_NAME: c->status = SS.syncstore_resync_by_name(st, c->s[0], on_state, cx, &c->id, e); break;
    case S_CLEAN_GHOSTS: c->status = SS.syncstore_clean_resync_ghosts(st, c->i0, on_state, cx, e); break;
    case S_RESTART: c->status = SS.syncstore_restart_syncs(st, (int)c->i0, on_state, cx, e); break;
    default: c->status = e->code = SYNCSTORE_ERR_ARGUMENT; snprintf(e->message, sizeof e->message, "unknown sync operation");
    }
}

static void start_complete(napi_env env, napi_status napi_st, void *data) {
    start_t *c = data;
    if (napi_st == napi_cancelled && c->status == SYNCSTORE_OK) {
        c->status = SYNCSTORE_ERR_STATE;
        snprintf(c->err.message, sizeof c->err.message, "the call was cancelled");
    }
    if (c->status != SYNCSTORE_OK) {
        release_engine(c->ctx);
        napi_reject_deferred(env, c->deferred, make_error(env, c->status, c->err.retryable, c->err.message));
    } else {
        napi_value id;
        napi_create_int64(env, c->id, &id);
        napi_resolve_deferred(env, c->deferred, id);
    }
    for (int k = 0; k < 4; k++) free(c->s[k]);
    napi_delete_async_work(env, c->work);
    free(c);
}

/* startSync(op, store, s0, s1, s2, s3, i0, onState) -> [ctx, Promise<syncId>] */
static napi_value js_start_sync(napi_env env, napi_callback_info info) {
    size_t argc = 8;
    napi_value argv[8], promise, name, external, pair;
    int32_t op;
    env_state *es;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    napi_get_instance_data(env, (void **)&es);
    if (!ss_loaded) { throw_error(env, SYNCSTORE_ERR_STATE, "libsyncstore is not loaded"); return NULL; }
    if (argc < 8 || napi_get_value_int32(env, argv[0], &op) != napi_ok || op < S_DOWN || op > S_RESTART) {
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "bad sync call");
        return NULL;
    }
    start_t *c = calloc(1, sizeof *c);
    sync_ctx *ctx = calloc(1, sizeof *ctx);
    if (!c || !ctx) { free(c); free(ctx); throw_error(env, SYNCSTORE_ERR_INTERNAL, "out of memory"); return NULL; }
    c->op = op;
    int ok = (c->rec = arg_store(env, argv[1])) != NULL;
    for (int k = 0; ok && k < 4; k++) ok = arg_string(env, argv[2 + k], &c->s[k], "sync argument");
    if (ok) ok = arg_int64(env, argv[6], &c->i0, "sync id");
    if (ok) {
        napi_create_string_utf8(env, "syncstore-sync", NAPI_AUTO_LENGTH, &name);
        ok = napi_create_threadsafe_function(env, argv[7], NULL, name, 0, 1, ctx, tsfn_finalize, NULL,
                                             call_js, &ctx->tsfn) == napi_ok;
        if (!ok) throw_error(env, SYNCSTORE_ERR_ARGUMENT, "the state callback must be a function");
    }
    if (!ok) {
        for (int k = 0; k < 4; k++) free(c->s[k]);
        free(c);
        free(ctx);
        return NULL;
    }
    /* A run alone never keeps the process alive; the JS layer refs it while someone waits. */
    napi_unref_threadsafe_function(env, ctx->tsfn);
    ctx->owner = es;
    ctx->store = c->rec;
    ctx->engine_ref = ctx->tsfn_ref = ctx->js_ref = 1;
    pthread_mutex_lock(&g_mu);
    ctx->next = g_syncs;
    g_syncs = ctx;
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

static sync_ctx *arg_ctx(napi_env env, napi_value v) {
    void *p = NULL;
    napi_valuetype t;
    if (napi_typeof(env, v, &t) != napi_ok || t != napi_external || napi_get_value_external(env, v, &p) != napi_ok) {
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "not a sync run");
        return NULL;
    }
    return p;
}

/* releaseSync(ctx): the terminal state was delivered. */
static napi_value js_release_sync(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    sync_ctx *ctx = arg_ctx(env, argv[0]);
    if (ctx) release_engine(ctx);
    return NULL;
}

/* refSync(ctx, keepAlive): whether the run keeps the event loop alive. */
static napi_value js_ref_sync(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2];
    bool keep = false;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    sync_ctx *ctx = arg_ctx(env, argv[0]);
    if (!ctx) return NULL;
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

/* After env_shutdown closed the environment's stores the engine calls none of its runs. */
void sync_env_teardown(env_state *es) {
    pthread_mutex_lock(&g_mu);
    sync_ctx *ctx = g_syncs;
    while (ctx) {
        sync_ctx *next = ctx->next;
        if (ctx->owner == es) {
            ctx->owner = NULL;
            ctx->engine_ref = 0;
            maybe_free(ctx);
        }
        ctx = next;
    }
    pthread_mutex_unlock(&g_mu);
}

napi_value sync_init(napi_env env, napi_value exports) {
    napi_property_descriptor props[] = {
        {"startSync", NULL, js_start_sync, NULL, NULL, NULL, napi_default, NULL},
        {"releaseSync", NULL, js_release_sync, NULL, NULL, NULL, napi_default, NULL},
        {"refSync", NULL, js_ref_sync, NULL, NULL, NULL, napi_default, NULL},
    };
    napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
#define SS_SYNC_OP_NAME(name) #name,
    static const char *const names[] = { SYNC_OPS(SS_SYNC_OP_NAME) };
#undef SS_SYNC_OP_NAME
    return export_numbers(env, exports, "SYNC_OP", names, NULL, S_COUNT);
}
