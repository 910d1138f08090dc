/* The C tests' one dev server fixture: run a syncstore-devserver process on 127.0.0.1 and talk to
 * it directly over HTTP (to change server data behind the engine's back). */
#ifndef SYNCSTORE_TEST_DEVSERVER_H
#define SYNCSTORE_TEST_DEVSERVER_H
#include <jansson.h>
#include <stdio.h>
#include <sys/types.h>

#define DEVSERVER_TOKEN "test-token"

typedef struct devserver {
    pid_t pid;
    char url[256];
    FILE *out;
} devserver;

/* The dev server binary for the tests: $SYNCSTORE_DEVSERVER (CTest sets it from the CMake cache
 * variable of the same name). Exits the test (status 2) when it is unset or not executable. */
const char *devserver_binary(void);

/* Starts the server binary with `--port 0 --token test-token` and the extra args (NULL-ended);
 * waits for its first stdout line (the base URL). Exits the test on failure. */
void devserver_start(devserver *server, const char *binary, const char *const *extra_args);
void devserver_stop(devserver *server);

/* A request to the server with the test token. Returns the parsed JSON answer (NULL for an
 * empty body) and stores the HTTP status. `path` is under /services/data/v62.0/ unless it
 * starts with '/'. */
json_t *devserver_call(const devserver *server, const char *method, const char *path, const char *body, long *status);

/* SOQL helper: the totalSize of a query. */
long devserver_count(const devserver *server, const char *soql);

/* The remote config JSON for syncstore_set_remote (malloc'd). */
char *devserver_remote_json(const devserver *server, const char *extra_members);
#endif
