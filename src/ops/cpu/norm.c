/* LayerNorm and GroupNorm on the CPU. ref: torch.nn.LayerNorm (biased variance, eps inside the sqrt),
 * torch.nn.GroupNorm (per sample, groups of consecutive channels).
 * Statistics accumulate in double: the reference must not be the least accurate party in a parity test.
 * GroupNorm partial sums are formed over fixed row chunks and combined in chunk order, so the result is
 * bitwise independent of the thread count. */
#include "ops/cpu/ops_cpu.h"

#include <math.h>
#include <stdlib.h>

void ck_layernorm_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                      const ck_tensor *beta, float eps) {
    (void)be;
    const int64_t C = ck_tensor_last(x);
    const int64_t M = ck_tensor_numel(x) / C;
    const float  *X = (const float *)x->data; /* (M, C) */
    float        *Y = (float *)y->data;       /* (M, C) */
    const float  *G = (const float *)gamma->data, *Bt = (const float *)beta->data;
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < M; m++) {
        const float *xr  = X + m * C;
        double       sum = 0.0;
        for (int64_t c = 0; c < C; c++) sum += xr[c];
        const double mean = sum / (double)C;
        double       var  = 0.0;
        for (int64_t c = 0; c < C; c++) {
            double d = xr[c] - mean;
            var += d * d;
        }
        var /= (double)C;
        const float rstd = (float)(1.0 / sqrt(var + (double)eps));
        const float mf   = (float)mean;
        float      *yr   = Y + m * C;
        for (int64_t c = 0; c < C; c++) yr[c] = (xr[c] - mf) * rstd * G[c] + Bt[c];
    }
}

#define CK_GN_CHUNK 64 /* pixels per partial sum */

void ck_groupnorm_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                      const ck_tensor *beta, int groups, float eps, const ck_tensor *residual, ck_act act,
                      const ck_tensor *stats, int stats_frozen) {
    (void)be;
    const int64_t B = x->shape[0], C = ck_tensor_last(x);
    const int64_t P  = ck_tensor_numel(x) / (B * C); /* pixels per sample */
    const int64_t CG = C / groups;
    const float  *X  = (const float *)x->data; /* (B, P, C) */
    float        *Y  = (float *)y->data;
    const float  *R  = residual ? (const float *)residual->data : NULL;
    const float  *Gm = (const float *)gamma->data, *Bt = (const float *)beta->data;
    float        *S  = stats ? (float *)stats->data : NULL; /* (B, groups, 2) */

    float *mean = malloc(sizeof(float) * (size_t)(B * groups));
    float *rstd = malloc(sizeof(float) * (size_t)(B * groups));
    CK_ASSERT(mean && rstd);
    if (stats_frozen) {
        CK_ASSERT(S);
        for (int64_t i = 0; i < B * groups; i++) mean[i] = S[2 * i], rstd[i] = S[2 * i + 1];
    } else {
        const int64_t nchunk = (P + CK_GN_CHUNK - 1) / CK_GN_CHUNK;
        double       *part   = malloc(sizeof(double) * 2 * (size_t)(nchunk * groups));
        CK_ASSERT(part);
        for (int64_t b = 0; b < B; b++) {
            const float *xb = X + b * P * C;
#pragma omp parallel for schedule(static)
            for (int64_t ch = 0; ch < nchunk; ch++) {
                double *pc = part + ch * groups * 2;
                for (int g = 0; g < groups; g++) pc[2 * g] = pc[2 * g + 1] = 0.0;
                const int64_t p1 = ch * CK_GN_CHUNK + CK_GN_CHUNK < P ? ch * CK_GN_CHUNK + CK_GN_CHUNK : P;
                for (int64_t p = ch * CK_GN_CHUNK; p < p1; p++) {
                    const float *xp = xb + p * C;
                    for (int g = 0; g < groups; g++) {
                        double s = 0.0, s2 = 0.0;
                        for (int64_t c = g * CG; c < (g + 1) * CG; c++) {
                            s += xp[c];
                            s2 += (double)xp[c] * xp[c];
                        }
                        pc[2 * g] += s;
                        pc[2 * g + 1] += s2;
                    }
                }
            }
            for (int g = 0; g < groups; g++) {
                double s = 0.0, s2 = 0.0;
                for (int64_t ch = 0; ch < nchunk; ch++) {
                    s += part[(ch * groups + g) * 2];
                    s2 += part[(ch * groups + g) * 2 + 1];
                }
                const double n = (double)(P * CG);
                const double m = s / n;
                double       v = s2 / n - m * m; /* double sums keep this well conditioned at our scales */
                if (v < 0) v = 0;
                mean[b * groups + g] = (float)m;
                rstd[b * groups + g] = (float)(1.0 / sqrt(v + (double)eps));
            }
        }
        free(part);
        if (S)
            for (int64_t i = 0; i < B * groups; i++) S[2 * i] = mean[i], S[2 * i + 1] = rstd[i];
    }

#pragma omp parallel for schedule(static)
    for (int64_t bp = 0; bp < B * P; bp++) {
        const int64_t b  = bp / P;
        const float  *xp = X + bp * C;
        float        *yp = Y + bp * C;
        const float  *rp = R ? R + bp * C : NULL;
        for (int64_t c = 0; c < C; c++) {
            const int   g  = (int)(c / CG);
            const float sc = rstd[b * groups + g] * Gm[c];
            float       v  = xp[c] * sc + (Bt[c] - mean[b * groups + g] * sc);
            if (rp) v += rp[c];
            if (act == CK_ACT_RELU) v = v > 0.0f ? v : 0.0f;
            yp[c] = v;
        }
    }
    free(mean);
    free(rstd);
}
