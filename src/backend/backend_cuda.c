/* CUDA backend: device selection, one stream, cuBLAS/cuBLASLt handles with a fixed workspace, a fixed
 * scratch buffer for op temporaries, device memory with current/peak accounting, transfers, CUDA Graph
 * capture and event timers; the op slots point at the kernels of ops/cuda (see ops/cuda/ops_cuda.h for the rules
 * every op keeps: one stream, no allocation, no synchronization).
 *
 * Creation never crashes on a machine without a driver or GPU: it returns NULL with the reason in err
 * ("no CUDA device: ..."), without logging, since with --device auto that is only a notice.
 * Host entry points report CUDA failures where the table lets them (graph_* return 1 on success, 0 on
 * failure, as api.c tests them); the void ones (upload, download, synchronize) and the ops record the
 * first failure in the backend (ck_backend_fail, through ck__cuda_failed): the ops after it are skipped
 * and the context returns CK_STATUS_EDEVICE naming the call, the error and where (forward.c). A kernel
 * that faults is reported by the next synchronizing call; CK_CUDA_SYNC=1 pins it to its launch.
 * CK_CUDA_FAULT=N injects a launch failure at the N-th kernel launch check (tests/test_cuda_fault.c).
 *
 * Environment: CK_CUDA_SYNC=1 synchronizes and checks after every kernel (locates asynchronous faults);
 * CK_CUDA_SCRATCH_MB overrides the scratch size (default 64: op temporaries; each op checks its need against
 * it and takes a path without the scratch where it does not fit); CK_CONV=auto|cudnn|kernel picks the 16-bit
 * convolution path (ops_cuda.h).
 *
 * cuDNN (when built): one handle bound to the stream; conv2d_cudnn.c keeps KRSC copies of conv weights,
 * allocated through alloc (so they count in the memory figures) on a problem's first eager call. A free
 * or upload of device memory drops the copies made from it. */
#ifdef CK_HAVE_CUDA

#include "ops/cuda/ops_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CK_HAVE_CUDA_FUSED_ATTENTION
/* attention.cu is not part of this build: the op table's fused slot falls back to the unfused path
 * (and no reference to the missing symbol is emitted) */
#define ck_attention_cuda ck_attention_unfused_cuda
#endif

#define CK_CUDA_WORKSPACE_BYTES ((size_t)32 << 20) /* cuBLASLt: 32 MiB recommended for Hopper */
#define CK_CUDA_SCRATCH_MB_DEFAULT 64

/* Check for void entry points (upload, download, synchronize, timers): a failure is recorded as the
 * backend's (see banner). */
#define CK_CUDA_FATAL(call)                                                                         \
    do {                                                                                            \
        cudaError_t ck_e_ = (call);                                                                 \
        if (ck_e_ != cudaSuccess) ck__cuda_failed(__FILE__, __LINE__, #call, cudaGetErrorString(ck_e_)); \
    } while (0)

__thread ck_backend *ck__cuda_current;

void ck__cuda_failed(const char *file, int line, const char *expr, const char *what) {
    const char *base = strrchr(file, '/');
    base             = base ? base + 1 : file;
    if (!ck__cuda_current) { /* outside every backend call: nothing can report it */
        CK_LOG_ERR("CUDA backend: %s failed: %s", expr, what);
        ck__assert_fail(file, line, "cuda", expr);
    }
    ck_backend_fail(ck__cuda_current, "CUDA error: %s failed: %s (%s:%d)", expr, what, base, line);
}

void ck__cuda_kernel_check(ck_cuda *cu, const char *file, int line) {
    ck__cuda_current = cu->be;
    cudaError_t e    = cudaGetLastError();
    if (e != cudaSuccess) {
        ck__cuda_failed(file, line, "kernel launch", cudaGetErrorString(e));
        return;
    }
    if (cu->fault_countdown > 0 && --cu->fault_countdown == 0) {
        ck__cuda_failed(file, line, "kernel launch", "injected fault (CK_CUDA_FAULT)");
        return;
    }
    if (cu->debug_sync && !cu->capturing && (e = cudaStreamSynchronize(cu->stream)) != cudaSuccess)
        ck__cuda_failed(file, line, "kernel (CK_CUDA_SYNC=1)", cudaGetErrorString(e));
}

cudaStream_t ck_cuda_stream(ck_backend *be) { return ck_cuda_of(be)->stream; }
void        *ck_cuda_scratch(ck_backend *be, size_t *bytes) {
    ck_cuda *cu = ck_cuda_of(be);
    *bytes      = cu->scratch_bytes;
    return cu->scratch;
}

/* ---- memory ---- */

static void *cuda_alloc(ck_backend *be, size_t bytes) {
    ck_cuda *cu = ck_cuda_of(be);
    if (cu->capturing) { /* cudaMalloc would invalidate the capture */
        CK_LOG_ERR("CUDA backend: allocation of %zu bytes during graph capture refused", bytes);
        return NULL;
    }
    if (cu->n_allocs == cu->cap_allocs) {
        const int n   = cu->cap_allocs ? 2 * cu->cap_allocs : 64;
        void     *tbl = realloc(cu->allocs, sizeof *cu->allocs * (size_t)n);
        if (!tbl) return NULL;
        cu->allocs     = tbl;
        cu->cap_allocs = n;
    }
    cudaSetDevice(cu->device);
    void       *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 256);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* not sticky: clear it so the next kernel check does not see it */
        CK_LOG_DBG("CUDA backend: cudaMalloc(%zu) failed: %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    cu->allocs[cu->n_allocs].ptr   = p;
    cu->allocs[cu->n_allocs].bytes = bytes;
    cu->n_allocs++;
    cu->mem_cur += bytes;
    if (cu->mem_cur > cu->mem_peak) cu->mem_peak = cu->mem_cur;
    return p;
}

static void cuda_free(ck_backend *be, void *ptr) {
    ck_cuda *cu = ck_cuda_of(be);
    if (!ptr) return;
    CK_ASSERT(!cu->capturing);
    /* first the derived copies made from this block (they are freed through here too, which reorders
     * the table, so the block is looked up again afterwards) */
    for (int i = 0; i < cu->n_allocs; i++) {
        if (cu->allocs[i].ptr != ptr) continue;
        ck__derived_invalidate(be, ptr, cu->allocs[i].bytes);
        break;
    }
    for (int i = 0; i < cu->n_allocs; i++) {
        if (cu->allocs[i].ptr != ptr) continue;
        cu->mem_cur -= cu->allocs[i].bytes;
        cu->allocs[i] = cu->allocs[--cu->n_allocs];
        cudaSetDevice(cu->device);
        cudaError_t e = cudaFree(ptr);
        if (e != cudaSuccess) CK_LOG_ERR("CUDA backend: cudaFree failed: %s", cudaGetErrorString(e));
        return;
    }
    CK_LOG_ERR("CUDA backend: free of a pointer this backend did not allocate (%p)", ptr);
}

static void cuda_upload(ck_backend *be, void *dst, const void *src, size_t n) {
    ck_cuda *cu = ck_cuda_of(be);
    if (!n) return;
    ck__derived_invalidate(be, dst, n); /* new weights at a cached address */
    CK_CUDA_FATAL(cudaSetDevice(cu->device));
    CK_CUDA_FATAL(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, cu->stream));
    /* From pageable memory the copy has left the host buffer when cudaMemcpyAsync returns; from pinned
     * memory it has not, and callers may free or refill the buffer right after upload. */
    struct cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, src) == cudaSuccess && at.type == cudaMemoryTypeHost && !cu->capturing)
        CK_CUDA_FATAL(cudaStreamSynchronize(cu->stream));
    cudaGetLastError(); /* cudaPointerGetAttributes may leave an error for unknown pointers */
}

static void cuda_download(ck_backend *be, void *dst, const void *src, size_t n) {
    ck_cuda *cu = ck_cuda_of(be);
    if (!n) return;
    CK_CUDA_FATAL(cudaSetDevice(cu->device));
    CK_CUDA_FATAL(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, cu->stream));
    CK_CUDA_FATAL(cudaStreamSynchronize(cu->stream));
}

static void cuda_download_async(ck_backend *be, void *dst, const void *src, size_t n) {
    ck_cuda *cu = ck_cuda_of(be);
    if (!n) return;
    CK_CUDA_FATAL(cudaSetDevice(cu->device));
    CK_CUDA_FATAL(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, cu->stream));
}

/* Page-locked host memory: transfers run at full bus speed and need no staging copy. NULL on failure
 * (callers fall back to ordinary memory). */
static void *cuda_host_alloc(ck_backend *be, size_t bytes) {
    ck_cuda *cu = ck_cuda_of(be);
    void    *p  = NULL;
    /* Any thread (pipeline readers stage frames while the context's thread may be capturing its graph):
     * the capture is thread-local, and the capturing thread itself never allocates host memory. */
    if (cudaSetDevice(cu->device) != cudaSuccess ||
        cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return p;
}

static void cuda_host_free(ck_backend *be, void *ptr) {
    (void)be;
    if (ptr) CK_CUDA_FATAL(cudaFreeHost(ptr));
}

static void cuda_synchronize(ck_backend *be) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_CUDA_FATAL(cudaStreamSynchronize(cu->stream));
}

/* ---- graphs: begin / end / launch return 1 on success, 0 on failure (logged) ---- */

static void graph_slot_reset(ck_cuda *cu, int slot) {
    if (cu->graph_exec[slot]) cudaGraphExecDestroy(cu->graph_exec[slot]);
    if (cu->graph[slot]) cudaGraphDestroy(cu->graph[slot]);
    cu->graph_exec[slot] = NULL;
    cu->graph[slot]      = NULL;
}

static void cuda_graph_reset(ck_backend *be) {
    ck_cuda *cu = ck_cuda_of(be);
    for (int i = 0; i < CK_GRAPH_SLOTS; i++) graph_slot_reset(cu, i);
}

static int cuda_graph_begin(ck_backend *be) {
    ck_cuda *cu = ck_cuda_of(be);
    if (cu->capturing) return 0;
    cudaSetDevice(cu->device);
    /* thread-local: other threads' unrelated CUDA calls do not break this capture */
    cudaError_t e = cudaStreamBeginCapture(cu->stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        cudaGetLastError();
        CK_LOG_ERR("CUDA backend: cudaStreamBeginCapture failed: %s", cudaGetErrorString(e));
        return 0;
    }
    cu->capturing = 1;
    return 1;
}

static int cuda_graph_end(ck_backend *be, int slot) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(slot >= 0 && slot < CK_GRAPH_SLOTS);
    if (!cu->capturing) return 0;
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(cu->stream, &g);
    cu->capturing = 0;
    if (e != cudaSuccess) {
        cudaGetLastError();
        if (g) cudaGraphDestroy(g);
        CK_LOG_ERR("CUDA backend: cudaStreamEndCapture failed: %s", cudaGetErrorString(e));
        return 0;
    }
    if (be->failed) { /* an op failed while recording: the graph would be partial */
        if (g) cudaGraphDestroy(g);
        return 0;
    }
    graph_slot_reset(cu, slot);
    cu->graph[slot] = g;
    e               = cudaGraphInstantiate(&cu->graph_exec[slot], g, 0);
    if (e != cudaSuccess) {
        cudaGetLastError();
        cu->graph_exec[slot] = NULL;
        graph_slot_reset(cu, slot);
        CK_LOG_ERR("CUDA backend: cudaGraphInstantiate failed: %s", cudaGetErrorString(e));
        return 0;
    }
    return 1;
}

static int cuda_graph_launch(ck_backend *be, int slot) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(slot >= 0 && slot < CK_GRAPH_SLOTS);
    if (!cu->graph_exec[slot] || cu->capturing) return 0;
    cudaError_t e = cudaGraphLaunch(cu->graph_exec[slot], cu->stream);
    if (e != cudaSuccess) {
        cudaGetLastError();
        CK_LOG_ERR("CUDA backend: cudaGraphLaunch failed: %s", cudaGetErrorString(e));
        return 0;
    }
    return 1;
}

/* ---- accounting and timers ---- */

static size_t cuda_mem_peak(ck_backend *be) { return ck_cuda_of(be)->mem_peak; }
static void   cuda_mem_peak_reset(ck_backend *be) { ck_cuda_of(be)->mem_peak = ck_cuda_of(be)->mem_cur; }

static void cuda_timer_mark(ck_backend *be, int which) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_CUDA_FATAL(cudaEventRecord(cu->ev[which ? 1 : 0], cu->stream));
}

static float cuda_timer_elapsed_ms(ck_backend *be) {
    ck_cuda *cu = ck_cuda_of(be);
    float    ms = 0.0f;
    CK_CUDA_FATAL(cudaEventSynchronize(cu->ev[1]));
    cudaError_t e = cudaEventElapsedTime(&ms, cu->ev[0], cu->ev[1]);
    if (e != cudaSuccess) { /* e.g. a mark missing: not fatal, report 0 */
        cudaGetLastError();
        CK_LOG_WARN("CUDA backend: timer: %s", cudaGetErrorString(e));
        return 0.0f;
    }
    return ms;
}

/* ---- lifetime ---- */

static void cuda_destroy(ck_backend *be) {
    if (!be) return;
    ck_cuda *cu = ck_cuda_of(be);
    if (cu) {
        cudaSetDevice(cu->device);
        if (cu->capturing) { /* abandon a capture left open */
            cudaGraph_t g = NULL;
            cudaStreamEndCapture(cu->stream, &g);
            if (g) cudaGraphDestroy(g);
            cu->capturing = 0;
        }
        if (cu->stream) cudaStreamSynchronize(cu->stream);
        cuda_graph_reset(be);
        ck__linear_cudnn_free(be); /* its plans before the cuDNN handle goes */
        ck__conv_cudnn_free(be);
        ck__derived_free(be); /* derived copies go back through be->free */
        for (int i = 0; i < 2; i++)
            if (cu->ev[i]) cudaEventDestroy(cu->ev[i]);
        ck__cuda_lt_cache_free(cu);
        if (cu->lt) cublasLtDestroy(cu->lt);
        if (cu->blas) cublasDestroy(cu->blas);
        if (cu->workspace) cudaFree(cu->workspace);
        if (cu->scratch) cudaFree(cu->scratch);
        for (int i = 0; i < cu->n_allocs; i++) cudaFree(cu->allocs[i].ptr); /* leaked by the caller */
        free(cu->allocs);
        if (cu->stream) cudaStreamDestroy(cu->stream);
        cudaGetLastError();
        free(cu);
    }
    if (ck__cuda_current == be) ck__cuda_current = NULL;
    free(be);
}

/* Creation failures after the device is known: message in err, partial state released. */
static ck_backend *create_fail(ck_backend *be, ck_err *err, const char *what, const char *why) {
    if (err) snprintf(err->msg, sizeof err->msg, "CUDA backend: %s: %s", what, why);
    cudaGetLastError();
    cuda_destroy(be);
    return NULL;
}

#define CREATE_CUDA(call)                                                                          \
    do {                                                                                           \
        cudaError_t ck_e_ = (call);                                                                \
        if (ck_e_ != cudaSuccess) return create_fail(be, err, #call, cudaGetErrorString(ck_e_));   \
    } while (0)
#define CREATE_CUBLAS(call)                                                                        \
    do {                                                                                           \
        cublasStatus_t ck_s_ = (call);                                                             \
        if (ck_s_ != CUBLAS_STATUS_SUCCESS) return create_fail(be, err, #call, cublasGetStatusString(ck_s_)); \
    } while (0)

/* What every CUDA backend has, a model's weights-only one too: device memory, transfers, accounting. */
static void fill_memory(ck_backend *be, ck_dtype dt) {
    be->name         = "cuda";
    be->device       = CK_DEVICE_CUDA;
    be->act_dtype    = dt;
    be->weight_dtype = dt;
    be->alloc        = cuda_alloc;
    be->free         = cuda_free;
    be->upload       = cuda_upload;
    be->download     = cuda_download;
    be->synchronize  = cuda_synchronize;
    be->destroy      = cuda_destroy;
    be->ext.mem_peak = cuda_mem_peak;
}

ck_backend *ck_backend_cuda_create(const ck_backend_opts *opts, ck_err *err) {
    ck_backend_opts o = {0, CK_PREC_FP32, 1, 0};
    if (opts) o = *opts;

    int         ndev = 0;
    cudaError_t e    = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess) {
        cudaGetLastError();
        if (err) snprintf(err->msg, sizeof err->msg, "no CUDA device: %s", cudaGetErrorString(e));
        return NULL;
    }
    if (ndev == 0) {
        if (err) snprintf(err->msg, sizeof err->msg, "no CUDA device: no GPU visible to the driver");
        return NULL;
    }
    if (o.device_index < 0 || o.device_index >= ndev) {
        if (err)
            snprintf(err->msg, sizeof err->msg, "no CUDA device %d (%d device%s visible)", o.device_index, ndev,
                     ndev == 1 ? "" : "s");
        return NULL;
    }
    struct cudaDeviceProp prop;
    if ((e = cudaSetDevice(o.device_index)) != cudaSuccess ||
        (e = cudaGetDeviceProperties(&prop, o.device_index)) != cudaSuccess) {
        cudaGetLastError();
        if (err) snprintf(err->msg, sizeof err->msg, "no usable CUDA device %d: %s", o.device_index, cudaGetErrorString(e));
        return NULL;
    }
    if (prop.major < 8) { /* bf16 mma, cp.async and ldmatrix need sm_80 */
        if (err)
            snprintf(err->msg, sizeof err->msg, "CUDA device %d (%s) has compute capability %d.%d; ckey needs 8.0 or newer",
                     o.device_index, prop.name, prop.major, prop.minor);
        return NULL;
    }
    if ((e = ck__cuda_probe_kernels()) != cudaSuccess) {
        cudaGetLastError();
        if (err)
            snprintf(err->msg, sizeof err->msg,
                     "this build has no kernels for %s (sm_%d%d): %s; rebuild with CMAKE_CUDA_ARCHITECTURES=%d%d-real",
                     prop.name, prop.major, prop.minor, cudaGetErrorString(e), prop.major, prop.minor);
        return NULL;
    }
    ck_dtype dt;
    switch (o.precision) {
    case CK_PREC_FP32: dt = CK_DTYPE_F32; break;
    case CK_PREC_BF16: dt = CK_DTYPE_BF16; break;
    case CK_PREC_FP16: dt = CK_DTYPE_F16; break;
    default:
        if (err) snprintf(err->msg, sizeof err->msg, "CUDA backend: unknown precision %d", (int)o.precision);
        return NULL;
    }

    ck_backend *be = calloc(1, sizeof *be);
    ck_cuda    *cu = calloc(1, sizeof *cu);
    if (!be || !cu) {
        free(be);
        free(cu);
        if (err) snprintf(err->msg, sizeof err->msg, "CUDA backend: out of host memory");
        return NULL;
    }
    be->impl            = cu;
    cu->device          = o.device_index;
    cu->cc_major        = prop.major;
    cu->cc_minor        = prop.minor;
    cu->sm_count        = prop.multiProcessorCount;
    cu->fused_attention = o.fused_attention;
    const char *sync    = getenv("CK_CUDA_SYNC");
    cu->debug_sync      = sync && sync[0] && strcmp(sync, "0") != 0;
    cu->be              = be;
    const char *fault   = getenv("CK_CUDA_FAULT");
    cu->fault_countdown = fault ? strtol(fault, NULL, 10) : 0;
    size_t      scratch_mb = CK_CUDA_SCRATCH_MB_DEFAULT;
    const char *smb        = getenv("CK_CUDA_SCRATCH_MB");
    if (smb && atoi(smb) >= 16) scratch_mb = (size_t)atoi(smb);

    CREATE_CUDA(cudaStreamCreateWithFlags(&cu->stream, cudaStreamNonBlocking));
    CREATE_CUDA(cudaEventCreate(&cu->ev[0]));
    CREATE_CUDA(cudaEventCreate(&cu->ev[1]));
    fill_memory(be, dt);
    if (o.weights_only) { /* a model's weights: memory and uploads; the op table stays empty */
        CK_LOG_DBG("cuda: device %d %s, weights only, %s", cu->device, prop.name, ck_dtype_name(dt));
        return be;
    }
    cu->workspace_bytes = CK_CUDA_WORKSPACE_BYTES;
    CREATE_CUDA(cudaMalloc(&cu->workspace, cu->workspace_bytes));
    cu->scratch_bytes = scratch_mb << 20;
    CREATE_CUDA(cudaMalloc(&cu->scratch, cu->scratch_bytes));
    cu->mem_cur = cu->mem_peak = cu->workspace_bytes + cu->scratch_bytes;
    CREATE_CUBLAS(cublasLtCreate(&cu->lt));
    CREATE_CUBLAS(cublasCreate(&cu->blas));
    CREATE_CUBLAS(cublasSetStream(cu->blas, cu->stream));
    /* a user workspace keeps cuBLAS from allocating, which graph capture forbids; the two libraries
     * share it because they only ever run one after the other on the one stream */
    CREATE_CUBLAS(cublasSetWorkspace(cu->blas, cu->workspace, cu->workspace_bytes));
    CREATE_CUBLAS(cublasSetMathMode(cu->blas, CUBLAS_DEFAULT_MATH)); /* no TF32 */

    be->ext.graph_begin      = cuda_graph_begin;
    be->ext.graph_end        = cuda_graph_end;
    be->ext.graph_launch     = cuda_graph_launch;
    be->ext.graph_reset      = cuda_graph_reset;
    be->ext.mem_peak         = cuda_mem_peak;
    be->ext.conv3x3_gn_fast  = ck_conv3x3_gn_cuda_fast;
    be->ext.preprocess       = ck_preprocess_cuda;
    be->ext.postprocess      = ck_postprocess_cuda;
    be->ext.postprocess_scratch_bytes = ck_postprocess_cuda_scratch_bytes;
    be->ext.deflate          = ck_deflate_cuda;
    be->ext.deflate_scratch_bytes = ck_deflate_cuda_scratch_bytes;
    be->ext.pxr24            = ck_pxr24_cuda;
    be->ext.gather           = ck_gather_cuda;
    be->ext.tile_blend       = ck_tile_blend_cuda;
    be->ext.tile_normalize   = ck_tile_normalize_cuda;
    be->ext.download_async   = cuda_download_async;
    be->ext.host_alloc       = cuda_host_alloc;
    be->ext.host_free        = cuda_host_free;
    be->ext.mem_peak_reset   = cuda_mem_peak_reset;
    be->ext.timer_mark       = cuda_timer_mark;
    be->ext.timer_elapsed_ms = cuda_timer_elapsed_ms;
#define CK_FILL(name) be->name = ck_##name##_cuda;
    CK_OPS(CK_FILL)
#undef CK_FILL
#define CK_FILL_OPTIONAL(name) be->ext.name = ck_##name##_cuda;
    CK_OPS_OPTIONAL(CK_FILL_OPTIONAL)
#undef CK_FILL_OPTIONAL
    be->attention = o.fused_attention ? ck_attention_cuda : ck_attention_unfused_cuda;
#ifndef CK_HAVE_CUDA_FUSED_ATTENTION
    if (o.fused_attention) CK_LOG_DBG("CUDA backend: built without the fused attention kernel; using the unfused path");
#endif
    const char *missing = NULL;
    if (!ck_backend_complete(be, &missing)) return create_fail(be, err, "op table", missing);
    ck__conv_cudnn_init(be); /* after alloc/free are set: the conv cache allocates through them */

    CK_LOG_INFO("cuda: device %d %s (sm_%d%d, %d SMs, %.1f GiB), %s, %s attention, scratch %zu MiB", cu->device,
                prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0,
                ck_dtype_name(dt), be->attention == ck_attention_unfused_cuda ? "unfused" : "fused", scratch_mb);
    return be;
}

#endif /* CK_HAVE_CUDA */
