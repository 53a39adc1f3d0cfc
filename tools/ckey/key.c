/* `ckey key` on a file, a folder of frames or a video: frames go through the library's frame pipeline (ckey_pipe.h);
 * the callbacks here read frames (plate, hint or the automatic hint), write the passes, feed the video
 * encoders in frame order and report progress. */
#include "key.h"
#include "model/builtin.h"
#include "signals.h"
#include "ckey_pipe.h"
#include "io/sequence.h"
#ifdef CK_HAVE_FFMPEG
#include "io/video.h"
#endif
#include "pipeline/frame_ops.h"
#include "core/tensor.h"

#include <pthread.h>
#include <unistd.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* State of one `ckey key` run shared by the pipeline's callbacks (ckey_pipe.h). The reader callback runs
 * on one thread in frame order; write on several threads; ordered and done are serialized. */
typedef struct key_run {
    const key_opts *o;
    const ck_seq   *imgs, *hints;
    int             seq, vid;
    const char     *stem1;
#ifdef CK_HAVE_FFMPEG
    ck_video_reader *vin, *vhint;
    int              want[3];
    ck_video_writer *vw[3];
#endif
    int    start, count, completed;
    double t1;
    int    half_done;         /* frames completed at t_half (half the run), for the steady rate */
    double t_half, t_last;    /* when half the frames, and the last frame, completed */
#ifdef CK_HAVE_FFMPEG
    ck_video_meta vmeta; /* the videos' frame rate and start timecode (shot_video_meta) */
#endif
} key_run;

/* stdout carries NDJSON from several threads: one event per locked print */
static pthread_mutex_t g_out_mu = PTHREAD_MUTEX_INITIALIZER;

static void json_warning(int f, const char *msg, const char *stem) {
    pthread_mutex_lock(&g_out_mu);
    printf("{\"event\": \"warning\", \"frame\": %d, \"message\": ", f);
    ck_cli_json_str(stdout, msg);
    if (stem) {
        printf(", \"stem\": ");
        ck_cli_json_str(stdout, stem);
    }
    printf("}\n");
    fflush(stdout);
    pthread_mutex_unlock(&g_out_mu);
}

/* Frees a decoded plate or hint unless it lies in the slot's input block. */
static void free_input(const ck_pipe_frame *fr, float *data) {
    if (!ck_pipe_in_block(fr, data)) free(data);
}

static int frame_read(void *user, ck_pipe_frame *fr, char *emsg, size_t n) {
    key_run        *kr = user;
    const key_opts *o  = kr->o;
    const int       f  = fr->index;
    ck_err          err = {{0}};
    const char     *ipath = kr->seq ? kr->imgs->paths[f] : o->image;
    const char     *hpath = kr->hints->n ? kr->hints->paths[f] : o->hint;
    if (kr->seq) snprintf(fr->stem, sizeof fr->stem, "%s", kr->imgs->stems[f]);
    else if (kr->vid) snprintf(fr->stem, sizeof fr->stem, "%05d", f);
    else snprintf(fr->stem, sizeof fr->stem, "%s", kr->stem1);
    /* decoded straight into the slot's input block when the frame fits (ckey_pipe.h): rgb, then hint */
    ck_image rgb = {0}, hint = {0};
#ifdef CK_HAVE_FFMPEG
    if (kr->vid) { /* the frame is decoded even when it is skipped: the reader is sequential */
        int          eof = 0;
        const size_t px  = (size_t)ck_video_width(kr->vin) * ck_video_height(kr->vin);
        rgb = (ck_image){ck_video_width(kr->vin), ck_video_height(kr->vin), 3,
                         4 * px <= fr->in_floats ? fr->in_block : malloc(sizeof(float) * 3 * px)};
        if (!rgb.data || ck_video_read(kr->vin, rgb.data, 3, &eof, &err) != CK_OK || eof) {
            snprintf(emsg, n, "%s", eof ? "video ended early" : err.msg);
            if (eof) snprintf(emsg, n, "%s ended at frame %d", o->image, f);
            free_input(fr, rgb.data);
            return 0;
        }
        if (kr->vhint) { /* a hint video: its red channel, as CorridorKey */
            float *t3 = malloc(sizeof(float) * 3 * px);
            hint      = (ck_image){rgb.width, rgb.height, 1,
                              rgb.data == fr->in_block ? fr->in_block + 3 * px : malloc(sizeof(float) * px)};
            if (!t3 || !hint.data || ck_video_read(kr->vhint, t3, 3, &eof, &err) != CK_OK || eof) {
                free(t3), free_input(fr, rgb.data), free_input(fr, hint.data);
                snprintf(emsg, n, "hint video ended early or failed to decode");
                return 0;
            }
            for (size_t i = 0; i < (size_t)rgb.width * rgb.height; i++) hint.data[i] = t3[3 * i];
            free(t3);
            hpath = NULL;
        }
    }
#endif
    if (o->skip_existing && frame_done(o, fr->stem)) {
        free_input(fr, rgb.data), free_input(fr, hint.data);
        fr->skipped = 1;
        if (o->json) json_warning(f, "already written; skipped (--skip-existing)", fr->stem);
        return 1;
    }
    int ok = 1;
    /* the plate may fill three quarters of the block, so that a hint of its size fits after it */
    if (!rgb.data)
        ok = read_plate(ipath, o->p.input_is_linear, fr->in_block, fr->in_floats / 4 * 3, &rgb, &err) == CK_OK;
    /* the hint's place in the block, right after the plate */
    const size_t px        = (size_t)rgb.width * rgb.height;
    float       *hint_buf  = ok && rgb.data == fr->in_block ? fr->in_block + 3 * px : NULL;
    const size_t hint_room = hint_buf ? fr->in_floats - 3 * px : 0;
    if (ok && hint.data) {
        /* from the hint video */
    } else if (ok && hpath) {
        ok = read_hint(hpath, hint_buf, hint_room, &hint, &err) == CK_OK;
    } else if (ok) { /* no hint: the automatic chroma-difference fallback */
        int blue = 0;
        hint     = (ck_image){rgb.width, rgb.height, 1, hint_room >= px ? hint_buf : malloc(sizeof(float) * px)};
        ok       = hint.data && ck_auto_hint(hint.data, rgb.data, rgb.width, rgb.height, &blue) == CK_OK;
        if (ok && f == kr->start) {
            const char *msg = blue ? "no --hint: using an automatic chroma-difference hint against the detected "
                                     "blue screen (a fallback; a drawn or generated hint keys better)"
                                   : "no --hint: using an automatic chroma-difference hint against the detected "
                                     "green screen (a fallback; a drawn or generated hint keys better)";
            if (o->json) json_warning(f, msg, NULL);
            else if (!o->quiet) fprintf(stderr, "ckey: warning: %s\n", msg);
        }
        if (!ok) snprintf(err.msg, sizeof err.msg, "%s: out of memory for the automatic hint", ipath);
    }
    if (!ok) {
        free_input(fr, rgb.data), free_input(fr, hint.data);
        snprintf(emsg, n, "%s", err.msg);
        return 0;
    }
    fr->rgb = rgb, fr->hint = hint;
    int video = 0;
#ifdef CK_HAVE_FFMPEG
    video = kr->want[0] || kr->want[1] || kr->want[2];
#endif
    /* the video encoders take the halves; PXR24 files only the chunks */
    fr->passes.chunks_only = !video && o->exr == CK_EXR_PXR24;
    return 1;
}

static int frame_write(void *user, ck_pipe_frame *fr, char *emsg, size_t n) {
    key_run *kr = user;
    if (write_passes(kr->o, fr->stem, &fr->passes) == 0) return 1;
    snprintf(emsg, n, "%s: could not write the output passes", fr->stem);
    return 0;
}

#ifdef CK_HAVE_FFMPEG
static int frame_ordered(void *user, ck_pipe_frame *fr, char *emsg, size_t n) {
    static const char *vext[3] = {"_prores4444.mov", "_ffv1.mkv", "_comp.mp4"};
    key_run           *kr      = user;
    const ck_passes   *pv      = &fr->passes;
    ck_err             err     = {{0}};
    for (int k = 0; k < 3; k++) {
        if (!kr->want[k]) continue;
        const int w = pv->width, h = pv->height;
        if (!kr->vw[k]) {
            char path[5200];
            mkdir_p(kr->o->out);
            snprintf(path, sizeof path, "%s/%s%s", kr->o->out, kr->stem1, vext[k]);
            if (ck_video_writer_open_meta(&kr->vw[k], path, (ck_video_codec)k, w, h, &kr->vmeta, &err) != CK_OK) {
                snprintf(emsg, n, "%s", err.msg);
                return 0;
            }
        }
        float *rgba = malloc(sizeof(float) * 4 * (size_t)w * h);
        if (!rgba) {
            snprintf(emsg, n, "out of memory for the video frame");
            return 0;
        }
        /* the samples as written to the passes: fg and matte halves, the comp's 8-bit values */
        for (size_t i = 0; i < (size_t)w * h; i++) {
            for (int c = 0; c < 3; c++)
                rgba[4 * i + c] = k == 2 ? pv->comp[3 * i + c] / 255.0f : ck_f16_to_f32(pv->fg[3 * i + c]);
            rgba[4 * i + 3] = k == 2 ? 1.0f : ck_f16_to_f32(pv->alpha[i]);
        }
        const ck_status st = ck_video_write(kr->vw[k], rgba, &err);
        free(rgba);
        if (st != CK_OK) {
            snprintf(emsg, n, "%s", err.msg);
            return 0;
        }
    }
    return 1;
}
#else
#define frame_ordered NULL
#endif

/* The rate over the second half of the run, once memory is set up and every stage is busy (0 for short
 * runs); fps covers the whole run. */
static double steady_fps(const key_run *kr) {
    const int n = kr->completed - kr->half_done;
    return kr->count >= 8 && n > 0 && kr->t_last > kr->t_half ? n / (kr->t_last - kr->t_half) : 0.0;
}

/* Progress and events after each frame (serialized by the pipeline). */
static void frame_done_report(void *user, const ck_pipe_frame *fr) {
    key_run        *kr = user;
    const key_opts *o  = kr->o;
    kr->completed++;
    if (fr->skipped) return;
    const double now = now_s(), el = now - kr->t1, fps = kr->completed / (el > 0 ? el : 1e-9);
    if (!kr->half_done && 2 * kr->completed >= kr->count) kr->half_done = kr->completed, kr->t_half = now;
    kr->t_last = now;
    const double eta = (kr->count - kr->completed) / (fps > 0 ? fps : 1e-9);
    if (o->json) {
        pthread_mutex_lock(&g_out_mu);
        printf("{\"event\": \"frame_written\", \"frame\": %d, \"stem\": ", fr->index);
        ck_cli_json_str(stdout, fr->stem);
        char              paths[4][CK_PATH_MAX];
        static const char *key_names[4] = {"matte", "fg", "processed", "comp"};
        const int          np           = pass_final_paths(o, fr->stem, paths);
        printf(", \"paths\": {");
        for (int i = 0; i < np; i++) {
            printf("%s\"%s\": ", i ? ", " : "", key_names[i]);
            ck_cli_json_str(stdout, paths[i]);
        }
        printf("}}\n{\"event\": \"progress\", \"done\": %d, \"total\": %d, \"fps\": %.3f, \"eta_s\": %.1f}\n",
               kr->completed, kr->count, fps, eta);
        fflush(stdout);
        pthread_mutex_unlock(&g_out_mu);
    } else if (!o->quiet) {
        progress_human(kr->completed, kr->count, fr->stem, fps, eta);
    }
}

/* The library's messages, as the default sink prints them; the last error is kept so that a failure
 * already reported is not printed a second time in the run's summary. */
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char            g_last_error[1024];

static void cli_log(ck_log_level level, const char *msg, void *user) {
    static const char *tag[] = {"error", "warning", "info", "debug"};
    (void)user;
    fprintf(stderr, "ckey: %s: %s\n", tag[level], msg);
    if (level == CK_LOG_ERROR) {
        pthread_mutex_lock(&g_log_mu);
        snprintf(g_last_error, sizeof g_last_error, "%s", msg);
        pthread_mutex_unlock(&g_log_mu);
    }
}

static int already_reported(const char *msg) {
    pthread_mutex_lock(&g_log_mu);
    const int same = g_last_error[0] && !strcmp(g_last_error, msg);
    pthread_mutex_unlock(&g_log_mu);
    return same;
}

/* Before anything is loaded: the inputs exist and the output folder can be written (a failure after a
 * minute of loading a checkpoint on a CPU, or after the first frame, wastes the user's time). */
static int preflight(const key_opts *o, int seq) {
    struct stat st;
    if (!seq && (stat(o->image, &st) != 0 || !S_ISREG(st.st_mode) || access(o->image, R_OK) != 0)) {
        fprintf(stderr, "ckey: %s: %s\n", o->image, errno == ENOENT ? "no such file" : "not a readable file");
        return 0;
    }
    if (o->hint && stat(o->hint, &st) != 0) {
        fprintf(stderr, "ckey: %s: no such file or folder (the hint)\n", o->hint);
        return 0;
    }
    if (o->hint && access(o->hint, R_OK) != 0) {
        fprintf(stderr, "ckey: %s: not readable (the hint): %s\n", o->hint, strerror(errno));
        return 0;
    }
    if (!mkdir_p(o->out)) {
        fprintf(stderr, "ckey: cannot create the output folder %s: %s\n", o->out, strerror(errno));
        return 0;
    }
    if (access(o->out, W_OK | X_OK) != 0) {
        fprintf(stderr, "ckey: %s: the output folder is not writable: %s\n", o->out, strerror(errno));
        return 0;
    }
    return 1;
}

static int key_cancelled(void *user) {
    (void)user;
    return ck_cli_signal() != 0;
}

/* The partial files that runs which died (SIGKILL, a crash, a second Ctrl-C) left in the output folders. */
static void sweep_outputs(const key_opts *o) {
    static const char *dirs[5] = {"", "/Matte", "/FG", "/Processed", "/Comp"};
    int                n       = 0;
    for (int i = 0; i < 5; i++) {
        char d[4200];
        snprintf(d, sizeof d, "%s%s", o->out, dirs[i]);
        n += ck_cli_sweep_partials(d);
    }
    if (n && !o->quiet) fprintf(stderr, "ckey: removed %d partial file%s left in %s by a run that did not finish\n", n,
                                n == 1 ? "" : "s", o->out);
}

/* After SIGINT / SIGTERM: one message, the `cancelled` event; the exit status 128 + the signal. */
static int report_cancelled(const key_opts *o, int frames) {
    const int sig = ck_cli_signal();
    fprintf(stderr, "ckey: interrupted (%s): %d frame%s written into %s, the rest not keyed (--skip-existing resumes)\n",
            ck_cli_signal_name(sig), frames, frames == 1 ? "" : "s", o->out);
    if (o->json) {
        printf("{\"event\": \"cancelled\", \"signal\": \"%s\", \"frames_written\": %d, \"exit_code\": %d}\n",
               ck_cli_signal_name(sig), frames, 128 + sig);
        fflush(stdout);
    }
    return 128 + sig;
}

int run_key(key_opts o) {
    ck_set_log(cli_log, NULL, o.quiet ? CK_LOG_ERROR : CK_LOG_INFO);
    ck_cli_signals_install();
    if (ck_cli_signal()) return report_cancelled(&o, 0); /* `ckey clip`: interrupted in an earlier clip */
    char        ckbuf[4096];
    const char *ckpt = o.checkpoint ? o.checkpoint : default_checkpoint(ckbuf, sizeof ckbuf);
    if (!ckpt) { /* nothing configured: the built-in keyer, said once */
        static int said; /* once per process: `ckey clip` runs a shot per clip */
        ckpt = CK_BUILTIN_SPEC;
        if (!o.quiet && !said++) CK_LOG_WARN("%s", CK_BUILTIN_NOTE);
    }
    /* the built-in keyer: at 2048 on CUDA, where it keys 2048 plates better than at its training size
     * (alpha MAE 0.0105 against 0.0150 on 16 held-out plates, docs/model_card_small.md) for ~30 ms more a
     * frame; at its training size on the CPU, where 2048 costs ~16× the time */
    if (ck_builtin_is_spec(ckpt) && !o.size_set && !o.p.tile) {
        const int cuda = o.p.device == CK_DEVICE_CUDA || (o.p.device == CK_DEVICE_AUTO && ck_cuda_device_count() > 0);
        o.p.size       = cuda ? 2048 : ck_builtin_train_size();
    }

    /* frames: one file, or a folder of frames paired by position with a folder of hints (or one hint) */
    ck_err err = {{0}};
    ck_seq imgs = {0}, hints = {0};
    char   stem1[1024];
    int    seq  = is_dir(o.image);
    if (seq) {
        /* videos written from a sequence are named after its folder */
        char folder[1024];
        snprintf(folder, sizeof folder, "%s", o.image);
        for (size_t l = strlen(folder); l > 1 && folder[l - 1] == '/'; l--) folder[l - 1] = '\0';
        file_stem(stem1, sizeof stem1, folder);
        if (ck_seq_list(&imgs, o.image, &err) != CK_OK) return EXIT_RUNTIME;
        if (imgs.n == 0) {
            fprintf(stderr, "ckey: %s: no .png/.jpg/.exr/.tif/.dpx frames in this folder\n", o.image);
            ck_seq_free(&imgs);
            return EXIT_RUNTIME;
        }
        if (o.hint && is_dir(o.hint)) {
            if (ck_seq_list(&hints, o.hint, &err) != CK_OK) {
                ck_seq_free(&imgs);
                return EXIT_RUNTIME;
            }
            if (hints.n != imgs.n) {
                fprintf(stderr, "ckey: %s has %d frames but %s has %d hints; they are paired by position\n",
                        o.image, imgs.n, o.hint, hints.n);
                ck_seq_free(&imgs), ck_seq_free(&hints);
                return EXIT_RUNTIME;
            }
        }
    } else {
        file_stem(stem1, sizeof stem1, o.image);
    }
    int vid = 0, vtotal = 0;
#ifdef CK_HAVE_FFMPEG
    ck_video_reader *vin = NULL, *vhint = NULL;
    if (!seq && ck_image_sniff(o.image) == CK_IMAGE_UNKNOWN && !ck_video_probe(o.image) &&
        ck_video_looks_like_container(o.image)) {
        fprintf(stderr, "ckey: %s: a video file FFmpeg cannot open or find a video stream in (truncated, damaged, or "
                        "without frames?)\n", o.image);
        return EXIT_RUNTIME;
    }
    if (!seq && ck_image_sniff(o.image) == CK_IMAGE_UNKNOWN && ck_video_probe(o.image)) {
        vid = 1;
        int declared = 0, damaged = 0;
        vtotal = ck_video_count_frames_ex(o.image, &declared, &damaged);
        if (vtotal > 0 && (damaged || (declared > 0 && vtotal < declared))) {
            fprintf(stderr, "ckey: %s: the video is truncated or damaged: %d of %d frames can be read\n", o.image,
                    vtotal, declared > vtotal ? declared : vtotal);
            return EXIT_RUNTIME;
        }
        if (vtotal <= 0 || ck_video_open(&vin, o.image, &err) != CK_OK) {
            if (vtotal <= 0) fprintf(stderr, "ckey: %s: no video frames\n", o.image);
            return EXIT_RUNTIME;
        }
        if (o.hint && is_dir(o.hint)) {
            if (ck_seq_list(&hints, o.hint, &err) != CK_OK || hints.n != vtotal) {
                if (hints.n != vtotal)
                    fprintf(stderr, "ckey: %s has %d frames but %s has %d hints\n", o.image, vtotal, o.hint, hints.n);
                ck_video_close(vin), ck_seq_free(&hints);
                return EXIT_RUNTIME;
            }
        } else if (o.hint && ck_image_sniff(o.hint) == CK_IMAGE_UNKNOWN) {
            const int hn = ck_video_count_frames(o.hint);
            if (hn != vtotal || ck_video_open(&vhint, o.hint, &err) != CK_OK) {
                if (hn != vtotal) fprintf(stderr, "ckey: %s has %d frames but %s has %d\n", o.image, vtotal, o.hint, hn);
                ck_video_close(vin);
                return EXIT_RUNTIME;
            }
        }
    }
#endif
    const int total = seq ? imgs.n : vid ? vtotal : 1;
    int       first = 0, last = total - 1;
    if (o.frames) {
        if (!ck_parse_frames(o.frames, &first, &last) || last >= total) {
            fprintf(stderr, "ckey: --frames %s is outside 0-%d\n", o.frames, total - 1);
            ck_seq_free(&imgs), ck_seq_free(&hints);
            return EXIT_USAGE;
        }
    }
    char  shard_msg[600];
    char *one_stem = stem1; /* a single file's frame number is in its name */
    if (o.frame_numbers && !ck_cli_frame_numbers(o.frame_numbers, seq ? imgs.stems : &one_stem, total, vid, &first,
                                                 &last, shard_msg, sizeof shard_msg)) {
        fprintf(stderr, "ckey: %s: %s\n", o.image, shard_msg);
        ck_seq_free(&imgs), ck_seq_free(&hints);
        return EXIT_USAGE;
    }
    int start = first, count = last - first + 1;
    if (o.shard) {
        int si, sn;
        if (!ck_cli_shard(o.shard, o.shard_count, &si, &sn, shard_msg, sizeof shard_msg)) {
            fprintf(stderr, "ckey: %s\n", shard_msg);
            ck_seq_free(&imgs), ck_seq_free(&hints);
            return EXIT_USAGE;
        }
        count = ck_shard_range(first, last, si, sn, &start);
        if (count == 0) { /* more shards than frames: this one has none, and that is no failure */
            if (!o.quiet) fprintf(stderr, "ckey: shard %d/%d has no frames (%d shards for %d): nothing to key\n", si, sn,
                                  sn, last - first + 1);
#ifdef CK_HAVE_FFMPEG
            ck_video_close(vin), ck_video_close(vhint);
#endif
            ck_seq_free(&imgs), ck_seq_free(&hints);
            return 0;
        }
        if (shard_msg[0] && !o.quiet)
            fprintf(stderr, "ckey: %s: frames %d-%d of %d\n", shard_msg, start, start + count - 1, total);
    }

#ifdef CK_HAVE_FFMPEG
    /* the videos' rate and start timecode, at the range's first frame (videos are written while keying only
     * without --shard, and encoded from the passes afterwards only for the whole shot): the source video's,
     * else what the frame file says */
    ck_video_meta vmeta = {vid ? ck_video_fps(vin) : 24.0, ""};
    shot_video_meta(seq ? imgs.paths[first] : vid ? NULL : o.image, vid ? ck_video_timecode(vin) : NULL, first,
                    &vmeta.fps, vmeta.timecode);
#endif
    if (!preflight(&o, seq)) {
        json_failed(&o, "bad input or output path", EXIT_RUNTIME);
        ck_seq_free(&imgs), ck_seq_free(&hints);
        return EXIT_RUNTIME;
    }
    /* a part of a shot may share its folders with other hosts' tasks, whose process ids mean nothing here:
     * their partial files are theirs (ckey farm assemble sweeps once every task is over) */
    if (!o.shard && !o.frames && !o.frame_numbers) sweep_outputs(&o);
    double  t0  = now_s();
    ck_ctx *ctx = NULL;
    if (ck_ctx_init(&ctx, ckpt, &o.p) != CK_OK) {
        json_failed(&o, ck_ctx_last_error(ctx), EXIT_RUNTIME);
        ck_ctx_free(ctx);
        ck_seq_free(&imgs), ck_seq_free(&hints);
        return EXIT_RUNTIME;
    }
    if (!o.quiet) fprintf(stderr, "ckey: loaded in %.2f s; %d frame%s to key\n", now_s() - t0, count, count == 1 ? "" : "s");
    if (o.json) {
        printf("{\"event\": \"started\", \"frames\": %d, \"first\": %d, \"size\": %d, \"device\": ", count, start,
               o.p.tile ? o.p.tile : o.p.size);
        ck_cli_json_str(stdout, ck_ctx_device_name(ctx));
        printf(", \"load_s\": %.3f, \"out\": ", now_s() - t0);
        ck_cli_json_str(stdout, o.out);
        printf("}\n");
        fflush(stdout);
    }

#ifdef CK_HAVE_FFMPEG
    /* video outputs: ProRes 4444 / FFV1 (fg + matte as alpha), H.264 (comp); opened at the first frame */
    const char *vo = o.video_out ? o.video_out : vid ? "prores,h264" : "";
    key_run     kr = {&o, &imgs, &hints, seq, vid, stem1, vin, vhint,
                      {strstr(vo, "prores") != NULL, strstr(vo, "ffv1") != NULL, strstr(vo, "h264") != NULL},
                      {NULL, NULL, NULL}, start, count, 0, now_s(), 0, 0.0, 0.0, vmeta};
    if (kr.want[2] && !o.p.comp) kr.want[2] = 0;
    /* a shot keyed in parts: its videos come from the passes once they are all there (encode.c) */
    int          encode_after[3] = {0, 0, 0};
    const double encode_fps      = vmeta.fps;
    if ((kr.want[0] || kr.want[1] || kr.want[2]) && (o.shard || o.skip_existing)) {
        if (o.shard) {
            if (o.video_out)
                fprintf(stderr, "ckey: warning: with --shard the videos are not written; after the last shard: "
                                "ckey encode %s --video-out %s --fps %.10g%s%s\n", o.out, o.video_out, vmeta.fps,
                        vmeta.timecode[0] ? " --timecode " : "", vmeta.timecode);
        } else if (start == 0 && count == total) { /* the whole shot: every frame is there at the end */
            memcpy(encode_after, kr.want, sizeof encode_after);
        }
        kr.want[0] = kr.want[1] = kr.want[2] = 0;
    }
    int rc = 0;
    for (int k = 0; vid && k < start && rc == 0; k++) { /* decode up to the first frame of the range */
        int    eof = 0;
        float *tmp = malloc(sizeof(float) * 3 * (size_t)ck_video_width(vin) * ck_video_height(vin));
        if (!tmp || ck_video_read(vin, tmp, 3, &eof, &err) != CK_OK || eof) rc = EXIT_RUNTIME;
        if (vhint && tmp && (ck_video_read(vhint, tmp, 3, &eof, &err) != CK_OK || eof)) rc = EXIT_RUNTIME;
        free(tmp);
    }
    const int ordered = kr.want[0] || kr.want[1] || kr.want[2];
#else
    key_run   kr      = {&o, &imgs, &hints, seq, vid, stem1, start, count, 0, now_s(), 0, 0.0, 0.0};
    int       rc      = 0;
    const int ordered = 0;
#endif
    ck_pipe_ops   ops = {&kr, frame_read, frame_write, ordered ? frame_ordered : NULL, frame_done_report, key_cancelled};
    ck_pipe_stats ps;
    char          perr[1024] = "";
    const int     workers    = o.workers > 0 ? o.workers : ck_pipe_default_workers();
    /* file sequences decode in parallel (a 16-bit 4K PNG takes over half a second); video is sequential */
    const int readers = vid ? 1 : o.readers > 0 ? o.readers : ck_pipe_default_readers();
    memset(&ps, 0, sizeof ps);
    int cancelled = ck_cli_signal() != 0; /* during loading */
    if (rc == 0 && !cancelled && !ck_pipe_run(ctx, start, count, readers, workers, &ops, &ps, perr, sizeof perr)) {
        cancelled = ps.cancelled && !perr[0];
        if (!cancelled) {
            if (!already_reported(perr)) fprintf(stderr, "ckey: %s\n", perr);
            rc = EXIT_RUNTIME;
            json_failed(&o, perr, rc);
        }
    }
#ifdef CK_HAVE_FFMPEG
    for (int k = 0; k < 3; k++) /* an interrupted shot's videos would miss frames: not kept */
        if (kr.vw[k] && ck_video_writer_close(kr.vw[k], rc != 0 || cancelled, &err) != CK_OK) rc = EXIT_RUNTIME;
    ck_video_close(vin);
    ck_video_close(vhint);
#endif
    if (rc == 0 && !cancelled) {
        const int n = ps.frames > 0 ? ps.frames : 1;
        if (o.json)
            printf("{\"event\": \"completed\", \"frames_written\": %d, \"skipped\": %d, \"seconds\": %.3f, "
                   "\"fps\": %.3f, \"workers\": %d, \"stage_ms_per_frame\": {\"read\": %.1f, \"network\": %.1f, "
                   "\"finish\": %.1f, \"write\": %.1f, \"ordered\": %.1f}, \"readers\": %d, "
                   "\"postprocess_on_device\": %s, \"device_peak_mib\": %.1f, \"steady_fps\": %.3f}\n",
                   ps.frames, ps.skipped, now_s() - t0, ps.frames / (ps.wall_s > 0 ? ps.wall_s : 1e-9), workers,
                   1e3 * ps.read_s / n, 1e3 * ps.network_s / n, 1e3 * ps.finish_s / n, 1e3 * ps.write_s / n,
                   1e3 * ps.ordered_s / n, readers, ck_ctx_postprocess_on_device(ctx) ? "true" : "false",
                   ck_ctx_device_peak_bytes(ctx) / 1048576.0, steady_fps(&kr));
        if (!o.quiet) {
            fprintf(stderr, "ckey: keyed %d frame%s%s into %s\n", ps.frames, ps.frames == 1 ? "" : "s",
                    ps.skipped ? " (others already present, skipped)" : "", o.out);
            if (ps.frames > 1)
                fprintf(stderr,
                        "ckey: %.2f fps; per frame: read %.0f ms, network %.0f ms, post-processing %.0f ms, "
                        "writing %.0f ms, video %.0f ms (%d workers overlap the last three)\n",
                        ps.frames / (ps.wall_s > 0 ? ps.wall_s : 1e-9), 1e3 * ps.read_s / n, 1e3 * ps.network_s / n,
                        1e3 * ps.finish_s / n, 1e3 * ps.write_s / n, 1e3 * ps.ordered_s / n, workers);
        }
    }
    if (rc == 0 && cancelled) rc = report_cancelled(&o, ps.frames);
#ifdef CK_HAVE_FFMPEG
    if (rc == 0 && !cancelled && (encode_after[0] || encode_after[1] || encode_after[2])) {
        char emsg[1400];
        if (!encode_videos(o.out, stem1, encode_after, encode_fps, vmeta.timecode, o.quiet, emsg, sizeof emsg)) {
            fprintf(stderr, "ckey: the videos from the passes: %s\n", emsg);
            json_failed(&o, emsg, EXIT_RUNTIME);
            rc = EXIT_RUNTIME;
        }
    }
#endif
    ck_ctx_free(ctx);
    ck_seq_free(&imgs), ck_seq_free(&hints);
    return rc;
}

