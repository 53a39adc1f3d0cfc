/* Host emulation of src/ops/cuda/attention.cu: runs the real kernel source on the CPU, one coroutine per
 * CUDA thread, so fragment layouts, swizzles, masks, tile indexing and the cp.async pipeline can be checked
 * on a machine without a GPU. Every thread of a block is a ucontext coroutine; warp collectives (ldmatrix,
 * mma.sync, shfl, __syncwarp) and __syncthreads are rendezvous points where the emulator switches threads,
 * and the collectives follow the register layouts of the PTX ISA ("Matrix Fragments for mma.m16n8k16",
 * "ldmatrix"). cp.async copies land either at issue or only at cp.async.wait_group (two modes), which
 * exposes a missing wait or barrier and a stage overwritten while still being read. Global reads through
 * cp.async are bounds-checked against the input tensors; outputs are poisoned (NaN) and fenced with guard
 * bytes. The FA3 kernel (attention_fa3.cuh) also gets the copy engine (3-D boxes landing 128-byte swizzled,
 * rows out of bounds zero-filled, reads bounds-checked; at issue, or deferred until some thread waits),
 * transaction barriers (phases, arrival counts, expected bytes), named barriers and wgmma with both operands
 * in shared memory; a producer that refills a stage before its release, or a consumer that never releases
 * one, ends in the deadlock report. Two emulated devices: 132 SMs, where small shapes split their keys, and
 * 2, where every block walks all of its keys through the ring. What it cannot see: real timing, bank
 * conflicts, register spills, or a misreading of the PTX layouts shared by kernel and emulator (the GPU
 * bench, dev/cuda/attention_bench.cu, is the final word).
 *
 * Build and run (from the repository root):
 *   make -C dev/cuda attn_emu && ./dev/cuda/attn_emu          (or: ./dev/cuda/attn_emu -v)
 * ctest runs it as test_attention_emu wherever the CUDA backend is built.
 */
#define CK_ATTN_EMU 1

#include <ucontext.h>

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <vector>

/* CUDA keywords as the host compiler should see them: kernels become plain functions, __shared__ arrays become
 * function statics (one block runs at a time, so "one per block" = "one per function"). */
#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __shared__
#define __shared__ static
#undef __launch_bounds__
#define __launch_bounds__(...)
#undef __forceinline__
#define __forceinline__ inline
#undef __grid_constant__
#define __grid_constant__

uint3 threadIdx, blockIdx;
dim3  blockDim, gridDim;

namespace emu {

struct CopyOp {
    void       *dst;
    const void *src;
    bool        valid;
};
struct Thread {
    ucontext_t                       ctx;
    std::vector<char>                stack;
    bool                             done;
    std::vector<CopyOp>              open;
    std::vector<std::vector<CopyOp>> groups;
};
struct Barrier {
    int      expected = 0, arrived = 0;
    unsigned gen = 0;
};
struct WarpX {
    const void *ptr[32];
    uint32_t    a[32][4], b[32][2];
    float       f[32];
};
struct Buf {
    const char *p;
    size_t      n;
};

static std::vector<Thread>   threads;
static int                   cur;
static ucontext_t            sched;
static Barrier               block_bar;
static std::vector<Barrier>  warp_bar;
static std::vector<WarpX>    wx;
static std::vector<Barrier>  wg_bar; /* one per warpgroup (4 warps): wgmma is a warpgroup collective */
struct WgX {
    uint32_t a[128][4];
};
static std::vector<WgX> wgx;
/* the dynamic shared memory window: "shared address" 0 is its first byte, which is 1024-aligned; the launch
 * pointer sits 16 bytes in, as behind a small static array, so the kernel's own re-alignment is exercised */
alignas(1024) static uint8_t dyn_smem[232448 + 1024];
static const size_t          dyn_smem_skew = 16;
static std::function<void()> body;
static long                  progress;
static int                   deferred_copies; /* 0: cp.async lands at issue, 1: at wait_group */
static std::vector<Buf>      bufs;
static std::mt19937          sched_rng(1);
/* the FA3 kernel's synchronization: transaction barriers in shared memory (by address) and named barriers */
struct MBar {
    int      expected = 0, pending = 0;
    long     tx    = 0;
    unsigned phase = 0;
};
static std::map<uint32_t, MBar> mbars;
static std::map<int, Barrier>   named_bar;
/* copy-engine loads issued but not landed (deferred mode: they land when some thread next waits on a barrier) */
struct TmaOp {
    uint32_t                 dst, bar, bytes;
    std::vector<uint8_t>     data; /* the box as it will land, rows already swizzled into place */
    std::vector<uint32_t>    where;
};
static std::vector<TmaOp> tma_open;
static long               n_tma;
static long                  n_mma, n_ldsm, n_cp;

[[noreturn]] static void fail(const char *msg) {
    fprintf(stderr, "emu: %s (block %u thread %u)\n", msg, blockIdx.x, threadIdx.x);
    abort();
}
static unsigned lane() { return threadIdx.x & 31; }
static unsigned warp() { return threadIdx.x >> 5; }
static void     yield() { swapcontext(&threads[cur].ctx, &sched); }
static void     wait(Barrier &b) {
    const unsigned g = b.gen;
    progress++;
    if (++b.arrived == b.expected) {
        b.arrived = 0;
        b.gen++;
    } else {
        while (b.gen == g) yield();
    }
}
static void drop(Barrier &b) {
    b.expected--;
    if (b.expected > 0 && b.arrived == b.expected) {
        b.arrived = 0;
        b.gen++;
    }
}
static void need_full_warp() {
    if (warp_bar[warp()].expected != 32) fail("warp collective with exited lanes");
}

static void perform(const CopyOp &op) {
    if (op.valid) memcpy(op.dst, op.src, 16);
    else memset(op.dst, 0, 16);
}
static void flush_all(Thread &t) {
    for (auto &g : t.groups)
        for (auto &op : g) perform(op);
    for (auto &op : t.open) perform(op);
    t.groups.clear();
    t.open.clear();
}

static void entry() {
    const int me = cur;
    body();
    flush_all(threads[me]);
    threads[me].done = true;
    drop(block_bar);
    drop(warp_bar[threadIdx.x >> 5]);
    drop(wg_bar[threadIdx.x >> 7]);
}

static void run_block(unsigned nthreads) {
    const size_t stack_bytes = 256 * 1024;
    if (threads.size() < nthreads) threads.resize(nthreads);
    const unsigned nwarps = (nthreads + 31) / 32;
    block_bar             = Barrier{};
    block_bar.expected    = (int)nthreads;
    warp_bar.assign(nwarps, Barrier{});
    wx.assign(nwarps, WarpX{});
    for (unsigned w = 0; w < nwarps; w++) warp_bar[w].expected = (int)std::min(32u, nthreads - 32 * w);
    const unsigned nwg = (nthreads + 127) / 128;
    wg_bar.assign(nwg, Barrier{});
    wgx.resize(nwg);
    for (unsigned w = 0; w < nwg; w++) wg_bar[w].expected = (int)std::min(128u, nthreads - 128 * w);
    memset(dyn_smem, 0xCD, sizeof dyn_smem); /* stale bytes, never zeros by accident */
    mbars.clear();
    named_bar.clear();
    tma_open.clear();
    for (unsigned i = 0; i < nthreads; i++) {
        Thread &t = threads[i];
        t.stack.resize(stack_bytes);
        t.done = false;
        t.open.clear();
        t.groups.clear();
        getcontext(&t.ctx);
        t.ctx.uc_stack.ss_sp   = t.stack.data();
        t.ctx.uc_stack.ss_size = stack_bytes;
        t.ctx.uc_link          = &sched;
        makecontext(&t.ctx, entry, 0);
    }
    std::vector<unsigned> order(nthreads);
    for (unsigned i = 0; i < nthreads; i++) order[i] = i;
    /* Warps run at random, changing speeds, so that one warp can get whole tiles ahead of another between
     * barriers: a lockstep schedule would never expose a stage overwritten while another warp reads it. */
    std::vector<unsigned> speed(nwarps, 100);
    std::uniform_int_distribution<unsigned> pct(0, 99);
    int idle_rounds = 0;
    for (long round = 0;; round++) {
        if (round % 64 == 0)
            for (unsigned w = 0; w < nwarps; w++) speed[w] = pct(sched_rng) < 30 ? 3 : 1 + pct(sched_rng);
        std::shuffle(order.begin(), order.end(), sched_rng);
        bool      any    = false;
        const long before = progress;
        for (unsigned i : order) {
            if (threads[i].done) continue;
            any = true;
            if (idle_rounds == 0 && pct(sched_rng) >= speed[i >> 5]) continue;
            cur         = (int)i;
            threadIdx   = make_uint3(i, 0, 0);
            const bool was_done = threads[i].done;
            swapcontext(&sched, &threads[i].ctx);
            if (!was_done && threads[i].done) progress++;
        }
        if (!any) {
            /* every thread has ended: no barrier may be left half-way (a skipped or extra arrival), no copy in flight */
            for (auto &nb : named_bar)
                if (nb.second.arrived != 0) fail("named barrier left with arrivals when the block ended");
            if (!tma_open.empty()) fail("copy-engine loads still in flight when the block ended");
            for (auto &mb : mbars)
                if (mb.second.tx != 0 || mb.second.pending != mb.second.expected)
                    fail("mbarrier left in an incomplete phase when the block ended");
            break;
        }
        if (progress == before) {
            /* an idle round runs every thread; several in a row mean nobody can move */
            if (++idle_rounds > 4) fail("deadlock: every live thread waits at a barrier that cannot complete");
        } else {
            idle_rounds = 0;
        }
    }
}

template <typename... KA, typename... A> void launch(void (*kern)(KA...), dim3 grid, dim3 block, A... args);
template <typename... KA, typename... A>
void launch_smem(void (*kern)(KA...), dim3 grid, dim3 block, size_t smem, A... args) {
    if (smem + dyn_smem_skew > sizeof dyn_smem) fail("launch: dynamic shared memory above the emulated window");
    launch(kern, grid, block, args...);
}
template <typename... KA, typename... A> void launch(void (*kern)(KA...), dim3 grid, dim3 block, A... args) {
    if (grid.y != 1 || grid.z != 1 || block.y != 1 || block.z != 1) fail("launch: only 1-D grids/blocks expected");
    if (grid.x < 1 || block.x < 1 || block.x > 1024) fail("launch: bad grid or block size");
    gridDim  = grid;
    blockDim = block;
    std::vector<unsigned> order(grid.x);
    for (unsigned b = 0; b < grid.x; b++) order[b] = b;
    std::shuffle(order.begin(), order.end(), sched_rng);
    for (unsigned b : order) {
        blockIdx = make_uint3(b, 0, 0);
        body     = [&]() { kern(args...); };
        run_block(block.x);
    }
}

static float unpack(uint16_t h, bool bf16) {
    if (bf16) {
        uint32_t u = (uint32_t)h << 16;
        float    f;
        memcpy(&f, &u, 4);
        return f;
    }
    __half_raw r;
    r.x = h;
    return __half2float(__half(r));
}

} /* namespace emu */

/* ---- the primitives attention.cu expects ---- */
void __syncthreads() { emu::wait(emu::block_bar); }
void __syncwarp(unsigned mask = 0xffffffffu) {
    if (mask != 0xffffffffu) emu::fail("__syncwarp with a partial mask");
    emu::need_full_warp();
    emu::wait(emu::warp_bar[emu::warp()]);
}
float __shfl_xor_sync(unsigned mask, float v, int lane_mask, int width = 32) {
    if (mask != 0xffffffffu || width != 32) emu::fail("shfl: partial mask or width");
    emu::need_full_warp();
    emu::WarpX &x = emu::wx[emu::warp()];
    x.f[emu::lane()] = v;
    emu::wait(emu::warp_bar[emu::warp()]);
    const float r = x.f[emu::lane() ^ (unsigned)lane_mask];
    emu::wait(emu::warp_bar[emu::warp()]);
    return r;
}

int __any_sync(unsigned mask, int pred) {
    if (mask != 0xffffffffu) emu::fail("any_sync: partial mask");
    emu::need_full_warp();
    emu::WarpX &x = emu::wx[emu::warp()];
    x.f[emu::lane()] = pred ? 1.0f : 0.0f;
    emu::wait(emu::warp_bar[emu::warp()]);
    int r = 0;
    for (int i = 0; i < 32; i++) r |= x.f[i] != 0.0f;
    emu::wait(emu::warp_bar[emu::warp()]);
    return r;
}
float ck__exp2(float x) { return exp2f(x); }
int   __float_as_int(float f) {
    int i;
    memcpy(&i, &f, 4);
    return i;
}
float __int_as_float(int i) {
    float f;
    memcpy(&f, &i, 4);
    return f;
}

static void emu_ldsm(uint32_t (&r)[4], const void *p, bool trans) {
    if (((uintptr_t)p & 15) != 0) emu::fail("ldmatrix: row address not 16-byte aligned");
    emu::need_full_warp();
    emu::n_ldsm++;
    emu::WarpX &x = emu::wx[emu::warp()];
    const unsigned t = emu::lane();
    x.ptr[t]         = p;
    emu::wait(emu::warp_bar[emu::warp()]);
    for (int i = 0; i < 4; i++) {
        uint16_t e[2];
        for (int j = 0; j < 2; j++) {
            if (!trans) e[j] = ((const uint16_t *)x.ptr[i * 8 + t / 4])[(t % 4) * 2 + j];
            else e[j] = ((const uint16_t *)x.ptr[i * 8 + (t % 4) * 2 + j])[t / 4];
        }
        r[i] = (uint32_t)e[0] | (uint32_t)e[1] << 16;
    }
    emu::wait(emu::warp_bar[emu::warp()]);
}
void ck__ldsm_x4(uint32_t (&r)[4], const void *p) { emu_ldsm(r, p, false); }
void ck__ldsm_x4_t(uint32_t (&r)[4], const void *p) { emu_ldsm(r, p, true); }

/* D (16×8) += A (16×K) · B (K×8), K = 16 or 8, fragments as in the PTX ISA. */
template <typename T> static void emu_mma(float (&d)[4], const uint32_t *a, const uint32_t *b, int K) {
    const bool bf16 = std::is_same<T, __nv_bfloat16>::value;
    emu::need_full_warp();
    emu::n_mma++;
    emu::WarpX &x = emu::wx[emu::warp()];
    const unsigned me = emu::lane();
    for (int i = 0; i < (K == 16 ? 4 : 2); i++) x.a[me][i] = a[i];
    for (int i = 0; i < (K == 16 ? 2 : 1); i++) x.b[me][i] = b[i];
    emu::wait(emu::warp_bar[emu::warp()]);
    float A[16][16], B[16][8];
    for (int L = 0; L < 32; L++) {
        const int g = L >> 2, t = L & 3;
        for (int j = 0; j < 2; j++) {
            A[g][2 * t + j]     = emu::unpack((uint16_t)(x.a[L][0] >> (16 * j)), bf16);
            A[g + 8][2 * t + j] = emu::unpack((uint16_t)(x.a[L][1] >> (16 * j)), bf16);
            B[2 * t + j][g]     = emu::unpack((uint16_t)(x.b[L][0] >> (16 * j)), bf16);
            if (K == 16) {
                A[g][2 * t + 8 + j]     = emu::unpack((uint16_t)(x.a[L][2] >> (16 * j)), bf16);
                A[g + 8][2 * t + 8 + j] = emu::unpack((uint16_t)(x.a[L][3] >> (16 * j)), bf16);
                B[2 * t + 8 + j][g]     = emu::unpack((uint16_t)(x.b[L][1] >> (16 * j)), bf16);
            }
        }
    }
    const int g = me >> 2, t = me & 3;
    for (int e = 0; e < 4; e++) {
        const int row = g + (e >= 2 ? 8 : 0), col = 2 * t + (e & 1);
        float     acc = d[e];
        for (int k = 0; k < K; k++) acc += A[row][k] * B[k][col];
        d[e] = acc;
    }
    emu::wait(emu::warp_bar[emu::warp()]);
}
template <typename T> void ck__mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    const uint32_t b[2] = {b0, b1};
    emu_mma<T>(d, a, b, 16);
}
template <typename T> void ck__mma_1688(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
    const uint32_t a[2] = {a0, a1}, b[1] = {b0};
    emu_mma<T>(d, a, b, 8);
}

/* ---- Hopper primitives ---- */
uint8_t *ck__dyn_smem() { return emu::dyn_smem + emu::dyn_smem_skew; }
uint32_t ck__smem_addr(const void *p) {
    const uint8_t *b = (const uint8_t *)p;
    if (b < emu::dyn_smem || b >= emu::dyn_smem + sizeof emu::dyn_smem)
        emu::fail("shared address of a pointer outside the dynamic shared memory");
    return (uint32_t)(b - emu::dyn_smem);
}
void ck__keep_smem(void *) {}
void ck__wgmma_fence() {}
void ck__wgmma_commit() {}
template <int N> void ck__wgmma_wait() {}
void ck__fence_proxy_async() {}
template <int N> void ck__reg_fence(float (&)[N]) {}

/* One wgmma.m64n64k16 (A from registers): the warpgroup's 128 lanes deposit their A fragments, B is read from
 * the emulated shared window through the descriptor (128-byte swizzle: bits [4,7) of the byte address XOR bits
 * [7,10)), each lane then computes its 32 accumulators. Synchronous: the result is in place at issue, which the
 * kernels cannot tell apart from "at wait_group" as long as they do not touch the registers in between. */
template <typename T, int TB> void ck__wgmma_64(float (&d)[32], const uint32_t (&a)[4], uint64_t desc, int accumulate) {
    const bool bf16 = std::is_same<T, __nv_bfloat16>::value;
    const unsigned wgi = threadIdx.x >> 7, me = threadIdx.x & 127;
    if (emu::wg_bar[wgi].expected != 128) emu::fail("wgmma with an incomplete warpgroup");
    const uint32_t start = (uint32_t)(desc & 0x3FFF) << 4, lbo = (uint32_t)((desc >> 16) & 0x3FFF) << 4,
                   sbo = (uint32_t)((desc >> 32) & 0x3FFF) << 4, base_off = (uint32_t)((desc >> 49) & 7),
                   mode = (uint32_t)(desc >> 62);
    if (mode != 1 || lbo != 16 || sbo != 1024 || base_off != 0) emu::fail("wgmma: unexpected descriptor fields");
    if (start % 1024 >= 128) emu::fail("wgmma: operand not anchored on a 1024-byte swizzle period");
    emu::n_mma++;
    emu::WgX &x = emu::wgx[wgi];
    for (int i = 0; i < 4; i++) x.a[me][i] = a[i];
    emu::wait(emu::wg_bar[wgi]);
    float A[64][16], B[16][64];
    for (int L = 0; L < 128; L++) {
        const int r0 = 16 * (L >> 5) + ((L & 31) >> 2), c0 = 2 * (L & 3);
        for (int j = 0; j < 2; j++) {
            A[r0][c0 + j]         = emu::unpack((uint16_t)(x.a[L][0] >> (16 * j)), bf16);
            A[r0 + 8][c0 + j]     = emu::unpack((uint16_t)(x.a[L][1] >> (16 * j)), bf16);
            A[r0][c0 + 8 + j]     = emu::unpack((uint16_t)(x.a[L][2] >> (16 * j)), bf16);
            A[r0 + 8][c0 + 8 + j] = emu::unpack((uint16_t)(x.a[L][3] >> (16 * j)), bf16);
        }
    }
    for (int k = 0; k < 16; k++)
        for (int n = 0; n < 64; n++) {
            /* K-major (TB = 0): row n, element k; N-major (TB = 1): row k, element n */
            const uint32_t row = TB ? k : n, col = TB ? n : k;
            uint32_t       addr = start + (row / 8) * sbo + (row % 8) * 128 + col * 2;
            addr ^= ((addr >> 7) & 7) << 4;
            if (addr + 2 > sizeof emu::dyn_smem) emu::fail("wgmma: operand outside shared memory");
            uint16_t h;
            memcpy(&h, emu::dyn_smem + addr, 2);
            B[k][n] = emu::unpack(h, bf16);
        }
    const int w = me >> 5, L = me & 31;
    for (int j = 0; j < 8; j++)
        for (int e = 0; e < 4; e++) {
            const int row = 16 * w + (L >> 2) + 8 * (e >> 1), col = 8 * j + 2 * (L & 3) + (e & 1);
            float     acc = accumulate ? d[4 * j + e] : 0.0f;
            for (int k = 0; k < 16; k++) acc += A[row][k] * B[k][col];
            d[4 * j + e] = acc;
        }
    emu::wait(emu::wg_bar[wgi]);
}

void ck__cp_async16(void *dst, const void *src, bool valid) {
    if (((uintptr_t)dst & 15) != 0) emu::fail("cp.async: shared address not 16-byte aligned");
    if (valid) {
        if (((uintptr_t)src & 15) != 0) emu::fail("cp.async: global address not 16-byte aligned");
        bool inside = false;
        for (const emu::Buf &b : emu::bufs)
            if ((const char *)src >= b.p && (const char *)src + 16 <= b.p + b.n) inside = true;
        if (!inside) emu::fail("cp.async: global read outside every input tensor");
    }
    emu::n_cp++;
    const emu::CopyOp op{dst, src, valid};
    if (emu::deferred_copies) emu::threads[emu::cur].open.push_back(op);
    else emu::perform(op);
}
void ck__cp_async_commit() {
    emu::Thread &t = emu::threads[emu::cur];
    t.groups.push_back(std::move(t.open));
    t.open.clear();
}
template <int N> void ck__cp_async_wait() {
    emu::Thread &t = emu::threads[emu::cur];
    while ((int)t.groups.size() > N) {
        for (auto &op : t.groups.front()) emu::perform(op);
        t.groups.erase(t.groups.begin());
    }
}

/* ---- the FA3 kernel's primitives (attention_fa3.cuh, namespace fa3 finds these by ordinary lookup) ---- */
static emu::MBar &mbar_at(uint32_t bar) {
    auto it = emu::mbars.find(bar);
    if (it == emu::mbars.end()) emu::fail("mbarrier used before mbarrier.init");
    return it->second;
}
static void mbar_check(emu::MBar &m) {
    if (m.pending < 0) emu::fail("mbarrier: more arrivals than its count in one phase");
    if (m.pending == 0 && m.tx == 0) {
        m.phase++;
        m.pending = m.expected;
        emu::progress++;
    }
}
static void tma_land(emu::TmaOp &op) {
    for (size_t i = 0; i < op.where.size(); i++) memcpy(emu::dyn_smem + op.where[i], &op.data[16 * i], 16);
    emu::MBar &m = mbar_at(op.bar);
    m.tx -= op.bytes;
    mbar_check(m);
}
static void tma_flush() {
    for (auto &op : emu::tma_open) tma_land(op);
    emu::tma_open.clear();
}
void mbar_init(uint32_t bar, uint32_t count) {
    if (bar % 8) emu::fail("mbarrier not 8-byte aligned");
    emu::MBar m;
    m.expected = m.pending = (int)count;
    emu::mbars[bar]        = m;
}
void mbar_init_fence() {}
void mbar_arrive(uint32_t bar) {
    emu::MBar &m = mbar_at(bar);
    m.pending--;
    mbar_check(m);
}
void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    emu::MBar &m = mbar_at(bar);
    m.tx += bytes;
    m.pending--;
    mbar_check(m);
}
/* Deferred copies land whenever some thread waits (the issuing producer may have exited by then); until then
 * a consumer that waits on their barrier sees the phase still open. */
void mbar_wait(uint32_t bar, uint32_t parity) {
    for (;;) {
        if ((mbar_at(bar).phase & 1u) != parity) return;
        const bool had = !emu::tma_open.empty();
        tma_flush();
        if (had) emu::yield(); /* let other threads see the barrier still open at least once */
        else if ((mbar_at(bar).phase & 1u) == parity) emu::yield();
    }
}
/* the fake tensor map (attention.cu encodes through cudaGetDriverEntryPointByVersion below) */
struct EmuMap {
    const uint8_t *base;
    uint64_t       dim[3], stride[2];
    uint32_t       box[3], elem;
    int            swizzle128;
};
static_assert(sizeof(EmuMap) <= sizeof(CUtensorMap), "the fake map fits the opaque one");
void tma_prefetch_map(const CUtensorMap *) {}
void tma_load_3d(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1, int c2) {
    EmuMap mp;
    memcpy(&mp, map, sizeof mp);
    if (!mp.swizzle128 || mp.box[0] * mp.elem != 128 || mp.box[2] != 1) emu::fail("tma: unexpected tensor map");
    if (dst % 1024) emu::fail("tma: 128-byte swizzled box not 1024-byte aligned in shared memory");
    emu::n_tma++;
    emu::TmaOp op;
    op.dst = dst, op.bar = bar, op.bytes = mp.box[0] * mp.box[1] * mp.elem;
    for (uint32_t r = 0; r < mp.box[1]; r++)
        for (uint32_t ch = 0; ch < 8; ch++) {
            const int64_t row = (int64_t)c1 + r, col = (int64_t)c0 + ch * 8;
            uint8_t       chunk[16] = {0}; /* out of bounds: zeros */
            if (row >= 0 && row < (int64_t)mp.dim[1] && c2 >= 0 && c2 < (int64_t)mp.dim[2] && col >= 0 &&
                col + 8 <= (int64_t)mp.dim[0]) {
                const uint8_t *src = mp.base + (uint64_t)c2 * mp.stride[1] + (uint64_t)row * mp.stride[0] + col * mp.elem;
                bool           inside = false;
                for (const emu::Buf &b : emu::bufs)
                    if ((const char *)src >= b.p && (const char *)src + 16 <= b.p + b.n) inside = true;
                if (!inside) emu::fail("tma: global read outside every input tensor");
                memcpy(chunk, src, 16);
            }
            uint32_t a = dst + r * 128 + ch * 16;
            a ^= ((a >> 7) & 7) << 4;
            if (a + 16 > sizeof emu::dyn_smem) emu::fail("tma: box outside shared memory");
            op.data.insert(op.data.end(), chunk, chunk + 16);
            op.where.push_back(a);
        }
    if (emu::deferred_copies) emu::tma_open.push_back(std::move(op));
    else tma_land(op);
}
template <int N> void regs_dec() {}
template <int N> void regs_inc() {}
static emu::Barrier &named(int id) {
    emu::Barrier &b = emu::named_bar[id];
    b.expected      = 256;
    return b;
}
void bar_sync(int id) { emu::wait(named(id)); }
void bar_arrive(int id) {
    emu::Barrier &b = named(id);
    emu::progress++;
    if (++b.arrived == b.expected) {
        b.arrived = 0;
        b.gen++;
    }
}
/* wgmma.m64n128k16 with both operands in shared memory (K-major, 128-byte swizzle), as ck__wgmma_64 above. */
static void desc_check(uint64_t desc, uint32_t &start) {
    start = (uint32_t)(desc & 0x3FFF) << 4;
    const uint32_t lbo = (uint32_t)((desc >> 16) & 0x3FFF) << 4, sbo = (uint32_t)((desc >> 32) & 0x3FFF) << 4,
                   base_off = (uint32_t)((desc >> 49) & 7), mode = (uint32_t)(desc >> 62);
    if (mode != 1 || lbo != 16 || sbo != 1024 || base_off != 0) emu::fail("wgmma: unexpected descriptor fields");
    if (start % 1024 >= 128) emu::fail("wgmma: operand not anchored on a 1024-byte swizzle period");
}
static float smem_kmajor(uint32_t start, uint32_t row, uint32_t k, bool bf16) {
    uint32_t addr = start + (row / 8) * 1024 + (row % 8) * 128 + k * 2;
    addr ^= ((addr >> 7) & 7) << 4;
    if (addr + 2 > sizeof emu::dyn_smem) emu::fail("wgmma: operand outside shared memory");
    uint16_t h;
    memcpy(&h, emu::dyn_smem + addr, 2);
    return emu::unpack(h, bf16);
}
template <typename T> void wgmma_ss128(float (&d)[64], uint64_t adesc, uint64_t bdesc, int accumulate) {
    const bool     bf16 = std::is_same<T, __nv_bfloat16>::value;
    const unsigned wgi = threadIdx.x >> 7, me = threadIdx.x & 127;
    if (emu::wg_bar[wgi].expected != 128) emu::fail("wgmma with an incomplete warpgroup");
    uint32_t sa, sb;
    desc_check(adesc, sa);
    desc_check(bdesc, sb);
    emu::n_mma++;
    emu::wait(emu::wg_bar[wgi]);
    const int w = me >> 5, L = me & 31;
    float     A[2][16], B[16][128];
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 16; k++) A[h][k] = smem_kmajor(sa, 16 * w + (L >> 2) + 8 * h, k, bf16);
    for (int k = 0; k < 16; k++)
        for (int n = 0; n < 128; n++) B[k][n] = smem_kmajor(sb, n, k, bf16);
    for (int j = 0; j < 16; j++)
        for (int e = 0; e < 4; e++) {
            const int col = 8 * j + 2 * (L & 3) + (e & 1);
            float     acc = accumulate ? d[4 * j + e] : 0.0f;
            for (int k = 0; k < 16; k++) acc += A[e >> 1][k] * B[k][col];
            d[4 * j + e] = acc;
        }
    emu::wait(emu::wg_bar[wgi]);
}

/* ---- CUDA runtime calls attention.cu makes on the host ---- */
extern "C" {
/* Two emulated devices: 0 has the H200's 132 SMs (small shapes leave most of a wave idle, so the FA3 kernel
 * splits keys), 1 has 2 (full waves: every block walks all its keys, and the K/V ring wraps). */
int g_emu_device;
cudaError_t cudaGetDevice(int *device) {
    *device = g_emu_device;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
    *value = attr == cudaDevAttrMultiProcessorCount ? (device == 1 ? 2 : 132)
             : attr == cudaDevAttrComputeCapabilityMajor ? 9
                                                         : 0;
    return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func) {
    (void)func;
    memset(attr, 0, sizeof *attr);
    attr->sharedSizeBytes = 16; /* the marker of the sm_90a image */
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value) {
    (void)func;
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize && value > 232448) return cudaErrorInvalidValue;
    return cudaSuccess;
}
static CUresult emu_encode_tiled(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *base,
                                 const cuuint64_t *dim, const cuuint64_t *stride, const cuuint32_t *box,
                                 const cuuint32_t *es, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                 CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
    (void)l2;
    if (rank != 3 || il != CU_TENSOR_MAP_INTERLEAVE_NONE || oob != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE ||
        (dt != CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && dt != CU_TENSOR_MAP_DATA_TYPE_BFLOAT16) || es[0] != 1 ||
        es[1] != 1 || es[2] != 1 || ((uintptr_t)base & 15) || stride[0] % 16 || stride[1] % 16)
        return CUDA_ERROR_INVALID_VALUE;
    EmuMap mp;
    memset(&mp, 0, sizeof mp);
    mp.base = (const uint8_t *)base;
    for (int i = 0; i < 3; i++) mp.dim[i] = dim[i], mp.box[i] = box[i];
    mp.stride[0] = stride[0], mp.stride[1] = stride[1], mp.elem = 2, mp.swizzle128 = sw == CU_TENSOR_MAP_SWIZZLE_128B;
    memset(map, 0, sizeof *map);
    memcpy(map, &mp, sizeof mp);
    return CUDA_SUCCESS;
}
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
                                             unsigned long long flags, cudaDriverEntryPointQueryResult *status) {
    (void)version, (void)flags;
    const bool ok = !strcmp(symbol, "cuTensorMapEncodeTiled");
    *fn           = ok ? (void *)emu_encode_tiled : nullptr;
    if (status) *status = ok ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess;
}
const char *cudaGetErrorString(cudaError_t error) {
    (void)error;
    return "emulated";
}
}

#define CK_ATTN_LAUNCH(kern, grid, block, stream, ...) emu::launch(kern, grid, block, __VA_ARGS__)
#define CK_ATTN_LAUNCH_SMEM(kern, grid, block, smem, stream, ...) emu::launch_smem(kern, grid, block, smem, __VA_ARGS__)
#include "../../src/ops/cuda/attention.cu"

extern "C" cudaStream_t ck_cuda_stream(ck_backend *be) {
    (void)be;
    return nullptr;
}
static std::vector<float> g_scratch((size_t)16 << 20); /* 64 MiB, as a backend's op temporaries */
extern "C" void *ck_cuda_scratch(ck_backend *be, size_t *bytes) {
    (void)be;
    *bytes = g_scratch.size() * sizeof(float);
    return g_scratch.data();
}
extern "C" void ck__cuda_failed(const char *file, int line, const char *expr, const char *what) {
    fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, expr, what);
    exit(2);
}

/* ------------------------------------------------------------------------------------------------------- */

static uint16_t to_bits(float f, ck_dtype dt) {
    if (dt == CK_DTYPE_BF16) return ck_f32_to_bf16(f);
    return ck_f32_to_f16(f);
}
static float from_bits(uint16_t h, ck_dtype dt) { return dt == CK_DTYPE_BF16 ? ck_bf16_to_f32(h) : ck_f16_to_f32(h); }

struct Case {
    ck_dtype dt;
    int      HD;
    int64_t  G;
    int      Tq, Tk;
    int      variant; /* requested */
    int      expect;  /* variant that must run (-1: must be refused) */
    float    qscale;  /* spread of the scores: larger = peakier softmax, more rescaling */
};

static int g_verbose, g_fail, g_count;

static void run_case(const Case &c, int copy_mode, uint32_t seed) {
    const size_t es = ck_dtype_size(c.dt);
    const size_t nq = (size_t)c.G * c.Tq * c.HD, nk = (size_t)c.G * c.Tk * c.HD;
    const size_t guard = 256;
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    /* inputs at their stored precision; the fp64 reference reads the same rounded values */
    std::vector<double>  qd(nq), kd(nk), vd(nk);
    std::vector<uint8_t> qb(nq * es), kb(nk * es), vb(nk * es), ob(nq * es + 2 * guard);
    auto fill = [&](std::vector<double> &d, std::vector<uint8_t> &b, size_t n, float sc) {
        for (size_t i = 0; i < n; i++) {
            const float f = nd(rng) * sc;
            if (c.dt == CK_DTYPE_F32) {
                memcpy(&b[i * 4], &f, 4);
                d[i] = f;
            } else {
                const uint16_t h = to_bits(f, c.dt);
                memcpy(&b[i * 2], &h, 2);
                d[i] = from_bits(h, c.dt);
            }
        }
    };
    fill(qd, qb, nq, c.qscale);
    fill(kd, kb, nk, 1.0f);
    fill(vd, vb, nk, 1.0f);
    memset(ob.data(), 0xA5, ob.size());
    memset(ob.data() + guard, 0xFF, nq * es); /* NaN in every dtype */
    emu::bufs = {{(const char *)qb.data(), qb.size()}, {(const char *)kb.data(), kb.size()},
                 {(const char *)vb.data(), vb.size()}};
    emu::deferred_copies = copy_mode;

    const int64_t sq[3] = {c.G, c.Tq, c.HD}, sk[3] = {c.G, c.Tk, c.HD};
    ck_tensor     q = ck_tensor_make(qb.data(), c.dt, 3, sq), k = ck_tensor_make(kb.data(), c.dt, 3, sk),
              v = ck_tensor_make(vb.data(), c.dt, 3, sk), o = ck_tensor_make(ob.data() + guard, c.dt, 3, sq);
    const float scale = 1.0f / sqrtf(56.0f);
    const long  mma0  = emu::n_mma;
    const int   used  = ck__attention_cuda_variant(nullptr, &o, &q, &k, &v, scale, (ck_attn_variant)c.variant);
    g_count++;
    char name[160];
    snprintf(name, sizeof name, "%-4s HD=%-2d G=%-3lld Tq=%-4d Tk=%-4d %-8s -> %-8s copies=%s%s", ck_dtype_name(c.dt),
             c.HD, (long long)c.G, c.Tq, c.Tk, ck__attn_variant_name(c.variant), ck__attn_variant_name(used),
             copy_mode ? "deferred" : "at-issue", g_emu_device ? " sms=2" : "");
    if (c.variant == CK_ATTN_FA3 && g_fa3_config >= 0)
        snprintf(name + strlen(name), sizeof name - strlen(name), " %s", ck__attn_fa3_config_name(g_fa3_config));
    if (used != c.expect) {
        printf("NOT OK %s: expected variant %s\n", name, ck__attn_variant_name(c.expect));
        g_fail++;
        return;
    }
    if (used < 0) {
        if (g_verbose) printf("ok     %s (refused as expected)\n", name);
        return;
    }
    for (size_t i = 0; i < guard; i++)
        if (ob[i] != 0xA5 || ob[guard + nq * es + i] != 0xA5) {
            printf("NOT OK %s: guard bytes overwritten\n", name);
            g_fail++;
            return;
        }
    const double atol = c.dt == CK_DTYPE_F32 ? 2e-6 : c.dt == CK_DTYPE_F16 ? 2e-3 : 1.2e-2;
    const double rtol = c.dt == CK_DTYPE_F32 ? 1e-5 : c.dt == CK_DTYPE_F16 ? 4e-3 : 1.2e-2;
    double       max_err = 0, worst = 0;
    long         bad = 0, nonfinite = 0;
    std::vector<double> s(c.Tk);
    for (int64_t g = 0; g < c.G; g++)
        for (int i = 0; i < c.Tq; i++) {
            const double *qr = &qd[((size_t)g * c.Tq + i) * c.HD];
            double        mx = -INFINITY, sum = 0;
            for (int j = 0; j < c.Tk; j++) {
                const double *kr = &kd[((size_t)g * c.Tk + j) * c.HD];
                double        dot = 0;
                for (int d = 0; d < c.HD; d++) dot += qr[d] * kr[d];
                s[j] = dot * scale;
                mx   = std::max(mx, s[j]);
            }
            for (int j = 0; j < c.Tk; j++) sum += (s[j] = exp(s[j] - mx));
            for (int d = 0; d < c.HD; d++) {
                double ref = 0;
                for (int j = 0; j < c.Tk; j++) ref += s[j] * vd[((size_t)g * c.Tk + j) * c.HD + d];
                ref /= sum;
                const size_t idx = ((size_t)g * c.Tq + i) * c.HD + d;
                double       got;
                if (c.dt == CK_DTYPE_F32) {
                    float f;
                    memcpy(&f, &ob[guard + idx * 4], 4);
                    got = f;
                } else {
                    uint16_t h;
                    memcpy(&h, &ob[guard + idx * 2], 2);
                    got = from_bits(h, c.dt);
                }
                if (!std::isfinite(got)) {
                    if (nonfinite++ < 3) printf("  non-finite at g=%lld row=%d col=%d\n", (long long)g, i, d);
                    continue;
                }
                const double err = fabs(got - ref), tol = atol + rtol * fabs(ref);
                max_err = std::max(max_err, err);
                worst   = std::max(worst, err / tol);
                if (err > tol && bad++ < 3)
                    printf("  g=%lld row=%d col=%d got %.6f ref %.6f\n", (long long)g, i, d, got, ref);
            }
        }
    const bool ok = bad == 0 && nonfinite == 0;
    if (!ok) g_fail++;
    if (!ok || g_verbose)
        printf("%s %s: max_abs %.3g (%.0f%% of tol) bad %ld nonfinite %ld mma %ld\n", ok ? "ok    " : "NOT OK", name,
               max_err, 100 * worst, bad, nonfinite, emu::n_mma - mma0);
}

/* The qkv-direct cases' buffers: a random qkv projection of nqkv 16-bit values (the q columns, the first C of
 * every 3C, with twice the spread of k and v) and their float64 values, and an output of ny values poisoned with
 * NaN between guard bytes; registered as the emulator's only input. */
struct QkvIO {
    static constexpr size_t guard = 256;
    ck_dtype                dt;
    int64_t                 ny;
    std::vector<double>     xd;
    std::vector<uint8_t>    xb, yb;
    QkvIO(ck_dtype dt_, int64_t nqkv, int64_t C, int64_t ny_, int copy_mode, uint32_t seed)
        : dt(dt_), ny(ny_), xd(nqkv), xb(nqkv * 2), yb(ny_ * 2 + 2 * guard) {
        std::mt19937                    rng(seed);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (int64_t i = 0; i < nqkv; i++) {
            const uint16_t h = to_bits(nd(rng) * (i % (3 * C) < C ? 2.0f : 1.0f), dt);
            memcpy(&xb[i * 2], &h, 2);
            xd[i] = from_bits(h, dt);
        }
        memset(yb.data(), 0xA5, yb.size());
        memset(yb.data() + guard, 0xFF, ny * 2);
        emu::bufs            = {{(const char *)xb.data(), xb.size()}};
        emu::deferred_copies = copy_mode;
    }
    void *y() { return yb.data() + guard; }
    bool  guards_ok() const {
        for (size_t i = 0; i < guard; i++)
            if (yb[i] != 0xA5 || yb[guard + ny * 2 + i] != 0xA5) return false;
        return true;
    }
    double y_at(int64_t i) const {
        uint16_t h;
        memcpy(&h, &yb[guard + i * 2], 2);
        return from_bits(h, dt);
    }
};

/* The attention_qkv op's direct path (ck__attention_tokens_fa3): q, k, v read from a (B, T, 3·heads·56) qkv buffer
 * as strided 56-column views, o written into (B, T, heads·56) with guard bytes around it, against fp64. */
static void run_tokens_case(ck_dtype dt, int64_t B, int T, int heads, int copy_mode, uint32_t seed) {
    const int     HD = 56;
    const int64_t C = (int64_t)heads * HD, nqkv = B * T * 3 * C, ny = B * T * C;
    QkvIO                      io(dt, nqkv, C, ny, copy_mode, seed);
    const std::vector<double> &xd = io.xd;
    const int64_t              sx[3] = {B, T, 3 * C}, sy[3] = {B, T, C};
    ck_tensor x = ck_tensor_make(io.xb.data(), dt, 3, sx), y = ck_tensor_make(io.y(), dt, 3, sy);
    const float   scale = 1.0f / sqrtf(56.0f);
    const int     used  = ck__attention_tokens_fa3(nullptr, &y, &x, heads, scale);
    g_count++;
    char name[160];
    snprintf(name, sizeof name, "%-4s tokens B=%lld T=%d heads=%d copies=%s%s", ck_dtype_name(dt), (long long)B, T,
             heads, copy_mode ? "deferred" : "at-issue", g_emu_device ? " sms=2" : "");
    bool ok = used == 1 && io.guards_ok();
    double worst = 0, max_err = 0;
    long   bad = 0;
    std::vector<double> s(T);
    for (int64_t b = 0; ok && b < B; b++)
        for (int h = 0; h < heads; h++)
            for (int i = 0; i < T; i++) {
                const double *qr = &xd[(b * T + i) * 3 * C + h * HD];
                double        mx = -INFINITY, sum = 0;
                for (int j = 0; j < T; j++) {
                    const double *kr  = &xd[(b * T + j) * 3 * C + C + h * HD];
                    double        dot = 0;
                    for (int d = 0; d < HD; d++) dot += qr[d] * kr[d];
                    s[j] = dot * scale;
                    mx   = std::max(mx, s[j]);
                }
                for (int j = 0; j < T; j++) sum += (s[j] = exp(s[j] - mx));
                for (int d = 0; d < HD; d++) {
                    double ref = 0;
                    for (int j = 0; j < T; j++) ref += s[j] * xd[(b * T + j) * 3 * C + 2 * C + h * HD + d];
                    ref /= sum;
                    const double got = io.y_at((b * T + i) * C + h * HD + d), tol = (dt == CK_DTYPE_F16 ? 2e-3 : 1.2e-2) * (1 + fabs(ref));
                    const double err = std::isfinite(got) ? fabs(got - ref) : INFINITY;
                    max_err = std::max(max_err, err);
                    worst   = std::max(worst, err / tol);
                    if (err > tol && bad++ < 3)
                        printf("  b=%lld head=%d row=%d col=%d got %.6f ref %.6f\n", (long long)b, h, i, d, got, ref);
                }
            }
    ok = ok && bad == 0;
    if (!ok) g_fail++;
    if (!ok || g_verbose)
        printf("%s %s: used %d max_abs %.3g (%.0f%% of tol) bad %ld\n", ok ? "ok    " : "NOT OK", name, used, max_err,
               100 * worst, bad);
}

/* The attention_qkv op's windowed path (ck__attention_windows): qkv (B, H, W, 3·heads·HD) in win_h×win_w mask units,
 * queries 2×2 max-pooled or not, o written into (B, H/p, W/p, heads·HD) with guard bytes around it, against fp64. */
static void run_window_case(ck_dtype dt, int64_t B, int H, int W, int heads, int HD, int win_h, int win_w, int q_pool,
                            int copy_mode, uint32_t seed) {
    const int     pool = q_pool ? 2 : 1, Hq = H / pool, Wq = W / pool, qw = win_w / pool, qh = win_h / pool;
    const int     T = win_h * win_w, Tq = T / (pool * pool);
    const int64_t C = (int64_t)heads * HD, nqkv = B * H * W * 3 * C, ny = B * Hq * Wq * C;
    QkvIO                      io(dt, nqkv, C, ny, copy_mode, seed);
    const std::vector<double> &xd = io.xd;
    const int64_t              sx[4] = {B, H, W, 3 * C}, sy[4] = {B, Hq, Wq, C};
    ck_tensor x = ck_tensor_make(io.xb.data(), dt, 4, sx), y = ck_tensor_make(io.y(), dt, 4, sy);
    const float   scale = 1.0f / sqrtf((float)HD);
    const int     used  = ck__attention_windows(nullptr, &y, &x, heads, win_h, win_w, q_pool, scale);
    g_count++;
    char name[160];
    snprintf(name, sizeof name, "%-4s windows B=%lld %dx%d heads=%d hd=%d win %dx%d%s copies=%s", ck_dtype_name(dt),
             (long long)B, H, W, heads, HD, win_h, win_w, q_pool ? " q_pool" : "", copy_mode ? "deferred" : "at-issue");
    bool ok = used == 1 && io.guards_ok();
    double worst = 0, max_err = 0;
    long   bad = 0;
    std::vector<double> s(T), qv(HD);
    auto tok = [&](int64_t b, int yy, int xx) { return ((b * H + yy) * W + xx) * 3 * C; };
    for (int64_t b = 0; ok && b < B; b++)
        for (int h = 0; h < heads; h++)
            for (int wy = 0; wy < H / win_h; wy++)
                for (int wx = 0; wx < W / win_w; wx++)
                    for (int i = 0; i < Tq; i++) {
                        const int qy = wy * win_h + pool * (i / qw), qx = wx * win_w + pool * (i % qw);
                        for (int d = 0; d < HD; d++) {
                            double m = -INFINITY;
                            for (int dy = 0; dy < pool; dy++)
                                for (int dx = 0; dx < pool; dx++) m = std::max(m, xd[tok(b, qy + dy, qx + dx) + h * HD + d]);
                            qv[d] = m;
                        }
                        double mx = -INFINITY, sum = 0;
                        for (int j = 0; j < T; j++) {
                            double dot = 0;
                            for (int d = 0; d < HD; d++)
                                dot += qv[d] * xd[tok(b, wy * win_h + j / win_w, wx * win_w + j % win_w) + C + h * HD + d];
                            s[j] = dot * scale;
                            mx   = std::max(mx, s[j]);
                        }
                        for (int j = 0; j < T; j++) sum += (s[j] = exp(s[j] - mx));
                        const int oy = wy * qh + i / qw, ox = wx * qw + i % qw;
                        for (int d = 0; d < HD; d++) {
                            double ref = 0;
                            for (int j = 0; j < T; j++)
                                ref += s[j] * xd[tok(b, wy * win_h + j / win_w, wx * win_w + j % win_w) + 2 * C + h * HD + d];
                            ref /= sum;
                            const double got = io.y_at(((b * Hq + oy) * Wq + ox) * C + h * HD + d), tol = (dt == CK_DTYPE_F16 ? 2e-3 : 1.2e-2) * (1 + fabs(ref));
                            const double err = std::isfinite(got) ? fabs(got - ref) : INFINITY;
                            max_err = std::max(max_err, err);
                            worst   = std::max(worst, err / tol);
                            if (err > tol && bad++ < 3)
                                printf("  b=%lld head=%d out=(%d,%d) col=%d got %.6f ref %.6f\n", (long long)b, h, oy, ox, d,
                                       got, ref);
                        }
                    }
    ok = ok && bad == 0;
    if (!ok) g_fail++;
    if (!ok || g_verbose)
        printf("%s %s: used %d max_abs %.3g (%.0f%% of tol) bad %ld\n", ok ? "ok    " : "NOT OK", name, used, max_err,
               100 * worst, bad);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-v")) g_verbose = 1;
    const ck_dtype BF = CK_DTYPE_BF16, HF = CK_DTYPE_F16, F32 = CK_DTYPE_F32;
    const int A = CK_ATTN_AUTO, SI = CK_ATTN_SIMT, SM = CK_ATTN_SMALL, F64 = CK_ATTN_FLASH64,
              F128 = CK_ATTN_FLASH128, WG = CK_ATTN_WGMMA, FA = CK_ATTN_FA3;
    const Case cases[] = {
        /* flash kernels: ragged Tq / Tk, several K tiles (both stages), peaky and flat softmax */
        {BF, 56, 2, 130, 77, F64, F64, 2.0f},
        {HF, 64, 1, 64, 64, F64, F64, 1.0f},
        {BF, 64, 2, 200, 300, F128, F128, 3.0f},
        {HF, 56, 1, 129, 129, F128, F128, 2.0f},
        {BF, 56, 1, 70, 200, F128, F128, 4.0f},
        {HF, 64, 1, 33, 1, F64, F64, 1.0f},
        {BF, 8, 2, 70, 90, F64, F64, 2.0f},
        {HF, 16, 1, 65, 130, F64, F64, 2.0f},
        {BF, 32, 1, 40, 64, F64, F64, 2.0f},
        {BF, 32, 1, 40, 64, F128, -1, 2.0f},
        /* mask-unit kernel: every NKT, ragged Tq / Tk, group counts that leave warps idle */
        {BF, 56, 7, 16, 64, SM, SM, 2.0f},
        {HF, 64, 5, 16, 64, SM, SM, 2.0f},
        {BF, 64, 5, 16, 16, SM, SM, 2.0f},
        {HF, 56, 9, 4, 16, SM, SM, 2.0f},
        {BF, 64, 6, 11, 50, SM, SM, 3.0f},
        {HF, 56, 3, 16, 30, SM, SM, 2.0f},
        {BF, 56, 2, 1, 1, SM, SM, 1.0f},
        {BF, 8, 3, 16, 40, SM, SM, 2.0f},
        {HF, 16, 3, 7, 64, SM, SM, 2.0f},
        {BF, 32, 5, 16, 20, SM, SM, 2.0f},
        {BF, 56, 2, 17, 64, SM, -1, 2.0f},
        {BF, 56, 2, 16, 65, SM, -1, 2.0f},
        /* Hopper kernel: one tile, ragged tiles, a ring that wraps several times, partial query blocks */
        {BF, 64, 1, 128, 64, WG, WG, 2.0f},
        {HF, 56, 2, 130, 300, WG, WG, 3.0f},
        {BF, 56, 1, 64, 1000, WG, WG, 4.0f},
        {HF, 64, 1, 200, 65, WG, WG, 2.0f},
        {BF, 64, 2, 17, 1, WG, WG, 1.0f},
        {BF, 56, 1, 128, 129, WG, WG, 2.0f},
        {BF, 32, 1, 64, 64, WG, -1, 2.0f},
        /* FA3 kernel (HD 64): one tile, ragged query blocks and keys, a ring that wraps several times, more key
         * tiles than stages, fewer keys than a tile; these shapes leave most of a wave idle, so the key split
         * and its merge run too */
        {HF, 64, 1, 64, 128, FA, FA, 2.0f},
        {BF, 64, 2, 200, 700, FA, FA, 3.0f},
        {HF, 64, 1, 130, 1000, FA, FA, 4.0f},
        {BF, 64, 3, 100, 65, FA, FA, 2.0f},
        {HF, 64, 1, 257, 300, FA, FA, 1.0f},
        {HF, 64, 3, 128, 600, FA, FA, 2.0f}, /* on 2 SMs: a full wave, then one tile split two ways */
        {BF, 64, 2, 64, 4100, FA, FA, 3.0f}, /* a long ring (33 tiles, one partial) */
        {HF, 56, 1, 64, 128, FA, -1, 2.0f},
        /* automatic choice */
        {HF, 64, 3, 64, 64, A, F64, 2.0f},
        {BF, 56, 4, 4, 16, A, SM, 2.0f},
        {BF, 56, 2, 16, 64, A, SM, 2.0f},
        {BF, 56, 1, 300, 300, A, F64, 2.0f},
        {BF, 48, 2, 20, 40, A, SI, 2.0f},
        {F32, 56, 2, 20, 40, A, SI, 2.0f},
        /* SIMT kernel */
        {F32, 56, 2, 70, 45, SI, SI, 2.0f},
        {F32, 64, 1, 16, 100, SI, SI, 3.0f},
        {F32, 20, 2, 33, 33, SI, SI, 2.0f},
        {F32, 8, 3, 4, 16, SI, SI, 2.0f},
        {HF, 56, 1, 40, 70, SI, SI, 2.0f},
        {F32, 80, 1, 4, 4, SI, -1, 2.0f},
    };
    uint32_t seed = 1234;
    for (const Case &c : cases)
        for (int mode = 0; mode < 2; mode++) {
            if (c.dt == CK_DTYPE_F32 && mode == 1) continue; /* the SIMT kernel issues no cp.async */
            run_case(c, mode, seed++);
            if (c.variant == FA) { /* and on the two-SM device: no key split, the whole ring */
                g_emu_device = 1;
                run_case(c, mode, seed++);
                g_emu_device = 0;
            }
        }
    /* every configuration of the FA3 ladder (the cases above run the per-shape choice): a ragged shape on both
     * devices, deferred and at issue */
    const Case ladder[] = {{BF, 64, 2, 200, 700, FA, FA, 3.0f}, {HF, 64, 3, 128, 600, FA, FA, 2.0f}};
    for (int cfg = 0; cfg < ck__attn_fa3_configs(); cfg++) {
        ck__attn_fa3_select(cfg);
        for (const Case &c : ladder)
            for (int mode = 0; mode < 2; mode++)
                for (int dev = 0; dev < 2; dev++) {
                    g_emu_device = dev;
                    run_case(c, mode, seed++);
                }
    }
    ck__attn_fa3_select(-1);
    /* attention_qkv straight from qkv: several heads and images, ragged rows and keys, both devices */
    g_fa3_tokens_min = 1;
    for (int dev = 0; dev < 2; dev++)
        for (int mode = 0; mode < 2; mode++) {
            g_emu_device = dev;
            run_tokens_case(HF, 1, 300, 2, mode, seed++);
            run_tokens_case(BF, 2, 200, 3, mode, seed++);
        }
    g_fa3_tokens_min = 4096;
    g_emu_device = 0;
    /* mask units straight from qkv: every kernel shape the windowed path instantiates for the model's windows
     * (64 keys with 64 or 16 pooled queries, 16 keys with 16 or 4), head dims 56, 32 and 64, non-square windows,
     * group counts that leave blocks partly empty */
    for (int mode = 0; mode < 2; mode++) {
        run_window_case(HF, 2, 16, 16, 2, 56, 8, 8, 0, mode, seed++);
        run_window_case(BF, 1, 16, 16, 2, 56, 8, 8, 1, mode, seed++);
        run_window_case(HF, 1, 8, 8, 3, 56, 4, 4, 0, mode, seed++);
        run_window_case(BF, 1, 8, 12, 3, 56, 4, 4, 1, mode, seed++);
        run_window_case(HF, 3, 8, 16, 1, 32, 8, 8, 0, mode, seed++);
        run_window_case(HF, 1, 8, 16, 1, 32, 8, 8, 1, mode, seed++);
        run_window_case(BF, 1, 8, 16, 3, 56, 4, 8, 0, mode, seed++);
        run_window_case(HF, 1, 8, 16, 3, 56, 4, 8, 1, mode, seed++);
        run_window_case(HF, 1, 8, 8, 1, 64, 8, 8, 0, mode, seed++);
        run_window_case(BF, 1, 12, 12, 3, 56, 6, 6, 1, mode, seed++);
    }
    printf("%d cases, %d failed (mma %ld, ldmatrix %ld, cp.async %ld, tma %ld emulated)\n", g_count, g_fail,
           emu::n_mma, emu::n_ldsm, emu::n_cp, emu::n_tma);
    return g_fail ? 1 : 0;
}
