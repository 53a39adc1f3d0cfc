/* Still-image files: PNG (8/16-bit, libpng), JPEG (libjpeg-turbo), OpenEXR (half/float, OpenEXR C API);
 * TIFF (libtiff) and DPX (FFmpeg's decoder) plates, read only.
 *
 * Pixels are returned as interleaved float32, row-major, values as stored scaled to [0,1] for integer
 * formats (8-bit /255, 16-bit /65535) and raw for EXR. Writers go through a temporary file in the
 * destination folder that is renamed into place, so an interrupted run never leaves a partial file.
 *
 *     ck_image img;
 *     int      depth;
 *     ck_err   err = {0};
 *     if (ck_image_read("plate.0001.exr", &img, &depth, &err) != CK_OK) { puts(err.msg); ... }
 *     ...                                   // img.channels: 1 (Y/gray), 2 (gray+alpha), 3 (RGB), 4 (RGBA)
 *     ck_image_write_exr("alpha.0001.exr", &img, CK_EXR_PXR24, &err);
 *     ck_image_release(&img);
 *
 * What each reader returns (channel order is always R,G,B[,A] or gray[,alpha]):
 *   - PNG: the file's own channel count. Palette images expand to RGB, or RGBA when a tRNS chunk exists;
 *     gray with tRNS becomes gray+alpha; 1/2/4-bit gray expands to 8-bit (full range). No gamma or
 *     colour-profile handling (like cv2.imread). 16-bit samples are scaled /65535 (cv2.imread without
 *     IMREAD_ANYDEPTH would keep only the high byte; callers that need that quirk can quantize).
 *   - JPEG: 1 (grayscale) or 3 (YCbCr/RGB, decoded with libjpeg's default islow IDCT and fancy
 *     upsampling, the settings OpenCV uses). CMYK/YCCK files are refused. EXIF orientation is ignored.
 *   - EXR: the first part's data window (its origin is dropped). Prefix-less channels R,G,B -> 3 (+A -> 4);
 *     else Y -> 1 (+A -> 2); else a file with exactly one channel -> 1. Scanline and tiled parts
 *     (level 0 of mip/rip maps) with half, float or uint channels. Deep and subsampled parts are refused.
 *   - DPX: 1 (luma), 3 (RGB) or 4 (RGBA) channels of 8/10/12/16-bit codes, each / (2^bits - 1), as stored
 *     (a log-encoded scan stays log); YCbCr DPX is refused.
 * Errors: a missing or unreadable path is CK_STATUS_EIO, a corrupt or truncated file CK_STATUS_EFORMAT,
 * a format this build was compiled without CK_STATUS_EUNSUPPORTED; the message names the file.
 * Thread safety: every function may be called concurrently on different files.
 */
#ifndef CK_IMAGE_H
#define CK_IMAGE_H

#include "core/check.h"
#include "io/image_buf.h" /* limits, EXR compression, the codecs' shared buffers */

typedef enum ck_image_format {
    CK_IMAGE_UNKNOWN = 0,
    CK_IMAGE_PNG     = 1,
    CK_IMAGE_JPEG    = 2,
    CK_IMAGE_EXR     = 3,
    CK_IMAGE_TIFF    = 4, /* read only (plates) */
    CK_IMAGE_DPX     = 5  /* read only (plates), through FFmpeg's libavcodec */
} ck_image_format;


/* fsync of a written file (directory = 0) or of a folder, so that renames into place survive a crash;
 * CKEY_FSYNC=0 turns it off (scratch disks, measurements). 1 on success. ck_fsync_parent: the folder
 * holding `path`. */
int ck_fsync_enabled(void);
int ck_fsync_path(const char *path, int directory);
int ck_fsync_parent(const char *path);


/* Detects the format from magic bytes (not the extension). CK_IMAGE_UNKNOWN also for unreadable paths. */
ck_image_format ck_image_sniff(const char *path);
/* 1 when the file holds scene-linear values (EXR, float TIFF), which plates convert to sRGB; else 0 (DPX
 * included: its code values are returned as stored, whatever transfer its header names). */
int             ck_image_is_linear(const char *path);
const char     *ck_image_format_name(ck_image_format fmt); /* "PNG", "JPEG", "EXR", "TIFF", "DPX", "unknown" */
/* What a frame file says about its shot, where it says it: the start timecode (EXR `timeCode` attribute, DPX
 * television header) as "HH:MM:SS:FF" (';' before FF when drop-frame) into timecode, "" when absent; the
 * frame rate (EXR `framesPerSecond`, DPX film or television header) into *fps, 0 when absent. Never fails
 * and logs nothing: a file that cannot be read says nothing. */
void            ck_image_shot_info(const char *path, char timecode[16], double *fps);
/* 1 when this build can read and write the format (its library was found at configure time). */
int             ck_image_format_supported(ck_image_format fmt);

/* Reads every channel of the file (1..4). img->data is malloc'd; free with ck_image_release.
 * `bit_depth` (optional) receives 8, 16 (integer formats), 16 (EXR half) or 32 (EXR float/uint).
 * On failure *img is zeroed (releasing it is harmless). */
ck_status ck_image_read(const char *path, ck_image *img, int *bit_depth, ck_err *err);
/* The same, decoding into buf when the file's width*height*channels floats fit in buf_floats: then
 * img->data == buf, which the caller keeps owning (do not release img). Otherwise img->data is
 * malloc'd as by ck_image_read. Frame loops pass one reusable buffer, so a 4K frame's 100 MB are not
 * mapped and faulted in again for every frame. */
ck_status ck_image_read_into(const char *path, ck_image *img, float *buf, size_t buf_floats, int *bit_depth,
                             ck_err *err);
void      ck_image_release(ck_image *img);

/* 8-bit PNG: v -> (uint8)(clip(v, 0, 1) * 255), truncation as CorridorKey does (NaN -> 0).
 * 1, 3 or 4 channels (2 = gray+alpha is accepted too). */
ck_status ck_image_write_png8(const char *path, const ck_image *img, ck_err *err);
/* 16-bit PNG: v -> round(clip(v, 0, 1) * 65535) (NaN -> 0). */
ck_status ck_image_write_png16(const char *path, const ck_image *img, ck_err *err);
/* Half-float scanline EXR; channel names: 1 -> "Y", 3 -> "R","G","B", 4 -> "R","G","B","A"
 * (2 -> "Y","A"). float -> half rounds to nearest even; |v| >= 65520 becomes +-inf. */
ck_status ck_image_write_exr(const char *path, const ck_image *img, ck_exr_compression comp, ck_err *err);

/* The same writers fed with the samples as stored (ck_passes): interleaved IEEE half for EXR (written
 * as is), 8-bit for PNG. */
ck_status ck_image_write_exr_half(const char *path, int width, int height, int channels, const uint16_t *half,
                                  ck_exr_compression comp, ck_err *err);
ck_status ck_image_write_png_u8(const char *path, int width, int height, int channels, const uint8_t *u8,
                                ck_err *err);

/* A half-float PXR24 EXR whose chunks are already encoded (ck_passes with gpu_encode): chunk c holds
 * scanlines [c·lines, …) as a zlib stream of chunk_bytes[c] bytes at chunk_data (streams back to back),
 * or, when chunk_bytes[c] is 0, is stored uncompressed from `half` (h, w, C interleaved), which the format
 * allows when compression does not shrink a chunk (half may be NULL when no chunk is stored). lines must
 * be the format's 16. */
ck_status ck_image_write_exr_chunks(const char *path, int width, int height, int channels, const uint16_t *half,
                                    int lines, const int32_t *chunk_bytes, const uint8_t *chunk_data, ck_err *err);

/* Writes into "<path>.tmp.<pid>.<n>" (n: a per-process counter, so threads never share a temp file)
 * and renames onto path; removes the temp file on failure, leaving an existing path untouched.
 * Shared by every writer (images now, other outputs later). fn must create tmp_path itself and
 * report errors through err; ctx is passed through. */
typedef ck_status (*ck_write_fn)(const char *tmp_path, const void *ctx, ck_err *err);
ck_status ck_write_atomic(const char *path, ck_write_fn fn, const void *ctx, ck_err *err);

#endif
