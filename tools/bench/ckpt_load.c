/* Checkpoint load time: reading the file (ck_bench_checkpoint_read) plus one pass over every tensor's bytes (what the weight loader
 * does), with the file in the page cache (warm) and dropped from it first (cold, posix_fadvise DONTNEED),
 * and the whole CPU context set-up (ck_ctx_init, fp32: the weights used in place) on a warm cache.
 *
 *     cmake --build BUILD --target ckpt_load_bench
 *     BUILD/ckpt_load_bench /tmp/base_plus.safetensors [runs]
 *
 * A missing file is first written as the synthetic Hiera-B+ checkpoint random:base_plus (about 400 MB of
 * float32 safetensors), so the figures need no download. Prints one line per measurement, median of runs.
 */
#define _POSIX_C_SOURCE 200809L
#include "ckey.h"
#include "ckey_bench.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void drop_cache(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

/* open + a pass over every tensor byte; returns the sum so the pass cannot be optimized away */
static unsigned long long open_and_touch(const char *path, double *open_ms, double *touch_ms) {
    ck_err             err = {{0}};
    unsigned long long sum = 0;
    if (ck_bench_checkpoint_read(path, open_ms, touch_ms, &sum, &err) != CK_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    return sum;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CHECKPOINT [runs]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    const int   runs = argc > 2 ? atoi(argv[2]) : 5;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        ck_err err = {{0}};
        if (ck_checkpoint_write_safetensors("random:base_plus", path, &err) != CK_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        stat(path, &sb);
    }
    printf("%s: %.1f MB\n", path, (double)sb.st_size / 1e6);
    double             o[64], t[64], c[64];
    unsigned long long sum = 0;
    for (int cold = 0; cold < 2; cold++) {
        for (int r = 0; r < runs && r < 64; r++) {
            if (cold) drop_cache(path);
            sum += open_and_touch(path, &o[r], &t[r]);
            c[r] = o[r] + t[r];
        }
        printf("%s: open %.1f ms, pass over the tensors %.1f ms, together %.1f ms (median of %d)\n",
               cold ? "cold" : "warm", median(o, runs), median(t, runs), median(c, runs), runs);
    }
    ck_params p = ck_params_default();
    p.device    = CK_DEVICE_CPU;
    p.precision = CK_PREC_FP32;
    p.size      = 512;
    for (int r = 0; r < runs && r < 64; r++) {
        ck_ctx *ctx;
        double  t0 = now_ms();
        if (ck_ctx_init(&ctx, path, &p) != CK_OK) {
            fprintf(stderr, "%s\n", ck_ctx_last_error(ctx));
            return 1;
        }
        c[r] = now_ms() - t0;
        ck_ctx_free(ctx);
    }
    printf("warm: ck_ctx_init on the CPU (fp32, S = 512) %.1f ms (median of %d)\n", median(c, runs), runs);
    return sum == 42 ? 3 : 0; /* keeps the sum alive */
}
