/* Unfused scaled dot-product attention on CUDA: the reference path ("sdpa=off") that the fused kernel
 * (attention.cu) is checked against on the GPU. ref: torch.nn.functional.scaled_dot_product_attention
 * (no mask, no dropout); CPU reference ops/cpu/attention.c.
 *
 * Per chunk of (groups × queries), sized to fit cu->scratch:
 *   S (gb, qc, Tk) float32 = scale · Q Kᵀ      cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F
 *   P (gb, qc, Tk) act dtype = softmax_rows(S)  one warp per row, fp32 max / Σexp, normalized here
 *   O rows of the chunk = P V                   cublasGemmStridedBatchedEx, CUBLAS_COMPUTE_32F
 * Memory stays bounded (the full G·Tq·Tk never exists at 16k tokens); fp32 mode is exact fp32 (no TF32:
 * the handle keeps CUBLAS_DEFAULT_MATH and the compute type is plain 32F). In bf16/fp16 the
 * probabilities are rounded once to the activation dtype before P·V, as flash kernels do. */
#include "ops/cuda/common.cuh"

#include <float.h>

template <typename T>
__global__ void softmax_rows_kernel(T *p, const float *s, int64_t rows, int Tk) {
    const int     lane = threadIdx.x & 31;
    const int64_t row  = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    const float *sr = s + row * Tk; /* (Tk) scores of this row */
    float        m  = -FLT_MAX;
    for (int j = lane; j < Tk; j += 32) m = fmaxf(m, sr[j]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float sum = 0.0f;
    for (int j = lane; j < Tk; j += 32) sum += expf(sr[j] - m);
    const float inv = 1.0f / ck_warp_sum(sum);
    T          *pr  = p + row * Tk; /* (Tk) probabilities */
    /* in place when T is float (p == s): each element is read before this lane overwrites it */
    for (int j = lane; j < Tk; j += 32) pr[j] = ck_stf<T>(expf(sr[j] - m) * inv);
}

static cudaDataType_t cuda_type(ck_dtype t) {
    return t == CK_DTYPE_F16 ? CUDA_R_16F : t == CK_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

extern "C" void ck_attention_unfused_cuda(ck_backend *be, const ck_tensor *o, const ck_tensor *q, const ck_tensor *k,
                                          const ck_tensor *v, float scale) {
    ck_cuda      *cu = ck_cuda_of(be);
    const ck_dtype dt = q->dtype;
    CK_ASSERT(ck_is_float_dtype(dt) && k->dtype == dt && v->dtype == dt && o->dtype == dt);
    const int64_t G = q->shape[0], Tq = q->shape[1], HD = q->shape[2], Tk = k->shape[1];
    CK_ASSERT(Tq <= 0x7fffffff && Tk <= 0x7fffffff && HD <= 0x7fffffff);
    const size_t es = ck_dtype_size(dt);

    /* rows per chunk: S (float) plus P (act dtype, shares S's storage in fp32) per row of Tk */
    const size_t row_bytes = (size_t)Tk * (sizeof(float) + (dt == CK_DTYPE_F32 ? 0 : es));
    const size_t max_rows  = cu->scratch_bytes / (row_bytes + 64);
    CK_ASSERT(max_rows >= 1);
    int64_t qc, gb; /* queries per group and groups per chunk */
    if ((int64_t)max_rows >= Tq) {
        qc = Tq;
        gb = (int64_t)max_rows / Tq;
        if (gb > G) gb = G;
        if (gb > 65535) gb = 65535;
    } else {
        qc = (int64_t)max_rows;
        gb = 1;
    }
    float *S = (float *)cu->scratch; /* (gb, qc, Tk) scores */
    void  *P = dt == CK_DTYPE_F32 ? (void *)S /* (gb, qc, Tk) probabilities, act dtype */
                                  : (void *)((uint8_t *)cu->scratch + (((size_t)gb * qc * Tk * sizeof(float) + 255) & ~(size_t)255));
    CK_ASSERT((uint8_t *)P + (size_t)gb * qc * Tk * (dt == CK_DTYPE_F32 ? sizeof(float) : es) <=
              (uint8_t *)cu->scratch + cu->scratch_bytes);

    const cudaDataType_t ct = cuda_type(dt);
    const float          one = 1.0f, zero = 0.0f;
    const uint8_t       *Q = (const uint8_t *)q->data, *K = (const uint8_t *)k->data, *Vv = (const uint8_t *)v->data;
    uint8_t             *O = (uint8_t *)o->data; /* q, o: (G, Tq, HD); k, v: (G, Tk, HD) */
    for (int64_t g0 = 0; g0 < G; g0 += gb) {
        const int nb = (int)(G - g0 < gb ? G - g0 : gb);
        for (int64_t q0 = 0; q0 < Tq; q0 += qc) {
            const int nq = (int)(Tq - q0 < qc ? Tq - q0 : qc);
            /* Sᵀ (Tk × nq, ld Tk) = op_T(K_g: HD × Tk, ld HD) · (Q_gᵀ: HD × nq, ld HD), column-major */
            CK_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                cu->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)Tk, nq, (int)HD, &scale, K + (size_t)g0 * Tk * HD * es, ct,
                (int)HD, (long long)(Tk * HD), Q + ((size_t)g0 * Tq + q0) * HD * es, ct, (int)HD, (long long)(Tq * HD),
                &zero, S, CUDA_R_32F, (int)Tk, (long long)qc * Tk, nb, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            /* several groups per chunk only when a chunk holds all Tq queries (qc = Tq = nq) */
            const int64_t rows = nb == 1 ? nq : (int64_t)nb * qc;
            const unsigned grid = (unsigned)((rows + 7) / 8);
            CK_DISPATCH_FLOAT(dt, T, softmax_rows_kernel<T><<<grid, 256, 0, cu->stream>>>((T *)P, S, rows, (int)Tk));
            CK_KERNEL_CHECK(cu);
            /* Oᵀ (HD × nq, ld HD) = (V_gᵀ: HD × Tk, ld HD) · (Pᵀ: Tk × nq, ld Tk) */
            CK_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
                cu->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)HD, nq, (int)Tk, &one, Vv + (size_t)g0 * Tk * HD * es, ct,
                (int)HD, (long long)(Tk * HD), P, ct, (int)Tk, (long long)qc * Tk, &zero,
                O + ((size_t)g0 * Tq + q0) * HD * es, ct, (int)HD, (long long)(Tq * HD), nb, CUBLAS_COMPUTE_32F,
                CUBLAS_GEMM_DEFAULT));
        }
    }
    if (cu->debug_sync && !cu->capturing) CK_CUDA_CHECK(cudaStreamSynchronize(cu->stream));
}
