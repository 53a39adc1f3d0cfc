/* `ckey bench`: times the network alone (pre-processed input in, alpha/fg out) at one size, with
 * warm-up runs, and prints one JSON object: first-run, median, min, p95 (ms), memory figures.
 * Median rule: the middle element of the sorted times for odd counts, the mean of the two middle
 * elements for even counts. p95: the element at index ceil(0.95·n) − 1 of the sorted times. */
#include "ckey.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double ck_cli_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double ck_cli_p95(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int i = (int)ceil(0.95 * n) - 1;
    return v[i < 0 ? 0 : i];
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void usage_bench(FILE *f) {
    fprintf(f, "usage: ckey bench --checkpoint FILE [--size N] [--warmup N] [--runs N] [--device cpu|cuda|auto]\n"
               "                  [--threads N] [--head-dim N]\n"
               "Times the network alone on a deterministic structured input and prints JSON:\n"
               "first_ms (first run after load), median_ms, min_ms, p95_ms over --runs timed runs after\n"
               "--warmup untimed ones (defaults 3 and 10), activation/weight bytes and peak RSS.\n");
}

int ck_cli_bench(int argc, char **argv) {
    const char *ckpt   = NULL;
    ck_params   p      = ck_params_default();
    int         warmup = 3, runs = 10;
    p.size             = 512;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_bench(stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "ckey: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--checkpoint")) ckpt = v;
        else if (!strcmp(a, "--size")) p.size = atoi(v);
        else if (!strcmp(a, "--warmup")) warmup = atoi(v);
        else if (!strcmp(a, "--runs")) runs = atoi(v);
        else if (!strcmp(a, "--threads")) p.threads = atoi(v);
        else if (!strcmp(a, "--head-dim")) p.head_dim = atoi(v);
        else if (!strcmp(a, "--device")) {
            if (!ck_cli_parse_device(v, &p.device)) return 2;
        } else {
            fprintf(stderr, "ckey: unknown bench option '%s'\n", a);
            return 2;
        }
    }
    if (!ckpt || p.size < 32 || p.size % 32 || runs < 1 || warmup < 0) {
        usage_bench(stderr);
        return 2;
    }
    ck_ctx *ctx = NULL;
    if (ck_ctx_init(&ctx, ckpt, &p) != CK_OK) {
        ck_ctx_free(ctx);
        return 1;
    }
    const int S = p.size;
    float    *x = malloc(sizeof(float) * (size_t)S * S * 4), *alpha = malloc(sizeof(float) * (size_t)S * S);
    double   *t = malloc(sizeof(double) * (size_t)runs);
    if (!x || !alpha || !t) {
        fprintf(stderr, "ckey: out of memory\n");
        return 1;
    }
    /* smooth structured input (not zeros: zeros can run faster than real data) */
    for (int y = 0; y < S; y++)
        for (int xx = 0; xx < S; xx++)
            for (int c = 0; c < 4; c++)
                x[((size_t)y * S + xx) * 4 + c] = (float)(sin(0.013 * (xx + 1) * (c + 1)) * cos(0.021 * y) * 1.5);
    double t0 = now_ms();
    if (ck_run_network(ctx, x, alpha, NULL) != CK_OK) return 1;
    double first = now_ms() - t0;
    for (int i = 0; i < warmup; i++) ck_run_network(ctx, x, alpha, NULL);
    for (int i = 0; i < runs; i++) {
        t0 = now_ms();
        ck_run_network(ctx, x, alpha, NULL);
        t[i] = now_ms() - t0;
    }
    double mn = t[0];
    for (int i = 1; i < runs; i++) mn = t[i] < mn ? t[i] : mn;
    double med = ck_cli_median(t, runs), p95 = ck_cli_p95(t, runs);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"size\": %d, \"device\": \"%s\", \"warmup\": %d, \"runs\": %d, \"first_ms\": %.2f, \"median_ms\": %.2f, "
           "\"min_ms\": %.2f, \"p95_ms\": %.2f, \"activation_mib\": %.1f, \"weights_mib\": %.1f, "
           "\"peak_rss_mib\": %.1f, \"alpha_checksum\": %.6f}\n",
           S, ck_cli_device_name(ctx), warmup, runs, first, med, mn, p95, ck_ctx_activation_bytes(ctx) / 1048576.0,
           ck_ctx_weight_bytes(ctx) / 1048576.0, ru.ru_maxrss / 1024.0, (double)alpha[(size_t)S * S / 2 + S / 2]);
    free(x);
    free(alpha);
    free(t);
    ck_ctx_free(ctx);
    return 0;
}
