/* Tiled keying geometry (the MLX port's engine-level tiling): tile origins and linear-ramp blend weights.
 *
 * Origins step by size − overlap from 0; the last tile is shifted back to end exactly at the edge.
 * A tile's weight along one axis is 1 inside, falling linearly to 0 toward a side that lies inside the
 * image over `overlap` pixels ((i + 0.5) / overlap, so it never reaches 0 on a pixel); sides on the image
 * border keep weight 1. The 2-D weight is the product of the two axes. Blending divides the weighted sum
 * by the summed weights, so the normalized weights sum to 1 everywhere. */
#ifndef CK_TILING_H
#define CK_TILING_H

/* Tile origins along an axis of length n for tiles of `size` (≤ n) with `overlap` < size.
 * Writes up to max origins, returns the count (1 when size ≥ n, origin 0). */
int ck_tile_origins(int n, int size, int overlap, int *origins, int max);

/* Weight of pixel i (0 ≤ i < size) of a tile starting at `origin` on an axis of length n. */
float ck_tile_weight_1d(int i, int origin, int size, int n, int overlap);

#endif
