/* Still-image I/O front end: format sniffing by magic bytes, dispatch to the per-format back ends,
 * argument checks shared by every writer, and the write-to-temp-then-rename helper.
 *
 * Compiles without any image library: each back end is reached only when CMake found its library
 * (CK_HAVE_PNG / CK_HAVE_JPEG / CK_HAVE_EXR / CK_HAVE_TIFF; CK_HAVE_FFMPEG for DPX); otherwise the request fails with
 * CK_STATUS_EUNSUPPORTED and a message naming the missing library.
 * Reference: CorridorKey reads with cv2.imread and writes with cv2.imwrite (model_spec.md §7.5, §8.2).
 */
#define _POSIX_C_SOURCE 200809L
#include "io/image.h"
#include "core/tensor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const unsigned char k_png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
static const unsigned char k_exr_magic[4] = {0x76, 0x2f, 0x31, 0x01};
/* DPX: "SDPX" in the file's byte order (big-endian), "XPDS" when little-endian */

/* Formats a file can be mistaken for; named in the error so the user knows what to convert. */
static const char *foreign_format(const unsigned char *b, size_t n) {
    if (n >= 2 && b[0] == 'B' && b[1] == 'M') return "BMP";
    if (n >= 4 && memcmp(b, "RIFF", 4) == 0) return "RIFF (WebP?)";
    if (n >= 4 && memcmp(b, "\x1a\x45\xdf\xa3", 4) == 0) return "Matroska/WebM video";
    if (n >= 8 && memcmp(b + 4, "ftyp", 4) == 0) return "MP4/MOV (or HEIF) container";
    if (n >= 6 && (memcmp(b, "GIF87a", 6) == 0 || memcmp(b, "GIF89a", 6) == 0)) return "GIF";
    return NULL;
}

static ck_image_format classify(const unsigned char *b, size_t n) {
    if (n >= 8 && memcmp(b, k_png_magic, 8) == 0) return CK_IMAGE_PNG;
    if (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return CK_IMAGE_JPEG;
    if (n >= 4 && memcmp(b, k_exr_magic, 4) == 0) return CK_IMAGE_EXR;
    if (n >= 4 && ((b[0] == 'I' && b[1] == 'I' && b[2] == 42 && b[3] == 0) ||
                   (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && b[3] == 42)))
        return CK_IMAGE_TIFF;
    if (n >= 4 && (memcmp(b, "SDPX", 4) == 0 || memcmp(b, "XPDS", 4) == 0)) return CK_IMAGE_DPX;
    return CK_IMAGE_UNKNOWN;
}

/* Checks that path is a readable regular file and classifies it. Missing/unreadable -> EIO,
 * empty or unrecognised -> EFORMAT. */
static ck_status sniff_checked(const char *path, ck_image_format *fmt, ck_err *err) {
    *fmt = CK_IMAGE_UNKNOWN;
    if (!path || !path[0]) return ck__fail(err, CK_STATUS_EINVAL, "image path is empty");
    struct stat st;
    if (stat(path, &st) != 0) return ck__fail(err, CK_STATUS_EIO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return ck__fail(err, CK_STATUS_EIO, "%s: is a directory, not an image file", path);
    FILE *f = fopen(path, "rb");
    if (!f) return ck__fail(err, CK_STATUS_EIO, "%s: cannot open: %s", path, strerror(errno));
    unsigned char b[12];
    size_t        n     = fread(b, 1, sizeof b, f);
    int           ioerr = ferror(f);
    fclose(f);
    if (ioerr) return ck__fail(err, CK_STATUS_EIO, "%s: read error", path);
    if (n == 0) return ck__fail(err, CK_STATUS_EFORMAT, "%s: file is empty", path);
    *fmt = classify(b, n);
    if (*fmt != CK_IMAGE_UNKNOWN) return CK_OK;
    const char *other = foreign_format(b, n);
    if (other)
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: %s files are not supported (only PNG, JPEG, EXR, TIFF and DPX); convert it", path, other);
    if (n >= 4)
        return ck__fail(err, CK_STATUS_EFORMAT,
                        "%s: not a PNG, JPEG, EXR, TIFF or DPX file (starts with bytes %02x %02x %02x %02x)", path, b[0],
                        b[1], b[2], b[3]);
    return ck__fail(err, CK_STATUS_EFORMAT, "%s: too short to be an image (%zu bytes)", path, n);
}

ck_image_format ck_image_sniff(const char *path) {
    if (!path) return CK_IMAGE_UNKNOWN;
    FILE *f = fopen(path, "rb");
    if (!f) return CK_IMAGE_UNKNOWN;
    unsigned char b[8];
    size_t        n = fread(b, 1, sizeof b, f);
    fclose(f);
    return classify(b, n);
}

int ck_image_is_linear(const char *path) {
    const ck_image_format f = ck_image_sniff(path);
#ifdef CK_HAVE_TIFF
    if (f == CK_IMAGE_TIFF) return ck__tiff_is_float(path);
#endif
    return f == CK_IMAGE_EXR;
}

/* SMPTE 12M packed BCD, as EXR's timeCode (time_and_flags) and DPX's header store it: frames in bits 0-5
 * (bit 6: drop-frame), seconds 8-14, minutes 16-22, hours 24-29; 0 for anything that is not a time of day. */
static int smpte_timecode(uint32_t v, char out[16]) {
    const unsigned fu = v & 0xf, ft = (v >> 4) & 0x3, su = (v >> 8) & 0xf, st = (v >> 12) & 0x7;
    const unsigned mu = (v >> 16) & 0xf, mt = (v >> 20) & 0x7, hu = (v >> 24) & 0xf, ht = (v >> 28) & 0x3;
    if (v == 0xFFFFFFFFu || fu > 9 || su > 9 || mu > 9 || hu > 9 || st > 5 || mt > 5 || ht * 10 + hu > 23) return 0;
    snprintf(out, 16, "%u%u:%u%u:%u%u%c%u%u", ht, hu, mt, mu, st, su, v & 0x40 ? ';' : ':', ft, fu);
    return 1;
}

void ck_image_shot_info(const char *path, char timecode[16], double *fps) {
    uint32_t tc = 0xFFFFFFFFu;
    int      got = 0;
    timecode[0] = '\0', *fps = 0;
    switch (ck_image_sniff(path)) {
#ifdef CK_HAVE_EXR
    case CK_IMAGE_EXR: got = ck__exr_shot_info(path, &tc, fps); break;
#endif
#ifdef CK_HAVE_FFMPEG
    case CK_IMAGE_DPX: got = ck__dpx_shot_info(path, &tc, fps); break;
#endif
    default: break;
    }
    if (got && !smpte_timecode(tc, timecode)) timecode[0] = '\0';
}

const char *ck_image_format_name(ck_image_format fmt) {
    switch (fmt) {
    case CK_IMAGE_PNG: return "PNG";
    case CK_IMAGE_JPEG: return "JPEG";
    case CK_IMAGE_EXR: return "EXR";
    case CK_IMAGE_TIFF: return "TIFF";
    case CK_IMAGE_DPX: return "DPX";
    case CK_IMAGE_UNKNOWN: break;
    }
    return "unknown";
}

int ck_image_format_supported(ck_image_format fmt) {
    switch (fmt) {
#ifdef CK_HAVE_PNG
    case CK_IMAGE_PNG: return 1;
#endif
#ifdef CK_HAVE_JPEG
    case CK_IMAGE_JPEG: return 1;
#endif
#ifdef CK_HAVE_EXR
    case CK_IMAGE_EXR: return 1;
#endif
#ifdef CK_HAVE_TIFF
    case CK_IMAGE_TIFF: return 1;
#endif
#ifdef CK_HAVE_FFMPEG
    case CK_IMAGE_DPX: return 1;
#endif
    default: return 0;
    }
}

#if !defined(CK_HAVE_PNG) || !defined(CK_HAVE_JPEG) || !defined(CK_HAVE_EXR) || !defined(CK_HAVE_TIFF) || \
    !defined(CK_HAVE_FFMPEG)
static ck_status not_built(const char *path, const char *what, const char *lib, ck_err *err) {
    return ck__fail(err, CK_STATUS_EUNSUPPORTED, "%s: %s support not built (%s not found at configure time)", path,
                    what, lib);
}
#endif

ck_status ck_image_read(const char *path, ck_image *img, int *bit_depth, ck_err *err) {
    return ck_image_read_into(path, img, NULL, 0, bit_depth, err);
}

ck_status ck_image_read_into(const char *path, ck_image *img, float *buf, size_t buf_floats, int *bit_depth,
                             ck_err *err) {
    CK_ASSERT(img != NULL);
    const ck__image_dst dst = {buf, buf ? buf_floats : 0};
    memset(img, 0, sizeof *img);
    if (bit_depth) *bit_depth = 0;
    ck_image_format fmt;
    ck_status       st = sniff_checked(path, &fmt, err);
    if (st != CK_OK) return st;
    int depth = 0;
    switch (fmt) {
    case CK_IMAGE_PNG:
#ifdef CK_HAVE_PNG
        st = ck__png_read(path, img, &dst, &depth, err);
#else
        st = not_built(path, "PNG", "libpng", err);
#endif
        break;
    case CK_IMAGE_JPEG:
#ifdef CK_HAVE_JPEG
        st = ck__jpeg_read(path, img, &dst, &depth, err);
#else
        st = not_built(path, "JPEG", "libjpeg", err);
#endif
        break;
    case CK_IMAGE_EXR:
#ifdef CK_HAVE_EXR
        st = ck__exr_read(path, img, &dst, &depth, err);
#else
        st = not_built(path, "EXR", "OpenEXR", err);
#endif
        break;
    case CK_IMAGE_TIFF:
#ifdef CK_HAVE_TIFF
        st = ck__tiff_read(path, img, &dst, &depth, err);
#else
        st = not_built(path, "TIFF", "libtiff", err);
#endif
        break;
    case CK_IMAGE_DPX:
#ifdef CK_HAVE_FFMPEG
        st = ck__dpx_read(path, img, &dst, &depth, err);
#else
        st = not_built(path, "DPX", "FFmpeg's libavcodec", err);
#endif
        break;
    case CK_IMAGE_UNKNOWN: CK_ASSERT(0 && "sniff_checked accepted an unknown format"); break;
    }
    if (st != CK_OK) {
        ck__image_drop(img, &dst);
        return st;
    }
    /* every back end must hand over a complete, in-limit image */
    CK_ASSERT(img->data && img->width >= 1 && img->height >= 1 && img->width <= CK_IMAGE_MAX_DIM &&
              img->height <= CK_IMAGE_MAX_DIM && img->channels >= 1 && img->channels <= 4);
    if (bit_depth) *bit_depth = depth;
    return CK_OK;
}

void ck_image_release(ck_image *img) {
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

/* ---- writers ---- */

static ck_status check_writable(const char *path, int w, int h, int C, const void *data, const char *what,
                                ck_err *err) {
    if (!path || !path[0]) return ck__fail(err, CK_STATUS_EINVAL, "%s: output path is empty", what);
    if (!data) return ck__fail(err, CK_STATUS_EINVAL, "%s: no pixel data to write", path);
    if (w < 1 || h < 1 || w > CK_IMAGE_MAX_DIM || h > CK_IMAGE_MAX_DIM)
        return ck__fail(err, CK_STATUS_ESHAPE, "%s: image size %dx%d outside 1..%d", path, w, h, CK_IMAGE_MAX_DIM);
    if (C < 1 || C > 4)
        return ck__fail(err, CK_STATUS_ESHAPE, "%s: cannot write %d channels as %s (1, 2, 3 or 4)", path, C, what);
    return CK_OK;
}

/* PNG files of 8 (from float or 8-bit samples) or 16 bits. */
static ck_status write_png(const ck__image_job *job, ck_err *err) {
    const void *data = job->f32 ? (const void *)job->f32 : (const void *)job->u8;
    ck_status   st   = check_writable(job->path, job->width, job->height, job->channels, data, "PNG", err);
    if (st != CK_OK) return st;
#ifdef CK_HAVE_PNG
    return ck_write_atomic(job->path, ck__png_write, job, err);
#else
    return not_built(job->path, "PNG", "libpng", err);
#endif
}

static ck_status write_exr(const ck__image_job *job, ck_err *err) {
    const void *data = job->f32 ? (const void *)job->f32 : job->f16 ? (const void *)job->f16 : (const void *)job->chunk_data;
    ck_status   st   = check_writable(job->path, job->width, job->height, job->channels, data, "EXR", err);
    if (st != CK_OK) return st;
    if (job->comp != CK_EXR_PXR24 && job->comp != CK_EXR_ZIP && job->comp != CK_EXR_NONE)
        return ck__fail(err, CK_STATUS_EINVAL, "%s: unknown EXR compression %d", job->path, (int)job->comp);
#ifdef CK_HAVE_EXR
    return ck_write_atomic(job->path, ck__exr_write, job, err);
#else
    return not_built(job->path, "EXR", "OpenEXR", err);
#endif
}

static ck__image_job float_job(const char *path, const ck_image *img, int bits, ck_exr_compression comp) {
    ck__image_job job = {path, 0, 0, 0, NULL, NULL, NULL, bits, comp, 0, NULL, NULL};
    if (img) job.width = img->width, job.height = img->height, job.channels = img->channels, job.f32 = img->data;
    return job;
}

ck_status ck_image_write_png8(const char *path, const ck_image *img, ck_err *err) {
    const ck__image_job job = float_job(path, img, 8, CK_EXR_NONE);
    return write_png(&job, err);
}

ck_status ck_image_write_png16(const char *path, const ck_image *img, ck_err *err) {
    const ck__image_job job = float_job(path, img, 16, CK_EXR_NONE);
    return write_png(&job, err);
}

ck_status ck_image_write_png_u8(const char *path, int width, int height, int channels, const uint8_t *u8,
                                ck_err *err) {
    const ck__image_job job = {path, width, height, channels, NULL, NULL, u8, 8, CK_EXR_NONE, 0, NULL, NULL};
    return write_png(&job, err);
}

ck_status ck_image_write_exr(const char *path, const ck_image *img, ck_exr_compression comp, ck_err *err) {
    const ck__image_job job = float_job(path, img, 16, comp);
    return write_exr(&job, err);
}

ck_status ck_image_write_exr_half(const char *path, int width, int height, int channels, const uint16_t *half,
                                  ck_exr_compression comp, ck_err *err) {
    const ck__image_job job = {path, width, height, channels, NULL, half, NULL, 16, comp, 0, NULL, NULL};
    return write_exr(&job, err);
}

ck_status ck_image_write_exr_chunks(const char *path, int width, int height, int channels, const uint16_t *half,
                                    int lines, const int32_t *chunk_bytes, const uint8_t *chunk_data, ck_err *err) {
    if (lines != 16 || !chunk_bytes || !chunk_data)
        return ck__fail(err, CK_STATUS_EINVAL, "%s: PXR24 chunks of %d scanlines (16 expected) or no chunk data",
                        path ? path : "EXR", lines);
    for (int c = 0; !half && height > 0 && c < (height + lines - 1) / lines; c++)
        if (chunk_bytes[c] <= 0)
            return ck__fail(err, CK_STATUS_EINVAL, "%s: chunk %d is stored uncompressed but no halves were given",
                            path ? path : "EXR", c);
    const ck__image_job job = {path,         width,       height,    channels, NULL, half, NULL, 16, CK_EXR_PXR24,
                               lines,        chunk_bytes, chunk_data};
    return write_exr(&job, err);
}

/* ---- atomic replace ---- */

static atomic_uint g_tmp_counter;

int ck_fsync_enabled(void) {
    const char *v = getenv("CKEY_FSYNC");
    return !(v && v[0] == '0' && !v[1]);
}

int ck_fsync_path(const char *path, int directory) {
    if (!ck_fsync_enabled()) return 1;
    const int fd = open(path, directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
    if (fd < 0) return 0;
    const int ok = fsync(fd) == 0 || errno == EINVAL; /* EINVAL: a file system without fsync (pipes, some FUSE) */
    close(fd);
    return ok;
}

int ck_fsync_parent(const char *path) {
    char        dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) return ck_fsync_path(".", 1);
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path) > 0 ? (int)(slash - path) : 1, path);
    return ck_fsync_path(dir, 1);
}

ck_status ck_write_atomic(const char *path, ck_write_fn fn, const void *ctx, ck_err *err) {
    CK_ASSERT(fn != NULL);
    if (!path || !path[0]) return ck__fail(err, CK_STATUS_EINVAL, "output path is empty");
    /* The suffix goes after the extension so that frame-sequence scanners never pick up a
     * half-written "frame.png.tmp.123.0"; same folder so rename() stays on one filesystem. */
    unsigned    seq = atomic_fetch_add(&g_tmp_counter, 1u);
    size_t      len = strlen(path) + 48;
    char       *tmp = malloc(len);
    if (!tmp) return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    snprintf(tmp, len, "%s.tmp.%ld.%u", path, (long)getpid(), seq);

    ck_status st = fn(tmp, ctx, err);
    /* on disk before it replaces anything: a crash then leaves the old file or the new one, never an empty one */
    if (st == CK_OK && !ck_fsync_path(tmp, 0))
        st = ck__fail(err, CK_STATUS_EIO, "%s: cannot flush the written file to disk: %s", path, strerror(errno));
    if (st == CK_OK && rename(tmp, path) != 0)
        st = ck__fail(err, CK_STATUS_EIO, "%s: cannot move the finished file into place: %s", path, strerror(errno));
    if (st != CK_OK) {
        /* the writer may have failed before creating it: ENOENT is expected and harmless */
        if (remove(tmp) != 0 && errno != ENOENT)
            CK_LOG_WARN("%s: could not remove temporary file %s: %s", path, tmp, strerror(errno));
    }
    free(tmp);
    return st;
}

float ck_half_to_float(uint16_t h) { return ck_f16_to_f32(h); }
