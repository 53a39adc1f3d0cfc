/* 2-D convolution on the CPU, NHWC activations, PyTorch (OC, IC, KH, KW) weights.
 * One output row at a time: gather that row's receptive fields into a per-thread buffer
 * (Wo × IC·KH·KW, bounded by one row, never the whole image) and multiply by the weight matrix
 * with one SGEMM. Zero padding is materialized in the gathered row only.
 * ref: torch.nn.functional.conv2d. */
#include "ops/cpu/ops_cpu.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

void ck_conv2d_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b,
                   int stride, int pad, int dilation) {
    (void)be;
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], IC = x->shape[3];
    const int64_t OC = w->shape[0], KH = w->shape[2], KW = w->shape[3];
    const int64_t Ho = y->shape[1], Wo = y->shape[2];
    const int64_t K  = IC * KH * KW;          /* weight row length, index (ic·KH + ky)·KW + kx */
    const float  *X  = (const float *)x->data; /* (B, H, W, IC) */
    const float  *Wt = (const float *)w->data; /* (OC, K) */
    const float  *Bs = b ? (const float *)b->data : NULL;
    float        *Y  = (float *)y->data; /* (B, Ho, Wo, OC) */

    ck_cpu_blas_serial_begin();
#pragma omp parallel
    {
        float *col = malloc(sizeof(float) * (size_t)(Wo * K)); /* (Wo, K) for one output row */
        CK_ASSERT(col);
#pragma omp for schedule(dynamic, 1)
        for (int64_t row = 0; row < B * Ho; row++) {
            const int64_t bi = row / Ho, oy = row % Ho;
            const float  *xb = X + bi * H * W * IC;
            for (int64_t ox = 0; ox < Wo; ox++) {
                float *cr = col + ox * K;
                for (int64_t ky = 0; ky < KH; ky++) {
                    const int64_t iy = oy * stride - pad + ky * dilation;
                    for (int64_t kx = 0; kx < KW; kx++) {
                        const int64_t ix  = ox * stride - pad + kx * dilation;
                        const int     in  = iy >= 0 && iy < H && ix >= 0 && ix < W;
                        const float  *src = in ? xb + (iy * W + ix) * IC : NULL;
                        for (int64_t ic = 0; ic < IC; ic++) cr[(ic * KH + ky) * KW + kx] = in ? src[ic] : 0.0f;
                    }
                }
            }
            float *yr = Y + row * Wo * OC;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)Wo, (int)OC, (int)K, 1.0f, col, (int)K, Wt,
                        (int)K, 0.0f, yr, (int)OC);
            if (Bs)
                for (int64_t ox = 0; ox < Wo; ox++)
                    for (int64_t oc = 0; oc < OC; oc++) yr[ox * OC + oc] += Bs[oc];
        }
        free(col);
    }
    ck_cpu_blas_serial_end();
}
