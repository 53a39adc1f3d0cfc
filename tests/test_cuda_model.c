/* End-to-end network on the CUDA backend against the CPU backend, on the tiny fixture checkpoint
 * (tools/reference/make_fixtures.py writes tests/fixtures/tiny/s128/model.safetensors).
 * Input: the fixture's x.npy (NCHW → NHWC) when present, else a deterministic synthetic frame.
 * Bounds (max abs against CPU fp32): fp32 alpha and fg ≤ 1e-4; fp16 alpha ≤ 5e-3, fg ≤ 1e-2 (the
 * project's targets). bf16 misses those targets (measured on the H200: alpha 2.1e-2, fg 1.1e-2 here,
 * 2.1e-2 / 3.6e-2 on Hiera-B+ at S=512; docs/benchmarks/2026-11-30-h200.md), so it is held to the bound
 * it does meet, alpha ≤ 3e-2 and fg ≤ 4e-2, which still catches a broken bf16 path; fp16 is the default.
 * In fp32 the intermediates (encoder features, logits, refiner delta) are compared too, so a mismatch
 * points at a stage, and a second run must reproduce the first bit for bit.
 * Skips cleanly (exit 0) without a CUDA device or without the fixture. */
#include "engine/ctx.h"
#include "harness.h"
#include "cuda_test.h"
#include "ckey_io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S 128

static int load_x(const char *dir, float *x) {
    char   path[1024];
    ck_npy ref;
    ck_err err = {{0}};
    snprintf(path, sizeof path, "%s/x.npy", dir);
    if (ck_npy_read(path, &ref, &err) != CK_OK) return 0;
    const int ok = ref.numel == (int64_t)4 * S * S;
    if (ok)
        for (int c = 0; c < 4; c++)
            for (int64_t p = 0; p < (int64_t)S * S; p++) x[p * 4 + c] = ref.data[c * (int64_t)S * S + p];
    ck_npy_free(&ref);
    return ok;
}

/* Smooth colour field with a sharp-edged matte hint: ImageNet-normalized RGB range, hint in [0, 1]. */
static void synth_x(float *x) {
    for (int y = 0; y < S; y++)
        for (int i = 0; i < S; i++) {
            float *p = x + ((size_t)y * S + i) * 4;
            p[0]     = 1.5f * sinf(0.11f * i + 0.07f * y);
            p[1]     = 1.2f * cosf(0.05f * i - 0.13f * y) + 0.3f;
            p[2]     = 0.8f * sinf(0.02f * (i + y)) - 0.4f;
            const float dx = i - 0.5f * S, dy = y - 0.55f * S;
            p[3]     = dx * dx + dy * dy < 0.09f * S * S ? 1.0f : 0.0f;
        }
}

/* Device tensor of the last forward as float32 host memory (NHWC). */
static float *fetch(ck_ctx *ctx, const ck_tensor *t) {
    const size_t n   = (size_t)ck_tensor_numel(t);
    float       *out = malloc(n * sizeof(float));
    void        *raw = malloc(ck_tensor_nbytes(t));
    CK_ASSERT(out && raw);
    ctx->be->download(ctx->be, raw, t->data, ck_tensor_nbytes(t));
    for (size_t i = 0; i < n; i++) {
        if (t->dtype == CK_DTYPE_BF16) out[i] = ck_bf16_to_f32(((const uint16_t *)raw)[i]);
        else if (t->dtype == CK_DTYPE_F16) out[i] = ck_f16_to_f32(((const uint16_t *)raw)[i]);
        else out[i] = ((const float *)raw)[i];
    }
    free(raw);
    return out;
}

static double max_abs_of(const float *a, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

typedef struct run_out {
    float *alpha, *fg;                 /* (S·S), (S·S·3) */
    float *inter[7];                   /* f1..f4, logits, logits_up, delta_raw (fp32 runs, keep) */
    size_t inter_n[7];
} run_out;

/* The largest |alpha − ref's alpha| over the S² pixels. */
static double alpha_err(const run_out *o, const run_out *ref) {
    double e = 0.0;
    for (size_t i = 0; i < (size_t)S * S; i++) e = fmax(e, fabs((double)o->alpha[i] - ref->alpha[i]));
    return e;
}

static const char *inter_name[7] = {"f1", "f2", "f3", "f4", "logits", "logits_up", "delta_raw"};

static int run(const char *ckpt, ck_device dev, ck_precision prec, const float *x, run_out *o, int keep) {
    memset(o, 0, sizeof *o);
    ck_params p          = ck_params_default();
    p.size               = S;
    p.device             = dev;
    p.precision          = prec;
    p.keep_intermediates = keep;
    ck_ctx   *ctx        = NULL;
    ck_status st         = ck_ctx_init(&ctx, ckpt, &p);
    CHECK_MSG(st == CK_OK, "init %s on %s: %s", ckpt, dev == CK_DEVICE_CUDA ? "cuda" : "cpu", ck_ctx_last_error(ctx));
    if (st != CK_OK) {
        ck_ctx_free(ctx);
        return 0;
    }
    o->alpha = malloc(sizeof(float) * S * S);
    o->fg    = malloc(sizeof(float) * S * S * 3);
    CK_ASSERT(o->alpha && o->fg);
    st = ck_run_network(ctx, x, o->alpha, o->fg);
    CHECK_MSG(st == CK_OK, "ck_run_network: %s", ck_ctx_last_error(ctx));
    if (keep) {
        const ck_model_out *m = &ctx->last;
        const ck_tensor    *t[7] = {&m->f[0], &m->f[1], &m->f[2], &m->f[3], &m->logits, &m->logits_up, &m->delta_raw};
        for (int i = 0; i < 7; i++) {
            o->inter_n[i] = (size_t)ck_tensor_numel(t[i]);
            o->inter[i]   = fetch(ctx, t[i]);
        }
    }
    ck_ctx_free(ctx);
    return st == CK_OK;
}

static void run_free(run_out *o) {
    free(o->alpha);
    free(o->fg);
    for (int i = 0; i < 7; i++) free(o->inter[i]);
    memset(o, 0, sizeof *o);
}

int main(void) {
    /* without a device there is nothing to compare */
    ck_backend *probe = cuda_backend_or_skip();
    if (!probe) return CK_TEST_SKIP;
    probe->destroy(probe);

    char dir[1024], ckpt[1100];
    test_path(dir, sizeof dir, "CK_FIXTURES", "tiny/s128");
    snprintf(ckpt, sizeof ckpt, "%s/model.safetensors", dir);
    FILE *f = fopen(ckpt, "rb");
    if (!f) {
        printf("SKIP: fixture %s not found (tools/reference/make_fixtures.py writes it)\n", ckpt);
        return 0;
    }
    fclose(f);

    float *x = malloc(sizeof(float) * S * S * 4);
    CK_ASSERT(x);
    const int from_fixture = load_x(dir, x);
    if (!from_fixture) synth_x(x);
    printf("input: %s\n", from_fixture ? "fixture x.npy" : "synthetic");

    run_out cpu, gpu;
    if (!run(ckpt, CK_DEVICE_CPU, CK_PREC_FP32, x, &cpu, 1)) {
        free(x);
        return test_summary();
    }

    const ck_precision precs[3] = {CK_PREC_FP32, CK_PREC_BF16, CK_PREC_FP16};
    const char        *names[3] = {"fp32", "bf16", "fp16"};
    const double       tol_a[3] = {1e-4, 3e-2, 5e-3}; /* alpha */
    const double       tol_f[3] = {1e-4, 4e-2, 1e-2}; /* fg */
    for (int pi = 0; pi < 3; pi++) {
        char label[64];
        if (!run(ckpt, CK_DEVICE_CUDA, precs[pi], x, &gpu, 1)) continue;
        printf("-- CUDA %s vs CPU fp32\n", names[pi]);
        if (pi == 0) {
            /* intermediates: relative to each tensor's range, for locating a mismatch */
            for (int i = 0; i < 7; i++) {
                const double R = max_abs_of(cpu.inter[i], cpu.inter_n[i]);
                snprintf(label, sizeof label, "[fp32] %s", inter_name[i]);
                check_close(label, gpu.inter[i], cpu.inter[i], cpu.inter_n[i], 1e-4 * (R > 1.0 ? R : 1.0), 0.0);
            }
            run_out again;
            if (run(ckpt, CK_DEVICE_CUDA, precs[pi], x, &again, 0)) {
                CHECK_MSG(memcmp(again.alpha, gpu.alpha, sizeof(float) * S * S) == 0 &&
                              memcmp(again.fg, gpu.fg, sizeof(float) * S * S * 3) == 0,
                          "CUDA fp32: two runs differ");
                run_free(&again);
            }
        }
        snprintf(label, sizeof label, "[%s] alpha", names[pi]);
        check_close(label, gpu.alpha, cpu.alpha, (size_t)S * S, tol_a[pi], 0.0);
        snprintf(label, sizeof label, "[%s] fg", names[pi]);
        check_close(label, gpu.fg, cpu.fg, (size_t)S * S * 3, tol_f[pi], 0.0);
        /* the slim forward (conv2 banded in place; at this size with 8-row bands the staging buffers sit
         * in the output in 16-bit precisions) against the forward that keeps everything */
        setenv("CK_REFINER_BAND", "8", 1);
        run_out slim;
        if (run(ckpt, CK_DEVICE_CUDA, precs[pi], x, &slim, 0)) {
            snprintf(label, sizeof label, "[%s] slim, 8-row bands: alpha vs keep", names[pi]);
            check_close(label, slim.alpha, gpu.alpha, (size_t)S * S, pi == 0 ? 1e-6 : 2e-3, 0.0);
            snprintf(label, sizeof label, "[%s] slim, 8-row bands: fg vs keep", names[pi]);
            check_close(label, slim.fg, gpu.fg, (size_t)S * S * 3, pi == 0 ? 1e-6 : 4e-3, 0.0);
            snprintf(label, sizeof label, "[%s] slim, 8-row bands: alpha vs CPU", names[pi]);
            check_close(label, slim.alpha, cpu.alpha, (size_t)S * S, tol_a[pi], 0.0);
            run_free(&slim);
        }
        unsetenv("CK_REFINER_BAND");
        /* the fused refiner (conv3x3_gn; this model's 16-channel refiner takes its plain kernels) */
        setenv("CK_REFINER_FUSED", "1", 1);
        run_out fz;
        if (run(ckpt, CK_DEVICE_CUDA, precs[pi], x, &fz, 0)) {
            snprintf(label, sizeof label, "[%s] fused refiner: alpha vs unfused", names[pi]);
            /* a different convolution (its own summation order) and GroupNorm statistics from moments: the two
             * differ by roundings, so the bounds scale with the format's step (bfloat16's is 8× float16's) */
            const double step = pi == 0 ? 0.005 : names[pi][0] == 'b' ? 8.0 : 1.0;
            check_close(label, fz.alpha, gpu.alpha, (size_t)S * S, 2e-3 * step, 0.0);
            snprintf(label, sizeof label, "[%s] fused refiner: fg vs unfused", names[pi]);
            check_close(label, fz.fg, gpu.fg, (size_t)S * S * 3, 4e-3 * step, 0.0);
            snprintf(label, sizeof label, "[%s] fused refiner: alpha vs CPU", names[pi]);
            check_close(label, fz.alpha, cpu.alpha, (size_t)S * S, tol_a[pi], 0.0);
            run_free(&fz);
        }
        unsetenv("CK_REFINER_FUSED");
        run_free(&gpu);
    }
    run_free(&cpu);

    /* The fused refiner's Hopper kernel serves 64-channel refiners in 8 groups (Hiera-B+'s, random weights
     * here); the tiny model above takes the plain kernels. Fused against unfused, whole maps and 8-row bands
     * (the slim refiner's banded calls), within the bounds against the CPU above; and both against the CPU:
     * the fused error may not exceed the unfused one by more than a rounding's worth. On other devices `auto`
     * leaves the refiner unfused. */
    run_out ref;
    if (run("random:base_plus", CK_DEVICE_CPU, CK_PREC_FP32, x, &ref, 0)) {
        for (int pi = 1; pi < 3; pi++) {
            const double step = names[pi][0] == 'b' ? 8.0 : 1.0;
            for (int banded = 0; banded < 2; banded++) {
                if (banded) setenv("CK_REFINER_BAND", "8", 1);
                run_out un, fz;
                setenv("CK_REFINER_FUSED", "0", 1);
                const int ok_un = run("random:base_plus", CK_DEVICE_CUDA, precs[pi], x, &un, 0);
                setenv("CK_REFINER_FUSED", "auto", 1);
                const int ok_fz = run("random:base_plus", CK_DEVICE_CUDA, precs[pi], x, &fz, 0);
                unsetenv("CK_REFINER_FUSED");
                unsetenv("CK_REFINER_BAND");
                if (ok_un && ok_fz) {
                    char label[96];
                    snprintf(label, sizeof label, "[%s] Hiera-B+ fused refiner%s: alpha vs unfused", names[pi],
                             banded ? ", 8-row bands" : "");
                    check_close(label, fz.alpha, un.alpha, (size_t)S * S, tol_a[pi], 0.0);
                    snprintf(label, sizeof label, "[%s] Hiera-B+ fused refiner%s: fg vs unfused", names[pi],
                             banded ? ", 8-row bands" : "");
                    check_close(label, fz.fg, un.fg, (size_t)S * S * 3, tol_f[pi], 0.0);
                    const double e_un = alpha_err(&un, &ref), e_fz = alpha_err(&fz, &ref);
                    printf("       alpha vs CPU fp32: unfused %.3e, fused %.3e\n", e_un, e_fz);
                    CHECK_MSG(e_fz <= 1.5 * e_un + 1e-3 * step, "%s: fused alpha error %.3e against unfused %.3e",
                              label, e_fz, e_un);
                }
                if (ok_fz && !banded) { /* GroupNorm 2 folded into conv1 (the default here) vs its apply pass */
                    run_out nf;
                    setenv("CK_REFINER_FOLD", "0", 1);
                    const int ok_nf = run("random:base_plus", CK_DEVICE_CUDA, precs[pi], x, &nf, 0);
                    unsetenv("CK_REFINER_FOLD");
                    if (ok_nf) {
                        char label[96];
                        snprintf(label, sizeof label, "[%s] Hiera-B+ fused refiner: GroupNorm 2 folded vs applied",
                                 names[pi]);
                        check_close(label, fz.alpha, nf.alpha, (size_t)S * S, 0.0, 0.0);
                        check_close(label, fz.fg, nf.fg, (size_t)S * S * 3, 0.0, 0.0);
                        run_free(&nf);
                    }
                }
                if (ok_un) run_free(&un);
                if (ok_fz) run_free(&fz);
            }
            /* the patch embedding over 4×4 blocks (CK_PATCH_S2D=1: space_to_depth, then a 2×2 convolution over
             * 64 channels, through cuDNN or the built-in kernel) against the 7×7 stride-4 one: the same products
             * in another order, so within the bounds against the CPU, and no further from it than a rounding */
            run_out pe, s2d;
            const int ok_pe = run("random:base_plus", CK_DEVICE_CUDA, precs[pi], x, &pe, 0);
            setenv("CK_PATCH_S2D", "1", 1);
            const int ok_s2d = run("random:base_plus", CK_DEVICE_CUDA, precs[pi], x, &s2d, 0);
            unsetenv("CK_PATCH_S2D");
            if (ok_pe && ok_s2d) {
                char label[96];
                snprintf(label, sizeof label, "[%s] Hiera-B+ patch embedding over blocks: alpha vs 7x7", names[pi]);
                check_close(label, s2d.alpha, pe.alpha, (size_t)S * S, tol_a[pi], 0.0);
                snprintf(label, sizeof label, "[%s] Hiera-B+ patch embedding over blocks: fg vs 7x7", names[pi]);
                check_close(label, s2d.fg, pe.fg, (size_t)S * S * 3, tol_f[pi], 0.0);
                const double e_pe = alpha_err(&pe, &ref), e_s2d = alpha_err(&s2d, &ref);
                printf("       alpha vs CPU fp32: 7x7 %.3e, blocks %.3e\n", e_pe, e_s2d);
                CHECK_MSG(e_s2d <= 1.5 * e_pe + 1e-3 * step, "%s: alpha error over blocks %.3e against %.3e", label,
                          e_s2d, e_pe);
            }
            if (ok_pe) run_free(&pe);
            if (ok_s2d) run_free(&s2d);
        }
        run_free(&ref);
    }
    free(x);
    return test_summary();
}
