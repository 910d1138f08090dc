/* What the C benchmarks share besides statistics: clocks, a growing buffer for libcurl's answers
 * and the process's peak RSS. Static inline: a file using some of them builds without
 * unused-function warnings. */
#ifndef SYNCSTORE_BENCH_IO_H
#define SYNCSTORE_BENCH_IO_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Seconds on the monotonic clock (for durations). */
static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wall-clock epoch milliseconds (for stored timestamps). */
static inline long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct { char *data; size_t len, cap; } buffer;

/* A CURLOPT_WRITEFUNCTION appending to the buffer in ctx (kept NUL-terminated). */
static inline size_t collect(char *data, size_t size, size_t count, void *ctx) {
    buffer *b = ctx;
    size_t n = size * count;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->len + n + 1) cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) return 0;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = 0;
    return n;
}

/* Peak resident set size of this process in kB (VmHWM), -1 when unknown. */
static inline long vm_hwm_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    return kb;
}
#endif
