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

ck_status ck_fg_unmix(float *fg, const float *alpha, const float *plate, int colorspace, int w, int h, float lo) {
    CK_ASSERT(fg && alpha && plate && w > 0 && h > 0 && lo > 0.0f && lo < 1.0f);
    const int gw = (w + CK_UNMIX_CELL - 1) / CK_UNMIX_CELL, gh = (h + CK_UNMIX_CELL - 1) / CK_UNMIX_CELL;
    double   *cells = malloc(sizeof(double) * (size_t)gh * gw * 4); /* (gh, gw, 4) as unmix_px.h */
    float    *est   = malloc(sizeof(float) * (size_t)gh * gw * 5);  /* (gh, gw, 5) */
    if (!cells || !est) {
        free(cells), free(est);
        return CK_STATUS_EOOM;
    }
    ck_cs_post cs;
    ck_colorspace_post(colorspace, &cs);

#pragma omp parallel for schedule(static)
    for (int cy = 0; cy < gh; cy++)
        for (int cx = 0; cx < gw; cx++)
            ck_unmix_cell_sum(alpha, 1, plate, w, h, cx, cy, &cs, cells + ((size_t)cy * gw + cx) * 4);
#pragma omp parallel for schedule(dynamic, 4)
    for (int cy = 0; cy < gh; cy++)
        for (int cx = 0; cx < gw; cx++) ck_unmix_cell_est(cells, gw, gh, cx, cy, est + ((size_t)cy * gw + cx) * 5);

#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const size_t i = (size_t)y * w + x;
            ck_unmix_px(est, gw, gh, x, y, alpha[i], plate + 3 * i, &cs, lo, fg + 3 * i);
        }
    free(cells), free(est);
    return CK_OK;
}
