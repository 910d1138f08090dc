/* Section 6 of bench-sync: a sync at M records: reSync with 1% changed on the server,
 * cleanResyncGhosts with 1% deleted, and queries on the big soup against sqlite3 alone. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync_bench.h"

/* Opens the store a previous child made in DIR (not wiped), with the remote. */
static syncstore_store *engine_reopen(const char *dir, const char *url, const char *token) {
    syncstore_error err;
    syncstore_store *store = NULL;
    const char *config = getenv(STORE_CONFIG_ENV);
    check(syncstore_open(dir, config && *config ? config : "{\"storeName\":\"bench\"}", &store, &err), "open", &err);
    if (url) {
        json_t *remote = json_pack("{s:s,s:s}", "instanceUrl", url, "accessToken", token);
        char *text = json_dumps(remote, JSON_COMPACT);
        check(syncstore_set_remote(store, text, &err), "set_remote", &err);
        free(text);
        json_decref(remote);
    }
    return store;
}

/* engine-resync URL TOKEN DIR NAME [warm]: one reSync of the named sync in the store left in
 * DIR. warm: as in an app that synced this soup before in the same process, a sync down that
 * fetches nothing runs first, untimed (the first sync down of a process scans the soup for
 * creates in flight; later ones skip the scan while none is). */
int engine_resync(char **argv, int warm) {
    syncstore_store *store = engine_reopen(argv[2], argv[0], argv[1]);
    syncstore_error err;
    int64_t id = 0;
    if (warm) {
        char *none = soql_target("SELECT Id, LastName FROM Contact WHERE LastName = 'bench-none'");
        check(syncstore_sync_down(store, none, "contacts", NULL, NULL, NULL, NULL, &id, &err), "sync_down", &err);
        wait_done(store, id, "warm-up sync down");
        free(none);
    }
    double c0 = cpu_self(), t0 = now_s();
    check(syncstore_resync_by_name(store, argv[3], NULL, NULL, &id, &err), "resync", &err);
    char *out = NULL;
    check(syncstore_wait_sync(store, id, -1, &out, &err), "wait_sync", &err);
    double elapsed = now_s() - t0, cpu = cpu_self() - c0;
    json_t *state = json_loads(out, 0, NULL);
    const char *status = json_string_value(json_object_get(state, "status"));
    if (!status || strcmp(status, "DONE")) fail("resync did not end DONE", out);
    long long fetched = json_integer_value(json_object_get(state, "totalSize"));
    json_decref(state);
    syncstore_free(out);
    long long n = count_where(store, NULL);
    check(syncstore_close(store, &err), "close", &err);
    printf("records=%lld seconds=%.6f fetched=%lld sync_cpu=%.6f\n", n, elapsed, fetched, cpu);
    return 0;
}

typedef struct { pthread_mutex_t lock; pthread_cond_t cond; char *final; } ghost_wait;

static void ghost_callback(const char *state_json, void *context) {
    ghost_wait *w = context;
    json_t *state = json_loads(state_json, 0, NULL);
    const char *status = json_string_value(json_object_get(state, "status"));
    if (status && strcmp(status, "RUNNING") != 0) {
        pthread_mutex_lock(&w->lock);
        w->final = strdup(state_json);
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
    }
    json_decref(state);
}

/* engine-ghosts URL TOKEN DIR NAME: cleanResyncGhosts of the named sync; peak RSS is this
 * process's (no sync down ran in it). */
int engine_ghosts(char **argv) {
    syncstore_store *store = engine_reopen(argv[2], argv[0], argv[1]);
    syncstore_error err;
    char *out = NULL;
    check(syncstore_get_sync_status_by_name(store, argv[3], &out, &err), "sync status", &err);
    json_t *state = json_loads(out, 0, NULL);
    int64_t id = json_integer_value(json_object_get(state, "_soupEntryId"));
    json_decref(state);
    syncstore_free(out);
    long long before = count_where(store, NULL);
    long hwm_open = vm_hwm_kb();
    ghost_wait w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL};
    double c0 = cpu_self(), t0 = now_s();
    check(syncstore_clean_resync_ghosts(store, id, ghost_callback, &w, &err), "clean_resync_ghosts", &err);
    pthread_mutex_lock(&w.lock);
    while (!w.final) pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    double elapsed = now_s() - t0, cpu = cpu_self() - c0;
    state = json_loads(w.final, 0, NULL);
    if (strcmp(json_string_value(json_object_get(state, "status")), "DONE")) fail("cleanResyncGhosts did not end DONE", w.final);
    long long removed = json_integer_value(json_object_get(state, "removed"));
    json_decref(state);
    long long after = count_where(store, NULL);
    check(syncstore_close(store, &err), "close", &err);
    printf("records=%lld seconds=%.6f removed=%lld before=%lld hwm_open_kb=%ld cpu=%.6f\n", after, elapsed, removed, before,
           hwm_open, cpu);
    return 0;
}

/* The engine's table and index column of `path` in soup "contacts", read from its catalog. */
static void soup_column(sqlite3 *db, const char *path, char *table, size_t tsize, char *column, size_t csize) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT a.id, m.slot FROM soup_attrs a JOIN soup_index_map m ON m.soupName = a.soupName "
                               "WHERE a.soupName = 'contacts' AND m.path = ?", -1, &s, NULL) != SQLITE_OK)
        fail("catalog", sqlite3_errmsg(db));
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_ROW) fail("catalog: no index on", path);
    snprintf(table, tsize, "TABLE_%lld", (long long)sqlite3_column_int64(s, 0));
    snprintf(column, csize, "TABLE_%lld_%lld", (long long)sqlite3_column_int64(s, 0), (long long)sqlite3_column_int64(s, 1));
    sqlite3_finalize(s);
}

/* engine-queries DIR: on the soup left in DIR, an exact query on Id (1000 Ids, one page each)
 * and a Smart SQL aggregate (entries per LastName, top 10), through the engine, then the same
 * SQL on the file with sqlite3 alone (a connection of its own, statements prepared once). */
int engine_queries(char **argv) {
    const char *dir = argv[0];
    syncstore_store *store = engine_reopen(dir, NULL, NULL);
    syncstore_error err;
    char *out = NULL, ids_spec[256];
    long long n = count_where(store, NULL);
    /* About 1000 Ids spread over the soup. */
    snprintf(ids_spec, sizeof ids_spec, "{\"queryType\":\"smart\",\"smartSql\":\"select {contacts:Id} from {contacts} "
             "where {contacts:_soupEntryId} %% %lld = 0\",\"pageSize\":1000}", n / 1000 > 1 ? n / 1000 : 1);
    check(syncstore_query_page(store, NULL, ids_spec, 0, &out, &err), "ids", &err);
    json_t *rows = json_loads(out, 0, NULL);
    syncstore_free(out);
    size_t nids = json_array_size(rows);
    if (!nids) fail("queries", "no entries");
    char **specs = calloc(nids, sizeof *specs);
    for (size_t i = 0; i < nids; i++) {
        json_t *spec = json_pack("{s:s,s:s,s:O,s:i}", "queryType", "exact", "indexPath", "Id", "matchKey",
                                 json_array_get(json_array_get(rows, i), 0), "pageSize", 10);
        specs[i] = json_dumps(spec, JSON_COMPACT);
        json_decref(spec);
    }
    double t0 = now_s();
    for (size_t i = 0; i < nids; i++) timed_read(store, specs[i], NULL);
    double exact = (now_s() - t0) / (double)nids;
    const char *agg = "{\"queryType\":\"smart\",\"smartSql\":\"select {contacts:LastName}, count(*) from {contacts} "
                      "group by {contacts:LastName} order by count(*) desc, {contacts:LastName} limit 10\",\"pageSize\":10}";
    double best_agg = 1e9;
    char *engine_top = NULL;
    for (int r = 0; r < 3; r++) {
        t0 = now_s();
        check(syncstore_query_page(store, NULL, agg, 0, &out, &err), "aggregate", &err);
        double s = now_s() - t0;
        if (s < best_agg) best_agg = s;
        free(engine_top);
        engine_top = strdup(out);
        syncstore_free(out);
    }
    check(syncstore_close(store, &err), "close", &err);

    /* sqlite3 alone, on the same file. */
    char path[4096], table[64], id_col[96], last_col[96], sql[1024];
    snprintf(path, sizeof path, "%s/user/bench.db", dir);  /* StoreRegistry: ROOT/user/NAME.db */
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) fail("sqlite3 open", path);
    soup_column(db, "Id", table, sizeof table, id_col, sizeof id_col);
    soup_column(db, "LastName", table, sizeof table, last_col, sizeof last_col);
    sqlite3_stmt *exact_stmt = NULL, *agg_stmt = NULL;
    snprintf(sql, sizeof sql, "SELECT soup FROM %s WHERE %s = ? ORDER BY %s LIMIT 10", table, id_col, id_col);
    if (sqlite3_prepare_v2(db, sql, -1, &exact_stmt, NULL) != SQLITE_OK) fail("prepare", sqlite3_errmsg(db));
    snprintf(sql, sizeof sql, "SELECT %s, count(*) FROM %s GROUP BY %s ORDER BY count(*) DESC, %s LIMIT 10", last_col, table,
             last_col, last_col);
    if (sqlite3_prepare_v2(db, sql, -1, &agg_stmt, NULL) != SQLITE_OK) fail("prepare", sqlite3_errmsg(db));
    t0 = now_s();
    size_t bytes = 0;
    for (size_t i = 0; i < nids; i++) {
        sqlite3_bind_text(exact_stmt, 1, json_string_value(json_array_get(json_array_get(rows, i), 0)), -1, SQLITE_STATIC);
        while (sqlite3_step(exact_stmt) == SQLITE_ROW) {
            char *copy = strdup((const char *)sqlite3_column_text(exact_stmt, 0));
            bytes += strlen(copy);
            free(copy);
        }
        sqlite3_reset(exact_stmt);
    }
    double exact_sqlite = (now_s() - t0) / (double)nids;
    double best_agg_sqlite = 1e9;
    long long top = 0;
    for (int r = 0; r < 3; r++) {
        t0 = now_s();
        for (int k = 0; sqlite3_step(agg_stmt) == SQLITE_ROW; k++) if (!k) top = sqlite3_column_int64(agg_stmt, 1);
        sqlite3_reset(agg_stmt);
        double s = now_s() - t0;
        if (s < best_agg_sqlite) best_agg_sqlite = s;
    }
    sqlite3_finalize(exact_stmt);
    sqlite3_finalize(agg_stmt);
    sqlite3_close(db);
    /* Both must have found the same largest group. */
    json_t *engine_rows = json_loads(engine_top, 0, NULL);
    long long engine_first = json_integer_value(json_array_get(json_array_get(engine_rows, 0), 1));
    json_decref(engine_rows);
    free(engine_top);
    if (engine_first != top || bytes == 0) fail("queries", "the engine and sqlite3 disagree on the aggregate");
    printf("records=%lld seconds=%.6f exact_ms=%.4f exact_sqlite_ms=%.4f agg_s=%.4f agg_sqlite_s=%.4f ids=%zu\n", n, exact,
           exact * 1000, exact_sqlite * 1000, best_agg, best_agg_sqlite, nids);
    json_decref(rows);
    return 0;
}

/* Changes (Title = tag) or deletes ids[from, from+count) on the server, 200 per request. */
static void change_on_server(const devserver *server, json_t *ids, size_t from, size_t count, const char *tag) {
    for (size_t at = from; at < from + count; at += 200) {
        size_t end = at + 200 < from + count ? at + 200 : from + count;
        long status = 0;
        json_t *answer;
        if (tag) {
            json_t *records = json_array();
            for (size_t i = at; i < end; i++)
                json_array_append_new(records, json_pack("{s:{s:s},s:O,s:s}", "attributes", "type", "Contact", "id",
                                                         json_array_get(ids, i), "Title", tag));
            json_t *body = json_pack("{s:b,s:o}", "allOrNone", 1, "records", records);
            char *text = json_dumps(body, JSON_COMPACT);
            answer = devserver_call(server, "PATCH", "composite/sobjects", text, &status);
            free(text);
            json_decref(body);
        } else {
            char path[8192] = "composite/sobjects?allOrNone=true&ids=";
            for (size_t i = at; i < end; i++)
                snprintf(path + strlen(path), sizeof path - strlen(path), "%s%s", i > at ? "," : "", json_string_value(json_array_get(ids, i)));
            answer = devserver_call(server, "DELETE", path, NULL, &status);
        }
        if (status != 200) fail(tag ? "update on the server" : "delete on the server", json_dumps(answer, 0));
        json_decref(answer);
    }
}

/* reSync with 1% changed, cleanResyncGhosts with 1% deleted, queries: on M records. */
scale_results bench_scale(const options *o) {
    scale_results d;
    memset(&d, 0, sizeof d);
    long long m = o->scale_records, pct = m / 100;
    d.records = m; d.changed = pct; d.deleted = pct;
    d.full.name = "full sync down (named)"; d.resync.name = "reSync, 1% changed on the server";
    d.resync_warm.name = "  the same, after a sync down in that process";
    d.resync_fetch.name = "  fetch only of the changed records"; d.ghosts.name = "cleanResyncGhosts, 1% deleted since the last";
    d.ghosts_full.name = "cleanResyncGhosts, first (full comparison)";
    d.ids_fetch.name = "  fetch only of the remaining Ids"; d.queries.name = "exact query (per query)";
    char seed[128], dir[2048], soql[256];
    snprintf(seed, sizeof seed, "Account=1000,Contact=%lld", m);
    static devserver srv;
    start_server(&srv, o->devserver, seed, NULL, NULL, NULL);
    json_t *ids = server_ids(&srv, 3 * pct);
    snprintf(dir, sizeof dir, "%s/engine-scale", o->work);
    setenv(SYNC_NAME_ENV, "bench", 1);
    char *down_argv[] = {self_path, "engine-down", srv.url, DEVSERVER_TOKEN, dir, "-", SOQL, NULL};
    add(&d.full, run_child(down_argv), m);
    unsetenv(SYNC_NAME_ENV);
    print_series(&d.full);

    double t0 = now_s();
    change_on_server(&srv, ids, 0, (size_t)pct, "resync1pct");
    printf("  %lld records changed on the server in %.1f s\n", pct, now_s() - t0);
    char *resync_argv[] = {self_path, "engine-resync", srv.url, DEVSERVER_TOKEN, dir, "bench", NULL};
    child_result rr = run_child(resync_argv);
    add(&d.resync, rr, m);
    d.fetched = (long long)field(rr.out, "fetched");
    print_series(&d.resync);
    printf("    records fetched by the reSync: %lld (changed: %lld)\n", d.fetched, pct);
    snprintf(soql, sizeof soql, "SELECT Id, FirstName, LastName, Email, Phone, Title, AccountId, MailingCity, LastModifiedDate "
             "FROM Contact WHERE Title = 'resync1pct'");
    char fetch_db[2048];
    snprintf(fetch_db, sizeof fetch_db, "%s/unused.db", o->work);
    char *rf_argv[] = {baseline_path, srv.url, DEVSERVER_TOKEN, fetch_db, "--fetch-only", "--soql", soql, NULL};
    add(&d.resync_fetch, run_child(rf_argv), pct);
    print_series(&d.resync_fetch);
    /* Another 1% (the records after the ghosts' slice), reSynced by a process that synced before. */
    change_on_server(&srv, ids, (size_t)(2 * pct), (size_t)pct, "resyncwarm");
    char *warm_argv[] = {self_path, "engine-resync", srv.url, DEVSERVER_TOKEN, dir, "bench", "warm", NULL};
    add(&d.resync_warm, run_child(warm_argv), m);
    print_series(&d.resync_warm);

    /* The first clean compares every id (and sets the sync's mark); the next one, after 1% is
     * deleted, asks the server only for the records deleted since (docs/sync.md#ghosts). */
    char *ghost_argv[] = {self_path, "engine-ghosts", srv.url, DEVSERVER_TOKEN, dir, "bench", NULL};
    add(&d.ghosts_full, run_child(ghost_argv), m);
    print_series(&d.ghosts_full);
    t0 = now_s();
    change_on_server(&srv, ids, (size_t)pct, (size_t)pct, NULL);
    printf("  %lld records deleted on the server in %.1f s\n", pct, now_s() - t0);
    child_result rg = run_child(ghost_argv);
    add(&d.ghosts, rg, m - pct);
    d.removed = (long long)field(rg.out, "removed");
    print_series(&d.ghosts);
    printf("    removed %lld local entries (deleted on the server: %lld); RSS after opening the store %.1f MB\n", d.removed, pct,
           field(rg.out, "hwm_open_kb") / 1024);
    char *if_argv[] = {baseline_path, srv.url, DEVSERVER_TOKEN, fetch_db, "--fetch-only", "--soql", "SELECT Id FROM Contact", NULL};
    add(&d.ids_fetch, run_child(if_argv), m - pct);
    print_series(&d.ids_fetch);
    stop_server(&srv);
    json_decref(ids);

    char *q_argv[] = {self_path, "engine-queries", dir, NULL};
    child_result rq = run_child(q_argv);
    add(&d.queries, rq, m - pct);
    d.exact_ms = field(rq.out, "exact_ms");
    d.exact_sqlite_ms = field(rq.out, "exact_sqlite_ms");
    d.agg_s = field(rq.out, "agg_s");
    d.agg_sqlite_s = field(rq.out, "agg_sqlite_s");
    printf("  exact query on Id, %lld-entry soup: engine %.3f ms, sqlite3 alone %.3f ms (mean of %.0f)\n", m - pct, d.exact_ms,
           d.exact_sqlite_ms, field(rq.out, "ids"));
    printf("  Smart SQL aggregate (count per LastName, top 10): engine %.1f ms, sqlite3 alone %.1f ms (best of 3)\n",
           d.agg_s * 1000, d.agg_sqlite_s * 1000);
    char command[4200];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0) fprintf(stderr, "bench-sync: could not remove %s\n", dir);
    d.done = 1;
    return d;
}

/* The summary's lines of section 6. */
void scale_summary(const scale_results *s) {
    char value[64];
    if (s->done) {
        char figure[96];
        snprintf(figure, sizeof figure, "reSync, %lld of %lld changed: reSync / full sync", s->changed, s->records);
        printf("%-58s %-22s %-16s\n", figure,
               (snprintf(value, sizeof value, "%.2f%% (%.2f s / %.2f s)", 100 * s->resync.best / s->full.best, s->resync.best,
                         s->full.best), value), "~1% (proportional)");
        printf("%-58s %-22s\n", "  fetch only of the changed records",
               (snprintf(value, sizeof value, "%.2f s", s->resync_fetch.best), value));
        printf("%-58s %-22s\n", "  reSync after a sync down in its process / full sync",
               (snprintf(value, sizeof value, "%.2f%% (%.2f s)", 100 * s->resync_warm.best / s->full.best, s->resync_warm.best), value));
        snprintf(figure, sizeof figure, "cleanResyncGhosts, %lld local / %lld remote", s->records, s->records - s->deleted);
        printf("%-58s %-22s\n", figure,
               (snprintf(value, sizeof value, "%.2f s, peak RSS %.0f MB, removed %lld", s->ghosts.best, s->ghosts.maxrss_kb / 1024.0,
                         s->removed), value));
        printf("%-58s %-22s\n", "  the first clean (nothing deleted, every id compared)",
               (snprintf(value, sizeof value, "%.2f s, peak RSS %.0f MB", s->ghosts_full.best, s->ghosts_full.maxrss_kb / 1024.0), value));
        printf("%-58s %-22s\n", "  fetch only of the remaining Ids (curl)",
               (snprintf(value, sizeof value, "%.2f s, peak RSS %.0f MB", s->ids_fetch.best, s->ids_fetch.maxrss_kb / 1024.0), value));
        printf("%-58s %-22s\n", "  ghosts / fetching the Ids alone",
               (snprintf(value, sizeof value, "%.2fx", s->ghosts.best / s->ids_fetch.best), value));
        snprintf(figure, sizeof figure, "exact query on Id, %lld-entry soup: engine / sqlite3", s->records - s->deleted);
        printf("%-58s %-22s\n", figure,
               (snprintf(value, sizeof value, "%.3f / %.3f ms (%.1fx)", s->exact_ms, s->exact_sqlite_ms,
                         s->exact_ms / s->exact_sqlite_ms), value));
        printf("%-58s %-22s\n", "Smart SQL aggregate (count per LastName): engine / sqlite3",
               (snprintf(value, sizeof value, "%.1f / %.1f ms (%.2fx)", s->agg_s * 1000, s->agg_sqlite_s * 1000,
                         s->agg_s / s->agg_sqlite_s), value));
    }
}
