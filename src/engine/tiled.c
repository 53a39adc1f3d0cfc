/* Tiled keying (ck_params.tile): the model runs at S = tile on tiles of the plate at its native
 * resolution, stepped by tile − overlap, and the tiles' outputs are blended with linear ramps
 * (frame/tiling.c). Tiles whose hint is all background or all foreground are not run; a hint whose
 * bounding box plus 64 px fits one tile runs that tile only.
 *
 * Both paths share one plan: the tiles in raster order, each marked run (with its slot in a batch of
 * up to max_batch images) or skipped, cut into batches; a batch ends after its last run tile and
 * takes the skipped tiles before it, so that blending goes tile by tile in raster order whatever the
 * batch size (the sums are the same at every batch size).
 *   host:   each run tile is copied, pre-processed on the host into its slot of host_x; one forward per
 *           batch; the outputs (Lanczos-4 back to the tile's size when the plate is smaller than a
 *           tile) are accumulated on the host.
 *   device: (CUDA, plates at least a tile in both axes) the plate is uploaded once, every run tile is
 *           pre-processed in place into its slot of the network input, one forward per batch, and
 *           frame/cuda/tiling.cu accumulates the batch into the plate; the normalized plate then goes
 *           through the device post-processing like a full frame's output (passes.c). */
#include "engine/ctx.h"
#include "frame/frame_ops.h"
#include "frame/tiling.h"

#include <stdlib.h>
#include <string.h>

#define CK_TILE_AXIS_MAX 4096

typedef struct tile_plan {
    int      w, h, tw, th, nx, ny; /* plate; tile size (S, or the plate's side when smaller); grid */
    int      ox[CK_TILE_AXIS_MAX], oy[CK_TILE_AXIS_MAX];
    int      n;                    /* tiles in the list (nx · ny, or 1 for the single-tile shortcut) */
    int32_t *list;                 /* (n, 5) as ck_tile_blend_args.tiles */
    int      nbatch;
    int     *batch_end;            /* (nbatch): one past the batch's last tile */
    int     *batch_runs;           /* (nbatch): run tiles (images of its forward) */
} tile_plan;

static void plan_free(tile_plan *p) { free(p->list), free(p->batch_end), free(p->batch_runs); }

/* The plan for a plate of w × h with its hint (plate size). */
static ck_status plan_tiles(ck_ctx *ctx, tile_plan *p, int w, int h, const float *hint) {
    const ck_params *pm = &ctx->params;
    const int        S  = ctx->cfg.size;
    memset(p, 0, sizeof *p);
    p->w = w, p->h = h, p->tw = S < w ? S : w, p->th = S < h ? S : h;
    p->nx = ck_tile_origins(w, p->tw, pm->tile_overlap, p->ox, CK_TILE_AXIS_MAX);
    p->ny = ck_tile_origins(h, p->th, pm->tile_overlap, p->oy, CK_TILE_AXIS_MAX);
    if (p->ox[p->nx - 1] + p->tw < w || p->oy[p->ny - 1] + p->th < h)
        return ck__fail(&ctx->err, CK_STATUS_EINVAL, "a %dx%d plate needs more than %d tiles of %d per side", w, h,
                        CK_TILE_AXIS_MAX, S);

    /* single-tile shortcut: the hint's bounding box (hint > 0.01) plus 64 px fits one tile */
    int bx0 = w, by0 = h, bx1 = -1, by1 = -1;
#pragma omp parallel for reduction(min : bx0, by0) reduction(max : bx1, by1) schedule(static)
    for (int y = 0; y < h; y++) {
        const float *row = hint + (size_t)y * w;
        int          x0 = -1, x1 = -1;
        for (int x = 0; x < w; x++)
            if (row[x] > 0.01f) {
                if (x0 < 0) x0 = x;
                x1 = x;
            }
        if (x0 >= 0) {
            bx0 = x0 < bx0 ? x0 : bx0, bx1 = x1 > bx1 ? x1 : bx1;
            by0 = y < by0 ? y : by0, by1 = y > by1 ? y : by1;
        }
    }
    if (bx1 >= 0 && (p->nx > 1 || p->ny > 1)) {
        const int mx0 = bx0 - 64 > 0 ? bx0 - 64 : 0, mx1 = bx1 + 64 < w - 1 ? bx1 + 64 : w - 1;
        const int my0 = by0 - 64 > 0 ? by0 - 64 : 0, my1 = by1 + 64 < h - 1 ? by1 + 64 : h - 1;
        if (mx1 - mx0 + 1 <= p->tw && my1 - my0 + 1 <= p->th) {
            int cx = (mx0 + mx1 + 1) / 2 - p->tw / 2, cy = (my0 + my1 + 1) / 2 - p->th / 2;
            cx = cx < 0 ? 0 : cx + p->tw > w ? w - p->tw : cx;
            cy = cy < 0 ? 0 : cy + p->th > h ? h - p->th : cy;
            p->ox[0] = cx, p->oy[0] = cy, p->nx = p->ny = 1;
            CK_LOG_DBG("tiled: hint fits one tile at (%d, %d)", cx, cy);
        }
    }
    p->n          = p->nx * p->ny;
    p->list       = malloc(sizeof(int32_t) * 5 * (size_t)p->n);
    p->batch_end  = malloc(sizeof(int) * (size_t)p->n);
    p->batch_runs = malloc(sizeof(int) * (size_t)p->n);
    if (!p->list || !p->batch_end || !p->batch_runs) {
        plan_free(p);
        return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for %d tiles", p->n);
    }
    /* hint-driven skip: all background (max < 0.01) or all foreground (min > 0.99) */
#pragma omp parallel for schedule(dynamic)
    for (int t = 0; t < p->n; t++) {
        const int x0 = p->ox[t % p->nx], y0 = p->oy[t / p->nx];
        float     hmin = 1e30f, hmax = -1e30f;
        for (int y = 0; y < p->th; y++) {
            const float *row = hint + (size_t)(y0 + y) * w + x0;
            for (int x = 0; x < p->tw; x++) {
                const float v = row[x];
                hmin = v < hmin ? v : hmin, hmax = v > hmax ? v : hmax;
            }
        }
        int32_t *d = p->list + 5 * (size_t)t;
        d[0] = x0, d[1] = y0, d[2] = t % p->nx, d[3] = t / p->nx;
        d[4] = hmax < 0.01f ? CK_TILE_BG : hmin > 0.99f ? CK_TILE_FG : 0;
    }
    /* batches: slots in order; a batch closes at its max_batch-th run tile, the last one at the end */
    int runs = 0;
    for (int t = 0; t < p->n; t++) {
        int32_t *d = p->list + 5 * (size_t)t;
        if (d[4] >= 0) d[4] = runs++;
        if (runs == ctx->max_batch || t == p->n - 1) {
            p->batch_end[p->nbatch] = t + 1, p->batch_runs[p->nbatch] = runs;
            p->nbatch++, runs = 0;
        }
    }
    return CK_OK;
}

/* The ramp weights of tile column ix (wx, tw values) and row iy (wy, th values). */
static void ramp_tables(const tile_plan *p, int overlap, float *wx, float *wy, int stride) {
    for (int i = 0; i < p->nx; i++)
        for (int x = 0; x < p->tw; x++) wx[(size_t)i * stride + x] = ck_tile_weight_1d(x, p->ox[i], p->tw, p->w, overlap);
    for (int j = 0; j < p->ny; j++)
        for (int y = 0; y < p->th; y++) wy[(size_t)j * stride + y] = ck_tile_weight_1d(y, p->oy[j], p->th, p->h, overlap);
}

/* The hint at the plate's size (bilinear, as CorridorKey when sizes differ); *owned: free it. */
static const float *hint_at_plate(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, float **owned) {
    *owned = NULL;
    if (hint->width == rgb->width && hint->height == rgb->height) return hint->data;
    *owned = malloc(sizeof(float) * (size_t)rgb->width * rgb->height);
    if (!*owned) {
        ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory");
        return NULL;
    }
    ck_resize_linear_cv(*owned, rgb->width, rgb->height, hint->data, hint->width, hint->height, 1);
    return *owned;
}

/* ---- host ---- */

ck_status ck__key_tiled_host(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint_img, float *alpha, float *fg) {
    const ck_params *pm = &ctx->params;
    const int        w = rgb->width, h = rgb->height, S = ctx->cfg.size;
    float           *owned = NULL;
    const float     *hint  = hint_at_plate(ctx, rgb, hint_img, &owned);
    if (!hint) return CK_STATUS_EOOM;
    tile_plan *p  = malloc(sizeof *p);
    ck_status  st = p ? plan_tiles(ctx, p, w, h, hint) : ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory");
    if (st != CK_OK) {
        free(p), free(owned);
        return st;
    }
    const int    tw = p->tw, th = p->th;
    const size_t F  = (size_t)w * h, T = (size_t)tw * th;
    float       *acc = calloc(F * 4, sizeof(float)); /* weighted alpha, fg */
    float       *wsum = calloc(F, sizeof(float));
    float       *crgb = malloc(sizeof(float) * T * 3), *chint = malloc(sizeof(float) * T);
    float       *tout = malloc(sizeof(float) * T * 4);
    float       *scr  = malloc(sizeof(float) * ck_preprocess_scratch_floats(tw, th, tw, th, S));
    float       *ramps = malloc(sizeof(float) * (size_t)(p->nx + p->ny) * S); /* wx (nx, S) | wy (ny, S) */
    if (!acc || !wsum || !crgb || !chint || !tout || !scr || !ramps)
        st = ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for tiles");
    if (st == CK_OK) st = ck__ctx_host_batch(ctx, ctx->max_batch < p->n ? ctx->max_batch : p->n);
    if (st == CK_OK) ramp_tables(p, pm->tile_overlap, ramps, ramps + (size_t)p->nx * S, S);
    for (int b = 0, first = 0; b < p->nbatch && st == CK_OK; first = p->batch_end[b++]) {
        for (int t = first; t < p->batch_end[b]; t++) { /* the run tiles into their slots */
            const int32_t *d = p->list + 5 * (size_t)t;
            if (d[4] < 0) continue;
            for (int y = 0; y < th; y++) {
                memcpy(crgb + (size_t)y * tw * 3, rgb->data + ((size_t)(d[1] + y) * w + d[0]) * 3, sizeof(float) * tw * 3);
                memcpy(chint + (size_t)y * tw, hint + (size_t)(d[1] + y) * w + d[0], sizeof(float) * tw);
            }
            ck_preprocess(ctx->host_x + (size_t)d[4] * S * S * 4, crgb, tw, th, chint, tw, th, S, pm->input_is_linear,
                          scr);
        }
        if (p->batch_runs[b] > 0) st = ck__ctx_forward_n(ctx, p->batch_runs[b]);
        for (int t = first; t < p->batch_end[b] && st == CK_OK; t++) { /* blend, in raster order */
            const int32_t *d = p->list + 5 * (size_t)t;
            const int      x0 = d[0], y0 = d[1];
            if (d[4] >= 0) {
                const float *o = ctx->host_out + (size_t)d[4] * S * S * 4;
                if (tw == S && th == S) memcpy(tout, o, sizeof(float) * T * 4);
                else ck_resize_lanczos4(tout, tw, th, o, S, S, 4);
            } else {
                const int fgnd = d[4] == CK_TILE_FG;
                for (int y = 0; y < th; y++)
                    for (int x = 0; x < tw; x++) {
                        float       *to = tout + ((size_t)y * tw + x) * 4;
                        const float *px = rgb->data + ((size_t)(y0 + y) * w + x0 + x) * 3;
                        to[0]           = fgnd ? 1.0f : 0.0f;
                        for (int c = 0; c < 3; c++)
                            to[1 + c] = fgnd ? (pm->input_is_linear ? ck_linear_to_srgb(px[c]) : px[c]) : 0.0f;
                    }
            }
            const float *wxr = ramps + (size_t)d[2] * S, *wyr = ramps + ((size_t)p->nx + d[3]) * S;
#pragma omp parallel for schedule(static)
            for (int y = 0; y < th; y++) {
                const float wyv = wyr[y];
                for (int x = 0; x < tw; x++) {
                    const float  wt = wyv * wxr[x];
                    const size_t o = (size_t)(y0 + y) * w + x0 + x, i = (size_t)y * tw + x;
                    wsum[o] += wt;
                    for (int c = 0; c < 4; c++) acc[o * 4 + c] += wt * tout[i * 4 + c];
                }
            }
        }
    }
    if (st == CK_OK) {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < F; i++) {
            const float inv = wsum[i] > 0 ? 1.0f / wsum[i] : 0.0f; /* 0 outside a single shortcut tile */
            alpha[i]        = acc[i * 4] * inv;
            for (int c = 0; c < 3; c++) fg[i * 3 + c] = acc[i * 4 + 1 + c] * inv;
        }
    }
    free(acc), free(wsum), free(crgb), free(chint), free(tout), free(scr), free(ramps);
    plan_free(p), free(p), free(owned);
    return st;
}

/* ---- device ---- */

int ck__tiled_on_device(const ck_ctx *ctx, int w, int h) {
    const ck_backend *be = ctx->be;
    const int         S  = ctx->cfg.size;
    return ctx->params.tile > 0 && be->ext.tile_blend && be->ext.tile_normalize && be->ext.preprocess &&
           ctx->params.gpu_preprocess != 0 && w >= S && h >= S;
}

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

/* Device regions for plates of w × h in tile_dev: rgb (h,w,3) | hint (h,w) | acc (h,w,4) | wsum (h,w) |
 * tmp (S,S,4) | tiles (nx·ny, 5) | wx (nx, S) | wy (ny, S); off[8] = total. */
static size_t tile_layout(const ck_ctx *ctx, int w, int h, size_t off[9]) {
    const int    S  = ctx->cfg.size, ov = ctx->params.tile_overlap;
    int          o[CK_TILE_AXIS_MAX];
    const int    nx = ck_tile_origins(w, S, ov, o, CK_TILE_AXIS_MAX), ny = ck_tile_origins(h, S, ov, o, CK_TILE_AXIS_MAX);
    const size_t F  = (size_t)w * h;
    const size_t sz[8] = {F * 3 * sizeof(float),   F * sizeof(float),         F * 4 * sizeof(float),
                          F * sizeof(float),       (size_t)S * S * 4 * sizeof(float),
                          (size_t)nx * ny * 5 * sizeof(int32_t), (size_t)nx * S * sizeof(float),
                          (size_t)ny * S * sizeof(float)};
    size_t total = 0;
    for (int i = 0; i < 8; i++) off[i] = total, total += align256(sz[i]);
    off[8] = total;
    return total;
}

void ck__tiled_free(ck_ctx *ctx) {
    if (ctx->tile_dev) ctx->be->free(ctx->be, ctx->tile_dev);
    ctx->tile_dev = NULL, ctx->tile_dev_bytes = 0, ctx->tile_w = ctx->tile_h = 0;
}

ck_status ck__key_tiled_device(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint_img, const float **out_dev) {
    ck_backend *be = ctx->be;
    const int   w = rgb->width, h = rgb->height, S = ctx->cfg.size;
    CK_ASSERT(ck__tiled_on_device(ctx, w, h));
    size_t off[9];
    tile_layout(ctx, w, h, off);
    if (off[8] > ctx->tile_dev_bytes) { /* grows once per plate size */
        ck__tiled_free(ctx);
        ctx->tile_dev = be->alloc(be, off[8]);
        if (!ctx->tile_dev)
            return ck__fail(&ctx->err, CK_STATUS_EOOM, "cannot allocate %.1f MiB on %s for tiles of a %dx%d plate",
                            off[8] / 1048576.0, be->name, w, h);
        ctx->tile_dev_bytes = off[8];
    }
    float       *owned = NULL;
    const float *hint  = hint_at_plate(ctx, rgb, hint_img, &owned);
    if (!hint) return CK_STATUS_EOOM;
    tile_plan *p  = malloc(sizeof *p);
    ck_status  st = p ? plan_tiles(ctx, p, w, h, hint) : ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory");
    float     *ramps = st == CK_OK ? malloc(sizeof(float) * (size_t)(p->nx + p->ny) * S) : NULL;
    if (st == CK_OK && !ramps) st = ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory");
    if (st != CK_OK) {
        if (p) plan_free(p);
        free(p), free(owned);
        return st;
    }
    uint8_t     *base = ctx->tile_dev;
    const size_t F    = (size_t)w * h;
    float *d_rgb = (float *)(base + off[0]), *d_hint = (float *)(base + off[1]), *d_acc = (float *)(base + off[2]);
    float *d_wsum = (float *)(base + off[3]), *d_tmp = (float *)(base + off[4]);
    int32_t *d_tiles = (int32_t *)(base + off[5]);
    float   *d_wx = (float *)(base + off[6]), *d_wy = (float *)(base + off[7]);
    ramp_tables(p, ctx->params.tile_overlap, ramps, ramps + (size_t)p->nx * S, S);
    be->upload(be, d_rgb, rgb->data, F * 3 * sizeof(float));
    be->upload(be, d_hint, hint, F * sizeof(float));
    be->upload(be, d_tiles, p->list, sizeof(int32_t) * 5 * (size_t)p->n);
    be->upload(be, d_wx, ramps, sizeof(float) * (size_t)p->nx * S);
    be->upload(be, d_wy, ramps + (size_t)p->nx * S, sizeof(float) * (size_t)p->ny * S);
    const ck_tensor z_acc  = ck_tensor_make(d_acc, CK_DTYPE_F32, 1, (int64_t[]){(int64_t)F * 4});
    const ck_tensor z_wsum = ck_tensor_make(d_wsum, CK_DTYPE_F32, 1, (int64_t[]){(int64_t)F});
    be->zero(be, &z_acc);
    be->zero(be, &z_wsum);

    for (int b = 0, first = 0; b < p->nbatch && st == CK_OK; first = p->batch_end[b++]) {
        const int n = p->batch_runs[b];
        if (n > 0) {
            const ck_tensor all = ck__ctx_input(ctx, n);
            const size_t    per = ck_tensor_nbytes(&all) / (size_t)n;
            for (int t = first; t < p->batch_end[b]; t++) {
                const int32_t *d = p->list + 5 * (size_t)t;
                if (d[4] < 0) continue;
                ck_tensor x = ck_tensor_make((uint8_t *)all.data + per * (size_t)d[4], all.dtype, 4,
                                             (int64_t[]){1, S, S, 4});
                ck_preprocess_args a;
                memset(&a, 0, sizeof a);
                a.x = &x, a.tmp = d_tmp, a.w = S, a.h = S, a.pitch = w; /* the tile is S × S: no resize, no taps */
                a.rgb  = d_rgb + ((size_t)d[1] * w + d[0]) * 3;
                a.hint = d_hint + (size_t)d[1] * w + d[0];
                a.input_is_linear = ctx->params.input_is_linear;
                be->ext.preprocess(be, &a);
            }
            st = ck__ctx_compute_n(ctx, n);
            if (st != CK_OK) break;
        }
        int bx0 = w, by0 = h, bx1 = 0, by1 = 0;
        for (int t = first; t < p->batch_end[b]; t++) {
            const int32_t *d = p->list + 5 * (size_t)t;
            bx0 = d[0] < bx0 ? d[0] : bx0, by0 = d[1] < by0 ? d[1] : by0;
            bx1 = d[0] + S > bx1 ? d[0] + S : bx1, by1 = d[1] + S > by1 ? d[1] + S : by1;
        }
        ck_tile_blend_args ba = {d_acc, d_wsum, n > 0 ? (const float *)ctx->last.out.data : NULL, d_rgb, w, h, S,
                                 d_tiles, first, p->batch_end[b] - first, d_wx, d_wy, bx0, by0, bx1, by1,
                                 ctx->params.input_is_linear};
        be->ext.tile_blend(be, &ba);
    }
    if (st == CK_OK) be->ext.tile_normalize(be, d_acc, d_wsum, (int64_t)F);
    if (st != CK_OK) ctx->failed = 1;
    *out_dev = d_acc;
    ctx->tile_w = w, ctx->tile_h = h;
    free(ramps), plan_free(p), free(p), free(owned);
    return st;
}
