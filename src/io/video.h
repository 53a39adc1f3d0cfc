/* Video files through FFmpeg's libraries (libavformat, libavcodec, libswscale).
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
 * MOV/MP4).
 */
#ifndef CK_VIDEO_H
#define CK_VIDEO_H

#include "core/check.h"

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

#endif
