/* Linears as one cuDNN graph (host C): y = act(x'·Wᵀ + b), x' = x or LayerNorm(x), for the encoder's fc1 (exact
 * GELU) and, with the LayerNorm in front, qkv and fc1. linear.cu and layernorm_linear call ck__linear_cudnn first
 * where CK_LINEAR_CUDNN=1 asks for it; a return of 0 means "take the other path" (cuBLASLt + the GELU pass, or
 * the LayerNorm op then the linear).
 *
 * Why: cuBLASLt's GELU epilogue is the tanh approximation, so fc1 is cuBLASLt + a separate exact-GELU pass over
 * the 16-bit map (1.3 ms of the 2048² forward on the H200), and every LayerNorm in front of a linear is a pass of
 * its own (1.4 ms). cuDNN's runtime-fusion engines compile the matmul with pointwise operations on its operand
 * and on its accumulators, and cuDNN's GELU_FWD is the erf form.
 * ref: cuDNN backend API (graph of CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR and _POINTWISE_DESCRIPTOR ops);
 *      torch.nn.GELU (erf), torch.nn.LayerNorm.
 *
 * Graph (row-major x (M, K), y (M, N); W (N, K) row-major is the (K, N) operand with strides (1, K)):
 *   [LayerNorm] x' = ((x − μ)·σ⁻¹)·γ + β as SUB, MUL (μ, σ⁻¹: (M, 1) float32, the LayerNorm op's own row statistics),
 *               MUL, ADD (γ, β: (1, K) float32), into a virtual 16-bit tensor: the operand the unfused path
 *               stores and reads back, rounded once as there (the CPU's operation order);
 *   matmul      float32 accumulation into a virtual float32 tensor;
 *   + b         b (1, N) in the dtype (the 16-bit copy cuBLASLt adds too);
 *   [GELU]      erf form, in float32, rounded once into y. (The unfused path rounds xWᵀ + b to 16 bits before the
 *               GELU: one rounding fewer here, so y is at least as close to the float64 result.)
 * Engine: heuristics mode A's first configuration that is deterministic (no NONDETERMINISTIC note), finalizes and
 * needs at most the cuBLASLt workspace: a fixed rule, no timing, so that every process computes the same bits.
 * With the LayerNorm, its row statistics are formed (into the scratch) only once a plan takes the problem.
 * Measured (H100, 2026-12-07): exact (the fp16 gate at 2048: 0.996) but slower. The heuristics' first
 * configurations are all engine 4 (runtime fusion); the best of them ties cuBLASLt + the GELU pass, the first is up
 * to 46 % slower; with the LayerNorm on the operand each graph is slower again and the network 0.65 ms slower than
 * with fc1 alone. Hence opt-in.
 * Plans are made on a problem's first eager call (runtime compilation: 0.02-0.8 s each), never under capture;
 * a problem first seen while capturing takes the other path. Per call only a variant pack (host) is made.
 * Needs cuDNN's handle (conv2d_cudnn.c: absent with CK_CONV=kernel or in float32 mode). */
#ifdef CK_HAVE_CUDA

#include "ops/cuda/ops_cuda.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef CK_HAVE_CUDNN

#include <cudnn.h>

typedef cudnnBackendDescriptor_t bd_t;

static long g_runs; /* graphs executed by this process (the op tests check that cuDNN took their cases) */

typedef struct lin_key {
    int64_t M;
    int     N, K, dtype, act, ln, bias;
} lin_key;

typedef struct lin_plan {
    lin_key key;
    int     ok;   /* 0: cuDNN does not run this problem */
    bd_t    plan; /* execution plan (owns what it needs) */
    int     nd;   /* descriptors made for the plan, destroyed with it */
    bd_t    d[96];
} lin_plan;

typedef struct lin_cache {
    lin_plan **plans;
    int        n, cap;
} lin_cache;

enum { U_X = 1, U_W, U_B, U_Y, U_MU, U_RS, U_G, U_BE };

#define DN_OK(call) dn_ok((call), #call, __LINE__)
static int dn_ok(cudnnStatus_t s, const char *expr, int line) {
    if (s == CUDNN_STATUS_SUCCESS) return 1;
    char msg[256] = "";
    cudnnGetLastErrorString(msg, sizeof msg);
    ck__log(CK_LOG_INFO, "linear cuDNN (linear_cudnn.c:%d): %s: %s %s", line, expr, cudnnGetErrorString(s), msg);
    return 0;
}

static bd_t mk(lin_plan *p, cudnnBackendDescriptorType_t t) {
    bd_t d = NULL;
    if (p->nd == (int)(sizeof p->d / sizeof p->d[0]) || !DN_OK(cudnnBackendCreateDescriptor(t, &d))) return NULL;
    return p->d[p->nd++] = d;
}
#define SET(d, name, type, cnt, ptr) DN_OK(cudnnBackendSetAttribute((d), (name), (type), (cnt), (ptr)))

/* a tensor (1, r, c) with element strides (r·c, rs, cs) */
static bd_t t3(lin_plan *p, int64_t uid, cudnnDataType_t dt, int64_t r, int64_t c, int64_t rs, int64_t cs, int virt) {
    const int64_t dim[3] = {1, r, c}, str[3] = {r * c, rs, cs}, al = 16;
    const bool    v = virt != 0;
    bd_t          d = mk(p, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    if (d && SET(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt) &&
        SET(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 3, dim) &&
        SET(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 3, str) &&
        SET(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) &&
        SET(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &al) &&
        SET(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v) && DN_OK(cudnnBackendFinalize(d)))
        return d;
    return NULL;
}

/* y = mode(x [, b]) in float32 */
static bd_t pw(lin_plan *p, cudnnPointwiseMode_t mode, bd_t x, bd_t b, bd_t y) {
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    bd_t                  pd = mk(p, CUDNN_BACKEND_POINTWISE_DESCRIPTOR), op;
    if (!x || !y || !pd || !SET(pd, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode) ||
        !SET(pd, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec) || !DN_OK(cudnnBackendFinalize(pd)))
        return NULL;
    if (!(op = mk(p, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)) ||
        !SET(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pd) ||
        !SET(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x) ||
        (b && !SET(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b)) ||
        !SET(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y) || !DN_OK(cudnnBackendFinalize(op)))
        return NULL;
    return op;
}

/* The operation graph of p->key (finalized), or NULL. */
static bd_t graph_of(lin_plan *p, cudnnHandle_t h) {
    const lin_key        *k  = &p->key;
    const cudnnDataType_t T  = k->dtype == CK_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF, F = CUDNN_DATA_FLOAT;
    const int64_t         M = k->M, N = k->N, K = k->K;
    bd_t ops[8], a = t3(p, U_X, T, M, K, K, 1, 0), w = t3(p, U_W, T, K, N, 1, K, 0), y = t3(p, U_Y, T, M, N, N, 1, 0);
    int  n = 0;
    if (!a || !w || !y) return NULL;
    if (k->ln) {
        bd_t mu = t3(p, U_MU, F, M, 1, 1, 1, 0), rs = t3(p, U_RS, F, M, 1, 1, 1, 0);
        bd_t g = t3(p, U_G, F, 1, K, K, 1, 0), be = t3(p, U_BE, F, 1, K, K, 1, 0);
        bd_t v1 = t3(p, 101, F, M, K, K, 1, 1), v2 = t3(p, 102, F, M, K, K, 1, 1), v3 = t3(p, 103, F, M, K, K, 1, 1);
        bd_t xn = t3(p, 104, T, M, K, K, 1, 1);
        if (!(ops[n++] = pw(p, CUDNN_POINTWISE_SUB, a, mu, v1)) || !(ops[n++] = pw(p, CUDNN_POINTWISE_MUL, v1, rs, v2)) ||
            !(ops[n++] = pw(p, CUDNN_POINTWISE_MUL, v2, g, v3)) || !(ops[n++] = pw(p, CUDNN_POINTWISE_ADD, v3, be, xn)))
            return NULL;
        a = xn;
    }
    const int             tail = k->bias + (k->act == CK_ACT_GELU);
    bd_t                  acc = tail ? t3(p, 201, F, M, N, N, 1, 1) : y;
    const cudnnDataType_t ct = F;
    bd_t                  md = mk(p, CUDNN_BACKEND_MATMUL_DESCRIPTOR), mop;
    if (!acc || !md || !SET(md, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct) || !DN_OK(cudnnBackendFinalize(md)))
        return NULL;
    if (!(mop = mk(p, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)) ||
        !SET(mop, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a) ||
        !SET(mop, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w) ||
        !SET(mop, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &acc) ||
        !SET(mop, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md) || !DN_OK(cudnnBackendFinalize(mop)))
        return NULL;
    ops[n++] = mop;
    if (k->bias) {
        bd_t b = t3(p, U_B, T, 1, N, N, 1, 0), out = k->act == CK_ACT_GELU ? t3(p, 202, F, M, N, N, 1, 1) : y;
        if (!(ops[n++] = pw(p, CUDNN_POINTWISE_ADD, acc, b, out))) return NULL;
        acc = out;
    }
    if (k->act == CK_ACT_GELU && !(ops[n++] = pw(p, CUDNN_POINTWISE_GELU_FWD, acc, NULL, y))) return NULL;
    bd_t og = mk(p, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    if (!og || !SET(og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, ops)) return NULL;
    /* deprecated since cuDNN 9.8 (the handle then comes with the plan and the execution): a refusal is no error */
    cudnnBackendSetAttribute(og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    if (!DN_OK(cudnnBackendFinalize(og))) return NULL;
    return og;
}

/* Whether engine configuration cfg carries the NONDETERMINISTIC note (unknown counts as yes). */
static int nondeterministic(lin_plan *p, bd_t cfg) {
    bd_t    e = mk(p, CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t n = 0;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    if (!e || !DN_OK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e)) ||
        !DN_OK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                        CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes)))
        return 1;
    for (int64_t i = 0; i < n; i++)
        if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) return 1;
    return 0;
}

static void plan_release(lin_plan *p) {
    while (p->nd > 0) cudnnBackendDestroyDescriptor(p->d[--p->nd]);
    p->plan = NULL;
}

/* Makes the plan of p->key: p->ok = 1 when an engine took it. */
static void plan_make(ck_cuda *cu, lin_plan *p) {
    cudnnHandle_t h  = (cudnnHandle_t)cu->cudnn;
    bd_t          og = graph_of(p, h);
    if (!og) goto fail;
    enum { MAXCFG = 8 };
    bd_t                         heur = mk(p, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR), cfg[MAXCFG];
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    int64_t                      got  = 0;
    if (!heur || !SET(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og) ||
        !SET(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) || !DN_OK(cudnnBackendFinalize(heur)))
        goto fail;
    for (int i = 0; i < MAXCFG; i++)
        if (!(cfg[i] = mk(p, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR))) goto fail;
    if (!DN_OK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, MAXCFG, &got, cfg)))
        goto fail;
    for (int64_t i = 0; i < got && i < MAXCFG; i++) {
        if (nondeterministic(p, cfg[i])) continue;
        bd_t    plan = mk(p, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        int64_t ws = -1, n = 0;
        if (plan) cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h); /* likewise */
        if (plan && SET(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]) &&
            DN_OK(cudnnBackendFinalize(plan)) &&
            DN_OK(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws)) &&
            ws >= 0 && (size_t)ws <= cu->workspace_bytes) {
            p->plan = plan, p->ok = 1;
            return;
        }
    }
fail:
    cudaGetLastError();
    plan_release(p);
    p->ok = 0;
}

/* One execution; 1 on success. */
static int plan_exec(ck_cuda *cu, lin_plan *p, void *const ptrs[8]) {
    static const int64_t uids[8] = {U_X, U_W, U_Y, U_B, U_MU, U_RS, U_G, U_BE};
    int64_t              u[8], n = 0;
    void                *q[8];
    for (int i = 0; i < 8; i++)
        if (ptrs[i]) u[n] = uids[i], q[n++] = ptrs[i];
    bd_t vp = NULL;
    int  ok = DN_OK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp)) &&
             SET(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, u) &&
             SET(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, q) &&
             SET(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &cu->workspace) &&
             DN_OK(cudnnBackendFinalize(vp)) && DN_OK(cudnnBackendExecute((cudnnHandle_t)cu->cudnn, p->plan, vp));
    if (vp) cudnnBackendDestroyDescriptor(vp);
    if (!ok) cudaGetLastError();
    return ok;
}

int ck__linear_cudnn(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const void *b16,
                     int act, const ck_tensor *gamma, const ck_tensor *beta, float eps) {
    ck_cuda *cu = ck_cuda_of(be);
    if (!cu->cudnn || (act != CK_ACT_NONE && act != CK_ACT_GELU)) return 0;
    const ck_dtype dt = x->dtype;
    if ((dt != CK_DTYPE_F16 && dt != CK_DTYPE_BF16) || w->dtype != dt || y->dtype != dt) return 0;
    const int64_t K = w->shape[1], N = w->shape[0], M = ck_tensor_numel(x) / K;
    if (K % 8 || N % 8 || K > 0x7fffffff || N > 0x7fffffff) return 0;
    /* with the LayerNorm: its row statistics in the scratch, (M) float2 as the LayerNorm kernels form them, then
     * the two planes the graph reads, means (M) and 1/σ (M) */
    const int    ln        = gamma != NULL;
    const size_t tmp_bytes = ((size_t)M * sizeof(float2) + 255) / 256 * 256;
    float       *ln_stats  = ln ? (float *)((char *)cu->scratch + tmp_bytes) : NULL;
    if (ln && (M % 4 || tmp_bytes + (size_t)M * 2 * sizeof(float) > cu->scratch_bytes)) return 0;
    const uintptr_t al = (uintptr_t)x->data | (uintptr_t)w->data | (uintptr_t)y->data | (uintptr_t)b16 |
                         (uintptr_t)(ln ? gamma->data : NULL) | (uintptr_t)(ln ? beta->data : NULL);
    if (al % 16) return 0;
    lin_key key;
    memset(&key, 0, sizeof key); /* compared with memcmp */
    key.M = M, key.N = (int)N, key.K = (int)K, key.dtype = (int)dt, key.act = act, key.ln = ln;
    key.bias = b16 != NULL;

    lin_cache *lc = cu->linear_cache;
    if (!lc && !(lc = cu->linear_cache = calloc(1, sizeof *lc))) return 0;
    lin_plan *p = NULL;
    for (int i = 0; i < lc->n && !p; i++)
        if (!memcmp(&lc->plans[i]->key, &key, sizeof key)) p = lc->plans[i];
    if (!p) {
        if (ck__cuda_stream_capturing(cu)) return 0; /* no plan is made under capture */
        if (lc->n == lc->cap) {
            const int n   = lc->cap ? 2 * lc->cap : 16;
            void     *tbl = realloc(lc->plans, sizeof *lc->plans * (size_t)n);
            if (!tbl) return 0;
            lc->plans = tbl, lc->cap = n;
        }
        if (!(p = calloc(1, sizeof *p))) return 0;
        p->key               = key;
        lc->plans[lc->n++] = p;
        plan_make(cu, p);
        ck__log(CK_LOG_INFO, "linear cuDNN %s M=%lld N=%d K=%d%s%s%s: %s", ck_dtype_name(dt), (long long)M, (int)N, (int)K,
                   key.ln ? " LayerNorm" : "", key.bias ? " +b" : "", act == CK_ACT_GELU ? " GELU" : "",
                   p->ok ? "one graph" : "not taken");
        /* (info level: the path is taken only where CK_LINEAR_CUDNN=1 asks for it) */
    }
    if (!p->ok) return 0;
    if (ln && !ck__layernorm_row_stats_planar(cu, x, eps, ln_stats, cu->scratch)) return 0;
    void *ptrs[8] = {x->data, w->data, y->data, (void *)b16, (void *)ln_stats, (void *)(ln_stats ? ln_stats + M : NULL),
                     gamma ? gamma->data : NULL, beta ? beta->data : NULL};
    if (plan_exec(cu, p, ptrs)) {
        __atomic_add_fetch(&g_runs, 1, __ATOMIC_RELAXED);
        ck__cuda_kernel_check(cu, __FILE__, __LINE__); /* as after any kernel: launch errors, CK_CUDA_SYNC=1 */
        return 1;
    }
    CK_LOG_WARN("linear: cuDNN failed on a planned problem (M=%lld N=%d K=%d); using the other path for it",
                (long long)M, (int)N, (int)K);
    p->ok = 0;
    return 0;
}

long ck__linear_cudnn_runs(void) { return __atomic_load_n(&g_runs, __ATOMIC_RELAXED); }

void ck__linear_cudnn_free(ck_backend *be) {
    ck_cuda   *cu = ck_cuda_of(be);
    lin_cache *lc = cu->linear_cache;
    if (!lc) return;
    for (int i = 0; i < lc->n; i++) plan_release(lc->plans[i]), free(lc->plans[i]);
    free(lc->plans);
    free(lc);
    cu->linear_cache = NULL;
}

#else /* no cuDNN */

int ck__linear_cudnn(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const void *b16,
                     int act, const ck_tensor *gamma, const ck_tensor *beta, float eps) {
    (void)be, (void)y, (void)x, (void)w, (void)b16, (void)act, (void)gamma, (void)beta, (void)eps;
    return 0;
}
void ck__linear_cudnn_free(ck_backend *be) { (void)be; }
long ck__linear_cudnn_runs(void) { return -1; }

#endif /* CK_HAVE_CUDNN */
#endif /* CK_HAVE_CUDA */
