/* Sync example: sync down with a status callback, edit an entry offline, sync it up, wait.
 * Usage: sync-example ROOT_DIR INSTANCE_URL ACCESS_TOKEN
 * Callbacks run on the store's sync worker thread: keep them short, copy what you need out of
 * state_json (valid during the call only), and never close the store from inside one. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <syncstore.h>

/* What the callback shares with main: guarded by a mutex, signalled on the terminal state. */
struct progress {
    pthread_mutex_t lock;
    pthread_cond_t ended;
    int updates;
    int finished;
    char last_status[16];
};

static void on_state(const char *state_json, void *context) {
    struct progress *p = context;
    const char *status = strstr(state_json, "\"status\":\"");
    pthread_mutex_lock(&p->lock);
    p->updates++;
    if (status) {
        status += strlen("\"status\":\"");
        snprintf(p->last_status, sizeof p->last_status, "%.*s", (int)strcspn(status, "\""), status);
        if (!strcmp(p->last_status, "DONE") || !strcmp(p->last_status, "FAILED") ||
            !strcmp(p->last_status, "STOPPED")) {
            p->finished = 1;
            pthread_cond_signal(&p->ended);
        }
    }
    pthread_mutex_unlock(&p->lock);
}

/* Blocks until the callback saw a terminal state; returns 0 when it was DONE. */
static int wait_for_end(struct progress *p, const char *what) {
    int ok;
    pthread_mutex_lock(&p->lock);
    while (!p->finished) pthread_cond_wait(&p->ended, &p->lock);
    ok = !strcmp(p->last_status, "DONE");
    printf("%s: %s after %d callbacks\n", what, p->last_status, p->updates);
    p->finished = 0;
    p->updates = 0;
    pthread_mutex_unlock(&p->lock);
    return ok ? 0 : 1;
}

static int failed(const char *step, int status, const syncstore_error *err) {
    fprintf(stderr, "%s: %s: %s\n", step, syncstore_status_name(status), err->message);
    return 1;
}

int main(int argc, char **argv) {
    struct progress p = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, ""};
    syncstore_error err;
    syncstore_store *store = NULL;
    char remote[1024], *state = NULL;
    int64_t down_id = 0, up_id = 0;
    int rc;

    if (argc != 4) {
        fprintf(stderr, "usage: %s ROOT_DIR INSTANCE_URL ACCESS_TOKEN\n", argv[0]);
        return 2;
    }
    rc = syncstore_open(argv[1], "{\"storeName\": \"sync-example\"}", &store, &err);
    if (rc != SYNCSTORE_OK) return failed("open", rc, &err);
    rc = syncstore_register_soup(store, "contacts",
                                 "[{\"path\": \"Id\", \"type\": \"string\"},"
                                 " {\"path\": \"__local__\", \"type\": \"string\"}]", &err);
    if (rc != SYNCSTORE_OK) return failed("register_soup", rc, &err);
    snprintf(remote, sizeof remote, "{\"instanceUrl\": \"%s\", \"accessToken\": \"%s\", \"apiVersion\": \"v62.0\"}",
             argv[2], argv[3]);
    rc = syncstore_set_remote(store, remote, &err);
    if (rc != SYNCSTORE_OK) return failed("set_remote", rc, &err);

    /* The run starts at once on the sync worker; on_state reports every state change. */
    rc = syncstore_sync_down(store, "{\"type\": \"soql\", \"query\": \"SELECT Id, LastName FROM Contact\"}",
                             "contacts", "{\"mergeMode\": \"LEAVE_IF_CHANGED\"}", "contacts-down",
                             on_state, &p, &down_id, &err);
    if (rc != SYNCSTORE_OK) return failed("sync_down", rc, &err);
    if (wait_for_end(&p, "sync down")) return 1;

    /* An offline create: flagged local, pushed by the next sync up. */
    rc = syncstore_upsert(store, "contacts",
                          "{\"attributes\": {\"type\": \"Contact\"}, \"LastName\": \"FromC\","
                          " \"__local__\": true, \"__locally_created__\": true}", NULL, NULL, &err);
    if (rc != SYNCSTORE_OK) return failed("upsert", rc, &err);
    rc = syncstore_sync_up(store, NULL, "contacts", "{\"fieldlist\": [\"LastName\"]}", "contacts-up",
                           on_state, &p, &up_id, &err);
    if (rc != SYNCSTORE_OK) return failed("sync_up", rc, &err);
    if (wait_for_end(&p, "sync up")) return 1;

    /* Without a callback: run again and block in syncstore_wait_sync (here up to 60 s). */
    rc = syncstore_resync(store, down_id, NULL, NULL, &err);
    if (rc != SYNCSTORE_OK) return failed("resync", rc, &err);
    rc = syncstore_wait_sync(store, down_id, 60000, &state, &err);
    if (rc != SYNCSTORE_OK) return failed("wait_sync", rc, &err);
    printf("reSync: %s\n", strstr(state, "\"status\":\"DONE\"") ? "DONE" : state);
    syncstore_free(state);

    /* Close waits for the terminal callbacks of runs started through this handle. */
    rc = syncstore_close(store, &err);
    if (rc != SYNCSTORE_OK) return failed("close", rc, &err);
    return 0;
}
