/* Bilinear resize (align_corners=False, no antialias) of NHWC feature maps on the CPU.
 * ref: aten/src/ATen/native/UpSample.h area_pixel_compute_source_index and the CPU upsample_bilinear2d
 * kernel: source = scale·(dst + 0.5) − 0.5 clamped at 0 (float), second tap clamped at the edge,
 * out = h0λ·(w0λ·v00 + w1λ·v01) + h1λ·(w0λ·v10 + w1λ·v11). */
#include "ops/cpu/ops_cpu.h"

#include <stdlib.h>

typedef struct {
    int64_t i0, i1;
    float   l0, l1;
} ck_tap2;

static void make_taps(ck_tap2 *t, int64_t out, int64_t in) {
    const float scale = (float)in / (float)out;
    for (int64_t d = 0; d < out; d++) {
        float src = scale * ((float)d + 0.5f) - 0.5f;
        if (src < 0.0f) src = 0.0f;
        int64_t i0 = (int64_t)src;
        if (i0 > in - 1) i0 = in - 1;
        const float l = src - (float)i0;
        t[d].i0       = i0;
        t[d].i1       = i0 + (i0 < in - 1 ? 1 : 0);
        t[d].l1       = l;
        t[d].l0       = 1.0f - l;
    }
}

/* float32 activations: the sum of resizes is the resizes accumulated one after another (same order). */
void ck_resize_sum_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, int n) {
    for (int k = 0; k < n; k++) ck_resize_bilinear_cpu(be, y, &x[k], k > 0);
}

void ck_resize_bilinear_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, int accumulate) {
    (void)be;
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], C = x->shape[3];
    const int64_t Ho = y->shape[1], Wo = y->shape[2];
    const float  *X  = (const float *)x->data; /* (B, H, W, C) */
    float        *Y  = (float *)y->data;       /* (B, Ho, Wo, C) */
    ck_tap2      *ty = malloc(sizeof(ck_tap2) * (size_t)Ho);
    ck_tap2      *tx = malloc(sizeof(ck_tap2) * (size_t)Wo);
    CK_ASSERT(ty && tx);
    make_taps(ty, Ho, H);
    make_taps(tx, Wo, W);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < B * Ho; r++) {
        const int64_t b = r / Ho, oy = r % Ho;
        const float  *r0 = X + (b * H + ty[oy].i0) * W * C, *r1 = X + (b * H + ty[oy].i1) * W * C;
        const float   h0 = ty[oy].l0, h1 = ty[oy].l1;
        float        *yr = Y + r * Wo * C;
        for (int64_t ox = 0; ox < Wo; ox++) {
            const float  w0 = tx[ox].l0, w1 = tx[ox].l1;
            const float *a = r0 + tx[ox].i0 * C, *bq = r0 + tx[ox].i1 * C;
            const float *c = r1 + tx[ox].i0 * C, *d = r1 + tx[ox].i1 * C;
            float       *o = yr + ox * C;
            for (int64_t ch = 0; ch < C; ch++) {
                const float v = h0 * (w0 * a[ch] + w1 * bq[ch]) + h1 * (w0 * c[ch] + w1 * d[ch]);
                o[ch]         = accumulate ? o[ch] + v : v;
            }
        }
    }
    free(ty);
    free(tx);
}
