/* 2-D convolution on CUDA: NHWC activations, PyTorch (OC, IC, KH, KW) weights, zero padding (pad_h
 * rows, pad_w columns on each side), square stride and dilation. ref: torch.nn.functional.conv2d; CPU reference ops/cpu/conv2d.c.
 *
 * Implicit GEMM: Y (M = B·Ho·Wo, OC) = A (M, K) · Wtᵀ, K = KH·KW·IC ordered (ky, kx, ic) so that one
 * tap's channels are contiguous in NHWC memory. A is never materialized: each block gathers its
 * receptive fields straight into shared memory, zero-filling padding and rows past M.
 *
 *   1. relayout kernel: w (OC, IC, KH, KW) → wt (OC, Kp) in cu->scratch, k = (ky·KW + kx)·IC + ic,
 *      zero for k ≥ K (Kp = K rounded up to 32). The weights block stays immutable; ~40k elements,
 *      redone per call (a few µs) so nothing is cached across calls or allocated under graph capture.
 *   2. bf16/fp16: tensor cores, mma.sync m16n8k16 with fp32 accumulate. Block tile 128 (pixels) × 64
 *      (output channels) × 32 (k), 8 warps of 32×32, 3-stage cp.async pipeline, ldmatrix from rows
 *      padded to 40 elements (80 bytes: 8 consecutive rows hit distinct banks). When IC % 8 == 0 (the
 *      refiner's 64→64 convs, ~2.5 TFLOP at S=2048, and its stem, 8 channels: 7 and a zero one) every
 *      8-channel vector of a 32-wide k chunk lies inside one tap and A moves as 16-byte cp.async; other IC
 *      (the patch embedding's 4) gather element-wise.
 *   3. fp32: the same tiling on CUDA cores (128×64×16, 8×4 outputs per thread, register-prefetched
 *      double buffer), exact fp32 FMAs: this is the parity mode, no TF32.
 * Bias (float32) is added in the epilogue before the single rounding to the output dtype.
 *
 * bf16/fp16 first try cuDNN (conv2d_cudnn.c; CK_CONV=auto|cudnn|kernel), which falls back here for any
 * problem it does not take. */
#include "ops/cuda/common.cuh"

#define CK_CONV_KALIGN 32 /* wt row padding = the tensor-core k chunk */

struct ck_conv_geom {
    int     H, W, IC, Ho, Wo, OC, KW, stride, pad_h, pad_w, dil;
    int     K, Kp;
    int64_t M;
};

template <typename T>
__global__ void conv_weight_relayout_kernel(T *__restrict__ wt, const T *__restrict__ w, int OC, int IC, int KH, int KW,
                                            int K, int Kp) {
    CK_GRID_STRIDE(i, (int64_t)OC * Kp) {
        const int oc = (int)(i / Kp), k = (int)(i % Kp);
        T         v  = ck_stf<T>(0.0f);
        if (k < K) {
            const int tap = k / IC, ic = k % IC, ky = tap / KW, kx = tap % KW;
            v             = w[(((int64_t)oc * IC + ic) * KH + ky) * KW + kx];
        }
        wt[i] = v;
    }
}

/* Output pixel m → (sample base pointer, top-left input coordinate of its receptive field). */
template <typename T>
__device__ __forceinline__ bool conv_row(const ck_conv_geom &g, const T *x, int64_t m, const T **base, int *iy0,
                                         int *ix0) {
    if (m >= g.M) {
        *base = x;
        *iy0 = *ix0 = 0;
        return false;
    }
    const int64_t hw = (int64_t)g.Ho * g.Wo;
    const int64_t b  = m / hw;
    const int     r  = (int)(m - b * hw);
    const int     oy = r / g.Wo, ox = r - (r / g.Wo) * g.Wo;
    *base            = x + b * g.H * (int64_t)g.W * g.IC;
    *iy0             = oy * g.stride - g.pad_h;
    *ix0             = ox * g.stride - g.pad_w;
    return true;
}

/* ======================= tensor-core path (bf16 / fp16) ======================= */

#define TC_BM 128
#define TC_BN 64
#define TC_BK 32
#define TC_LD 40 /* padded smem row (elements) */
#define TC_STAGES 3
#define TC_THREADS 256

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* src-size 0 zero-fills the 16 bytes (padding taps, rows past M, channels past OC).
 * .ca for activations: neighbouring taps of one block re-read the same pixels, which L1 then serves;
 * .cg for weights: every block streams them, L2 holds them. */
__device__ __forceinline__ void cp_async16_ca(void *smem, const void *gmem, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
                 "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async16_cg(void *smem, const void *gmem, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
                 "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

template <typename T> struct ck_mma;
template <> struct ck_mma<__nv_bfloat16> {
    static __device__ __forceinline__ void run(float c[4], const uint32_t a[4], const uint32_t b[2]) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};
template <> struct ck_mma<__half> {
    static __device__ __forceinline__ void run(float c[4], const uint32_t a[4], const uint32_t b[2]) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

/* FAST: IC % 8 == 0 and x 16-byte aligned (16-byte cp.async gathers: each 8-channel vector of a 32-wide k
 * chunk lies inside one tap; with IC = 8, the refiner stem's, a chunk spans four taps); else element-wise. */
template <typename T, bool FAST>
__global__ void __launch_bounds__(TC_THREADS, 2)
    conv_tc_kernel(T *__restrict__ y, const T *__restrict__ x, const T *__restrict__ wt, const float *__restrict__ bias,
                   ck_conv_geom g) {
    __shared__ __align__(16) T As[TC_STAGES][TC_BM][TC_LD]; /* (stage, pixel, k) */
    __shared__ __align__(16) T Bs[TC_STAGES][TC_BN][TC_LD]; /* (stage, out channel, k) */

    const int     tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int     wm = warp & 3, wn = warp >> 2; /* warp tile: rows 32·wm, cols 32·wn */
    const int64_t m0 = (int64_t)blockIdx.x * TC_BM;
    const int     n0 = blockIdx.y * TC_BN;
    const int     nk = g.Kp / TC_BK;

    /* A loader. FAST: rows tid/4 and tid/4 + 64, 8-channel vector tid % 4.
     * Generic: row tid/2, 16 consecutive k starting at 16·(tid % 2). */
    constexpr int NR = FAST ? 2 : 1;
    const T      *a_base[NR];
    int           a_iy0[NR], a_ix0[NR];
    bool          a_ok[NR];
#pragma unroll
    for (int i = 0; i < NR; i++) {
        const int r = FAST ? (tid >> 2) + 64 * i : (tid >> 1);
        a_ok[i]     = conv_row<T>(g, x, m0 + r, &a_base[i], &a_iy0[i], &a_ix0[i]);
    }

    auto load_a = [&](int stage, int kc) {
        if constexpr (FAST) {
            const int c8 = tid & 3, k = kc * TC_BK + c8 * 8, tap = k / g.IC, ic0 = k - tap * g.IC;
            const int ky = tap / g.KW, kx = tap - ky * g.KW;
#pragma unroll
            for (int i = 0; i < NR; i++) {
                const int  r  = (tid >> 2) + 64 * i;
                const int  iy = a_iy0[i] + ky * g.dil, ix = a_ix0[i] + kx * g.dil;
                const bool ok = a_ok[i] && k < g.K && (unsigned)iy < (unsigned)g.H && (unsigned)ix < (unsigned)g.W;
                const T   *src = ok ? a_base[i] + ((int64_t)iy * g.W + ix) * g.IC + ic0 : x;
                cp_async16_ca(&As[stage][r][c8 * 8], src, ok);
            }
        } else {
            const int r = tid >> 1, kh = tid & 1;
            int       k = kc * TC_BK + kh * 16;
            int       tap = k / g.IC, ic = k - tap * g.IC;
            int       ky = tap / g.KW, kx = tap - ky * g.KW;
            T        *dst = &As[stage][r][kh * 16];
#pragma unroll 4
            for (int j = 0; j < 16; j++, k++) {
                T v = ck_stf<T>(0.0f);
                if (a_ok[0] && k < g.K) {
                    const int iy = a_iy0[0] + ky * g.dil, ix = a_ix0[0] + kx * g.dil;
                    if ((unsigned)iy < (unsigned)g.H && (unsigned)ix < (unsigned)g.W)
                        v = a_base[0][((int64_t)iy * g.W + ix) * g.IC + ic];
                }
                dst[j] = v;
                if (++ic == g.IC) { /* next tap */
                    ic = 0;
                    if (++kx == g.KW) kx = 0, ky++;
                }
            }
        }
    };
    auto load_b = [&](int stage, int kc) {
        const int  n = tid >> 2, c8 = tid & 3;
        const bool ok = n0 + n < g.OC;
        const T   *src = ok ? wt + (int64_t)(n0 + n) * g.Kp + kc * TC_BK + c8 * 8 : wt;
        cp_async16_cg(&Bs[stage][n][c8 * 8], src, ok);
    };

    float acc[2][4][4];
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < TC_STAGES - 1; s++) {
        if (s < nk) {
            load_a(s, s);
            load_b(s, s);
        }
        cp_async_commit(); /* empty groups keep the wait count uniform */
    }
    for (int kc = 0; kc < nk; kc++) {
        cp_async_wait<TC_STAGES - 2>();
        __syncthreads(); /* chunk kc visible; everyone is done reading the stage refilled below */
        const int nx = kc + TC_STAGES - 1;
        if (nx < nk) {
            load_a(nx % TC_STAGES, nx);
            load_b(nx % TC_STAGES, nx);
        }
        cp_async_commit();
        const int st = kc % TC_STAGES;
#pragma unroll
        for (int ks = 0; ks < TC_BK / 16; ks++) {
            uint32_t a[2][4], b[4][2];
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
                ldmatrix_x4(a[mi], &As[st][wm * 32 + mi * 16 + (lane & 15)][ks * 16 + (lane >> 4) * 8]);
#pragma unroll
            for (int nj = 0; nj < 2; nj++) {
                uint32_t r[4];
                ldmatrix_x4(r, &Bs[st][wn * 32 + nj * 16 + (lane & 7) + ((lane >> 4) << 3)][ks * 16 + ((lane >> 3) & 1) * 8]);
                b[2 * nj][0]     = r[0];
                b[2 * nj][1]     = r[1];
                b[2 * nj + 1][0] = r[2];
                b[2 * nj + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++) ck_mma<T>::run(acc[mi][ni], a[mi], b[ni]);
        }
    }
    cp_async_wait<0>();

    /* accumulator (mi, ni, e): row 16·mi + lane/4 (+8 for e ≥ 2), col 8·ni + 2·(lane % 4) + (e & 1) */
    const bool pair_ok = (g.OC & 1) == 0 && ((uintptr_t)y & 3) == 0;
#pragma unroll
    for (int mi = 0; mi < 2; mi++) {
#pragma unroll
        for (int ni = 0; ni < 4; ni++) {
            const int   col = n0 + wn * 32 + ni * 8 + (lane & 3) * 2;
            const float b0  = bias && col < g.OC ? bias[col] : 0.0f;
            const float b1  = bias && col + 1 < g.OC ? bias[col + 1] : 0.0f;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int64_t m = m0 + wm * 32 + mi * 16 + (lane >> 2) + h * 8;
                if (m >= g.M) continue;
                T *dst = y + m * g.OC + col;
                const float v0 = acc[mi][ni][2 * h] + b0, v1 = acc[mi][ni][2 * h + 1] + b1;
                if (pair_ok && col + 1 < g.OC) {
                    ck_vec<T, 2> p;
                    p.v[0] = ck_stf<T>(v0);
                    p.v[1] = ck_stf<T>(v1);
                    ck_vstore<T, 2>(dst, p);
                } else {
                    if (col < g.OC) dst[0] = ck_stf<T>(v0);
                    if (col + 1 < g.OC) dst[1] = ck_stf<T>(v1);
                }
            }
        }
    }
}

/* ======================= fp32 path (CUDA cores) ======================= */

#define F_BM 128
#define F_BN 64
#define F_BK 16
#define F_LDA (F_BM + 4) /* padding: fewer bank conflicts on the transposed stores */
#define F_LDB (F_BN + 4)

/* FAST: IC % 16 == 0 and x 16-byte aligned (float4 gathers); else element-wise. */
template <bool FAST>
__global__ void __launch_bounds__(256)
    conv_f32_kernel(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ wt,
                    const float *__restrict__ bias, ck_conv_geom g) {
    __shared__ __align__(16) float As[2][F_BK][F_LDA]; /* (buf, k, pixel) */
    __shared__ __align__(16) float Bs[2][F_BK][F_LDB]; /* (buf, k, out channel) */

    const int     tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int64_t m0 = (int64_t)blockIdx.x * F_BM;
    const int     n0 = blockIdx.y * F_BN;
    const int     nk = g.Kp / F_BK;

    /* A loader. FAST: rows tid/4 and tid/4 + 64, 4-channel vector tid % 4. Generic: row tid/2, 8 k. */
    constexpr int NR = FAST ? 2 : 1;
    const float  *a_base[NR];
    int           a_iy0[NR], a_ix0[NR];
    bool          a_ok[NR];
#pragma unroll
    for (int i = 0; i < NR; i++) {
        const int r = FAST ? (tid >> 2) + 64 * i : (tid >> 1);
        a_ok[i]     = conv_row<float>(g, x, m0 + r, &a_base[i], &a_iy0[i], &a_ix0[i]);
    }
    float  ar[8];  /* prefetched A values */
    float4 br;     /* prefetched weights: out channel tid/4, k 4·(tid % 4) .. +3 */

    auto fetch = [&](int kc) {
        if constexpr (FAST) {
            const int k0 = kc * F_BK, tap = k0 / g.IC, ic0 = k0 - tap * g.IC;
            const int ky = tap / g.KW, kx = tap - ky * g.KW, q = tid & 3;
#pragma unroll
            for (int i = 0; i < NR; i++) {
                const int  iy = a_iy0[i] + ky * g.dil, ix = a_ix0[i] + kx * g.dil;
                /* k0 < K: the chunks of the Kp padding must read nothing (0 · garbage could be NaN) */
                const bool ok = a_ok[i] && k0 < g.K && (unsigned)iy < (unsigned)g.H && (unsigned)ix < (unsigned)g.W;
                float4     v  = make_float4(0.f, 0.f, 0.f, 0.f);
                if (ok) v = *reinterpret_cast<const float4 *>(a_base[i] + ((int64_t)iy * g.W + ix) * g.IC + ic0 + q * 4);
                ar[4 * i + 0] = v.x;
                ar[4 * i + 1] = v.y;
                ar[4 * i + 2] = v.z;
                ar[4 * i + 3] = v.w;
            }
        } else {
            int k   = kc * F_BK + (tid & 1) * 8;
            int tap = k / g.IC, ic = k - tap * g.IC;
            int ky = tap / g.KW, kx = tap - ky * g.KW;
#pragma unroll
            for (int j = 0; j < 8; j++, k++) {
                float v = 0.0f;
                if (a_ok[0] && k < g.K) {
                    const int iy = a_iy0[0] + ky * g.dil, ix = a_ix0[0] + kx * g.dil;
                    if ((unsigned)iy < (unsigned)g.H && (unsigned)ix < (unsigned)g.W)
                        v = a_base[0][((int64_t)iy * g.W + ix) * g.IC + ic];
                }
                ar[j] = v;
                if (++ic == g.IC) {
                    ic = 0;
                    if (++kx == g.KW) kx = 0, ky++;
                }
            }
        }
        const int n = tid >> 2;
        br          = make_float4(0.f, 0.f, 0.f, 0.f);
        if (n0 + n < g.OC) br = *reinterpret_cast<const float4 *>(wt + (int64_t)(n0 + n) * g.Kp + kc * F_BK + (tid & 3) * 4);
    };
    auto stash = [&](int buf) {
        if constexpr (FAST) {
            const int q = tid & 3;
#pragma unroll
            for (int i = 0; i < NR; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) As[buf][q * 4 + j][(tid >> 2) + 64 * i] = ar[4 * i + j];
        } else {
#pragma unroll
            for (int j = 0; j < 8; j++) As[buf][(tid & 1) * 8 + j][tid >> 1] = ar[j];
        }
        const int n = tid >> 2, q = tid & 3;
        Bs[buf][q * 4 + 0][n] = br.x;
        Bs[buf][q * 4 + 1][n] = br.y;
        Bs[buf][q * 4 + 2][n] = br.z;
        Bs[buf][q * 4 + 3][n] = br.w;
    };

    float acc[8][4];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;

    fetch(0);
    stash(0);
    __syncthreads();
    for (int kc = 0; kc < nk; kc++) {
        const int buf = kc & 1;
        if (kc + 1 < nk) fetch(kc + 1);
#pragma unroll
        for (int k = 0; k < F_BK; k++) {
            const float4 a0 = *reinterpret_cast<const float4 *>(&As[buf][k][ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4 *>(&As[buf][k][64 + ty * 4]);
            const float4 bb = *reinterpret_cast<const float4 *>(&Bs[buf][k][tx * 4]);
            const float  av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float  bv[4] = {bb.x, bb.y, bb.z, bb.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        if (kc + 1 < nk) stash(buf ^ 1); /* buf ^ 1 was last read before the previous barrier */
        __syncthreads();
    }

    const int n = n0 + tx * 4;
    float     bv[4];
#pragma unroll
    for (int j = 0; j < 4; j++) bv[j] = bias && n + j < g.OC ? bias[n + j] : 0.0f;
    const bool vec = (g.OC & 3) == 0 && n + 3 < g.OC && ((uintptr_t)y & 15) == 0;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int64_t m = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
        if (m >= g.M) continue;
        float *dst = y + m * g.OC + n;
        if (vec) {
            *reinterpret_cast<float4 *>(dst) = make_float4(acc[i][0] + bv[0], acc[i][1] + bv[1], acc[i][2] + bv[2], acc[i][3] + bv[3]);
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++)
                if (n + j < g.OC) dst[j] = acc[i][j] + bv[j];
        }
    }
}

/* ======================= host ======================= */

template <typename T>
static void launch(ck_cuda *cu, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const float *bias,
                   const ck_conv_geom &g, int KH) {
    /* weights relaid into the scratch buffer (ops run one at a time on the stream) */
    const size_t wt_bytes = (size_t)g.OC * g.Kp * sizeof(T);
    CK_ASSERT(wt_bytes <= cu->scratch_bytes);
    T *wt = (T *)cu->scratch; /* (OC, Kp) */
    conv_weight_relayout_kernel<T><<<ck_grid_for(cu, (int64_t)g.OC * g.Kp, 256), 256, 0, cu->stream>>>(
        wt, (const T *)w->data, g.OC, g.IC, KH, g.KW, g.K, g.Kp);
    CK_KERNEL_CHECK(cu);

    const int64_t gx = (g.M + 127) / 128, gy = (g.OC + 63) / 64; /* both paths tile 128 × 64 */
    CK_ASSERT(gx <= 0x7fffffff && gy <= 65535);
    const dim3 grid((unsigned)gx, (unsigned)gy);
    T         *Y = (T *)y->data;       /* (B, Ho, Wo, OC) */
    const T   *X = (const T *)x->data; /* (B, H, W, IC) */
    if constexpr (sizeof(T) == 4) {
        const bool fast = g.IC % F_BK == 0 && ck_aligned(X, 16);
        if (fast) conv_f32_kernel<true><<<grid, 256, 0, cu->stream>>>(Y, X, wt, bias, g);
        else conv_f32_kernel<false><<<grid, 256, 0, cu->stream>>>(Y, X, wt, bias, g);
    } else {
        const bool fast = g.IC % 8 == 0 && ck_aligned(X, 16);
        if (fast) conv_tc_kernel<T, true><<<grid, TC_THREADS, 0, cu->stream>>>(Y, X, wt, bias, g);
        else conv_tc_kernel<T, false><<<grid, TC_THREADS, 0, cu->stream>>>(Y, X, wt, bias, g);
    }
    CK_KERNEL_CHECK(cu);
}

extern "C" void ck__conv_weight_krsc_cuda(ck_backend *be, void *dst, const ck_tensor *w) {
    ck_cuda      *cu = ck_cuda_of(be);
    const int64_t OC = w->shape[0], IC = w->shape[1], KH = w->shape[2], KW = w->shape[3], K = IC * KH * KW;
    CK_ASSERT(K <= 0x7fffffff);
    /* the (OC, Kp) relayout with Kp = K is exactly (OC, KH, KW, IC) */
    CK_DISPATCH_FLOAT(w->dtype, T,
                      conv_weight_relayout_kernel<T><<<ck_grid_for(cu, OC * K, 256), 256, 0, cu->stream>>>(
                          (T *)dst, (const T *)w->data, (int)OC, (int)IC, (int)KH, (int)KW, (int)K, (int)K));
    CK_KERNEL_CHECK(cu);
}

/* 16-bit: cuDNN when it takes the problem (conv2d_cudnn.c, CK_CONV), else the kernel above. */
extern "C" void ck_conv2d_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w,
                               const ck_tensor *b, int stride, int pad_h, int pad_w, int dilation) {
    if (x->dtype != CK_DTYPE_F32 && ck__conv2d_cudnn(be, y, x, w, b, stride, pad_h, pad_w, dilation)) return;
    ck__conv2d_kernel_cuda(be, y, x, w, b, stride, pad_h, pad_w, dilation);
}

extern "C" void ck__conv2d_kernel_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w,
                                       const ck_tensor *b, int stride, int pad_h, int pad_w, int dilation) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(ck_is_float_dtype(x->dtype) && y->dtype == x->dtype && w->dtype == x->dtype);
    CK_ASSERT(!b || b->dtype == CK_DTYPE_F32);
    CK_ASSERT(x->data != y->data);
    const int64_t IC = x->shape[3], OC = w->shape[0], KH = w->shape[2], KW = w->shape[3];
    const int64_t K  = IC * KH * KW;
    CK_ASSERT(x->shape[1] <= 0x7fffffff / 8 && x->shape[2] <= 0x7fffffff / 8 && K <= 0x7fffffff - 64);
    ck_conv_geom g;
    g.H      = (int)x->shape[1];
    g.W      = (int)x->shape[2];
    g.IC     = (int)IC;
    g.Ho     = (int)y->shape[1];
    g.Wo     = (int)y->shape[2];
    g.OC     = (int)OC;
    g.KW     = (int)KW;
    g.stride = stride;
    g.pad_h  = pad_h;
    g.pad_w  = pad_w;
    g.dil    = dilation;
    g.K      = (int)K;
    g.Kp     = (int)((K + CK_CONV_KALIGN - 1) / CK_CONV_KALIGN * CK_CONV_KALIGN);
    g.M      = y->shape[0] * y->shape[1] * y->shape[2];
    const float *bias = b ? (const float *)b->data : NULL; /* (OC) */
    CK_DISPATCH_FLOAT(x->dtype, T, launch<T>(cu, y, x, w, bias, g, (int)KH));
}
