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
#include "frame/unmix_px.h"

#include <stdlib.h>

enum { CELL = CK_UNMIX_CELL };

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
    /* cells (gh, gw, 4) and est (gh, gw, 5) as unmix_px.h; between them the summed-area table of the cells
     * (gh + 1, gw + 1, 4) */
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
    for (int cy = 0; cy < gh; cy++) { /* each cell's sum in row-major pixel order: the same bits every run */
        for (int y = cy * CELL; y < (cy + 1) * CELL && y < h; y++)
            for (int x = 0; x < w; x++) {
                const size_t i = (size_t)y * w + x;
                if (!(alpha[i] < CK_UNMIX_SCREEN_ALPHA)) continue; /* NaN alpha is not screen */
                float lin[3];
                ck_cs_plate_px(cs.colorspace, cs.to_working, plate + 3 * i, lin);
                if (!ck_unmix_counts(lin)) continue;
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
            for (int r = 0; r < CK_UNMIX_RADII; r++) {
                int    y0, y1, x0, x1;
                double sum[4];
                ck_unmix_box(r, cx, cy, gw, gh, &y0, &y1, &x0, &x1);
                box_sum(sat, gw, y0, y1, x0, x1, sum);
                if (ck_unmix_take(sum, r, e)) break;
            }
        }

#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const size_t i = (size_t)y * w + x;
            ck_unmix_px(est, gw, gh, x, y, alpha[i], plate + 3 * i, &cs, lo, fg + 3 * i);
        }
    free(cells), free(sat), free(est);
    return CK_OK;
}
