/* Store calls: each runs on the call lane (src/lane.c) or, when it is busy, as napi async work on
 * the libuv thread pool (never on the JS thread), and settles a promise with JSON text, a number
 * or a boolean; JSON is parsed by the JS layer. */
#include "addon.h"

/* The operations js_call runs; their numbers reach lib/native.js as addon.OP (written only here). */
#define STORE_OPS(X) \
    X(OPEN) X(CLOSE) X(LIST_STORES) X(REMOVE_STORE) X(REMOVE_ALL_STORES) X(DB_SIZE) \
    X(LOAD_STORE_CONFIG) X(REGISTER_SOUP) X(SOUP_EXISTS) X(REMOVE_SOUP) X(CLEAR_SOUP) \
    X(GET_INDEX_SPECS) X(ALTER_SOUP) X(REINDEX_SOUP) X(UPSERT) X(RETRIEVE) X(REMOVE_ENTRIES) \
    X(REMOVE_BY_QUERY) X(QUERY_SOUP) X(SMART_QUERY) X(MOVE_CURSOR) X(CLOSE_CURSOR) \
    X(SET_REMOTE) X(CREATE_SYNC_DOWN) X(CREATE_SYNC_UP) X(GET_SYNC_STATUS) \
    X(GET_SYNC_STATUS_BY_NAME) X(DELETE_SYNC) X(DELETE_SYNC_BY_NAME) X(STOP_SYNCS) \
    X(LOAD_SYNC_CONFIG) X(QUERY_PAGE) X(CHANGE_KEY) X(LIVE_SYNC_STATE) X(STOP_LIVE_SYNC)

enum {
#define SS_OP(name) OP_##name,
    STORE_OPS(SS_OP)
#undef SS_OP
    OP_COUNT
};

enum { OUT_NONE, OUT_TEXT, OUT_NUMBER, OUT_BOOL, OUT_STORE };

typedef struct {
    napi_async_work work;
    napi_deferred deferred;
    env_state *es;
    int op, kind, status;
    store_rec *rec;
    char *s[4];
    int64_t i[2];
    char *out;
    int64_t num;
    syncstore_store *opened;
    int closes; /* OP_CLOSE: this call marked the store closed (the first close) */
    syncstore_error err;
} call_t;

static void fail(call_t *c, int status, const char *message) {
    c->status = status;
    c->err.code = status;
    c->err.retryable = 0;
    snprintf(c->err.message, sizeof c->err.message, "%s", message);
}

static void execute(napi_env env, void *data) {
    (void)env;
    call_t *c = data;
    syncstore_error *e = &c->err;
    syncstore_store *st = NULL;
    if (c->rec) {
        /* A close marked the record when it was made (js_call): it alone goes on. */
        pthread_mutex_lock(&g_mu);
        int closed = c->rec->closed && !c->closes;
        pthread_mutex_unlock(&g_mu);
        if (closed) { fail(c, SYNCSTORE_ERR_STATE, "the store is closed"); return; }
        st = c->rec->store;
    }
    int n = 0;
    switch (c->op) {
    case OP_OPEN: c->status = SS.syncstore_open(c->s[0], c->s[1], &c->opened, e); break;
    case OP_CLOSE: target_abort_store(c->rec); c->status = SS.syncstore_close(st, e); break;
    case OP_LIST_STORES: c->status = SS.syncstore_list_stores(c->s[0], (int)c->i[0], &c->out, e); break;
    case OP_REMOVE_STORE: c->status = SS.syncstore_remove_store(c->s[0], c->s[1], e); break;
    case OP_REMOVE_ALL_STORES: c->status = SS.syncstore_remove_all_stores(c->s[0], (int)c->i[0], e); break;
    case OP_DB_SIZE: c->status = SS.syncstore_database_size(st, &c->num, e); break;
    case OP_LOAD_STORE_CONFIG: c->status = SS.syncstore_load_store_config(st, c->s[0], e); break;
    case OP_REGISTER_SOUP: c->status = SS.syncstore_register_soup(st, c->s[0], c->s[1], e); break;
    case OP_SOUP_EXISTS: c->status = SS.syncstore_soup_exists(st, c->s[0], &n, e); c->num = n; break;
    case OP_REMOVE_SOUP: c->status = SS.syncstore_remove_soup(st, c->s[0], e); break;
    case OP_CLEAR_SOUP: c->status = SS.syncstore_clear_soup(st, c->s[0], e); break;
    case OP_GET_INDEX_SPECS: c->status = SS.syncstore_get_soup_index_specs(st, c->s[0], &c->out, e); break;
    case OP_ALTER_SOUP: c->status = SS.syncstore_alter_soup(st, c->s[0], c->s[1], c->i[0] != 0, e); break;
    case OP_REINDEX_SOUP: c->status = SS.syncstore_reindex_soup(st, c->s[0], c->s[1], e); break;
    case OP_UPSERT:
        /* i[0] = 0 drops the stored entries (the caller does not want them). */
        c->status = SS.syncstore_upsert(st, c->s[0], c->s[1], c->s[2], c->i[0] ? &c->out : NULL, e);
        break;
    case OP_RETRIEVE: c->status = SS.syncstore_retrieve(st, c->s[0], c->s[1], &c->out, e); break;
    case OP_REMOVE_ENTRIES: c->status = SS.syncstore_remove_entries(st, c->s[0], c->s[1], e); break;
    case OP_REMOVE_BY_QUERY: c->status = SS.syncstore_remove_by_query(st, c->s[0], c->s[1], &c->num, e); break;
    case OP_QUERY_SOUP: c->status = SS.syncstore_query_soup(st, c->s[0], c->s[1], &c->out, e); break;
    case OP_SMART_QUERY: c->status = SS.syncstore_run_smart_query(st, c->s[0], &c->out, e); break;
    case OP_MOVE_CURSOR: c->status = SS.syncstore_cursor_move_to_page(st, c->i[0], c->i[1], &c->out, e); break;
    case OP_CLOSE_CURSOR: c->status = SS.syncstore_cursor_close(st, c->i[0], e); break;
    case OP_SET_REMOTE: c->status = SS.syncstore_set_remote(st, c->s[0], e); break;
    case OP_CREATE_SYNC_DOWN:
        c->status = SS.syncstore_create_sync_down(st, c->s[0], c->s[1], c->s[2], c->s[3], &c->num, e);
        break;
    case OP_CREATE_SYNC_UP:
        c->status = SS.syncstore_create_sync_up(st, c->s[0], c->s[1], c->s[2], c->s[3], &c->num, e);
        break;
    case OP_GET_SYNC_STATUS: c->status = SS.syncstore_get_sync_status(st, c->i[0], &c->out, e); break;
    case OP_GET_SYNC_STATUS_BY_NAME: c->status = SS.syncstore_get_sync_status_by_name(st, c->s[0], &c->out, e); break;
    case OP_DELETE_SYNC: c->status = SS.syncstore_delete_sync(st, c->i[0], e); break;
    case OP_DELETE_SYNC_BY_NAME: c->status = SS.syncstore_delete_sync_by_name(st, c->s[0], e); break;
    case OP_STOP_SYNCS: target_abort_store(c->rec); c->status = SS.syncstore_stop_syncs(st, e); break;
    case OP_LOAD_SYNC_CONFIG: c->status = SS.syncstore_load_sync_config(st, c->s[0], e); break;
    case OP_QUERY_PAGE: c->status = SS.syncstore_query_page(st, c->s[0], c->s[1], c->i[0], &c->out, e); break;
    /* s[0] = the new key, NULL decrypts. */
    case OP_CHANGE_KEY: c->status = SS.syncstore_change_key(st, c->s[0], e); break;
    /* Live sync (src/live.c starts it): its state, and its stop (which waits for its thread). */
    case OP_LIVE_SYNC_STATE: c->status = SS.syncstore_get_live_sync_state(st, &c->out, e); break;
    case OP_STOP_LIVE_SYNC: c->status = SS.syncstore_stop_live_sync(st, e); break;
    default: fail(c, SYNCSTORE_ERR_ARGUMENT, "unknown operation"); break;
    }
}

/* Frees argument strings; those that can hold a store key (open's config, change_key's new
 * key) are wiped first. */
static void free_args(int op, char **s) {
    for (int k = 0; k < 4; k++) {
        if (s[k] && (op == OP_OPEN || op == OP_CHANGE_KEY)) explicit_bzero(s[k], strlen(s[k]));
        free(s[k]);
    }
}

static void free_call(call_t *c) {
    if (c->out) SS.syncstore_free(c->out);
    free_args(c->op, c->s);
    free(c);
}

/* A JS string of the library's UTF-8 text: Latin-1 when it is all ASCII (the common case), which
 * V8 copies without decoding. */
static void create_text(napi_env env, const char *text, napi_value *result) {
    /* Every byte's high bit, OR-ed eight bytes at a time: a page of a few hundred bytes. */
    size_t n = strlen(text), k = 0;
    uint64_t high = 0;
    for (; k + 8 <= n; k += 8) {
        uint64_t word;
        memcpy(&word, text + k, 8);
        high |= word;
    }
    for (; k < n; k++) high |= (unsigned char)text[k];
    if (!(high & 0x8080808080808080ULL)) napi_create_string_latin1(env, text, n, result);
    else napi_create_string_utf8(env, text, n, result);
}

static void complete(napi_env env, napi_status napi_st, void *data) {
    call_t *c = data;
    napi_value result = NULL;
    if (napi_st == napi_cancelled) fail(c, SYNCSTORE_ERR_STATE, "the call was cancelled");
    if (c->status == SYNCSTORE_OK && c->op == OP_OPEN) {
        store_rec *rec = calloc(1, sizeof *rec);
        if (!rec) {
            SS.syncstore_close(c->opened, NULL);
            fail(c, SYNCSTORE_ERR_INTERNAL, "out of memory");
        } else {
            rec->store = c->opened;
            rec->owner = c->es;
            pthread_mutex_lock(&g_mu);
            rec->next = c->es->stores;
            c->es->stores = rec;
            pthread_mutex_unlock(&g_mu);
            /* Records live until the environment ends (the cleanup closes them), so a handle
             * never dangles, whatever the JS side does with it. */
            napi_create_external(env, rec, NULL, NULL, &result);
        }
    }
    if (c->status != SYNCSTORE_OK) {
        napi_reject_deferred(env, c->deferred, make_error(env, c->status, c->err.retryable, c->err.message));
    } else {
        if (!result) {
            switch (c->kind) {
            case OUT_TEXT:
                if (c->out) create_text(env, c->out, &result);
                else napi_get_null(env, &result);
                break;
            case OUT_NUMBER: napi_create_int64(env, c->num, &result); break;
            case OUT_BOOL: napi_get_boolean(env, c->num != 0, &result); break;
            default: napi_get_undefined(env, &result); break;
            }
        }
        napi_resolve_deferred(env, c->deferred, result);
    }
    if (c->op == OP_CLOSE && c->closes) watch_store_closed(env, c->rec, c->status == SYNCSTORE_OK);
    if (c->op == OP_CLOSE && c->closes && c->status == SYNCSTORE_OK) live_store_closed(env, c->rec);
    if (c->work) napi_delete_async_work(env, c->work);
    free_call(c);
}

static void lane_run(void *data) { execute(NULL, data); }
static void lane_done(napi_env env, void *data) { complete(env, napi_ok, data); }
static void lane_drop(void *data) { free_call(data); }

static const unsigned char op_kind[OP_COUNT] = {
    [OP_OPEN] = OUT_STORE, [OP_LIST_STORES] = OUT_TEXT, [OP_DB_SIZE] = OUT_NUMBER,
    [OP_SOUP_EXISTS] = OUT_BOOL, [OP_GET_INDEX_SPECS] = OUT_TEXT, [OP_UPSERT] = OUT_TEXT,
    [OP_RETRIEVE] = OUT_TEXT, [OP_REMOVE_BY_QUERY] = OUT_NUMBER, [OP_QUERY_SOUP] = OUT_TEXT,
    [OP_SMART_QUERY] = OUT_TEXT, [OP_MOVE_CURSOR] = OUT_TEXT, [OP_CREATE_SYNC_DOWN] = OUT_NUMBER,
    [OP_CREATE_SYNC_UP] = OUT_NUMBER, [OP_GET_SYNC_STATUS] = OUT_TEXT,
    [OP_GET_SYNC_STATUS_BY_NAME] = OUT_TEXT,
    [OP_QUERY_PAGE] = OUT_TEXT, [OP_LIVE_SYNC_STATE] = OUT_TEXT,
};

/* Operations that take no store handle (their first argument is the root directory). */
static int op_without_store(int op) {
    return op == OP_OPEN || op == OP_LIST_STORES || op == OP_REMOVE_STORE || op == OP_REMOVE_ALL_STORES;
}

/* Whether a close of the handle was made (the record's flag, under the bookkeeping lock). */
static int store_closed(store_rec *rec) {
    pthread_mutex_lock(&g_mu);
    int closed = rec->closed;
    pthread_mutex_unlock(&g_mu);
    return closed;
}

/* storeClosed(handle) -> whether the store is closed (its close was made, or the environment is
 * ending): the JS Store reads it here rather than keeping a copy. */
static napi_value js_store_closed(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value argv[1], result;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    store_rec *rec = argc ? arg_store(env, argv[0]) : NULL;
    if (!rec) return NULL;
    napi_get_boolean(env, store_closed(rec), &result);
    return result;
}

/* call(op, storeOrNull, s0, s1, s2, s3, i0, i1) -> Promise */
static napi_value js_call(napi_env env, napi_callback_info info) {
    size_t argc = 8;
    napi_value argv[8], promise, name;
    env_state *es;
    int32_t op;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    napi_get_instance_data(env, (void **)&es);
    if (!ss_loaded) { throw_error(env, SYNCSTORE_ERR_STATE, "libsyncstore is not loaded"); return NULL; }
    if (argc < 8 || napi_get_value_int32(env, argv[0], &op) != napi_ok || op < 0 || op >= OP_COUNT) {
        throw_error(env, SYNCSTORE_ERR_ARGUMENT, "bad call");
        return NULL;
    }
    call_t *c = calloc(1, sizeof *c);
    if (!c) { throw_error(env, SYNCSTORE_ERR_INTERNAL, "out of memory"); return NULL; }
    c->op = op;
    c->kind = op_kind[op];
    c->es = es;
    int ok = 1;
    if (!op_without_store(op)) ok = (c->rec = arg_store(env, argv[1])) != NULL;
    static const char *what[4] = {"argument 1", "argument 2", "argument 3", "argument 4"};
    for (int k = 0; ok && k < 4; k++) ok = arg_string(env, argv[2 + k], &c->s[k], what[k]);
    for (int k = 0; ok && k < 2; k++) ok = arg_int64(env, argv[6 + k], &c->i[k], "number argument");
    if (ok && op == OP_UPSERT && c->i[0] == 0) c->kind = OUT_NONE;
    if (ok && op == OP_CLOSE) {
        /* The record is the one place a store's closed state lives: closed from the moment the
         * close is made (storeClosed() says so at once), and later calls fail without reaching
         * the library. Only the first close goes on. */
        pthread_mutex_lock(&g_mu);
        c->closes = !c->rec->closed;
        c->rec->closed = 1;
        pthread_mutex_unlock(&g_mu);
    }
    if (!ok || napi_create_promise(env, &c->deferred, &promise) != napi_ok) {
        free_args(op, c->s);
        free(c);
        return NULL;
    }
    /* Close and the stops wait for syncs or threads; they stay off the lane so it never blocks on them. */
    if (op != OP_CLOSE && op != OP_STOP_SYNCS && op != OP_STOP_LIVE_SYNC && lane_submit(es, lane_run, lane_done, lane_drop, c)) return promise;
    napi_create_string_utf8(env, "syncstore", NAPI_AUTO_LENGTH, &name);
    napi_create_async_work(env, NULL, name, execute, complete, c, &c->work);
    napi_queue_async_work(env, c->work);
    return promise;
}

/* queryPageSync(handle, soup, spec, pageIndex) -> the page's JSON text, on the JS thread: a
 * lookup without the lane's two thread handoffs and the promise (Store.findSync). A close is
 * made on this thread, so a store not marked closed here stays open for the whole call. */
static napi_value js_query_page_sync(napi_env env, napi_callback_info info) {
    size_t argc = 4;
    napi_value argv[4], result = NULL;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    if (!ss_loaded) { throw_error(env, SYNCSTORE_ERR_STATE, "libsyncstore is not loaded"); return NULL; }
    if (argc < 4) { throw_error(env, SYNCSTORE_ERR_ARGUMENT, "bad call"); return NULL; }
    store_rec *rec = arg_store(env, argv[0]);
    if (!rec) return NULL;
    if (store_closed(rec)) { throw_error(env, SYNCSTORE_ERR_STATE, "the store is closed"); return NULL; }
    /* A lookup's soup name and spec fit on the stack: no malloc for them. */
    char soup_buf[128], spec_buf[512];
    char *soup = NULL, *spec = NULL, *out = NULL;
    int64_t page = 0;
    if (arg_string_in(env, argv[1], soup_buf, sizeof soup_buf, &soup, "argument 1") &&
        arg_string_in(env, argv[2], spec_buf, sizeof spec_buf, &spec, "argument 2") &&
        arg_int64(env, argv[3], &page, "number argument")) {
        syncstore_error err;
        int status = SS.syncstore_query_page(rec->store, soup, spec, page, &out, &err);
        if (status != SYNCSTORE_OK) napi_throw(env, make_error(env, status, err.retryable, err.message));
        else if (out) create_text(env, out, &result);
        else napi_get_null(env, &result);
    }
    SS.syncstore_free(out);
    if (soup != soup_buf) free(soup);
    if (spec != spec_buf) free(spec);
    return result;
}

napi_value calls_init(napi_env env, napi_value exports) {
    napi_property_descriptor props[] = {
        {"call", NULL, js_call, NULL, NULL, NULL, napi_default, NULL},
        {"queryPageSync", NULL, js_query_page_sync, NULL, NULL, NULL, napi_default, NULL},
        {"storeClosed", NULL, js_store_closed, NULL, NULL, NULL, napi_default, NULL},
    };
    napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
#define SS_OP_NAME(name) #name,
    static const char *const names[] = { STORE_OPS(SS_OP_NAME) };
#undef SS_OP_NAME
    return export_numbers(env, exports, "OP", names, NULL, OP_COUNT);
}
