/* 2-D convolution on the CPU, NHWC activations, PyTorch (OC, IC, KH, KW) weights.
 * A band of output rows at a time: gather the band's receptive fields into a per-thread buffer
 * (band × Wo × KH·KW·IC, bounded by a few rows, never the whole image; tap-major so each tap is one
 * contiguous copy of IC channels) and multiply by the weights, permuted once per call to the same
 * tap-major order, with one SGEMM. Zero padding is materialized in the gathered rows only.
 * ref: torch.nn.functional.conv2d. */
#include "ops/cpu/ops_cpu.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define CK_CONV_BAND_PIXELS 2048 /* output pixels per SGEMM: amortizes the weight packing */

void ck_conv2d_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b,
                   int stride, int pad_h, int pad_w, int dilation) {
    (void)be;
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], IC = x->shape[3];
    const int64_t OC = w->shape[0], KH = w->shape[2], KW = w->shape[3];
    const int64_t Ho = y->shape[1], Wo = y->shape[2];
    const int64_t K  = IC * KH * KW;
    const float  *X  = (const float *)x->data; /* (B, H, W, IC) */
    const float  *Wt = (const float *)w->data; /* (OC, IC, KH, KW) */
    const float  *Bs = b ? (const float *)b->data : NULL;
    float        *Y  = (float *)y->data; /* (B, Ho, Wo, OC) */

    float *Wp = malloc(sizeof(float) * (size_t)(OC * K)); /* (OC, KH, KW, IC): tap-major */
    CK_ASSERT(Wp);
    for (int64_t oc = 0; oc < OC; oc++)
        for (int64_t ic = 0; ic < IC; ic++)
            for (int64_t t = 0; t < KH * KW; t++) Wp[(oc * KH * KW + t) * IC + ic] = Wt[(oc * IC + ic) * KH * KW + t];

    const int64_t band   = Wo >= CK_CONV_BAND_PIXELS ? 1 : CK_CONV_BAND_PIXELS / Wo; /* rows per SGEMM */
    const int64_t nbands = (B * Ho + band - 1) / band;
    ck_cpu_blas_serial_begin();
#pragma omp parallel
    {
        float *col = malloc(sizeof(float) * (size_t)(band * Wo * K)); /* (band·Wo, K) */
        CK_ASSERT(col);
#pragma omp for schedule(dynamic, 1)
        for (int64_t bi = 0; bi < nbands; bi++) {
            const int64_t r0 = bi * band, r1 = r0 + band < B * Ho ? r0 + band : B * Ho;
            for (int64_t row = r0; row < r1; row++) {
                const int64_t n = row / Ho, oy = row % Ho;
                const float  *xb = X + n * H * W * IC;
                for (int64_t ox = 0; ox < Wo; ox++) {
                    float *cr = col + ((row - r0) * Wo + ox) * K;
                    for (int64_t ky = 0; ky < KH; ky++) {
                        const int64_t iy = oy * stride - pad_h + ky * dilation;
                        for (int64_t kx = 0; kx < KW; kx++, cr += IC) {
                            const int64_t ix = ox * stride - pad_w + kx * dilation;
                            if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                                memcpy(cr, xb + (iy * W + ix) * IC, sizeof(float) * (size_t)IC);
                            else
                                memset(cr, 0, sizeof(float) * (size_t)IC);
                        }
                    }
                }
            }
            const int64_t M  = (r1 - r0) * Wo;
            float        *yr = Y + r0 * Wo * OC;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)OC, (int)K, 1.0f, col, (int)K, Wp,
                        (int)K, 0.0f, yr, (int)OC);
            if (Bs)
                for (int64_t i = 0; i < M; i++)
                    for (int64_t oc = 0; oc < OC; oc++) yr[i * OC + oc] += Bs[oc];
        }
        free(col);
    }
    ck_cpu_blas_serial_end();
    free(Wp);
}
