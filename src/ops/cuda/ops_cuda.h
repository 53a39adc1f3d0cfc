/* CUDA backend internals shared by backend_cuda.c (host C) and the kernels in ops/cuda (.cu).
 *
 *     ck_backend *be = ck_backend_cuda_create(&opts, &err);   // ops/backend.h
 *     ck_cuda    *cu = ck_cuda_of(be);                        // stream, cuBLAS handles, scratch
 *
 * Rules every op keeps:
 *   - everything is enqueued on cu->stream; ops never synchronize and never allocate (so a whole
 *     forward can be captured into a CUDA Graph). Temporary memory comes from cu->scratch, a
 *     backend-owned buffer allocated once at creation; ops run one at a time on one stream, so every
 *     op may use all of it. One exception: conv2d's cuDNN path (conv2d_cudnn.c) makes its weight copies
 *     and plans on a problem's first call outside capture, through be->alloc; under capture it never
 *     allocates (a problem first seen there runs the built-in kernel).
 *   - ops return void: a CUDA/cuBLAS/cuDNN failure inside an op (CK_CUDA_CHECK, CK_KERNEL_CHECK in
 *     common.cuh) is recorded as the backend's failure (ck_backend_fail: the call, the error and where)
 *     in the backend the calling thread last entered through ck_cuda_of; the ops that follow on a failed
 *     backend are skipped (ops/ops.c) and the context returns CK_STATUS_EDEVICE with that message.
 *     Only a failure outside any backend call (none entered on this thread) still aborts.
 *   - activations are float32, float16 or bfloat16 (one dtype per backend instance); weight matrices
 *     have weight_dtype (= act_dtype here); vectors (biases, norm affines, pos_embed, GN stats) are
 *     float32. Every kernel accumulates in float32.
 */
#ifndef CK_OPS_CUDA_H
#define CK_OPS_CUDA_H

#include "ops/backend.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cuBLASLt plans for linear layers, cached per problem (shape, dtypes, epilogue, pointer alignment):
 * the heuristic query costs tens of microseconds, a forward has ~100 GEMMs of ~20 distinct shapes. */
#define CK_LT_CACHE 96

typedef struct ck_lt_key {
    int64_t M, N, K;
    int     dtype;     /* ck_dtype of x, w */
    int     out_dtype; /* ck_dtype of y (and C): dtype, or float32 for the network's heads */
    int     epilogue;  /* cublasLtEpilogue_t */
    int     beta_one;  /* C = residual, beta = 1 */
    int     align[5];  /* byte alignment of A (w), B (x), C, D (y), bias */
} ck_lt_key;

typedef struct ck_lt_plan {
    ck_lt_key              key;
    int                    used;
    int                    ok; /* 0: no cuBLASLt algorithm for this problem (fallback kernel) */
    cublasLtMatmulDesc_t   op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t   algo;
} ck_lt_plan;

typedef struct ck_cuda {
    int              device;
    int              cc_major, cc_minor;
    int              sm_count;
    cudaStream_t     stream;
    cublasLtHandle_t lt;
    cublasHandle_t   blas;
    void            *workspace; /* cuBLAS/cuBLASLt workspace (fixed, so both are capture-safe) */
    size_t           workspace_bytes;
    void            *scratch;   /* op temporaries: GN partials, conv weight relayout, attention chunks */
    size_t           scratch_bytes;
    int              fused_attention;
    int              debug_sync; /* CK_CUDA_SYNC=1: synchronize and check after every kernel */
    int              capturing;  /* inside graph_begin/graph_end */
    /* memory accounting of alloc/free: (ptr, bytes) of live allocations */
    struct ck_cuda_alloc {
        void  *ptr;
        size_t bytes;
    }          *allocs;
    int         n_allocs, cap_allocs;
    size_t      mem_cur, mem_peak;
    /* CUDA Graph of one captured sequence */
    cudaGraph_t     graph[CK_GRAPH_SLOTS];      /* one captured forward per slot (the context: per batch size) */
    cudaGraphExec_t graph_exec[CK_GRAPH_SLOTS];
    cudaEvent_t     ev[2];
    ck_lt_plan      plans[CK_LT_CACHE];
    int             plan_next; /* round-robin eviction */
    /* conv2d through cuDNN (conv2d_cudnn.c): handle bound to `stream` (NULL when cuDNN is not built
     * or failed to initialize), its plans and weight copies; conv_mode from CK_CONV */
    void *cudnn;
    void *conv_cache;
    int   conv_mode; /* CK_CONV_AUTO / CK_CONV_CUDNN / CK_CONV_KERNEL */
    void *linear_cache; /* linear_cudnn.c's plans (made on first use) */
    void *derived;   /* derived.cu: device copies made from weights (relaid filters, 16-bit biases) */
    ck_backend *be;  /* the backend this is the implementation of */
    /* CK_CUDA_FAULT=N: the N-th kernel launch check reports a failure (fault injection for the tests
     * of device errors); 0 = off */
    long fault_countdown;
} ck_cuda;

/* CK_CONV=auto (default): per problem, cuDNN whenever it accepts the problem, by a fixed rule so that every
 * process computes the same bits, the built-in kernel timed beside it for the plan log only (conv2d_cudnn.c);
 * CK_CONV=cudnn: the same without timing the kernel; CK_CONV=kernel: never cuDNN.
 * float32 convolutions always run the built-in kernel (parity mode, no TF32). */
enum { CK_CONV_AUTO = 0, CK_CONV_CUDNN = 1, CK_CONV_KERNEL = 2 };

/* The backend the calling thread last entered (every backend entry point and op goes through
 * ck_cuda_of): where a failing CUDA call inside an op is recorded. Cleared when that backend is
 * destroyed. */
extern __thread ck_backend *ck__cuda_current;

static inline ck_cuda *ck_cuda_of(ck_backend *be) {
    ck__cuda_current = be;
    return (ck_cuda *)be->impl;
}

/* A CUDA/cuBLAS/cuDNN call `expr` at file:line failed with `what`: recorded in ck__cuda_current (the
 * first failure is kept), or, outside any backend call, logged and aborted. */
void ck__cuda_failed(const char *file, int line, const char *expr, const char *what);
/* After a kernel launch: the launch error, else an injected fault (CK_CUDA_FAULT), else, with
 * CK_CUDA_SYNC=1 outside capture, the kernel's own fault after a synchronize. */
void ck__cuda_kernel_check(ck_cuda *cu, const char *file, int line);

/* The stream every op of this backend enqueues on (defined in backend_cuda.c; kernels that do not see
 * ck_cuda, such as attention.cu, use this). */
cudaStream_t ck_cuda_stream(ck_backend *be);
/* Its scratch buffer and size, likewise (attention.cu's key-split partials). */
void *ck_cuda_scratch(ck_backend *be, size_t *bytes);

/* ---- optional capabilities (backend.h ck_backend_ext) ---- */
void ck_preprocess_cuda(ck_backend *be, const ck_preprocess_args *a);
void   ck_postprocess_cuda(ck_backend *be, const ck_postprocess_args *a);
size_t ck_postprocess_cuda_scratch_bytes(int sw, int sh, int w, int h);
void   ck_deflate_cuda(ck_backend *be, const ck_deflate_args *a);
size_t ck_deflate_cuda_scratch_bytes(int n, int64_t total_bytes);
void   ck_pxr24_cuda(ck_backend *be, const ck_pxr24_args *a);
void   ck_gather_cuda(ck_backend *be, const ck_gather_args *a);
void   ck_tile_blend_cuda(ck_backend *be, const ck_tile_blend_args *a);
void   ck_tile_normalize_cuda(ck_backend *be, float *acc, const float *wsum, int64_t n);

/* ---- ops: void ck_<name>_cuda(ck_backend *be, <the op's parameters>) for every op of ops_list.h, the
 * optional ones included. attention is the flash-style fused kernel (attention.cu), present when
 * CK_HAVE_CUDA_FUSED_ATTENTION is defined. ---- */
#define CK_OP_CUDA_PROTO(name) void ck_##name##_cuda CK_OP_PARAMS_WITH(ck_backend *be, name);
CK_OPS(CK_OP_CUDA_PROTO)
CK_OPS_OPTIONAL(CK_OP_CUDA_PROTO)
/* conv3x3_gn runs its fused Hopper kernel for such maps (conv3x3_gn.cu). */
int ck_conv3x3_gn_cuda_fast(ck_backend *be, ck_dtype dt, int channels, int groups);
/* The default LayerNorm's row statistics (mean, rstd) of x (M, C) into stats (M); 0 where it cannot (layernorm.cu). */
int ck__layernorm_row_stats(ck_cuda *cu, const ck_tensor *x, float eps, float2 *stats);
#undef CK_OP_CUDA_PROTO
/* Unfused reference attention ("sdpa=off"): scores materialized per chunk of queries in cu->scratch. */
void ck_attention_unfused_cuda CK_OP_PARAMS_WITH(ck_backend *be, attention);

/* ---- conv2d internals (conv2d.cu, conv2d_cudnn.c) ---- */
/* The built-in implicit-GEMM kernel (every dtype). */
void ck__conv2d_kernel_cuda CK_OP_PARAMS_WITH(ck_backend *be, conv2d);
/* dst (OC, KH, KW, IC) = w (OC, IC, KH, KW) relaid on the stream (cuDNN's NHWC filter layout). */
void ck__conv_weight_krsc_cuda(ck_backend *be, void *dst, const ck_tensor *w);
/* 1 when cuDNN ran the convolution (16-bit dtypes only); 0: the caller runs the built-in kernel. Never
 * allocates or searches while the stream is capturing: a problem first seen under capture returns 0. */
int ck__conv2d_cudnn CK_OP_PARAMS_WITH(ck_backend *be, conv2d);
/* Device copies derived from device tensors (derived.cu): kind CK_DERIVED_KRSC (conv weight in cuDNN's
 * (K, R, S, C) layout) or CK_DERIVED_CAST (a float32 tensor in `dtype`), made once per (source, kind, dtype)
 * outside stream capture; NULL when absent under capture or out of memory. The backend calls invalidate when it
 * frees or re-uploads [p, p + bytes), and free at destroy. */
enum { CK_DERIVED_KRSC = 0, CK_DERIVED_CAST = 1 };
const void *ck__derived_get(ck_backend *be, const ck_tensor *t, int kind, ck_dtype dtype);
void        ck__derived_invalidate(ck_backend *be, const void *p, size_t bytes);
void        ck__derived_free(ck_backend *be);
/* Whether the backend's stream is capturing a graph (unknown counts as capturing). */
int ck__cuda_stream_capturing(ck_cuda *cu);

/* y = act(x'·Wᵀ + b) as one cuDNN graph (linear_cudnn.c), x' = x, or with gamma, beta (K) float32 LayerNorm(x)
 * (eps; its row statistics from the LayerNorm kernels, into the scratch); b16 = the bias in x's dtype or NULL; act
 * NONE or GELU. 1 when it ran; 0: take the other path (no cuDNN, a shape or alignment it does not take, a problem
 * first seen under capture). */
int  ck__linear_cudnn(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const void *b16,
                      int act, const ck_tensor *gamma, const ck_tensor *beta, float eps);
void ck__linear_cudnn_free(ck_backend *be);
/* Graphs ck__linear_cudnn executed in this process; -1 when built without cuDNN. */
long ck__linear_cudnn_runs(void);
/* The LayerNorm op's row statistics of x (M, C) as two planes, means (M) then 1/σ (M), at out (2M floats, 16-byte
 * aligned); tmp: M float2. 0 where the LayerNorm kernels cannot take the rows. */
int ck__layernorm_row_stats_planar(ck_cuda *cu, const ck_tensor *x, float eps, float *out, void *tmp);

/* Backend lifetime: init reads CK_CONV and creates the handle (a failure only disables cuDNN, logged);
 * free releases the handle and the plans. */
void ck__conv_cudnn_init(ck_backend *be);
void ck__conv_cudnn_free(ck_backend *be);

/* Releases the cached cuBLASLt plans (backend destroy). */
void ck__cuda_lt_cache_free(ck_cuda *cu);
/* cudaSuccess when this binary holds kernels for the current device (checked once at creation, so a
 * GPU outside CMAKE_CUDA_ARCHITECTURES fails with a clear message instead of at the first op). */
cudaError_t ck__cuda_probe_kernels(void);

#ifdef __cplusplus
}
#endif

#endif
