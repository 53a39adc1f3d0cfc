/* The fused refiner's ops on CUDA (ops_list.h conv3x3_gn, gn_moments_stats); CPU reference ops/cpu/conv_gn.c.
 *
 * conv3x3_gn: the Hopper kernel of refiner_conv.cu (wgmma implicit GEMM, GroupNorm + ReLU on the operand
 * load (with the residual when the previous block's GroupNorm 2 is folded in; the formed input stored to a_out),
 * moments in the epilogue) wherever it runs: 16-bit maps, 64 output channels in 8 groups, from 64 input
 * channels (8 groups when normalized; dilation 1, 2, 4 or 8) or from the stem's 8 (dilation 1, no GroupNorm in
 * front), a compute capability 9.0 device with the sm_90a image. Elsewhere a plain kernel (one thread per
 * output, the same act on load, float32 sums) and a moments kernel: correct everywhere, not fast;
 * ck_conv3x3_gn_cuda_fast says which one a call gets, so that the model only takes the fused path where it
 * pays.
 * gn_moments_stats: the two-pass merge of the CPU op as fixed-order sums in float64, in two levels so that the
 * whole device takes part (one block per (sample, group) alone left 124 of 132 SMs idle: 131 µs a call at 2048²):
 * chunks of GNMS_CHUNK segments each merge into a (count, mean, M2) partial, one block per (chunk, sample,
 * group); then one block per (sample, group) merges its chunks' partials the same way. The chunking depends only
 * on the map's size, so the result is the same bits every run. Deterministic: no atomics anywhere. */
#include "ops/cuda/common.cuh"
#include "ops/cuda/refiner_conv.h"

#define RC_THREADS 256
#define GNMS_THREADS 512
#define GNMS_CHUNK GNMS_THREADS /* segments per partial: one per thread of the first level */

/* act(x) at element e = (pixel, channel ic) of sample bi: GroupNorm with frozen statistics (per group of CGx
 * channels), the residual, ReLU, rounded to T (the groupnorm op's operations); x itself without statistics. */
template <typename T>
__device__ __forceinline__ float act_at(const T *__restrict__ x, const T *__restrict__ res, int64_t e, int ic, int bi,
                                        const float *__restrict__ st, const float *__restrict__ gm,
                                        const float *__restrict__ bt, int CGx, int gx) {
    float v = ck_ldf(x[e]);
    if (!st) return v;
    const int   g  = bi * gx + ic / CGx;
    const float sc = __fmul_rn(st[2 * g + 1], gm[ic]);
    const float sh = __fsub_rn(bt[ic], __fmul_rn(st[2 * g], sc));
    v              = __fadd_rn(__fmul_rn(v, sc), sh);
    if (res) v += ck_ldf(res[e]);
    return ck_ldf(ck_stf<T>(v > 0.0f ? v : 0.0f));
}

/* a_out (B,H,W,C) rows [row0, row0 + h) = act(x), one thread per element (the plain path's a_out). */
template <typename T>
__global__ void __launch_bounds__(RC_THREADS)
    act_rows_plain_kernel(T *__restrict__ a_out, const T *__restrict__ x, const T *__restrict__ res,
                          const float *__restrict__ st, const float *__restrict__ gm, const float *__restrict__ bt,
                          int H, int W, int C, int CGx, int gx, int row0, int h, int B) {
    const int64_t n = (int64_t)B * h * W * C;
    CK_GRID_STRIDE(i, n) {
        const int     ic = (int)(i % C);
        const int64_t pix = i / C;
        const int     px = (int)(pix % W), r = (int)((pix / W) % h), bi = (int)(pix / ((int64_t)W * h));
        const int64_t e  = (((int64_t)bi * H + row0 + r) * W + px) * C + ic;
        a_out[e]         = ck_stf<T>(act_at(x, res, e, ic, bi, st, gm, bt, CGx, gx));
    }
}

/* y (B,h,W,OC) rows [row0, row0 + h) of conv3×3(act(x (B,H,W,C))) + b, one thread per output element; act's
 * statistics per group of CGx input channels. */
template <typename T>
__global__ void __launch_bounds__(RC_THREADS)
    conv3x3_act_plain_kernel(T *__restrict__ y, const T *__restrict__ x, const T *__restrict__ res,
                             const T *__restrict__ w, const float *__restrict__ b, const float *__restrict__ st,
                             const float *__restrict__ gm, const float *__restrict__ bt, int B, int H, int W, int C,
                             int OC, int CGx, int gx, int row0, int h, int d) {
    const int64_t n = (int64_t)B * h * W * OC;
    CK_GRID_STRIDE(i, n) {
        const int     oc = (int)(i % OC);
        const int64_t pix = i / OC;
        const int     px = (int)(pix % W), r = (int)((pix / W) % h), bi = (int)(pix / ((int64_t)W * h));
        const int     yy = row0 + r;
        float         s  = b[oc];
        for (int ky = 0; ky < 3; ky++) {
            const int iy = yy + (ky - 1) * d;
            if (iy < 0 || iy >= H) continue;
            for (int kx = 0; kx < 3; kx++) {
                const int ix = px + (kx - 1) * d;
                if (ix < 0 || ix >= W) continue;
                const int64_t e0 = (((int64_t)bi * H + iy) * W + ix) * C;
                for (int ic = 0; ic < C; ic++)
                    s += act_at(x, res, e0 + ic, ic, bi, st, gm, bt, CGx, gx) *
                         ck_ldf(w[((int64_t)oc * C + ic) * 9 + ky * 3 + kx]);
            }
        }
        y[i] = ck_stf<T>(s);
    }
}

/* moments (B, H, nseg, groups, 2) of y's rows: one block per (segment, row, sample), groups in turn, two
 * fixed-order block sums in double (mean, then Σ(v − mean)²). */
template <typename T>
__global__ void __launch_bounds__(RC_THREADS)
    gn_row_moments_kernel(float2 *__restrict__ mom, const T *__restrict__ y, int H, int W, int C, int CG, int groups,
                          int row0, int h, int nseg) {
    __shared__ double sh[RC_THREADS];
    const int     seg = blockIdx.x, r = blockIdx.y, bi = blockIdx.z;
    const int     p0 = seg * CK_GN_SEG, np = W - p0 < CK_GN_SEG ? W - p0 : CK_GN_SEG, n = np * CG;
    const T      *yr = y + (((int64_t)bi * h + r) * W + p0) * C;
    for (int g = 0; g < groups; g++) {
        double mean = 0.0;
        for (int pass = 0; pass < 2; pass++) {
            double a = 0.0;
            for (int e = threadIdx.x; e < n; e += RC_THREADS) {
                const double v = ck_ldf(yr[(int64_t)(e / CG) * C + g * CG + e % CG]);
                a += pass ? (v - mean) * (v - mean) : v;
            }
            sh[threadIdx.x] = a;
            __syncthreads();
            for (int o = RC_THREADS / 2; o > 0; o >>= 1) {
                if ((int)threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
                __syncthreads();
            }
            if (pass == 0) mean = sh[0] / n;
            else if (threadIdx.x == 0)
                mom[(((int64_t)bi * H + row0 + r) * nseg + seg) * groups + g] = make_float2((float)mean, (float)sh[0]);
            __syncthreads();
        }
    }
}

/* The fixed-order block sum of every thread's `a` (a tree over GNMS_THREADS slots); the result in all threads. */
__device__ double block_sum_fixed(double a, double *sh) {
    sh[threadIdx.x] = a;
    __syncthreads();
    for (int o = GNMS_THREADS / 2; o > 0; o >>= 1) {
        if ((int)threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
        __syncthreads();
    }
    const double r = sh[0];
    __syncthreads();
    return r;
}

/* Values in segment s of a row (the last one may be partial), times the group's channels. */
__device__ __forceinline__ double seg_values(int s, int nseg, int width, int gsize) {
    return (double)(s + 1 < nseg ? CK_GN_SEG : width - s * CK_GN_SEG) * gsize;
}

/* (mean, rstd) of one (sample, group) into stats[2·i], from its mean and variance. */
__device__ __forceinline__ void store_stats(float *stats, int i, double mean, double var, float eps) {
    stats[2 * i]     = (float)mean;
    stats[2 * i + 1] = (float)(1.0 / sqrt((var > 0.0 ? var : 0.0) + (double)eps));
}

/* First level: chunk c of sample bi's group g, segments e in [c·GNMS_CHUNK, …) of the H·nseg (row, segment)
 * moments, merged into part[(bi·groups + g)·nchunk + c] = (count, mean, M2). */
__global__ void __launch_bounds__(GNMS_THREADS)
    gn_moments_partial_kernel(double *__restrict__ part, const float2 *__restrict__ mom, int H, int nseg, int groups,
                              int width, int gsize, int nchunk) {
    __shared__ double sh[GNMS_THREADS];
    const int     c = blockIdx.x, bg = blockIdx.y, bi = bg / groups, g = bg % groups;
    const int64_t ne = (int64_t)H * nseg, e0 = (int64_t)c * GNMS_CHUNK;
    const int64_t e  = e0 + threadIdx.x; /* this thread's segment: none past the map's end (nb = 0) */
    double        nb = 0.0, mx = 0.0, my = 0.0;
    if (e < ne) {
        const int    s = (int)(e % nseg);
        const float2 m = mom[((int64_t)bi * ne + e) * groups + g];
        nb = seg_values(s, nseg, width, gsize), mx = m.x, my = m.y;
    }
    const double n    = block_sum_fixed(nb, sh);
    const double mean = block_sum_fixed(nb * mx, sh) / n;
    const double dl   = mx - mean;
    const double m2   = block_sum_fixed(my + nb * dl * dl, sh);
    if (threadIdx.x == 0) {
        double *o = part + 3 * ((int64_t)bg * nchunk + c);
        o[0] = n, o[1] = mean, o[2] = m2;
    }
}

/* Second level: one block per (sample, group) merges its nchunk partials into (mean, rstd). */
__global__ void __launch_bounds__(GNMS_THREADS)
    gn_partials_stats_kernel(float *__restrict__ stats, const double *__restrict__ part, int nchunk, float eps) {
    __shared__ double sh[GNMS_THREADS];
    const double *pb = part + 3 * (int64_t)blockIdx.x * nchunk;
    double        sn = 0.0, sm = 0.0;
    for (int c = threadIdx.x; c < nchunk; c += GNMS_THREADS) sn += pb[3 * c], sm += pb[3 * c] * pb[3 * c + 1];
    const double n = block_sum_fixed(sn, sh), mean = block_sum_fixed(sm, sh) / n;
    double       a = 0.0;
    for (int c = threadIdx.x; c < nchunk; c += GNMS_THREADS) {
        const double dl = pb[3 * c + 1] - mean;
        a += pb[3 * c + 2] + pb[3 * c] * dl * dl;
    }
    const double var = block_sum_fixed(a, sh) / n;
    if (threadIdx.x == 0) store_stats(stats, blockIdx.x, mean, var, eps);
}

/* The one-level merge: where the scratch cannot hold the partials. */
__global__ void __launch_bounds__(GNMS_THREADS)
    gn_moments_stats_kernel(float *__restrict__ stats, const float2 *__restrict__ mom, int H, int nseg, int groups,
                            int width, int gsize, float eps) {
    __shared__ double sh[GNMS_THREADS];
    const int     bi = blockIdx.x / groups, g = blockIdx.x % groups;
    const int64_t ne  = (int64_t)H * nseg;
    const double  tot = (double)H * width * gsize;
    const float2 *mb  = mom + (int64_t)bi * ne * groups + g; /* element e at mb[e · groups] */
    double        mean = 0.0;
    for (int pass = 0; pass < 2; pass++) {
        double a = 0.0;
#pragma unroll 4
        for (int64_t e = threadIdx.x; e < ne; e += GNMS_THREADS) {
            const double nb = seg_values((int)(e % nseg), nseg, width, gsize);
            const float2 m  = mb[e * groups];
            const double dl = (double)m.x - mean;
            a += pass ? (double)m.y + nb * dl * dl : nb * (double)m.x;
        }
        const double sum = block_sum_fixed(a, sh);
        if (pass == 0) mean = sum / tot;
        else if (threadIdx.x == 0) store_stats(stats, blockIdx.x, mean, sum / tot, eps);
    }
}

/* Whether maps of this dtype with `channels` outputs in `groups` groups can take the Hopper kernel on this
 * device (CK_REFINER_CONV=plain: never). The one predicate behind both ck_conv3x3_gn_cuda_fast and fused_args. */
static int hopper_kernel_serves(const ck_cuda *cu, ck_dtype dt, int64_t channels, int64_t groups) {
    const char *env = getenv("CK_REFINER_CONV");
    return !(env && !strcmp(env, "plain")) && (dt == CK_DTYPE_F16 || dt == CK_DTYPE_BF16) &&
           channels == CK_RCONV_C && groups == CK_RCONV_GROUPS && cu->cc_major == 9 && cu->cc_minor == 0;
}

/* The fused kernel's arguments for this call, or 0 where it cannot serve it. */
static int fused_args(const ck_cuda *cu, ck__rconv_args *a, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w,
                      const ck_tensor *b, int dilation, int row0, const ck_tensor *st, const ck_tensor *gamma,
                      const ck_tensor *beta, const ck_tensor *residual, const ck_tensor *a_out,
                      const ck_tensor *moments) {
    const int64_t B = x->shape[0], IC = x->shape[3];
    if (!hopper_kernel_serves(cu, x->dtype, y->shape[3], moments->shape[3])) return 0;
    if (IC == 64 && st && ck_tensor_numel(st) != B * CK_RCONV_GROUPS * 2) return 0; /* act over 8 groups only */
    if (!(IC == 64 || (IC == 8 && !st && dilation == 1))) return 0;
    memset(a, 0, sizeof *a);
    a->x = x->data, a->y = y->data, a->w = w->data, a->bias = (const float *)b->data;
    a->stats = st ? (const float *)st->data : NULL;
    a->residual = residual ? residual->data : NULL, a->a_out = a_out ? a_out->data : NULL;
    a->gamma = st ? (const float *)gamma->data : NULL, a->beta = st ? (const float *)beta->data : NULL;
    a->moments = (float *)moments->data;
    a->B = (int)B, a->H = (int)x->shape[1], a->W = (int)x->shape[2], a->row0 = row0, a->h = (int)y->shape[1];
    a->dilation = dilation, a->in_channels = (int)IC, a->bf16 = x->dtype == CK_DTYPE_BF16, a->sm_count = cu->sm_count;
    return 1;
}

extern "C" int ck_conv3x3_gn_cuda_fast(ck_backend *be, ck_dtype dt, int channels, int groups) {
    return hopper_kernel_serves(ck_cuda_of(be), dt, channels, groups);
}

extern "C" void ck_conv3x3_gn_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w,
                                   const ck_tensor *b, int dilation, int row0, const ck_tensor *x_stats,
                                   const ck_tensor *gamma, const ck_tensor *beta, const ck_tensor *residual,
                                   const ck_tensor *a_out, const ck_tensor *moments) {
    ck_cuda       *cu = ck_cuda_of(be);
    ck__rconv_args a;
    if (fused_args(cu, &a, y, x, w, b, dilation, row0, x_stats, gamma, beta, residual, a_out, moments) &&
        ck__refiner_conv(&a, cu->stream)) {
        CK_KERNEL_CHECK(cu);
        return;
    }
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], C = x->shape[3], h = y->shape[1];
    const int64_t OC = y->shape[3];
    const int     groups = (int)moments->shape[3], nseg = (int)moments->shape[2];
    const int     gx = x_stats ? (int)(ck_tensor_numel(x_stats) / (2 * B)) : 1;
    CK_ASSERT(B <= 65535 && h <= 65535 && B * H * W * (C > OC ? C : OC) < ((int64_t)1 << 40));
    const float *st = x_stats ? (const float *)x_stats->data : NULL;
    const float *gm = x_stats ? (const float *)gamma->data : NULL, *bt = x_stats ? (const float *)beta->data : NULL;
    CK_DISPATCH_FLOAT(x->dtype, T, {
        const T *res = residual ? (const T *)residual->data : NULL;
        conv3x3_act_plain_kernel<T><<<ck_grid_for(cu, B * h * W * OC, RC_THREADS), RC_THREADS, 0, cu->stream>>>(
            (T *)y->data, (const T *)x->data, res, (const T *)w->data, (const float *)b->data, st, gm, bt, (int)B,
            (int)H, (int)W, (int)C, (int)OC, (int)(C / gx), gx, row0, (int)h, dilation);
        CK_KERNEL_CHECK(cu);
        if (a_out) {
            act_rows_plain_kernel<T><<<ck_grid_for(cu, B * h * W * C, RC_THREADS), RC_THREADS, 0, cu->stream>>>(
                (T *)a_out->data, (const T *)x->data, res, st, gm, bt, (int)H, (int)W, (int)C, (int)(C / gx), gx, row0,
                (int)h, (int)B);
            CK_KERNEL_CHECK(cu);
        }
        gn_row_moments_kernel<T><<<dim3((unsigned)nseg, (unsigned)h, (unsigned)B), RC_THREADS, 0, cu->stream>>>(
            (float2 *)moments->data, (const T *)y->data, (int)H, (int)W, (int)OC, (int)(OC / groups), groups, row0,
            (int)h, nseg);
        CK_KERNEL_CHECK(cu);
    });
}

extern "C" void ck_gn_moments_stats_cuda(ck_backend *be, const ck_tensor *stats, const ck_tensor *moments, int width,
                                         int group_size, float eps) {
    ck_cuda  *cu = ck_cuda_of(be);
    const int B = (int)moments->shape[0], H = (int)moments->shape[1], nseg = (int)moments->shape[2];
    const int groups = (int)moments->shape[3];
    const int64_t nchunk = ((int64_t)H * nseg + GNMS_CHUNK - 1) / GNMS_CHUNK;
    size_t        scratch_bytes = 0;
    double       *part = (double *)ck_cuda_scratch(be, &scratch_bytes);
    if (nchunk <= 65535 && (size_t)nchunk * B * groups * 3 * sizeof(double) <= scratch_bytes) {
        gn_moments_partial_kernel<<<dim3((unsigned)nchunk, (unsigned)(B * groups)), GNMS_THREADS, 0, cu->stream>>>(
            part, (const float2 *)moments->data, H, nseg, groups, width, group_size, (int)nchunk);
        CK_KERNEL_CHECK(cu);
        gn_partials_stats_kernel<<<(unsigned)(B * groups), GNMS_THREADS, 0, cu->stream>>>((float *)stats->data, part,
                                                                                          (int)nchunk, eps);
        CK_KERNEL_CHECK(cu);
        return;
    }
    gn_moments_stats_kernel<<<(unsigned)(B * groups), GNMS_THREADS, 0, cu->stream>>>(
        (float *)stats->data, (const float2 *)moments->data, H, nseg, groups, width, group_size, eps);
    CK_KERNEL_CHECK(cu);
}
