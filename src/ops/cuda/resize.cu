/* Bilinear resize (align_corners=False, no antialias) of NHWC feature maps on CUDA, optionally
 * accumulating into y. ref: ATen UpSample.h area_pixel_compute_source_index and upsample_bilinear2d;
 * CPU reference ops/cpu/resize.c, whose tap arithmetic is reproduced operation for operation
 * (src = scale·(d + 0.5) − 0.5 with separate roundings, clamp at 0, i0 = ⌊src⌋ ≤ in − 1, second tap
 * clamped at the edge, λ1 = src − i0, λ0 = 1 − λ1), so both backends pick identical taps and weights.
 * One thread per 16-byte channel vector of an output pixel (per element when C does not allow it).
 * resize_sum: several sources resized onto one grid and summed in float32 before the one rounding. */
#include "ops/cuda/common.cuh"

#include <stdlib.h>

struct ck_tap {
    int   i0, i1;
    float l0, l1;
};

__device__ __forceinline__ ck_tap resize_tap(int d, int out, int in) {
    const float scale = __fdiv_rn((float)in, (float)out);
    float       src   = __fsub_rn(__fmul_rn(scale, __fadd_rn((float)d, 0.5f)), 0.5f);
    if (src < 0.0f) src = 0.0f;
    int i0 = (int)src;
    if (i0 > in - 1) i0 = in - 1;
    ck_tap t;
    t.i0 = i0;
    t.i1 = i0 + (i0 < in - 1 ? 1 : 0);
    t.l1 = __fsub_rn(src, (float)i0);
    t.l0 = __fsub_rn(1.0f, t.l1);
    return t;
}

template <typename T, int V>
__global__ void resize_kernel(T *__restrict__ y, const T *__restrict__ x, int H, int W, int C, int Ho, int Wo,
                              int accumulate, int64_t total) {
    const int ncv = C / V;
    CK_GRID_STRIDE(i, total) {
        const int     cv = (int)(i % ncv);
        const int64_t p  = i / ncv;
        const int     ox = (int)(p % Wo);
        const int64_t r  = p / Wo;
        const int     oy = (int)(r % Ho);
        const int64_t b  = r / Ho;
        const ck_tap  ty = resize_tap(oy, Ho, H), tx = resize_tap(ox, Wo, W);
        const T      *r0 = x + (b * H + ty.i0) * (int64_t)W * C + (int64_t)cv * V;
        const T      *r1 = x + (b * H + ty.i1) * (int64_t)W * C + (int64_t)cv * V;
        const ck_vec<T, V> va = ck_vload<T, V>(r0 + (int64_t)tx.i0 * C), vb = ck_vload<T, V>(r0 + (int64_t)tx.i1 * C);
        const ck_vec<T, V> vc = ck_vload<T, V>(r1 + (int64_t)tx.i0 * C), vd = ck_vload<T, V>(r1 + (int64_t)tx.i1 * C);
        ck_vec<T, V>       out;
        if (accumulate) out = ck_vload<T, V>(y + i * V);
#pragma unroll
        for (int j = 0; j < V; j++) {
            /* h0·(w0·a + w1·b) + h1·(w0·c + w1·d), the CPU's association */
            const float top = __fadd_rn(__fmul_rn(tx.l0, ck_ldf(va.v[j])), __fmul_rn(tx.l1, ck_ldf(vb.v[j])));
            const float bot = __fadd_rn(__fmul_rn(tx.l0, ck_ldf(vc.v[j])), __fmul_rn(tx.l1, ck_ldf(vd.v[j])));
            float       v   = __fadd_rn(__fmul_rn(ty.l0, top), __fmul_rn(ty.l1, bot));
            if (accumulate) v = __fadd_rn(ck_ldf(out.v[j]), v);
            out.v[j] = ck_stf<T>(v);
        }
        ck_vstore<T, V>(y + i * V, out);
    }
}

template <typename T>
static void launch(ck_cuda *cu, const ck_tensor *y, const ck_tensor *x, int accumulate) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], C = x->shape[3];
    const int64_t Ho = y->shape[1], Wo = y->shape[2];
    CK_ASSERT(H <= 0x7fffffff && W <= 0x7fffffff && C <= 0x7fffffff && Ho <= 0x7fffffff && Wo <= 0x7fffffff);
    constexpr int V    = ck_v16<T>::V;
    const int64_t npix = B * Ho * Wo;
    const int     vec  = C % V == 0 && ck_aligned(x->data, 16) && ck_aligned(y->data, 16);
    T            *Y    = (T *)y->data;       /* (B, Ho, Wo, C) */
    const T      *X    = (const T *)x->data; /* (B, H, W, C) */
    if (vec) {
        const int64_t n = npix * (C / V);
        resize_kernel<T, V><<<ck_grid_for(cu, n, 256), 256, 0, cu->stream>>>(Y, X, (int)H, (int)W, (int)C, (int)Ho,
                                                                              (int)Wo, accumulate, n);
    } else {
        const int64_t n = npix * C;
        resize_kernel<T, 1><<<ck_grid_for(cu, n, 256), 256, 0, cu->stream>>>(Y, X, (int)H, (int)W, (int)C, (int)Ho,
                                                                              (int)Wo, accumulate, n);
    }
    CK_KERNEL_CHECK(cu);
}

extern "C" void ck_resize_bilinear_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x, int accumulate) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(ck_is_float_dtype(x->dtype) && y->dtype == x->dtype && x->data != y->data);
    CK_DISPATCH_FLOAT(x->dtype, T, launch<T>(cu, y, x, accumulate));
}

/* ---- y = Σ_k resize(x_k), summed in float32, one rounding ---- */

struct ck_resize_srcs {
    const void *x[CK_RESIZE_SUM_MAX]; /* (B, h[k], w[k], C) */
    int         h[CK_RESIZE_SUM_MAX], w[CK_RESIZE_SUM_MAX];
    int         n;
};

template <typename T, int V>
__global__ void resize_sum_kernel(T *__restrict__ y, ck_resize_srcs src, int C, int Ho, int Wo, int64_t total) {
    const int ncv = C / V;
    CK_GRID_STRIDE(i, total) {
        const int     cv = (int)(i % ncv);
        const int64_t p  = i / ncv;
        const int     ox = (int)(p % Wo);
        const int64_t r  = p / Wo;
        const int     oy = (int)(r % Ho);
        const int64_t b  = r / Ho;
        float         acc[V];
#pragma unroll
        for (int j = 0; j < V; j++) acc[j] = 0.0f;
        for (int k = 0; k < src.n; k++) {
            const int     H = src.h[k], W = src.w[k];
            const ck_tap  ty = resize_tap(oy, Ho, H), tx = resize_tap(ox, Wo, W);
            const T      *x  = (const T *)src.x[k];
            const T      *r0 = x + (b * H + ty.i0) * (int64_t)W * C + (int64_t)cv * V;
            const T      *r1 = x + (b * H + ty.i1) * (int64_t)W * C + (int64_t)cv * V;
            const ck_vec<T, V> va = ck_vload<T, V>(r0 + (int64_t)tx.i0 * C), vb = ck_vload<T, V>(r0 + (int64_t)tx.i1 * C);
            const ck_vec<T, V> vc = ck_vload<T, V>(r1 + (int64_t)tx.i0 * C), vd = ck_vload<T, V>(r1 + (int64_t)tx.i1 * C);
#pragma unroll
            for (int j = 0; j < V; j++) {
                const float top = __fadd_rn(__fmul_rn(tx.l0, ck_ldf(va.v[j])), __fmul_rn(tx.l1, ck_ldf(vb.v[j])));
                const float bot = __fadd_rn(__fmul_rn(tx.l0, ck_ldf(vc.v[j])), __fmul_rn(tx.l1, ck_ldf(vd.v[j])));
                const float v   = __fadd_rn(__fmul_rn(ty.l0, top), __fmul_rn(ty.l1, bot));
                acc[j]          = k ? __fadd_rn(acc[j], v) : v;
            }
        }
        ck_vec<T, V> out;
#pragma unroll
        for (int j = 0; j < V; j++) out.v[j] = ck_stf<T>(acc[j]);
        ck_vstore<T, V>(y + i * V, out);
    }
}

/* The same sums, four horizontally adjacent output pixels per thread (one 16-byte channel vector each): when no
 * source is wider than the output, their taps span at most five source columns, which the thread loads once
 * each (a window of the last two columns per tap row, the requests being non-decreasing) instead of four times.
 * The per-pixel kernel reads each source vector about 12 times through L2 (0.50 ms for the decoder's 512-channel
 * sum at S = 2048, H200); this one about 3.5 times (not yet timed). Every output's taps, weights and order of
 * operations are the per-pixel kernel's: the same bits. */
template <typename T, int V> struct ck_col_window {
    int          col[2];
    ck_vec<T, V> top[2], bot[2];
    int          next;
    __device__ __forceinline__ void reset() { col[0] = col[1] = -1, next = 0; }
    /* the slot holding the two tap rows' vectors at source column c (r0, r1: the rows' channel-vector base
     * pointers), loading them on a miss into the older slot, or into the slot that is not `keep` (the first tap's,
     * still to be read) */
    __device__ __forceinline__ int fetch(int c, const T *r0, const T *r1, int C, int keep) {
        if (col[0] == c) return 0;
        if (col[1] == c) return 1;
        const int s = keep >= 0 ? keep ^ 1 : next;
        col[s]      = c;
        top[s]      = ck_vload<T, V>(r0 + (int64_t)c * C);
        bot[s]      = ck_vload<T, V>(r1 + (int64_t)c * C);
        next        = s ^ 1;
        return s;
    }
};

template <typename T, int V>
__global__ void resize_sum4_kernel(T *__restrict__ y, ck_resize_srcs src, int C, int Ho, int Wo, int64_t total) {
    const int ncv = C / V, nq = (Wo + 3) / 4;
    CK_GRID_STRIDE(i, total) {
        const int     cv = (int)(i % ncv);
        const int64_t p  = i / ncv;
        const int     q  = (int)(p % nq);
        const int64_t r  = p / nq;
        const int     oy = (int)(r % Ho);
        const int64_t b  = r / Ho;
        const int     ox0 = 4 * q, nx = Wo - ox0 < 4 ? Wo - ox0 : 4;
        float         acc[4][V];
        for (int k = 0; k < src.n; k++) {
            const int    H = src.h[k], W = src.w[k];
            const ck_tap ty = resize_tap(oy, Ho, H);
            const T     *x  = (const T *)src.x[k];
            const T     *r0 = x + (b * H + ty.i0) * (int64_t)W * C + (int64_t)cv * V;
            const T     *r1 = x + (b * H + ty.i1) * (int64_t)W * C + (int64_t)cv * V;
            ck_col_window<T, V> win;
            win.reset();
#pragma unroll
            for (int j = 0; j < 4; j++) {
                if (j >= nx) break;
                const ck_tap tx = resize_tap(ox0 + j, Wo, W);
                const int    a  = win.fetch(tx.i0, r0, r1, C, -1);
                const int    c  = win.fetch(tx.i1, r0, r1, C, a);
#pragma unroll
                for (int e = 0; e < V; e++) {
                    const float top = __fadd_rn(__fmul_rn(tx.l0, ck_ldf(win.top[a].v[e])),
                                                __fmul_rn(tx.l1, ck_ldf(win.top[c].v[e])));
                    const float bot = __fadd_rn(__fmul_rn(tx.l0, ck_ldf(win.bot[a].v[e])),
                                                __fmul_rn(tx.l1, ck_ldf(win.bot[c].v[e])));
                    const float v   = __fadd_rn(__fmul_rn(ty.l0, top), __fmul_rn(ty.l1, bot));
                    acc[j][e]       = k ? __fadd_rn(acc[j][e], v) : v;
                }
            }
        }
        T *yp = y + ((b * Ho + oy) * (int64_t)Wo + ox0) * C + (int64_t)cv * V;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            if (j >= nx) break;
            ck_vec<T, V> out;
#pragma unroll
            for (int e = 0; e < V; e++) out.v[e] = ck_stf<T>(acc[j][e]);
            ck_vstore<T, V>(yp + (int64_t)j * C, out);
        }
    }
}

template <typename T>
static void launch_sum(ck_cuda *cu, const ck_tensor *y, const ck_tensor *x, int n) {
    const int64_t B = y->shape[0], C = y->shape[3], Ho = y->shape[1], Wo = y->shape[2];
    CK_ASSERT(C <= 0x7fffffff && Ho <= 0x7fffffff && Wo <= 0x7fffffff);
    constexpr int  V   = ck_v16<T>::V;
    ck_resize_srcs src = {};
    int            vec = C % V == 0 && ck_aligned(y->data, 16);
    src.n              = n;
    for (int k = 0; k < n; k++) {
        CK_ASSERT(x[k].shape[1] <= 0x7fffffff && x[k].shape[2] <= 0x7fffffff);
        src.x[k] = x[k].data, src.h[k] = (int)x[k].shape[1], src.w[k] = (int)x[k].shape[2];
        vec      = vec && ck_aligned(x[k].data, 16);
    }
    const int64_t npix = B * Ho * Wo;
    T            *Y    = (T *)y->data; /* (B, Ho, Wo, C) */
    /* no source wider than y: four adjacent outputs' taps span ≤ 5 columns. Opt-in (CK_RESIZE_SUM4=1, read per
     * call) until it has been measured on a GPU; test_cuda_ops checks both kernels against the CPU and each other. */
    const char *opt = getenv("CK_RESIZE_SUM4");
    int         up  = opt && opt[0] == '1';
    for (int k = 0; k < n; k++) up = up && x[k].shape[2] <= Wo;
    if (vec && up) {
        const int64_t tot = B * Ho * ((Wo + 3) / 4) * (C / V);
        resize_sum4_kernel<T, V><<<ck_grid_for(cu, tot, 256), 256, 0, cu->stream>>>(Y, src, (int)C, (int)Ho, (int)Wo, tot);
    } else if (vec) {
        const int64_t tot = npix * (C / V);
        resize_sum_kernel<T, V><<<ck_grid_for(cu, tot, 256), 256, 0, cu->stream>>>(Y, src, (int)C, (int)Ho, (int)Wo, tot);
    } else {
        const int64_t tot = npix * C;
        resize_sum_kernel<T, 1><<<ck_grid_for(cu, tot, 256), 256, 0, cu->stream>>>(Y, src, (int)C, (int)Ho, (int)Wo, tot);
    }
    CK_KERNEL_CHECK(cu);
}

extern "C" void ck_resize_sum_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x, int n) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(ck_is_float_dtype(y->dtype) && n >= 1 && n <= CK_RESIZE_SUM_MAX);
    CK_DISPATCH_FLOAT(y->dtype, T, launch_sum<T>(cu, y, x, n));
}
