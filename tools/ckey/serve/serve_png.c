/* `ckey serve`: 8-bit PNGs in memory for the views (serve.h). One IDAT, libdeflate's zlib stream, the Sub
 * filter on every row (cheap, and it halves a smooth view's size against none). No colour chunks: browsers
 * take an untagged PNG as sRGB, which the views are. */
#include "serve.h"

#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

static void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

/* length, type, data (already in place after them), CRC of type and data; returns the chunk's size */
static size_t chunk(unsigned char *p, const char *type, size_t n) {
    put32(p, (uint32_t)n);
    memcpy(p + 4, type, 4);
    put32(p + 8 + n, libdeflate_crc32(0, p + 4, n + 4));
    return n + 12;
}

unsigned char *sv_png_encode(const uint8_t *px, int w, int h, int channels, size_t *len) {
    const size_t row = (size_t)w * channels, raw_n = (row + 1) * (size_t)h;
    unsigned char *raw = malloc(raw_n);
    struct libdeflate_compressor *z = libdeflate_alloc_compressor(3);
    if (!raw || !z) {
        free(raw), libdeflate_free_compressor(z);
        return NULL;
    }
    for (int y = 0; y < h; y++) {
        unsigned char *d = raw + (size_t)y * (row + 1);
        const uint8_t *s = px + (size_t)y * row;
        d[0] = 1; /* Sub: each byte minus the one a pixel to its left */
        for (size_t i = 0; i < row; i++) d[1 + i] = (unsigned char)(s[i] - (i >= (size_t)channels ? s[i - channels] : 0));
    }
    const size_t bound = libdeflate_zlib_compress_bound(z, raw_n);
    unsigned char *png = malloc(8 + 25 + 12 + bound + 12);
    size_t         o   = 0;
    if (png) {
        static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        memcpy(png, sig, 8), o = 8;
        unsigned char *ih = png + o + 8;
        put32(ih, (uint32_t)w), put32(ih + 4, (uint32_t)h);
        ih[8] = 8, ih[9] = channels == 1 ? 0 : 2, ih[10] = ih[11] = ih[12] = 0; /* 8-bit grey or RGB */
        o += chunk(png + o, "IHDR", 13);
        const size_t zn = libdeflate_zlib_compress(z, raw, raw_n, png + o + 8, bound);
        if (zn == 0) {
            free(png), png = NULL;
        } else {
            o += chunk(png + o, "IDAT", zn);
            o += chunk(png + o, "IEND", 0);
        }
    }
    free(raw), libdeflate_free_compressor(z);
    *len = o;
    return png;
}
