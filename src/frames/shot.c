/* A shot keyed into files (include/ckey_shot.h): its frames (one file, a folder of frames or a video) and
 * hints, the range, and the frame pipeline's callbacks (ckey_pipe.h): read (plate, hint or the automatic
 * hint; the resume check), write (shot_files.c), ordered (the videos, shot_video.c), done (events),
 * cancelled. The reader callback runs on one thread in frame order for a video and on several for a folder;
 * write on several threads; ordered and done are serialized; events are sent under the shot's lock. */
#include "shot_int.h"
#include "io/image.h" /* ckey_io.h */
#include "frame/frame_ops.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ck_shot {
    ck_shot_opts o;
    char         err[1400];
    ck_seq       imgs, hints; /* a folder's frames; a folder of hints (hints.n = 0: none) */
    int          seq, vid;    /* the source: a folder of frames, a video (else one file) */
    int          total;       /* frames in the shot */
    char         name[1024];  /* the videos' name; a single file's stem */
#ifdef CK_HAVE_FFMPEG
    ck_video_reader *vin, *vhint;
#endif
    int    first, count; /* the range */
    int    meta_read;    /* fps and timecode are the range's */
    double fps;
    char   timecode[16];
    int    keyed;          /* ck_shot_key ran (once per shot: the video readers are sequential) */
    int    pending[3];     /* videos left for ck_shot_encode_pending */
    /* during ck_shot_key */
    int             comp;
    ck__shot_videos videos;
    int             write_videos;
    pthread_mutex_t mu;      /* events, `done`, fail_st */
    int             done;    /* frames complete */
    ck_status       fail_st; /* the first callback failure's status */
};

ck_shot_opts ck_shot_opts_default(void) {
    ck_shot_opts o;
    memset(&o, 0, sizeof o);
    o.exr = CK_EXR_PXR24;
    return o;
}

static ck_status shot_fail(ck_shot *s, ck_status st, const char *fmt, ...) CK_PRINTF(3, 4);
static ck_status shot_fail(ck_shot *s, ck_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return st;
}

const char *ck_shot_last_error(const ck_shot *s) { return s ? s->err : "out of memory"; }
int         ck_shot_frames(const ck_shot *s) { return s ? s->total : 0; }
const char *ck_shot_name(const ck_shot *s) { return s ? s->name : ""; }
int         ck_shot_is_video(const ck_shot *s) { return s && s->vid; }

const char *ck_shot_stem(const ck_shot *s, int f) {
    static __thread char buf[16];
    if (!s || f < 0 || f >= s->total) return NULL;
    if (s->seq) return s->imgs.stems[f];
    if (s->vid) return snprintf(buf, sizeof buf, "%05d", f), buf;
    return s->name;
}

void ck_shot_free(ck_shot *s) {
    if (!s) return;
#ifdef CK_HAVE_FFMPEG
    ck_video_close(s->vin), ck_video_close(s->vhint);
#endif
    ck_seq_free(&s->imgs), ck_seq_free(&s->hints);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

#ifdef CK_HAVE_FFMPEG
/* A video source: its frame count (a truncated file refused) and readers for it and a hint video. */
static ck_status open_video(ck_shot *s, ck_err *err) {
    const char *img = s->o.image, *hint = s->o.hint;
    int         declared = 0, damaged = 0;
    const int   n = ck_video_count_frames_ex(img, &declared, &damaged);
    if (n > 0 && (damaged || (declared > 0 && n < declared)))
        return shot_fail(s, CK_STATUS_EFORMAT, "%s: the video is truncated or damaged: %d of %d frames can be read",
                         img, n, declared > n ? declared : n);
    if (n <= 0) return shot_fail(s, CK_STATUS_EFORMAT, "%s: no video frames", img);
    s->vid = 1, s->total = n;
    ck_status st = ck_video_open(&s->vin, img, err);
    if (st != CK_OK) return snprintf(s->err, sizeof s->err, "%s", err->msg), st;
    if (hint && ck__shot_is_dir(hint)) {
        st = ck_seq_list(&s->hints, hint, err);
        if (st != CK_OK || s->hints.n != n) {
            if (s->hints.n != n) return shot_fail(s, CK_STATUS_ESHAPE, "%s has %d frames but %s has %d hints", img, n, hint, s->hints.n);
            return snprintf(s->err, sizeof s->err, "%s", err->msg), st;
        }
    } else if (hint && ck_image_sniff(hint) == CK_IMAGE_UNKNOWN) {
        const int hn = ck_video_count_frames(hint);
        if (hn != n) return shot_fail(s, CK_STATUS_ESHAPE, "%s has %d frames but %s has %d", img, n, hint, hn);
        if ((st = ck_video_open(&s->vhint, hint, err)) != CK_OK) return snprintf(s->err, sizeof s->err, "%s", err->msg), st;
    }
    return CK_OK;
}
#endif

ck_status ck_shot_open(ck_shot **out, const ck_shot_opts *opts) {
    ck_shot *s = calloc(1, sizeof *s);
    *out       = s;
    if (!s) return CK_STATUS_EOOM;
    pthread_mutex_init(&s->mu, NULL);
    s->o = *opts;
    const ck_shot_opts *o = &s->o;
    if (!o->image || !o->image[0] || !o->out || !o->out[0])
        return shot_fail(s, CK_STATUS_EINVAL, "a shot needs its frames (image) and an output folder (out)");
    ck_err err = {{0}};
    s->seq     = ck__shot_is_dir(o->image);
    if (s->seq) {
        /* videos written from a folder are named after it */
        char folder[1024];
        snprintf(folder, sizeof folder, "%s", o->image);
        for (size_t l = strlen(folder); l > 1 && folder[l - 1] == '/'; l--) folder[l - 1] = '\0';
        ck_shot_file_stem(s->name, sizeof s->name, folder);
        ck_status st = ck_seq_list(&s->imgs, o->image, &err);
        if (st != CK_OK) return snprintf(s->err, sizeof s->err, "%s", err.msg), st;
        if (s->imgs.n == 0)
            return shot_fail(s, CK_STATUS_EIO, "%s: no .png/.jpg/.exr/.tif/.dpx frames in this folder", o->image);
        if (o->hint && ck__shot_is_dir(o->hint)) {
            if ((st = ck_seq_list(&s->hints, o->hint, &err)) != CK_OK)
                return snprintf(s->err, sizeof s->err, "%s", err.msg), st;
            if (s->hints.n != s->imgs.n)
                return shot_fail(s, CK_STATUS_ESHAPE, "%s has %d frames but %s has %d hints; they are paired by position",
                                 o->image, s->imgs.n, o->hint, s->hints.n);
        }
        s->total = s->imgs.n;
    } else {
        ck_shot_file_stem(s->name, sizeof s->name, o->image);
        s->total = 1;
#ifdef CK_HAVE_FFMPEG
        const int unknown = ck_image_sniff(o->image) == CK_IMAGE_UNKNOWN;
        if (unknown && !ck_video_probe(o->image) && ck_video_looks_like_container(o->image))
            return shot_fail(s, CK_STATUS_EFORMAT,
                             "%s: a video file FFmpeg cannot open or find a video stream in (truncated, damaged, or "
                             "without frames?)", o->image);
        if (unknown && ck_video_probe(o->image)) {
            ck_status st = open_video(s, &err);
            if (st != CK_OK) return st;
        }
#endif
    }
    s->first = 0, s->count = s->total;
    return CK_OK;
}

ck_status ck_shot_select(ck_shot *s, int first, int count) {
    if (count < 1 || first < 0 || first > s->total - count)
        return shot_fail(s, CK_STATUS_EINVAL, "frames %d-%d are outside the shot's 0-%d", first, first + count - 1,
                         s->total - 1);
    if (first != s->first) s->meta_read = 0; /* the videos' timecode is the first frame's */
    s->first = first, s->count = count;
    return CK_OK;
}

void ck_shot_video_meta(ck_shot *s, double *fps, char timecode[16]) {
    if (!s->meta_read) { /* once per range: a timecode that does not fit is warned about once */
        s->fps = 24.0;
#ifdef CK_HAVE_FFMPEG
        if (s->vid) s->fps = ck_video_fps(s->vin);
        ck__shot_video_meta(s->seq ? s->imgs.paths[s->first] : s->vid ? NULL : s->o.image,
                            s->vid ? ck_video_timecode(s->vin) : NULL, s->first, &s->fps, s->timecode);
#endif
        s->meta_read = 1;
    }
    *fps = s->fps;
    snprintf(timecode, 16, "%s", s->timecode);
}

ck_status ck_shot_check(ck_shot *s) {
    const ck_shot_opts *o = &s->o;
    struct stat         st;
    if (!s->seq && (stat(o->image, &st) != 0 || !S_ISREG(st.st_mode) || access(o->image, R_OK) != 0))
        return shot_fail(s, CK_STATUS_EIO, "%s: %s", o->image, errno == ENOENT ? "no such file" : "not a readable file");
    if (o->hint && stat(o->hint, &st) != 0)
        return shot_fail(s, CK_STATUS_EIO, "%s: no such file or folder (the hint)", o->hint);
    if (o->hint && access(o->hint, R_OK) != 0)
        return shot_fail(s, CK_STATUS_EIO, "%s: not readable (the hint): %s", o->hint, strerror(errno));
    if (!ck_shot_mkdirs(o->out))
        return shot_fail(s, CK_STATUS_EIO, "cannot create the output folder %s: %s", o->out, strerror(errno));
    if (access(o->out, W_OK | X_OK) != 0)
        return shot_fail(s, CK_STATUS_EIO, "%s: the output folder is not writable: %s", o->out, strerror(errno));
    return CK_OK;
}

int ck_shot_sweep(const ck_shot *s) {
    static const char *dirs[5] = {"", "/Matte", "/FG", "/Processed", "/Comp"};
    int                n       = 0;
    for (int i = 0; i < 5; i++) {
        char d[CK_SHOT_PATH_MAX];
        snprintf(d, sizeof d, "%s%s", s->o.out, dirs[i]);
        n += ck_shot_sweep_dir(d);
    }
    return n;
}

/* ---- keying: the pipeline's callbacks ---- */

static void note_status(ck_shot *s, ck_status st) {
    pthread_mutex_lock(&s->mu);
    if (s->fail_st == CK_OK) s->fail_st = st;
    pthread_mutex_unlock(&s->mu);
}

static void send_event(ck_shot *s, const ck_shot_event *ev) {
    if (!s->o.event) return;
    pthread_mutex_lock(&s->mu);
    s->o.event(s->o.user, ev);
    pthread_mutex_unlock(&s->mu);
}

static void warn(ck_shot *s, int f, const char *stem, ck_shot_warning w, const char *msg, int blue) {
    ck_shot_event ev = {.kind = CK_SHOT_WARNING, .frame = f, .stem = stem, .warning = w, .message = msg, .blue = blue};
    send_event(s, &ev);
}

/* Frees a decoded plate or hint unless it lies in the slot's input block. */
static void free_input(const ck_pipe_frame *fr, float *data) {
    if (!ck_pipe_in_block(fr, data)) free(data);
}

#ifdef CK_HAVE_FFMPEG
/* The next video frame (and hint video frame, its red channel) into rgb and hint: in the slot's input
 * block when the frame fits (ckey_pipe.h: rgb, then the hint), else malloc'd. */
static int read_video_frame(ck_shot *s, ck_pipe_frame *fr, ck_image *rgb, ck_image *hint, char *emsg, size_t n) {
    ck_err       err = {{0}};
    int          eof = 0;
    const size_t px  = (size_t)ck_video_width(s->vin) * ck_video_height(s->vin);
    *rgb = (ck_image){ck_video_width(s->vin), ck_video_height(s->vin), 3,
                      4 * px <= fr->in_floats ? fr->in_block : malloc(sizeof(float) * 3 * px)};
    ck_status st = rgb->data ? ck_video_read(s->vin, rgb->data, 3, &eof, &err) : CK_STATUS_EOOM;
    if (st != CK_OK || eof) {
        snprintf(emsg, n, "%s", eof ? "video ended early" : err.msg);
        if (eof) snprintf(emsg, n, "%s ended at frame %d", s->o.image, fr->index);
        note_status(s, eof ? CK_STATUS_EFORMAT : st);
        free_input(fr, rgb->data);
        return 0;
    }
    if (!s->vhint) return 1;
    float *t3 = malloc(sizeof(float) * 3 * px); /* (h, w, 3) */
    *hint     = (ck_image){rgb->width, rgb->height, 1,
                           rgb->data == fr->in_block ? fr->in_block + 3 * px : malloc(sizeof(float) * px)};
    if (!t3 || !hint->data || ck_video_read(s->vhint, t3, 3, &eof, &err) != CK_OK || eof) {
        free(t3), free_input(fr, rgb->data), free_input(fr, hint->data);
        snprintf(emsg, n, "hint video ended early or failed to decode");
        note_status(s, CK_STATUS_EFORMAT);
        return 0;
    }
    for (size_t i = 0; i < px; i++) hint->data[i] = t3[3 * i];
    free(t3);
    return 1;
}
#endif

static int frame_read(void *user, ck_pipe_frame *fr, char *emsg, size_t n) {
    ck_shot            *s = user;
    const ck_shot_opts *o = &s->o;
    const int           f = fr->index;
    ck_err              err   = {{0}};
    const char         *ipath = s->seq ? s->imgs.paths[f] : o->image;
    const char         *hpath = s->hints.n ? s->hints.paths[f] : o->hint;
    snprintf(fr->stem, sizeof fr->stem, "%s", ck_shot_stem(s, f));
    ck_image rgb = {0}, hint = {0};
#ifdef CK_HAVE_FFMPEG
    if (s->vid) { /* the frame is decoded even when it is skipped: the reader is sequential */
        if (!read_video_frame(s, fr, &rgb, &hint, emsg, n)) return 0;
        if (s->vhint) hpath = NULL;
    }
#endif
    if (o->skip_existing) {
        char why[CK_SHOT_PATH_MAX + 200];
        if (ck_shot_frame_written(o->out, fr->stem, s->comp, why, sizeof why)) {
            free_input(fr, rgb.data), free_input(fr, hint.data);
            fr->skipped = 1;
            warn(s, f, fr->stem, CK_SHOT_WARN_SKIPPED, "already written; skipped", 0);
            return 1;
        }
        if (why[0]) warn(s, f, fr->stem, CK_SHOT_WARN_REKEY, why, 0);
    }
    ck_status st = CK_OK;
    /* the plate may fill three quarters of the block, so that a hint of its size fits after it */
    if (!rgb.data) st = ck_shot_read_plate(ipath, o->input_is_linear, fr->in_block, fr->in_floats / 4 * 3, &rgb, &err);
    /* the hint's place in the block, right after the plate */
    const size_t px        = (size_t)rgb.width * rgb.height;
    float       *hint_buf  = st == CK_OK && rgb.data == fr->in_block ? fr->in_block + 3 * px : NULL;
    const size_t hint_room = hint_buf ? fr->in_floats - 3 * px : 0;
    if (st == CK_OK && hint.data) {
        /* from the hint video */
    } else if (st == CK_OK && hpath) {
        st = ck_shot_read_hint(hpath, hint_buf, hint_room, &hint, &err);
    } else if (st == CK_OK) { /* no hint: the automatic chroma-difference fallback */
        int blue = 0;
        hint     = (ck_image){rgb.width, rgb.height, 1, hint_room >= px ? hint_buf : malloc(sizeof(float) * px)};
        st       = hint.data ? ck_auto_hint(hint.data, rgb.data, rgb.width, rgb.height, &blue) : CK_STATUS_EOOM;
        if (st == CK_OK && f == s->first)
            warn(s, f, NULL, CK_SHOT_WARN_AUTO_HINT,
                 blue ? "no hint: using an automatic chroma-difference hint against the detected blue screen (a "
                        "fallback; a drawn or generated hint keys better)"
                      : "no hint: using an automatic chroma-difference hint against the detected green screen (a "
                        "fallback; a drawn or generated hint keys better)", blue);
        if (st != CK_OK) snprintf(err.msg, sizeof err.msg, "%s: out of memory for the automatic hint", ipath);
    }
    if (st != CK_OK) {
        free_input(fr, rgb.data), free_input(fr, hint.data);
        snprintf(emsg, n, "%s", err.msg);
        note_status(s, st);
        return 0;
    }
    fr->rgb = rgb, fr->hint = hint;
    /* the video encoders take the halves; PXR24 files only the chunks */
    fr->passes.chunks_only = !s->write_videos && o->exr == CK_EXR_PXR24;
    return 1;
}

static int frame_write(void *user, ck_pipe_frame *fr, char *emsg, size_t n) {
    ck_shot        *s   = user;
    ck_err          err = {{0}};
    const ck_status st  = ck_shot_write_passes(s->o.out, fr->stem, s->comp, s->o.exr, &fr->passes, &err);
    if (st == CK_OK) return 1;
    note_status(s, st);
    snprintf(emsg, n, "%s: could not write the output passes", fr->stem);
    return 0;
}

/* In frame order: the videos (or only the order of the events, opts.ordered_events). */
static int frame_ordered(void *user, ck_pipe_frame *fr, char *emsg, size_t n) {
    ck_shot *s   = user;
    ck_err   err = {{0}};
    if (!s->write_videos) return 1;
    const ck_status st = ck__shot_videos_write(&s->videos, s->o.out, s->name, &fr->passes, &err);
    if (st == CK_OK) return 1;
    note_status(s, st);
    snprintf(emsg, n, "%s", err.msg);
    return 0;
}

static void frame_done(void *user, const ck_pipe_frame *fr) {
    ck_shot      *s = user;
    char          paths[4][CK_SHOT_PATH_MAX];
    ck_shot_event ev = {.kind = CK_SHOT_FRAME_DONE, .frame = fr->index, .stem = fr->stem, .skipped = fr->skipped,
                        .total = s->count, .read_s = fr->read_s, .network_s = fr->network_s,
                        .finish_s = fr->finish_s, .write_s = fr->write_s, .ordered_s = fr->ordered_s};
    if (!fr->skipped) {
        ev.npaths = ck_shot_pass_paths(s->o.out, fr->stem, s->comp, paths);
        for (int i = 0; i < ev.npaths; i++) ev.paths[i] = paths[i];
    }
    pthread_mutex_lock(&s->mu);
    ev.done = ++s->done;
    if (s->o.event) s->o.event(s->o.user, &ev);
    pthread_mutex_unlock(&s->mu);
}

static int frame_cancelled(void *user) {
    const ck_shot *s = user;
    return s->o.cancelled && s->o.cancelled(s->o.user);
}

/* Decodes the video (and hint video) up to the range's first frame. */
static ck_status video_seek(ck_shot *s) {
#ifdef CK_HAVE_FFMPEG
    ck_err    err = {{0}};
    ck_status st  = CK_OK;
    float    *tmp = s->vid && s->first ? malloc(sizeof(float) * 3 * (size_t)ck_video_width(s->vin) * ck_video_height(s->vin)) : NULL;
    for (int k = 0; s->vid && k < s->first && st == CK_OK; k++) {
        int eof = 0;
        if (!tmp) st = shot_fail(s, CK_STATUS_EOOM, "out of memory");
        else if ((st = ck_video_read(s->vin, tmp, 3, &eof, &err)) != CK_OK || eof) st = CK_STATUS_EFORMAT;
        else if (s->vhint && ((st = ck_video_read(s->vhint, tmp, 3, &eof, &err)) != CK_OK || eof)) st = CK_STATUS_EFORMAT;
        if (st != CK_OK && !s->err[0])
            shot_fail(s, st, "%s", err.msg[0] ? err.msg : "the video ended before the range's first frame");
    }
    free(tmp);
    return st;
#else
    (void)s;
    return CK_OK;
#endif
}

ck_status ck_shot_key(ck_shot *s, ck_ctx *ctx, ck_shot_stats *stats) { return ck_shot_key_multi(s, &ctx, 1, stats); }

ck_status ck_shot_key_multi(ck_shot *s, ck_ctx *const *ctxs, int n_ctx, ck_shot_stats *stats) {
    const ck_shot_opts *o = &s->o;
    ck_shot_stats       local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    s->err[0] = '\0';
    if (!ctxs || n_ctx < 1 || n_ctx > CK_PIPE_MAX_CONTEXTS)
        return shot_fail(s, CK_STATUS_EINVAL, "%d contexts: a shot takes 1 to %d", n_ctx, CK_PIPE_MAX_CONTEXTS);
    for (int i = 0; i < n_ctx; i++)
        if (!ctxs[i]) return shot_fail(s, CK_STATUS_EINVAL, "no context");
    ck_ctx *ctx = ctxs[0];
    if (s->keyed) return shot_fail(s, CK_STATUS_EBADSTATE, "this shot was keyed already (a shot is keyed once)");
    s->keyed = 1;
    ck_status st = ck_shot_check(s);
    if (st != CK_OK) return st;
    s->comp = ck_ctx_params(ctx)->comp;
    /* videos: ProRes 4444 / FFV1 (fg + matte as alpha), H.264 (comp); opened at the first frame */
    const char *list = o->video_out ? o->video_out : s->vid ? "prores,h264" : "";
    memset(&s->videos, 0, sizeof s->videos);
    ck__shot_video_want(list, s->videos.want);
    if (!s->comp) s->videos.want[2] = 0;
    int *want = s->videos.want;
    if ((want[0] || want[1] || want[2]) && o->skip_existing) {
        /* a resumed shot: its videos come from the passes once they are all there (shot_video.c) */
        if (s->first == 0 && s->count == s->total) memcpy(s->pending, want, sizeof s->pending);
        want[0] = want[1] = want[2] = 0;
    }
    s->write_videos = want[0] || want[1] || want[2];
    if (s->write_videos || s->pending[0] || s->pending[1] || s->pending[2])
        ck_shot_video_meta(s, &s->videos.fps, s->videos.timecode);
    s->done = 0, s->fail_st = CK_OK;
    stats->workers = o->workers > 0 ? o->workers : ck_pipe_default_workers();
    /* file sequences decode in parallel (a 16-bit 4K PNG takes over half a second); video is sequential */
    stats->readers = s->vid ? 1 : o->readers > 0 ? o->readers : ck_pipe_default_readers();
    if (frame_cancelled(s) || (st = video_seek(s)) != CK_OK) { /* cancelled e.g. during loading */
        stats->cancelled = st == CK_OK;
        memset(s->pending, 0, sizeof s->pending);
        return st;
    }
    const ck_pipe_ops ops = {s, frame_read, frame_write, s->write_videos || o->ordered_events ? frame_ordered : NULL,
                             frame_done, frame_cancelled};
    ck_pipe_stats ps;
    char          perr[1400] = "";
    memset(&ps, 0, sizeof ps);
    int ok = ck_pipe_run_multi(ctxs, n_ctx, s->first, s->count, stats->readers, stats->workers, &ops, &ps, perr,
                               sizeof perr);
    int cancelled = !ok && ps.cancelled && !perr[0];
    st            = CK_OK;
    if (!ok && !cancelled) {
        st = s->fail_st != CK_OK ? s->fail_st : ps.status != CK_OK ? ps.status : CK_STATUS_EIO;
        snprintf(s->err, sizeof s->err, "%s", perr);
    }
    ck_err          err = {{0}};
    const ck_status vst = ck__shot_videos_close(&s->videos, st != CK_OK || cancelled, &err);
    if (st == CK_OK && vst != CK_OK) st = vst, snprintf(s->err, sizeof s->err, "%s", err.msg);
    stats->frames = ps.frames, stats->skipped = ps.skipped, stats->cancelled = cancelled;
    stats->read_s = ps.read_s, stats->network_s = ps.network_s, stats->finish_s = ps.finish_s;
    stats->write_s = ps.write_s, stats->ordered_s = ps.ordered_s, stats->wall_s = ps.wall_s;
    stats->contexts = ps.contexts;
    memcpy(stats->per_context, ps.per_context, sizeof stats->per_context);
    if (st != CK_OK || cancelled) memset(s->pending, 0, sizeof s->pending);
    return st;
}

ck_status ck_shot_encode_pending(ck_shot *s, int *frames) {
    if (frames) *frames = 0;
    if (!s->pending[0] && !s->pending[1] && !s->pending[2]) return CK_OK;
    char list[32];
    snprintf(list, sizeof list, "%s%s%s", s->pending[0] ? "prores," : "", s->pending[1] ? "ffv1," : "",
             s->pending[2] ? "h264" : "");
    memset(s->pending, 0, sizeof s->pending);
    return ck_shot_encode_videos(s->o.out, s->name, list, s->fps, s->timecode, frames, s->err, sizeof s->err);
}
