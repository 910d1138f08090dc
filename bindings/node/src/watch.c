/* Store watches (lib/watch.js): soup and query listeners whose notices reach JS on the event
 * loop. The first watch of a handle makes its delivery: a thread-safe function whose JS function
 * is the Store's dispatcher, and syncstore_buffer_notifications() on the handle. Then the
 * notifier thread only calls `ready` (once until the next send), which posts one item; on the JS
 * thread that item calls syncstore_send_notifications(), and the library calls every pending
 * notice's callback right there, which calls the dispatcher directly: no thread hop per notice,
 * and commits made meanwhile are merged by the library, not queued here.
 *
 * The thread-safe function keeps the process alive only while the JS layer says so (a watch
 * made with keepAlive, or ref()); it is released when the handle's close completes, after which
 * the library calls none of its callbacks. */
#include "addon.h"
#include <stdlib.h>
#include <string.h>

typedef struct watch_notify watch_notify;

typedef struct watch_rec {
    watch_notify *n;
    int64_t id;
    int kind;                        /* 0: soup, 1: query */
    syncstore_listener_token *token; /* under g_mu: set once the listener is added */
    /* JS thread only: */
    int adding;   /* its add is in flight */
    int removing; /* its remove is in flight */
    int dead;     /* removed, failed, or gone with its store: freed when no work is in flight */
    napi_deferred removed; /* a remove asked for while it was being added: settled after it */
    struct watch_rec *next;
} watch_rec;

struct watch_notify {
    store_rec *rec;
    env_state *owner;
    pthread_t js_thread;
    napi_threadsafe_function tsfn; /* under g_mu; NULL once released or finalized */
    int finalized;                 /* under g_mu */
    int buffered;                  /* under g_mu: the handle's notices wait for a send */
    /* JS thread only: */
    int keep, refd, closed;
    napi_env cur_env;  /* during a send: the callbacks call cur_fn directly */
    napi_value cur_fn;
    int64_t next_id;
    watch_rec *watches;
    watch_notify *next;
};

static watch_notify *g_notifies; /* under g_mu; records live until their environment ends */

/* An item for the JS thread: id 0 = "notices are pending: send them"; else one notice. */
typedef struct {
    int64_t id;
    char *text;
} watch_item;

/* ---- library callbacks ---- */

/* Caller holds g_mu. */
static void post(watch_notify *n, watch_item *it) {
    if (!n->tsfn || napi_call_threadsafe_function(n->tsfn, it, napi_tsfn_nonblocking) != napi_ok) {
        free(it->text);
        free(it);
    }
}

/* Notifier thread: a notice became pending on the buffered handle. */
static void on_ready(void *context) {
    watch_notify *n = context;
    watch_item *it = calloc(1, sizeof *it);
    if (!it) return;
    pthread_mutex_lock(&g_mu);
    post(n, it);
    pthread_mutex_unlock(&g_mu);
}

/* JS thread (inside a send or the item's call): calls the dispatcher with (id, notice text). A
 * throw is an uncaught exception, as from any event listener (the dispatcher does not throw). */
static void deliver(napi_env env, napi_value fn, int64_t id, const char *text) {
    napi_handle_scope scope;
    if (napi_open_handle_scope(env, &scope) != napi_ok) return;
    napi_value argv[2], undefined;
    napi_create_int64(env, id, &argv[0]);
    napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &argv[1]);
    napi_get_undefined(env, &undefined);
    if (napi_call_function(env, undefined, fn, 2, argv, NULL) == napi_pending_exception) {
        napi_value error;
        if (napi_get_and_clear_last_exception(env, &error) == napi_ok) napi_fatal_exception(env, error);
    }
    napi_close_handle_scope(env, scope);
}

/* The listener's callback: on the JS thread, during a send (the handle is buffered before its
 * first listener). Any other thread (none is expected) posts a copy. */
static void on_change(const char *change_json, void *context) {
    watch_rec *w = context;
    watch_notify *n = w->n;
    if (!change_json) return;
    if (pthread_equal(pthread_self(), n->js_thread) && n->cur_env) {
        deliver(n->cur_env, n->cur_fn, w->id, change_json);
        return;
    }
    watch_item *it = calloc(1, sizeof *it);
    if (!it) return;
    it->id = w->id;
    it->text = strdup(change_json);
    if (!it->text) { free(it); return; }
    pthread_mutex_lock(&g_mu);
    post(n, it);
    pthread_mutex_unlock(&g_mu);
}

/* ---- JS thread ---- */

static void call_js(napi_env env, napi_value fn, void *context, void *data) {
    watch_notify *n = context;
    watch_item *it = data;
    if (env && fn) {
        if (it->id != 0) {
            deliver(env, fn, it->id, it->text);
        } else {
            pthread_mutex_lock(&g_mu);
            int closed = n->rec->closed;
            pthread_mutex_unlock(&g_mu);
            if (!closed) {
                n->cur_env = env;
                n->cur_fn = fn;
                int64_t sent = 0;
                /* A closing handle answers STATE: its pending notices are dropped. */
                SS.syncstore_send_notifications(n->rec->store, &sent, NULL);
                n->cur_env = NULL;
                n->cur_fn = NULL;
            }
        }
    }
    free(it->text);
    free(it);
}

static void tsfn_finalize(napi_env env, void *data, void *hint) {
    (void)env; (void)hint;
    watch_notify *n = data;
    pthread_mutex_lock(&g_mu);
    n->tsfn = NULL;
    n->finalized = 1;
    pthread_mutex_unlock(&g_mu);
}

static void update_ref(napi_env env, watch_notify *n) {
    int want = n->keep > 0 && !n->closed;
    pthread_mutex_lock(&g_mu);
    napi_threadsafe_function tsfn = n->tsfn;
    pthread_mutex_unlock(&g_mu);
    if (!tsfn || want == n->refd) return;
    n->refd = want;
    if (want) napi_ref_threadsafe_function(env, tsfn);
    else napi_unref_threadsafe_function(env, tsfn);
}

static void unlink_watch(watch_notify *n, watch_rec *w) {
    for (watch_rec **p = &n->watches; *p; p = &(*p)->next)
        if (*p == w) { *p = w->next; break; }
}

static void maybe_free(watch_rec *w) {
    if (!w->dead || w->adding || w->removing) return;
    unlink_watch(w->n, w);
    free(w);
}

static watch_rec *find_watch(watch_notify *n, int64_t id) {
    for (watch_rec *w = n ? n->watches : NULL; w; w = w->next)
        if (w->id == id) return w;
    return NULL;
}

/* The store's delivery, made at its first watch. */
static watch_notify *notify_of(napi_env env, env_state *es, store_rec *rec, napi_value dispatcher) {
    if (rec->watch) return rec->watch;
    watch_notify *n = calloc(1, sizeof *n);
    if (!n) { throw_error(env, SYNCSTORE_ERR_INTERNAL, "out of memory"); return NULL; }
    napi_value name;
    napi_create_string_utf8(env, "syncstore-watch", NAPI_AUTO_LENGTH, &name);
    if (napi_create_threadsafe_function(env, dispatcher, NULL, name, 0, 1, n, tsfn_finalize, n, call_js, &n->tsfn) != napi_ok) {
        free(n);
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "the notice dispatcher must be a function");
        return NULL;
    }
    napi_unref_threadsafe_function(env, n->tsfn); /* a watch alone does not keep the process alive */
    n->rec = rec;
    n->owner = es;
    n->js_thread = pthread_self();
    n->next_id = 1;
    pthread_mutex_lock(&g_mu);
    n->next = g_notifies;
    g_notifies = n;
    rec->watch = n;
    pthread_mutex_unlock(&g_mu);
    return n;
}

/* ---- add ---- */

typedef struct {
    napi_async_work work;
    napi_deferred deferred;
    watch_rec *w;
    char *text;
    int64_t interval_ms;
    int status;
    syncstore_error err;
} add_call;

static void add_execute(napi_env env, void *data) {
    (void)env;
    add_call *c = data;
    watch_rec *w = c->w;
    watch_notify *n = w->n;
    syncstore_error *e = &c->err;
    pthread_mutex_lock(&g_mu);
    int closed = n->rec->closed, buffered = n->buffered;
    pthread_mutex_unlock(&g_mu);
    if (closed) {
        c->status = e->code = SYNCSTORE_ERR_STATE;
        snprintf(e->message, sizeof e->message, "the store is closed");
        return;
    }
    syncstore_store *st = n->rec->store;
    /* Buffered before the first listener, so not even a query's first notice is called on the
     * notifier thread. Two first adds may both do it: the second call replaces the same. */
    if (!buffered) {
        c->status = SS.syncstore_buffer_notifications(st, on_ready, n, e);
        if (c->status != SYNCSTORE_OK) return;
        pthread_mutex_lock(&g_mu);
        n->buffered = 1;
        pthread_mutex_unlock(&g_mu);
    }
    syncstore_listener_token *token = NULL;
    if (w->kind == 0) c->status = SS.syncstore_add_soup_listener(st, c->text, on_change, w, &token, e);
    else c->status = SS.syncstore_add_query_listener(st, c->text, on_change, w, &token, e);
    if (c->status != SYNCSTORE_OK) return;
    if (c->interval_ms > 0) {
        /* Set after the add: a commit made in between is told without the interval. */
        c->status = SS.syncstore_set_listener_interval(st, token, c->interval_ms, e);
        if (c->status != SYNCSTORE_OK) {
            SS.syncstore_remove_listener(st, token, NULL);
            return;
        }
    }
    pthread_mutex_lock(&g_mu);
    w->token = token;
    pthread_mutex_unlock(&g_mu);
}

static void start_remove(napi_env env, watch_rec *w, napi_deferred deferred);

static void add_complete(napi_env env, napi_status napi_st, void *data) {
    add_call *c = data;
    watch_rec *w = c->w;
    w->adding = 0;
    if (napi_st == napi_cancelled && c->status == SYNCSTORE_OK) {
        c->status = SYNCSTORE_ERR_STATE;
        snprintf(c->err.message, sizeof c->err.message, "the call was cancelled");
    }
    napi_value undefined;
    napi_get_undefined(env, &undefined);
    napi_deferred removed = w->removed;
    w->removed = NULL;
    if (c->status != SYNCSTORE_OK) {
        w->dead = 1;
        napi_reject_deferred(env, c->deferred, make_error(env, c->status, c->err.retryable, c->err.message));
        if (removed) napi_resolve_deferred(env, removed, undefined);
    } else {
        napi_resolve_deferred(env, c->deferred, undefined);
        /* Removed while it was being added: remove it now (the remove's promise waits for it). */
        if (w->dead) start_remove(env, w, removed);
        else if (removed) napi_resolve_deferred(env, removed, undefined);
    }
    maybe_free(w);
    free(c->text);
    napi_delete_async_work(env, c->work);
    free(c);
}

/* watchAdd(handle, kind, text, intervalMs, dispatcher) -> [id, Promise<void>]: kind 0 listens to
 * the soup `text` (null: every soup), kind 1 to the query spec JSON `text`. The dispatcher (the
 * store's first watch sets it) is called (id, noticeText) on the JS thread. */
static napi_value js_watch_add(napi_env env, napi_callback_info info) {
    size_t argc = 5;
    napi_value argv[5], promise, name, pair, id;
    env_state *es;
    int32_t kind = -1;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    napi_get_instance_data(env, (void **)&es);
    if (!ss_loaded) { throw_error(env, SYNCSTORE_ERR_STATE, "libsyncstore is not loaded"); return NULL; }
    if (argc < 5 || napi_get_value_int32(env, argv[1], &kind) != napi_ok || (kind != 0 && kind != 1)) {
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "bad watch call");
        return NULL;
    }
    store_rec *rec = arg_store(env, argv[0]);
    if (!rec) return NULL;
    add_call *c = calloc(1, sizeof *c);
    if (!c) { throw_error(env, SYNCSTORE_ERR_INTERNAL, "out of memory"); return NULL; }
    if (!arg_string(env, argv[2], &c->text, kind ? "query spec" : "soup name") ||
        !arg_int64(env, argv[3], &c->interval_ms, "minIntervalMs")) {
        free(c->text);
        free(c);
        return NULL;
    }
    if (kind == 1 && !c->text) {
        free(c);
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "a query watch needs a query spec");
        return NULL;
    }
    watch_notify *n = notify_of(env, es, rec, argv[4]);
    watch_rec *w = n ? calloc(1, sizeof *w) : NULL;
    if (!w) {
        free(c->text);
        free(c);
        if (n) throw_error(env, SYNCSTORE_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    w->n = n;
    w->kind = kind;
    w->id = n->next_id++;
    w->adding = 1;
    w->next = n->watches;
    n->watches = w;
    c->w = w;
    napi_create_promise(env, &c->deferred, &promise);
    napi_create_string_utf8(env, "syncstore-watch-add", NAPI_AUTO_LENGTH, &name);
    napi_create_async_work(env, NULL, name, add_execute, add_complete, c, &c->work);
    napi_queue_async_work(env, c->work);
    napi_create_int64(env, w->id, &id);
    napi_create_array_with_length(env, 2, &pair);
    napi_set_element(env, pair, 0, id);
    napi_set_element(env, pair, 1, promise);
    return pair;
}

/* ---- remove ---- */

typedef struct {
    napi_async_work work;
    napi_deferred deferred; /* NULL: nobody waits */
    watch_rec *w;
    syncstore_listener_token *token;
} remove_call;

static void remove_execute(napi_env env, void *data) {
    (void)env;
    remove_call *c = data;
    pthread_mutex_lock(&g_mu);
    int closed = c->w->n->rec->closed;
    pthread_mutex_unlock(&g_mu);
    /* A closed (or closing) handle removes its listeners itself; STATE there is no failure. When
     * this returns no callback of the listener runs or will run. */
    if (!closed && c->token) SS.syncstore_remove_listener(c->w->n->rec->store, c->token, NULL);
}

static void remove_complete(napi_env env, napi_status napi_st, void *data) {
    (void)napi_st;
    remove_call *c = data;
    c->w->removing = 0;
    maybe_free(c->w);
    if (c->deferred) {
        napi_value undefined;
        napi_get_undefined(env, &undefined);
        napi_resolve_deferred(env, c->deferred, undefined);
    }
    napi_delete_async_work(env, c->work);
    free(c);
}

/* Off the JS thread: a remove waits for a callback of the listener in progress. */
static void start_remove(napi_env env, watch_rec *w, napi_deferred deferred) {
    napi_value name, undefined;
    remove_call *c = calloc(1, sizeof *c);
    if (!c) { /* the listener stays until its handle closes */
        napi_get_undefined(env, &undefined);
        if (deferred) napi_resolve_deferred(env, deferred, undefined);
        return;
    }
    pthread_mutex_lock(&g_mu);
    c->token = w->token;
    w->token = NULL;
    pthread_mutex_unlock(&g_mu);
    c->w = w;
    c->deferred = deferred;
    w->removing = 1;
    napi_create_string_utf8(env, "syncstore-watch-remove", NAPI_AUTO_LENGTH, &name);
    napi_create_async_work(env, NULL, name, remove_execute, remove_complete, c, &c->work);
    napi_queue_async_work(env, c->work);
}

/* watchRemove(handle, id) -> Promise<void>: resolves when no notice of the watch will come. */
static napi_value js_watch_remove(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2], promise, undefined;
    int64_t id = 0;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    store_rec *rec = argc == 2 ? arg_store(env, argv[0]) : NULL;
    if (!rec || !arg_int64(env, argv[1], &id, "watch id")) return NULL;
    napi_deferred deferred;
    napi_create_promise(env, &deferred, &promise);
    watch_rec *w = find_watch(rec->watch, id);
    napi_get_undefined(env, &undefined);
    if (!w || w->dead || w->removing) {
        napi_resolve_deferred(env, deferred, undefined);
        return promise;
    }
    w->dead = 1;
    if (w->adding) { /* add_complete removes it, then settles this */
        w->removed = deferred;
        return promise;
    }
    if (rec->watch->closed) { /* a closed store has no listener left */
        napi_resolve_deferred(env, deferred, undefined);
        maybe_free(w);
        return promise;
    }
    start_remove(env, w, deferred);
    return promise;
}

/* watchRef(handle, keep): whether the store's watches keep the process alive (the JS layer
 * counts the watches that want it). */
static napi_value js_watch_ref(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2];
    bool keep = false;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    store_rec *rec = argc == 2 ? arg_store(env, argv[0]) : NULL;
    if (!rec) return NULL;
    napi_get_value_bool(env, argv[1], &keep);
    if (rec->watch) {
        rec->watch->keep = keep;
        update_ref(env, rec->watch);
    }
    return NULL;
}

/* watchBuffered(handle) -> whether the handle's notices are buffered (sent on the JS thread);
 * null before its first watch. For the tests. */
static napi_value js_watch_buffered(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1], result;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    store_rec *rec = argc == 1 ? arg_store(env, argv[0]) : NULL;
    if (!rec) return NULL;
    if (!rec->watch) { napi_get_null(env, &result); return result; }
    pthread_mutex_lock(&g_mu);
    int buffered = rec->watch->buffered;
    pthread_mutex_unlock(&g_mu);
    napi_get_boolean(env, buffered != 0, &result);
    return result;
}

void watch_store_closed(napi_env env, store_rec *rec, int close_ok) {
    watch_notify *n = rec->watch;
    if (!n || n->closed) return;
    n->closed = 1;
    for (watch_rec *w = n->watches, *next; w; w = next) {
        next = w->next;
        w->dead = 1;
        maybe_free(w);
    }
    update_ref(env, n);
    /* After a completed close the library calls none of the handle's callbacks: the function
     * can go. A failed close leaves it (unref'd): callbacks might still come. */
    if (!close_ok) return;
    pthread_mutex_lock(&g_mu);
    napi_threadsafe_function tsfn = n->tsfn;
    n->tsfn = NULL;
    pthread_mutex_unlock(&g_mu);
    if (tsfn) napi_release_threadsafe_function(tsfn, napi_tsfn_release);
}

/* After env_shutdown closed the environment's stores: their records go, but for those whose
 * thread-safe function is still to be finalized (its finalizer uses the record: it stays). */
void watch_env_teardown(env_state *es) {
    pthread_mutex_lock(&g_mu);
    for (watch_notify **p = &g_notifies; *p;) {
        watch_notify *n = *p;
        if (n->owner == es) {
            n->rec->watch = NULL;
            for (watch_rec *w = n->watches, *next; w; w = next) { next = w->next; free(w); }
            n->watches = NULL;
        }
        if (n->owner == es && n->finalized) { *p = n->next; free(n); }
        else p = &n->next;
    }
    pthread_mutex_unlock(&g_mu);
}

napi_value watch_init(napi_env env, napi_value exports) {
    napi_property_descriptor props[] = {
        {"watchAdd", NULL, js_watch_add, NULL, NULL, NULL, napi_default, NULL},
        {"watchRemove", NULL, js_watch_remove, NULL, NULL, NULL, napi_default, NULL},
        {"watchRef", NULL, js_watch_ref, NULL, NULL, NULL, napi_default, NULL},
        {"watchBuffered", NULL, js_watch_buffered, NULL, NULL, NULL, napi_default, NULL},
    };
    napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
    return exports;
}
