/* Still-image files: PNG (8/16-bit, libpng), JPEG (libjpeg-turbo), OpenEXR (half/float, OpenEXR C API).
 *
 * Pixels are returned as interleaved float32, row-major, values as stored scaled to [0,1] for integer
 * formats (8-bit /255, 16-bit /65535) and raw for EXR. Writers go through a temporary file in the
 * destination folder that is renamed into place, so an interrupted run never leaves a partial file.
 */
#ifndef CK_IMAGE_H
#define CK_IMAGE_H

#include "core/check.h"

typedef enum ck_image_format {
    CK_IMAGE_UNKNOWN = 0,
    CK_IMAGE_PNG     = 1,
    CK_IMAGE_JPEG    = 2,
    CK_IMAGE_EXR     = 3
} ck_image_format;

typedef enum ck_exr_compression {
    CK_EXR_PXR24 = 0, /* CorridorKey's choice; lossless for half data */
    CK_EXR_ZIP   = 1,
    CK_EXR_NONE  = 2
} ck_exr_compression;

/* Largest accepted width or height; larger headers are treated as hostile. */
#define CK_IMAGE_MAX_DIM 32768

/* Detects the format from magic bytes (not the extension). */
ck_image_format ck_image_sniff(const char *path);

/* Reads every channel of the file (1..4). img->data is malloc'd; free with ck_image_release.
 * `bit_depth` (optional) receives 8, 16 (integer formats), 16 (EXR half) or 32 (EXR float). */
ck_status ck_image_read(const char *path, ck_image *img, int *bit_depth, ck_err *err);
void      ck_image_release(ck_image *img);

/* 8-bit PNG: v -> (uint8)(clip(v, 0, 1) * 255), truncation as CorridorKey does. 1, 3 or 4 channels. */
ck_status ck_image_write_png8(const char *path, const ck_image *img, ck_err *err);
/* 16-bit PNG: v -> round(clip(v, 0, 1) * 65535). */
ck_status ck_image_write_png16(const char *path, const ck_image *img, ck_err *err);
/* Half-float EXR; channel names: 1 -> "Y", 3 -> "R","G","B", 4 -> "R","G","B","A". */
ck_status ck_image_write_exr(const char *path, const ck_image *img, ck_exr_compression comp, ck_err *err);

/* Writes into "<path>.tmp.<pid>" and renames onto path; removes the temp file on failure.
 * Shared by every writer (images now, other outputs later). */
typedef ck_status (*ck_write_fn)(const char *tmp_path, const void *ctx, ck_err *err);
ck_status ck_write_atomic(const char *path, ck_write_fn fn, const void *ctx, ck_err *err);

#endif
