/* JPEG back end (libjpeg / libjpeg-turbo, jpeglib.h): read 8-bit grayscale and YCbCr/RGB files into
 * float. CMYK/YCCK files are refused with a clear message instead of being decoded with wrong colours.
 *
 * Reference: CorridorKey reads stills with cv2.imread (libjpeg-turbo, default islow IDCT and fancy
 * upsampling) and divides by 255 (model_spec.md §8.2); the same decoder settings here give the same bytes.
 * Rules kept: the library's error_exit never reaches exit(): it longjmps back into jpeg_decode(), and
 * everything to free lives in a struct owned by its caller (no automatic variable is modified between
 * setjmp and longjmp).
 *
 * Strictness: libjpeg decodes damaged files "successfully": it pads missing entropy-coded data with
 * zeros (grey), only warns about corrupt data, and says nothing when a scan is empty or a component or
 * coefficient never arrives (the arithmetic decoder stuffs zeros silently). A 300-byte arithmetic-coded
 * header could so make it decode 36 Mpx of nothing. Here:
 *   - every warning about corrupt or premature data (premature end of file, a marker inside a scan,
 *     bad Huffman/arithmetic codes, extraneous bytes, a lost restart marker, an inconsistent progression)
 *     is an error, wherever it comes (also at the end of the file: a missing EOI means a truncated file);
 *   - before libjpeg starts, a walk over the file's markers (walk_markers) checks that the file ends
 *     with EOI, that no scan is empty, that every component of a sequential file is in some scan, and
 *     that there are at most JPEG_MAX_SCANS scans (each progressive scan is a pass over the whole image);
 *   - after the input is consumed, every coefficient of every component of a progressive file must have
 *     arrived with all its bits (coef_bits).
 * What cannot be checked: an arithmetic-coded scan cut short and closed with a marker (any prefix of an
 * arithmetic code decodes, and the encoder itself drops trailing zero bytes).
 */
#include "io/image_buf.h"

#include <setjmp.h>
#include <stddef.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t first */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h> /* after jpeglib.h: its message list depends on jconfig.h */

/* TurboJPEG's own recommended scan limit (TJPARAM_SCANLIMIT): libjpeg's progressive script has 10 scans,
 * and a file of thousands of tiny scans makes the decoder pass over the image thousands of times. */
#define JPEG_MAX_SCANS 500
/* Images up to this many pixels may have empty scans: the arithmetic coder writes no byte at all for a
 * scan of a single uniform block (libjpeg does this for 8x8 grey images). */
#define JPEG_EMPTY_SCAN_MAX_PIXELS (64 * 64)

/* ---------------------------------------------------------------- marker walk */

/* Buffered reading of the file for the walk (the file is read twice; JPEG frames are small next to
 * their decode time). */
typedef struct jpeg_walk {
    FILE         *f;
    long long     at; /* file offset of buf[pos] */
    size_t        pos, len;
    unsigned char buf[1 << 16];
} jpeg_walk;

static int walk_fill(jpeg_walk *w) {
    if (w->pos < w->len) return 1;
    w->len = fread(w->buf, 1, sizeof w->buf, w->f);
    w->pos = 0;
    return w->len > 0;
}

static int walk_byte(jpeg_walk *w) {
    if (!walk_fill(w)) return -1;
    w->at++;
    return w->buf[w->pos++];
}

static int walk_skip(jpeg_walk *w, size_t n) {
    while (n) {
        if (!walk_fill(w)) return 0;
        size_t k = w->len - w->pos < n ? w->len - w->pos : n;
        w->pos += k, w->at += (long long)k, n -= k;
    }
    return 1;
}

/* Consumes a scan's entropy-coded data up to the marker that ends it (restart markers and stuffed 0xFF 00
 * belong to the scan). Returns that marker's code, or -1 at the end of the file; *data counts the data
 * bytes. */
static int walk_scan(jpeg_walk *w, long long *data) {
    for (;;) {
        if (!walk_fill(w)) return -1;
        const unsigned char *s  = w->buf + w->pos;
        const unsigned char *ff = memchr(s, 0xFF, w->len - w->pos);
        size_t               k  = ff ? (size_t)(ff - s) : w->len - w->pos;
        *data += (long long)k;
        w->pos += k, w->at += (long long)k;
        if (!ff) continue;
        walk_byte(w); /* the 0xFF */
        int c;
        do c = walk_byte(w); /* fill bytes before a marker */
        while (c == 0xFF);
        if (c < 0) return -1;
        if (c == 0x00) (*data)++;                /* a stuffed 0xFF data byte */
        else if (c < 0xD0 || c > 0xD7) return c; /* not a restart marker: the scan ends */
    }
}

static int is_sof(int m) { return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC; }

/* Structural checks before decoding (see the file comment). Returns 1 when the file passes or is something
 * the walk does not model (libjpeg then reports it), 0 with msg set when it must be refused. */
static int walk_markers(FILE *f, char *msg, size_t msg_cap) {
    jpeg_walk *w = malloc(sizeof *w);
    if (!w) return 1; /* libjpeg still checks what it can */
    memset(w, 0, offsetof(jpeg_walk, buf));
    w->f = f;
    int           ok = 1, seen_sof = 0, progressive = 0, n_comps = 0, n_scans = 0;
    long long     pixels = 0;
    unsigned char comp_id[256], in_scan[256] = {0};
    unsigned char body[1024];
    if (walk_byte(w) != 0xFF || walk_byte(w) != 0xD8) goto done; /* not for the walk to judge */
    int m = -1;                                                  /* a marker read by walk_scan */
    for (;;) {
        if (m < 0) {
            int c = walk_byte(w);
            while (c >= 0 && c != 0xFF) c = walk_byte(w); /* junk between segments: libjpeg's warning is fatal */
            while (c == 0xFF) c = walk_byte(w);
            if (c < 0) {
                snprintf(msg, msg_cap, "file ends at byte %lld without an end-of-image marker (truncated)", w->at);
                ok = 0;
                goto done;
            }
            m = c;
        }
        const int marker = m;
        m                = -1;
        if (marker == 0xD9) break;                                       /* EOI */
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue; /* no length field */
        if (marker == 0xD8 || marker == 0x00) goto done;                 /* libjpeg reports these */
        int hi = walk_byte(w), lo = walk_byte(w);
        if (hi < 0 || lo < 0) {
            snprintf(msg, msg_cap, "file ends inside marker 0x%02X at byte %lld (truncated)", marker, w->at);
            ok = 0;
            goto done;
        }
        size_t len = (size_t)(hi << 8 | lo);
        if (len < 2) goto done; /* libjpeg: bogus marker length */
        len -= 2;
        const int keep = is_sof(marker) || marker == 0xDA;
        size_t    got  = 0;
        if (keep)
            while (got < len && got < sizeof body) {
                int c = walk_byte(w);
                if (c < 0) break;
                body[got++] = (unsigned char)c;
            }
        if ((keep && got < (len < sizeof body ? len : sizeof body)) || !walk_skip(w, len - got)) {
            snprintf(msg, msg_cap, "file ends inside marker 0x%02X at byte %lld (truncated)", marker, w->at);
            ok = 0;
            goto done;
        }
        if (is_sof(marker)) {
            if (seen_sof || got < 6 || got < 6 + 3 * (size_t)body[5]) goto done; /* libjpeg reports it */
            seen_sof    = 1;
            progressive = marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE;
            pixels      = (long long)(body[1] << 8 | body[2]) * (body[3] << 8 | body[4]);
            n_comps     = body[5];
            for (int i = 0; i < n_comps; i++) comp_id[i] = body[6 + 3 * i];
        } else if (marker == 0xDA) {
            if (!seen_sof || got < 1 || got < 1 + 2 * (size_t)body[0]) goto done;
            n_scans++;
            for (int i = 0; i < body[0]; i++) in_scan[body[1 + 2 * i]] = 1;
            if (n_scans > JPEG_MAX_SCANS) {
                snprintf(msg, msg_cap, "more than %d scans (a progressive file decodes the image once per scan)",
                         JPEG_MAX_SCANS);
                ok = 0;
                goto done;
            }
            long long data = 0;
            m              = walk_scan(w, &data);
            if (m < 0) {
                snprintf(msg, msg_cap, "file ends at byte %lld inside the entropy-coded data of scan %d (truncated)",
                         w->at, n_scans);
                ok = 0;
                goto done;
            }
            if (data == 0 && pixels > JPEG_EMPTY_SCAN_MAX_PIXELS) {
                snprintf(msg, msg_cap, "scan %d holds no entropy-coded data (ends at byte %lld)", n_scans, w->at);
                ok = 0;
                goto done;
            }
        }
    }
    if (seen_sof && !progressive)
        for (int i = 0; i < n_comps; i++)
            if (!in_scan[comp_id[i]]) {
                snprintf(msg, msg_cap, "component %d (id %d) is in no scan: its data is missing", i + 1, comp_id[i]);
                ok = 0;
                break;
            }
done:
    free(w);
    return ok;
}

/* ---------------------------------------------------------------- decoding */

typedef struct jpeg_io {
    struct jpeg_error_mgr         mgr; /* first member: libjpeg hands us &mgr as cinfo->err */
    jmp_buf                       jb;
    const char                   *path;
    ck_err                       *err;
    const ck__image_dst          *dst;
    FILE                         *f;
    struct jpeg_decompress_struct cinfo;
    int                           created; /* jpeg_create_decompress succeeded */
    unsigned char                *row;     /* one decoded scanline, width * channels */
    char                          msg[JMSG_LENGTH_MAX];
} jpeg_io;

static void on_jpeg_error_exit(j_common_ptr c) {
    jpeg_io *io = (jpeg_io *)c->err;
    c->err->format_message(c, io->msg);
    longjmp(io->jb, 1);
}

/* Warnings that mean the decoded pixels are not what the file was meant to hold. */
static int is_data_corruption(int code) {
    switch (code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
#if JPEG_LIB_VERSION >= 70 || defined(D_ARITH_CODING_SUPPORTED) || defined(C_ARITH_CODING_SUPPORTED)
    case JWRN_ARITH_BAD_CODE:
#endif
    case JWRN_EXTRANEOUS_DATA: /* a damaged Huffman stream usually ends early, leaving bytes before the marker */
    case JWRN_MUST_RESYNC:
    case JWRN_BOGUS_PROGRESSION: return 1;
    default: return 0;
    }
}

static void on_jpeg_message(j_common_ptr c, int level) {
    if (level >= 0) return; /* trace messages */
    jpeg_io *io = (jpeg_io *)c->err;
    char     text[JMSG_LENGTH_MAX];
    c->err->format_message(c, text);
    if (is_data_corruption(c->err->msg_code)) {
        memcpy(io->msg, text, sizeof text);
        longjmp(io->jb, 1);
    }
    /* e.g. an unknown JFIF revision or Adobe transform code: cosmetic, say it once */
    if (c->err->num_warnings++ == 0) CK_LOG_WARN("%s: JPEG: %s", io->path, text);
}

static void on_jpeg_output(j_common_ptr c) {
    (void)c; /* every message goes through on_jpeg_message / on_jpeg_error_exit; never print to stderr */
}

/* A progressive file's coefficients all arrived, each with every bit (libjpeg fills missing ones with 0).
 * Valid once the input is consumed: jpeg_start_decompress reads a multi-scan file to its end. */
static ck_status check_progression(jpeg_io *io) {
    const struct jpeg_decompress_struct *ci = &io->cinfo;
    if (!ci->progressive_mode || !ci->coef_bits) return CK_OK;
    for (int c = 0; c < ci->num_components; c++)
        for (int k = 0; k < DCTSIZE2; k++) {
            const int bits = ci->coef_bits[c][k];
            if (bits == 0) continue;
            return ck__fail(io->err, CK_STATUS_EFORMAT,
                            "%s: corrupt or truncated JPEG: progressive scans missing (coefficient %d of component %d %s)",
                            io->path, k, c + 1, bits < 0 ? "never sent" : "lacks its low bits");
        }
    return CK_OK;
}

static ck_status jpeg_decode(jpeg_io *io, ck_image *img, int *bit_depth) {
    if (setjmp(io->jb))
        return ck__fail(io->err, CK_STATUS_EFORMAT, "%s: corrupt or truncated JPEG: %s", io->path, io->msg);

    jpeg_create_decompress(&io->cinfo);
    io->created = 1;
    jpeg_stdio_src(&io->cinfo, io->f);
    jpeg_read_header(&io->cinfo, TRUE);

    int channels;
    switch (io->cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE:
        io->cinfo.out_color_space = JCS_GRAYSCALE;
        channels                  = 1;
        break;
    case JCS_YCbCr:
    case JCS_RGB:
        io->cinfo.out_color_space = JCS_RGB;
        channels                  = 3;
        break;
    case JCS_CMYK:
    case JCS_YCCK:
        return ck__fail(io->err, CK_STATUS_EFORMAT,
                        "%s: CMYK JPEG (print colour space) is not supported; save it as RGB", io->path);
    default:
        return ck__fail(io->err, CK_STATUS_EFORMAT, "%s: JPEG with unknown colour space (%d components)",
                        io->path, io->cinfo.num_components);
    }
    if (io->cinfo.image_width < 1 || io->cinfo.image_height < 1 || io->cinfo.image_width > CK_IMAGE_MAX_DIM ||
        io->cinfo.image_height > CK_IMAGE_MAX_DIM)
        return ck__fail(io->err, CK_STATUS_EFORMAT, "%s: JPEG size %ux%u outside 1..%d", io->path,
                        (unsigned)io->cinfo.image_width, (unsigned)io->cinfo.image_height, CK_IMAGE_MAX_DIM);
    /* before jpeg_start_decompress: a progressive or arithmetic-coded file makes libjpeg buffer the whole
     * image's coefficients there */
    if ((long long)io->cinfo.image_width * io->cinfo.image_height > ck_image_max_pixels())
        return ck__fail(io->err, CK_STATUS_EFORMAT,
                        "%s: a %ux%u JPEG (%.1f Mpx) is larger than the limit of %.1f Mpx (CKEY_MAX_PIXELS raises it)",
                        io->path, (unsigned)io->cinfo.image_width, (unsigned)io->cinfo.image_height,
                        (double)io->cinfo.image_width * io->cinfo.image_height / 1e6, (double)ck_image_max_pixels() / 1e6);
    /* the header is sane: now the whole file's structure, before any pixel is decoded. The stdio source
     * keeps the bytes it read ahead in its own buffer and goes on reading where the stream stood, so the
     * walk rewinds the stream and puts it back there. */
    long header_end = ftell(io->f);
    rewind(io->f);
    if (!walk_markers(io->f, io->msg, sizeof io->msg))
        return ck__fail(io->err, CK_STATUS_EFORMAT, "%s: corrupt or truncated JPEG: %s", io->path, io->msg);
    if (header_end < 0 || fseek(io->f, header_end, SEEK_SET) != 0)
        return ck__fail(io->err, CK_STATUS_EIO, "%s: cannot seek back in the file", io->path);

    /* libjpeg's defaults, spelled out because bit-exactness with cv2.imread depends on them */
    io->cinfo.dct_method          = JDCT_ISLOW;
    io->cinfo.do_fancy_upsampling = TRUE;
    io->cinfo.scale_num           = 1;
    io->cinfo.scale_denom         = 1;

    jpeg_start_decompress(&io->cinfo);
    ck_status st = check_progression(io);
    if (st != CK_OK) return st;
    int w = (int)io->cinfo.output_width, h = (int)io->cinfo.output_height;
    if (io->cinfo.output_components != channels || w != (int)io->cinfo.image_width ||
        h != (int)io->cinfo.image_height)
        return ck__fail(io->err, CK_STATUS_EFORMAT, "%s: unexpected JPEG output layout", io->path);

    st = ck__image_alloc(img, w, h, channels, io->dst, io->path, io->err);
    if (st != CK_OK) return st;
    size_t row_vals = (size_t)w * (size_t)channels;
    io->row         = malloc(row_vals);
    if (!io->row) return ck__fail(io->err, CK_STATUS_EOOM, "%s: out of memory", io->path);
    while (io->cinfo.output_scanline < io->cinfo.output_height) {
        size_t     y   = io->cinfo.output_scanline;
        JSAMPROW   row = io->row;
        JDIMENSION got = jpeg_read_scanlines(&io->cinfo, &row, 1);
        if (got != 1) return ck__fail(io->err, CK_STATUS_EFORMAT, "%s: JPEG decoder stalled at row %zu", io->path, y);
        float *dst = img->data + y * row_vals;
        for (size_t i = 0; i < row_vals; i++) dst[i] = (float)io->row[i] / 255.0f;
    }
    /* reads up to EOI: corrupt data after the last row (extraneous bytes, a missing EOI) fails here too */
    jpeg_finish_decompress(&io->cinfo);
    *bit_depth = 8;
    return CK_OK;
}

ck_status ck__jpeg_read(const char *path, ck_image *img, const ck__image_dst *dst, int *bit_depth, ck_err *err) {
    /* large (jmp_buf + decompressor state): keep it off the stack of deeply nested callers */
    jpeg_io *io = calloc(1, sizeof *io);
    if (!io) return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    io->path = path;
    io->err  = err;
    io->dst  = dst;
    io->f    = fopen(path, "rb");
    if (!io->f) {
        free(io);
        return ck__fail(err, CK_STATUS_EIO, "%s: cannot open", path);
    }
    io->cinfo.err             = jpeg_std_error(&io->mgr);
    io->mgr.error_exit        = on_jpeg_error_exit;
    io->mgr.emit_message      = on_jpeg_message;
    io->mgr.output_message    = on_jpeg_output;
    ck_status st              = jpeg_decode(io, img, bit_depth);
    if (io->created) jpeg_destroy_decompress(&io->cinfo);
    free(io->row);
    fclose(io->f);
    free(io);
    return st; /* ck_image_read releases img on failure */
}
