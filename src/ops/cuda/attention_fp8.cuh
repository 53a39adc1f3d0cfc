/* FP8 (e4m3) global attention on Hopper, an option (CK_ATTN_FP8=1) beside the float16 FA3 kernel: included by
 * attention.cu after attention_fa3.cuh, inside its anonymous namespace; the launcher is ck__launch_fa3_fp8 there.
 * ref: Shah et al., "FlashAttention-3" (2024), §3.3 (FP8: the operand layouts wgmma takes, V transposed, the
 *      accumulator-to-operand reordering); PTX ISA, "wgmma.mma_async" (.e4m3, K-major only), "cvt" (.e4m3x2).
 *
 * Precision: e4m3 keeps 3 mantissa bits, so every global attention's output carries about 100 times the error
 * of the float16 path (tools/reference/fp8_attention_error.py); the precision gate cannot pass with it, and it is
 * off unless asked for.
 *
 * Steps, from the float16 q, k, v views the FA3 kernel reads (G groups, rows of `in_cols` <= 64 valid columns):
 *   fp8_amax_kernel     per group and 256-row chunk, the largest |q|, |k|, |v| (deterministic: no atomics)
 *   fp8_scale_kernel    per group: scale = amax / 448 for q, k and v (one each: per-tensor scaling)
 *   fp8_quant_kernel    q and k to e4m3 rows of 64 bytes, (G, T, 64)
 *   fp8_vt_kernel       v to e4m3, transposed: (G, 64, Tk rounded up to 128), keys reordered inside every
 *                       32-key chunk so that P's accumulator layout is the operand layout (below)
 *   attention_fa3_fp8_kernel  the FA3 structure (TMA producer, consumer warpgroups, ping-pong) with
 *                       S = Q·Kᵀ on wgmma m64n128k32 (both operands 64-byte swizzled, 64-byte rows) and
 *                       O += P·V on m64n64k32 (P from registers, Vᵀ 128-byte swizzled). The online softmax
 *                       runs in float32 on S·sq·sk as before; P is stored as e4m3 of 448·p (p <= 1 would
 *                       otherwise fall into e4m3's subnormals), and the output is O·sv / (448·l).
 * Key order: for the m64n64k32 A operand a thread holds, per row, bytes k = 4·(lane%4) + 0..3 and the same + 16;
 * its S accumulators hold columns 2·(lane%4) + {0, 1} of every 8-column tile. So slot s of a 32-key chunk carries
 * key perm(s) = 16·(s / 16) + 8·((s % 4) / 2) + 2·((s % 16) / 4) + s % 2 of that chunk, in Vᵀ's columns and P's
 * bytes alike: P·V sums over the same keys, and no register moves between threads. */
namespace fa3 {

constexpr float kFp8Max   = 448.0f;
constexpr int   kFp8Chunk = 256; /* rows per amax block */

/* key of slot s (0..31) of a 32-key chunk */
__host__ __device__ __forceinline__ int fp8_slot_key(int s) {
    return 16 * (s >> 4) + 8 * ((s & 3) >> 1) + 2 * ((s & 15) >> 2) + (s & 1);
}

/* (G, 3, nchunk) largest magnitudes of q, k, v over 256-row chunks (block = chunk + nchunk·(g + G·which)); columns
 * past `cols` are zero. */
__global__ void __launch_bounds__(256)
    fp8_amax_kernel(float *__restrict__ part, const __half *__restrict__ q, const __half *__restrict__ k,
                    const __half *__restrict__ v, int64_t q_rs, int64_t q_gs, int64_t kv_rs, int64_t kv_gs, int cols,
                    int Tq, int Tk, int nchunk, int G) {
    __shared__ float red[256];
    const int     chunk = (int)(blockIdx.x % (unsigned)nchunk), g = (int)(blockIdx.x / (unsigned)nchunk) % G;
    const int     which = (int)(blockIdx.x / ((unsigned)nchunk * G));
    const int     T     = which == 0 ? Tq : Tk;
    const __half *base  = which == 0 ? q + g * q_gs : (which == 1 ? k : v) + g * kv_gs;
    const int64_t rs    = which == 0 ? q_rs : kv_rs;
    const int     row   = chunk * kFp8Chunk + (int)threadIdx.x;
    float         m     = 0.0f;
    if (row < T)
        for (int c = 0; c < cols; c++) m = fmaxf(m, fabsf(__half2float(base[row * rs + c])));
    red[threadIdx.x] = m;
    __syncthreads();
    for (int o = 128; o > 0; o >>= 1) {
        if ((int)threadIdx.x < o) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + o]);
        __syncthreads();
    }
    if (threadIdx.x == 0) part[((int64_t)g * 3 + which) * nchunk + chunk] = red[0];
}

/* scales (G, 4): q, k, v scales (amax / 448; 1 for an all-zero tensor), unused. One thread per group. */
__global__ void __launch_bounds__(32) fp8_scale_kernel(float *__restrict__ scales, const float *__restrict__ part,
                                                       int G, int nchunk_q, int nchunk_k, int nchunk) {
    const int g = blockIdx.x * 32 + (int)threadIdx.x;
    if (g >= G) return;
    for (int which = 0; which < 3; which++) {
        const int n = which == 0 ? nchunk_q : nchunk_k;
        float     m = 0.0f;
        for (int c = 0; c < n; c++) m = fmaxf(m, part[((int64_t)g * 3 + which) * nchunk + c]);
        scales[g * 4 + which] = m > 0.0f ? m / kFp8Max : 1.0f;
    }
    scales[g * 4 + 3] = 0.0f;
}

/* q (which = 0) or k (1) rows to e4m3: out (G, T, 64), one thread per 16 bytes (16 columns) of a row; block =
 * x + nbx·(g + G·which). */
__global__ void __launch_bounds__(256)
    fp8_quant_kernel(uint8_t *__restrict__ q8, uint8_t *__restrict__ k8, const __half *__restrict__ q,
                     const __half *__restrict__ k, const float *__restrict__ scales, int64_t q_rs, int64_t q_gs,
                     int64_t kv_rs, int64_t kv_gs, int cols, int Tq, int Tk, int nbx, int G) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(CK_ATTN_EMU)
    const int     bx = (int)(blockIdx.x % (unsigned)nbx), g = (int)(blockIdx.x / (unsigned)nbx) % G;
    const int     which = (int)(blockIdx.x / ((unsigned)nbx * G));
    const int     T     = which == 0 ? Tq : Tk;
    const int     idx = bx * 256 + (int)threadIdx.x, row = idx >> 2, c0 = 16 * (idx & 3);
    if (row >= T) return;
    const __half *src = which == 0 ? q + g * q_gs + row * q_rs : k + g * kv_gs + row * kv_rs;
    const float   inv = 1.0f / scales[g * 4 + which];
    float         x[16];
#pragma unroll
    for (int j = 0; j < 16; j++) x[j] = c0 + j < cols ? __half2float(src[c0 + j]) * inv : 0.0f;
    uint4 o;
    o.x = ck__pack_e4m3x4(x[0], x[1], x[2], x[3]);
    o.y = ck__pack_e4m3x4(x[4], x[5], x[6], x[7]);
    o.z = ck__pack_e4m3x4(x[8], x[9], x[10], x[11]);
    o.w = ck__pack_e4m3x4(x[12], x[13], x[14], x[15]);
    uint8_t *dst = (which == 0 ? q8 + (int64_t)g * Tq * 64 : k8 + (int64_t)g * Tk * 64) + (int64_t)row * 64 + c0;
    *reinterpret_cast<uint4 *>(dst) = o;
#else
    __trap();
#endif
}

/* v to e4m3, transposed and key-reordered: vt (G, 64, Tkp), Tkp = Tk rounded up to 128; one block per 128-key
 * tile and group (block = tile + (Tkp / 128)·g); keys past Tk and columns past `cols` are zeros. */
__global__ void __launch_bounds__(256)
    fp8_vt_kernel(uint8_t *__restrict__ vt, const __half *__restrict__ v, const float *__restrict__ scales,
                  int64_t kv_rs, int64_t kv_gs, int cols, int Tk, int Tkp) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(CK_ATTN_EMU)
    __shared__ float tile[kBK][65]; /* (keys, channels), padded against bank conflicts */
    const int        nt = Tkp / kBK, g = (int)(blockIdx.x / (unsigned)nt), key0 = (int)(blockIdx.x % (unsigned)nt) * kBK;
    const float      inv = 1.0f / scales[g * 4 + 2];
    for (int i = (int)threadIdx.x; i < kBK * 64; i += 256) {
        const int r = i >> 6, c = i & 63, key = key0 + r;
        tile[r][c] = key < Tk && c < cols ? __half2float(v[g * kv_gs + (int64_t)key * kv_rs + c]) * inv : 0.0f;
    }
    __syncthreads();
    /* 64 channel rows × 128 slots = 2048 words of 4 slots */
    for (int i = (int)threadIdx.x; i < 64 * kBK / 4; i += 256) {
        const int c = i / (kBK / 4), s0 = 4 * (i % (kBK / 4));
        float     x[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int s = s0 + j;
            x[j]        = tile[32 * (s >> 5) + fp8_slot_key(s & 31)][c];
        }
        *reinterpret_cast<uint32_t *>(vt + ((int64_t)g * 64 + c) * Tkp + key0 + s0) = ck__pack_e4m3x4(x[0], x[1], x[2], x[3]);
    }
#else
    __trap();
#endif
}

template <int NC, int NS> struct LayoutFp8 {
    /* per consumer: its Q tile (64 rows × 64 bytes) in the first half, the output staging (64 × 64 halves) over
     * all of it at the end */
    static constexpr int q_bytes = 64 * 128, q_load = 64 * 64, k_bytes = kBK * 64, v_bytes = 64 * kBK;
    static constexpr int q_off = 0, k_off = NC * q_bytes, v_off = k_off + NS * k_bytes, bar_off = v_off + NS * v_bytes;
    static constexpr int smem = 1024 + bar_off + 8 * (1 + 3 * NS);
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(CK_ATTN_EMU)
/* The FP8 kernel's MMA forms (Ops of attention_fa3.cuh's consume): S = Q·Kᵀ on two m64n128k32 e4m3 steps, both
 * operands from 64-byte swizzled shared memory; O += P·V on four m64n64k32 steps, P from registers (chunk kk
 * holds n-tiles 4kk … 4kk + 3 as e4m3 of 448·p), Vᵀ 128-byte swizzled. */
struct Fp8Ops {
    using PA                     = uint32_t[kBK / 32][4];
    static constexpr int k_bytes = kBK * 64, v_bytes = 64 * kBK;
    /* every register a wgmma reads or writes settled before wgmma.fence (operand_fence) */
    __device__ __forceinline__ static void fence(float (&sf)[kBK / 2], float (&of)[32], PA &pa) {
#ifdef CK_ATTN_EMU
        (void)sf, (void)of, (void)pa;
#else
#pragma unroll
        for (int i = 0; i < kBK / 2; i++) asm volatile("" : "+f"(sf[i])::"memory");
#pragma unroll
        for (int i = 0; i < 32; i++) asm volatile("" : "+f"(of[i])::"memory");
#pragma unroll
        for (int i = 0; i < kBK / 32; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) asm volatile("" : "+r"(pa[i][j])::"memory");
#endif
    }
    __device__ __forceinline__ static void issue_s(float (&sf)[kBK / 2], uint32_t qaddr, uint32_t kaddr) {
#pragma unroll
        for (int ks = 0; ks < 2; ks++)
            ck__wgmma_fp8_ss128(sf, ck__desc_sw64(qaddr + ks * 32), ck__desc_sw64(kaddr + ks * 32), ks > 0);
        ck__wgmma_commit();
    }
    __device__ __forceinline__ static void issue_pv(float (&of)[32], PA &pa, uint32_t vaddr) {
#pragma unroll
        for (int kk = 0; kk < kBK / 32; kk++) ck__wgmma_fp8_rs64(of, pa[kk], ck__desc_sw128(vaddr + kk * 32), 1);
        ck__wgmma_commit();
    }
    __device__ __forceinline__ static void pack(PA &pa, const float (&s)[1][kBK / 8][4]) {
#pragma unroll
        for (int kk = 0; kk < kBK / 32; kk++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const float(&t0)[4] = s[0][4 * kk], (&t1)[4] = s[0][4 * kk + 1];
                const float(&t2)[4] = s[0][4 * kk + 2], (&t3)[4] = s[0][4 * kk + 3];
                pa[kk][h]     = ck__pack_e4m3x4(kFp8Max * t0[2 * h], kFp8Max * t0[2 * h + 1], kFp8Max * t1[2 * h],
                                                kFp8Max * t1[2 * h + 1]);
                pa[kk][2 + h] = ck__pack_e4m3x4(kFp8Max * t2[2 * h], kFp8Max * t2[2 * h + 1], kFp8Max * t3[2 * h],
                                                kFp8Max * t3[2 * h + 1]);
            }
    }
};
#endif

template <int NC, int NS, int PP>
__global__ void __launch_bounds__((NC + 1) * 128, 1)
    attention_fa3_fp8_kernel(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
                             const __grid_constant__ CUtensorMap tv, __half *__restrict__ O, int64_t o_rs, int64_t o_gs,
                             int o_cols, int Tq, int Tk, int nqb, float sl2, const float *__restrict__ scales,
                             int tile0, int nsplit, float *__restrict__ part) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(CK_ATTN_EMU)
    using L = LayoutFp8<NC, NS>;
    static_assert(L::k_bytes == Fp8Ops::k_bytes && L::v_bytes == Fp8Ops::v_bytes, "the ring's stage sizes");
    __shared__ __align__(16) uint32_t marker[kCkSm90aMarker / 4];
    uint8_t       *raw      = ck__dyn_smem();
    const uint32_t raw_addr = ck__smem_addr(raw);
    uint8_t       *base     = raw + ((1024 - (raw_addr & 1023)) & 1023);
    const uint32_t sbase    = ck__smem_addr(base);
    const uint32_t bar_q = sbase + L::bar_off, bar_k = bar_q + 8, bar_v = bar_k + 8 * NS, bar_e = bar_v + 8 * NS;

    const int  tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    const Work w = block_work(tile0, nsplit, nqb, 64 * NC, Tk);
    const int  g = w.g, q0 = w.q0, kb = w.kb, nkt = w.nkt;

    start_block<NC, NS>(marker, bar_q, bar_k, bar_v, bar_e);

    if (wg == 0) { /* producer */
        regs_dec<24>();
        if (warp == 0 && lane == 0)
            produce<NC, NS, true>(&tq, &tk, &tv, sbase + L::q_off, L::q_bytes, L::q_load, sbase + L::k_off, L::k_bytes,
                                  sbase + L::v_off, L::v_bytes, bar_q, bar_k, bar_v, bar_e, q0, g, kb, nkt, 0);
        return;
    }

    regs_inc<NC == 2 ? 240 : 160>();
    const int c = wg - 1;
    /* S in units of the float16 path: the e4m3 products times sq·sk */
    const float sl2g = sl2 * scales[g * 4] * scales[g * 4 + 1], sv = scales[g * 4 + 2];
    float       o[1][8][4], m[1][2], l[1][2];
    consume<Fp8Ops, NC, NS, 0, PP>(c, lane, sbase + L::q_off + c * L::q_bytes, sbase + L::k_off, sbase + L::v_off, bar_q,
                                   bar_k, bar_v, bar_e, kb, nkt, Tk, sl2g, o, m, l);
    /* O·sv / (448·l): the row sums take the factor, so the key-split merge is unchanged */
#pragma unroll
    for (int h = 0; h < 2; h++) l[0][h] *= kFp8Max / sv;
    if (nsplit > 1) { /* m in the float16 path's units: the merge weighs splits by 2^((m_s − M)·sl2) */
        write_partials(part + ((int64_t)blockIdx.x * 64 * NC + 64 * c) * kPartRow, warp, lane, o, m, l, sl2g / sl2);
        return;
    }
    const int row_base = q0 + 64 * c;
    ck__store_o<__half, 64, 1>(O + g * o_gs + (int64_t)row_base * o_rs,
                               reinterpret_cast<uint4 *>(base + L::q_off + c * L::q_bytes), warp * 16, Tq - row_base, o,
                               l, lane, o_rs, o_cols / 8);
#else
    __trap();
#endif
}

} /* namespace fa3 */
