/* Hopper attention kernel in the FlashAttention-3 structure: included by attention.cu inside its anonymous
 * namespace, after the warp-level helpers it reuses (online softmax, P packing, key masking, O staging).
 * ref: Shah et al., "FlashAttention-3" (2024), §3.1 (producer/consumer warp specialization, TMA, setmaxnreg),
 *      §3.2 (ping-pong between warpgroups, softmax of one tile overlapping the GEMMs of the next);
 *      PTX ISA, "Tensor copy" (cp.async.bulk.tensor), "mbarrier", "setmaxnreg", "wgmma".
 *
 * HD = 64 only (the model's head dim 56 runs through the pad64 layout: columns 56..63 are zero in q, k, v).
 * Block = one producer warpgroup + NC consumer warpgroups of 64 query rows each (BQ = 64·NC) of one group.
 *   producer   one thread issues every copy: Q once (a 64×64 box per consumer), then K and V tiles of BK = 128
 *              keys into an NS-stage ring; a tile's stage is refilled once every consumer warp has released it
 *              (empty barrier). The copy engine writes 128-byte rows in the 128-byte swizzle wgmma reads, and
 *              zero-fills rows past Tq / Tk. The warpgroup gives its registers to the consumers (setmaxnreg).
 *   consumers  S(t) = Q·K(t)ᵀ (wgmma m64n128k16, both operands in shared memory) and O += P(t-1)·V(t-1)
 *              (m64n64k16, P from registers) are issued together; the softmax of S(t) runs while P(t-1)·V(t-1)
 *              is still on the tensor cores. With PP, the consumers take turns issuing (named barriers in a
 *              ring), so one warpgroup's softmax runs while the others' GEMMs do.
 *   EMU        of the 16 eight-key column tiles of S, EMU have their exp2 computed by a degree-4 polynomial on
 *              the FMA pipe (relative error 3.5e-6, far below a 16-bit rounding of P) instead of the MUFU unit:
 *              at HD 64 the MUFU's 16 exp2 per clock per SM take about as long as the MMAs of a tile.
 * Tile t lives in stage t % NS; the producer waits for the empty barrier's phase of its previous use.
 * The body exists only in sm_90a images; elsewhere the kernel is a trap and the launcher never selects it.
 * The host emulator (dev/cuda/attention_emu.cpp, CK_ATTN_EMU) supplies the primitives below (mbarriers, the copy
 * engine, named barriers, wgmma) and runs this same body. */
namespace fa3 {

constexpr int kBK = 128; /* keys per tile */

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(CK_ATTN_EMU)
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
/* the initialized barriers visible to the copy engine and the other threads */
__device__ __forceinline__ void mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/* Spins until the barrier's phase with this parity has completed. */
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    asm volatile("{\n.reg .pred p;\nLAB_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@p bra DONE;\nbra LAB_WAIT;\nDONE:\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}
/* One box of a 3-D tensor map (coordinates innermost first) into shared memory, completing on `bar`. */
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap *map, uint32_t bar, int c0, int c1,
                                            int c2) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, "
                 "%4, %5}], [%2];\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap *map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
template <int N> __device__ __forceinline__ void regs_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N)); }
template <int N> __device__ __forceinline__ void regs_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N)); }
/* Named barriers 1..NC (0 is __syncthreads), counted over two warpgroups: the waiter and the one arriving. */
__device__ __forceinline__ void bar_sync(int id) { asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory"); }
__device__ __forceinline__ void bar_arrive(int id) { asm volatile("bar.arrive %0, 256;\n" ::"r"(id) : "memory"); }

/* (wgmma m64n128k16 with both operands in shared memory: ck__wgmma_ss128, ops/cuda/hopper.cuh) */
#endif /* __CUDA_ARCH_FEAT_SM90_ALL && !CK_ATTN_EMU */

/* 2^x for x <= 0 on the FMA pipe: x = n + f with n = round(x), f in [-0.5, 0.5]; 2^f by a degree-4 fit at the
 * Chebyshev nodes (max relative error 3.5e-6); n goes into the exponent field. x is clamped at -125 (masked
 * keys' -inf included), so the exponent stays a normal one: such p (<= 2^-124.5) add nothing to a row sum of
 * at least 1 and round to zero in a 16-bit P, as ex2.approx.ftz's flushed results do. */
__device__ __forceinline__ float exp2_poly(float x) {
    x               = fmaxf(x, -125.0f);
    const float big = 12582912.0f; /* 1.5·2^23: adding it rounds to an integer held in the low mantissa bits */
    const float t   = x + big;
    const float n   = t - big;
    const float f   = x - n;
    float       p   = fmaf(0.00966636836528778f, f, 0.055921975523233414f);
    p               = fmaf(p, f, 0.2402234971523285f);
    p               = fmaf(p, f, 0.6931210160255432f);
    p               = fmaf(p, f, 1.0f);
    const int e     = (__float_as_int(t) - 0x4B400000) << 23;
    return __int_as_float(__float_as_int(p) + e);
}

/* ck__softmax_tile for one m-tile of NN n-tiles (the layout of a 64×(8·NN) wgmma accumulator per warp), with
 * the exp2 of EMU of every 16 column tiles on the FMA pipe (interleaved with the MUFU ones). */
template <int NN, int EMU>
__device__ __forceinline__ bool softmax_tile(float (&s)[1][NN][4], float (&m)[1][2], float (&l)[1][2],
                                             float (&corr)[1][2], float sl2) {
    bool moved = false;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float mx = m[0][h];
#pragma unroll
        for (int nt = 0; nt < NN; nt++) mx = fmaxf(mx, fmaxf(s[0][nt][2 * h], s[0][nt][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        corr[0][h]     = ck__exp2((m[0][h] - mx) * sl2);
        moved         |= mx != m[0][h];
        const float mb = mx * sl2;
        m[0][h]        = mx;
        float rs       = 0.0f;
#pragma unroll
        for (int nt = 0; nt < NN; nt++) {
            /* EMU = 4: tiles 0, 4, 8, 12; EMU = 8: tiles 0, 1, 4, 5, ... */
            const bool poly = EMU > 0 && (nt & 3) < EMU / 4;
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const float x = fmaf(s[0][nt][2 * h + e], sl2, -mb);
                const float p = poly ? exp2_poly(x) : ck__exp2(x);
                s[0][nt][2 * h + e] = p;
                rs += p;
            }
        }
        l[0][h] = fmaf(l[0][h], corr[0][h], rs);
    }
    return __any_sync(0xffffffffu, moved);
}

/* Every register a wgmma reads or writes (S, O, the P fragments) settled before wgmma.fence: no multiply or
 * pack may be scheduled between the fence and the MMAs (PTX ISA, wgmma.fence). */
template <int NS4, int NP>
__device__ __forceinline__ void operand_fence(float (&sf)[NS4], float (&of)[32], uint32_t (&pa)[NP][1][4]) {
#ifdef CK_ATTN_EMU
    (void)sf, (void)of, (void)pa; /* the emulator's wgmma reads its operands at issue */
#else
#pragma unroll
    for (int i = 0; i < NS4; i++) asm volatile("" : "+f"(sf[i])::"memory");
#pragma unroll
    for (int i = 0; i < 32; i++) asm volatile("" : "+f"(of[i])::"memory");
#pragma unroll
    for (int i = 0; i < NP; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) asm volatile("" : "+r"(pa[i][0][j])::"memory");
#endif
}


template <int NC, int NS> struct Layout {
    static constexpr int q_bytes = 64 * 128, kv_bytes = kBK * 128;
    static constexpr int q_off = 0, k_off = NC * q_bytes, v_off = k_off + NS * kv_bytes, bar_off = v_off + NS * kv_bytes;
    /* barriers: q_full, k_full[NS], v_full[NS], empty[NS] */
    static constexpr int smem = 1024 /* alignment slack */ + bar_off + 8 * (1 + 3 * NS);
};

constexpr int kPartRow = 66; /* floats per row of a key split's partial result: O (64), m, l */

/* Merges the key splits of `ntiles` query tiles (from tile0) of BQ rows: per row, with M the largest split max,
 * o = Σ 2^((m_s − M)·sl2) O_s / Σ 2^((m_s − M)·sl2) l_s, the online softmax's own rescale (every split holds at
 * least one real key, so every m_s is finite). One warp per row, two columns per lane. */
template <typename T>
__global__ void __launch_bounds__(256)
    fa3_combine_kernel(T *__restrict__ O, int64_t o_rs, int64_t o_gs, int o_cols, const float *__restrict__ part,
                       int Tq, int nqb, int gpi, int BQ, int tile0,
                       int ntiles, int nsplit, float sl2) {
    const int64_t row = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
    const int     lane = threadIdx.x & 31;
    if (row >= (int64_t)ntiles * BQ) return;
    const int j = (int)(row / BQ), r = (int)(row - (int64_t)j * BQ), tile = tile0 + j;
    const int g = tile / nqb, q = (tile - g * nqb) * BQ + r, b = g / gpi;
    if (q >= Tq) return;
    const float *p0 = part + ((int64_t)j * nsplit * BQ + r) * kPartRow; /* split s at + s·BQ rows */
    float        M  = -INFINITY;
    for (int sp = 0; sp < nsplit; sp++) M = fmaxf(M, p0[(int64_t)sp * BQ * kPartRow + 64]);
    float den = 0.0f, a0 = 0.0f, a1 = 0.0f;
    for (int sp = 0; sp < nsplit; sp++) {
        const float *ps = p0 + (int64_t)sp * BQ * kPartRow;
        const float  w  = ck__exp2((ps[64] - M) * sl2);
        const float2 ov = *reinterpret_cast<const float2 *>(ps + 2 * lane);
        den             = fmaf(w, ps[65], den);
        a0              = fmaf(w, ov.x, a0);
        a1              = fmaf(w, ov.y, a1);
    }
    const float inv = 1.0f / den;
    if (2 * lane < o_cols) reinterpret_cast<uint32_t *>(O + (g - b * gpi) * o_gs + ((int64_t)b * Tq + q) * o_rs)[lane] = ck__pack2<T>(a0 * inv, a1 * inv);
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(CK_ATTN_EMU)
/* The block's start: thread 0 keeps the readiness marker and sets up the barriers (q full, then per stage K full,
 * V full and empty, one arrival per consumer warp); every thread waits for them. */
template <int NC, int NS>
__device__ __forceinline__ void start_block(void *marker, uint32_t bar_q, uint32_t bar_k, uint32_t bar_v,
                                            uint32_t bar_e) {
    if (threadIdx.x == 0) {
        ck__keep_smem(marker);
        mbar_init(bar_q, 1);
        for (int s = 0; s < NS; s++) {
            mbar_init(bar_k + 8 * s, 1);
            mbar_init(bar_v + 8 * s, 1);
            mbar_init(bar_e + 8 * s, NC * 4); /* lane 0 of every consumer warp */
        }
        mbar_init_fence();
    }
    __syncthreads();
}

/* The producer thread: the NC query boxes (q_bytes each, q_stride apart; rows from q0) once, then the K and V tiles
 * of keys kb … kb + nkt − 1 (map rows from key0 + kb·kBK) through the NS-stage ring, a stage refilled once every
 * consumer warp has released it. V's box starts at (0, key) in row-major V, at (key, 0) in a transposed copy (VT). */
template <int NC, int NS, bool VT>
__device__ __forceinline__ void produce(const CUtensorMap *tq, const CUtensorMap *tk, const CUtensorMap *tv,
                                        uint32_t q_addr, uint32_t q_stride, uint32_t q_bytes, uint32_t k_addr,
                                        uint32_t k_bytes, uint32_t v_addr, uint32_t v_bytes, uint32_t bar_q,
                                        uint32_t bar_k, uint32_t bar_v, uint32_t bar_e, int q0, int g, int kb, int nkt,
                                        int key0) {
    tma_prefetch_map(tq);
    tma_prefetch_map(tk);
    tma_prefetch_map(tv);
    mbar_expect_tx(bar_q, NC * q_bytes);
    for (int c = 0; c < NC; c++) tma_load_3d(q_addr + c * q_stride, tq, bar_q, 0, q0 + 64 * c, g);
    for (int t = 0; t < nkt; t++) {
        const int s = t % NS, key = key0 + (kb + t) * kBK;
        if (t >= NS) mbar_wait(bar_e + 8 * s, (uint32_t)((t / NS - 1) & 1));
        mbar_expect_tx(bar_k + 8 * s, k_bytes);
        tma_load_3d(k_addr + s * k_bytes, tk, bar_k + 8 * s, 0, key, g);
        mbar_expect_tx(bar_v + 8 * s, v_bytes);
        tma_load_3d(v_addr + s * v_bytes, tv, bar_v + 8 * s, VT ? key : 0, VT ? 0 : key, g);
    }
}

/* A key split's share of this warp's 16 rows for fa3_combine_kernel: the unnormalized O, the row max times m_scale
 * (the units the merge weighs splits in) and the row sum. */
__device__ __forceinline__ void write_partials(float *pb, int warp, int lane, const float (&o)[1][8][4],
                                               const float (&m)[1][2], const float (&l)[1][2], float m_scale) {
    const int r0 = warp * 16 + (lane >> 2);
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float lt = l[0][h];
        lt += __shfl_xor_sync(0xffffffffu, lt, 1);
        lt += __shfl_xor_sync(0xffffffffu, lt, 2);
        float *pr = pb + (int64_t)(r0 + 8 * h) * kPartRow;
#pragma unroll
        for (int no = 0; no < 8; no++)
            *reinterpret_cast<float2 *>(pr + no * 8 + 2 * (lane & 3)) = make_float2(o[0][no][2 * h], o[0][no][2 * h + 1]);
        if ((lane & 3) == 0) *reinterpret_cast<float2 *>(pr + 64) = make_float2(m[0][h] * m_scale, lt);
    }
}

/* A block's share of a launch: query tile (rows q0 … q0 + BQ − 1 of group g) and, of that tile's split, key tiles
 * kb … kb + nkt − 1. Tiles of a group are adjacent, so they share K/V in L2. */
struct Work {
    int g, q0, kb, nkt;
};
__device__ __forceinline__ Work block_work(int tile0, int nsplit, int nqb, int BQ, int Tk) {
    const int tile = tile0 + (int)(blockIdx.x / (unsigned)nsplit), split = (int)(blockIdx.x % (unsigned)nsplit);
    Work      w;
    w.g               = tile / nqb;
    w.q0              = (tile - w.g * nqb) * BQ;
    const int nkt_all = (Tk + kBK - 1) / kBK;
    w.kb              = split * nkt_all / nsplit;
    w.nkt             = (split + 1) * nkt_all / nsplit - w.kb;
    return w;
}

/* The float16 kernel's MMA forms (Ops of consume): S = Q·Kᵀ on four m64n128k16 steps, both operands from 128-byte
 * swizzled shared memory; O += P·V on eight m64nPVNk16 steps with P from registers. PVN = 56 (a head of 56 columns,
 * the model's) leaves out the eight padding columns of V, which are zero: an eighth of P·V's tensor-core work, and
 * O's last eight columns stay zero. Q·Kᵀ keeps K = 64 (the MMA's K step is 16). */
template <typename T, int PVN = 64> struct Fp16Ops {
    static_assert(PVN == 64 || PVN == 56, "P·V is 64 or 56 columns wide");
    using PA                        = uint32_t[kBK / 16][1][4];
    static constexpr int k_bytes    = kBK * 128, v_bytes = kBK * 128;
    __device__ __forceinline__ static void fence(float (&sf)[kBK / 2], float (&of)[32], PA &pa) {
        operand_fence(sf, of, pa);
    }
    __device__ __forceinline__ static void issue_s(float (&sf)[kBK / 2], uint32_t qaddr, uint32_t kaddr) {
#pragma unroll
        for (int ks = 0; ks < 4; ks++)
            ck__wgmma_ss128<T>(sf, ck__desc_sw128(qaddr + ks * 32), ck__desc_sw128(kaddr + ks * 32), ks > 0);
        ck__wgmma_commit();
    }
    __device__ __forceinline__ static void issue_pv(float (&of)[32], PA &pa, uint32_t vaddr) {
        if constexpr (PVN == 56) {
            float(&o56)[28] = reinterpret_cast<float(&)[28]>(of);
#pragma unroll
            for (int kk = 0; kk < kBK / 16; kk++) ck__wgmma_56<T, 1>(o56, pa[kk][0], ck__desc_sw128(vaddr + kk * 2048), 1);
        } else {
#pragma unroll
            for (int kk = 0; kk < kBK / 16; kk++) ck__wgmma_64<T, 1>(of, pa[kk][0], ck__desc_sw128(vaddr + kk * 2048), 1);
        }
        ck__wgmma_commit();
    }
    __device__ __forceinline__ static void pack(PA &pa, const float (&s)[1][kBK / 8][4]) {
#pragma unroll
        for (int kk = 0; kk < kBK / 16; kk++) ck__pack_p<T, 1, kBK / 8>(pa[kk], s, kk);
    }
};

/* A consumer warpgroup's pass over key tiles kb … kb + nkt − 1 (shared by the float16 and FP8 kernels, which
 * differ only in Ops' MMA forms and P packing): S(t) = Q·K(t)ᵀ is issued with P(t−1)·V(t−1), the online softmax
 * of S(t) runs while that P·V does, and each stage is released once its V is read. With PP the NC warpgroups take
 * turns issuing (named barriers 1 … NC in a ring), so one's softmax overlaps the others' MMAs. Leaves the
 * unnormalized O, the row max m (units of S) and the row sums l. */
template <class Ops, int NC, int NS, int EMU, int PP>
__device__ __forceinline__ void consume(int c, int lane, uint32_t qaddr, uint32_t kaddr, uint32_t vaddr, uint32_t bar_q,
                                        uint32_t bar_k, uint32_t bar_v, uint32_t bar_e, int kb, int nkt, int Tk,
                                        float sl2, float (&o)[1][8][4], float (&m)[1][2], float (&l)[1][2]) {
    constexpr int NB = kBK / 8; /* n-tiles of S */
    /* ping-pong ring: warpgroup c issues after barrier 1+c, then opens 1+(c+1)%NC */
    const int my_bar = 1 + c, next_bar = 1 + (c + 1) % NC;
    if (PP && c == NC - 1) bar_arrive(1); /* the first turn is consumer 0's */
    int turns_left = nkt + 1;             /* issue phases: S(0), S(t)+PV(t-1) for t = 1..nkt-1, PV(nkt-1) */
    auto turn_begin = [&]() {
        if (PP) bar_sync(my_bar);
    };
    auto turn_end = [&]() {
        turns_left--;
        /* the last warpgroup's last turn opens nobody's: every barrier ends with matched counts */
        if (PP && !(c == NC - 1 && turns_left == 0)) bar_arrive(next_bar);
    };

    float        s[1][NB][4], corr[1][2];
    typename Ops::PA pa = {}; /* written before its first use as an operand; zeroed for the fence */
    float(&sf)[NB * 4] = reinterpret_cast<float(&)[NB * 4]>(s);
    float(&of)[32]     = reinterpret_cast<float(&)[32]>(o);
#pragma unroll
    for (int i = 0; i < 32; i++) of[i] = 0.0f;
    m[0][0] = m[0][1] = -INFINITY;
    l[0][0] = l[0][1] = 0.0f;

    mbar_wait(bar_q, 0);
    mbar_wait(bar_k, 0);
    turn_begin();
    Ops::fence(sf, of, pa);
    ck__wgmma_fence();
    Ops::issue_s(sf, qaddr, kaddr);
    turn_end();
    ck__wgmma_wait<0>();
    ck__reg_fence(sf);
    if ((kb + 1) * kBK > Tk) ck__mask_keys<1, NB>(s, Tk - kb * kBK, lane);
    softmax_tile<NB, EMU>(s, m, l, corr, sl2); /* O is still zero: no rescale */
    Ops::pack(pa, s);

    for (int t = 1; t < nkt; t++) {
        const int st = t % NS, sp = (t - 1) % NS;
        mbar_wait(bar_k + 8 * st, (uint32_t)((t / NS) & 1));
        mbar_wait(bar_v + 8 * sp, (uint32_t)(((t - 1) / NS) & 1));
        turn_begin();
        Ops::fence(sf, of, pa);
        ck__wgmma_fence();
        Ops::issue_s(sf, qaddr, kaddr + st * Ops::k_bytes);
        Ops::issue_pv(of, pa, vaddr + sp * Ops::v_bytes);
        turn_end();
        ck__wgmma_wait<1>(); /* S(t) has landed; P(t-1)·V(t-1) may still run */
        ck__reg_fence(sf);
        if ((kb + t + 1) * kBK > Tk) ck__mask_keys<1, NB>(s, Tk - (kb + t) * kBK, lane);
        const bool moved = softmax_tile<NB, EMU>(s, m, l, corr, sl2);
        ck__wgmma_wait<0>(); /* O and P(t-1) are free; stage sp is no longer read */
        ck__reg_fence(of);
        if (lane == 0) mbar_arrive(bar_e + 8 * sp);
        if (moved) ck__rescale_o<1, 8>(o, corr);
        Ops::pack(pa, s);
    }
    const int sp = (nkt - 1) % NS;
    mbar_wait(bar_v + 8 * sp, (uint32_t)(((nkt - 1) / NS) & 1));
    turn_begin();
    Ops::fence(sf, of, pa);
    ck__wgmma_fence();
    Ops::issue_pv(of, pa, vaddr + sp * Ops::v_bytes);
    turn_end();
    ck__wgmma_wait<0>();
    ck__reg_fence(of);
}
#endif

template <typename T, int NC, int NS, int EMU, int PP, int PVN = 64>
__global__ void __launch_bounds__((NC + 1) * 128, 1)
    attention_fa3_kernel(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
                         const __grid_constant__ CUtensorMap tv, T *__restrict__ O, int64_t o_rs, int64_t o_gs,
                         int o_cols, int Tq, int Tk, int nqb, int gpi,
                         float sl2, int tile0, int nsplit, float *__restrict__ part) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(CK_ATTN_EMU)
    using L = Layout<NC, NS>;
    static_assert(L::kv_bytes == Fp16Ops<T, PVN>::k_bytes, "the ring's stage size");
    __shared__ __align__(16) uint32_t marker[kCkSm90aMarker / 4];
    uint8_t       *raw      = ck__dyn_smem();
    const uint32_t raw_addr = ck__smem_addr(raw);
    uint8_t       *base     = raw + ((1024 - (raw_addr & 1023)) & 1023); /* swizzled tiles: 1024-byte aligned */
    const uint32_t sbase    = ck__smem_addr(base);
    const uint32_t bar_q = sbase + L::bar_off, bar_k = bar_q + 8, bar_v = bar_k + 8 * NS, bar_e = bar_v + 8 * NS;

    const int  tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    const Work w = block_work(tile0, nsplit, nqb, 64 * NC, Tk);
    const int  g = w.g, q0 = w.q0, kb = w.kb, nkt = w.nkt;
    const int  b = g / gpi, h = g - b * gpi; /* image b's rows follow image b − 1's in the maps (ck__attn_args) */

    start_block<NC, NS>(marker, bar_q, bar_k, bar_v, bar_e);

    if (wg == 0) { /* producer */
        regs_dec<24>();
        if (warp == 0 && lane == 0)
            produce<NC, NS, false>(&tq, &tk, &tv, sbase + L::q_off, L::q_bytes, L::q_bytes, sbase + L::k_off, L::kv_bytes,
                                   sbase + L::v_off, L::kv_bytes, bar_q, bar_k, bar_v, bar_e, b * Tq + q0, h, kb, nkt,
                                   b * Tk);
        return;
    }

    /* consumers */
    regs_inc<NC == 2 ? 240 : 160>();
    const int c = wg - 1;
    float     o[1][8][4], m[1][2], l[1][2];
    consume<Fp16Ops<T, PVN>, NC, NS, EMU, PP>(c, lane, sbase + L::q_off + c * L::q_bytes, sbase + L::k_off, sbase + L::v_off,
                                         bar_q, bar_k, bar_v, bar_e, kb, nkt, Tk, sl2, o, m, l);
    if (nsplit > 1) { /* a share of the keys: the unnormalized O, m and l of each row, for fa3_combine_kernel */
        write_partials(part + ((int64_t)blockIdx.x * 64 * NC + 64 * c) * kPartRow, warp, lane, o, m, l, 1.0f);
        return;
    }
    /* every wgmma of this warpgroup that read its Q tile has completed: the tile becomes the output staging,
     * each warp writing and then reading only its own 16 rows */
    const int row_base = q0 + 64 * c;
    ck__store_o<T, 64, 1>(O + h * o_gs + ((int64_t)b * Tq + row_base) * o_rs, reinterpret_cast<uint4 *>(base + L::q_off + c * L::q_bytes),
                          warp * 16, Tq - row_base, o, l, lane, o_rs, o_cols / 8);
#else
    __trap(); /* never launched: the launcher's readiness check sees no marker in this image */
#endif
}

/* The ladder's configurations (dev/cuda/attention_bench.cu --fa3-config N times each one). */
struct Config {
    int         nc, ns, emu, pp;
    const char *name;
};
constexpr Config kConfigs[] = {
    {3, 2, 0, 1, "nc3-ns2-pp"}, {3, 3, 0, 1, "nc3-ns3-pp"}, {2, 3, 0, 1, "nc2-ns3-pp"},       {2, 2, 0, 0, "nc2-ns2"},
    {3, 2, 0, 0, "nc3-ns2"},    {2, 2, 0, 1, "nc2-ns2-pp"}, {3, 2, 4, 1, "nc3-ns2-pp-emu4"}, {2, 2, 8, 1, "nc2-ns2-pp-emu8"},
};
constexpr int kConfigCount = (int)(sizeof kConfigs / sizeof kConfigs[0]);

} /* namespace fa3 */
