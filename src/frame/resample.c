/* Separable image resampling that reproduces the reference libraries to the bit (model_spec §9.1, §9.2).
 *
 * References, checked with tests/test_frame_ops.c against fixtures written by
 * tools/reference/make_frame_ops_fixtures.py:
 *   - bilinear + antialias: PyTorch aten/src/ATen/native/cpu/UpSampleKernel.cpp
 *     (HelperInterpBase::_compute_indices_min_size_weights_aa, separable_upsample_generic_Nd_kernel_impl);
 *   - bicubic: same file (HelperInterpCubic, upsample_generic_Nd_kernel_impl) and UpSample.h;
 *   - Lanczos-4 and linear: OpenCV modules/imgproc/src/resize.cpp (interpolateLanczos4, resizeGeneric_,
 *     HResizeLanczos4, VResizeLanczos4, VResizeLanczos4Vec_32f).
 *
 * Rules: plain loops, OpenMP over rows, no intrinsics. Tap positions and weights are computed with the
 * same float/double mix as the reference code. Where the reference *binaries* fuse a multiply-add
 * (their compilers contract or vectorize the source loops), fmaf() is used at exactly those places and
 * nowhere else; every other product is rounded before it is added. This only holds if the compiler
 * does not contract on its own, hence the fp-contract pragma below (the default -march=x86-64-v2 build
 * has no FMA instructions anyway).
 *
 * Layout: images are interleaved (H, W, C). A resize runs a horizontal pass over every source row into
 * an intermediate (src_h, dst_w, C), then a vertical pass into dst. Tap tables are built once per call.
 */
#include "frame/frame_ops.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

_Static_assert(sizeof(int32_t) == sizeof(float), "tap indices share the float workspace");

/* One axis: output i reads source indices idx[i*K + j] (already clamped into [0, in)) with weights
 * w[i*K + j], for j < cnt[i]. */
typedef struct ck__axis {
    int      n, K;
    int32_t *idx; /* (n, K) */
    float   *w;   /* (n, K) */
    int32_t *cnt; /* (n) */
} ck__axis;

static int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* ---- tap tables ---- */

/* PyTorch aa: support = scale (downscale) or 1 (upscale); max_interp_size = ceil(support)*2 + 1. */
static int aa_max_taps(int in, int out) {
    float scale   = (float)in / (float)out;
    float support = scale >= 1.0f ? scale : 1.0f;
    return (int)ceilf(support) * 2 + 1;
}

static int axis_max_taps(ck_resize_mode mode, int in, int out) {
    switch (mode) {
    case CK_RESIZE_BILINEAR_AA: return aa_max_taps(in, out);
    case CK_RESIZE_LANCZOS4: return 8;
    case CK_RESIZE_LINEAR_CV: return 2;
    case CK_RESIZE_BICUBIC_TORCH: return 4;
    }
    CK_ASSERT(!"unknown resize mode");
    return 0;
}

/* _compute_indices_min_size_weights_aa with scalar_t = float. The mixed float/double expressions
 * are deliberate: `scale * (i + 0.5)` is evaluated in double and stored as float, the filter argument
 * `(j + xmin - center + 0.5) * invscale` is float minus float, then double, then float again. */
static void taps_bilinear_aa(ck__axis *a, int in, int out) {
    float scale    = (float)in / (float)out;
    float support  = scale >= 1.0f ? scale : 1.0f;
    float invscale = scale >= 1.0f ? (float)(1.0 / (double)scale) : 1.0f;
    for (int i = 0; i < out; i++) {
        float   center = (float)((double)scale * (i + 0.5));
        int64_t xmin   = (int64_t)((double)(center - support) + 0.5);
        int64_t xmax   = (int64_t)((double)(center + support) + 0.5);
        if (xmin < 0) xmin = 0;
        if (xmax > in) xmax = in;
        int64_t n = xmax - xmin;
        if (n < 0) n = 0;
        if (n > a->K) n = a->K;
        CK_ASSERT(n >= 1);
        int32_t *idx   = a->idx + (size_t)i * a->K;
        float   *w     = a->w + (size_t)i * a->K;
        float    total = 0.0f;
        for (int j = 0; j < (int)n; j++) {
            float t   = (float)(j + xmin) - center;
            float arg = (float)(((double)t + 0.5) * (double)invscale);
            float x   = fabsf(arg);
            w[j]      = x < 1.0f ? (float)(1.0 - (double)x) : 0.0f;
            idx[j]    = (int32_t)(xmin + j);
            total += w[j];
        }
        if (total != 0.0f)
            for (int j = 0; j < (int)n; j++) w[j] /= total;
        a->cnt[i] = (int32_t)n;
    }
}

/* OpenCV interpolateLanczos4: sinc(t)·sinc(t/4) through the sin/cos addition identity in double, each
 * tap rounded to float, float sum, normalized by the float reciprocal. A tap that falls on the sample
 * gets 1e30 so that, after normalization, the sample dominates all others. */
static void lanczos4_coeffs(float x, float *coeffs) {
    static const double s45   = 0.70710678118654752440084436210485;
    static const double cs[8][2] = {{1, 0}, {-s45, -s45}, {0, 1}, {s45, -s45},
                                    {-1, 0}, {s45, s45},  {0, -1}, {-s45, s45}};
    static const double pi    = 3.1415926535897932384626433832795;
    float  sum = 0.0f;
    double y0 = -(double)(x + 3.0f) * pi * 0.25, s0 = sin(y0), c0 = cos(y0);
    for (int i = 0; i < 8; i++) {
        float y0_ = (x + 3.0f) - (float)i;
        if (fabsf(y0_) >= 1e-6f) {
            double y  = -(double)y0_ * pi * 0.25;
            coeffs[i] = (float)((cs[i][0] * s0 + cs[i][1] * c0) / (y * y));
        } else {
            coeffs[i] = 1e30f;
        }
        sum += coeffs[i];
    }
    sum = 1.0f / sum;
    for (int i = 0; i < 8; i++) coeffs[i] *= sum;
}

/* OpenCV resize: scale = 1/(out/in) in double, source position rounded to float *before* the floor,
 * 8 taps from sx-3, replicate border. */
static void taps_lanczos4(ck__axis *a, int in, int out) {
    double scale = 1.0 / ((double)out / in);
    for (int i = 0; i < out; i++) {
        float fx = (float)((i + 0.5) * scale - 0.5);
        int   sx = (int)floorf(fx);
        fx -= (float)sx;
        lanczos4_coeffs(fx, a->w + (size_t)i * 8);
        for (int j = 0; j < 8; j++) a->idx[(size_t)i * 8 + j] = clampi(sx - 3 + j, 0, in - 1);
        a->cnt[i] = 8;
    }
}

/* cv2 5.0 INTER_LINEAR on float32 images of at least 2×2 runs through its IPP layer: the fraction is
 * taken in double and rounded once to float (the generic OpenCV path rounds the position first, which
 * differs by up to ~1e-6 on downscales), outside positions clamp to the edge sample. cnt = 1 marks an
 * exact copy of the edge sample. */
static void taps_linear_cv(ck__axis *a, int in, int out) {
    double scale = 1.0 / ((double)out / in);
    for (int i = 0; i < out; i++) {
        double xd = (i + 0.5) * scale - 0.5;
        double fl = floor(xd);
        int    sx = (int)fl;
        float  fx = (float)(xd - fl);
        int    n  = 2;
        if (sx < 0) sx = 0, fx = 0.0f, n = 1;
        if (sx >= in - 1) sx = in - 1, fx = 0.0f, n = 1;
        a->idx[(size_t)i * 2 + 0] = sx;
        a->idx[(size_t)i * 2 + 1] = n == 2 ? sx + 1 : sx;
        a->w[(size_t)i * 2 + 0]   = 1.0f - fx;
        a->w[(size_t)i * 2 + 1]   = fx;
        a->cnt[i]                 = n;
    }
}

/* PyTorch cubic_convolution1/2 with A = -0.75 as the torch 2.15 CPU build evaluates them: c1 with
 * rounded products, c2 with its first two multiply-adds fused and the last one not. */
static float cubic_c1(float x) { return ((1.25f * x - 2.25f) * x) * x + 1.0f; }
static float cubic_c2(float x) {
    float u = fmaf(fmaf(-0.75f, x, 3.75f), x, -6.0f);
    return u * x + 3.0f;
}

/* HelperInterpCubic::compute_indices_weights: src = scale*(i+0.5) - 0.5 (one fused rounding in the
 * reference build), i0 = min(floor(src), in-1), t clamped to [0,1], taps i0-1 .. i0+2 clamped. */
static void taps_bicubic_torch(ck__axis *a, int in, int out) {
    float scale = (float)in / (float)out;
    for (int i = 0; i < out; i++) {
        float   real = fmaf(scale, (float)i + 0.5f, -0.5f);
        int64_t i0   = (int64_t)floorf(real);
        if (i0 > in - 1) i0 = in - 1;
        float t = real - (float)i0;
        t       = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
        float x2 = 1.0f - t;
        float *w = a->w + (size_t)i * 4;
        w[0]     = cubic_c2(t + 1.0f);
        w[1]     = cubic_c1(t);
        w[2]     = cubic_c1(x2);
        w[3]     = cubic_c2(x2 + 1.0f);
        for (int j = 0; j < 4; j++) a->idx[(size_t)i * 4 + j] = clampi((int)i0 - 1 + j, 0, in - 1);
        a->cnt[i] = 4;
    }
}

static void build_axis(ck__axis *a, ck_resize_mode mode, int in, int out) {
    switch (mode) {
    case CK_RESIZE_BILINEAR_AA: taps_bilinear_aa(a, in, out); break;
    case CK_RESIZE_LANCZOS4: taps_lanczos4(a, in, out); break;
    case CK_RESIZE_LINEAR_CV: taps_linear_cv(a, in, out); break;
    case CK_RESIZE_BICUBIC_TORCH: taps_bicubic_torch(a, in, out); break;
    }
}

/* ---- the weighted sums, in each reference's operation order ----
 *
 * PyTorch aa: `out = t0*w0; out += t*w` in source order. The torch 2.15 CPU binary runs that
 * reduction four steps at a time with separate multiplies and adds, and finishes the remaining
 * (n-1) mod 4 steps with fused multiply-adds: steps j <= aa_unfused(n) are unfused.
 * PyTorch bicubic (Interpolate<1, ..., 4> in that build): fma(t3,w3, fma(t2,w2, fma(t0,w0, t1*w1))).
 * OpenCV Lanczos-4: horizontally v = 0; v += S[j]*a[j] left to right (HResizeLanczos4); vertically
 * VResizeLanczos4Vec_32f handles the first W & ~3 elements of a row, four at a time, as
 * S0*b0 + (S1*b1 + (... + (S6*b6 + S7*b7))), and the scalar tail sums left to right.
 * cv2 linear (IPP layer): a + t*(b - a) with one rounding.
 */
static int aa_unfused(int n) { return ((n - 1) / 4) * 4; }

/* Horizontal pass: one row (dst_w, ch), output pixels out_stride apart, from one src row (src_w, ch). */
static void hpass_row(ck_resize_mode mode, const ck__axis *ax, const float *src, float *out, int out_stride,
                      int ch) {
    for (int x = 0; x < ax->n; x++) {
        const int32_t *idx = ax->idx + (size_t)x * ax->K;
        const float   *w   = ax->w + (size_t)x * ax->K;
        const int      n   = ax->cnt[x];
        float         *o   = out + (size_t)x * out_stride;
        switch (mode) {
        case CK_RESIZE_BILINEAR_AA: {
            const float *s0 = src + (size_t)idx[0] * ch; /* aa taps are consecutive */
            const int    nu = aa_unfused(n);
            for (int c = 0; c < ch; c++) {
                float acc = s0[c] * w[0];
                for (int j = 1; j <= nu; j++) acc = acc + s0[(size_t)j * ch + c] * w[j];
                for (int j = nu + 1; j < n; j++) acc = fmaf(s0[(size_t)j * ch + c], w[j], acc);
                o[c] = acc;
            }
            break;
        }
        case CK_RESIZE_LANCZOS4:
            for (int c = 0; c < ch; c++) {
                float acc = 0.0f;
                for (int j = 0; j < 8; j++) acc += src[(size_t)idx[j] * ch + c] * w[j];
                o[c] = acc;
            }
            break;
        case CK_RESIZE_LINEAR_CV:
            for (int c = 0; c < ch; c++) {
                float a = src[(size_t)idx[0] * ch + c];
                o[c]    = n == 1 ? a : fmaf(w[1], src[(size_t)idx[1] * ch + c] - a, a);
            }
            break;
        case CK_RESIZE_BICUBIC_TORCH:
            for (int c = 0; c < ch; c++) {
                float t0 = src[(size_t)idx[0] * ch + c], t1 = src[(size_t)idx[1] * ch + c];
                float t2 = src[(size_t)idx[2] * ch + c], t3 = src[(size_t)idx[3] * ch + c];
                o[c]     = fmaf(t3, w[3], fmaf(t2, w[2], fmaf(t0, w[0], t1 * w[1])));
            }
            break;
        }
    }
}

/* Vertical pass: one output row from the rows (each W = dst_w*ch elements) selected by the taps.
 * Works along the row one tap at a time (same per-element operations as above, vectorizable), in
 * chunks of whole pixels; writes straight into dst when its pixels are packed, else scatters. */
static void vpass_row(ck_resize_mode mode, const float *rows, size_t W, const int32_t *idx, const float *w, int n,
                      float *dst, int dst_stride, int ch) {
    enum { CHUNK = 1024 };
    float        buf[CHUNK];
    const int    direct = dst_stride == ch;
    const size_t step   = direct ? CHUNK : (size_t)ch * (CHUNK / ch);
    const size_t nvec   = W & ~(size_t)3;
    CK_ASSERT(step > 0); /* a strided destination needs ch <= CHUNK */
#define TAP(j) (rows + (size_t)idx[j] * W + e0)
    for (size_t e0 = 0; e0 < W; e0 += step) {
        size_t len = W - e0 < step ? W - e0 : step;
        float *acc = direct ? dst + e0 : buf;
        switch (mode) {
        case CK_RESIZE_BILINEAR_AA: {
            const float *r0 = TAP(0);
            const int    nu = aa_unfused(n);
            for (size_t e = 0; e < len; e++) acc[e] = r0[e] * w[0];
            for (int j = 1; j < n; j++) {
                const float *rj = TAP(j);
                const float  wj = w[j];
                if (j <= nu)
                    for (size_t e = 0; e < len; e++) acc[e] = acc[e] + rj[e] * wj;
                else
                    for (size_t e = 0; e < len; e++) acc[e] = fmaf(rj[e], wj, acc[e]);
            }
            break;
        }
        case CK_RESIZE_LANCZOS4: {
            size_t nv = nvec > e0 ? (nvec - e0 < len ? nvec - e0 : len) : 0;
            const float *r7 = TAP(7);
            for (size_t e = 0; e < nv; e++) acc[e] = r7[e] * w[7];
            for (int j = 6; j >= 0; j--) {
                const float *rj = TAP(j);
                for (size_t e = 0; e < nv; e++) acc[e] = rj[e] * w[j] + acc[e];
            }
            const float *r0 = TAP(0);
            for (size_t e = nv; e < len; e++) acc[e] = r0[e] * w[0];
            for (int j = 1; j < 8; j++) {
                const float *rj = TAP(j);
                for (size_t e = nv; e < len; e++) acc[e] = acc[e] + rj[e] * w[j];
            }
            break;
        }
        case CK_RESIZE_LINEAR_CV: {
            const float *r0 = TAP(0), *r1 = TAP(1);
            if (n == 1)
                for (size_t e = 0; e < len; e++) acc[e] = r0[e];
            else
                for (size_t e = 0; e < len; e++) acc[e] = fmaf(w[1], r1[e] - r0[e], r0[e]);
            break;
        }
        case CK_RESIZE_BICUBIC_TORCH: {
            const float *r0 = TAP(0), *r1 = TAP(1), *r2 = TAP(2), *r3 = TAP(3);
            for (size_t e = 0; e < len; e++)
                acc[e] = fmaf(r3[e], w[3], fmaf(r2[e], w[2], fmaf(r0[e], w[0], r1[e] * w[1])));
            break;
        }
        }
        if (!direct) {
            float *d = dst + (e0 / ch) * dst_stride;
            for (size_t p = 0; p < len / ch; p++)
                for (int c = 0; c < ch; c++) d[p * dst_stride + c] = buf[p * ch + c];
        }
    }
#undef TAP
}

/* ---- public entry points ---- */

static size_t axis_floats(ck_resize_mode mode, int in, int out) {
    size_t k = (size_t)axis_max_taps(mode, in, out), n = 0;
    CK_ASSERT(ck_mul_size((size_t)out, 2 * k + 1, &n));
    return n;
}

size_t ck_resize_ws_floats(ck_resize_mode mode, int dst_w, int dst_h, int src_w, int src_h, int ch) {
    CK_ASSERT(dst_w > 0 && dst_h > 0 && src_w > 0 && src_h > 0 && ch > 0);
    size_t tmp = 0, total = 0;
    CK_ASSERT(ck_mul_size((size_t)src_h, (size_t)dst_w, &tmp) && ck_mul_size(tmp, (size_t)ch, &tmp));
    CK_ASSERT(ck_add_size(axis_floats(mode, src_w, dst_w), axis_floats(mode, src_h, dst_h), &total));
    CK_ASSERT(ck_add_size(total, tmp, &total));
    return total;
}

static float *carve_axis(ck__axis *a, ck_resize_mode mode, int in, int out, float *ws) {
    a->n   = out;
    a->K   = axis_max_taps(mode, in, out);
    a->idx = (int32_t *)ws;
    a->w   = ws + (size_t)out * a->K;
    a->cnt = (int32_t *)(ws + (size_t)out * a->K * 2);
    return ws + (size_t)out * (2 * a->K + 1);
}

void ck_resize_ws(ck_resize_mode mode, float *dst, int dst_stride, int dst_w, int dst_h, const float *src,
                  int src_w, int src_h, int ch, float *ws) {
    CK_ASSERT(dst && src && ws);
    CK_ASSERT(dst_w > 0 && dst_h > 0 && src_w > 0 && src_h > 0 && ch > 0 && dst_stride >= ch);
    const size_t src_row = (size_t)src_w * ch, dst_row = (size_t)dst_w * dst_stride;

    if (dst_w == src_w && dst_h == src_h) {
        /* Every reference copies when the size does not change. */
#pragma omp parallel for schedule(static)
        for (int y = 0; y < dst_h; y++)
            for (int x = 0; x < dst_w; x++)
                memcpy(dst + y * dst_row + (size_t)x * dst_stride, src + y * src_row + (size_t)x * ch,
                       sizeof(float) * ch);
        return;
    }

    ck__axis ax, ay;
    float   *p = carve_axis(&ax, mode, src_w, dst_w, ws);
    p          = carve_axis(&ay, mode, src_h, dst_h, p);
    float *tmp = p; /* (src_h, dst_w, ch) */
    build_axis(&ax, mode, src_w, dst_w);
    build_axis(&ay, mode, src_h, dst_h);

    /* PyTorch's separable aa kernel skips an axis whose size does not change; OpenCV and PyTorch's
     * bicubic kernel run both passes regardless, and so do we. */
    int do_h = !(mode == CK_RESIZE_BILINEAR_AA && dst_w == src_w);
    int do_v = !(mode == CK_RESIZE_BILINEAR_AA && dst_h == src_h);

    if (do_h) {
        float *hout     = do_v ? tmp : dst;
        int    hstride  = do_v ? ch : dst_stride;
        size_t hout_row = (size_t)dst_w * hstride;
#pragma omp parallel for schedule(static)
        for (int y = 0; y < src_h; y++) hpass_row(mode, &ax, src + y * src_row, hout + y * hout_row, hstride, ch);
    }
    if (do_v) {
        const float *rows = do_h ? tmp : src;
        size_t       W    = (size_t)dst_w * ch;
#pragma omp parallel for schedule(static)
        for (int y = 0; y < dst_h; y++)
            vpass_row(mode, rows, W, ay.idx + (size_t)y * ay.K, ay.w + (size_t)y * ay.K, ay.cnt[y],
                      dst + y * dst_row, dst_stride, ch);
    }
}

static void resize_alloc(ck_resize_mode mode, float *dst, int dst_w, int dst_h, const float *src, int src_w,
                         int src_h, int ch) {
    float *ws = malloc(sizeof(float) * ck_resize_ws_floats(mode, dst_w, dst_h, src_w, src_h, ch));
    CK_ASSERT(ws != NULL);
    ck_resize_ws(mode, dst, ch, dst_w, dst_h, src, src_w, src_h, ch, ws);
    free(ws);
}

int ck_resize_aa_max_taps(int in, int out) { return aa_max_taps(in, out); }

void ck_resize_aa_taps(int in, int out, int K, int32_t *idx, float *w, int32_t *cnt) {
    CK_ASSERT(K >= aa_max_taps(in, out));
    ck__axis a = {out, K, idx, w, cnt};
    taps_bilinear_aa(&a, in, out);
}

void ck_resize_lanczos4_taps(int in, int out, int32_t *idx, float *w) {
    int32_t *cnt = malloc(sizeof(int32_t) * (size_t)(out > 0 ? out : 1));
    CK_ASSERT(cnt != NULL);
    ck__axis a = {out, 8, idx, w, cnt};
    taps_lanczos4(&a, in, out);
    free(cnt);
}

void ck_resize_bilinear_aa(float *dst, int dst_w, int dst_h, const float *src, int src_w, int src_h, int ch) {
    resize_alloc(CK_RESIZE_BILINEAR_AA, dst, dst_w, dst_h, src, src_w, src_h, ch);
}

void ck_resize_lanczos4(float *dst, int dst_w, int dst_h, const float *src, int src_w, int src_h, int ch) {
    resize_alloc(CK_RESIZE_LANCZOS4, dst, dst_w, dst_h, src, src_w, src_h, ch);
}

void ck_resize_linear_cv(float *dst, int dst_w, int dst_h, const float *src, int src_w, int src_h, int ch) {
    resize_alloc(CK_RESIZE_LINEAR_CV, dst, dst_w, dst_h, src, src_w, src_h, ch);
}

void ck_resize_bicubic_torch(float *dst, int dst_w, int dst_h, const float *src, int src_w, int src_h, int ch) {
    resize_alloc(CK_RESIZE_BICUBIC_TORCH, dst, dst_w, dst_h, src, src_w, src_h, ch);
}
