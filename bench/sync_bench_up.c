/* Section 3 of bench-sync: sync up U modified records with latency on every request, through
 * the collection, parent_children and single (one request per record) targets. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync_bench.h"

/* engine-up URL TOKEN DIR MODE N TAG: sync down everything, modify the first N entries
 * (LastName, Title = TAG, dirty flags), then time one sync up with target type MODE. */
int engine_up(char **argv) {
    const char *url = argv[0], *token = argv[1], *dir = argv[2], *mode = argv[3], *tag = argv[5];
    long long n = atoll(argv[4]);
    int composite = strcmp(mode, "parent_children") == 0;
    syncstore_store *store = engine_open(dir, url, token, "-", UP_INDEXES);
    syncstore_error err;
    int64_t id = 0;
    double t0 = now_s();
    if (composite) {
        /* The parents too: the children's entries are dirty, their accounts go with them. */
        check(syncstore_register_soup(store, "accounts", "[{\"path\":\"Id\",\"type\":\"string\"},"
                                      "{\"path\":\"__local__\",\"type\":\"string\"}]", &err), "register_soup", &err);
        char *accounts = soql_target("SELECT Id, Name FROM Account");
        check(syncstore_sync_down(store, accounts, "accounts", NULL, NULL, NULL, NULL, &id, &err), "sync_down", &err);
        wait_done(store, id, "sync down accounts");
        free(accounts);
    }
    char *target = soql_target("SELECT Id, FirstName, LastName, Email, Title, AccountId FROM Contact");
    check(syncstore_sync_down(store, target, "contacts", NULL, NULL, NULL, NULL, &id, &err), "sync_down", &err);
    wait_done(store, id, "sync down");
    double down = now_s() - t0;
    free(target);
    long long total = count_where(store, NULL);
    if (total < n) fail("sync up", "fewer records on the server than --up-records");

    /* The first n entries by _soupEntryId, modified in memory, then written back in batches.
     * parent_children pushes children with their parent: a contact the server seeded without
     * an account is given one locally (AccountId is not among the fields sent). */
    char some_account[64] = "";
    if (composite) {
        char *accounts = NULL;
        check(syncstore_run_smart_query(store, "{\"queryType\":\"smart\",\"smartSql\":\"select {accounts:Id} from {accounts}\",\"pageSize\":1}",
                                        &accounts, &err), "accounts", &err);
        json_t *page = json_loads(accounts, 0, NULL);
        const char *first = json_string_value(json_array_get(json_array_get(json_object_get(page, "currentPageOrderedEntries"), 0), 0));
        snprintf(some_account, sizeof some_account, "%s", first ? first : "");
        syncstore_cursor_close(store, json_integer_value(json_object_get(page, "cursorId")), NULL);
        json_decref(page);
        syncstore_free(accounts);
        if (!some_account[0]) fail("sync up", "no account was synced down");
    }
    char spec[256];
    snprintf(spec, sizeof spec, "{\"queryType\":\"range\",\"indexPath\":\"_soupEntryId\",\"beginKey\":1,\"endKey\":%lld,"
             "\"orderPath\":\"_soupEntryId\",\"pageSize\":1000}", n);
    char *out = NULL;
    check(syncstore_query_soup(store, "contacts", spec, &out, &err), "query_soup", &err);
    json_t *cursor = json_loads(out, 0, NULL);
    syncstore_free(out);
    int64_t cursor_id = json_integer_value(json_object_get(cursor, "cursorId"));
    long long pages = json_integer_value(json_object_get(cursor, "totalPages"));
    for (long long p = 0; p < pages && p < 100000; p++) {
        if (p > 0) {
            json_decref(cursor);
            check(syncstore_cursor_move_to_page(store, cursor_id, p, &out, &err), "move_to_page", &err);
            cursor = json_loads(out, 0, NULL);
            syncstore_free(out);
        }
        json_t *entries = json_object_get(cursor, "currentPageOrderedEntries");
        size_t i;
        json_t *entry;
        json_array_foreach(entries, i, entry) {
            char last[128];
            snprintf(last, sizeof last, "%s-%s", json_string_value(json_object_get(entry, "LastName")), tag);
            json_object_set_new(entry, "LastName", json_string(last));
            json_object_set_new(entry, "Title", json_string(tag));
            json_object_set_new(entry, "__local__", json_true());
            json_object_set_new(entry, "__locally_updated__", json_true());
            if (composite && !json_is_string(json_object_get(entry, "AccountId")))
                json_object_set_new(entry, "AccountId", json_string(some_account));
        }
        char *text = json_dumps(entries, JSON_COMPACT);
        check(syncstore_upsert(store, "contacts", text, NULL, NULL, &err), "upsert", &err);
        free(text);
    }
    json_decref(cursor);
    syncstore_cursor_close(store, cursor_id, NULL);
    const char *dirty = "{contacts:__local__} in ('true', '1')";
    long long before = count_where(store, dirty);
    if (before != n) {
        fprintf(stderr, "bench-sync: %lld dirty entries, expected %lld\n", before, n);
        return 1;
    }

    json_t *up = composite
        ? json_pack("{s:s,s:{s:s,s:s},s:{s:s,s:s,s:s},s:[s,s]}", "type", mode,
                    "parent", "sobjectType", "Account", "soupName", "accounts",
                    "children", "sobjectType", "Contact", "soupName", "contacts", "parentIdFieldName", "AccountId",
                    "childrenUpdateFieldlist", "LastName", "Title")
        : json_pack("{s:s,s:[s,s]}", "type", mode, "updateFieldlist", "LastName", "Title");
    char *up_text = json_dumps(up, JSON_COMPACT);
    json_decref(up);
    readers rd;
    int reading = readers_start(&rd, store, dir);
    t0 = now_s();
    check(syncstore_sync_up(store, up_text, composite ? "accounts" : "contacts", NULL, NULL, NULL, NULL, &id, &err), "sync_up", &err);
    wait_done(store, id, "sync up");
    double elapsed = now_s() - t0;
    char latencies[1200] = "";
    if (reading) readers_stop(&rd, latencies, sizeof latencies);
    free(up_text);
    long long after = count_where(store, dirty);
    check(syncstore_close(store, &err), "close", &err);
    if (after != 0) {
        fprintf(stderr, "bench-sync: %lld entries still dirty after the sync up\n", after);
        return 1;
    }
    printf("records=%lld seconds=%.6f down_seconds=%.6f%s\n", n, elapsed, down, latencies);
    return 0;
}

/* Section 3: the same edits of --up-records records pushed through each target, checked on the
 * server after each run. */
up_results bench_up(const options *o) {
    up_results u = {{"sync up, collection (200/request)", 0, 0, 0, 0, 0}, {"sync up, parent_children (composite)", 0, 0, 0, 0, 0},
                    {"sync up, single (1/request)", 0, 0, 0, 0, 0}, 0};
    if (o->up_records > 0) {
        static devserver slow;
        char seed[128];
        char faults[64];
        snprintf(faults, sizeof faults, "latency=%dms", o->latency);
        printf("\n[3] sync up %lld modified Contacts, %d ms latency on every request\n", o->up_records, o->latency);
        snprintf(seed, sizeof seed, "Account=100,Contact=%lld", o->up_records);
        start_server(&slow, o->devserver, seed, faults, NULL, NULL);
        char dir[2048], n[32], soql[256];
        snprintf(dir, sizeof dir, "%s/engine-up", o->work);
        snprintf(n, sizeof n, "%lld", o->up_records);
        char *batch_argv[] = {self_path, "engine-up", slow.url, DEVSERVER_TOKEN, dir, "collection", n, "benchcollection", NULL};
        child_result rb = run_child(batch_argv);
        add(&u.batch, rb, o->up_records);
        /* The server has the edits (checked after each run: the runs may edit the same records). */
        snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE Title = 'benchcollection'");
        long on_server_batch = devserver_count(&slow, soql);
        /* The same edits through the parent_children target: each account with its dirty
         * contacts in composite requests of at most 25 subrequests. */
        char *composite_argv[] = {self_path, "engine-up", slow.url, DEVSERVER_TOKEN, dir, "parent_children", n, "benchcomposite", NULL};
        add(&u.composite, run_child(composite_argv), o->up_records);
        snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE Title = 'benchcomposite'");
        long on_server_composite = devserver_count(&slow, soql);
        snprintf(n, sizeof n, "%lld", o->single_records);
        char *single_argv[] = {self_path, "engine-up", slow.url, DEVSERVER_TOKEN, dir, "single", n, "benchsingle", NULL};
        add(&u.single, run_child(single_argv), o->single_records);
        snprintf(soql, sizeof soql, "SELECT Id FROM Contact WHERE Title = 'benchsingle'");
        long on_server_single = devserver_count(&slow, soql);
        stop_server(&slow);
        if (on_server_batch != o->up_records || on_server_composite != o->up_records || on_server_single != o->single_records) {
            fprintf(stderr, "bench-sync: the server has %ld/%ld edited records, expected %lld/%lld\n", on_server_batch,
                    on_server_single, o->up_records, o->single_records);
            exit(1);
        }
        u.single_scaled = u.single.best * (double)o->up_records / (double)o->single_records;
        printf("  %-34s %lld records %8.3f s  (%.0f rec/s)  sync down before it: %.3f s\n", u.batch.name, o->up_records,
               u.batch.best, o->up_records / u.batch.best, atof(strstr(rb.out, "down_seconds=") + 13));
        printf("  %-34s %lld records %8.3f s  (%.0f rec/s)\n", u.composite.name, o->up_records, u.composite.best,
               o->up_records / u.composite.best);
        printf("  %-34s %lld records %8.3f s  (%.1f ms/record)%s\n", u.single.name, o->single_records, u.single.best,
               u.single.best * 1000 / o->single_records, o->single_records == o->up_records ? "" : "  MEASURED ON FEWER RECORDS");
        if (o->single_records != o->up_records)
            printf("  single scaled linearly to %lld records: %.1f s (= %.3f s x %lld / %lld; not measured at full size)\n",
                   o->up_records, u.single_scaled, u.single.best, o->up_records, o->single_records);
        printf("  server check: %ld + %ld + %ld edited records found on the server\n", on_server_batch, on_server_composite,
               on_server_single);
    }
    return u;
}

/* The summary's sync up lines. */
void up_summary(const options *o, const up_results *u) {
    char value[64];
    if (o->up_records > 0) {
        char figure[96];
        snprintf(figure, sizeof figure, "sync up %lld records, %d ms latency: collection", o->up_records, o->latency);
        printf("%-58s %-22s\n", figure, (snprintf(value, sizeof value, "%.2f s", u->batch.best), value));
        /* What the latency alone costs: one request per batch of 200, one after another. */
        double floor_s = (double)((o->up_records + 199) / 200) * o->latency / 1000.0;
        printf("%-58s %-22s\n", "  latency floor (requests x latency)",
               (snprintf(value, sizeof value, "%.2f s (collection = %.2fx)", floor_s, u->batch.best / floor_s), value));
        printf("%-58s %-22s\n", "  parent_children (composite requests)",
               (snprintf(value, sizeof value, "%.2f s (%.2fx collection)", u->composite.best, u->composite.best / u->batch.best), value));
        printf("%-58s %-22s\n", o->single_records == o->up_records ? "  single" : "  single (scaled from a smaller run)",
               (snprintf(value, sizeof value, "%.1f s", u->single_scaled), value));
        printf("%-58s %-22s %-16s %s\n", "  single / collection", (snprintf(value, sizeof value, "%.1fx", u->single_scaled / u->batch.best), value),
               ">= 20x", verdict(u->single_scaled / u->batch.best >= 20));
    }
}
