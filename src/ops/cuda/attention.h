/* Fused scaled-dot-product attention on CUDA (flash-style, no score matrix in memory).
 *
 *     // backend_cuda.c fills its op slot with it:
 *     be->attention = ck_attention_cuda;
 *     // o (G,Tq,HD) = softmax(q (G,Tq,HD) · k (G,Tk,HD)ᵀ · scale) · v (G,Tk,HD)
 *     ck_attention_cuda(be, &o, &q, &k, &v, 1.0f / sqrtf(56.0f));
 *
 * The op enqueues on ck_cuda_stream(be), allocates nothing and synchronizes nothing, so it can be
 * captured into a CUDA Graph. Kernels by dtype and shape (src/ops/cuda/attention.cu has the details):
 *   - bf16 / f16, HD in {8, 16, 32, 56, 64}: tensor cores (mma.sync m16n8k16, fp32 accumulation);
 *     Tq <= 16 and Tk <= 64 (Hiera mask units) run one group per warp, everything else runs the
 *     FlashAttention-2-style kernel with 64- or 128-query blocks;
 *   - f32 and any other head dim up to 64: a SIMT kernel with fp32 FMAs (the parity path);
 *   - Hopper (sm_90a images on a 9.0 device), global rows (Tq >= 256, Tk >= 4096): the FA3 kernel at HD 64
 *     (TMA producer + wgmma consumer warpgroups, attention_fa3.cuh; the pad64 layout), else the wgmma kernel
 *     (HD 56/64, 4096+ keys). The environment variable CK_ATTN_VARIANT=<variant name> (simt, small,
 *     flash64, flash128, wgmma, fa3) makes the automatic choice try that variant first wherever it can
 *     serve the call, mask-unit shapes excepted (A/B runs of the whole model without a rebuild).
 * ck_cuda_stream is provided by the CUDA backend (and by standalone harnesses such as
 * dev/cuda/attention_bench.cu).
 */
#ifndef CK_OPS_CUDA_ATTENTION_H
#define CK_OPS_CUDA_ATTENTION_H

/* the C headers first, so that C++ includers do not see them inside the extern "C" block */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "ops/backend.h"

/* The stream every op of this backend enqueues on. */
cudaStream_t ck_cuda_stream(ck_backend *be);
/* The backend's scratch buffer for op temporaries (free between ops) and its size. */
void *ck_cuda_scratch(ck_backend *be, size_t *bytes);
/* A failing CUDA call inside the op: recorded as the backend's failure (backend_cuda.c; the stand-alone
 * bench and emulator define their own). */
void ck__cuda_failed(const char *file, int line, const char *expr, const char *what);

/* The op (its parameters: ops_list.h CK_OP_PARAMS_attention). */
void ck_attention_cuda CK_OP_PARAMS_WITH(ck_backend *be, attention);

/* The attention_qkv op's direct path: y (B, T, C) from qkv (B, T, 3C) through the FA3 kernel without the
 * gather and scatter copies; 0 (nothing enqueued) where FA3 does not serve the shape or device. */
int ck__attention_tokens_fa3(ck_backend *be, const ck_tensor *y, const ck_tensor *qkv, int heads, float scale);
/* The rows (T) from which that path is taken: 1024, or CK_ATTN_TOKENS_MIN (read once) where set; tests lower the
 * default with ck__attention_tokens_min_set (0 restores it). */
int  ck__attention_tokens_min(void);
void ck__attention_tokens_min_set(int rows);

/* The attention_qkv op's windowed path: y (B, Hq, Wq, C) from qkv (B, H, W, 3C) for Hiera mask units (windows of
 * at most 64 keys, q-pooled or not) in one kernel, without the gather and scatter copies; 0 (nothing enqueued)
 * where it does not serve the shape or dtype. CK_ATTN_WINDOWS=0 turns it off. */
int ck__attention_windows(ck_backend *be, const ck_tensor *y, const ck_tensor *qkv, int heads, int win_h, int win_w,
                          int q_pool, float scale);

/* Kernel variants, for benchmarks and tests that want one in particular; the op itself uses AUTO. */
typedef enum ck_attn_variant {
    CK_ATTN_AUTO     = 0,
    CK_ATTN_SIMT     = 1, /* fp32 FMAs, any dtype, HD <= 64 */
    CK_ATTN_SMALL    = 2, /* tensor cores, one group per warp: Tq <= 16, Tk <= 64 */
    CK_ATTN_FLASH64  = 3, /* tensor cores, 64 queries per block (4 warps × 16 rows) */
    CK_ATTN_FLASH128 = 4, /* tensor cores, 128 queries per block (4 warps × 32 rows) */
    CK_ATTN_WGMMA    = 5, /* Hopper wgmma, 2 warpgroups × 64 queries per block (sm_90a image on a 9.0 device) */
    CK_ATTN_FA3      = 6, /* Hopper, HD 64: TMA producer + wgmma consumer warpgroups (attention_fa3.cuh) */
    CK_ATTN_VARIANT_COUNT
} ck_attn_variant;

/* Enqueues `variant` (AUTO: the op's own choice). Returns the variant launched, or -1 (nothing
 * enqueued) when that variant cannot serve this dtype / head dim / shape / device. */
int ck__attention_cuda_variant(ck_backend *be, const ck_tensor *o, const ck_tensor *q, const ck_tensor *k,
                               const ck_tensor *v, float scale, ck_attn_variant variant);
const char *ck__attn_variant_name(int variant);

/* The FA3 variant's configurations (a ladder of block shapes and schedules, attention_fa3.cuh): how many,
 * each one's name, and which one the variant launches from now on (-1: chosen per shape, the default;
 * process-wide; benches only). */
int         ck__attn_fa3_configs(void);
const char *ck__attn_fa3_config_name(int config);
void        ck__attn_fa3_select(int config);

#ifdef __cplusplus
}
#endif

#endif
