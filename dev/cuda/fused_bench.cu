/* fused_bench: the fused refiner convolution (src/ops/cuda/refiner_conv.cu) against cuDNN's convolution, and the
 * encoder GEMM with its epilogue (src/ops/cuda/gemm_sm90.cu, and gemm_narrow.cu where K ≤ 128) against cuBLASLt (+ the separate erf-GELU pass), on
 * the model's shapes, fp16, one process. Standalone; not part of the build; Hopper only.
 *
 *   make -C dev/cuda fused_bench && OUT=. dev/cuda/fused_bench [--runs N]
 *
 * Per problem: median milliseconds over the runs (after 3 warm-up calls), TFLOP/s, and the largest difference
 * from the library path relative to its largest magnitude (both outputs rounded to fp16, so ~1e-3 is rounding).
 * The convolution's figure includes its moments epilogue; cuDNN's does not include the GroupNorm passes the
 * fused kernel replaces (the model's per-op profile, `ckey bench --profile 1`, shows those). Table on stdout,
 * CSV in $OUT/fused_bench.csv. */
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <random>
#include <vector>

#include "ops/cuda/gemm_sm90.h"
#include "ops/cuda/refiner_conv.h"

#include "cuda_check.h"
#define CD(x)                                                                                          \
    do {                                                                                               \
        cudnnStatus_t s_ = (x);                                                                        \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                                              \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudnnGetErrorString(s_));        \
            exit(2);                                                                                   \
        }                                                                                              \
    } while (0)
#define LT(x)                                                                                          \
    do {                                                                                               \
        cublasStatus_t s_ = (x);                                                                       \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                             \
            fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #x, (int)s_);                 \
            exit(2);                                                                                   \
        }                                                                                              \
    } while (0)

static int          g_runs = 10;
static FILE        *g_csv;
static cudaStream_t g_st;

template <typename F> static double time_ms(F &&f) {
    cudaEvent_t a, b;
    CU(cudaEventCreate(&a));
    CU(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) f();
    std::vector<float> t;
    for (int i = 0; i < g_runs; i++) {
        CU(cudaEventRecord(a, g_st));
        f();
        CU(cudaEventRecord(b, g_st));
        CU(cudaEventSynchronize(b));
        float ms = 0;
        CU(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    CU(cudaEventDestroy(a));
    CU(cudaEventDestroy(b));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

static void *dev_rand(size_t n, float scale, float offset, uint32_t seed, std::vector<__half> *keep = nullptr) {
    std::vector<__half>             h(n);
    std::mt19937                    rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (size_t i = 0; i < n; i++) h[i] = __float2half_rn(offset + scale * nd(rng));
    void *d;
    CU(cudaMalloc(&d, n * 2));
    CU(cudaMemcpy(d, h.data(), n * 2, cudaMemcpyHostToDevice));
    if (keep) *keep = std::move(h);
    return d;
}

/* max |a − b| / max |b| over two fp16 device buffers */
static double rel_diff(const void *a, const void *b, size_t n) {
    std::vector<__half> ha(n), hb(n);
    CU(cudaMemcpy(ha.data(), a, n * 2, cudaMemcpyDeviceToHost));
    CU(cudaMemcpy(hb.data(), b, n * 2, cudaMemcpyDeviceToHost));
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        const double x = __half2float(ha[i]), y = __half2float(hb[i]);
        if (!std::isfinite(x)) return INFINITY;
        d = std::max(d, fabs(x - y)), m = std::max(m, fabs(y));
    }
    return m > 0 ? d / m : d;
}

__global__ void add_bias_kernel(__half *y, const float *b, int64_t n, int C) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __float2half_rn(__half2float(y[i]) + b[i % C]);
}
__global__ void gelu_kernel(__half *y, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = __half2float(y[i]);
        y[i]          = __float2half_rn(0.5f * v * (1.0f + erff(v * 0.70710678118654752440f)));
    }
}

/* ---------------------------------------------------------------- convolutions */
static void conv_case(cudnnHandle_t h, int B, int H, int W, int IC, int d, int act, int sms) {
    const size_t nx = (size_t)B * H * W * IC, ny = (size_t)B * H * W * 64, nseg = (W + 127) / 128;
    std::vector<__half> w_oihw;
    void *x = dev_rand(nx, 1.0f, 0.2f, 1), *w = dev_rand((size_t)64 * IC * 9, 1.0f / sqrtf(9.0f * IC), 0.0f, 2, &w_oihw);
    std::vector<__half> w_krsc((size_t)64 * IC * 9); /* cuDNN's NHWC filter: (K, R, S, C) */
    for (int k = 0; k < 64; k++)
        for (int c = 0; c < IC; c++)
            for (int t = 0; t < 9; t++) w_krsc[((size_t)k * 9 + t) * IC + c] = w_oihw[((size_t)k * IC + c) * 9 + t];
    void  *wk, *y0, *y1, *ws = nullptr;
    float *bias, *mom, *stats, *gam, *bet;
    CU(cudaMalloc(&wk, w_krsc.size() * 2));
    CU(cudaMemcpy(wk, w_krsc.data(), w_krsc.size() * 2, cudaMemcpyHostToDevice));
    CU(cudaMalloc(&y0, ny * 2));
    CU(cudaMalloc(&y1, ny * 2));
    CU(cudaMalloc(&bias, 64 * 4));
    CU(cudaMemset(bias, 0, 64 * 4));
    CU(cudaMalloc(&mom, (size_t)B * H * nseg * 16 * 4));
    std::vector<float> hs(B * 16), hg(IC, 1.0f), hb(IC, 0.0f);
    for (int i = 0; i < B * 8; i++) hs[2 * i] = 0.2f, hs[2 * i + 1] = 1.0f;
    CU(cudaMalloc(&stats, hs.size() * 4));
    CU(cudaMemcpy(stats, hs.data(), hs.size() * 4, cudaMemcpyHostToDevice));
    CU(cudaMalloc(&gam, IC * 4));
    CU(cudaMemcpy(gam, hg.data(), IC * 4, cudaMemcpyHostToDevice));
    CU(cudaMalloc(&bet, IC * 4));
    CU(cudaMemcpy(bet, hb.data(), IC * 4, cudaMemcpyHostToDevice));

    ck__rconv_args a;
    memset(&a, 0, sizeof a);
    a.x = x, a.y = y1, a.w = w, a.bias = bias, a.moments = mom, a.B = B, a.H = H, a.W = W, a.row0 = 0, a.h = H;
    a.dilation = d, a.in_channels = IC, a.bf16 = 0, a.sm_count = sms;
    if (act) a.stats = stats, a.gamma = gam, a.beta = bet;
    if (!ck__refiner_conv(&a, g_st)) {
        printf("conv B=%d %dx%d IC=%d d=%d: the fused kernel declined\n", B, H, W, IC, d);
        return;
    }
    const double t_fused = time_ms([&] { ck__refiner_conv(&a, g_st); });

    cudnnTensorDescriptor_t      xd, yd;
    cudnnFilterDescriptor_t      wd;
    cudnnConvolutionDescriptor_t cd;
    CD(cudnnCreateTensorDescriptor(&xd));
    CD(cudnnCreateTensorDescriptor(&yd));
    CD(cudnnCreateFilterDescriptor(&wd));
    CD(cudnnCreateConvolutionDescriptor(&cd));
    CD(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, B, IC, H, W));
    CD(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, B, 64, H, W));
    CD(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, 64, IC, 3, 3));
    CD(cudnnSetConvolution2dDescriptor(cd, d, d, 1, 1, d, d, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CD(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH));
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int                           np = 0;
    CD(cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd, 8, &np, perf));
    int pick = -1;
    for (int i = 0; i < np && pick < 0; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC) pick = i;
    if (pick < 0) pick = 0;
    size_t wsb = 0;
    CD(cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, perf[pick].algo, &wsb));
    if (wsb) CU(cudaMalloc(&ws, wsb));
    const float one = 1.0f, zero = 0.0f;
    const double t_cudnn = time_ms([&] {
        CD(cudnnConvolutionForward(h, &one, xd, x, wd, wk, cd, perf[pick].algo, ws, wsb, &zero, yd, y0));
    });
    double diff = NAN;
    if (!act) { /* the fused output has the (zero) bias; cuDNN has none */
        CU(cudaStreamSynchronize(g_st));
        diff = rel_diff(y1, y0, ny);
    }
    const double tf = 2.0 * B * H * W * 64.0 * IC * 9.0 * 1e-9;
    printf("conv  B=%d %4dx%-4d IC=%-2d d=%d act=%d | fused %7.3f ms %6.0f TF/s | cuDNN (algo %d) %7.3f ms %6.0f TF/s | "
           "diff %.2e\n",
           B, H, W, IC, d, act, t_fused, tf / t_fused, (int)perf[pick].algo, t_cudnn, tf / t_cudnn, diff);
    fprintf(g_csv, "conv,%d,%d,%d,%d,%d,%d,%.4f,%.4f,%.3e\n", B, H, W, IC, d, act, t_fused, t_cudnn, diff);
    cudnnDestroyTensorDescriptor(xd), cudnnDestroyTensorDescriptor(yd), cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
    cudaFree(x), cudaFree(w), cudaFree(wk), cudaFree(y0), cudaFree(y1), cudaFree(bias), cudaFree(mom);
    cudaFree(stats), cudaFree(gam), cudaFree(bet);
    if (ws) cudaFree(ws);
}

/* ---------------------------------------------------------------- GEMMs */
static void gemm_case(cublasLtHandle_t lt, void *ltws, size_t ltwsb, int64_t M, int N, int K, int act, int res) {
    void *x = dev_rand((size_t)M * K, 1.0f, 0.0f, 3), *w = dev_rand((size_t)N * K, 1.0f / sqrtf((float)K), 0.0f, 4);
    void *b16 = dev_rand(N, 0.5f, 0.0f, 5), *r = res ? dev_rand((size_t)M * N, 1.0f, 0.0f, 6) : nullptr;
    void *y0, *y1;
    CU(cudaMalloc(&y0, (size_t)M * N * 2));
    CU(cudaMalloc(&y1, (size_t)M * N * 2));
    ck__gemm_args g;
    memset(&g, 0, sizeof g);
    g.x = x, g.w = w, g.y = y1, g.bias_t = b16, g.res = r, g.M = M, g.N = N, g.K = K, g.act = act, g.bf16 = 0;
    if (!ck__gemm_sm90(&g, g_st)) {
        printf("gemm %lldx%dx%d: the kernel declined\n", (long long)M, N, K);
        return;
    }
    const double t_ours = time_ms([&] { ck__gemm_sm90(&g, g_st); });
    /* the narrow kernel (K ≤ 128: the weight resident) where it runs: its time, and whether its y equals the
     * tiled kernel's bit for bit (both round the same float32 sums once; only the MMAs' order could differ) */
    double t_narrow = 0, narrow_diff = -1;
    if (K <= 128) {
        void *y2;
        CU(cudaMalloc(&y2, (size_t)M * N * 2));
        ck__gemm_args gn = g;
        gn.y             = y2;
        if (ck__gemm_narrow_sm90(&gn, g_st)) {
            t_narrow = time_ms([&] { ck__gemm_narrow_sm90(&gn, g_st); });
            ck__gemm_sm90(&g, g_st);
            CU(cudaStreamSynchronize(g_st));
            narrow_diff = rel_diff(y2, y1, (size_t)M * N);
        }
        cudaFree(y2);
    }

    /* cuBLASLt as linear.cu calls it: yᵀ (N×M) = op_T(w) · xᵀ, bias epilogue, beta = 1 with the residual */
    cublasLtMatmulDesc_t   op;
    cublasLtMatrixLayout_t la, lb, lc;
    LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t tA = CUBLAS_OP_T, tB = CUBLAS_OP_N;
    LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tA, sizeof tA));
    LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tB, sizeof tB));
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b16, sizeof b16));
    const cudaDataType_t bt = CUDA_R_16F;
    LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, K, N, K));
    LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, K, M, K));
    LT(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16F, N, M, N));
    cublasLtMatmulPreference_t pref;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ltwsb, sizeof ltwsb));
    cublasLtMatmulHeuristicResult_t hr;
    int                             nr = 0;
    LT(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &hr, &nr));
    /* with a residual (no activation) beta = 1 on C = D = y0, which holds r for the comparison run */
    const float   one = 1.0f, beta = res ? 1.0f : 0.0f;
    const int64_t n   = M * N;
    auto          lt_call = [&] {
        LT(cublasLtMatmul(lt, op, &one, w, la, x, lb, &beta, y0, lc, y0, lc, &hr.algo, ltws, ltwsb, g_st));
    };
    const double t_lt      = time_ms(lt_call);
    const double t_lt_pass = act == 1 ? time_ms([&] {
        lt_call();
        gelu_kernel<<<1024, 256, 0, g_st>>>((__half *)y0, n);
    })
                                      : t_lt;
    /* one more of each for the comparison, from a clean start */
    if (res) CU(cudaMemcpyAsync(y0, r, (size_t)n * 2, cudaMemcpyDeviceToDevice, g_st));
    lt_call();
    if (act == 1) gelu_kernel<<<1024, 256, 0, g_st>>>((__half *)y0, n);
    CU(cudaStreamSynchronize(g_st));
    const double diff = rel_diff(y1, y0, (size_t)n);
    const double tf   = 2.0 * M * N * K * 1e-9;
    printf("gemm  %7lldx%-4dx%-4d act=%d res=%d | ours %7.3f ms %6.0f TF/s | cuBLASLt %7.3f ms (+GELU pass %7.3f) | "
           "diff %.2e | narrow %7.3f ms (diff to ours %.2e, -1: did not run)\n",
           (long long)M, N, K, act, res, t_ours, tf / t_ours, t_lt, t_lt_pass, diff, t_narrow, narrow_diff);
    fprintf(g_csv, "gemm,%lld,%d,%d,%d,%d,%.4f,%.4f,%.4f,%.3e\n", (long long)M, N, K, act, res, t_ours, t_lt, t_lt_pass,
            diff);
    if (K <= 128)
        fprintf(g_csv, "gemm_narrow,%lld,%d,%d,%d,%d,%.4f,%.4f,%.4f,%.3e\n", (long long)M, N, K, act, res, t_narrow,
                t_lt, t_lt_pass, narrow_diff);
    cublasLtMatmulPreferenceDestroy(pref), cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc), cublasLtMatmulDescDestroy(op);
    cudaFree(x), cudaFree(w), cudaFree(b16), cudaFree(y0), cudaFree(y1);
    if (r) cudaFree(r);
}

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--runs")) g_runs = atoi(argv[i + 1]);
    const char *out = getenv("OUT");
    char        path[1024];
    snprintf(path, sizeof path, "%s/fused_bench.csv", out ? out : ".");
    g_csv = fopen(path, "w");
    if (!g_csv) g_csv = stdout;
    fprintf(g_csv, "kind,a,b,c,d,e,f,ours_ms,lib_ms,lib_plus_pass_ms_or_diff,diff\n");
    cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs, runs %d\n", prop.name, prop.multiProcessorCount, g_runs);
    CU(cudaStreamCreate(&g_st));
    cudnnHandle_t h;
    CD(cudnnCreate(&h));
    CD(cudnnSetStream(h, g_st));
    for (int d : {1, 2, 4, 8}) conv_case(h, 1, 2048, 2048, 64, d, 0, prop.multiProcessorCount);
    conv_case(h, 1, 2048, 2048, 64, 2, 1, prop.multiProcessorCount);
    conv_case(h, 1, 2048, 2048, 8, 1, 0, prop.multiProcessorCount);
    for (int d : {1, 8}) conv_case(h, 8, 512, 512, 64, d, 0, prop.multiProcessorCount);
    conv_case(h, 8, 512, 512, 8, 1, 0, prop.multiProcessorCount);
    cublasLtHandle_t lt;
    LT(cublasLtCreate(&lt));
    void        *ltws;
    const size_t ltwsb = (size_t)32 << 20;
    CU(cudaMalloc(&ltws, ltwsb));
    /* Hiera-B+ at S = 2048 (tokens 262144 / 65536 / 16384 / 4096): qkv, fc1 (GELU), fc2 (+ residual) per stage */
    const int64_t toks[4] = {262144, 65536, 16384, 4096};
    const int     dims[4] = {112, 224, 448, 896};
    for (int s = 0; s < 4; s++) {
        gemm_case(lt, ltws, ltwsb, toks[s], 3 * dims[s], dims[s], 0, 0);
        gemm_case(lt, ltws, ltwsb, toks[s], 4 * dims[s], dims[s], 1, 0);
        gemm_case(lt, ltws, ltwsb, toks[s], dims[s], 4 * dims[s], 0, 1);
    }
    gemm_case(lt, ltws, ltwsb, toks[0], dims[0], dims[0], 0, 1); /* stage 0's proj (+ residual) */
    gemm_case(lt, ltws, ltwsb, 8 * 16384, 448, 112, 1, 0);     /* 8 × 512²: stage 0's fc1 */
    gemm_case(lt, ltws, ltwsb, 8 * 16384, 336, 112, 0, 0);     /* and its qkv */
    if (g_csv != stdout) fclose(g_csv);
    return 0;
}
