/* The operand tiles the Hopper GEMMs (gemm_sm90.cu, gemm_narrow.cu) share: 128 rows × 64 elements of a row-major
 * (rows, K) matrix in shared memory with the 128-byte swizzle that wgmma's descriptors read, copied by 256
 * threads with cp.async, and the LayerNorm prologue that normalizes the chunks a thread copied once they have
 * landed. Included into the unnamed namespace of the including file, after hopper.cuh. */
#ifndef CK_OPS_CUDA_GEMM_TILE_CUH
#define CK_OPS_CUDA_GEMM_TILE_CUH

#include "ops/cuda/gemm_sm90.h"
#include "ops/cuda/hopper.cuh"

namespace {

constexpr int kGemmThreads = 256;       /* two warpgroups */
constexpr int kGemmTile    = 128 * 128; /* bytes of one operand tile: 128 rows × 64 elements (128 bytes) */

/* A GEMM's operands and epilogue as the kernels read them (ck__gemm_args, typed), and each kernel's tiling. */
template <typename T> struct GemmParams {
    const T      *x, *w, *bias_t, *res;
    T            *y;
    const float  *bias_f;
    const float2 *ln;          /* (M) (mean, rstd), or NULL */
    const float  *ln_g, *ln_b; /* (K) */
    int64_t       M, tiles; /* tiles: 64-row tiles of x (gemm_narrow.cu) */
    int           N, K, act, nt; /* nt: 128-column tiles of y per row block (gemm_sm90.cu) */
};

template <typename T> static GemmParams<T> gemm_params(const ck__gemm_args *a) {
    GemmParams<T> p;
    p.x = (const T *)a->x, p.w = (const T *)a->w, p.y = (T *)a->y, p.res = (const T *)a->res;
    p.bias_t = (const T *)a->bias_t, p.bias_f = a->bias_f;
    p.ln = (const float2 *)a->ln_stats, p.ln_g = a->ln_g, p.ln_b = a->ln_b;
    p.M = a->M, p.N = a->N, p.K = a->K, p.act = a->act, p.tiles = 0, p.nt = 0;
    return p;
}

/* Rows [r0, r0 + NT/2) × columns [k0, k0 + 64) of a row-major (rows, K) matrix into a swizzled tile (NT threads
 * copy NT/2 rows: 128 for a block's two warpgroups, 64 for one): chunk c (8 elements) of row r at r·128 +
 * ((c ^ (r & 7)) · 16); rows ≥ rows and columns ≥ K are zeros. Thread t copies the chunk t % 8 of rows
 * t/8 + (NT/8)·j, j < 4. */
template <typename T, int NT = kGemmThreads>
__device__ __forceinline__ void load_tile(uint8_t *s, const T *g, int64_t r0, int64_t rows, int k0, int K, int t) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int     i = t + NT * j, r = i >> 3, c = i & 7;
        const int64_t row = r0 + r;
        const int     k   = k0 + 8 * c;
        const bool    ok  = row < rows && k < K;
        ck__cp_async16(s + r * 128 + ((c ^ (r & 7)) << 4), ok ? g + row * K + k : g, ok);
    }
}

/* The LayerNorm prologue over the chunks thread t copied into tile s (columns k0 + 8·(t % 8) ..., rows
 * t/8 + (NT/8)·j of the rows starting at m0), in the layernorm op's operations and order: round(((x − mean)·rstd)·γ
 * + β), so the operand is bit for bit the normalized map the unfused path stores. lnr[j]: (mean, rstd) of
 * row m0 + t/8 + (NT/8)·j. Call once the thread's copies of s have landed, before the barrier that publishes s. */
template <typename T, int NT = kGemmThreads>
__device__ __forceinline__ void ln_tile(uint8_t *s, int k0, int K, int64_t m0, int64_t M, const float2 (&lnr)[4],
                                        const float *__restrict__ ln_g, const float *__restrict__ ln_b, int t) {
    const int k = k0 + 8 * (t & 7), c = t & 7;
    if (k >= K) return;
    float g[8], b[8];
#pragma unroll
    for (int e = 0; e < 8; e++) g[e] = ln_g[k + e], b[e] = ln_b[k + e];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int r = (t >> 3) + NT / 8 * j;
        if (m0 + r >= M) continue;
        uint4 *q  = reinterpret_cast<uint4 *>(s + r * 128 + ((c ^ (r & 7)) << 4));
        uint4  v  = *q; /* one 16-byte access (a memcpy here compiles to bytes) */
        T     *e8 = reinterpret_cast<T *>(&v);
#pragma unroll
        for (int e = 0; e < 8; e++)
            e8[e] = ck__f2h<T>(__fadd_rn(__fmul_rn(__fmul_rn(__fsub_rn(ck__h2f(e8[e]), lnr[j].x), lnr[j].y), g[e]), b[e]));
        *q = v;
    }
}

/* The rows' (mean, rstd) for ln_tile (zeros past M). */
template <int NT = kGemmThreads>
__device__ __forceinline__ void ln_rows(float2 (&lnr)[4], const float2 *__restrict__ ln, int64_t m0, int64_t M, int t) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int64_t m = m0 + (t >> 3) + NT / 8 * j;
        lnr[j]          = m < M ? ln[m] : make_float2(0.0f, 0.0f);
    }
}

__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f)); }

/* One accumulator through the epilogue: + the bias of column n (where `inside`), then for act ≠ 0 the linear's
 * output rounded as stored and the activation (exact erf GELU or ReLU). The residual and the final rounding are
 * the caller's. */
template <typename T>
__device__ __forceinline__ float gemm_epi(float f, const T *bias_t, const float *bias_f, int n, bool inside, int act) {
    if (inside) {
        if (bias_t) f += ck__h2f(bias_t[n]);
        else if (bias_f) f += bias_f[n];
    }
    if (act != 0) {
        f = ck__h2f(ck__f2h<T>(f)); /* the linear's output as stored, then the activation */
        f = act == 1 ? gelu_erf(f) : (f > 0.0f ? f : 0.0f);
    }
    return f;
}

} /* namespace */

#endif
