/* Storage faults and a killed host through the C ABI (header: Runs, Atomicity): syncs queued
 * when the process is SIGKILLed come back STOPPED and restart_syncs runs them; a full disk
 * (a small tmpfs) gives STORAGE and a sync whose end cannot be saved still reads FAILED in
 * wait_sync and get_sync_status; read-only media give STORAGE saying so. The tmpfs parts need
 * root with CAP_SYS_ADMIN and are skipped, saying why, elsewhere.
 * Usage: test_storage_faults <work_dir>
 *        test_storage_faults --queue-child <root> <remote_json>   (the host that is killed) */
#define _GNU_SOURCE
#include "sync_support.h"
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *root, *binary;
static const char *INDEXES =
    "[{\"path\":\"Id\",\"type\":\"string\"},{\"path\":\"LastName\",\"type\":\"string\"},{\"path\":\"__local__\",\"type\":\"string\"}]";
static const char *DOWN_TARGET = "{\"type\":\"soql\",\"query\":\"SELECT LastName FROM Contact\"}";

static json_t *status_by_name(syncstore_store *store, const char *name) {
    char *out = NULL;
    syncstore_error err;
    EXPECT(syncstore_get_sync_status_by_name(store, name, &out, &err), SYNCSTORE_OK, &err);
    return out ? check_parse(out) : NULL;
}

static void create_local(syncstore_store *store, const char *prefix, int n) {
    for (int i = 0; i < n; i++) {
        char entry[256];
        snprintf(entry, sizeof entry,
                 "{\"attributes\":{\"type\":\"Contact\"},\"LastName\":\"%s%d\",\"__local__\":true,\"__locally_created__\":true}", prefix, i);
        syncstore_error err;
        EXPECT(syncstore_upsert(store, "contacts", entry, NULL, NULL, &err), SYNCSTORE_OK, &err);
    }
}

/* The killed host: opens the store, starts a sync down whose first request the server holds,
 * queues a reSync of a finished sync and a new sync up behind it, says so, and waits to die. */
static int queue_child(const char *store_root, const char *remote) {
    syncstore_error err;
    syncstore_store *store = NULL;
    if (syncstore_open(store_root, "{\"storeName\":\"killed\"}", &store, &err) != SYNCSTORE_OK) return 3;
    if (syncstore_set_remote(store, remote, &err) != SYNCSTORE_OK) return 3;
    if (syncstore_sync_down(store, DOWN_TARGET, "contacts", NULL, "slow-down", NULL, NULL, NULL, &err) != SYNCSTORE_OK) return 4;
    if (syncstore_resync_by_name(store, "finished-down", NULL, NULL, NULL, &err) != SYNCSTORE_OK) return 5;
    if (syncstore_sync_up(store, NULL, "contacts", "{\"fieldlist\":[\"LastName\"]}", "queued-up", NULL, NULL, NULL, &err) != SYNCSTORE_OK) return 6;
    printf("queued\n");
    fflush(stdout);
    for (;;) pause();
}

/* Runs after a kill: syncs queued when the host was killed came back NEW (a new sync) or with
 * their previous end (a reSync), and restart_syncs skipped them. Now every run that was
 * requested and never finished is STOPPED after the kill, and restart_syncs runs it. */
static void test_killed_host_resumes_queued_syncs(void) {
    devserver server;
    const char *args[] = {"--seed", "Contact=30", "--admin", NULL};
    devserver_start(&server, binary, args);
    char store_root[1024];
    snprintf(store_root, sizeof store_root, "%s/killed", root);
    syncstore_store *store = open_sync_store(store_root, "killed", INDEXES, &server, NULL);
    syncstore_error err;
    int64_t finished = 0;
    EXPECT(syncstore_sync_down(store, DOWN_TARGET, "contacts", NULL, "finished-down", NULL, NULL, &finished, &err), SYNCSTORE_OK, &err);
    json_t *state = wait_state(store, finished);
    CHECK(strcmp(status_of(state), "DONE") == 0);
    json_decref(state);
    create_local(store, "Queued", 3);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);

    /* The first query the child sends is held for a minute: its other runs wait behind it. */
    long http = 0;
    json_decref(devserver_call(&server, "PUT", "/__devserver/faults", "GET /services/data/*/query* latency=60000 times=1", &http));
    CHECK(http == 200 || http == 204);
    int out[2];
    CHECK(pipe(out) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    char *remote = devserver_remote_json(&server, NULL);
    char *child_args[] = {"test_storage_faults", "--queue-child", store_root, remote, NULL};
    pid_t child = 0;
    CHECK(posix_spawn(&child, "/proc/self/exe", &actions, NULL, child_args, environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
    free(remote);
    close(out[1]);
    struct pollfd ready = {out[0], POLLIN, 0};
    char line[32] = {0};
    CHECK(poll(&ready, 1, 30000) == 1 && read(out[0], line, sizeof line - 1) > 0 && strncmp(line, "queued", 6) == 0);
    close(out[0]);
    kill(child, SIGKILL);
    int wstatus = 0;
    waitpid(child, &wstatus, 0);
    CHECK(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
    json_decref(devserver_call(&server, "PUT", "/__devserver/faults", "", &http));

    store = open_sync_store(store_root, "killed", INDEXES, &server, NULL);
    const char *names[] = {"slow-down", "finished-down", "queued-up"};
    for (int i = 0; i < 3; i++) {
        json_t *s = status_by_name(store, names[i]);
        if (strcmp(status_of(s), "STOPPED") != 0) fprintf(stderr, "%s is %s after the kill, not STOPPED\n", names[i], status_of(s));
        CHECK(strcmp(status_of(s), "STOPPED") == 0);
        json_decref(s);
    }
    EXPECT(syncstore_restart_syncs(store, 1, NULL, NULL, &err), SYNCSTORE_OK, &err);
    for (int i = 0; i < 3; i++) {
        json_t *s = status_by_name(store, names[i]);
        json_t *done = wait_state(store, json_integer_value(json_object_get(s, "_soupEntryId")));
        if (strcmp(status_of(done), "DONE") != 0) fprintf(stderr, "%s ended %s after restart_syncs\n", names[i], status_of(done));
        CHECK(strcmp(status_of(done), "DONE") == 0);
        json_decref(done);
        json_decref(s);
    }
    CHECK(devserver_count(&server, "SELECT Id FROM Contact WHERE LastName LIKE 'Queued%'") == 3);
    CHECK(soup_count(store, "contacts", "{contacts:__local__} = 'true'") == 0);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
}

/* A tmpfs of `size` at `path`; 0 when it cannot be mounted (the caller skips). */
static int mount_small_disk(const char *path, const char *size) {
    mkdir(path, 0755);
    char options[64];
    snprintf(options, sizeof options, "size=%s,mode=0755", size);
    if (mount("tmpfs", path, "tmpfs", 0, options) != 0) {
        printf("SKIP disk-full and read-only parts: cannot mount a tmpfs at %s (%s); they need root with CAP_SYS_ADMIN\n", path, strerror(errno));
        return 0;
    }
    return 1;
}

/* Takes every free byte of the disk at `path`; returns the filler's descriptor. */
static int fill_disk(const char *path) {
    char name[1100];
    snprintf(name, sizeof name, "%s/.filler", path);
    int fd = open(name, O_CREAT | O_WRONLY | O_APPEND, 0600);
    static char chunk[1 << 16];
    memset(chunk, 0x5a, sizeof chunk);
    const size_t sizes[] = {sizeof chunk, 4096, 1};
    for (int i = 0; i < 3; i++)
        while (write(fd, chunk, sizes[i]) == (ssize_t)sizes[i]) {}
    CHECK(errno == ENOSPC);
    return fd;
}

static void free_disk(const char *path, int filler) {
    char name[1100];
    snprintf(name, sizeof name, "%s/.filler", path);
    close(filler);
    unlink(name);
}

typedef struct { const char *disk; int filler; } filler_context;

/* Fills the disk when the sync up has pushed and stored every record (progress 100). */
static void fill_at_the_end(const char *state_json, void *context) {
    filler_context *c = context;
    if (c->filler < 0 && strstr(state_json, "\"status\":\"RUNNING\"") && strstr(state_json, "\"progress\":100,"))
        c->filler = fill_disk(c->disk);
}

/* A disk that fills as a sync up finishes, through the ABI; a full disk and read-only media. */
static void test_small_disk(void) {
    char disk[1024];
    snprintf(disk, sizeof disk, "%s/disk", root);
    if (!mount_small_disk(disk, "8m")) return;
    devserver server;
    devserver_start(&server, binary, NULL);
    syncstore_store *store = open_sync_store(disk, "small", INDEXES, &server, NULL);
    syncstore_error err;
    create_local(store, "Full", 4);

    filler_context context = {disk, -1};
    int64_t id = 0;
    EXPECT(syncstore_sync_up(store, NULL, "contacts", "{\"fieldlist\":[\"LastName\"]}", "up", fill_at_the_end, &context, &id, &err), SYNCSTORE_OK, &err);
    json_t *waited = wait_state(store, id);
    CHECK(context.filler >= 0);
    CHECK(strcmp(status_of(waited), "FAILED") == 0);
    CHECK(json_integer_value(json_object_get(waited, "errorCode")) == SYNCSTORE_ERR_STORAGE);
    json_t *polled = status_by_name(store, "up");
    CHECK(strcmp(status_of(polled), "FAILED") == 0);
    json_decref(polled);
    json_decref(waited);
    CHECK(devserver_count(&server, "SELECT Id FROM Contact WHERE LastName LIKE 'Full%'") == 4);

    /* Writes on the full disk: STORAGE saying so, nothing stored; a new run cannot be queued. */
    long long before = soup_count(store, "contacts", NULL);
    EXPECT(syncstore_upsert(store, "contacts", "[{\"LastName\":\"a\"},{\"LastName\":\"b\"}]", NULL, NULL, &err), SYNCSTORE_ERR_STORAGE, &err);
    CHECK(strstr(err.message, "full") != NULL);
    CHECK(soup_count(store, "contacts", NULL) == before);
    EXPECT(syncstore_resync(store, id, NULL, NULL, &err), SYNCSTORE_ERR_STORAGE, &err);

    /* Space back: the same calls work; the close saves the run's end. */
    free_disk(disk, context.filler);
    EXPECT(syncstore_upsert(store, "contacts", "[{\"LastName\":\"a\"},{\"LastName\":\"b\"}]", NULL, NULL, &err), SYNCSTORE_OK, &err);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    store = open_sync_store(disk, "small", INDEXES, &server, NULL);
    json_t *saved = status_by_name(store, "up");
    CHECK(strcmp(status_of(saved), "FAILED") == 0);
    json_decref(saved);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);

    /* Read-only media: open is STORAGE saying so; writable again, the store opens whole. */
    CHECK(mount("tmpfs", disk, "tmpfs", MS_REMOUNT | MS_RDONLY, "size=8m,mode=0755") == 0);
    store = NULL;
    EXPECT(syncstore_open(disk, "{\"storeName\":\"small\"}", &store, &err), SYNCSTORE_ERR_STORAGE, &err);
    CHECK(store == NULL && strstr(err.message, "read-only") != NULL);
    CHECK(mount("tmpfs", disk, "tmpfs", MS_REMOUNT, "size=8m,mode=0755") == 0);
    EXPECT(syncstore_open(disk, "{\"storeName\":\"small\"}", &store, &err), SYNCSTORE_OK, &err);
    CHECK(soup_count(store, "contacts", NULL) == before + 2);
    EXPECT(syncstore_close(store, &err), SYNCSTORE_OK, &err);
    devserver_stop(&server);
    umount2(disk, MNT_DETACH);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--queue-child") == 0) return queue_child(argv[2], argv[3]);
    if (argc < 2) { fprintf(stderr, "usage: %s work_dir\n", argv[0]); return 2; }
    root = argv[1];
    binary = devserver_binary();
    char leftover[1100]; /* a disk an interrupted run left mounted */
    snprintf(leftover, sizeof leftover, "%s/disk", root);
    umount2(leftover, MNT_DETACH);
    check_fresh_dir(root);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    test_killed_host_resumes_queued_syncs();
    test_small_disk();
    return check_finish();
}
