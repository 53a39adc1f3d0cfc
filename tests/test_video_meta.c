/* What output videos carry besides frames (src/io/video.c): the source's start timecode and BT.709 colour
 * tags. A 3-frame 64x64 MOV with a `timecode` tag (a tmcd track) is written here with FFmpeg's own API and
 * keyed on the CPU with the built-in keyer: ProRes 4444, FFV1 and H.264 each carry the same start timecode
 * at the source's rate (read back with libavformat) and the tags of video.h, in the container and in the
 * decoded frames; --frames 1-2 starts one frame later; `ckey encode --timecode` and a --skip-existing resume
 * give the same bytes; bad --timecode values are refused. The YUV a writer stores for a known colour is
 * BT.709's (limited range), not BT.601's, and reads back as that colour. EXR and DPX sequences give the first
 * frame's timeCode (test_dpx covers DPX) and framesPerSecond. */
#include "harness.h"

#if !defined(CK_HAVE_FFMPEG)
int main(void) {
    printf("SKIP: built without FFmpeg\n");
    return 0;
}
#else
#include "core/tensor.h"
#include "io/image.h"
#include "ckey_io.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/pixdesc.h>
#ifdef CK_HAVE_EXR
#include <openexr.h>
#endif
#include <sys/wait.h>

#define S 64

static char g_tmp[1024], g_bin[1024];

static int sh(const char *fmt, ...) CK_PRINTF(1, 2);
static int sh(const char *fmt, ...) {
    char    cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    const int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* A green screen with a square subject that moves per frame: (S, S, 3) in [0,1]. */
static void plate(float *rgb, int f) {
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            const int subject = x > 16 + 4 * f && x < 40 + 4 * f && y > 12 && y < 52;
            float    *p       = rgb + ((size_t)y * S + x) * 3;
            p[0] = subject ? 0.8f : 0.1f, p[1] = subject ? 0.5f : 0.7f, p[2] = subject ? 0.4f : 0.15f;
        }
}

/* The source clip, written with libavformat/libavcodec (PNG frames in MOV), `timecode` on its stream. */
static int write_source(const char *path, const char *tc, int frames) {
    AVFormatContext *fmt = NULL;
    const AVCodec   *c   = avcodec_find_encoder(AV_CODEC_ID_PNG);
    if (!c || avformat_alloc_output_context2(&fmt, NULL, NULL, path) < 0) return 0;
    AVStream       *st = avformat_new_stream(fmt, NULL);
    AVCodecContext *e  = avcodec_alloc_context3(c);
    e->width = S, e->height = S, e->pix_fmt = AV_PIX_FMT_RGB24;
    e->time_base = (AVRational){1, 25}, e->framerate = (AVRational){25, 1};
    if (fmt->oformat->flags & AVFMT_GLOBALHEADER) e->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    int ok = avcodec_open2(e, c, NULL) >= 0 && avcodec_parameters_from_context(st->codecpar, e) >= 0;
    st->time_base = e->time_base, st->avg_frame_rate = e->framerate;
    if (tc) av_dict_set(&st->metadata, "timecode", tc, 0);
    ok = ok && avio_open(&fmt->pb, path, AVIO_FLAG_WRITE) >= 0 && avformat_write_header(fmt, NULL) >= 0;
    AVFrame  *fr  = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    float     rgb[S * S * 3];
    fr->format = e->pix_fmt, fr->width = S, fr->height = S;
    ok = ok && av_frame_get_buffer(fr, 0) >= 0;
    for (int f = 0; ok && f <= frames; f++) {
        if (f < frames) {
            plate(rgb, f);
            for (int y = 0; y < S; y++)
                for (int i = 0; i < S * 3; i++) fr->data[0][y * fr->linesize[0] + i] = (uint8_t)lroundf(rgb[y * S * 3 + i] * 255);
            fr->pts = f;
        }
        ok = avcodec_send_frame(e, f < frames ? fr : NULL) >= 0;
        while (ok && avcodec_receive_packet(e, pkt) == 0) {
            av_packet_rescale_ts(pkt, e->time_base, st->time_base);
            pkt->stream_index = st->index;
            ok                = av_interleaved_write_frame(fmt, pkt) >= 0;
        }
    }
    ok = ok && av_write_trailer(fmt) >= 0;
    avio_closep(&fmt->pb);
    av_frame_free(&fr), av_packet_free(&pkt), avcodec_free_context(&e), avformat_free_context(fmt);
    return ok;
}

typedef struct probed {
    char       tc[32]; /* the first `timecode` tag found: a stream's, else the container's */
    int        tmcd;   /* a tmcd data track */
    int        frames;
    AVRational rate;
    int        pri, trc, spc, range;     /* the video stream's parameters */
    int        fpri, ftrc, fspc, frange; /* the first decoded frame's */
} probed;

/* What libavformat and the decoder say about `path`. */
static int probe(const char *path, probed *p) {
    memset(p, 0, sizeof *p);
    AVFormatContext *fmt = NULL;
    if (avformat_open_input(&fmt, path, NULL, NULL) < 0) return 0;
    const AVCodec *dc = NULL;
    int            vs = avformat_find_stream_info(fmt, NULL) >= 0 ? av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &dc, 0) : -1;
    for (unsigned i = 0; i < fmt->nb_streams; i++) {
        const AVDictionaryEntry *t = av_dict_get(fmt->streams[i]->metadata, "timecode", NULL, 0);
        if (t && !p->tc[0]) snprintf(p->tc, sizeof p->tc, "%s", t->value);
        p->tmcd |= fmt->streams[i]->codecpar->codec_tag == MKTAG('t', 'm', 'c', 'd');
    }
    const AVDictionaryEntry *t = av_dict_get(fmt->metadata, "timecode", NULL, 0);
    if (t && !p->tc[0]) snprintf(p->tc, sizeof p->tc, "%s", t->value);
    if (vs >= 0) {
        const AVCodecParameters *cp = fmt->streams[vs]->codecpar;
        p->rate = fmt->streams[vs]->avg_frame_rate;
        p->pri = cp->color_primaries, p->trc = cp->color_trc, p->spc = cp->color_space, p->range = cp->color_range;
        AVCodecContext *d   = avcodec_alloc_context3(dc);
        AVPacket       *pkt = av_packet_alloc();
        AVFrame        *fr  = av_frame_alloc();
        int             got = 0;
        avcodec_parameters_to_context(d, cp);
        avcodec_open2(d, dc, NULL);
        while (av_read_frame(fmt, pkt) >= 0) {
            if (pkt->stream_index == vs) {
                p->frames++;
                if (!got && avcodec_send_packet(d, pkt) >= 0 && avcodec_receive_frame(d, fr) == 0) {
                    got = 1;
                    p->fpri = fr->color_primaries, p->ftrc = fr->color_trc, p->fspc = fr->colorspace, p->frange = fr->color_range;
                }
            }
            av_packet_unref(pkt);
        }
        if (!got && avcodec_send_packet(d, NULL) >= 0 && avcodec_receive_frame(d, fr) == 0) /* x264's delay */
            p->fpri = fr->color_primaries, p->ftrc = fr->color_trc, p->fspc = fr->colorspace, p->frange = fr->color_range;
        av_frame_free(&fr), av_packet_free(&pkt), avcodec_free_context(&d);
    }
    avformat_close_input(&fmt);
    return vs >= 0;
}

/* An output video: the timecode, rate and frame count expected, the tags of video.h in stream and frame. */
static void expect_video(const char *path, const char *tc, int fps, int frames, int codec) {
    static const int trc[3] = {AVCOL_TRC_BT709, AVCOL_TRC_IEC61966_2_1, AVCOL_TRC_IEC61966_2_1};
    static const int spc[3] = {AVCOL_SPC_BT709, AVCOL_SPC_RGB, AVCOL_SPC_BT709};
    static const int rng[3] = {AVCOL_RANGE_MPEG, AVCOL_RANGE_JPEG, AVCOL_RANGE_MPEG};
    probed           p;
    const int        opened = probe(path, &p);
    const int        tags   = p.pri == AVCOL_PRI_BT709 && p.trc == trc[codec] && p.spc == spc[codec] && p.range == rng[codec];
    const int ftags = p.fpri == AVCOL_PRI_BT709 && p.ftrc == trc[codec] && p.fspc == spc[codec] && p.frange == rng[codec];
    const int ok    = opened && !strcmp(p.tc, tc) && (!tc[0] || codec == 1 || p.tmcd) && p.frames == frames &&
                   p.rate.num == fps * p.rate.den && tags && ftags;
    printf("%s     %-40s timecode '%s'%s, %d frames at %d/%d, tags %s/%s/%s/%s (frame: %s/%s/%s/%s)\n",
           ok ? "OK" : "NOT OK", strrchr(path, '/') + 1, p.tc, p.tmcd ? " (tmcd track)" : "", p.frames, p.rate.num,
           p.rate.den, av_color_primaries_name(p.pri), av_color_transfer_name(p.trc), av_color_space_name(p.spc),
           av_color_range_name(p.range), av_color_primaries_name(p.fpri), av_color_transfer_name(p.ftrc),
           av_color_space_name(p.fspc), av_color_range_name(p.frange));
    CHECK_MSG(ok, "%s: expected timecode '%s' at %d fps, %d frames, BT.709 tags", path, tc, fps, frames);
}

/* BT.709 (and, to show the test tells them apart, BT.601) limited-range Y'CbCr of an R'G'B' colour, in
 * codes of `bits`. */
static void ycbcr(const double rgb[3], double kr, double kb, int bits, double out[3]) {
    const double y = kr * rgb[0] + (1 - kr - kb) * rgb[1] + kb * rgb[2], sc = 1 << (bits - 8);
    out[0] = (16 + 219 * y) * sc;
    out[1] = (128 + 224 * (rgb[2] - y) / (2 * (1 - kb))) * sc;
    out[2] = (128 + 224 * (rgb[0] - y) / (2 * (1 - kr))) * sc;
}

/* A solid colour through the writer: the stored centre pixel's Y'CbCr against BT.709's, and read back. */
static void matrix_check(ck_video_codec codec, const char *name, const char *ext) {
    const double     col[3] = {0.8, 0.3, 0.1};
    char             path[1200];
    ck_err           err = {{0}};
    ck_video_writer *wr;
    static float     rgba[S * S * 4], back[S * S * 3];
    for (int i = 0; i < S * S; i++) rgba[4 * i] = 0.8f, rgba[4 * i + 1] = 0.3f, rgba[4 * i + 2] = 0.1f, rgba[4 * i + 3] = 1;
    snprintf(path, sizeof path, "%s/solid%s", g_tmp, ext);
    const ck_video_meta meta = {25, ""};
    CHECK(ck_video_writer_open_meta(&wr, path, codec, S, S, &meta, &err) == CK_OK);
    for (int f = 0; f < 2; f++) CHECK(ck_video_write(wr, rgba, &err) == CK_OK);
    CHECK(ck_video_writer_close(wr, 0, &err) == CK_OK);
    /* the samples as stored: decoded without any conversion */
    AVFormatContext *fmt = NULL;
    const AVCodec   *dc  = NULL;
    double           got[3] = {0}, want[3], bt601[3];
    int              bits = 0;
    if (avformat_open_input(&fmt, path, NULL, NULL) == 0 && avformat_find_stream_info(fmt, NULL) >= 0) {
        const int       vs  = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &dc, 0);
        AVCodecContext *d   = avcodec_alloc_context3(dc);
        AVPacket       *pkt = av_packet_alloc();
        AVFrame        *fr  = av_frame_alloc();
        avcodec_parameters_to_context(d, fmt->streams[vs]->codecpar);
        avcodec_open2(d, dc, NULL);
        int have = 0;
        while (!have && av_read_frame(fmt, pkt) >= 0) {
            if (pkt->stream_index == vs && avcodec_send_packet(d, pkt) >= 0) have = avcodec_receive_frame(d, fr) == 0;
            av_packet_unref(pkt);
        }
        if (!have && avcodec_send_packet(d, NULL) >= 0) have = avcodec_receive_frame(d, fr) == 0;
        if (have) {
            const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(fr->format);
            bits                           = desc->comp[0].depth;
            for (int c = 0; c < 3; c++) {
                const int cx = S / 2 >> (c ? desc->log2_chroma_w : 0), cy = S / 2 >> (c ? desc->log2_chroma_h : 0);
                uint16_t  v;
                av_read_image_line2(&v, (const uint8_t **)fr->data, fr->linesize, desc, cx, cy, c, 1, 0, 2);
                got[c] = v;
            }
        }
        av_frame_free(&fr), av_packet_free(&pkt), avcodec_free_context(&d);
        avformat_close_input(&fmt);
    }
    ycbcr(col, 0.2126, 0.0722, bits ? bits : 8, want);
    ycbcr(col, 0.299, 0.114, bits ? bits : 8, bt601);
    const double tol = 2.0 * (1 << ((bits ? bits : 8) - 8)); /* two 8-bit codes: quantization, chroma filtering */
    int          ok  = bits > 0;
    for (int c = 0; c < 3; c++) ok &= fabs(got[c] - want[c]) <= tol;
    ok &= fabs(got[0] - bt601[0]) > 2 * tol; /* BT.601's Y' would be far away */
    printf("%s     %-14s stores Y'CbCr %.0f %.0f %.0f (%d-bit); BT.709 %.1f %.1f %.1f, BT.601 %.1f %.1f %.1f\n",
           ok ? "OK" : "NOT OK", name, got[0], got[1], got[2], bits, want[0], want[1], want[2], bt601[0], bt601[1],
           bt601[2]);
    CHECK_MSG(ok, "%s: the stored Y'CbCr is not BT.709's of the colour", name);
    /* and the reader converts it back with the matrix it is tagged with */
    ck_video_reader *r = NULL;
    int              eof = 0;
    double           worst = 1;
    if (ck_video_open(&r, path, &err) == CK_OK && ck_video_read(r, back, 3, &eof, &err) == CK_OK && !eof) {
        worst = 0;
        for (int c = 0; c < 3; c++) worst = fmax(worst, fabs(back[(S / 2 * S + S / 2) * 3 + c] - col[c]));
    }
    ck_video_close(r);
    printf("%s     %-14s reads back within %.4f of the colour\n", worst <= 0.01 ? "OK" : "NOT OK", name, worst);
    CHECK(worst <= 0.01);
}

#ifdef CK_HAVE_EXR
/* An uncompressed half RGB EXR with timeCode and framesPerSecond, written with the OpenEXR C API. */
static int write_exr_frame(const char *path, int f, uint32_t timecode, int fps) {
    exr_context_t             ctx  = NULL;
    exr_context_initializer_t init = EXR_DEFAULT_CONTEXT_INITIALIZER;
    int                       part = 0, ok;
    ok = exr_start_write(&ctx, path, EXR_WRITE_FILE_DIRECTLY, &init) == EXR_ERR_SUCCESS &&
         exr_add_part(ctx, "", EXR_STORAGE_SCANLINE, &part) == EXR_ERR_SUCCESS &&
         exr_initialize_required_attr_simple(ctx, part, S, S, EXR_COMPRESSION_NONE) == EXR_ERR_SUCCESS;
    static const char *names[3] = {"B", "G", "R"}; /* the order EXR stores them in */
    for (int c = 0; ok && c < 3; c++)
        ok = exr_add_channel(ctx, part, names[c], EXR_PIXEL_HALF, EXR_PERCEPTUALLY_LOGARITHMIC, 1, 1) == EXR_ERR_SUCCESS;
    const exr_attr_timecode_t tc   = {timecode, 0};
    const exr_attr_rational_t rate = {fps, 1};
    ok = ok && exr_attr_set_timecode(ctx, part, "timeCode", &tc) == EXR_ERR_SUCCESS &&
         exr_attr_set_rational(ctx, part, "framesPerSecond", &rate) == EXR_ERR_SUCCESS &&
         exr_write_header(ctx) == EXR_ERR_SUCCESS;
    float    rgb[S * S * 3];
    uint16_t line[3 * S]; /* one scanline: B, G, R planes of S halves */
    plate(rgb, f);
    for (int y = 0; ok && y < S; y++) {
        for (int x = 0; x < S; x++)
            for (int c = 0; c < 3; c++) line[c * S + x] = ck_f32_to_f16(powf(rgb[(y * S + x) * 3 + 2 - c], 2.2f));
        ok = exr_write_scanline_chunk(ctx, part, y, line, sizeof line) == EXR_ERR_SUCCESS;
    }
    return exr_finish(&ctx) == EXR_ERR_SUCCESS && ok;
}
#endif

int main(void) {
    test_path(g_tmp, sizeof g_tmp, "CK_TMP", "video_meta");
    const char *bin = getenv("CK_BIN");
    snprintf(g_bin, sizeof g_bin, "%s", bin ? bin : "./ckey");
    CHECK(sh("rm -rf %s && mkdir -p %s", g_tmp, g_tmp) == 0);

    /* 1. timecodes: parsing and counting */
    char tc[16];
    CHECK(ck_video_timecode_at("01:00:10:05", 25, 0, tc) && !strcmp(tc, "01:00:10:05"));
    CHECK(ck_video_timecode_at("01:00:10:05", 25, 20, tc) && !strcmp(tc, "01:00:11:00"));
    CHECK(ck_video_timecode_at("00:00:59;29", 30000.0 / 1001, 1, tc) && !strcmp(tc, "00:01:00;02")); /* 2 dropped */
    CHECK(ck_video_timecode_at("00:09:59;29", 30000.0 / 1001, 1, tc) && !strcmp(tc, "00:10:00;00")); /* not at 10 */
    CHECK(!ck_video_timecode_at("01:00:10:25", 25, 0, tc) && !tc[0]);
    CHECK(!ck_video_timecode_at("01:00:00;00", 25, 0, tc) && !ck_video_timecode_at("1:00:00:00", 25, 0, tc) &&
          !ck_video_timecode_at("01:60:00:00", 25, 0, tc) && !ck_video_timecode_at("01:00:00:0x", 25, 0, tc));

    /* 2. the stored matrix and range */
    matrix_check(CK_VIDEO_PRORES4444, "ProRes 4444", ".mov");
    matrix_check(CK_VIDEO_H264, "H.264", ".mp4");

    if (!ck_image_format_supported(CK_IMAGE_EXR) || !ck_image_format_supported(CK_IMAGE_PNG)) {
        printf("SKIP: the CLI runs: no EXR/PNG writers in this build\n");
        return test_summary();
    }
    /* 3. a source with a timecode keyed into every video */
    char src[1200], out[1200];
    snprintf(src, sizeof src, "%s/src.mov", g_tmp);
    CHECK(write_source(src, "01:00:10:05", 3));
    probed sp;
    CHECK_MSG(probe(src, &sp) && !strcmp(sp.tc, "01:00:10:05") && sp.tmcd && sp.frames == 3, "source: '%s'", sp.tc);
    ck_err           err = {{0}};
    ck_video_reader *r   = NULL;
    CHECK(ck_video_open(&r, src, &err) == CK_OK && !strcmp(ck_video_timecode(r), "01:00:10:05"));
    ck_video_close(r);
    const char *common = "--checkpoint builtin --size 64 --device cpu --quiet";
    CHECK_MSG(sh("%s key --image %s %s --video-out prores,ffv1,h264 --out %s/A > %s/A.log 2>&1", g_bin, src, common, g_tmp,
                 g_tmp) == 0, "keying the source (see %s/A.log)", g_tmp);
    static const char *ext[3] = {"_prores4444.mov", "_ffv1.mkv", "_comp.mp4"};
    for (int k = 0; k < 3; k++) {
        snprintf(out, sizeof out, "%s/A/src%s", g_tmp, ext[k]);
        expect_video(out, "01:00:10:05", 25, 3, k);
    }
    /* a range starts its videos at its first frame's timecode */
    CHECK(sh("%s key --image %s %s --frames 1-2 --video-out prores --out %s/B > %s/B.log 2>&1", g_bin, src, common, g_tmp,
             g_tmp) == 0);
    snprintf(out, sizeof out, "%s/B/src_prores4444.mov", g_tmp);
    expect_video(out, "01:00:10:06", 25, 2, 0);

    /* 4. ckey encode: --timecode carried, the same bytes as the keying run's videos; bad values refused */
    CHECK(sh("%s encode %s/A --video-out prores,h264 --fps 25 --timecode 01:00:10:05 --name enc > %s/enc.log 2>&1", g_bin,
             g_tmp, g_tmp) == 0);
    snprintf(out, sizeof out, "%s/A/enc_prores4444.mov", g_tmp);
    expect_video(out, "01:00:10:05", 25, 3, 0);
    snprintf(out, sizeof out, "%s/A/enc_comp.mp4", g_tmp);
    expect_video(out, "01:00:10:05", 25, 3, 2);
    CHECK_MSG(sh("cmp -s %s/A/enc_prores4444.mov %s/A/src_prores4444.mov && cmp -s %s/A/enc_comp.mp4 %s/A/src_comp.mp4",
                 g_tmp, g_tmp, g_tmp, g_tmp) == 0, "ckey encode --timecode differs from the keying run's videos");
    CHECK(sh("%s encode %s/A --video-out prores --fps 25 --name none > %s/enc.log 2>&1", g_bin, g_tmp, g_tmp) == 0);
    snprintf(out, sizeof out, "%s/A/none_prores4444.mov", g_tmp);
    expect_video(out, "", 25, 3, 0);
    static const char *bad[4] = {"01:00:10:25", "01:00:00;00", "1:00:00:00", "25:00:00:00:00"};
    for (int i = 0; i < 4; i++)
        CHECK_MSG(sh("%s encode %s/A --fps 25 --timecode '%s' --name bad > %s/bad.log 2>&1", g_bin, g_tmp, bad[i], g_tmp) == 2,
                  "--timecode %s at 25 fps accepted", bad[i]);
    CHECK(sh("test ! -e %s/A/bad_prores4444.mov && grep -q 'not a start timecode at 25.000 fps' %s/bad.log", g_tmp, g_tmp) == 0);
    /* a resumed shot encodes its videos with the source's timecode: the same bytes as the uninterrupted run */
    CHECK(sh("%s key --image %s %s --frames 0-1 --video-out none --out %s/R > %s/R.log 2>&1 && %s key --image %s %s --skip-existing "
             "--video-out prores,ffv1,h264 --out %s/R >> %s/R.log 2>&1",
             g_bin, src, common, g_tmp, g_tmp, g_bin, src, common, g_tmp, g_tmp) == 0);
    CHECK_MSG(sh("cmp -s %s/R/src_prores4444.mov %s/A/src_prores4444.mov && cmp -s %s/R/src_comp.mp4 %s/A/src_comp.mp4",
                 g_tmp, g_tmp, g_tmp, g_tmp) == 0, "the resumed shot's videos differ from the uninterrupted run's");
    snprintf(out, sizeof out, "%s/R/src_ffv1.mkv", g_tmp); /* Matroska's segment UID differs run to run */
    expect_video(out, "01:00:10:05", 25, 3, 1);
    /* a source without a timecode: videos without one */
    snprintf(src, sizeof src, "%s/plain.mov", g_tmp);
    CHECK(write_source(src, NULL, 3));
    CHECK(sh("%s key --image %s %s --video-out prores --out %s/P > %s/P.log 2>&1", g_bin, src, common, g_tmp, g_tmp) == 0);
    snprintf(out, sizeof out, "%s/P/plain_prores4444.mov", g_tmp);
    expect_video(out, "", 25, 3, 0);

#ifdef CK_HAVE_EXR
    /* 5. an EXR sequence: the first frame's timeCode (02:00:00:10) and framesPerSecond (30) */
    CHECK(sh("mkdir -p %s/exr", g_tmp) == 0);
    for (int f = 0; f < 3; f++) {
        snprintf(src, sizeof src, "%s/exr/shot.%04d.exr", g_tmp, f);
        CHECK_MSG(write_exr_frame(src, f, 0x02000010u + (uint32_t)f, 30), "%s", src);
    }
    snprintf(src, sizeof src, "%s/exr/shot.0000.exr", g_tmp);
    double fps = 0;
    ck_image_shot_info(src, tc, &fps);
    CHECK_MSG(!strcmp(tc, "02:00:00:10") && fps == 30, "EXR timeCode '%s', %g fps", tc, fps);
    CHECK(sh("%s key --image %s/exr %s --video-out prores --out %s/E > %s/E.log 2>&1", g_bin, g_tmp, common, g_tmp, g_tmp) == 0);
    snprintf(out, sizeof out, "%s/E/exr_prores4444.mov", g_tmp);
    expect_video(out, "02:00:00:10", 30, 3, 0);
#endif
    return test_summary();
}
#endif
