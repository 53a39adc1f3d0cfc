/* `ckey key` on a file, a folder of frames or a video. The library's shot (ckey_shot.h) reads the frames,
 * keys them through the frame pipeline and writes the passes and videos; this file chooses the checkpoint
 * and size, the frames (--frames, --frame-numbers, --shard), maps SIGINT / SIGTERM to the shot's cancel
 * hook, and reports: the messages, the progress and the NDJSON events (--json). */
#include "key.h"
#include "signals.h"
#include "ckey_io.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the reports of one run keep (the shot's events come one at a time). */
typedef struct key_run {
    const key_opts *o;
    int             count;
    double          t1;        /* keying started */
    int             completed; /* frames complete, written or skipped */
    int             half_done; /* frames completed at t_half (half the run), for the steady rate */
    double          t_half, t_last; /* when half the frames, and the last frame, completed */
} key_run;

static void json_warning(int f, const char *msg, const char *stem) {
    printf("{\"event\": \"warning\", \"frame\": %d, \"message\": ", f);
    ck_cli_json_str(stdout, msg);
    if (stem) {
        printf(", \"stem\": ");
        ck_cli_json_str(stdout, stem);
    }
    printf("}\n");
    fflush(stdout);
}

static void report_warning(key_run *kr, const ck_shot_event *ev) {
    const key_opts *o = kr->o;
    char            msg[300];
    switch (ev->warning) {
    case CK_SHOT_WARN_SKIPPED:
        if (o->json) json_warning(ev->frame, "already written; skipped (--skip-existing)", ev->stem);
        break;
    case CK_SHOT_WARN_AUTO_HINT:
        snprintf(msg, sizeof msg, "no --hint: using an automatic chroma-difference hint against the detected %s "
                                  "screen (a fallback; a drawn or generated hint keys better)", ev->blue ? "blue" : "green");
        if (o->json) json_warning(ev->frame, msg, NULL);
        else if (!o->quiet) fprintf(stderr, "ckey: warning: %s\n", msg);
        break;
    case CK_SHOT_WARN_REKEY: fprintf(stderr, "ckey: warning: %s\n", ev->message); break;
    }
}

/* Progress and events after each frame, and the warnings. */
static void on_event(void *user, const ck_shot_event *ev) {
    key_run        *kr = user;
    const key_opts *o  = kr->o;
    if (ev->kind == CK_SHOT_WARNING) {
        report_warning(kr, ev);
        return;
    }
    kr->completed = ev->done;
    if (ev->skipped) return;
    const double now = now_s(), el = now - kr->t1, fps = kr->completed / (el > 0 ? el : 1e-9);
    if (!kr->half_done && 2 * kr->completed >= kr->count) kr->half_done = kr->completed, kr->t_half = now;
    kr->t_last = now;
    const double eta = (kr->count - kr->completed) / (fps > 0 ? fps : 1e-9);
    if (o->json) {
        static const char *key_names[4] = {"matte", "fg", "processed", "comp"};
        printf("{\"event\": \"frame_written\", \"frame\": %d, \"stem\": ", ev->frame);
        ck_cli_json_str(stdout, ev->stem);
        printf(", \"paths\": {");
        for (int i = 0; i < ev->npaths; i++) {
            printf("%s\"%s\": ", i ? ", " : "", key_names[i]);
            ck_cli_json_str(stdout, ev->paths[i]);
        }
        printf("}}\n{\"event\": \"progress\", \"done\": %d, \"total\": %d, \"fps\": %.3f, \"eta_s\": %.1f}\n",
               kr->completed, kr->count, fps, eta);
        fflush(stdout);
    } else if (!o->quiet) {
        progress_human(kr->completed, kr->count, ev->stem, fps, eta);
    }
}

/* The rate over the second half of the run, once memory is set up and every stage is busy (0 for short
 * runs); fps covers the whole run. */
static double steady_fps(const key_run *kr) {
    const int n = kr->completed - kr->half_done;
    return kr->count >= 8 && n > 0 && kr->t_last > kr->t_half ? n / (kr->t_last - kr->t_half) : 0.0;
}

static int key_cancelled(void *user) {
    (void)user;
    return ck_cli_signal() != 0;
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

/* A failure's message, unless the log has just printed it (or what it wraps: "keying F failed: <the
 * library's message>"). */
static void report_error(const char *msg) {
    pthread_mutex_lock(&g_log_mu);
    const int same = g_last_error[0] && strstr(msg, g_last_error) != NULL;
    pthread_mutex_unlock(&g_log_mu);
    if (!same) fprintf(stderr, "ckey: %s\n", msg);
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

/* dev: the --devices entries (NULL: one context), for the per-device statistics. */
static void report_completed(const key_opts *o, const key_run *kr, ck_ctx *ctx, const ck_shot_stats *ps, double t0,
                             const int *dev) {
    const int    n   = ps->frames > 0 ? ps->frames : 1;
    const double fps = ps->frames / (ps->wall_s > 0 ? ps->wall_s : 1e-9);
    if (o->json) {
        printf("{\"event\": \"completed\", \"frames_written\": %d, \"skipped\": %d, \"seconds\": %.3f, "
               "\"fps\": %.3f, \"workers\": %d, \"stage_ms_per_frame\": {\"read\": %.1f, \"network\": %.1f, "
               "\"finish\": %.1f, \"write\": %.1f, \"ordered\": %.1f}, \"readers\": %d, "
               "\"postprocess_on_device\": %s, \"device_peak_mib\": %.1f, \"steady_fps\": %.3f",
               ps->frames, ps->skipped, now_s() - t0, fps, ps->workers, 1e3 * ps->read_s / n, 1e3 * ps->network_s / n,
               1e3 * ps->finish_s / n, 1e3 * ps->write_s / n, 1e3 * ps->ordered_s / n, ps->readers,
               ck_ctx_postprocess_on_device(ctx) ? "true" : "false", ck_ctx_device_peak_bytes(ctx) / 1048576.0,
               steady_fps(kr));
        if (dev) { /* per --devices entry: its share of the frames, its network time, whether it failed */
            printf(", \"devices\": [");
            for (int i = 0; i < ps->contexts; i++) {
                const ck_pipe_context_stats *c = &ps->per_context[i];
                printf("%s{\"device\": %d, \"frames\": %d, \"network_ms_per_frame\": %.1f, \"failed\": %s", i ? ", " : "",
                       dev[i], c->frames, c->frames ? 1e3 * c->network_s / c->frames : 0.0, c->failed ? "true" : "false");
                if (c->failed) printf(", \"error\": "), ck_cli_json_str(stdout, c->error);
                printf("}");
            }
            printf("]");
        }
        printf("}\n");
    }
    for (int i = 0; dev && i < ps->contexts; i++) /* a GPU that failed mid-shot: said even when quiet */
        if (ps->per_context[i].failed)
            fprintf(stderr, "ckey: warning: device %d stopped (%s); the others keyed its frames\n", dev[i],
                    ps->per_context[i].error);
    if (o->quiet) return;
    for (int i = 0; dev && i < ps->contexts; i++)
        fprintf(stderr, "ckey: device %d: %d frame%s, network %.0f ms per frame\n", dev[i], ps->per_context[i].frames,
                ps->per_context[i].frames == 1 ? "" : "s",
                ps->per_context[i].frames ? 1e3 * ps->per_context[i].network_s / ps->per_context[i].frames : 0.0);
    fprintf(stderr, "ckey: keyed %d frame%s%s into %s\n", ps->frames, ps->frames == 1 ? "" : "s",
            ps->skipped ? " (others already present, skipped)" : "", o->out);
    if (ps->frames > 1)
        fprintf(stderr,
                "ckey: %.2f fps; per frame: read %.0f ms, network %.0f ms, post-processing %.0f ms, writing %.0f ms, "
                "video %.0f ms (%d workers overlap the last three)\n",
                fps, 1e3 * ps->read_s / n, 1e3 * ps->network_s / n, 1e3 * ps->finish_s / n, 1e3 * ps->write_s / n,
                1e3 * ps->ordered_s / n, ps->workers);
}

/* The frames this run keys: --frames (positions), --frame-numbers (numbers in the names), then --shard.
 * 0: keyed nothing, *rc the exit status (a message printed). */
static int choose_frames(const key_opts *o, ck_shot *shot, int *first_out, int *start, int *count, int *rc) {
    const int total = ck_shot_frames(shot);
    int       first = 0, last = total - 1;
    if (o->frames && (!ck_parse_frames(o->frames, &first, &last) || last >= total)) {
        fprintf(stderr, "ckey: --frames %s is outside 0-%d\n", o->frames, total - 1);
        return *rc = EXIT_USAGE, 0;
    }
    char msg[600];
    if (o->frame_numbers) { /* a single file's frame number is in its name; a video's frames by their index */
        const int video = ck_shot_is_video(shot);
        char    **names = video ? NULL : malloc(sizeof *names * (size_t)total);
        if (!video && !names) return fprintf(stderr, "ckey: out of memory\n"), *rc = EXIT_RUNTIME, 0;
        for (int i = 0; names && i < total; i++) names[i] = (char *)ck_shot_stem(shot, i);
        const int ok = ck_cli_frame_numbers(o->frame_numbers, names, total, video, &first, &last, msg, sizeof msg);
        free(names);
        if (!ok) {
            fprintf(stderr, "ckey: %s: %s\n", o->image, msg);
            return *rc = EXIT_USAGE, 0;
        }
    }
    *first_out = first, *start = first, *count = last - first + 1;
    if (!o->shard) return 1;
    int si, sn;
    if (!ck_cli_shard(o->shard, o->shard_count, &si, &sn, msg, sizeof msg)) {
        fprintf(stderr, "ckey: %s\n", msg);
        return *rc = EXIT_USAGE, 0;
    }
    *count = ck_shard_range(first, last, si, sn, start);
    if (*count == 0) { /* more shards than frames: this one has none, and that is no failure */
        if (!o->quiet)
            fprintf(stderr, "ckey: shard %d/%d has no frames (%d shards for %d): nothing to key\n", si, sn, sn,
                    last - first + 1);
        return *rc = 0, 0;
    }
    if (msg[0] && !o->quiet) fprintf(stderr, "ckey: %s: frames %d-%d of %d\n", msg, *start, *start + *count - 1, total);
    return 1;
}

/* The checkpoint: --checkpoint, else the first one found (checkpoint_candidates), else the built-in keyer,
 * which runs at 2048 on CUDA, where it keys 2048 plates better than at its training size 1024 (version 3:
 * alpha MAE 0.0094 against 0.0118 on 16 held-out plates, docs/model_card_small.md), and at its training size
 * on the CPU, where 2048 costs ~4× the time. */
static const char *choose_checkpoint(key_opts *o, char *buf, size_t n) {
    const char *ckpt = o->checkpoint ? o->checkpoint : default_checkpoint(buf, n);
    if (!ckpt) { /* nothing configured: the built-in keyer, said once */
        static int said; /* once per process: `ckey clip` runs a shot per clip */
        ckpt = CK_BUILTIN_SPEC;
        if (!o->quiet && !said++) ck_log(CK_LOG_WARN, "%s", CK_CLI_BUILTIN_NOTE);
    }
    if (ck_builtin_is_spec(ckpt) && !o->size_set && !o->p.tile) {
        const int cuda = o->p.device == CK_DEVICE_CUDA || (o->p.device == CK_DEVICE_AUTO && ck_cuda_device_count() > 0);
        o->p.size      = cuda ? 2048 : ck_builtin_train_size();
    }
    return ckpt;
}

/* With --shard the videos are not written while keying (each task has part of the shot): what to run after. */
static void shard_video_note(const key_opts *o, ck_shot *shot) {
    const char *v = o->video_out;
    if (!o->shard || !v || !(strstr(v, "prores") || strstr(v, "ffv1") || (strstr(v, "h264") && o->p.comp))) return;
    double fps;
    char   tc[16];
    ck_shot_video_meta(shot, &fps, tc);
    fprintf(stderr, "ckey: warning: with --shard the videos are not written; after the last shard: ckey encode %s "
                    "--video-out %s --fps %.10g%s%s\n", o->out, v, fps, tc[0] ? " --timecode " : "", tc);
}

int run_key(key_opts o) {
    ck_set_log(cli_log, NULL, o.quiet ? CK_LOG_ERROR : CK_LOG_INFO);
    ck_cli_signals_install();
    if (ck_cli_signal()) return report_cancelled(&o, 0); /* `ckey clip`: interrupted in an earlier clip */
    char        ckbuf[4096];
    const char *ckpt = choose_checkpoint(&o, ckbuf, sizeof ckbuf);

    /* the shot: one file, a folder of frames paired by position with a folder of hints (or one hint), or a
     * video; the videos only from a whole run (a shard's frames are a part) */
    key_run      kr = {&o, 0, 0.0, 0, 0, 0.0, 0.0};
    ck_shot_opts so = ck_shot_opts_default();
    so.image = o.image, so.hint = o.hint, so.out = o.out, so.input_is_linear = o.p.input_is_linear, so.exr = o.exr;
    so.skip_existing = o.skip_existing, so.video_out = o.shard ? "" : o.video_out;
    so.readers = o.readers, so.workers = o.workers, so.user = &kr, so.event = on_event, so.cancelled = key_cancelled;
    ck_shot *shot = NULL;
    int      rc   = 0, first = 0, start = 0, count = 0;
    if (ck_shot_open(&shot, &so) != CK_OK) {
        report_error(ck_shot_last_error(shot));
        ck_shot_free(shot);
        return EXIT_RUNTIME;
    }
    if (!choose_frames(&o, shot, &first, &start, &count, &rc)) {
        ck_shot_free(shot);
        return rc;
    }
    /* the videos' rate and start timecode, read at the range's first frame (before a shard's part) */
    double fps;
    char   tc[16];
    ck_shot_select(shot, first, start + count - first);
    ck_shot_video_meta(shot, &fps, tc);
    if (ck_shot_check(shot) != CK_OK) {
        fprintf(stderr, "ckey: %s\n", ck_shot_last_error(shot));
        json_failed(&o, "bad input or output path", EXIT_RUNTIME);
        ck_shot_free(shot);
        return EXIT_RUNTIME;
    }
    /* a part of a shot may share its folders with other hosts' tasks, whose process ids mean nothing here:
     * their partial files are theirs (ckey farm assemble sweeps once every task is over) */
    if (!o.shard && !o.frames && !o.frame_numbers) {
        const int n = ck_shot_sweep(shot);
        if (n && !o.quiet)
            fprintf(stderr, "ckey: removed %d partial file%s left in %s by a run that did not finish\n", n,
                    n == 1 ? "" : "s", o.out);
    }
    double  t0 = now_s();
    ck_ctx *ctxs[CK_PIPE_MAX_CONTEXTS] = {NULL};
    int     dev[CK_PIPE_MAX_CONTEXTS], n_ctx = 1;
    char    msg[1024];
    if (o.devices) { /* several contexts: a model per GPU, a context per entry */
        n_ctx = key_parse_devices(o.devices, dev, CK_PIPE_MAX_CONTEXTS, msg, sizeof msg);
        if (n_ctx < 0 || !key_open_contexts(ckpt, &o.p, dev, n_ctx, ctxs, msg, sizeof msg)) {
            report_error(msg);
            json_failed(&o, msg, n_ctx < 0 ? EXIT_USAGE : EXIT_RUNTIME);
            ck_shot_free(shot);
            return n_ctx < 0 ? EXIT_USAGE : EXIT_RUNTIME;
        }
    } else if (ck_ctx_init(&ctxs[0], ckpt, &o.p) != CK_OK) {
        json_failed(&o, ck_ctx_last_error(ctxs[0]), EXIT_RUNTIME);
        ck_ctx_free(ctxs[0]);
        ck_shot_free(shot);
        return EXIT_RUNTIME;
    }
    ck_ctx *ctx = ctxs[0];
    if (!o.quiet)
        fprintf(stderr, "ckey: loaded in %.2f s%s%s; %d frame%s to key\n", now_s() - t0, o.devices ? " on devices " : "",
                o.devices ? o.devices : "", count, count == 1 ? "" : "s");
    if (o.json) {
        printf("{\"event\": \"started\", \"frames\": %d, \"first\": %d, \"size\": %d, \"device\": ", count, start,
               o.p.tile ? o.p.tile : o.p.size);
        ck_cli_json_str(stdout, ck_ctx_device_name(ctx));
        printf(", \"load_s\": %.3f, \"out\": ", now_s() - t0);
        ck_cli_json_str(stdout, o.out);
        printf("}\n");
        fflush(stdout);
    }
    shard_video_note(&o, shot);
    ck_shot_select(shot, start, count); /* a shard's part */
    kr.count = count, kr.t1 = now_s();
    ck_shot_stats ps;
    if (ck_shot_key_multi(shot, ctxs, n_ctx, &ps) != CK_OK) {
        report_error(ck_shot_last_error(shot));
        json_failed(&o, ck_shot_last_error(shot), EXIT_RUNTIME);
        rc = EXIT_RUNTIME;
    } else if (ps.cancelled) {
        rc = report_cancelled(&o, ps.frames);
    } else {
        report_completed(&o, &kr, ctx, &ps, t0, o.devices ? dev : NULL);
        int encoded = 0;
        if (ck_shot_encode_pending(shot, &encoded) != CK_OK) {
            fprintf(stderr, "ckey: the videos from the passes: %s\n", ck_shot_last_error(shot));
            json_failed(&o, ck_shot_last_error(shot), EXIT_RUNTIME);
            rc = EXIT_RUNTIME;
        } else if (encoded && !o.quiet) {
            fprintf(stderr, "ckey: encoded %d frames of %s into its videos\n", encoded, o.out);
        }
    }
    for (int i = 0; i < n_ctx; i++) ck_ctx_free(ctxs[i]);
    ck_shot_free(shot);
    return rc;
}
