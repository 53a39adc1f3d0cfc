/* The passes as files store them (ck_passes): keying a frame straight into them, on the device when
 * gpu_postprocess is in effect, and the host conversion of a finished ck_result.
 *
 * Device path, per frame (one stream, in order): pre-processing and the forward as ck_key_image_begin,
 * then the Lanczos tap tables are uploaded (they share the activation arena, which the forward
 * overwrites), frame/cuda/postprocess.cu writes the four passes into one device block laid out exactly
 * as the host block, and a single download fills the page-locked host block. Nothing is allocated per
 * frame: the device regions are laid out once per frame size, the host block is reused while large
 * enough. */
#include "engine/ctx.h"
#include "core/tensor.h"
#include "frame/colorspace.h"
#include "frame/frame_ops.h"

#include <stdlib.h>
#include <string.h>

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

/* Byte offsets of alpha, fg, processed and comp in a passes block, laid out comp | alpha | fg |
 * processed so that a block without the halves (chunks_only) is the same layout cut short; returns
 * the block's size with the halves (halves = 1) or without. */
static size_t passes_layout(int w, int h, int comp, int halves, size_t off[4]) {
    const size_t F     = (size_t)w * h;
    const size_t sz[4] = {2 * F, 2 * F * 3, 2 * F * 4, comp ? F * 3 : 0};
    size_t       total = align256(sz[3]);
    off[3]             = 0;
    for (int i = 0; i < 3; i++) off[i] = total, total += align256(sz[i]);
    return halves ? total : align256(sz[3]);
}

/* The memory behind a ck_passes (its `mem`, made on first use); NULL when out of memory. */
static ck_passes_mem *mem_of(ck_passes *p) {
    if (!p->mem) p->mem = calloc(1, sizeof *p->mem);
    return p->mem;
}

/* The pass pointers into block. */
static void passes_bind(ck_passes *p, uint8_t *b, int w, int h, int comp, int halves) {
    size_t off[4];
    passes_layout(w, h, comp, halves, off);
    p->width     = w, p->height = h;
    p->alpha     = halves ? (uint16_t *)(b + off[0]) : NULL;
    p->fg        = halves ? (uint16_t *)(b + off[1]) : NULL;
    p->processed = halves ? (uint16_t *)(b + off[2]) : NULL;
    p->comp      = comp ? b + off[3] : NULL;
}

void *ck_ctx_host_alloc(ck_ctx *ctx, size_t bytes, int *pinned) {
    ck_backend *be = ctx ? ctx->be : NULL;
    void       *p  = NULL;
    if (be && be->ext.host_alloc) {
        /* page-locked memory cannot be paged out: past the budget, ordinary memory (slower transfers) */
        const size_t before = atomic_fetch_add(&ctx->pinned_bytes, bytes);
        if (before + bytes <= ctx->pinned_budget) p = be->ext.host_alloc(be, bytes);
        if (!p) atomic_fetch_sub(&ctx->pinned_bytes, bytes);
        if (!p && before + bytes > ctx->pinned_budget)
            CK_LOG_DBG("page-locked memory budget (%.0f MiB) reached: %.1f MiB in ordinary memory",
                       ctx->pinned_budget / 1048576.0, bytes / 1048576.0);
    }
    *pinned = p != NULL;
    return p ? p : malloc(bytes ? bytes : 1);
}

void ck_ctx_host_free(ck_ctx *ctx, void *ptr, size_t bytes, int pinned) {
    if (!pinned) {
        free(ptr);
        return;
    }
    CK_ASSERT(ctx && ctx->be->ext.host_free); /* page-locked memory is freed through its context */
    ctx->be->ext.host_free(ctx->be, ptr);
    atomic_fetch_sub(&ctx->pinned_bytes, bytes);
}

int ck_ctx_has_pinned_memory(const ck_ctx *ctx) { return ctx && ctx->be->ext.host_alloc != NULL; }

/* Room for w × h passes in out (with the halves or the comp alone): the existing block when large
 * enough, else a new one (page-locked through ctx when it offers that; ctx NULL: malloc). */
static ck_status passes_reserve(ck_ctx *ctx, ck_passes *out, int w, int h, int comp, int halves) {
    size_t       off[4];
    size_t       need = passes_layout(w, h, comp, halves, off);
    need              = need ? need : 256; /* neither halves nor comp: a token block */
    ck_passes_mem *m  = mem_of(out);
    if (!m) return CK_STATUS_EOOM;
    if (!m->block || m->block_bytes < need) {
        int   pinned = 0;
        void *blk    = ctx ? ck_ctx_host_alloc(ctx, need, &pinned) : malloc(need);
        if (!blk) return CK_STATUS_EOOM;
        ck_ctx_host_free(ctx, m->block, m->block_bytes, m->pinned);
        m->block = blk, m->block_bytes = need, m->pinned = pinned;
    }
    passes_bind(out, m->block, w, h, comp, halves);
    return CK_OK;
}

void ck_passes_free(ck_ctx *ctx, ck_passes *out) {
    if (!out) return;
    if (out->mem) {
        ck_ctx_host_free(ctx, out->mem->block, out->mem->block_bytes, out->mem->pinned);
        ck_ctx_host_free(ctx, out->mem->chunk_block, out->mem->chunk_block_bytes, out->mem->chunk_pinned);
        free(out->mem);
    }
    memset(out, 0, sizeof *out);
}

int ck_passes_pinned(const ck_passes *p) { return p && p->mem && p->mem->pinned; }

ck_status ck_passes_copy(ck_passes *dst, const ck_passes *src) {
    if (!dst || !src || dst == src || !src->alpha || !src->fg || !src->processed) return CK_STATUS_EINVAL;
    ck_passes_free(NULL, dst);
    const int w = src->width, h = src->height, comp = src->comp != NULL;
    ck_status st = passes_reserve(NULL, dst, w, h, comp, 1);
    if (st != CK_OK) return ck_passes_free(NULL, dst), st;
    const size_t px = (size_t)w * h;
    memcpy(dst->alpha, src->alpha, px * sizeof(uint16_t));
    memcpy(dst->fg, src->fg, 3 * px * sizeof(uint16_t));
    memcpy(dst->processed, src->processed, 4 * px * sizeof(uint16_t));
    if (comp) memcpy(dst->comp, src->comp, 3 * px);
    if (src->exr_chunks > 0) { /* the device's PXR24 chunks, which the files are written from */
        ck_passes_mem *m    = dst->mem;
        size_t         data = 0;
        for (int i = 0; i < 3 * src->exr_chunks; i++) data += (size_t)src->chunk_bytes[i];
        const size_t nb = sizeof(int32_t) * 3 * (size_t)src->exr_chunks;
        if (!(m->chunk_block = malloc(nb + data))) return ck_passes_free(NULL, dst), CK_STATUS_EOOM;
        m->chunk_block_bytes = nb + data;
        dst->chunk_bytes = m->chunk_block, dst->chunk_data = (uint8_t *)m->chunk_block + nb;
        memcpy(dst->chunk_bytes, src->chunk_bytes, nb), memcpy(dst->chunk_data, src->chunk_data, data);
        dst->exr_lines = src->exr_lines, dst->exr_chunks = src->exr_chunks;
    }
    return CK_OK;
}

ck_status ck_passes_from_result(const ck_result *res, ck_passes *out) {
    if (!res || !out || !res->alpha.data || !res->fg.data || !res->processed.data) return CK_STATUS_EINVAL;
    const int w = res->alpha.width, h = res->alpha.height, comp = res->comp.data != NULL;
    if (res->fg.width != w || res->fg.height != h || res->processed.width != w || res->processed.height != h ||
        (comp && (res->comp.width != w || res->comp.height != h)))
        return CK_STATUS_ESHAPE;
    if (ck_passes_pinned(out) && out->mem->block_bytes < passes_layout(w, h, comp, 1, (size_t[4]){0}))
        return CK_STATUS_EINVAL; /* growing a page-locked block needs its context */
    ck_status st = passes_reserve(NULL, out, w, h, comp, 1);
    if (st != CK_OK) return st;
    out->exr_chunks = 0; /* the writers compress */
    const int64_t F = (int64_t)w * h;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < F; i++) {
        out->alpha[i] = ck_f32_to_f16(res->alpha.data[i]);
        for (int c = 0; c < 3; c++) out->fg[3 * i + c] = ck_f32_to_f16(res->fg.data[3 * i + c]);
        for (int c = 0; c < 4; c++) out->processed[4 * i + c] = ck_f32_to_f16(res->processed.data[4 * i + c]);
        if (comp)
            for (int c = 0; c < 3; c++) out->comp[3 * i + c] = ck_f32_to_u8_trunc(res->comp.data[3 * i + c]);
    }
    return CK_OK;
}

/* The fg un-mixing's device kernels (frame/cuda/postprocess.cu) are opt-in, CK_UNMIX_DEVICE=1, until they have
 * run against the host on a GPU (test_cuda_postprocess, test_cuda_colorspace); without it a context that
 * un-mixes post-processes on the host. */
static int unmix_on_device(void) {
    const char *e = getenv("CK_UNMIX_DEVICE");
    return e && !strcmp(e, "1");
}

/* Tiled contexts too: plates smaller than a tile are then keyed on the host inside ck_key_passes. */
int ck_ctx_postprocess_on_device(const ck_ctx *ctx) {
    return ctx && ctx->be->ext.postprocess && ctx->params.gpu_postprocess != 0 &&
           (ctx->params.fg_unmix <= 0 || unmix_on_device()) &&
           (ctx->params.tile <= 0 || (ctx->be->ext.tile_blend && ctx->params.gpu_preprocess != 0));
}

int ck_ctx_encodes_on_device(const ck_ctx *ctx) {
    return ck_ctx_postprocess_on_device(ctx) && ctx->be->ext.deflate && ctx->be->ext.pxr24 && ctx->be->ext.gather &&
           ctx->params.gpu_encode != 0;
}

/* Room for n chunk sizes and `data` bytes of streams in out's chunk block (grown when needed; the first
 * `keep` sizes, already downloaded, move with it). */
static ck_status chunks_reserve(ck_ctx *ctx, ck_passes *out, int n, int keep, size_t data) {
    const size_t   sizes = align256(sizeof(int32_t) * (size_t)n), need = sizes + (data ? data : 1);
    ck_passes_mem *m     = mem_of(out);
    if (!m) return CK_STATUS_EOOM;
    if (!m->chunk_block || m->chunk_block_bytes < need) {
        int   pinned = 0;
        void *blk    = ck_ctx_host_alloc(ctx, need + need / 8, &pinned); /* headroom: sizes vary by frame */
        if (!blk) return CK_STATUS_EOOM;
        uint8_t *old = m->chunk_block;
        if (old && keep) memcpy(blk, old, sizeof(int32_t) * (size_t)keep);
        ck_ctx_host_free(ctx, old, m->chunk_block_bytes, m->chunk_pinned);
        m->chunk_block = blk, m->chunk_block_bytes = need + need / 8, m->chunk_pinned = pinned;
    }
    out->chunk_bytes = m->chunk_block;
    out->chunk_data  = (uint8_t *)m->chunk_block + sizes;
    return CK_OK;
}

/* The EXR passes of the frame just post-processed on the device, as PXR24 chunks: transform, deflate,
 * gather on the device; the sizes, then exactly the streams' bytes come back. */
static ck_status encode_on_device(ck_ctx *ctx, ck_passes *out) {
    ck_backend                *be = ctx->be;
    const ck_postprocess_args *a  = &ctx->post;
    const int                  n  = ctx->enc_n;
    be->upload(be, ctx->enc_seg_off, ctx->enc_seg_off_host, sizeof(int64_t) * (size_t)(n + 1));
    /* file channel order: names sorted (Y; B, G, R; A, B, G, R) */
    const ck_pxr24_args pa[3] = {{a->alpha, a->w, a->h, 1, {0, 0, 0, 0}, ctx->enc_xf},
                                 {a->fg, a->w, a->h, 3, {2, 1, 0, 0}, ctx->enc_xf + ctx->enc_seg_off_host[ctx->enc_chunks]},
                                 {a->processed, a->w, a->h, 4, {3, 2, 1, 0},
                                  ctx->enc_xf + ctx->enc_seg_off_host[2 * ctx->enc_chunks]}};
    for (int p = 0; p < 3; p++) be->ext.pxr24(be, &pa[p]);
    const ck_deflate_args da = {ctx->enc_xf, ctx->enc_seg_off, n, ctx->enc_dst, ctx->enc_bytes, ctx->enc_scratch};
    be->ext.deflate(be, &da);
    const ck_gather_args ga = {ctx->enc_dst, ctx->enc_seg_off, ctx->enc_bytes, n, ctx->enc_xf, ctx->enc_dst_off};
    be->ext.gather(be, &ga);
    if (chunks_reserve(ctx, out, n, 0, 0) != CK_OK) return CK_STATUS_EOOM;
    be->download(be, out->chunk_bytes, ctx->enc_bytes, sizeof(int32_t) * (size_t)n);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        CK_ASSERT(out->chunk_bytes[i] >= 0 &&
                  out->chunk_bytes[i] < ctx->enc_seg_off_host[i + 1] - ctx->enc_seg_off_host[i] + 1);
        total += (size_t)out->chunk_bytes[i];
    }
    if (chunks_reserve(ctx, out, n, n, total) != CK_OK) return CK_STATUS_EOOM;
    atomic_store(&ctx->enc_last_total, total);
    be->download(be, out->chunk_data, ctx->enc_xf, total);
    out->exr_lines = ctx->enc_lines, out->exr_chunks = ctx->enc_chunks;
    return CK_OK;
}

/* The device encodes frames of this width: a chunk of the widest pass (Processed, 4 halves, 16 lines)
 * must fit one device segment, so frames wider than 8192 px are compressed by the writers on the host. */
static int encodes_width(const ck_ctx *ctx, int w) {
    return ck_ctx_encodes_on_device(ctx) && (int64_t)16 * 4 * 2 * w <= CK_DEFLATE_MAX_SEGMENT;
}

/* What the files need of the passes besides the encoded chunks (ck_passes.chunks_only): the comp, and
 * the rows of the chunks stored uncompressed, runs of neighbouring chunks in one transfer each. The
 * host block holds the halves only when some chunk is stored (rare: PXR24 shrinks image data). */
static ck_status download_for_chunks(ck_ctx *ctx, ck_passes *out) {
    ck_backend *be = ctx->be;
    const int   w = out->width, h = out->height, n = out->exr_chunks, lines = out->exr_lines;
    int         stored = 0;
    for (int i = 0; i < 3 * n; i++) stored += out->chunk_bytes[i] == 0;
    if (passes_reserve(ctx, out, w, h, out->comp != NULL, stored > 0) != CK_OK) return CK_STATUS_EOOM;
    void (*copy)(ck_backend *, void *, const void *, size_t) =
        ck_passes_pinned(out) && be->ext.download_async ? be->ext.download_async : be->download;
    size_t off[4];
    passes_layout(w, h, out->comp != NULL, 1, off); /* the device block's layout, the host's as far as it goes */
    const uint8_t *dev  = ctx->post_passes_dev;
    uint8_t       *host = out->mem->block; /* passes_reserve made it */
    if (out->comp) copy(be, host + off[3], dev + off[3], (size_t)w * h * 3);
    static const int C[3] = {1, 3, 4};
    for (int p = 0; p < 3 && stored; p++) {
        const size_t row = (size_t)w * C[p] * 2;
        for (int c = 0; c < n;) {
            if (out->chunk_bytes[(size_t)p * n + c] != 0) {
                c++;
                continue;
            }
            int e = c + 1;
            while (e < n && out->chunk_bytes[(size_t)p * n + e] == 0) e++;
            const size_t y0 = (size_t)c * lines, y1 = (size_t)e * lines < (size_t)h ? (size_t)e * lines : (size_t)h;
            copy(be, host + off[p] + y0 * row, dev + off[p] + y0 * row, (y1 - y0) * row);
            c = e;
        }
    }
    return CK_OK;
}

/* Lays out the device regions for frames of w × h from a source of sw × sh (once per frame size and
 * source): passes | taps | plate (keep_highlights, fg_unmix: (h, w, 3) float32) | scratch, in the larger of the activation arena's two gaps around `live`
 * (the network outputs still to be post-processed; NULL when nothing in the arena is live: the whole
 * arena is free) when they fit, else in post_dev; and the host copy of the tap tables. */
static ck_status gpu_postprocess_setup(ck_ctx *ctx, int sw, int sh, int w, int h, int comp, const ck_tensor *live) {
    ck_backend  *be = ctx->be;
    size_t       poff[4];
    const size_t passes  = passes_layout(w, h, comp, 1, poff);
    /* idx_x (w,8) | w_x (w,8) | idx_y (h,8) | w_y (h,8) */
    const size_t tsz[4]  = {sizeof(int32_t) * 8 * (size_t)w, sizeof(float) * 8 * (size_t)w,
                            sizeof(int32_t) * 8 * (size_t)h, sizeof(float) * 8 * (size_t)h};
    size_t       toff[4], taps = 0;
    for (int i = 0; i < 4; i++) toff[i] = taps, taps += align256(tsz[i]);
    const size_t post_scratch = align256(be->ext.postprocess_scratch_bytes(sw, sh, w, h));
    /* encoding, after the post-processing (over its scratch): xf | dst | seg_off | dst_off | bytes | scratch */
    const int     lines = 16, chunks = (h + lines - 1) / lines, n = 3 * chunks;
    const int     encode = encodes_width(ctx, w);
    const int64_t xf_bytes = 16 * (int64_t)w * h; /* Matte 2, FG 6, Processed 8 bytes per pixel */
    size_t        eoff[7] = {0}, enc = 0;
    if (encode) {
        const size_t esz[6] = {(size_t)xf_bytes, (size_t)xf_bytes, sizeof(int64_t) * (size_t)(n + 1),
                               sizeof(int64_t) * (size_t)(n + 1), sizeof(int32_t) * (size_t)n,
                               be->ext.deflate_scratch_bytes(n, xf_bytes)};
        for (int i = 0; i < 6; i++) eoff[i] = enc, enc += align256(esz[i]);
        int64_t *so = malloc(sizeof(int64_t) * (size_t)(n + 1));
        if (!so) return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory");
        static const int C[3] = {1, 3, 4};
        int64_t          off  = 0;
        for (int p = 0, i = 0; p < 3; p++)
            for (int c = 0; c < chunks; c++, i++) {
                const int rows = h - c * lines < lines ? h - c * lines : lines;
                so[i]          = off;
                off += (int64_t)rows * C[p] * 2 * w;
                CK_ASSERT((int64_t)rows * C[p] * 2 * w <= CK_DEFLATE_MAX_SEGMENT);
            }
        so[n] = off;
        CK_ASSERT(off == xf_bytes);
        free(ctx->enc_seg_off_host);
        ctx->enc_seg_off_host = so;
    }
    const size_t scratch = post_scratch > enc ? post_scratch : enc;
    const int    plate_on = ctx->params.keep_highlights || ctx->params.fg_unmix > 0;
    const size_t plate    = plate_on ? align256(sizeof(float) * 3 * (size_t)w * h) : 0;
    const size_t total   = passes + taps + plate + scratch;

    uint8_t     *arena = ctx->act_block, *out = live ? live->data : arena;
    const size_t out_lo = (size_t)(out - arena), out_hi = live ? align256(out_lo + ck_tensor_nbytes(live)) : 0;
    CK_ASSERT(out >= arena && out_hi <= align256(ctx->act_bytes));
    const size_t gap_hi = ctx->act_bytes > out_hi ? ctx->act_bytes - out_hi : 0;
    uint8_t     *base;
    if (gap_hi >= total) base = arena + out_hi;
    else if (out_lo >= total) base = arena;
    else {
        if (total > ctx->post_dev_bytes) {
            if (ctx->post_dev) be->free(be, ctx->post_dev);
            ctx->post_dev       = be->alloc(be, total);
            ctx->post_dev_bytes = ctx->post_dev ? total : 0;
            if (!ctx->post_dev)
                return ck__fail(&ctx->err, CK_STATUS_EOOM, "cannot allocate %.1f MiB for device post-processing",
                                total / 1048576.0);
        }
        base = ctx->post_dev;
    }
    uint8_t *tap_host = malloc(taps);
    if (!tap_host) return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory");
    ck_resize_lanczos4_taps(sw, w, (int32_t *)(tap_host + toff[0]), (float *)(tap_host + toff[1]));
    ck_resize_lanczos4_taps(sh, h, (int32_t *)(tap_host + toff[2]), (float *)(tap_host + toff[3]));
    free(ctx->post_taps);
    ctx->post_taps         = tap_host;
    ctx->post_taps_bytes   = taps;
    ctx->post_passes_dev   = base;
    ctx->post_passes_bytes = passes;
    ctx->post_taps_dev     = base + passes;

    ck_postprocess_args *a = &ctx->post;
    memset(a, 0, sizeof *a);
    uint8_t *t = ctx->post_taps_dev;
    a->sw = sw, a->sh = sh, a->w = w, a->h = h;
    a->idx_x = (const int32_t *)(t + toff[0]), a->w_x = (const float *)(t + toff[1]);
    a->idx_y = (const int32_t *)(t + toff[2]), a->w_y = (const float *)(t + toff[3]);
    a->alpha     = (uint16_t *)(base + poff[0]);
    a->fg        = (uint16_t *)(base + poff[1]);
    a->processed = (uint16_t *)(base + poff[2]);
    a->comp      = comp ? base + poff[3] : NULL;
    a->plate       = ctx->params.keep_highlights ? (const float *)(base + passes + taps) : NULL;
    a->unmix_plate = ctx->params.fg_unmix > 0 ? (const float *)(base + passes + taps) : NULL;
    a->unmix_lo    = CK_UNMIX_ALPHA_LO;
    a->scratch   = base + passes + taps + plate;
    uint8_t *e   = base + passes + taps + plate;
    ctx->enc_n   = encode ? n : 0, ctx->enc_chunks = chunks, ctx->enc_lines = lines;
    ctx->enc_xf = e + eoff[0], ctx->enc_dst = e + eoff[1];
    ctx->enc_seg_off = (int64_t *)(e + eoff[2]), ctx->enc_dst_off = (int64_t *)(e + eoff[3]);
    ctx->enc_bytes = (int32_t *)(e + eoff[4]), ctx->enc_scratch = e + eoff[5];
    ctx->post_w = w, ctx->post_h = h, ctx->post_comp = comp, ctx->post_sw = sw, ctx->post_sh = sh;
    ctx->post_live = live ? live->data : NULL, ctx->post_live_bytes = live ? ck_tensor_nbytes(live) : 0;
    return CK_OK;
}

ck_status ck_passes_reserve(ck_ctx *ctx, ck_passes *out, int w, int h) {
    if (!ctx || !out || w < 1 || h < 1) return CK_STATUS_EINVAL;
    const int comp = ctx->params.comp != 0, encodes = encodes_width(ctx, w);
    if (!ck_ctx_postprocess_on_device(ctx)) return CK_OK; /* the host path sizes them itself */
    ck_status st = passes_reserve(ctx, out, w, h, comp, !(out->chunks_only && encodes));
    if (st != CK_OK || !encodes) return st;
    /* streams: the last frame's total, else half the transformed bytes (noisy content shrinks ~2x) */
    const size_t last = atomic_load(&ctx->enc_last_total), xf = 16 * (size_t)w * h;
    return chunks_reserve(ctx, out, 3 * ((h + 15) / 16), 0, last ? last : xf / 2);
}

/* The host path: ck_key_image, then the conversion. */
static ck_status key_passes_host(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, ck_passes *out) {
    ck_result res = {0};
    ck_status st  = ck_key_image(ctx, rgb, hint, &res);
    if (st == CK_OK && ck_passes_pinned(out)) {
        st = passes_reserve(ctx, out, rgb->width, rgb->height, ctx->params.comp, 1);
        if (st != CK_OK) ck__fail(&ctx->err, st, "out of memory for the passes of a %dx%d frame", rgb->width, rgb->height);
    }
    if (st == CK_OK) {
        st = ck_passes_from_result(&res, out);
        if (st != CK_OK)
            ck__fail(&ctx->err, st, "converting a %dx%d frame's passes failed: %s", rgb->width, rgb->height,
                     ck_status_str(st));
    }
    ck_result_free(&res);
    return st;
}

/* Post-processes (and encodes) src, (sh, sw, 4) float32 on the device, into out for a w × h frame whose
 * plate (as given) is rgb. live: what of the arena must survive (see gpu_postprocess_setup). */
static ck_status post_on_device(ck_ctx *ctx, const float *src, int sw, int sh, int w, int h, const ck_tensor *live,
                                const ck_image *rgb, ck_passes *out) {
    const ck_params *p    = &ctx->params;
    const int        comp = p->comp != 0;
    ck_backend      *be   = ctx->be;
    const void      *lp   = live ? live->data : NULL;
    const size_t     lb   = live ? ck_tensor_nbytes(live) : 0;
    ck_status        st   = CK_OK;
    if (w != ctx->post_w || h != ctx->post_h || comp != ctx->post_comp || sw != ctx->post_sw || sh != ctx->post_sh ||
        lp != ctx->post_live || lb != ctx->post_live_bytes)
        st = gpu_postprocess_setup(ctx, sw, sh, w, h, comp, live);
    /* files from device chunks need the halves only where a chunk is stored: added then */
    const int chunks_only = out->chunks_only && ctx->enc_n;
    if (st == CK_OK) st = passes_reserve(ctx, out, w, h, comp, !chunks_only) == CK_OK
                              ? CK_OK
                              : ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for %dx%d passes", w, h);
    if (st != CK_OK) {
        ctx->failed = 1;
        return st;
    }
    ck_postprocess_args *a = &ctx->post;
    a->out                 = src;
    a->despill             = p->despill;
    a->despeckle           = p->despeckle;
    a->despeckle_size      = p->despeckle_size;
    ck_colorspace_post(p->colorspace, &a->cs); /* Processed in the plate's gamut */
    const float *plate = a->plate ? a->plate : a->unmix_plate; /* one upload serves both */
    if (plate) be->upload(be, (void *)plate, rgb->data, sizeof(float) * 3 * (size_t)w * h);
    be->upload(be, ctx->post_taps_dev, ctx->post_taps, ctx->post_taps_bytes);
    be->ext.postprocess(be, a);
    out->exr_chunks = 0;
    if (ctx->enc_n && encode_on_device(ctx, out) != CK_OK) {
        ctx->failed = 1;
        return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for the encoded passes of a %dx%d frame", w, h);
    }
    if (chunks_only && download_for_chunks(ctx, out) != CK_OK) {
        ctx->failed = 1;
        return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for the passes of a %dx%d frame", w, h);
    }
    if (!chunks_only) be->download(be, out->mem->block, ctx->post_passes_dev, ctx->post_passes_bytes);
    be->synchronize(be);
    return ck__ctx_device_status(ctx);
}

ck_status ck_key_passes_batch(ck_ctx *ctx, int n, const ck_image *rgb, const ck_image *hint, ck_passes *out) {
    if (!ctx || !rgb || !hint || !out || n < 1) return CK_STATUS_EINVAL;
    if (ctx->failed) return ck__ctx_failed_status(ctx);
    ck__ctx_begin_call(ctx);
    const int tiled = ctx->params.tile > 0;
    if (!tiled && n > ctx->max_batch)
        return ck__fail(&ctx->err, CK_STATUS_EINVAL, "a batch of %d frames: this context takes 1 to %d", n,
                        ctx->max_batch);
    ck_status st = CK_OK;
    if (!ck_ctx_postprocess_on_device(ctx)) {
        for (int i = 0; i < n && st == CK_OK; i++) st = key_passes_host(ctx, &rgb[i], &hint[i], &out[i]);
        return st;
    }
    for (int i = 0; i < n && st == CK_OK; i++) st = ck__check_frame(ctx, &rgb[i], &hint[i]);
    if (st != CK_OK) return st;
    if (tiled) { /* the batches are the tiles of each plate */
        for (int i = 0; i < n && st == CK_OK; i++) {
            const int w = rgb[i].width, h = rgb[i].height;
            if (!ck__tiled_on_device(ctx, w, h)) { /* a plate smaller than a tile */
                st = key_passes_host(ctx, &rgb[i], &hint[i], &out[i]);
                continue;
            }
            const float *blended = NULL;
            ck_image     plate; /* a converted colour space: linear Rec.709 */
            st = ck__ctx_working_plate(ctx, &rgb[i], &plate);
            if (st == CK_OK) st = ck__key_tiled_device(ctx, &plate, &hint[i], &blended);
            if (st == CK_OK) st = post_on_device(ctx, blended, w, h, w, h, NULL, &rgb[i], &out[i]);
        }
        return st;
    }
    for (int i = 0; i < n && st == CK_OK; i++) st = ck__ctx_preprocess_slot(ctx, &rgb[i], &hint[i], i);
    if (st == CK_OK) st = ck__ctx_compute_n(ctx, n);
    if (st != CK_OK) {
        ctx->failed = 1;
        return st;
    }
    const int       S    = ctx->cfg.size;
    const ck_tensor live = ctx->last.out; /* (n, S, S, 4): every frame's output survives until its turn */
    for (int i = 0; i < n && st == CK_OK; i++)
        st = post_on_device(ctx, (const float *)live.data + (size_t)i * S * S * 4, S, S, rgb[i].width, rgb[i].height,
                            &live, &rgb[i], &out[i]);
    return st;
}

ck_status ck_key_passes(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, ck_passes *out) {
    return ck_key_passes_batch(ctx, 1, rgb, hint, out);
}
