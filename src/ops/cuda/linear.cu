/* Linear layers on CUDA: one cuBLASLt matmul plus, where cuBLASLt cannot express it exactly, one fused
 * epilogue kernel. ref: torch.nn.functional.linear (y = x·Wᵀ + b); CPU reference ops/cpu/linear.c.
 *
 * Row-major y (M, N) = x (M, K) · w (N, K)ᵀ is, seen column-major as cuBLAS does, yᵀ (N×M, ld N) =
 * op_T(w: K×N, ld K) · (xᵀ: K×M, ld K): m = N, n = M, k = K, transa = T, transb = N.
 *
 * Numerics:
 *   - CUBLAS_COMPUTE_32F in every precision. In fp32 mode that is true SGEMM (no TF32: fp32 is the
 *     parity mode against the CPU); in bf16/fp16 the products accumulate in fp32.
 *   - Bias: always in cuBLASLt's BIAS epilogue, added to the fp32 accumulator before the one rounding of y.
 *     Its vector must have the output dtype (cublasLt.h, BIAS_DATA_TYPE), so a 16-bit output takes a 16-bit
 *     copy of the float32 bias (derived.cu), as PyTorch's fp16 model holds its biases. Adding the float32
 *     bias to an already rounded 16-bit y instead (the earlier path, still taken if no copy can be made)
 *     rounds every biased output twice: measured, ~25 % further from float64 in the encoder features.
 *   - GELU is the exact erf form (nn.GELU default). cuBLASLt's GELU epilogue is the tanh approximation,
 *     so GELU always goes through the epilogue kernel (on y = xWᵀ + b, rounded once, as PyTorch does).
 *     ReLU uses cuBLASLt's (exact) epilogue.
 *   - Residual with no activation is the GEMM's C operand with beta = 1 (in place when it aliases y):
 *     y = xWᵀ + b + r with one rounding; with an activation it is added after it, by the epilogue kernel
 *     (CPU order: act(xWᵀ + b) + r).
 * CK_LINEAR_GEMM=1 routes linears with an activation (fc1's GELU) to gemm_sm90.cu on Hopper instead: the same
 * roundings, the activation and residual applied to the accumulators, no second pass (=all: every 16-bit linear).
 * CK_LINEAR_CUDNN=1 routes fc1 (GELU, no residual) and the LayerNorm-linears to one cuDNN graph each (linear_cudnn.c:
 * the exact GELU on the float32 accumulators, one rounding of y; the LayerNorm on the operand as it loads).
 * CK_LINEAR_NARROW=1 routes those with K ≤ 128 (the first stage's) to gemm_narrow.cu: the same results, the
 * weight resident in shared memory. Both are switches, not the default: on the H100 (2026-12-05) cuBLASLt with the
 * separate GELU pass was faster at 2048 by 0.6 ms (the tiled GEMM) and 1.2 ms (the narrow one).
 * Plans (descriptors + heuristic algorithm) are cached per problem in the backend. If cuBLASLt has no
 * algorithm for a problem, a plain tiled fp32-accumulate kernel computes it (correct, slow; odd shapes). */
#include "ops/cuda/common.cuh"
#include "ops/cuda/gemm_sm90.h"

/* ---- epilogue: y = act(y + b) + r, b float32 (N), r like y; any of b / act / r may be absent ---- */

template <typename T, int V>
__global__ void linear_epilogue_kernel(T *__restrict__ y, const float *__restrict__ bias, const T *r, int64_t nvec,
                                       int N, int act) {
    CK_GRID_STRIDE(i, nvec) {
        const int64_t e  = i * V;
        const int     n0 = (int)(e % N); /* V divides N: a vector never crosses a row */
        ck_vec<T, V>  yv = ck_vload<T, V>(y + e);
        ck_vec<T, V>  rv;
        if (r) rv = ck_vload<T, V>(r + e);
#pragma unroll
        for (int j = 0; j < V; j++) {
            float v = ck_ldf(yv.v[j]);
            if (bias) v += bias[n0 + j];
            v = ck_act_d(v, act);
            if (r) v += ck_ldf(rv.v[j]);
            yv.v[j] = ck_stf<T>(v);
        }
        ck_vstore<T, V>(y + e, yv);
    }
}

/* ---- fallback GEMM (no cuBLASLt algorithm): 16×16 output tile per block, full epilogue ---- */

#define CK_FB_TILE 16

template <typename T>
__global__ void linear_fallback_kernel(T *y, const T *__restrict__ x, const T *__restrict__ w,
                                       const float *__restrict__ bias, const T *r, int act, int64_t M, int N, int K) {
    __shared__ float xs[CK_FB_TILE][CK_FB_TILE + 1]; /* (m, k) */
    __shared__ float ws[CK_FB_TILE][CK_FB_TILE + 1]; /* (n, k) */
    const int64_t m = (int64_t)blockIdx.x * CK_FB_TILE + threadIdx.y;
    const int     n = blockIdx.y * CK_FB_TILE + threadIdx.x;
    float         acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += CK_FB_TILE) {
        const int     kk = k0 + threadIdx.x;
        const int64_t mr = (int64_t)blockIdx.x * CK_FB_TILE + threadIdx.y;
        xs[threadIdx.y][threadIdx.x] = (mr < M && kk < K) ? ck_ldf(x[mr * K + kk]) : 0.0f;
        const int nr = blockIdx.y * CK_FB_TILE + threadIdx.y;
        ws[threadIdx.y][threadIdx.x] = (nr < N && kk < K) ? ck_ldf(w[(int64_t)nr * K + kk]) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < CK_FB_TILE; j++) acc += xs[threadIdx.y][j] * ws[threadIdx.x][j];
        __syncthreads();
    }
    if (m < M && n < N) {
        float v = acc;
        if (bias) v += bias[n];
        v = ck_act_d(v, act);
        if (r) v += ck_ldf(r[m * N + n]);
        y[m * N + n] = ck_stf<T>(v);
    }
}

/* ---- cuBLASLt plans ---- */

static int ptr_align(const void *p) {
    if (!p) return 256;
    uintptr_t a = (uintptr_t)p;
    int       al = 1;
    while (al < 256 && (a & (uintptr_t)(2 * al - 1)) == 0) al *= 2;
    return al;
}

static cudaDataType_t cuda_type(ck_dtype t) {
    switch (t) {
    case CK_DTYPE_F16: return CUDA_R_16F;
    case CK_DTYPE_BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
    }
}

static void plan_destroy(ck_lt_plan *p) {
    if (!p->used) return;
    if (p->op) cublasLtMatmulDescDestroy(p->op);
    if (p->a) cublasLtMatrixLayoutDestroy(p->a);
    if (p->b) cublasLtMatrixLayoutDestroy(p->b);
    if (p->c) cublasLtMatrixLayoutDestroy(p->c);
    memset(p, 0, sizeof *p);
}

extern "C" void ck__cuda_lt_cache_free(ck_cuda *cu) {
    for (int i = 0; i < CK_LT_CACHE; i++) plan_destroy(&cu->plans[i]);
    cu->plan_next = 0;
}

static ck_lt_plan *plan_get(ck_cuda *cu, const ck_lt_key *key, const void *bias) {
    for (int i = 0; i < CK_LT_CACHE; i++)
        if (cu->plans[i].used && memcmp(&cu->plans[i].key, key, sizeof *key) == 0) return &cu->plans[i];

    ck_lt_plan *p = &cu->plans[cu->plan_next];
    cu->plan_next = (cu->plan_next + 1) % CK_LT_CACHE;
    plan_destroy(p);
    p->used = 1;
    p->key  = *key;

    const cudaDataType_t    dt  = cuda_type((ck_dtype)key->dtype);
    const cublasOperation_t tra = CUBLAS_OP_T, trb = CUBLAS_OP_N;
    const cublasLtEpilogue_t epi = (cublasLtEpilogue_t)key->epilogue;
    CK_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CK_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &tra, sizeof tra));
    CK_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &trb, sizeof trb));
    CK_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (bias) /* the heuristic reads the pointer's alignment */
        CK_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    CK_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->a, dt, (uint64_t)key->K, (uint64_t)key->N, (int64_t)key->K));
    CK_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->b, dt, (uint64_t)key->K, (uint64_t)key->M, (int64_t)key->K));
    CK_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->c, cuda_type((ck_dtype)key->out_dtype), (uint64_t)key->N,
                                               (uint64_t)key->M, (int64_t)key->N));

    cublasLtMatmulPreference_t pref;
    CK_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = cu->workspace_bytes;
    CK_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    /* the default assumes 256-byte aligned operands; say what we really have */
    const cublasLtMatmulPreferenceAttributes_t al_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++) {
        const uint32_t al = (uint32_t)key->align[i];
        CK_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, al_attr[i], &al, sizeof al));
    }
    cublasLtMatmulHeuristicResult_t res;
    int                             nres = 0;
    memset(&res, 0, sizeof res);
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(cu->lt, p->op, p->a, p->b, p->c, p->c, pref, 1, &res, &nres);
    cublasLtMatmulPreferenceDestroy(pref);
    p->ok = st == CUBLAS_STATUS_SUCCESS && nres > 0 && res.state == CUBLAS_STATUS_SUCCESS;
    if (p->ok) p->algo = res.algo;
    else
        CK_LOG_DBG("cuBLASLt: no algorithm for M=%lld N=%lld K=%lld %s epilogue %d (%s); using the fallback kernel",
                   (long long)key->M, (long long)key->N, (long long)key->K, ck_dtype_name((ck_dtype)key->dtype),
                   key->epilogue, cublasGetStatusString(st));
    return p;
}

/* ---- op ---- */

template <typename T>
static void launch_epilogue(ck_cuda *cu, const ck_tensor *y, int64_t M, int64_t N, const float *bias, int act,
                            const void *res) {
    T            *Y    = (T *)y->data; /* (M, N) */
    const T      *R    = (const T *)res; /* (M, N) or NULL */
    const int64_t n    = M * N;
    constexpr int V    = ck_v16<T>::V;
    const int     vec  = N % V == 0 && ck_aligned(Y, 16) && (!R || ck_aligned(R, 16));
    const int     thr  = 256;
    if (vec) {
        linear_epilogue_kernel<T, V><<<ck_grid_for(cu, n / V, thr), thr, 0, cu->stream>>>(Y, bias, R, n / V, (int)N, act);
    } else {
        linear_epilogue_kernel<T, 1><<<ck_grid_for(cu, n, thr), thr, 0, cu->stream>>>(Y, bias, R, n, (int)N, act);
    }
    CK_KERNEL_CHECK(cu);
}

template <typename T>
static void launch_fallback(ck_cuda *cu, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const float *bias,
                            int act, const void *res, int64_t M, int64_t N, int64_t K) {
    CK_ASSERT((M + CK_FB_TILE - 1) / CK_FB_TILE <= 0x7fffffff && (N + CK_FB_TILE - 1) / CK_FB_TILE <= 65535);
    dim3 grid((unsigned)((M + CK_FB_TILE - 1) / CK_FB_TILE), (unsigned)((N + CK_FB_TILE - 1) / CK_FB_TILE));
    dim3 block(CK_FB_TILE, CK_FB_TILE);
    linear_fallback_kernel<T><<<grid, block, 0, cu->stream>>>((T *)y->data, (const T *)x->data, (const T *)w->data,
                                                              bias, (const T *)res, act, M, (int)N, (int)K);
    CK_KERNEL_CHECK(cu);
}

/* CK_LINEAR_NARROW=1 (read at every call; slower than cuBLASLt where timed, so opt-in): linears and
 * LayerNorm-linears with K ≤ 128 through gemm_narrow.cu */
static int narrow_wanted(void) {
    const char *e = getenv("CK_LINEAR_NARROW");
    return e && !strcmp(e, "1");
}

/* CK_LINEAR_CUDNN=1 (read at every call; slower than cuBLASLt + the GELU and LayerNorm passes on the H100, 35.68
 * and 36.33 against 34.68 ms at 2048, with a first frame of up to 6.4 s, 2026-12-07, so opt-in): fc1 (GELU) and the
 * LayerNorm-linears as one cuDNN graph each (linear_cudnn.c) */
static int cudnn_wanted(void) {
    const char *e = getenv("CK_LINEAR_CUDNN");
    return e && !strcmp(e, "1");
}

/* CK_LINEAR_GEMM (read at every call): whether a linear with activation `act` goes through gemm_sm90.cu; =1 takes
 * those with an activation, =all every 16-bit linear (A/B runs) */
static int tiled_wanted(ck_act act) {
    const char *e = getenv("CK_LINEAR_GEMM");
    return e && (!strcmp(e, "all") || (!strcmp(e, "1") && act != CK_ACT_NONE));
}

extern "C" void ck_linear_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w,
                               const ck_tensor *b, ck_act act, const ck_tensor *residual) {
    ck_cuda      *cu = ck_cuda_of(be);
    const int64_t K = w->shape[1], N = w->shape[0];
    const int64_t M = ck_tensor_numel(x) / K;
    /* x and w share a dtype; y is that dtype or float32 (the heads keep their logits in float32, so that
     * the ×10 refiner delta is not amplified 16-bit rounding) */
    const ck_dtype dt = x->dtype, ot = y->dtype;
    CK_ASSERT(ck_is_float_dtype(dt) && w->dtype == dt && (ot == dt || ot == CK_DTYPE_F32));
    CK_ASSERT(!b || b->dtype == CK_DTYPE_F32);
    CK_ASSERT(!residual || residual->dtype == ot);
    CK_ASSERT(x->data != y->data);
    CK_ASSERT(K <= 0x7fffffff && N <= 0x7fffffff);
    const float *bias = b ? (const float *)b->data : NULL; /* (N) float32 */
    const void  *res  = residual ? residual->data : NULL; /* (M, N), may alias y */
    /* the bias cuBLASLt adds: (N) in the output dtype; NULL when there is none or no copy could be made */
    const void  *lt_b = !b ? NULL : ot == CK_DTYPE_F32 ? (const void *)bias : ck__derived_get(be, b, CK_DERIVED_CAST, ot);

    /* CK_LINEAR_NARROW=1: the first stage's narrow linears (K ≤ 128) with the weight resident (gemm_narrow.cu);
     * CK_LINEAR_GEMM=1: linears with an activation through the Hopper GEMM with the epilogue in registers
     * (gemm_sm90.cu: no second pass over y); =all: every 16-bit linear (A/B runs). Each declines elsewhere. */
    if (ot == dt && dt != CK_DTYPE_F32 && cu->cc_major == 9 && cu->cc_minor == 0) {
        const int gemm   = tiled_wanted(act);
        const int narrow = narrow_wanted(); /* the kernel declines K > 128 or N > 512 itself */
        if (narrow || gemm) {
            ck__gemm_args g;
            memset(&g, 0, sizeof g);
            g.x = x->data, g.w = w->data, g.y = y->data, g.res = res;
            g.bias_t = lt_b, g.bias_f = lt_b ? NULL : bias;
            g.M = M, g.N = (int)N, g.K = (int)K, g.act = (int)act, g.bf16 = dt == CK_DTYPE_BF16;
            if ((narrow && ck__gemm_narrow_sm90(&g, cu->stream)) || (gemm && ck__gemm_sm90(&g, cu->stream))) {
                CK_KERNEL_CHECK(cu);
                return;
            }
        }
    }

    /* CK_LINEAR_CUDNN=1: a GELU linear without residual as one cuDNN graph (the exact GELU on the accumulators) */
    if (act == CK_ACT_GELU && !res && ot == dt && dt != CK_DTYPE_F32 && (lt_b || !b) && cudnn_wanted() &&
        ck__linear_cudnn(be, y, x, w, lt_b, act, NULL, NULL, 0.0f))
        return;

    /* What cuBLASLt does (epilogue, beta) and what is left to the epilogue kernel (post_*). */
    cublasLtEpilogue_t epi       = lt_b ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    int                beta_one  = 0;
    const float       *post_bias = lt_b ? NULL : bias;
    int                post_act  = CK_ACT_NONE;
    const void        *post_res  = NULL;
    if (act == CK_ACT_NONE) {
        beta_one = res != NULL; /* xWᵀ + b + r, one rounding; r may alias y, so never left to the kernel */
    } else if (act == CK_ACT_RELU && !res && !post_bias) {
        epi = lt_b ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    } else {
        post_act = act;
        post_res = res;
    }
    const int lt_bias = epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_RELU_BIAS;

    ck_lt_key key;
    memset(&key, 0, sizeof key); /* compared with memcmp: padding must be zero */
    key.M        = M;
    key.N        = N;
    key.K        = K;
    key.dtype     = dt;
    key.out_dtype = ot;
    key.epilogue  = epi;
    key.beta_one = beta_one;
    key.align[0] = ptr_align(w->data);
    key.align[1] = ptr_align(x->data);
    key.align[2] = ptr_align(beta_one ? res : y->data);
    key.align[3] = ptr_align(y->data);
    key.align[4] = lt_bias ? ptr_align(lt_b) : 0;
    ck_lt_plan *p = plan_get(cu, &key, lt_bias ? lt_b : NULL);

    if (!p->ok) {
        /* everything in one plain kernel (also reads a residual that aliases y element by element) */
        if (ot != dt) {
            CK_LOG_ERR("ck_linear_cuda: cuBLASLt has no %s x %s -> float32 algorithm for M=%lld N=%lld K=%lld",
                       ck_dtype_name(dt), ck_dtype_name(dt), (long long)M, (long long)N, (long long)K);
            CK_ASSERT(ot == dt);
        }
        CK_DISPATCH_FLOAT(dt, T, launch_fallback<T>(cu, y, x, w, bias, act, res, M, N, K));
        return;
    }
    if (lt_bias)
        CK_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &lt_b, sizeof lt_b));
    const float alpha = 1.0f, beta = beta_one ? 1.0f : 0.0f;
    const void *C     = beta_one ? res : y->data;
    CK_CUBLAS_CHECK(cublasLtMatmul(cu->lt, p->op, &alpha, w->data, p->a, x->data, p->b, &beta, C, p->c, y->data, p->c,
                                   &p->algo, cu->workspace, cu->workspace_bytes, cu->stream));
    if (cu->debug_sync && !cu->capturing) CK_CUDA_CHECK(cudaStreamSynchronize(cu->stream));
    /* the default fc1 pass (GELU alone, the bias already added by cuBLASLt) is the activation op in place:
     * bound by erff's instructions, it carries none of the epilogue kernel's bias and residual tests */
    if (post_act == CK_ACT_GELU && !post_bias && !post_res) ck_activation_cuda(be, y, y, CK_ACT_GELU);
    else if (post_bias || post_act != CK_ACT_NONE || post_res)
        CK_DISPATCH_FLOAT(ot, T, launch_epilogue<T>(cu, y, M, N, post_bias, post_act, post_res));
}

/* layernorm_linear: on Hopper in 16 bits, where CK_LINEAR_NARROW or CK_LINEAR_GEMM asks for a GEMM of ours, the
 * row statistics (the default LayerNorm's, into the scratch) and that GEMM normalizing x as it lands, so the
 * normalized map is neither written nor read back; elsewhere the composition through xn. */
extern "C" void ck_layernorm_linear_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x,
                                         const ck_tensor *gamma, const ck_tensor *beta, float eps, const ck_tensor *w,
                                         const ck_tensor *b, ck_act act, const ck_tensor *residual,
                                         const ck_tensor *xn) {
    ck_cuda      *cu = ck_cuda_of(be);
    const int64_t K = w->shape[1], N = w->shape[0], M = ck_tensor_numel(x) / K;
    const ck_dtype dt = x->dtype;
    CK_ASSERT(x->data != y->data && xn->data != y->data);
    /* CK_LINEAR_CUDNN=1: the normalization, the product, the bias and the activation as one cuDNN graph (the
     * LayerNorm's own row statistics into the scratch first) */
    if (cudnn_wanted() && dt != CK_DTYPE_F32 && y->dtype == dt && w->dtype == dt && !residual &&
        (act == CK_ACT_NONE || act == CK_ACT_GELU)) {
        const void *b16 = b ? ck__derived_get(be, b, CK_DERIVED_CAST, dt) : NULL;
        if ((b16 || !b) && ck__linear_cudnn(be, y, x, w, b16, act, gamma, beta, eps)) return;
    }
    if (dt != CK_DTYPE_F32 && y->dtype == dt && w->dtype == dt && cu->cc_major == 9 && cu->cc_minor == 0 &&
        (size_t)M * sizeof(float2) <= cu->scratch_bytes && K <= 0x7fffffff && N <= 0x7fffffff) {
        float2 *stats = (float2 *)cu->scratch; /* (M) */
        ck__gemm_args g;
        memset(&g, 0, sizeof g);
        g.x = x->data, g.w = w->data, g.y = y->data, g.res = residual ? residual->data : NULL;
        g.bias_t = b ? ck__derived_get(be, b, CK_DERIVED_CAST, dt) : NULL;
        g.bias_f = b && !g.bias_t ? (const float *)b->data : NULL;
        g.ln_stats = (const float *)stats, g.ln_g = (const float *)gamma->data, g.ln_b = (const float *)beta->data;
        g.M = M, g.N = (int)N, g.K = (int)K, g.act = (int)act, g.bf16 = dt == CK_DTYPE_BF16;
        /* the GEMM's own checks first (without launching), so that the statistics are not computed for nothing */
        const int shape_ok = N % 8 == 0 && K % 8 == 0 && ((uintptr_t)x->data | (uintptr_t)w->data |
                                                           (uintptr_t)y->data | (uintptr_t)g.res) % 16 == 0;
        /* the tiled GEMM lost to LayerNorm + cuBLASLt on the device (2026-12-05: +3.9 ms at 2048), so it takes
         * these only where CK_LINEAR_GEMM asks for it; the narrow GEMM (CK_LINEAR_NARROW=1) takes its own range */
        const int tiled  = tiled_wanted(CK_ACT_GELU); /* =1 or =all: the LayerNorm makes it worth one */
        const int narrow = narrow_wanted() && K <= CK_NARROW_MAX_K && N <= CK_NARROW_MAX_N;
        if (shape_ok && (narrow || tiled) && ck__layernorm_row_stats(cu, x, eps, stats) &&
            ((narrow && ck__gemm_narrow_sm90(&g, cu->stream)) || (tiled && ck__gemm_sm90(&g, cu->stream)))) {
            CK_KERNEL_CHECK(cu);
            return;
        }
    }
    ck_layernorm_cuda(be, xn, x, gamma, beta, eps);
    ck_linear_cuda(be, y, xn, w, b, act, residual);
}
