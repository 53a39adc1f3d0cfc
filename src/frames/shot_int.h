/* Inside a shot (include/ckey_shot.h), shared by its three files:
 *   shot.c        the shot: its frames (a folder, a file or a video) and hints, the range, the pipeline's
 *                 callbacks (reading plates and hints, writing, progress), cancellation, the run
 *   shot_files.c  the files: plates and hints in, the passes out (atomically, as a set), resume checks,
 *                 partial-file sweeps, folders
 *   shot_video.c  the videos: what they carry (rate, start timecode), writing them in frame order while
 *                 keying, encoding them from the passes afterwards
 * shot.c depends on the other two, which depend on neither (nor on each other). */
#ifndef CK_SHOT_INT_H
#define CK_SHOT_INT_H

#include "ckey_shot.h"
#include "ckey_pipe.h"
#include "core/check.h"

#include <stddef.h>

/* ---- shot_files.c ---- */

/* ck_shot_read_plate, ck_shot_read_hint, ck_shot_write_passes: include/ckey_shot.h */
int       ck__shot_is_dir(const char *path);
int       ck__shot_is_file(const char *path);

/* ---- shot_video.c ---- */

/* The videos a comma list names: want[0] ProRes 4444, [1] FFV1, [2] H.264 (the comp's). */
void ck__shot_video_want(const char *list, int want[3]);
/* What the videos carry (ck_shot_video_meta): a video source's timecode video_tc counted on to `first`, else
 * frame_file's rate (into *fps, when stated) and timecode. */
void ck__shot_video_meta(const char *frame_file, const char *video_tc, int first, double *fps, char timecode[16]);

/* The videos written while keying: opened at the first frame, fed in frame order (the ordered stage). */
typedef struct ck__shot_videos {
    int    want[3];
    void  *writer[3]; /* ck_video_writer (FFmpeg builds) */
    double fps;
    char   timecode[16];
} ck__shot_videos;
/* The frame's passes (the fg and matte halves, the comp's 8-bit values) into each video wanted, opening it at
 * out/<name><ext> first. */
ck_status ck__shot_videos_write(ck__shot_videos *v, const char *out, const char *name, const ck_passes *pv, ck_err *err);
/* Closes them; abort: removes the files (an interrupted or failed shot's videos would miss frames). */
ck_status ck__shot_videos_close(ck__shot_videos *v, int abort, ck_err *err);

#endif
