/* Automatic rough hint for plates without one: a chroma-difference matte against the screen colour.
 *
 * The screen is green or blue, whichever dominates: Σ max(0, g − max(r, b)) against Σ max(0, b − max(r, g)).
 * Screen strength d = (screen channel − max(other two)) / screen channel; its 90th percentile over pixels with d > 0 is the
 * clean-screen level k, and the matte is 1 − clamp((d/k − 0.1) / 0.5, 0, 1), so screen lit down to 60 % of k
 * still reads as background. It is then made coarse like a hand-drawn
 * hint: averaged down (8× on plates of 512 px and more), eroded by one cell (3×3 minimum at that scale),
 * and scaled back up bilinearly. */
#include "frame/frame_ops.h"

#include <stdlib.h>
#include <string.h>

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

ck_status ck_auto_hint(float *hint, const float *rgb, int w, int h, int *screen_is_blue) {
    const size_t n = (size_t)w * h;
    double       g_sum = 0, b_sum = 0;
    for (size_t i = 0; i < n; i++) {
        const float r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
        const float dg = g - (r > b ? r : b), db = b - (r > g ? r : g);
        g_sum += dg > 0 ? dg : 0;
        b_sum += db > 0 ? db : 0;
    }
    const int blue = b_sum > g_sum;
    if (screen_is_blue) *screen_is_blue = blue;
    float *d   = malloc(sizeof(float) * n);
    float *pos = malloc(sizeof(float) * n);
    if (!d || !pos) {
        free(d), free(pos);
        return CK_STATUS_EOOM;
    }
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        const float r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
        /* chroma ratio: the screen's excess over the other channels relative to its own level, which
         * stays nearly constant where the screen is lit unevenly */
        const float sc = blue ? b : g;
        d[i]           = (blue ? b - (r > g ? r : g) : g - (r > b ? r : b)) / (sc > 0.02f ? sc : 0.02f);
        if (d[i] > 0) pos[np++] = d[i];
    }
    float k = 1.0f;
    if (np) {
        qsort(pos, np, sizeof(float), cmp_float);
        k = pos[(size_t)(0.9 * (double)(np - 1))];
    }
    if (k < 1e-3f) k = 1e-3f;
    free(pos);

    /* coarse grid: cell averages of the matte (8×8 cells, as the seed's 8× down/up-scaled hints, but no
     * coarser than 1/64 of the short side so that small plates keep their subject) */
    int cell = (w < h ? w : h) / 64;
    cell     = cell < 1 ? 1 : cell > 8 ? 8 : cell;
    const int cw = (w + cell - 1) / cell, chh = (h + cell - 1) / cell;
    float    *c = calloc((size_t)cw * chh, sizeof(float)), *e = malloc(sizeof(float) * (size_t)cw * chh);
    if (!c || !e) {
        free(d), free(c), free(e);
        return CK_STATUS_EOOM;
    }
    for (int cy = 0; cy < chh; cy++)
        for (int cx = 0; cx < cw; cx++) {
            double s   = 0;
            int    cnt = 0;
            for (int y = cy * cell; y < cy * cell + cell && y < h; y++)
                for (int x = cx * cell; x < cx * cell + cell && x < w; x++, cnt++) {
                    /* screen from 60 % of the clean level (uneven lighting), subject below 10 % */
                    float a = 1.0f - (d[(size_t)y * w + x] / k - 0.1f) / 0.5f;
                    s += a < 0 ? 0 : a > 1 ? 1 : a;
                }
            c[(size_t)cy * cw + cx] = (float)(s / cnt);
        }
    for (int cy = 0; cy < chh; cy++) /* erode: 3×3 minimum (a hint stays inside the subject) */
        for (int cx = 0; cx < cw; cx++) {
            float m = 1.0f;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    const int yy = cy + dy, xx = cx + dx;
                    if (yy < 0 || yy >= chh || xx < 0 || xx >= cw) continue;
                    const float v = c[(size_t)yy * cw + xx];
                    m             = v < m ? v : m;
                }
            e[(size_t)cy * cw + cx] = m;
        }
    ck_resize_linear_cv(hint, w, h, e, cw, chh, 1);
    free(d), free(c), free(e);
    return CK_OK;
}
