/* attention_window_kernel: the attention_qkv op's mask units read and written where they lie in qkv and in the
 * token layout. Included by attention.cu inside its anonymous namespace, after attention_warp.cuh. */

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
