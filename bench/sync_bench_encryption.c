/* Section 4 of bench-sync (--encryption): sync down into plaintext and encrypted engine stores
 * in alternating rounds, over HTTPS and HTTP; the ENC| lines are its summary. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync_bench.h"

typedef struct { int n; long long records; double secs[20], cpus[20]; } enc_series;

static void enc_add(enc_series *s, child_result r, long long expected, const char *what) {
    if (r.records != expected) {
        fprintf(stderr, "bench-sync: %s stored %lld records, expected %lld\n", what, r.records, expected);
        exit(1);
    }
    const char *c = strstr(r.out, "sync_cpu=");
    s->secs[s->n] = r.seconds;
    s->cpus[s->n] = c ? atof(c + 9) : r.cpu; /* the sync's own CPU (not the open's KDF) when the child says */
    s->records = r.records;
    s->n++;
}

typedef struct { enc_series plain, enc, fetch; } enc_results;

static enc_results bench_encryption(const options *o, const devserver *server, const char *cafile, const char *enc_config) {
    enc_results d;
    memset(&d, 0, sizeof d);
    char engine_dir[2048], fetch_db[2048];
    snprintf(engine_dir, sizeof engine_dir, "%s/engine", o->work);
    snprintf(fetch_db, sizeof fetch_db, "%s/unused.db", o->work);
    const char *ca = cafile ? cafile : "-";
    for (int r = 0; r < o->rounds; r++) {
        for (int j = 0; j < 2; j++) {
            int m = r % 2 ? 1 - j : j;
            if (m) setenv(STORE_CONFIG_ENV, enc_config, 1);
            else unsetenv(STORE_CONFIG_ENV);
            char *engine_argv[] = {self_path, "engine-down", (char *)server->url, DEVSERVER_TOKEN, engine_dir, (char *)ca, SOQL, NULL};
            enc_add(m ? &d.enc : &d.plain, run_child(engine_argv), o->records, m ? "engine (encrypted)" : "engine (plaintext)");
        }
        unsetenv(STORE_CONFIG_ENV);
        char *f_argv[] = {baseline_path, (char *)server->url, DEVSERVER_TOKEN, fetch_db, "--fetch-only", "--soql", SOQL,
                          cafile ? "--cafile" : NULL, (char *)cafile, NULL};
        enc_add(&d.fetch, run_child(f_argv), o->records, "fetch only");
        printf("  round %d (%s first): plaintext %.3f s (sync CPU %.2f s)   encrypted %.3f s (sync CPU %.2f s)   fetch only %.3f s\n",
               r + 1, r % 2 ? "encrypted" : "plaintext", d.plain.secs[r], d.plain.cpus[r], d.enc.secs[r], d.enc.cpus[r],
               d.fetch.secs[r]);
        fflush(stdout);
    }
    return d;
}

static void enc_line(const char *figure, double plain, double enc, const char *unit, double ratio, double target) {
    char a[48], b[48], r[24], t[24] = "-";
    snprintf(a, sizeof a, "%.0f %s", plain, unit);
    snprintf(b, sizeof b, "%.0f %s", enc, unit);
    if (unit[0] == 's') { snprintf(a, sizeof a, "%.2f s", plain); snprintf(b, sizeof b, "%.2f s", enc); }
    snprintf(r, sizeof r, "%.3fx", ratio);
    if (target > 0) snprintf(t, sizeof t, ">= %.2fx", target);
    printf("ENC| %-50s | %-22s | %-22s | %-8s | %-8s | %s\n", figure, a, b, r, t, target > 0 ? verdict(ratio >= target) : "-");
}

static void enc_summary(const char *transport, long long records, const enc_results *d) {
    char figure[96];
    double pb = records / min_of(d->plain.secs, d->plain.n), eb = records / min_of(d->enc.secs, d->enc.n);
    double pm = records / median_of(d->plain.secs, d->plain.n), em = records / median_of(d->enc.secs, d->enc.n);
    snprintf(figure, sizeof figure, "sync down %lld, %s, best", records, transport);
    enc_line(figure, pb, eb, "rec/s", eb / pb, 0.80);
    snprintf(figure, sizeof figure, "sync down %lld, %s, median", records, transport);
    enc_line(figure, pm, em, "rec/s", em / pm, 0.80);
    double pc = median_of(d->plain.cpus, d->plain.n), ec = median_of(d->enc.cpus, d->enc.n);
    snprintf(figure, sizeof figure, "  sync CPU s, median (plain/enc = speed)");
    enc_line(figure, pc, ec, "s", pc / ec, 0);
    char fetch[48];
    snprintf(fetch, sizeof fetch, "%.0f rec/s", records / min_of(d->fetch.secs, d->fetch.n));
    printf("ENC| %-50s | %-22s | %-22s | %-8s | %-8s | %s\n", "  fetch only (server + curl, no store), best", fetch, "(same)", "-", "-", "-");
}

int encryption_main(const options *o, const char *cert, const char *tls_key, const char *seed) {
    const char *key = o->key ? o->key : "bench passphrase";
    char *enc_config = bench_store_config(key, o->kdf_iter);
    printf("\n[4] encryption at rest: sync down %lld Contacts into a plaintext and an encrypted store (\"key\": %s, kdfIter %d),\n"
           "    %d alternating rounds; the store is opened (KDF) before each timer starts\n",
           o->records, key[0] == 'x' || key[0] == 'X' ? "raw x'...'" : "a passphrase", o->kdf_iter > 0 ? o->kdf_iter : 256000, o->rounds);
    static devserver tls, plain;
    printf("\n[4a] over HTTPS\n");
    start_server(&tls, o->devserver, seed, NULL, cert, tls_key);
    enc_results https = bench_encryption(o, &tls, cert, enc_config);
    stop_server(&tls);
    print_load("after HTTPS");
    enc_results http;
    memset(&http, 0, sizeof http);
    if (o->http) {
        printf("\n[4b] over plain HTTP\n");
        start_server(&plain, o->devserver, seed, NULL, NULL, NULL);
        http = bench_encryption(o, &plain, NULL, enc_config);
        stop_server(&plain);
        print_load("after HTTP");
    }
    printf("\nENC| %-50s | %-22s | %-22s | %-8s | %-8s | %s\n", "figure (sync)", "plaintext", "encrypted", "enc/plain", "target",
           "verdict");
    enc_summary("HTTPS", o->records, &https);
    if (o->http) enc_summary("HTTP", o->records, &http);
    printf("(enc/plain: encrypted throughput / plaintext throughput; for CPU seconds, plaintext / encrypted)\n");
    free(enc_config);
    return 0;
}
