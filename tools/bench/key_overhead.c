/* The C side of the Python-call overhead measurement (tools/bench/key_overhead.py runs both): ck_key_image
 * (the network, then the host post-processing: what ckey.Keyer.key() calls as ck_key_image_begin +
 * ck_result_finish) on one frame read from raw float32 files, timed wall-clock per call.
 *
 *     cmake --build BUILD --target key_overhead_bench
 *     BUILD/fuzz/key_overhead_bench CHECKPOINT SIZE DEVICE(cpu|cuda) W H RGB.f32 HINT.f32 WARMUP RUNS [fresh|reuse]
 *
 * fresh (the default): every call keys into a zeroed ck_result and frees it (new output buffers per call, as
 * Keyer.key() without out=). reuse: every call keys into one ck_result kept from call to call
 * (ck_key_image_into: the buffers of the first warm-up call are written again, as Keyer.key(out=...)).
 * RGB.f32: (H, W, 3) float32, HINT.f32: (H, W) float32, native byte order. Prints one JSON line: the
 * median, minimum and every time in ms. Public header only. */
#define _POSIX_C_SOURCE 200809L
#include "ckey.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float *read_floats(const char *path, size_t n) {
    float *v = malloc(sizeof(float) * n);
    FILE  *f = fopen(path, "rb");
    if (!v || !f || fread(v, sizeof(float), n, f) != n) {
        fprintf(stderr, "key_overhead_bench: cannot read %zu floats from %s\n", n, path);
        exit(1);
    }
    fclose(f);
    return v;
}

int main(int argc, char **argv) {
    const int reuse = argc == 11 && !strcmp(argv[10], "reuse");
    if ((argc != 10 && argc != 11) || (argc == 11 && !reuse && strcmp(argv[10], "fresh"))) {
        fprintf(stderr, "usage: key_overhead_bench CHECKPOINT SIZE cpu|cuda W H RGB.f32 HINT.f32 WARMUP RUNS [fresh|reuse]\n");
        return 2;
    }
    const int w = atoi(argv[4]), h = atoi(argv[5]), warmup = atoi(argv[8]), runs = atoi(argv[9]);
    ck_params p = ck_params_default();
    p.size      = atoi(argv[2]);
    p.device    = !strcmp(argv[3], "cuda") ? CK_DEVICE_CUDA : !strcmp(argv[3], "cpu") ? CK_DEVICE_CPU : CK_DEVICE_AUTO;
    if (w < 1 || h < 1 || runs < 1 || warmup < 0) return fprintf(stderr, "key_overhead_bench: bad sizes or counts\n"), 2;
    ck_image rgb  = {w, h, 3, read_floats(argv[6], (size_t)w * h * 3)};
    ck_image hint = {w, h, 1, read_floats(argv[7], (size_t)w * h)};
    ck_ctx  *ctx  = NULL;
    if (ck_ctx_init(&ctx, argv[1], &p) != CK_OK) return fprintf(stderr, "%s\n", ck_ctx_last_error(ctx)), 1;
    double   *t    = malloc(sizeof(double) * (size_t)runs);
    ck_result kept = {{0}}; /* reuse: allocated by the first call, written in place by the others */
    for (int i = 0; i < warmup + runs; i++) {
        ck_result    res = {{0}};
        const double t0  = now_ms();
        /* fresh: the free is not timed (key_overhead.py drops the Python result after its clock stops too) */
        const ck_status st = reuse ? ck_key_image_into(ctx, &rgb, &hint, NULL, &kept) : ck_key_image(ctx, &rgb, &hint, &res);
        const double    dt = now_ms() - t0;
        if (st != CK_OK) return fprintf(stderr, "%s\n", ck_ctx_last_error(ctx)), 1;
        ck_result_free(&res);
        if (i >= warmup) t[i - warmup] = dt;
    }
    ck_result_free(&kept);
    printf("{\"device\": \"%s\", \"precision\": \"%s\", \"size\": %d, \"frame\": \"%dx%d\", \"mode\": \"%s\", "
           "\"runs\": %d, \"times_ms\": [",
           ck_ctx_device_name(ctx), ck_ctx_precision_name(ctx), p.size, w, h, reuse ? "reuse" : "fresh", runs);
    for (int i = 0; i < runs; i++) printf("%s%.4f", i ? ", " : "", t[i]);
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    printf("], \"median_ms\": %.4f, \"min_ms\": %.4f}\n", runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]),
           t[0]);
    free(t), free(rgb.data), free(hint.data);
    ck_ctx_free(ctx);
    return 0;
}
