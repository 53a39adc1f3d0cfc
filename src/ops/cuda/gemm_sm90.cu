/* The encoder linears' GEMM on Hopper with their epilogue in registers (gemm_sm90.h states what it computes).
 * Host emulation: dev/cuda/gemm_emu.cpp.
 * ref: PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (wgmma.mma_async, the 128-byte
 *      swizzle); torch.nn.GELU (the erf form).
 *
 * Why: cuBLASLt's GELU epilogue is the tanh approximation, so fc1 today writes xWᵀ + b and a separate pass
 * reads and rewrites it with the exact GELU (1.3 ms of the 2048² forward). Here the GELU (and the residual)
 * is applied to the accumulators before the single store.
 * With a LayerNorm in front (qkv after norm1, fc1 after norm2), each thread normalizes the chunks of x it copied
 * as soon as they land, with the row statistics of a small pass and the layernorm op's operations, so the
 * operand is bit for bit the normalized map the unfused path would have stored and read back.
 * Shape: a block of two warpgroups computes a 128 × 128 tile of y, each warpgroup 64 rows (wgmma
 * m64n128k16, both operands K-major in shared memory with the 128-byte swizzle); K in steps of 64 through a
 * ring of three stages filled by cp.async (zero-filled past M, N and K). Two blocks per SM, so one block's
 * epilogue and barriers run while the other's MMAs do. The epilogue goes through the ring as float32 rows, so
 * that y (and the residual) move in 16-byte pieces of whole rows. Tiles go N-fastest: the blocks running together share
 * the rows of x they read.
 * The body exists only in sm_90a images; ck__gemm_sm90 declines elsewhere (the caller then uses cuBLASLt).
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

constexpr int kBM = 128, kBN = 128, kBK = 64, kNS = 3, kThreads = kGemmThreads;
constexpr int kTile   = kGemmTile;                 /* one operand tile: 128 rows × 64 elements (128 bytes) */
constexpr int kStage  = 2 * kTile;                 /* A then B */
constexpr int kSmem   = 1024 + kNS * kStage;       /* alignment slack + the ring: 97 KiB, two blocks per SM */
constexpr int kStageRow = 128 + 4;                 /* floats per epilogue staging row (2 × 64 rows fit the ring) */
static_assert(2 * 64 * kStageRow * 4 <= kNS * kStage, "the epilogue's staging fits the ring");

/* Step 2 of the epilogue: 16-byte pieces of whole rows of y from the warpgroup's staging rows (the raw
 * accumulators): + bias, the activation, the residual, each value rounded as the cuBLASLt path rounds it. A loop
 * over the thread's 8 pieces, not unrolled: unrolled, the epilogue made the kernel 128 KB of code (64 inlined
 * GELUs), and the narrow GEMM built that way stalled on instruction fetch (H100, 2026-12-05). (The activation
 * as a template argument, one loop per activation, costs spills here.) */
template <typename T>
__device__ __forceinline__ void store_rows(const GemmParams<T> &p, const float *stage, int64_t m0, int n0, int t) {
#pragma unroll 1
    for (int k = 0; k < 8; k++) {
        const int     i = t % 128 + 128 * k, rl = i >> 4, c = 8 * (i & 15);
        const int64_t m = m0 + rl;
        const int     n = n0 + c;
        if (m >= p.M || n >= p.N) continue; /* N is a multiple of 8: the whole piece is inside */
        const float4 a = *reinterpret_cast<const float4 *>(stage + rl * kStageRow + c);
        const float4 b = *reinterpret_cast<const float4 *>(stage + rl * kStageRow + c + 4);
        float        v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        uint4        ov = p.res ? *reinterpret_cast<const uint4 *>(p.res + m * p.N + n) : make_uint4(0, 0, 0, 0);
        T           *o  = reinterpret_cast<T *>(&ov); /* 16-byte loads and stores (memcpy compiles to bytes) */
#pragma unroll
        for (int e = 0; e < 8; e++) {
            const float f = gemm_epi<T>(v[e], p.bias_t, p.bias_f, n + e, true, p.act);
            o[e]          = ck__f2h<T>(p.res ? f + ck__h2f(o[e]) : f);
        }
        *reinterpret_cast<uint4 *>(p.y + m * p.N + n) = ov;
    }
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 2) gemm_sm90_kernel(const GemmParams<T> p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(CK_CUDA_EMU)
    __shared__ __align__(16) uint32_t marker[kCkSm90aMarker / 4];
    uint8_t       *raw  = ck__dyn_smem();
    const uint32_t raw_addr = ck__smem_addr(raw);
    uint8_t       *ring = raw + ((1024 - (raw_addr & 1023)) & 1023); /* (kNS, A 128×64, B 128×64), 1024-aligned */
    const int      t = threadIdx.x, wg = t >> 7, warp = (t >> 5) & 3, lane = t & 31;
    if (t == 0) ck__keep_smem(marker);
    const int64_t m0 = (int64_t)(blockIdx.x / p.nt) * kBM;
    const int     n0 = (int)(blockIdx.x % p.nt) * kBN;
    const int     nk = (p.K + kBK - 1) / kBK;

#pragma unroll
    for (int st = 0; st < kNS - 1; st++) {
        if (st < nk) {
            load_tile<T>(ring + st * kStage, p.x, m0, p.M, st * kBK, p.K, t);
            load_tile<T>(ring + st * kStage + kTile, p.w, n0, p.N, st * kBK, p.K, t);
        }
        ck__cp_async_commit(); /* one group per stage, empty or not, so the wait counts below hold */
    }
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; i++) acc[i] = 0.0f;
    /* LayerNorm prologue: this thread copies the A chunks of rows t/8 + 32j (j < 4), channel chunk t % 8 of every
     * k-step, and normalizes exactly those once they have landed (before the barrier that publishes them) */
    float2 lnr[4];
    if (p.ln) ln_rows(lnr, p.ln, m0, p.M, t);
    const uint32_t ring_addr = ck__smem_addr(ring);
    for (int kt = 0; kt < nk; kt++) {
        ck__cp_async_wait<kNS - 2>(); /* this thread's copies of tile kt have landed */
        if (p.ln) ln_tile<T>(ring + (kt % kNS) * kStage, kt * kBK, p.K, m0, p.M, lnr, p.ln_g, p.ln_b, t);
        ck__fence_proxy_async();
        __syncthreads(); /* everyone's have, and every warpgroup's MMAs of tile kt − 1 are done */
        {
            const int tn = kt + kNS - 1;
            if (tn < nk) {
                uint8_t *s = ring + (tn % kNS) * kStage;
                load_tile<T>(s, p.x, m0, p.M, tn * kBK, p.K, t);
                load_tile<T>(s + kTile, p.w, n0, p.N, tn * kBK, p.K, t);
            }
            ck__cp_async_commit();
        }
        const uint32_t a = ring_addr + (kt % kNS) * kStage + wg * 64 * 128, b = ring_addr + (kt % kNS) * kStage + kTile;
        ck__wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ks++) ck__wgmma_ss128<T>(acc, ck__desc_sw128(a + ks * 32), ck__desc_sw128(b + ks * 32), 1);
        ck__wgmma_commit();
        ck__wgmma_wait<0>();
        ck__reg_fence(acc);
    }
    ck__cp_async_wait<0>(); /* no copy outlives the block (the trailing groups are empty) */

    /* epilogue, through the ring (no longer read: every thread has waited for its MMAs and copies): 1. each
     * thread's raw accumulators as float32 into its warpgroup's 64 × 128 staging rows (rows
     * m0 + 64·wg + 16·warp + lane/4 (+ 8), columns 8j + 2·(lane % 4) (+ 1); rows padded by 16 bytes against
     * bank conflicts); 2. 16-byte pieces of whole rows of y: bias, activation and residual (store_rows). */
    __syncthreads();
    float *stage = reinterpret_cast<float *>(ring) + wg * 64 * kStageRow; /* (64, kStageRow) */
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int rl = 16 * warp + (lane >> 2) + 8 * h;
#pragma unroll
        for (int j = 0; j < 16; j++)
            *reinterpret_cast<float2 *>(stage + rl * kStageRow + 8 * j + 2 * (lane & 3)) =
                make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
    }
    __syncthreads();
    store_rows<T>(p, stage, m0 + 64 * wg, n0, t);
#else
    (void)p;
    __trap(); /* never launched: the host sees no marker in this image */
#endif
}

template <typename T> int launch(const ck__gemm_args *a, cudaStream_t stream) {
    auto kern = gemm_sm90_kernel<T>;
    if (!ck__sm90a_ready((const void *)kern)) return 0;
    GemmParams<T> p = gemm_params<T>(a);
    p.nt            = (a->N + kBN - 1) / kBN;
    const int64_t blocks = (a->M + kBM - 1) / kBM * p.nt;
    if (blocks > 0x7fffffff) return 0;
    if (cudaFuncSetAttribute((const void *)kern, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem) != cudaSuccess)
        return 0;
    CK_GEMM_LAUNCH(kern, dim3((unsigned)blocks), dim3(kThreads), (size_t)kSmem, stream, p);
    return 1;
}

} /* namespace */

extern "C" int ck__gemm_sm90(const ck__gemm_args *a, cudaStream_t stream) {
    const uintptr_t al = (uintptr_t)a->x | (uintptr_t)a->w | (uintptr_t)a->y | (uintptr_t)a->res;
    if ((al & 15) || ((uintptr_t)a->ln_stats & 7) || a->x == a->y || a->M < 1 || a->N < 8 || a->K < 8 || a->N % 8 || a->K % 8 || a->act < 0 || a->act > 2) return 0;
    return a->bf16 ? launch<__nv_bfloat16>(a, stream) : launch<__half>(a, stream);
}
