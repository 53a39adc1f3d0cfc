/* ckey's files (public; in the libraries ckey_core and ckey_io): still images, frame sequences, videos and
 * .npy arrays, as the shot layer (ckey_shot.h), the CLI and the tests read and write them. Every call reports
 * a ck_status and, on failure, one message naming the file in a caller-owned ck_err (ckey.h); memory a reader
 * returns is malloc'd and freed by the call named beside it. Every function may be called concurrently on
 * different files.
 *
 * ---- still images ----
 * PNG (8/16-bit, libpng), JPEG (libjpeg-turbo), OpenEXR (half/float, OpenEXR C API); TIFF (libtiff) and DPX
 * (FFmpeg's decoder) plates, read only.
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
 */
#ifndef CKEY_IO_H
#define CKEY_IO_H

#include "ckey.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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

/* An IEEE half (the samples ck_passes and the EXR passes store) as a float, exactly. */
float ck_half_to_float(uint16_t h);

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

/* ---- frame sequences: a folder of frames in natural order, frame ranges, farm shards ---- */

/* Filled by ck_seq_list, freed by ck_seq_free (every string and both arrays are the library's). */
typedef struct ck_seq {
    char **paths; /* full paths, natural order */
    char **stems; /* file names without extension */
    int    n;
} ck_seq;

/* Natural order: digit runs compare by value ("f2" < "f10"), other characters case-insensitively. */
int ck_natural_cmp(const char *a, const char *b);

/* Every .png/.jpg/.jpeg/.exr/.tif/.tiff/.dpx file of `dir` (case-insensitive extension, hidden files skipped). */
ck_status ck_seq_list(ck_seq *seq, const char *dir, ck_err *err);
void      ck_seq_free(ck_seq *seq);

/* Parses "A-B" (inclusive positions in the sorted list, 0-based) or "A" into [*first, *last]. */
int ck_parse_frames(const char *s, int *first, int *last);
/* Parses "I/N" (0 ≤ I < N). */
int ck_parse_shard(const char *s, int *index, int *count);
/* Contiguous shard I of N over [first, last]: sizes differ by at most one, earlier shards larger.
 * Returns the count (may be 0) and the first index. */
int ck_shard_range(int first, int last, int index, int count, int *shard_first);

/* ---- video files ----
 *
 * Reading: any container/codec FFmpeg decodes, 8 to 16 bits per channel, frames delivered in decode
 * order of presentation as float RGB or RGBA in [0,1] (scaled from 16-bit RGB, so 10/12-bit sources
 * keep their precision); the frame count is what decoding yields (exact, variable frame rate included).
 * YUV sources are converted with the matrix and range their stream is tagged with (BT.601 when untagged).
 * Writing: ProRes 4444 with alpha (.mov), FFV1 lossless 16-bit RGBA (.mkv), H.264 (.mp4, no alpha),
 * through a hidden temporary file renamed into place by ck_video_writer_close. The frames given are
 * display-referred sRGB / Rec.709 values and are tagged so: BT.709 primaries; transfer IEC 61966-2-1 (sRGB)
 * for FFV1 and H.264, BT.709 for ProRes (whose frame header cannot say sRGB); BT.709 matrix, limited range
 * for the YUV codecs (ProRes 4444, H.264: the conversion uses that matrix), RGB matrix, full range for FFV1.
 * A start timecode (ck_video_meta) becomes the stream's and the container's `timecode` tag (a tmcd track in
 * MOV/MP4). Only in builds with FFmpeg (CK_HAVE_FFMPEG defined: ckey_io's users see it).
 */
typedef struct ck_video_reader ck_video_reader;
typedef struct ck_video_writer ck_video_writer;

typedef enum ck_video_codec { CK_VIDEO_PRORES4444 = 0, CK_VIDEO_FFV1 = 1, CK_VIDEO_H264 = 2 } ck_video_codec;

/* 1 when the file's first bytes look like a container FFmpeg knows (not an image format). */
int ck_video_probe(const char *path);

/* Frames in the file's video stream, counted by demuxing every packet (no decoding); -1 on error. */
int       ck_video_count_frames(const char *path);
/* The same, and what the container says: *declared its frame count (MOV/MP4 keep one), else, where the
 * header holds a duration (Matroska), that duration's frames at the stream's rate when the packets fall
 * short of it by more than 2 % and at least 2 frames (a cut file; a variable-rate file's estimate may be a
 * little off), else 0; *damaged 1 when reading stopped at an error rather than at the end of the file. */
int       ck_video_count_frames_ex(const char *path, int *declared, int *damaged);
/* 1 when the file starts like a video container (MP4/MOV, Matroska/WebM, AVI), whether or not it opens. */
int       ck_video_looks_like_container(const char *path);
ck_status ck_video_open(ck_video_reader **out, const char *path, ck_err *err);
int       ck_video_width(const ck_video_reader *r);
int       ck_video_height(const ck_video_reader *r);
double    ck_video_fps(const ck_video_reader *r); /* average frame rate (for writing outputs) */
/* The start timecode of the source ("HH:MM:SS:FF", ';' before FF when drop-frame): the video stream's
 * `timecode` tag, else the container's, else another stream's (a MOV/MP4 tmcd track); "" when there is
 * none or it is not a valid timecode at the video's frame rate. */
const char *ck_video_timecode(const ck_video_reader *r);
/* Next frame into `pixels` (w·h·channels floats, channels 3 or 4); *eof = 1 after the last frame. */
ck_status ck_video_read(ck_video_reader *r, float *pixels, int channels, int *eof, ck_err *err);
void      ck_video_close(ck_video_reader *r);

/* What an output video carries besides its frames. */
typedef struct ck_video_meta {
    double fps;          /* frames per second; <= 0: 24 */
    char   timecode[16]; /* start timecode of the first frame, "HH:MM:SS:FF" (';' before FF: drop-frame); "" for none */
} ck_video_meta;

/* The timecode `frame` frames after `start` at `fps` into out (start itself, normalized, for frame 0). 1 when
 * start is a timecode at that rate: "HH:MM:SS:FF" with minutes and seconds below 60, frames below the rounded
 * rate, ';' (drop-frame) only at multiples of 30000/1001; else 0 and out is "" (nothing is logged). */
int ck_video_timecode_at(const char *start, double fps, int frame, char out[16]);

ck_status ck_video_writer_open(ck_video_writer **out, const char *path, ck_video_codec codec, int w, int h,
                               double fps, ck_err *err);
/* The same with a start timecode (meta->timecode; checked as by ck_video_timecode_at). */
ck_status ck_video_writer_open_meta(ck_video_writer **out, const char *path, ck_video_codec codec, int w, int h,
                                    const ck_video_meta *meta, ck_err *err);
/* One frame from w·h·4 floats (RGBA in [0,1]; H.264 ignores alpha). */
ck_status ck_video_write(ck_video_writer *wr, const float *rgba, ck_err *err);
/* Flushes, finishes the file and renames it into place; on failure (or abort != 0) removes it. */
ck_status ck_video_writer_close(ck_video_writer *wr, int abort, ck_err *err);

/* ---- NumPy .npy arrays (float32, C order): reference fixtures and debug dumps ---- */

/* Filled by ck_npy_read, freed by ck_npy_free. */
typedef struct ck_npy {
    float  *data;    /* malloc'd, converted to float32 (from <f4, <f8, <f2) */
    int     ndim;
    int64_t shape[8];
    size_t  numel;
} ck_npy;

ck_status ck_npy_read(const char *path, ck_npy *out, ck_err *err);
ck_status ck_npy_write(const char *path, const float *data, int ndim, const int64_t *shape, ck_err *err);
void      ck_npy_free(ck_npy *a);

#ifdef __cplusplus
}
#endif

#endif /* CKEY_IO_H */
