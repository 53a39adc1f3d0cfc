/* Stage-by-stage parity of the CPU engine against PyTorch fp32 (TF32 off) fixtures written by
 * tools/reference/make_fixtures.py for the tiny configuration, in both checkpoint formats.
 * Fixtures are NCHW; the engine is NHWC. */
#include "engine/ctx.h"
#include "harness.h"
#include "ckey_io.h"

#include <stdlib.h>
#include <string.h>

/* Compare channels [c0, c0 + C) of an NHWC tensor (B=1) with an NCHW fixture of C channels. */
static double cmp_nchw(const char *dir, const char *name, const ck_tensor *t, int c0, double atol, double scale) {
    char   path[1024];
    ck_npy ref;
    ck_err err = {{0}};
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    if (ck_npy_read(path, &ref, &err) != CK_OK) {
        CHECK_MSG(0, "cannot read fixture %s", path);
        return -1;
    }
    const int64_t C = ref.shape[1], H = ref.shape[2], W = ref.shape[3], CT = ck_tensor_last(t);
    CHECK_MSG(t->shape[1] == H && t->shape[2] == W && c0 + C <= CT, "%s: shape mismatch", name);
    float *got = malloc(sizeof(float) * ref.numel);
    for (int64_t c = 0; c < C; c++)
        for (int64_t p = 0; p < H * W; p++) got[c * H * W + p] = ((const float *)t->data)[p * CT + c0 + c] * (float)scale;
    double m = check_close(name, got, ref.data, ref.numel, atol, 0.0);
    free(got);
    ck_npy_free(&ref);
    return m;
}

static int load_x(const char *dir, int S, float *x) {
    char   path[1024];
    ck_npy ref;
    ck_err err = {{0}};
    snprintf(path, sizeof path, "%s/x.npy", dir);
    if (ck_npy_read(path, &ref, &err) != CK_OK) return 0;
    for (int c = 0; c < 4; c++)
        for (int64_t p = 0; p < (int64_t)S * S; p++) x[p * 4 + c] = ref.data[c * (int64_t)S * S + p];
    ck_npy_free(&ref);
    return 1;
}

/* Runs one fixture folder; returns the output (S,S,4) in *out (malloc'd). */
static void run_fixture(const char *dir, const char *ckpt_path, int S, int head_dim, float **out, int stages,
                        double tol) {
    char path[1024];
    snprintf(path, sizeof path, "%s", ckpt_path);
    ck_params p          = ck_params_default();
    p.size               = S;
    p.device             = CK_DEVICE_CPU;
    p.head_dim           = head_dim;
    p.keep_intermediates = 1;
    ck_ctx *ctx          = NULL;
    ck_status st0        = ck_ctx_init(&ctx, path, &p);
    CHECK_MSG(st0 == CK_OK, "init %s: %s", path, ck_ctx_last_error(ctx));
    if (st0 != CK_OK) {
        ck_ctx_free(ctx);
        *out = NULL;
        return;
    }
    CHECK(load_x(dir, S, ctx->host_x));
    CHECK(ck__ctx_forward(ctx) == CK_OK);
    const ck_model_out *o = &ctx->last;
    printf("-- %s (%s)\n", dir, ckpt_path);
    if (stages) {
        const char *fn[4] = {"f1", "f2", "f3", "f4"};
        for (int i = 0; i < 4; i++) cmp_nchw(dir, fn[i], &o->f[i], 0, 2e-5, 1.0);
        cmp_nchw(dir, "alpha_logits", &o->logits, 0, 2e-5, 1.0);
        cmp_nchw(dir, "fg_logits", &o->logits, 1, 2e-5, 1.0);
        cmp_nchw(dir, "alpha_logits_up", &o->logits_up, 0, 2e-5, 1.0);
        cmp_nchw(dir, "fg_logits_up", &o->logits_up, 1, 2e-5, 1.0);
        cmp_nchw(dir, "delta", &o->delta_raw, 0, 1e-4, 10.0);
    }
    /* acceptance: alpha and fg within 1e-5 of PyTorch fp32 */
    cmp_nchw(dir, "alpha", &o->out, 0, tol, 1.0);
    cmp_nchw(dir, "fg", &o->out, 1, tol, 1.0);
    const size_t n = (size_t)S * S * 4;
    *out           = malloc(n * sizeof(float));
    memcpy(*out, ctx->host_out, n * sizeof(float));
    ck_ctx_free(ctx);
}

/* Writes the checkpoint in the MLX port's converter layout: num_batches_tracked dropped, refiner stem
 * renamed to stem_conv/stem_gn, 4-D conv kernels transposed OIHW -> OHWI. */
static int write_mlx_layout(const char *src, const char *dst) {
    ck_checkpoint ck;
    ck_err        err = {{0}};
    if (ck_checkpoint_open(&ck, src, &err) != CK_OK) return 0;
    ck_ckpt_tensor *out  = calloc((size_t)ck.n_tensors, sizeof *out);
    float         **bufs = calloc((size_t)ck.n_tensors, sizeof *bufs);
    int             n    = 0;
    for (int i = 0; i < ck.n_tensors; i++) {
        const ck_ckpt_tensor *t = &ck.tensors[i];
        if (strstr(t->name, "num_batches_tracked")) continue;
        ck_ckpt_tensor *o = &out[n];
        *o                = *t;
        if (!strncmp(t->name, "refiner.stem.0.", 15)) snprintf(o->name, sizeof o->name, "refiner.stem_conv.%s", t->name + 15);
        if (!strncmp(t->name, "refiner.stem.1.", 15)) snprintf(o->name, sizeof o->name, "refiner.stem_gn.%s", t->name + 15);
        if (t->ndim == 4) {
            const int64_t O = t->shape[0], I = t->shape[1], KH = t->shape[2], KW = t->shape[3];
            const float  *w = (const float *)t->data;
            float        *p = malloc(t->nbytes);
            for (int64_t a = 0; a < O; a++)
                for (int64_t b = 0; b < I; b++)
                    for (int64_t y = 0; y < KH; y++)
                        for (int64_t x = 0; x < KW; x++) p[((a * KH + y) * KW + x) * I + b] = w[((a * I + b) * KH + y) * KW + x];
            o->shape[1] = KH, o->shape[2] = KW, o->shape[3] = I;
            o->data = bufs[n] = p;
        }
        n++;
    }
    ck_ckpt_meta meta = {"head_dim", "8"};
    int          ok   = ck_safetensors_write(dst, out, n, &meta, 1, &err) == CK_OK;
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(out);
    ck_checkpoint_close(&ck);
    return ok;
}

int main(void) {
    char d128[1024], d64[1024], st[1024], pth[1024], p16[1024];
    test_path(d128, sizeof d128, "CK_FIXTURES", "tiny/s128");
    test_path(d64, sizeof d64, "CK_FIXTURES", "tiny/s64");
    test_path(st, sizeof st, "CK_FIXTURES", "tiny/s128/model.safetensors");
    test_path(pth, sizeof pth, "CK_FIXTURES", "tiny/s128/model.pth");
    test_path(p16, sizeof p16, "CK_FIXTURES", "tiny/s128/model_fp16_wrapped.pth");
    float *a = NULL, *b = NULL, *c = NULL;
    run_fixture(d128, st, 128, 0, &a, 1, 1e-5);
    run_fixture(d128, pth, 128, 8, &b, 1, 1e-5);
    if (a && b) {
        /* same weights in both formats: bit-identical results */
        CHECK_MSG(memcmp(a, b, sizeof(float) * 128 * 128 * 4) == 0, ".pth and .safetensors outputs differ");
    }
    /* the MLX port's safetensors layout: same weights, bit-identical result */
    char mlx[1024];
    test_path(mlx, sizeof mlx, "CK_TMP", "model_mlx.safetensors");
    CHECK(write_mlx_layout(st, mlx));
    run_fixture(d128, mlx, 128, 0, &c, 0, 1e-5);
    if (a && c) CHECK_MSG(memcmp(a, c, sizeof(float) * 128 * 128 * 4) == 0, "MLX-layout output differs");
    free(c);
    c = NULL;
    /* fp16 storages: loads and stays within fp16 weight rounding of the fp32 result */
    run_fixture(d128, p16, 128, 8, &c, 0, 5e-3);
    free(a), free(b), free(c);
    a = NULL;
    /* same checkpoint at S = 64: pos_embed bicubic resize 32 -> 16 grid */
    run_fixture(d64, st, 64, 0, &a, 1, 1e-5);
    free(a);

    /* Optional full-size comparison (not committed: ~400 MB), written by
     * `tools/reference/make_fixtures.py --config base_plus --size S --out DIR`; run with CK_FULL_FIXTURE=DIR.
     * Acceptance there: alpha and fg within 1e-4 of PyTorch fp32. */
    const char *full = getenv("CK_FULL_FIXTURE");
    if (full && *full) {
        char   ck[1024], xp[1024];
        ck_npy xn;
        ck_err e = {{0}};
        snprintf(ck, sizeof ck, "%s/model.pth", full);
        snprintf(xp, sizeof xp, "%s/x.npy", full);
        if (ck_npy_read(xp, &xn, &e) == CK_OK) {
            const int S = (int)xn.shape[2];
            ck_npy_free(&xn);
            run_fixture(full, ck, S, 0, &a, 1, 1e-4);
            free(a);
        } else {
            CHECK_MSG(0, "CK_FULL_FIXTURE=%s has no x.npy", full);
        }
    } else {
        printf("full Hiera-B+ comparison skipped (set CK_FULL_FIXTURE=DIR to run it)\n");
    }
    return test_summary();
}
