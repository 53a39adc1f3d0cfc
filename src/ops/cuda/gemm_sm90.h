/* A Hopper GEMM for the encoder's linears with the epilogue cuBLASLt cannot do exactly (src/ops/cuda/gemm_sm90.cu):
 *
 *     y (M, N) = epi(a (M, K) · w (N, K)ᵀ),  a = x, or with ln_stats a = LayerNorm(x) formed as the layernorm op
 *                                            forms it: round(((x − mean)·rstd)·γ + β), (mean, rstd) per row given
 *     act NONE: y = round(acc + b + r)                         (cuBLASLt's bias epilogue with beta = 1)
 *     else:     y = round(act(round(acc + b)) + r)             (PyTorch's order: the linear's output rounded,
 *                                                              then the exact erf GELU or ReLU, then the residual)
 *
 * x, w, y, r: float16 or bfloat16, row-major; b: the output dtype (bias_t, as PyTorch's fp16 model and the cuBLASLt
 * path hold it) or float32 (bias_f), or none; r may alias y. K and N multiples of 8, pointers 16-byte aligned.
 * Used by the linear op where it saves a pass (act GELU) when CK_LINEAR_GEMM=1; host emulation
 * dev/cuda/gemm_emu.cpp. */
#ifndef CK_OPS_CUDA_GEMM_SM90_H
#define CK_OPS_CUDA_GEMM_SM90_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ck__gemm_args {
    const void  *x;      /* (M, K) */
    const void  *w;      /* (N, K) */
    void        *y;      /* (M, N) */
    const void  *bias_t; /* (N) in the dtype, or NULL */
    const float *bias_f; /* (N) float32, used when bias_t is NULL; or NULL */
    const void  *res;    /* (M, N) or NULL; may alias y */
    const float *ln_stats; /* (M, 2) (mean, rstd) of x's rows, or NULL: no LayerNorm */
    const float *ln_g, *ln_b; /* (K) float32, with ln_stats */
    int64_t      M;
    int          N, K;
    int          act;    /* ck_act: 0 none, 1 GELU (erf), 2 ReLU */
    int          bf16;   /* 0: float16, 1: bfloat16 */
} ck__gemm_args;

/* Enqueues the GEMM and returns 1, or returns 0 where it cannot run (not a compute capability 9.0 device with
 * the sm_90a image, K or N not a multiple of 8, a pointer not 16-byte aligned). Allocates and synchronizes
 * nothing. */
int ck__gemm_sm90(const ck__gemm_args *a, cudaStream_t stream);

/* The same product for K ≤ 128 and N ≤ 512 (the first stage's linears) with the weight resident in shared memory
 * and one persistent block per SM (gemm_narrow.cu); the same results bit for bit. Returns 0 where it cannot run
 * (as above, or K or N out of its range). */
int ck__gemm_narrow_sm90(const ck__gemm_args *a, cudaStream_t stream);
#define CK_NARROW_MAX_K 128 /* the narrow GEMM's range: the whole weight fits in shared memory */
#define CK_NARROW_MAX_N 512

#ifdef __cplusplus
}
#endif

#endif
