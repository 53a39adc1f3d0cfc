/* A shot keyed into files (part of the library): a plate file, a folder of frames or a video, with a hint
 * file, folder or video (or the automatic chroma-difference hint), keyed through the frame pipeline
 * (ckey_pipe.h) into CorridorKey's output folder, exactly as `ckey key` writes it:
 *
 *   OUT/Matte/<stem>.exr      alpha, 1 channel "Y", half float     (ck_passes.alpha)
 *   OUT/FG/<stem>.exr         straight sRGB-encoded foreground     (ck_passes.fg)
 *   OUT/Processed/<stem>.exr  linear premultiplied RGBA            (ck_passes.processed)
 *   OUT/Comp/<stem>.png       8-bit preview over a checkerboard    (ck_passes.comp; when the context's comp is on)
 *   OUT/<name>_prores4444.mov, <name>_ffv1.mkv, <name>_comp.mp4   the videos asked for (FFmpeg builds)
 *
 * <stem> is a frame file's name without its extension, a video frame's 0-based index as %05d; <name> the
 * source's (folder or file) stem. A frame's passes appear together or not at all: each is written to a
 * hidden ".<stem>.partial<pid>.<ext>" and the set is renamed into place and flushed. A resumed shot
 * (skip_existing) keeps every frame whose passes are all there and decode; its videos are then encoded from
 * the passes once every frame is there (ck_shot_encode_pending). An interrupted or failed run removes its
 * unfinished videos; the frames already written stay.
 *
 *     ck_shot_opts o = ck_shot_opts_default();
 *     o.image = "plates/", o.out = "keyed/", o.event = on_event, o.cancelled = stop_asked;
 *     ck_shot *shot = NULL;
 *     if (ck_shot_open(&shot, &o) != CK_OK) { puts(ck_shot_last_error(shot)); ck_shot_free(shot); ... }
 *     ck_shot_select(shot, 0, ck_shot_frames(shot));        // optional: a range of positions
 *     ck_shot_check(shot);                                  // optional: fail before loading a checkpoint
 *     ck_ctx_init(&ctx, ...);
 *     ck_shot_stats st;
 *     ck_status s = ck_shot_key(shot, ctx, &st);            // st.cancelled: ended early by o.cancelled
 *     if (s == CK_OK && !st.cancelled) s = ck_shot_encode_pending(shot, NULL);
 *     ck_shot_free(shot), ck_ctx_free(ctx);
 *
 * Failures return a ck_status with the message in ck_shot_last_error. Messages of the readers, writers and
 * contexts underneath also go to the log callback (ck_set_log); the shot's own (paths, frame counts,
 * ranges) are only returned. A shot is used by one thread; its callbacks come from the library's threads.
 */
#ifndef CKEY_SHOT_H
#define CKEY_SHOT_H

#include "ckey.h"
#include "ckey_pipe.h"

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>

/* The longest path the shot reports (a pass file's). */
#define CK_SHOT_PATH_MAX 4200

typedef enum ck_shot_event_kind {
    CK_SHOT_FRAME_DONE = 0, /* a frame complete: written (paths) or skipped */
    CK_SHOT_WARNING    = 1, /* see ck_shot_warning; the run goes on */
} ck_shot_event_kind;

typedef enum ck_shot_warning {
    CK_SHOT_WARN_SKIPPED   = 0, /* skip_existing: every pass of the frame is there and decodes; not keyed */
    CK_SHOT_WARN_AUTO_HINT = 1, /* no hint given: the automatic hint is used (once, at the range's first frame) */
    CK_SHOT_WARN_REKEY     = 2, /* skip_existing: a pass is there but does not decode; the frame is keyed again */
} ck_shot_warning;

typedef struct ck_shot_event {
    ck_shot_event_kind kind;
    int                frame; /* position in the shot (0-based) */
    const char        *stem;  /* the frame's pass name */
    /* CK_SHOT_FRAME_DONE */
    int         skipped;      /* 1: already written (skip_existing), nothing keyed */
    int         done, total;  /* frames complete so far (written or skipped), frames in the range */
    int         npaths;       /* 3, or 4 with the comp; 0 when skipped */
    const char *paths[4];     /* the files written: Matte, FG, Processed[, Comp] */
    double      read_s, network_s, finish_s, write_s, ordered_s; /* this frame's stages (a batch's network time
                                                                    for each of its frames) */
    /* CK_SHOT_WARNING */
    ck_shot_warning warning;
    const char     *message;
    int             blue; /* CK_SHOT_WARN_AUTO_HINT: against a blue screen (else green) */
} ck_shot_event;

typedef struct ck_shot_opts {
    const char *image; /* a plate file, a folder of frames (.png/.jpg/.exr/.tif/.dpx, natural order) or a video */
    const char *hint;  /* NULL: the automatic chroma-difference hint; a file (every frame), a folder of hints
                          (paired with the frames by position) or, for a video, a video (its red channel) */
    const char *out;   /* the output folder (created) */
    /* 1: linear files (EXR, float TIFF) are keyed as stored, negatives clamped (the context takes linear light
     * or a colour space: `ckey key --linear` / `--colorspace`); 0: they are sRGB-encoded on reading */
    int                input_is_linear;
    ck_exr_compression exr;
    int                skip_existing; /* keep frames whose passes are all there and decode */
    /* the videos written while keying, a comma list of "prores" (ProRes 4444, FG + Matte as alpha), "ffv1"
     * (FFV1 in Matroska, the same), "h264" (the comp; needs the context's comp); NULL: "prores,h264" for a
     * video source, none for frames; "": none. With skip_existing they are encoded from the passes instead,
     * and only for the whole shot (ck_shot_encode_pending). */
    const char *video_out;
    int         readers, workers; /* 0: ck_pipe_default_readers / _workers(); a video is read by one */
    int         ordered_events;   /* 1: CK_SHOT_FRAME_DONE in frame order (else in completion order when no
                                     video is written) */
    void *user;
    /* Called one at a time (under the shot's lock), from the pipeline's threads. Strings live for the call. */
    void (*event)(void *user, const ck_shot_event *ev);
    /* Polled before each frame (the keying thread); non-zero: no further frame starts, the frames already
     * keyed are written, ck_shot_key returns CK_OK with stats.cancelled set. NULL: never. */
    int (*cancelled)(void *user);
} ck_shot_opts;

ck_shot_opts ck_shot_opts_default(void);

typedef struct ck_shot_stats {
    int    frames, skipped; /* written, skipped (skip_existing) */
    int    cancelled;       /* ended early by opts.cancelled */
    int    readers, workers; /* the thread counts used */
    double read_s, network_s, finish_s, write_s, ordered_s; /* busy seconds summed over frames */
    double wall_s;                                          /* the pipeline's */
    /* per context (ck_shot_key_multi; one for ck_shot_key): frames keyed, busy seconds, and whether it
     * stopped on a device error (its frames were keyed by the others) */
    int                   contexts;
    ck_pipe_context_stats per_context[CK_PIPE_MAX_CONTEXTS];
} ck_shot_stats;

typedef struct ck_shot ck_shot;

/* Lists the frames (a folder), probes the video (refusing a truncated one) and pairs the hints with the
 * frames; the strings in opts must outlive the shot. The range is the whole shot. On failure *out is a
 * shot holding only the message (NULL when out of memory): free it with ck_shot_free. */
ck_status   ck_shot_open(ck_shot **out, const ck_shot_opts *opts);
void        ck_shot_free(ck_shot *s);
/* The last failure's message ("out of memory" for NULL). */
const char *ck_shot_last_error(const ck_shot *s);

int         ck_shot_frames(const ck_shot *s);          /* frames in the shot */
/* A frame's pass name; NULL out of range. A video frame's lives until the next call on this thread. */
const char *ck_shot_stem(const ck_shot *s, int frame);
const char *ck_shot_name(const ck_shot *s);            /* the videos' name: the folder's or the file's stem */
int         ck_shot_is_video(const ck_shot *s);

/* Keys positions first .. first + count − 1 only (count ≥ 1, within the shot): CK_STATUS_EINVAL otherwise.
 * The videos' rate and timecode are read again when first changes. */
ck_status ck_shot_select(ck_shot *s, int first, int count);
/* The videos' frame rate and start timecode ("" for none), from the selected range's first frame: a video
 * source's rate and its timecode counted on to that frame, else the frame file's (EXR timeCode /
 * framesPerSecond, DPX header; 24 fps when it says none). A timecode that does not fit the rate is dropped
 * with a warning (logged once per range). ck_shot_key reads them when it writes videos. */
void      ck_shot_video_meta(ck_shot *s, double *fps, char timecode[16]);
/* The plates (a single file) and hint are readable, the output folder can be created and written. Also done
 * by ck_shot_key; call it first to fail before loading a checkpoint. */
ck_status ck_shot_check(ck_shot *s);
/* Removes from the shot's output folders the partial files of processes that no longer run (a killed run's
 * temporaries); returns how many. For a whole shot keyed by one host: other hosts' processes' files are
 * not judged by their ids here. */
int       ck_shot_sweep(const ck_shot *s);

/* One frame's files, as `ckey key` reads and writes them (for hosts that key frames themselves, such as a
 * review server, and must give the same bytes). */
/* The plate as 3-channel floats following CorridorKey's CLI conventions (grey replicated, alpha dropped;
 * linear files clamped at 0 and, unless input_is_linear, sRGB-encoded). Decoded into buf (cap floats; NULL for
 * none) when it fits, then ->data may be buf (the caller's); otherwise malloc'd. */
ck_status ck_shot_read_plate(const char *path, int input_is_linear, float *buf, size_t cap, ck_image *rgb, ck_err *err);
/* The hint: the file's first channel, the same way into buf or malloc'd. */
ck_status ck_shot_read_hint(const char *path, float *buf, size_t cap, ck_image *hint, ck_err *err);
/* Every pass of one frame into out, atomically as a set (comp: the Comp pass too; exr: the EXR passes'
 * compression, the device's PXR24 chunks written as given). The message in err on failure. */
ck_status ck_shot_write_passes(const char *out, const char *stem, int comp, ck_exr_compression exr,
                               const ck_passes *pv, ck_err *err);

/* Keys the selected range through the frame pipeline with ctx (used on this thread only, as ck_pipe_run).
 * The context's comp decides the Comp pass and the H.264 video. CK_OK also when cancelled. */
ck_status ck_shot_key(ck_shot *s, ck_ctx *ctx, ck_shot_stats *stats);
/* The same over n_ctx contexts made with the same parameters (one per GPU, or several streams of one model):
 * each keys different frames at once on its own thread (ckey_pipe.h ck_pipe_run_multi); a context that
 * fails with a device error stops and the others key its frames; the files are those of one context. */
ck_status ck_shot_key_multi(ck_shot *s, ck_ctx *const *ctxs, int n_ctx, ck_shot_stats *stats);
/* After a complete ck_shot_key with skip_existing on the whole shot: the videos asked for, encoded from the
 * passes (ck_shot_encode_videos) with the source's rate and timecode; nothing to do otherwise (*frames 0). */
ck_status ck_shot_encode_pending(ck_shot *s, int *frames);

/* ---- the output folder's files, without a shot (resume checks, farms, `ckey encode`) ---- */

/* The files of a frame's passes in out (Matte, FG, Processed, then Comp when comp); returns how many. */
int ck_shot_pass_paths(const char *out, const char *stem, int comp, char paths[4][CK_SHOT_PATH_MAX]);
/* 1 when every pass of the frame is there and decodes. 0 otherwise; when a pass is there but does not
 * decode, why (n bytes) says so ("" else). */
int ck_shot_frame_written(const char *out, const char *stem, int comp, char *why, size_t n);
/* The partial files in dir of processes that no longer run (".NAME.partialPID..." and "NAME.tmp.PID.N"),
 * removed; returns how many. */
int ck_shot_sweep_dir(const char *dir);
/* The file name without folder and extension; the name a shot's videos get from its file or folder. */
void ck_shot_file_stem(char *out, size_t n, const char *path);
/* Creates the folder and its parents (as the shot's output folders are made); 0 on failure, errno set. */
int  ck_shot_mkdirs(const char *path);
/* The videos in `list` (as opts.video_out) of the shot in out, from its passes (out/FG + out/Matte, out/Comp)
 * in natural order, named <name>_prores4444.mov etc., at fps with the start timecode (NULL or "" for
 * none): the samples `ckey key` writes while keying. *frames: how many were encoded. CK_STATUS_EUNSUPPORTED
 * without FFmpeg. The message in err (n bytes) on failure. */
ck_status ck_shot_encode_videos(const char *out, const char *name, const char *list, double fps, const char *timecode,
                                int *frames, char *err, size_t n);

#ifdef __cplusplus
}
#endif

#endif
