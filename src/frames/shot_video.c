/* A shot's videos (ckey_shot.h): ProRes 4444 / FFV1 from FG + Matte (the matte as alpha), H.264 from Comp.
 * Written in frame order while keying (ck__shot_videos_*, the pipeline's ordered stage), or encoded from the
 * passes already in the output folder (ck_shot_encode_videos: after shards, after a resumed run, `ckey
 * encode`). Both take exactly the samples the passes store (the fg and matte halves, the comp's 8-bit
 * values), so a shot that was interrupted, resumed or keyed in shards ends with the same deliverables as an
 * uninterrupted run. The passes do not record a rate or timecode: those come from the source
 * (ck__shot_video_meta). Without FFmpeg every call reports CK_STATUS_EUNSUPPORTED. Depends on io/ only. */
#include "shot_int.h"
#include "core/tensor.h"
#include "io/image.h" /* ckey_io.h */

#include <stdlib.h>
#include <string.h>

static const char *const VIDEO_EXT[3] = {"_prores4444.mov", "_ffv1.mkv", "_comp.mp4"};

void ck__shot_video_want(const char *list, int want[3]) {
    want[0] = list && strstr(list, "prores") != NULL;
    want[1] = list && strstr(list, "ffv1") != NULL;
    want[2] = list && strstr(list, "h264") != NULL;
}

#ifdef CK_HAVE_FFMPEG
void ck__shot_video_meta(const char *frame_file, const char *video_tc, int first, double *fps, char timecode[16]) {
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

ck_status ck__shot_videos_write(ck__shot_videos *v, const char *out, const char *name, const ck_passes *pv,
                                ck_err *err) {
    const int w = pv->width, h = pv->height;
    for (int k = 0; k < 3; k++) {
        if (!v->want[k]) continue;
        if (!v->writer[k]) {
            char          path[CK_SHOT_PATH_MAX + 64];
            ck_video_meta meta = {v->fps, ""};
            snprintf(meta.timecode, sizeof meta.timecode, "%s", v->timecode);
            ck_shot_mkdirs(out);
            snprintf(path, sizeof path, "%s/%s%s", out, name, VIDEO_EXT[k]);
            ck_video_writer *wr = NULL;
            const ck_status  st = ck_video_writer_open_meta(&wr, path, (ck_video_codec)k, w, h, &meta, err);
            if (st != CK_OK) return st;
            v->writer[k] = wr;
        }
        float *rgba = malloc(sizeof(float) * 4 * (size_t)w * h); /* (h, w, 4) */
        if (!rgba) return ck__fail(err, CK_STATUS_EOOM, "out of memory for the video frame");
        /* the samples as written to the passes: fg and matte halves, the comp's 8-bit values */
        for (size_t i = 0; i < (size_t)w * h; i++) {
            for (int c = 0; c < 3; c++)
                rgba[4 * i + c] = k == 2 ? pv->comp[3 * i + c] / 255.0f : ck_f16_to_f32(pv->fg[3 * i + c]);
            rgba[4 * i + 3] = k == 2 ? 1.0f : ck_f16_to_f32(pv->alpha[i]);
        }
        const ck_status st = ck_video_write(v->writer[k], rgba, err);
        free(rgba);
        if (st != CK_OK) return st;
    }
    return CK_OK;
}

ck_status ck__shot_videos_close(ck__shot_videos *v, int abort, ck_err *err) {
    ck_status rc = CK_OK;
    for (int k = 0; k < 3; k++) {
        if (!v->writer[k]) continue;
        const ck_status st = ck_video_writer_close(v->writer[k], abort, err);
        if (st != CK_OK && rc == CK_OK) rc = st;
        v->writer[k] = NULL;
    }
    return rc;
}

ck_status ck_shot_encode_videos(const char *out, const char *name, const char *list, double fps, const char *timecode,
                                int *frames_out, char *emsg, size_t n) {
    char   dir[CK_SHOT_PATH_MAX];
    ck_err err = {{0}};
    ck_seq fg = {0}, matte = {0}, comp = {0};
    int    want[3];
    ck__shot_video_want(list, want);
    ck_status rc        = CK_OK;
    const int need_comp = want[2], need_fg = want[0] || want[1];
    if (frames_out) *frames_out = 0;
    snprintf(dir, sizeof dir, "%s/FG", out);
    if (need_fg) rc = ck_seq_list(&fg, dir, &err);
    snprintf(dir, sizeof dir, "%s/Matte", out);
    if (rc == CK_OK && need_fg) rc = ck_seq_list(&matte, dir, &err);
    snprintf(dir, sizeof dir, "%s/Comp", out);
    if (rc == CK_OK && need_comp) rc = ck_seq_list(&comp, dir, &err);
    if (rc != CK_OK) snprintf(emsg, n, "%s", err.msg);
    const int frames = need_fg ? fg.n : comp.n;
    if (rc == CK_OK && (frames == 0 || (need_fg && matte.n != fg.n) || (need_fg && need_comp && comp.n != fg.n))) {
        snprintf(emsg, n, "%s: the passes do not make a shot (%d FG, %d Matte, %d Comp frames)", out, fg.n, matte.n,
                 comp.n);
        rc = CK_STATUS_EFORMAT;
    }
    for (int i = 0; rc == CK_OK && need_fg && i < frames; i++)
        if (strcmp(fg.stems[i], matte.stems[i]) || (need_comp && strcmp(fg.stems[i], comp.stems[i]))) {
            snprintf(emsg, n, "%s: frame %d has no matching passes (FG %s, Matte %s)", out, i, fg.stems[i],
                     matte.stems[i]);
            rc = CK_STATUS_EFORMAT;
        }
    ck_video_writer *vw[3] = {NULL, NULL, NULL};
    ck_video_meta    meta  = {fps, ""};
    float           *rgba  = NULL; /* (H, W, 4) */
    snprintf(meta.timecode, sizeof meta.timecode, "%s", timecode ? timecode : "");
    int W = 0, H = 0;
    for (int i = 0; rc == CK_OK && i < frames; i++) {
        ck_image f = {0}, a = {0}, c = {0};
        int      depth;
        if ((need_fg && ((rc = ck_image_read(fg.paths[i], &f, &depth, &err)) != CK_OK ||
                         (rc = ck_image_read(matte.paths[i], &a, &depth, &err)) != CK_OK)) ||
            (need_comp && (rc = ck_image_read(comp.paths[i], &c, &depth, &err)) != CK_OK))
            snprintf(emsg, n, "%s", err.msg);
        const ck_image *ref = need_fg ? &f : &c;
        if (rc == CK_OK && i == 0) {
            W = ref->width, H = ref->height;
            rgba = malloc(sizeof(float) * 4 * (size_t)W * H);
            if (!rgba) snprintf(emsg, n, "out of memory"), rc = CK_STATUS_EOOM;
        }
        if (rc == CK_OK &&
            (ref->width != W || ref->height != H ||
             (need_fg && (a.width != W || a.height != H || f.channels != 3 || a.channels != 1)) ||
             (need_comp && (c.width != W || c.height != H || c.channels != 3)))) {
            snprintf(emsg, n, "%s: frame %d's passes differ in size or channels from the first frame's", out, i);
            rc = CK_STATUS_ESHAPE;
        }
        for (int k = 0; rc == CK_OK && k < 3; k++) {
            if (!want[k]) continue;
            if (!vw[k]) {
                char path[CK_SHOT_PATH_MAX + 64];
                snprintf(path, sizeof path, "%s/%s%s", out, name, VIDEO_EXT[k]);
                if ((rc = ck_video_writer_open_meta(&vw[k], path, (ck_video_codec)k, W, H, &meta, &err)) != CK_OK) {
                    snprintf(emsg, n, "%s", err.msg);
                    break;
                }
            }
            for (size_t p = 0; p < (size_t)W * H; p++) {
                for (int ch = 0; ch < 3; ch++) rgba[4 * p + ch] = k == 2 ? c.data[3 * p + ch] : f.data[3 * p + ch];
                rgba[4 * p + 3] = k == 2 ? 1.0f : a.data[p];
            }
            if ((rc = ck_video_write(vw[k], rgba, &err)) != CK_OK) snprintf(emsg, n, "%s", err.msg);
        }
        ck_image_release(&f), ck_image_release(&a), ck_image_release(&c);
    }
    for (int k = 0; k < 3; k++) {
        ck_status st;
        if (vw[k] && (st = ck_video_writer_close(vw[k], rc != CK_OK, &err)) != CK_OK && rc == CK_OK)
            snprintf(emsg, n, "%s", err.msg), rc = st;
    }
    if (rc == CK_OK && frames_out) *frames_out = frames;
    free(rgba);
    ck_seq_free(&fg), ck_seq_free(&matte), ck_seq_free(&comp);
    return rc;
}
#else
void ck__shot_video_meta(const char *frame_file, const char *video_tc, int first, double *fps, char timecode[16]) {
    (void)frame_file, (void)video_tc, (void)first, (void)fps;
    timecode[0] = '\0';
}

ck_status ck__shot_videos_write(ck__shot_videos *v, const char *out, const char *name, const ck_passes *pv,
                                ck_err *err) {
    (void)v, (void)out, (void)name, (void)pv;
    return ck__fail(err, CK_STATUS_EUNSUPPORTED, "video support not built (FFmpeg's libraries not found at configure time)");
}

ck_status ck__shot_videos_close(ck__shot_videos *v, int abort, ck_err *err) {
    (void)v, (void)abort, (void)err;
    return CK_OK;
}

ck_status ck_shot_encode_videos(const char *out, const char *name, const char *list, double fps, const char *timecode,
                                int *frames, char *emsg, size_t n) {
    (void)out, (void)name, (void)list, (void)fps, (void)timecode;
    if (frames) *frames = 0;
    snprintf(emsg, n, "video support not built (FFmpeg's libraries not found at configure time)");
    return CK_STATUS_EUNSUPPORTED;
}
#endif
