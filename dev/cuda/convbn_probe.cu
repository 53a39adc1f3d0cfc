/* convbn_probe: does cuDNN's graph (backend) API run the "ConvBNfprop" fusion on this GPU, how fast, how exact,
 * how deterministic?  Standalone; not part of the build.  make -C dev/cuda convbn_probe
 *
 * Graphs (all NHWC fp16 in/out, compute float, intermediates virtual float):
 *   (a) conv         : Y = conv(X, W)
 *   (b) conv+stats   : Y = conv(X, W); SUM, SQSUM = genstats(Y)                (partial ConvBNfprop)
 *   (c) full         : Y = conv(relu(X*s1 + b1), W); SUM, SQSUM = genstats(Y)  (full ConvBNfprop)
 *   (d) conv+bias    : Y = conv(X, W) + b   (b (1, K, 1, 1): fp16, or float32 with --sb-float)
 * plus the legacy cudnnConvolutionBiasActivationForward (IMPLICIT_PRECOMP_GEMM, identity, fp16 bias = 0).
 * For every graph: op-graph finalize, heuristics (mode A, then FALLBACK), and per engine config: engine
 * index, notes, knobs, plan finalize, workspace, median time, error against an fp32 direct-conv reference,
 * GenStats error against double sums of that reference, bitwise determinism over 3 runs.
 *
 * Usage: convbn_probe [--max-cfg N] [--graphs abcdl] [--sb-float] [--sb-per-sample] [problem index ...]
 *   (no index: all problems). --sb-float: graph (c)'s scale and bias as float32 tensors (fp16 otherwise);
 *   --sb-per-sample: as (N, C, 1, 1) tensors, one row per image (GroupNorm's coefficients differ per image; the
 *   values are repeated, so the references hold). Problems 10-13 are the first and last bands of the banded
 *   refiner with the image border's padding on one side only (the graph API's pre/post paddings).
 * Every cuDNN failure is printed with cudnnGetErrorString and cudnnGetLastErrorString; a failing config or
 * graph is skipped. Only a lost CUDA context (sticky kernel error) stops the program. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudnn_graph.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* ---------------------------------------------------------------- data (hash-based, host == device) */
__host__ __device__ static inline float xval(uint64_t i) { /* fp16-rounded x, uniform [-1, 1] */
    return __half2float(__float2half(2.0f * uhash(1, i) - 1.0f));
}

typedef struct prob {
    const char *name;
    int n, c, hi, wi, k, dil, ph0, ph1, pw, ho, wo;
} prob;

enum { C = 64, K = 64, R = 3, S = 3 };

__global__ void init_x(__half *x, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = __float2half(xval(i));
}

/* y[n,ho,wo,k] = sum_{r,s,c} t(x[n, ho-ph0+r*d, wo-pw+s*d, c]) * w[k,r,s,c]; out-of-range taps contribute 0
 * (zero padding in the transformed domain). t = relu(x*s+b) when pro, else identity. wt: [(r*S+s)*C+c][k]. */
__global__ void ref_conv(const __half *x, const float *wt, const float *sc, const float *bi, float *y, prob p, int pro) {
    size_t total = (size_t)p.n * p.ho * p.wo * K;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total; idx += (size_t)gridDim.x * blockDim.x) {
        int    k = (int)(idx % K);
        size_t pix = idx / K;
        int    ow = (int)(pix % p.wo), oh = (int)((pix / p.wo) % p.ho), n = (int)(pix / ((size_t)p.wo * p.ho));
        float  acc = 0.0f;
        for (int r = 0; r < R; r++) {
            int ih = oh - p.ph0 + r * p.dil;
            if (ih < 0 || ih >= p.hi) continue;
            for (int s = 0; s < S; s++) {
                int iw = ow - p.pw + s * p.dil;
                if (iw < 0 || iw >= p.wi) continue;
                const __half *xp = x + (((size_t)n * p.hi + ih) * p.wi + iw) * C;
                const float  *wp = wt + (size_t)(r * S + s) * C * K + k;
                for (int c = 0; c < C; c++) {
                    float v = __half2float(xp[c]);
                    if (pro) v = fmaxf(fmaf(v, sc[c], bi[c]), 0.0f);
                    acc = fmaf(v, wp[(size_t)c * K], acc);
                }
            }
        }
        y[idx] = acc;
    }
}

/* per-channel sum, sum of squares, sum of |y| in double; blockDim = 256 = 4 x K; st: [3][K], zeroed */
template <typename T> __global__ void chan_stats(const T *y, size_t npix, double *st) {
    __shared__ double sh[3][256];
    int    k = threadIdx.x % K;
    double a = 0, b = 0, c = 0;
    for (size_t p = blockIdx.x * 4 + threadIdx.x / K; p < npix; p += (size_t)gridDim.x * 4) {
        double v = (double)(float)y[p * K + k];
        a += v, b += v * v, c += fabs(v);
    }
    sh[0][threadIdx.x] = a, sh[1][threadIdx.x] = b, sh[2][threadIdx.x] = c;
    __syncthreads();
    if (threadIdx.x < K)
        for (int j = 0; j < 3; j++)
            atomicAdd(&st[j * K + k], sh[j][k] + sh[j][k + 64] + sh[j][k + 128] + sh[j][k + 192]);
}

/* out[0] = max |y-ref| bits, out[1] = max |y-ref|/|ref| over |ref| >= 0.1, out[2] = non-finite y count */
__global__ void cmp_y(const __half *y, const float *ref, size_t n, unsigned *out) {
    float ma = 0, mr = 0;
    unsigned bad = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float v = __half2float(y[i]), r = ref[i];
        if (!isfinite(v)) { bad++; continue; }
        float d = fabsf(v - r);
        ma = fmaxf(ma, d);
        if (fabsf(r) >= 0.1f) mr = fmaxf(mr, d / fabsf(r));
    }
    atomicMax(&out[0], __float_as_uint(ma));
    atomicMax(&out[1], __float_as_uint(mr));
    if (bad) atomicAdd(&out[2], bad);
}

__global__ void cmp_bytes(const uint4 *a, const uint4 *b, size_t n, unsigned long long *diff) {
    unsigned long long d = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 u = a[i], v = b[i];
        d += (u.x != v.x || u.y != v.y || u.z != v.z || u.w != v.w);
    }
    if (d) atomicAdd(diff, d);
}

/* ---------------------------------------------------------------- global state */
static cudnnHandle_t g_h;
static cudaStream_t  g_st;
static cudaEvent_t   g_ev[2];
static __half *d_x, *d_w, *d_s, *d_b, *d_y, *d_ysave, *d_zero;
static float  *d_zero32;
static float  *d_wt, *d_sc, *d_bi, *d_ref[2], *d_sum, *d_sq; /* d_ref[0]: plain conv, [1]: with prologue */
static double *d_st, h_refst[2][3 * K];                         /* reference stats, [plain|pro][sum|sq|abs][k] */
static unsigned *d_cmp;
static unsigned long long *d_diff;
static float h_w[K * R * S * C], h_s[C], h_b[C]; /* fp16-rounded values as float, w in KRSC */
static int   g_maxcfg = 8;
static int   g_sb_float, g_sb_per_sample; /* graph (c)'s scale/bias: float32; one row per image */
static void *d_sbv[2][2];                 /* [float?][scale, bias]: N_MAX rows of C values each */
enum { N_MAX = 8 };

static size_t ysize(const prob *p) { return (size_t)p->n * p->ho * p->wo * K; }

static int stats_of(const void *y, int half, size_t npix, double *h_out) {
    if (!CU(cudaMemsetAsync(d_st, 0, 3 * K * sizeof(double), g_st))) return 0;
    if (half) chan_stats<__half><<<2048, 256, 0, g_st>>>((const __half *)y, npix, d_st);
    else chan_stats<float><<<2048, 256, 0, g_st>>>((const float *)y, npix, d_st);
    return CU(cudaGetLastError()) && CU(cudaMemcpyAsync(h_out, d_st, 3 * K * sizeof(double), cudaMemcpyDeviceToHost, g_st)) &&
           CU(cudaStreamSynchronize(g_st));
}

/* ---------------------------------------------------------------- backend descriptor helpers */
static bd_t tensor(int64_t uid, cudnnDataType_t dt, int64_t n, int64_t c, int64_t h, int64_t w, bool virt) {
    int64_t dim[4] = {n, c, h, w}, str[4] = {c * h * w, 1, w * c, c}, al = 16; /* NHWC strides, NCHW dim order */
    bd_t    d = mk(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    if (d && SET(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt) &&
        SET(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim) &&
        SET(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str) &&
        SET(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) &&
        SET(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &al) &&
        SET(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt) && FIN(d))
        return d;
    return NULL;
}

enum { U_X = 1, U_W, U_Y, U_S, U_B, U_SUM, U_SQ };

/* graph 0 (a), 1 (b), 2 (c); returns the finalized operation graph or NULL */
static bd_t build_graph(const prob *p, int g, cudnnDataType_t gs_prec) {
    const cudnnDataType_t H = CUDNN_DATA_HALF, F = CUDNN_DATA_FLOAT;
    bd_t x = tensor(U_X, H, p->n, C, p->hi, p->wi, false), w = tensor(U_W, H, K, C, R, S, false);
    bd_t y = tensor(U_Y, H, p->n, K, p->ho, p->wo, false), ops[6];
    int  nops = 0;
    if (!x || !w || !y) return NULL;
    bd_t cin = x, cy = y;
    if (g == 3) { /* conv into a virtual float tensor, + bias (1, K, 1, 1) (float32 with --sb-float), into Y */
        cy = tensor(104, F, p->n, K, p->ho, p->wo, true);
        if (!cy) return NULL;
    }
    if (g == 2) {
        const cudnnDataType_t sbt = g_sb_float ? F : H;
        const int64_t         sbn = g_sb_per_sample ? p->n : 1;
        bd_t s = tensor(U_S, sbt, sbn, C, 1, 1, false), b = tensor(U_B, sbt, sbn, C, 1, 1, false);
        bd_t v1 = tensor(101, F, p->n, C, p->hi, p->wi, true), v2 = tensor(102, F, p->n, C, p->hi, p->wi, true);
        bd_t v3 = tensor(103, F, p->n, C, p->hi, p->wi, true);
        if (!s || !b || !v1 || !v2 || !v3) return NULL;
        if (!(ops[nops++] = pw_op(CUDNN_POINTWISE_MUL, x, s, v1))) return NULL;
        if (!(ops[nops++] = pw_op(CUDNN_POINTWISE_ADD, v1, b, v2))) return NULL;
        if (!(ops[nops++] = pw_op(CUDNN_POINTWISE_RELU_FWD, v2, NULL, v3))) return NULL;
        cin = v3;
    }
    cudnnDataType_t        ct = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t cm = CUDNN_CROSS_CORRELATION;
    int64_t nsd = 2, pre[2] = {p->ph0, p->pw}, post[2] = {p->ph1, p->pw}, dil[2] = {p->dil, p->dil}, str[2] = {1, 1};
    float   alpha = 1.0f, beta = 0.0f;
    bd_t    cd = mk(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR), cop;
    if (!cd || !SET(cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct) ||
        !SET(cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &cm) ||
        !SET(cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsd) ||
        !SET(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pre) ||
        !SET(cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, post) ||
        !SET(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil) ||
        !SET(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str) || !FIN(cd))
        return NULL;
    if (!(cop = mk(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR)) ||
        !SET(cop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cin) ||
        !SET(cop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w) ||
        !SET(cop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cy) ||
        !SET(cop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd) ||
        !SET(cop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha) ||
        !SET(cop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta) || !FIN(cop))
        return NULL;
    ops[nops++] = cop;
    if (g == 3) {
        bd_t b = tensor(U_B, g_sb_float ? F : H, 1, K, 1, 1, false);
        if (!b || !(ops[nops++] = pw_op(CUDNN_POINTWISE_ADD, cy, b, y))) return NULL;
    }
    if (g == 1 || g == 2) {
        cudnnGenStatsMode_t gm = CUDNN_GENSTATS_SUM_SQSUM;
        bd_t sum = tensor(U_SUM, F, 1, K, 1, 1, false), sq = tensor(U_SQ, F, 1, K, 1, 1, false);
        bd_t gop = mk(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR);
        if (!sum || !sq || !gop || !SET(gop, CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_TYPE_GENSTATS_MODE, 1, &gm) ||
            !SET(gop, CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &gs_prec) ||
            !SET(gop, CUDNN_ATTR_OPERATION_GENSTATS_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y) ||
            !SET(gop, CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &sum) ||
            !SET(gop, CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &sq) || !FIN(gop))
            return NULL;
        ops[nops++] = gop;
    }
    bd_t og = mk(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    if (!og || !SET(og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops)) return NULL;
    if (!SET(og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &g_h)) /* deprecated since 9.8 */
        printf("      (the op graph's HANDLE attribute was refused; going on without it)\n");
    return FIN(og) ? og : NULL;
}

/* heuristics of mode m: total count, up to max configs in cfg[] (filled count in *got) */
static int64_t heur(bd_t og, cudnnBackendHeurMode_t m, bd_t *cfg, int max, int *got) {
    int64_t n = -1, g = 0;
    bd_t    h = mk(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    *got = 0;
    if (!h || !SET(h, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og) ||
        !SET(h, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &m) || !FIN(h) ||
        !GET(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL))
        return -1;
    int want = (int)(n < max ? n : max);
    for (int i = 0; i < want; i++)
        if (!(cfg[i] = mk(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR))) return n;
    if (want > 0 && GET(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, want, &g, cfg))
        *got = (int)(g < want ? g : want);
    return n;
}

static const char *num_names[] = {"TENSOR_CORE", "DOWN_CONVERT_INPUTS", "REDUCED_PRECISION_REDUCTION", "FFT",
                                  "NONDETERMINISTIC", "WINOGRAD", "WINOGRAD_TILE_4x4", "WINOGRAD_TILE_6x6",
                                  "WINOGRAD_TILE_13x13", "STRICT_NAN_PROP"};
static const char *beh_names[] = {"RUNTIME_COMPILATION", "REQUIRES_FILTER_INT8x32_REORDER",
                                  "REQUIRES_BIAS_INT8x32_REORDER", "SUPPORTS_CUDA_GRAPH_NATIVE_API",
                                  "CUBLASLT_DEPENDENCY"};

/* engine index (-1 on failure), notes and knobs printed into buf; *nondet = NONDETERMINISTIC note */
static int64_t cfg_info(bd_t cfg, char *buf, size_t len, int *nondet) {
    int64_t idx = -1, n = 0;
    size_t  o = 0;
    int     mark = g_npool; /* the engine and knob descriptors are released on return */
    bd_t    e = mk(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    *nondet = 0;
    buf[0] = 0;
    if (!e || !GET(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e)) {
        pool_release(mark);
        return -1;
    }
    GET(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &idx);
    cudnnBackendNumericalNote_t nn[32];
    cudnnBackendBehaviorNote_t  bn[32];
    o += snprintf(buf + o, len - o, "numerical {");
    if (GET(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, nn))
        for (int i = 0; i < n && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT && o < len; i++) {
            int v = (int)nn[i];
            if (v == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) *nondet = 1;
            o += v >= 0 && v < 10 ? snprintf(buf + o, len - o, "%s%s", i ? "," : "", num_names[v])
                                  : snprintf(buf + o, len - o, "%s#%d", i ? "," : "", v);
        }
    if (o < len) o += snprintf(buf + o, len - o, "} behavior {");
    if (GET(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, bn))
        for (int i = 0; i < n && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT && o < len; i++) {
            int v = (int)bn[i];
            o += v >= 0 && v < 5 ? snprintf(buf + o, len - o, "%s%s", i ? "," : "", beh_names[v])
                                 : snprintf(buf + o, len - o, "%s#%d", i ? "," : "", v);
        }
    if (o < len) o += snprintf(buf + o, len - o, "} knobs {");
    bd_t kc[32];
    int  nk = 0;
    while (nk < 32 && (kc[nk] = mk(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR)) != NULL) nk++;
    if (nk == 32 && GET(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, 32, &n, kc))
        for (int i = 0; i < n && i < 32 && o < len; i++) {
            cudnnBackendKnobType_t t;
            int64_t                v = 0, m;
            if (GET(kc[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &m, &t) &&
                GET(kc[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &m, &v))
                o += snprintf(buf + o, len - o, "%s%d=%lld", i ? "," : "", (int)t, (long long)v);
        }
    if (o < len) snprintf(buf + o, len - o, "}");
    pool_release(mark);
    return idx;
}

/* ---------------------------------------------------------------- running, timing, determinism */
typedef struct runner {
    int           legacy, stats; /* legacy: 1 conv + bias, 2 plain conv with `algo` */
    cudnnConvolutionFwdAlgo_t algo;
    bd_t          plan, vp; /* graph */
    cudnnTensorDescriptor_t xd, yd, bd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cvd;
    cudnnActivationDescriptor_t  ad;
    void  *ws;
    size_t wsb;
} runner;

static int exec1(runner *r) {
    if (r->stats && !CU(cudaMemsetAsync(d_sum, 0, 2 * K * sizeof(float), g_st))) return 0; /* d_sq follows d_sum */
    cudnnStatus_t s;
    if (r->legacy == 2) { /* plain cudnnConvolutionForward, no bias */
        const float one = 1.0f, zero = 0.0f;
        s = cudnnConvolutionForward(g_h, &one, r->xd, d_x, r->wd, d_w, r->cvd, r->algo, r->ws, r->wsb, &zero, r->yd, d_y);
    } else if (r->legacy) {
        const float one = 1.0f, zero = 0.0f;
        s = cudnnConvolutionBiasActivationForward(g_h, &one, r->xd, d_x, r->wd, d_w, r->cvd,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, r->ws, r->wsb, &zero,
                                                  r->yd, d_y, r->bd, d_zero, r->ad, r->yd, d_y);
    } else
        s = cudnnBackendExecute(g_h, r->plan, r->vp);
    return CD(s) && CU(cudaGetLastError());
}

static int cmp_desc(const void *a, const void *b) { float x = *(const float *)a, y = *(const float *)b; return (x > y) - (x < y); }

static void time_it(runner *r) {
    float t[10], ms = 0;
    int   nt = 10;
    for (int i = 0; i < 2; i++) {
        if (!CU(cudaEventRecord(g_ev[0], g_st)) || !exec1(r) || !CU(cudaEventRecord(g_ev[1], g_st)) ||
            !CU(cudaEventSynchronize(g_ev[1])) || !CU(cudaEventElapsedTime(&ms, g_ev[0], g_ev[1])))
            return;
    }
    if (ms > 250.0f) nt = 3; /* slow engine: fewer timed runs */
    for (int i = 0; i < nt; i++) {
        if (r->stats && !CU(cudaMemsetAsync(d_sum, 0, 2 * K * sizeof(float), g_st))) return;
        int st = r->stats;
        r->stats = 0; /* memset outside the timed range */
        int ok = CU(cudaEventRecord(g_ev[0], g_st)) && exec1(r) && CU(cudaEventRecord(g_ev[1], g_st)) &&
                 CU(cudaEventSynchronize(g_ev[1])) && CU(cudaEventElapsedTime(&t[i], g_ev[0], g_ev[1]));
        r->stats = st;
        if (!ok) return;
    }
    qsort(t, nt, sizeof t[0], cmp_desc);
    printf("      time: median %.3f ms of %d runs (min %.3f, max %.3f) after 2 warm-ups\n", t[nt / 2], nt, t[0], t[nt - 1]);
}

/* Y (and SUM/SQSUM) bitwise over 3 runs; Y is filled with 0xFF (fp16 NaN) before each run */
static void determinism(runner *r, const prob *p) {
    size_t yb = ysize(p) * sizeof(__half);
    float  s0[2 * K], s1[2 * K];
    unsigned long long ydiff = 0, h;
    int    sdiff = 0;
    for (int i = 0; i < 3; i++) {
        if (!CU(cudaMemsetAsync(d_y, 0xFF, yb, g_st)) || !exec1(r) ||
            (r->stats && !CU(cudaMemcpyAsync(i ? s1 : s0, d_sum, sizeof s0, cudaMemcpyDeviceToHost, g_st))) ||
            !CU(cudaStreamSynchronize(g_st)))
            return;
        if (i == 0) {
            if (!CU(cudaMemcpyAsync(d_ysave, d_y, yb, cudaMemcpyDeviceToDevice, g_st))) return;
            continue;
        }
        if (!CU(cudaMemsetAsync(d_diff, 0, sizeof *d_diff, g_st))) return;
        cmp_bytes<<<2048, 256, 0, g_st>>>((const uint4 *)d_y, (const uint4 *)d_ysave, yb / 16, d_diff);
        if (!CU(cudaGetLastError()) || !CU(cudaMemcpyAsync(&h, d_diff, sizeof h, cudaMemcpyDeviceToHost, g_st)) ||
            !CU(cudaStreamSynchronize(g_st)))
            return;
        ydiff += h;
        if (r->stats && memcmp(s0, s1, sizeof s0)) sdiff = 1;
    }
    printf("      determinism (3 runs): Y %s", ydiff ? "DIFFER" : "IDENTICAL");
    if (ydiff) printf(" (%llu differing 16-byte words over runs 2-3)", ydiff);
    if (r->stats) printf(", SUM/SQSUM %s", sdiff ? "DIFFER" : "IDENTICAL");
    printf("\n");
}

/* host reference of output pixel (n, oh, ow), all k, in double; raw = pad the raw x (pads become relu(b)) */
static void host_pixel(const prob *p, int n, int oh, int ow, int raw, double *out) {
    for (int k = 0; k < K; k++) {
        double acc = 0;
        for (int r = 0; r < R; r++)
            for (int s = 0; s < S; s++) {
                int ih = oh - p->ph0 + r * p->dil, iw = ow - p->pw + s * p->dil;
                int in = ih >= 0 && ih < p->hi && iw >= 0 && iw < p->wi;
                if (!in && !raw) continue;
                for (int c = 0; c < C; c++) {
                    double v = in ? xval((((size_t)n * p->hi + ih) * p->wi + iw) * C + c) : 0.0;
                    v = fmax(v * h_s[c] + h_b[c], 0.0);
                    acc += v * h_w[((k * R + r) * S + s) * C + c];
                }
            }
        out[k] = acc;
    }
}

static void border_check(const prob *p) {
    int    px[2][3] = {{0, 0, 0}, {p->n - 1, p->ho - 1, p->wo - 1}};
    double dT = 0, dR = 0, t[K], rr[K];
    __half y[K];
    for (int i = 0; i < 2; i++) {
        size_t off = (((size_t)px[i][0] * p->ho + px[i][1]) * p->wo + px[i][2]) * K;
        if (!CU(cudaMemcpy(y, d_y + off, sizeof y, cudaMemcpyDeviceToHost))) return;
        host_pixel(p, px[i][0], px[i][1], px[i][2], 0, t);
        host_pixel(p, px[i][0], px[i][1], px[i][2], 1, rr);
        for (int k = 0; k < K; k++) {
            double v = __half2float(y[k]);
            dT = fmax(dT, fabs(v - t[k])), dR = fmax(dR, fabs(v - rr[k]));
        }
    }
    printf("      border pixels (first, last): max|Y - ref| with pads = 0 AFTER the prologue: %.3e; pads = raw x = 0 "
           "(contributing relu(b1)): %.3e -> %s\n", dT, dR,
           fmin(dT, dR) > 0.05 ? "NEITHER semantics matches"
           : dT <= dR          ? "padding is applied AFTER the prologue (zero in the transformed domain)"
                               : "padding is applied to the RAW input (pads contribute relu(b1))");
}

/* one execution checked against the reference (which: 0 plain, 1 prologue) */
static void check_run(runner *r, const prob *p, int which) {
    size_t   ny = ysize(p);
    unsigned h[3] = {0, 0, 0};
    if (!CU(cudaMemsetAsync(d_y, 0xFF, ny * sizeof(__half), g_st)) || !exec1(r) || !CU(cudaStreamSynchronize(g_st)))
        return;
    if (!CU(cudaMemsetAsync(d_cmp, 0, sizeof h, g_st))) return;
    cmp_y<<<2048, 256, 0, g_st>>>(d_y, d_ref[which], ny, d_cmp);
    if (!CU(cudaGetLastError()) || !CU(cudaMemcpy(h, d_cmp, sizeof h, cudaMemcpyDeviceToHost))) return;
    float ma, mr;
    memcpy(&ma, &h[0], 4), memcpy(&mr, &h[1], 4);
    printf("      Y vs fp32 reference%s: max abs diff %.3e, max rel diff %.3e (over |ref| >= 0.1), non-finite %u of %zu\n",
           which ? " (relu(x*s1+b1) prologue)" : "", ma, mr, h[2], ny);
    if (!r->stats) return;
    float  st[2 * K], st2[2 * K];
    double own[3 * K], *ref = h_refst[which], es = 0, esa = 0, eq = 0, os = 0, oq = 0;
    if (!CU(cudaMemcpy(st, d_sum, sizeof st, cudaMemcpyDeviceToHost)) || !stats_of(d_y, 1, ny / K, own)) return;
    for (int k = 0; k < K; k++) {
        es = fmax(es, fabs(st[k] - ref[k]) / fmax(fabs(ref[k]), 1e-30));
        esa = fmax(esa, fabs(st[k] - ref[k]) / fmax(ref[2 * K + k], 1e-30));
        eq = fmax(eq, fabs(st[K + k] - ref[K + k]) / fmax(ref[K + k], 1e-30));
        os = fmax(os, fabs(st[k] - own[k]) / fmax(own[2 * K + k], 1e-30));
        oq = fmax(oq, fabs(st[K + k] - own[K + k]) / fmax(own[K + k], 1e-30));
    }
    printf("      GenStats vs double stats of the reference: SUM max rel %.3e (|d|/|sum|), %.3e (|d|/sum|y|); SQSUM max rel %.3e\n"
           "      GenStats vs double stats of cuDNN's own fp16 Y: SUM %.3e (|d|/sum|y|), SQSUM %.3e\n", es, esa, eq, os, oq);
    /* a second run without zeroing: does GenStats accumulate into SUM/SQSUM? */
    r->stats = 0;
    int ok = exec1(r) && CU(cudaMemcpy(st2, d_sum, sizeof st2, cudaMemcpyDeviceToHost));
    r->stats = 1;
    if (ok && !(st[K] > 0.0f)) printf("      GenStats: SQSUM[0] = %g after a run (nothing written?)\n", st[K]);
    else if (ok)
        printf("      GenStats without re-zeroing: SQSUM[0] ratio run2/run1 = %.4f -> %s\n", st2[K] / st[K],
               fabs(st2[K] / st[K] - 2.0) < 0.01 ? "ACCUMULATES (caller must zero SUM/SQSUM)" : "overwrites");
}

static void run_graph(const prob *p, int g) {
    static const char *gname[] = {"(a) conv", "(b) conv -> genstats [partial ConvBNfprop]",
                                  "(c) scale,bias,relu -> conv -> genstats [full ConvBNfprop]", "(d) conv -> + bias"};
    for (int attempt = 0; attempt < (g == 1 || g == 2 ? 2 : 1); attempt++) {
        cudnnDataType_t gp = attempt ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
        int             mark = g_npool, ran = 0;
        printf("  graph %s%s\n", gname[g], g == 1 || g == 2 ? (attempt ? " [GenStats MATH_PREC HALF]" : " [GenStats MATH_PREC FLOAT]") : "");
        bd_t og = build_graph(p, g, gp);
        if (!og) {
            printf("    operation graph: NOT finalized (see the failure above)\n");
            pool_release(mark);
            continue;
        }
        int64_t ec = -1, m;
        GET(og, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, &m, &ec);
        printf("    operation graph: finalized; engines that support it (ENGINE_GLOBAL_COUNT): %lld\n", (long long)ec);
        bd_t cfg[2][32];
        int  got[2];
        int64_t na = heur(og, CUDNN_HEUR_MODE_A, cfg[0], g_maxcfg, &got[0]);
        int64_t nf = heur(og, CUDNN_HEUR_MODE_FALLBACK, cfg[1], g_maxcfg, &got[1]);
        printf("    heuristics: mode A %lld configs, mode FALLBACK %lld configs (-1 = query failed); testing up to %d of each\n",
               (long long)na, (long long)nf, g_maxcfg);
        char    seen[64][400];
        int     nseen = 0;
        for (int hm = 0; hm < 2; hm++)
            for (int i = 0; i < got[hm]; i++) {
                char    info[360];
                int     nondet;
                int64_t idx = cfg_info(cfg[hm][i], info, sizeof info, &nondet), wsb = -1;
                char    key[400];
                snprintf(key, sizeof key, "%lld %s", (long long)idx, info);
                int dup = 0;
                for (int j = 0; j < nseen; j++) dup |= !strcmp(seen[j], key);
                printf("    cfg %s#%d: engine %lld %s%s\n", hm ? "FALLBACK" : "A", i, (long long)idx, info,
                       dup ? " (same as a config above: skipped)" : "");
                if (dup) continue;
                if (nseen < 64) strcpy(seen[nseen++], key);
                int    pm = g_npool;
                double t0 = now_ms();
                bd_t   plan = mk(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
                if (plan && !SET(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &g_h))
                    printf("      (the plan's HANDLE attribute was refused; going on without it)\n");
                int ok = plan && SET(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[hm][i]) &&
                         FIN(plan);
                if (!ok) { printf("      plan: NOT finalized\n"); pool_release(pm); continue; }
                GET(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &m, &wsb);
                printf("      plan: finalized in %.1f ms, workspace %lld bytes\n", now_ms() - t0, (long long)wsb);
                runner r;
                memset(&r, 0, sizeof r);
                r.stats = g == 1 || g == 2;
                r.plan = plan;
                if (wsb > ((int64_t)16 << 30)) { printf("      workspace too large: skipped\n"); pool_release(pm); continue; }
                if (wsb > 0 && !CU(cudaMalloc(&r.ws, (size_t)wsb))) { pool_release(pm); continue; }
                int64_t uids[7] = {U_X, U_W, U_Y, U_SUM, U_SQ, U_S, U_B};
                void   *ptrs[7] = {d_x, d_w, d_y, d_sum, d_sq, d_sbv[g_sb_float][0], d_sbv[g_sb_float][1]};
                int64_t nu = g == 0 ? 3 : g == 1 ? 5 : 7;
                if (g == 3) { /* the bias: zeros, so the plain reference holds */
                    uids[3] = U_B, ptrs[3] = g_sb_float ? (void *)d_zero32 : (void *)d_zero, nu = 4;
                }
                r.vp = mk(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
                if (r.vp && SET(r.vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, nu, uids) &&
                    SET(r.vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, nu, ptrs) &&
                    SET(r.vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &r.ws) && FIN(r.vp)) {
                    if (exec1(&r) && CU(cudaStreamSynchronize(g_st))) {
                        ran++;
                        check_run(&r, p, g == 2);
                        if (g == 2) border_check(p);
                        time_it(&r);
                        determinism(&r, p);
                        if (nondet) printf("      (engine carries the NONDETERMINISTIC note)\n");
                    } else
                        printf("      execute: FAILED\n");
                }
                if (r.ws) cudaFree(r.ws);
                pool_release(pm);
            }
        printf("    => graph %s: %d config(s) executed\n", gname[g], ran);
        pool_release(mark);
        if (ran) break;
        if (g && !attempt) printf("    nothing ran: retrying with GenStats MATH_PREC HALF\n");
    }
}

static void run_legacy(const prob *p) {
    printf("  legacy cudnnConvolutionBiasActivationForward (IMPLICIT_PRECOMP_GEMM, tensor-op math, identity, fp16 bias = 0)\n");
    if (p->ph0 != p->ph1) { printf("    asymmetric H padding: the legacy API cannot express it; skipped\n"); return; }
    runner r;
    memset(&r, 0, sizeof r);
    r.legacy = 1;
    int on, oc, oh, ow;
    if (!CD(cudnnCreateTensorDescriptor(&r.xd)) || !CD(cudnnCreateTensorDescriptor(&r.yd)) ||
        !CD(cudnnCreateTensorDescriptor(&r.bd)) || !CD(cudnnCreateFilterDescriptor(&r.wd)) ||
        !CD(cudnnCreateConvolutionDescriptor(&r.cvd)) || !CD(cudnnCreateActivationDescriptor(&r.ad)) ||
        !CD(cudnnSetTensor4dDescriptor(r.xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, p->n, C, p->hi, p->wi)) ||
        !CD(cudnnSetTensor4dDescriptor(r.yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, p->n, K, p->ho, p->wo)) ||
        !CD(cudnnSetTensor4dDescriptor(r.bd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, K, 1, 1)) ||
        !CD(cudnnSetFilter4dDescriptor(r.wd, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, K, C, R, S)) ||
        !CD(cudnnSetConvolution2dDescriptor(r.cvd, p->ph0, p->pw, 1, 1, p->dil, p->dil, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT)) ||
        !CD(cudnnSetConvolutionMathType(r.cvd, CUDNN_TENSOR_OP_MATH)) ||
        !CD(cudnnSetActivationDescriptor(r.ad, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0)) ||
        !CD(cudnnGetConvolution2dForwardOutputDim(r.cvd, r.xd, r.wd, &on, &oc, &oh, &ow)))
        goto done;
    if (on != p->n || oc != K || oh != p->ho || ow != p->wo) { printf("    output dims differ: skipped\n"); goto done; }
    if (!CD(cudnnGetConvolutionForwardWorkspaceSize(g_h, r.xd, r.wd, r.cvd, r.yd,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &r.wsb)))
        goto done;
    printf("    workspace %zu bytes\n", r.wsb);
    if (r.wsb && !CU(cudaMalloc(&r.ws, r.wsb))) goto done;
    if (exec1(&r) && CU(cudaStreamSynchronize(g_st))) {
        check_run(&r, p, 0);
        time_it(&r);
        determinism(&r, p);
    }
    /* the plain legacy call (no bias) with each deterministic algorithm cuDNN ranks, in its order */
    {
        cudnnConvolutionFwdAlgoPerf_t perf[8];
        int                           got = 0;
        if (CD(cudnnGetConvolutionForwardAlgorithm_v7(g_h, r.xd, r.wd, r.cvd, r.yd, 8, &got, perf)))
            for (int i = 0; i < got; i++) {
                if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].determinism != CUDNN_DETERMINISTIC) continue;
                size_t need = 0;
                if (!CD(cudnnGetConvolutionForwardWorkspaceSize(g_h, r.xd, r.wd, r.cvd, r.yd, perf[i].algo, &need)))
                    continue;
                if (need > r.wsb) {
                    if (r.ws) cudaFree(r.ws), r.ws = NULL;
                    if (!CU(cudaMalloc(&r.ws, need))) continue;
                    r.wsb = need;
                }
                printf("  legacy cudnnConvolutionForward, algo %d (v7 rank %d, math %d), no bias\n", (int)perf[i].algo, i,
                       (int)perf[i].mathType);
                r.legacy = 2, r.algo = perf[i].algo;
                cudnnSetConvolutionMathType(r.cvd, perf[i].mathType);
                if (exec1(&r) && CU(cudaStreamSynchronize(g_st))) {
                    check_run(&r, p, 0);
                    time_it(&r);
                }
            }
    }
done:
    if (r.ws) cudaFree(r.ws);
    if (r.xd) cudnnDestroyTensorDescriptor(r.xd);
    if (r.yd) cudnnDestroyTensorDescriptor(r.yd);
    if (r.bd) cudnnDestroyTensorDescriptor(r.bd);
    if (r.wd) cudnnDestroyFilterDescriptor(r.wd);
    if (r.cvd) cudnnDestroyConvolutionDescriptor(r.cvd);
    if (r.ad) cudnnDestroyActivationDescriptor(r.ad);
}

/* ---------------------------------------------------------------- main */
static prob mkprob2(const char *name, int n, int hi, int wi, int dil, int ph0, int ph1, int pw) {
    prob p = {name, n, C, hi, wi, K, dil, ph0, ph1, pw, 0, 0};
    p.ho = hi + ph0 + ph1 - 2 * dil, p.wo = wi + 2 * pw - 2 * dil;
    return p;
}
static prob mkprob(const char *name, int n, int hi, int wi, int dil, int ph, int pw) {
    return mkprob2(name, n, hi, wi, dil, ph, ph, pw);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    prob P[16];
    int  np = 0;
    for (int d = 1; d <= 8; d *= 2) P[np++] = mkprob("full 2048^2", 1, 2048, 2048, d, d, d);
    for (int d = 1; d <= 8; d *= 2) P[np++] = mkprob("band 512 rows + real halo", 1, 512 + 2 * d, 2048, d, 0, d);
    P[np++] = mkprob("batch 8 x 512^2", 8, 512, 512, 1, 1, 1);
    P[np++] = mkprob("batch 8 x 512^2", 8, 512, 512, 8, 8, 8);
    for (int d = 1; d <= 8; d *= 8) { /* the banded refiner's first and last bands: the border padded on one side */
        P[np++] = mkprob2("first band, pad above", 1, 512 + d, 2048, d, d, 0, d);
        P[np++] = mkprob2("last band, pad below", 1, 512 + d, 2048, d, 0, d, d);
    }
    int  sel[16], nsel = 0;
    char graphs[8] = "abcdl";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-cfg") && i + 1 < argc) g_maxcfg = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--graphs") && i + 1 < argc) snprintf(graphs, sizeof graphs, "%s", argv[++i]);
        else if (!strcmp(argv[i], "--sb-float")) g_sb_float = 1;
        else if (!strcmp(argv[i], "--sb-per-sample")) g_sb_per_sample = 1;
        else if (argv[i][0] >= '0' && argv[i][0] <= '9' && atoi(argv[i]) < np && nsel < 16) sel[nsel++] = atoi(argv[i]);
        else {
            printf("usage: %s [--max-cfg N (<=32)] [--graphs abcdl] [--sb-float] [--sb-per-sample] [problem index 0..%d ...]\n",
                   argv[0], np - 1);
            return 1;
        }
    }
    if (g_maxcfg < 1 || g_maxcfg > 32) g_maxcfg = 8;
    if (!nsel) for (int i = 0; i < np; i++) sel[nsel++] = i;

    int rtv = 0, drv = 0, dev = 0;
    cudaDeviceProp prop;
    if (!CU(cudaGetDeviceProperties(&prop, dev))) return 2;
    cudaRuntimeGetVersion(&rtv), cudaDriverGetVersion(&drv);
    printf("convbn_probe: %s (cc %d.%d, %d SMs), CUDA runtime %d, driver %d, cuDNN %zu (headers %d)\n", prop.name,
           prop.major, prop.minor, prop.multiProcessorCount, rtv, drv, cudnnGetVersion(), CUDNN_VERSION);
    printf("problems (K = C = 64, 3x3, stride 1, fp16 NHWC; pads: H pre/post, W):\n");
    for (int i = 0; i < np; i++)
        printf("  [%d] %-26s N=%d in %dx%d -> out %dx%d, dilation %d, pad H %d/%d W %d\n", i, P[i].name, P[i].n, P[i].hi,
               P[i].wi, P[i].ho, P[i].wo, P[i].dil, P[i].ph0, P[i].ph1, P[i].pw);
    printf("graphs: %s (a conv, b conv+genstats, c full ConvBNfprop, d conv+bias, l legacy baseline); up to %d configs per heuristic mode\n",
           graphs, g_maxcfg);
    printf("graph (c) scale/bias: %s, %s\n", g_sb_float ? "float32" : "fp16",
           g_sb_per_sample ? "(N, C, 1, 1): one row per image" : "(1, C, 1, 1)");
    if (!CD(cudnnCreate(&g_h)) || !CU(cudaStreamCreate(&g_st)) || !CD(cudnnSetStream(g_h, g_st)) ||
        !CU(cudaEventCreate(&g_ev[0])) || !CU(cudaEventCreate(&g_ev[1])))
        return 2;

    size_t mx = 0, my = 0;
    for (int i = 0; i < np; i++) {
        size_t a = (size_t)P[i].n * P[i].hi * P[i].wi * C, b = ysize(&P[i]);
        mx = a > mx ? a : mx, my = b > my ? b : my;
    }
    /* weights N(0, 1/(9*64)) (Box-Muller), s1 U[0.5, 1.5], b1 U[-0.5, 0.5]; all rounded to fp16 */
    static __half hw[K * R * S * C], hs[C], hb[C];
    static float  hwt[R * S * C * K];
    for (int i = 0; i < K * R * S * C; i++) {
        double u1 = 1.0 - uhash(2, 2 * (uint64_t)i), u2 = uhash(2, 2 * (uint64_t)i + 1);
        hw[i] = __float2half((float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2) / sqrt(9.0 * 64.0)));
        h_w[i] = __half2float(hw[i]);
    }
    for (int k = 0; k < K; k++)
        for (int rs = 0; rs < R * S; rs++)
            for (int c = 0; c < C; c++) hwt[(rs * C + c) * K + k] = h_w[(k * R * S + rs) * C + c];
    for (int c = 0; c < C; c++) {
        hs[c] = __float2half(0.5f + uhash(3, c)), hb[c] = __float2half(uhash(4, c) - 0.5f);
        h_s[c] = __half2float(hs[c]), h_b[c] = __half2float(hb[c]);
    }
    if (!CU(cudaMalloc(&d_x, mx * 2)) || !CU(cudaMalloc(&d_y, my * 2)) || !CU(cudaMalloc(&d_ysave, my * 2)) ||
        !CU(cudaMalloc(&d_ref[0], my * 4)) || !CU(cudaMalloc(&d_ref[1], my * 4)) || !CU(cudaMalloc(&d_w, sizeof hw)) ||
        !CU(cudaMalloc(&d_wt, sizeof hwt)) || !CU(cudaMalloc(&d_s, C * 2)) || !CU(cudaMalloc(&d_b, C * 2)) ||
        !CU(cudaMalloc(&d_sc, C * 4)) || !CU(cudaMalloc(&d_bi, C * 4)) || !CU(cudaMalloc(&d_zero, K * 2)) || !CU(cudaMalloc(&d_zero32, K * 4)) ||
        !CU(cudaMemset(d_zero32, 0, K * 4)) ||
        !CU(cudaMalloc(&d_sum, 2 * K * 4)) || !CU(cudaMalloc(&d_st, 3 * K * 8)) || !CU(cudaMalloc(&d_cmp, 16)) ||
        !CU(cudaMalloc(&d_diff, 8)) || !CU(cudaMemcpy(d_w, hw, sizeof hw, cudaMemcpyHostToDevice)) ||
        !CU(cudaMemcpy(d_wt, hwt, sizeof hwt, cudaMemcpyHostToDevice)) ||
        !CU(cudaMemcpy(d_s, hs, sizeof hs, cudaMemcpyHostToDevice)) || !CU(cudaMemcpy(d_b, hb, sizeof hb, cudaMemcpyHostToDevice)) ||
        !CU(cudaMemcpy(d_sc, h_s, sizeof h_s, cudaMemcpyHostToDevice)) ||
        !CU(cudaMemcpy(d_bi, h_b, sizeof h_b, cudaMemcpyHostToDevice)) || !CU(cudaMemset(d_zero, 0, K * 2)))
        return 2;
    d_sq = d_sum + K;
    /* graph (c)'s scale and bias in both types, N_MAX rows (the same values in each) */
    static __half hs8[N_MAX * C], hb8[N_MAX * C];
    static float  fs8[N_MAX * C], fb8[N_MAX * C];
    for (int i = 0; i < N_MAX * C; i++) hs8[i] = hs[i % C], hb8[i] = hb[i % C], fs8[i] = h_s[i % C], fb8[i] = h_b[i % C];
    const void *hsb[2][2] = {{hs8, hb8}, {fs8, fb8}};
    for (int f = 0; f < 2; f++)
        for (int j = 0; j < 2; j++)
            if (!CU(cudaMalloc(&d_sbv[f][j], sizeof fs8)) ||
                !CU(cudaMemcpy(d_sbv[f][j], hsb[f][j], f ? sizeof fs8 : sizeof hs8, cudaMemcpyHostToDevice)))
                return 2;

    for (int si = 0; si < nsel; si++) {
        const prob *p = &P[sel[si]];
        printf("\n=== problem [%d] %s: N=%d C=%d in %dx%d -> K=%d out %dx%d, 3x3, dilation %d, pad H %d/%d, W %d/%d ===\n",
               sel[si], p->name, p->n, C, p->hi, p->wi, K, p->ho, p->wo, p->dil, p->ph0, p->ph1, p->pw, p->pw);
        size_t nx = (size_t)p->n * p->hi * p->wi * C;
        double t0 = now_ms();
        init_x<<<4096, 256, 0, g_st>>>(d_x, nx);
        int ok = CU(cudaGetLastError());
        for (int w = 0; w < 2 && ok; w++) {
            ref_conv<<<(unsigned)((ysize(p) + 255) / 256), 256, 0, g_st>>>(d_x, d_wt, d_sc, d_bi, d_ref[w], *p, w);
            ok = CU(cudaGetLastError()) && stats_of(d_ref[w], 0, ysize(p) / K, h_refst[w]);
        }
        if (!ok) continue;
        printf("  references (plain, prologue) and their stats: %.0f ms\n", now_ms() - t0);
        for (int g = 0; g < 4; g++)
            if (strchr(graphs, 'a' + g)) run_graph(p, g);
        if (strchr(graphs, 'l')) run_legacy(p);
    }
    printf("\ndone.\n");
    return 0;
}
