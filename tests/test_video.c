/* Video round trips through FFmpeg's libraries: FFV1 (lossless 16-bit RGBA, exact frame count and
 * values), ProRes 4444 (alpha plane within 10-bit quantization), H.264; truncated and non-video files
 * fail with a message; an aborted writer leaves no file. Skips when built without FFmpeg. */
#include "harness.h"

#ifndef CK_HAVE_FFMPEG
int main(void) {
    printf("SKIP: built without FFmpeg (libavformat/libavcodec/libswscale not found)\n");
    return 0;
}
#else
#include "io/image.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define W 64
#define H 48
#define N 5

static void pattern(float *rgba, int f) {
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            float *p = rgba + ((size_t)y * W + x) * 4;
            p[0]     = (float)x / (W - 1);
            p[1]     = (float)y / (H - 1);
            p[2]     = 0.25f + 0.1f * (float)f;
            p[3]     = (float)((x + 3 * f) % W) / (W - 1); /* alpha ramp that moves per frame */
        }
}

static int roundtrip(const char *path, ck_video_codec codec, double tol_rgb, double tol_a) {
    ck_err           err = {{0}};
    ck_video_writer *wr;
    float           *in = malloc(sizeof(float) * W * H * 4), *out = malloc(sizeof(float) * W * H * 4);
    if (ck_video_writer_open(&wr, path, codec, W, H, 24.0, &err) != CK_OK) {
        printf("SKIP   %s: %s\n", path, err.msg);
        free(in), free(out);
        return -1;
    }
    for (int f = 0; f < N; f++) {
        pattern(in, f);
        CHECK(ck_video_write(wr, in, &err) == CK_OK);
    }
    CHECK(ck_video_writer_close(wr, 0, &err) == CK_OK);
    ck_video_reader *r;
    CHECK(ck_video_open(&r, path, &err) == CK_OK);
    if (!r) {
        free(in), free(out);
        return 0;
    }
    CHECK(ck_video_width(r) == W && ck_video_height(r) == H);
    int    frames = 0, eof = 0;
    double max_rgb = 0, max_a = 0;
    while (ck_video_read(r, out, 4, &eof, &err) == CK_OK && !eof) {
        pattern(in, frames);
        for (int i = 0; i < W * H; i++) {
            for (int c = 0; c < 3; c++) max_rgb = fmax(max_rgb, fabs(out[4 * i + c] - in[4 * i + c]));
            max_a = fmax(max_a, fabs(out[4 * i + 3] - in[4 * i + 3]));
        }
        frames++;
    }
    ck_video_close(r);
    printf("%s     %-28s frames %d/%d, rgb max abs %.2e, alpha max abs %.2e\n",
           frames == N && max_rgb <= tol_rgb && max_a <= tol_a ? "OK" : "NOT OK", path, frames, N, max_rgb, max_a);
    CHECK(frames == N);
    CHECK(max_rgb <= tol_rgb);
    CHECK(max_a <= tol_a);
    free(in), free(out);
    return 1;
}

int main(void) {
    char dir[1024], p1[1200], p2[1200], p3[1200];
    test_path(dir, sizeof dir, "CK_TMP", "video");
    snprintf(p1, sizeof p1, "mkdir -p %s", dir);
    CHECK(system(p1) == 0);
    snprintf(p1, sizeof p1, "%s/a.mkv", dir);
    snprintf(p2, sizeof p2, "%s/b.mov", dir);
    snprintf(p3, sizeof p3, "%s/c.mp4", dir);
    roundtrip(p1, CK_VIDEO_FFV1, 1.0 / 65535 + 1e-6, 1.0 / 65535 + 1e-6);   /* lossless at 16 bits */
    roundtrip(p2, CK_VIDEO_PRORES4444, 0.02, 1.0 / 1023);                   /* alpha: within one 10-bit code */
    roundtrip(p3, CK_VIDEO_H264, 0.08, 1.0);                               /* 8-bit 4:2:0, no alpha */

    /* truncated file: an error or fewer frames, never a crash */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "head -c 3000 %s > %s/trunc.mkv", p1, dir);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "%s/trunc.mkv", dir);
    ck_err           err = {{0}};
    ck_video_reader *r   = NULL;
    if (ck_video_open(&r, cmd, &err) == CK_OK) {
        float *buf = malloc(sizeof(float) * W * H * 3);
        int    eof = 0, frames = 0;
        while (ck_video_read(r, buf, 3, &eof, &err) == CK_OK && !eof) frames++;
        CHECK(frames < N);
        printf("OK     truncated FFV1: %d frames decoded, then %s\n", frames, eof ? "end of file" : err.msg);
        free(buf);
        ck_video_close(r);
    } else {
        printf("OK     truncated FFV1 refused: %s\n", err.msg);
    }
    /* not a video */
    snprintf(cmd, sizeof cmd, "%s/text.mov", dir);
    FILE *f = fopen(cmd, "w");
    fputs("not a movie", f);
    fclose(f);
    CHECK(ck_video_open(&r, cmd, &err) != CK_OK);
    /* aborted writer: nothing left behind */
    ck_video_writer *wr;
    snprintf(cmd, sizeof cmd, "%s/aborted.mkv", dir);
    if (ck_video_writer_open(&wr, cmd, CK_VIDEO_FFV1, W, H, 24, &err) == CK_OK) {
        ck_video_writer_close(wr, 1, &err);
        CHECK(access(cmd, F_OK) != 0);
        snprintf(p1, sizeof p1, "test -z \"$(ls -A %s | grep partial)\"", dir);
        CHECK(system(p1) == 0);
    }

    /* the CLI on a video plate: passes per frame, ProRes 4444 whose alpha equals the Matte pass */
    const char *bin = getenv("CK_BIN");
    char        fx[1024];
    test_path(fx, sizeof fx, "CK_FIXTURES", "tiny/s128");
    ck_npy rgbn;
    snprintf(cmd, sizeof cmd, "%s/frame_rgb.npy", fx);
    if (bin && ck_image_format_supported(CK_IMAGE_EXR) && ck_npy_read(cmd, &rgbn, &err) == CK_OK) {
        const int fw = (int)rgbn.shape[1], fh = (int)rgbn.shape[0];
        float    *rgba = malloc(sizeof(float) * 4 * fw * fh);
        snprintf(p1, sizeof p1, "%s/plate.mkv", dir);
        ck_video_writer *pw;
        CHECK(ck_video_writer_open(&pw, p1, CK_VIDEO_FFV1, fw, fh, 25.0, &err) == CK_OK);
        for (int f = 0; f < 3; f++) {
            for (int i = 0; i < fw * fh; i++) {
                for (int c = 0; c < 3; c++) rgba[4 * i + c] = rgbn.data[3 * i + c] * (1.0f - 0.05f * f);
                rgba[4 * i + 3] = 1.0f;
            }
            CHECK(ck_video_write(pw, rgba, &err) == CK_OK);
        }
        CHECK(ck_video_writer_close(pw, 0, &err) == CK_OK);
        snprintf(cmd, sizeof cmd,
                 "%s key --image %s --hint %s/frame_hint.png --checkpoint %s/model.safetensors --size 128 --device cpu "
                 "--quiet --video-out prores,ffv1,h264 --out %s/vout > %s/cli.log 2>&1",
                 bin, p1, fx, fx, dir, dir);
        CHECK(system(cmd) == 0);
        snprintf(p2, sizeof p2, "%s/vout/plate_prores4444.mov", dir);
        ck_video_reader *pr = NULL;
        CHECK(ck_video_open(&pr, p2, &err) == CK_OK);
        double worst = 0;
        int    frames = 0, eof = 0;
        while (pr && ck_video_read(pr, rgba, 4, &eof, &err) == CK_OK && !eof) {
            ck_image m;
            snprintf(p3, sizeof p3, "%s/vout/Matte/%05d.exr", dir, frames);
            CHECK(ck_image_read(p3, &m, NULL, &err) == CK_OK);
            /* the Matte pass keeps Lanczos overshoot outside [0, 1]; a video alpha plane cannot */
            for (int i = 0; m.data && i < fw * fh; i++)
                worst = fmax(worst, fabs(rgba[4 * i + 3] - fmin(1.0, fmax(0.0, m.data[i]))));
            ck_image_release(&m);
            frames++;
        }
        ck_video_close(pr);
        printf("%s     CLI on a 3-frame video: ProRes 4444 alpha vs Matte pass max abs %.2e (%d frames)\n",
               frames == 3 && worst <= 1.0 / 1023 ? "OK" : "NOT OK", worst, frames);
        /* one 10-bit code: half a code of quantization plus the Matte pass's half-float storage */
        CHECK(frames == 3 && worst <= 1.0 / 1023);
        snprintf(cmd, sizeof cmd, "test -f %s/vout/plate_ffv1.mkv && test -f %s/vout/plate_comp.mp4 && "
                 "test -f %s/vout/Comp/00002.png", dir, dir, dir);
        CHECK(system(cmd) == 0);
        /* a clip folder holding Input.mkv (no hint: automatic) */
        snprintf(cmd, sizeof cmd, "mkdir -p %s/clipv/shot && cp %s %s/clipv/shot/Input.mkv && %s clip %s/clipv "
                 "--checkpoint %s/model.safetensors --size 128 --device cpu --quiet --video-out none > %s/cli.log 2>&1 "
                 "&& test -f %s/clipv/shot/Output/Matte/00002.exr",
                 dir, p1, dir, bin, dir, fx, dir, dir);
        CHECK_MSG(system(cmd) == 0, "clip folder with Input.mkv");
        /* a truncated video plate (its index, at the end of a MOV, is gone): exit 1 before loading, one line
         * naming the file and the problem (it was "MP4/MOV container files are not supported") */
        snprintf(cmd, sizeof cmd,
                 "head -c 20000 %s/vout/plate_prores4444.mov > %s/cut.mov && %s key --image %s/cut.mov --hint "
                 "%s/frame_hint.png --checkpoint %s/model.safetensors --size 128 --device cpu --out %s/cutout > %s/cut.log "
                 "2>&1; test $? -eq 1 && grep -q 'cut.mov: a video file FFmpeg cannot open' %s/cut.log && "
                 "! grep -q 'loaded in' %s/cut.log && test $(grep -c . %s/cut.log) -eq 1",
                 dir, dir, bin, dir, fx, fx, dir, dir, dir, dir, dir);
        CHECK_MSG(system(cmd) == 0, "truncated video plate: one message, exit 1, before loading");
        /* a cut Matroska file keeps the header's duration but loses its last frames: refused as truncated (it
         * was keyed short with exit 0), while the whole file keys every frame */
        {
            snprintf(p2, sizeof p2, "%s/long.mkv", dir);
            ck_video_writer *lw;
            CHECK(ck_video_writer_open(&lw, p2, CK_VIDEO_FFV1, fw, fh, 24.0, &err) == CK_OK);
            for (int f = 0; f < 24; f++) {
                for (int i = 0; i < fw * fh; i++) {
                    /* noise-like content, so that every frame is large and a cut loses frames */
                    const unsigned hsh = (unsigned)(i * 2654435761u) ^ (unsigned)(f * 40503u);
                    for (int c = 0; c < 3; c++) rgba[4 * i + c] = (float)((hsh >> (8 * c)) & 255) / 255.0f;
                    rgba[4 * i + 3] = 1.0f;
                }
                CHECK(ck_video_write(lw, rgba, &err) == CK_OK);
            }
            CHECK(ck_video_writer_close(lw, 0, &err) == CK_OK);
            int declared = 0, damaged = 0;
            CHECK(ck_video_count_frames_ex(p2, &declared, &damaged) == 24 && declared == 0 && !damaged);
            snprintf(cmd, sizeof cmd, "head -c $(( $(stat -c %%s %s) * 6 / 10 )) %s > %s/cutlong.mkv", p2, p2, dir);
            CHECK(system(cmd) == 0);
            snprintf(p3, sizeof p3, "%s/cutlong.mkv", dir);
            const int got = ck_video_count_frames_ex(p3, &declared, &damaged);
            printf("%s     cut Matroska: %d frames readable, %d declared by its duration\n",
                   got > 0 && got < 24 && declared == 24 ? "OK" : "NOT OK", got, declared);
            CHECK(got > 0 && got < 24 && declared == 24);
            snprintf(cmd, sizeof cmd,
                     "%s key --image %s/cutlong.mkv --checkpoint %s/model.safetensors --size 128 --device cpu --out "
                     "%s/cutlongout > %s/cutlong.log 2>&1; test $? -eq 1 && grep -q 'cutlong.mkv: the video is "
                     "truncated or damaged' %s/cutlong.log && ! grep -q 'loaded in' %s/cutlong.log",
                     bin, dir, fx, dir, dir, dir, dir);
            CHECK_MSG(system(cmd) == 0, "cut Matroska plate: refused as truncated, exit 1, before loading");
        }
        free(rgba);
        ck_npy_free(&rgbn);
    }
    return test_summary();
}
#endif
