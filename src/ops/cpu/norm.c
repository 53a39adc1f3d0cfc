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

#define CK_GN_CHUNK 256 /* pixels per partial sum */

/* sc, sh (B, C): GroupNorm's per-sample, per-channel scale rstd·γ and shift β − mean·scale, from statistics
 * computed on x (and written to `stats` when given) or, when frozen, read from `stats`. */
static void gn_coefficients(const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta, int groups, float eps,
                            const ck_tensor *stats, int stats_frozen, float *sc, float *sh) {
    const int64_t B = x->shape[0], C = ck_tensor_last(x);
    const int64_t P  = ck_tensor_numel(x) / (B * C); /* pixels per sample */
    const int64_t CG = C / groups;
    const float  *X  = (const float *)x->data; /* (B, P, C) */
    const float  *Gm = (const float *)gamma->data, *Bt = (const float *)beta->data;
    float        *S  = stats ? (float *)stats->data : NULL; /* (B, groups, 2) */

    float *mean = malloc(sizeof(float) * (size_t)(B * groups));
    float *rstd = malloc(sizeof(float) * (size_t)(B * groups));
    CK_ASSERT(mean && rstd);
    if (stats_frozen) {
        CK_ASSERT(S);
        for (int64_t i = 0; i < B * groups; i++) mean[i] = S[2 * i], rstd[i] = S[2 * i + 1];
    } else {
        /* per-channel partial sums over fixed chunks, combined in chunk order */
        const int64_t nchunk = (P + CK_GN_CHUNK - 1) / CK_GN_CHUNK;
        double       *part   = malloc(sizeof(double) * 2 * (size_t)(nchunk * C));
        CK_ASSERT(part);
        for (int64_t b = 0; b < B; b++) {
            const float *xb = X + b * P * C;
#pragma omp parallel for schedule(static)
            for (int64_t ch = 0; ch < nchunk; ch++) {
                double *s1 = part + ch * C * 2, *s2 = s1 + C;
                for (int64_t c = 0; c < C; c++) s1[c] = s2[c] = 0.0;
                const int64_t p1 = ch * CK_GN_CHUNK + CK_GN_CHUNK < P ? ch * CK_GN_CHUNK + CK_GN_CHUNK : P;
                for (int64_t p = ch * CK_GN_CHUNK; p < p1; p++) {
                    const float *xp = xb + p * C;
                    for (int64_t c = 0; c < C; c++) {
                        const double v = xp[c];
                        s1[c] += v;
                        s2[c] += v * v;
                    }
                }
            }
            for (int g = 0; g < groups; g++) {
                double s = 0.0, s2 = 0.0;
                for (int64_t ch = 0; ch < nchunk; ch++)
                    for (int64_t c = g * CG; c < (g + 1) * CG; c++) {
                        s += part[ch * C * 2 + c];
                        s2 += part[ch * C * 2 + C + c];
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
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            const int64_t g = b * groups + c / CG;
            sc[b * C + c]   = rstd[g] * Gm[c];
            sh[b * C + c]   = Bt[c] - mean[g] * sc[b * C + c];
        }
    free(mean);
    free(rstd);
}

void ck_groupnorm_stats_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                            const ck_tensor *beta, int groups, float eps, const ck_tensor *residual, ck_act act,
                            const ck_tensor *stats, int stats_frozen) {
    (void)be;
    const int64_t B = x->shape[0], C = ck_tensor_last(x);
    const int64_t P = ck_tensor_numel(x) / (B * C); /* pixels per sample */
    const float  *X = (const float *)x->data;       /* (B, P, C) */
    float        *Y = (float *)y->data;
    const float  *R = residual ? (const float *)residual->data : NULL;
    float *sc = malloc(sizeof(float) * (size_t)(B * C)); /* per-channel scale and shift */
    float *sh = malloc(sizeof(float) * (size_t)(B * C));
    CK_ASSERT(sc && sh);
    gn_coefficients(x, gamma, beta, groups, eps, stats, stats_frozen, sc, sh);

#pragma omp parallel for schedule(static)
    for (int64_t bp = 0; bp < B * P; bp++) {
        const int64_t b   = bp / P;
        const float  *xp  = X + bp * C, *scb = sc + b * C, *shb = sh + b * C;
        float        *yp  = Y + bp * C;
        const float  *rp  = R ? R + bp * C : NULL;
        if (rp && act == CK_ACT_RELU)
            for (int64_t c = 0; c < C; c++) {
                const float v = xp[c] * scb[c] + shb[c] + rp[c];
                yp[c]         = v > 0.0f ? v : 0.0f;
            }
        else if (act == CK_ACT_RELU)
            for (int64_t c = 0; c < C; c++) {
                const float v = xp[c] * scb[c] + shb[c];
                yp[c]         = v > 0.0f ? v : 0.0f;
            }
        else
            for (int64_t c = 0; c < C; c++) yp[c] = xp[c] * scb[c] + shb[c] + (rp ? rp[c] : 0.0f);
    }
    free(sc);
    free(sh);
}

#define CK_GN_LINEAR_MAX_C 1024 /* channels normalized per pixel on the stack */

void ck_groupnorm_linear_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                             const ck_tensor *beta, int groups, float eps, const ck_tensor *residual, ck_act act,
                             const ck_tensor *w, const ck_tensor *b, const ck_tensor *stats) {
    (void)be;
    const int64_t B = x->shape[0], C = ck_tensor_last(x), N = w->shape[0];
    const int64_t P = ck_tensor_numel(x) / (B * C);
    CK_ASSERT(C <= CK_GN_LINEAR_MAX_C);
    const float *X = (const float *)x->data, *R = residual ? (const float *)residual->data : NULL; /* (B, P, C) */
    const float *Wt = (const float *)w->data, *Bs = b ? (const float *)b->data : NULL;           /* (N, C), (N) */
    float       *Y = (float *)y->data;                                                            /* (B, P, N) */
    float *sc = malloc(sizeof(float) * (size_t)(B * C)), *sh = malloc(sizeof(float) * (size_t)(B * C));
    CK_ASSERT(sc && sh);
    gn_coefficients(x, gamma, beta, groups, eps, stats, stats != NULL, sc, sh);
#pragma omp parallel for schedule(static)
    for (int64_t bp = 0; bp < B * P; bp++) {
        const int64_t bi = bp / P;
        const float  *xp = X + bp * C, *rp = R ? R + bp * C : NULL, *scb = sc + bi * C, *shb = sh + bi * C;
        float         v[CK_GN_LINEAR_MAX_C]; /* the normalized pixel, in float as groupnorm's output */
        for (int64_t c = 0; c < C; c++) {
            float t = xp[c] * scb[c] + shb[c] + (rp ? rp[c] : 0.0f);
            if (act == CK_ACT_RELU) t = t > 0.0f ? t : 0.0f;
            else if (act == CK_ACT_GELU) t = ck_gelu_erf(t);
            v[c] = t;
        }
        for (int64_t n = 0; n < N; n++) {
            double s = Bs ? Bs[n] : 0.0;
            for (int64_t c = 0; c < C; c++) s += (double)v[c] * Wt[n * C + c];
            Y[bp * N + n] = (float)s;
        }
    }
    free(sc);
    free(sh);
}

void ck_groupnorm_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma,
                      const ck_tensor *beta, int groups, float eps, const ck_tensor *residual, ck_act act) {
    ck_groupnorm_stats_cpu(be, y, x, gamma, beta, groups, eps, residual, act, NULL, 0);
}
