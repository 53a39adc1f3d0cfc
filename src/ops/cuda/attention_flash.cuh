/* The mma.sync attention kernels (FlashAttention-2 structure): attention_flash_kernel for long rows and
 * attention_small_kernel for Hiera's mask units. Included by attention.cu inside its anonymous namespace, after
 * attention_warp.cuh. */

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
