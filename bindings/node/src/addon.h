/* Shared declarations of the Node-API addon over libsyncstore's C ABI (include/syncstore.h). */
#ifndef SYNCSTORE_NODE_ADDON_H
#define SYNCSTORE_NODE_ADDON_H

#include <node_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "syncstore.h"

/* The library is loaded with dlopen so the path can come from SYNCSTORE_LIB at run time and
 * the addon builds with the header alone. One table per process. */
#define SYNCSTORE_FUNCTIONS(X) \
    X(syncstore_version) X(syncstore_abi_version) X(syncstore_free) X(syncstore_status_name) \
    X(syncstore_open) X(syncstore_close) X(syncstore_list_stores) X(syncstore_remove_store) \
    X(syncstore_remove_all_stores) X(syncstore_database_size) X(syncstore_load_store_config) \
    X(syncstore_register_soup) X(syncstore_soup_exists) X(syncstore_remove_soup) \
    X(syncstore_clear_soup) X(syncstore_get_soup_index_specs) X(syncstore_alter_soup) \
    X(syncstore_reindex_soup) X(syncstore_upsert) X(syncstore_retrieve) \
    X(syncstore_remove_entries) X(syncstore_remove_by_query) X(syncstore_query_soup) \
    X(syncstore_run_smart_query) X(syncstore_query_page) X(syncstore_cursor_move_to_page) X(syncstore_cursor_close) \
    X(syncstore_set_remote) X(syncstore_sync_down) X(syncstore_sync_up) \
    X(syncstore_create_sync_down) X(syncstore_create_sync_up) X(syncstore_resync) \
    X(syncstore_resync_by_name) X(syncstore_clean_resync_ghosts) X(syncstore_get_sync_status) \
    X(syncstore_get_sync_status_by_name) X(syncstore_delete_sync) \
    X(syncstore_delete_sync_by_name) X(syncstore_stop_syncs) X(syncstore_restart_syncs) \
    X(syncstore_wait_sync) X(syncstore_load_sync_config) X(syncstore_register_custom_target) X(syncstore_change_key) \
    X(syncstore_plugin_new) X(syncstore_plugin_set_remote) X(syncstore_plugin_set_listener) \
    X(syncstore_plugin_set_key_provider) X(syncstore_plugin_exec) X(syncstore_plugin_free) \
    X(syncstore_plugin_api) X(syncstore_add_soup_listener) X(syncstore_add_query_listener) \
    X(syncstore_remove_listener) X(syncstore_set_listener_interval) \
    X(syncstore_buffer_notifications) X(syncstore_send_notifications) \
    X(syncstore_start_live_sync) X(syncstore_stop_live_sync) X(syncstore_get_live_sync_state)

/* The library's file name for dlopen, from the header's SYNCSTORE_ABI_VERSION ("libsyncstore.so.1");
 * lib/native.js reads it as addon.SONAME. */
#define SS_STR_(x) #x
#define SS_STR(x) SS_STR_(x)
#define SS_SONAME "libsyncstore.so." SS_STR(SYNCSTORE_ABI_VERSION)

/* The header's status codes by macro name: error names before the library is loaded, and
 * addon.STATUS ({ARGUMENT: 1, ...}) for lib/native.js. Tests/c/check_abi_facts.py checks that the
 * list names every code of the header. */
#define SYNCSTORE_STATUSES(X) \
    X(SYNCSTORE_OK) X(SYNCSTORE_ERR_ARGUMENT) X(SYNCSTORE_ERR_NOT_FOUND) X(SYNCSTORE_ERR_EXISTS) \
    X(SYNCSTORE_ERR_BUSY) X(SYNCSTORE_ERR_NETWORK) X(SYNCSTORE_ERR_AUTH) X(SYNCSTORE_ERR_SERVER) \
    X(SYNCSTORE_ERR_CONFLICT) X(SYNCSTORE_ERR_STORAGE) X(SYNCSTORE_ERR_INTERNAL) X(SYNCSTORE_ERR_STATE)

typedef struct {
#define SS_FIELD(name) __typeof__(name) *name;
    SYNCSTORE_FUNCTIONS(SS_FIELD)
#undef SS_FIELD
} ss_api;

extern ss_api SS;
extern int ss_loaded;

/* One bookkeeping lock for the whole process: it guards the lists below and the thread-safe
 * function pointers that engine threads read. Never held across a call into the engine. */
extern pthread_mutex_t g_mu;

typedef struct store_rec {
    syncstore_store *store;
    int closed;
    struct env_state *owner;
    struct watch_notify *watch; /* src/watch.c: its watches' delivery, made by the first watch */
    struct store_rec *next;
} store_rec;

/* Per Node environment (main thread or a worker thread). */
typedef struct env_state {
    napi_env env;
    int closing; /* set at exit: pending custom target calls fail, stores close */
    store_rec *stores;
    struct lane *lane; /* src/lane.c, started at the first call */
    int lane_failed;
} env_state;

/* The call lane (src/lane.c). lane_submit runs `run(data)` on the lane thread, then
 * `done(env, data)` on the JS thread; returns 0 (nothing queued) when the lane is busy or
 * cannot start, and the caller uses the libuv pool. `drop(data)` frees a call whose completion
 * can no longer be delivered (the environment is going away). JS thread only. */
typedef void (*lane_fn)(void *data);
typedef void (*lane_done_fn)(napi_env env, void *data);
int lane_submit(env_state *es, lane_fn run, lane_done_fn done, lane_fn drop, void *data);

/* Errors: a JS Error with .code (status name), .status (number) and .retryable. */
napi_value make_error(napi_env env, int status, int retryable, const char *message);
void throw_error(napi_env env, int status, const char *message);

/* Sets exports[key] to a frozen object {names[k]: values[k]} (values NULL: k), so numbers the C
 * side switches on are written once, here, and JS reads them (addon.OP, addon.SYNC_OP). */
napi_value export_numbers(napi_env env, napi_value exports, const char *key, const char *const *names,
                          const int *values, size_t count);

/* Argument helpers: a JS string becomes a malloc'd C string; null/undefined become NULL.
 * Returns 0 and throws an ARGUMENT error for another type. */
int arg_string(napi_env env, napi_value v, char **out, const char *what);
/* arg_string into buf (cap bytes) when the string fits there (*out == buf then: not freed), else
 * into malloc'd memory as arg_string does. */
int arg_string_in(napi_env env, napi_value v, char *buf, size_t cap, char **out, const char *what);
int arg_int64(napi_env env, napi_value v, int64_t *out, const char *what);
store_rec *arg_store(napi_env env, napi_value v);

/* Closes every store of the environment (stops syncs, waits for their terminal callbacks)
 * after failing the custom target calls that wait for this environment's JS thread. */
void env_shutdown(env_state *es);

napi_value calls_init(napi_env env, napi_value exports);
napi_value sync_init(napi_env env, napi_value exports);
napi_value target_init(napi_env env, napi_value exports);
void target_abort_calls(env_state *es);
/* Fails the custom target calls waiting for JS on behalf of this handle (close, stop): a
 * promise that never settles must not hang them. */
void target_abort_store(store_rec *rec);
/* Engine worker thread, at each state of a run: notes the handle whose run is on this thread,
 * so the target calls that follow are failed by that handle's close (src/target.c). */
void target_note_run(store_rec *rec);
void sync_env_teardown(env_state *es);
/* The hybrid plugins' dispatcher (src/plugin.c): at exit its stores close like the others. */
napi_value plugin_init(napi_env env, napi_value exports);
void plugin_env_shutdown(env_state *es);
void plugin_env_teardown(env_state *es);
void target_env_teardown(env_state *es);
/* Store watches (src/watch.c): listeners whose notices reach JS on the event loop. */
napi_value watch_init(napi_env env, napi_value exports);
/* JS thread, when the close of a handle completed (close_ok: the library closed it): its
 * watches are gone and their thread-safe function is released. */
void watch_store_closed(napi_env env, store_rec *rec, int close_ok);
void watch_env_teardown(env_state *es);
/* Live sync (src/live.c): its events reach JS on the event loop. */
napi_value live_init(napi_env env, napi_value exports);
/* JS thread, when the close of a handle completed: the live syncs started through it call back
 * no more, and their thread-safe functions are released. */
void live_store_closed(napi_env env, store_rec *rec);
void live_env_teardown(env_state *es);

#define NAPI_OK(call) do { if ((call) != napi_ok) return NULL; } while (0)

#endif
