/* OpenEXR back end (OpenEXR 3.1+ C API, OpenEXRCore): read scanline and tiled parts with half, float or
 * uint channels; write half-float scanline files with PXR24 (default), ZIP or no compression.
 *
 * Reference: CorridorKey writes FG / Matte / Processed as half EXR with PXR24 through cv2.imwrite, naming
 * 1 channel "Y", 3 channels R,G,B and 4 channels R,G,B,A (model_spec.md §7.5), and reads EXR plates with
 * cv2.imread(IMREAD_UNCHANGED) (§8.2).
 * Numerics: float -> half is done here with ck_f32_to_f16 (round to nearest even, bit-exact with numpy's
 * astype(float16)), so the written bits do not depend on the library's converter. PXR24 is lossless for
 * half data (it only truncates 32-bit floats to 24 bits), so write -> read returns the fp16-rounded input.
 * Decoding asks the library for raw channel planes in the file's own type and converts here: that keeps us
 * on the library's simplest unpack path, whatever the channel mix of the file.
 * EXR stores channels sorted by name (A, B, G, R, Y): channels are always matched by name, never by index.
 */
#include "io/image_buf.h"
#include "core/tensor.h"

#include <omp.h>
#include <openexr.h>
#include <libdeflate.h>
#include <zlib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Messages can quote attribute or channel names straight from a corrupt file: keep logs printable. */
static void sanitize(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f) *s = '?';
}

/* Collects the first message the library reports after the buffer was last cleared (later ones are
 * consequences of it). Cleared before each step whose failure we report, so a complaint the library
 * logged and then tolerated never stands in for the real cause. */
typedef struct exr_msgbuf {
    char msg[256];
} exr_msgbuf;

static void on_exr_error(exr_const_context_t ctxt, exr_result_t code, const char *msg) {
    void *ud = NULL;
    if (ctxt && exr_get_user_data(ctxt, &ud) == EXR_ERR_SUCCESS && ud) {
        exr_msgbuf *mb = ud;
        if (!mb->msg[0]) {
            snprintf(mb->msg, sizeof mb->msg, "%s", msg ? msg : exr_get_default_error_message(code));
            sanitize(mb->msg);
        }
    } else {
        CK_LOG_DBG("OpenEXR: %s", msg ? msg : exr_get_default_error_message(code));
    }
}

static const char *exr_reason(const exr_msgbuf *mb, exr_result_t rv) {
    return mb->msg[0] ? mb->msg : exr_get_default_error_message(rv);
}

static exr_context_initializer_t make_init(exr_msgbuf *mb) {
    exr_context_initializer_t init = EXR_DEFAULT_CONTEXT_INITIALIZER;
    init.error_handler_fn          = on_exr_error;
    init.user_data                 = mb;
    init.max_image_width           = CK_IMAGE_MAX_DIM;
    init.max_image_height          = CK_IMAGE_MAX_DIM;
    init.max_tile_width            = CK_IMAGE_MAX_DIM;
    init.max_tile_height           = CK_IMAGE_MAX_DIM;
    /* a damaged offset table must fail, not be guessed around: we promise an error for corrupt files */
    init.flags = EXR_CONTEXT_FLAG_DISABLE_CHUNK_RECONSTRUCTION;
    return init;
}

/* ---- read ---- */

typedef struct exr_reader {
    const char           *path;
    ck_err               *err;
    const ck__image_dst  *dst;
    exr_msgbuf            mb;
    exr_context_t         ctx;
    exr_decode_pipeline_t dec;
    int                   dec_init;
    int                   W, H, nout;
    int                   src[4];  /* file channel index of each output channel */
    int                   type[4]; /* exr_pixel_type_t of each output channel */
    unsigned char        *scratch; /* one chunk, planar: nout planes of width*height*4 bytes */
    size_t                scratch_size;
    float                *out; /* W*H*nout, interleaved */
} exr_reader;

static ck_status exr_fail(exr_reader *r, exr_result_t rv, const char *what) {
    return ck__fail(r->err, CK_STATUS_EFORMAT, "%s: corrupt or truncated EXR (%s): %s", r->path, what,
                    exr_reason(&r->mb, rv));
}

/* Chooses the channels to return. Returns 1 on success, 0 when the file has nothing we can read,
 * -1 for a luminance/chroma file (Y, RY, BY). */
static int map_channels(exr_reader *r, const exr_attr_chlist_t *cl) {
    int R = -1, G = -1, B = -1, A = -1, Y = -1, chroma = 0;
    for (int c = 0; c < cl->num_channels; c++) {
        const char *n = cl->entries[c].name.str;
        if (!n) continue;
        if (!strcmp(n, "R")) R = c;
        else if (!strcmp(n, "G")) G = c;
        else if (!strcmp(n, "B")) B = c;
        else if (!strcmp(n, "A")) A = c;
        else if (!strcmp(n, "Y")) Y = c;
        else if (!strcmp(n, "RY") || !strcmp(n, "BY")) chroma = 1;
    }
    r->nout = 0;
    if (R >= 0 && G >= 0 && B >= 0) {
        r->src[r->nout++] = R;
        r->src[r->nout++] = G;
        r->src[r->nout++] = B;
    } else if (Y >= 0) {
        if (chroma) return -1; /* Y alone would silently turn a colour plate grey */
        r->src[r->nout++] = Y;
    } else if (cl->num_channels == 1) {
        r->src[r->nout++] = 0;
        return 1; /* a lone channel of any name: the matte convention of most tools */
    } else {
        return 0;
    }
    if (A >= 0) r->src[r->nout++] = A;
    return 1;
}

static ck_status describe_missing_channels(exr_reader *r, const exr_attr_chlist_t *cl) {
    char   names[160] = "";
    size_t used       = 0;
    for (int c = 0; c < cl->num_channels && used + 1 < sizeof names; c++) {
        int n = snprintf(names + used, sizeof names - used, "%s%s", c ? ", " : "",
                         cl->entries[c].name.str ? cl->entries[c].name.str : "?");
        if (n < 0) break;
        used += (size_t)n;
    }
    sanitize(names);
    return ck__fail(r->err, CK_STATUS_EFORMAT,
                    "%s: EXR has no R,G,B or Y channels (and more than one channel); found: %s", r->path,
                    cl->num_channels ? names : "none");
}

/* Decodes one chunk (scanline block or tile) whose top-left pixel is (x0, y0) in data-window space. */
static ck_status decode_chunk(exr_reader *r, const exr_chunk_info_t *ci, int64_t x0, int64_t y0) {
    if (ci->width < 1 || ci->height < 1 || x0 < 0 || y0 < 0 || x0 + ci->width > r->W || y0 + ci->height > r->H)
        return ck__fail(r->err, CK_STATUS_EFORMAT, "%s: EXR chunk %d (%dx%d at %lld,%lld) outside the data window",
                        r->path, (int)ci->idx, (int)ci->width, (int)ci->height, (long long)x0, (long long)y0);
    exr_result_t rv;
    r->mb.msg[0] = 0;
    if (!r->dec_init) {
        rv = exr_decoding_initialize(r->ctx, 0, ci, &r->dec);
        if (rv != EXR_ERR_SUCCESS) return exr_fail(r, rv, "decoder setup");
        r->dec_init = 1;
    } else {
        rv = exr_decoding_update(r->ctx, 0, ci, &r->dec);
        if (rv != EXR_ERR_SUCCESS) return exr_fail(r, rv, "decoder update");
    }

    size_t npix = (size_t)ci->width * (size_t)ci->height; /* <= W*H, checked against CK_IMAGE_MAX_DIM */
    size_t need = npix * (size_t)r->nout * 4;
    if (need > r->scratch_size) {
        free(r->scratch);
        r->scratch_size = 0;
        r->scratch      = malloc(need);
        if (!r->scratch) return ck__fail(r->err, CK_STATUS_EOOM, "%s: out of memory for an EXR chunk", r->path);
        r->scratch_size = need;
    }
    for (int c = 0; c < r->dec.channel_count; c++) {
        exr_coding_channel_info_t *ch = &r->dec.channels[c];
        ch->decode_to_ptr             = NULL; /* channels we do not return are skipped by the library */
        for (int k = 0; k < r->nout; k++) {
            if (r->src[k] != c) continue;
            if (ch->width != ci->width || ch->height != ci->height)
                return ck__fail(r->err, CK_STATUS_EFORMAT, "%s: EXR channel %s has an inconsistent chunk size",
                                r->path, ch->channel_name ? ch->channel_name : "?");
            ch->decode_to_ptr          = r->scratch + (size_t)k * npix * 4;
            ch->user_pixel_stride      = ch->bytes_per_element;
            ch->user_line_stride       = ci->width * ch->bytes_per_element;
            ch->user_bytes_per_element = ch->bytes_per_element;
            ch->user_data_type         = ch->data_type;
        }
    }
    r->mb.msg[0] = 0;
    rv           = exr_decoding_choose_default_routines(r->ctx, 0, &r->dec);
    if (rv != EXR_ERR_SUCCESS) return exr_fail(r, rv, "decoder routines");
    rv = exr_decoding_run(r->ctx, 0, &r->dec);
    if (rv != EXR_ERR_SUCCESS) return exr_fail(r, rv, "pixel data");

    for (int k = 0; k < r->nout; k++) {
        const unsigned char *plane = r->scratch + (size_t)k * npix * 4;
        for (int y = 0; y < ci->height; y++) {
            float *dst = r->out + (((size_t)(y0 + y) * (size_t)r->W) + (size_t)x0) * (size_t)r->nout + (size_t)k;
            size_t row = (size_t)y * (size_t)ci->width;
            for (int x = 0; x < ci->width; x++, dst += r->nout) {
                size_t i = row + (size_t)x;
                if (r->type[k] == EXR_PIXEL_HALF) {
                    uint16_t h;
                    memcpy(&h, plane + 2 * i, 2);
                    *dst = ck_f16_to_f32(h);
                } else if (r->type[k] == EXR_PIXEL_FLOAT) {
                    memcpy(dst, plane + 4 * i, 4);
                } else {
                    uint32_t u;
                    memcpy(&u, plane + 4 * i, 4);
                    *dst = (float)u;
                }
            }
        }
    }
    return CK_OK;
}

static ck_status exr_decode(exr_reader *r, ck_image *img, int *bit_depth) {
    exr_context_initializer_t init = make_init(&r->mb);
    exr_result_t              rv   = exr_start_read(&r->ctx, r->path, &init);
    if (rv != EXR_ERR_SUCCESS) return exr_fail(r, rv, "header");

    r->mb.msg[0] = 0; /* header parsing may have logged complaints it then tolerated */
    int nparts   = 0;
    rv           = exr_get_count(r->ctx, &nparts);
    if (rv != EXR_ERR_SUCCESS || nparts < 1) return exr_fail(r, rv, "part count");
    if (nparts > 1) CK_LOG_INFO("%s: multi-part EXR (%d parts); reading the first", r->path, nparts);

    exr_storage_t storage;
    rv = exr_get_storage(r->ctx, 0, &storage);
    if (rv != EXR_ERR_SUCCESS) return exr_fail(r, rv, "storage type");
    if (storage != EXR_STORAGE_SCANLINE && storage != EXR_STORAGE_TILED)
        return ck__fail(r->err, CK_STATUS_EFORMAT, "%s: deep EXR data is not supported", r->path);

    exr_attr_box2i_t dw;
    rv = exr_get_data_window(r->ctx, 0, &dw);
    if (rv != EXR_ERR_SUCCESS) return exr_fail(r, rv, "data window");
    int64_t W = (int64_t)dw.max.x - dw.min.x + 1, H = (int64_t)dw.max.y - dw.min.y + 1;
    if (W < 1 || H < 1 || W > CK_IMAGE_MAX_DIM || H > CK_IMAGE_MAX_DIM)
        return ck__fail(r->err, CK_STATUS_EFORMAT, "%s: EXR data window %lldx%lld outside 1..%d", r->path,
                        (long long)W, (long long)H, CK_IMAGE_MAX_DIM);
    r->W = (int)W;
    r->H = (int)H;

    const exr_attr_chlist_t *cl = NULL;
    rv                          = exr_get_channels(r->ctx, 0, &cl);
    if (rv != EXR_ERR_SUCCESS || !cl) return exr_fail(r, rv, "channel list");
    int mapped = map_channels(r, cl);
    if (mapped < 0)
        return ck__fail(r->err, CK_STATUS_EFORMAT,
                        "%s: luminance/chroma EXR (Y, RY, BY channels) is not supported; save it as RGB", r->path);
    if (mapped == 0) return describe_missing_channels(r, cl);
    int all_half = 1;
    for (int k = 0; k < r->nout; k++) {
        const exr_attr_chlist_entry_t *e = &cl->entries[r->src[k]];
        if (e->x_sampling != 1 || e->y_sampling != 1)
            return ck__fail(r->err, CK_STATUS_EFORMAT,
                            "%s: EXR channel %s is subsampled (%dx%d); luminance/chroma files are not supported",
                            r->path, e->name.str, (int)e->x_sampling, (int)e->y_sampling);
        if (e->pixel_type != EXR_PIXEL_HALF && e->pixel_type != EXR_PIXEL_FLOAT && e->pixel_type != EXR_PIXEL_UINT)
            return ck__fail(r->err, CK_STATUS_EFORMAT, "%s: EXR channel %s has unknown pixel type %d", r->path,
                            e->name.str, (int)e->pixel_type);
        r->type[k] = (int)e->pixel_type;
        if (e->pixel_type != EXR_PIXEL_HALF) all_half = 0;
    }

    ck_status st = ck__image_alloc(img, r->W, r->H, r->nout, r->dst, r->path, r->err);
    if (st != CK_OK) return st;
    r->out = img->data;

    exr_chunk_info_t ci;
    if (storage == EXR_STORAGE_SCANLINE) {
        int32_t lpc = 0;
        rv          = exr_get_scanlines_per_chunk(r->ctx, 0, &lpc);
        if (rv != EXR_ERR_SUCCESS || lpc < 1) return exr_fail(r, rv, "lines per chunk");
        for (int64_t y = dw.min.y; y <= dw.max.y; y += lpc) {
            r->mb.msg[0] = 0;
            rv           = exr_read_scanline_chunk_info(r->ctx, 0, (int)y, &ci);
            if (rv != EXR_ERR_SUCCESS) return exr_fail(r, rv, "scanline block");
            st = decode_chunk(r, &ci, (int64_t)ci.start_x - dw.min.x, (int64_t)ci.start_y - dw.min.y);
            if (st != CK_OK) return st;
        }
    } else {
        /* level (0, 0) is the full-resolution image of mip/rip-mapped files too */
        int32_t tw = 0, th = 0, lw = 0, lh = 0;
        rv = exr_get_tile_sizes(r->ctx, 0, 0, 0, &tw, &th);
        if (rv == EXR_ERR_SUCCESS) rv = exr_get_level_sizes(r->ctx, 0, 0, 0, &lw, &lh);
        if (rv != EXR_ERR_SUCCESS) return exr_fail(r, rv, "tile description");
        if (tw < 1 || th < 1 || lw != r->W || lh != r->H)
            return ck__fail(r->err, CK_STATUS_EFORMAT, "%s: EXR tile description inconsistent (tile %dx%d, level %dx%d)",
                            r->path, (int)tw, (int)th, (int)lw, (int)lh);
        int ntx = (r->W + tw - 1) / tw, nty = (r->H + th - 1) / th;
        for (int ty = 0; ty < nty; ty++) {
            for (int tx = 0; tx < ntx; tx++) {
                r->mb.msg[0] = 0;
                rv           = exr_read_tile_chunk_info(r->ctx, 0, tx, ty, 0, 0, &ci);
                if (rv != EXR_ERR_SUCCESS) return exr_fail(r, rv, "tile");
                st = decode_chunk(r, &ci, (int64_t)tx * tw, (int64_t)ty * th);
                if (st != CK_OK) return st;
            }
        }
    }
    *bit_depth = all_half ? 16 : 32;
    return CK_OK;
}

ck_status ck__exr_read(const char *path, ck_image *img, const ck__image_dst *dst, int *bit_depth, ck_err *err) {
    exr_reader *r = calloc(1, sizeof *r);
    if (!r) return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    r->path      = path;
    r->err       = err;
    r->dst       = dst;
    ck_status st = exr_decode(r, img, bit_depth);
    if (r->dec_init) exr_decoding_destroy(r->ctx, &r->dec);
    if (r->ctx) exr_finish(&r->ctx);
    free(r->scratch);
    free(r);
    return st; /* ck_image_read releases img on failure */
}

/* ---- write ----
 * Chunks (16 or 32 scanlines for PXR24 / ZIP) are converted and compressed in parallel: each OpenMP
 * thread runs its own encode pipeline on its own write context with the same header, whose output goes
 * nowhere (the library holds a context's lock for a whole exr_encoding_run, so threads sharing one
 * context would take turns); the pipeline's write step keeps the compressed bytes, and the real context
 * then writes the chunks in order. Compression dominates the cost of a 4K frame's passes (seconds on
 * one thread). */

typedef struct exr_writer {
    const ck__image_job *job;
    ck_err              *err;
    exr_msgbuf           mb;
    exr_context_t        ctx;
    int                  part, lpc, nchunks;
    uint8_t            **chunk_data; /* (nchunks) compressed bytes of each chunk, in file order */
    size_t              *chunk_bytes;
} exr_writer;

static ck_status exr_wfail(exr_writer *w, exr_result_t rv, const char *what) {
    return ck__fail(w->err, CK_STATUS_EIO, "%s: cannot write EXR (%s): %s", w->job->path, what,
                    exr_reason(&w->mb, rv));
}

static const char *const k_exr_names[5][4] = {{NULL}, {"Y"}, {"Y", "A"}, {"R", "G", "B"}, {"R", "G", "B", "A"}};
static const exr_compression_t k_exr_comps[3] = {EXR_COMPRESSION_PXR24, EXR_COMPRESSION_ZIP, EXR_COMPRESSION_NONE};

/* One scanline part of half channels, header written. */
static exr_result_t exr_define(exr_context_t ctx, const ck__image_job *job, int *part) {
    const ck__image_job *img = job;
    const int            C   = img->channels;
    exr_result_t    rv  = exr_add_part(ctx, NULL, EXR_STORAGE_SCANLINE, part);
    if (rv == EXR_ERR_SUCCESS)
        rv = exr_initialize_required_attr_simple(ctx, *part, img->width, img->height, k_exr_comps[job->comp]);
    for (int k = 0; k < C && rv == EXR_ERR_SUCCESS; k++)
        rv = exr_add_channel(ctx, *part, k_exr_names[C][k], EXR_PIXEL_HALF, EXR_PERCEPTUALLY_LOGARITHMIC, 1, 1);
    if (rv == EXR_ERR_SUCCESS) rv = exr_write_header(ctx);
    return rv;
}

/* The encoding contexts' stream: accepts and drops everything. */
static int64_t exr_discard(exr_const_context_t ctx, void *user, const void *buf, uint64_t sz, uint64_t offset,
                           exr_stream_error_func_ptr_t error_cb) {
    (void)ctx, (void)user, (void)buf, (void)offset, (void)error_cb;
    return (int64_t)sz;
}

/* Chunks are stashed, not written: no ordering to wait for. */
static exr_result_t exr_ready(exr_encode_pipeline_t *enc) {
    (void)enc;
    return EXR_ERR_SUCCESS;
}

/* One thread's chunk encoder: its own deflate state and transform buffer, reused chunk after chunk. */
typedef struct exr_range {
    exr_writer                    *w;
    struct libdeflate_compressor  *deflater; /* PXR24 only */
    uint8_t                       *tmp;      /* the transformed chunk */
    size_t                         tmp_cap;
} exr_range;

/* PXR24 of a chunk whose channels are all HALF (the only kind this writer makes), as the format defines
 * it: per scanline and channel, each value minus the previous one (mod 2^16), high bytes then low
 * bytes, the whole chunk deflated (zlib format); stored raw when deflating does not shrink it. The
 * library's own PXR24 deflates with zlib at its default level (6) and offers no other, which makes a 4K
 * frame's passes cost seconds of CPU. Measured on a 4K frame's three passes (one core), smooth / noisy
 * (random-weight network) content: zlib level 4 1023 / 1552 ms for 14.7 / 42.6 MB, libdeflate level 2
 * 444 / 709 ms for 14.8 / 43.3 MB, libdeflate level 1 396 / 504 ms for 15.2 / 43.0 MB. Any reader
 * inflates every level.
 * packed: the chunk as the library packs it (per scanline, per channel in file order, little-endian
 * halves); *out is malloc'd. */
#define CK_PXR24_DEFLATE_LEVEL 1
static exr_result_t exr_pxr24_half(exr_range *r, const uint8_t *packed, size_t n, int width, uint8_t **out,
                                   size_t *out_n) {
    const size_t row = (size_t)width * 2;
    if (width < 1 || n % row != 0) return EXR_ERR_INVALID_ARGUMENT;
    if (n > r->tmp_cap) {
        free(r->tmp);
        r->tmp     = malloc(n);
        r->tmp_cap = r->tmp ? n : 0;
        if (!r->tmp) return EXR_ERR_OUT_OF_MEMORY;
    }
    uint8_t *tmp = r->tmp;
    for (size_t y = 0; y < n / row; y++) { /* one channel's scanline */
        const uint8_t *in = packed + y * row;
        uint8_t       *hi = tmp + y * row, *lo = hi + width;
        unsigned       prev = 0;
        for (int x = 0; x < width; x++) {
            const unsigned v    = (unsigned)in[2 * x] | (unsigned)in[2 * x + 1] << 8;
            const unsigned diff = (v - prev) & 0xffffu;
            prev                = v;
            hi[x]               = (uint8_t)(diff >> 8);
            lo[x]               = (uint8_t)diff;
        }
    }
    /* a zlib stream no longer than the chunk, else the packed bytes are stored */
    uint8_t *dst = malloc(n ? n : 1);
    if (!dst) return EXR_ERR_OUT_OF_MEMORY;
    size_t got = libdeflate_zlib_compress(r->deflater, tmp, n, dst, n);
    if (got == 0 || got >= n) {
        memcpy(dst, packed, n);
        got = n;
    }
    *out   = dst;
    *out_n = got;
    return EXR_ERR_SUCCESS;
}

/* write_fn of the encode pipelines: keep the chunk's compressed bytes (PXR24 compressed here). */
static exr_result_t exr_stash_chunk(exr_encode_pipeline_t *enc) {
    exr_range  *r   = enc->encoding_user_data;
    exr_writer *w   = r->w;
    const int   idx = (enc->chunk.start_y) / w->lpc;
    if (idx < 0 || idx >= w->nchunks) return EXR_ERR_INVALID_ARGUMENT;
    if (w->job->comp == CK_EXR_PXR24) {
        if (!enc->packed_buffer) return EXR_ERR_INVALID_ARGUMENT;
        return exr_pxr24_half(r, enc->packed_buffer, enc->packed_bytes, enc->chunk.width, &w->chunk_data[idx],
                              &w->chunk_bytes[idx]);
    }
    const void  *src = enc->compressed_buffer ? enc->compressed_buffer : enc->packed_buffer;
    const size_t n   = enc->compressed_buffer ? enc->compressed_bytes : enc->packed_bytes;
    if (!src) return EXR_ERR_INVALID_ARGUMENT;
    w->chunk_data[idx] = malloc(n ? n : 1);
    if (!w->chunk_data[idx]) return EXR_ERR_OUT_OF_MEMORY;
    memcpy(w->chunk_data[idx], src, n);
    w->chunk_bytes[idx] = n;
    return EXR_ERR_SUCCESS;
}

/* Converts and compresses chunks [c0, c1) with one pipeline on a private context. Returns the first
 * library error. */
static exr_result_t exr_encode_range(exr_writer *w, int c0, int c1) {
    const ck__image_job  *img = w->job;
    const int             C = img->channels, W = img->width, H = img->height;
    const size_t          plane_vals = (size_t)w->lpc * (size_t)W;
    uint16_t             *planes     = malloc(plane_vals * (size_t)C * sizeof(uint16_t)); /* C planes, half */
    exr_encode_pipeline_t enc;
    int                   enc_init = 0, part = 0;
    exr_msgbuf            mb;
    memset(&mb, 0, sizeof mb);
    exr_context_initializer_t init = make_init(&mb);
    init.write_fn                  = exr_discard;
    exr_context_t ectx             = NULL;
    exr_range     range            = {w, NULL, NULL, 0};
    if (w->job->comp == CK_EXR_PXR24) range.deflater = libdeflate_alloc_compressor(CK_PXR24_DEFLATE_LEVEL);
    exr_result_t rv = planes && (w->job->comp != CK_EXR_PXR24 || range.deflater)
                          ? exr_start_write(&ectx, w->job->path, EXR_WRITE_FILE_DIRECTLY, &init)
                          : EXR_ERR_OUT_OF_MEMORY;
    if (rv == EXR_ERR_SUCCESS) rv = exr_define(ectx, w->job, &part);
    for (int c = c0; c < c1 && rv == EXR_ERR_SUCCESS; c++) {
        const int        y0 = c * w->lpc;
        exr_chunk_info_t ci;
        rv = exr_write_scanline_chunk_info(ectx, part, y0, &ci);
        if (rv != EXR_ERR_SUCCESS) break;
        if (ci.height < 1 || ci.height > w->lpc || ci.start_y != y0 || ci.width != W || y0 + ci.height > H) {
            rv = EXR_ERR_INVALID_ARGUMENT;
            break;
        }
        if (!enc_init) {
            rv       = exr_encoding_initialize(ectx, part, &ci, &enc);
            enc_init = rv == EXR_ERR_SUCCESS;
        } else {
            rv = exr_encoding_update(ectx, part, &ci, &enc);
        }
        if (rv != EXR_ERR_SUCCESS) break;
        for (int k = 0; k < C; k++) {
            uint16_t *plane = planes + (size_t)k * plane_vals;
            for (int y = 0; y < ci.height; y++) {
                const size_t row = (size_t)(y0 + y) * (size_t)W * (size_t)C + (size_t)k;
                uint16_t    *dst = plane + (size_t)y * (size_t)W;
                if (img->f16) { /* halves as given */
                    const uint16_t *src = img->f16 + row;
                    for (int x = 0; x < W; x++) dst[x] = src[(size_t)x * (size_t)C];
                } else {
                    const float *src = img->f32 + row;
                    for (int x = 0; x < W; x++) dst[x] = ck_f32_to_f16(src[(size_t)x * (size_t)C]);
                }
            }
        }
        /* the library lists channels sorted by name: hand each one its plane by name */
        for (int ch = 0; ch < enc.channel_count; ch++) {
            exr_coding_channel_info_t *info = &enc.channels[ch];
            int                        k    = -1;
            for (int j = 0; j < C; j++)
                if (info->channel_name && !strcmp(info->channel_name, k_exr_names[C][j])) k = j;
            if (k < 0) {
                rv = EXR_ERR_INVALID_ARGUMENT;
                break;
            }
            info->encode_from_ptr        = (const uint8_t *)(planes + (size_t)k * plane_vals);
            info->user_pixel_stride      = 2;
            info->user_line_stride       = W * 2;
            info->user_bytes_per_element = 2;
            info->user_data_type         = EXR_PIXEL_HALF;
        }
        if (rv != EXR_ERR_SUCCESS) break;
        if (c == c0) {
            rv = exr_encoding_choose_default_routines(ectx, part, &enc);
            if (rv != EXR_ERR_SUCCESS) break;
            enc.yield_until_ready_fn = exr_ready;
            enc.write_fn             = exr_stash_chunk;
            if (w->job->comp == CK_EXR_PXR24) enc.compress_fn = NULL; /* done in exr_stash_chunk */
            enc.encoding_user_data   = &range;
        }
        rv = exr_encoding_run(ectx, part, &enc);
    }
    if (enc_init) {
        const exr_result_t r2 = exr_encoding_destroy(ectx, &enc);
        if (rv == EXR_ERR_SUCCESS) rv = r2;
    }
    if (ectx) exr_finish(&ectx); /* an unfinished private context: nothing was written anywhere */
    if (range.deflater) libdeflate_free_compressor(range.deflater);
    free(range.tmp);
    free(planes);
    return rv;
}

/* Chunks encoded elsewhere (ck_passes with gpu_encode): header, then each chunk as given, or stored
 * uncompressed (packed: per scanline, per channel in file order, little-endian halves) where the encoder
 * found no gain. */
static ck_status exr_write_given_chunks(exr_writer *w, const char *tmp_path) {
    const ck__image_job      *job  = w->job;
    const int                 W = job->width, H = job->height, C = job->channels;
    exr_context_initializer_t init = make_init(&w->mb);
    exr_result_t              rv   = exr_start_write(&w->ctx, tmp_path, EXR_WRITE_FILE_DIRECTLY, &init);
    if (rv != EXR_ERR_SUCCESS) return exr_wfail(w, rv, "create file");
    rv = exr_define(w->ctx, job, &w->part);
    if (rv != EXR_ERR_SUCCESS) return exr_wfail(w, rv, "header");
    int32_t lpc = 0;
    rv          = exr_get_scanlines_per_chunk(w->ctx, w->part, &lpc);
    if (rv != EXR_ERR_SUCCESS) return exr_wfail(w, rv, "lines per chunk");
    if (lpc != job->lines)
        return ck__fail(w->err, CK_STATUS_EINVAL, "%s: PXR24 stores %d scanlines per chunk, the chunks given hold %d",
                        job->path, (int)lpc, job->lines);
    /* file channel k is interleaved channel order[C][k] (names sorted) */
    static const int order[5][4] = {{0}, {0}, {1, 0}, {2, 1, 0}, {3, 2, 1, 0}};
    uint8_t         *raw         = malloc((size_t)lpc * W * C * 2);
    if (!raw) return ck__fail(w->err, CK_STATUS_EOOM, "%s: out of memory", job->path);
    const uint8_t *data = job->chunk_data;
    for (int y0 = 0, c = 0; y0 < H && rv == EXR_ERR_SUCCESS; y0 += lpc, c++) {
        const int rows = H - y0 < lpc ? H - y0 : lpc;
        if (job->chunk_bytes[c] > 0) {
            rv = exr_write_scanline_chunk(w->ctx, w->part, y0, data, (uint64_t)job->chunk_bytes[c]);
            data += job->chunk_bytes[c];
            continue;
        }
        uint8_t *p = raw;
        for (int y = y0; y < y0 + rows; y++)
            for (int k = 0; k < C; k++)
                for (int x = 0; x < W; x++, p += 2) {
                    const uint16_t v = job->f16[((size_t)y * W + x) * C + order[C][k]];
                    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8);
                }
        rv = exr_write_scanline_chunk(w->ctx, w->part, y0, raw, (uint64_t)(p - raw));
    }
    free(raw);
    if (rv != EXR_ERR_SUCCESS) return exr_wfail(w, rv, "pixel data");
    rv = exr_finish(&w->ctx);
    if (rv != EXR_ERR_SUCCESS) return exr_wfail(w, rv, "offset table");
    return CK_OK;
}

static ck_status exr_encode(exr_writer *w, const char *tmp_path) {
    const int H = w->job->height;

    exr_context_initializer_t init = make_init(&w->mb);
    exr_result_t              rv   = exr_start_write(&w->ctx, tmp_path, EXR_WRITE_FILE_DIRECTLY, &init);
    if (rv != EXR_ERR_SUCCESS) return exr_wfail(w, rv, "create file");
    rv = exr_define(w->ctx, w->job, &w->part);
    if (rv != EXR_ERR_SUCCESS) return exr_wfail(w, rv, "header");

    int32_t lpc = 0;
    rv          = exr_get_scanlines_per_chunk(w->ctx, w->part, &lpc);
    if (rv != EXR_ERR_SUCCESS || lpc < 1) return exr_wfail(w, rv, "lines per chunk");
    w->lpc         = lpc;
    w->nchunks     = (H + lpc - 1) / lpc;
    w->chunk_data  = calloc((size_t)w->nchunks, sizeof *w->chunk_data);
    w->chunk_bytes = calloc((size_t)w->nchunks, sizeof *w->chunk_bytes);
    if (!w->chunk_data || !w->chunk_bytes) return ck__fail(w->err, CK_STATUS_EOOM, "%s: out of memory", w->job->path);

    /* compression in parallel: contiguous runs of chunks per thread (one pipeline each) */
    exr_result_t first = EXR_ERR_SUCCESS;
#pragma omp parallel
    {
        const int          nt = omp_get_num_threads(), t = omp_get_thread_num();
        const int          c0 = (int)((int64_t)w->nchunks * t / nt), c1 = (int)((int64_t)w->nchunks * (t + 1) / nt);
        const exr_result_t r  = c0 < c1 ? exr_encode_range(w, c0, c1) : EXR_ERR_SUCCESS;
        if (r != EXR_ERR_SUCCESS) {
#pragma omp critical(ck_exr_first_error)
            if (first == EXR_ERR_SUCCESS) first = r;
        }
    }
    if (first != EXR_ERR_SUCCESS) return exr_wfail(w, first, "pixel data");
    for (int c = 0; c < w->nchunks; c++) {
        rv = exr_write_scanline_chunk(w->ctx, w->part, c * lpc, w->chunk_data[c], w->chunk_bytes[c]);
        if (rv != EXR_ERR_SUCCESS) return exr_wfail(w, rv, "pixel data");
    }
    /* exr_finish writes the chunk offset table: its failure means an unusable file */
    rv = exr_finish(&w->ctx);
    if (rv != EXR_ERR_SUCCESS) return exr_wfail(w, rv, "offset table");
    return CK_OK;
}

ck_status ck__exr_write(const char *tmp_path, const void *ctx, ck_err *err) {
    const ck__image_job *job = ctx;
    CK_ASSERT(job && (job->f32 || job->f16 || job->lines) && job->channels >= 1 && job->channels <= 4);
    CK_ASSERT(!job->lines || job->comp == CK_EXR_PXR24); /* f16 NULL: every chunk is encoded */
    CK_ASSERT(job->comp == CK_EXR_PXR24 || job->comp == CK_EXR_ZIP || job->comp == CK_EXR_NONE);
    exr_writer *w = calloc(1, sizeof *w);
    if (!w) return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", job->path);
    w->job       = job;
    w->err       = err;
    ck_status st = job->lines ? exr_write_given_chunks(w, tmp_path) : exr_encode(w, tmp_path);
    if (w->ctx) exr_finish(&w->ctx); /* only reached on failure: the library drops the partial file */
    for (int c = 0; w->chunk_data && c < w->nchunks; c++) free(w->chunk_data[c]);
    free(w->chunk_data);
    free(w->chunk_bytes);
    free(w);
    return st;
}

/* ---- shot metadata (ck_image_shot_info) ---- */

int ck__exr_shot_info(const char *path, uint32_t *timecode, double *fps) {
    exr_msgbuf                mb   = {{0}}; /* the library's complaints stay here: this probe logs nothing */
    exr_context_initializer_t init = make_init(&mb);
    exr_context_t             ctx  = NULL;
    *timecode = 0xFFFFFFFFu, *fps = 0;
    if (exr_start_read(&ctx, path, &init) != EXR_ERR_SUCCESS) {
        if (ctx) exr_finish(&ctx);
        return 0;
    }
    exr_attr_timecode_t tc;
    exr_attr_rational_t rate;
    if (exr_attr_get_timecode(ctx, 0, "timeCode", &tc) == EXR_ERR_SUCCESS) *timecode = tc.time_and_flags;
    if (exr_attr_get_rational(ctx, 0, "framesPerSecond", &rate) == EXR_ERR_SUCCESS && rate.num > 0 && rate.denom > 0)
        *fps = (double)rate.num / rate.denom;
    exr_finish(&ctx);
    return 1;
}
