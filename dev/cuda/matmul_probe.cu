/* matmul_probe: can cuDNN's graph (backend) API run the encoder's fc1 as one kernel, y = GELU(x·Wᵀ + b) with the
 * exact (erf) GELU, and the qkv / fc1 linears with their LayerNorm folded into the operand load, as fast as
 * cuBLASLt runs the bare product?  Standalone; not part of the build.  make -C dev/cuda matmul_probe
 *
 * Why: today fc1 is cuBLASLt (bias epilogue) plus a separate exact-GELU pass over the 16-bit map (1.3 ms of the
 * 2048² forward), because cuBLASLt's GELU epilogue is the tanh approximation; each LayerNorm in front of a linear
 * is its own pass (1.4 ms). cuDNN's runtime-fusion engines compile a matmul with pointwise operations before
 * and after it, and cuDNN's GELU_FWD is the erf form.
 *
 * Graphs (x (M, K) and y (M, N) row-major fp16; W (N, K) row-major, i.e. the (K, N) operand column-major;
 * intermediates virtual, float unless the graph says otherwise):
 *   p  plain     : y = x·Wᵀ                                        (the runtime engines' bare matmul speed)
 *   g  gelu      : y = GELU(x·Wᵀ + b)                              (b fp16 (1, N), one rounding, at the end)
 *   h  gelu16    : as g, with x·Wᵀ + b a virtual HALF tensor       (PyTorch's two roundings, if cuDNN keeps it)
 *   l  ln+gelu   : y = GELU(((x − μ)·σ⁻¹·γ + β)·Wᵀ + b)             (μ, σ⁻¹ (M, 1), γ, β (1, K) float32; x' rounded to fp16)
 *   q  ln        : y = ((x − μ)·σ⁻¹·γ + β)·Wᵀ + b                   (qkv after norm1)
 * Baselines in the same process: cuBLASLt (fp16 bias epilogue) alone, and followed by the exact-GELU pass (the
 * engine's linear_epilogue_kernel, re-stated here); cuBLASLt's GELU_BIAS epilogue (tanh) for speed only.
 * Every output is compared with a float64 reference (x, W, b as the fp16 values; the LayerNorm's output rounded
 * to fp16, as PyTorch's model stores it): max and mean |y − ref|. Median of 10 runs after 2, CUDA events.
 *
 * Usage: matmul_probe [--max-cfg N] [--graphs pghlq] [shape index ...]   (no index: every shape) */
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_graph.h"

static int ltok(cublasStatus_t s, const char *what) {
    if (s == CUBLAS_STATUS_SUCCESS) return 1;
    printf("      cuBLASLt FAILED: %.160s -> %d\n", what, (int)s);
    return 0;
}
#define LT(call) ltok((call), #call)

/* ---------------------------------------------------------------- data (hash-based) */
/* x ~ U(-1.5, 1.5) + a per-row offset (so the LayerNorm's mean matters); W ~ U(±√(3/K)): pre-activations of std ≈ 1,
 * the GELU's curved part; b, γ, β around their trained sizes */
__global__ void fill(__half *x, __half *w, __half *b, float *g, float *be, int64_t M, int N, int K) {
    const int64_t nx = M * K, nw = (int64_t)N * K, stride = (int64_t)gridDim.x * blockDim.x;
    const float   ws = sqrtf(3.0f / K) * 2.0f;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nx; i += stride)
        x[i] = __float2half(3.0f * uhash(1, i) - 1.5f + 0.5f * (uhash(5, i / K) - 0.5f));
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nw; i += stride)
        w[i] = __float2half(ws * (uhash(2, i) - 0.5f));
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < N; i += stride)
        b[i] = __float2half(0.4f * (uhash(3, i) - 0.5f));
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < K; i += stride) {
        g[i]  = 0.6f + 0.8f * uhash(4, i); /* float32, as the engine holds LayerNorm weights */
        be[i] = 0.3f * (uhash(6, i) - 0.5f);
    }
}

/* LayerNorm row statistics (eps 1e-6, as Hiera's), float: mean, 1/sqrt(var + eps); one warp per row */
__global__ void ln_stats(const __half *x, float *mu, float *rs, int64_t M, int K) {
    const int64_t row = blockIdx.x * (int64_t)(blockDim.x / 32) + threadIdx.x / 32;
    const int     l   = threadIdx.x % 32;
    if (row >= M) return;
    float s = 0, q = 0;
    for (int k = l; k < K; k += 32) s += __half2float(x[row * K + k]);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(~0u, s, o);
    const float m = s / K;
    for (int k = l; k < K; k += 32) { const float d = __half2float(x[row * K + k]) - m; q += d * d; }
    for (int o = 16; o; o >>= 1) q += __shfl_xor_sync(~0u, q, o);
    if (l == 0) mu[row] = m, rs[row] = rsqrtf(q / K + 1e-6f);
}

/* the engine's exact-GELU pass on a 16-bit map, 8 halves per thread (linear.cu's linear_epilogue_kernel) */
__global__ void gelu_pass(__half *y, int64_t nvec) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nvec; i += (int64_t)gridDim.x * blockDim.x) {
        uint4   u = reinterpret_cast<uint4 *>(y)[i];
        __half *h = reinterpret_cast<__half *>(&u);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float v = __half2float(h[j]);
            h[j] = __float2half(0.5f * v * (1.0f + erff(v * 0.70710678118654752440f)));
        }
        reinterpret_cast<uint4 *>(y)[i] = u;
    }
}

/* float64 reference of rows [0, rows) (every n): ln = 1 normalizes x first (rounded to fp16), gelu = 1 applies it */
__global__ void reference(const __half *x, const __half *w, const __half *b, const float *g, const float *be, double *ref,
                          int64_t rows, int N, int K, int ln, int gelu) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * N; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t m = i / N;
        const int     n = (int)(i % N);
        double        mu = 0, rs = 1, acc = 0;
        if (ln) {
            double s = 0, q = 0;
            for (int k = 0; k < K; k++) s += __half2float(x[m * K + k]);
            mu = s / K;
            for (int k = 0; k < K; k++) { const double d = __half2float(x[m * K + k]) - mu; q += d * d; }
            rs = 1.0 / sqrt(q / K + 1e-6);
        }
        for (int k = 0; k < K; k++) {
            double a = __half2float(x[m * K + k]);
            if (ln) a = __half2float(__float2half((float)((a - mu) * rs * g[k] + be[k])));
            acc += a * __half2float(w[(int64_t)n * K + k]);
        }
        acc += __half2float(b[n]);
        ref[i] = gelu ? 0.5 * acc * (1.0 + erf(acc / sqrt(2.0))) : acc;
    }
}
__global__ void compare(const __half *y, const double *ref, int64_t n, double *out /* max, sum */) {
    double ma = 0, s = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const double d = fabs((double)__half2float(y[i]) - ref[i]);
        ma = fmax(ma, isfinite(d) ? d : 1e30), s += d;
    }
    for (int o = 16; o; o >>= 1) ma = fmax(ma, __shfl_xor_sync(~0u, ma, o)), s += __shfl_xor_sync(~0u, s, o);
    if (threadIdx.x % 32 == 0) {
        atomicAdd(&out[1], s);
        unsigned long long *mx = (unsigned long long *)&out[0], old = *mx;
        while (__longlong_as_double(old) < ma) {
            const unsigned long long prev = atomicCAS(mx, old, __double_as_longlong(ma));
            if (prev == old) break;
            old = prev;
        }
    }
}

/* ---------------------------------------------------------------- state */
typedef struct shape { const char *name; int64_t M; int N, K; } shape;
static const shape g_shapes[] = {
    {"stage-0 fc1 at 2048", 262144, 448, 112},  {"stage-1 fc1", 65536, 896, 224}, {"stage-2 fc1 (16 blocks)", 16384, 1792, 448},
    {"stage-3 fc1", 4096, 3584, 896},           {"stage-0 qkv", 262144, 336, 112}, {"stage-2 qkv", 16384, 1344, 448},
};
enum { NSHAPES = sizeof g_shapes / sizeof g_shapes[0], REF_ROWS = 8192 };
/* the rows compared with the float64 reference: the first REF_ROWS, or all of a shorter problem */
static int64_t ref_rows(const shape *s) { return s->M < REF_ROWS ? s->M : REF_ROWS; }

static cudnnHandle_t    g_h;
static cublasLtHandle_t g_lt;
static cudaStream_t     g_st;
static cudaEvent_t      g_ev[2];
static __half *d_x, *d_w, *d_b, *d_y;
static float  *d_mu, *d_rs, *d_g, *d_be;
static double *d_ref[2], *d_cmp; /* reference without / with the LayerNorm */
static void   *d_ws;
static const size_t WS = (size_t)256 << 20;
static int          g_maxcfg = 6;

static int cmpf(const void *a, const void *b) { float x = *(const float *)a, y = *(const float *)b; return (x > y) - (x < y); }

typedef int (*run_fn)(void *ctx);
/* median ms of 10 runs after 2 (-1 on failure) */
static float time_of(run_fn f, void *ctx) {
    float t[10];
    for (int i = 0; i < 2; i++)
        if (!f(ctx)) return -1;
    for (int i = 0; i < 10; i++) {
        if (!CU(cudaEventRecord(g_ev[0], g_st)) || !f(ctx) || !CU(cudaEventRecord(g_ev[1], g_st)) ||
            !CU(cudaEventSynchronize(g_ev[1])) || !CU(cudaEventElapsedTime(&t[i], g_ev[0], g_ev[1])))
            return -1;
    }
    qsort(t, 10, sizeof t[0], cmpf);
    return t[5];
}
/* y's first ref_rows(s) rows against the reference: "max m, mean a" */
static void check(const shape *s, int ln, const char *label, float ms) {
    double h[2] = {0, 0};
    CU(cudaMemsetAsync(d_cmp, 0, sizeof h, g_st));
    compare<<<1024, 256, 0, g_st>>>(d_y, d_ref[ln], ref_rows(s) * s->N, d_cmp);
    CU(cudaMemcpyAsync(h, d_cmp, sizeof h, cudaMemcpyDeviceToHost, g_st));
    CU(cudaStreamSynchronize(g_st));
    const double flop = 2.0 * s->M * s->N * s->K;
    printf("    %-44s %8.4f ms %6.0f TFLOP/s   |y - ref| max %.3e mean %.3e\n", label, ms, ms > 0 ? flop / ms * 1e-9 : 0.0,
           h[0], h[1] / ((double)ref_rows(s) * s->N));
    fflush(stdout);
}

/* ---------------------------------------------------------------- cuBLASLt baseline */
typedef struct lt_run {
    const shape             *s;
    cublasLtMatmulDesc_t     op;
    cublasLtMatrixLayout_t   a, b, c;
    cublasLtMatmulAlgo_t     algo;
    int                      pass; /* the GELU pass after the product */
} lt_run;
static int lt_exec(void *v) {
    lt_run     *r = (lt_run *)v;
    const float one = 1, zero = 0;
    if (!LT(cublasLtMatmul(g_lt, r->op, &one, d_w, r->a, d_x, r->b, &zero, d_y, r->c, d_y, r->c, &r->algo, d_ws, WS, g_st)))
        return 0;
    if (r->pass) {
        const int64_t nvec = r->s->M * r->s->N / 8;
        gelu_pass<<<(unsigned)((nvec + 255) / 256 < 132 * 32 ? (nvec + 255) / 256 : 132 * 32), 256, 0, g_st>>>(d_y, nvec);
    }
    return CU(cudaGetLastError());
}
static void run_cublaslt(const shape *s, int epi, int pass, const char *label, int ln) {
    lt_run r;
    memset(&r, 0, sizeof r);
    r.s = s, r.pass = pass;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t e = (cublasLtEpilogue_t)epi;
    const void *bias = d_b;
    cudaDataType_t bt = CUDA_R_16F;
    cublasLtMatmulPreference_t pref = NULL;
    size_t ws = WS;
    int n = 0;
    cublasLtMatmulHeuristicResult_t res;
    if (!LT(cublasLtMatmulDescCreate(&r.op, CUBLAS_COMPUTE_32F, CUDA_R_32F)) ||
        !LT(cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta)) ||
        !LT(cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb)) ||
        !LT(cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e)) ||
        !LT(cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias)) ||
        !LT(cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt)) ||
        !LT(cublasLtMatrixLayoutCreate(&r.a, CUDA_R_16F, s->K, s->N, s->K)) ||
        !LT(cublasLtMatrixLayoutCreate(&r.b, CUDA_R_16F, s->K, s->M, s->K)) ||
        !LT(cublasLtMatrixLayoutCreate(&r.c, CUDA_R_16F, s->N, s->M, s->N)) || !LT(cublasLtMatmulPreferenceCreate(&pref)) ||
        !LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws)) ||
        !LT(cublasLtMatmulAlgoGetHeuristic(g_lt, r.op, r.a, r.b, r.c, r.c, pref, 1, &res, &n)) || n < 1)
        goto done;
    r.algo = res.algo;
    {
        const float ms = time_of(lt_exec, &r);
        if (ms > 0) check(s, ln, label, ms);
    }
done:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (r.op) cublasLtMatmulDescDestroy(r.op);
    if (r.a) cublasLtMatrixLayoutDestroy(r.a);
    if (r.b) cublasLtMatrixLayoutDestroy(r.b);
    if (r.c) cublasLtMatrixLayoutDestroy(r.c);
}

/* ---------------------------------------------------------------- cuDNN graph */
/* a 3-d tensor (1, r, c) with element strides (r·c, rs, cs) */
static bd_t t3(int64_t uid, cudnnDataType_t dt, int64_t r, int64_t c, int64_t rs, int64_t cs, bool virt) {
    int64_t dim[3] = {1, r, c}, str[3] = {r * c, rs, cs}, al = 16;
    bd_t    d = mk(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    if (d && SET(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt) &&
        SET(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 3, dim) &&
        SET(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 3, str) &&
        SET(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) &&
        SET(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &al) &&
        SET(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt) && FIN(d))
        return d;
    return NULL;
}
enum { U_X = 1, U_W, U_B, U_Y, U_MU, U_RS, U_G, U_BE };

static bd_t build(const shape *s, char g) {
    const cudnnDataType_t H = CUDNN_DATA_HALF, F = CUDNN_DATA_FLOAT;
    const int64_t         M = s->M, N = s->N, K = s->K;
    bd_t ops[12], a = t3(U_X, H, M, K, K, 1, false), w = t3(U_W, H, K, N, 1, K, false), y = t3(U_Y, H, M, N, N, 1, false);
    int  nops = 0;
    if (!a || !w || !y) return NULL;
    if (g == 'l' || g == 'q') { /* the LayerNorm as pointwise operations on the operand */
        bd_t mu = t3(U_MU, F, M, 1, 1, 1, false), rs = t3(U_RS, F, M, 1, 1, 1, false);
        bd_t gm = t3(U_G, F, 1, K, K, 1, false), be = t3(U_BE, F, 1, K, K, 1, false);
        bd_t v1 = t3(201, F, M, K, K, 1, true), v2 = t3(202, F, M, K, K, 1, true), v3 = t3(203, F, M, K, K, 1, true);
        bd_t v4 = t3(204, H, M, K, K, 1, true);
        if (!(ops[nops++] = pw_op(CUDNN_POINTWISE_SUB, a, mu, v1)) || !(ops[nops++] = pw_op(CUDNN_POINTWISE_MUL, v1, rs, v2)) ||
            !(ops[nops++] = pw_op(CUDNN_POINTWISE_MUL, v2, gm, v3)) || !(ops[nops++] = pw_op(CUDNN_POINTWISE_ADD, v3, be, v4)))
            return NULL;
        a = v4;
    }
    bd_t c = g == 'p' ? y : t3(101, F, M, N, N, 1, true);
    cudnnDataType_t ct = CUDNN_DATA_FLOAT;
    bd_t md = mk(CUDNN_BACKEND_MATMUL_DESCRIPTOR), mop;
    if (!md || !c || !SET(md, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct) || !FIN(md)) return NULL;
    if (!(mop = mk(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)) ||
        !SET(mop, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a) ||
        !SET(mop, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w) ||
        !SET(mop, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c) ||
        !SET(mop, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md) || !FIN(mop))
        return NULL;
    ops[nops++] = mop;
    if (g != 'p') {
        bd_t b = t3(U_B, H, 1, N, N, 1, false);
        bd_t cb = g == 'q' ? y : t3(102, g == 'h' ? H : F, M, N, N, 1, true);
        if (!(ops[nops++] = pw_op(CUDNN_POINTWISE_ADD, c, b, cb))) return NULL;
        if (g != 'q' && !(ops[nops++] = pw_op(CUDNN_POINTWISE_GELU_FWD, cb, NULL, y))) return NULL;
    }
    bd_t og = mk(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    if (!og || !SET(og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops)) return NULL;
    SET(og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &g_h);
    return FIN(og) ? og : NULL;
}

typedef struct dn_run { bd_t plan, vp; } dn_run;
static int dn_exec(void *v) { dn_run *r = (dn_run *)v; return CD(cudnnBackendExecute(g_h, r->plan, r->vp)) && CU(cudaGetLastError()); }

static void run_cudnn(const shape *s, char g) {
    static const char *names[] = {"p plain x·Wᵀ", "g GELU(x·Wᵀ + b)", "h GELU(x·Wᵀ + b), HALF between", "l GELU(LN(x)·Wᵀ + b)",
                                  "q LN(x)·Wᵀ + b"};
    const char *name = names[strchr("pghlq", g) - "pghlq"];
    const int   ln = g == 'l' || g == 'q';
    printf("  cuDNN graph %s\n", name);
    const int mark = g_npool;
    bd_t      og = build(s, g);
    if (!og) { printf("    operation graph: NOT finalized\n"); pool_release(mark); return; }
    bd_t         cfg[32];
    int64_t      n = -1, got = 0;
    cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
    bd_t         h = mk(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    if (!h || !SET(h, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og) ||
        !SET(h, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm) || !FIN(h) ||
        !GET(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL)) {
        pool_release(mark);
        return;
    }
    const int want = (int)(n < g_maxcfg ? n : g_maxcfg);
    for (int i = 0; i < want; i++) cfg[i] = mk(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    if (want > 0) GET(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, want, &got, cfg);
    printf("    heuristics (mode A): %lld configs; trying %lld\n", (long long)n, (long long)got);
    if (ln) {
        ln_stats<<<(unsigned)((s->M + 7) / 8), 256, 0, g_st>>>(d_x, d_mu, d_rs, s->M, s->K);
        CU(cudaGetLastError());
    }
    for (int i = 0; i < got; i++) {
        const int pm = g_npool;
        int64_t   idx = -1, m = 0, wsb = 0;
        bd_t      e = mk(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        if (e && GET(cfg[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &m, &e))
            GET(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &m, &idx);
        cudaEvent_t c0, c1;
        cudaEventCreate(&c0), cudaEventCreate(&c1);
        bd_t plan = mk(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        if (plan) SET(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &g_h);
        const int ok = plan && SET(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]) &&
                       FIN(plan) && GET(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &m, &wsb);
        if (!ok || wsb > (int64_t)WS) {
            printf("    cfg %d (engine %lld): plan NOT finalized or workspace %lld too large\n", i, (long long)idx, (long long)wsb);
            pool_release(pm);
            continue;
        }
        int64_t uids[8] = {U_X, U_W, U_Y, U_B, U_MU, U_RS, U_G, U_BE};
        void   *ptrs[8] = {d_x, d_w, d_y, d_b, d_mu, d_rs, d_g, d_be};
        const int64_t nu = g == 'p' ? 3 : ln ? 8 : 4;
        dn_run r = {plan, mk(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)};
        if (r.vp && SET(r.vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, nu, uids) &&
            SET(r.vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, nu, ptrs) &&
            SET(r.vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &d_ws) && FIN(r.vp)) {
            CU(cudaMemsetAsync(d_y, 0xFF, (size_t)s->M * s->N * 2, g_st));
            char label[96];
            snprintf(label, sizeof label, "%c cfg %d (engine %lld)", g, i, (long long)idx);
            const float ms = time_of(dn_exec, &r);
            if (ms > 0 && g != 'p') check(s, ln, label, ms);
            else if (ms > 0) printf("    %-44s %8.4f ms %6.0f TFLOP/s\n", label, ms, 2.0 * s->M * s->N * s->K / ms * 1e-9);
        }
        pool_release(pm);
    }
    pool_release(mark);
}

int main(int argc, char **argv) {
    const char *graphs = "pghlq";
    int         pick[NSHAPES], np = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-cfg") && i + 1 < argc) g_maxcfg = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--graphs") && i + 1 < argc) graphs = argv[++i];
        else if (atoi(argv[i]) >= 0 && atoi(argv[i]) < NSHAPES && np < NSHAPES) pick[np++] = atoi(argv[i]);
    }
    if (g_maxcfg > 32) g_maxcfg = 32;
    if (!np)
        for (int i = 0; i < NSHAPES; i++) pick[np++] = i;
    cudaDeviceProp pr;
    CU(cudaGetDeviceProperties(&pr, 0));
    printf("matmul_probe: %s, cuDNN %zu, cuBLASLt %zu\n", pr.name, cudnnGetVersion(), cublasLtGetVersion());
    if (!CD(cudnnCreate(&g_h)) || !LT(cublasLtCreate(&g_lt)) || !CU(cudaStreamCreate(&g_st)) || !CD(cudnnSetStream(g_h, g_st)))
        return 2;
    cudaEventCreate(&g_ev[0]), cudaEventCreate(&g_ev[1]);
    int64_t mx = 0, my = 0, mw = 0;
    for (int i = 0; i < NSHAPES; i++) {
        const shape *s = &g_shapes[i];
        mx = s->M * s->K > mx ? s->M * s->K : mx, my = s->M * s->N > my ? s->M * s->N : my;
        mw = (int64_t)s->N * s->K > mw ? (int64_t)s->N * s->K : mw;
    }
    if (!CU(cudaMalloc(&d_x, mx * 2)) || !CU(cudaMalloc(&d_y, my * 2)) || !CU(cudaMalloc(&d_w, mw * 2)) ||
        !CU(cudaMalloc(&d_b, 8192 * 2)) || !CU(cudaMalloc(&d_g, 8192 * 4)) || !CU(cudaMalloc(&d_be, 8192 * 4)) ||
        !CU(cudaMalloc(&d_mu, 262144 * 4)) || !CU(cudaMalloc(&d_rs, 262144 * 4)) || !CU(cudaMalloc(&d_ws, WS)) ||
        !CU(cudaMalloc(&d_cmp, 16)) || !CU(cudaMalloc(&d_ref[0], (size_t)REF_ROWS * 3584 * 8)) ||
        !CU(cudaMalloc(&d_ref[1], (size_t)REF_ROWS * 3584 * 8)))
        return 2;
    for (int pi = 0; pi < np; pi++) {
        const shape *s    = &g_shapes[pick[pi]];
        const int    gelu = strstr(s->name, "fc1") != NULL;
        printf("\n== %s: M %lld, N %d, K %d (%s)\n", s->name, (long long)s->M, s->N, s->K, gelu ? "GELU" : "no activation");
        fill<<<1024, 256, 0, g_st>>>(d_x, d_w, d_b, d_g, d_be, s->M, s->N, s->K);
        reference<<<1024, 256, 0, g_st>>>(d_x, d_w, d_b, d_g, d_be, d_ref[0], ref_rows(s), s->N, s->K, 0, gelu);
        reference<<<1024, 256, 0, g_st>>>(d_x, d_w, d_b, d_g, d_be, d_ref[1], ref_rows(s), s->N, s->K, 1, gelu);
        if (!CU(cudaStreamSynchronize(g_st))) return 2;
        run_cublaslt(s, CUBLASLT_EPILOGUE_BIAS, 0, gelu ? "cuBLASLt + b (no GELU: speed only)" : "cuBLASLt + b", 0);
        if (gelu) {
            run_cublaslt(s, CUBLASLT_EPILOGUE_BIAS, 1, "cuBLASLt + b, then the exact-GELU pass", 0);
            run_cublaslt(s, CUBLASLT_EPILOGUE_GELU_BIAS, 0, "cuBLASLt GELU_BIAS epilogue (tanh form)", 0);
        }
        for (const char *g = graphs; *g; g++) {
            if (!strchr("pghlq", *g)) continue;
            if ((*g == 'g' || *g == 'h' || *g == 'l') != gelu && *g != 'p') continue; /* fc1: g h l; qkv: q */
            run_cudnn(s, *g);
        }
    }
    printf("\ndone\n");
    return 0;
}
