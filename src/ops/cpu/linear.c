/* Linear layers on the CPU: SGEMM (OpenBLAS) over row blocks, one per OpenMP thread, plus a fused
 * bias/activation/residual epilogue. ref: torch.nn.functional.linear (y = x·Wᵀ + b). */
#include "ops/cpu/ops_cpu.h"

#include <cblas.h>
#include <omp.h>
#include <string.h>

void ck_cpu_blas_serial_begin(void) {
#if CK_HAVE_OPENBLAS
    openblas_set_num_threads(1);
#endif
}
void ck_cpu_blas_serial_end(void) {
    /* BLAS stays single-threaded: every caller parallelizes over its own blocks with OpenMP. */
}

void ck_linear_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b,
                   ck_act act, const ck_tensor *residual) {
    (void)be;
    const int64_t K = w->shape[1], N = w->shape[0];
    const int64_t M = ck_tensor_numel(x) / K;
    float       *Y  = (float *)y->data;                  /* (M, N) */
    const float *X  = (const float *)x->data;            /* (M, K) */
    const float *W  = (const float *)w->data;            /* (N, K) */
    const float *B  = b ? (const float *)b->data : NULL; /* (N) */
    const float *R  = residual ? (const float *)residual->data : NULL;

    /* With no activation the residual is the GEMM's C operand (beta = 1), which also makes the
     * in-place residual update x = x + f(x) free of a temporary. */
    float beta = 0.0f;
    if (R && act == CK_ACT_NONE) {
        if (R != Y) memcpy(Y, R, (size_t)(M * N) * sizeof(float));
        beta = 1.0f;
        R    = NULL;
    }
    CK_ASSERT(R == NULL || R != Y);
    /* Rows are split across the OpenMP threads, each running a single-threaded SGEMM on its block:
     * one thread pool for the whole engine, so BLAS workers never spin against OpenMP workers. */
    ck_cpu_blas_serial_begin();
#pragma omp parallel
    {
        const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
        const int64_t chunk = (M + nt - 1) / nt, m0 = t * chunk, m1 = m0 + chunk < M ? m0 + chunk : M;
        if (m1 > m0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(m1 - m0), (int)N, (int)K, 1.0f, X + m0 * K,
                        (int)K, W, (int)K, beta, Y + m0 * N, (int)N);
    }
    ck_cpu_blas_serial_end();
    if (!B && act == CK_ACT_NONE && !R) return;
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < M; m++) {
        float *yr = Y + m * N;
        if (B)
            for (int64_t n = 0; n < N; n++) yr[n] += B[n];
        if (act == CK_ACT_GELU)
            for (int64_t n = 0; n < N; n++) yr[n] = ck_gelu_erf(yr[n]);
        else if (act == CK_ACT_RELU)
            for (int64_t n = 0; n < N; n++) yr[n] = yr[n] > 0.0f ? yr[n] : 0.0f;
        if (R) {
            const float *rr = R + m * N;
            for (int64_t n = 0; n < N; n++) yr[n] += rr[n];
        }
    }
}

/* layernorm_linear: the composition through xn, as the op defines it. */
void ck_layernorm_linear_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                             const ck_tensor *beta, float eps, const ck_tensor *w, const ck_tensor *b, ck_act act,
                             const ck_tensor *residual, const ck_tensor *xn) {
    ck_layernorm_cpu(be, xn, x, gamma, beta, eps);
    ck_linear_cpu(be, y, xn, w, b, act, residual);
}
