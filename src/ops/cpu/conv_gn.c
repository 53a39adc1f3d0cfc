/* The fused refiner's ops on the CPU (ops_list.h conv3x3_gn, gn_moments_stats): the reference the CUDA kernel
 * is held to, written as the composition it replaces. conv3x3_gn forms the band's input rows (GroupNorm + ReLU
 * with frozen statistics, the groupnorm op's operations; image rows outside [0, H) as zero rows), runs
 * ck_conv2d_cpu over them, and takes the moments of each row segment in float64 (two passes: mean, then
 * Σ(v − mean)²); with a residual it is added after the affine, before the ReLU (the groupnorm op's order), and
 * a_out receives the band's own rows of the formed input. gn_moments_stats merges them in float64, rows then segments in order: mean = Σ nᵢ·mᵢ / N,
 * M2 = Σ M2ᵢ + nᵢ·(mᵢ − mean)² (Chan's pairwise merge, summed out). */
#include "ops/cpu/ops_cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ck_conv3x3_gn_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w,
                       const ck_tensor *b, int dilation, int row0, const ck_tensor *x_stats, const ck_tensor *gamma,
                       const ck_tensor *beta, const ck_tensor *residual, const ck_tensor *a_out,
                       const ck_tensor *moments) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], C = x->shape[3], h = y->shape[1];
    const int64_t OC = y->shape[3], groups = moments->shape[3], nseg = moments->shape[2], CG = OC / groups;
    const int64_t gx = x_stats ? ck_tensor_numel(x_stats) / (2 * B) : 1, CGx = C / gx, d = dilation;
    const int64_t rows = h + 2 * d; /* the band's input rows [row0 − d, row0 + h + d) */
    const float  *X = (const float *)x->data; /* (B, H, W, C) */
    float        *Y = (float *)y->data;       /* (B, h, W, C) */
    float        *M = (float *)moments->data; /* (B, H, nseg, groups, 2) */
    const float  *R = residual ? (const float *)residual->data : NULL; /* (B, H, W, C) */
    float        *A = a_out ? (float *)a_out->data : NULL;            /* (B, H, W, C) */
    float        *a = malloc(sizeof(float) * (size_t)(rows * W * C)); /* (1, rows, W, C) */
    CK_ASSERT(a);
    for (int64_t n = 0; n < B; n++) {
        for (int64_t r = 0; r < rows; r++) {
            const int64_t iy = row0 - d + r;
            float        *ar = a + r * W * C;
            if (iy < 0 || iy >= H) {
                memset(ar, 0, sizeof(float) * (size_t)(W * C));
                continue;
            }
            const float *xr = X + ((n * H + iy) * W) * C;
            const float *rr = R ? R + ((n * H + iy) * W) * C : NULL;
            for (int64_t i = 0; i < W * C; i++) {
                const int64_t c = i % C;
                if (!x_stats) {
                    ar[i] = xr[i];
                    continue;
                }
                const float *st = (const float *)x_stats->data + (n * gx + c / CGx) * 2;
                const float  sc = st[1] * ((const float *)gamma->data)[c];
                const float  sh = ((const float *)beta->data)[c] - st[0] * sc;
                const float  v  = rr ? xr[i] * sc + sh + rr[i] : xr[i] * sc + sh;
                ar[i]           = v > 0.0f ? v : 0.0f;
            }
            if (A && iy >= row0 && iy < row0 + h) memcpy(A + ((n * H + iy) * W) * C, ar, sizeof(float) * (size_t)(W * C));
        }
        const ck_tensor in  = ck_tensor_make(a, CK_DTYPE_F32, 4, (int64_t[]){1, rows, W, C});
        const ck_tensor out = ck_tensor_make(Y + n * h * W * OC, CK_DTYPE_F32, 4, (int64_t[]){1, h, W, OC});
        ck_conv2d_cpu(be, &out, &in, w, b, 1, 0, d, dilation);
        for (int64_t i = 0; i < h; i++)
            for (int64_t s = 0; s < nseg; s++) {
                const int64_t p0 = s * CK_GN_SEG, p1 = p0 + CK_GN_SEG < W ? p0 + CK_GN_SEG : W;
                const float  *yr = Y + ((n * h + i) * W) * OC;
                for (int64_t g = 0; g < groups; g++) {
                    double sum = 0.0, m2 = 0.0;
                    for (int64_t p = p0; p < p1; p++)
                        for (int64_t k = 0; k < CG; k++) sum += yr[p * OC + g * CG + k];
                    const double mean = sum / (double)((p1 - p0) * CG);
                    for (int64_t p = p0; p < p1; p++)
                        for (int64_t k = 0; k < CG; k++) {
                            const double dv = yr[p * OC + g * CG + k] - mean;
                            m2 += dv * dv;
                        }
                    float *m = M + ((((n * H + row0 + i) * nseg + s) * groups) + g) * 2;
                    m[0] = (float)mean, m[1] = (float)m2;
                }
            }
    }
    free(a);
}

void ck_gn_moments_stats_cpu(ck_backend *be, const ck_tensor *stats, const ck_tensor *moments, int width,
                             int group_size, float eps) {
    (void)be;
    const int64_t B = moments->shape[0], H = moments->shape[1], nseg = moments->shape[2], groups = moments->shape[3];
    const float  *M = (const float *)moments->data;
    float        *S = (float *)stats->data; /* (B, groups, 2) */
    for (int64_t n = 0; n < B; n++)
        for (int64_t g = 0; g < groups; g++) {
            /* two passes over the segments, sums only: mean = Σ nᵢ·mᵢ / N, M2 = Σ M2ᵢ + nᵢ·(mᵢ − mean)² */
            double cnt = 0.0, sum = 0.0, m2 = 0.0;
            for (int64_t r = 0; r < H; r++)
                for (int64_t s = 0; s < nseg; s++) {
                    const float  *m  = M + (((n * H + r) * nseg + s) * groups + g) * 2;
                    const double  nb = (double)(s + 1 < nseg ? CK_GN_SEG : width - s * CK_GN_SEG) * group_size;
                    cnt += nb, sum += nb * m[0];
                }
            const double mean = sum / cnt;
            for (int64_t r = 0; r < H; r++)
                for (int64_t s = 0; s < nseg; s++) {
                    const float  *m  = M + (((n * H + r) * nseg + s) * groups + g) * 2;
                    const double  nb = (double)(s + 1 < nseg ? CK_GN_SEG : width - s * CK_GN_SEG) * group_size;
                    const double  dl = (double)m[0] - mean;
                    m2 += (double)m[1] + nb * dl * dl;
                }
            const double var = m2 / cnt;
            S[(n * groups + g) * 2]     = (float)mean;
            S[(n * groups + g) * 2 + 1] = (float)(1.0 / sqrt((var > 0.0 ? var : 0.0) + (double)eps));
        }
}
