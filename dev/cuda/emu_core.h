/* The host emulator of CUDA kernels shared by dev/cuda/attention_emu.cpp, refiner_emu.cpp and gemm_emu.cpp: one
 * coroutine per CUDA thread (its own stack; emu_switch or swapcontext below), warp and warpgroup collectives as
 * rendezvous points, emulated ldmatrix, mma.sync, wgmma (operands through shared-memory matrix descriptors: the
 * 128-byte swizzle and the K-major layout without swizzle), cp.async, the copy engine, mbarriers and named
 * barriers, and the few CUDA runtime calls the kernels' launchers make. attention_emu.cpp's header comment
 * describes what it checks and what it cannot see. Include once, in one translation unit, before the kernel
 * source. */
#ifndef CK_DEV_CUDA_EMU_CORE_H
#define CK_DEV_CUDA_EMU_CORE_H
#define CK_CUDA_EMU 1

#include <ucontext.h>

/* The coroutine switch. swapcontext saves and restores the signal mask with a system call at every switch, a
 * large part of the emulators' run time; on x86-64 the switch is the callee-saved registers and the stack
 * pointer, which is all that code that never changes its signal mask or floating-point environment needs
 * (System V ABI: rbx, rbp, r12-r15). Elsewhere, or with -DEMU_UCONTEXT, swapcontext. */
#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
#define EMU_FAST_SWITCH 1
/* saves the current stack pointer at *save_sp and continues on the stack load_sp */
extern "C" void emu_switch(void **save_sp, void *load_sp);
asm(".text\n.globl emu_switch\n.type emu_switch,@function\nemu_switch:\n"
    "pushq %rbp\npushq %rbx\npushq %r12\npushq %r13\npushq %r14\npushq %r15\n"
    "movq %rsp, (%rdi)\nmovq %rsi, %rsp\n"
    "popq %r15\npopq %r14\npopq %r13\npopq %r12\npopq %rbx\npopq %rbp\nret\n"
    ".size emu_switch, .-emu_switch\n");
#endif

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
    ucontext_t                       ctx; /* swapcontext's */
    void                            *sp;  /* emu_switch's: the saved stack pointer */
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
#ifdef EMU_FAST_SWITCH
static void *sched_sp;
#else
static ucontext_t sched;
#endif
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
#ifdef EMU_FAST_SWITCH
static void yield() { emu_switch(&threads[cur].sp, sched_sp); }
#else
static void yield() { swapcontext(&threads[cur].ctx, &sched); }
#endif
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

#ifdef EMU_FAST_SWITCH
/* a coroutine's first frame: entry, then back to the scheduler for good (a finished thread is never resumed) */
static void trampoline() {
    entry();
    void *dead;
    emu_switch(&dead, sched_sp);
    abort();
}
/* a fresh stack whose first switch "returns" into trampoline with the alignment of a function entry */
static void *initial_sp(std::vector<char> &stack) {
    void **s = reinterpret_cast<void **>((reinterpret_cast<uintptr_t>(stack.data() + stack.size())) & ~uintptr_t(15));
    *--s     = nullptr;                               /* after the return: rsp ≡ 8 (mod 16), as after a call */
    *--s     = reinterpret_cast<void *>(&trampoline); /* emu_switch's ret */
    for (int i = 0; i < 6; i++) *--s = nullptr;       /* rbp, rbx, r12-r15 */
    return s;
}
#endif

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
#ifdef EMU_FAST_SWITCH
        t.sp = initial_sp(t.stack);
#else
        getcontext(&t.ctx);
        t.ctx.uc_stack.ss_sp   = t.stack.data();
        t.ctx.uc_stack.ss_size = stack_bytes;
        t.ctx.uc_link          = &sched;
        makecontext(&t.ctx, entry, 0);
#endif
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
#ifdef EMU_FAST_SWITCH
            emu_switch(&sched_sp, threads[i].sp);
#else
            swapcontext(&sched, &threads[i].ctx);
#endif
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

/* e4m3 (FP8, OCP "E4M3FN"): 1 sign, 4 exponent (bias 7), 3 mantissa bits; subnormals below 2^-6, no infinity,
 * 0x7F / 0xFF NaN, largest finite 448. */
static float e4m3_to_f(uint8_t b) {
    const int e = (b >> 3) & 15, m = b & 7;
    float     v;
    if (e == 15 && m == 7) v = NAN;
    else if (e == 0) v = ldexpf((float)m, -9);
    else v = ldexpf(1.0f + m / 8.0f, e - 7);
    return (b & 0x80) ? -v : v;
}
/* cvt.rn.satfinite.e4m3: to nearest even, magnitudes past 448 to 448, NaN to NaN. */
static uint8_t f_to_e4m3(float x) {
    if (x != x) return 0x7F;
    const uint8_t sign = x < 0 ? 0x80 : 0;
    const double  a    = fabs((double)x);
    if (a >= 448.0) return sign | 0x7E;
    if (a < ldexp(1.0, -6)) return sign | (uint8_t)nearbyint(a * 512.0); /* 8 gives 2^-6, code 0x08 */
    int          e;
    const double f = frexp(a, &e); /* a = f·2^e, f in [0.5, 1) */
    int          q = (int)nearbyint((2.0 * f - 1.0) * 8.0);
    int          E = e - 1 + 7;
    if (q == 8) q = 0, E++;
    if (E > 15 || (E == 15 && q == 7)) return sign | 0x7E;
    return sign | (uint8_t)(E << 3 | q);
}

/* ---- for the harnesses: 16-bit values and their units in the last place ---- */
static uint16_t f2h(float f, bool bf16) {
    uint16_t u;
    if (bf16) {
        const __nv_bfloat16 h = __float2bfloat16_rn(f);
        memcpy(&u, &h, 2);
    } else {
        const __half h = __float2half_rn(f);
        memcpy(&u, &h, 2);
    }
    return u;
}
static float h2f(uint16_t u, bool bf16) { return unpack(u, bf16); }
/* one unit in the last place of v in the dtype (at least the smallest normal's) */
static double ulp(double v, bool bf16) {
    const double a = fabs(v) < 6.1e-5 ? 6.1e-5 : fabs(v);
    return ldexp(1.0, ilogb(a) - (bf16 ? 7 : 10));
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

/* This lane's accumulators of a 64 × N wgmma over K, from the whole warpgroup's A (64 × K) and B (K × N): row
 * 16·warp + lane/4 (+ 8), columns 8j + 2·(lane%4) (+ 1), summed in k order onto d (or onto zero). */
template <int K, int N>
static void wg_accumulate(float *d, const float (&A)[64][K], const float (&B)[K][N], unsigned me, int accumulate) {
    const int w = me >> 5, L = me & 31;
    for (int j = 0; j < N / 8; j++)
        for (int e = 0; e < 4; e++) {
            const int row = 16 * w + (L >> 2) + 8 * (e >> 1), col = 8 * j + 2 * (L & 3) + (e & 1);
            float     acc = accumulate ? d[4 * j + e] : 0.0f;
            for (int k = 0; k < K; k++) acc += A[row][k] * B[k][col];
            d[4 * j + e] = acc;
        }
}
/* The same for a lane that holds only its own two A rows (A[h] = row 16·warp + lane/4 + 8h). */
template <int K, int N>
static void lane_accumulate(float *d, const float (&A)[2][K], const float (&B)[K][N], unsigned me, int accumulate) {
    const int L = me & 31;
    for (int j = 0; j < N / 8; j++)
        for (int e = 0; e < 4; e++) {
            const int col = 8 * j + 2 * (L & 3) + (e & 1);
            float     acc = accumulate ? d[4 * j + e] : 0.0f;
            for (int k = 0; k < K; k++) acc += A[e >> 1][k] * B[k][col];
            d[4 * j + e] = acc;
        }
}

/* One wgmma.m64nNk16 (A from registers; N = 64 or 56): the warpgroup's 128 lanes deposit their A fragments, B is
 * read from the emulated shared window through the descriptor (128-byte swizzle: bits [4,7) of the byte address XOR
 * bits [7,10)), each lane then computes its N/2 accumulators. Synchronous: the result is in place at issue, which the
 * kernels cannot tell apart from "at wait_group" as long as they do not touch the registers in between. */
template <typename T, int TB, int N>
static void wgmma_rs(float *d, const uint32_t (&a)[4], uint64_t desc, int accumulate) {
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
    float A[64][16], B[16][N];
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
        for (int n = 0; n < N; n++) {
            /* K-major (TB = 0): row n, element k; N-major (TB = 1): row k, element n */
            const uint32_t row = TB ? k : n, col = TB ? n : k;
            uint32_t       addr = start + (row / 8) * sbo + (row % 8) * 128 + col * 2;
            addr ^= ((addr >> 7) & 7) << 4;
            if (addr + 2 > sizeof emu::dyn_smem) emu::fail("wgmma: operand outside shared memory");
            uint16_t h;
            memcpy(&h, emu::dyn_smem + addr, 2);
            B[k][n] = emu::unpack(h, bf16);
        }
    wg_accumulate(d, A, B, me, accumulate);
    emu::wait(emu::wg_bar[wgi]);
}
template <typename T, int TB> void ck__wgmma_64(float (&d)[32], const uint32_t (&a)[4], uint64_t desc, int accumulate) {
    wgmma_rs<T, TB, 64>(d, a, desc, accumulate);
}
/* wgmma.m64n56k16: the same with N = 56 (the first 28 accumulators of the N = 64 layout) */
long n_wgmma56; /* the N = 56 form's issues (attention_emu.cpp checks that its PV56 cases took it) */
template <typename T, int TB> void ck__wgmma_56(float (&d)[28], const uint32_t (&a)[4], uint64_t desc, int accumulate) {
    n_wgmma56++;
    wgmma_rs<T, TB, 56>(d, a, desc, accumulate);
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
    int            swizzle; /* bytes: 64 or 128 */
};
static_assert(sizeof(EmuMap) <= sizeof(CUtensorMap), "the fake map fits the opaque one");
void tma_prefetch_map(const CUtensorMap *) {}
void tma_load_3d(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1, int c2) {
    EmuMap mp;
    memcpy(&mp, map, sizeof mp);
    const uint32_t rb = mp.box[0] * mp.elem; /* bytes per box row: the swizzle's span */
    if (!mp.swizzle || rb != (uint32_t)mp.swizzle || mp.box[2] != 1) emu::fail("tma: unexpected tensor map");
    if (dst % (8 * rb)) emu::fail("tma: swizzled box not aligned on its swizzle period in shared memory");
    emu::n_tma++;
    emu::TmaOp op;
    op.dst = dst, op.bar = bar, op.bytes = mp.box[0] * mp.box[1] * mp.elem;
    const uint32_t per = 16 / mp.elem; /* elements per 16-byte chunk */
    for (uint32_t r = 0; r < mp.box[1]; r++)
        for (uint32_t ch = 0; ch < rb / 16; ch++) {
            const int64_t row = (int64_t)c1 + r, col = (int64_t)c0 + ch * per;
            uint8_t       chunk[16] = {0}; /* out of bounds: zeros */
            if (row >= 0 && row < (int64_t)mp.dim[1] && c2 >= 0 && c2 < (int64_t)mp.dim[2] && col >= 0 &&
                col + per <= (int64_t)mp.dim[0]) {
                const uint8_t *src = mp.base + (uint64_t)c2 * mp.stride[1] + (uint64_t)row * mp.stride[0] + col * mp.elem;
                bool           inside = false;
                for (const emu::Buf &b : emu::bufs)
                    if ((const char *)src >= b.p && (const char *)src + 16 <= b.p + b.n) inside = true;
                if (!inside) emu::fail("tma: global read outside every input tensor");
                memcpy(chunk, src, 16);
            }
            uint32_t a = dst + r * rb + ch * 16;
            a ^= ((a >> 7) & (rb == 128 ? 7u : 3u)) << 4;
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
/* wgmma.m64n128k16 with both operands in shared memory, K-major, as ck__wgmma_64 above. A descriptor is decoded
 * as the PTX ISA's "Matrix Descriptor Format" states it: layout 1, the 128-byte swizzle (8-row groups 1024
 * bytes apart, bits [4,7) of the byte address XOR bits [7,10)); layout 0, no swizzle: core matrices of 8 rows ×
 * 16 bytes, row r of the operand at (r / 8)·SBO + (r % 8)·16, its k-chunk j (8 elements) LBO·j further. */
struct EmuDesc {
    uint32_t start, lbo, sbo, mode;
};
static EmuDesc desc_decode(uint64_t desc) {
    EmuDesc d;
    d.start = (uint32_t)(desc & 0x3FFF) << 4;
    d.lbo   = (uint32_t)((desc >> 16) & 0x3FFF) << 4;
    d.sbo   = (uint32_t)((desc >> 32) & 0x3FFF) << 4;
    d.mode  = (uint32_t)(desc >> 62);
    const uint32_t base_off = (uint32_t)((desc >> 49) & 7);
    if (base_off != 0) emu::fail("wgmma: nonzero base offset");
    if (d.mode == 1) {
        if (d.lbo != 16 || d.sbo != 1024) emu::fail("wgmma: unexpected descriptor fields (128-byte swizzle)");
        if (d.start % 1024 >= 128) emu::fail("wgmma: operand not anchored on a 1024-byte swizzle period");
    } else if (d.mode == 2) {
        if (d.lbo != 16 || d.sbo != 512) emu::fail("wgmma: unexpected descriptor fields (64-byte swizzle)");
        if (d.start % 512 >= 64) emu::fail("wgmma: operand not anchored on a 512-byte swizzle period");
    } else if (d.mode == 0) {
        if (d.lbo == 0 || d.sbo == 0) emu::fail("wgmma: zero stride in an unswizzled descriptor");
    } else {
        emu::fail("wgmma: the 32-byte swizzle is not emulated");
    }
    return d;
}
/* The byte address of element k of row `row` of a K-major operand with `es`-byte elements. */
static uint32_t kmajor_addr(const EmuDesc &d, uint32_t row, uint32_t k, uint32_t es) {
    uint32_t addr;
    if (d.mode == 1) {
        addr = d.start + (row / 8) * 1024 + (row % 8) * 128 + k * es;
        addr ^= ((addr >> 7) & 7) << 4;
    } else if (d.mode == 2) {
        addr = d.start + (row / 8) * 512 + (row % 8) * 64 + k * es;
        addr ^= ((addr >> 7) & 3) << 4;
    } else {
        const uint32_t per = 16 / es; /* elements per core-matrix row */
        addr = d.start + (row / 8) * d.sbo + (row % 8) * 16 + (k / per) * d.lbo + (k % per) * es;
    }
    if (addr + es > sizeof emu::dyn_smem) emu::fail("wgmma: operand outside shared memory");
    return addr;
}
static float smem_kmajor(const EmuDesc &d, uint32_t row, uint32_t k, bool bf16) {
    uint16_t h;
    memcpy(&h, emu::dyn_smem + kmajor_addr(d, row, k, 2), 2);
    return emu::unpack(h, bf16);
}
static float smem_kmajor_e4m3(const EmuDesc &d, uint32_t row, uint32_t k) {
    return emu::e4m3_to_f(emu::dyn_smem[kmajor_addr(d, row, k, 1)]);
}
template <typename T> void ck__wgmma_ss128(float (&d)[64], uint64_t adesc, uint64_t bdesc, int accumulate) {
    const bool     bf16 = std::is_same<T, __nv_bfloat16>::value;
    const unsigned wgi = threadIdx.x >> 7, me = threadIdx.x & 127;
    if (emu::wg_bar[wgi].expected != 128) emu::fail("wgmma with an incomplete warpgroup");
    const EmuDesc da = desc_decode(adesc), db = desc_decode(bdesc);
    emu::n_mma++;
    emu::wait(emu::wg_bar[wgi]);
    const int w = me >> 5, L = me & 31;
    float     A[2][16], B[16][128];
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 16; k++) A[h][k] = smem_kmajor(da, 16 * w + (L >> 2) + 8 * h, k, bf16);
    for (int k = 0; k < 16; k++)
        for (int n = 0; n < 128; n++) B[k][n] = smem_kmajor(db, n, k, bf16);
    lane_accumulate(d, A, B, me, accumulate);
    emu::wait(emu::wg_bar[wgi]);
}
/* wgmma.m64n128k32 e4m3 × e4m3 → f32, both operands K-major in shared memory (products exact in float, summed in
 * order: the tensor core's own order is not modelled). */
void ck__wgmma_fp8_ss128(float (&d)[64], uint64_t adesc, uint64_t bdesc, int accumulate) {
    const unsigned wgi = threadIdx.x >> 7, me = threadIdx.x & 127;
    if (emu::wg_bar[wgi].expected != 128) emu::fail("wgmma with an incomplete warpgroup");
    const EmuDesc da = desc_decode(adesc), db = desc_decode(bdesc);
    emu::n_mma++;
    emu::wait(emu::wg_bar[wgi]);
    const int w = me >> 5, L = me & 31;
    float     A[2][32], B[32][128];
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 32; k++) A[h][k] = smem_kmajor_e4m3(da, 16 * w + (L >> 2) + 8 * h, k);
    for (int k = 0; k < 32; k++)
        for (int n = 0; n < 128; n++) B[k][n] = smem_kmajor_e4m3(db, n, k);
    lane_accumulate(d, A, B, me, accumulate);
    emu::wait(emu::wg_bar[wgi]);
}
/* wgmma.m64n64k32 e4m3, A from registers (per warp 16 rows: a[0] row lane/4, bytes k = 4·(lane%4) + 0..3; a[1]
 * the row 8 below; a[2], a[3] the same at k + 16), B K-major in shared memory. */
void ck__wgmma_fp8_rs64(float (&d)[32], const uint32_t (&a)[4], uint64_t desc, int accumulate) {
    const unsigned wgi = threadIdx.x >> 7, me = threadIdx.x & 127;
    if (emu::wg_bar[wgi].expected != 128) emu::fail("wgmma with an incomplete warpgroup");
    const EmuDesc db = desc_decode(desc);
    emu::n_mma++;
    emu::WgX &x = emu::wgx[wgi];
    for (int i = 0; i < 4; i++) x.a[me][i] = a[i];
    emu::wait(emu::wg_bar[wgi]);
    float A[64][32], B[32][64];
    for (int L = 0; L < 128; L++) {
        const int r0 = 16 * (L >> 5) + ((L & 31) >> 2), c0 = 4 * (L & 3);
        for (int j = 0; j < 4; j++) {
            A[r0][c0 + j]          = emu::e4m3_to_f((uint8_t)(x.a[L][0] >> (8 * j)));
            A[r0 + 8][c0 + j]      = emu::e4m3_to_f((uint8_t)(x.a[L][1] >> (8 * j)));
            A[r0][c0 + 16 + j]     = emu::e4m3_to_f((uint8_t)(x.a[L][2] >> (8 * j)));
            A[r0 + 8][c0 + 16 + j] = emu::e4m3_to_f((uint8_t)(x.a[L][3] >> (8 * j)));
        }
    }
    for (int k = 0; k < 32; k++)
        for (int n = 0; n < 64; n++) B[k][n] = smem_kmajor_e4m3(db, n, k);
    wg_accumulate(d, A, B, me, accumulate);
    emu::wait(emu::wg_bar[wgi]);
}
uint32_t ck__pack_e4m3x4(float x0, float x1, float x2, float x3) {
    return (uint32_t)emu::f_to_e4m3(x0) | (uint32_t)emu::f_to_e4m3(x1) << 8 | (uint32_t)emu::f_to_e4m3(x2) << 16 |
           (uint32_t)emu::f_to_e4m3(x3) << 24;
}
/* a named barrier over n threads (bar.sync id, n) */
void ck__bar_sync_n(int id, int n) {
    emu::Barrier &b = emu::named_bar[id];
    if (b.expected != 0 && b.expected != n) emu::fail("named barrier used with two thread counts");
    b.expected = n;
    emu::wait(b);
}
/* the round-to-nearest float intrinsics (the host's float operations are IEEE, contraction off in ISO C++) */
float __fadd_rn(float a, float b) { return a + b; }
float __fsub_rn(float a, float b) { return a - b; }
float __fmul_rn(float a, float b) { return a * b; }

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
        (dt != CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && dt != CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 &&
         dt != CU_TENSOR_MAP_DATA_TYPE_UINT8) ||
        (sw != CU_TENSOR_MAP_SWIZZLE_128B && sw != CU_TENSOR_MAP_SWIZZLE_64B) || es[0] != 1 ||
        es[1] != 1 || es[2] != 1 || ((uintptr_t)base & 15) || stride[0] % 16 || stride[1] % 16)
        return CUDA_ERROR_INVALID_VALUE;
    EmuMap mp;
    memset(&mp, 0, sizeof mp);
    mp.base = (const uint8_t *)base;
    for (int i = 0; i < 3; i++) mp.dim[i] = dim[i], mp.box[i] = box[i];
    mp.stride[0] = stride[0], mp.stride[1] = stride[1], mp.elem = dt == CU_TENSOR_MAP_DATA_TYPE_UINT8 ? 1 : 2;
    mp.swizzle = sw == CU_TENSOR_MAP_SWIZZLE_128B ? 128 : 64;
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

#endif
