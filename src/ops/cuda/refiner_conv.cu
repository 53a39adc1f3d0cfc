/* The refiner's 3×3 dilated convolution as an implicit GEMM on Hopper's warpgroup MMA, with the preceding
 * GroupNorm + ReLU applied while the operand is loaded and the next GroupNorm's moments taken in the epilogue
 * (refiner_conv.h states what it computes). Host emulation: dev/cuda/refiner_emu.cpp.
 * ref: PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (wgmma.mma_async, the matrix
 *      descriptor, the canonical K-major layouts without swizzle and with the 128-byte swizzle);
 *      Chan, Golub, LeVeque, "Algorithms for computing the sample variance" (merging (mean, M2) pairs).
 *
 * Why this shape: the map is 64 channels wide, so with the pixels as the MMA's M the weight operand (N = 64)
 * would be re-read from shared memory for every 64 pixels. Here the 64 output channels are M and the pixels
 * are N = 128: D (64 oc × 128 px) += W_tap (64 oc × 16 ic) · X_tap (16 ic × 128 px), 9 taps × 4 k-steps.
 *   - W_tap: all 9 taps stay in shared memory for the whole kernel (72 KiB, K-major, 128-byte swizzle).
 *   - X_tap: the input row y + (ky−1)·d, pixels x0 − d … x0 + 127 + d, held in shared memory in the K-major
 *     layout without swizzle: core matrices of 8 pixels × 16 bytes, pixel p at p·16 (SBO = 128), the eight
 *     16-byte channel chunks LBO = 16·(Q + 1) apart (Q pixels per chunk plane; the +1 spreads a pixel's chunks
 *     over all banks for the stores). Tap kx is the same buffer with its start moved by kx·d pixels: any pixel
 *     offset is a legal descriptor start, which a swizzled layout would not allow.
 * Rows: one warpgroup walks a chain of output rows y, y + d, y + 2d, … of one 128-pixel segment, keeping the
 * three input rows it needs in a ring of three slots; each step loads one new row (global → registers →
 * GroupNorm + ReLU → shared) while its 36 MMAs run, so every input row is read about once.
 * The previous residual block's GroupNorm 2 can ride on conv1's loads the same way (RES: the skip connection's
 * chunks loaded beside x and added before the ReLU); the formed input, which is the next residual stream, is then
 * stored once per pixel by the chain that owns its row (xo), so no separate pass reads the map and the stream.
 * Two warpgroups per block work on independent chains and share the weights; each step of one warpgroup's
 * epilogue (bias, rounding, moments, the transposed store through a staging tile) overlaps the other's MMAs.
 * The moments of a segment are formed from the rounded outputs in two passes (mean, then Σ(v − mean)²) over
 * registers, in a fixed order: the result is the same bits every run.
 * The body exists only in sm_90a images; ck__refiner_conv declines elsewhere (the caller then runs the
 * unfused ops).
 */
#include <stdint.h>
#include <string.h>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ops/cuda/hopper.cuh"
#include "ops/cuda/refiner_conv.h"

#ifndef CK_RCONV_LAUNCH
#define CK_RCONV_LAUNCH(kern, grid, block, smem, stream, ...) kern<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__)
#endif

namespace {

constexpr int kC = CK_RCONV_C, kSeg = CK_RCONV_SEG, kWG = 2, kThreads = 128 * kWG;
constexpr int kStage = kSeg * kC * 2; /* the epilogue's staging tile, 16 KiB */

/* Input widths: CIN = 64 (the residual blocks) or 8 (the stem: 7 channels and a zero one).
 * Weights: CIN = 64, per tap 64 oc × 64 ic in the 128-byte swizzle (8 KiB, 72 KiB in all); CIN = 8, per tap two
 * unswizzled 8-channel planes of 64 oc × 16 bytes, the second zeros (a k16 step covers one tap: 8 real input
 * channels and 8 zero weights, so the operand's second half may be any finite values), 2 KiB a tap. */
__host__ __device__ constexpr int tap_bytes(int CIN) { return CIN == 64 ? kC * kC * 2 : 2 * kC * 16; }
__host__ __device__ constexpr int w_bytes(int CIN) { return 9 * tap_bytes(CIN); }
/* Pixels a slot holds at dilation D: 128 + 2D rounded up to 8. CIN = 64: eight chunk planes, 16·(Q + 1) bytes
 * apart (the +1 spreads a pixel's chunks over the banks); CIN = 8: the pixels' plane and a plane of zeros that
 * stands for input channels 8..15 (their weights are zeros too, but a non-finite neighbour times a zero weight
 * would still be NaN), written once. */
__host__ __device__ constexpr int slot_q(int D, int CIN) { return (kSeg + 2 * D + 7) / 8 * 8; }
__host__ __device__ constexpr int slot_lbo(int D, int CIN) { return 16 * (slot_q(D, CIN) + (CIN == 64)); }
__host__ __device__ constexpr int slot_bytes(int D, int CIN) { return (CIN == 64 ? 8 : 2) * slot_lbo(D, CIN); }
__host__ __device__ constexpr int smem_bytes(int D, int CIN) {
    return 1024 + w_bytes(CIN) + kWG * (3 * slot_bytes(D, CIN) + kStage);
}

struct Params {
    const uint4 *x;       /* (B, H, W, CIN) as 16-byte chunks */
    const uint4 *res;     /* (B, H, W, 64): added before act's ReLU (RES kernels only) */
    uint4       *xo;      /* (B, H, W, 64): act(x) of the rows this call's chains own, or NULL */
    uint4       *y;       /* (B, h, W, 64) */
    const void  *w;       /* (64, CIN, 3, 3) */
    const float *bias, *stats, *gamma, *beta;
    float2      *moments; /* (B, H, nseg, 8) */
    int          B, H, W, row0, h, nseg, chain, pieces, tasks;
};

/* The input row `row` (absolute in x), pixels x0 − D … of sample b, as this thread's share of 16-byte chunks:
 * CIN = 64: chunk i = t + 128·j is pixel q = i / 8, channel chunk i % 8 = t % 8 (fixed per thread); CIN = 8:
 * pixel q = i. Out-of-image pixels and rows are zero after act, so they are never loaded. RES: the residual's
 * chunks too (the previous block's skip connection, added before the ReLU). */
template <int D, int CIN, bool RES> struct RowLoad {
    static constexpr int CH = CIN / 8, NV = (slot_q(D, CIN) * CH + 127) / 128;
    uint4                v[NV];
    uint4                r[RES ? NV : 1];
    __device__ __forceinline__ static int pixel(int i) { return CH == 8 ? i >> 3 : i; }
    __device__ __forceinline__ void issue(const Params &p, int b, int row, int x0, int t) {
        const bool row_ok = row >= 0 && row < p.H;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            const int q = pixel(t + 128 * j), px = x0 - D + q;
            v[j]        = make_uint4(0, 0, 0, 0);
            if (RES) r[j] = make_uint4(0, 0, 0, 0);
            if (row_ok && q < kSeg + 2 * D && px >= 0 && px < p.W) {
                const int64_t e = (((int64_t)b * p.H + row) * p.W + px) * CH + (CH == 8 ? (t & 7) : 0);
                v[j]            = p.x[e];
                if (RES) r[j] = p.res[e];
            }
        }
    }
    /* GroupNorm (+ the residual) + ReLU on the loaded values (the unfused apply kernel's operations, so the same
     * bits; CIN = 64 only), then the 16-byte stores into the slot; chunks from outside the image stay zero. With
     * `own` (a row this chain owns, and an xo to fill) the segment's own pixels also go to xo, so that every pixel
     * of the rows the call covers is written there exactly once. */
    template <typename T>
    __device__ __forceinline__ void store(uint8_t *slot, const Params &p, int b, int row, int x0, int t, bool act,
                                          const float (&sc)[8], const float (&sh)[8], bool own) {
        const bool row_ok = row >= 0 && row < p.H;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            const int q = pixel(t + 128 * j), px = x0 - D + q;
            if (q >= slot_q(D, CIN)) continue;
            uint4      o      = v[j];
            const bool inside = row_ok && q < kSeg + 2 * D && px >= 0 && px < p.W;
            if (CH == 8 && act && inside) {
                T e[8], re[8];
                memcpy((void *)e, &o, 16);
                if (RES) memcpy((void *)re, &r[j], 16);
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    float f = __fadd_rn(__fmul_rn(ck__h2f(e[k]), sc[k]), sh[k]);
                    if (RES) f += ck__h2f(re[k]);
                    e[k] = ck__f2h<T>(f > 0.0f ? f : 0.0f);
                }
                memcpy(&o, (const void *)e, 16);
                if (own && q >= D && q < D + kSeg) p.xo[(((int64_t)b * p.H + row) * p.W + px) * CH + (t & 7)] = o;
            }
            *reinterpret_cast<uint4 *>(slot + (CH == 8 ? (t & 7) * slot_lbo(D, CIN) : 0) + q * 16) = o;
        }
    }
};

template <typename T, int D, int CIN, bool RES>
__global__ void __launch_bounds__(kThreads, 1) refiner_conv_kernel(const Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(CK_CUDA_EMU)
    __shared__ __align__(16) uint32_t marker[kCkSm90aMarker / 4];
    uint8_t       *raw  = ck__dyn_smem();
    const uint32_t raw_addr = ck__smem_addr(raw);
    uint8_t       *sw   = raw + ((1024 - (raw_addr & 1023)) & 1023); /* weights (9 taps), 1024-aligned */
    const int      tid = threadIdx.x, wg = tid >> 7, t = tid & 127, warp = t >> 5, lane = t & 31;
    uint8_t       *slots = sw + w_bytes(CIN) + wg * (3 * slot_bytes(D, CIN) + kStage); /* this warpgroup's 3 slots */
    uint8_t       *stage = slots + 3 * slot_bytes(D, CIN);                             /* (128 px, 64 oc), swizzled */
    if (tid == 0) ck__keep_smem(marker);

    /* weights: element (oc n, ic k, tap) read in PyTorch's order; CIN = 64 at tap·8 KiB + n·128 + swizzled
     * chunk, CIN = 8 at tap·2 KiB + n·16 (the zero plane of ic 8..15 at + 1 KiB) */
    {
        const uint16_t *wg16 = reinterpret_cast<const uint16_t *>(p.w);
        for (int e = tid; e < 9 * kC * CIN; e += kThreads) {
            const int tap = e % 9, nk = e / 9, n = nk / CIN, k = nk % CIN;
            const int off = CIN == 64 ? n * 128 + (((k >> 3) ^ (n & 7)) << 4) + (k & 7) * 2 : n * 16 + k * 2;
            *reinterpret_cast<uint16_t *>(sw + tap * tap_bytes(CIN) + off) = wg16[e];
        }
        if (CIN == 8) {
            for (int e = tid; e < 9 * kC; e += kThreads)
                *reinterpret_cast<uint4 *>(sw + (e / kC) * tap_bytes(CIN) + kC * 16 + (e % kC) * 16) = make_uint4(0, 0, 0, 0);
            /* the zero plane of each of this warpgroup's three slots (never written again) */
            for (int e = t; e < 3 * slot_q(D, CIN); e += 128)
                *reinterpret_cast<uint4 *>(slots + (e / slot_q(D, CIN)) * slot_bytes(D, CIN) + slot_lbo(D, CIN) +
                                           (e % slot_q(D, CIN)) * 16) = make_uint4(0, 0, 0, 0);
        }
    }
    ck__fence_proxy_async();
    __syncthreads();

    const uint32_t w_addr = ck__smem_addr(sw), slot_addr = ck__smem_addr(slots);
    const int      bar_id = 1 + wg;
    const bool     act    = p.stats != nullptr;
    /* the bias of this thread's two accumulator rows (output channels) */
    const int   oc0 = 16 * warp + (lane >> 2);
    const float bias0 = p.bias[oc0], bias1 = p.bias[oc0 + 8];

    for (int task = blockIdx.x * kWG + wg; task < p.tasks; task += gridDim.x * kWG) {
        int       q     = task;
        const int seg   = q % p.nseg;
        q /= p.nseg;
        const int piece = q % p.pieces;
        q /= p.pieces;
        const int res = q % D, b = q / D;
        const int i0  = res + D * piece * p.chain; /* first output row of the chain, relative to row0 */
        if (i0 >= p.h) continue;
        const int x0 = seg * kSeg;

        /* act's per-channel coefficients for this thread's chunk (channels 8c … 8c + 7 = group c) */
        float sc[8], sh[8];
        if (act) {
            const int   c    = t & 7;
            const float mean = p.stats[(b * 8 + c) * 2], rstd = p.stats[(b * 8 + c) * 2 + 1];
#pragma unroll
            for (int k = 0; k < 8; k++) {
                sc[k] = __fmul_rn(rstd, p.gamma[8 * c + k]);
                sh[k] = __fsub_rn(p.beta[8 * c + k], __fmul_rn(mean, sc[k]));
            }
        } else {
#pragma unroll
            for (int k = 0; k < 8; k++) sc[k] = 1.0f, sh[k] = 0.0f;
        }

        /* the ring: slot (rot + k) % 3 holds input row y + (k − 1)·D */
        int       rot = 0;
        const int y0  = p.row0 + i0;
        /* the chain's last output row: its rows [y0, y_last] (every D-th) are the ones whose act(x) it stores */
        const int n_last = (p.h - 1 - i0) / D + 1;
        const int n_out  = p.chain < n_last ? p.chain : n_last;
        const int y_last = y0 + D * (n_out - 1);
        const bool xo    = p.xo != nullptr;
        RowLoad<D, CIN, RES> ld;
#pragma unroll 1
        for (int k = 0; k < 3; k++) {
            const int row = y0 + (k - 1) * D;
            ld.issue(p, b, row, x0, t);
            ld.template store<T>(slots + k * slot_bytes(D, CIN), p, b, row, x0, t, act, sc, sh,
                                 xo && row >= y0 && row <= y_last);
        }
        ck__fence_proxy_async();
        ck__bar_sync_n(bar_id, 128);

        for (int s = 0; s < p.chain; s++) {
            const int i = i0 + D * s;
            if (i >= p.h) break;
            const int  y    = p.row0 + i;
            const bool more = s + 1 < p.chain && i + D < p.h;

            float acc[64];
#pragma unroll
            for (int k = 0; k < 64; k++) acc[k] = 0.0f;
            ck__wgmma_fence();
#pragma unroll
            for (int ky = 0; ky < 3; ky++) {
                const int      sl = rot + ky >= 3 ? rot + ky - 3 : rot + ky;
                const uint32_t xb = slot_addr + sl * slot_bytes(D, CIN);
#pragma unroll
                for (int kx = 0; kx < 3; kx++) {
                    const uint32_t wt = w_addr + (ky * 3 + kx) * tap_bytes(CIN);
                    if (CIN == 64) {
#pragma unroll
                        for (int ks = 0; ks < 4; ks++)
                            ck__wgmma_ss128<T>(acc, ck__desc_sw128(wt + ks * 32),
                                               ck__desc_plain(xb + kx * D * 16 + 2 * ks * slot_lbo(D, CIN),
                                                              slot_lbo(D, CIN), 128),
                                               ky | kx | ks);
                    } else {
                        ck__wgmma_ss128<T>(acc, ck__desc_plain(wt, kC * 16, 128),
                                           ck__desc_plain(xb + kx * D * 16, slot_lbo(D, CIN), 128), ky | kx);
                    }
                }
            }
            ck__wgmma_commit();
            if (more) ld.issue(p, b, y + 2 * D, x0, t); /* in flight while the MMAs run */
            ck__wgmma_wait<0>();
            ck__reg_fence(acc);
            ck__bar_sync_n(bar_id, 128); /* every warp's MMAs are done with row y − D's slot and with the staging */
            if (more) {
                ld.template store<T>(slots + rot * slot_bytes(D, CIN), p, b, y + 2 * D, x0, t, act, sc, sh,
                                     xo && y + 2 * D <= y_last);
                ck__fence_proxy_async();
            }

            /* epilogue: bias, rounding, moments per (group, segment), the transposed tile into the staging */
            const int nvalid = p.W - x0 < kSeg ? p.W - x0 : kSeg;
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                const int   oc = oc0 + 8 * hh;
                const float bs = hh ? bias1 : bias0;
                float       sum = 0.0f;
#pragma unroll
                for (int j = 0; j < 16; j++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int   px = 8 * j + 2 * (lane & 3) + e;
                        const T     v  = ck__f2h<T>(acc[4 * j + 2 * hh + e] + bs);
                        const float f  = ck__h2f(v);
                        acc[4 * j + 2 * hh + e] = f;
                        *reinterpret_cast<T *>(stage + px * 128 + ((((oc >> 3) ^ (px & 7))) << 4) + (oc & 7) * 2) = v;
                        if (px < nvalid) sum += f;
                    }
                for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
                const float mean = sum / (float)(8 * nvalid);
                float       m2   = 0.0f;
#pragma unroll
                for (int j = 0; j < 16; j++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int   px = 8 * j + 2 * (lane & 3) + e;
                        const float dv = acc[4 * j + 2 * hh + e] - mean;
                        if (px < nvalid) m2 += dv * dv;
                    }
                for (int o = 16; o > 0; o >>= 1) m2 += __shfl_xor_sync(0xffffffffu, m2, o);
                if (lane == 0)
                    p.moments[(((int64_t)b * p.H + y) * p.nseg + seg) * 8 + 2 * warp + hh] = make_float2(mean, m2);
            }
            ck__bar_sync_n(bar_id, 128); /* the staging tile is complete; the new slot is visible */
            uint4 *yrow = p.y + (((int64_t)b * p.h + i) * p.W + x0) * 8;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const int c = t + 128 * j, px = c >> 3, ch = c & 7;
                if (px < nvalid) yrow[c] = *reinterpret_cast<const uint4 *>(stage + px * 128 + ((ch ^ (px & 7)) << 4));
            }
            rot = rot == 2 ? 0 : rot + 1;
        }
    }
#else
    (void)p;
    __trap(); /* never launched: the host sees no marker in this image */
#endif
}

template <typename T, int D, int CIN, bool RES> int launch(const ck__rconv_args *a, cudaStream_t stream) {
    auto kern = refiner_conv_kernel<T, D, CIN, RES>;
    if (!ck__sm90a_ready((const void *)kern)) return 0;
    Params p;
    p.x = (const uint4 *)a->x, p.y = (uint4 *)a->y, p.w = a->w;
    p.res = (const uint4 *)a->residual, p.xo = (uint4 *)a->a_out;
    p.bias = a->bias, p.stats = a->stats, p.gamma = a->gamma, p.beta = a->beta;
    p.moments = (float2 *)a->moments;
    p.B = a->B, p.H = a->H, p.W = a->W, p.row0 = a->row0, p.h = a->h;
    p.nseg = (a->W + kSeg - 1) / kSeg;
    /* Chains: the warpgroups take tasks round-robin, so the forward lasts as many rounds as the busiest one
     * has tasks. Take the rounds chains of about 32 steps need, then the shortest chain whose tasks fit in
     * those rounds: a band of 410 rows at 2048 is one round of 26-step chains (chains capped at 32 would
     * give 2.1 rounds' worth of tasks, the busiest warpgroup 3 and most of them 2). */
    const int64_t nwg     = 2 * (int64_t)(a->sm_count > 0 ? a->sm_count : 1);
    const int64_t steps   = (int64_t)a->B * a->h * p.nseg;
    const int     per_res = (a->h + D - 1) / D; /* the longest chain of one residue class */
    const int64_t rounds  = (steps + nwg * 32 - 1) / (nwg * 32);
    int64_t       chain   = (steps + nwg * rounds - 1) / (nwg * rounds);
    if (chain < 4) chain = 4;
    while (chain < per_res &&
           (int64_t)a->B * D * ((per_res + chain - 1) / chain) * p.nseg > nwg * rounds)
        chain++;
    p.chain             = (int)(chain < per_res ? chain : per_res);
    p.pieces            = (per_res + p.chain - 1) / p.chain;
    const int64_t tasks = (int64_t)a->B * D * p.pieces * p.nseg;
    if (tasks > INT32_MAX) return 0;
    p.tasks = (int)tasks;
    const int64_t blocks = (tasks + kWG - 1) / kWG;
    const int     grid   = (int)(blocks < a->sm_count ? blocks : (a->sm_count > 0 ? a->sm_count : 1));
    if (cudaFuncSetAttribute((const void *)kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes(D, CIN)) !=
        cudaSuccess)
        return 0;
    CK_RCONV_LAUNCH(kern, dim3((unsigned)grid), dim3(kThreads), (size_t)smem_bytes(D, CIN), stream, p);
    return 1;
}

template <typename T, bool RES> int launch_d64(const ck__rconv_args *a, cudaStream_t stream) {
    switch (a->dilation) {
    case 1: return launch<T, 1, 64, RES>(a, stream);
    case 2: return launch<T, 2, 64, RES>(a, stream);
    case 4: return launch<T, 4, 64, RES>(a, stream);
    case 8: return launch<T, 8, 64, RES>(a, stream);
    default: return 0;
    }
}

template <typename T> int launch_d(const ck__rconv_args *a, cudaStream_t stream) {
    if ((a->residual || a->a_out) && (!a->stats || a->in_channels != 64)) return 0;
    if (a->in_channels == 8) return a->dilation == 1 && !a->stats ? launch<T, 1, 8, false>(a, stream) : 0;
    if (a->in_channels != 64) return 0;
    return a->residual ? launch_d64<T, true>(a, stream) : launch_d64<T, false>(a, stream);
}

} /* namespace */

extern "C" size_t ck__refiner_conv_smem(int dilation, int in_channels) {
    return (size_t)(in_channels == 8 ? smem_bytes(dilation, 8) : smem_bytes(dilation, 64));
}

extern "C" int ck__refiner_conv(const ck__rconv_args *a, cudaStream_t stream) {
    const uintptr_t al = (uintptr_t)a->x | (uintptr_t)a->y | (uintptr_t)a->w | (uintptr_t)a->residual |
                         (uintptr_t)a->a_out;
    if ((al & 15) || ((uintptr_t)a->moments & 7) || a->B < 1 || a->H < 1 || a->W < 1 || a->h < 1 || a->row0 < 0 || a->row0 + a->h > a->H ||
        (int64_t)a->B * a->H * a->W > INT32_MAX / 8 * 8)
        return 0;
    return a->bf16 ? launch_d<__nv_bfloat16>(a, stream) : launch_d<__half>(a, stream);
}
