/* Runs COMMAND... URL TOKEN against a fresh syncstore-devserver on 127.0.0.1 (120 seeded
 * contacts) and exits with the command's status: how CTest runs the sync example.
 *   with_devserver COMMAND [ARG...]   (the dev server binary: see devserver_binary in devserver.h) */
#define _POSIX_C_SOURCE 200809L
#include "devserver.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s COMMAND [ARG...]\n", argv[0]); return 2; }
    const char *extra[] = {"--seed", "Contact=120", NULL};
    devserver server;
    devserver_start(&server, devserver_binary(), extra);
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args) { perror("calloc"); devserver_stop(&server); return 2; }
    for (int i = 1; i < argc; i++) args[i - 1] = argv[i];
    args[argc - 1] = server.url;
    args[argc] = DEVSERVER_TOKEN;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); devserver_stop(&server); return 2; }
    if (pid == 0) {
        execv(args[0], args);
        perror("exec");
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    devserver_stop(&server);
    free(args);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
