/* One 2-D convolution (plus bias) through cuDNN's graph (backend) API, for conv2d_cudnn.c (host C).
 *
 * Why: on the H200 (cuDNN 9) the graph API offers engines the legacy API never runs: the refiner's 64→64 3×3
 * convolution at 2048² takes 0.63 ms there against 0.69–0.77 ms through cudnnConvolutionBiasActivationForward
 * (dev/cuda/convbn_probe, docs/benchmarks/2026-12-03-h200.md).
 * Graph: X (N, C, H, W) ⊛ W (K, C, R, S) → Y (N, K, Ho, Wo), 16-bit NHWC tensors, float accumulation; with a
 * bias, the convolution goes into a virtual float tensor and a pointwise ADD of B (1, K, 1, 1) writes Y (one
 * rounding, as the legacy fused call). The engine is cuDNN's first heuristics (mode A) configuration that
 * carries no NONDETERMINISTIC note, needs no run-time compilation, fits the workspace, finalizes and runs:
 * a fixed rule, so every process on the same GPU kind and cuDNN runs the same engine and computes the same
 * bits (no timing enters). The variant pack (the data pointers) is rebuilt only when the pointers change:
 * activations come from planned arenas, so it is built once per call site.
 * ref: cuDNN developer guide, "Graph API" (operation graph, engine heuristics, execution plan, variant pack). */
#if defined(CK_HAVE_CUDA) && defined(CK_HAVE_CUDNN)

#include "ops/cuda/conv2d_graph.h"

#include "core/check.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef cudnnBackendDescriptor_t bdesc;

enum { UID_X = 1, UID_W, UID_Y, UID_B, UID_CONV_OUT };
enum { MAX_DESC = 24 };

struct ck_conv_graph {
    bdesc   plan, vp;
    bdesc   owned[MAX_DESC]; /* every descriptor made, destroyed together */
    int     n_owned;
    int64_t engine, ws;
    int     bias;
    void   *vp_ptrs[5]; /* the pointers the variant pack holds (x, w, y, b, workspace) */
};

static int ok(cudnnStatus_t s, const char *what) {
    if (s == CUDNN_STATUS_SUCCESS) return 1;
    CK_LOG_DBG("conv2d graph: %s: %s", what, cudnnGetErrorString(s));
    return 0;
}
#define SET(d, name, type, n, p) ok(cudnnBackendSetAttribute((d), (name), (type), (n), (p)), #name)
#define FIN(d) ok(cudnnBackendFinalize(d), "finalize")

static bdesc make(ck_conv_graph *g, cudnnBackendDescriptorType_t t) {
    bdesc d = NULL;
    if (g->n_owned == MAX_DESC || !ok(cudnnBackendCreateDescriptor(t, &d), "create descriptor")) return NULL;
    return g->owned[g->n_owned++] = d;
}

/* dims in NCHW order, NHWC strides (cuDNN's convention for channels-last tensors) */
static bdesc tensor(ck_conv_graph *g, int64_t uid, cudnnDataType_t dt, int64_t n, int64_t c, int64_t h, int64_t w,
                    int virt, int64_t align) {
    int64_t dim[4] = {n, c, h, w}, str[4] = {c * h * w, 1, w * c, c};
    bool    v = virt != 0;
    bdesc   d = make(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    if (d && SET(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt) &&
        SET(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim) &&
        SET(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, str) &&
        SET(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) &&
        SET(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align) &&
        SET(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v) && FIN(d))
        return d;
    return NULL;
}

static bdesc operation_graph(ck_conv_graph *g, cudnnHandle_t h, const ck_conv_graph_shape *s) {
    const cudnnDataType_t dt = s->bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF, f32 = CUDNN_DATA_FLOAT;
    const int64_t         ax = s->x_al16 ? 16 : 2, ay = s->y_al16 ? 16 : 2;
    bdesc x = tensor(g, UID_X, dt, s->n, s->c, s->h, s->w, 0, ax), w = tensor(g, UID_W, dt, s->k, s->c, s->r, s->s, 0, 16);
    bdesc y = tensor(g, UID_Y, dt, s->n, s->k, s->ho, s->wo, 0, ay);
    bdesc cy = s->bias ? tensor(g, UID_CONV_OUT, f32, s->n, s->k, s->ho, s->wo, 1, 16) : y;
    if (!x || !w || !y || !cy) return NULL;

    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t nsd = 2, pad[2] = {s->pad_h, s->pad_w}, dil[2] = {s->dil, s->dil}, str[2] = {s->stride, s->stride};
    float   alpha = 1.0f, beta = 0.0f;
    bdesc   cd = make(g, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR), ops[2];
    if (!cd || !SET(cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32) ||
        !SET(cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) ||
        !SET(cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsd) ||
        !SET(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad) ||
        !SET(cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad) ||
        !SET(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil) ||
        !SET(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str) || !FIN(cd))
        return NULL;
    bdesc conv = make(g, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    if (!conv || !SET(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x) ||
        !SET(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w) ||
        !SET(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cy) ||
        !SET(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd) ||
        !SET(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha) ||
        !SET(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta) || !FIN(conv))
        return NULL;
    int64_t nops = 0;
    ops[nops++]  = conv;
    if (s->bias) {
        cudnnPointwiseMode_t add = CUDNN_POINTWISE_ADD;
        bdesc b = tensor(g, UID_B, f32, 1, s->k, 1, 1, 0, 16), pw = make(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
        bdesc op = make(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
        if (!b || !pw || !op || !SET(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &add) ||
            !SET(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f32) || !FIN(pw) ||
            !SET(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw) ||
            !SET(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cy) ||
            !SET(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b) ||
            !SET(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y) || !FIN(op))
            return NULL;
        ops[nops++] = op;
    }
    bdesc og = make(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    if (!og || !SET(og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops) ||
        !SET(og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h) || !FIN(og))
        return NULL;
    return og;
}

/* The engine behind a configuration: its global index, and whether it may run (deterministic, no run-time
 * compilation: a first frame must not wait for a compiler). */
static int engine_usable(bdesc cfg, int64_t *index) {
    bdesc   e = NULL;
    int64_t n = 0;
    int     usable = 0;
    *index         = -1;
    if (!ok(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &e), "engine descriptor")) return 0;
    if (ok(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e),
           "ENGINECFG_ENGINE") &&
        ok(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, index), "GLOBAL_INDEX")) {
        cudnnBackendNumericalNote_t nn[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
        cudnnBackendBehaviorNote_t  bn[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
        int64_t                     nnum = 0, nbeh = 0;
        usable = ok(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                             CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nnum, nn),
                    "NUMERICAL_NOTE") &&
                 ok(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                             CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &nbeh, bn),
                    "BEHAVIOR_NOTE");
        for (int64_t i = 0; usable && i < nnum && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; i++)
            if (nn[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) usable = 0;
        for (int64_t i = 0; usable && i < nbeh && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; i++)
            if (bn[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) usable = 0;
    }
    cudnnBackendDestroyDescriptor(e);
    return usable;
}

void ck__conv_graph_free(ck_conv_graph *g) {
    if (!g) return;
    if (g->vp) cudnnBackendDestroyDescriptor(g->vp);
    while (g->n_owned > 0) cudnnBackendDestroyDescriptor(g->owned[--g->n_owned]);
    free(g);
}

int ck__conv_graph_exec(ck_conv_graph *g, cudnnHandle_t h, const void *x, const void *w, void *y, const void *b,
                        void *ws) {
    void *ptrs[5] = {(void *)x, (void *)w, y, (void *)b, ws};
    if (!g->vp || memcmp(ptrs, g->vp_ptrs, sizeof ptrs)) {
        if (g->vp) cudnnBackendDestroyDescriptor(g->vp), g->vp = NULL;
        int64_t uids[4] = {UID_X, UID_W, UID_Y, UID_B};
        int64_t n       = g->bias ? 4 : 3;
        bdesc   vp      = NULL;
        if (!ok(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp), "variant pack")) return 0;
        if (!SET(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids) ||
            !SET(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs) ||
            !SET(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws) || !FIN(vp)) {
            cudnnBackendDestroyDescriptor(vp);
            return 0;
        }
        g->vp = vp;
        memcpy(g->vp_ptrs, ptrs, sizeof ptrs);
    }
    return ok(cudnnBackendExecute(h, g->plan, g->vp), "execute");
}

ck_conv_graph *ck__conv_graph_make(cudnnHandle_t h, const ck_conv_graph_shape *s, size_t ws_limit, const void *x,
                                   const void *w, void *y, const void *b, void *ws) {
    ck_conv_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->bias  = s->bias;
    bdesc og = operation_graph(g, h, s), heur = og ? make(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) : NULL;
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    int64_t                count = 0;
    if (!heur || !SET(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og) ||
        !SET(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) || !FIN(heur) ||
        !ok(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL),
            "heuristics count") ||
        count <= 0) {
        ck__conv_graph_free(g);
        return NULL;
    }
    enum { MAX_CFG = 8 };
    bdesc   cfg[MAX_CFG] = {0};
    int64_t want = count < MAX_CFG ? count : MAX_CFG, got = 0;
    for (int64_t i = 0; i < want; i++)
        if (!(cfg[i] = make(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR))) want = i;
    if (!ok(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, want, &got, cfg),
            "heuristics results"))
        got = 0;
    for (int64_t i = 0; i < got && i < want && !g->plan; i++) {
        int64_t index = -1, wsb = -1, n = 0;
        if (!engine_usable(cfg[i], &index)) continue;
        bdesc plan = NULL;
        if (!ok(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan), "plan")) continue;
        if (SET(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h) &&
            SET(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]) && FIN(plan) &&
            ok(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &wsb),
               "workspace size") &&
            wsb >= 0 && (size_t)wsb <= ws_limit) {
            g->plan = plan, g->engine = index, g->ws = wsb;
            if (ck__conv_graph_exec(g, h, x, w, y, b, ws)) break; /* runs: this engine it is */
            g->plan = NULL;
        }
        cudnnBackendDestroyDescriptor(plan);
    }
    if (!g->plan) {
        ck__conv_graph_free(g);
        return NULL;
    }
    /* the plan keeps what it needs; the graph's own descriptors stay owned until free */
    if (g->n_owned < MAX_DESC) g->owned[g->n_owned++] = g->plan;
    else {
        ck__conv_graph_free(g);
        return NULL;
    }
    return g;
}

int64_t ck__conv_graph_engine(const ck_conv_graph *g) { return g->engine; }

#endif /* CK_HAVE_CUDA && CK_HAVE_CUDNN */
