/* The fg un-mixing's per-cell and per-pixel arithmetic (frame_ops.h ck_fg_unmix states what it computes), written
 * once for both backends: unmix.c on the host, frame/cuda/postprocess.cu on the device (compiled without
 * multiply-add contraction, so that the two round alike; the device's powf may still differ by an ulp).
 *
 * The screen estimate lives on a grid of CK_UNMIX_CELL-pixel cells:
 *   cells (gh, gw, 4) double   Σ linear R, G, B over the cell's screen pixels (alpha < CK_UNMIX_SCREEN_ALPHA), and
 *                              their count, summed in row-major pixel order
 *   est   (gh, gw, 5) float    B (3), known (1, or 0: no screen within 256 px) and near (1: from screen within 64 px)
 */
#ifndef CK_UNMIX_PX_H
#define CK_UNMIX_PX_H

#include "frame/colorspace.h"

#define CK_UNMIX_CELL 16             /* pixels per cell side */
#define CK_UNMIX_SCREEN_ALPHA 0.02f  /* the keyer's alpha below which a pixel is screen */
#define CK_UNMIX_RAMP 0.15f          /* the un-mixed fg is blended in over alpha ∈ [lo, lo + ramp] */
#define CK_UNMIX_FAR_ALPHA 0.8f      /* far estimates serve alpha from here (fully from here + ramp) */
#define CK_UNMIX_RADII 3             /* cells: 1, 4, 16 around (16, 64, 256 px) */

CK_CS_FN int ck_unmix_radius(int r) { return r == 0 ? 1 : r == 1 ? 4 : 16; }

CK_CS_FN float ck_unmix_clamp01(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }

/* A screen pixel's linear value lin (3; ck_cs_plate_px: never negative or NaN) counts in its cell's sums when
 * finite: one +Inf in a linear plate would otherwise spoil every box that holds it. */
CK_CS_FN int ck_unmix_counts(const float *lin) {
    return lin[0] <= 3.402823466e38f && lin[1] <= 3.402823466e38f && lin[2] <= 3.402823466e38f;
}

/* The box of cells [*y0, *y1) × [*x0, *x1) within radius step r (0..2) of cell (cy, cx), clipped to the grid. */
CK_CS_FN void ck_unmix_box(int r, int cx, int cy, int gw, int gh, int *y0, int *y1, int *x0, int *x1) {
    const int k = ck_unmix_radius(r);
    *y0 = cy - k < 0 ? 0 : cy - k, *y1 = cy + k + 1 > gh ? gh : cy + k + 1;
    *x0 = cx - k < 0 ? 0 : cx - k, *x1 = cx + k + 1 > gw ? gw : cx + k + 1;
}

/* The estimate e (5) from the sums of the box at radius step r, when that box holds screen: returns 1. */
CK_CS_FN int ck_unmix_take(const double *sum, int r, float *e) {
    if (sum[3] < 0.5) return 0;
    for (int k = 0; k < 3; k++) e[k] = (float)(sum[k] / sum[3]);
    e[3] = 1.0f;
    e[4] = r < 2 ? 1.0f : 0.0f;
    return 1;
}

/* Cell (cx, cy)'s sums (4: linear R, G, B and the count) of its screen pixels, in row-major pixel order (so that
 * both backends add in the same order). alpha (h, w) at alpha[i · astride] (1: a matte; 4: RGBA-like pixels),
 * plate (h, w, 3) as given, in colour space cs->colorspace. */
CK_CS_FN void ck_unmix_cell_sum(const float *alpha, int astride, const float *plate, int w, int h, int cx, int cy,
                                const ck_cs_post *cs, double *out) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, n = 0.0;
    for (int y = cy * CK_UNMIX_CELL; y < (cy + 1) * CK_UNMIX_CELL && y < h; y++)
        for (int x = cx * CK_UNMIX_CELL; x < (cx + 1) * CK_UNMIX_CELL && x < w; x++) {
            const long long i = (long long)y * w + x;
            if (!(alpha[i * astride] < CK_UNMIX_SCREEN_ALPHA)) continue; /* NaN alpha is not screen */
            float lin[3];
            ck_cs_plate_px(cs->colorspace, cs->to_working, plate + 3 * i, lin);
            if (!ck_unmix_counts(lin)) continue;
            s0 += lin[0], s1 += lin[1], s2 += lin[2], n += 1.0;
        }
    out[0] = s0, out[1] = s1, out[2] = s2, out[3] = n;
}

/* Cell (cx, cy)'s estimate e (5) from cells (gh, gw, 4): the nearest box (radius 1, 4, then 16 cells) that holds
 * screen, its cells summed directly in row-major order; all zero when none does. */
CK_CS_FN void ck_unmix_cell_est(const double *cells, int gw, int gh, int cx, int cy, float *e) {
    e[0] = e[1] = e[2] = e[3] = e[4] = 0.0f;
    for (int r = 0; r < CK_UNMIX_RADII; r++) {
        int    y0, y1, x0, x1;
        double sum[4] = {0.0, 0.0, 0.0, 0.0};
        ck_unmix_box(r, cx, cy, gw, gh, &y0, &y1, &x0, &x1);
        for (int yy = y0; yy < y1; yy++)
            for (int xx = x0; xx < x1; xx++)
                for (int k = 0; k < 4; k++) sum[k] += cells[((long long)yy * gw + xx) * 4 + k];
        if (ck_unmix_take(sum, r, e)) return;
    }
}

/* The pixel (x, y)'s straight sRGB fg (3), in place: blended toward the un-mixed F with the weight of its alpha
 * a (clamped) and of the estimate's trust, from est (gh, gw, 5) and the plate's pixel as given (3, colour space
 * cs->colorspace). Nothing changes where a ≤ lo or no cell around holds an estimate. */
CK_CS_FN void ck_unmix_px(const float *est, int gw, int gh, int x, int y, float alpha, const float *plate_px,
                          const ck_cs_post *cs, float lo, float *fg) {
    const float a = ck_unmix_clamp01(alpha);
    if (!(a > lo)) return;
    /* bilinear between cell centres ((c + 0.5)·CELL), clamped at the border cells */
    const float fy = ((float)y + 0.5f) / CK_UNMIX_CELL - 0.5f, fx = ((float)x + 0.5f) / CK_UNMIX_CELL - 0.5f;
    const int   ya = fy < 0.0f ? 0 : (int)fy, yb = ya + 1 < gh ? ya + 1 : gh - 1;
    const int   xa = fx < 0.0f ? 0 : (int)fx, xb = xa + 1 < gw ? xa + 1 : gw - 1;
    const float ty = fy < 0.0f ? 0.0f : fy - (float)ya, tx = fx < 0.0f ? 0.0f : fx - (float)xa;
    const float *e00 = est + ((long long)ya * gw + xa) * 5, *e01 = est + ((long long)ya * gw + xb) * 5;
    const float *e10 = est + ((long long)yb * gw + xa) * 5, *e11 = est + ((long long)yb * gw + xb) * 5;
    float        b[5];
    for (int k = 0; k < 5; k++)
        b[k] = (1.0f - ty) * ((1.0f - tx) * e00[k] + tx * e01[k]) + ty * ((1.0f - tx) * e10[k] + tx * e11[k]);
    /* cells without an estimate weigh 0 in b[0..2] and in b[3]: renormalized by the known share */
    if (!(b[3] > 0.0f)) return;
    /* an estimate from screen farther than 64 px (behind a hole in a large subject, say) may be off by the
     * screen's unevenness, which 1/α amplifies: only nearly opaque pixels, where it hardly matters, use it */
    const float known = b[3], near = b[4] < known ? b[4] : known;
    const float trust = near + (known - near) * ck_unmix_clamp01((a - CK_UNMIX_FAR_ALPHA) / CK_UNMIX_RAMP);
    const float wgt   = ck_unmix_clamp01((a - lo) / CK_UNMIX_RAMP) * trust;
    float       lin[3];
    ck_cs_plate_px(cs->colorspace, cs->to_working, plate_px, lin);
    for (int c = 0; c < 3; c++) {
        const float f_lin = (lin[c] - (1.0f - a) * (b[c] / known)) / a;
        const float f     = ck_cs_srgb_encode(ck_unmix_clamp01(f_lin));
        fg[c]             = wgt * f + (1.0f - wgt) * fg[c];
    }
}

#endif
