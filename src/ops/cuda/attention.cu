/* Fused scaled-dot-product attention on CUDA: o (G,Tq,HD) = softmax(q·kᵀ·scale)·v, online softmax,
 * no Tq×Tk score matrix in memory. CPU oracle: src/ops/cpu/attention.c. Bench and validation over the
 * model's shapes: dev/cuda/attention_bench.cu; host emulation of the warp-level code:
 * dev/cuda/attention_emu.cpp.
 * ref: Dao, "FlashAttention-2" (2023), §3 (one warp owns a slice of query rows, P stays in registers);
 *      Shah et al., "FlashAttention-3" (2024), §3.2 (softmax of one tile overlapping the GEMMs of another);
 *      PTX ISA, "Matrix Fragments for mma.m16n8k16", "ldmatrix", "Asynchronous Warpgroup Level Matrix
 *      Multiply-Accumulate" (register layouts, shared-memory matrix descriptors).
 *
 * Kernels (attention.h lists the variants):
 *   attention_flash_kernel  bf16/f16, HD ∈ {8,16,32,56,64}. A block owns BQ = 64 or 128 queries of one group
 *                           (4 warps × 16 or 32 rows); K/V tiles of 64 keys are double-buffered through
 *                           cp.async; S = Q·Kᵀ and O += P·V run on mma.sync m16n8k16 with fp32 accumulators,
 *                           P is re-packed from the S accumulators into A fragments without touching memory.
 *   attention_small_kernel  the same warp code for Hiera mask units (Tq <= 16, Tk <= 64): one group per warp,
 *                           several groups per block, a single K/V tile, nothing padded to 64 query rows.
 *   attention_window_kernel the attention_qkv op's mask units (Tq, Tk <= 64): the small kernel's warp code with
 *                           each window's rows read where they lie in the qkv projection (q-pool's 2×2 max
 *                           taken while loading) and written where the token layout wants them.
 *   attention_wgmma_kernel  Hopper (sm_90a images, compute capability 9.0): wgmma.mma_async with Q and P in
 *                           registers, K/V from 128-byte-swizzled shared tiles in a 4-stage cp.async ring, the
 *                           softmax of tile j overlapping P·V of tile j-1 (FlashAttention-3 direction, without
 *                           TMA or warp specialization). Chosen for 4096+ keys where the FA3 kernel declines (HD 56).
 *   attention_fa3_kernel    Hopper, HD 64 (attention_fa3.cuh): a TMA producer warpgroup feeding 128-key K/V tiles
 *                           through an mbarrier ring to two or three wgmma consumer warpgroups (setmaxnreg,
 *                           ping-pong issue order); the last partial wave's tiles split over keys. The automatic
 *                           choice for global rows of 4096+ keys.
 *   attention_simt_kernel   fp32 FMAs, one thread per query row; the f32 parity path (and other head dims).
 *
 * Head dim 56 runs natively in the mma.sync kernels: shared-memory rows are 7 chunks of 16 bytes, Q·Kᵀ does
 * three k16 MMA steps and one k8 step (exactly 56 products), P·V writes 7 n-tiles; nothing reads the 8 columns
 * a 64-wide layout would pad. HD = 64 (the "pad64" layout, columns 56..63 zero in the inputs) is simply the
 * D = 64 instantiation.
 *
 * Rules kept: nothing is allocated and nothing synchronizes (CUDA-Graph capturable); launches go to
 * ck_cuda_stream(be); grids are 1-D in x (G up to 2^31/blocks-per-group); global offsets are int64;
 * out-of-range keys are masked to -inf before the row max and out-of-range query rows are never stored.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cuda.h> /* CUtensorMap and its enums (the encoder itself is fetched from the driver at run time) */

#include "ops/cuda/attention.h"
#include "ops/cuda/hopper.cuh"

#ifndef CK_ATTN_LAUNCH
#define CK_ATTN_LAUNCH(kern, grid, block, stream, ...) kern<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__)
#define CK_ATTN_LAUNCH_SMEM(kern, grid, block, smem, stream, ...) \
    kern<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__)
#endif

namespace {

constexpr float kCkLog2e = 1.4426950408889634f;

/* ---------------------------------------------------------------------------------------------------------
 * Warp-level primitives (PTX). A host emulation build (CK_ATTN_EMU) supplies its own versions with the same
 * signatures, so the kernels below are the code that the emulator runs.
 * ------------------------------------------------------------------------------------------------------- */
#ifndef CK_ATTN_EMU
/* (shared addresses, cp.async: ops/cuda/hopper.cuh; rows past Tq / Tk land as zeros, and V rows must be finite:
 * 0·NaN is NaN) */

/* Four 8×8 b16 matrices; lane l supplies the row address of row l%8 of matrix l/8. Lane t receives, of
 * matrix i, row t/4 columns 2(t%4), 2(t%4)+1 in r[i] (low half = lower column). */
__device__ __forceinline__ void ck__ldsm_x4(uint32_t (&r)[4], const void *smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(ck__smem_addr(smem)));
}
/* Transposed: lane t receives, of matrix i, rows 2(t%4), 2(t%4)+1 of column t/4. */
__device__ __forceinline__ void ck__ldsm_x4_t(uint32_t (&r)[4], const void *smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(ck__smem_addr(smem)));
}

/* d (16×8, f32) += a (16×16, row) · b (16×8, col). */
template <typename T>
__device__ __forceinline__ void ck__mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    if constexpr (std::is_same<T, __nv_bfloat16>::value)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
/* d (16×8, f32) += a (16×8, row) · b (8×8, col): the last half k-step when HD % 16 == 8. */
template <typename T>
__device__ __forceinline__ void ck__mma_1688(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
    if constexpr (std::is_same<T, __nv_bfloat16>::value)
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(b0));
    else
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a0), "r"(a1), "r"(b0));
}

/* 2^x on the MUFU unit with denormal results flushed to zero (p < 2^-126 contributes nothing anyway); plain
 * exp2f adds a range check and two multiplies around the same instruction. exp2(-inf) = +0. */
__device__ __forceinline__ float ck__exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* Hopper warpgroup MMA, compiled only into sm_90a images (the wgmma kernel's body is guarded the same way). */
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* (the marker store, the dynamic shared memory, wgmma's fence / commit / wait, the proxy fence and the register
 * fence: ops/cuda/hopper.cuh) */
/* d (64×64 per warpgroup, f32) (+)= a (64×16, registers: the warp's 16 rows in the mma.sync A layout) · B (16×64)
 * from shared memory: TB = 0, B[k][n] at row n, column k of a K-major tile (K); TB = 1, at row k, column n of
 * an N-major tile (V). accumulate = 0 overwrites d. */
#define CK__WGMMA_64_RS(TY)                                                                                 \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                                           \
    "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {"                                             \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"  \
    "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"  \
    "}, {%32,%33,%34,%35}, %36, p, 1, 1, %38;\n}\n"
#define CK__WGMMA_D32(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),  \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),  \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),  \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
template <typename T, int TB>
__device__ __forceinline__ void ck__wgmma_64(float (&d)[32], const uint32_t (&a)[4], uint64_t desc, int accumulate) {
    if constexpr (std::is_same<T, __nv_bfloat16>::value)
        asm volatile(CK__WGMMA_64_RS("bf16")
                     : CK__WGMMA_D32(d)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate), "n"(TB));
    else
        asm volatile(CK__WGMMA_64_RS("f16")
                     : CK__WGMMA_D32(d)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate), "n"(TB));
}
/* The same with N = 56 (d: 64×56, the first 28 of the N = 64 form's accumulators, in the same places): O += P·V
 * of a head of 56 columns computes no padding columns (the FA3 kernel's PV = 56). */
#define CK__WGMMA_56_RS(TY)                                                                                 \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %33, 0;\n"                                                           \
    "wgmma.mma_async.sync.aligned.m64n56k16.f32." TY "." TY " {"                                             \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"  \
    "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27"  \
    "}, {%28,%29,%30,%31}, %32, p, 1, 1, %34;\n}\n"
#define CK__WGMMA_D28(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),  \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),  \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),  \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27])
template <typename T, int TB>
__device__ __forceinline__ void ck__wgmma_56(float (&d)[28], const uint32_t (&a)[4], uint64_t desc, int accumulate) {
    if constexpr (std::is_same<T, __nv_bfloat16>::value)
        asm volatile(CK__WGMMA_56_RS("bf16")
                     : CK__WGMMA_D28(d)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate), "n"(TB));
    else
        asm volatile(CK__WGMMA_56_RS("f16")
                     : CK__WGMMA_D28(d)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(accumulate), "n"(TB));
}
#endif
#endif /* CK_ATTN_EMU */

template <typename T> __device__ __forceinline__ uint32_t ck__pack2(float lo, float hi) {
    uint32_t u;
    if constexpr (std::is_same<T, __nv_bfloat16>::value) {
        const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        memcpy(&u, &h, 4);
    } else {
        const __half2 h = __floats2half2_rn(lo, hi);
        memcpy(&u, &h, 4);
    }
    return u;
}

__device__ __forceinline__ float ck__to_f32(float x) { return x; }
__device__ __forceinline__ float ck__to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float ck__to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T ck__from_f32(float x) {
    if constexpr (std::is_same<T, float>::value) return x;
    else if constexpr (std::is_same<T, __half>::value) return __float2half_rn(x);
    else return __float2bfloat16_rn(x);
}

/* ---------------------------------------------------------------------------------------------------------
 * Shared-memory tiles of 16-bit elements: R rows × D columns, stored as 16-byte chunks, RC = D/8 per row;
 * (row r, chunk c) lives at chunk index ck__swz<D>(r, c). ldmatrix reads 8 rows at one logical chunk and
 * must hit 8 distinct 16-byte bank groups: 112-byte rows (D = 56, RC = 7 odd) already do; power-of-two
 * row widths XOR the chunk with a row-dependent value (128-byte rows: c ^ (r & 7)).
 * ------------------------------------------------------------------------------------------------------- */
template <int D> __device__ __forceinline__ int ck__swz(int r, int c) {
    constexpr int RC = D / 8;
    if constexpr ((RC & (RC - 1)) == 0) return r * RC + (c ^ ((r / (8 / RC)) & (RC - 1)));
    else return r * RC + c;
}

/* Rows [0, R) of a tile whose rows are contiguous in global memory (row r at src + r·D); rows >= nvalid
 * are zero-filled. NT threads (thread index tid) share the copies; the caller commits the group. */
template <int D, int R, int NT, typename T>
__device__ __forceinline__ void ck__load_tile(uint4 *s, const T *src, int nvalid, int tid) {
    constexpr int RC = D / 8, N = R * RC;
#pragma unroll
    for (int j = 0; j < (N + NT - 1) / NT; j++) {
        const int i = tid + j * NT;
        if (N % NT == 0 || i < N) {
            const int  r  = i / RC, c = i - r * RC;
            const bool ok = r < nvalid;
            ck__cp_async16(&s[ck__swz<D>(r, c)], ok ? src + (int64_t)i * 8 : src, ok);
        }
    }
}

/* A fragments of Q for the warp's MT m-tiles starting at tile row row0: qf[mt][ks] covers columns
 * [16ks, 16ks+16) (the k8 tail step uses qf[mt][KS-1][0..1] only). */
template <int D, int MT>
__device__ __forceinline__ void ck__load_q_frags(uint32_t (&qf)[MT][(D + 15) / 16][4], const uint4 *sQ, int row0,
                                                 int lane) {
    constexpr int KS = (D + 15) / 16, RC = D / 8;
    const int     i = lane >> 3, r = lane & 7;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            const int row = row0 + mt * 16 + r + (i & 1) * 8, c = ks * 2 + (i >> 1);
            ck__ldsm_x4(qf[mt][ks], &sQ[ck__swz<D>(row, c < RC ? c : RC - 1)]);
        }
}

/* s (MT m-tiles × NN key n-tiles, C fragments) = Q · Kᵀ over the tile's first 8·NN keys. */
template <typename T, int D, int MT, int NN>
__device__ __forceinline__ void ck__qk(float (&s)[MT][NN][4], const uint32_t (&qf)[MT][(D + 15) / 16][4],
                                       const uint4 *sK, int lane) {
    constexpr int  KS = (D + 15) / 16, RC = D / 8;
    constexpr bool KTAIL = D % 16 != 0;
    const int      i = lane >> 3, r = lane & 7;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NN; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < KS; ks++)
#pragma unroll
        for (int np = 0; np < NN / 2; np++) {
            /* matrices: keys +0..7 / cols 16ks+0..7, keys +0..7 / +8..15, keys +8..15 / +0..7, keys +8..15 / +8..15
             * = (b0, b1) of n-tile 2np, then (b0, b1) of n-tile 2np+1 */
            uint32_t  kb[4];
            const int key = np * 16 + r + (i >> 1) * 8, c = ks * 2 + (i & 1);
            ck__ldsm_x4(kb, &sK[ck__swz<D>(key, c < RC ? c : RC - 1)]);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                if (KTAIL && ks == KS - 1) {
                    ck__mma_1688<T>(s[mt][2 * np], qf[mt][ks][0], qf[mt][ks][1], kb[0]);
                    ck__mma_1688<T>(s[mt][2 * np + 1], qf[mt][ks][0], qf[mt][ks][1], kb[2]);
                } else {
                    ck__mma_16816<T>(s[mt][2 * np], qf[mt][ks], kb[0], kb[1]);
                    ck__mma_16816<T>(s[mt][2 * np + 1], qf[mt][ks], kb[2], kb[3]);
                }
            }
        }
}

/* Keys at tile index >= nvalid get -inf, so they drop out of the row max and get p = 0. */
template <int MT, int NN> __device__ __forceinline__ void ck__mask_keys(float (&s)[MT][NN][4], int nvalid, int lane) {
    const int k0 = (lane & 3) * 2;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NN; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (nt * 8 + k0 + (e & 1) >= nvalid) s[mt][nt][e] = -INFINITY;
}

/* Online softmax over one key tile. A thread holds rows g (h = 0) and g+8 (h = 1) of each m-tile; the four
 * lanes of a quad share a row, so the max is reduced across the quad while the sum l stays per lane until
 * the end (the rescale factor is quad-uniform). The max is taken on raw scores (scale > 0, checked by the
 * launcher) and exp2 gets s·scale·log2e − m·scale·log2e in one FMA. Turns s into p in place, updates m and l
 * and leaves the factor for O in corr; returns (warp-uniform) whether any row of the warp moved its max, i.e.
 * whether O needs the rescale at all: once the running max has settled (most tiles of a long row) the multiply
 * of O by exactly 1 is skipped. */
template <int MT, int NN>
__device__ __forceinline__ bool ck__softmax_tile(float (&s)[MT][NN][4], float (&m)[MT][2], float (&l)[MT][2],
                                                 float (&corr)[MT][2], float sl2) {
    bool moved = false;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float mx = m[mt][h];
#pragma unroll
            for (int nt = 0; nt < NN; nt++) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            /* the first tile has at least one real key, so mx is finite; m = -inf there gives corr = 0 */
            corr[mt][h]    = ck__exp2((m[mt][h] - mx) * sl2);
            moved         |= mx != m[mt][h];
            const float mb = mx * sl2;
            m[mt][h]       = mx;
            float rs       = 0.0f;
#pragma unroll
            for (int nt = 0; nt < NN; nt++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const float p = ck__exp2(fmaf(s[mt][nt][2 * h + e], sl2, -mb));
                    s[mt][nt][2 * h + e] = p;
                    rs += p;
                }
            l[mt][h] = fmaf(l[mt][h], corr[mt][h], rs);
        }
    return __any_sync(0xffffffffu, moved);
}

template <int MT, int NO> __device__ __forceinline__ void ck__rescale_o(float (&o)[MT][NO][4], const float (&corr)[MT][2]) {
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int no = 0; no < NO; no++) {
            o[mt][no][0] *= corr[mt][0];
            o[mt][no][1] *= corr[mt][0];
            o[mt][no][2] *= corr[mt][1];
            o[mt][no][3] *= corr[mt][1];
        }
}

template <int MT, int NN, int NO>
__device__ __forceinline__ void ck__online_softmax(float (&s)[MT][NN][4], float (&o)[MT][NO][4], float (&m)[MT][2],
                                                   float (&l)[MT][2], float sl2) {
    float corr[MT][2];
    if (ck__softmax_tile<MT, NN>(s, m, l, corr, sl2)) ck__rescale_o<MT, NO>(o, corr);
}

/* P as A fragments: the C fragments of S n-tiles 2kk and 2kk+1 are exactly the A fragment of key k-step kk
 * (rows g/g+8, columns 2(t%4)+{0,1} and +8). */
template <typename T, int MT, int NN>
__device__ __forceinline__ void ck__pack_p(uint32_t (&pa)[MT][4], const float (&p)[MT][NN][4], int kk) {
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        pa[mt][0] = ck__pack2<T>(p[mt][2 * kk][0], p[mt][2 * kk][1]);
        pa[mt][1] = ck__pack2<T>(p[mt][2 * kk][2], p[mt][2 * kk][3]);
        pa[mt][2] = ck__pack2<T>(p[mt][2 * kk + 1][0], p[mt][2 * kk + 1][1]);
        pa[mt][3] = ck__pack2<T>(p[mt][2 * kk + 1][2], p[mt][2 * kk + 1][3]);
    }
}

/* o (MT × D/8 n-tiles) += P · V over the tile's first 8·NN keys. */
template <typename T, int D, int MT, int NN>
__device__ __forceinline__ void ck__pv(float (&o)[MT][D / 8][4], const float (&p)[MT][NN][4], const uint4 *sV,
                                       int lane) {
    constexpr int NO = D / 8, RC = D / 8;
    const int     i = lane >> 3, r = lane & 7;
#pragma unroll
    for (int kk = 0; kk < NN / 2; kk++) {
        uint32_t pa[MT][4];
        ck__pack_p<T, MT, NN>(pa, p, kk);
#pragma unroll
        for (int dp = 0; dp < (NO + 1) / 2; dp++) {
            /* transposed matrices: keys +0..7 / cols 16dp+0..7, keys +8..15 / +0..7, keys +0..7 / +8..15,
             * keys +8..15 / +8..15 = (b0, b1) of output n-tile 2dp, then of 2dp+1 */
            uint32_t  vb[4];
            const int key = kk * 16 + r + (i & 1) * 8, c = dp * 2 + (i >> 1);
            ck__ldsm_x4_t(vb, &sV[ck__swz<D>(key, c < RC ? c : RC - 1)]);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                ck__mma_16816<T>(o[mt][2 * dp], pa[mt], vb[0], vb[1]);
                if (2 * dp + 1 < NO) ck__mma_16816<T>(o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
            }
        }
    }
}

/* Normalizes the warp's rows [row0, row0 + 16·MT) of a block and stages them as T in `stage` (the block's Q
 * tile, free by now: each warp only ever read its own rows of it). */
template <typename T, int D, int MT>
__device__ __forceinline__ void ck__stage_o(uint4 *stage, int row0, float (&o)[MT][D / 8][4], const float (&l)[MT][2],
                                            int lane) {
    constexpr int NO = D / 8;
    const int     g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float lt = l[mt][h];
            lt += __shfl_xor_sync(0xffffffffu, lt, 1);
            lt += __shfl_xor_sync(0xffffffffu, lt, 2);
            const float inv = 1.0f / lt;
            const int   row = row0 + mt * 16 + g + 8 * h;
#pragma unroll
            for (int no = 0; no < NO; no++)
                reinterpret_cast<uint32_t *>(&stage[ck__swz<D>(row, no)])[t] =
                    ck__pack2<T>(o[mt][no][2 * h] * inv, o[mt][no][2 * h + 1] * inv);
        }
}

/* ck__stage_o, then the rows < nrows written to Ob with 16-byte coalesced stores (the warp's rows are
 * contiguous in global memory, rs elements apart). */
template <typename T, int D, int MT>
__device__ __forceinline__ void ck__store_o(T *Ob, uint4 *stage, int row0, int nrows, float (&o)[MT][D / 8][4],
                                            const float (&l)[MT][2], int lane, int64_t rs = D, int cols8 = D / 8) {
    constexpr int RC = D / 8, N = 16 * MT * RC;
    ck__stage_o<T, D, MT>(stage, row0, o, l, lane);
    __syncwarp();
#pragma unroll
    for (int j = 0; j < (N + 31) / 32; j++) {
        const int idx = lane + j * 32;
        if (N % 32 == 0 || idx < N) {
            const int r = idx / RC, c = idx - r * RC, row = row0 + r;
            if (row < nrows && c < cols8) *reinterpret_cast<uint4 *>(Ob + (int64_t)row * rs + c * 8) = stage[ck__swz<D>(row, c)];
        }
    }
}

/* ---------------------------------------------------------------------------------------------------------
 * FlashAttention-2-style kernel. Block = NW warps = BQ = 16·MT·NW queries of one group; grid.x = G · nqb
 * (query blocks of a group adjacent, so they share the group's K/V in L2).
 * Shared memory: sQ (BQ, D) + sK, sV (2 stages, 64, D); 48 KiB at D = 64, MT = 2 (the static limit).
 * Pipeline: tile t+1 is in flight (cp.async) while tile t is computed; the trailing __syncthreads of
 * iteration t protects stage t&1 from the copy issued at the top of iteration t+1.
 * MT = 2 (32 rows per warp) halves the shared-memory traffic per MMA (each K/V fragment feeds two m-tiles),
 * which is what keeps the tensor cores fed on the long global-attention rows; MT = 1 gives twice the
 * blocks for short sequences and Tq = 64 windows.
 * ------------------------------------------------------------------------------------------------------- */
template <typename T, int D, int MT, int NW>
__global__ void __launch_bounds__(NW * 32, MT == 2 ? 2 : 3)
    attention_flash_kernel(T *__restrict__ O, const T *__restrict__ Q, const T *__restrict__ K,
                           const T *__restrict__ V, int Tq, int Tk, int nqb, float sl2) {
    constexpr int BQ = 16 * MT * NW, BK = 64, NN = BK / 8, RC = D / 8, NT = NW * 32;
    constexpr int KS = (D + 15) / 16, NO = D / 8;
    __shared__ __align__(128) uint4 sQ[BQ * RC];    /* (BQ, D), later the output staging tile */
    __shared__ __align__(128) uint4 sK[2][BK * RC]; /* (2, BK, D) */
    __shared__ __align__(128) uint4 sV[2][BK * RC]; /* (2, BK, D) */

    const int     tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int64_t g   = (int64_t)blockIdx.x / nqb;
    const int     q0  = (int)((int64_t)blockIdx.x - g * nqb) * BQ;
    const T      *Qb  = Q + ((int64_t)g * Tq + q0) * D; /* (BQ, D) rows of this block */
    const T      *Kg  = K + (int64_t)g * Tk * D;        /* (Tk, D) */
    const T      *Vg  = V + (int64_t)g * Tk * D;        /* (Tk, D) */
    T            *Ob  = O + ((int64_t)g * Tq + q0) * D;
    const int     nkt = (Tk + BK - 1) / BK;
    const int     row0 = warp * 16 * MT;

    ck__load_tile<D, BQ, NT>(sQ, Qb, Tq - q0, tid);
    ck__load_tile<D, BK, NT>(sK[0], Kg, Tk, tid);
    ck__load_tile<D, BK, NT>(sV[0], Vg, Tk, tid);
    ck__cp_async_commit();

    float    o[MT][NO][4];
    float    m[MT][2], l[MT][2];
    uint32_t qf[MT][KS][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        m[mt][0] = m[mt][1] = -INFINITY;
        l[mt][0] = l[mt][1] = 0.0f;
#pragma unroll
        for (int no = 0; no < NO; no++) o[mt][no][0] = o[mt][no][1] = o[mt][no][2] = o[mt][no][3] = 0.0f;
    }

    for (int t = 0; t < nkt; t++) {
        const int st = t & 1;
        if (t + 1 < nkt) {
            const int64_t off = (int64_t)(t + 1) * BK * D;
            ck__load_tile<D, BK, NT>(sK[st ^ 1], Kg + off, Tk - (t + 1) * BK, tid);
            ck__load_tile<D, BK, NT>(sV[st ^ 1], Vg + off, Tk - (t + 1) * BK, tid);
            ck__cp_async_commit();
            ck__cp_async_wait<1>();
        } else {
            ck__cp_async_wait<0>();
        }
        __syncthreads();
        if (t == 0) ck__load_q_frags<D, MT>(qf, sQ, row0, lane);

        float s[MT][NN][4];
        ck__qk<T, D, MT, NN>(s, qf, sK[st], lane);
        if ((t + 1) * BK > Tk) ck__mask_keys<MT, NN>(s, Tk - t * BK, lane);
        ck__online_softmax<MT, NN, NO>(s, o, m, l, sl2);
        ck__pv<T, D, MT, NN>(o, s, sV[st], lane);
        __syncthreads();
    }
    ck__store_o<T, D, MT>(Ob, sQ, row0, Tq - q0, o, l, lane);
}

/* ---------------------------------------------------------------------------------------------------------
 * Mask-unit kernel: Tq <= 16 and Tk <= NKT (16, 32 or 64). Warp w of block b owns group b·NW + w alone:
 * its Q (16 rows, rows >= Tq zero), K and V (NKT rows, rows >= Tk zero) in its own shared slots, one tile,
 * no block barrier (a warp past G leaves at once). Memory bound at these sizes, so what matters is that
 * every byte moved is a real row and that many warps have their copies in flight.
 * ------------------------------------------------------------------------------------------------------- */
template <int D, int NKT> struct ck__small_cfg {
    static constexpr int warp_bytes = (16 + 2 * NKT) * (D / 8) * 16;
    static constexpr int NW = 48 * 1024 / warp_bytes < 4 ? 48 * 1024 / warp_bytes : 4;
};

template <typename T, int D, int NKT>
__global__ void __launch_bounds__(ck__small_cfg<D, NKT>::NW * 32)
    attention_small_kernel(T *__restrict__ O, const T *__restrict__ Q, const T *__restrict__ K,
                           const T *__restrict__ V, int64_t G, int Tq, int Tk, float sl2) {
    constexpr int NW = ck__small_cfg<D, NKT>::NW, RC = D / 8, NN = NKT / 8, KS = (D + 15) / 16, NO = D / 8;
    __shared__ __align__(128) uint4 sQ[NW][16 * RC];  /* per warp (16, D), later the output staging tile */
    __shared__ __align__(128) uint4 sK[NW][NKT * RC]; /* per warp (NKT, D) */
    __shared__ __align__(128) uint4 sV[NW][NKT * RC]; /* per warp (NKT, D) */

    const int     warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t g    = (int64_t)blockIdx.x * NW + warp;
    if (g >= G) return;
    ck__load_tile<D, 16, 32>(sQ[warp], Q + g * Tq * D, Tq, lane);
    ck__load_tile<D, NKT, 32>(sK[warp], K + g * Tk * D, Tk, lane);
    ck__load_tile<D, NKT, 32>(sV[warp], V + g * Tk * D, Tk, lane);
    ck__cp_async_commit();
    ck__cp_async_wait<0>();
    __syncwarp();

    uint32_t qf[1][KS][4];
    ck__load_q_frags<D, 1>(qf, sQ[warp], 0, lane);
    float s[1][NN][4];
    ck__qk<T, D, 1, NN>(s, qf, sK[warp], lane);
    if (Tk < NKT) ck__mask_keys<1, NN>(s, Tk, lane);
    float o[1][NO][4], m[1][2] = {{-INFINITY, -INFINITY}}, l[1][2] = {{0.0f, 0.0f}};
#pragma unroll
    for (int no = 0; no < NO; no++) o[0][no][0] = o[0][no][1] = o[0][no][2] = o[0][no][3] = 0.0f;
    ck__online_softmax<1, NN, NO>(s, o, m, l, sl2);
    ck__pv<T, D, 1, NN>(o, s, sV[warp], lane);
    __syncwarp(); /* every lane's ldmatrix of sQ is done before it becomes the staging tile */
    ck__store_o<T, D, 1>(O + g * Tq * D, sQ[warp], 0, Tq, o, l, lane);
}

/* ---------------------------------------------------------------------------------------------------------
 * Windowed attention straight from the qkv projection (the attention_qkv op's path for Hiera mask units,
 * ck__attention_windows): group g = (image b, head h, window wi) of the composition gather → attention →
 * scatter reads its keys, values and queries where they lie in qkv (B, H, W, 3C) and writes its output rows
 * where the scatter would put them in y (B, Hq, Wq, C), so neither the (G, T, HDp) copies nor their padding
 * exist. Rows are HD = D elements (no head-dim padding: 56 runs natively). Queries of q-pooling blocks are the
 * max of their 2×2 tokens, taken while loading (a max of 16-bit values is exact: the gather's bits).
 * Block = GPB groups × QW warps; warp qwi of a group owns query rows [16·qwi, 16·qwi + 16); Tk ≤ NKT ≤ 64 keys
 * in one tile (rows ≥ Tk zero-filled and masked), so the softmax is the small kernel's single tile.
 * ------------------------------------------------------------------------------------------------------- */
struct ck__win_map {
    int64_t H, W, C;    /* qkv (B, H, W, 3C), C = heads·HD */
    int64_t Hq, Wq;     /* y (B, Hq, Wq, C) */
    int     heads, win_h, win_w, nwx, nwin, q_pool;
    int     Tq, Tk;     /* query rows (pooled) and keys per window */
};

template <int D, int NKT, int QW> struct ck__win_cfg {
    static constexpr int group_bytes = (16 * QW + 2 * NKT) * (D / 8) * 16;
    static constexpr int fit = 48 * 1024 / group_bytes, most = 4 / QW;
    static constexpr int GPB = fit < 1 ? 1 : fit < most ? fit : most;
    static constexpr int NW  = GPB * QW;
};

/* Element offsets in qkv of key row t (channel 0 of its head's q part; + C: k, + 2C: v), of query row t's
 * top-left token, and in y of output row t, for the group at (b, h, wy, wx). */
__device__ __forceinline__ int64_t ck__win_tok(const ck__win_map &m, int64_t b, int h, int wy, int wx, int t, int tw,
                                               int step) {
    const int64_t yy = (int64_t)wy * m.win_h + step * (t / tw), xx = (int64_t)wx * m.win_w + step * (t % tw);
    return ((b * m.H + yy) * m.W + xx) * 3 * m.C + (int64_t)h * (m.C / m.heads);
}
__device__ __forceinline__ int64_t ck__win_out(const ck__win_map &m, int64_t b, int h, int wy, int wx, int t) {
    const int     oh = m.q_pool ? m.win_h / 2 : m.win_h, ow = m.q_pool ? m.win_w / 2 : m.win_w;
    const int64_t yy = (int64_t)wy * oh + t / ow, xx = (int64_t)wx * ow + t % ow;
    return ((b * m.Hq + yy) * m.Wq + xx) * m.C + (int64_t)h * (m.C / m.heads);
}

__device__ __forceinline__ float ck__ldf(__half x) { return __half2float(x); }
__device__ __forceinline__ float ck__ldf(__nv_bfloat16 x) { return __bfloat162float(x); }

/* The larger of each pair of 16-bit lanes of a and b (exact; NaN-free inputs). */
template <typename T> __device__ __forceinline__ uint32_t ck__max2(uint32_t a, uint32_t b) {
    T ta[2], tb[2];
    memcpy((void *)ta, &a, 4), memcpy((void *)tb, &b, 4);
    for (int j = 0; j < 2; j++)
        if (ck__ldf(tb[j]) > ck__ldf(ta[j])) ta[j] = tb[j];
    uint32_t r;
    memcpy(&r, (const void *)ta, 4);
    return r;
}

template <typename T, int D, int NKT, int QW>
__global__ void __launch_bounds__(ck__win_cfg<D, NKT, QW>::NW * 32)
    attention_window_kernel(T *__restrict__ Y, const T *__restrict__ X, ck__win_map mp, int64_t G, float sl2) {
    constexpr int GPB = ck__win_cfg<D, NKT, QW>::GPB, RC = D / 8, NN = NKT / 8, KS = (D + 15) / 16, NO = D / 8;
    constexpr int QR = 16 * QW, GT = 32 * QW;
    __shared__ __align__(128) uint4 sQ[GPB][QR * RC];  /* per group (QR, D), later the output staging tile */
    __shared__ __align__(128) uint4 sK[GPB][NKT * RC]; /* per group (NKT, D) */
    __shared__ __align__(128) uint4 sV[GPB][NKT * RC]; /* per group (NKT, D) */

    const int     warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int     slot = warp / QW, qwi = warp - slot * QW, gt = (int)threadIdx.x - slot * GT;
    const int64_t g    = (int64_t)blockIdx.x * GPB + slot;
    const bool    live = g < G;
    const int64_t bh   = live ? g / mp.nwin : 0;
    const int     wi = (int)(g - bh * mp.nwin), wy = wi / mp.nwx, wx = wi - wy * mp.nwx;
    const int64_t b  = bh / mp.heads;
    const int     h  = (int)(bh - b * mp.heads);
    if (live) {
        for (int i = gt; i < NKT * RC; i += GT) {
            const int      r = i / RC, c = i - r * RC;
            const bool     ok  = r < mp.Tk;
            const T       *src = ok ? X + ck__win_tok(mp, b, h, wy, wx, r, mp.win_w, 1) + c * 8 : X;
            ck__cp_async16(&sK[slot][ck__swz<D>(r, c)], ok ? src + mp.C : X, ok);
            ck__cp_async16(&sV[slot][ck__swz<D>(r, c)], ok ? src + 2 * mp.C : X, ok);
        }
        if (!mp.q_pool) {
            for (int i = gt; i < QR * RC; i += GT) {
                const int  r = i / RC, c = i - r * RC;
                const bool ok = r < mp.Tq;
                ck__cp_async16(&sQ[slot][ck__swz<D>(r, c)], ok ? X + ck__win_tok(mp, b, h, wy, wx, r, mp.win_w, 1) + c * 8 : X,
                               ok);
            }
        } else {
            const int64_t C3 = 3 * mp.C, row = mp.W * C3;
            for (int i = gt; i < QR * RC; i += GT) {
                const int r = i / RC, c = i - r * RC;
                uint4     q = make_uint4(0u, 0u, 0u, 0u);
                if (r < mp.Tq) {
                    const T    *p  = X + ck__win_tok(mp, b, h, wy, wx, r, mp.win_w / 2, 2) + c * 8;
                    const uint4 a0 = *reinterpret_cast<const uint4 *>(p), a1 = *reinterpret_cast<const uint4 *>(p + C3);
                    const uint4 a2 = *reinterpret_cast<const uint4 *>(p + row);
                    const uint4 a3 = *reinterpret_cast<const uint4 *>(p + row + C3);
                    /* the gather's comparison order: (y, x), (y, x+1), (y+1, x), (y+1, x+1) */
                    q.x = ck__max2<T>(ck__max2<T>(ck__max2<T>(a0.x, a1.x), a2.x), a3.x);
                    q.y = ck__max2<T>(ck__max2<T>(ck__max2<T>(a0.y, a1.y), a2.y), a3.y);
                    q.z = ck__max2<T>(ck__max2<T>(ck__max2<T>(a0.z, a1.z), a2.z), a3.z);
                    q.w = ck__max2<T>(ck__max2<T>(ck__max2<T>(a0.w, a1.w), a2.w), a3.w);
                }
                sQ[slot][ck__swz<D>(r, c)] = q;
            }
        }
    }
    ck__cp_async_commit();
    ck__cp_async_wait<0>();
    __syncthreads(); /* the block's only barrier: groups past G leave after it */
    if (!live || qwi * 16 >= mp.Tq) return;

    const int row0 = qwi * 16;
    uint32_t  qf[1][KS][4];
    ck__load_q_frags<D, 1>(qf, sQ[slot], row0, lane);
    float s[1][NN][4];
    ck__qk<T, D, 1, NN>(s, qf, sK[slot], lane);
    if (mp.Tk < NKT) ck__mask_keys<1, NN>(s, mp.Tk, lane);
    float o[1][NO][4], m[1][2] = {{-INFINITY, -INFINITY}}, l[1][2] = {{0.0f, 0.0f}};
#pragma unroll
    for (int no = 0; no < NO; no++) o[0][no][0] = o[0][no][1] = o[0][no][2] = o[0][no][3] = 0.0f;
    ck__online_softmax<1, NN, NO>(s, o, m, l, sl2);
    ck__pv<T, D, 1, NN>(o, s, sV[slot], lane);
    __syncwarp(); /* every lane's ldmatrix of its rows of sQ is done before they become the staging tile */
    ck__stage_o<T, D, 1>(sQ[slot], row0, o, l, lane);
    __syncwarp();
#pragma unroll
    for (int j = 0; j < (16 * RC + 31) / 32; j++) {
        const int idx = lane + j * 32;
        if ((16 * RC) % 32 == 0 || idx < 16 * RC) {
            const int r = idx / RC, c = idx - r * RC, row = row0 + r;
            if (row < mp.Tq)
                *reinterpret_cast<uint4 *>(Y + ck__win_out(mp, b, h, wy, wx, row) + c * 8) = sQ[slot][ck__swz<D>(row, c)];
        }
    }
}

/* ---------------------------------------------------------------------------------------------------------
 * Hopper kernel (FlashAttention-3 direction): warpgroup MMA (wgmma.mma_async) instead of mma.sync.
 * Block = NWG warpgroups × 64 query rows of one group; K/V tiles of BK = 64 keys in an NS-stage cp.async ring.
 * Shared tiles are 64 columns wide with 128-byte rows in the canonical 128-byte-swizzle layout (16-byte chunk
 * c of row r at c ^ (r & 7), tiles 1024-byte aligned), so the same bytes serve as K-major B operand (K, for
 * S = Q·Kᵀ) and as N-major B operand (V, for O += P·V, transposed read); HD = 56 rows are zero-padded to 64
 * (one more k-step in Q·Kᵀ than the mma.sync kernel's native 56; the 8 extra output columns are dropped).
 * Q and P stay in registers as the A operand (the mma.sync A layout per warp).
 * Overlap inside a warpgroup: S(j) = Q·K(j)ᵀ and O += P(j-1)·V(j-1) are issued together; the softmax of tile j
 * runs as soon as S(j) lands while P(j-1)·V(j-1) is still on the tensor cores, and O is rescaled after it.
 * Two blocks per SM keep four warpgroups in flight, so one block's softmax also hides behind the other's MMAs.
 * Ring: tile j lives in stage j % NS; at the barrier of iteration j the stage of tile j-2 (read by the wgmmas
 * waited for in iteration j-1) is refilled with tile j+NS-2, two iterations ahead of use (NS = 4).
 * The body exists only in sm_90a images; elsewhere the kernel is a trap and the launcher never selects it.
 * ------------------------------------------------------------------------------------------------------- */
template <int D, int R, int NT, typename T>
__device__ __forceinline__ void ck__load_tile_w64(uint4 *s, const T *src, int nvalid, int tid) {
    constexpr int RC = D / 8, N = R * 8;
#pragma unroll
    for (int j = 0; j < (N + NT - 1) / NT; j++) {
        const int i = tid + j * NT;
        if (N % NT == 0 || i < N) {
            const int  r = i >> 3, c = i & 7;
            const bool ok = r < nvalid && c < RC; /* chunks past HD become the zero padding */
            ck__cp_async16(&s[r * 8 + (c ^ (r & 7))], ok ? src + (int64_t)r * D + c * 8 : src, ok);
        }
    }
}

/* Shared-memory matrix descriptors: ck__desc_sw128 (ops/cuda/hopper.cuh), the 128-byte swizzle. */


template <typename T, int D, int NWG, int NS>
__global__ void __launch_bounds__(NWG * 128, 2)
    attention_wgmma_kernel(T *__restrict__ O, const T *__restrict__ Q, const T *__restrict__ K,
                           const T *__restrict__ V, int Tq, int Tk, int nqb, float sl2) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(CK_ATTN_EMU)
    constexpr int BQ = 64 * NWG, BK = 64, NB = BK / 8, NT = NWG * 128, NO = D / 8;
    static_assert(NS >= 3, "the ring refills the stage of tile j-2 at iteration j");
    /* Lets the host tell this image from the empty sm_80/sm_90 body (cudaFuncGetAttributes().sharedSizeBytes). */
    __shared__ __align__(16) uint32_t marker[kCkSm90aMarker / 4];
    uint8_t       *raw  = ck__dyn_smem();
    const uint32_t raw_addr = ck__smem_addr(raw);
    uint4 *sQ = reinterpret_cast<uint4 *>(raw + ((1024 - (raw_addr & 1023)) & 1023)); /* (BQ, 64), 1024-aligned */
    uint4 *sK = sQ + BQ * 8;                                                           /* (NS, BK, 64) */
    uint4 *sV = sK + NS * BK * 8;                                                      /* (NS, BK, 64) */

    const int     tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int64_t g   = (int64_t)blockIdx.x / nqb;
    const int     q0  = (int)((int64_t)blockIdx.x - g * nqb) * BQ;
    const T      *Qb  = Q + ((int64_t)g * Tq + q0) * D; /* (BQ, D) */
    const T      *Kg  = K + (int64_t)g * Tk * D;        /* (Tk, D) */
    const T      *Vg  = V + (int64_t)g * Tk * D;        /* (Tk, D) */
    T            *Ob  = O + ((int64_t)g * Tq + q0) * D;
    const int     nkt = (Tk + BK - 1) / BK;
    if (tid == 0) ck__keep_smem(marker);

    ck__load_tile_w64<D, BQ, NT>(sQ, Qb, Tq - q0, tid);
#pragma unroll
    for (int st = 0; st < NS - 1; st++) {
        if (st < nkt) {
            ck__load_tile_w64<D, BK, NT>(sK + st * BK * 8, Kg + (int64_t)st * BK * D, Tk - st * BK, tid);
            ck__load_tile_w64<D, BK, NT>(sV + st * BK * 8, Vg + (int64_t)st * BK * D, Tk - st * BK, tid);
        }
        ck__cp_async_commit(); /* one group per stage, empty or not, so the wait counts below hold */
    }
    ck__cp_async_wait<NS - 2>(); /* group 0: Q and tile 0 */
    ck__fence_proxy_async();
    __syncthreads();

    uint32_t qf[1][4][4]; /* the warp's 16 rows × 64 columns, as A fragments of 4 k-steps */
    ck__load_q_frags<64, 1>(qf, sQ, warp * 16, lane);
    const uint32_t kaddr = ck__smem_addr(sK), vaddr = ck__smem_addr(sV);

    float    s[1][NB][4], o[1][8][4], m[1][2] = {{-INFINITY, -INFINITY}}, l[1][2] = {{0.0f, 0.0f}}, corr[1][2];
    uint32_t pa[BK / 16][1][4];
    float(&sf)[NB * 4]  = reinterpret_cast<float(&)[NB * 4]>(s);
    float(&of)[32]      = reinterpret_cast<float(&)[32]>(o);
#pragma unroll
    for (int i = 0; i < 32; i++) of[i] = 0.0f;

    /* tile 0: S only */
    ck__wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ks++) ck__wgmma_64<T, 0>(sf, qf[0][ks], ck__desc_sw128(kaddr + ks * 32), ks > 0);
    ck__wgmma_commit();
    ck__wgmma_wait<0>();
    ck__reg_fence(sf);
    if (BK > Tk) ck__mask_keys<1, NB>(s, Tk, lane);
    ck__softmax_tile<1, NB>(s, m, l, corr, sl2); /* O is still zero: no rescale */
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) ck__pack_p<T, 1, NB>(pa[kk], s, kk);

    for (int t = 1; t < nkt; t++) {
        const int st = t % NS, sp = (t - 1) % NS;
        ck__cp_async_wait<NS - 3>(); /* this thread's copies of tile t have landed */
        ck__fence_proxy_async();
        __syncthreads(); /* everyone's have, and every warpgroup is done with tile t-2 */
        {
            const int tn = t + NS - 2, sn = tn % NS;
            if (tn < nkt) {
                ck__load_tile_w64<D, BK, NT>(sK + sn * BK * 8, Kg + (int64_t)tn * BK * D, Tk - tn * BK, tid);
                ck__load_tile_w64<D, BK, NT>(sV + sn * BK * 8, Vg + (int64_t)tn * BK * D, Tk - tn * BK, tid);
            }
            ck__cp_async_commit();
        }
        ck__wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ks++)
            ck__wgmma_64<T, 0>(sf, qf[0][ks], ck__desc_sw128(kaddr + (st * BK * 128 + ks * 32)), ks > 0);
        ck__wgmma_commit();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++)
            ck__wgmma_64<T, 1>(of, pa[kk][0], ck__desc_sw128(vaddr + (sp * BK * 128 + kk * 2048)), 1);
        ck__wgmma_commit();
        ck__wgmma_wait<1>(); /* S(t) has landed; P(t-1)·V(t-1) may still run */
        ck__reg_fence(sf);
        if ((t + 1) * BK > Tk) ck__mask_keys<1, NB>(s, Tk - t * BK, lane);
        const bool moved = ck__softmax_tile<1, NB>(s, m, l, corr, sl2);
        ck__wgmma_wait<0>(); /* O and P(t-1) are free */
        ck__reg_fence(of);
        if (moved) ck__rescale_o<1, 8>(o, corr);
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) ck__pack_p<T, 1, NB>(pa[kk], s, kk);
    }
    {
        const int sp = (nkt - 1) % NS;
        ck__wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++)
            ck__wgmma_64<T, 1>(of, pa[kk][0], ck__desc_sw128(vaddr + (sp * BK * 128 + kk * 2048)), 1);
        ck__wgmma_commit();
        ck__wgmma_wait<0>();
        ck__reg_fence(of);
    }
    /* the staging tile below overlaps other warps' Q rows when HD = 56 (7-chunk pitch): all Q reads are done */
    __syncthreads();
    float oc[1][NO][4];
#pragma unroll
    for (int no = 0; no < NO; no++)
#pragma unroll
        for (int e = 0; e < 4; e++) oc[0][no][e] = o[0][no][e];
    ck__store_o<T, D, 1>(Ob, sQ, warp * 16, Tq - q0, oc, l, lane);
#else
    __trap(); /* never launched: ck__sm90a_ready() sees no marker in this image */
#endif
}

#include "ops/cuda/attention_fa3.cuh"
#include "ops/cuda/attention_fp8.cuh"

/* ---------------------------------------------------------------------------------------------------------
 * SIMT kernel (f32 parity path; also any dtype with a head dim the tensor-core kernels lack, HD <= DM).
 * One thread per query row, BQ rows of one group per block, K/V tiles of 32 keys converted to f32 in shared
 * memory (every thread reads the same element: broadcast). expf and an explicit scale multiply follow the
 * CPU reference (s = scale·(q·k), p = exp(s − max)), so f32 results agree with it to rounding.
 * ------------------------------------------------------------------------------------------------------- */
template <typename T, int DM, int BQ>
__global__ void __launch_bounds__(BQ)
    attention_simt_kernel(T *__restrict__ O, const T *__restrict__ Q, const T *__restrict__ K,
                          const T *__restrict__ V, int Tq, int Tk, int HD, int nqb, float scale) {
    constexpr int BK = 32;
    __shared__ __align__(16) float sK[BK][DM]; /* (BK, DM), columns >= HD zero */
    __shared__ __align__(16) float sV[BK][DM];

    const int     tid = threadIdx.x;
    const int64_t g   = (int64_t)blockIdx.x / nqb;
    const int     q0 = (int)((int64_t)blockIdx.x - g * nqb) * BQ, row = q0 + tid;
    const bool    active = row < Tq;
    const T      *qr     = Q + ((int64_t)g * Tq + (active ? row : q0)) * HD;
    const T      *Kg = K + (int64_t)g * Tk * HD, *Vg = V + (int64_t)g * Tk * HD;

    float q[DM], o[DM];
#pragma unroll
    for (int d = 0; d < DM; d++) {
        q[d] = d < HD ? ck__to_f32(qr[d]) : 0.0f;
        o[d] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int k0 = 0; k0 < Tk; k0 += BK) {
        const int nk = Tk - k0 < BK ? Tk - k0 : BK;
        __syncthreads(); /* the previous tile is fully consumed */
        for (int i = tid; i < BK * DM; i += BQ) {
            const int  j = i / DM, d = i % DM;
            const bool ok = j < nk && d < HD;
            sK[j][d]      = ok ? ck__to_f32(Kg[(int64_t)(k0 + j) * HD + d]) : 0.0f;
            sV[j][d]      = ok ? ck__to_f32(Vg[(int64_t)(k0 + j) * HD + d]) : 0.0f;
        }
        __syncthreads();
        float s[BK], mx = m;
#pragma unroll
        for (int j = 0; j < BK; j++) {
            float acc = 0.0f;
#pragma unroll
            for (int d = 0; d < DM; d += 4) {
                const float4 kv = *reinterpret_cast<const float4 *>(&sK[j][d]);
                acc = fmaf(q[d], kv.x, acc);
                acc = fmaf(q[d + 1], kv.y, acc);
                acc = fmaf(q[d + 2], kv.z, acc);
                acc = fmaf(q[d + 3], kv.w, acc);
            }
            s[j] = j < nk ? acc * scale : -INFINITY;
            mx   = fmaxf(mx, s[j]);
        }
        const float corr = expf(m - mx); /* first tile: exp(-inf) = 0 */
        l *= corr;
#pragma unroll
        for (int d = 0; d < DM; d++) o[d] *= corr;
#pragma unroll
        for (int j = 0; j < BK; j++) {
            const float p = expf(s[j] - mx);
            l += p;
#pragma unroll
            for (int d = 0; d < DM; d += 4) {
                const float4 vv = *reinterpret_cast<const float4 *>(&sV[j][d]);
                o[d]            = fmaf(p, vv.x, o[d]);
                o[d + 1]        = fmaf(p, vv.y, o[d + 1]);
                o[d + 2]        = fmaf(p, vv.z, o[d + 2]);
                o[d + 3]        = fmaf(p, vv.w, o[d + 3]);
            }
        }
        m = mx;
    }
    if (!active) return;
    const float inv = 1.0f / l;
    T          *orow = O + ((int64_t)g * Tq + row) * HD;
#pragma unroll
    for (int d = 0; d < DM; d++)
        if (d < HD) orow[d] = ck__from_f32<T>(o[d] * inv);
}

/* ---------------------------------------------------------------------------------------------------------
 * Launchers
 * ------------------------------------------------------------------------------------------------------- */
struct ck__attn_args {
    void       *o;
    const void *q, *k, *v;
    int64_t     G;
    int         Tq, Tk, HD;
    float       scale;
    cudaStream_t stream;
    void       *scratch; /* op temporaries (ck_cuda_scratch): the FA3 kernel's key-split partials */
    size_t      scratch_bytes;
    /* The FA3 kernel also reads strided views (ck__attention_tokens_fa3: q, k, v straight from a qkv
     * projection, o straight into the token layout): row r of group g of q at q + g·q_gs + r·q_rs (elements),
     * in_cols valid columns (the rest of the 64 read as zeros); k, v likewise with kv_rs, kv_gs; o written in
     * o_cols columns at o_rs, o_gs. Every other variant takes the packed (G, T, HD) layout (ck__attn_packed).
     * The groups may also be gpi heads of G / gpi images whose rows follow each other (the FA3 kernel only):
     * group g = b·gpi + h reads row r at h·gs + (b·T + r)·rs, so one launch covers a batch of qkv (B, T, 3C). */
    int64_t q_rs, q_gs, kv_rs, kv_gs, o_rs, o_gs;
    int     in_cols, o_cols;
    int64_t gpi; /* groups per image: G for one image (the packed layout's) */
};

/* The packed (G, T, HD) layout's strides. */
void ck__attn_packed(ck__attn_args &a) {
    a.q_rs = a.kv_rs = a.o_rs = a.HD;
    a.q_gs = a.o_gs = (int64_t)a.Tq * a.HD;
    a.kv_gs         = (int64_t)a.Tk * a.HD;
    a.in_cols = a.o_cols = a.HD;
    a.gpi               = a.G;
}

template <typename T, int D, int MT> void ck__launch_flash(const ck__attn_args &a) {
    constexpr int BQ = 16 * MT * 4;
    const int64_t nqb = (a.Tq + BQ - 1) / BQ;
    CK_ASSERT(a.G * nqb <= INT32_MAX);
    auto kern = attention_flash_kernel<T, D, MT, 4>;
    CK_ATTN_LAUNCH(kern, dim3((unsigned)(a.G * nqb)), dim3(128), a.stream, (T *)a.o, (const T *)a.q,
                   (const T *)a.k, (const T *)a.v, a.Tq, a.Tk, (int)nqb, a.scale * kCkLog2e);
}

template <typename T, int D, int NKT> void ck__launch_small(const ck__attn_args &a) {
    constexpr int NW = ck__small_cfg<D, NKT>::NW;
    CK_ASSERT((a.G + NW - 1) / NW <= INT32_MAX);
    auto kern = attention_small_kernel<T, D, NKT>;
    CK_ATTN_LAUNCH(kern, dim3((unsigned)((a.G + NW - 1) / NW)), dim3(NW * 32), a.stream, (T *)a.o,
                   (const T *)a.q, (const T *)a.k, (const T *)a.v, a.G, a.Tq, a.Tk, a.scale * kCkLog2e);
}

template <typename T, int D> int ck__launch_wgmma(const ck__attn_args &a) {
    constexpr int NWG = 2, NS = 4, BQ = 64 * NWG, BK = 64;
    constexpr int smem = 1024 + (BQ + 2 * NS * BK) * 128; /* alignment slack + Q + NS × (K, V) */
    auto          kern = attention_wgmma_kernel<T, D, NWG, NS>;
    if (!ck__sm90a_ready((const void *)kern)) return -1;
    const int64_t nqb = (a.Tq + BQ - 1) / BQ;
    CK_ASSERT(a.G * nqb <= INT32_MAX);
    /* above the 48 KiB default: opt in (a host-side attribute, cheap, allowed during capture) */
    CK_ASSERT(cudaFuncSetAttribute((const void *)kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) ==
              cudaSuccess);
    CK_ATTN_LAUNCH_SMEM(kern, dim3((unsigned)(a.G * nqb)), dim3(NWG * 128), smem, a.stream, (T *)a.o,
                        (const T *)a.q, (const T *)a.k, (const T *)a.v, a.Tq, a.Tk, (int)nqb, a.scale * kCkLog2e);
    return CK_ATTN_WGMMA;
}

/* cuTensorMapEncodeTiled from the driver, without linking libcuda (the runtime hands out its entry point). */
typedef CUresult (*ck__encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                        const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                        CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                        CUtensorMapFloatOOBfill);
ck__encode_tiled_fn ck__tensor_map_encoder(void) {
    static const ck__encode_tiled_fn fn = []() -> ck__encode_tiled_fn {
        void                           *p = nullptr;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) !=
                cudaSuccess ||
            q != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError(); /* not a launch failure: the kernel is simply not offered */
            return nullptr;
        }
        return (ck__encode_tiled_fn)p;
    }();
    return fn;
}

/* G groups of `rows` rows of `cols` (<= 64) 16-bit values, rows at rs and groups at gs elements: boxes of
 * box_rows × 64 in the 128-byte swizzle; columns past `cols` and rows past `rows` read as zeros. The copy engine
 * needs 16-byte aligned bases and strides. */
int ck__fa3_map(CUtensorMap *m, const void *base, int cols, int64_t rows, int64_t rs, int64_t G, int64_t gs,
                int box_rows, CUtensorMapDataType dt) {
    const ck__encode_tiled_fn enc = ck__tensor_map_encoder();
    if (!enc || cols < 8 || cols > 64 || ((uintptr_t)base & 15) || (rs * 2) % 16 || (gs * 2) % 16) return -1;
    const cuuint64_t dim[3]    = {(cuuint64_t)cols, (cuuint64_t)rows, (cuuint64_t)G};
    const cuuint64_t stride[2] = {(cuuint64_t)rs * 2, (cuuint64_t)gs * 2};
    const cuuint32_t box[3] = {64, (cuuint32_t)box_rows, 1}, elem[3] = {1, 1, 1};
    return enc(m, dt, 3, const_cast<void *>(base), dim, stride, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) ==
                   CUDA_SUCCESS
               ? 0
               : -1;
}

/* The configuration the FA3 variant launches: -1 = chosen per shape (ck__fa3_auto_config), else an index into
 * fa3::kConfigs (the bench walks them all). */
int g_fa3_config = -1;

/* Rows from which the attention_qkv op reads qkv straight through the FA3 kernel (the automatic choice's 4096; the
 * host emulator lowers it to run the path on small shapes). */
constexpr int kFa3TokensMin = 4096;
int           g_fa3_tokens_min = kFa3TokensMin;

int ck__attn_sm_count(void); /* below, with the automatic choice */

/* How a shape's query tiles go over the SMs (one block of BQ rows per SM at a time): `main` tiles in full waves,
 * and the last, partial wave's `tail` tiles with their keys split `nsplit` ways over the SMs the wave would leave
 * idle (merged by fa3_combine_kernel), when that wave is at most half full and the scratch holds the partials. */
struct ck__fa3_plan {
    int64_t ntiles, main, tail;
    int     nsplit;
};
ck__fa3_plan ck__fa3_planning(const ck__attn_args &a, int BQ) {
    ck__fa3_plan  p;
    const int64_t nqb = (a.Tq + BQ - 1) / BQ;
    const int     sms = ck__attn_sm_count(), nkt = (a.Tk + fa3::kBK - 1) / fa3::kBK;
    p.ntiles = a.G * nqb;
    p.tail   = p.ntiles % sms;
    p.nsplit = 1;
    if (p.tail > 0 && 2 * p.tail <= sms) {
        int n = (int)(sms / p.tail);
        n     = n < 8 ? n : 8;
        n     = n < nkt / 2 ? n : nkt / 2; /* at least two key tiles per split */
        const size_t need = (size_t)p.tail * n * BQ * fa3::kPartRow * sizeof(float);
        if (n >= 2 && need <= a.scratch_bytes) p.nsplit = n;
    }
    if (p.nsplit == 1) p.tail = 0;
    p.main = p.ntiles - p.tail;
    return p;
}

/* The configuration for a shape: the three-consumer block (nc3-ns3-pp, BQ = 192: the most query rows per SM and
 * second, measured in the ladder) unless its tiles fill the waves so poorly that the two-consumer block
 * (nc2-ns3-pp, BQ = 128, 0.78 of its rows per second) finishes first. Cost = waves (a split tail counted at
 * 1/nsplit of one) × the time of one wave (BQ over the rate). On the H200 this picks the faster of the two on
 * every shape of the ladder (docs/benchmarks/2026-12-03-h200.md). */
int ck__fa3_auto_config(const ck__attn_args &a) {
    const int          sms = ck__attn_sm_count();
    const ck__fa3_plan p3 = ck__fa3_planning(a, 192), p2 = ck__fa3_planning(a, 128);
    auto waves = [sms](const ck__fa3_plan &p) {
        return (double)(p.main / sms) + (p.main % sms ? 1.0 : 0.0) + (p.tail ? 1.0 / p.nsplit : 0.0);
    };
    const double kRows3 = 1.0, kRows2 = 0.78; /* query rows per second and SM, relative */
    return waves(p3) * 192.0 / kRows3 <= waves(p2) * 128.0 / kRows2 ? 1 : 2;
}

/* CK_ATTN_PV56=1 (read at every call, opt-in until timed on the device): P·V over 56 columns (Fp16Ops' PVN) where
 * V's columns past 56 are zeros the copy engine fills (in_cols = 56: the path straight from qkv) or O's are not
 * stored (o_cols ≤ 56). The other columns' sums are the same products in the same order. */
int ck__attn_pv56_wanted(const ck__attn_args &a) {
    const char *e = getenv("CK_ATTN_PV56");
    return e && e[0] == '1' && (a.in_cols <= 56 || a.o_cols <= 56);
}

template <typename T, int NC, int NS, int EMU, int PP> int ck__launch_fa3_cfg(const ck__attn_args &a) {
    using L   = fa3::Layout<NC, NS>;
    auto kern = fa3::attention_fa3_kernel<T, NC, NS, EMU, PP, 64>;
    /* the 56-column form only for the configurations the automatic choice takes (ck__fa3_auto_config) */
    if constexpr (NS == 3 && EMU == 0 && PP == 1)
        if (ck__attn_pv56_wanted(a)) kern = fa3::attention_fa3_kernel<T, NC, NS, EMU, PP, 56>;
    if (a.HD != 64 || !ck__sm90a_ready((const void *)kern)) return -1;
    const int          BQ  = 64 * NC;
    const int64_t      nqb = (a.Tq + BQ - 1) / BQ;
    const ck__fa3_plan p   = ck__fa3_planning(a, BQ);
    const int64_t      nimg = a.G / a.gpi; /* the maps stack the images' rows */
    if (p.ntiles * 8 > INT32_MAX || a.G > UINT32_MAX || a.G % a.gpi || (nimg * a.Tq + 64 * NC) > INT32_MAX ||
        (nimg * a.Tk + fa3::kBK) > INT32_MAX)
        return -1;
    const CUtensorMapDataType dt =
        std::is_same<T, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    CUtensorMap mq, mk, mv;
    if (a.o_cols % 8 || a.o_cols > 64 || (a.o_rs * 2) % 16 || (a.o_gs * 2) % 16 || ((uintptr_t)a.o & 15) ||
        ck__fa3_map(&mq, a.q, a.in_cols, nimg * a.Tq, a.q_rs, a.gpi, a.q_gs, 64, dt) ||
        ck__fa3_map(&mk, a.k, a.in_cols, nimg * a.Tk, a.kv_rs, a.gpi, a.kv_gs, fa3::kBK, dt) ||
        ck__fa3_map(&mv, a.v, a.in_cols, nimg * a.Tk, a.kv_rs, a.gpi, a.kv_gs, fa3::kBK, dt))
        return -1;
    CK_ASSERT(cudaFuncSetAttribute((const void *)kern, cudaFuncAttributeMaxDynamicSharedMemorySize, L::smem) ==
              cudaSuccess);
    const float sl2 = a.scale * kCkLog2e;
    if (p.main > 0)
        CK_ATTN_LAUNCH_SMEM(kern, dim3((unsigned)p.main), dim3((NC + 1) * 128), L::smem, a.stream, mq, mk, mv,
                            (T *)a.o, a.o_rs, a.o_gs, a.o_cols, a.Tq, a.Tk, (int)nqb, (int)a.gpi, sl2, 0, 1,
                            (float *)nullptr);
    if (p.tail > 0) {
        float *part = (float *)a.scratch;
        CK_ATTN_LAUNCH_SMEM(kern, dim3((unsigned)(p.tail * p.nsplit)), dim3((NC + 1) * 128), L::smem, a.stream, mq,
                            mk, mv, (T *)a.o, a.o_rs, a.o_gs, a.o_cols, a.Tq, a.Tk, (int)nqb, (int)a.gpi, sl2,
                            (int)p.main, p.nsplit, part);
        auto comb = fa3::fa3_combine_kernel<T>;
        CK_ATTN_LAUNCH(comb, dim3((unsigned)((p.tail * BQ + 7) / 8)), dim3(256), a.stream, (T *)a.o, a.o_rs,
                       a.o_gs, a.o_cols, (const float *)part, a.Tq, (int)nqb, (int)a.gpi, BQ, (int)p.main, (int)p.tail,
                       p.nsplit, sl2);
    }
    return CK_ATTN_FA3;
}

/* The FP8 option (attention_fp8.cuh): CK_ATTN_FP8=1 sends the float16 FA3 shapes through e4m3 copies of q, k and
 * v. Precision far below the float16 path's (docs/benchmarks/2026-12-05-h200.md); read at every call, so a graph
 * captured with it keeps it. */
int g_fa3_fp8_calls; /* FP8 launches so far (the host emulator checks that its FP8 cases took the path) */
int ck__attn_fp8_wanted(void) {
    const char *e = getenv("CK_ATTN_FP8");
    return e && !strcmp(e, "1");
}

/* An e4m3 (G, rows, cols) tensor with rows `rs` bytes apart, in boxes of box_cols × box_rows and the given swizzle. */
int ck__fp8_map(CUtensorMap *m, const void *base, int64_t cols, int64_t rows, int64_t G, int box_cols, int box_rows,
                CUtensorMapSwizzle sw) {
    const ck__encode_tiled_fn enc = ck__tensor_map_encoder();
    if (!enc || ((uintptr_t)base & 15) || cols % 16) return -1;
    const cuuint64_t dim[3]    = {(cuuint64_t)cols, (cuuint64_t)rows, (cuuint64_t)G};
    const cuuint64_t stride[2] = {(cuuint64_t)cols, (cuuint64_t)(cols * rows)};
    const cuuint32_t box[3] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows, 1}, elem[3] = {1, 1, 1};
    return enc(m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<void *>(base), dim, stride, box, elem,
               CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) ==
                   CUDA_SUCCESS
               ? 0
               : -1;
}

/* The FP8 path for the shapes ck__launch_fa3 takes in float16: the e4m3 copies and scales in the op's scratch
 * (then the key-split partials after them), the four preparation kernels, the kernel (three consumers, three
 * stages, ping-pong) and, for a split tail, the merge. -1 (nothing enqueued) where the scratch is too small or a
 * map cannot be made. */
int ck__launch_fa3_fp8(const ck__attn_args &a) {
    constexpr int NC = 3, NS = 3, BQ = 64 * NC;
    using L   = fa3::LayoutFp8<NC, NS>;
    auto kern = fa3::attention_fa3_fp8_kernel<NC, NS, 1>;
    if (a.HD != 64 || a.in_cols % 8 || a.gpi != a.G || !ck__sm90a_ready((const void *)kern)) return -1;
    const int64_t Tkp = ((int64_t)a.Tk + fa3::kBK - 1) / fa3::kBK * fa3::kBK;
    const int     ncq = (a.Tq + fa3::kFp8Chunk - 1) / fa3::kFp8Chunk, nck = (a.Tk + fa3::kFp8Chunk - 1) / fa3::kFp8Chunk;
    const int     nch = ncq > nck ? ncq : nck;
    auto          up  = [](size_t n) { return (n + 255) / 256 * 256; };
    const size_t  b_q = up((size_t)a.G * a.Tq * 64), b_k = up((size_t)a.G * a.Tk * 64), b_v = up((size_t)a.G * 64 * Tkp);
    const size_t  b_p = up((size_t)a.G * 3 * nch * sizeof(float)), b_s = up((size_t)a.G * 4 * sizeof(float));
    const size_t  need = b_q + b_k + b_v + b_p + b_s;
    if (need > a.scratch_bytes || (Tkp / fa3::kBK) * a.G > INT32_MAX || ((int64_t)nch + a.Tq + a.Tk) * a.G * 4 > INT32_MAX)
        return -1;
    uint8_t *q8 = (uint8_t *)a.scratch, *k8 = q8 + b_q, *vt = k8 + b_k;
    float   *amax = (float *)(vt + b_v), *scales = (float *)((uint8_t *)amax + b_p);
    ck__attn_args rest = a; /* the key-split partials go after the copies */
    rest.scratch       = (uint8_t *)a.scratch + need;
    rest.scratch_bytes = a.scratch_bytes - need;
    const ck__fa3_plan p   = ck__fa3_planning(rest, BQ);
    const int64_t      nqb = (a.Tq + BQ - 1) / BQ;
    if (p.ntiles * 8 > INT32_MAX) return -1;
    CUtensorMap mq, mk, mv;
    if (a.o_cols % 8 || a.o_cols > 64 || (a.o_rs * 2) % 16 || (a.o_gs * 2) % 16 || ((uintptr_t)a.o & 15) ||
        ck__fp8_map(&mq, q8, 64, a.Tq, a.G, 64, 64, CU_TENSOR_MAP_SWIZZLE_64B) ||
        ck__fp8_map(&mk, k8, 64, a.Tk, a.G, 64, fa3::kBK, CU_TENSOR_MAP_SWIZZLE_64B) ||
        ck__fp8_map(&mv, vt, Tkp, 64, a.G, fa3::kBK, 64, CU_TENSOR_MAP_SWIZZLE_128B))
        return -1;
    const __half *q = (const __half *)a.q, *k = (const __half *)a.k, *v = (const __half *)a.v;
    CK_ATTN_LAUNCH(fa3::fp8_amax_kernel, dim3((unsigned)(nch * a.G * 3)), dim3(256), a.stream, amax, q, k, v, a.q_rs,
                   a.q_gs, a.kv_rs, a.kv_gs, a.in_cols, a.Tq, a.Tk, nch, (int)a.G);
    CK_ATTN_LAUNCH(fa3::fp8_scale_kernel, dim3((unsigned)((a.G + 31) / 32)), dim3(32), a.stream, scales,
                   (const float *)amax, (int)a.G, ncq, nck, nch);
    const int64_t rows = a.Tq > a.Tk ? a.Tq : a.Tk, nbx = (rows * 4 + 255) / 256;
    CK_ATTN_LAUNCH(fa3::fp8_quant_kernel, dim3((unsigned)(nbx * a.G * 2)), dim3(256), a.stream, q8, k8, q, k,
                   (const float *)scales, a.q_rs, a.q_gs, a.kv_rs, a.kv_gs, a.in_cols, a.Tq, a.Tk, (int)nbx, (int)a.G);
    CK_ATTN_LAUNCH(fa3::fp8_vt_kernel, dim3((unsigned)(Tkp / fa3::kBK * a.G)), dim3(256), a.stream, vt, v,
                   (const float *)scales, a.kv_rs, a.kv_gs, a.in_cols, a.Tk, (int)Tkp);
    CK_ASSERT(cudaFuncSetAttribute((const void *)kern, cudaFuncAttributeMaxDynamicSharedMemorySize, L::smem) ==
              cudaSuccess);
    const float sl2 = a.scale * kCkLog2e;
    if (p.main > 0)
        CK_ATTN_LAUNCH_SMEM(kern, dim3((unsigned)p.main), dim3((NC + 1) * 128), L::smem, a.stream, mq, mk, mv,
                            (__half *)a.o, a.o_rs, a.o_gs, a.o_cols, a.Tq, a.Tk, (int)nqb, sl2, (const float *)scales, 0,
                            1, (float *)nullptr);
    if (p.tail > 0) {
        float *part = (float *)rest.scratch;
        CK_ATTN_LAUNCH_SMEM(kern, dim3((unsigned)(p.tail * p.nsplit)), dim3((NC + 1) * 128), L::smem, a.stream, mq,
                            mk, mv, (__half *)a.o, a.o_rs, a.o_gs, a.o_cols, a.Tq, a.Tk, (int)nqb, sl2,
                            (const float *)scales, (int)p.main, p.nsplit, part);
        auto comb = fa3::fa3_combine_kernel<__half>;
        CK_ATTN_LAUNCH(comb, dim3((unsigned)((p.tail * BQ + 7) / 8)), dim3(256), a.stream, (__half *)a.o, a.o_rs,
                       a.o_gs, a.o_cols, (const float *)part, a.Tq, (int)nqb, (int)a.G, BQ, (int)p.main, (int)p.tail,
                       p.nsplit, sl2);
    }
    g_fa3_fp8_calls++;
    return CK_ATTN_FA3;
}

#define CK__FA3_CASE(i)                                                                                     \
    case i:                                                                                                 \
        return ck__launch_fa3_cfg<T, fa3::kConfigs[i].nc, fa3::kConfigs[i].ns, fa3::kConfigs[i].emu,          \
                                  fa3::kConfigs[i].pp>(a);
template <typename T> int ck__launch_fa3(const ck__attn_args &a) {
    static_assert(fa3::kConfigCount == 8, "one case per configuration");
    if constexpr (std::is_same<T, __half>::value)
        if (ck__attn_fp8_wanted()) {
            const int used = ck__launch_fa3_fp8(a);
            if (used >= 0) return used;
        }
    switch (g_fa3_config >= 0 ? g_fa3_config : ck__fa3_auto_config(a)) {
        CK__FA3_CASE(0)
        CK__FA3_CASE(1)
        CK__FA3_CASE(2)
        CK__FA3_CASE(3)
        CK__FA3_CASE(4)
        CK__FA3_CASE(5)
        CK__FA3_CASE(6)
        CK__FA3_CASE(7)
    default: return -1;
    }
}
#undef CK__FA3_CASE

template <typename T, int DM> void ck__launch_simt(const ck__attn_args &a) {
    const int     bq  = a.Tq <= 32 ? 32 : 64;
    const int64_t nqb = (a.Tq + bq - 1) / bq;
    CK_ASSERT(a.G * nqb <= INT32_MAX);
    const dim3 grid((unsigned)(a.G * nqb));
    if (bq == 32) {
        auto kern = attention_simt_kernel<T, DM, 32>;
        CK_ATTN_LAUNCH(kern, grid, dim3(32), a.stream, (T *)a.o, (const T *)a.q, (const T *)a.k, (const T *)a.v,
                       a.Tq, a.Tk, a.HD, (int)nqb, a.scale);
    } else {
        auto kern = attention_simt_kernel<T, DM, 64>;
        CK_ATTN_LAUNCH(kern, grid, dim3(64), a.stream, (T *)a.o, (const T *)a.q, (const T *)a.k, (const T *)a.v,
                       a.Tq, a.Tk, a.HD, (int)nqb, a.scale);
    }
}

template <typename T> int ck__try_simt(const ck__attn_args &a) {
    if (a.HD <= 32) ck__launch_simt<T, 32>(a);
    else if (a.HD <= 64) ck__launch_simt<T, 64>(a);
    else return -1;
    return CK_ATTN_SIMT;
}

/* Tensor-core variants for one head dim. The small head dims (tests) get the small kernel for Tk <= 64 and
 * the 64-query flash kernel; 56 and 64 get every variant. */
template <typename T, int D> int ck__try_tc_dim(const ck__attn_args &a, int variant) {
    constexpr bool full = D == 56 || D == 64;
    switch (variant) {
    case CK_ATTN_SMALL:
        if (a.Tq > 16 || a.Tk > 64) return -1;
        if constexpr (full) {
            if (a.Tk <= 16) ck__launch_small<T, D, 16>(a);
            else if (a.Tk <= 32) ck__launch_small<T, D, 32>(a);
            else ck__launch_small<T, D, 64>(a);
        } else {
            ck__launch_small<T, D, 64>(a);
        }
        return CK_ATTN_SMALL;
    case CK_ATTN_FLASH64: ck__launch_flash<T, D, 1>(a); return CK_ATTN_FLASH64;
    case CK_ATTN_FLASH128:
        if constexpr (full) {
            ck__launch_flash<T, D, 2>(a);
            return CK_ATTN_FLASH128;
        }
        return -1;
    case CK_ATTN_WGMMA:
        if constexpr (full) return ck__launch_wgmma<T, D>(a);
        return -1;
    case CK_ATTN_FA3:
        if constexpr (D == 64) return ck__launch_fa3<T>(a);
        return -1;
    default: return -1;
    }
}

template <typename T> int ck__try_tc(const ck__attn_args &a, int variant) {
    switch (a.HD) {
    case 8: return ck__try_tc_dim<T, 8>(a, variant);
    case 16: return ck__try_tc_dim<T, 16>(a, variant);
    case 32: return ck__try_tc_dim<T, 32>(a, variant);
    case 56: return ck__try_tc_dim<T, 56>(a, variant);
    case 64: return ck__try_tc_dim<T, 64>(a, variant);
    default: return -1;
    }
}

/* SM count of the current device, queried once per device (a host call that is legal during capture). */
int ck__attn_sm_count(void) {
    static int cache[64];
    int        dev = 0;
    CK_ASSERT(cudaGetDevice(&dev) == cudaSuccess);
    if (dev >= 0 && dev < 64 && cache[dev] > 0) return cache[dev];
    int sms = 0;
    CK_ASSERT(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess && sms > 0);
    if (dev >= 0 && dev < 64) cache[dev] = sms;
    return sms;
}

/* CK_ATTN_VARIANT=<name> (attention.h) asks the automatic choice to try that variant first; read once. */
int ck__attn_env_variant(void) {
    static int v = -2;
    if (v == -2) {
        const char *e = getenv("CK_ATTN_VARIANT");
        int         found = -1;
        for (int i = 1; e && i < CK_ATTN_VARIANT_COUNT; i++)
            if (!strcmp(e, ck__attn_variant_name(i))) found = i;
        if (e && found < 0) CK_LOG_WARN("CK_ATTN_VARIANT=%s is not a variant name; ignored", e);
        v = found;
    }
    return v;
}

/* The op's own choice for a 16-bit dtype with a tensor-core head dim. The Hopper kernel is not chosen here
 * until it has been measured against flash128 on the model's shapes (CK_ATTN_VARIANT=wgmma opts in). */
int ck__attn_auto_variant(const ck__attn_args &a) {
    if (a.Tq <= 16 && a.Tk <= 64) return CK_ATTN_SMALL;
    /* 128-query blocks only pay off on long rows and when they still fill two waves of 2 blocks per SM;
     * otherwise the 64-query kernel has the better occupancy and less row padding. */
    if ((a.HD == 56 || a.HD == 64) && a.Tq >= 256 && a.G * ((a.Tq + 127) / 128) >= 2 * (int64_t)ck__attn_sm_count())
        return CK_ATTN_FLASH128;
    return CK_ATTN_FLASH64;
}

/* Enqueues one variant; -1 when it cannot serve this dtype / head dim / shape / device. tc: 16-bit dtype, a
 * tensor-core head dim and 16-byte aligned pointers. */
int ck__attn_launch(const ck__attn_args &a, ck_dtype dt, int tc, int variant) {
    if (variant == CK_ATTN_SIMT) {
        switch (dt) {
        case CK_DTYPE_F32: return ck__try_simt<float>(a);
        case CK_DTYPE_F16: return ck__try_simt<__half>(a);
        default: return ck__try_simt<__nv_bfloat16>(a);
        }
    }
    if (!tc) return -1;
    return dt == CK_DTYPE_F16 ? ck__try_tc<__half>(a, variant) : ck__try_tc<__nv_bfloat16>(a, variant);
}

} /* namespace */

extern "C" int ck__attn_fa3_configs(void) { return fa3::kConfigCount; }
extern "C" const char *ck__attn_fa3_config_name(int config) {
    return config >= 0 && config < fa3::kConfigCount ? fa3::kConfigs[config].name : "none";
}
extern "C" void ck__attn_fa3_select(int config) {
    CK_ASSERT(config >= -1 && config < fa3::kConfigCount);
    g_fa3_config = config;
}

extern "C" const char *ck__attn_variant_name(int variant) {
    switch (variant) {
    case CK_ATTN_AUTO: return "auto";
    case CK_ATTN_SIMT: return "simt";
    case CK_ATTN_SMALL: return "small";
    case CK_ATTN_FLASH64: return "flash64";
    case CK_ATTN_FLASH128: return "flash128";
    case CK_ATTN_WGMMA: return "wgmma";
    case CK_ATTN_FA3: return "fa3";
    default: return "none";
    }
}

extern "C" int ck__attention_cuda_variant(ck_backend *be, const ck_tensor *o, const ck_tensor *q, const ck_tensor *k,
                                          const ck_tensor *v, float scale, ck_attn_variant variant) {
    CK_ASSERT(q->ndim == 3 && k->ndim == 3 && v->ndim == 3 && o->ndim == 3);
    CK_ASSERT(q->dtype == k->dtype && q->dtype == v->dtype && q->dtype == o->dtype);
    CK_ASSERT(q->dtype == CK_DTYPE_F32 || q->dtype == CK_DTYPE_F16 || q->dtype == CK_DTYPE_BF16);
    const int64_t G = q->shape[0], Tq = q->shape[1], HD = q->shape[2], Tk = k->shape[1];
    CK_ASSERT(k->shape[0] == G && v->shape[0] == G && o->shape[0] == G);
    CK_ASSERT(k->shape[2] == HD && v->shape[2] == HD && v->shape[1] == Tk && o->shape[1] == Tq && o->shape[2] == HD);
    CK_ASSERT(Tq <= INT32_MAX && Tk <= INT32_MAX && HD <= INT32_MAX);
    /* the kernels take the row max on unscaled scores */
    CK_ASSERT(scale > 0.0f && isfinite(scale));
    if (G == 0 || Tq == 0) return variant == CK_ATTN_AUTO ? CK_ATTN_AUTO : (int)variant;
    CK_ASSERT(Tk >= 1 && HD >= 1);

    ck__attn_args a;
    a.o = o->data, a.q = q->data, a.k = k->data, a.v = v->data;
    a.G = G, a.Tq = (int)Tq, a.Tk = (int)Tk, a.HD = (int)HD, a.scale = scale;
    a.stream = ck_cuda_stream(be);
    a.scratch = ck_cuda_scratch(be, &a.scratch_bytes);
    ck__attn_packed(a);

    /* 16-byte cp.async / vector stores need aligned base pointers (the arena gives 256) */
    const int aligned = (((uintptr_t)a.o | (uintptr_t)a.q | (uintptr_t)a.k | (uintptr_t)a.v) & 15) == 0;
    const int tc = q->dtype != CK_DTYPE_F32 && aligned && (HD == 8 || HD == 16 || HD == 32 || HD == 56 || HD == 64);

    int used;
    if (variant == CK_ATTN_AUTO) {
        /* The override replaces the choice among the long-row kernels; mask units keep their kernel. One that
         * cannot serve this call enqueues nothing and the op's own choice runs. */
        const int own = tc ? ck__attn_auto_variant(a) : CK_ATTN_SIMT, env = ck__attn_env_variant();
        used          = env > 0 && own != CK_ATTN_SMALL ? ck__attn_launch(a, q->dtype, tc, env) : -1;
        /* Measured on the H200 (docs/benchmarks/2026-12-03-h200.md): on rows of 4096+ keys the FA3 kernel
         * (HD 64) beats every other (1.01 vs 1.33 ms wgmma, 1.74 flash128 for 8x16384^2) and the wgmma kernel
         * (HD 56 or 64) beats flash128; both decline (-1) on other devices and head dims, and the op's own choice
         * runs. On 1024-key rows (S = 512) FA3 is ~10 % faster per call but took the fp16 precision gate's
         * alpha max from 1.01 to 1.22 of PyTorch's, so those keep the flash kernels. */
        if (used < 0 && own != CK_ATTN_SMALL && a.Tq >= 256 && a.Tk >= 4096)
            used = ck__attn_launch(a, q->dtype, tc, CK_ATTN_FA3);
        if (used < 0 && own == CK_ATTN_FLASH128 && a.Tk >= 4096) used = ck__attn_launch(a, q->dtype, tc, CK_ATTN_WGMMA);
        if (used < 0) used = ck__attn_launch(a, q->dtype, tc, own);
        if (used < 0) {
            CK_LOG_ERR("ck_attention_cuda: no kernel for dtype %s, head dim %lld", ck_dtype_name(q->dtype),
                       (long long)HD);
            CK_ASSERT(used >= 0);
        }
    } else {
        used = ck__attn_launch(a, q->dtype, tc, variant);
    }
    if (used >= 0) {
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) ck__cuda_failed(__FILE__, __LINE__, ck__attn_variant_name(used), cudaGetErrorString(err));
    }
    return used;
}

extern "C" void ck_attention_cuda(ck_backend *be, const ck_tensor *o, const ck_tensor *q, const ck_tensor *k,
                                  const ck_tensor *v, float scale) {
    ck__attention_cuda_variant(be, o, q, k, v, scale, CK_ATTN_AUTO);
}

/* Global attention straight from the qkv projection (the attention_qkv op's fast path, layout.cu): for the B
 * images of qkv (B, T, 3C), C = heads·HD, in one launch (B·heads groups, the images' rows stacked), the FA3 kernel
 * reads q, k, v of head h as strided views (row t at t·3C + which·C + h·HD, HD = 56 valid columns of the 64 it
 * computes, the rest read as zeros: the pad64 layout without its copies) and writes o's HD columns into y (B, T, C)
 * at t·C + h·HD. Same arithmetic as the gather, the FA3 kernel on pad64 rows and the scatter. Taken where the op's
 * own choice would take FA3 on the gathered rows (16-bit, sm_90a, T >= 4096 or CK_ATTN_TOKENS_MIN, HD 56 or 64,
 * 16-byte strides, CK_ATTN_VARIANT unset or fa3); returns 0, enqueueing nothing, anywhere else. The FP8 option
 * keeps one launch per image (its copies are per group). */
extern "C" int ck__attention_tokens_min(void) {
    static int env = -2;
    if (env == -2) {
        const char *e = getenv("CK_ATTN_TOKENS_MIN");
        env           = e && *e ? atoi(e) : -1;
    }
    return env > 0 ? env : g_fa3_tokens_min;
}

extern "C" void ck__attention_tokens_min_set(int rows) { g_fa3_tokens_min = rows > 0 ? rows : kFa3TokensMin; }

extern "C" int ck__attention_tokens_fa3(ck_backend *be, const ck_tensor *y, const ck_tensor *qkv, int heads,
                                        float scale) {
    CK_ASSERT(qkv->ndim >= 2 && y->ndim == qkv->ndim && heads >= 1 && qkv->dtype == y->dtype);
    const int64_t C3 = qkv->shape[qkv->ndim - 1], C = C3 / 3, HD = C / heads;
    const int64_t B = qkv->shape[0], T = ck_tensor_numel(qkv) / (B * C3);
    CK_ASSERT(C3 == 3 * C && C == heads * HD && ck_tensor_last(y) == C && ck_tensor_numel(y) == B * T * C);
    const int env = ck__attn_env_variant();
    if ((qkv->dtype != CK_DTYPE_F16 && qkv->dtype != CK_DTYPE_BF16) || (HD != 56 && HD != 64) || T < ck__attention_tokens_min() ||
        T > INT32_MAX || (env > 0 && env != CK_ATTN_FA3) || (C * 2) % 16)
        return 0;
    const int     per_image = qkv->dtype == CK_DTYPE_F16 && ck__attn_fp8_wanted();
    const int64_t nimg = per_image ? 1 : B; /* images per launch */
    ck__attn_args a;
    a.G = nimg * heads, a.gpi = heads, a.Tq = a.Tk = (int)T, a.HD = 64, a.scale = scale;
    a.stream  = ck_cuda_stream(be);
    a.scratch = ck_cuda_scratch(be, &a.scratch_bytes);
    a.q_rs = a.kv_rs = C3, a.q_gs = a.kv_gs = HD, a.in_cols = (int)HD;
    a.o_rs = C, a.o_gs = HD, a.o_cols = (int)HD;
    const size_t es = 2;
    for (int64_t b = 0; b < B; b += nimg) {
        const uint8_t *src = (const uint8_t *)qkv->data + (size_t)(b * T * C3) * es;
        a.q = src, a.k = src + (size_t)C * es, a.v = src + (size_t)(2 * C) * es;
        a.o = (uint8_t *)y->data + (size_t)(b * T * C) * es;
        const int used = qkv->dtype == CK_DTYPE_F16 ? ck__launch_fa3<__half>(a) : ck__launch_fa3<__nv_bfloat16>(a);
        if (used < 0) {
            CK_ASSERT(b == 0); /* the choice depends on the device and the strides only: the same for every image */
            return 0;
        }
    }
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) ck__cuda_failed(__FILE__, __LINE__, "fa3 tokens", cudaGetErrorString(err));
    return 1;
}

/* ---------------------------------------------------------------------------------------------------------
 * The attention_qkv op's windowed path (attention_window_kernel above).
 * ------------------------------------------------------------------------------------------------------- */
template <typename T, int D, int NKT, int QW> static void ck__launch_window(const ck__win_map &m, T *y, const T *x,
                                                                          int64_t G, float sl2, cudaStream_t st) {
    using cfg = ck__win_cfg<D, NKT, QW>;
    static_assert(cfg::group_bytes * cfg::GPB <= 48 * 1024, "static shared memory");
    CK_ASSERT((G + cfg::GPB - 1) / cfg::GPB <= INT32_MAX);
    auto kern = attention_window_kernel<T, D, NKT, QW>;
    CK_ATTN_LAUNCH(kern, dim3((unsigned)((G + cfg::GPB - 1) / cfg::GPB)), dim3(cfg::NW * 32), st, y, x, m, G, sl2);
}

template <typename T, int D, int NKT> static void ck__launch_window_q(const ck__win_map &m, T *y, const T *x, int64_t G,
                                                                    float sl2, cudaStream_t st) {
    if (m.Tq <= 16) ck__launch_window<T, D, NKT, 1>(m, y, x, G, sl2, st);
    else if (m.Tq <= 32) ck__launch_window<T, D, NKT, 2>(m, y, x, G, sl2, st);
    else ck__launch_window<T, D, NKT, 4>(m, y, x, G, sl2, st);
}

template <typename T, int D> static void ck__launch_window_k(const ck__win_map &m, T *y, const T *x, int64_t G,
                                                            float sl2, cudaStream_t st) {
    if (m.Tk <= 16) ck__launch_window_q<T, D, 16>(m, y, x, G, sl2, st);
    else if (m.Tk <= 32) ck__launch_window_q<T, D, 32>(m, y, x, G, sl2, st);
    else ck__launch_window_q<T, D, 64>(m, y, x, G, sl2, st);
}

template <typename T> static void ck__launch_window_d(const ck__win_map &m, int HD, T *y, const T *x, int64_t G,
                                                      float sl2, cudaStream_t st) {
    if (HD == 32) ck__launch_window_k<T, 32>(m, y, x, G, sl2, st);
    else if (HD == 56) ck__launch_window_k<T, 56>(m, y, x, G, sl2, st);
    else ck__launch_window_k<T, 64>(m, y, x, G, sl2, st);
}

/* CK_ATTN_WINDOWS=0 turns the windowed path off (A/B runs against the composition); read once. */
static int ck__windows_enabled(void) {
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("CK_ATTN_WINDOWS");
        on            = !(e && e[0] == '0');
    }
    return on;
}

/* Windowed (Hiera mask-unit) attention straight from qkv (B, H, W, 3C) into y (B, Hq, Wq, C): the composition
 * attn_scatter(attention(attn_gather(qkv, heads, win_h × win_w windows, q_pool), scale)) of ops_list.h in one
 * kernel, for 16-bit dtypes, HD ∈ {32, 56, 64}, windows of at most 64 keys and 64 (pooled) queries, 16-byte
 * aligned buffers. Returns 0, enqueueing nothing, anywhere else (the caller composes). */
extern "C" int ck__attention_windows(ck_backend *be, const ck_tensor *y, const ck_tensor *qkv, int heads, int win_h,
                                     int win_w, int q_pool, float scale) {
    CK_ASSERT(qkv->ndim == 4 && y->ndim == 4 && heads >= 1 && win_h >= 1 && win_w >= 1);
    const int64_t C = qkv->shape[3] / 3, HD = C / heads;
    const int     Tk = win_h * win_w, Tq = q_pool ? Tk / 4 : Tk;
    if ((qkv->dtype != CK_DTYPE_F16 && qkv->dtype != CK_DTYPE_BF16) || y->dtype != qkv->dtype ||
        (HD != 32 && HD != 56 && HD != 64) || Tk > 64 || Tq > 64 || !ck__windows_enabled() ||
        ((uintptr_t)qkv->data | (uintptr_t)y->data) % 16 || scale <= 0.0f)
        return 0;
    ck__win_map m;
    m.H = qkv->shape[1], m.W = qkv->shape[2], m.C = C, m.Hq = y->shape[1], m.Wq = y->shape[2];
    m.heads = heads, m.win_h = win_h, m.win_w = win_w, m.q_pool = q_pool;
    m.nwx = (int)(m.W / win_w), m.nwin = (int)((m.H / win_h) * m.nwx), m.Tq = Tq, m.Tk = Tk;
    CK_ASSERT(m.H % win_h == 0 && m.W % win_w == 0 && (!q_pool || (win_h % 2 == 0 && win_w % 2 == 0)));
    CK_ASSERT(m.Hq == (q_pool ? m.H / 2 : m.H) && m.Wq == (q_pool ? m.W / 2 : m.W) && y->shape[3] == C);
    const int64_t      G  = qkv->shape[0] * heads * m.nwin;
    const float        sl = scale * kCkLog2e;
    const cudaStream_t st = ck_cuda_stream(be);
    if (qkv->dtype == CK_DTYPE_F16)
        ck__launch_window_d<__half>(m, (int)HD, (__half *)y->data, (const __half *)qkv->data, G, sl, st);
    else
        ck__launch_window_d<__nv_bfloat16>(m, (int)HD, (__nv_bfloat16 *)y->data, (const __nv_bfloat16 *)qkv->data, G,
                                           sl, st);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) ck__cuda_failed(__FILE__, __LINE__, "attention windows", cudaGetErrorString(err));
    return 1;
}
