/* Fused scaled-dot-product attention on CUDA: o (G,Tq,HD) = softmax(q·kᵀ·scale)·v, online softmax,
 * no Tq×Tk score matrix in memory. CPU oracle: src/ops/cpu/attention.c. Bench and validation over the
 * model's shapes: dev/cuda/attention_bench.cu; host emulation of the warp-level code:
 * dev/cuda/attention_emu.cpp.
 * ref: Dao, "FlashAttention-2" (2023), §3 (one warp owns a slice of query rows, P stays in registers);
 *      Shah et al., "FlashAttention-3" (2024), §3.2 (softmax of one tile overlapping the GEMMs of another);
 *      PTX ISA, "Matrix Fragments for mma.m16n8k16", "ldmatrix", "Asynchronous Warpgroup Level Matrix
 *      Multiply-Accumulate" (register layouts, shared-memory matrix descriptors).
 *
 * Files: this one holds the launchers, the automatic choice and the op entry points; the kernels are in
 * attention_warp.cuh (warp-level primitives and softmax pieces), attention_flash.cuh (flash and small),
 * attention_window.cuh, attention_wgmma.cuh, attention_fa3.cuh, attention_fp8.cuh and attention_simt.cuh,
 * all included here inside one anonymous namespace (one translation unit, as the emulator builds it).
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

/* the kernels, in the order they build on each other */
#include "ops/cuda/attention_warp.cuh"
#include "ops/cuda/attention_flash.cuh"
#include "ops/cuda/attention_window.cuh"
#include "ops/cuda/attention_wgmma.cuh"
#include "ops/cuda/attention_fa3.cuh"
#include "ops/cuda/attention_fp8.cuh"
#include "ops/cuda/attention_simt.cuh"

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

/* Rows from which the attention_qkv op reads qkv straight through the FA3 kernel: 1024, so that the 512 model's
 * global blocks (1024 tokens) take it too (0.56 ms less for 512 × 8 on the H100, 2026-12-05; the op's own choice
 * takes FA3 from 4096 rows); CK_ATTN_TOKENS_MIN overrides it, and the host emulator lowers it to run the path on
 * small shapes. */
constexpr int kFa3TokensMin = 1024;
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

/* P·V over 56 columns (Fp16Ops' PVN; the default, 0.3 ms faster at 2048 on the H100, 2026-12-05; CK_ATTN_PV56=0
 * turns it off, read at every call) where
 * V's columns past 56 are zeros the copy engine fills (in_cols = 56: the path straight from qkv) or O's are not
 * stored (o_cols ≤ 56). The other columns' sums are the same products in the same order. */
int ck__attn_pv56_wanted(const ck__attn_args &a) {
    const char *e = getenv("CK_ATTN_PV56");
    return !(e && e[0] == '0') && (a.in_cols <= 56 || a.o_cols <= 56);
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
 * at t·C + h·HD. Same arithmetic as the gather, the FA3 kernel on pad64 rows and the scatter. Taken on 16-bit
 * rows on sm_90a from kFa3TokensMin rows (1024; CK_ATTN_TOKENS_MIN), HD 56 or 64, 16-byte strides,
 * CK_ATTN_VARIANT unset or fa3; returns 0, enqueueing nothing, anywhere else. The FP8 option
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
