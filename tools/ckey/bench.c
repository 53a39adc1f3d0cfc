/* `ckey bench`: timings and memory.
 *
 * Single configuration (no --sweep): times the network alone (pre-processed input already on the
 * device) at one size and prints one JSON line: first-run, median, min, p95 (ms), memory figures.
 *
 * Sweeps (--sweep ablation|key|full|isolate, definitions in sweep.h): for each resolution (outer loop)
 * every configuration of the toggles, then the tiled rows; each row on a fresh context. One timed run
 * is one frame: ck_bench_preprocess (where gpu_preprocess says) + ck_bench_compute + device sync, so the
 * pre-processing is timed in every row. Tiled rows time ck_key_image per frame. Peak memory: the
 * context's device peak on CUDA; on the CPU each row runs in its own child process and its peak RSS is
 * reported (the only honest per-row figure for host memory, which never shrinks within a process).
 *
 * Median rule: the middle element of the sorted times for odd counts, the mean of the two middle
 * elements for even counts. p95: the element at index ceil(0.95·n) − 1 of the sorted times. */
#include "ckey.h"
#include "ckey_bench.h"
#include "ckey_io.h"
#include "cli.h"
#include "sweep.h"
#include "cmd_opts.h"
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BENCH_DEFAULT_CKPT "random:base_plus"

double ck_cli_median(double *v, int n) { return ck_sweep_median(v, n); }
double ck_cli_p95(double *v, int n) { return ck_sweep_p95(v, n); }

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void usage_bench(FILE *f) {
    fprintf(f,
            "usage: ckey bench [--checkpoint FILE] [--size N] [--warmup N] [--runs N] [options]\n"
            "       ckey bench --sweep ablation|key|full|isolate [--resolution N ...] [--tiled T/O ...]\n"
            "                  [--toggles LIST] [--half fp16|bf16] [--md FILE] [--json FILE|-] [other options]\n"
            "\n"
            "Single configuration: times the network alone on a deterministic structured input and prints\n"
            "one JSON line: first_ms (first frame after load: planning done, includes graph capture with\n"
            "--compile), median_ms, min_ms, p95_ms of the forward over --runs timed runs after --warmup\n"
            "untimed ones (device events on CUDA, input already on the device), e2e_median_ms (upload +\n"
            "forward + download), activation/weight MiB, device peak MiB and host peak RSS.\n"
            "\n");
    ck_opts_help(f, CK_CMD_BENCH);
    fprintf(f,
            "\n"
            "Sweeps (the seed benchmarks' definitions): toggles slim (no kept intermediates), stage_gc,\n"
            "sdpa (fused attention), bf16 (16-bit activations vs fp32), fused_decode, gpu_preprocess,\n"
            "compile (CUDA Graph), pad64. ablation: all on, each off alone, all off (\"baseline\"); key: the\n"
            "seed's six rows (compile and pad64 on in the all-on row only); full: every combination;\n"
            "isolate: all off, then each alone. Labels join the toggles that are on with \"+\".\n"
            "On the CPU bf16, compile and gpu_preprocess are not available and are dropped (the header says so).\n"
            "Per row: First (the first frame after load, incl. graph capture: the first of the --warmup runs),\n"
            "then --warmup - 1 untimed runs, then --runs timed ones: median, min, p95. A timed run is one\n"
            "frame: pre-processing of a res x res structured RGB + hint frame + network + device sync.\n"
            "Median: the mean of the two middle values for even n (the seed scripts took sorted[n//2]; the JSON\n"
            "also gives that as median_upper_ms). p95: sorted[ceil(0.95 n) - 1].\n"
            "Peak memory is measured per row on a fresh context: device peak on CUDA; on the CPU every row\n"
            "runs in its own process and its peak RSS is reported. Speed and memory are relative to the\n"
            "baseline row (all toggles off) of the resolution, else its first row. Progress goes to stderr.\n");
}

static double time_compute(ck_ctx *ctx, int n) {
    ck_bench_timer_start(ctx);
    ck_bench_compute(ctx, n);
    return ck_bench_timer_ms(ctx);
}

/* bench_opts: cmd_opts.h */

static int make_frame_wh(int w, int h, ck_image *rgb, ck_image *hint);

/* ck_key_passes on a w × h frame (plate in, every pass out: upload, pre-processing, forward,
 * post-processing, download), inputs in page-locked or ordinary memory; median wall ms over runs. */
static double time_passes(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, int pinned_inputs, int warmup,
                          int runs, double *t) {
    ck_image  r = *rgb, hh = *hint;
    int       pr = 0, ph = 0;
    ck_passes pv = {0};
    if (pinned_inputs) {
        const size_t nr = sizeof(float) * 3 * (size_t)rgb->width * rgb->height, nh = sizeof(float) * (size_t)hint->width * hint->height;
        r.data  = ck_ctx_host_alloc(ctx, nr, &pr);
        hh.data = ck_ctx_host_alloc(ctx, nh, &ph);
        memcpy(r.data, rgb->data, nr), memcpy(hh.data, hint->data, nh);
    }
    ck_status st = CK_OK;
    for (int i = 0; i < warmup && st == CK_OK; i++) st = ck_key_passes(ctx, &r, &hh, &pv);
    for (int i = 0; i < runs && st == CK_OK; i++) {
        const double t0 = now_ms();
        st              = ck_key_passes(ctx, &r, &hh, &pv);
        t[i]            = now_ms() - t0;
    }
    ck_passes_free(ctx, &pv);
    if (pinned_inputs) {
        ck_ctx_host_free(ctx, r.data, sizeof(float) * 3 * (size_t)rgb->width * rgb->height, pr);
        ck_ctx_host_free(ctx, hh.data, sizeof(float) * (size_t)hint->width * hint->height, ph);
    }
    if (st != CK_OK) {
        fprintf(stderr, "ckey: bench --frame: %s\n", ck_ctx_last_error(ctx));
        return -1.0;
    }
    return ck_cli_median(t, runs);
}

/* --input: a (S, S, 4) float .npy (the network's pre-processed input) into x. */
static int read_input(const char *path, int S, float *x) {
    ck_err err = {{0}};
    ck_npy a   = {0};
    if (ck_npy_read(path, &a, &err) != CK_OK) return 0; /* the reader has logged the message */
    const int ok = a.ndim == 3 && a.shape[0] == S && a.shape[1] == S && a.shape[2] == 4;
    if (ok) memcpy(x, a.data, sizeof(float) * (size_t)S * S * 4);
    else fprintf(stderr, "ckey: %s: expected a (%d, %d, 4) array for --size %d\n", path, S, S, S);
    ck_npy_free(&a);
    return ok;
}

/* --dump-intermediates: the kept tensors of the last forward as float32 .npy files (NHWC). */
static int dump_intermediates(ck_ctx *ctx, const char *dir) {
    const char *name;
    for (int i = 0; (name = ck_bench_intermediate_name(i)) != NULL; i++) {
        float    *out = NULL;
        int       ndim = 0;
        int64_t   shape[8];
        ck_status st = ck_bench_intermediate(ctx, name, &out, &ndim, shape);
        if (st == CK_STATUS_EMISSING) continue; /* not kept (no refiner, say) */
        if (st != CK_OK) {
            fprintf(stderr, "ckey: %s: %s\n", name, ck_ctx_last_error(ctx));
            return 0;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.npy", dir, name);
        ck_err err = {{0}};
        st         = ck_npy_write(path, out, ndim, shape, &err);
        free(out);
        if (st != CK_OK) return 0; /* logged by the writer */
    }
    return 1;
}

/* ---- single configuration (the original mode; scripts parse its JSON line) ---- */

static int bench_single(const bench_opts *o) {
    ck_params p   = o->p;
    int       runs = o->runs, warmup = o->warmup;
    ck_ctx   *ctx = NULL;
    if (ck_ctx_init(&ctx, o->ckpt, &p) != CK_OK) {
        ck_ctx_free(ctx);
        return 1;
    }
    const int    S = ck_ctx_params(ctx)->size, nb = ck_ctx_max_batch(ctx); /* S = the tile when tiled */
    const size_t P = (size_t)S * S;
    float       *x = malloc(sizeof(float) * P * 4 * nb), *alpha = malloc(sizeof(float) * P * nb);
    double      *t = malloc(sizeof(double) * (size_t)runs), *e2e = malloc(sizeof(double) * (size_t)runs);
    if (!x || !alpha || !t || !e2e) {
        fprintf(stderr, "ckey: out of memory\n");
        return 1;
    }
    if (o->input) {
        if (!read_input(o->input, S, x)) return 1;
        for (int b = 1; b < nb; b++) memcpy(x + P * 4 * b, x, sizeof(float) * P * 4);
    } else { /* smooth structured input (not zeros: zeros can run faster than real data), shifted per image */
        for (int b = 0; b < nb; b++)
            for (int y = 0; y < S; y++)
                for (int xx = 0; xx < S; xx++)
                    for (int c = 0; c < 4; c++)
                        x[P * 4 * b + ((size_t)y * S + xx) * 4 + c] =
                            (float)(sin(0.013 * (xx + 1 + 37 * b) * (c + 1)) * cos(0.021 * (y + 11 * b)) * 1.5);
    }
    double t0 = now_ms();
    if (ck_run_network_batch(ctx, nb, x, alpha, NULL) != CK_OK) {
        fprintf(stderr, "ckey: bench: %s\n", ck_ctx_last_error(ctx));
        return 1;
    }
    double first = now_ms() - t0;
    for (int i = 0; i < warmup; i++) ck_run_network_batch(ctx, nb, x, alpha, NULL);
    for (int i = 0; i < runs; i++) {
        double t1 = now_ms();
        ck_bench_upload(ctx, nb);
        t[i] = time_compute(ctx, nb);
        ck_bench_download(ctx, nb);
        e2e[i] = now_ms() - t1;
    }
    if (o->profile) { /* separate pass: synchronizing per op would distort the timings above */
        ck_bench_profile(1);
        for (int i = 0; i < runs; i++) ck_bench_compute(ctx, nb);
        ck_bench_profile_report(stderr, runs);
        ck_bench_profile(0);
    }
    double mn = ck_sweep_min(t, runs);
    double med = ck_cli_median(t, runs), p95 = ck_cli_p95(t, runs), e2e_med = ck_cli_median(e2e, runs);
    char   frame_json[256] = "";
    if (o->frame_w > 0) {
        ck_image rgb = {0}, hint = {0};
        double  *tf  = malloc(sizeof(double) * (size_t)runs);
        if (!tf || !make_frame_wh(o->frame_w, o->frame_h, &rgb, &hint)) {
            fprintf(stderr, "ckey: out of memory for a %dx%d frame\n", o->frame_w, o->frame_h);
            return 1;
        }
        const double pinned = time_passes(ctx, &rgb, &hint, 1, warmup, runs, tf);
        const double plain  = time_passes(ctx, &rgb, &hint, 0, warmup, runs, tf);
        if (pinned < 0 || plain < 0) return 1;
        snprintf(frame_json, sizeof frame_json,
                 "\"frame\": \"%dx%d\", \"frame_postprocess_on_device\": %s, \"frame_median_ms\": %.3f, "
                 "\"frame_pageable_inputs_median_ms\": %.3f, ",
                 o->frame_w, o->frame_h, ck_ctx_postprocess_on_device(ctx) ? "true" : "false", pinned, plain);
        free(tf), free(rgb.data), free(hint.data);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const ck_params *pp = ck_ctx_params(ctx);
    printf("{\"size\": %d, \"device\": \"%s\", \"precision\": \"%s\", \"sdpa\": %d, \"pad64\": %d, "
           "\"compile\": %d, \"stage_gc\": %d, \"slim\": %d, \"warmup\": %d, \"runs\": %d, \"batch\": %d, "
           "\"tile\": %d, \"tile_overlap\": %d, \"first_ms\": %.3f, \"median_ms\": %.3f, \"per_image_ms\": %.3f, "
           "\"min_ms\": %.3f, \"p95_ms\": %.3f, \"e2e_median_ms\": %.3f, "
           "\"activation_mib\": %.1f, \"weights_mib\": %.1f, \"device_peak_mib\": %.1f, \"peak_rss_mib\": %.1f, "
           "%s\"alpha_center\": %.6f, \"checkpoint\": \"%s\"}\n",
           S, ck_ctx_device_name(ctx), ck_ctx_precision_name(ctx), pp->fused_attention, pp->pad64, pp->cuda_graph,
           pp->stage_gc, !pp->keep_intermediates, warmup, runs, nb, pp->tile, pp->tile_overlap, first, med, med / nb, mn,
           p95, e2e_med,
           ck_ctx_activation_bytes(ctx) / 1048576.0, ck_ctx_weight_bytes(ctx) / 1048576.0,
           ck_ctx_device_peak_bytes(ctx) / 1048576.0, ru.ru_maxrss / 1024.0, frame_json,
           (double)ck_bench_output(ctx)[((size_t)S * S / 2 + S / 2) * 4], o->ckpt);
    if (o->dump) {
        ck_err        err      = {{0}};
        const int64_t shape[3] = {S, S, 4};
        if (ck_npy_write(o->dump, ck_bench_output(ctx), 3, shape, &err) != CK_OK) return 1;
    }
    if (o->dump_inter && !dump_intermediates(ctx, o->dump_inter)) return 1;
    free(e2e);
    free(x);
    free(alpha);
    free(t);
    ck_ctx_free(ctx);
    return 0;
}

/* ---- sweeps ---- */

/* A green-screen-like frame: a soft disk subject with stripes over an unevenly lit green screen, a
 * little deterministic grain; hint = the subject's soft coverage in [0.05, 0.95], so no tile is
 * skipped as all-background or all-foreground and every tile of a tiled row runs the network. */
static int make_frame_wh(int w, int h, ck_image *rgb, ck_image *hint) {
    rgb->width = hint->width = w;
    rgb->height = hint->height = h;
    rgb->channels = 3, hint->channels = 1;
    rgb->data  = malloc(sizeof(float) * (size_t)w * h * 3);
    hint->data = malloc(sizeof(float) * (size_t)w * h);
    if (!rgb->data || !hint->data) return 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const double u = (x + 0.5) / w, v = (y + 0.5) / h, r = hypot(u - 0.5, v - 0.55);
            const double a  = 1.0 / (1.0 + exp((r - 0.3) / 0.01));   /* subject coverage */
            const double ah = 1.0 / (1.0 + exp((r - 0.3) / 0.06));   /* rough hint */
            const double lit = 0.85 + 0.15 * u - 0.1 * (r * r);
            const double stripe = 0.8 + 0.2 * sin(60.0 * u + 20.0 * v);
            const double fg[3] = {0.78 * stripe, 0.52 * stripe, 0.42 * stripe}, bg[3] = {0.12 * lit, 0.66 * lit, 0.22 * lit};
            const size_t i = (size_t)y * w + x;
            const unsigned g = (unsigned)(i * 2654435761u) >> 24; /* grain in [0, 255] */
            for (int c = 0; c < 3; c++) rgb->data[3 * i + c] = (float)(a * fg[c] + (1 - a) * bg[c] + (g - 127.5) / 255.0 * 0.02);
            hint->data[i] = (float)(0.05 + 0.9 * ah);
        }
    return 1;
}

static int make_frame(int n, ck_image *rgb, ck_image *hint) { return make_frame_wh(n, n, rgb, hint); }

/* One frame of a full-frame row: pre-processing + network + device sync (event timers on CUDA). */
static double full_frame(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, ck_status *st) {
    ck_bench_timer_start(ctx);
    *st = ck_bench_preprocess(ctx, rgb, hint);
    if (*st == CK_OK) *st = ck_bench_compute(ctx, 1);
    return ck_bench_timer_ms(ctx);
}

/* One frame of a tiled row. On the device, as a full-frame row: the tiles' pre-processing + the batched
 * forwards + the blend + device sync (event timers). Else ck_key_image on the whole frame (wall clock;
 * it ends with the host's finishing). */
static double tiled_frame(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, ck_status *st) {
    if (ck_bench_tiled_on_device(ctx, rgb->width, rgb->height) && ck_bench_has_device_timer(ctx)) {
        ck_bench_timer_start(ctx);
        *st = ck_bench_key_tiled(ctx, rgb, hint);
        return ck_bench_timer_ms(ctx);
    }
    ck_result    res = {0};
    const double t0  = now_ms();
    *st              = ck_key_image(ctx, rgb, hint, &res);
    const double t   = now_ms() - t0;
    ck_result_free(&res);
    return t;
}

/* Runs one row in this process; fills everything but, on the CPU, peak_mib. */
static void run_row(const bench_opts *o, unsigned avail, ck_sweep_row *r) {
    ck_params p = o->p;
    if (r->tile) {
        p.tile = r->tile, p.tile_overlap = r->overlap;
        p.despill = 0, p.despeckle = 0, p.comp = 0; /* time the keying, not the finishing */
        if (o->half_set && p.device == CK_DEVICE_CUDA) p.precision = o->half;
    } else {
        p.size = r->res;
        ck_sweep_apply(r->mask, avail, o->half, &p);
    }
    ck_image rgb = {0}, hint = {0};
    ck_ctx  *ctx = NULL;
    double  *t   = malloc(sizeof(double) * (size_t)o->runs);
    if (!t || !make_frame(r->res, &rgb, &hint)) {
        snprintf(r->error, sizeof r->error, "out of memory for a %dx%d frame", r->res, r->res);
        goto done;
    }
    if (ck_ctx_init(&ctx, o->ckpt, &p) != CK_OK) {
        snprintf(r->error, sizeof r->error, "%s", ck_ctx_last_error(ctx));
        goto done;
    }
    snprintf(r->precision, sizeof r->precision, "%s", ck_ctx_precision_name(ctx));
    double (*frame)(ck_ctx *, const ck_image *, const ck_image *, ck_status *) = r->tile ? tiled_frame : full_frame;
    ck_status    st = CK_OK;
    const double t0 = now_ms();
    frame(ctx, &rgb, &hint, &st); /* the first frame after load, graph capture included */
    r->first_ms = now_ms() - t0;
    for (int i = 1; i < o->warmup && st == CK_OK; i++) frame(ctx, &rgb, &hint, &st);
    for (int i = 0; i < o->runs && st == CK_OK; i++) t[i] = frame(ctx, &rgb, &hint, &st);
    if (st != CK_OK) {
        snprintf(r->error, sizeof r->error, "%s", ck_ctx_last_error(ctx));
        goto done;
    }
    r->min_ms          = ck_sweep_min(t, o->runs);
    r->median_ms       = ck_sweep_median(t, o->runs);
    r->median_upper_ms = ck_sweep_median_upper(t, o->runs);
    r->p95_ms          = ck_sweep_p95(t, o->runs);
    r->peak_mib        = ck_ctx_device_peak_bytes(ctx) / 1048576.0;
    r->activation_mib  = ck_ctx_activation_bytes(ctx) / 1048576.0;
    r->weights_mib     = ck_ctx_weight_bytes(ctx) / 1048576.0;
    r->ok              = 1;
done:
    ck_ctx_free(ctx);
    free(rgb.data), free(hint.data), free(t);
}

static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return 0;
        p += w, n -= (size_t)w;
    }
    return 1;
}

static size_t read_all(int fd, void *buf, size_t n) {
    char  *p   = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}

/* CPU rows: a child process per row, so its peak RSS is that row's alone. The parent never starts the
 * engine (no OpenMP threads, no CUDA), so forking is safe. */
static void run_row_forked(const bench_opts *o, unsigned avail, ck_sweep_row *r) {
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(r->error, sizeof r->error, "pipe: %s", strerror(errno));
        return;
    }
    fflush(stdout), fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(r->error, sizeof r->error, "fork: %s", strerror(errno));
        close(fd[0]), close(fd[1]);
        return;
    }
    if (pid == 0) {
        close(fd[0]);
        run_row(o, avail, r);
        _exit(write_all(fd[1], r, sizeof *r) ? 0 : 1);
    }
    close(fd[1]);
    const ck_sweep_row want = *r;
    const size_t       got  = read_all(fd[0], r, sizeof *r);
    close(fd[0]);
    int           status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
    if (got != sizeof *r) {
        *r    = want;
        r->ok = 0;
        if (WIFSIGNALED(status))
            snprintf(r->error, sizeof r->error, "the row's process died (signal %d)", WTERMSIG(status));
        else
            snprintf(r->error, sizeof r->error, "the row's process exited (%d) without a result", WEXITSTATUS(status));
        return;
    }
    r->peak_mib = ru.ru_maxrss / 1024.0; /* KiB on Linux */
}

/* One throwaway frame of the tiny model: the process's one-time CUDA start-up (module loading, library
 * handles) would otherwise land in the first row's First alone. CPU rows run in fresh processes, each
 * paying its own start-up, so they need none. */
static void cuda_warmup(void) {
    ck_params p = ck_params_default();
    p.size      = 64;
    p.device    = CK_DEVICE_CUDA;
    ck_image rgb = {0}, hint = {0};
    ck_ctx  *ctx = NULL;
    ck_status st;
    if (make_frame(64, &rgb, &hint) && ck_ctx_init(&ctx, "random:tiny", &p) == CK_OK) full_frame(ctx, &rgb, &hint, &st);
    ck_ctx_free(ctx);
    free(rgb.data), free(hint.data);
}

static void first_line(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    buf[0]  = '\0';
    if (!f) return;
    if (fgets(buf, (int)n, f)) buf[strcspn(buf, "\r\n")] = '\0';
    fclose(f);
}

/* The checked-out commit when run from a git work tree (.git/HEAD, then its ref file or packed-refs),
 * abbreviated to 7 hex digits; "" otherwise. */
static void git_head(char *buf, size_t n) {
    char head[256], ref[300], line[512];
    buf[0] = '\0';
    first_line(".git/HEAD", head, sizeof head);
    if (!strncmp(head, "ref: ", 5)) {
        snprintf(ref, sizeof ref, ".git/%s", head + 5);
        first_line(ref, line, sizeof line);
        if (!line[0]) { /* packed: "<sha> <ref>" lines */
            FILE *f = fopen(".git/packed-refs", "r");
            while (f && fgets(line, sizeof line, f)) {
                line[strcspn(line, "\r\n")] = '\0';
                const char *sp = strchr(line, ' ');
                if (sp && !strcmp(sp + 1, head + 5)) {
                    line[sp - line] = '\0';
                    break;
                }
                line[0] = '\0';
            }
            if (f) fclose(f);
        }
    } else {
        snprintf(line, sizeof line, "%s", head); /* detached: the sha itself */
    }
    if (strlen(line) >= 7 && strspn(line, "0123456789abcdef") >= 7) snprintf(buf, n, "%.7s", line);
}

static void cpu_model(char *buf, size_t n) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char  line[512];
    snprintf(buf, n, "CPU");
    while (f && fgets(line, sizeof line, f)) {
        char *c = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && c) {
            snprintf(buf, n, "%s", c + 2);
            buf[strcspn(buf, "\r\n")] = '\0';
            break;
        }
    }
    if (f) fclose(f);
}

static int bench_sweep(const bench_opts *o) {
    /* the device up front: the header names it, and CPU rows fork */
    ck_device      dev = o->p.device;
    ck_device_info di;
    memset(&di, 0, sizeof di);
    if (dev != CK_DEVICE_CPU) {
        /* ckey runs on device 0, sm_80 or newer */
        const int have = ck_cuda_device_count() > 0 && ck_cuda_device_info(0, &di) == CK_OK && di.cc_major >= 8;
        if (!have && dev == CK_DEVICE_CUDA) {
            fprintf(stderr, "ckey: --device cuda: no usable CUDA device (sm_80 or newer)\n");
            return 1;
        }
        dev = have ? CK_DEVICE_CUDA : CK_DEVICE_CPU;
        if (!have) fprintf(stderr, "ckey: no usable CUDA device; sweeping on the CPU\n");
    }
    const int cpu     = dev == CK_DEVICE_CPU;
    unsigned  avail   = o->toggles_set ? o->toggles : CK_TOG_ALL;
    unsigned  dropped = cpu ? avail & CK_TOG_GPU_ONLY : 0;
    avail &= ~dropped;

    unsigned masks[1u << CK_TOG_COUNT];
    const int nc = ck_sweep_configs(o->sweep, avail, masks, (int)(sizeof masks / sizeof masks[0]));
    const int n  = o->n_res * (nc + o->n_tiled);
    ck_sweep_row *rows = calloc((size_t)n, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "ckey: out of memory\n");
        return 1;
    }
    int k = 0;
    for (int ri = 0; ri < o->n_res; ri++) {
        for (int c = 0; c < nc; c++, k++) {
            rows[k].res  = o->res[ri];
            rows[k].mask = masks[c];
            ck_sweep_label(masks[c], rows[k].label, sizeof rows[k].label);
        }
        for (int ti = 0; ti < o->n_tiled; ti++, k++) {
            ck_sweep_row *r = &rows[k];
            r->res = o->res[ri], r->tile = o->tiled[ti][0], r->overlap = o->tiled[ti][1];
            const int nt = ck_bench_tiles_along(r->res, r->tile, r->overlap);
            r->tiles     = nt * nt;
            snprintf(r->label, sizeof r->label, "tiled %d/%d (%d tile%s)", r->tile, r->overlap, r->tiles,
                     r->tiles == 1 ? "" : "s");
        }
    }

    ck_params base = o->p;
    base.device    = dev;
    bench_opts ro  = *o;
    ro.p           = base;
    ck_set_log(NULL, NULL, CK_LOG_WARN); /* per-row load messages would drown the progress lines */
    if (!cpu) cuda_warmup();
    for (int i = 0; i < n; i++) {
        ck_sweep_row *r = &rows[i];
        fprintf(stderr, "ckey: bench [%d/%d] %dx%d %s ...\n", i + 1, n, r->res, r->res, r->label);
        if (cpu) run_row_forked(&ro, avail, r);
        else run_row(&ro, avail, r);
        if (r->ok)
            fprintf(stderr, "ckey: bench [%d/%d] %dx%d %s: first %.1f ms, median %.2f ms, peak %.1f MiB (%s)\n", i + 1, n,
                    r->res, r->res, r->label, r->first_ms, r->median_ms, r->peak_mib, r->precision);
        else
            fprintf(stderr, "ckey: bench [%d/%d] %dx%d %s: FAIL: %s\n", i + 1, n, r->res, r->res, r->label, r->error);
    }
    ck_sweep_relative(rows, n);

    char date[64], commit[128], name[300];
    const time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M %Z", localtime(&now));
    const char *env = getenv("CKEY_COMMIT");
    if (env && *env) snprintf(commit, sizeof commit, "%s", env);
    else git_head(commit, sizeof commit);
    if (!commit[0]) first_line("BUILD_COMMIT", commit, sizeof commit); /* copies without .git */
    if (!commit[0]) snprintf(commit, sizeof commit, "unknown");
    if (cpu) cpu_model(name, sizeof name);
    else snprintf(name, sizeof name, "%s, sm_%d%d, %.1f GiB", di.name, di.cc_major, di.cc_minor, di.total_bytes / 1073741824.0);
    ck_sweep_header h = {ck_sweep_name(o->sweep), date, cpu ? "cpu" : "cuda", name, commit, o->ckpt,
                         !strncmp(o->ckpt, "random:", 7), o->warmup, o->runs,
                         cpu ? "n/a" : o->half == CK_PREC_BF16 ? "bf16" : "fp16", cpu ? "rss" : "device",
                         avail, dropped, o->p.threads};
    int rc = 0;
    const int json_stdout = o->json && !strcmp(o->json, "-");
    if (!json_stdout) ck_sweep_write_md(stdout, &h, rows, n);
    else ck_sweep_write_json(stdout, &h, rows, n);
    if (o->md) {
        FILE *f = fopen(o->md, "w");
        if (f) ck_sweep_write_md(f, &h, rows, n);
        if (!f || fclose(f) != 0) fprintf(stderr, "ckey: %s: cannot write: %s\n", o->md, strerror(errno)), rc = 1;
    }
    if (o->json && !json_stdout) {
        FILE *f = fopen(o->json, "w");
        if (f) ck_sweep_write_json(f, &h, rows, n);
        if (!f || fclose(f) != 0) fprintf(stderr, "ckey: %s: cannot write: %s\n", o->json, strerror(errno)), rc = 1;
    }
    for (int i = 0; i < n; i++) rc |= !rows[i].ok;
    free(rows);
    return rc;
}

/* ---- options (option_table.c) ---- */

int ck_cli_bench(int argc, char **argv) {
    bench_opts o;
    memset(&o, 0, sizeof o);
    o.p      = ck_params_default();
    o.p.size = 512;
    o.warmup = 3, o.runs = 10;
    o.half   = CK_PREC_FP16;
    ck_opt_result r;
    const int     st = ck_opts_parse(CK_CMD_BENCH, argc, argv, &o, &r);
    if (st == CK_OPT_HELP) {
        usage_bench(stdout);
        return 0;
    }
    if (st != CK_OPT_OK) return 2;
#define GIVEN(name) ck_opts_given(&r, CK_CMD_BENCH, name)
    o.size_set = GIVEN("size"), o.sweep_set = GIVEN("sweep"), o.half_set = GIVEN("half");
    o.toggles_set = GIVEN("toggles");
    o.batch       = o.p.max_batch;
    if (o.dump_inter) o.p.keep_intermediates = 1;
    /* the per-op table comes from runs without a CUDA graph; the timed runs too unless --compile says */
    if (o.profile && !GIVEN("compile")) o.p.cuda_graph = 0;
    const int sweep_only = GIVEN("resolution") || GIVEN("tiled") || GIVEN("toggles") || GIVEN("half") || GIVEN("md") ||
                           GIVEN("json");
#undef GIVEN
    if (!o.ckpt) o.ckpt = BENCH_DEFAULT_CKPT;
    if (o.devices || o.clip || o.clip_hint) { /* scaling over devices */
        if (!o.devices || o.sweep_set || sweep_only || (o.clip_hint && !o.clip) || o.p.device == CK_DEVICE_CPU) {
            fprintf(stderr, "ckey: --devices measures scaling over CUDA devices alone (--clip and --clip-hint go with it; "
                            "not with --sweep or --device cpu)\n");
            return 2;
        }
        o.p.device = CK_DEVICE_CUDA;
        return bench_devices(&o);
    }
    if (!o.sweep_set) {
        if (sweep_only) {
            fprintf(stderr, "ckey: --resolution, --tiled, --toggles, --half, --md and --json need --sweep\n");
            return 2;
        }
        return bench_single(&o);
    }
    if (o.dump || o.profile || o.input || o.dump_inter) {
        fprintf(stderr, "ckey: --dump, --dump-intermediates, --input and --profile are single-configuration options "
                        "(not with --sweep)\n");
        return 2;
    }
    if (!o.n_res) o.res[o.n_res++] = o.size_set ? o.p.size : 512;
    return bench_sweep(&o);
}
