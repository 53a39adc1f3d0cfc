/* Scaled dot-product attention on the CPU, flash-style: for each block of queries, keys are visited in
 * blocks with a running max and running sum (online softmax), so no Tq×Tk score matrix ever exists and
 * memory stays bounded at 16k+ tokens. Per-thread buffers: scores (BQ × BK), accumulator (BQ × HD).
 * ref: torch.nn.functional.scaled_dot_product_attention (no mask, no dropout). */
#include "ops/cpu/ops_cpu.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#define CK_ATTN_BQ 64
#define CK_ATTN_BK 256

void ck_attention_cpu(ck_backend *be, const ck_tensor *o, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v,
                      float scale) {
    (void)be;
    const int64_t G = q->shape[0], Tq = q->shape[1], HD = q->shape[2], Tk = k->shape[1];
    const float  *Q = (const float *)q->data; /* (G, Tq, HD) */
    const float  *K = (const float *)k->data; /* (G, Tk, HD) */
    const float  *V = (const float *)v->data; /* (G, Tk, HD) */
    float        *O = (float *)o->data;       /* (G, Tq, HD) */
    const int64_t nqb = (Tq + CK_ATTN_BQ - 1) / CK_ATTN_BQ;

    ck_cpu_blas_serial_begin();
#pragma omp parallel
    {
        float *s   = malloc(sizeof(float) * CK_ATTN_BQ * CK_ATTN_BK); /* (BQ, BK) scores */
        float *acc = malloc(sizeof(float) * CK_ATTN_BQ * (size_t)HD);  /* (BQ, HD) */
        float  mx[CK_ATTN_BQ], sum[CK_ATTN_BQ];
        CK_ASSERT(s && acc);
#pragma omp for schedule(dynamic, 1)
        for (int64_t job = 0; job < G * nqb; job++) {
            const int64_t g = job / nqb, q0 = (job % nqb) * CK_ATTN_BQ;
            const int64_t bq = Tq - q0 < CK_ATTN_BQ ? Tq - q0 : CK_ATTN_BQ;
            const float  *qg = Q + (g * Tq + q0) * HD;
            const float  *kg = K + g * Tk * HD;
            const float  *vg = V + g * Tk * HD;
            for (int64_t i = 0; i < bq; i++) mx[i] = -FLT_MAX, sum[i] = 0.0f;
            for (int64_t i = 0; i < bq * HD; i++) acc[i] = 0.0f;
            for (int64_t k0 = 0; k0 < Tk; k0 += CK_ATTN_BK) {
                const int64_t bk = Tk - k0 < CK_ATTN_BK ? Tk - k0 : CK_ATTN_BK;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)bq, (int)bk, (int)HD, scale, qg, (int)HD,
                            kg + k0 * HD, (int)HD, 0.0f, s, (int)bk);
                for (int64_t i = 0; i < bq; i++) {
                    float *si = s + i * bk;
                    float  m  = mx[i];
                    for (int64_t j = 0; j < bk; j++) m = si[j] > m ? si[j] : m;
                    const float corr = expf(mx[i] - m); /* rescales what was accumulated so far */
                    float       rs   = 0.0f;
                    for (int64_t j = 0; j < bk; j++) {
                        si[j] = expf(si[j] - m);
                        rs += si[j];
                    }
                    sum[i] = sum[i] * corr + rs;
                    mx[i]  = m;
                    if (corr != 1.0f)
                        for (int64_t d = 0; d < HD; d++) acc[i * HD + d] *= corr;
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)bq, (int)HD, (int)bk, 1.0f, s, (int)bk,
                            vg + k0 * HD, (int)HD, 1.0f, acc, (int)HD);
            }
            float *og = O + (g * Tq + q0) * HD;
            for (int64_t i = 0; i < bq; i++) {
                const float inv = 1.0f / sum[i];
                for (int64_t d = 0; d < HD; d++) og[i * HD + d] = acc[i * HD + d] * inv;
            }
        }
        free(s);
        free(acc);
    }
    ck_cpu_blas_serial_end();
}
