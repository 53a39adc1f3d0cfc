/* `ckey bench`: times the network alone (pre-processed input in, alpha/fg out) at one size, with
 * warm-up runs, and prints one JSON object: first-run, median, min, p95 (ms), memory figures.
 * Median rule: the middle element of the sorted times for odd counts, the mean of the two middle
 * elements for even counts. p95: the element at index ceil(0.95·n) − 1 of the sorted times. */
#include "ckey.h"
#include "cli.h"
#include "ctx.h"
#include "io/npy.h"
#include "ops/ops.h"

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
               "                  [--precision fp32|bf16|fp16] [--sdpa 0|1] [--pad64 0|1] [--compile 0|1]\n"
               "                  [--stage-gc 0|1] [--slim 0|1] [--threads N] [--head-dim N] [--dump FILE.npy]\n"
               "                  [--profile 0|1]\n"
               "Times the network alone on a deterministic structured input and prints one JSON line:\n"
               "first_ms (first frame after load: planning done, includes graph capture with --compile 1),\n"
               "median_ms, min_ms, p95_ms of the forward over --runs timed runs after --warmup untimed ones\n"
               "(defaults 3 and 10; device events on CUDA, input already on the device), e2e_median_ms\n"
               "(upload + forward + download), activation/weight MiB, device peak MiB and host peak RSS.\n"
               "--dump writes the last output (S, S, 4: alpha, fg R, G, B) as .npy. --profile 1 adds a\n"
               "per-op time table (stderr) from extra synchronized runs without a CUDA graph.\n");
}

static double time_compute(ck_ctx *ctx) {
    ck_backend *be = ctx->be;
    if (be->ext.timer_mark) {
        be->ext.timer_mark(be, 0);
        ck__ctx_compute(ctx);
        be->ext.timer_mark(be, 1);
        return be->ext.timer_elapsed_ms(be);
    }
    double t0 = now_ms();
    ck__ctx_compute(ctx);
    be->synchronize(be);
    return now_ms() - t0;
}

static int flag01(const char *opt, const char *v, int *out) {
    if (v && (!strcmp(v, "0") || !strcmp(v, "1"))) {
        *out = v[0] == '1';
        return 1;
    }
    fprintf(stderr, "ckey: %s expects 0 or 1, got '%s'\n", opt, v ? v : "");
    return 0;
}

int ck_cli_bench(int argc, char **argv) {
    const char *ckpt   = NULL, *dump = NULL;
    int         profile = 0;
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
        } else if (!strcmp(a, "--precision")) {
            if (!ck_cli_parse_precision(v, &p.precision)) return 2;
        } else if (!strcmp(a, "--sdpa")) {
            if (!flag01(a, v, &p.fused_attention)) return 2;
        } else if (!strcmp(a, "--pad64")) {
            if (!flag01(a, v, &p.pad64)) return 2;
        } else if (!strcmp(a, "--compile")) {
            if (!flag01(a, v, &p.cuda_graph)) return 2;
        } else if (!strcmp(a, "--stage-gc")) {
            if (!flag01(a, v, &p.stage_gc)) return 2;
        } else if (!strcmp(a, "--slim")) {
            int slim;
            if (!flag01(a, v, &slim)) return 2;
            p.keep_intermediates = !slim;
        } else if (!strcmp(a, "--dump")) {
            dump = v;
        } else if (!strcmp(a, "--profile")) {
            if (!flag01(a, v, &profile)) return 2;
            if (profile) p.cuda_graph = 0;
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
    if (ck_run_network(ctx, x, alpha, NULL) != CK_OK) {
        fprintf(stderr, "ckey: bench: %s\n", ck_ctx_last_error(ctx));
        return 1;
    }
    double first = now_ms() - t0;
    for (int i = 0; i < warmup; i++) ck_run_network(ctx, x, alpha, NULL);
    double *e2e = malloc(sizeof(double) * (size_t)runs);
    for (int i = 0; i < runs; i++) {
        double t1 = now_ms();
        ck__ctx_upload(ctx);
        t[i] = time_compute(ctx);
        ck__ctx_download(ctx);
        e2e[i] = now_ms() - t1;
    }
    if (profile) { /* separate pass: synchronizing per op would distort the timings above */
        ck_ops_profile_enable(1);
        for (int i = 0; i < runs; i++) ck__ctx_compute(ctx);
        ck_ops_profile_report(stderr, runs);
        ck_ops_profile_enable(0);
    }
    double mn = t[0];
    for (int i = 1; i < runs; i++) mn = t[i] < mn ? t[i] : mn;
    double med = ck_cli_median(t, runs), p95 = ck_cli_p95(t, runs), e2e_med = ck_cli_median(e2e, runs);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const ck_params *pp = ck_ctx_params(ctx);
    printf("{\"size\": %d, \"device\": \"%s\", \"precision\": \"%s\", \"sdpa\": %d, \"pad64\": %d, "
           "\"compile\": %d, \"stage_gc\": %d, \"slim\": %d, \"warmup\": %d, \"runs\": %d, "
           "\"first_ms\": %.3f, \"median_ms\": %.3f, \"min_ms\": %.3f, \"p95_ms\": %.3f, \"e2e_median_ms\": %.3f, "
           "\"activation_mib\": %.1f, \"weights_mib\": %.1f, \"device_peak_mib\": %.1f, \"peak_rss_mib\": %.1f, "
           "\"alpha_center\": %.6f}\n",
           S, ck_cli_device_name(ctx), ck_dtype_name(ctx->be->act_dtype), pp->fused_attention, pp->pad64, pp->cuda_graph,
           pp->stage_gc, !pp->keep_intermediates, warmup, runs, first, med, mn, p95, e2e_med,
           ck_ctx_activation_bytes(ctx) / 1048576.0, ck_ctx_weight_bytes(ctx) / 1048576.0,
           ck_ctx_device_peak_bytes(ctx) / 1048576.0, ru.ru_maxrss / 1024.0, (double)ctx->host_out[((size_t)S * S / 2 + S / 2) * 4]);
    if (dump) {
        ck_err        err      = {{0}};
        const int64_t shape[3] = {S, S, 4};
        if (ck_npy_write(dump, ctx->host_out, 3, shape, &err) != CK_OK) return 1;
    }
    free(e2e);
    free(x);
    free(alpha);
    free(t);
    ck_ctx_free(ctx);
    return 0;
}
