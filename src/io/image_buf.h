/* What the image codecs share (image_buf.c): the size limits every reader checks before allocating, the
 * buffers a reader decodes into, the job a writer receives, and the codecs' entry points for image.c.
 * The codecs depend on this file and never on image.c; image.c (sniffing, dispatch, atomic writes)
 * depends on both. Public callers include io/image.h, which includes this. */
#ifndef CK_IMAGE_BUF_H
#define CK_IMAGE_BUF_H

#include "core/check.h"

#include <stddef.h>
#include <stdint.h>

/* ck_exr_compression: include/ckey.h */

/* Largest accepted width or height; larger headers are treated as hostile. */
#define CK_IMAGE_MAX_DIM 32768
/* Largest accepted image, in pixels: 8K plates (8192×4320, 35.4 Mpx) fit; a larger header is refused before
 * anything is allocated for it (a few hundred bytes of PNG or JPEG can claim gigabytes). $CKEY_MAX_PIXELS
 * (a pixel count) raises or lowers it. */
#define CK_IMAGE_MAX_PIXELS_DEFAULT 40000000LL
long long ck_image_max_pixels(void);

/* ---- per-format back ends (image_png.c, image_png_direct.c, image_jpeg.c, image_exr.c, image_tiff.c,
 * image_dpx.c), called by image.c after it has checked that the path is a readable regular file / that the
 * image is well formed. ---- */

/* What a writer back end receives through ck_write_atomic's ctx. */
typedef struct ck__image_job {
    const char        *path; /* the destination, for messages (the back end writes tmp_path) */
    int                width, height, channels;
    const float       *f32;  /* exactly one of the three sample buffers is set */
    const uint16_t    *f16;  /* IEEE half (EXR) */
    const uint8_t     *u8;   /* 8-bit (PNG) */
    int                bits; /* PNG: 8 or 16 */
    ck_exr_compression comp; /* EXR */
    int                lines;       /* EXR with pre-encoded chunks (PXR24): scanlines per chunk, else 0 */
    const int32_t     *chunk_bytes;
    const uint8_t     *chunk_data;
} ck__image_job;

/* Where a reader puts the pixels: buf when width*height*channels floats fit in `floats`, else malloc. */
typedef struct ck__image_dst {
    float *buf;
    size_t floats;
} ck__image_dst;

ck_status ck__png_read(const char *path, ck_image *img, const ck__image_dst *dst, int *bit_depth, ck_err *err);
/* libdeflate fast path for the common PNG layouts (image_png_direct.c): 1 when decoded; 0 when the file
 * is anything else or wrong in any way, img untouched, for libpng to decode or report. */
int       ck__png_read_direct(const char *path, ck_image *img, const ck__image_dst *dst, int *bit_depth);
ck_status ck__png_write(const char *tmp_path, const void *job, ck_err *err);
ck_status ck__png_write_direct(const char *tmp_path, const ck__image_job *job, ck_err *err);
/* PNG samples (8-bit, or 16-bit big-endian) to floats: v / 255 or v / 65535 in float32 (image_buf.c). */
void      ck__png_samples_to_float(float *dst, const unsigned char *src, size_t n, int depth);
ck_status ck__jpeg_read(const char *path, ck_image *img, const ck__image_dst *dst, int *bit_depth, ck_err *err);
ck_status ck__exr_read(const char *path, ck_image *img, const ck__image_dst *dst, int *bit_depth, ck_err *err);
ck_status ck__tiff_read(const char *path, ck_image *img, const ck__image_dst *dst, int *bit_depth, ck_err *err);
int       ck__tiff_is_float(const char *path);
ck_status ck__dpx_read(const char *path, ck_image *img, const ck__image_dst *dst, int *bit_depth, ck_err *err);
/* The header's SMPTE timecode (packed BCD, 0xFFFFFFFF: none) and frame rate (0: none) of an EXR (first part)
 * or DPX file; 0 when the file cannot be read, with nothing logged. */
int       ck__dpx_shot_info(const char *path, uint32_t *timecode, double *fps);
int       ck__exr_shot_info(const char *path, uint32_t *timecode, double *fps);
ck_status ck__exr_write(const char *tmp_path, const void *job, ck_err *err);

/* Sets img->data for width*height*channels floats (overflow-checked size math): dst's buffer when it
 * fits (dst may be NULL), else malloc. ck__image_drop frees what ck__image_alloc allocated and zeroes img. */
ck_status ck__image_alloc(ck_image *img, int width, int height, int channels, const ck__image_dst *dst,
                          const char *path, ck_err *err);
void      ck__image_drop(ck_image *img, const ck__image_dst *dst);

#endif
