/* The foreground un-mixed from the plate with the compositing equation (frame_ops.h states what it computes).
 *
 * Why: a plate pixel is I = α·F + (1 − α)·B in linear light. Given the keyer's α and the screen B behind the
 * pixel, F = (I − (1 − α)·B) / α follows from the plate itself, and where α is large the plate pins F down
 * better than a small network's guess (the built-in keyer's fg error over semi-transparent and opaque pixels:
 * docs/benchmarks/2026-12-06-h100-j.md). Where α is small the division amplifies every error, so the network's
 * fg is kept there. B comes from the plate where the keyer sees screen, averaged per 16 × 16 cell and spread
 * over the frame the way a clean-plate generator does (the nearest screen within 16, then 64, then 256 px),
 * then interpolated bilinearly between cell centres: smooth enough for uneven screen light, local enough for
 * vignetting. A cell with no screen within 256 px has no estimate: its pixels keep the network's fg; one whose
 * screen lies beyond 64 px serves only nearly opaque pixels (α ≥ 0.8, fully from 0.95).
 */
#include "frame/frame_ops.h"

#include "frame/colorspace.h"

#include <math.h>
#include <stdlib.h>

enum { CELL = 16 };
static const float k_screen_alpha = 0.02f; /* the keyer's alpha below which a pixel is screen */
static const int   k_radii[3]     = {1, 4, 16}; /* cells: 16, 64, 256 px */

static float clamp01(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }

/* Sum over cells [y0, y1) × [x0, x1) of a summed-area table with (gw + 1) columns, 4 values per entry. */
static void box_sum(const double *sat, int gw, int y0, int y1, int x0, int x1, double out[4]) {
    const size_t s = (size_t)gw + 1;
    for (int k = 0; k < 4; k++)
        out[k] = sat[((size_t)y1 * s + x1) * 4 + k] - sat[((size_t)y0 * s + x1) * 4 + k] -
                 sat[((size_t)y1 * s + x0) * 4 + k] + sat[((size_t)y0 * s + x0) * 4 + k];
}

ck_status ck_fg_unmix(float *fg, const float *alpha, const float *plate, int colorspace, int w, int h, float lo) {
    CK_ASSERT(fg && alpha && plate && w > 0 && h > 0 && lo > 0.0f && lo < 1.0f);
    const int gw = (w + CELL - 1) / CELL, gh = (h + CELL - 1) / CELL;
    /* cells: (gh, gw, 4) = Σ linear R, G, B over the cell's screen pixels, and their count; then the
     * summed-area table (gh + 1, gw + 1, 4); then the estimate (gh, gw, 5) = B, known (1, or 0: none) and near
     * (1: from screen within 64 px) */
    double *cells = calloc((size_t)gh * gw * 4, sizeof(double));
    double *sat   = calloc((size_t)(gh + 1) * (gw + 1) * 4, sizeof(double));
    float  *est   = malloc(sizeof(float) * (size_t)gh * gw * 5);
    if (!cells || !sat || !est) {
        free(cells), free(sat), free(est);
        return CK_STATUS_EOOM;
    }
    ck_cs_post cs;
    ck_colorspace_post(colorspace, &cs);

#pragma omp parallel for schedule(static)
    for (int cy = 0; cy < gh; cy++) { /* each cell row's sums in a fixed order: the same bits every run */
        for (int y = cy * CELL; y < (cy + 1) * CELL && y < h; y++)
            for (int x = 0; x < w; x++) {
                const size_t i = (size_t)y * w + x;
                if (!(alpha[i] < k_screen_alpha)) continue; /* NaN alpha is not screen */
                float lin[3];
                ck_cs_plate_px(cs.colorspace, cs.to_working, plate + 3 * i, lin);
                double *c = cells + ((size_t)cy * gw + x / CELL) * 4;
                c[0] += lin[0], c[1] += lin[1], c[2] += lin[2], c[3] += 1.0;
            }
    }
    const size_t s = (size_t)gw + 1;
    for (int cy = 0; cy < gh; cy++)
        for (int cx = 0; cx < gw; cx++)
            for (int k = 0; k < 4; k++)
                sat[((size_t)(cy + 1) * s + cx + 1) * 4 + k] = cells[((size_t)cy * gw + cx) * 4 + k] +
                                                               sat[((size_t)cy * s + cx + 1) * 4 + k] +
                                                               sat[((size_t)(cy + 1) * s + cx) * 4 + k] -
                                                               sat[((size_t)cy * s + cx) * 4 + k];
#pragma omp parallel for schedule(static)
    for (int cy = 0; cy < gh; cy++)
        for (int cx = 0; cx < gw; cx++) {
            float *e = est + ((size_t)cy * gw + cx) * 5;
            e[0] = e[1] = e[2] = e[3] = e[4] = 0.0f;
            for (int r = 0; r < 3; r++) {
                const int y0 = cy - k_radii[r] < 0 ? 0 : cy - k_radii[r], y1 = cy + k_radii[r] + 1 > gh ? gh : cy + k_radii[r] + 1;
                const int x0 = cx - k_radii[r] < 0 ? 0 : cx - k_radii[r], x1 = cx + k_radii[r] + 1 > gw ? gw : cx + k_radii[r] + 1;
                double    sum[4];
                box_sum(sat, gw, y0, y1, x0, x1, sum);
                if (sum[3] < 0.5) continue;
                for (int k = 0; k < 3; k++) e[k] = (float)(sum[k] / sum[3]);
                e[3] = 1.0f;
                e[4] = r < 2 ? 1.0f : 0.0f;
                break;
            }
        }

    const float ramp = 0.15f; /* the un-mixed fg is blended in over α ∈ [lo, lo + ramp] */
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
        /* bilinear between cell centres ((c + 0.5)·CELL), clamped at the border cells */
        const float fy = ((float)y + 0.5f) / CELL - 0.5f;
        const int   ya = fy < 0.0f ? 0 : (int)fy, yb = ya + 1 < gh ? ya + 1 : gh - 1;
        const float ty = fy < 0.0f ? 0.0f : fy - (float)ya;
        for (int x = 0; x < w; x++) {
            const size_t i = (size_t)y * w + x;
            const float  a = clamp01(alpha[i]);
            if (!(a > lo)) continue;
            const float fx = ((float)x + 0.5f) / CELL - 0.5f;
            const int   xa = fx < 0.0f ? 0 : (int)fx, xb = xa + 1 < gw ? xa + 1 : gw - 1;
            const float tx = fx < 0.0f ? 0.0f : fx - (float)xa;
            const float *e00 = est + ((size_t)ya * gw + xa) * 5, *e01 = est + ((size_t)ya * gw + xb) * 5;
            const float *e10 = est + ((size_t)yb * gw + xa) * 5, *e11 = est + ((size_t)yb * gw + xb) * 5;
            float        b[5];
            for (int k = 0; k < 5; k++)
                b[k] = (1.0f - ty) * ((1.0f - tx) * e00[k] + tx * e01[k]) + ty * ((1.0f - tx) * e10[k] + tx * e11[k]);
            /* cells without an estimate weigh 0 in b[0..2] and in b[3]: renormalize by the known share */
            if (!(b[3] > 0.0f)) continue;
            /* an estimate from screen farther than 64 px (behind a hole in a large subject, say) may be off by
             * the screen's unevenness, which 1/α amplifies: only nearly opaque pixels, where it hardly matters,
             * use it */
            const float known = b[3], near = b[4] < known ? b[4] : known;
            const float trust = near + (known - near) * clamp01((a - 0.8f) / ramp);
            const float wgt   = clamp01((a - lo) / ramp) * trust;
            float       lin[3];
            ck_cs_plate_px(cs.colorspace, cs.to_working, plate + 3 * i, lin);
            for (int c = 0; c < 3; c++) {
                const float f_lin = (lin[c] - (1.0f - a) * (b[c] / known)) / a;
                const float f     = ck_linear_to_srgb(clamp01(f_lin));
                fg[3 * i + c]     = wgt * f + (1.0f - wgt) * fg[3 * i + c];
            }
        }
    }
    free(cells), free(sat), free(est);
    return CK_OK;
}
