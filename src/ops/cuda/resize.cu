/* Bilinear resize (align_corners=False, no antialias) of NHWC feature maps on CUDA, optionally
 * accumulating into y. ref: ATen UpSample.h area_pixel_compute_source_index and upsample_bilinear2d;
 * CPU reference ops/cpu/resize.c, whose tap arithmetic is reproduced operation for operation
 * (src = scale·(d + 0.5) − 0.5 with separate roundings, clamp at 0, i0 = ⌊src⌋ ≤ in − 1, second tap
 * clamped at the edge, λ1 = src − i0, λ0 = 1 − λ1), so both backends pick identical taps and weights.
 * One thread per 16-byte channel vector of an output pixel (per element when C does not allow it).
 * resize_sum: several sources resized onto one grid and summed in float32 before the one rounding. */
#include "ops/cuda/common.cuh"

#include <stdlib.h>
#include <string.h>

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

/* One source row's horizontal taps at an output column: h = λ0·a + λ1·b (row: the source row at the output's
 * channel vector), the CPU's roundings. */
template <typename T, int V>
__device__ __forceinline__ void resize_hrow(float (&h)[V], const T *row, const ck_tap &tx, int C) {
    const ck_vec<T, V> a = ck_vload<T, V>(row + (int64_t)tx.i0 * C), b = ck_vload<T, V>(row + (int64_t)tx.i1 * C);
#pragma unroll
    for (int e = 0; e < V; e++) h[e] = __fadd_rn(__fmul_rn(tx.l0, ck_ldf(a.v[e])), __fmul_rn(tx.l1, ck_ldf(b.v[e])));
}

/* The vertical blend of the two rows' horizontal sums: μ0·top + μ1·bot, so that an output is
 * μ0·(λ0·a + λ1·b) + μ1·(λ0·c + λ1·d), the CPU's association. */
template <int V>
__device__ __forceinline__ void resize_vblend(float (&v)[V], const float (&top)[V], const float (&bot)[V], const ck_tap &ty) {
#pragma unroll
    for (int e = 0; e < V; e++) v[e] = __fadd_rn(__fmul_rn(ty.l0, top[e]), __fmul_rn(ty.l1, bot[e]));
}

/* Output vector i of a (B, Ho, Wo, C / V) grid of channel vectors: its channel vector, column, row and image. */
struct ck_out_vec {
    int     cv, ox, oy;
    int64_t b;
};
__device__ __forceinline__ ck_out_vec resize_out_vec(int64_t i, int ncv, int Wo, int Ho) {
    ck_out_vec o;
    o.cv            = (int)(i % ncv);
    const int64_t p = i / ncv;
    o.ox            = (int)(p % Wo);
    const int64_t r = p / Wo;
    o.oy            = (int)(r % Ho);
    o.b             = r / Ho;
    return o;
}

/* The bilinear value at output o of source x (B, H, W, C), per channel of o's vector. */
template <typename T, int V>
__device__ __forceinline__ void resize_at(float (&v)[V], const T *x, int H, int W, int C, const ck_out_vec &o, int Ho,
                                          int Wo) {
    const ck_tap ty = resize_tap(o.oy, Ho, H), tx = resize_tap(o.ox, Wo, W);
    const T     *img = x + o.b * H * (int64_t)W * C + (int64_t)o.cv * V; /* image b at channel vector cv */
    float        top[V], bot[V];
    resize_hrow<T, V>(top, img + ty.i0 * (int64_t)W * C, tx, C);
    resize_hrow<T, V>(bot, img + ty.i1 * (int64_t)W * C, tx, C);
    resize_vblend<V>(v, top, bot, ty);
}

template <typename T, int V>
__global__ void resize_kernel(T *__restrict__ y, const T *__restrict__ x, int H, int W, int C, int Ho, int Wo,
                              int accumulate, int64_t total) {
    CK_GRID_STRIDE(i, total) {
        float v[V];
        resize_at<T, V>(v, x, H, W, C, resize_out_vec(i, C / V, Wo, Ho), Ho, Wo);
        ck_vec<T, V> out;
        if (accumulate) out = ck_vload<T, V>(y + i * V);
#pragma unroll
        for (int j = 0; j < V; j++) out.v[j] = ck_stf<T>(accumulate ? __fadd_rn(ck_ldf(out.v[j]), v[j]) : v[j]);
        ck_vstore<T, V>(y + i * V, out);
    }
}

#ifndef CK_CUDA_EMU /* the launchers: host code that the emulator (dev/cuda/resize_emu.cpp) leaves out */
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
#endif

/* ---- y = Σ_k resize(x_k), summed in float32, one rounding ---- */

struct ck_resize_srcs {
    const void *x[CK_RESIZE_SUM_MAX]; /* (B, h[k], w[k], C) */
    int         h[CK_RESIZE_SUM_MAX], w[CK_RESIZE_SUM_MAX];
    int         n;
};

template <typename T, int V>
__global__ void resize_sum_kernel(T *__restrict__ y, ck_resize_srcs src, int C, int Ho, int Wo, int64_t total) {
    CK_GRID_STRIDE(i, total) {
        const ck_out_vec o = resize_out_vec(i, C / V, Wo, Ho);
        float            acc[V];
        for (int k = 0; k < src.n; k++) {
            float v[V];
            resize_at<T, V>(v, (const T *)src.x[k], src.h[k], src.w[k], C, o, Ho, Wo);
#pragma unroll
            for (int j = 0; j < V; j++) acc[j] = k ? __fadd_rn(acc[j], v[j]) : v[j];
        }
        ck_vec<T, V> out;
#pragma unroll
        for (int j = 0; j < V; j++) out.v[j] = ck_stf<T>(acc[j]);
        ck_vstore<T, V>(y + i * V, out);
    }
}

/* The same sums, each thread walking down kResizeRows output rows of one (column, channel vector): blockIdx.x =
 * (b, group of rows), the threads of blockIdx.y cover 256 of the row's (ox, channel vector) pairs, channel vector
 * fastest (coalesced). A thread's horizontal taps are fixed, so per source it keeps the horizontal sums of the two
 * source rows it last used and recomputes only a row the vertical taps move onto: an upsampling by f needs a new
 * source row every f output rows, where the per-pixel kernel computes both rows' sums for every output, with
 * 64-bit index divisions, two tap divisions per source and the source table copied to local memory (indexed by
 * a runtime k) besides: 0.50 ms for the decoder's 512-channel sum at S = 2048 on the H200, where the 268 MB it
 * writes take about 0.07 ms. A row's sums are those the per-pixel kernel computes for it, and every output's
 * taps, weights and order of operations are its: the same bits. N sources, unrolled (no indexing of the parameter block, no arrays in local memory). */
constexpr int kResizeRows = 8;

template <typename T, int V, int N>
__global__ void resize_sum_cols_kernel(T *__restrict__ y, ck_resize_srcs src, int C, int Ho, int Wo, int groups) {
    const unsigned ncv = (unsigned)(C / V);
    const unsigned j   = blockIdx.y * blockDim.x + threadIdx.x; /* (ox, cv) within a row */
    if (j >= (unsigned)Wo * ncv) return;
    const int     cv = (int)(j % ncv), ox = (int)(j / ncv);
    const int     oy0 = (int)(blockIdx.x % (unsigned)groups) * kResizeRows;
    const int64_t b   = blockIdx.x / (unsigned)groups;
    const int     oy1 = oy0 + kResizeRows < Ho ? oy0 + kResizeRows : Ho;
    ck_tap        tx[N];
    const T      *img[N]; /* source k's image b at channel vector cv: (H_k, W_k, C) */
    int           ia[N], ib[N]; /* the source rows whose sums ha, hb hold */
    float         ha[N][V], hb[N][V];
#pragma unroll
    for (int k = 0; k < N; k++) {
        tx[k]  = resize_tap(ox, Wo, src.w[k]);
        img[k] = (const T *)src.x[k] + b * src.h[k] * (int64_t)src.w[k] * C + (int64_t)cv * V;
        ia[k] = ib[k] = -1;
    }
    T *yp = y + ((b * Ho + oy0) * (int64_t)Wo + ox) * C + (int64_t)cv * V;
    for (int oy = oy0; oy < oy1; oy++, yp += (int64_t)Wo * C) {
        float acc[V];
#pragma unroll
        for (int k = 0; k < N; k++) {
            const ck_tap  ty  = resize_tap(oy, Ho, src.h[k]);
            const int64_t rowstride = (int64_t)src.w[k] * C;
            if (ty.i0 != ia[k]) {
                if (ty.i0 == ib[k]) {
#pragma unroll
                    for (int e = 0; e < V; e++) ha[k][e] = hb[k][e];
                } else {
                    resize_hrow<T, V>(ha[k], img[k] + ty.i0 * rowstride, tx[k], C);
                }
                ia[k] = ty.i0;
            }
            if (ty.i1 != ib[k]) {
                if (ty.i1 == ty.i0) {
#pragma unroll
                    for (int e = 0; e < V; e++) hb[k][e] = ha[k][e];
                } else {
                    resize_hrow<T, V>(hb[k], img[k] + ty.i1 * rowstride, tx[k], C);
                }
                ib[k] = ty.i1;
            }
            float v[V];
            resize_vblend<V>(v, ha[k], hb[k], ty);
#pragma unroll
            for (int e = 0; e < V; e++) acc[e] = k ? __fadd_rn(acc[e], v[e]) : v[e];
        }
        ck_vec<T, V> out;
#pragma unroll
        for (int e = 0; e < V; e++) out.v[e] = ck_stf<T>(acc[e]);
        ck_vstore<T, V>(yp, out);
    }
}

#ifndef CK_CUDA_EMU
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
    /* the column-walking kernel where its grid can be formed (images × row groups in grid.x, a row's vectors in
     * ≤ 65535 blocks of grid.y); CK_RESIZE_SUM=pixel (read per call) takes the per-pixel kernel, for A/B runs */
    const char   *opt    = getenv("CK_RESIZE_SUM");
    const int64_t rowv   = Wo * (C / V), groups = (Ho + kResizeRows - 1) / kResizeRows;
    const int     thr    = rowv >= 256 ? 256 : (int)((rowv + 31) / 32 * 32);
    const int64_t blocks = (rowv + thr - 1) / thr;
    if (vec && !(opt && !strcmp(opt, "pixel")) && B * groups <= 0x7fffffff && blocks <= 65535) {
        const dim3 grid((unsigned)(B * groups), (unsigned)blocks);
#define CK_RESIZE_COLS(N_)                                                                                          \
    resize_sum_cols_kernel<T, V, N_><<<grid, thr, 0, cu->stream>>>(Y, src, (int)C, (int)Ho, (int)Wo, (int)groups)
        if (n == 1) CK_RESIZE_COLS(1);
        else if (n == 2) CK_RESIZE_COLS(2);
        else if (n == 3) CK_RESIZE_COLS(3);
        else CK_RESIZE_COLS(4);
#undef CK_RESIZE_COLS
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
#endif
