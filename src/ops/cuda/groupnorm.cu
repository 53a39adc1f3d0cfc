/* GroupNorm on CUDA, NHWC, with fused residual add and ReLU, statistics output and frozen statistics
 * input (groupnorm_stats, the tiled refiner's). ref: torch.nn.GroupNorm; CPU reference ops/cpu/norm.c.
 *
 * Deterministic (bitwise run to run, no atomics): fixed-order reductions only.
 *   1. partial kernel, grid (chunk, sample): each block sums a fixed chunk of pixels per channel into
 *      (Σ, Σ²) partials, double, in cu->scratch: part (B, nchunk, C). Values are shifted by the group's
 *      first element before squaring (shifted-data variance: E[x²] − E[x]² would cancel badly in fp32
 *      when |mean| ≫ std); threads sum at most 32 pixels in fp32 before widening to double. Where the
 *      channels come in 16-byte vectors (C a multiple of 8 halves or 4 floats, aligned), each thread reads
 *      one vector per pixel, four pixels in flight (gn_partial_vec_kernel: 0.44 -> ~0.15 ms for a 64-channel
 *      2048² map in fp16); otherwise one channel per thread (gn_partial_kernel).
 *   2. final kernel, one block per (sample, group): sums the partials in a fixed order (double),
 *      mean and rstd = 1/√(var + eps) in double as the CPU, stored as float (B, groups, 2).
 *   3. coef kernel: per (sample, channel) scale = rstd·γ and shift = β − mean·scale, (B, C, 2).
 *   4. apply kernel: y = act(x·scale + shift + residual), in the CPU's operation order; y may alias x
 *      and/or the residual (element-wise, read before write).
 * Frozen statistics skip 1–2 and read `stats`. */
#include "ops/cuda/common.cuh"

#define GN_THREADS 256
#define GN_FINAL_THREADS 1024 /* one block per (sample, group) sums nchunk·CG partials: a few blocks, so wide ones */
#define GN_FLUSH 32 /* pixels summed in fp32 before the running sums widen to double */

template <typename T>
__global__ void __launch_bounds__(GN_THREADS)
    gn_partial_kernel(double2 *__restrict__ part, const T *__restrict__ x, int64_t P, int C, int CG, int64_t chunk,
                      int nchunk) {
    __shared__ double2 sh[GN_THREADS]; /* (pixel lane, channel) partial (Σ, Σ²) */
    const int     b = blockIdx.y, ch = blockIdx.x;
    const int64_t p0 = (int64_t)ch * chunk, p1 = p0 + chunk < P ? p0 + chunk : P;
    const T      *xb = x + (int64_t)b * P * C; /* (P, C) of this sample */
    const int     CT = C < GN_THREADS ? C : GN_THREADS; /* channels per pass */
    const int     R  = GN_THREADS / CT;                 /* pixel lanes */
    const int     tc = threadIdx.x % CT, tr = threadIdx.x / CT;
    for (int c0 = 0; c0 < C; c0 += CT) {
        const int c     = c0 + tc;
        const bool live = tr < R && c < C;
        double    s = 0.0, s2 = 0.0;
        if (live) {
            const float shift = ck_ldf(xb[(c / CG) * CG]); /* pixel 0, first channel of the group */
            float       fs = 0.0f, fs2 = 0.0f;
            int         n  = 0;
            for (int64_t p = p0 + tr; p < p1; p += R) {
                const float v = ck_ldf(xb[p * C + c]) - shift;
                fs += v;
                fs2 += v * v;
                if (++n == GN_FLUSH) {
                    s += fs, s2 += fs2;
                    fs = fs2 = 0.0f;
                    n        = 0;
                }
            }
            s += fs, s2 += fs2;
        }
        sh[threadIdx.x] = make_double2(s, s2);
        __syncthreads();
        if (tr == 0 && c < C) {
            double a = 0.0, a2 = 0.0;
            for (int r = 0; r < R; r++) {
                a += sh[r * CT + tc].x;
                a2 += sh[r * CT + tc].y;
            }
            part[((int64_t)b * nchunk + ch) * C + c] = make_double2(a, a2);
        }
        __syncthreads();
    }
}

/* Vectorized partials: thread = (pixel lane r, channel vector cv), NV = C / V vectors per pixel, NL = GN_THREADS
 * / NV lanes; lane r sums pixels p0 + r, p0 + r + NL, ... of its chunk (4 loads in flight), flushing fp32 to
 * double every GN_FLUSH pixels; the lanes are then added in lane order (fixed: bitwise run to run). */
template <typename T, int V>
__global__ void __launch_bounds__(GN_THREADS)
    gn_partial_vec_kernel(double2 *__restrict__ part, const T *__restrict__ x, int64_t P, int C, int CG, int64_t chunk,
                          int nchunk) {
    __shared__ double2 sh[GN_THREADS * V]; /* (lane, channel) partial (Σ, Σ²) */
    const int     b = blockIdx.y, ch = blockIdx.x;
    const int64_t p0 = (int64_t)ch * chunk, p1 = p0 + chunk < P ? p0 + chunk : P;
    const T      *xb = x + (int64_t)b * P * C; /* (P, C) of this sample */
    const int     NV = C / V, NL = GN_THREADS / NV;
    const int     cv = threadIdx.x % NV, r = threadIdx.x / NV;
    const bool    live = r < NL;
    double        s[V], s2[V];
#pragma unroll
    for (int j = 0; j < V; j++) s[j] = s2[j] = 0.0;
    if (live) {
        float shift[V], fs[V], fs2[V];
#pragma unroll
        for (int j = 0; j < V; j++) {
            shift[j] = ck_ldf(xb[((cv * V + j) / CG) * CG]); /* pixel 0, first channel of the group */
            fs[j] = fs2[j] = 0.0f;
        }
        int n = 0;
        for (int64_t p = p0 + r; p < p1; p += 4 * (int64_t)NL) {
            ck_vec<T, V> v[4];
#pragma unroll
            for (int u = 0; u < 4; u++)
                if (p + u * NL < p1) v[u] = ck_vload<T, V>(xb + (p + u * NL) * C + cv * V);
#pragma unroll
            for (int u = 0; u < 4; u++) {
                if (p + u * NL >= p1) break;
#pragma unroll
                for (int j = 0; j < V; j++) {
                    const float d = ck_ldf(v[u].v[j]) - shift[j];
                    fs[j] += d;
                    fs2[j] += d * d;
                }
            }
            if ((n += 4) >= GN_FLUSH) {
#pragma unroll
                for (int j = 0; j < V; j++) s[j] += fs[j], s2[j] += fs2[j], fs[j] = fs2[j] = 0.0f;
                n = 0;
            }
        }
#pragma unroll
        for (int j = 0; j < V; j++) s[j] += fs[j], s2[j] += fs2[j];
    }
#pragma unroll
    for (int j = 0; j < V; j++) sh[threadIdx.x * V + j] = make_double2(s[j], s2[j]);
    __syncthreads();
    /* thread t < C sums channel t over the lanes, in lane order */
    for (int c = threadIdx.x; c < C; c += GN_THREADS) {
        const int v = c / V, j = c % V;
        double    a = 0.0, a2 = 0.0;
        for (int l = 0; l < NL; l++) {
            const double2 q = sh[(l * NV + v) * V + j];
            a += q.x;
            a2 += q.y;
        }
        part[((int64_t)b * nchunk + ch) * C + c] = make_double2(a, a2);
    }
}

template <typename T>
__global__ void __launch_bounds__(GN_FINAL_THREADS)
    gn_final_kernel(float *__restrict__ stats, const double2 *__restrict__ part, const T *__restrict__ x, int64_t P,
                    int C, int CG, int groups, int nchunk, float eps) {
    __shared__ double sa[GN_FINAL_THREADS], sb[GN_FINAL_THREADS]; /* per-thread Σ, Σ² */
    const int     b = blockIdx.x / groups, gi = blockIdx.x % groups;
    const int64_t n = (int64_t)nchunk * CG;
    double        s = 0.0, s2 = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += GN_FINAL_THREADS) {
        const int64_t ch = i / CG;
        const int     cc = (int)(i % CG);
        const double2 v  = part[((int64_t)b * nchunk + ch) * C + gi * CG + cc];
        s += v.x;
        s2 += v.y;
    }
    sa[threadIdx.x] = s;
    sb[threadIdx.x] = s2;
    __syncthreads();
    for (int off = GN_FINAL_THREADS / 2; off > 0; off >>= 1) { /* fixed tree: same order every run */
        if ((int)threadIdx.x < off) {
            sa[threadIdx.x] += sa[threadIdx.x + off];
            sb[threadIdx.x] += sb[threadIdx.x + off];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const double cnt   = (double)P * CG;
        const double shift = (double)ck_ldf(x[(int64_t)b * P * C + gi * CG]);
        const double ms    = sa[0] / cnt;
        double       var   = sb[0] / cnt - ms * ms;
        if (var < 0.0) var = 0.0;
        stats[2 * blockIdx.x]     = (float)(shift + ms);
        stats[2 * blockIdx.x + 1] = (float)(1.0 / sqrt(var + (double)eps));
    }
}

__global__ void gn_coef_kernel(float2 *__restrict__ coef, const float *__restrict__ stats,
                               const float *__restrict__ gamma, const float *__restrict__ beta, int B, int C, int CG,
                               int groups) {
    CK_GRID_STRIDE(i, (int64_t)B * C) {
        const int   b = (int)(i / C), c = (int)(i % C);
        const int   sg   = b * groups + c / CG;
        const float mean = stats[2 * sg], rstd = stats[2 * sg + 1];
        const float sc   = __fmul_rn(rstd, gamma[c]);
        coef[i]          = make_float2(sc, __fsub_rn(beta[c], __fmul_rn(mean, sc)));
    }
}

/* grid.y = sample; x, y, r may alias (each element is read, then written, by one thread) */
template <typename T, int V>
__global__ void gn_apply_kernel(T *y, const T *x, const T *r, const float2 *__restrict__ coef, int64_t PC, int C,
                                int act) {
    const int64_t base = (int64_t)blockIdx.y * PC;
    const float2 *cf   = coef + (int64_t)blockIdx.y * C; /* (C) (scale, shift) of this sample */
    const int64_t nvec = PC / V;
    CK_GRID_STRIDE(i, nvec) {
        const int64_t e  = base + i * V;
        const int     c0 = (int)((i * V) % C);
        ck_vec<T, V>  xv = ck_vload<T, V>(x + e);
        ck_vec<T, V>  rv;
        if (r) rv = ck_vload<T, V>(r + e);
#pragma unroll
        for (int j = 0; j < V; j++) {
            const float2 k = cf[c0 + j];
            float        v = __fadd_rn(__fmul_rn(ck_ldf(xv.v[j]), k.x), k.y);
            if (r) v += ck_ldf(rv.v[j]);
            if (act == CK_ACT_RELU) v = v > 0.0f ? v : 0.0f;
            else if (act == CK_ACT_GELU) v = ck_gelu_erf_d(v);
            xv.v[j] = ck_stf<T>(v);
        }
        ck_vstore<T, V>(y + e, xv);
    }
}

/* The apply kernel where the channel vectors of a pixel divide the block (NV = C / V divides GN_THREADS): the
 * grid's stride is then a multiple of NV, so every vector a thread touches has the same channels, and its
 * coefficients sit in registers for the whole loop (no per-element coefficient loads or 64-bit modulo); two
 * vectors per iteration keep two loads (four with the residual) in flight. The same operations as
 * gn_apply_kernel, so the same bits. */
template <typename T, int V>
__global__ void __launch_bounds__(GN_THREADS)
    gn_apply_cv_kernel(T *y, const T *x, const T *r, const float2 *__restrict__ coef, int64_t PC, int C, int act) {
    const int64_t base   = (int64_t)blockIdx.y * PC;
    const int64_t nvec   = PC / V;
    const int64_t stride = (int64_t)gridDim.x * GN_THREADS;
    const int64_t i0     = (int64_t)blockIdx.x * GN_THREADS + threadIdx.x;
    const int     c0     = (int)((i0 * V) % C); /* the same for i0 + k·stride: stride·V is a multiple of C */
    float2        k[V];
#pragma unroll
    for (int j = 0; j < V; j++) k[j] = coef[(int64_t)blockIdx.y * C + c0 + j];
    auto one = [&](ck_vec<T, V> &xv, const ck_vec<T, V> &rv) {
#pragma unroll
        for (int j = 0; j < V; j++) {
            float v = __fadd_rn(__fmul_rn(ck_ldf(xv.v[j]), k[j].x), k[j].y);
            if (r) v += ck_ldf(rv.v[j]);
            if (act == CK_ACT_RELU) v = v > 0.0f ? v : 0.0f;
            else if (act == CK_ACT_GELU) v = ck_gelu_erf_d(v);
            xv.v[j] = ck_stf<T>(v);
        }
    };
    for (int64_t i = i0; i < nvec; i += 2 * stride) {
        const int64_t e0 = base + i * V, e1 = e0 + stride * V;
        const bool    two = i + stride < nvec;
        ck_vec<T, V>  x0 = ck_vload<T, V>(x + e0), x1, r0, r1;
        if (two) x1 = ck_vload<T, V>(x + e1);
        if (r) {
            r0 = ck_vload<T, V>(r + e0);
            if (two) r1 = ck_vload<T, V>(r + e1);
        }
        one(x0, r0);
        ck_vstore<T, V>(y + e0, x0);
        if (two) {
            one(x1, r1);
            ck_vstore<T, V>(y + e1, x1);
        }
    }
}

/* Steps 1-3: the (B, C) (scale, shift) coefficients in the scratch, from statistics of x (written to `stats`
 * when given) or, frozen, read from `stats`. */
template <typename T>
static float2 *gn_coefficients(ck_cuda *cu, const ck_tensor *x, const float *gamma, const float *beta, int groups,
                               float eps, const ck_tensor *stats, int frozen) {
    const int64_t B = x->shape[0], C = ck_tensor_last(x);
    const int64_t P = ck_tensor_numel(x) / (B * C);
    const int     CG = (int)(C / groups);
    CK_ASSERT(B <= 65535 && C <= 0x7fffffff && P * C <= ((int64_t)1 << 40));

    /* scratch: partials (B, nchunk, C) double2 | stats (B, groups, 2) float | coef (B, C) float2 */
    uint8_t *scr = (uint8_t *)cu->scratch;
    size_t   off = 0;
    const size_t coef_bytes  = ((size_t)B * C * sizeof(float2) + 255) & ~(size_t)255;
    const size_t stats_bytes = ((size_t)B * groups * 2 * sizeof(float) + 255) & ~(size_t)255;
    float2      *coef        = (float2 *)(scr + off); /* (B, C) */
    off += coef_bytes;
    float *st = stats ? (float *)stats->data : (float *)(scr + off); /* (B, groups, 2) */
    off += stats ? 0 : stats_bytes;
    CK_ASSERT(off <= cu->scratch_bytes);

    if (!frozen) {
        /* chunks: ≥ 1024 pixels (a vector block's 32 lanes then sum 32+ pixels each: with 128-pixel chunks
         * the lane reduction dominated, 263 µs for a batch of eight 512² maps), ≤ 2048 per sample (4096
         * chunks of 1024 pixels: 182 µs for a 2048² map against 159 µs with 2048 chunks, H200); they
         * depend on the sample's size only, so an image's statistics do not depend on the batch. Partials
         * must fit in what is left of the scratch. */
        int64_t chunk = (P + 2047) / 2048;
        if (chunk < 1024) chunk = 1024 < P ? 1024 : P;
        int64_t nchunk = (P + chunk - 1) / chunk;
        while ((size_t)B * nchunk * C * sizeof(double2) > cu->scratch_bytes - off && chunk < P) {
            chunk *= 2;
            nchunk = (P + chunk - 1) / chunk;
        }
        CK_ASSERT((size_t)B * nchunk * C * sizeof(double2) <= cu->scratch_bytes - off && nchunk <= 0x7fffffff);
        double2 *part = (double2 *)(scr + off); /* (B, nchunk, C) */
        constexpr int VP = ck_v16<T>::V;
        if (C % VP == 0 && C / VP <= GN_THREADS && ck_aligned(x->data, 16))
            gn_partial_vec_kernel<T, VP><<<dim3((unsigned)nchunk, (unsigned)B), GN_THREADS, 0, cu->stream>>>(
                part, (const T *)x->data, P, (int)C, CG, chunk, (int)nchunk);
        else
            gn_partial_kernel<T><<<dim3((unsigned)nchunk, (unsigned)B), GN_THREADS, 0, cu->stream>>>(
                part, (const T *)x->data, P, (int)C, CG, chunk, (int)nchunk);
        CK_KERNEL_CHECK(cu);
        gn_final_kernel<T><<<(unsigned)(B * groups), GN_FINAL_THREADS, 0, cu->stream>>>(st, part, (const T *)x->data, P,
                                                                                        (int)C,
                                                                                  CG, groups, (int)nchunk, eps);
        CK_KERNEL_CHECK(cu);
    }
    gn_coef_kernel<<<ck_grid_for(cu, B * C, 256), 256, 0, cu->stream>>>(coef, st, gamma, beta, (int)B, (int)C, CG, groups);
    CK_KERNEL_CHECK(cu);
    return coef;
}

template <typename T>
static void launch(ck_cuda *cu, const ck_tensor *y, const ck_tensor *x, const float *gamma, const float *beta,
                   int groups, float eps, const ck_tensor *residual, int act, const ck_tensor *stats, int frozen) {
    const int64_t B = x->shape[0], C = ck_tensor_last(x);
    const int64_t P = ck_tensor_numel(x) / (B * C);
    const float2 *coef = gn_coefficients<T>(cu, x, gamma, beta, groups, eps, stats, frozen);

    T            *Y  = (T *)y->data; /* (B, P, C), may alias x and the residual */
    const T      *X  = (const T *)x->data; /* (B, P, C) */
    const T      *R  = residual ? (const T *)residual->data : NULL; /* (B, P, C) */
    constexpr int V  = ck_v16<T>::V;
    const int64_t PC = P * C;
    const int     vec = C % V == 0 && ck_aligned(X, 16) && ck_aligned(Y, 16) && (!R || ck_aligned(R, 16));
    unsigned      gx  = ck_grid_for(cu, vec ? PC / V : PC, 256) / (unsigned)B + 1;
    if (vec && GN_THREADS % (C / V) == 0)
        gn_apply_cv_kernel<T, V><<<dim3(gx, (unsigned)B), GN_THREADS, 0, cu->stream>>>(Y, X, R, coef, PC, (int)C, act);
    else if (vec) gn_apply_kernel<T, V><<<dim3(gx, (unsigned)B), 256, 0, cu->stream>>>(Y, X, R, coef, PC, (int)C, act);
    else gn_apply_kernel<T, 1><<<dim3(gx, (unsigned)B), 256, 0, cu->stream>>>(Y, X, R, coef, PC, (int)C, act);
    CK_KERNEL_CHECK(cu);
}

extern "C" void ck_groupnorm_stats_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x,
                                        const ck_tensor *gamma, const ck_tensor *beta, int groups, float eps,
                                        const ck_tensor *residual, ck_act act, const ck_tensor *stats,
                                        int stats_frozen) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(ck_is_float_dtype(x->dtype) && y->dtype == x->dtype && (!residual || residual->dtype == x->dtype));
    CK_ASSERT(gamma->dtype == CK_DTYPE_F32 && beta->dtype == CK_DTYPE_F32 && (!stats || stats->dtype == CK_DTYPE_F32));
    CK_DISPATCH_FLOAT(x->dtype, T, launch<T>(cu, y, x, (const float *)gamma->data, (const float *)beta->data, groups, eps,
                                             residual, act, stats, stats_frozen));
}

extern "C" void ck_groupnorm_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                                  const ck_tensor *beta, int groups, float eps, const ck_tensor *residual, ck_act act) {
    ck_groupnorm_stats_cuda(be, y, x, gamma, beta, groups, eps, residual, act, NULL, 0);
}

/* groupnorm_linear: y (B, P, N) float32 = act(x·scale + shift + r) · wᵀ + b per pixel, the normalized values in
 * registers only. NV = C / V threads share a pixel, each one 16-byte vector of its channels (the coefficients
 * and that slice of w stay in registers: the grid's stride is a multiple of NV), their N partial dot products
 * added over the NV lanes by shuffles; lane 0 of the pixel writes its N outputs. The normalized value is formed
 * as gn_apply_kernel forms it (then kept in float, not rounded to T). */
template <typename T, typename TW, int V, int NV, int N>
__global__ void __launch_bounds__(GN_THREADS)
    gn_linear_kernel(float *__restrict__ y, const T *__restrict__ x, const T *__restrict__ r,
                     const float2 *__restrict__ coef, const TW *__restrict__ w, const float *__restrict__ b,
                     int64_t P, int act) {
    constexpr int C = V * NV;
    const int64_t stride = (int64_t)gridDim.x * (GN_THREADS / NV); /* pixels */
    const int     cv     = threadIdx.x % NV;
    const int64_t p0     = (int64_t)blockIdx.x * (GN_THREADS / NV) + threadIdx.x / NV;
    const int64_t img    = blockIdx.y;
    float2        k[V];
    float         wr[N][V];
#pragma unroll
    for (int j = 0; j < V; j++) k[j] = coef[img * C + cv * V + j];
#pragma unroll
    for (int n = 0; n < N; n++)
#pragma unroll
        for (int j = 0; j < V; j++) wr[n][j] = ck_ldf(w[n * C + cv * V + j]);
    const T *xb = x + img * P * C, *rb = r ? r + img * P * C : nullptr;
    float   *yb = y + img * P * N;
    for (int64_t p = p0; p < P; p += stride) {
        const ck_vec<T, V> xv = ck_vload<T, V>(xb + p * C + cv * V);
        ck_vec<T, V>       rv;
        if (rb) rv = ck_vload<T, V>(rb + p * C + cv * V);
        float acc[N];
#pragma unroll
        for (int n = 0; n < N; n++) acc[n] = 0.0f;
#pragma unroll
        for (int j = 0; j < V; j++) {
            float v = __fadd_rn(__fmul_rn(ck_ldf(xv.v[j]), k[j].x), k[j].y);
            if (rb) v += ck_ldf(rv.v[j]);
            if (act == CK_ACT_RELU) v = v > 0.0f ? v : 0.0f;
            else if (act == CK_ACT_GELU) v = ck_gelu_erf_d(v);
#pragma unroll
            for (int n = 0; n < N; n++) acc[n] = fmaf(v, wr[n][j], acc[n]);
        }
#pragma unroll
        for (int off = NV / 2; off > 0; off >>= 1)
#pragma unroll
            for (int n = 0; n < N; n++) acc[n] += __shfl_xor_sync(0xffffffffu, acc[n], off, NV);
        if (cv == 0)
#pragma unroll
            for (int n = 0; n < N; n++) yb[p * N + n] = acc[n] + (b ? b[n] : 0.0f);
    }
}

/* Any shape: one thread per pixel, every channel in turn. */
template <typename T, typename TW>
__global__ void gn_linear_any_kernel(float *__restrict__ y, const T *__restrict__ x, const T *__restrict__ r,
                                     const float2 *__restrict__ coef, const TW *__restrict__ w,
                                     const float *__restrict__ b, int64_t P, int C, int N, int act) {
    const int64_t img = blockIdx.y;
    CK_GRID_STRIDE(p, P) {
        const T *xp = x + (img * P + p) * C, *rp = r ? r + (img * P + p) * C : nullptr;
        for (int n = 0; n < N; n++) {
            float acc = 0.0f;
            for (int c = 0; c < C; c++) {
                const float2 k = coef[img * C + c];
                float        v = __fadd_rn(__fmul_rn(ck_ldf(xp[c]), k.x), k.y);
                if (rp) v += ck_ldf(rp[c]);
                if (act == CK_ACT_RELU) v = v > 0.0f ? v : 0.0f;
                else if (act == CK_ACT_GELU) v = ck_gelu_erf_d(v);
                acc = fmaf(v, ck_ldf(w[n * C + c]), acc);
            }
            y[(img * P + p) * N + n] = acc + (b ? b[n] : 0.0f);
        }
    }
}

template <typename T, typename TW>
static void launch_linear(ck_cuda *cu, const ck_tensor *y, const ck_tensor *x, const float *gamma, const float *beta,
                          int groups, float eps, const ck_tensor *residual, int act, const ck_tensor *w,
                          const ck_tensor *b, const ck_tensor *stats) {
    const int64_t B = x->shape[0], C = ck_tensor_last(x), N = w->shape[0];
    const int64_t P = ck_tensor_numel(x) / (B * C);
    const float2 *coef = gn_coefficients<T>(cu, x, gamma, beta, groups, eps, stats, stats != NULL);
    float        *Y = (float *)y->data;
    const T      *X = (const T *)x->data, *R = residual ? (const T *)residual->data : NULL;
    const TW     *Wt = (const TW *)w->data;
    const float  *Bs = b ? (const float *)b->data : NULL;
    constexpr int V = ck_v16<T>::V;
    const int vec = ck_aligned(X, 16) && (!R || ck_aligned(R, 16)) && N == 4;
    const unsigned gx = ck_grid_for(cu, P * (C / V), GN_THREADS) / (unsigned)B + 1;
#define CK__GN_LIN(NVv)                                                                                        \
    gn_linear_kernel<T, TW, V, NVv, 4><<<dim3(gx, (unsigned)B), GN_THREADS, 0, cu->stream>>>(Y, X, R, coef, Wt, Bs, P, act)
    if (vec && C == 8 * V) CK__GN_LIN(8);
    else if (vec && C == 4 * V) CK__GN_LIN(4);
    else if (vec && C == 16 * V) CK__GN_LIN(16);
    else
        gn_linear_any_kernel<T, TW><<<dim3(ck_grid_for(cu, P, 256) / (unsigned)B + 1, (unsigned)B), 256, 0, cu->stream>>>(
            Y, X, R, coef, Wt, Bs, P, (int)C, (int)N, act);
#undef CK__GN_LIN
    CK_KERNEL_CHECK(cu);
}

extern "C" void ck_groupnorm_linear_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                                         const ck_tensor *beta, int groups, float eps, const ck_tensor *residual,
                                         ck_act act, const ck_tensor *w, const ck_tensor *b, const ck_tensor *stats) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(ck_is_float_dtype(x->dtype) && (w->dtype == x->dtype || w->dtype == CK_DTYPE_F32));
    const float *g = (const float *)gamma->data, *bt = (const float *)beta->data;
    if (w->dtype == CK_DTYPE_F32 && x->dtype != CK_DTYPE_F32) {
        CK_DISPATCH_FLOAT(x->dtype, T, (launch_linear<T, float>(cu, y, x, g, bt, groups, eps, residual, act, w, b, stats)));
    } else {
        CK_DISPATCH_FLOAT(x->dtype, T, (launch_linear<T, T>(cu, y, x, g, bt, groups, eps, residual, act, w, b, stats)));
    }
}
