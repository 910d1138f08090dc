/* What the C benchmarks share: the median and minimum of a series, and the machine's load (a
 * figure taken on a busy machine says so beside it). Static inline: a file using some of them
 * builds without unused-function warnings. */
#ifndef SYNCSTORE_BENCH_STATS_H
#define SYNCSTORE_BENCH_STATS_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of n values (n >= 1); v is left as it was. */
static inline double median_of(const double *v, int n) {
    double *c = malloc(sizeof *c * (size_t)n);
    if (!c) return v[0];
    memcpy(c, v, sizeof *c * (size_t)n);
    qsort(c, (size_t)n, sizeof *c, cmp_double);
    double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}

static inline double min_of(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) if (v[i] < m) m = v[i];
    return m;
}

static inline void print_load(const char *when) {
    char line[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) { if (!fgets(line, sizeof line, f)) line[0] = 0; fclose(f); }
    line[strcspn(line, "\n")] = 0;
    printf("  load average %s: %s\n", when, line);
    fflush(stdout);
}
#endif
