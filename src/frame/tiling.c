/* Tile geometry and blend weights (see tiling.h). */
#include "frame/tiling.h"

int ck_tile_origins(int n, int size, int overlap, int *origins, int max) {
    if (size >= n || max < 1) {
        if (max >= 1) origins[0] = 0;
        return 1;
    }
    const int step = size - overlap > 0 ? size - overlap : 1;
    int       k    = 0;
    for (int o = 0; k < max; o += step) {
        if (o + size >= n) {
            origins[k++] = n - size; /* the last tile ends exactly at the edge */
            break;
        }
        origins[k++] = o;
    }
    return k;
}

float ck_tile_weight_1d(int i, int origin, int size, int n, int overlap) {
    if (overlap <= 0) return 1.0f;
    float w = 1.0f;
    if (origin > 0) { /* left/top side inside the image: ramp up */
        const float r = ((float)i + 0.5f) / (float)overlap;
        w             = r < w ? r : w;
    }
    if (origin + size < n) { /* right/bottom side inside the image: ramp down */
        const float r = ((float)(size - 1 - i) + 0.5f) / (float)overlap;
        w             = r < w ? r : w;
    }
    return w;
}
