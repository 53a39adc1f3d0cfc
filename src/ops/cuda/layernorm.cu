/* LayerNorm over the last dim on CUDA (biased variance, eps inside the sqrt, affine).
 * ref: torch.nn.LayerNorm; CPU reference ops/cpu/norm.c.
 *
 * Main path: 8, 16 or 32 lanes per row (layernorm_rows_kernel, below; rows of up to 128 vectors), else one warp
 * per row; the row held in registers as 16-byte vectors (C = 112..896 in the model), two-pass statistics in fp32
 * from registers (mean, then Σ(x − mean)²: no E[x²] − mean² cancellation), one read and one write of the row. Rows that do not split into 16-byte
 * vectors, or are longer than the register budget, take a block-per-row path that re-reads the row from
 * memory (odd test sizes only). The output is formed in the CPU's order, ((x − mean)·rstd)·γ + β, without
 * FMA contraction, so fp32 results match the reference to rounding of the statistics. */
#include "ops/cuda/common.cuh"

#include <stdlib.h>

#define CK_LN_WARPS 4 /* rows per block on the warp path */

__device__ __forceinline__ float ln_out(float x, float mean, float rstd, float g, float b) {
    return __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(x, mean), rstd), g), b);
}

/* NCH: 16-byte vectors per lane (row of C = nvec·V elements, nvec ≤ 32·NCH). */
/* With `stats`, the row's (mean, rstd) go there instead of y (the layernorm_linear op's prologue: the same
 * statistics, bit for bit, as the normalized map it would have written). */
template <typename T, int NCH>
__global__ void layernorm_warp_kernel(T *y, const T *x, const float *__restrict__ gamma,
                                      const float *__restrict__ beta, int64_t M, int C, float eps,
                                      float2 *__restrict__ stats) {
    constexpr int V    = ck_v16<T>::V;
    const int     lane = threadIdx.x & 31;
    const int64_t row  = (int64_t)blockIdx.x * CK_LN_WARPS + (threadIdx.x >> 5);
    if (row >= M) return;
    const int nvec = C / V;
    const T  *xr   = x + row * C; /* (C) */
    float     v[NCH][V];
    float     sum = 0.0f;
#pragma unroll
    for (int j = 0; j < NCH; j++) {
        const int ci = lane + 32 * j;
        if (ci < nvec) {
            ck_vec<T, V> t = ck_vload<T, V>(xr + (int64_t)ci * V);
#pragma unroll
            for (int e = 0; e < V; e++) {
                v[j][e] = ck_ldf(t.v[e]);
                sum += v[j][e];
            }
        }
    }
    const float mean = ck_warp_sum(sum) / (float)C;
    float       sq   = 0.0f;
#pragma unroll
    for (int j = 0; j < NCH; j++) {
        if (lane + 32 * j < nvec) {
#pragma unroll
            for (int e = 0; e < V; e++) {
                const float d = v[j][e] - mean;
                sq += d * d;
            }
        }
    }
    const float var  = ck_warp_sum(sq) / (float)C;
    const float rstd = 1.0f / sqrtf(var + eps);
    if (stats) {
        if (lane == 0) stats[row] = make_float2(mean, rstd);
        return;
    }
    T *yr = y + row * C; /* (C) */
#pragma unroll
    for (int j = 0; j < NCH; j++) {
        const int ci = lane + 32 * j;
        if (ci < nvec) {
            ck_vec<T, V> t;
#pragma unroll
            for (int e = 0; e < V; e++) {
                const int c = ci * V + e;
                t.v[e]      = ck_stf<T>(ln_out(v[j][e], mean, rstd, gamma[c], beta[c]));
            }
            ck_vstore<T, V>(yr + (int64_t)ci * V, t);
        }
    }
}

/* Several rows per warp (CK_LN_ROWS=1 or exact, where the rows fit; read per call): G lanes per row
 * (8, 16 or 32), 32/G rows per warp, NCH vectors per lane. The one-row-per-warp kernel keeps only 14 of 32 lanes
 * busy at C = 112 (the first stage's rows, 224 bytes) and too few bytes in flight per SM to reach the memory's
 * bandwidth (90 µs for 262,144 rows at S = 2048 where the traffic alone takes ~36 µs, H200; the model 0.5 ms
 * faster at 2048 with this kernel, H100, 2026-12-05). The same two-pass statistics and output order; the sums
 * are reduced over the row's G lanes, so they round in another order. With `stats`, as the warp kernel. */
template <int G> __device__ __forceinline__ float ln_group_sum(float v) {
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename T, int NCH, int G>
__global__ void layernorm_rows_kernel(T *y, const T *x, const float *__restrict__ gamma,
                                      const float *__restrict__ beta, int64_t M, int C, float eps,
                                      float2 *__restrict__ stats) {
    constexpr int V = ck_v16<T>::V, RPW = 32 / G;
    const int     lane = threadIdx.x & 31, gl = lane % G;
    const int64_t row  = ((int64_t)blockIdx.x * CK_LN_WARPS + (threadIdx.x >> 5)) * RPW + lane / G;
    const bool    live = row < M; /* every lane stays for the shuffles */
    const int     nvec = C / V;
    const T      *xr   = x + (live ? row : 0) * C; /* (C) */
    float         v[NCH][V];
    float         sum = 0.0f;
#pragma unroll
    for (int j = 0; j < NCH; j++) {
        const int ci = gl + G * j;
        if (live && ci < nvec) {
            ck_vec<T, V> t = ck_vload<T, V>(xr + (int64_t)ci * V);
#pragma unroll
            for (int e = 0; e < V; e++) {
                v[j][e] = ck_ldf(t.v[e]);
                sum += v[j][e];
            }
        }
    }
    const float mean = ln_group_sum<G>(sum) / (float)C;
    float       sq   = 0.0f;
#pragma unroll
    for (int j = 0; j < NCH; j++) {
        if (live && gl + G * j < nvec) {
#pragma unroll
            for (int e = 0; e < V; e++) {
                const float d = v[j][e] - mean;
                sq += d * d;
            }
        }
    }
    const float var  = ln_group_sum<G>(sq) / (float)C;
    const float rstd = 1.0f / sqrtf(var + eps);
    if (!live) return;
    if (stats) {
        if (gl == 0) stats[row] = make_float2(mean, rstd);
        return;
    }
    T *yr = y + row * C; /* (C) */
#pragma unroll
    for (int j = 0; j < NCH; j++) {
        const int ci = gl + G * j;
        if (ci < nvec) {
            ck_vec<T, V> t;
#pragma unroll
            for (int e = 0; e < V; e++) {
                const int c = ci * V + e;
                t.v[e]      = ck_stf<T>(ln_out(v[j][e], mean, rstd, gamma[c], beta[c]));
            }
            ck_vstore<T, V>(yr + (int64_t)ci * V, t);
        }
    }
}

/* Which kernel a call takes (CK_LN_ROWS, read at every call: A/B runs and the op tests switch it):
 *   0: one row per warp everywhere;
 *   1: several rows per warp, G = 8/16/32 lanes per row for up to 32/64/128 vectors. It was the default for a day,
 *      0.5 ms faster at 2048 (H100), but with it the fp16 precision gate's alpha maximum came out 1.13-1.15×
 *      PyTorch fp16's at 512/1024/2048 (bound 1.1), against 0.90-0.99× with one row per warp, in the same call
 *      (docs/benchmarks/2026-12-06-h100.md, run B: the same two-pass sums in another order, so the maximum's move
 *      is the gate's sensitivity to rounding, but the gate decides);
 *   unset or exact, the default: several rows per warp only where that gives the one-row kernel's bits: rows of at
 *      most 16 vectors (the first stage's C = 112 in 16 bits, the largest LayerNorms), one vector per lane over
 *      G = 8 or 16 lanes; one row per warp elsewhere. The one-row kernel's lanes beyond 16 (or 8) hold zeros, and
 *      its butterfly sum (xor 16, 8, 4, 2, 1) adds those first, exactly, then sums the same lanes in the same order
 *      as the G-lane butterfly (xor G/2 … 1). The op test checks the bits against CK_LN_ROWS=0; the precision gate
 *      gave the same distances; 0.2 ms faster at 2048 and 0.14 ms for 512 × 8 (H100, 2026-12-06, run C of
 *      docs/benchmarks/2026-12-06-h100.md). */
enum { LN_WARP = 0, LN_ROWS = 1, LN_ROWS_EXACT = 2 };
static int rows_mode(void) {
    const char *e = getenv("CK_LN_ROWS");
    if (!e || !*e || !strcmp(e, "exact")) return LN_ROWS_EXACT;
    return e[0] == '1' ? LN_ROWS : LN_WARP;
}

/* Launches the several-rows kernel for nvec ≤ 128 vectors per row (CK_LN_ROWS=exact, the default: ≤ 16); 0 when
 * the shape is not one it takes or CK_LN_ROWS=0. */
template <typename T>
static int launch_rows(ck_cuda *cu, T *Y, const T *X, const float *g, const float *b, int64_t M, int C, float eps,
                       int64_t nvec, float2 *stats) {
    /* exact: one vector per lane, the one-row kernel's order (see rows_mode); the dispatch below then runs at most
     * one vector per lane even where its template allows two */
    const int mode = rows_mode();
    const int G    = mode == LN_WARP         ? 0
                     : mode == LN_ROWS_EXACT ? (nvec <= 8 ? 8 : nvec <= 16 ? 16 : 0)
                                             : (nvec <= 32 ? 8 : nvec <= 64 ? 16 : nvec <= 128 ? 32 : 0);
    if (!G) return 0;
    const int     nch  = (int)((nvec + G - 1) / G); /* 1..4 */
    const int64_t rows = (int64_t)CK_LN_WARPS * (32 / G), grid = (M + rows - 1) / rows;
    CK_ASSERT(grid <= 0x7fffffff);
#define CK_LN_ROWS_LAUNCH(NCH_, G_)                                                                                 \
    layernorm_rows_kernel<T, NCH_, G_><<<(unsigned)grid, 32 * CK_LN_WARPS, 0, cu->stream>>>(Y, X, g, b, M, C, eps, stats)
    if (G == 8) {
        if (nch == 1) CK_LN_ROWS_LAUNCH(1, 8);
        else if (nch == 2) CK_LN_ROWS_LAUNCH(2, 8);
        else CK_LN_ROWS_LAUNCH(4, 8);
    } else if (G == 16) {
        if (nch <= 2) CK_LN_ROWS_LAUNCH(2, 16);
        else CK_LN_ROWS_LAUNCH(4, 16);
    } else {
        if (nch <= 2) CK_LN_ROWS_LAUNCH(2, 32);
        else CK_LN_ROWS_LAUNCH(4, 32);
    }
#undef CK_LN_ROWS_LAUNCH
    return 1;
}

#define CK_LN_BLOCK 256

__device__ float ln_block_sum(float v, float *sh) {
    v = ck_warp_sum(v);
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads(); /* sh may still be read from the previous call */
    if (lane == 0) sh[w] = v;
    __syncthreads();
    float t = 0.0f;
    if (w == 0) {
        t = lane < (int)(blockDim.x >> 5) ? sh[lane] : 0.0f;
        t = ck_warp_sum(t);
        if (lane == 0) sh[0] = t;
    }
    __syncthreads();
    return sh[0];
}

template <typename T>
__global__ void layernorm_block_kernel(T *y, const T *x, const float *__restrict__ gamma,
                                       const float *__restrict__ beta, int C, float eps) {
    __shared__ float sh[32]; /* per-warp partial sums */
    const int64_t    row = blockIdx.x;
    const T         *xr  = x + row * C; /* (C) */
    float            s   = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) s += ck_ldf(xr[c]);
    const float mean = ln_block_sum(s, sh) / (float)C;
    float       q    = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        const float d = ck_ldf(xr[c]) - mean;
        q += d * d;
    }
    const float var  = ln_block_sum(q, sh) / (float)C;
    const float rstd = 1.0f / sqrtf(var + eps);
    T          *yr   = y + row * C; /* (C) */
    for (int c = threadIdx.x; c < C; c += blockDim.x) yr[c] = ck_stf<T>(ln_out(ck_ldf(xr[c]), mean, rstd, gamma[c], beta[c]));
}

/* The one-row-per-warp kernel for rows of nvec 16-byte vectors (≤ 256); with `stats` it writes only the rows'
 * (mean, rstd). 0 where it cannot take the rows. */
template <typename T>
static int launch_warp(ck_cuda *cu, T *Y, const T *X, const float *g, const float *b, int64_t M, int C, float eps,
                       int64_t nvec, float2 *stats) {
    const unsigned grid = (unsigned)((M + CK_LN_WARPS - 1) / CK_LN_WARPS);
#define CK_LN_WARP(NCH) layernorm_warp_kernel<T, NCH><<<grid, 32 * CK_LN_WARPS, 0, cu->stream>>>(Y, X, g, b, M, C, eps, stats)
    if (nvec <= 32) CK_LN_WARP(1);
    else if (nvec <= 64) CK_LN_WARP(2);
    else if (nvec <= 128) CK_LN_WARP(4);
    else if (nvec <= 256) CK_LN_WARP(8);
    else return 0;
#undef CK_LN_WARP
    return 1;
}

template <typename T>
static void launch(ck_cuda *cu, const ck_tensor *y, const ck_tensor *x, const float *g, const float *b, float eps) {
    const int64_t C = ck_tensor_last(x);
    const int64_t M = ck_tensor_numel(x) / C;
    CK_ASSERT(C <= 0x7fffffff);
    constexpr int V     = ck_v16<T>::V;
    const int64_t nvec  = C / V;
    const int     vecok = C % V == 0 && ck_aligned(x->data, 16) && ck_aligned(y->data, 16);
    T            *Y     = (T *)y->data;       /* (M, C) */
    const T      *X     = (const T *)x->data; /* (M, C) */
    CK_ASSERT((M + CK_LN_WARPS - 1) / CK_LN_WARPS <= 0x7fffffff && M <= 0x7fffffff);
    if (vecok && launch_rows<T>(cu, Y, X, g, b, M, (int)C, eps, nvec, nullptr)) {
        /* launched */
    } else if (!(vecok && launch_warp<T>(cu, Y, X, g, b, M, (int)C, eps, nvec, nullptr))) {
        layernorm_block_kernel<T><<<(unsigned)M, CK_LN_BLOCK, 0, cu->stream>>>(Y, X, g, b, (int)C, eps);
    }
    CK_KERNEL_CHECK(cu);
}

extern "C" void ck_layernorm_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                                  const ck_tensor *beta, float eps) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(x->dtype == y->dtype && gamma->dtype == CK_DTYPE_F32 && beta->dtype == CK_DTYPE_F32);
    CK_DISPATCH_FLOAT(x->dtype, T, launch<T>(cu, y, x, (const float *)gamma->data, (const float *)beta->data, eps));
}

/* (mean, rstd) of every row of x (M, C) into stats (M) float2, as the LayerNorm op forms them (the same kernel's
 * sums); 0 where neither vector kernel takes these rows (C not in 16-byte vectors, or longer than 256 of them). */
extern "C" int ck__layernorm_row_stats(ck_cuda *cu, const ck_tensor *x, float eps, float2 *stats) {
    const int64_t C = ck_tensor_last(x), M = ck_tensor_numel(x) / C;
    const int     V = (int)(16 / ck_dtype_size(x->dtype));
    if (C % V || !ck_aligned(x->data, 16) || M > 0x7fffffff || x->dtype == CK_DTYPE_F32) return 0;
    int ok = 0;
    CK_DISPATCH_FLOAT(x->dtype, T,
                      ok = launch_rows<T>(cu, NULL, (const T *)x->data, NULL, NULL, M, (int)C, eps, C / V, stats) ||
                           launch_warp<T>(cu, NULL, (const T *)x->data, NULL, NULL, M, (int)C, eps, C / V, stats));
    if (ok) CK_KERNEL_CHECK(cu);
    return ok;
}

/* (mean, rstd) pairs → two planes, means then 1/σ (linear_cudnn.c's per-row operands) */
__global__ void stats_planar_kernel(const float2 *__restrict__ st, float *__restrict__ out, int64_t M) {
    CK_GRID_STRIDE(i, M) {
        const float2 s = st[i];
        out[i]     = s.x;
        out[M + i] = s.y;
    }
}

extern "C" int ck__layernorm_row_stats_planar(ck_cuda *cu, const ck_tensor *x, float eps, float *out, void *tmp) {
    const int64_t M = ck_tensor_numel(x) / ck_tensor_last(x);
    if (!ck__layernorm_row_stats(cu, x, eps, (float2 *)tmp)) return 0;
    stats_planar_kernel<<<ck_grid_for(cu, M, 256), 256, 0, cu->stream>>>((const float2 *)tmp, out, M);
    CK_KERNEL_CHECK(cu);
    return 1;
}
