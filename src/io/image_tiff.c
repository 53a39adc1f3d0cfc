/* TIFF plates through libtiff: 8- and 16-bit unsigned integer samples (sRGB-encoded, as PNG: value / 255 or
 * / 65535) and 16- or 32-bit IEEE float samples (scene-linear, as EXR), 1 (grey), 2 (grey + alpha), 3 (RGB)
 * or 4 (RGBA) channels, interleaved (PLANARCONFIG_CONTIG) or planar, in strips or tiles, any compression
 * libtiff decodes. libtiff's messages go to ckey's log, never to stderr; its size and allocation limits are
 * ckey's (CK_IMAGE_MAX_DIM, the pixel limit), checked before anything is allocated. */
#include "core/tensor.h"
#include "io/image_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

static void tiff_quiet(const char *module, const char *fmt, va_list ap) {
    (void)module, (void)fmt, (void)ap; /* warnings (unknown tags, ...) do not concern pixels */
}

static _Thread_local char g_tiff_error[256];
static void tiff_error(const char *module, const char *fmt, va_list ap) {
    (void)module;
    vsnprintf(g_tiff_error, sizeof g_tiff_error, fmt, ap);
}

static void tiff_handlers(void) {
    TIFFSetWarningHandler(tiff_quiet);
    TIFFSetErrorHandler(tiff_error);
}

/* One sample of a decoded buffer as float: integers normalized, halves and floats as stored. */
static float sample(const uint8_t *p, int bps, int fmt) {
    if (fmt == SAMPLEFORMAT_IEEEFP) {
        if (bps == 32) {
            float f;
            memcpy(&f, p, 4);
            return f;
        }
        uint16_t h;
        memcpy(&h, p, 2);
        return ck_f16_to_f32(h);
    }
    if (bps == 8) return (float)p[0] / 255.0f;
    uint16_t v;
    memcpy(&v, p, 2);
    return (float)v / 65535.0f;
}

int ck__tiff_is_float(const char *path) {
    tiff_handlers();
    TIFF *t = TIFFOpen(path, "r");
    if (!t) return 0;
    uint16_t fmt = SAMPLEFORMAT_UINT;
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &fmt);
    TIFFClose(t);
    return fmt == SAMPLEFORMAT_IEEEFP;
}

ck_status ck__tiff_read(const char *path, ck_image *img, const ck__image_dst *dst, int *bit_depth, ck_err *err) {
    tiff_handlers();
    g_tiff_error[0] = '\0';
    TIFF *t = TIFFOpen(path, "r");
    if (!t) return ck__fail(err, CK_STATUS_EFORMAT, "%s: not a readable TIFF: %s", path, g_tiff_error);
    uint32_t  w = 0, h = 0;
    uint16_t  spp = 1, bps = 1, fmt = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG, photometric = 0;
    ck_status st = CK_OK;
    TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &fmt);
    TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(t, TIFFTAG_PHOTOMETRIC, &photometric);
    const int ints = fmt == SAMPLEFORMAT_UINT && (bps == 8 || bps == 16);
    const int flts = fmt == SAMPLEFORMAT_IEEEFP && (bps == 16 || bps == 32);
    if (w < 1 || h < 1 || w > CK_IMAGE_MAX_DIM || h > CK_IMAGE_MAX_DIM) {
        st = ck__fail(err, CK_STATUS_EFORMAT, "%s: TIFF size %ux%u outside 1..%d", path, w, h, CK_IMAGE_MAX_DIM);
    } else if (!ints && !flts) {
        st = ck__fail(err, CK_STATUS_EFORMAT,
                      "%s: TIFF of %u-bit %s samples is not supported (8/16-bit integer, 16/32-bit float)", path, bps,
                      fmt == SAMPLEFORMAT_INT ? "signed" : fmt == SAMPLEFORMAT_IEEEFP ? "float" : "unsigned");
    } else if (spp < 1 || spp > 4 || photometric == PHOTOMETRIC_PALETTE || photometric == PHOTOMETRIC_SEPARATED ||
               photometric == PHOTOMETRIC_YCBCR) {
        st = ck__fail(err, CK_STATUS_EFORMAT,
                      "%s: TIFF with %u samples per pixel, photometric %u, is not supported (grey, RGB, with alpha)",
                      path, spp, photometric);
    }
    if (st == CK_OK) st = ck__image_alloc(img, (int)w, (int)h, spp, dst, path, err);
    if (st != CK_OK) {
        TIFFClose(t);
        return st;
    }
    const int  B = bps / 8, planes = planar == PLANARCONFIG_SEPARATE ? spp : 1, per = planes > 1 ? 1 : spp;
    const int  tiled = TIFFIsTiled(t);
    uint32_t   tw = w, th = 1;
    if (tiled) {
        TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
        TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
    }
    const tmsize_t unit = tiled ? TIFFTileSize(t) : TIFFScanlineSize(t);
    uint8_t       *buf  = unit > 0 && tw > 0 && th > 0 ? _TIFFmalloc(unit) : NULL;
    if (!buf) st = ck__fail(err, CK_STATUS_EFORMAT, "%s: TIFF with an invalid strip or tile layout", path);
    for (int pl = 0; pl < planes && st == CK_OK; pl++) {
        for (uint32_t y0 = 0; y0 < h && st == CK_OK; y0 += th) {
            for (uint32_t x0 = 0; x0 < w && st == CK_OK; x0 += tw) {
                const tmsize_t got = tiled ? TIFFReadTile(t, buf, x0, y0, 0, (uint16_t)pl)
                                           : TIFFReadScanline(t, buf, y0, (uint16_t)pl);
                if (got < 0) {
                    st = ck__fail(err, CK_STATUS_EFORMAT, "%s: corrupt or truncated TIFF at row %u: %s", path, y0,
                                  g_tiff_error);
                    break;
                }
                for (uint32_t dy = 0; dy < th && y0 + dy < h; dy++)
                    for (uint32_t dx = 0; dx < tw && x0 + dx < w; dx++) {
                        const uint8_t *p   = buf + ((size_t)dy * tw + dx) * (size_t)per * B;
                        float         *out = img->data + ((size_t)(y0 + dy) * w + x0 + dx) * spp;
                        for (int c = 0; c < per; c++) out[planes > 1 ? pl : c] = sample(p + (size_t)c * B, bps, fmt);
                    }
            }
        }
    }
    if (buf) _TIFFfree(buf);
    TIFFClose(t);
    if (st == CK_OK && bit_depth) *bit_depth = bps;
    return st;
}
