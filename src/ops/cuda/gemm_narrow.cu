/* The encoder's narrow linears (K ≤ 128: the first stage's qkv, proj and fc1 at K = 112) on Hopper, with the
 * weights resident in shared memory (gemm_sm90.h states what it computes; ck__gemm_narrow_sm90 takes the same
 * arguments as ck__gemm_sm90). Host emulation: dev/cuda/gemm_emu.cpp.
 * ref: PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (wgmma.mma_async, wait_group).
 *
 * Why: at K = 112 a row of x is 224 bytes and a row of y 224 to 896, so these linears move bytes rather than
 * multiply: at S = 2048 the 262,144 rows of the first stage cost cuBLASLt 0.14 ms per linear where the traffic
 * alone takes about 0.05, and fc1's exact GELU is a second pass over its 235 MB output. Here a persistent block
 * per SM loads the whole weight (N ≤ 512 rows of ≤ 128 elements, at most 128 KiB) once, then walks its share of
 * 64-row tiles of x: each tile is read from memory once (not once per 128 columns of y), the next tiles' copies
 * are in flight while this one is multiplied, and y is written once, bias, GELU and residual applied in registers.
 * Shape: two warpgroups that walk their tiles independently (each its own ring and named barrier; only the
 * weight is the block's), so one's MMAs overlap the other's epilogue; y's columns in chunks of 128 (wgmma
 * m64n128k16, both operands K-major with the 128-byte swizzle), a chunk's MMAs then its epilogue, which is kept
 * compact (a first version with two accumulator sets and every chunk's epilogue unrolled stalled on instruction
 * fetch). KC = ceil(K / 64) operand
 * tiles per row block, NC = ceil(N / 128) column chunks; NS tiles of x per warpgroup's ring (3 where the weight
 * leaves room, else 2).
 * The body exists only in sm_90a images; ck__gemm_narrow_sm90 declines elsewhere (the caller then goes on to its
 * other paths).
 */
#include <math.h>
#include <stdint.h>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ops/cuda/gemm_sm90.h"
#include "ops/cuda/gemm_tile.cuh"
#include "ops/cuda/hopper.cuh"

#ifndef CK_GEMM_LAUNCH
#define CK_GEMM_LAUNCH(kern, grid, block, smem, stream, ...) kern<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__)
#endif

namespace {

constexpr int kNarrowTile = 64 * 128; /* bytes of one warpgroup's x tile: 64 rows × 64 elements */
constexpr int narrow_smem(int KC, int NC, int NS) { return 1024 + NC * KC * kGemmTile + 2 * NS * KC * kNarrowTile; }
constexpr int kNarrowSmemMax = 232448; /* an SM's opt-in maximum on compute capability 9.0 */

/* bias, activation and residual of one 64 × 128 accumulator chunk (rows m0 + 16·warp + lane/4 (+ 8), columns
 * n0 + 8j + 2·(lane % 4) (+ 1)), each pair of columns one 4-byte load of the residual and one store.
 * Compact on purpose: the loop over the 16 column groups is not unrolled, and the accumulators rotate by four
 * registers per step (acc[0..3] is always the group at hand, so no register is indexed at run time). Fully
 * unrolled, the epilogue was 64 inlined GELUs per chunk and accumulator set, and the kernel waited on
 * instruction fetch (65 % of its stalls, H100, 2026-12-05: 0.2–1.2 ms per call where the traffic takes
 * ~0.05). The activation is a template argument so that the code a call runs is contiguous. acc is consumed
 * (the next chunk's MMAs overwrite it). */
template <typename T, int ACT>
__device__ __forceinline__ void narrow_epilogue_act(const GemmParams<T> &p, float (&acc)[64], int64_t m0, int n0,
                                                    int warp, int lane) {
    using T2 = typename std::conditional<std::is_same<T, __half>::value, __half2, __nv_bfloat162>::type;
    const int64_t mrow = m0 + 16 * warp + (lane >> 2);
#pragma unroll 1
    for (int j = 0; j < 16; j++) {
        const int n = n0 + 8 * j + 2 * (lane & 3);
        if (n < p.N) { /* N is a multiple of 8: both columns are inside */
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int64_t m = mrow + 8 * h;
                if (m >= p.M) continue;
                float v[2];
#pragma unroll
                for (int e = 0; e < 2; e++) v[e] = gemm_epi<T>(acc[2 * h + e], p.bias_t, p.bias_f, n + e, true, ACT);
                T2 *yp = reinterpret_cast<T2 *>(p.y + m * p.N + n);
                T2  o;
                if (p.res) {
                    const T2 r = *reinterpret_cast<const T2 *>(p.res + m * p.N + n);
                    o.x = ck__f2h<T>(v[0] + ck__h2f(r.x)), o.y = ck__f2h<T>(v[1] + ck__h2f(r.y));
                } else {
                    o.x = ck__f2h<T>(v[0]), o.y = ck__f2h<T>(v[1]);
                }
                *yp = o;
            }
        }
#pragma unroll
        for (int r = 0; r < 60; r++) acc[r] = acc[r + 4];
    }
}

template <typename T>
__device__ __forceinline__ void narrow_epilogue(const GemmParams<T> &p, float (&acc)[64], int64_t m0, int n0,
                                                int warp, int lane) {
    if (p.act == 1) narrow_epilogue_act<T, 1>(p, acc, m0, n0, warp, lane);
    else if (p.act == 2) narrow_epilogue_act<T, 2>(p, acc, m0, n0, warp, lane);
    else narrow_epilogue_act<T, 0>(p, acc, m0, n0, warp, lane);
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(CK_CUDA_EMU)
/* chunk c's MMAs: the warpgroup's 64-row x tile at `a` (KC pieces of 64 columns) times the weight's rows [128c, 128c + 128) */
template <typename T, int KC>
__device__ __forceinline__ void narrow_mma(float (&acc)[64], uint32_t a, uint32_t wt, int c) {
    ck__wgmma_fence();
#pragma unroll
    for (int kc = 0; kc < KC; kc++)
#pragma unroll
        for (int ks = 0; ks < 4; ks++)
            ck__wgmma_ss128<T>(acc, ck__desc_sw128(a + kc * kNarrowTile + ks * 32),
                               ck__desc_sw128(wt + (c * KC + kc) * kGemmTile + ks * 32), kc | ks);
    ck__wgmma_commit();
}
#endif

template <typename T, int KC, int NC, int NS>
__global__ void __launch_bounds__(kGemmThreads, 1) gemm_narrow_kernel(const GemmParams<T> p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(CK_CUDA_EMU)
    __shared__ __align__(16) uint32_t marker[kCkSm90aMarker / 4];
    uint8_t       *raw      = ck__dyn_smem();
    const uint32_t raw_addr = ck__smem_addr(raw);
    const int      t = threadIdx.x, wg = t >> 7, tl = t & 127, warp = (t >> 5) & 3, lane = t & 31;
    /* (NC, KC) weight tiles, then each warpgroup's ring of NS × (KC) 64-row x tiles; 1024-aligned (swizzle) */
    uint8_t       *wtile = raw + ((1024 - (raw_addr & 1023)) & 1023);
    uint8_t       *ring  = wtile + NC * KC * kGemmTile + wg * NS * KC * kNarrowTile;
    if (t == 0) ck__keep_smem(marker);
    /* the warpgroups walk 64-row tiles on their own (tile 2·block + wg, then every 2·grid-th), so one's MMAs
     * run while the other's epilogue does; only the weight, loaded once by both, needs the whole block */
    const int64_t first = 2 * (int64_t)blockIdx.x + wg, stride = 2 * (int64_t)gridDim.x;
#pragma unroll
    for (int c = 0; c < NC; c++)
#pragma unroll
        for (int kc = 0; kc < KC; kc++) load_tile<T>(wtile + (c * KC + kc) * kGemmTile, p.w, 128 * c, p.N, 64 * kc, p.K, t);
    ck__cp_async_commit();
#pragma unroll
    for (int s = 0; s < NS - 1; s++) {
        const int64_t tile = first + s * stride;
        if (tile < p.tiles)
#pragma unroll
            for (int kc = 0; kc < KC; kc++)
                load_tile<T, 128>(ring + (s * KC + kc) * kNarrowTile, p.x, 64 * tile, p.M, 64 * kc, p.K, tl);
        ck__cp_async_commit(); /* one group per tile, empty or not, so the wait counts below hold */
    }
    ck__cp_async_wait<NS - 1>(); /* the weight (the oldest group) has landed */
    ck__fence_proxy_async();
    __syncthreads();
    const uint32_t wt_addr = ck__smem_addr(wtile), ring_addr = ck__smem_addr(ring);
    float          acc[64]; /* one 64 × 128 chunk of y: wgmma's accumulator fragment */
    int            it = 0;
    for (int64_t tile = first; tile < p.tiles; tile += stride, it++) {
        const int64_t m0   = 64 * tile;
        const int     slot = it % NS;
        ck__cp_async_wait<NS - 2>(); /* this thread's copies of this tile have landed */
        if (p.ln) {
            float2 lnr[4];
            ln_rows<128>(lnr, p.ln, m0, p.M, tl);
#pragma unroll
            for (int kc = 0; kc < KC; kc++)
                ln_tile<T, 128>(ring + (slot * KC + kc) * kNarrowTile, 64 * kc, p.K, m0, p.M, lnr, p.ln_g, p.ln_b, tl);
        }
        ck__fence_proxy_async();
        ck__bar_sync_n(1 + wg, 128); /* the warpgroup's copies have landed, its MMAs of the previous tile are done */
        {
            const int64_t next = tile + (NS - 1) * stride;
            const int     ns   = (it + NS - 1) % NS;
            if (next < p.tiles)
#pragma unroll
                for (int kc = 0; kc < KC; kc++)
                    load_tile<T, 128>(ring + (ns * KC + kc) * kNarrowTile, p.x, 64 * next, p.M, 64 * kc, p.K, tl);
            ck__cp_async_commit();
        }
        const uint32_t a = ring_addr + slot * KC * kNarrowTile;
        /* one chunk at a time: its MMAs, then its epilogue (the other warpgroup's MMAs run meanwhile); a loop,
         * not unrolled, so that the code a warp runs stays small (see narrow_epilogue_act) */
#pragma unroll 1
        for (int c = 0; c < NC; c++) {
            narrow_mma<T, KC>(acc, a, wt_addr, c);
            ck__wgmma_wait<0>();
            ck__reg_fence(acc);
            narrow_epilogue<T>(p, acc, m0, 128 * c, warp, lane);
        }
    }
    ck__cp_async_wait<0>(); /* no copy outlives the block (the trailing groups are empty) */
#else
    (void)p;
    __trap(); /* never launched: the host sees no marker in this image */
#endif
}

/* the SMs of the current device (the persistent grid's size); the emulator build fixes a small count so that
 * blocks walk several tiles */
static int narrow_sm_count() {
#ifdef CK_NARROW_SMS
    return CK_NARROW_SMS;
#else
    static int cache[64];
    int        dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 0;
    if (dev >= 0 && dev < 64 && cache[dev]) return cache[dev];
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
    if (dev >= 0 && dev < 64) cache[dev] = n;
    return n;
#endif
}

template <typename T, int KC, int NC> int launch_kc_nc(const ck__gemm_args *a, cudaStream_t stream) {
    constexpr int NS   = narrow_smem(KC, NC, 3) <= kNarrowSmemMax ? 3 : 2;
    constexpr int smem = narrow_smem(KC, NC, NS);
    static_assert(smem <= kNarrowSmemMax, "the weight and two tiles of x per warpgroup fit an SM");
    auto kern = gemm_narrow_kernel<T, KC, NC, NS>;
    if (!ck__sm90a_ready((const void *)kern)) return 0;
    const int sms = narrow_sm_count();
    if (sms < 1) return 0;
    GemmParams<T> p = gemm_params<T>(a);
    p.tiles         = (a->M + 63) / 64;
    const int64_t pairs  = (p.tiles + 1) / 2;
    const int64_t blocks = pairs < sms ? pairs : sms;
    if (cudaFuncSetAttribute((const void *)kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess)
        return 0;
    CK_GEMM_LAUNCH(kern, dim3((unsigned)blocks), dim3(kGemmThreads), (size_t)smem, stream, p);
    return 1;
}

template <typename T> int launch_narrow(const ck__gemm_args *a, cudaStream_t stream) {
    const int kc = (a->K + 63) / 64, nc = (a->N + 127) / 128;
    if (kc == 1) {
        switch (nc) {
        case 1: return launch_kc_nc<T, 1, 1>(a, stream);
        case 2: return launch_kc_nc<T, 1, 2>(a, stream);
        case 3: return launch_kc_nc<T, 1, 3>(a, stream);
        case 4: return launch_kc_nc<T, 1, 4>(a, stream);
        }
    } else if (kc == 2) {
        switch (nc) {
        case 1: return launch_kc_nc<T, 2, 1>(a, stream);
        case 2: return launch_kc_nc<T, 2, 2>(a, stream);
        case 3: return launch_kc_nc<T, 2, 3>(a, stream);
        case 4: return launch_kc_nc<T, 2, 4>(a, stream);
        }
    }
    return 0;
}

} /* namespace */

extern "C" int ck__gemm_narrow_sm90(const ck__gemm_args *a, cudaStream_t stream) {
    const uintptr_t al = (uintptr_t)a->x | (uintptr_t)a->w | (uintptr_t)a->y | (uintptr_t)a->res;
    /* 4-byte pairs of y and the residual; x, w 16-byte pieces */
    if ((al & 15) || ((uintptr_t)a->ln_stats & 7) || a->x == a->y || a->M < 1 || a->N < 8 || a->K < 8 ||
        a->N % 8 || a->K % 8 || a->K > CK_NARROW_MAX_K || a->N > CK_NARROW_MAX_N || a->act < 0 || a->act > 2)
        return 0;
    return a->bf16 ? launch_narrow<__nv_bfloat16>(a, stream) : launch_narrow<__half>(a, stream);
}
