/* LayerNorm over the last dim on CUDA (biased variance, eps inside the sqrt, affine).
 * ref: torch.nn.LayerNorm; CPU reference ops/cpu/norm.c.
 *
 * Main path: one warp per row, the row held in registers as 16-byte vectors (C = 112..896 in the model:
 * at most 8 vectors per lane), two-pass statistics in fp32 from registers (mean, then Σ(x − mean)²: no
 * E[x²] − mean² cancellation), one read and one write of the row. Rows that do not split into 16-byte
 * vectors, or are longer than the register budget, take a block-per-row path that re-reads the row from
 * memory (odd test sizes only). The output is formed in the CPU's order, ((x − mean)·rstd)·γ + β, without
 * FMA contraction, so fp32 results match the reference to rounding of the statistics. */
#include "ops/cuda/common.cuh"

#define CK_LN_WARPS 4 /* rows per block on the warp path */

__device__ __forceinline__ float ln_out(float x, float mean, float rstd, float g, float b) {
    return __fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(x, mean), rstd), g), b);
}

/* NCH: 16-byte vectors per lane (row of C = nvec·V elements, nvec ≤ 32·NCH). */
template <typename T, int NCH>
__global__ void layernorm_warp_kernel(T *y, const T *x, const float *__restrict__ gamma,
                                      const float *__restrict__ beta, int64_t M, int C, float eps) {
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
    T          *yr   = y + row * C; /* (C) */
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
    const int64_t grid  = (M + CK_LN_WARPS - 1) / CK_LN_WARPS;
    CK_ASSERT(grid <= 0x7fffffff && M <= 0x7fffffff);
    if (vecok && nvec <= 32) {
        layernorm_warp_kernel<T, 1><<<(unsigned)grid, 32 * CK_LN_WARPS, 0, cu->stream>>>(Y, X, g, b, M, (int)C, eps);
    } else if (vecok && nvec <= 64) {
        layernorm_warp_kernel<T, 2><<<(unsigned)grid, 32 * CK_LN_WARPS, 0, cu->stream>>>(Y, X, g, b, M, (int)C, eps);
    } else if (vecok && nvec <= 128) {
        layernorm_warp_kernel<T, 4><<<(unsigned)grid, 32 * CK_LN_WARPS, 0, cu->stream>>>(Y, X, g, b, M, (int)C, eps);
    } else if (vecok && nvec <= 256) {
        layernorm_warp_kernel<T, 8><<<(unsigned)grid, 32 * CK_LN_WARPS, 0, cu->stream>>>(Y, X, g, b, M, (int)C, eps);
    } else {
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
