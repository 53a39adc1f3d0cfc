/* Reference PXR24 transform of one chunk, written from the OpenEXR format description, for tests that
 * check encoded chunks (device or given): per scanline and channel in file order (names sorted: Y;
 * B, G, R; A, B, G, R), each half minus the previous one (mod 2^16), high bytes then low bytes. */
#ifndef CK_TEST_PXR24_REF_H
#define CK_TEST_PXR24_REF_H

#include <stddef.h>
#include <stdint.h>

/* Rows [y0, y0 + rows) of half (H, W, C interleaved) into out; returns the bytes written
 * (rows · C · 2 · W). */
static size_t pxr24_ref_chunk(const uint16_t *half, int W, int C, int y0, int rows, uint8_t *out) {
    static const int order[5][4] = {{0}, {0}, {1, 0}, {2, 1, 0}, {3, 2, 1, 0}};
    uint8_t         *w           = out;
    for (int y = y0; y < y0 + rows; y++)
        for (int k = 0; k < C; k++, w += 2 * W) {
            unsigned prev = 0;
            for (int x = 0; x < W; x++) {
                const unsigned v = half[((size_t)y * W + x) * C + order[C][k]], d = (v - prev) & 0xffffu;
                prev = v, w[x] = (uint8_t)(d >> 8), w[W + x] = (uint8_t)d;
            }
        }
    return (size_t)(w - out);
}

#endif
