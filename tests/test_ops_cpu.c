/* Every op of ops_list.h on the CPU backend against an independent reference: one case test_op_<name>
 * per op of both lists (CK_OPS, CK_OPS_OPTIONAL), called from a registry built from the lists, so an op
 * without a case does not build.
 *
 * References: the documented semantics (ops_list.h) written out as plain loops in double precision
 * (linear, layernorm, conv2d, groupnorm and its statistics, attention, resize, the activations), index
 * formulas for the re-arrangements (attn_gather, attn_scatter, maxpool2x2, concat_sigmoid, copy_rect),
 * hand-computed bit patterns for convert (round-to-nearest-even ties, subnormals, overflow) and bytes for
 * zero. Exact ops (copies, max, zero, convert) must match exactly, with everything outside the written
 * region untouched; arithmetic ones within float32 rounding (atol 1e-5 on values of order 1). Shapes are
 * small and odd (C not a multiple of 4 or 8, partial windows of tiles, batches of two). */
#include "ops/backend.h"
#include "harness.h"
#include "model/model.h"
#include "ops/ops.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static ck_backend *g_be;
static ck_exec     g_ex; /* ops only: no arena, not planning */
static uint64_t    g_rng = 0x2545F4914F6CDD1Dull;

static float frand(void) { /* uniform in [-1, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((g_rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

#define NDIM(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
/* A float32 host tensor of the given shape, values offset + scale·U[-1, 1). */
static ck_tensor ft_make(float scale, float offset, int ndim, const int64_t *shape) {
    ck_tensor t = ck_tensor_make(NULL, CK_DTYPE_F32, ndim, shape);
    t.data      = malloc(ck_tensor_nbytes(&t));
    CK_ASSERT(t.data);
    for (int64_t i = 0; i < ck_tensor_numel(&t); i++) ((float *)t.data)[i] = offset + scale * frand();
    return t;
}
#define FT(scale, offset, ...) ft_make(scale, offset, NDIM(__VA_ARGS__), (int64_t[]){__VA_ARGS__})
#define F(t) ((float *)(t).data)
#define N(t) ((size_t)ck_tensor_numel(&(t)))

static float *ref_of(const ck_tensor *t) { /* a float32 buffer of t's size for the reference */
    float *r = calloc(N(*t), sizeof(float));
    CK_ASSERT(r);
    return r;
}

static int same_bits(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

static double gelu_ref(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double act_ref(double v, ck_act act) {
    return act == CK_ACT_RELU ? (v > 0 ? v : 0) : act == CK_ACT_GELU ? gelu_ref(v) : v;
}
static double sigmoid_ref(double v) { return 1.0 / (1.0 + exp(-v)); }

/* ---- linear ---- */

static void case_linear(int64_t M, int64_t K, int64_t Nn, int bias, ck_act act, int res_mode) {
    char what[96];
    snprintf(what, sizeof what, "linear %lldx%lld->%lld b%d act%d res%d", (long long)M, (long long)K, (long long)Nn,
             bias, act, res_mode);
    ck_tensor x = FT(1.0f, 0.0f, M, K), w = FT(1.0f / sqrtf((float)K), 0.0f, Nn, K), b = FT(0.5f, 0.0f, Nn);
    ck_tensor y = FT(1.0f, 0.0f, M, Nn), r = FT(1.0f, 0.0f, M, Nn);
    const ck_tensor *res = res_mode == 1 ? &r : res_mode == 2 ? &y : NULL; /* 2: in place */
    float           *ref = ref_of(&y);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < Nn; n++) {
            double s = bias ? F(b)[n] : 0.0;
            for (int64_t k = 0; k < K; k++) s += (double)F(x)[m * K + k] * F(w)[n * K + k];
            ref[m * Nn + n] = (float)(act_ref(s, act) + (res ? F(*res)[m * Nn + n] : 0.0));
        }
    ck_linear(&g_ex, &y, &x, &w, bias ? &b : NULL, act, res);
    check_close(what, F(y), ref, N(y), 1e-5, 1e-5);
    free(ref), free(x.data), free(w.data), free(b.data), free(y.data), free(r.data);
}

static void test_op_linear(void) {
    case_linear(37, 7, 5, 1, CK_ACT_GELU, 0);
    case_linear(33, 19, 13, 1, CK_ACT_RELU, 1);
    case_linear(17, 64, 96, 0, CK_ACT_NONE, 2);
    case_linear(300, 112, 33, 1, CK_ACT_NONE, 1);
}

/* ---- layernorm ---- */

static void case_layernorm(int64_t M, int64_t C, float eps) {
    char what[96];
    snprintf(what, sizeof what, "layernorm %lldx%lld", (long long)M, (long long)C);
    ck_tensor x = FT(2.0f, 0.7f, M, C), g = FT(0.3f, 1.0f, C), b = FT(0.3f, 0.0f, C), y = FT(0, 0, M, C);
    float    *ref = ref_of(&y);
    for (int64_t m = 0; m < M; m++) {
        double s = 0, s2 = 0;
        for (int64_t c = 0; c < C; c++) s += F(x)[m * C + c];
        const double mean = s / C;
        for (int64_t c = 0; c < C; c++) s2 += (F(x)[m * C + c] - mean) * (F(x)[m * C + c] - mean);
        const double rstd = 1.0 / sqrt(s2 / C + eps);
        for (int64_t c = 0; c < C; c++) ref[m * C + c] = (float)((F(x)[m * C + c] - mean) * rstd * F(g)[c] + F(b)[c]);
    }
    ck_layernorm(&g_ex, &y, &x, &g, &b, eps);
    check_close(what, F(y), ref, N(y), 1e-5, 1e-5);
    free(ref), free(x.data), free(g.data), free(b.data), free(y.data);
}

static void test_op_layernorm(void) {
    case_layernorm(37, 7, 1e-6f);
    case_layernorm(5, 1000, 1e-6f);
    case_layernorm(9, 1, 1e-5f);
}

/* ---- conv2d ---- */

static void case_conv(int64_t B, int64_t H, int64_t W, int64_t IC, int64_t OC, int64_t KS, int stride, int pad_h,
                      int pad_w, int dil, int bias) {
    char what[128];
    snprintf(what, sizeof what, "conv2d %lldx%lldx%lldx%lld k%lld s%d p%d,%d d%d ->%lld", (long long)B, (long long)H,
             (long long)W, (long long)IC, (long long)KS, stride, pad_h, pad_w, dil, (long long)OC);
    const int64_t Ho = (H + 2 * pad_h - dil * (KS - 1) - 1) / stride + 1;
    const int64_t Wo = (W + 2 * pad_w - dil * (KS - 1) - 1) / stride + 1;
    ck_tensor x = FT(1.0f, 0.0f, B, H, W, IC), w = FT(1.0f / sqrtf((float)(IC * KS * KS)), 0.0f, OC, IC, KS, KS);
    ck_tensor b = FT(0.5f, 0.0f, OC), y = FT(0, 0, B, Ho, Wo, OC);
    float    *ref = ref_of(&y);
    for (int64_t n = 0; n < B; n++)
        for (int64_t oy = 0; oy < Ho; oy++)
            for (int64_t ox = 0; ox < Wo; ox++)
                for (int64_t oc = 0; oc < OC; oc++) {
                    double s = bias ? F(b)[oc] : 0.0;
                    for (int64_t ky = 0; ky < KS; ky++)
                        for (int64_t kx = 0; kx < KS; kx++) {
                            const int64_t iy = oy * stride - pad_h + ky * dil, ix = ox * stride - pad_w + kx * dil;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue; /* zero padding */
                            for (int64_t ic = 0; ic < IC; ic++)
                                s += (double)F(x)[((n * H + iy) * W + ix) * IC + ic] *
                                     F(w)[((oc * IC + ic) * KS + ky) * KS + kx];
                        }
                    ref[((n * Ho + oy) * Wo + ox) * OC + oc] = (float)s;
                }
    ck_conv2d_pad(&g_ex, &y, &x, &w, bias ? &b : NULL, stride, pad_h, pad_w, dil);
    check_close(what, F(y), ref, N(y), 1e-5, 1e-5);
    free(ref), free(x.data), free(w.data), free(b.data), free(y.data);
}

static void test_op_conv2d(void) {
    case_conv(1, 32, 32, 4, 16, 7, 4, 3, 3, 1, 1); /* patch embed 7×7/4 */
    case_conv(2, 13, 11, 3, 5, 5, 2, 1, 1, 1, 1);
    case_conv(1, 16, 16, 8, 8, 3, 1, 2, 2, 2, 1);  /* dilated, as the refiner's blocks */
    case_conv(1, 20, 30, 16, 24, 3, 1, 1, 0, 1, 0);
    case_conv(1, 24, 20, 8, 8, 3, 1, 0, 2, 2, 1);  /* no padding in y: the slim refiner's bands */
    case_conv(1, 9, 7, 16, 13, 1, 1, 0, 0, 1, 1);  /* 1×1 */
}

/* ---- groupnorm, groupnorm_stats ---- */

/* Per (sample, group) mean and 1/sqrt(var + eps) of x (B, P, C), biased variance, in double. */
static void gn_moments(const ck_tensor *x, int groups, float eps, double *mean, double *rstd) {
    const int64_t B = x->shape[0], C = ck_tensor_last(x), P = ck_tensor_numel(x) / (B * C), CG = C / groups;
    for (int64_t b = 0; b < B; b++)
        for (int g = 0; g < groups; g++) {
            double s = 0, s2 = 0;
            for (int64_t p = 0; p < P; p++)
                for (int64_t c = g * CG; c < (g + 1) * CG; c++) s += F(*x)[(b * P + p) * C + c];
            const double m = s / (double)(P * CG);
            for (int64_t p = 0; p < P; p++)
                for (int64_t c = g * CG; c < (g + 1) * CG; c++) {
                    const double d = F(*x)[(b * P + p) * C + c] - m;
                    s2 += d * d;
                }
            mean[b * groups + g] = m;
            rstd[b * groups + g] = 1.0 / sqrt(s2 / (double)(P * CG) + eps);
        }
}

/* ref = act((x − mean)·rstd·γ + β + residual) */
static void gn_apply_ref(float *ref, const ck_tensor *x, const ck_tensor *g, const ck_tensor *bt, int groups,
                         const double *mean, const double *rstd, const float *res, ck_act act) {
    const int64_t B = x->shape[0], C = ck_tensor_last(x), P = ck_tensor_numel(x) / (B * C), CG = C / groups;
    for (int64_t b = 0; b < B; b++)
        for (int64_t p = 0; p < P; p++)
            for (int64_t c = 0; c < C; c++) {
                const int64_t i = (b * P + p) * C + c, s = b * groups + c / CG;
                const double  v = (F(*x)[i] - mean[s]) * rstd[s] * F(*g)[c] + F(*bt)[c] + (res ? res[i] : 0.0);
                ref[i]          = (float)act_ref(v, act);
            }
}

/* res_mode: 0 none, 1 separate, 2 y is the residual; inplace: y is x. */
static void case_groupnorm(int64_t B, int64_t H, int64_t W, int64_t C, int groups, int res_mode, int inplace,
                           ck_act act) {
    char what[128];
    snprintf(what, sizeof what, "groupnorm %lldx%lldx%lldx%lld g%d res%d%s act%d", (long long)B, (long long)H,
             (long long)W, (long long)C, groups, res_mode, inplace ? " y=x" : "", act);
    ck_tensor x = FT(1.5f, 0.8f, B, H, W, C), g = FT(0.3f, 1.0f, C), bt = FT(0.3f, 0.0f, C);
    ck_tensor r = FT(1.0f, 0.0f, B, H, W, C), y = FT(1.0f, 0.0f, B, H, W, C);
    ck_tensor *yp = inplace ? &x : &y;
    const ck_tensor *res = res_mode == 1 ? &r : res_mode == 2 ? yp : NULL;
    double mean[64], rstd[64];
    float *ref = ref_of(&x), *res_copy = ref_of(&x);
    if (res) memcpy(res_copy, res->data, N(x) * sizeof(float));
    gn_moments(&x, groups, 1e-5f, mean, rstd);
    gn_apply_ref(ref, &x, &g, &bt, groups, mean, rstd, res ? res_copy : NULL, act);
    ck_groupnorm(&g_ex, yp, &x, &g, &bt, groups, 1e-5f, res, act);
    check_close(what, F(*yp), ref, N(x), 1e-5, 1e-5);
    free(ref), free(res_copy), free(x.data), free(g.data), free(bt.data), free(r.data), free(y.data);
}

static void test_op_groupnorm(void) {
    case_groupnorm(1, 12, 10, 16, 4, 0, 1, CK_ACT_RELU); /* the stem: in place, ReLU */
    case_groupnorm(1, 9, 9, 64, 8, 2, 0, CK_ACT_RELU);   /* gn2: y is the residual */
    case_groupnorm(2, 7, 5, 12, 3, 1, 0, CK_ACT_NONE);
    case_groupnorm(1, 30, 30, 8, 2, 0, 0, CK_ACT_NONE);  /* 900 pixels: several partial-sum chunks */
}

/* Statistics written equal the double-precision moments, and the output equals plain groupnorm's bit for
 * bit; frozen random statistics are applied as given; frozen with the statistics just written gives the
 * same bits again. */
static void case_groupnorm_stats(int64_t B, int64_t H, int64_t W, int64_t C, int groups, int with_res, ck_act act) {
    char what[128];
    snprintf(what, sizeof what, "groupnorm_stats %lldx%lldx%lldx%lld g%d res%d", (long long)B, (long long)H,
             (long long)W, (long long)C, groups, with_res);
    ck_tensor x = FT(1.5f, 0.8f, B, H, W, C), g = FT(0.3f, 1.0f, C), bt = FT(0.3f, 0.0f, C);
    ck_tensor r = FT(1.0f, 0.0f, B, H, W, C), y = FT(0, 0, B, H, W, C), y_plain = FT(0, 0, B, H, W, C);
    ck_tensor st = FT(0, 0, B, groups, 2), y_frozen = FT(0, 0, B, H, W, C);
    const ck_tensor *res = with_res ? &r : NULL;
    double mean[64], rstd[64];
    float  st_ref[128];
    gn_moments(&x, groups, 1e-5f, mean, rstd);
    for (int64_t i = 0; i < B * groups; i++) st_ref[2 * i] = (float)mean[i], st_ref[2 * i + 1] = (float)rstd[i];
    ck_groupnorm_stats(&g_ex, &y, &x, &g, &bt, groups, 1e-5f, res, act, &st, 0);
    ck_groupnorm(&g_ex, &y_plain, &x, &g, &bt, groups, 1e-5f, res, act);
    char label[160];
    snprintf(label, sizeof label, "%s stats out", what);
    check_close(label, F(st), st_ref, N(st), 0.0, 1e-6);
    CHECK_MSG(same_bits(y.data, y_plain.data, N(y) * sizeof(float)), "%s: output differs from groupnorm", what);
    ck_groupnorm_stats(&g_ex, &y_frozen, &x, &g, &bt, groups, 1e-5f, res, act, &st, 1);
    CHECK_MSG(same_bits(y.data, y_frozen.data, N(y) * sizeof(float)), "%s: frozen own statistics differ", what);
    /* frozen statistics unrelated to x: applied as given */
    for (int64_t i = 0; i < B * groups; i++) {
        mean[i] = F(st)[2 * i] = 0.5f * frand();
        rstd[i] = F(st)[2 * i + 1] = 1.0f + 0.5f * frand();
    }
    float *ref = ref_of(&x);
    gn_apply_ref(ref, &x, &g, &bt, groups, mean, rstd, res ? F(r) : NULL, act);
    ck_groupnorm_stats(&g_ex, &y_frozen, &x, &g, &bt, groups, 1e-5f, res, act, &st, 1);
    snprintf(label, sizeof label, "%s frozen", what);
    check_close(label, F(y_frozen), ref, N(x), 1e-5, 1e-5);
    free(ref), free(x.data), free(g.data), free(bt.data), free(r.data), free(y.data), free(y_plain.data);
    free(st.data), free(y_frozen.data);
}

static void test_op_groupnorm_stats(void) {
    case_groupnorm_stats(1, 12, 10, 16, 4, 0, CK_ACT_RELU);
    case_groupnorm_stats(2, 7, 5, 12, 3, 1, CK_ACT_NONE);
    case_groupnorm_stats(1, 20, 20, 64, 8, 1, CK_ACT_RELU);
}

/* ---- groupnorm_linear: GroupNorm (+ residual, act) then a linear head, against float64 ---- */

static void case_groupnorm_linear(int64_t B, int64_t H, int64_t W, int64_t C, int groups, int64_t N, int res,
                                  ck_act act, int frozen) {
    char what[128];
    snprintf(what, sizeof what, "groupnorm_linear %lldx%lldx%lldx%lld g%d -> %lld%s%s%s", (long long)B, (long long)H,
             (long long)W, (long long)C, groups, (long long)N, res ? " +res" : "", act == CK_ACT_RELU ? " +relu" : "",
             frozen ? " frozen stats" : "");
    ck_tensor st = FT(0.5f, 0.0f, B, groups, 2); /* given (mean, rstd) */
    for (int64_t i = 0; i < B * groups; i++) F(st)[2 * i + 1] = 0.7f + 0.05f * (float)i;
    const int64_t P = H * W, CG = C / groups;
    ck_tensor     x = FT(1.5f, 0.8f, B, H, W, C), g = FT(0.3f, 1.0f, C), bt = FT(0.3f, 0.0f, C);
    ck_tensor     r = res ? FT(1.0f, 0.0f, B, H, W, C) : (ck_tensor){0};
    ck_tensor     w = FT(0.3f, 0.0f, N, C), b = FT(0.5f, 0.0f, N), y = FT(9, 0, B, H, W, N);
    float        *ref = ref_of(&y);
    for (int64_t bi = 0; bi < B; bi++) {
        double mean[64], rstd[64];
        CK_ASSERT(groups <= 64);
        for (int gi = 0; gi < groups; gi++) {
            if (frozen) {
                mean[gi] = F(st)[(bi * groups + gi) * 2], rstd[gi] = F(st)[(bi * groups + gi) * 2 + 1];
                continue;
            }
            double s = 0, s2 = 0;
            for (int64_t p = 0; p < P; p++)
                for (int64_t c = gi * CG; c < (gi + 1) * CG; c++) s += F(x)[(bi * P + p) * C + c];
            mean[gi] = s / (double)(P * CG);
            for (int64_t p = 0; p < P; p++)
                for (int64_t c = gi * CG; c < (gi + 1) * CG; c++) {
                    const double d = F(x)[(bi * P + p) * C + c] - mean[gi];
                    s2 += d * d;
                }
            rstd[gi] = 1.0 / sqrt(s2 / (double)(P * CG) + 1e-5);
        }
        for (int64_t p = 0; p < P; p++)
            for (int64_t n = 0; n < N; n++) {
                double acc = F(b)[n];
                for (int64_t c = 0; c < C; c++) {
                    const int64_t e = (bi * P + p) * C + c;
                    double v = (F(x)[e] - mean[c / CG]) * rstd[c / CG] * F(g)[c] + F(bt)[c] + (res ? F(r)[e] : 0.0);
                    if (act == CK_ACT_RELU && v < 0) v = 0;
                    acc += v * F(w)[n * C + c];
                }
                ref[(bi * P + p) * N + n] = (float)acc;
            }
    }
    ck_groupnorm_linear(&g_ex, &y, &x, &g, &bt, groups, 1e-5f, res ? &r : NULL, act, &w, &b, frozen ? &st : NULL);
    check_close(what, F(y), ref, N(y), 1e-5, 1e-5);
    free(ref), free(x.data), free(g.data), free(bt.data), free(w.data), free(b.data), free(y.data), free(st.data);
    if (res) free(r.data);
}

static void test_op_groupnorm_linear(void) {
    case_groupnorm_linear(1, 12, 10, 64, 8, 4, 1, CK_ACT_RELU, 0); /* the refiner's last GroupNorm and head */
    case_groupnorm_linear(2, 7, 5, 12, 3, 3, 0, CK_ACT_NONE, 0);
    case_groupnorm_linear(1, 9, 9, 32, 8, 4, 1, CK_ACT_RELU, 0);
    case_groupnorm_linear(2, 6, 7, 64, 8, 4, 1, CK_ACT_RELU, 1); /* the fused refiner's head: statistics given */
}

/* ---- attention ---- */

static void case_attention(int64_t G, int64_t Tq, int64_t Tk, int64_t HD) {
    char what[96];
    snprintf(what, sizeof what, "attention G%lld Tq%lld Tk%lld HD%lld", (long long)G, (long long)Tq, (long long)Tk,
             (long long)HD);
    ck_tensor q = FT(1.5f, 0.0f, G, Tq, HD), k = FT(1.5f, 0.0f, G, Tk, HD), v = FT(1.0f, 0.0f, G, Tk, HD);
    ck_tensor o     = FT(0, 0, G, Tq, HD);
    float    *ref   = ref_of(&o);
    double   *p     = malloc(sizeof(double) * (size_t)Tk);
    const float scale = (float)(1.0 / sqrt((double)HD));
    CK_ASSERT(p);
    for (int64_t g = 0; g < G; g++)
        for (int64_t i = 0; i < Tq; i++) {
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < Tk; j++) {
                double s = 0;
                for (int64_t d = 0; d < HD; d++) s += (double)F(q)[(g * Tq + i) * HD + d] * F(k)[(g * Tk + j) * HD + d];
                p[j] = s * scale;
                mx   = p[j] > mx ? p[j] : mx;
            }
            for (int64_t j = 0; j < Tk; j++) sum += p[j] = exp(p[j] - mx);
            for (int64_t d = 0; d < HD; d++) {
                double s = 0;
                for (int64_t j = 0; j < Tk; j++) s += p[j] * F(v)[(g * Tk + j) * HD + d];
                ref[(g * Tq + i) * HD + d] = (float)(s / sum);
            }
        }
    ck_attention(&g_ex, &o, &q, &k, &v, scale);
    check_close(what, F(o), ref, N(o), 1e-5, 1e-5);
    free(p), free(ref), free(q.data), free(k.data), free(v.data), free(o.data);
}

static void test_op_attention(void) {
    case_attention(3, 5, 7, 8);
    case_attention(2, 33, 65, 24);
    case_attention(4, 16, 64, 56); /* a q-pooled window */
}

/* ---- attn_gather, attn_scatter: index formulas of ops_list.h ---- */

/* The window group of (b, head, window) and the token t inside a win_h×win_w window. */
static int64_t grp(int64_t b, int64_t head, int64_t wy, int64_t wx, int heads, int64_t nwy, int64_t nwx) {
    return (b * heads + head) * nwy * nwx + wy * nwx + wx;
}

static void case_gather(int64_t B, int64_t H, int64_t W, int heads, int64_t HD, int64_t HDp, int wh, int ww, int pool) {
    char what[128];
    snprintf(what, sizeof what, "attn_gather %lldx%lldx%lld h%d hd%lld/%lld win%dx%d%s", (long long)B, (long long)H,
             (long long)W, heads, (long long)HD, (long long)HDp, wh, ww, pool ? " qpool" : "");
    const int64_t C = heads * HD, nwy = H / wh, nwx = W / ww, G = B * heads * nwy * nwx, T = (int64_t)wh * ww;
    const int64_t qh = pool ? wh / 2 : wh, qw = pool ? ww / 2 : ww;
    ck_tensor qkv = FT(1.0f, 0.0f, B, H, W, 3 * C);
    ck_tensor q = FT(9, 0, G, qh * qw, HDp), k = FT(9, 0, G, T, HDp), v = FT(9, 0, G, T, HDp); /* garbage */
    float    *rq = ref_of(&q), *rk = ref_of(&k), *rv = ref_of(&v); /* zeros: the padded columns */
    for (int64_t b = 0; b < B; b++)
        for (int64_t y = 0; y < H; y++)
            for (int64_t x = 0; x < W; x++)
                for (int head = 0; head < heads; head++)
                    for (int64_t d = 0; d < HD; d++) {
                        const float  *px = F(qkv) + ((b * H + y) * W + x) * 3 * C + head * HD + d;
                        const int64_t g  = grp(b, head, y / wh, x / ww, heads, nwy, nwx);
                        const int64_t t  = (y % wh) * ww + x % ww;
                        rk[(g * T + t) * HDp + d] = px[C];
                        rv[(g * T + t) * HDp + d] = px[2 * C];
                        float *dq = &rq[(g * qh * qw + ((y % wh) / (wh / qh)) * qw + (x % ww) / (ww / qw)) * HDp + d];
                        const int first = pool ? (y % 2 == 0 && x % 2 == 0) : 1;
                        *dq             = first || px[0] > *dq ? px[0] : *dq; /* max over the 2×2 block */
                    }
    ck_attn_gather(&g_ex, &q, &k, &v, &qkv, heads, wh, ww, pool);
    char label[160];
    snprintf(label, sizeof label, "%s q", what);
    check_close(label, F(q), rq, N(q), 0.0, 0.0);
    snprintf(label, sizeof label, "%s k", what);
    check_close(label, F(k), rk, N(k), 0.0, 0.0);
    snprintf(label, sizeof label, "%s v", what);
    check_close(label, F(v), rv, N(v), 0.0, 0.0);
    free(rq), free(rk), free(rv), free(qkv.data), free(q.data), free(k.data), free(v.data);
}

static void test_op_attn_gather(void) {
    case_gather(2, 6, 4, 3, 5, 7, 2, 2, 1);
    case_gather(1, 4, 6, 1, 3, 3, 4, 3, 0);
    case_gather(1, 8, 8, 2, 4, 8, 4, 4, 1);
    case_gather(1, 8, 8, 2, 4, 4, 8, 8, 0); /* one global window */
}

static void case_scatter(int64_t B, int64_t H, int64_t W, int heads, int64_t HD, int64_t HDp, int wh, int ww) {
    char what[128];
    snprintf(what, sizeof what, "attn_scatter %lldx%lldx%lld h%d hd%lld/%lld win%dx%d", (long long)B, (long long)H,
             (long long)W, heads, (long long)HD, (long long)HDp, wh, ww);
    const int64_t nwy = H / wh, nwx = W / ww, G = B * heads * nwy * nwx, T = (int64_t)wh * ww, C = heads * HD;
    ck_tensor o = FT(1.0f, 0.0f, G, T, HDp), y = FT(9, 0, B, H, W, C);
    float    *ref = ref_of(&y);
    for (int64_t b = 0; b < B; b++)
        for (int64_t yy = 0; yy < H; yy++)
            for (int64_t x = 0; x < W; x++)
                for (int head = 0; head < heads; head++)
                    for (int64_t d = 0; d < HD; d++) {
                        const int64_t g = grp(b, head, yy / wh, x / ww, heads, nwy, nwx), t = (yy % wh) * ww + x % ww;
                        ref[((b * H + yy) * W + x) * C + head * HD + d] = F(o)[(g * T + t) * HDp + d];
                    }
    ck_attn_scatter(&g_ex, &y, &o, heads, wh, ww);
    check_close(what, F(y), ref, N(y), 0.0, 0.0);
    free(ref), free(o.data), free(y.data);
}

static void test_op_attn_scatter(void) {
    case_scatter(2, 6, 4, 3, 5, 7, 2, 2);
    case_scatter(1, 8, 8, 4, 6, 8, 4, 4);
    case_scatter(1, 4, 6, 1, 3, 3, 4, 3);
}

/* ---- attention_qkv: a Hiera block's attention straight from its qkv projection (ops_list.h), against float64:
 * global (one H×W window) or in win_h×win_w mask units, queries 2×2 max-pooled inside each window or not ---- */

static void case_attention_qkv(int64_t B, int64_t H, int64_t W, int heads, int64_t HD, int64_t HDp, int win_h,
                               int win_w, int q_pool) {
    char what[160];
    snprintf(what, sizeof what, "attention_qkv %lldx%lldx%lld h%d hd%lld/%lld win %dx%d%s", (long long)B, (long long)H,
             (long long)W, heads, (long long)HD, (long long)HDp, win_h, win_w, q_pool ? " q_pool" : "");
    const int     pool = q_pool ? 2 : 1, qh = win_h / pool, qw = win_w / pool;
    const int64_t C = heads * HD, T = (int64_t)win_h * win_w, Tq = T / (pool * pool);
    const int64_t nwy = H / win_h, nwx = W / win_w, G = B * heads * nwy * nwx, Hq = H / pool, Wq = W / pool;
    ck_tensor     qkv = FT(1.5f, 0.0f, B, H, W, 3 * C), y = FT(9, 0, B, Hq, Wq, C);
    ck_tensor     q = FT(9, 0, G, Tq, HDp), k = FT(9, 0, G, T, HDp), v = FT(9, 0, G, T, HDp), o = FT(9, 0, G, Tq, HDp);
    float        *ref = ref_of(&y);
    double       *p = malloc(sizeof(double) * (size_t)T), *qv = malloc(sizeof(double) * (size_t)HD);
    const float   scale = (float)(1.0 / sqrt((double)HD));
    CK_ASSERT(p && qv);
    const float *X = F(qkv); /* token (b, yy, xx): row (b·H + yy)·W + xx, channel which·C + head·HD + d */
#define TOK(b, yy, xx) ((((b) * H + (yy)) * W + (xx)) * 3 * C)
    for (int64_t b = 0; b < B; b++)
        for (int h = 0; h < heads; h++)
            for (int64_t wy = 0; wy < nwy; wy++)
                for (int64_t wx = 0; wx < nwx; wx++)
                    for (int64_t i = 0; i < Tq; i++) {
                        const int64_t qy = wy * win_h + pool * (i / qw), qx = wx * win_w + pool * (i % qw);
                        for (int64_t d = 0; d < HD; d++) { /* the query: the max over its pool × pool tokens */
                            double m = -INFINITY;
                            for (int dy = 0; dy < pool; dy++)
                                for (int dx = 0; dx < pool; dx++) {
                                    const double e = X[TOK(b, qy + dy, qx + dx) + h * HD + d];
                                    m              = e > m ? e : m;
                                }
                            qv[d] = m;
                        }
                        double mx = -INFINITY, sum = 0;
                        for (int64_t j = 0; j < T; j++) {
                            const int64_t ky = wy * win_h + j / win_w, kx = wx * win_w + j % win_w;
                            double        s  = 0;
                            for (int64_t d = 0; d < HD; d++) s += qv[d] * X[TOK(b, ky, kx) + C + h * HD + d];
                            p[j] = s * scale;
                            mx   = p[j] > mx ? p[j] : mx;
                        }
                        for (int64_t j = 0; j < T; j++) sum += p[j] = exp(p[j] - mx);
                        const int64_t oy = wy * qh + i / qw, ox = wx * qw + i % qw;
                        for (int64_t d = 0; d < HD; d++) {
                            double s = 0;
                            for (int64_t j = 0; j < T; j++)
                                s += p[j] * X[TOK(b, wy * win_h + j / win_w, wx * win_w + j % win_w) + 2 * C + h * HD + d];
                            ref[((b * Hq + oy) * Wq + ox) * C + h * HD + d] = (float)(s / sum);
                        }
                    }
#undef TOK
    ck_attention_qkv(&g_ex, &y, &qkv, heads, win_h, win_w, q_pool, scale, &q, &k, &v, &o);
    check_close(what, F(y), ref, N(y), 1e-5, 1e-5);
    free(p), free(qv), free(ref), free(qkv.data), free(y.data), free(q.data), free(k.data), free(v.data), free(o.data);
}

static void test_op_attention_qkv(void) {
    case_attention_qkv(1, 4, 6, 2, 8, 8, 4, 6, 0);
    case_attention_qkv(2, 5, 3, 3, 7, 16, 5, 3, 0); /* padded head dim, two images */
    case_attention_qkv(1, 8, 8, 1, 56, 64, 8, 8, 0);
    case_attention_qkv(2, 8, 12, 2, 8, 8, 4, 4, 0); /* mask units */
    case_attention_qkv(1, 8, 12, 3, 8, 16, 4, 6, 1); /* mask units with pooled queries */
    case_attention_qkv(1, 4, 4, 2, 8, 8, 4, 4, 1);  /* one window, pooled queries (stage 3's first block) */
}

/* ---- maxpool2x2, add ---- */

static void test_op_maxpool2x2(void) {
    const int64_t B = 2, H = 6, W = 10, C = 3;
    ck_tensor     x = FT(1.0f, 0.0f, B, H, W, C), y = FT(9, 0, B, H / 2, W / 2, C);
    float        *ref = ref_of(&y);
    for (int64_t b = 0; b < B; b++)
        for (int64_t oy = 0; oy < H / 2; oy++)
            for (int64_t ox = 0; ox < W / 2; ox++)
                for (int64_t c = 0; c < C; c++) {
                    float m = -INFINITY;
                    for (int dy = 0; dy < 2; dy++)
                        for (int dx = 0; dx < 2; dx++) {
                            const float v = F(x)[((b * H + 2 * oy + dy) * W + 2 * ox + dx) * C + c];
                            m             = v > m ? v : m;
                        }
                    ref[((b * H / 2 + oy) * (W / 2) + ox) * C + c] = m;
                }
    ck_maxpool2x2(&g_ex, &y, &x);
    check_close("maxpool2x2 2x6x10x3", F(y), ref, N(y), 0.0, 0.0);
    free(ref), free(x.data), free(y.data);
}

static void case_add(int64_t P, int64_t C, int64_t bn, int inplace) {
    char what[96];
    snprintf(what, sizeof what, "add %lldx%lld + b[%lld]%s", (long long)P, (long long)C, (long long)bn,
             inplace ? " y=a" : "");
    ck_tensor a = FT(1.0f, 0.0f, P, C), b = FT(1.0f, 0.0f, bn), y = FT(9, 0, P, C);
    float    *ref = ref_of(&a);
    for (size_t i = 0; i < N(a); i++) ref[i] = F(a)[i] + F(b)[i % (size_t)bn];
    ck_add(&g_ex, inplace ? &a : &y, &a, &b);
    check_close(what, inplace ? F(a) : F(y), ref, N(a), 0.0, 0.0);
    free(ref), free(a.data), free(b.data), free(y.data);
}

static void test_op_add(void) {
    case_add(37, 5, 5, 1);
    case_add(7, 3, 21, 0);
    case_add(16, 12, 16 * 12, 1); /* pos_embed: the whole tensor */
}

/* ---- resize_bilinear, resize_sum ---- */

/* PyTorch's bilinear resize (align_corners=False, no antialias) of x into ref, in double. */
static void resize_ref(double *ref, const ck_tensor *x, int64_t Ho, int64_t Wo) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], C = x->shape[3];
    for (int64_t b = 0; b < B; b++)
        for (int64_t oy = 0; oy < Ho; oy++)
            for (int64_t ox = 0; ox < Wo; ox++) {
                double sy = (double)H / Ho * (oy + 0.5) - 0.5, sx = (double)W / Wo * (ox + 0.5) - 0.5;
                sy = sy < 0 ? 0 : sy, sx = sx < 0 ? 0 : sx;
                const int64_t y0 = (int64_t)sy, x0 = (int64_t)sx;
                const int64_t y1 = y0 + 1 < H ? y0 + 1 : H - 1, x1 = x0 + 1 < W ? x0 + 1 : W - 1;
                const double  ly = sy - y0, lx = sx - x0;
                for (int64_t c = 0; c < C; c++) {
                    const float *X = F(*x) + b * H * W * C + c;
                    ref[((b * Ho + oy) * Wo + ox) * C + c] =
                        (1 - ly) * ((1 - lx) * X[(y0 * W + x0) * C] + lx * X[(y0 * W + x1) * C]) +
                        ly * ((1 - lx) * X[(y1 * W + x0) * C] + lx * X[(y1 * W + x1) * C]);
                }
            }
}

static void case_resize(int64_t B, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo, int accumulate) {
    char what[128];
    snprintf(what, sizeof what, "resize_bilinear %lldx%lldx%lldx%lld -> %lldx%lld%s", (long long)B, (long long)H,
             (long long)W, (long long)C, (long long)Ho, (long long)Wo, accumulate ? " +=" : "");
    ck_tensor x = FT(1.0f, 0.0f, B, H, W, C), y = FT(1.0f, 0.0f, B, Ho, Wo, C);
    double   *r = malloc(sizeof(double) * N(y));
    float    *ref = ref_of(&y);
    CK_ASSERT(r);
    resize_ref(r, &x, Ho, Wo);
    for (size_t i = 0; i < N(y); i++) ref[i] = (float)(r[i] + (accumulate ? F(y)[i] : 0.0));
    ck_resize_bilinear(&g_ex, &y, &x, accumulate);
    check_close(what, F(y), ref, N(y), 1e-5, 1e-5); /* the taps' positions are float32 in the op */
    free(r), free(ref), free(x.data), free(y.data);
}

static void test_op_resize_bilinear(void) {
    case_resize(1, 8, 8, 4, 32, 32, 0); /* logits ×4 */
    case_resize(2, 5, 7, 3, 13, 4, 1);
    case_resize(1, 9, 9, 5, 3, 2, 0);   /* downsampling */
    case_resize(1, 16, 16, 6, 128, 128, 1);
}

/* n sources onto one grid: within float rounding of the sum of the double-precision resizes, and, in
 * float32, bit for bit the resizes accumulated one after another in the order of k (one rounding of a
 * float32 sum is every partial sum's rounding). */
static void case_resize_sum(int n, int64_t B, int64_t C, int64_t Ho, int64_t Wo) {
    char what[96];
    snprintf(what, sizeof what, "resize_sum %d -> %lldx%lldx%lldx%lld", n, (long long)B, (long long)Ho, (long long)Wo,
             (long long)C);
    const int64_t hs[CK_RESIZE_SUM_MAX] = {Ho / 8, Ho / 4, Ho / 2 + 1, Ho};
    const int64_t ws[CK_RESIZE_SUM_MAX] = {Wo / 8, Wo / 4, Wo / 2, Wo - 3};
    ck_tensor x[CK_RESIZE_SUM_MAX];
    for (int k = 0; k < n; k++) x[k] = FT(1.0f, 0.0f, B, hs[k], ws[k], C);
    ck_tensor y = FT(9, 0, B, Ho, Wo, C), chained = FT(9, 0, B, Ho, Wo, C);
    double   *r = malloc(sizeof(double) * N(y)), *sum = calloc(N(y), sizeof(double));
    float    *ref = ref_of(&y);
    CK_ASSERT(r && sum);
    for (int k = 0; k < n; k++) {
        resize_ref(r, &x[k], Ho, Wo);
        for (size_t i = 0; i < N(y); i++) sum[i] += r[i];
    }
    for (size_t i = 0; i < N(y); i++) ref[i] = (float)sum[i];
    ck_resize_sum(&g_ex, &y, x, n);
    for (int k = 0; k < n; k++) ck_resize_bilinear(&g_ex, &chained, &x[k], k > 0);
    check_close(what, F(y), ref, N(y), 1e-5, 1e-5);
    CHECK_MSG(same_bits(y.data, chained.data, N(y) * sizeof(float)), "%s: differs from chained resize_bilinear", what);
    for (int k = 0; k < n; k++) free(x[k].data);
    free(r), free(sum), free(ref), free(y.data), free(chained.data);
}

static void test_op_resize_sum(void) {
    case_resize_sum(3, 1, 16, 64, 64); /* the decoder's three coarser scales */
    case_resize_sum(1, 2, 5, 16, 24);
    case_resize_sum(CK_RESIZE_SUM_MAX, 1, 3, 40, 48);
}

/* ---- activation, sigmoid_add, concat_sigmoid ---- */

static void case_activation(ck_act act, int inplace) {
    char what[64];
    snprintf(what, sizeof what, "activation act%d%s", act, inplace ? " y=x" : "");
    ck_tensor x = FT(4.0f, 0.0f, 1001), y = FT(9, 0, 1001);
    float    *ref = ref_of(&x);
    for (size_t i = 0; i < N(x); i++) ref[i] = (float)act_ref(F(x)[i], act);
    ck_activation(&g_ex, inplace ? &x : &y, &x, act);
    /* ReLU and NONE are exact; GELU within erff's rounding */
    const double tol = act == CK_ACT_GELU ? 1e-6 : 0.0;
    check_close(what, inplace ? F(x) : F(y), ref, N(x), tol, tol);
    free(ref), free(x.data), free(y.data);
}

static void test_op_activation(void) {
    case_activation(CK_ACT_RELU, 1);
    case_activation(CK_ACT_GELU, 0);
    case_activation(CK_ACT_NONE, 0);
}

static void case_sigmoid_add(int with_b, float s) {
    char what[64];
    snprintf(what, sizeof what, "sigmoid_add%s s=%g", with_b ? " +b" : "", s);
    ck_tensor a = FT(4.0f, 0.0f, 333, 4), b = FT(0.5f, 0.0f, 333, 4), y = FT(9, 0, 333, 4);
    float    *ref = ref_of(&y);
    for (size_t i = 0; i < N(y); i++) ref[i] = (float)sigmoid_ref(F(a)[i] + (with_b ? (double)s * F(b)[i] : 0.0));
    ck_sigmoid_add(&g_ex, &y, &a, with_b ? &b : NULL, s);
    check_close(what, F(y), ref, N(y), 1e-6, 1e-6);
    free(ref), free(a.data), free(b.data), free(y.data);
}

static void test_op_sigmoid_add(void) {
    case_sigmoid_add(1, 10.0f);
    case_sigmoid_add(0, 0.0f);
    case_sigmoid_add(1, -2.5f);
}

static void case_concat_sigmoid(int64_t P, int64_t CA, int a_ch, int64_t CB, int pad) {
    char what[96];
    snprintf(what, sizeof what, "concat_sigmoid a%lld[:%d] b%lld pad%d", (long long)CA, a_ch, (long long)CB, pad);
    const int64_t CY = a_ch + CB + pad;
    ck_tensor     a = FT(2.0f, 0.0f, 1, P, 1, CA), b = FT(4.0f, 0.0f, 1, P, 1, CB), y = FT(9, 0, 1, P, 1, CY);
    float        *ref = ref_of(&y); /* zeros: the padding channels */
    for (int64_t p = 0; p < P; p++) {
        for (int c = 0; c < a_ch; c++) ref[p * CY + c] = F(a)[p * CA + c];
        for (int64_t c = 0; c < CB; c++) ref[p * CY + a_ch + c] = (float)sigmoid_ref(F(b)[p * CB + c]);
    }
    ck_concat_sigmoid(&g_ex, &y, &a, a_ch, &b);
    check_close(what, F(y), ref, N(y), 1e-7, 1e-6);
    free(ref), free(a.data), free(b.data), free(y.data);
}

static void test_op_concat_sigmoid(void) {
    case_concat_sigmoid(257, 4, 3, 4, 1); /* the refiner's input: rgb, σ(logits), a zero channel */
    case_concat_sigmoid(15, 6, 2, 3, 0);
    case_concat_sigmoid(15, 6, 3, 4, 3);
}

/* ---- convert: hand-computed bit patterns ---- */

static float f32_of_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Converts n values of dtype `from` at src into dtype `to` at dst through the op. */
static void convert_n(void *dst, ck_dtype to, const void *src, ck_dtype from, int64_t n) {
    ck_tensor x = ck_tensor_make((void *)src, from, 1, &n), y = ck_tensor_make(dst, to, 1, &n);
    ck_convert(&g_ex, &y, &x);
}

static void test_op_convert(void) {
    const int fails0 = g_failures;
    /* float32 → float16: round to nearest, ties to even; overflow to infinity; subnormals */
    const float    f16_in[]  = {1.0f, -2.0f, 65504.0f, 65519.0f, 65520.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f,
                                1.0f + 0x1p-11f + 0x1p-20f, 0x1p-14f, 0x1p-24f, 0x1p-25f, 3 * 0x1p-25f, 1e-8f, -1e-8f,
                                -0.0f, INFINITY, -INFINITY};
    const uint16_t f16_out[] = {0x3C00, 0xC000, 0x7BFF, 0x7BFF, 0x7C00, 0x3C00, 0x3C02, 0x3C01, 0x0400,
                                0x0001, 0x0000, 0x0002, 0x0000, 0x8000, 0x8000, 0x7C00, 0xFC00};
    const int64_t  n16       = (int64_t)(sizeof f16_in / sizeof f16_in[0]);
    uint16_t       h[32];
    convert_n(h, CK_DTYPE_F16, f16_in, CK_DTYPE_F32, n16);
    for (int64_t i = 0; i < n16; i++)
        CHECK_MSG(h[i] == f16_out[i], "f32 %a -> f16 0x%04x, want 0x%04x", f16_in[i], h[i], f16_out[i]);
    /* float32 → bfloat16 */
    const float    bf_in[]  = {1.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, -3.0f,
                               f32_of_bits(0x7F7F0000u), FLT_MAX, -0.0f};
    const uint16_t bf_out[] = {0x3F80, 0x3F80, 0x3F82, 0x3F81, 0xC040, 0x7F7F, 0x7F80, 0x8000};
    const int64_t  nbf      = (int64_t)(sizeof bf_in / sizeof bf_in[0]);
    convert_n(h, CK_DTYPE_BF16, bf_in, CK_DTYPE_F32, nbf);
    for (int64_t i = 0; i < nbf; i++)
        CHECK_MSG(h[i] == bf_out[i], "f32 %a -> bf16 0x%04x, want 0x%04x", bf_in[i], h[i], bf_out[i]);
    /* NaN stays NaN */
    const float nan_in[1] = {NAN};
    convert_n(h, CK_DTYPE_F16, nan_in, CK_DTYPE_F32, 1);
    CHECK_MSG((h[0] & 0x7C00) == 0x7C00 && (h[0] & 0x03FF), "NaN -> f16 0x%04x", h[0]);
    convert_n(h, CK_DTYPE_BF16, nan_in, CK_DTYPE_F32, 1);
    CHECK_MSG((h[0] & 0x7F80) == 0x7F80 && (h[0] & 0x007F), "NaN -> bf16 0x%04x", h[0]);
    /* float16 / bfloat16 → float32 (exact), float16 → bfloat16, float32 → float32 (a copy) */
    const uint16_t h_in[]  = {0x3C00, 0x0001, 0x7BFF, 0xC000, 0x7C00, 0x8000, 0x3C01, 0x3E00};
    const float    h_f32[] = {1.0f, 0x1p-24f, 65504.0f, -2.0f, INFINITY, -0.0f, 1.0f + 0x1p-10f, 1.5f};
    const uint16_t h_bf[]  = {0x3F80, 0x3380, 0x4780, 0xC000, 0x7F80, 0x8000, 0x3F80, 0x3FC0};
    float          f[32];
    convert_n(f, CK_DTYPE_F32, h_in, CK_DTYPE_F16, 8);
    for (int i = 0; i < 8; i++)
        CHECK_MSG(same_bits(&f[i], &h_f32[i], 4), "f16 0x%04x -> %a, want %a", h_in[i], f[i], h_f32[i]);
    convert_n(h, CK_DTYPE_BF16, h_in, CK_DTYPE_F16, 8);
    for (int i = 0; i < 8; i++)
        CHECK_MSG(h[i] == h_bf[i], "f16 0x%04x -> bf16 0x%04x, want 0x%04x", h_in[i], h[i], h_bf[i]);
    const uint16_t b_in[]  = {0x3F80, 0xC040, 0x0001, 0x7F80};
    const float    b_f32[] = {1.0f, -3.0f, 0x1p-133f, INFINITY};
    convert_n(f, CK_DTYPE_F32, b_in, CK_DTYPE_BF16, 4);
    for (int i = 0; i < 4; i++)
        CHECK_MSG(same_bits(&f[i], &b_f32[i], 4), "bf16 0x%04x -> %a, want %a", b_in[i], f[i], b_f32[i]);
    convert_n(f, CK_DTYPE_F32, f16_in, CK_DTYPE_F32, n16);
    CHECK_MSG(same_bits(f, f16_in, sizeof f16_in), "f32 -> f32 is not a copy");
    printf("%s convert: hand-computed values f32->f16, f32->bf16, f16->f32, f16->bf16, bf16->f32, f32->f32\n",
           g_failures == fails0 ? "OK    " : "NOT OK");
}

/* ---- zero, copy_rect: every byte of the destination checked ---- */

static void test_op_zero(void) {
    const int     fails0 = g_failures;
    const int64_t H = 7, W = 5, C = 3;
    for (int d = 0; d < 2; d++) { /* float32 and float16 tensors */
        const ck_dtype dt   = d ? CK_DTYPE_F16 : CK_DTYPE_F32;
        const size_t   es   = ck_dtype_size(dt), row = (size_t)(W * C) * es, bytes = (size_t)H * row;
        uint8_t       *buf  = malloc(bytes);
        CK_ASSERT(buf);
        memset(buf, 0xAB, bytes);
        ck_tensor rows = ck_tensor_make(buf + 2 * row, dt, 4, (int64_t[]){1, 3, W, C}); /* rows [2, 5) */
        ck_zero(&g_ex, &rows);
        size_t bad = 0;
        for (size_t i = 0; i < bytes; i++) bad += buf[i] != (i >= 2 * row && i < 5 * row ? 0x00 : 0xAB);
        CHECK_MSG(bad == 0, "zero (%s): %zu bytes wrong", ck_dtype_name(dt), bad);
        free(buf);
    }
    printf("%s zero: rows [2, 5) of 7x5x3, float32 and float16, every byte\n",
           g_failures == fails0 ? "OK    " : "NOT OK");
}

/* Element (b, y, x, c) of the source holds the code b·100000 + y·1000 + x·10 + c (exact in float32 and, for
 * the float16 case, stored as a 16-bit pattern of its own); the destination starts as −1 (0xFFFF). */
static void case_copy_rect(ck_dtype dt, int64_t B, int64_t HX, int64_t WX, int64_t HY, int64_t WY, int64_t C, int dy,
                           int dx, int sy, int sx, int h, int w) {
    const int64_t nx = B * HX * WX * C, ny = B * HY * WY * C;
    const size_t  es = ck_dtype_size(dt);
    uint8_t      *xb = malloc((size_t)nx * es), *yb = malloc((size_t)ny * es);
    CK_ASSERT(xb && yb);
    for (int64_t b = 0; b < B; b++)
        for (int64_t y = 0; y < HX; y++)
            for (int64_t x = 0; x < WX; x++)
                for (int64_t c = 0; c < C; c++) {
                    const int64_t i = ((b * HX + y) * WX + x) * C + c;
                    if (dt == CK_DTYPE_F32) ((float *)xb)[i] = (float)(b * 100000 + y * 1000 + x * 10 + c);
                    else ((uint16_t *)xb)[i] = (uint16_t)(b * 20000 + y * 600 + x * 20 + c); /* < 0xFFFF */
                }
    for (int64_t i = 0; i < ny; i++) {
        if (dt == CK_DTYPE_F32) ((float *)yb)[i] = -1.0f;
        else ((uint16_t *)yb)[i] = 0xFFFF;
    }
    ck_tensor x = ck_tensor_make(xb, dt, 4, (int64_t[]){B, HX, WX, C});
    ck_tensor y = ck_tensor_make(yb, dt, 4, (int64_t[]){B, HY, WY, C});
    ck_copy_rect(&g_ex, &y, dy, dx, &x, sy, sx, h, w);
    int64_t bad = 0, inside = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t Y = 0; Y < HY; Y++)
            for (int64_t X = 0; X < WY; X++)
                for (int64_t c = 0; c < C; c++) {
                    const int64_t i  = ((b * HY + Y) * WY + X) * C + c;
                    const int     in = Y >= dy && Y < dy + h && X >= dx && X < dx + w;
                    const int64_t y0 = sy + (Y - dy), x0 = sx + (X - dx); /* the source pixel when inside */
                    inside += in;
                    if (dt == CK_DTYPE_F32) {
                        const float want = in ? (float)(b * 100000 + y0 * 1000 + x0 * 10 + c) : -1.0f;
                        bad += ((float *)yb)[i] != want;
                    } else {
                        const uint16_t want = in ? (uint16_t)(b * 20000 + y0 * 600 + x0 * 20 + c) : 0xFFFF;
                        bad += ((uint16_t *)yb)[i] != want;
                    }
                }
    CHECK_MSG(bad == 0 && inside == B * h * w * C, "copy_rect %s %dx%d (%d,%d) -> (%d,%d): %lld elements wrong",
              ck_dtype_name(dt), h, w, sy, sx, dy, dx, (long long)bad);
    printf("%s copy_rect %s %dx%d at (%d,%d) of %lldx%lldx%lldx%lld -> (%d,%d) of %lldx%lld\n",
           bad ? "NOT OK" : "OK    ", ck_dtype_name(dt), h, w, sy, sx, (long long)B, (long long)HX, (long long)WX,
           (long long)C, dy, dx, (long long)HY, (long long)WY);
    free(xb), free(yb);
}

static void test_op_copy_rect(void) {
    case_copy_rect(CK_DTYPE_F32, 1, 12, 12, 8, 9, 4, 0, 0, 2, 3, 8, 9);   /* a tile's input with its halo */
    case_copy_rect(CK_DTYPE_F32, 1, 8, 9, 12, 12, 4, 4, 3, 2, 3, 4, 5);   /* owned pixels back into the image */
    case_copy_rect(CK_DTYPE_F32, 2, 9, 11, 10, 12, 3, 1, 2, 4, 5, 5, 6);  /* batch of two, at the source's corner */
    case_copy_rect(CK_DTYPE_F16, 2, 6, 7, 6, 7, 5, 3, 0, 0, 4, 3, 3);     /* 2-byte elements */
    case_copy_rect(CK_DTYPE_F32, 1, 5, 5, 5, 5, 1, 4, 4, 0, 0, 1, 1);     /* one element */
}

/* ---- space_to_depth: every value where the definition puts it; the patch embedding over 4×4 blocks ---- */

static void case_space_to_depth(int64_t B, int64_t H, int64_t W, int64_t C, int k, int lead, int64_t Hy, int64_t Wy) {
    char what[128];
    snprintf(what, sizeof what, "space_to_depth %lldx%lldx%lldx%lld k%d lead %d", (long long)B, (long long)H,
             (long long)W, (long long)C, k, lead);
    ck_tensor x = FT(0.0f, 0.0f, B, H, W, C), y = FT(0.0f, -1.0f, B, Hy, Wy, (int64_t)k * k * C);
    for (size_t i = 0; i < N(x); i++) F(x)[i] = (float)(i + 1); /* each value names its element */
    ck_space_to_depth(&g_ex, &y, &x, k, lead);
    int64_t bad = 0, inside = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < Hy; j++)
            for (int64_t i = 0; i < Wy; i++)
                for (int64_t ch = 0; ch < k * k * C; ch++) {
                    const int64_t dy = ch / (k * C), dx = ch / C % k, c = ch % C;
                    const int64_t yy = k * j - lead + dy, xx = k * i - lead + dx;
                    const int     in = yy >= 0 && yy < H && xx >= 0 && xx < W;
                    const float   want = in ? (float)(((b * H + yy) * W + xx) * C + c + 1) : 0.0f;
                    inside += in;
                    bad += F(y)[((b * Hy + j) * Wy + i) * k * k * C + ch] != want;
                }
    CHECK_MSG(bad == 0 && inside > 0 && inside < (int64_t)N(y), "%s: %lld wrong, %lld inside of %zu", what,
              (long long)bad, (long long)inside, N(y));
    printf("%s %s\n", bad == 0 ? "OK    " : "NOT OK", what);
    free(x.data), free(y.data);
}

/* model/hiera.c's CK_PATCH_S2D path: space_to_depth (4, 4) and the 2×2 convolution with ck_patch_weight_s2d's
 * kernel equal the 7×7 stride-4 padding-3 convolution up to float32 summation order. */
static void case_patch_s2d(int64_t B, int64_t S, int64_t OC) {
    char what[96];
    snprintf(what, sizeof what, "patch embedding %lldx%lldx%lldx4 ->%lld as 4x4 blocks", (long long)B, (long long)S,
             (long long)S, (long long)OC);
    ck_tensor x = FT(1.0f, 0.0f, B, S, S, 4), w = FT(1.0f / 14.0f, 0.0f, OC, 4, 7, 7), b = FT(0.5f, 0.0f, OC);
    ck_tensor w2 = FT(0.0f, 0.0f, OC, 64, 2, 2), bl = FT(0.0f, 0.0f, B, S / 4 + 1, S / 4 + 1, 64);
    ck_tensor y = FT(0.0f, 0.0f, B, S / 4, S / 4, OC), y2 = FT(0.0f, 0.0f, B, S / 4, S / 4, OC);
    ck_patch_weight_s2d(F(w2), F(w), OC, 4);
    ck_conv2d(&g_ex, &y, &x, &w, &b, 4, 3, 1);
    ck_space_to_depth(&g_ex, &bl, &x, 4, 4);
    ck_conv2d(&g_ex, &y2, &bl, &w2, &b, 1, 0, 1);
    check_close(what, F(y2), F(y), N(y), 1e-5, 1e-5);
    free(x.data), free(w.data), free(b.data), free(w2.data), free(bl.data), free(y.data), free(y2.data);
}

static void test_op_space_to_depth(void) {
    case_space_to_depth(1, 16, 16, 4, 4, 4, 5, 5); /* the patch embedding's blocks */
    case_space_to_depth(2, 30, 22, 3, 4, 4, 9, 7); /* ragged edges */
    case_space_to_depth(1, 13, 9, 2, 3, 1, 5, 4);  /* 3×3 blocks straddling the border */
    case_patch_s2d(1, 32, 16);
    case_patch_s2d(2, 20, 12);
}

/* ---- conv3x3_gn: the fused refiner convolution, against float64 (act, dilated conv, band, moments) ---- */

/* (mean, M2) of group g over pixels [p0, p1) of one row of y (W, C), float64 */
static void seg_moments(const float *yr, int64_t C, int64_t CG, int64_t g, int64_t p0, int64_t p1, double *mean,
                        double *m2) {
    double s = 0.0, q = 0.0;
    for (int64_t p = p0; p < p1; p++)
        for (int64_t k = 0; k < CG; k++) s += yr[p * C + g * CG + k];
    *mean = s / (double)((p1 - p0) * CG);
    for (int64_t p = p0; p < p1; p++)
        for (int64_t k = 0; k < CG; k++) q += (yr[p * C + g * CG + k] - *mean) * (yr[p * C + g * CG + k] - *mean);
    *m2 = q;
}

static void case_conv3x3_gn(int64_t B, int64_t H, int64_t W, int64_t C, int64_t OC, int groups, int d, int row0, int h,
                            int act) {
    char what[128];
    snprintf(what, sizeof what, "conv3x3_gn %lldx%lldx%lldx%lld->%lld g%d d%d rows [%d,%d)%s", (long long)B,
             (long long)H, (long long)W, (long long)C, (long long)OC, groups, d, row0, row0 + h,
             act == 2 ? " gn+residual+relu, a_out" : act == 3 ? " gn+relu, a_out" : act ? " gn+relu" : "");
    const int64_t CG = OC / groups, nseg = (W + CK_GN_SEG - 1) / CK_GN_SEG, gx = C / 4, CGx = 4; /* act: groups of 4 */
    ck_tensor x = FT(1.5f, 0.3f, B, H, W, C), w = FT(1.0f / sqrtf(9.0f * C), 0.0f, OC, C, 3, 3), b = FT(0.3f, 0.0f, OC);
    ck_tensor g = FT(0.3f, 1.0f, C), bt = FT(0.5f, 0.0f, C), st = FT(0.2f, 0.0f, B, gx, 2);
    for (int64_t i = 0; i < B * gx; i++) F(st)[2 * i + 1] = 0.8f + 0.1f * (float)i; /* rstd */
    ck_tensor y = FT(9, 0, B, h, W, OC), m = FT(0, NAN, B, H, nseg, groups, 2);
    ck_tensor rs = FT(1.0f, 0.2f, B, H, W, C), ao = FT(0, NAN, B, H, W, C); /* act 2: residual, a_out */
    float    *ref = ref_of(&y);
    double   *a   = malloc(sizeof(double) * (size_t)(B * H * W * C));
    CK_ASSERT(a);
    for (int64_t i = 0; i < B * H * W * C; i++) {
        const int64_t c = i % C, bi = i / (H * W * C);
        double        v = F(x)[i];
        if (act) {
            const float *s = F(st) + (bi * gx + c / CGx) * 2;
            v              = (v - s[0]) * s[1] * F(g)[c] + F(bt)[c] + (act == 2 ? F(rs)[i] : 0.0);
            v              = v > 0 ? v : 0;
        }
        a[i] = v;
    }
    for (int64_t bi = 0; bi < B; bi++)
        for (int64_t r = 0; r < h; r++)
            for (int64_t px = 0; px < W; px++)
                for (int64_t oc = 0; oc < OC; oc++) {
                    double s = F(b)[oc];
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++) {
                            const int64_t iy = row0 + r + (ky - 1) * d, ix = px + (kx - 1) * d;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                            for (int64_t ic = 0; ic < C; ic++)
                                s += a[((bi * H + iy) * W + ix) * C + ic] * F(w)[((oc * C + ic) * 3 + ky) * 3 + kx];
                        }
                    ref[((bi * h + r) * W + px) * OC + oc] = (float)s;
                }
    ck_conv3x3_gn(&g_ex, &y, &x, &w, &b, d, row0, act ? &st : NULL, &g, &bt, act == 2 ? &rs : NULL,
                  act >= 2 ? &ao : NULL, &m);
    check_close(what, F(y), ref, N(y), 1e-5, 1e-5);
    if (act >= 2) { /* a_out: the formed input over the band's rows, NaN (untouched) elsewhere */
        int bad_a = 0;
        for (int64_t i = 0; i < B * H * W * C; i++) {
            const int64_t yy = (i / (W * C)) % H;
            bad_a += yy >= row0 && yy < row0 + h ? !(fabs(F(ao)[i] - a[i]) <= 1e-5 * (1 + fabs(a[i]))) : !isnan(F(ao)[i]);
        }
        CHECK_MSG(bad_a == 0, "%s: %d a_out values wrong", what, bad_a);
        printf("%s %s (a_out)\n", bad_a ? "NOT OK" : "OK    ", what);
    }
    /* moments: of the op's own outputs, float64; rows outside the band untouched (NaN) */
    int bad = 0;
    for (int64_t bi = 0; bi < B; bi++)
        for (int64_t yy = 0; yy < H; yy++)
            for (int64_t sg = 0; sg < nseg; sg++)
                for (int64_t gi = 0; gi < groups; gi++) {
                    const float *got = F(m) + (((bi * H + yy) * nseg + sg) * groups + gi) * 2;
                    if (yy < row0 || yy >= row0 + h) {
                        bad += !(isnan(got[0]) && isnan(got[1]));
                        continue;
                    }
                    double mean, m2;
                    const int64_t p0 = sg * CK_GN_SEG, p1 = p0 + CK_GN_SEG < W ? p0 + CK_GN_SEG : W;
                    seg_moments(F(y) + ((bi * h + yy - row0) * W) * OC, OC, CG, gi, p0, p1, &mean, &m2);
                    bad += !(fabs(got[0] - mean) <= 1e-6 * (1 + fabs(mean)) && fabs(got[1] - m2) <= 1e-6 * (1 + m2));
                }
    CHECK_MSG(bad == 0, "%s: %d moments wrong", what, bad);
    printf("%s %s (moments)\n", bad ? "NOT OK" : "OK    ", what);
    free(a), free(ref), free(x.data), free(w.data), free(b.data), free(g.data), free(bt.data), free(st.data);
    free(y.data), free(m.data), free(rs.data), free(ao.data);
}

static void test_op_conv3x3_gn(void) {
    case_conv3x3_gn(1, 9, 20, 16, 16, 4, 1, 0, 9, 0);
    case_conv3x3_gn(2, 10, 12, 16, 16, 4, 2, 0, 10, 1);
    case_conv3x3_gn(1, 20, 140, 8, 8, 2, 4, 6, 5, 1); /* a band; two segments, the second partial */
    case_conv3x3_gn(1, 12, 9, 16, 16, 8, 8, 3, 6, 1); /* dilation beyond the image */
    case_conv3x3_gn(1, 7, 30, 8, 16, 4, 1, 0, 7, 0);  /* the stem's shape: 8 channels in, more out */
    case_conv3x3_gn(2, 10, 12, 16, 16, 4, 2, 0, 10, 2); /* GroupNorm 2 folded in: residual, a_out */
    case_conv3x3_gn(1, 20, 140, 8, 8, 2, 4, 6, 5, 2);  /* ... a band: a_out's other rows untouched */
    case_conv3x3_gn(1, 9, 20, 16, 16, 4, 1, 0, 9, 3);  /* the stem's GroupNorm folded: a_out, no residual */
}

/* ---- gn_moments_stats: per-segment moments merged back into a whole map's statistics ---- */

static void case_gn_moments_stats(int64_t B, int64_t H, int64_t W, int64_t C, int groups) {
    char what[96];
    snprintf(what, sizeof what, "gn_moments_stats %lldx%lldx%lldx%lld g%d", (long long)B, (long long)H, (long long)W,
             (long long)C, groups);
    const int64_t CG = C / groups, nseg = (W + CK_GN_SEG - 1) / CK_GN_SEG;
    ck_tensor     y = FT(2.0f, 3.0f, B, H, W, C), m = FT(0, 0, B, H, nseg, groups, 2), st = FT(9, 0, B, groups, 2);
    float         ref[2 * 4 * 16];
    CK_ASSERT(B * groups <= 4 * 16);
    for (int64_t bi = 0; bi < B; bi++)
        for (int64_t gi = 0; gi < groups; gi++) {
            for (int64_t yy = 0; yy < H; yy++)
                for (int64_t sg = 0; sg < nseg; sg++) {
                    double        mean, m2;
                    const int64_t p0 = sg * CK_GN_SEG, p1 = p0 + CK_GN_SEG < W ? p0 + CK_GN_SEG : W;
                    seg_moments(F(y) + ((bi * H + yy) * W) * C, C, CG, gi, p0, p1, &mean, &m2);
                    float *o = F(m) + (((bi * H + yy) * nseg + sg) * groups + gi) * 2;
                    o[0] = (float)mean, o[1] = (float)m2;
                }
            double s = 0.0, q = 0.0;
            const double n = (double)(H * W * CG);
            for (int64_t p = 0; p < H * W; p++)
                for (int64_t k = 0; k < CG; k++) s += F(y)[(bi * H * W + p) * C + gi * CG + k];
            for (int64_t p = 0; p < H * W; p++)
                for (int64_t k = 0; k < CG; k++) {
                    const double dv = F(y)[(bi * H * W + p) * C + gi * CG + k] - s / n;
                    q += dv * dv;
                }
            ref[(bi * groups + gi) * 2]     = (float)(s / n);
            ref[(bi * groups + gi) * 2 + 1] = (float)(1.0 / sqrt(q / n + 1e-5));
        }
    ck_gn_moments_stats(&g_ex, &st, &m, (int)W, (int)CG, 1e-5f);
    check_close(what, F(st), ref, (size_t)(B * groups * 2), 1e-6, 1e-6);
    free(y.data), free(m.data), free(st.data);
}

static void test_op_gn_moments_stats(void) {
    case_gn_moments_stats(1, 6, 300, 16, 4); /* segments of 128, 128 and 44 pixels */
    case_gn_moments_stats(2, 5, 128, 64, 8);
    case_gn_moments_stats(1, 3, 7, 8, 1);
}

/* ---- layernorm_linear: LayerNorm then a linear (+ act, residual), against float64 ---- */

static void case_layernorm_linear(int64_t M, int64_t K, int64_t Nn, ck_act act, int res) {
    char what[96];
    snprintf(what, sizeof what, "layernorm_linear %lldx%lld->%lld act%d res%d", (long long)M, (long long)K,
             (long long)Nn, act, res);
    ck_tensor x = FT(2.0f, 0.7f, M, K), g = FT(0.3f, 1.0f, K), bt = FT(0.3f, 0.0f, K);
    ck_tensor w = FT(1.0f / sqrtf((float)K), 0.0f, Nn, K), b = FT(0.5f, 0.0f, Nn), r = FT(1.0f, 0.0f, M, Nn);
    ck_tensor y = FT(9, 0, M, Nn), xn = FT(9, 0, M, K);
    float    *ref = ref_of(&y);
    double   *a   = malloc(sizeof(double) * (size_t)K);
    CK_ASSERT(a);
    for (int64_t m = 0; m < M; m++) {
        double mean = 0, var = 0;
        for (int64_t k = 0; k < K; k++) mean += F(x)[m * K + k];
        mean /= (double)K;
        for (int64_t k = 0; k < K; k++) var += (F(x)[m * K + k] - mean) * (F(x)[m * K + k] - mean);
        const double rstd = 1.0 / sqrt(var / (double)K + 1e-6);
        for (int64_t k = 0; k < K; k++) a[k] = (F(x)[m * K + k] - mean) * rstd * F(g)[k] + F(bt)[k];
        for (int64_t n = 0; n < Nn; n++) {
            double acc = F(b)[n];
            for (int64_t k = 0; k < K; k++) acc += a[k] * F(w)[n * K + k];
            ref[m * Nn + n] = (float)(act_ref(acc, act) + (res ? F(r)[m * Nn + n] : 0.0));
        }
    }
    ck_layernorm_linear(&g_ex, &y, &x, &g, &bt, 1e-6f, &w, &b, act, res ? &r : NULL, &xn);
    check_close(what, F(y), ref, N(y), 1e-5, 1e-5);
    free(a), free(ref), free(x.data), free(g.data), free(bt.data), free(w.data), free(b.data), free(r.data);
    free(y.data), free(xn.data);
}

static void test_op_layernorm_linear(void) {
    case_layernorm_linear(37, 112, 336, CK_ACT_NONE, 0);
    case_layernorm_linear(20, 112, 448, CK_ACT_GELU, 0);
    case_layernorm_linear(9, 24, 40, CK_ACT_RELU, 1);
}

/* ======================= the registry ======================= */

/* One case per op of ops_list.h, both lists: an op without its test_op_<name> above does not compile
 * (undeclared identifier). */
static const struct {
    const char *op;
    void (*run)(void);
} g_op_tests[] = {
#define OP_TEST(name) {#name, test_op_##name},
    CK_OPS(OP_TEST) CK_OPS_OPTIONAL(OP_TEST)
#undef OP_TEST
};

int main(void) {
    g_be = ck_backend_cpu_create(2);
    CK_ASSERT(g_be);
    g_ex.be    = g_be;
    g_ex.dtype = CK_DTYPE_F32;
    for (size_t i = 0; i < sizeof g_op_tests / sizeof g_op_tests[0]; i++) {
        printf("-- op %s\n", g_op_tests[i].op);
        g_op_tests[i].run();
    }
    g_be->destroy(g_be);
    return test_summary();
}
