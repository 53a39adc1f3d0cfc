/* DPX plates (src/io/image_dpx.c): files written here by FFmpeg's own DPX encoder from known code values
 * (10-bit both byte orders, 12, 16, 8-bit RGB, 16-bit RGBA and luma) read back as code / (2^bits - 1), i.e.
 * the float they were quantized from within half a code; truncated, corrupt and over-limit files are refused
 * with CK_STATUS_EFORMAT naming the file (over-limit before decoding); a log-encoded scan is read as stored
 * with one warning; the television header's timecode and frame rate (SMPTE 268M offsets 1920/1940, in a
 * 2048-byte header built here) are read. Through the CLI on the
 * CPU with the built-in keyer: a single .dpx is keyed as a plate (not as a one-frame video), a DPX sequence
 * keys into the same passes, byte for byte, as a 16-bit PNG sequence of the same codes, its ProRes carries
 * the first frame's timecode at the header's rate, and a truncated frame fails with exit 1 naming it. */
#include "harness.h"

#ifndef CK_HAVE_FFMPEG
int main(void) {
    printf("SKIP: built without FFmpeg (libavcodec reads DPX)\n");
    return 0;
}
#else
#include "io/image.h"
#include "ckey_io.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/pixdesc.h>
#include <sys/wait.h>

#define W 40
#define H 24

static char g_tmp[1024];

/* The float a component of a pixel is quantized from: every code range is crossed, per component. */
static float pattern(int x, int y, int c, int f) {
    return (float)fmod(0.137 * x + 0.071 * y + 0.29 * c + 0.05 * f, 1.0);
}

/* A DPX of W×H in `fmt` written by FFmpeg's encoder, codes round(pattern · max); its bytes into *out. */
static int encode_dpx(enum AVPixelFormat fmt, int frame, uint8_t **out, int *size) {
    const AVCodec  *codec = avcodec_find_encoder(AV_CODEC_ID_DPX);
    AVCodecContext *enc   = codec ? avcodec_alloc_context3(codec) : NULL;
    if (!enc) return 0;
    enc->width = W, enc->height = H, enc->pix_fmt = fmt, enc->time_base = (AVRational){1, 25};
    AVFrame  *f   = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    int       ok  = avcodec_open2(enc, codec, NULL) >= 0;
    f->format = fmt, f->width = W, f->height = H;
    ok = ok && av_frame_get_buffer(f, 0) >= 0;
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(fmt);
    for (int i = 0; ok && i < AV_NUM_DATA_POINTERS && f->buf[i]; i++) memset(f->buf[i]->data, 0, f->buf[i]->size);
    for (int c = 0; ok && c < d->nb_components; c++) {
        const double max = (1 << d->comp[c].depth) - 1;
        for (int y = 0; y < H; y++) {
            uint16_t line[W];
            for (int x = 0; x < W; x++) line[x] = (uint16_t)lround(pattern(x, y, c, frame) * max);
            av_write_image_line2(line, f->data, f->linesize, d, 0, y, c, W, 2); /* ORs into the zeroed planes */
        }
    }
    ok = ok && avcodec_send_frame(enc, f) >= 0 && avcodec_receive_packet(enc, pkt) >= 0;
    if (ok) {
        *out = malloc(pkt->size), *size = pkt->size;
        memcpy(*out, pkt->data, pkt->size);
    }
    av_packet_free(&pkt), av_frame_free(&f), avcodec_free_context(&enc);
    return ok;
}

static void put32(uint8_t *p, uint32_t v, int be) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (be ? 24 - 8 * i : 8 * i));
}

static int write_file(const char *path, const uint8_t *b, int n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    const int ok = (int)fwrite(b, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* FFmpeg writes the 1664-byte generic + image headers only; a scanner writes the full 2048: the film and
 * television headers inserted, the offsets that point past them moved (SMPTE 268M: image data offset at 4,
 * file size at 16, element 0's data offset at 808), the timecode (BCD) at 1920 and frame rate at 1940. */
static uint8_t *with_tv_header(const uint8_t *b, int n, uint32_t tc_bcd, float fps, int *out_n) {
    const int be = !memcmp(b, "SDPX", 4), grow = 2048 - 1664;
    uint8_t  *o  = malloc(n + grow);
    memcpy(o, b, 1664);
    memset(o + 1664, 0xff, grow); /* undefined fields are all ones */
    memcpy(o + 2048, b + 1664, n - 1664);
    put32(o + 4, 2048, be), put32(o + 16, n + grow, be), put32(o + 808, 2048, be);
    put32(o + 1920, tc_bcd, be);
    uint32_t bits;
    memcpy(&bits, &fps, 4);
    put32(o + 1940, bits, be);
    *out_n = n + grow;
    return o;
}

static int  g_warnings;
static char g_warned[512];
static void count_log(ck_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == CK_LOG_WARN) g_warnings++, snprintf(g_warned, sizeof g_warned, "%s", msg);
}

static int sh(const char *cmd) {
    const int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void read_back(const char *what, enum AVPixelFormat fmt, int want_channels, int want_bits) {
    uint8_t *b;
    int      n;
    char     path[1200];
    snprintf(path, sizeof path, "%s/%s.dpx", g_tmp, what);
    if (!encode_dpx(fmt, 0, &b, &n)) {
        CHECK_MSG(0, "%s: FFmpeg's DPX encoder did not take %s", what, av_get_pix_fmt_name(fmt));
        return;
    }
    CHECK(write_file(path, b, n));
    free(b);
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(fmt);
    ck_image img;
    int      depth = 0;
    ck_err   err   = {{0}};
    CHECK_MSG(ck_image_sniff(path) == CK_IMAGE_DPX && !ck_image_is_linear(path), "%s: sniffed as DPX", what);
    CHECK_MSG(ck_image_read(path, &img, &depth, &err) == CK_OK, "%s: %s", what, err.msg);
    if (!img.data) return;
    CHECK_MSG(img.width == W && img.height == H && img.channels == want_channels && depth == want_bits,
              "%s: %dx%dx%d, %d bits", what, img.width, img.height, img.channels, depth);
    /* exactly the stored code over the largest code, and so within half a code of the quantized float */
    double worst_code = 0, worst_float = 0, half_code = 0;
    for (int c = 0; c < img.channels && img.channels == d->nb_components; c++) {
        const double max = (1 << d->comp[c].depth) - 1;
        half_code        = 0.5 / max;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                const double v = img.data[((size_t)y * W + x) * img.channels + c], p = pattern(x, y, c, 0);
                worst_code     = fmax(worst_code, fabs(v - lround(p * max) / max));
                worst_float    = fmax(worst_float, fabs(v - p));
            }
    }
    printf("%s     %-22s %dx%dx%d %2d-bit: max |v - code/max| %.1e, max |v - source| %.2e (half a code %.2e)\n",
           worst_code <= 1e-6 && worst_float <= half_code + 1e-6 ? "OK" : "NOT OK", what, img.width, img.height,
           img.channels, depth, worst_code, worst_float, half_code);
    CHECK(worst_code <= 1e-6);
    CHECK(worst_float <= half_code + 1e-6);
    ck_image_release(&img);
}

/* `what` must fail with EFORMAT and a message naming the file and containing `needle`. */
static void refused(const char *what, const char *path, const char *needle) {
    ck_image img;
    ck_err   err = {{0}};
    const ck_status st = ck_image_read(path, &img, NULL, &err);
    CHECK_MSG(st == CK_STATUS_EFORMAT && strstr(err.msg, path) && strstr(err.msg, needle), "%s: status %d, '%s'",
              what, (int)st, err.msg);
    printf("OK     %-22s refused: %s\n", what, err.msg);
}

int main(void) {
    test_path(g_tmp, sizeof g_tmp, "CK_TMP", "dpx");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", g_tmp, g_tmp);
    CHECK(system(cmd) == 0);
    unsetenv("CKEY_MAX_PIXELS");

    /* 1. code values back as written */
    read_back("rgb10_le", AV_PIX_FMT_GBRP10LE, 3, 10);
    read_back("rgb10_be", AV_PIX_FMT_GBRP10BE, 3, 10);
    read_back("rgb12_le", AV_PIX_FMT_GBRP12LE, 3, 12);
    read_back("rgb16_le", AV_PIX_FMT_RGB48LE, 3, 16);
    read_back("rgb16_be", AV_PIX_FMT_RGB48BE, 3, 16);
    read_back("rgb8", AV_PIX_FMT_RGB24, 3, 8);
    read_back("rgba16", AV_PIX_FMT_RGBA64LE, 4, 16);
    read_back("luma16", AV_PIX_FMT_GRAY16LE, 1, 16);
    char path[1200], bad[1200];
    snprintf(path, sizeof path, "%s/rgb10_be.dpx", g_tmp);
    {
        FILE   *f = fopen(path, "rb");
        uint8_t magic[4] = {0};
        CHECK(f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "SDPX", 4)); /* the big-endian case was written */
        if (f) fclose(f);
    }

    /* 2. truncated, corrupt and over-limit files */
    snprintf(path, sizeof path, "%s/rgb10_le.dpx", g_tmp);
    uint8_t *b = NULL;
    int      n = 0;
    if (!encode_dpx(AV_PIX_FMT_GBRP10LE, 0, &b, &n)) {
        CHECK_MSG(0, "FFmpeg's DPX encoder did not take gbrp10le");
        return test_summary();
    }
    snprintf(bad, sizeof bad, "%s/cut_data.dpx", g_tmp);
    CHECK(write_file(bad, b, n - 100));
    refused("truncated in the data", bad, "truncated DPX");
    snprintf(bad, sizeof bad, "%s/cut_header.dpx", g_tmp);
    CHECK(write_file(bad, b, 1000));
    refused("truncated in the header", bad, "truncated DPX");
    /* a header that does not give its file size: FFmpeg's decoder finds the data short */
    uint8_t *c = malloc(n);
    memcpy(c, b, n);
    put32(c + 16, 0, 0);
    snprintf(bad, sizeof bad, "%s/cut_nosize.dpx", g_tmp);
    CHECK(write_file(bad, c, n - 100));
    refused("truncated, no file size", bad, "corrupt or truncated DPX");
    memcpy(c, b, n);
    put32(c + 772, 8000, 0), put32(c + 776, 8000, 0); /* 64 Mpx claimed by a 5 KB file */
    snprintf(bad, sizeof bad, "%s/huge.dpx", g_tmp);
    CHECK(write_file(bad, c, n));
    refused("64 Mpx header", bad, "larger than the limit");
    setenv("CKEY_MAX_PIXELS", "900", 1); /* the limit moves: 40x24 = 960 px */
    refused("over CKEY_MAX_PIXELS", path, "larger than the limit");
    unsetenv("CKEY_MAX_PIXELS");
    memcpy(c, b, n);
    put32(c + 772, 0, 0);
    snprintf(bad, sizeof bad, "%s/zero.dpx", g_tmp);
    CHECK(write_file(bad, c, n));
    refused("width 0", bad, "DPX size 0x24");
    /* a log-encoded scan (transfer 1: printing density) is read as stored, and said once */
    memcpy(c, b, n);
    c[801] = 1;
    snprintf(bad, sizeof bad, "%s/log.dpx", g_tmp);
    CHECK(write_file(bad, c, n));
    {
        ck_image lg, lg2, ref;
        ck_err   e2 = {{0}};
        ck_set_log(count_log, NULL, CK_LOG_INFO);
        CHECK(ck_image_read(bad, &lg, NULL, &e2) == CK_OK && ck_image_read(path, &ref, NULL, &e2) == CK_OK);
        CHECK(ck_image_read(bad, &lg2, NULL, &e2) == CK_OK); /* a second log-encoded frame: no second warning */
        ck_image_release(&lg2);
        ck_set_log(NULL, NULL, CK_LOG_INFO);
        CHECK_MSG(g_warnings == 1 && strstr(g_warned, "printing density") && strstr(g_warned, "log.dpx"),
                  "%d warnings, last '%s'", g_warnings, g_warned);
        CHECK(lg.data && ref.data && !memcmp(lg.data, ref.data, sizeof(float) * W * H * 3));
        printf("OK     log-encoded DPX read as stored, said once: %s\n", g_warned);
        ck_image_release(&lg), ck_image_release(&ref);
    }
    free(c);

    /* 3. the television header's timecode and rate (10:00:01:12 at 25 fps), either byte order */
    for (int be = 0; be < 2; be++) {
        uint8_t *e  = NULL;
        int      en = 0;
        if (!encode_dpx(be ? AV_PIX_FMT_GBRP10BE : AV_PIX_FMT_GBRP10LE, 0, &e, &en)) {
            CHECK_MSG(0, "FFmpeg's DPX encoder did not take gbrp10");
            break;
        }
        int      tn;
        uint8_t *t = with_tv_header(e, en, 0x10000112u, 25.0f, &tn);
        snprintf(bad, sizeof bad, "%s/tc_%s.dpx", g_tmp, be ? "be" : "le");
        CHECK(write_file(bad, t, tn));
        char     tc[16];
        double   fps;
        ck_image img;
        ck_err   err = {{0}};
        ck_image_shot_info(bad, tc, &fps);
        CHECK_MSG(!strcmp(tc, "10:00:01:12") && fps == 25.0, "%s: timecode '%s', %g fps", bad, tc, fps);
        CHECK_MSG(ck_image_read(bad, &img, NULL, &err) == CK_OK && img.width == W, "2048-byte header: %s", err.msg);
        ck_image_release(&img);
        free(e), free(t);
    }
    printf("OK     television header: timecode 10:00:01:12, 25 fps (both byte orders)\n");
    {
        char   tc[16] = "x";
        double fps    = -1;
        ck_image_shot_info(path, tc, &fps); /* FFmpeg's 1664-byte header has no television header */
        CHECK(tc[0] == '\0' && fps == 0);
    }

    /* 4. through the CLI: a single .dpx, a DPX sequence == a 16-bit PNG sequence of the same codes */
    const char *bin = getenv("CK_BIN");
    if (!bin || !ck_image_format_supported(CK_IMAGE_EXR) || !ck_image_format_supported(CK_IMAGE_PNG)) {
        printf("SKIP: the CLI runs (no CK_BIN, or no EXR/PNG writers in this build)\n");
        free(b);
        return test_summary();
    }
    const char *common = "--checkpoint builtin --size 64 --device cpu --quiet";
    snprintf(cmd, sizeof cmd, "%s key --image %s %s --out %s/one > %s/one.log 2>&1 && test -f %s/one/Matte/rgb10_le.exr",
             bin, path, common, g_tmp, g_tmp, g_tmp);
    CHECK_MSG(sh(cmd) == 0, "a single .dpx keyed as a plate named after the file (see %s/one.log)", g_tmp);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/seq_dpx %s/seq_png", g_tmp, g_tmp);
    CHECK(system(cmd) == 0);
    for (int f = 0; f < 3; f++) {
        uint8_t *e  = NULL;
        int      en = 0;
        if (!encode_dpx(AV_PIX_FMT_RGB48LE, f, &e, &en)) {
            CHECK_MSG(0, "FFmpeg's DPX encoder did not take rgb48le");
            break;
        }
        int      tn;
        uint8_t *t = with_tv_header(e, en, 0x01020304u + (uint32_t)f, 25.0f, &tn);
        snprintf(bad, sizeof bad, "%s/seq_dpx/shot.%04d.dpx", g_tmp, 1001 + f);
        CHECK(write_file(bad, t, tn));
        ck_image img = {W, H, 3, malloc(sizeof(float) * W * H * 3)};
        for (int i = 0; i < W * H * 3; i++)
            img.data[i] = (float)lround(pattern(i / 3 % W, i / 3 / W, i % 3, f) * 65535.0) / 65535.0f;
        ck_err err = {{0}};
        snprintf(bad, sizeof bad, "%s/seq_png/shot.%04d.png", g_tmp, 1001 + f);
        CHECK(ck_image_write_png16(bad, &img, &err) == CK_OK);
        ck_image_release(&img);
        free(e), free(t);
    }
    ck_seq seq;
    ck_err err = {{0}};
    snprintf(bad, sizeof bad, "%s/seq_dpx", g_tmp);
    CHECK(ck_seq_list(&seq, bad, &err) == CK_OK && seq.n == 3 && !strcmp(seq.stems[0], "shot.1001"));
    ck_seq_free(&seq);
    snprintf(cmd, sizeof cmd,
             "%s key --image %s/seq_dpx %s --video-out prores --out %s/out_dpx > %s/seq.log 2>&1 && "
             "%s key --image %s/seq_png %s --out %s/out_png >> %s/seq.log 2>&1 && test $(ls %s/out_dpx/Matte | wc -l) -eq 3",
             bin, g_tmp, common, g_tmp, g_tmp, bin, g_tmp, common, g_tmp, g_tmp, g_tmp);
    CHECK_MSG(sh(cmd) == 0, "the sequences keyed (see %s/seq.log)", g_tmp);
    int same = 1;
    for (int p = 0; p < 4; p++) {
        static const char *dirs[4] = {"Matte", "FG", "Processed", "Comp"};
        snprintf(cmd, sizeof cmd, "diff -r %s/out_dpx/%s %s/out_png/%s > /dev/null", g_tmp, dirs[p], g_tmp, dirs[p]);
        same &= sh(cmd) == 0;
    }
    CHECK_MSG(same, "the DPX sequence keys into other passes than the PNG sequence of the same codes");
    /* its ProRes carries the first frame's timecode at the header's rate */
    snprintf(bad, sizeof bad, "%s/out_dpx/seq_dpx_prores4444.mov", g_tmp);
    AVFormatContext *fmt = NULL;
    char             tc[64] = "";
    AVRational       rate   = {0, 1};
    if (avformat_open_input(&fmt, bad, NULL, NULL) == 0 && avformat_find_stream_info(fmt, NULL) >= 0) {
        for (unsigned i = 0; i < fmt->nb_streams; i++) {
            const AVDictionaryEntry *e = av_dict_get(fmt->streams[i]->metadata, "timecode", NULL, 0);
            if (e && !tc[0]) snprintf(tc, sizeof tc, "%s", e->value);
            if (fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO) rate = fmt->streams[i]->avg_frame_rate;
        }
        avformat_close_input(&fmt);
    }
    CHECK_MSG(!strcmp(tc, "01:02:03:04") && rate.num == 25 * rate.den, "ProRes of the DPX sequence: timecode '%s', %d/%d fps",
              tc, rate.num, rate.den);
    printf("%s     DPX sequence keyed == 16-bit PNG sequence; ProRes timecode %s at %d/%d fps\n",
           same ? "OK" : "NOT OK", tc, rate.num, rate.den);
    /* a truncated frame: exit 1, the file named */
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/seq_cut && cp %s/seq_dpx/shot.1001.dpx %s/seq_cut/ && head -c 3000 %s/seq_dpx/shot.1002.dpx > "
             "%s/seq_cut/shot.1002.dpx && %s key --image %s/seq_cut %s --out %s/out_cut > %s/cut.log 2>&1; test $? -eq 1 && "
             "grep -q 'shot.1002.dpx: truncated DPX' %s/cut.log && test ! -e %s/out_cut/Matte/shot.1002.exr",
             g_tmp, g_tmp, g_tmp, g_tmp, g_tmp, bin, g_tmp, common, g_tmp, g_tmp, g_tmp, g_tmp);
    CHECK_MSG(sh(cmd) == 0, "a truncated DPX frame: exit 1 naming it (see %s/cut.log)", g_tmp);
    free(b);
    return test_summary();
}
#endif
