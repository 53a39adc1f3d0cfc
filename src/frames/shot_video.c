/* `ckey encode OUT`: the shot's videos from the passes already written in OUT (ProRes 4444 / FFV1 from
 * FG + Matte, H.264 from Comp), in frame order. The videos `ckey key` writes while keying take exactly
 * these samples (the fg and matte halves, the comp's 8-bit values), so a shot that was interrupted,
 * resumed with --skip-existing or keyed in shards ends with the same deliverables as an uninterrupted run.
 * `ckey key --skip-existing` calls it itself once every frame is there, with the source's frame rate and
 * start timecode; `ckey encode` takes them as --fps and --timecode (the passes do not record them).
 * shot_video_meta: what a shot's videos carry, from its source. */
#include "key.h"
#include "cmd_opts.h"
#include "options.h"

#include "io/sequence.h"
#ifdef CK_HAVE_FFMPEG
#include "io/video.h"
#endif

#include <stdlib.h>
#include <string.h>

#ifdef CK_HAVE_FFMPEG
void shot_video_meta(const char *frame_file, const char *video_tc, int first, double *fps, char timecode[16]) {
    char   tc[16]   = "";
    double file_fps = 0;
    int    offset   = 0;
    timecode[0]     = '\0';
    if (video_tc) {
        snprintf(tc, sizeof tc, "%s", video_tc);
        offset = first; /* the video's timecode is its frame 0's */
    } else if (frame_file) {
        ck_image_shot_info(frame_file, tc, &file_fps);
        if (file_fps > 0) *fps = file_fps;
    }
    if (tc[0] && !ck_video_timecode_at(tc, *fps, offset, timecode))
        CK_LOG_WARN("%s: its start timecode %s is not a timecode at %.3f fps; the videos carry none",
                    video_tc ? "the source video" : frame_file, tc, *fps);
}

int encode_videos(const char *out, const char *stem, const int want[3], double fps, const char *timecode, int quiet,
                  char *emsg, size_t n) {
    static const char *vext[3] = {"_prores4444.mov", "_ffv1.mkv", "_comp.mp4"};
    char               dir[CK_PATH_MAX];
    ck_err             err = {{0}};
    ck_seq             fg = {0}, matte = {0}, comp = {0};
    int                ok  = 1;
    const int          need_comp = want[2], need_fg = want[0] || want[1];
    snprintf(dir, sizeof dir, "%s/FG", out);
    if (need_fg && ck_seq_list(&fg, dir, &err) != CK_OK) ok = 0;
    snprintf(dir, sizeof dir, "%s/Matte", out);
    if (ok && need_fg && ck_seq_list(&matte, dir, &err) != CK_OK) ok = 0;
    snprintf(dir, sizeof dir, "%s/Comp", out);
    if (ok && need_comp && ck_seq_list(&comp, dir, &err) != CK_OK) ok = 0;
    if (!ok) snprintf(emsg, n, "%s", err.msg);
    const int frames = need_fg ? fg.n : comp.n;
    if (ok && (frames == 0 || (need_fg && matte.n != fg.n) || (need_fg && need_comp && comp.n != fg.n))) {
        snprintf(emsg, n, "%s: the passes do not make a shot (%d FG, %d Matte, %d Comp frames)", out, fg.n, matte.n,
                 comp.n);
        ok = 0;
    }
    for (int i = 0; ok && need_fg && i < frames; i++)
        if (strcmp(fg.stems[i], matte.stems[i]) || (need_comp && strcmp(fg.stems[i], comp.stems[i]))) {
            snprintf(emsg, n, "%s: frame %d has no matching passes (FG %s, Matte %s)", out, i, fg.stems[i], matte.stems[i]);
            ok = 0;
        }
    ck_video_writer *vw[3] = {NULL, NULL, NULL};
    ck_video_meta    meta  = {fps, ""};
    float           *rgba  = NULL;
    snprintf(meta.timecode, sizeof meta.timecode, "%s", timecode ? timecode : "");
    int              W = 0, H = 0;
    for (int i = 0; ok && i < frames; i++) {
        ck_image f = {0}, a = {0}, c = {0};
        int      depth;
        if ((need_fg && (ck_image_read(fg.paths[i], &f, &depth, &err) != CK_OK ||
                         ck_image_read(matte.paths[i], &a, &depth, &err) != CK_OK)) ||
            (need_comp && ck_image_read(comp.paths[i], &c, &depth, &err) != CK_OK)) {
            snprintf(emsg, n, "%s", err.msg);
            ok = 0;
        }
        const ck_image *ref = need_fg ? &f : &c;
        if (ok && i == 0) {
            W = ref->width, H = ref->height;
            rgba = malloc(sizeof(float) * 4 * (size_t)W * H);
            if (!rgba) snprintf(emsg, n, "out of memory"), ok = 0;
        }
        if (ok && (ref->width != W || ref->height != H || (need_fg && (a.width != W || a.height != H || f.channels != 3 ||
                                                                       a.channels != 1)) ||
                   (need_comp && (c.width != W || c.height != H || c.channels != 3)))) {
            snprintf(emsg, n, "%s: frame %d's passes differ in size or channels from the first frame's", out, i);
            ok = 0;
        }
        for (int k = 0; ok && k < 3; k++) {
            if (!want[k]) continue;
            if (!vw[k]) {
                char path[CK_PATH_MAX + 64];
                snprintf(path, sizeof path, "%s/%s%s", out, stem, vext[k]);
                if (ck_video_writer_open_meta(&vw[k], path, (ck_video_codec)k, W, H, &meta, &err) != CK_OK) {
                    snprintf(emsg, n, "%s", err.msg);
                    ok = 0;
                    break;
                }
            }
            for (size_t p = 0; p < (size_t)W * H; p++) {
                for (int ch = 0; ch < 3; ch++) rgba[4 * p + ch] = k == 2 ? c.data[3 * p + ch] : f.data[3 * p + ch];
                rgba[4 * p + 3] = k == 2 ? 1.0f : a.data[p];
            }
            if (ck_video_write(vw[k], rgba, &err) != CK_OK) snprintf(emsg, n, "%s", err.msg), ok = 0;
        }
        ck_image_release(&f), ck_image_release(&a), ck_image_release(&c);
    }
    for (int k = 0; k < 3; k++)
        if (vw[k] && ck_video_writer_close(vw[k], !ok, &err) != CK_OK && ok) snprintf(emsg, n, "%s", err.msg), ok = 0;
    if (ok && !quiet) fprintf(stderr, "ckey: encoded %d frames of %s into its videos\n", frames, out);
    free(rgba);
    ck_seq_free(&fg), ck_seq_free(&matte), ck_seq_free(&comp);
    return ok;
}
#else
int encode_videos(const char *out, const char *stem, const int want[3], double fps, const char *timecode, int quiet,
                  char *emsg, size_t n) {
    (void)out, (void)stem, (void)want, (void)fps, (void)timecode, (void)quiet;
    snprintf(emsg, n, "video support not built (FFmpeg's libraries not found at configure time)");
    return 0;
}
#endif

static void usage_encode(FILE *f) {
    fprintf(f, "usage: ckey encode OUT [--video-out prores,ffv1,h264] [--fps F] [--timecode HH:MM:SS:FF] [--name STEM]\n"
               "Encodes the videos of a shot from the passes in OUT (OUT/FG + OUT/Matte: ProRes 4444 or FFV1 with\n"
               "the matte as alpha; OUT/Comp: H.264), frames in natural order, as `ckey key` would have written\n"
               "them while keying (the same samples): after --shard runs, or to redo a deliverable. `ckey key\n"
               "--skip-existing` encodes by itself once every frame of the shot is there, with the source's rate\n"
               "and timecode.\n"
               "\n"
               "options:\n");
    ck_opts_help(f, CK_CMD_ENCODE);
}

int cmd_encode(int argc, char **argv) {
    encode_opts eo = {"prores,h264", NULL, NULL, 24.0};
    ck_opt_result r;
    const int     st = ck_opts_parse(CK_CMD_ENCODE, argc, argv, &eo, &r);
    if (st == CK_OPT_HELP) {
        usage_encode(stdout);
        return 0;
    }
    if (st != CK_OPT_OK) return EXIT_USAGE;
    const char  *out = r.npos ? r.pos[0] : NULL, *list = eo.list, *name = eo.name, *timecode = eo.timecode;
    const double fps = eo.fps;
    if (!out) {
        fprintf(stderr, "ckey: encode needs an output folder: ckey encode OUT [options] (see 'ckey encode --help')\n");
        return EXIT_USAGE;
    }
#ifdef CK_HAVE_FFMPEG
    char tc[16];
    if (timecode && !ck_video_timecode_at(timecode, fps, 0, tc)) {
        fprintf(stderr, "ckey: --timecode %s is not a start timecode at %.3f fps (HH:MM:SS:FF, frames below the rate; "
                        "';' before FF for drop-frame at 29.97/59.94)\n", timecode, fps);
        return EXIT_USAGE;
    }
#endif
    const int want[3] = {strstr(list, "prores") != NULL, strstr(list, "ffv1") != NULL, strstr(list, "h264") != NULL};
    if (!want[0] && !want[1] && !want[2]) {
        fprintf(stderr, "ckey: --video-out %s names no video (prores, ffv1, h264)\n", list);
        return EXIT_USAGE;
    }
    char stem[1024], folder[1024];
    snprintf(folder, sizeof folder, "%s", out);
    for (size_t l = strlen(folder); l > 1 && folder[l - 1] == '/'; l--) folder[l - 1] = '\0';
    if (name) snprintf(stem, sizeof stem, "%s", name);
    else file_stem(stem, sizeof stem, folder);
    char emsg[1400];
    if (!encode_videos(out, stem, want, fps, timecode, 0, emsg, sizeof emsg)) {
        fprintf(stderr, "ckey: %s\n", emsg);
        return EXIT_RUNTIME;
    }
    return 0;
}
