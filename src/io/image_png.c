/* PNG back end (libpng 1.6): read 1..16-bit gray / gray+alpha / RGB / RGBA / palette into float,
 * write 8-bit with CorridorKey's clip-and-truncate rule and 16-bit with rounding.
 *
 * Reference: CorridorKey writes the Comp pass as cv2.imwrite(uint8(clip(v, 0, 1) * 255)) (model_spec.md
 * §7.5) and reads hints as uint8 / 255 or uint16 / 65535 (§8.2). Compression settings copy cv2.imwrite's
 * defaults (SUB filter, zlib level 1, Z_RLE): output frames are large and written often.
 * With libdeflate (CK_HAVE_DEFLATE) every write and the common reads go through image_png_direct.c
 * instead, which is faster; libpng then reads only the other layouts and reports damaged files.
 * Rules kept: libpng errors longjmp back into the function that called setjmp, never further; every
 * object that must be freed lives in a struct owned by the caller of that function, so nothing is an
 * automatic variable modified between setjmp and longjmp (C11 7.13.2.1).
 */
#include "io/image_buf.h"
#include "core/tensor.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct png_io {
    const char   *path;   /* for messages: the user's file (the destination when writing) */
    ck_err       *err;
    const ck__image_dst *dst; /* read: where the pixels go */
    FILE         *f;
    png_structp   png;
    png_infop     info;
    unsigned char *pix;   /* read: all decoded rows, height * rowbytes; write: one row */
    png_bytep    *rows;   /* read: row pointers into pix */
    char          msg[256]; /* last libpng error text */
} png_io;

static void on_png_error(png_structp png, png_const_charp msg) {
    png_io *io = png_get_error_ptr(png);
    snprintf(io->msg, sizeof io->msg, "%s", msg ? msg : "unknown libpng error");
    png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg) {
    /* ancillary-chunk complaints (bad iCCP profiles, CRC errors in text chunks) do not affect pixels */
    png_io *io = png_get_error_ptr(png);
    CK_LOG_DBG("%s: libpng: %s", io->path, msg ? msg : "");
}

/* ---- read ---- */


static ck_status png_decode(png_io *io, ck_image *img, int *bit_depth) {
    if (setjmp(png_jmpbuf(io->png)))
        return ck__fail(io->err, CK_STATUS_EFORMAT, "%s: corrupt or truncated PNG: %s", io->path, io->msg);

    png_init_io(io->png, io->f);
    /* refuse hostile headers inside libpng, before it sizes anything from them */
    png_set_user_limits(io->png, CK_IMAGE_MAX_DIM, CK_IMAGE_MAX_DIM);
    png_read_info(io->png, io->info);

    png_uint_32 w = 0, h = 0;
    int         depth = 0, ctype = 0, interlace = 0;
    png_get_IHDR(io->png, io->info, &w, &h, &depth, &ctype, &interlace, NULL, NULL);
    if (w < 1 || h < 1 || w > CK_IMAGE_MAX_DIM || h > CK_IMAGE_MAX_DIM)
        return ck__fail(io->err, CK_STATUS_EFORMAT, "%s: PNG size %ux%u outside 1..%d", io->path, (unsigned)w,
                        (unsigned)h, CK_IMAGE_MAX_DIM);

    /* Normalise to 8- or 16-bit samples, gray/GA/RGB/RGBA. Gamma and colour profiles are
     * deliberately left alone, as cv2.imread does. */
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(io->png);
    if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(io->png);
    if (png_get_valid(io->png, io->info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(io->png);
    png_set_interlace_handling(io->png);
    png_read_update_info(io->png, io->info);

    int    channels = png_get_channels(io->png, io->info);
    int    outdepth = png_get_bit_depth(io->png, io->info);
    size_t rowbytes = png_get_rowbytes(io->png, io->info);
    if (channels < 1 || channels > 4 || (outdepth != 8 && outdepth != 16) ||
        rowbytes != (size_t)w * (size_t)channels * (size_t)(outdepth / 8))
        return ck__fail(io->err, CK_STATUS_EFORMAT, "%s: unexpected PNG layout (%d channels, %d-bit, %zu bytes/row)",
                        io->path, channels, outdepth, rowbytes);

    ck_status st = ck__image_alloc(img, (int)w, (int)h, channels, io->dst, io->path, io->err);
    if (st != CK_OK) return st;
    const size_t row_vals = (size_t)w * (size_t)channels;
    if (interlace == PNG_INTERLACE_NONE) {
        /* row by row into the floats: no whole-image byte buffer (50 MB for a 16-bit 4K frame), each
         * row converted while it is still in cache */
        io->pix = malloc(rowbytes);
        if (!io->pix) return ck__fail(io->err, CK_STATUS_EOOM, "%s: cannot allocate a PNG row", io->path);
        for (png_uint_32 y = 0; y < h; y++) {
            png_read_row(io->png, io->pix, NULL);
            ck__png_samples_to_float(img->data + (size_t)y * row_vals, io->pix, row_vals, outdepth);
        }
    } else { /* Adam7: libpng assembles the passes in a full image */
        size_t total, nrows;
        if (!ck_mul_size(rowbytes, (size_t)h, &total) || !ck_mul_size((size_t)h, sizeof(png_bytep), &nrows))
            return ck__fail(io->err, CK_STATUS_EOOM, "%s: PNG size overflows", io->path);
        io->pix  = malloc(total);
        io->rows = malloc(nrows);
        if (!io->pix || !io->rows)
            return ck__fail(io->err, CK_STATUS_EOOM, "%s: cannot allocate %zu bytes for PNG rows", io->path, total);
        for (png_uint_32 y = 0; y < h; y++) io->rows[y] = io->pix + (size_t)y * rowbytes;
        png_read_image(io->png, io->rows);
        ck__png_samples_to_float(img->data, io->pix, row_vals * h, outdepth);
    }
    /* also validates the trailing chunks: a file cut after the last IDAT fails here, as in cv2 */
    png_read_end(io->png, NULL);
    *bit_depth = outdepth;
    return CK_OK;
}

ck_status ck__png_read(const char *path, ck_image *img, const ck__image_dst *dst, int *bit_depth, ck_err *err) {
#ifdef CK_HAVE_DEFLATE
    if (ck__png_read_direct(path, img, dst, bit_depth)) return CK_OK;
#endif
    png_io io;
    memset(&io, 0, sizeof io);
    io.path = path;
    io.err  = err;
    io.dst  = dst;
    io.f    = fopen(path, "rb");
    if (!io.f) return ck__fail(err, CK_STATUS_EIO, "%s: cannot open", path);
    ck_status st = CK_OK;
    io.png       = png_create_read_struct(PNG_LIBPNG_VER_STRING, &io, on_png_error, on_png_warning);
    if (io.png) io.info = png_create_info_struct(io.png);
    if (!io.png || !io.info) st = ck__fail(err, CK_STATUS_EOOM, "%s: cannot create libpng decoder", path);
    if (st == CK_OK) st = png_decode(&io, img, bit_depth);
    png_destroy_read_struct(io.png ? &io.png : NULL, io.info ? &io.info : NULL, NULL);
    free(io.rows);
    free(io.pix);
    fclose(io.f);
    return st; /* ck_image_read releases img on failure */
}

/* ---- write ---- */

static ck_status png_encode(png_io *io, const ck__image_job *img, int bits) {
    if (setjmp(png_jmpbuf(io->png)))
        return ck__fail(io->err, CK_STATUS_EIO, "%s: cannot write PNG: %s", io->path, io->msg);

    static const int ctypes[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                  PNG_COLOR_TYPE_RGB_ALPHA};
    const int        C         = img->channels;
    png_init_io(io->png, io->f);
    png_set_IHDR(io->png, io->info, (png_uint_32)img->width, (png_uint_32)img->height, bits, ctypes[C],
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_filter(io->png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
    png_set_compression_level(io->png, Z_BEST_SPEED);
    png_set_compression_strategy(io->png, Z_RLE);
    png_write_info(io->png, io->info);

    size_t row_vals = (size_t)img->width * (size_t)C; /* sizes were checked against CK_IMAGE_MAX_DIM */
    io->pix         = malloc(row_vals * (size_t)(bits / 8));
    if (!io->pix) return ck__fail(io->err, CK_STATUS_EOOM, "%s: out of memory", io->path);
    for (int y = 0; y < img->height; y++) {
        const float *src = img->f32 ? img->f32 + (size_t)y * row_vals : NULL;
        if (!src) { /* 8-bit samples as given */
            png_write_row(io->png, (png_const_bytep)(img->u8 + (size_t)y * row_vals));
            continue;
        }
        if (bits == 8) {
            for (size_t i = 0; i < row_vals; i++) io->pix[i] = ck_f32_to_u8_trunc(src[i]);
        } else {
            for (size_t i = 0; i < row_vals; i++) {
                unsigned v          = ck_f32_to_u16_round(src[i]);
                io->pix[2 * i]     = (unsigned char)(v >> 8);
                io->pix[2 * i + 1] = (unsigned char)(v & 0xff);
            }
        }
        png_write_row(io->png, io->pix);
    }
    png_write_end(io->png, NULL);
    return CK_OK;
}

ck_status ck__png_write(const char *tmp_path, const void *ctx, ck_err *err) {
    const ck__image_job *job = ctx;
    CK_ASSERT(job && (job->f32 || (job->u8 && job->bits == 8)) && (job->bits == 8 || job->bits == 16));
#ifdef CK_HAVE_DEFLATE
    return ck__png_write_direct(tmp_path, job, err);
#endif
    png_io io;
    memset(&io, 0, sizeof io);
    io.path = job->path;
    io.err  = err;
    io.f    = fopen(tmp_path, "wb");
    if (!io.f) return ck__fail(err, CK_STATUS_EIO, "%s: cannot create %s: %s", job->path, tmp_path, strerror(errno));
    ck_status st = CK_OK;
    io.png       = png_create_write_struct(PNG_LIBPNG_VER_STRING, &io, on_png_error, on_png_warning);
    if (io.png) io.info = png_create_info_struct(io.png);
    if (!io.png || !io.info) st = ck__fail(err, CK_STATUS_EOOM, "%s: cannot create libpng encoder", job->path);
    if (st == CK_OK) st = png_encode(&io, job, job->bits);
    png_destroy_write_struct(io.png ? &io.png : NULL, io.info ? &io.info : NULL);
    free(io.pix);
    /* a full disk often shows up only when the buffered tail is flushed */
    int ioerr = ferror(io.f);
    if (fclose(io.f) != 0 || ioerr) {
        if (st == CK_OK) st = ck__fail(err, CK_STATUS_EIO, "%s: write failed (disk full?)", job->path);
    }
    return st;
}
