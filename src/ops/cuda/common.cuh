/* Shared pieces of the CUDA kernels: error checks, dtype load/store, vector types, reductions, launch
 * helpers. Included by every .cu file of ops/cuda (C++17, nvcc).
 *
 *     CK_DISPATCH_FLOAT(y->dtype, T, my_kernel<T><<<grid, block, 0, cu->stream>>>(...));
 *     CK_KERNEL_CHECK(cu);   // after every launch: launch errors abort with file:line
 *
 * Numerics: no fast-math anywhere (erff/expf/sqrtf/division are the accurate versions); values are
 * widened to float on load and rounded once (round-to-nearest-even) on store.
 */
#ifndef CK_CUDA_COMMON_CUH
#define CK_CUDA_COMMON_CUH

/* The C headers first and outside extern "C": the project headers below include them again from
 * inside an extern "C" block, where the C++ overloads of <math.h>/<stdlib.h> must not be declared. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" {
#include "ops/backend.h"
}
#include "ops/cuda/ops_cuda.h"

/* ---- errors: a failing call inside an op is recorded as the backend's failure (ops_cuda.h) and the
 * op carries on; the ops after it are skipped and the context reports CK_STATUS_EDEVICE ---- */

#define CK_CUDA_CHECK(call)                                                                        \
    do {                                                                                           \
        cudaError_t ck_e_ = (call);                                                                \
        if (ck_e_ != cudaSuccess) ck__cuda_failed(__FILE__, __LINE__, #call, cudaGetErrorString(ck_e_)); \
    } while (0)

#define CK_CUBLAS_CHECK(call)                                                                        \
    do {                                                                                             \
        cublasStatus_t ck_s_ = (call);                                                               \
        if (ck_s_ != CUBLAS_STATUS_SUCCESS) ck__cuda_failed(__FILE__, __LINE__, #call, cublasGetStatusString(ck_s_)); \
    } while (0)

/* After every launch. With CK_CUDA_SYNC=1 in the environment the stream is also synchronized (outside
 * graph capture), so an asynchronous fault is reported at the kernel that caused it. */
#define CK_KERNEL_CHECK(cu) ck__cuda_kernel_check((cu), __FILE__, __LINE__)

/* ---- dtypes ---- */

typedef __nv_bfloat16 ck_bf16_t;
typedef __half        ck_f16_t;

template <typename T> __device__ __forceinline__ float ck_ldf(T v);
template <> __device__ __forceinline__ float ck_ldf<float>(float v) { return v; }
template <> __device__ __forceinline__ float ck_ldf<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float ck_ldf<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T ck_stf(float v);
template <> __device__ __forceinline__ float ck_stf<float>(float v) { return v; }
template <> __device__ __forceinline__ __half ck_stf<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ck_stf<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

/* Runs `...` with T bound to the C++ type of a float dtype (F32, F16, BF16). */
#define CK_DISPATCH_FLOAT(dt, T, ...)                                                              \
    do {                                                                                           \
        switch (dt) {                                                                              \
        case CK_DTYPE_F32: { typedef float T; __VA_ARGS__; } break;                                \
        case CK_DTYPE_F16: { typedef __half T; __VA_ARGS__; } break;                               \
        case CK_DTYPE_BF16: { typedef __nv_bfloat16 T; __VA_ARGS__; } break;                       \
        default: CK_ASSERT(!"CUDA backend: tensor dtype is not float32/float16/bfloat16");         \
        }                                                                                          \
    } while (0)

static inline int ck_is_float_dtype(ck_dtype t) {
    return t == CK_DTYPE_F32 || t == CK_DTYPE_F16 || t == CK_DTYPE_BF16;
}

/* ---- vectors: V elements of T in one aligned load/store (16 bytes when V = 16 / sizeof(T)) ---- */

template <typename T, int V> struct alignas(sizeof(T) * V) ck_vec {
    T v[V];
};

template <typename T, int V> __device__ __forceinline__ ck_vec<T, V> ck_vload(const T *p) {
    return *reinterpret_cast<const ck_vec<T, V> *>(p);
}
template <typename T, int V> __device__ __forceinline__ void ck_vstore(T *p, const ck_vec<T, V> &v) {
    *reinterpret_cast<ck_vec<T, V> *>(p) = v;
}

/* Elements of T per 16-byte vector. */
template <typename T> struct ck_v16 {
    static constexpr int V = 16 / (int)sizeof(T);
};

static inline int ck_aligned(const void *p, size_t a) { return ((uintptr_t)p % a) == 0; }

/* ---- math (exact definitions shared with the CPU reference) ---- */

__device__ __forceinline__ float ck_gelu_erf_d(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }
__device__ __forceinline__ float ck_sigmoid_d(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float ck_act_d(float v, int act) {
    if (act == CK_ACT_RELU) return v > 0.0f ? v : 0.0f;
    if (act == CK_ACT_GELU) return ck_gelu_erf_d(v);
    return v;
}

/* ---- reductions ---- */

__device__ __forceinline__ float ck_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* ---- launches ---- */

/* Blocks for a grid-stride loop over n items: enough to fill the GPU, bounded so the grid stays small. */
static inline unsigned ck_grid_for(const ck_cuda *cu, int64_t n, int threads) {
    int64_t want = (n + threads - 1) / threads;
    int64_t cap  = (int64_t)cu->sm_count * 32;
    if (want > cap) want = cap;
    if (want < 1) want = 1;
    return (unsigned)want;
}

#define CK_GRID_STRIDE(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

#endif
