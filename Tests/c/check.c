#include "check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int check_passed = 0, check_failed = 0;

/* Tests check from several threads (edits during a sync, callbacks): the counts are atomic. */
static void count(int *counter) { __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED); }

void check_true(int ok, const char *what, const char *file, int line) {
    if (ok) { count(&check_passed); return; }
    count(&check_failed);
    fprintf(stderr, "FAIL %s:%d: %s\n", file, line, what);
}

void check_status(int got, int expected, const syncstore_error *err, const char *what, const char *file, int line) {
    if (got == expected) { count(&check_passed); return; }
    count(&check_failed);
    fprintf(stderr, "FAIL %s:%d: %s returned %s, expected %s (%s)\n", file, line, what,
            syncstore_status_name(got), syncstore_status_name(expected), err ? err->message : "");
}

int check_finish(void) {
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed == 0 ? 0 : 1;
}

json_t *check_parse(char *text) {
    if (!text) return NULL;
    json_error_t error;
    json_t *value = json_loads(text, JSON_DECODE_ANY, &error);
    if (!value) fprintf(stderr, "bad JSON from library: %s (%s)\n", error.text, text);
    syncstore_free(text);
    return value;
}

void check_fresh_dir(const char *path) {
    char command[4096];
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir -p '%s'", path, path);
    if (system(command) != 0) { fprintf(stderr, "cannot prepare %s\n", path); exit(2); }
}
