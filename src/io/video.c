/* Video decode/encode with FFmpeg's libraries (see video.h). */
#include "ckey_io.h"
#include "core/check.h"
#include "io/image.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/timecode.h>
#include <libswscale/swscale.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* FFmpeg's own chatter (encoder banners, probe notes) is not for our users; errors come back as statuses. */
static void quiet_ffmpeg(void) {
    static int done;
    if (!done) av_log_set_level(AV_LOG_FATAL), done = 1; /* ckey reports the failure itself, naming the file */
}

static const char *averr(int e, char *buf) {
    av_strerror(e, buf, AV_ERROR_MAX_STRING_SIZE);
    return buf;
}

/* av_d2q keeps rates such as 30000/1001 exact, which the timecode checks need */
static AVRational rate_of(double fps) { return av_d2q(fps > 0 ? fps : 24.0, 100000); }

int ck_video_timecode_at(const char *start, double fps, int frame, char out[16]) {
    out[0] = '\0';
    /* "HH:MM:SS:FF", or ';' / '.' before FF for drop-frame, the forms FFmpeg's tags use */
    if (!start || strlen(start) != 11 || start[2] != ':' || start[5] != ':' ||
        (start[8] != ':' && start[8] != ';' && start[8] != '.'))
        return 0;
    for (int i = 0; i < 11; i++)
        if (i % 3 != 2 && !isdigit((unsigned char)start[i])) return 0;
    const int   mm = atoi(start + 3), ss = atoi(start + 6), ff = atoi(start + 9);
    AVTimecode  tc;
    char        buf[AV_TIMECODE_STR_SIZE];
    quiet_ffmpeg(); /* av_timecode's complaints (drop-frame at 25 fps) are ours to word */
    if (mm > 59 || ss > 59 || frame < 0 || av_timecode_init_from_string(&tc, rate_of(fps), start, NULL) < 0 ||
        ff >= (int)tc.fps)
        return 0;
    av_timecode_make_string(&tc, buf, frame);
    if (strlen(buf) != 11) return 0; /* past 99 hours */
    memcpy(out, buf, 12);
    return 1;
}

/* ---------------------------------------------------------------- reading */

struct ck_video_reader {
    AVFormatContext   *fmt;
    AVCodecContext    *dec;
    AVPacket          *pkt;
    AVFrame           *frame;
    struct SwsContext *sws;
    int                stream, w, h, draining, sws_ch;
    int                sws_space, sws_full; /* the YUV matrix and range the conversion is set up for; -1: none */
    double             fps;
    uint16_t          *rgb16; /* (h, w, 4) */
    char               timecode[16];
    char               path[1024];
};

int ck_video_probe(const char *path) {
    quiet_ffmpeg();
    AVFormatContext *fmt = NULL;
    if (avformat_open_input(&fmt, path, NULL, NULL) < 0) return 0;
    int ok = avformat_find_stream_info(fmt, NULL) >= 0 &&
             av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0) >= 0 &&
             strcmp(fmt->iformat->name, "png_pipe") && strcmp(fmt->iformat->name, "jpeg_pipe") &&
             strcmp(fmt->iformat->name, "exr_pipe") && strcmp(fmt->iformat->name, "dpx_pipe") &&
             strcmp(fmt->iformat->name, "tiff_pipe") && strcmp(fmt->iformat->name, "image2");
    avformat_close_input(&fmt);
    return ok;
}

ck_status ck_video_open(ck_video_reader **out, const char *path, ck_err *err) {
    char             eb[AV_ERROR_MAX_STRING_SIZE];
    quiet_ffmpeg();
    ck_video_reader *r = calloc(1, sizeof *r);
    *out               = NULL;
    if (!r) return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    snprintf(r->path, sizeof r->path, "%s", path);
    int e = avformat_open_input(&r->fmt, path, NULL, NULL);
    if (e < 0) {
        free(r);
        return ck__fail(err, CK_STATUS_EIO, "%s: cannot open video: %s", path, averr(e, eb));
    }
    const AVCodec *codec = NULL;
    if ((e = avformat_find_stream_info(r->fmt, NULL)) < 0 ||
        (r->stream = av_find_best_stream(r->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0)) < 0) {
        ck_video_close(r);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: no decodable video stream", path);
    }
    AVStream *st = r->fmt->streams[r->stream];
    r->dec       = avcodec_alloc_context3(codec);
    if (!r->dec || avcodec_parameters_to_context(r->dec, st->codecpar) < 0 || avcodec_open2(r->dec, codec, NULL) < 0) {
        ck_video_close(r);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: cannot open the %s decoder", path, codec ? codec->name : "?");
    }
    r->w = r->dec->width, r->h = r->dec->height;
    if (r->w <= 0 || r->h <= 0 || r->w > 32768 || r->h > 32768) {
        const int w = r->w, h = r->h;
        ck_video_close(r);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: implausible frame size %dx%d", path, w, h);
    }
    const AVRational fr = av_guess_frame_rate(r->fmt, st, NULL);
    r->fps              = fr.num > 0 && fr.den > 0 ? av_q2d(fr) : 24.0;
    r->sws_space = r->sws_full = -1;
    /* the start timecode: the video stream's tag, the container's, or a tmcd track's (the MOV demuxer
     * copies it to the video stream it belongs to, but not every version or container does) */
    const AVDictionaryEntry *tc = av_dict_get(st->metadata, "timecode", NULL, 0);
    if (!tc) tc = av_dict_get(r->fmt->metadata, "timecode", NULL, 0);
    for (unsigned i = 0; !tc && i < r->fmt->nb_streams; i++) tc = av_dict_get(r->fmt->streams[i]->metadata, "timecode", NULL, 0);
    if (tc) ck_video_timecode_at(tc->value, r->fps, 0, r->timecode);
    r->pkt              = av_packet_alloc();
    r->frame            = av_frame_alloc();
    r->rgb16            = malloc(sizeof(uint16_t) * 4 * (size_t)r->w * r->h);
    if (!r->pkt || !r->frame || !r->rgb16) {
        ck_video_close(r);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    }
    *out = r;
    return CK_OK;
}

int ck_video_count_frames_ex(const char *path, int *declared, int *damaged) {
    quiet_ffmpeg();
    *declared = 0, *damaged = 0;
    AVFormatContext *fmt = NULL;
    if (avformat_open_input(&fmt, path, NULL, NULL) < 0) return -1;
    int n = -1, s = -1;
    if (avformat_find_stream_info(fmt, NULL) >= 0 && (s = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0)) >= 0) {
        const AVStream *st = fmt->streams[s];
        const int64_t   nb = st->nb_frames;
        *declared          = nb > 0 && nb < 100000000 ? (int)nb : 0;
        /* Matroska and others store no frame count but a duration in their header: its frames at the
         * stream's rate (not a duration guessed from the bit rate, which a cut file also changes) */
        double secs = 0;
        if (st->duration != AV_NOPTS_VALUE && st->duration > 0) secs = st->duration * av_q2d(st->time_base);
        else if (fmt->duration != AV_NOPTS_VALUE && fmt->duration > 0 &&
                 fmt->duration_estimation_method != AVFMT_DURATION_FROM_BITRATE)
            secs = fmt->duration / (double)AV_TIME_BASE;
        const AVRational fr = st->avg_frame_rate.num > 0 && st->avg_frame_rate.den > 0 ? st->avg_frame_rate
                                                                                       : st->r_frame_rate;
        const double est = secs > 0 && fr.num > 0 && fr.den > 0 ? secs * av_q2d(fr) + 0.5 : 0;
        if (!*declared && est >= 1 && est < 1e8) *declared = -(int)est; /* negative: from the duration */
        AVPacket *pkt    = av_packet_alloc();
        int       e      = 0;
        n                = 0;
        while (pkt && (e = av_read_frame(fmt, pkt)) >= 0) {
            n += pkt->stream_index == s;
            av_packet_unref(pkt);
        }
        *damaged = pkt && e != AVERROR_EOF;
        av_packet_free(&pkt);
        if (*declared < 0) { /* a duration's frame count is an estimate: short by more than 2 % (≥ 2 frames) */
            const int want = -*declared, slack = want / 50 > 1 ? want / 50 : 1;
            *declared      = want > n + slack ? want : 0;
        }
    }
    avformat_close_input(&fmt);
    return n;
}

int ck_video_count_frames(const char *path) {
    int declared, damaged;
    return ck_video_count_frames_ex(path, &declared, &damaged);
}

int ck_video_looks_like_container(const char *path) {
    unsigned char b[12] = {0};
    FILE         *f     = fopen(path, "rb");
    if (!f) return 0;
    const size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    return (n >= 8 && !memcmp(b + 4, "ftyp", 4)) || (n >= 4 && !memcmp(b, "\x1a\x45\xdf\xa3", 4)) ||
           (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "AVI ", 4)) ||
           (n >= 8 && (!memcmp(b + 4, "moov", 4) || !memcmp(b + 4, "mdat", 4) || !memcmp(b + 4, "wide", 4)));
}

int         ck_video_width(const ck_video_reader *r) { return r->w; }
int         ck_video_height(const ck_video_reader *r) { return r->h; }
double      ck_video_fps(const ck_video_reader *r) { return r->fps; }
const char *ck_video_timecode(const ck_video_reader *r) { return r->timecode; }

/* YUV frames are converted with the matrix and range their stream is tagged with: swscale's default
 * (BT.601, limited range unless a yuvj format) is right only for untagged SD material. */
static void set_source_colours(ck_video_reader *r, struct SwsContext *was) {
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)r->frame->format);
    if (!d || (d->flags & AV_PIX_FMT_FLAG_RGB) || d->nb_components < 3) return;
    const int space = r->frame->colorspace; /* AVCOL_SPC_* equals SWS_CS_* where both exist; others: default */
    const int full  = r->frame->color_range == AVCOL_RANGE_JPEG || !strncmp(d->name, "yuvj", 4);
    if (r->sws == was && space == r->sws_space && full == r->sws_full) return;
    sws_setColorspaceDetails(r->sws, sws_getCoefficients(space), full, sws_getCoefficients(SWS_CS_DEFAULT), 1, 0,
                             1 << 16, 1 << 16);
    r->sws_space = space, r->sws_full = full;
}

ck_status ck_video_read(ck_video_reader *r, float *pixels, int channels, int *eof, ck_err *err) {
    char eb[AV_ERROR_MAX_STRING_SIZE];
    *eof = 0;
    for (;;) {
        int e = avcodec_receive_frame(r->dec, r->frame);
        if (e == 0) break;
        if (e == AVERROR_EOF) {
            *eof = 1;
            return CK_OK;
        }
        if (e != AVERROR(EAGAIN)) return ck__fail(err, CK_STATUS_EFORMAT, "%s: decode error: %s", r->path, averr(e, eb));
        if (r->draining) {
            *eof = 1;
            return CK_OK;
        }
        e = av_read_frame(r->fmt, r->pkt);
        if (e == AVERROR_EOF) {
            r->draining = 1;
            avcodec_send_packet(r->dec, NULL);
            continue;
        }
        if (e < 0) return ck__fail(err, CK_STATUS_EFORMAT, "%s: read error (truncated?): %s", r->path, averr(e, eb));
        if (r->pkt->stream_index == r->stream) {
            e = avcodec_send_packet(r->dec, r->pkt);
            if (e < 0 && e != AVERROR(EAGAIN)) {
                av_packet_unref(r->pkt);
                return ck__fail(err, CK_STATUS_EFORMAT, "%s: corrupt packet: %s", r->path, averr(e, eb));
            }
        }
        av_packet_unref(r->pkt);
    }
    if (r->frame->width != r->w || r->frame->height != r->h) {
        av_frame_unref(r->frame);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: frame size changes mid-stream", r->path);
    }
    struct SwsContext *was = r->sws;
    r->sws = sws_getCachedContext(r->sws, r->w, r->h, (enum AVPixelFormat)r->frame->format, r->w, r->h,
                                  AV_PIX_FMT_RGBA64LE, SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, NULL, NULL,
                                  NULL);
    if (!r->sws) {
        av_frame_unref(r->frame);
        return ck__fail(err, CK_STATUS_EFORMAT, "%s: unsupported pixel format", r->path);
    }
    set_source_colours(r, was);
    uint8_t  *dst[4]    = {(uint8_t *)r->rgb16, NULL, NULL, NULL};
    const int stride[4] = {r->w * 8, 0, 0, 0};
    sws_scale(r->sws, (const uint8_t *const *)r->frame->data, r->frame->linesize, 0, r->h, dst, stride);
    const int has_alpha = av_pix_fmt_desc_get((enum AVPixelFormat)r->frame->format)->flags & AV_PIX_FMT_FLAG_ALPHA;
    av_frame_unref(r->frame);
    const size_t n = (size_t)r->w * r->h;
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < channels; c++)
            pixels[i * channels + c] =
                c == 3 && !has_alpha ? 1.0f : (float)r->rgb16[i * 4 + c] * (1.0f / 65535.0f);
    return CK_OK;
}

void ck_video_close(ck_video_reader *r) {
    if (!r) return;
    sws_freeContext(r->sws);
    av_frame_free(&r->frame);
    av_packet_free(&r->pkt);
    avcodec_free_context(&r->dec);
    avformat_close_input(&r->fmt);
    free(r->rgb16);
    free(r);
}

/* ---------------------------------------------------------------- writing */

struct ck_video_writer {
    AVFormatContext   *fmt;
    AVCodecContext    *enc;
    AVStream          *st;
    AVFrame           *frame;
    AVPacket          *pkt;
    struct SwsContext *sws;
    uint16_t          *rgba16;
    int                w, h;
    int64_t            pts;
    char               path[1024], tmp[1100];
};

static ck_status drain(ck_video_writer *wr, int flush, ck_err *err) {
    char eb[AV_ERROR_MAX_STRING_SIZE];
    int  e = avcodec_send_frame(wr->enc, flush ? NULL : wr->frame);
    if (e < 0) return ck__fail(err, CK_STATUS_EIO, "%s: encode error: %s", wr->path, averr(e, eb));
    for (;;) {
        e = avcodec_receive_packet(wr->enc, wr->pkt);
        if (e == AVERROR(EAGAIN) || e == AVERROR_EOF) return CK_OK;
        if (e < 0) return ck__fail(err, CK_STATUS_EIO, "%s: encode error: %s", wr->path, averr(e, eb));
        /* one frame long: without a duration, MP4/MOV give the last sample none and readers drop it */
        if (wr->pkt->duration <= 0) wr->pkt->duration = 1;
        av_packet_rescale_ts(wr->pkt, wr->enc->time_base, wr->st->time_base);
        wr->pkt->stream_index = wr->st->index;
        e                     = av_interleaved_write_frame(wr->fmt, wr->pkt);
        if (e < 0) return ck__fail(err, CK_STATUS_EIO, "%s: write error: %s", wr->path, averr(e, eb));
    }
}

ck_status ck_video_writer_open(ck_video_writer **out, const char *path, ck_video_codec codec, int w, int h,
                               double fps, ck_err *err) {
    ck_video_meta meta = {fps, ""};
    return ck_video_writer_open_meta(out, path, codec, w, h, &meta, err);
}

ck_status ck_video_writer_open_meta(ck_video_writer **out, const char *path, ck_video_codec codec, int w, int h,
                                    const ck_video_meta *meta, ck_err *err) {
    char             eb[AV_ERROR_MAX_STRING_SIZE];
    quiet_ffmpeg();
    *out                = NULL;
    const double fps    = meta && meta->fps > 0 ? meta->fps : 24.0;
    char         tc[16] = "";
    if (meta && meta->timecode[0] && !ck_video_timecode_at(meta->timecode, fps, 0, tc))
        return ck__fail(err, CK_STATUS_EINVAL, "%s: '%s' is not a start timecode at %.3f fps (HH:MM:SS:FF)", path,
                        meta->timecode, fps);
    ck_video_writer *wr = calloc(1, sizeof *wr);
    if (!wr) return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    wr->w = w, wr->h = h;
    snprintf(wr->path, sizeof wr->path, "%s", path);
    /* hidden temporary beside the destination, same extension so the container is guessed right */
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    const int   dirlen = slash ? (int)(slash - path) + 1 : 0;
    snprintf(wr->tmp, sizeof wr->tmp, "%.*s.%s.partial%d%s", dirlen, path, slash ? slash + 1 : path, (int)getpid(),
             dot ? dot : "");
    static const char *names[3] = {"prores_ks", "ffv1", "libx264"};
    static const enum AVPixelFormat pix[3] = {AV_PIX_FMT_YUVA444P10LE, AV_PIX_FMT_GBRAP16LE, AV_PIX_FMT_YUV420P};
    const AVCodec *c = avcodec_find_encoder_by_name(names[codec]);
    if (!c) {
        free(wr);
        return ck__fail(err, CK_STATUS_EUNSUPPORTED, "%s: this FFmpeg has no %s encoder", path, names[codec]);
    }
    int e = avformat_alloc_output_context2(&wr->fmt, NULL, NULL, wr->tmp);
    if (e < 0 || !wr->fmt) {
        free(wr);
        return ck__fail(err, CK_STATUS_EINVAL, "%s: no container for this extension", path);
    }
    wr->st  = avformat_new_stream(wr->fmt, NULL);
    wr->enc = avcodec_alloc_context3(c);
    if (!wr->st || !wr->enc) {
        ck_video_writer_close(wr, 1, NULL);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    }
    AVRational rate   = rate_of(fps);
    wr->enc->width    = w;
    wr->enc->height   = h;
    wr->enc->pix_fmt  = pix[codec];
    wr->enc->time_base = av_inv_q(rate);
    wr->enc->framerate = rate;
    /* display-referred sRGB / Rec.709 frames (video.h); ProRes's frame header has no sRGB transfer code */
    wr->enc->color_primaries = AVCOL_PRI_BT709;
    wr->enc->color_trc       = codec == CK_VIDEO_PRORES4444 ? AVCOL_TRC_BT709 : AVCOL_TRC_IEC61966_2_1;
    wr->enc->colorspace      = codec == CK_VIDEO_FFV1 ? AVCOL_SPC_RGB : AVCOL_SPC_BT709;
    wr->enc->color_range     = codec == CK_VIDEO_FFV1 ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
    wr->st->avg_frame_rate   = rate; /* the MOV muxer's tmcd track counts in it */
    if (tc[0]) {
        /* on the stream (MOV/MP4 write a tmcd track from it) and the container (Matroska's tags) */
        av_dict_set(&wr->st->metadata, "timecode", tc, 0);
        av_dict_set(&wr->fmt->metadata, "timecode", tc, 0);
    }
    if (wr->fmt->oformat->flags & AVFMT_GLOBALHEADER) wr->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    AVDictionary *opts = NULL;
    if (codec == CK_VIDEO_PRORES4444) {
        av_dict_set(&opts, "profile", "4444", 0);
        av_dict_set(&opts, "alpha_bits", "16", 0);
        av_dict_set(&opts, "vendor", "apl0", 0);
    } else if (codec == CK_VIDEO_FFV1) {
        av_dict_set(&opts, "level", "3", 0);
    } else {
        av_dict_set(&opts, "crf", "18", 0);
        av_dict_set(&opts, "preset", "medium", 0);
    }
    e = avcodec_open2(wr->enc, c, &opts);
    av_dict_free(&opts);
    if (e < 0 || avcodec_parameters_from_context(wr->st->codecpar, wr->enc) < 0) {
        ck_video_writer_close(wr, 1, NULL);
        return ck__fail(err, CK_STATUS_EIO, "%s: cannot open the %s encoder: %s", path, names[codec], averr(e, eb));
    }
    wr->st->time_base = wr->enc->time_base;
    if ((e = avio_open(&wr->fmt->pb, wr->tmp, AVIO_FLAG_WRITE)) < 0 || (e = avformat_write_header(wr->fmt, NULL)) < 0) {
        ck_video_writer_close(wr, 1, NULL);
        return ck__fail(err, CK_STATUS_EIO, "%s: cannot write: %s", path, averr(e, eb));
    }
    wr->frame  = av_frame_alloc();
    wr->pkt    = av_packet_alloc();
    wr->rgba16 = malloc(sizeof(uint16_t) * 4 * (size_t)w * h);
    if (!wr->frame || !wr->pkt || !wr->rgba16) {
        ck_video_writer_close(wr, 1, NULL);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    }
    wr->frame->format = wr->enc->pix_fmt, wr->frame->width = w, wr->frame->height = h;
    /* prores_ks writes its frame header's colour fields from the frame, not from the encoder */
    wr->frame->color_primaries = wr->enc->color_primaries, wr->frame->color_trc = wr->enc->color_trc;
    wr->frame->colorspace = wr->enc->colorspace, wr->frame->color_range = wr->enc->color_range;
    if (av_frame_get_buffer(wr->frame, 0) < 0) {
        ck_video_writer_close(wr, 1, NULL);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    }
    wr->sws = sws_getContext(w, h, AV_PIX_FMT_RGBA64LE, w, h, wr->enc->pix_fmt,
                             SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INP, NULL, NULL, NULL);
    if (!wr->sws) {
        ck_video_writer_close(wr, 1, NULL);
        return ck__fail(err, CK_STATUS_EUNSUPPORTED, "%s: no pixel conversion to %s", path,
                        av_get_pix_fmt_name(wr->enc->pix_fmt));
    }
    /* the matrix and range the stream is tagged with (swscale would use BT.601); the source is full-range RGB */
    const int *bt709 = sws_getCoefficients(SWS_CS_ITU709);
    sws_setColorspaceDetails(wr->sws, bt709, 1, bt709, wr->enc->color_range == AVCOL_RANGE_JPEG, 0, 1 << 16, 1 << 16);
    *out = wr;
    return CK_OK;
}

ck_status ck_video_write(ck_video_writer *wr, const float *rgba, ck_err *err) {
    const size_t n = (size_t)wr->w * wr->h * 4;
    for (size_t i = 0; i < n; i++) {
        const float v = rgba[i] < 0 ? 0 : rgba[i] > 1 ? 1 : rgba[i];
        wr->rgba16[i] = (uint16_t)(v * 65535.0f + 0.5f);
    }
    if (av_frame_make_writable(wr->frame) < 0) return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", wr->path);
    const uint8_t *src[4]    = {(const uint8_t *)wr->rgba16, NULL, NULL, NULL};
    const int      stride[4] = {wr->w * 8, 0, 0, 0};
    sws_scale(wr->sws, src, stride, 0, wr->h, wr->frame->data, wr->frame->linesize);
    if (wr->enc->pix_fmt == AV_PIX_FMT_YUVA444P10LE) {
        /* the alpha plane rounded to the nearest 10-bit code here (swscale truncates): the stored matte is
         * then within half a code of the input */
        for (int y = 0; y < wr->h; y++) {
            uint16_t *a = (uint16_t *)(wr->frame->data[3] + (size_t)y * wr->frame->linesize[3]);
            for (int x = 0; x < wr->w; x++) {
                const float v = rgba[((size_t)y * wr->w + x) * 4 + 3];
                a[x]          = (uint16_t)((v < 0 ? 0 : v > 1 ? 1 : v) * 1023.0f + 0.5f);
            }
        }
    }
    wr->frame->pts = wr->pts++;
    return drain(wr, 0, err);
}

ck_status ck_video_writer_close(ck_video_writer *wr, int abort, ck_err *err) {
    if (!wr) return CK_OK;
    ck_status st = CK_OK;
    if (!abort && wr->enc && wr->fmt && wr->fmt->pb) {
        st = drain(wr, 1, err);
        if (st == CK_OK && av_write_trailer(wr->fmt) < 0) st = ck__fail(err, CK_STATUS_EIO, "%s: cannot finish the file", wr->path);
    }
    if (wr->fmt && wr->fmt->pb) avio_closep(&wr->fmt->pb);
    avformat_free_context(wr->fmt);
    avcodec_free_context(&wr->enc);
    av_frame_free(&wr->frame);
    av_packet_free(&wr->pkt);
    sws_freeContext(wr->sws);
    free(wr->rgba16);
    if (!abort && st == CK_OK && !ck_fsync_path(wr->tmp, 0)) st = ck__fail(err, CK_STATUS_EIO, "%s: cannot flush to disk", wr->path);
    if (!abort && st == CK_OK) {
        if (rename(wr->tmp, wr->path) != 0) st = ck__fail(err, CK_STATUS_EIO, "%s: cannot move into place", wr->path);
        else ck_fsync_parent(wr->path);
    } else {
        remove(wr->tmp);
        if (st == CK_OK) st = CK_STATUS_EIO;
    }
    free(wr);
    return abort ? CK_OK : st;
}
