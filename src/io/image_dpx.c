/* DPX plates (SMPTE 268M, the film-scan format) through FFmpeg's DPX decoder: RGB, RGBA and luma, 8, 10, 12
 * or 16 bits, either byte order. Integer code values are scaled to [0,1] by the largest code (v / 1023 for
 * 10 bits), like 16-bit PNG, and returned as stored: a log-encoded scan (transfer "printing density" or
 * "logarithmic") stays log, which is said once per process. Width and height come from the header here, so
 * the pixel limit is checked before the image data is read or decoded; a file shorter than its header says is
 * refused as truncated.
 *
 * Header fields used (byte offsets; the magic "SDPX" marks big-endian files, "XPDS" little-endian ones):
 *   0 magic, 4 offset to the image data, 16 total file size;
 *   768 image information header: 770 number of image elements (u16), 772 pixels per line, 776 lines per
 *       element; element 0 from 780: 801 transfer characteristic (FFmpeg reads the layout fields);
 *   1664 film header (when the data starts after 1728): 1724 frame rate (f32);
 *   1920 television header (when the data starts after 1944): 1920 SMPTE timecode (BCD, 0xFFFFFFFF: none),
 *        1940 temporal sampling rate (f32). */
#include "io/image_buf.h"

#include <libavcodec/avcodec.h>
#include <libavutil/pixdesc.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DPX_HEADER_MIN 1664 /* the generic and image headers: every DPX has them */
#define DPX_HEADER_MAX 2048 /* with the film and television headers */
/* Headers plus user data: the format allows 1 MiB of user data; more is a damaged offset. */
#define DPX_MAX_DATA_OFFSET (DPX_HEADER_MAX + (1 << 20) + 4096)

typedef struct dpx_header {
    int      big_endian;
    uint32_t data_offset, file_size, width, height;
    int      elements, transfer;
    uint32_t timecode; /* 0xFFFFFFFF: none */
    double   fps;      /* 0: not stated */
} dpx_header;

static uint32_t rd32(const uint8_t *p, int be) {
    return be ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
              : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
static uint16_t rd16(const uint8_t *p, int be) { return be ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]); }

/* A frame rate field: an IEEE float, 0xFFFFFFFF (NaN) when undefined. */
static double rate_field(const uint8_t *p, int be) {
    const uint32_t bits = rd32(p, be);
    float          f;
    memcpy(&f, &bits, 4);
    return isfinite(f) && f >= 1.0f && f <= 1000.0f ? f : 0.0;
}

/* The reason a header is refused, formatted into why[256] (nothing logged: ck__dpx_shot_info probes quietly). */
static ck_status refuse(char *why, ck_status st, const char *fmt, ...) CK_PRINTF(3, 4);
static ck_status refuse(char *why, ck_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, 256, fmt, ap);
    va_end(ap);
    return st;
}

/* Reads and checks the header of `f` (size bytes long); why[256] names the file and the problem. */
static ck_status parse_header(FILE *f, long long size, const char *path, dpx_header *h, char *why) {
    uint8_t b[DPX_HEADER_MAX] = {0};
    memset(h, 0, sizeof *h);
    const size_t got = fread(b, 1, sizeof b, f);
    if (got < DPX_HEADER_MIN)
        return refuse(why, CK_STATUS_EFORMAT, "%s: truncated DPX: %zu bytes, shorter than a DPX header (%d)", path, got,
                      DPX_HEADER_MIN);
    if (!memcmp(b, "SDPX", 4)) h->big_endian = 1;
    else if (memcmp(b, "XPDS", 4)) return refuse(why, CK_STATUS_EFORMAT, "%s: not a DPX file", path);
    const int be   = h->big_endian;
    h->data_offset = rd32(b + 4, be);
    h->file_size   = rd32(b + 16, be);
    h->elements    = rd16(b + 770, be);
    h->width       = rd32(b + 772, be);
    h->height      = rd32(b + 776, be);
    h->transfer    = b[801];
    h->timecode    = h->data_offset >= 1924 && got >= 1924 ? rd32(b + 1920, be) : 0xFFFFFFFFu;
    if (h->data_offset >= 1728 && got >= 1728) h->fps = rate_field(b + 1724, be);
    if (h->fps == 0 && h->data_offset >= 1944 && got >= 1944) h->fps = rate_field(b + 1940, be);
    if (h->width < 1 || h->height < 1 || h->width > CK_IMAGE_MAX_DIM || h->height > CK_IMAGE_MAX_DIM)
        return refuse(why, CK_STATUS_EFORMAT, "%s: DPX size %ux%u outside 1..%d", path, h->width, h->height,
                      CK_IMAGE_MAX_DIM);
    const long long px = (long long)h->width * h->height;
    if (px > ck_image_max_pixels())
        return refuse(why, CK_STATUS_EFORMAT,
                      "%s: a %ux%u image (%.1f Mpx) is larger than the limit of %.1f Mpx (CKEY_MAX_PIXELS raises it)",
                      path, h->width, h->height, px / 1e6, ck_image_max_pixels() / 1e6);
    if (h->elements < 1 || h->elements > 8)
        return refuse(why, CK_STATUS_EFORMAT, "%s: corrupt DPX header: %d image elements (1..8)", path, h->elements);
    if (h->data_offset < DPX_HEADER_MIN || h->data_offset > DPX_MAX_DATA_OFFSET)
        return refuse(why, CK_STATUS_EFORMAT, "%s: corrupt DPX header: image data at byte %u", path, h->data_offset);
    if ((long long)h->data_offset >= size || (h->file_size > 0 && (long long)h->file_size > size))
        return refuse(why, CK_STATUS_EFORMAT, "%s: truncated DPX: %lld bytes, the header says %u", path, size,
                      h->file_size > h->data_offset ? h->file_size : h->data_offset + 1);
    return CK_OK;
}

static const char *transfer_name(int t) {
    switch (t) {
    case 1: return "printing density (log)";
    case 3: return "logarithmic";
    default: return NULL;
    }
}

/* The packet FFmpeg decodes: the file up to the end of the largest picture the header allows (16-bit RGBA
 * with row padding; 8 bytes a pixel), so a file padded with gigabytes costs no more than its picture. */
static ck_status read_packet(FILE *f, long long size, const dpx_header *h, const char *path, AVPacket *pkt,
                             ck_err *err) {
    const long long most = (long long)h->data_offset + (long long)h->height * ((long long)h->width * 8 + 8);
    const long long n    = size < most ? size : most;
    if (n > INT_MAX - AV_INPUT_BUFFER_PADDING_SIZE) /* a packet's size is an int */
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: a DPX of %lld bytes is too large to decode", path, n);
    if (av_new_packet(pkt, (int)n) < 0)
        return ck__fail(err, CK_STATUS_EOOM, "%s: cannot allocate %lld bytes for the DPX file", path, n);
    if (fseek(f, 0, SEEK_SET) != 0 || fread(pkt->data, 1, (size_t)n, f) != (size_t)n)
        return ck__fail(err, CK_STATUS_EIO, "%s: read error", path);
    return CK_OK;
}

static ck_status decode(const AVPacket *pkt, const char *path, AVFrame *frame, ck_err *err) {
    static atomic_int quiet;
    if (!atomic_exchange(&quiet, 1)) av_log_set_level(AV_LOG_FATAL); /* as video.c: ckey reports, naming the file */
    const AVCodec  *codec = avcodec_find_decoder(AV_CODEC_ID_DPX);
    AVCodecContext *dec   = codec ? avcodec_alloc_context3(codec) : NULL;
    if (!dec) return ck__fail(err, CK_STATUS_EUNSUPPORTED, "%s: this FFmpeg has no DPX decoder", path);
    dec->thread_count = 1; /* sequences decode several files at once, one per reader thread */
    char eb[AV_ERROR_MAX_STRING_SIZE] = "";
    int  e                            = avcodec_open2(dec, codec, NULL);
    if (e >= 0) e = avcodec_send_packet(dec, pkt);
    if (e >= 0) e = avcodec_receive_frame(dec, frame);
    avcodec_free_context(&dec);
    if (e < 0) {
        av_strerror(e, eb, sizeof eb);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: corrupt or truncated DPX (FFmpeg's decoder: %s)", path, eb);
    }
    return CK_OK;
}

/* The decoded frame's components into img (R,G,B[,A] or grey[,alpha]), each code / (2^depth - 1). */
static ck_status convert(const AVFrame *frame, const char *path, ck_image *img, const ck__image_dst *dst,
                         int *bit_depth, ck_err *err) {
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)frame->format);
    const int rgb = d && (d->flags & AV_PIX_FMT_FLAG_RGB), grey = d && d->nb_components <= 2 && !rgb;
    if (!d || (!rgb && !grey) || (d->flags & (AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BITSTREAM)) ||
        d->comp[0].depth > 16)
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: DPX decoded as %s, which is not supported (RGB, RGBA or luma)",
                        path, d ? d->name : "?");
    const int C = d->nb_components, W = frame->width, H = frame->height;
    ck_status st = ck__image_alloc(img, W, H, C, dst, path, err);
    if (st != CK_OK) return st;
    uint16_t *line = malloc(sizeof(uint16_t) * (size_t)W); /* (W) codes of one component of one row */
    if (!line) return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    for (int c = 0; c < C; c++) {
        /* a float32 division, as the PNG reader's: equal codes give equal plates */
        const float max = (float)((1u << d->comp[c].depth) - 1u);
        for (int y = 0; y < H; y++) {
            av_read_image_line2(line, (const uint8_t **)frame->data, frame->linesize, d, 0, y, c, W, 0, 2);
            float *out = img->data + (size_t)y * W * C + c;
            for (int x = 0; x < W; x++) out[(size_t)x * C] = (float)line[x] / max;
        }
    }
    free(line);
    if (bit_depth) *bit_depth = d->comp[0].depth;
    return CK_OK;
}

ck_status ck__dpx_read(const char *path, ck_image *img, const ck__image_dst *dst, int *bit_depth, ck_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return ck__fail(err, CK_STATUS_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    dpx_header  h;
    char        why[256];
    ck_status   st = fstat(fileno(f), &sb) == 0 ? CK_OK : ck__fail(err, CK_STATUS_EIO, "%s: %s", path, strerror(errno));
    if (st == CK_OK && (st = parse_header(f, (long long)sb.st_size, path, &h, why)) != CK_OK) ck__fail(err, st, "%s", why);
    AVPacket *pkt   = av_packet_alloc();
    AVFrame  *frame = av_frame_alloc();
    if (st == CK_OK && (!pkt || !frame)) st = ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    if (st == CK_OK) st = read_packet(f, (long long)sb.st_size, &h, path, pkt, err);
    fclose(f);
    if (st == CK_OK) st = decode(pkt, path, frame, err);
    if (st == CK_OK && (frame->width != (int)h.width || frame->height != (int)h.height))
        st = ck__fail(err, CK_STATUS_EFORMAT, "%s: corrupt DPX: decoded %dx%d, the header says %ux%u", path,
                      frame->width, frame->height, h.width, h.height);
    if (st == CK_OK) st = convert(frame, path, img, dst, bit_depth, err);
    if (st == CK_OK && transfer_name(h.transfer)) {
        static atomic_int said;
        if (!atomic_exchange(&said, 1))
            CK_LOG_WARN("%s: the DPX header says the values are %s; they are keyed as stored (not linearized)", path,
                        transfer_name(h.transfer));
    }
    av_frame_free(&frame);
    av_packet_free(&pkt);
    return st;
}

int ck__dpx_shot_info(const char *path, uint32_t *timecode, double *fps) {
    *timecode = 0xFFFFFFFFu, *fps = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    struct stat sb;
    dpx_header  h;
    char        why[256]; /* a bad header is reported when the frame is read, not here */
    const int   ok = fstat(fileno(f), &sb) == 0 && parse_header(f, (long long)sb.st_size, path, &h, why) == CK_OK;
    fclose(f);
    if (!ok) return 0;
    *timecode = h.timecode, *fps = h.fps;
    return 1;
}
