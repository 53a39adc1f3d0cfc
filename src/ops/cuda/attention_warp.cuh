/* Warp-level pieces of the attention kernels: the PTX primitives (mma.sync, ldmatrix, wgmma with A from
 * registers), the swizzled shared-memory tiles, the online softmax, P packing, key masking and O staging.
 * Included by attention.cu inside its anonymous namespace, before the kernels that use them. */

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
