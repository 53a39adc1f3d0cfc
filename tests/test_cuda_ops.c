/* Every op of ops_list.h on the CUDA backend against the CPU reference, in fp32, bf16 and fp16: one case
 * test_op_<name> per op of both lists (CK_OPS, CK_OPS_OPTIONAL), called from a registry built from the
 * lists, so an op without a case does not build.
 *
 * Inputs are seeded random values, rounded to the device dtype first so both backends see identical
 * numbers (the CPU runs in fp32 on the rounded values). Shapes: the model's real shapes at S=512
 * (model_spec §3) plus odd sizes (M not a multiple of 16, K = 7, tiny grids, head dims that do not
 * vectorize). Device outputs carry 256 guard bytes that must survive, and start as NaN unless the op
 * reads them (accumulate / in place), so an element that is never written fails. Copies and zeroing
 * (copy_rect, zero) must match exactly, and what lies outside the written region must survive.
 * Pass rule per tensor: |got − ref| ≤ atol + rtol·|ref| element-wise, atol relative to max|ref|, and the
 * NMSE under a per-dtype limit:
 *     fp32: atol 1e-5·max|ref|, rtol 1e-5, NMSE 1e-9   (no TF32 anywhere: parity mode)
 *     bf16: atol 8e-3·max|ref|, rtol 1e-2, NMSE 1e-4   (one or two bf16 roundings of the output)
 *     fp16: atol 2e-3·max|ref|, rtol 2e-3, NMSE 1e-5
 * Also: fused vs unfused attention, graph capture replay (bitwise equal to eager), determinism of
 * conv/groupnorm (bitwise equal across runs), peak-memory and timer hooks.
 * Without a GPU (or without CUDA in the build) it prints "SKIP: ..." and exits 77 (ctest: skipped). */
#include "ops/backend.h"
#include "harness.h"
#include "model/model.h"
#include "ops/ops.h"
#ifdef CK_HAVE_CUDA
#include "ops/cuda/attention.h" /* the attention_qkv case checks the op against its direct path */
#include "ops/cuda/ops_cuda.h"  /* the conv case also runs the built-in kernel where cuDNN serves the op */
#endif

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 256
#define GUARD_BYTE 0xA5

enum { K_ACT, K_W, K_VEC };           /* device dtype: activation, weight matrix, float32 vector */
enum { F_RAND, F_OUT, F_INOUT };      /* random input / output (device NaN) / random in-out */

static ck_backend *g_cpu, *g_gpu, *g_gpu_ref; /* g_gpu_ref: unfused attention */
static ck_exec     g_exc, g_exg;
static const char *g_prec_name;
static uint64_t    g_rng = 0x9E3779B97F4A7C15ull;

static float frand(void) { /* uniform in [-1, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((g_rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

static float quant(float v, ck_dtype dt) {
    if (dt == CK_DTYPE_BF16) return ck_bf16_to_f32(ck_f32_to_bf16(v));
    if (dt == CK_DTYPE_F16) return ck_f16_to_f32(ck_f32_to_f16(v));
    return v;
}

static void f32_to_dt(void *dst, const float *src, size_t n, ck_dtype dt) {
    for (size_t i = 0; i < n; i++) {
        if (dt == CK_DTYPE_BF16) ((uint16_t *)dst)[i] = ck_f32_to_bf16(src[i]);
        else if (dt == CK_DTYPE_F16) ((uint16_t *)dst)[i] = ck_f32_to_f16(src[i]);
        else ((float *)dst)[i] = src[i];
    }
}

static void dt_to_f32(float *dst, const void *src, size_t n, ck_dtype dt) {
    for (size_t i = 0; i < n; i++) {
        if (dt == CK_DTYPE_BF16) dst[i] = ck_bf16_to_f32(((const uint16_t *)src)[i]);
        else if (dt == CK_DTYPE_F16) dst[i] = ck_f16_to_f32(((const uint16_t *)src)[i]);
        else dst[i] = ((const float *)src)[i];
    }
}

/* A tensor on both backends: c is float32 host memory (CPU backend), d lives on the GPU. */
typedef struct tpair {
    ck_tensor c, d;
    size_t    n, dbytes;
} tpair;

static ck_dtype kind_dtype(int kind) {
    return kind == K_VEC ? CK_DTYPE_F32 : kind == K_W ? g_gpu->weight_dtype : g_gpu->act_dtype;
}

/* Uploads c (already rounded) into d, plus the guard bytes. */
static void tp_upload(tpair *t) {
    uint8_t *tmp = malloc(t->dbytes + GUARD);
    CK_ASSERT(tmp);
    f32_to_dt(tmp, (const float *)t->c.data, t->n, t->d.dtype);
    memset(tmp + t->dbytes, GUARD_BYTE, GUARD);
    g_gpu->upload(g_gpu, t->d.data, tmp, t->dbytes + GUARD);
    free(tmp);
}

static tpair tp_make(int kind, int fill, float scale, float offset, int ndim, const int64_t *shape) {
    tpair t;
    t.c      = ck_tensor_make(NULL, CK_DTYPE_F32, ndim, shape);
    t.n      = (size_t)ck_tensor_numel(&t.c);
    t.d      = ck_tensor_make(NULL, kind_dtype(kind), ndim, shape);
    t.dbytes = ck_tensor_nbytes(&t.d);
    t.c.data = malloc(t.n * sizeof(float));
    t.d.data = g_gpu->alloc(g_gpu, t.dbytes + GUARD);
    CK_ASSERT(t.c.data && t.d.data);
    float *c = (float *)t.c.data;
    if (fill == F_OUT) {
        memset(c, 0, t.n * sizeof(float));
        uint8_t *tmp = malloc(t.dbytes + GUARD);
        CK_ASSERT(tmp);
        memset(tmp, 0xFF, t.dbytes); /* NaN in every float dtype */
        memset(tmp + t.dbytes, GUARD_BYTE, GUARD);
        g_gpu->upload(g_gpu, t.d.data, tmp, t.dbytes + GUARD);
        free(tmp);
    } else {
        for (size_t i = 0; i < t.n; i++) c[i] = quant(offset + scale * frand(), t.d.dtype);
        tp_upload(&t);
    }
    return t;
}
#define NDIM(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define TP(kind, fill, scale, offset, ...) tp_make(kind, fill, scale, offset, NDIM(__VA_ARGS__), (int64_t[]){__VA_ARGS__})

static void tp_free(tpair *t) {
    if (t->c.data) free(t->c.data);
    if (t->d.data) g_gpu->free(g_gpu, t->d.data);
    memset(t, 0, sizeof *t);
}

/* Device contents as float32; 0 when the guard bytes were overwritten. */
static int tp_fetch(const tpair *t, float *out) {
    uint8_t *tmp = malloc(t->dbytes + GUARD);
    CK_ASSERT(tmp);
    g_gpu->download(g_gpu, tmp, t->d.data, t->dbytes + GUARD);
    int ok = 1;
    for (size_t i = 0; i < GUARD; i++) ok &= tmp[t->dbytes + i] == GUARD_BYTE;
    dt_to_f32(out, tmp, t->n, t->d.dtype);
    free(tmp);
    return ok;
}

/* Compares the device tensor with the CPU one; `loose` widens the tolerances (reductions over many
 * rounded terms). */
static void tp_compare(const char *what, const tpair *t, double loose) {
    char   label[160];
    float *got = malloc(t->n * sizeof(float));
    CK_ASSERT(got);
    const int    guard_ok = tp_fetch(t, got);
    const float *ref      = (const float *)t->c.data;
    double       R = 0.0, se = 0.0, sr = 0.0;
    for (size_t i = 0; i < t->n; i++) {
        const double r = ref[i], d = (double)got[i] - r;
        if (fabs(r) > R) R = fabs(r);
        se += d * d;
        sr += r * r;
    }
    if (R == 0.0) R = 1.0;
    double atol, rtol, nmse_max;
    switch (t->d.dtype) {
    case CK_DTYPE_BF16: atol = 8e-3, rtol = 1e-2, nmse_max = 1e-4; break;
    case CK_DTYPE_F16: atol = 2e-3, rtol = 2e-3, nmse_max = 1e-5; break;
    default: atol = 1e-5, rtol = 1e-5, nmse_max = 1e-9; break;
    }
    atol *= R * loose;
    rtol *= loose;
    nmse_max *= loose * loose;
    const double nmse = sr > 0.0 ? se / sr : se;
    snprintf(label, sizeof label, "[%s] %s", g_prec_name, what);
    check_close(label, got, ref, t->n, atol, rtol);
    printf("       nmse=%.3e (limit %.1e)%s\n", nmse, nmse_max, guard_ok ? "" : "  GUARD OVERWRITTEN");
    /* a handful of outputs (a 1×1 linear: one value, possibly a cancellation x·w + b ≈ 0) makes the ratio
     * meaningless; there the element-wise bound above is the check */
    CHECK_MSG(t->n < 16 || nmse <= nmse_max || !(nmse == nmse), "%s: nmse %.3e > %.1e", label, nmse, nmse_max);
    CHECK_MSG(nmse == nmse, "%s: nmse is NaN", label);
    CHECK_MSG(guard_ok, "%s: write past the end of the output", label);
    free(got);
}

/* ======================= ops ======================= */

static void test_linear(int64_t M, int64_t K, int64_t N, int bias, ck_act act, int res_mode) {
    char what[128];
    static const char *an[] = {"", "+gelu", "+relu"};
    snprintf(what, sizeof what, "linear %lldx%lld->%lld%s%s%s", (long long)M, (long long)K, (long long)N,
             bias ? "+b" : "", an[act], res_mode == 1 ? "+res" : res_mode == 2 ? "+res(in place)" : "");
    tpair x = TP(K_ACT, F_RAND, 1.0f, 0.0f, M, K);
    tpair w = TP(K_W, F_RAND, 1.0f / sqrtf((float)K), 0.0f, N, K);
    tpair b = {0}, r = {0};
    if (bias) b = TP(K_VEC, F_RAND, 0.5f, 0.0f, N);
    tpair y = TP(K_ACT, res_mode == 2 ? F_INOUT : F_OUT, 1.0f, 0.0f, M, N);
    if (res_mode == 1) r = TP(K_ACT, F_RAND, 1.0f, 0.0f, M, N);
    const tpair *rp = res_mode == 1 ? &r : res_mode == 2 ? &y : NULL;
    ck_linear(&g_exc, &y.c, &x.c, &w.c, bias ? &b.c : NULL, act, rp ? &rp->c : NULL);
    ck_linear(&g_exg, &y.d, &x.d, &w.d, bias ? &b.d : NULL, act, rp ? &rp->d : NULL);
    tp_compare(what, &y, 1.0);
    tp_free(&x), tp_free(&w), tp_free(&b), tp_free(&y), tp_free(&r);
}

static void test_layernorm(int64_t M, int64_t C) {
    char what[96];
    snprintf(what, sizeof what, "layernorm %lldx%lld", (long long)M, (long long)C);
    tpair x = TP(K_ACT, F_RAND, 2.0f, 0.7f, M, C);
    tpair g = TP(K_VEC, F_RAND, 0.3f, 1.0f, C);
    tpair b = TP(K_VEC, F_RAND, 0.3f, 0.0f, C);
    tpair y = TP(K_ACT, F_OUT, 0, 0, M, C);
    ck_layernorm(&g_exc, &y.c, &x.c, &g.c, &b.c, 1e-6f);
    ck_layernorm(&g_exg, &y.d, &x.d, &g.d, &b.d, 1e-6f);
    tp_compare(what, &y, 1.0);
    { /* the several-rows-per-warp kernel everywhere (CK_LN_ROWS=1; the default takes it only where it keeps the
       * one-row kernel's bits) against the same reference */
        char  what2[128];
        tpair y2 = TP(K_ACT, F_OUT, 0, 0, M, C);
        snprintf(what2, sizeof what2, "%s, CK_LN_ROWS=1", what);
        ck_layernorm(&g_exc, &y2.c, &x.c, &g.c, &b.c, 1e-6f);
        setenv("CK_LN_ROWS", "1", 1);
        ck_layernorm(&g_exg, &y2.d, &x.d, &g.d, &b.d, 1e-6f);
        unsetenv("CK_LN_ROWS");
        tp_compare(what2, &y2, 1.0);
        tp_free(&y2);
    }
    { /* the default (several rows per warp where rows have at most 16 vectors) gives the bits of one row per warp
       * everywhere (CK_LN_ROWS=0) */
        tpair  y3 = TP(K_ACT, F_OUT, 0, 0, M, C);
        float *a = malloc(y.n * sizeof(float)), *e = malloc(y.n * sizeof(float));
        setenv("CK_LN_ROWS", "0", 1);
        ck_layernorm(&g_exg, &y3.d, &x.d, &g.d, &b.d, 1e-6f);
        unsetenv("CK_LN_ROWS");
        CK_ASSERT(a && e);
        CHECK(tp_fetch(&y, a) && tp_fetch(&y3, e));
        const int same = memcmp(a, e, y.n * sizeof(float)) == 0;
        CHECK_MSG(same, "%s: the default is not the one-row kernel's bits (CK_LN_ROWS=0)\n", what);
        printf("%s %s: the default, the one-row kernel's bits (CK_LN_ROWS=0)\n", same ? "OK    " : "NOT OK", what);
        free(a), free(e), tp_free(&y3);
    }
    tp_free(&x), tp_free(&g), tp_free(&b), tp_free(&y);
}

static void test_conv_hw(int64_t B, int64_t H, int64_t W, int64_t IC, int64_t OC, int64_t KS, int stride, int pad_h,
                         int pad_w, int dil, int bias) {
    char what[128];
    snprintf(what, sizeof what, "conv %lldx%lldx%lldx%lld %lldx%lld/%d p%d,%d d%d ->%lld%s", (long long)B, (long long)H,
             (long long)W, (long long)IC, (long long)KS, (long long)KS, stride, pad_h, pad_w, dil, (long long)OC,
             bias ? "+b" : "");
    const int64_t Ho = (H + 2 * pad_h - dil * (KS - 1) - 1) / stride + 1;
    const int64_t Wo = (W + 2 * pad_w - dil * (KS - 1) - 1) / stride + 1;
    tpair x = TP(K_ACT, F_RAND, 1.0f, 0.0f, B, H, W, IC);
    tpair w = TP(K_W, F_RAND, 1.0f / sqrtf((float)(IC * KS * KS)), 0.0f, OC, IC, KS, KS);
    tpair b = {0};
    if (bias) b = TP(K_VEC, F_RAND, 0.5f, 0.0f, OC);
    tpair y = TP(K_ACT, F_OUT, 0, 0, B, Ho, Wo, OC);
    ck_conv2d_pad(&g_exc, &y.c, &x.c, &w.c, bias ? &b.c : NULL, stride, pad_h, pad_w, dil);
    ck_conv2d_pad(&g_exg, &y.d, &x.d, &w.d, bias ? &b.d : NULL, stride, pad_h, pad_w, dil);
    tp_compare(what, &y, 1.0);
#ifdef CK_HAVE_CUDA
    if (g_gpu->act_dtype != CK_DTYPE_F32) { /* the built-in kernel itself (with cuDNN the op rarely reaches it) */
        char  what2[160];
        tpair y2 = TP(K_ACT, F_OUT, 0, 0, B, Ho, Wo, OC);
        snprintf(what2, sizeof what2, "%s, built-in kernel", what);
        ck_conv2d_pad(&g_exc, &y2.c, &x.c, &w.c, bias ? &b.c : NULL, stride, pad_h, pad_w, dil);
        ck__conv2d_kernel_cuda(g_gpu, &y2.d, &x.d, &w.d, bias ? &b.d : NULL, stride, pad_h, pad_w, dil);
        tp_compare(what2, &y2, 1.0);
        tp_free(&y2);
    }
#endif
    tp_free(&x), tp_free(&w), tp_free(&b), tp_free(&y);
}

static void test_conv(int64_t B, int64_t H, int64_t W, int64_t IC, int64_t OC, int64_t KS, int stride, int pad,
                      int dil, int bias) {
    test_conv_hw(B, H, W, IC, OC, KS, stride, pad, pad, dil, bias);
}

/* res_mode: 0 none, 1 separate residual, 2 y aliases the residual; inplace: y aliases x.
 * stats_mode: 0 none, 1 written, 2 frozen (read). */
static void test_groupnorm(int64_t B, int64_t H, int64_t W, int64_t C, int groups, int res_mode, int inplace,
                           ck_act act, int stats_mode) {
    char what[128];
    snprintf(what, sizeof what, "groupnorm %lldx%lldx%lldx%lld g%d%s%s%s%s", (long long)B, (long long)H, (long long)W,
             (long long)C, groups, res_mode == 1 ? " +res" : res_mode == 2 ? " +res(y)" : "", inplace ? " (y=x)" : "",
             act == CK_ACT_RELU ? " +relu" : "", stats_mode == 1 ? " stats-out" : stats_mode == 2 ? " stats-frozen" : "");
    tpair x = TP(K_ACT, F_RAND, 1.5f, 0.8f, B, H, W, C); /* |mean| comparable to std: exercises the shift */
    tpair g = TP(K_VEC, F_RAND, 0.3f, 1.0f, C);
    tpair bt = TP(K_VEC, F_RAND, 0.3f, 0.0f, C);
    tpair r = {0}, y = {0}, st = {0};
    if (res_mode == 1) r = TP(K_ACT, F_RAND, 1.0f, 0.0f, B, H, W, C);
    if (!inplace) y = TP(K_ACT, res_mode == 2 ? F_INOUT : F_OUT, 1.0f, 0.0f, B, H, W, C);
    tpair *yp = inplace ? &x : &y;
    const tpair *rp = res_mode == 1 ? &r : res_mode == 2 ? yp : NULL;
    if (stats_mode == 1) st = TP(K_VEC, F_OUT, 0, 0, B, groups, 2);
    if (stats_mode == 2) {
        st       = TP(K_VEC, F_RAND, 1.0f, 0.0f, B, groups, 2);
        float *s = (float *)st.c.data;
        for (int64_t i = 0; i < B * groups; i++) s[2 * i] = 0.5f * frand(), s[2 * i + 1] = 1.0f + 0.5f * frand();
        tp_upload(&st);
    }
    if (stats_mode) { /* the optional groupnorm_stats */
        ck_groupnorm_stats(&g_exc, &yp->c, &x.c, &g.c, &bt.c, groups, 1e-5f, rp ? &rp->c : NULL, act, &st.c,
                           stats_mode == 2);
        ck_groupnorm_stats(&g_exg, &yp->d, &x.d, &g.d, &bt.d, groups, 1e-5f, rp ? &rp->d : NULL, act, &st.d,
                           stats_mode == 2);
    } else {
        ck_groupnorm(&g_exc, &yp->c, &x.c, &g.c, &bt.c, groups, 1e-5f, rp ? &rp->c : NULL, act);
        ck_groupnorm(&g_exg, &yp->d, &x.d, &g.d, &bt.d, groups, 1e-5f, rp ? &rp->d : NULL, act);
    }
    tp_compare(what, yp, 1.0);
    if (stats_mode == 1) {
        char w2[160];
        snprintf(w2, sizeof w2, "%s (stats)", what);
        tp_compare(w2, &st, 1.0);
    }
    tp_free(&x), tp_free(&g), tp_free(&bt), tp_free(&r), tp_free(&y), tp_free(&st);
}

/* groupnorm_linear against the CPU (its normalized map is never rounded to the activation dtype on either side) */
static void test_groupnorm_linear(int64_t B, int64_t H, int64_t W, int64_t C, int groups, int64_t N, int res, ck_act act,
                                  int frozen) {
    char what[128];
    snprintf(what, sizeof what, "groupnorm_linear %lldx%lldx%lldx%lld g%d -> %lld%s%s%s", (long long)B, (long long)H,
             (long long)W, (long long)C, groups, (long long)N, res ? " +res" : "", act == CK_ACT_RELU ? " +relu" : "",
             frozen ? " frozen stats" : "");
    tpair st = TP(K_VEC, F_RAND, 0.5f, 0.0f, B, groups, 2); /* given (mean, rstd) */
    for (int64_t i = 0; i < B * groups; i++) ((float *)st.c.data)[2 * i + 1] = 0.7f + 0.05f * (float)i;
    tp_upload(&st);
    tpair x = TP(K_ACT, F_RAND, 1.5f, 0.8f, B, H, W, C);
    tpair g = TP(K_VEC, F_RAND, 0.3f, 1.0f, C), bt = TP(K_VEC, F_RAND, 0.3f, 0.0f, C);
    tpair r = {0};
    if (res) r = TP(K_ACT, F_RAND, 1.0f, 0.0f, B, H, W, C);
    tpair w = TP(K_W, F_RAND, 1.0f / sqrtf((float)C), 0.0f, N, C), b = TP(K_VEC, F_RAND, 0.5f, 0.0f, N);
    tpair y = TP(K_VEC, F_OUT, 0, 0, B, H, W, N);
    ck_groupnorm_linear(&g_exc, &y.c, &x.c, &g.c, &bt.c, groups, 1e-5f, res ? &r.c : NULL, act, &w.c, &b.c,
                        frozen ? &st.c : NULL);
    ck_groupnorm_linear(&g_exg, &y.d, &x.d, &g.d, &bt.d, groups, 1e-5f, res ? &r.d : NULL, act, &w.d, &b.d,
                        frozen ? &st.d : NULL);
    tp_compare(what, &y, 1.0);
    tp_free(&x), tp_free(&g), tp_free(&bt), tp_free(&r), tp_free(&w), tp_free(&b), tp_free(&y), tp_free(&st);
}

static void test_attention(int64_t G, int64_t Tq, int64_t Tk, int64_t HD, int64_t HDp) {
    char what[128];
    snprintf(what, sizeof what, "attention G%lld Tq%lld Tk%lld HD%lld/%lld", (long long)G, (long long)Tq, (long long)Tk,
             (long long)HD, (long long)HDp);
    tpair q = TP(K_ACT, F_RAND, 1.5f, 0.0f, G, Tq, HDp);
    tpair k = TP(K_ACT, F_RAND, 1.5f, 0.0f, G, Tk, HDp);
    tpair v = TP(K_ACT, F_RAND, 1.0f, 0.0f, G, Tk, HDp);
    tpair *pad[3] = {&q, &k, &v};
    for (int i = 0; i < 3 && HDp > HD; i++) { /* the gather's zero columns */
        float *p = (float *)pad[i]->c.data;
        for (size_t j = 0; j < pad[i]->n; j++)
            if ((int64_t)(j % HDp) >= HD) p[j] = 0.0f;
        tp_upload(pad[i]);
    }
    tpair       o = TP(K_ACT, F_OUT, 0, 0, G, Tq, HDp);
    const float scale = (float)(1.0 / sqrt((double)HD));
    ck_attention(&g_exc, &o.c, &q.c, &k.c, &v.c, scale);
    ck_attention(&g_exg, &o.d, &q.d, &k.d, &v.d, scale);
    char w2[160];
    snprintf(w2, sizeof w2, "%s fused", what);
    tp_compare(w2, &o, 1.0);
    /* the unfused reference on the same device buffers (its own stream: synchronize around it) */
    g_gpu->synchronize(g_gpu);
    g_gpu_ref->attention(g_gpu_ref, &o.d, &q.d, &k.d, &v.d, scale);
    g_gpu_ref->synchronize(g_gpu_ref);
    snprintf(w2, sizeof w2, "%s unfused", what);
    tp_compare(w2, &o, 1.0);
    tp_free(&q), tp_free(&k), tp_free(&v), tp_free(&o);
}

static void test_gather(int64_t B, int64_t H, int64_t W, int heads, int64_t HD, int64_t HDp, int win_h, int win_w,
                        int q_pool) {
    char what[128];
    snprintf(what, sizeof what, "attn_gather %lldx%lld h%d hd%lld/%lld win%dx%d%s", (long long)H, (long long)W, heads,
             (long long)HD, (long long)HDp, win_h, win_w, q_pool ? " qpool" : "");
    const int64_t G = B * heads * (H / win_h) * (W / win_w), T = (int64_t)win_h * win_w, Tq = q_pool ? T / 4 : T;
    tpair qkv = TP(K_ACT, F_RAND, 1.0f, 0.0f, B, H, W, 3 * heads * HD);
    tpair q = TP(K_ACT, F_OUT, 0, 0, G, Tq, HDp), k = TP(K_ACT, F_OUT, 0, 0, G, T, HDp), v = TP(K_ACT, F_OUT, 0, 0, G, T, HDp);
    ck_attn_gather(&g_exc, &q.c, &k.c, &v.c, &qkv.c, heads, win_h, win_w, q_pool);
    ck_attn_gather(&g_exg, &q.d, &k.d, &v.d, &qkv.d, heads, win_h, win_w, q_pool);
    char w2[160];
    snprintf(w2, sizeof w2, "%s q", what);
    tp_compare(w2, &q, 1.0);
    snprintf(w2, sizeof w2, "%s k", what);
    tp_compare(w2, &k, 1.0);
    snprintf(w2, sizeof w2, "%s v", what);
    tp_compare(w2, &v, 1.0);
    tp_free(&qkv), tp_free(&q), tp_free(&k), tp_free(&v);
}

static void test_scatter(int64_t B, int64_t H, int64_t W, int heads, int64_t HD, int64_t HDp, int win_h, int win_w) {
    char what[128];
    snprintf(what, sizeof what, "attn_scatter %lldx%lld h%d hd%lld/%lld win%dx%d", (long long)H, (long long)W, heads,
             (long long)HD, (long long)HDp, win_h, win_w);
    const int64_t G = B * heads * (H / win_h) * (W / win_w), T = (int64_t)win_h * win_w;
    tpair o = TP(K_ACT, F_RAND, 1.0f, 0.0f, G, T, HDp);
    tpair y = TP(K_ACT, F_OUT, 0, 0, B, H, W, heads * HD);
    ck_attn_scatter(&g_exc, &y.c, &o.c, heads, win_h, win_w);
    ck_attn_scatter(&g_exg, &y.d, &o.d, heads, win_h, win_w);
    tp_compare(what, &y, 1.0);
    tp_free(&o), tp_free(&y);
}

/* attention_qkv against the CPU. Global (win_h = 0: one H×W window): T >= 4096 (ck__attention_tokens_min) with HDp
 * 64 takes the direct FA3 path on Hopper (no gather or scatter), the rest the composition. Windowed (mask units, q-pooled or not): the
 * windowed kernel wherever it serves the shape (16-bit, HD 32/56/64, at most 64 keys), else the composition.
 * The composition's buffers start as garbage on both sides. */
static void test_attention_qkv(int64_t B, int64_t H, int64_t W, int heads, int64_t HD, int64_t HDp, int win_h,
                               int win_w, int q_pool) {
    char what[160];
    const int global = win_h == 0;
    if (global) win_h = (int)H, win_w = (int)W;
    snprintf(what, sizeof what, "attention_qkv %lldx%lldx%lld h%d hd%lld/%lld win %dx%d%s%s", (long long)B, (long long)H,
             (long long)W, heads, (long long)HD, (long long)HDp, win_h, win_w, q_pool ? " q_pool" : "",
             getenv("CK_ATTN_PV56") ? " CK_ATTN_PV56=0" : "");
    const int64_t pool = q_pool ? 2 : 1, G = B * heads * (H / win_h) * (W / win_w), T = (int64_t)win_h * win_w;
    const int64_t Tq = T / (pool * pool);
    tpair qkv = TP(K_ACT, F_RAND, 1.5f, 0.0f, B, H, W, 3 * heads * HD);
    tpair y   = TP(K_ACT, F_OUT, 0, 0, B, H / pool, W / pool, heads * HD);
    tpair q = TP(K_ACT, F_RAND, 9.0f, 0.0f, G, Tq, HDp), k = TP(K_ACT, F_RAND, 9.0f, 0.0f, G, T, HDp);
    tpair v = TP(K_ACT, F_RAND, 9.0f, 0.0f, G, T, HDp), o = TP(K_ACT, F_RAND, 9.0f, 0.0f, G, Tq, HDp);
    const float scale = (float)(1.0 / sqrt((double)HD));
    ck_attention_qkv(&g_exc, &y.c, &qkv.c, heads, win_h, win_w, q_pool, scale, &q.c, &k.c, &v.c, &o.c);
    ck_attention_qkv(&g_exg, &y.d, &qkv.d, heads, win_h, win_w, q_pool, scale, &q.d, &k.d, &v.d, &o.d);
    tp_compare(what, &y, 1.0);
#ifdef CK_HAVE_CUDA
    /* the direct paths serve exactly where they should, and there compute the op's bits */
    int direct = 0, expect = 0;
    tpair y2 = TP(K_ACT, F_OUT, 0, 0, B, H / pool, W / pool, heads * HD);
    if (global && HDp == 64 && g_gpu->act_dtype != CK_DTYPE_F32) {
        expect = ck__attention_cuda_variant(g_gpu, &o.d, &q.d, &k.d, &v.d, scale, CK_ATTN_FA3) == CK_ATTN_FA3 &&
                 T >= ck__attention_tokens_min();
        direct = ck__attention_tokens_fa3(g_gpu, &y2.d, &qkv.d, heads, scale);
    } else if (!global) {
        expect = g_gpu->act_dtype != CK_DTYPE_F32 && (HD == 32 || HD == 56 || HD == 64) && T <= 64;
        direct = ck__attention_windows(g_gpu, &y2.d, &qkv.d, heads, win_h, win_w, q_pool, scale);
    }
    CHECK_MSG(direct == expect, "[%s] %s: direct path %d, expected %d", g_prec_name, what, direct, expect);
    if (direct) {
        float *a = malloc(y.n * sizeof(float)), *b2 = malloc(y.n * sizeof(float));
        CK_ASSERT(a && b2);
        CHECK(tp_fetch(&y, a) && tp_fetch(&y2, b2));
        CHECK_MSG(!memcmp(a, b2, y.n * sizeof(float)), "[%s] %s: the op and its direct path differ", g_prec_name, what);
        free(a), free(b2);
    }
    printf("%s [%s] %s: direct path %s\n", direct == expect ? "OK    " : "NOT OK", g_prec_name, what,
           direct ? "taken" : "not offered");
    tp_free(&y2);
#endif
    tp_free(&qkv), tp_free(&y), tp_free(&q), tp_free(&k), tp_free(&v), tp_free(&o);
}

/* The FP8 option (CK_ATTN_FP8=1) on the global path straight from qkv, float16 on Hopper: the CPU's float32
 * result within e4m3's error (relative RMS <= 0.2; tools/reference/fp8_attention_error.py gives 0.05-0.08 for
 * scores of std 1-2) and above float16's (> 5e-3: the path was taken). */
static void test_attention_qkv_fp8(int64_t B, int64_t H, int64_t W, int heads) {
#ifdef CK_HAVE_CUDA
    const int64_t HD = 56, C = heads * HD;
    char          what[128];
    snprintf(what, sizeof what, "attention_qkv fp8 %lldx%lldx%lld h%d", (long long)B, (long long)H, (long long)W, heads);
    tpair qkv = TP(K_ACT, F_RAND, 1.5f, 0.0f, B, H, W, 3 * C), y = TP(K_ACT, F_OUT, 0, 0, B, H, W, C);
    tpair q = TP(K_ACT, F_RAND, 9.0f, 0.0f, B * heads, H * W, HD), k = TP(K_ACT, F_RAND, 9.0f, 0.0f, B * heads, H * W, HD);
    tpair v = TP(K_ACT, F_RAND, 9.0f, 0.0f, B * heads, H * W, HD), o = TP(K_ACT, F_RAND, 9.0f, 0.0f, B * heads, H * W, HD);
    const float scale = (float)(1.0 / sqrt((double)HD));
    ck_attention_qkv(&g_exc, &y.c, &qkv.c, heads, (int)H, (int)W, 0, scale, &q.c, &k.c, &v.c, &o.c);
    setenv("CK_ATTN_FP8", "1", 1);
    const int direct = ck__attention_tokens_fa3(g_gpu, &y.d, &qkv.d, heads, scale);
    unsetenv("CK_ATTN_FP8");
    if (!direct) {
        printf("SKIP   [%s] %s: no FA3 kernel on this device\n", g_prec_name, what);
    } else {
        float *got = malloc(y.n * sizeof(float));
        CK_ASSERT(got && tp_fetch(&y, got));
        double se = 0, sr = 0;
        int    finite = 1;
        for (size_t i = 0; i < y.n; i++) {
            const double r = ((const float *)y.c.data)[i], d = got[i] - r;
            finite &= isfinite(got[i]) != 0;
            se += d * d, sr += r * r;
        }
        const double rel = sqrt(se / sr);
        CHECK_MSG(finite && rel <= 0.2 && rel > 5e-3, "[%s] %s: relative RMS error %.3e (expected e4m3's, 5e-3 .. 0.2)",
                  g_prec_name, what, rel);
        printf("%s [%s] %s: relative RMS error %.3e against the CPU\n", finite && rel <= 0.2 && rel > 5e-3 ? "OK    " : "NOT OK",
               g_prec_name, what, rel);
        free(got);
    }
    tp_free(&qkv), tp_free(&y), tp_free(&q), tp_free(&k), tp_free(&v), tp_free(&o);
#else
    (void)B, (void)H, (void)W, (void)heads;
#endif
}

static void test_maxpool(int64_t B, int64_t H, int64_t W, int64_t C) {
    char what[96];
    snprintf(what, sizeof what, "maxpool2x2 %lldx%lldx%lldx%lld", (long long)B, (long long)H, (long long)W, (long long)C);
    tpair x = TP(K_ACT, F_RAND, 1.0f, 0.0f, B, H, W, C);
    tpair y = TP(K_ACT, F_OUT, 0, 0, B, H / 2, W / 2, C);
    ck_maxpool2x2(&g_exc, &y.c, &x.c);
    ck_maxpool2x2(&g_exg, &y.d, &x.d);
    tp_compare(what, &y, 1.0);
    tp_free(&x), tp_free(&y);
}

/* b: bn elements (broadcast), kind K_VEC (float32, like pos_embed) or K_ACT; inplace: y aliases a. */
static void test_add(int64_t P, int64_t C, int64_t bn, int bkind, int inplace) {
    char what[128];
    snprintf(what, sizeof what, "add %lldx%lld + b[%lld] %s%s", (long long)P, (long long)C, (long long)bn,
             bkind == K_VEC ? "f32" : "act", inplace ? " (y=a)" : "");
    tpair a = TP(K_ACT, F_RAND, 1.0f, 0.0f, P, C);
    tpair b = TP(bkind, F_RAND, 1.0f, 0.0f, bn);
    tpair y = {0};
    if (!inplace) y = TP(K_ACT, F_OUT, 0, 0, P, C);
    tpair *yp = inplace ? &a : &y;
    ck_add(&g_exc, &yp->c, &a.c, &b.c);
    ck_add(&g_exg, &yp->d, &a.d, &b.d);
    tp_compare(what, yp, 1.0);
    tp_free(&a), tp_free(&b), tp_free(&y);
}

static void test_resize(int64_t B, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo, int accumulate) {
    char what[128];
    snprintf(what, sizeof what, "resize %lldx%lldx%lldx%lld -> %lldx%lld%s", (long long)B, (long long)H, (long long)W,
             (long long)C, (long long)Ho, (long long)Wo, accumulate ? " +=" : "");
    tpair x = TP(K_ACT, F_RAND, 1.0f, 0.0f, B, H, W, C);
    tpair y = TP(K_ACT, accumulate ? F_INOUT : F_OUT, 1.0f, 0.0f, B, Ho, Wo, C);
    ck_resize_bilinear(&g_exc, &y.c, &x.c, accumulate);
    ck_resize_bilinear(&g_exg, &y.d, &x.d, accumulate);
    tp_compare(what, &y, 1.0);
    tp_free(&x), tp_free(&y);
}

/* Three sources summed onto one grid: against the CPU's float32 sum, and in 16 bits closer to it than the
 * chained resize_bilinear accumulations (whose every partial sum is rounded). */
static void test_resize_sum(int64_t B, int64_t C, int64_t Ho, int64_t Wo, int wide) {
    char what[128];
    snprintf(what, sizeof what, "resize_sum 3 sources -> %lldx%lldx%lldx%lld%s", (long long)B, (long long)Ho,
             (long long)Wo, (long long)C, wide ? " (one source wider)" : "");
    /* upsampling sources, or with `wide` one source wider than the output */
    tpair     x[3] = {TP(K_ACT, F_RAND, 1.0f, 0.0f, B, Ho / 8, Wo / 8, C), TP(K_ACT, F_RAND, 1.0f, 0.0f, B, Ho / 4, Wo / 4, C),
                      TP(K_ACT, F_RAND, 1.0f, 0.0f, B, Ho / 2 + 1, wide ? 2 * Wo + 3 : Wo / 2, C)};
    tpair     y = TP(K_ACT, F_OUT, 1.0f, 0.0f, B, Ho, Wo, C), chained = TP(K_ACT, F_OUT, 1.0f, 0.0f, B, Ho, Wo, C);
    ck_tensor xc[3] = {x[0].c, x[1].c, x[2].c}, xd[3] = {x[0].d, x[1].d, x[2].d};
    ck_resize_sum(&g_exc, &y.c, xc, 3);
    ck_resize_sum(&g_exg, &y.d, xd, 3);
    for (int k = 0; k < 3; k++) ck_resize_bilinear(&g_exg, &chained.d, &xd[k], k > 0);
    tp_compare(what, &y, 1.0);
    { /* the per-pixel kernel (CK_RESIZE_SUM=pixel): the same bits as the default column-walking kernel's */
        char  what4[160];
        tpair y4 = TP(K_ACT, F_OUT, 1.0f, 0.0f, B, Ho, Wo, C);
        snprintf(what4, sizeof what4, "%s, CK_RESIZE_SUM=pixel", what);
        ck_resize_sum(&g_exc, &y4.c, xc, 3);
        setenv("CK_RESIZE_SUM", "pixel", 1);
        ck_resize_sum(&g_exg, &y4.d, xd, 3);
        unsetenv("CK_RESIZE_SUM");
        tp_compare(what4, &y4, 1.0);
        float *a = malloc(y.n * sizeof(float)), *b4 = malloc(y.n * sizeof(float));
        CK_ASSERT(a && b4);
        CHECK(tp_fetch(&y, a) && tp_fetch(&y4, b4));
        CHECK_MSG(!memcmp(a, b4, y.n * sizeof(float)), "[%s] %s: differs from the default kernel", g_prec_name, what4);
        free(a), free(b4);
        tp_free(&y4);
    }
    if (y.d.dtype != CK_DTYPE_F32) {
        float *a = malloc(y.n * sizeof(float)), *b = malloc(y.n * sizeof(float));
        CK_ASSERT(a && b);
        tp_fetch(&y, a), tp_fetch(&chained, b);
        const float *ref = (const float *)y.c.data;
        double       ea = 0.0, eb = 0.0;
        for (size_t i = 0; i < y.n; i++) ea += fabs((double)a[i] - ref[i]), eb += fabs((double)b[i] - ref[i]);
        printf("       mean |d| to float32: one rounding %.3e, chained %.3e\n", ea / y.n, eb / y.n);
        CHECK_MSG(ea < eb, "%s: the float32 sum (%.3e) is not closer than chained 16-bit sums (%.3e)", what, ea / y.n,
                  eb / y.n);
        free(a), free(b);
    }
    for (int k = 0; k < 3; k++) tp_free(&x[k]);
    tp_free(&y), tp_free(&chained);
}

static void test_activation(int64_t n, ck_act act, int inplace) {
    char what[96];
    static const char *an[] = {"none", "gelu", "relu"};
    snprintf(what, sizeof what, "activation %s n=%lld%s", an[act], (long long)n, inplace ? " (y=x)" : "");
    tpair x = TP(K_ACT, F_RAND, 4.0f, 0.0f, n);
    tpair y = {0};
    if (!inplace) y = TP(K_ACT, F_OUT, 0, 0, n);
    tpair *yp = inplace ? &x : &y;
    ck_activation(&g_exc, &yp->c, &x.c, act);
    ck_activation(&g_exg, &yp->d, &x.d, act);
    tp_compare(what, yp, 1.0);
    tp_free(&x), tp_free(&y);
}

static void test_sigmoid_add(int64_t P, int64_t C, int with_b, float s) {
    char what[96];
    snprintf(what, sizeof what, "sigmoid_add %lldx%lld%s", (long long)P, (long long)C, with_b ? " +b" : "");
    tpair a = TP(K_ACT, F_RAND, 4.0f, 0.0f, P, C);
    tpair b = {0};
    if (with_b) b = TP(K_ACT, F_RAND, 0.5f, 0.0f, P, C);
    tpair y = TP(K_ACT, F_OUT, 0, 0, P, C);
    ck_sigmoid_add(&g_exc, &y.c, &a.c, with_b ? &b.c : NULL, s);
    ck_sigmoid_add(&g_exg, &y.d, &a.d, with_b ? &b.d : NULL, s);
    tp_compare(what, &y, 1.0);
    tp_free(&a), tp_free(&b), tp_free(&y);
}

/* pad: zero channels after σ(b) (the refiner's CK_REF_IN input); F_OUT poisons y, so they must be written */
static void test_concat_sigmoid(int64_t B, int64_t H, int64_t W, int64_t CA, int a_ch, int64_t CB, int pad) {
    char what[96];
    snprintf(what, sizeof what, "concat_sigmoid %lldx%lldx%lld a%lld[:%d] b%lld pad%d", (long long)B, (long long)H,
             (long long)W, (long long)CA, a_ch, (long long)CB, pad);
    tpair a = TP(K_ACT, F_RAND, 2.0f, 0.0f, B, H, W, CA);
    tpair b = TP(K_ACT, F_RAND, 4.0f, 0.0f, B, H, W, CB);
    tpair y = TP(K_ACT, F_OUT, 0, 0, B, H, W, a_ch + CB + pad);
    ck_concat_sigmoid(&g_exc, &y.c, &a.c, a_ch, &b.c);
    ck_concat_sigmoid(&g_exg, &y.d, &a.d, a_ch, &b.d);
    tp_compare(what, &y, 1.0);
    tp_free(&a), tp_free(&b), tp_free(&y);
}

/* Conversions between every pair of float dtypes: bit-exact against the CPU (round-to-nearest-even). */
static void test_convert(int64_t n) {
    const ck_dtype dts[3] = {CK_DTYPE_F32, CK_DTYPE_F16, CK_DTYPE_BF16};
    const int      fails0 = g_failures;
    float         *src    = malloc(sizeof(float) * (size_t)n);
    CK_ASSERT(src);
    for (int64_t i = 0; i < n; i++) { /* wide range: subnormal fp16, overflow, ties */
        const float e = (float)(i % 41) - 20.0f;
        src[i]        = frand() * powf(2.0f, e);
    }
    src[0] = 65520.0f, src[1] = -1e-8f, src[2] = 0.0f, src[3] = 1.0f + 1.0f / 256.0f;
    for (int a = 0; a < 3; a++) {
        for (int b = 0; b < 3; b++) {
            const ck_dtype da = dts[a], db = dts[b];
            const size_t   na = (size_t)n * ck_dtype_size(da), nb = (size_t)n * ck_dtype_size(db);
            uint8_t       *ha = malloc(na), *hb = malloc(nb), *gb = malloc(nb);
            CK_ASSERT(ha && hb && gb);
            f32_to_dt(ha, src, (size_t)n, da);
            ck_tensor ta = ck_tensor_make(ha, da, 1, &n), tb = ck_tensor_make(hb, db, 1, &n);
            g_cpu->convert(g_cpu, &tb, &ta);
            void *dA = g_gpu->alloc(g_gpu, na), *dB = g_gpu->alloc(g_gpu, nb);
            CK_ASSERT(dA && dB);
            g_gpu->upload(g_gpu, dA, ha, na);
            ck_tensor xa = ck_tensor_make(dA, da, 1, &n), xb = ck_tensor_make(dB, db, 1, &n);
            ck_convert(&g_exg, &xb, &xa);
            g_gpu->download(g_gpu, gb, dB, nb);
            CHECK_MSG(memcmp(gb, hb, nb) == 0, "[%s] convert %s -> %s n=%lld differs from the CPU", g_prec_name,
                      ck_dtype_name(da), ck_dtype_name(db), (long long)n);
            g_gpu->free(g_gpu, dA);
            g_gpu->free(g_gpu, dB);
            free(ha), free(hb), free(gb);
        }
    }
    printf("%s [%s] convert: 9 dtype pairs, n=%lld, bit-exact\n", g_failures == fails0 ? "OK    " : "NOT OK",
           g_prec_name, (long long)n);
    free(src);
}

/* Zeroes rows [r0, r0 + n) of y (B=1) in place; the rest must keep its random values. */
static void test_zero(int64_t H, int64_t W, int64_t C, int64_t r0, int64_t n) {
    char what[96];
    snprintf(what, sizeof what, "zero rows [%lld, %lld) of %lldx%lldx%lld", (long long)r0, (long long)(r0 + n),
             (long long)H, (long long)W, (long long)C);
    tpair y = TP(K_ACT, F_INOUT, 1.0f, 0.5f, 1, H, W, C);
    const size_t row_c = (size_t)(W * C) * sizeof(float), row_d = (size_t)(W * C) * ck_dtype_size(y.d.dtype);
    ck_tensor vc = ck_tensor_make((uint8_t *)y.c.data + r0 * row_c, CK_DTYPE_F32, 4, (int64_t[]){1, n, W, C});
    ck_tensor vd = ck_tensor_make((uint8_t *)y.d.data + r0 * row_d, y.d.dtype, 4, (int64_t[]){1, n, W, C});
    ck_zero(&g_exc, &vc);
    ck_zero(&g_exg, &vd);
    tp_compare(what, &y, 0.0); /* exact: untouched values and zeros */
    tp_free(&y);
}

/* An h×w rectangle of x at (sy, sx) into y at (dy, dx); y starts random, so what lies outside the rectangle
 * must survive. Exact in every dtype (a copy). */
static void test_copy_rect(int64_t B, int64_t HX, int64_t WX, int64_t HY, int64_t WY, int64_t C, int dy, int dx,
                           int sy, int sx, int h, int w) {
    char what[128];
    snprintf(what, sizeof what, "copy_rect %dx%d (%d,%d) of %lldx%lldx%lldx%lld -> (%d,%d) of %lldx%lld", h, w, sy, sx,
             (long long)B, (long long)HX, (long long)WX, (long long)C, dy, dx, (long long)HY, (long long)WY);
    tpair x = TP(K_ACT, F_RAND, 1.0f, 0.0f, B, HX, WX, C);
    tpair y = TP(K_ACT, F_INOUT, 1.0f, 3.0f, B, HY, WY, C);
    ck_copy_rect(&g_exc, &y.c, dy, dx, &x.c, sy, sx, h, w);
    ck_copy_rect(&g_exg, &y.d, dy, dx, &x.d, sy, sx, h, w);
    tp_compare(what, &y, 0.0);
    tp_free(&x), tp_free(&y);
}

/* ======================= backend features ======================= */

/* Bitwise identical results across runs (no atomics in conv / groupnorm / linear). */
static void test_determinism(void) {
    tpair x = TP(K_ACT, F_RAND, 1.0f, 0.3f, 1, 96, 80, 64);
    tpair w = TP(K_W, F_RAND, 0.05f, 0.0f, 64, 64, 3, 3);
    tpair g = TP(K_VEC, F_RAND, 0.3f, 1.0f, 64), bt = TP(K_VEC, F_RAND, 0.3f, 0.0f, 64);
    tpair y = TP(K_ACT, F_OUT, 0, 0, 1, 96, 80, 64);
    float *r0 = malloc(y.n * sizeof(float)), *r1 = malloc(y.n * sizeof(float));
    CK_ASSERT(r0 && r1);
    for (int it = 0; it < 2; it++) {
        ck_conv2d(&g_exg, &y.d, &x.d, &w.d, NULL, 1, 2, 2);
        ck_groupnorm(&g_exg, &y.d, &y.d, &g.d, &bt.d, 8, 1e-5f, &x.d, CK_ACT_RELU);
        tp_fetch(&y, it ? r1 : r0);
    }
    CHECK_MSG(memcmp(r0, r1, y.n * sizeof(float)) == 0, "[%s] conv+groupnorm not bitwise reproducible", g_prec_name);
    printf("%s [%s] determinism conv+groupnorm\n", memcmp(r0, r1, y.n * sizeof(float)) ? "NOT OK" : "OK    ", g_prec_name);
    free(r0), free(r1);
    tp_free(&x), tp_free(&w), tp_free(&g), tp_free(&bt), tp_free(&y);
}

/* A captured sequence replays to the same bits as the eager run; allocation under capture is refused. */
static void test_graph(void) {
    const ck_backend_ext *e = &g_gpu->ext;
    if (!e->graph_begin) {
        CHECK_MSG(0, "CUDA backend without graph capture");
        return;
    }
    tpair x = TP(K_ACT, F_RAND, 1.0f, 0.0f, 1024, 224);
    tpair w = TP(K_W, F_RAND, 0.07f, 0.0f, 896, 224), b = TP(K_VEC, F_RAND, 0.5f, 0.0f, 896);
    tpair h = TP(K_ACT, F_OUT, 0, 0, 1024, 896);
    tpair g = TP(K_VEC, F_RAND, 0.3f, 1.0f, 896), bt = TP(K_VEC, F_RAND, 0.3f, 0.0f, 896);
    tpair y = TP(K_ACT, F_OUT, 0, 0, 1024, 896);
    float *eager = malloc(y.n * sizeof(float)), *replay = malloc(y.n * sizeof(float));
    CK_ASSERT(eager && replay);

    e->timer_mark(g_gpu, 0);
    ck_linear(&g_exg, &h.d, &x.d, &w.d, &b.d, CK_ACT_GELU, NULL);
    ck_layernorm(&g_exg, &y.d, &h.d, &g.d, &bt.d, 1e-6f);
    e->timer_mark(g_gpu, 1);
    const float ms = e->timer_elapsed_ms(g_gpu);
    tp_fetch(&y, eager);

    CHECK(e->graph_begin(g_gpu));
    CHECK_MSG(g_gpu->alloc(g_gpu, 1024) == NULL, "allocation during capture must be refused");
    ck_linear(&g_exg, &h.d, &x.d, &w.d, &b.d, CK_ACT_GELU, NULL);
    ck_layernorm(&g_exg, &y.d, &h.d, &g.d, &bt.d, 1e-6f);
    CHECK(e->graph_end(g_gpu, 0));
    tp_upload(&h); /* scribble (zeros) over the intermediate and the output, then replay */
    tp_upload(&y);
    CHECK(e->graph_launch(g_gpu, 0));
    CHECK(e->graph_launch(g_gpu, 0));
    tp_fetch(&y, replay);
    const int same = memcmp(eager, replay, y.n * sizeof(float)) == 0;
    CHECK_MSG(same, "[%s] graph replay differs from the eager run", g_prec_name);
    e->graph_reset(g_gpu);
    CHECK(!e->graph_launch(g_gpu, 0)); /* nothing to launch after a reset (1 = success) */
    const size_t peak = e->mem_peak(g_gpu);
    CHECK(peak > 0);
    printf("%s [%s] graph capture/replay; eager pair %.3f ms; peak %.1f MiB\n", same ? "OK    " : "NOT OK", g_prec_name,
           ms, peak / 1048576.0);
    free(eager), free(replay);
    tp_free(&x), tp_free(&w), tp_free(&b), tp_free(&h), tp_free(&g), tp_free(&bt), tp_free(&y);
}

/* ======================= one case per op (ops_list.h) ======================= */

/* That the cuDNN linear ran `want` graphs since `before` (in 16 bits, where cuDNN is built in). */
static void cudnn_taken(const char *what, long before, long want) {
    const long now = ck__linear_cudnn_runs();
    if (now < 0 || g_gpu->act_dtype == CK_DTYPE_F32) return;
    printf("%s [%s] %s: cuDNN graphs run %ld (cases for it %ld)\n", now - before == want ? "OK    " : "NOT OK",
           g_prec_name, what, now - before, want);
    CHECK(now - before == want);
}

static void test_op_linear(void) {
    /* linear: Hiera at S=512 (tokens 16384 / 4096 / 1024 / 256), decoder, refiner head, odd shapes */
    test_linear(16384, 112, 336, 1, CK_ACT_NONE, 0);  /* qkv, stage 0 */
    test_linear(16384, 112, 448, 1, CK_ACT_GELU, 0);  /* fc1 */
    test_linear(16384, 448, 112, 1, CK_ACT_NONE, 2);  /* fc2, x += mlp */
    test_linear(16384, 112, 224, 1, CK_ACT_NONE, 0);  /* proj at the q-pool block */
    test_linear(4096, 224, 896, 1, CK_ACT_GELU, 0);
    test_linear(4096, 224, 224, 1, CK_ACT_NONE, 2);
    test_linear(1024, 448, 1792, 1, CK_ACT_GELU, 0);
    test_linear(1024, 1792, 448, 1, CK_ACT_NONE, 2);
    test_linear(256, 896, 2688, 1, CK_ACT_NONE, 0);
    test_linear(256, 3584, 896, 1, CK_ACT_NONE, 2);
    test_linear(16384, 112, 512, 1, CK_ACT_NONE, 2);  /* decoder c1 into the running sum */
    test_linear(16384, 512, 4, 1, CK_ACT_NONE, 0);    /* classifier */
    test_linear(262144, 64, 4, 1, CK_ACT_NONE, 0);    /* refiner final 1×1 at S=512 */
    test_linear(70001, 64, 4, 1, CK_ACT_GELU, 1);     /* narrow output: bias, GELU, then the residual */
    test_linear(65536, 512, 3, 0, CK_ACT_NONE, 2);    /* narrow output: no bias, residual in place */
    test_linear(37, 7, 5, 1, CK_ACT_GELU, 0);
    test_linear(33, 19, 13, 1, CK_ACT_RELU, 1);
    test_linear(33, 19, 13, 0, CK_ACT_RELU, 0);
    test_linear(45, 24, 40, 1, CK_ACT_RELU, 0);
    test_linear(17, 64, 96, 0, CK_ACT_NONE, 1);
    test_linear(1, 1, 1, 1, CK_ACT_NONE, 0);
    /* the Hopper GEMM with its epilogue in registers (CK_LINEAR_GEMM; elsewhere these run the default path):
     * fc1's GELU at each stage's width, a residual after the activation, in place, ragged tiles, and with
     * =all the linears without an activation too */
    setenv("CK_LINEAR_GEMM", "1", 1);
    test_linear(16384, 112, 448, 1, CK_ACT_GELU, 0);
    test_linear(4096, 224, 896, 1, CK_ACT_GELU, 0);
    test_linear(1000, 448, 1792, 1, CK_ACT_GELU, 0);
    test_linear(300, 896, 3584, 1, CK_ACT_GELU, 1);
    test_linear(77, 24, 40, 1, CK_ACT_RELU, 0);
    setenv("CK_LINEAR_GEMM", "all", 1);
    test_linear(16384, 448, 112, 1, CK_ACT_NONE, 2);
    test_linear(4096, 224, 672, 1, CK_ACT_NONE, 0);
    test_linear(333, 1792, 448, 0, CK_ACT_NONE, 1);
    unsetenv("CK_LINEAR_GEMM");
    test_linear(1000, 130, 70, 0, CK_ACT_GELU, 1);
    /* the narrow linears with the weight resident (CK_LINEAR_NARROW; elsewhere, and past K = 128 or N = 512,
     * the default path): the first stage's qkv, fc1 (GELU), proj with the residual in place at S = 512 over
     * 128 persistent tiles and more; ragged last tiles, K of one operand tile, odd chunk counts, ReLU */
    setenv("CK_LINEAR_NARROW", "1", 1);
    test_linear(16384, 112, 336, 1, CK_ACT_NONE, 0);
    test_linear(16384, 112, 448, 1, CK_ACT_GELU, 0);
    test_linear(16384, 112, 112, 1, CK_ACT_NONE, 2);
    test_linear(40001, 112, 224, 1, CK_ACT_GELU, 1);
    test_linear(1001, 64, 512, 0, CK_ACT_RELU, 0);
    test_linear(77, 24, 40, 1, CK_ACT_GELU, 1);
    test_linear(300, 112, 520, 1, CK_ACT_NONE, 0); /* N past 512: declined, the default path */
    unsetenv("CK_LINEAR_NARROW");
    /* fc1 as one cuDNN graph (CK_LINEAR_CUDNN; 16 bits only): each stage's width; a residual, odd widths: declined */
    setenv("CK_LINEAR_CUDNN", "1", 1);
    const long runs0 = ck__linear_cudnn_runs();
    test_linear(16384, 112, 448, 1, CK_ACT_GELU, 0);
    test_linear(4096, 224, 896, 1, CK_ACT_GELU, 0);
    test_linear(1000, 448, 1792, 1, CK_ACT_GELU, 0);
    test_linear(256, 896, 3584, 0, CK_ACT_GELU, 0);
    test_linear(300, 896, 3584, 1, CK_ACT_GELU, 1);
    test_linear(37, 7, 5, 1, CK_ACT_GELU, 0);
    unsetenv("CK_LINEAR_CUDNN");
    cudnn_taken("linear", runs0, 4);
}

static void test_op_layernorm(void) {
    test_layernorm(16384, 112);
    test_layernorm(1001, 112); /* a last block with rows past M */
    test_layernorm(3000, 64);  /* 8 vectors of 16 bits: CK_LN_ROWS=exact over 8 lanes */
    test_layernorm(77, 40);    /* 5 vectors, rows past M */
    test_layernorm(4096, 224);
    test_layernorm(1024, 448);
    test_layernorm(256, 896);
    test_layernorm(37, 7);
    test_layernorm(5, 1000);
    test_layernorm(3, 2048);
    test_layernorm(9, 1);
}

static void test_op_conv2d(void) {
    test_conv(1, 128, 128, 4, 112, 7, 4, 3, 1, 1); /* patch embed, S=128 */
    test_conv(1, 512, 512, 4, 112, 7, 4, 3, 1, 1); /* patch embed, S=512 */
    test_conv(1, 96, 80, 7, 64, 3, 1, 1, 1, 1);    /* refiner stem, 7 channels */
    test_conv(1, 96, 80, 8, 64, 3, 1, 1, 1, 1);    /* refiner stem, padded to 8: four taps per k chunk */
    test_conv(2, 20, 24, 16, 24, 3, 1, 2, 2, 1);   /* two taps per k chunk */
    test_conv(1, 17, 19, 24, 40, 3, 1, 1, 1, 0);   /* a k chunk across a tap boundary, no bias */
    test_conv(1, 64, 64, 64, 64, 3, 1, 1, 1, 1);   /* refiner blocks, dilation 1..8 */
    test_conv(1, 64, 64, 64, 64, 3, 1, 2, 2, 1);
    test_conv(1, 64, 64, 64, 64, 3, 1, 4, 4, 1);
    test_conv(1, 64, 64, 64, 64, 3, 1, 8, 8, 1);
    test_conv(1, 256, 256, 64, 64, 3, 1, 8, 8, 1);
    test_conv(2, 33, 17, 64, 64, 3, 1, 2, 2, 0);
    test_conv(2, 13, 11, 3, 5, 5, 2, 1, 1, 1);
    test_conv(1, 9, 7, 16, 130, 1, 1, 0, 1, 1);
    test_conv(1, 5, 6, 32, 24, 3, 1, 1, 1, 1);
    test_conv(1, 1, 1, 4, 3, 3, 1, 1, 1, 1);
    /* rows without padding (the refiner's banded conv2: halo rows are real rows of the view) */
    test_conv_hw(1, 144, 256, 64, 64, 3, 1, 0, 8, 8, 1);
    test_conv_hw(1, 40, 96, 64, 64, 3, 1, 0, 2, 2, 1);
    test_conv_hw(1, 20, 30, 16, 24, 3, 1, 1, 0, 1, 0);
}

static void test_op_groupnorm(void) {
    test_groupnorm(1, 64, 64, 64, 8, 0, 1, CK_ACT_RELU, 0); /* stem: GN + ReLU in place */
    test_groupnorm(1, 64, 64, 64, 8, 2, 0, CK_ACT_RELU, 0); /* GN2 + residual (y = residual) + ReLU */
    test_groupnorm(1, 3, 3, 300, 4, 0, 0, CK_ACT_RELU, 0);
    test_groupnorm(1, 1, 1, 8, 8, 0, 0, CK_ACT_NONE, 0);
    test_groupnorm(1, 512, 512, 64, 8, 1, 0, CK_ACT_RELU, 0); /* refiner size at S=512, separate residual */
    test_groupnorm(2, 33, 21, 64, 8, 0, 0, CK_ACT_NONE, 0);   /* batch of two, odd grid */
    test_groupnorm(2, 7, 5, 12, 3, 1, 0, CK_ACT_NONE, 0);
}

static void test_op_groupnorm_linear(void) {
    test_groupnorm_linear(1, 512, 512, 64, 8, 4, 1, CK_ACT_RELU, 0); /* the refiner's head at S = 512 */
    test_groupnorm_linear(2, 33, 21, 64, 8, 4, 1, CK_ACT_RELU, 0);   /* a batch of two, odd grid */
    test_groupnorm_linear(1, 40, 24, 32, 8, 4, 0, CK_ACT_RELU, 0);   /* the built-in keyer's width */
    test_groupnorm_linear(2, 7, 5, 12, 3, 3, 1, CK_ACT_NONE, 0);     /* any shape */
    test_groupnorm_linear(2, 64, 64, 64, 8, 4, 1, CK_ACT_RELU, 1);   /* the fused refiner's head: statistics given */
}

static void test_op_groupnorm_stats(void) {
    test_groupnorm(1, 512, 512, 64, 8, 1, 0, CK_ACT_RELU, 1);
    test_groupnorm(2, 33, 21, 64, 8, 0, 0, CK_ACT_NONE, 1);
    test_groupnorm(1, 40, 24, 64, 8, 1, 0, CK_ACT_RELU, 2);
    test_groupnorm(2, 7, 5, 12, 3, 1, 0, CK_ACT_NONE, 1);
}

static void test_op_attention(void) {
    test_attention(512, 64, 64, 56, 56);     /* blocks 0-1, windows */
    test_attention(512, 64, 64, 56, 64);     /* same, pad64 */
    test_attention(1024, 16, 64, 56, 56);    /* block 2, q-pool */
    test_attention(2048, 4, 16, 56, 56);     /* block 5 */
    test_attention(8, 1024, 1024, 56, 56);   /* blocks 6-20, global */
    test_attention(16, 256, 1024, 56, 64);   /* block 21, global q-pool, pad64 */
    test_attention(16, 256, 256, 56, 56);    /* blocks 22-23 */
    /* pad64 rows of 4096+ keys take the Hopper FA3 kernel where there is one: a partial wave split over keys
     * (16 tiles of 128 rows, eight key splits each), full waves plus a split tail (176 tiles of 192 rows), ragged
     * rows and a partial last key tile */
    test_attention(2, 1024, 4096, 56, 64);
    test_attention(8, 4096, 4096, 56, 64);
    test_attention(3, 1000, 4500, 56, 64);
    test_attention(3, 5, 7, 8, 8);
    test_attention(2, 33, 65, 24, 24);
}

static void test_op_attn_gather(void) {
    test_gather(1, 128, 128, 2, 56, 56, 8, 8, 0);  /* blocks 0-1 */
    test_gather(1, 128, 128, 2, 56, 64, 8, 8, 0);  /* pad64 */
    test_gather(1, 128, 128, 4, 56, 56, 8, 8, 1);  /* block 2, q-pool */
    test_gather(1, 32, 32, 8, 56, 64, 32, 32, 0);  /* global */
    test_gather(1, 32, 32, 16, 56, 56, 32, 32, 1); /* block 21: global q-pool */
    test_gather(2, 6, 4, 3, 5, 7, 2, 2, 1);
    test_gather(1, 4, 6, 1, 3, 3, 4, 3, 0);
}

static void test_op_attn_scatter(void) {
    test_scatter(1, 128, 128, 2, 56, 56, 8, 8);
    test_scatter(1, 64, 64, 4, 56, 64, 4, 4);       /* after the q-pool of block 2 */
    test_scatter(1, 16, 16, 16, 56, 56, 16, 16);    /* global */
    test_scatter(2, 6, 4, 3, 5, 7, 2, 2);
}

static void test_op_attention_qkv(void) {
    test_attention_qkv(1, 64, 64, 2, 56, 64, 0, 0, 0);  /* 4096 tokens, pad64: FA3 straight from qkv on Hopper */
    test_attention_qkv(2, 48, 100, 3, 56, 64, 0, 0, 0); /* two images of 4800 tokens (a partial last key tile) */
    test_attention_qkv(1, 64, 64, 2, 56, 56, 0, 0, 0);  /* pad64 off: the composition */
    test_attention_qkv(1, 16, 16, 4, 56, 64, 0, 0, 0);  /* short rows: the composition */
#ifdef CK_HAVE_CUDA
    /* a batch straight from qkv in one launch (each image's last query and key tiles run into the next image's
     * rows): the path's threshold lowered to these 1023-row images */
    ck__attention_tokens_min_set(1000);
    test_attention_qkv(4, 31, 33, 8, 56, 64, 0, 0, 0);
    ck__attention_tokens_min_set(0);
    /* the same two with P·V over all 64 columns (CK_ATTN_PV56=0, read at every call; the default takes the
     * head's 56) */
    setenv("CK_ATTN_PV56", "0", 1);
    test_attention_qkv(2, 48, 100, 3, 56, 64, 0, 0, 0);
    ck__attention_tokens_min_set(1000);
    test_attention_qkv(4, 31, 33, 8, 56, 64, 0, 0, 0);
    ck__attention_tokens_min_set(0);
    unsetenv("CK_ATTN_PV56");
#endif
    if (g_gpu->act_dtype == CK_DTYPE_F16) {
        test_attention_qkv_fp8(1, 64, 64, 2);  /* the FP8 option: 4096 tokens */
        test_attention_qkv_fp8(2, 48, 100, 3); /* two images, a partial last key tile */
    }
    test_attention_qkv(2, 5, 7, 3, 8, 8, 0, 0, 0);
    /* mask units: base_plus's stage 0 (8×8 windows, 2 heads), its q-pooling block (8×8 keys, 4×4 queries), stage 1
     * (4×4 windows, 4 heads) and the q-pool into stage 2; the small model's head dim 32; non-square windows; HD 64;
     * a group count that leaves a block partly empty; HD 8 (not served: the composition) */
    test_attention_qkv(2, 32, 32, 2, 56, 64, 8, 8, 0);
    test_attention_qkv(1, 32, 32, 2, 56, 64, 8, 8, 1);
    test_attention_qkv(1, 16, 16, 4, 56, 64, 4, 4, 0);
    test_attention_qkv(2, 16, 16, 4, 56, 56, 4, 4, 1);
    test_attention_qkv(3, 16, 24, 1, 32, 32, 8, 8, 0);
    test_attention_qkv(1, 16, 24, 1, 32, 32, 8, 8, 1);
    test_attention_qkv(1, 16, 32, 3, 56, 64, 4, 8, 0);
    test_attention_qkv(1, 16, 32, 3, 56, 64, 4, 8, 1);
    test_attention_qkv(1, 16, 16, 1, 64, 64, 8, 8, 0);
    test_attention_qkv(1, 12, 12, 3, 56, 64, 6, 6, 1);
    test_attention_qkv(1, 8, 8, 2, 8, 8, 4, 4, 1);
}

static void test_op_maxpool2x2(void) {
    test_maxpool(1, 128, 128, 224);
    test_maxpool(1, 32, 32, 896);
    test_maxpool(2, 6, 10, 3);
}

static void test_op_add(void) {
    test_add(16384, 112, 16384 * 112, K_VEC, 1);    /* + pos_embed (float32) in place */
    test_add(16384, 112, 112, K_VEC, 0);
    test_add(1024, 448, 1024 * 448, K_ACT, 0);
    test_add(37, 5, 5, K_ACT, 1);
    test_add(7, 3, 21, K_VEC, 0);
}

static void test_op_resize_bilinear(void) {
    test_resize(1, 128, 128, 4, 512, 512, 0);       /* logits ×4 */
    test_resize(1, 16, 16, 512, 128, 128, 0);       /* decoder c4 ×8 */
    test_resize(1, 32, 32, 512, 128, 128, 1);       /* c3 ×4, accumulate */
    test_resize(1, 64, 64, 512, 128, 128, 1);       /* c2 ×2, accumulate */
    test_resize(2, 5, 7, 3, 13, 4, 1);
    test_resize(1, 9, 9, 5, 3, 2, 0);
}

static void test_op_resize_sum(void) {
    test_resize_sum(1, 512, 128, 128, 0); /* the decoder's fused hidden at 512 */
    test_resize_sum(2, 24, 40, 48, 0);
    test_resize_sum(1, 16, 12, 22, 0);    /* a last group of two output columns */
    test_resize_sum(2, 24, 40, 48, 1);
    test_resize_sum(1, 5, 16, 24, 0);     /* C not a multiple of the vector width */
}

static void test_op_activation(void) {
    test_activation(16384 * 512, CK_ACT_RELU, 1);
    test_activation(1000, CK_ACT_GELU, 0);
    test_activation(77, CK_ACT_RELU, 0);
    test_activation(33, CK_ACT_NONE, 0);
}

static void test_op_sigmoid_add(void) {
    test_sigmoid_add(512 * 512, 4, 1, 10.0f);
    test_sigmoid_add(512 * 512, 4, 0, 0.0f);
    test_sigmoid_add(13, 3, 1, -2.5f);
}

static void test_op_concat_sigmoid(void) {
    test_concat_sigmoid(1, 512, 512, 4, 3, 4, 1);
    test_concat_sigmoid(2, 5, 3, 6, 2, 3, 0);
    test_concat_sigmoid(2, 5, 3, 6, 3, 4, 3);
}

static void test_op_convert(void) {
    test_convert(100003);
}

static void test_op_zero(void) {
    test_zero(40, 96, 64, 0, 8);    /* the slim refiner's halo rows above t */
    test_zero(40, 96, 64, 32, 8);   /* ... and below */
    test_zero(7, 5, 3, 2, 3);       /* 15-element rows: not a multiple of any vector width */
}

static void test_op_copy_rect(void) {
    test_copy_rect(1, 128, 128, 96, 96, 4, 0, 0, 16, 32, 96, 96);  /* a tile's input with its halo */
    test_copy_rect(1, 96, 96, 128, 128, 4, 32, 64, 32, 32, 32, 32); /* its owned pixels back into the image */
    test_copy_rect(1, 70, 90, 40, 24, 16, 0, 0, 30, 66, 40, 24);   /* a clamped tile at the corner, 16 ch */
    test_copy_rect(2, 9, 11, 10, 12, 3, 1, 2, 4, 5, 5, 6);         /* batch of two, 3 channels */
    test_copy_rect(1, 5, 5, 5, 5, 1, 4, 4, 0, 0, 1, 1);            /* one element */
}

/* space_to_depth against the CPU: a copy, so the device's values equal the CPU's exactly (zeros included). */
static void test_space_to_depth(int64_t B, int64_t H, int64_t W, int64_t C, int k, int lead, int64_t Hy, int64_t Wy) {
    char what[128];
    snprintf(what, sizeof what, "space_to_depth %lldx%lldx%lldx%lld k%d lead %d -> %lldx%lld", (long long)B,
             (long long)H, (long long)W, (long long)C, k, lead, (long long)Hy, (long long)Wy);
    tpair x = TP(K_ACT, F_RAND, 1.0f, 0.0f, B, H, W, C);
    tpair y = TP(K_ACT, F_OUT, 0, 0, B, Hy, Wy, (int64_t)k * k * C);
    ck_space_to_depth(&g_exc, &y.c, &x.c, k, lead);
    ck_space_to_depth(&g_exg, &y.d, &x.d, k, lead);
    float *got = malloc(y.n * sizeof(float));
    CK_ASSERT(got);
    const int guard_ok = tp_fetch(&y, got);
    size_t    bad = 0, zeros = 0;
    for (size_t i = 0; i < y.n; i++) {
        bad += got[i] != ((const float *)y.c.data)[i];
        zeros += got[i] == 0.0f;
    }
    /* every block row of the first block row and column lies in the padding: zeros, and not all of y */
    const int ok = guard_ok && bad == 0 && zeros > 0 && zeros < y.n;
    CHECK_MSG(ok, "[%s] %s: %zu of %zu differ, %zu zeros, guard %s", g_prec_name, what, bad, y.n, zeros,
              guard_ok ? "intact" : "overwritten");
    printf("%s [%s] %s\n", ok ? "OK    " : "NOT OK", g_prec_name, what);
    free(got);
    tp_free(&x), tp_free(&y);
}

/* The patch embedding as model/hiera.c runs it with CK_PATCH_S2D=1 (space_to_depth, then the 2×2 convolution with
 * ck_patch_weight_s2d's kernel) on the device, against the CPU's 7×7 stride-4 convolution: the same products, so
 * within the convolution's own tolerance. */
static void test_patch_s2d(int64_t B, int64_t S, int64_t OC) {
    char what[96];
    snprintf(what, sizeof what, "patch embedding %lldx%lldx%lldx4 as 4x4 blocks ->%lld", (long long)B, (long long)S,
             (long long)S, (long long)OC);
    tpair x  = TP(K_ACT, F_RAND, 1.0f, 0.0f, B, S, S, 4);
    tpair w  = TP(K_W, F_RAND, 1.0f / sqrtf(196.0f), 0.0f, OC, 4, 7, 7);
    tpair w2 = TP(K_W, F_OUT, 0, 0, OC, 64, 2, 2);
    tpair b  = TP(K_VEC, F_RAND, 0.5f, 0.0f, OC);
    tpair bl = TP(K_ACT, F_OUT, 0, 0, B, S / 4 + 1, S / 4 + 1, 64);
    tpair y  = TP(K_ACT, F_OUT, 0, 0, B, S / 4, S / 4, OC);
    ck_patch_weight_s2d((float *)w2.c.data, (const float *)w.c.data, OC, 4);
    tp_upload(&w2);
    ck_conv2d(&g_exc, &y.c, &x.c, &w.c, &b.c, 4, 3, 1);
    ck_space_to_depth(&g_exg, &bl.d, &x.d, 4, 4);
    ck_conv2d(&g_exg, &y.d, &bl.d, &w2.d, &b.d, 1, 0, 1);
    tp_compare(what, &y, 1.0);
    tp_free(&x), tp_free(&w), tp_free(&w2), tp_free(&b), tp_free(&bl), tp_free(&y);
}

static void test_op_space_to_depth(void) {
    test_space_to_depth(1, 64, 64, 4, 4, 4, 17, 17); /* the patch embedding's blocks: whole 16-byte rows */
    test_space_to_depth(2, 30, 22, 3, 4, 4, 9, 7);   /* 3 channels, ragged edges: value by value */
    test_space_to_depth(1, 13, 9, 4, 4, 1, 4, 3);    /* blocks straddling the border */
    test_patch_s2d(1, 64, 112);
    test_patch_s2d(2, 36, 24);
}

/* The moments of one row y (W, C) of a map, as conv3x3_gn defines them: per 128-pixel segment and group of
 * C / groups channels, (mean, Σ(v − mean)²) in float64, two passes, into m (⌈W/CK_GN_SEG⌉, groups, 2). */
static void row_moments(const float *y, int64_t W, int64_t C, int64_t groups, float *m) {
    const int64_t CG = C / groups, nseg = (W + CK_GN_SEG - 1) / CK_GN_SEG;
    for (int64_t sg = 0; sg < nseg; sg++)
        for (int64_t gi = 0; gi < groups; gi++) {
            const int64_t p0 = sg * CK_GN_SEG, p1 = p0 + CK_GN_SEG < W ? p0 + CK_GN_SEG : W;
            const double  n  = (double)((p1 - p0) * CG);
            double        sum = 0.0, m2 = 0.0;
            for (int64_t p = p0; p < p1; p++)
                for (int64_t k = 0; k < CG; k++) sum += y[p * C + gi * CG + k];
            for (int64_t p = p0; p < p1; p++)
                for (int64_t k = 0; k < CG; k++) {
                    const double dv = y[p * C + gi * CG + k] - sum / n;
                    m2 += dv * dv;
                }
            m[(sg * groups + gi) * 2] = (float)(sum / n), m[(sg * groups + gi) * 2 + 1] = (float)m2;
        }
}

/* conv3x3_gn against the CPU: the output band, the moments (other rows keep their values on both sides), and the
 * statistics gn_moments_stats forms from them. 16-bit maps of 64 channels in 8 groups take the Hopper kernel
 * where there is one; the rest (and every map elsewhere) the plain kernels. act: 0 none, 1 GroupNorm + ReLU,
 * 2 GroupNorm + residual + ReLU with the formed input stored to a_out (a folded GroupNorm 2), 3 GroupNorm + ReLU
 * into a_out without a residual (the folded stem): a_out's band rows against the CPU's, its other rows untouched
 * on both sides. */
static void test_conv3x3_gn(int64_t B, int64_t H, int64_t W, int64_t C, int64_t OC, int groups, int d, int row0, int h,
                            int act) {
    char what[128];
    snprintf(what, sizeof what, "conv3x3_gn %lldx%lldx%lldx%lld->%lld g%d d%d rows [%d,%d)%s", (long long)B,
             (long long)H, (long long)W, (long long)C, (long long)OC, groups, d, row0, row0 + h,
             act == 2 ? " gn+residual+relu, a_out" : act == 3 ? " gn+relu, a_out" : act ? " gn+relu" : "");
    const int64_t nseg = (W + CK_GN_SEG - 1) / CK_GN_SEG, gx = C / 8 > 0 ? C / 8 : 1; /* act: groups of 8 */
    tpair x = TP(K_ACT, F_RAND, 1.5f, 0.3f, B, H, W, C), w = TP(K_ACT, F_RAND, 1.0f / sqrtf(9.0f * C), 0.0f, OC, C, 3, 3);
    tpair b = TP(K_VEC, F_RAND, 0.3f, 0.0f, OC), g = TP(K_VEC, F_RAND, 0.3f, 1.0f, C), bt = TP(K_VEC, F_RAND, 0.5f, 0.0f, C);
    tpair st = TP(K_VEC, F_RAND, 0.2f, 0.0f, B, gx, 2);
    for (int64_t i = 0; i < B * gx; i++) ((float *)st.c.data)[2 * i + 1] = 0.8f + 0.1f * (float)i;
    tp_upload(&st);
    tpair y = TP(K_ACT, F_OUT, 0, 0, B, h, W, OC), m = TP(K_VEC, F_RAND, 1.0f, 0.0f, B, H, nseg, groups, 2);
    tpair s2 = TP(K_VEC, F_OUT, 0, 0, B, groups, 2);
    tpair rs = TP(K_ACT, F_RAND, 1.0f, 0.2f, B, H, W, C), ao = TP(K_ACT, F_RAND, 1.0f, 0.0f, B, H, W, C);
    ck_conv3x3_gn(&g_exc, &y.c, &x.c, &w.c, &b.c, d, row0, act ? &st.c : NULL, &g.c, &bt.c, act == 2 ? &rs.c : NULL,
                  act >= 2 ? &ao.c : NULL, &m.c);
    ck_conv3x3_gn(&g_exg, &y.d, &x.d, &w.d, &b.d, d, row0, act ? &st.d : NULL, &g.d, &bt.d, act == 2 ? &rs.d : NULL,
                  act >= 2 ? &ao.d : NULL, &m.d);
    tp_compare(what, &y, 1.0);
    char w2[160];
    if (act >= 2) {
        snprintf(w2, sizeof w2, "%s (a_out)", what);
        tp_compare(w2, &ao, 1.0);
    }
    /* The moments are those of the output as stored: in 16 bits the two backends' outputs differ by roundings,
     * so the band's expected moments are taken (float64, two passes) from the device's own output. */
    float *yd = malloc(y.n * sizeof(float));
    CK_ASSERT(yd && tp_fetch(&y, yd));
    for (int64_t n = 0; n < B; n++)
        for (int64_t r = 0; r < h; r++)
            row_moments(yd + (n * h + r) * W * OC, W, OC, groups, (float *)m.c.data + (n * H + row0 + r) * nseg * groups * 2);
    free(yd);
    snprintf(w2, sizeof w2, "%s (moments)", what);
    tp_compare(w2, &m, 1.0);
    if (row0 == 0 && h == H) { /* the statistics of the whole map */
        ck_gn_moments_stats(&g_exc, &s2.c, &m.c, (int)W, (int)(OC / groups), 1e-5f);
        ck_gn_moments_stats(&g_exg, &s2.d, &m.d, (int)W, (int)(OC / groups), 1e-5f);
        snprintf(w2, sizeof w2, "%s (statistics)", what);
        tp_compare(w2, &s2, 1.0);
    }
    tp_free(&x), tp_free(&w), tp_free(&b), tp_free(&g), tp_free(&bt), tp_free(&st), tp_free(&y), tp_free(&m);
    tp_free(&s2), tp_free(&rs), tp_free(&ao);
}

static void test_op_conv3x3_gn(void) {
    test_conv3x3_gn(1, 64, 256, 64, 64, 8, 1, 0, 64, 0);  /* the stem's output into block 0's conv1 */
    test_conv3x3_gn(1, 64, 300, 64, 64, 8, 2, 0, 64, 1);  /* a partial last segment */
    test_conv3x3_gn(2, 40, 128, 64, 64, 8, 4, 0, 40, 1);  /* a batch of two */
    test_conv3x3_gn(1, 96, 200, 64, 64, 8, 8, 17, 50, 1); /* a band of the slim refiner */
    test_conv3x3_gn(1, 20, 24, 64, 64, 8, 8, 0, 20, 1);   /* narrower than the dilation reaches */
    test_conv3x3_gn(1, 64, 300, 64, 64, 8, 2, 0, 64, 2);  /* GroupNorm 2 folded into conv1: residual, a_out */
    test_conv3x3_gn(2, 45, 130, 64, 64, 8, 8, 0, 45, 2);  /* ... a batch of two, partial segments and chains */
    test_conv3x3_gn(1, 96, 200, 64, 64, 8, 4, 17, 50, 2); /* ... a band: a_out's other rows untouched */
    test_conv3x3_gn(2, 30, 40, 16, 16, 4, 1, 0, 30, 2);   /* ... 16 channels: the plain kernels */
    test_conv3x3_gn(2, 33, 140, 64, 64, 8, 1, 0, 33, 3);  /* the stem's GroupNorm folded: a_out, no residual */
    test_conv3x3_gn(1, 70, 260, 8, 64, 8, 1, 0, 70, 0);   /* the stem: 8 channels in */
    test_conv3x3_gn(2, 30, 40, 16, 16, 4, 2, 0, 30, 1);   /* 16 channels: the plain kernels */
    test_conv3x3_gn(1, 20, 36, 8, 24, 4, 1, 0, 20, 0);    /* the small model's stem: the plain kernels */
}

static void test_op_gn_moments_stats(void) {
    /* its own case: moments of a random map segment by segment on the CPU, merged on both backends */
    const int64_t B = 2, H = 33, W = 300, C = 64, groups = 8, CG = 8, nseg = 3;
    tpair y = TP(K_VEC, F_RAND, 2.0f, 3.0f, B, H, W, C), m = TP(K_VEC, F_RAND, 1.0f, 0.0f, B, H, nseg, groups, 2);
    tpair s = TP(K_VEC, F_OUT, 0, 0, B, groups, 2);
    for (int64_t r = 0; r < B * H; r++)
        row_moments((const float *)y.c.data + r * W * C, W, C, groups, (float *)m.c.data + r * nseg * groups * 2);
    tp_upload(&m);
    ck_gn_moments_stats(&g_exc, &s.c, &m.c, (int)W, (int)CG, 1e-5f);
    ck_gn_moments_stats(&g_exg, &s.d, &m.d, (int)W, (int)CG, 1e-5f);
    tp_compare("gn_moments_stats 2x33x300x64 g8", &s, 1.0);
    tp_free(&y), tp_free(&m), tp_free(&s);

    /* many rows: the merge in chunks of segments (the last one partial), made-up moments with a common offset
     * (mean 3 ± 0.5) so that a chunk merged with the wrong count or mean moves the variance visibly */
    const int64_t H2 = 1500, W2 = 200, nseg2 = 2;
    tpair m2 = TP(K_VEC, F_RAND, 1.0f, 0.0f, B, H2, nseg2, groups, 2), s2 = TP(K_VEC, F_OUT, 0, 0, B, groups, 2);
    float *mc = (float *)m2.c.data;
    for (int64_t e = 0; e < B * H2 * nseg2 * groups; e++) {
        const double cnt = (double)((e / groups) % nseg2 ? W2 - 128 : 128) * CG; /* values in the segment */
        mc[2 * e]        = 3.0f + 0.5f * mc[2 * e];
        mc[2 * e + 1]    = (float)((fabsf(mc[2 * e + 1]) + 0.1) * cnt);
    }
    tp_upload(&m2);
    ck_gn_moments_stats(&g_exc, &s2.c, &m2.c, (int)W2, (int)CG, 1e-5f);
    ck_gn_moments_stats(&g_exg, &s2.d, &m2.d, (int)W2, (int)CG, 1e-5f);
    tp_compare("gn_moments_stats 2x1500x200x64 g8 (chunked)", &s2, 1.0);
    tp_free(&m2), tp_free(&s2);
}

/* layernorm_linear against the CPU: on Hopper in 16 bits, with CK_LINEAR_GEMM or CK_LINEAR_NARROW, a GEMM
 * normalizing x as it lands (row statistics of the default LayerNorm); otherwise and for odd widths the
 * composition. */
static void test_layernorm_linear(int64_t M, int64_t K, int64_t N, ck_act act, int res) {
    char what[128];
    snprintf(what, sizeof what, "layernorm_linear %lldx%lld->%lld%s%s", (long long)M, (long long)K, (long long)N,
             act == CK_ACT_GELU ? " +gelu" : act == CK_ACT_RELU ? " +relu" : "", res ? " +res" : "");
    tpair x = TP(K_ACT, F_RAND, 2.0f, 0.7f, M, K), g = TP(K_VEC, F_RAND, 0.3f, 1.0f, K), bt = TP(K_VEC, F_RAND, 0.3f, 0.0f, K);
    tpair w = TP(K_W, F_RAND, 1.0f / sqrtf((float)K), 0.0f, N, K), b = TP(K_VEC, F_RAND, 0.5f, 0.0f, N);
    tpair r = {0};
    if (res) r = TP(K_ACT, F_RAND, 1.0f, 0.0f, M, N);
    tpair y = TP(K_ACT, F_OUT, 0, 0, M, N), xn = TP(K_ACT, F_OUT, 0, 0, M, K);
    ck_layernorm_linear(&g_exc, &y.c, &x.c, &g.c, &bt.c, 1e-6f, &w.c, &b.c, act, res ? &r.c : NULL, &xn.c);
    ck_layernorm_linear(&g_exg, &y.d, &x.d, &g.d, &bt.d, 1e-6f, &w.d, &b.d, act, res ? &r.d : NULL, &xn.d);
    tp_compare(what, &y, 1.0);
    tp_free(&x), tp_free(&g), tp_free(&bt), tp_free(&w), tp_free(&b), tp_free(&r), tp_free(&y), tp_free(&xn);
}

static void test_op_layernorm_linear(void) {
    test_layernorm_linear(16384, 112, 336, CK_ACT_NONE, 0); /* norm1 → qkv, stage 0 at S = 512 */
    test_layernorm_linear(16384, 112, 448, CK_ACT_GELU, 0); /* norm2 → fc1 */
    test_layernorm_linear(1001, 448, 1792, CK_ACT_GELU, 0); /* stage 2, ragged rows */
    test_layernorm_linear(256, 896, 3584, CK_ACT_GELU, 1);  /* stage 3, a residual after the activation */
    test_layernorm_linear(37, 20, 12, CK_ACT_NONE, 0);      /* widths off the 16-byte grid: the composition */
    setenv("CK_LINEAR_GEMM", "1", 1); /* the tiled GEMM normalizing x as it lands (elsewhere: the composition) */
    test_layernorm_linear(16384, 112, 336, CK_ACT_NONE, 0);
    test_layernorm_linear(16384, 112, 448, CK_ACT_GELU, 0);
    test_layernorm_linear(1001, 448, 1792, CK_ACT_GELU, 0);
    test_layernorm_linear(256, 896, 3584, CK_ACT_GELU, 1);
    unsetenv("CK_LINEAR_GEMM");
    setenv("CK_LINEAR_NARROW", "1", 1);                     /* the same GEMM with the weight resident */
    test_layernorm_linear(16384, 112, 336, CK_ACT_NONE, 0);
    test_layernorm_linear(16384, 112, 448, CK_ACT_GELU, 0);
    test_layernorm_linear(1001, 112, 112, CK_ACT_NONE, 1);
    unsetenv("CK_LINEAR_NARROW");
    /* one cuDNN graph (CK_LINEAR_CUDNN): norm1 → qkv, norm2 → fc1 at each stage; declined: rows whose statistics
     * planes are not 16-byte aligned (1001: its LayerNorm runs alone, then its fc1 is the plain GELU graph, the
     * sixth), a residual, odd widths */
    setenv("CK_LINEAR_CUDNN", "1", 1);
    const long runs0 = ck__linear_cudnn_runs();
    test_layernorm_linear(16384, 112, 336, CK_ACT_NONE, 0);
    test_layernorm_linear(16384, 112, 448, CK_ACT_GELU, 0);
    test_layernorm_linear(4096, 224, 896, CK_ACT_GELU, 0);
    test_layernorm_linear(1000, 448, 1792, CK_ACT_GELU, 0);
    test_layernorm_linear(256, 896, 2688, CK_ACT_NONE, 0);
    test_layernorm_linear(1001, 448, 1792, CK_ACT_GELU, 0);
    test_layernorm_linear(256, 896, 3584, CK_ACT_GELU, 1);
    test_layernorm_linear(37, 20, 12, CK_ACT_NONE, 0);
    unsetenv("CK_LINEAR_CUDNN");
    cudnn_taken("layernorm_linear", runs0, 6);
}

/* The registry: one case per op of ops_list.h, both lists. An op without its test_op_<name> above does not
 * compile (undeclared identifier). */
static const struct {
    const char *op;
    void (*run)(void);
} g_op_tests[] = {
#define OP_TEST(name) {#name, test_op_##name},
    CK_OPS(OP_TEST) CK_OPS_OPTIONAL(OP_TEST)
#undef OP_TEST
};

/* ======================= driver ======================= */

static void run_all(void) {
    for (size_t i = 0; i < sizeof g_op_tests / sizeof g_op_tests[0]; i++) {
        printf("-- [%s] op %s\n", g_prec_name, g_op_tests[i].op);
        g_op_tests[i].run();
    }
    test_determinism();
    test_graph();
}

int main(void) {
    const ck_precision precs[3] = {CK_PREC_FP32, CK_PREC_BF16, CK_PREC_FP16};
    const char        *names[3] = {"fp32", "bf16", "fp16"};
    g_cpu                       = ck_backend_cpu_create(0);
    CK_ASSERT(g_cpu);
    for (int p = 0; p < 3; p++) {
        ck_err          err  = {{0}};
        ck_backend_opts opts = {0, precs[p], 1, 0};
        g_gpu                = ck_backend_cuda_create(&opts, &err);
        if (!g_gpu) {
            printf("SKIP: no CUDA device (%s)\n", err.msg);
            g_cpu->destroy(g_cpu);
            return 77; /* SKIP_RETURN_CODE in tests/CMakeLists.txt */
        }
        ck_backend_opts ropts = {0, precs[p], 0, 0};
        g_gpu_ref             = ck_backend_cuda_create(&ropts, &err);
        CHECK_MSG(g_gpu_ref != NULL, "second CUDA backend: %s", err.msg);
        if (!g_gpu_ref) break;
        g_prec_name = names[p];
        memset(&g_exc, 0, sizeof g_exc); /* ops only: no arena, not planning */
        memset(&g_exg, 0, sizeof g_exg);
        g_exc.be    = g_cpu;
        g_exc.dtype = CK_DTYPE_F32;
        g_exg.be    = g_gpu;
        g_exg.dtype = g_gpu->act_dtype;
        printf("== CUDA %s (activations %s, weights %s) ==\n", names[p], ck_dtype_name(g_gpu->act_dtype),
               ck_dtype_name(g_gpu->weight_dtype));
        run_all();
        g_gpu_ref->destroy(g_gpu_ref);
        g_gpu->destroy(g_gpu);
        g_gpu = g_gpu_ref = NULL;
    }
    g_cpu->destroy(g_cpu);
    return test_summary();
}
