/* attention_wgmma_kernel: the Hopper kernel with a cp.async ring (no TMA, no warp specialization), kept for the
 * shapes the FA3 kernel declines. Included by attention.cu inside its anonymous namespace, after
 * attention_warp.cuh. */

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
