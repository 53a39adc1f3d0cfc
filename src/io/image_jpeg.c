/* JPEG back end (libjpeg / libjpeg-turbo, jpeglib.h): read 8-bit grayscale and YCbCr/RGB files into
 * float. CMYK/YCCK files are refused with a clear message instead of being decoded with wrong colours.
 *
 * Reference: CorridorKey reads stills with cv2.imread (libjpeg-turbo, default islow IDCT and fancy
 * upsampling) and divides by 255 (model_spec.md §8.2); the same decoder settings here give the same bytes.
 * Rules kept: the library's error_exit never reaches exit(): it longjmps back into jpeg_decode(), and
 * everything to free lives in a struct owned by its caller (no automatic variable is modified between
 * setjmp and longjmp). Corrupt-data warnings (premature end of file, bad Huffman codes, ...) are fatal:
 * libjpeg would otherwise fill the missing part with grey and report success.
 */
#include "io/image.h"

#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t first */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h> /* after jpeglib.h: its message list depends on jconfig.h */

typedef struct jpeg_io {
    struct jpeg_error_mgr         mgr; /* first member: libjpeg hands us &mgr as cinfo->err */
    jmp_buf                       jb;
    const char                   *path;
    ck_err                       *err;
    const ck__image_dst          *dst;
    FILE                         *f;
    struct jpeg_decompress_struct cinfo;
    int                           created;   /* jpeg_create_decompress succeeded */
    int                           finishing; /* all scanlines are in: late warnings cannot hurt pixels */
    unsigned char                *row;       /* one decoded scanline, width * channels */
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
    case JWRN_MUST_RESYNC: return 1;
    default: return 0;
    }
}

static void on_jpeg_message(j_common_ptr c, int level) {
    if (level >= 0) return; /* trace messages */
    jpeg_io *io = (jpeg_io *)c->err;
    char     text[JMSG_LENGTH_MAX];
    c->err->format_message(c, text);
    if (is_data_corruption(c->err->msg_code) && !io->finishing) {
        memcpy(io->msg, text, sizeof text);
        longjmp(io->jb, 1);
    }
    /* e.g. "extraneous bytes before marker": cosmetic, cv2 accepts such files too; say it once */
    if (c->err->num_warnings++ == 0) CK_LOG_WARN("%s: JPEG: %s", io->path, text);
}

static void on_jpeg_output(j_common_ptr c) {
    (void)c; /* every message goes through on_jpeg_message / on_jpeg_error_exit; never print to stderr */
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
    /* libjpeg's defaults, spelled out because bit-exactness with cv2.imread depends on them */
    io->cinfo.dct_method          = JDCT_ISLOW;
    io->cinfo.do_fancy_upsampling = TRUE;
    io->cinfo.scale_num           = 1;
    io->cinfo.scale_denom         = 1;

    jpeg_start_decompress(&io->cinfo);
    int w = (int)io->cinfo.output_width, h = (int)io->cinfo.output_height;
    if (io->cinfo.output_components != channels || w != (int)io->cinfo.image_width ||
        h != (int)io->cinfo.image_height)
        return ck__fail(io->err, CK_STATUS_EFORMAT, "%s: unexpected JPEG output layout", io->path);

    ck_status st = ck__image_alloc(img, w, h, channels, io->dst, io->path, io->err);
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
    io->finishing = 1;
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
