/* Public API (include/ckey.h): context lifetime, planning, and the frame path
 * pre-process → network → resize back → post-process. */
#include "ctx.h"
#include "model/random_weights.h"
#include "pipeline/frame_ops.h"
#include "pipeline/tiling.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ck_params ck_params_default(void) {
    ck_params p;
    memset(&p, 0, sizeof p);
    p.size           = 2048;
    p.device         = CK_DEVICE_AUTO;
    p.precision      = CK_PREC_AUTO;
    p.threads        = 0;
    p.head_dim       = 0;
    p.use_refiner    = 1;
    p.refiner_scale  = 1.0f;
    p.despill        = 0.5f;
    p.despeckle      = 1;
    p.despeckle_size = 400;
    p.comp            = 1;
    p.fused_attention = 1;
    p.pad64           = -1;
    p.cuda_graph      = -1;
    p.stage_gc        = 0;
    p.fused_decode    = 1;
    p.gpu_preprocess  = -1;
    p.gpu_postprocess = -1;
    p.gpu_encode      = -1;
    return p;
}

static ck_status init_fail(ck_ctx *ctx, ck_status st) {
    ctx->failed = 1;
    return st;
}

static ck_backend *make_backend(ck_ctx *ctx, ck_status *st) {
    const ck_params *p      = &ctx->params;
    const int        lowp   = p->precision == CK_PREC_BF16 || p->precision == CK_PREC_FP16;
    if (p->device == CK_DEVICE_CPU) {
        if (lowp) {
            *st = ck__fail(&ctx->err, CK_STATUS_EUNSUPPORTED, "the CPU backend computes in fp32 only (asked for %s)",
                           p->precision == CK_PREC_BF16 ? "bf16" : "fp16");
            return NULL;
        }
        return ck_backend_cpu_create(p->threads);
    }
    ck_err          cerr = {{0}};
    ck_backend_opts bo   = {0, p->precision == CK_PREC_AUTO ? CK_PREC_FP16 : p->precision, p->fused_attention};
    ck_backend     *be   = ck_backend_cuda_create(&bo, &cerr);
    if (be) return be;
    if (p->device == CK_DEVICE_CUDA) {
        *st = ck__fail(&ctx->err, CK_STATUS_ENODEV, "--device cuda: %s", cerr.msg);
        return NULL;
    }
    CK_LOG_INFO("no usable CUDA device (%s); running on the CPU%s", cerr.msg, lowp ? " in fp32" : "");
    return ck_backend_cpu_create(p->threads);
}

static int use_graph(const ck_ctx *ctx) {
    return ctx->be->ext.graph_begin && ctx->params.cuda_graph != 0;
}

static ck_exec exec_for(ck_ctx *ctx, int planning) {
    ck_exec ex;
    memset(&ex, 0, sizeof ex);
    ex.be       = ctx->be;
    ex.arena    = &ctx->arena;
    ex.dtype    = ctx->be->act_dtype;
    ex.planning = planning;
    ex.pad64    = ctx->params.pad64 < 0 ? ctx->be->act_dtype != CK_DTYPE_F32 : ctx->params.pad64;
    /* a synchronize cannot be recorded into a graph */
    ex.stage_gc = ctx->params.stage_gc && !use_graph(ctx);
    ex.unfused_decode = !ctx->params.fused_decode;
    return ex;
}

/* Plans (measures) the forward at S, then allocates the activation arena once. */
static ck_status plan(ck_ctx *ctx) {
    const int S = ctx->cfg.size;
    ck_arena_init(&ctx->arena, NULL, 0);
    ck_exec      ex = exec_for(ctx, 1);
    ck_tensor    x  = CK_NEW(&ex, 1, S, S, 4); /* the input, in the activation dtype */
    ck_model_out o;
    ck_model_forward(&ex, &ctx->cfg, &ctx->w, &x, ctx->params.refiner_scale, ctx->params.use_refiner,
                     ctx->params.keep_intermediates, &o);
    ctx->act_bytes = ctx->arena.high;
    ctx->act_block = ctx->be->alloc(ctx->be, ctx->act_bytes);
    if (!ctx->act_block)
        return ck__fail(&ctx->err, CK_STATUS_EOOM, "cannot allocate %.1f MiB of activations on %s for S=%d",
                        ctx->act_bytes / 1048576.0, ctx->be->name, S);
    ck_arena_init(&ctx->arena, ctx->act_block, ctx->act_bytes);
    return CK_OK;
}

ck_status ck_ctx_init(ck_ctx **out, const char *checkpoint_path, const ck_params *params) {
    static ck_err init_err; /* for failures before a context exists */
    *out       = NULL;
    ck_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return ck__fail(&init_err, CK_STATUS_EOOM, "out of memory");
    *out        = ctx;
    ctx->params = params ? *params : ck_params_default();
    atomic_init(&ctx->pinned_bytes, 0);
    atomic_init(&ctx->enc_last_total, 0);
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    ctx->pinned_budget = pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 4 : (size_t)1 << 32;
    const char *pin_mb = getenv("CK_PINNED_MB"); /* override of the page-locked budget (diagnosis) */
    if (pin_mb && *pin_mb) ctx->pinned_budget = (size_t)strtoull(pin_mb, NULL, 10) << 20;
    ck_params *pm = &ctx->params;
    if (pm->tile != 0) {
        if (pm->tile < 32 || pm->tile % 32 != 0 || pm->tile_overlap < 0 || pm->tile_overlap >= pm->tile)
            return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL,
                                           "tile %d / overlap %d: the tile must be a multiple of 32 and the overlap "
                                           "in [0, tile)", pm->tile, pm->tile_overlap));
        pm->size = pm->tile; /* the model runs at the tile size; pos_embed is resized to it */
    }
    const ck_params *p = &ctx->params;
    if (p->size < 32 || p->size % 32 != 0)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "size %d is not a positive multiple of 32", p->size));
    if (p->refiner_scale != p->refiner_scale)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "refiner scale is not a number"));
    if (!checkpoint_path)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "no checkpoint given"));

    /* the device first: "no GPU" is reported before any checkpoint work */
    ck_status st = CK_OK;
    ctx->be      = make_backend(ctx, &st);
    if (!ctx->be) return init_fail(ctx, st != CK_OK ? st : CK_STATUS_ENODEV);
    /* "random:<config>": generated weights, no file (benchmarks, smoke runs) */
    st = ck_random_weights_is_spec(checkpoint_path) ? ck_random_checkpoint(&ctx->ckpt, checkpoint_path, &ctx->err)
                                                    : ck_checkpoint_open(&ctx->ckpt, checkpoint_path, &ctx->err);
    if (st != CK_OK) return init_fail(ctx, st);
    ck_checkpoint_canonicalize(&ctx->ckpt);
    st = ck_config_from_checkpoint(&ctx->cfg, &ctx->ckpt, p->size, p->head_dim, &ctx->err);
    if (st != CK_OK) return init_fail(ctx, st);
    st = ck_weights_load(&ctx->w, &ctx->cfg, &ctx->ckpt, ctx->be, &ctx->err);
    if (st != CK_OK) return init_fail(ctx, st);
    st = plan(ctx);
    if (st != CK_OK) return init_fail(ctx, st);
    const size_t n = (size_t)p->size * p->size * 4;
    ctx->host_x    = malloc(n * sizeof(float));
    ctx->host_out  = malloc(n * sizeof(float));
    if (ctx->be->act_dtype != CK_DTYPE_F32) ctx->host_x16 = malloc(n * sizeof(uint16_t));
    if (!ctx->host_x || !ctx->host_out || (ctx->be->act_dtype != CK_DTYPE_F32 && !ctx->host_x16))
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for S=%d frames", p->size));
    ck_config_log(&ctx->cfg);
    CK_LOG_INFO("%s: weights %.1f MiB on device (+ mapped file), activations %.1f MiB", ctx->be->name,
                ctx->w.bytes / 1048576.0, ctx->act_bytes / 1048576.0);
    return CK_OK;
}

void ck_ctx_free(ck_ctx *ctx) {
    if (!ctx) return;
    if (ctx->be) {
        if (ctx->graph_ready && ctx->be->ext.graph_reset) ctx->be->ext.graph_reset(ctx->be);
        ck_weights_free(&ctx->w);
        if (ctx->pre_dev) ctx->be->free(ctx->be, ctx->pre_dev);
        if (ctx->post_dev) ctx->be->free(ctx->be, ctx->post_dev);
        if (ctx->act_block) ctx->be->free(ctx->be, ctx->act_block);
        ctx->be->destroy(ctx->be);
    }
    ck_checkpoint_close(&ctx->ckpt);
    free(ctx->host_x);
    free(ctx->host_out);
    free(ctx->pre_scratch);
    free(ctx->host_x16);
    free(ctx->pre_taps);
    free(ctx->post_taps);
    free(ctx->enc_seg_off_host);
    free(ctx);
}

const char *ck_ctx_last_error(const ck_ctx *ctx) {
    if (!ctx) return "out of memory";
    return ctx->err.msg[0] ? ctx->err.msg : "no error";
}

const ck_params *ck_ctx_params(const ck_ctx *ctx) { return &ctx->params; }
size_t           ck_ctx_activation_bytes(const ck_ctx *ctx) { return ctx->act_bytes; }
size_t           ck_ctx_weight_bytes(const ck_ctx *ctx) { return ctx->w.bytes; }

/* The input always sits at the start of the arena, so a captured graph stays valid across frames. */
static ck_tensor input_tensor(ck_ctx *ctx) {
    const int64_t shape[4] = {1, ctx->cfg.size, ctx->cfg.size, 4};
    return ck_tensor_make(ctx->act_block, ctx->be->act_dtype, 4, shape);
}

/* host_x (float32) → the input tensor. A 16-bit engine gets 16-bit values (rounded to nearest even here,
 * as the device conversion would): half the bytes over the bus and no float32 copy on the device. */
ck_status ck__ctx_upload(ck_ctx *ctx) {
    ck_tensor     x = input_tensor(ctx);
    const int64_t n = ck_tensor_numel(&x);
    if (x.dtype == CK_DTYPE_F32) {
        ctx->be->upload(ctx->be, x.data, ctx->host_x, ck_tensor_nbytes(&x));
        return CK_OK;
    }
    uint16_t   *h  = ctx->host_x16;
    const float *f = ctx->host_x;
    if (x.dtype == CK_DTYPE_F16) {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) h[i] = ck_f32_to_f16(f[i]);
    } else {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) h[i] = ck_f32_to_bf16(f[i]);
    }
    ctx->be->upload(ctx->be, x.data, h, ck_tensor_nbytes(&x));
    return CK_OK;
}

static void enqueue_forward(ck_ctx *ctx) {
    ck_arena_reset(&ctx->arena, 0);
    ck_exec   ex = exec_for(ctx, 0);
    ck_tensor x  = CK_NEW(&ex, 1, ctx->cfg.size, ctx->cfg.size, 4);
    CK_ASSERT(x.data == ctx->act_block);
    ck_model_forward(&ex, &ctx->cfg, &ctx->w, &x, ctx->params.refiner_scale, ctx->params.use_refiner,
                     ctx->params.keep_intermediates, &ctx->last);
}

ck_status ck__ctx_compute(ck_ctx *ctx) {
    ck_backend *be = ctx->be;
    if (!use_graph(ctx)) {
        enqueue_forward(ctx);
        return CK_OK;
    }
    if (!ctx->graph_ready) { /* first frame: record the whole forward once ("compile") */
        /* One eager forward first: ops make their one-time choices (cuDNN plans, weight layouts) outside
         * capture, where they may allocate and time; the capture then records the chosen paths. */
        enqueue_forward(ctx);
        be->synchronize(be);
        if (!be->ext.graph_begin(be)) return ck__fail(&ctx->err, CK_STATUS_EDEVICE, "CUDA graph capture failed to start");
        enqueue_forward(ctx);
        if (!be->ext.graph_end(be)) return ck__fail(&ctx->err, CK_STATUS_EDEVICE, "CUDA graph capture failed");
        ctx->graph_ready = 1;
    }
    if (!be->ext.graph_launch(be)) return ck__fail(&ctx->err, CK_STATUS_EDEVICE, "CUDA graph launch failed");
    return CK_OK;
}

ck_status ck_ctx_warmup(ck_ctx *ctx) {
    if (!ctx) return CK_STATUS_EINVAL;
    if (ctx->failed) return CK_STATUS_EBADSTATE;
    if (ctx->be->device == CK_DEVICE_CPU) return CK_OK;
    ck_tensor x = input_tensor(ctx);
    memset(ctx->host_x, 0, sizeof(float) * (size_t)ck_tensor_numel(&x));
    ck_status st = ck__ctx_upload(ctx);
    if (st == CK_OK) st = ck__ctx_compute(ctx);
    if (st == CK_OK) ctx->be->synchronize(ctx->be);
    if (st != CK_OK) ctx->failed = 1;
    return st;
}

ck_status ck__ctx_download(ck_ctx *ctx) {
    ctx->be->download(ctx->be, ctx->host_out, ctx->last.out.data, ck_tensor_nbytes(&ctx->last.out));
    ctx->be->synchronize(ctx->be);
    return CK_OK;
}

ck_status ck__ctx_forward(ck_ctx *ctx) {
    ck_status st = ck__ctx_upload(ctx);
    if (st == CK_OK) st = ck__ctx_compute(ctx);
    if (st == CK_OK) st = ck__ctx_download(ctx);
    if (st != CK_OK) ctx->failed = 1;
    return st;
}

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

/* Lays out the device buffers for frames of w × h and computes the tap tables (once per frame size). */
static ck_status gpu_preprocess_setup(ck_ctx *ctx, int w, int h) {
    ck_backend         *be = ctx->be;
    ck_preprocess_args *a  = &ctx->pre;
    const int           S = ctx->cfg.size, Kx = ck_resize_aa_max_taps(w, S), Ky = ck_resize_aa_max_taps(h, S);
    /* rgb (h,w,3) | hint (h,w) | tmp (h,S,4) | idx_x, w_x (S,Kx) | cnt_x (S) | idx_y, w_y (S,Ky) | cnt_y (S) */
    const size_t sz[9] = {sizeof(float) * 3 * (size_t)w * h, sizeof(float) * (size_t)w * h,
                          sizeof(float) * 4 * (size_t)h * S,  sizeof(int32_t) * (size_t)S * Kx,
                          sizeof(float) * (size_t)S * Kx,     sizeof(int32_t) * S,
                          sizeof(int32_t) * (size_t)S * Ky,   sizeof(float) * (size_t)S * Ky,
                          sizeof(int32_t) * S};
    size_t off[9], total = 0;
    for (int i = 0; i < 9; i++) off[i] = total, total += align256(sz[i]);
    const size_t in_bytes = align256((size_t)S * S * 4 * ck_dtype_size(be->act_dtype)); /* the input x */
    uint8_t     *base;
    if (in_bytes + total <= ctx->act_bytes) {
        base = (uint8_t *)ctx->act_block + in_bytes;
    } else {
        if (total > ctx->pre_dev_bytes) {
            if (ctx->pre_dev) be->free(be, ctx->pre_dev);
            ctx->pre_dev       = be->alloc(be, total);
            ctx->pre_dev_bytes = ctx->pre_dev ? total : 0;
            if (!ctx->pre_dev)
                return ck__fail(&ctx->err, CK_STATUS_EOOM, "cannot allocate %.1f MiB for device pre-processing",
                                total / 1048576.0);
        }
        base = ctx->pre_dev;
    }
    /* the tap tables, laid out as on the device (offsets off[3] .. total) */
    const size_t taps_bytes = total - off[3];
    uint8_t     *taps       = malloc(taps_bytes);
    if (!taps) return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory");
    ck_resize_aa_taps(w, S, Kx, (int32_t *)taps, (float *)(taps + off[4] - off[3]),
                      (int32_t *)(taps + off[5] - off[3]));
    ck_resize_aa_taps(h, S, Ky, (int32_t *)(taps + off[6] - off[3]), (float *)(taps + off[7] - off[3]),
                      (int32_t *)(taps + off[8] - off[3]));
    free(ctx->pre_taps);
    ctx->pre_taps       = taps;
    ctx->pre_taps_bytes = taps_bytes;
    memset(a, 0, sizeof *a);
    a->rgb   = (const float *)(base + off[0]);
    a->hint  = (const float *)(base + off[1]);
    a->tmp   = (float *)(base + off[2]);
    a->idx_x = (const int32_t *)(base + off[3]), a->w_x = (const float *)(base + off[4]);
    a->cnt_x = (const int32_t *)(base + off[5]);
    a->idx_y = (const int32_t *)(base + off[6]), a->w_y = (const float *)(base + off[7]);
    a->cnt_y = (const int32_t *)(base + off[8]);
    a->Kx = Kx, a->Ky = Ky, a->w = w, a->h = h;
    ctx->pre_w = w, ctx->pre_h = h;
    return CK_OK;
}

ck_status ck__ctx_preprocess(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint) {
    const int    S = ctx->cfg.size;
    ck_backend  *be = ctx->be;
    if (be->ext.preprocess && ctx->params.gpu_preprocess != 0 && hint->width == rgb->width &&
        hint->height == rgb->height) {
        if (rgb->width != ctx->pre_w || rgb->height != ctx->pre_h) {
            ck_status st = gpu_preprocess_setup(ctx, rgb->width, rgb->height);
            if (st != CK_OK) return st;
        }
        const size_t npx = (size_t)rgb->width * rgb->height;
        ck_tensor    x   = input_tensor(ctx);
        ctx->pre.x       = &x;
        ctx->pre.input_is_linear = ctx->params.input_is_linear;
        /* all of it every frame: in the arena, the previous forward has overwritten it */
        be->upload(be, (void *)ctx->pre.idx_x, ctx->pre_taps, ctx->pre_taps_bytes);
        be->upload(be, (void *)ctx->pre.rgb, rgb->data, sizeof(float) * 3 * npx);
        be->upload(be, (void *)ctx->pre.hint, hint->data, sizeof(float) * npx);
        be->ext.preprocess(be, &ctx->pre);
        ctx->pre.x = NULL;
        return CK_OK;
    }
    const size_t need = ck_preprocess_scratch_floats(rgb->width, rgb->height, hint->width, hint->height, S);
    if (need > ctx->pre_scratch_floats) { /* grows once per frame size, not per frame */
        free(ctx->pre_scratch);
        ctx->pre_scratch        = malloc(sizeof(float) * need);
        ctx->pre_scratch_floats = ctx->pre_scratch ? need : 0;
        if (!ctx->pre_scratch) return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for pre-processing");
    }
    ck_preprocess(ctx->host_x, rgb->data, rgb->width, rgb->height, hint->data, hint->width, hint->height, S,
                  ctx->params.input_is_linear, ctx->pre_scratch);
    return ck__ctx_upload(ctx);
}

size_t ck_ctx_device_peak_bytes(const ck_ctx *ctx) {
    return ctx->be->ext.mem_peak ? ctx->be->ext.mem_peak(ctx->be) : 0;
}
const char *ck_ctx_device_name(const ck_ctx *ctx) { return ctx->be->name; }

ck_status ck_run_network(ck_ctx *ctx, const float *x_nhwc, float *alpha, float *fg_rgb) {
    if (!ctx) return CK_STATUS_EINVAL;
    if (ctx->failed) return CK_STATUS_EBADSTATE;
    const size_t P = (size_t)ctx->cfg.size * ctx->cfg.size;
    memcpy(ctx->host_x, x_nhwc, P * 4 * sizeof(float));
    ck_status st = ck__ctx_forward(ctx);
    if (st != CK_OK) return st;
    for (size_t i = 0; i < P; i++) {
        const float *o = ctx->host_out + 4 * i;
        if (alpha) alpha[i] = o[0];
        if (fg_rgb) fg_rgb[3 * i] = o[1], fg_rgb[3 * i + 1] = o[2], fg_rgb[3 * i + 2] = o[3];
    }
    return CK_OK;
}

static int image_ok(const ck_image *im, int channels) {
    return im && im->data && im->width > 0 && im->height > 0 && im->channels == channels;
}

ck_status ck__check_frame(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint) {
    if (ctx->failed) return CK_STATUS_EBADSTATE;
    if (!image_ok(rgb, 3)) return ck__fail(&ctx->err, CK_STATUS_EINVAL, "input image must be a non-empty 3-channel image");
    if (!image_ok(hint, 1)) return ck__fail(&ctx->err, CK_STATUS_EINVAL, "hint must be a non-empty 1-channel image");
    return CK_OK;
}

/* Alpha and fg (straight sRGB) of the whole plate, tile by tile (ck_params.tile). */
static ck_status key_tiled(ck_ctx *ctx, const ck_image *rgb, const float *hint, float *alpha, float *fg) {
    const ck_params *p = &ctx->params;
    const int        w = rgb->width, h = rgb->height, S = ctx->cfg.size;
    const int        tw = S < w ? S : w, th = S < h ? S : h;
    int              ox[4096], oy[4096];
    int              nx = ck_tile_origins(w, tw, p->tile_overlap, ox, 4096);
    int              ny = ck_tile_origins(h, th, p->tile_overlap, oy, 4096);

    /* single-tile shortcut: the hint's bounding box (hint > 0.01) plus 64 px fits one tile */
    int bx0 = w, by0 = h, bx1 = -1, by1 = -1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if (hint[(size_t)y * w + x] > 0.01f) {
                bx0 = x < bx0 ? x : bx0, bx1 = x > bx1 ? x : bx1;
                by0 = y < by0 ? y : by0, by1 = y > by1 ? y : by1;
            }
    if (bx1 >= 0 && (nx > 1 || ny > 1)) {
        const int mx0 = bx0 - 64 > 0 ? bx0 - 64 : 0, mx1 = bx1 + 64 < w - 1 ? bx1 + 64 : w - 1;
        const int my0 = by0 - 64 > 0 ? by0 - 64 : 0, my1 = by1 + 64 < h - 1 ? by1 + 64 : h - 1;
        if (mx1 - mx0 + 1 <= tw && my1 - my0 + 1 <= th) {
            int cx = (mx0 + mx1 + 1) / 2 - tw / 2, cy = (my0 + my1 + 1) / 2 - th / 2;
            cx = cx < 0 ? 0 : cx + tw > w ? w - tw : cx;
            cy = cy < 0 ? 0 : cy + th > h ? h - th : cy;
            ox[0] = cx, oy[0] = cy, nx = ny = 1;
            CK_LOG_DBG("tiled: hint fits one tile at (%d, %d)", cx, cy);
        }
    }
    const size_t F    = (size_t)w * h;
    float       *acc  = calloc(F * 4, sizeof(float)); /* weighted alpha, fg */
    float       *wsum = calloc(F, sizeof(float));
    float       *crgb = malloc(sizeof(float) * (size_t)tw * th * 3), *chint = malloc(sizeof(float) * (size_t)tw * th);
    float       *tout = malloc(sizeof(float) * (size_t)tw * th * 4);
    float       *scr  = malloc(sizeof(float) * ck_preprocess_scratch_floats(tw, th, tw, th, S));
    if (!acc || !wsum || !crgb || !chint || !tout || !scr) {
        free(acc), free(wsum), free(crgb), free(chint), free(tout), free(scr);
        return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for tiles");
    }
    ck_status st = CK_OK;
    for (int ty = 0; ty < ny && st == CK_OK; ty++)
        for (int tx = 0; tx < nx && st == CK_OK; tx++) {
            const int x0 = ox[tx], y0 = oy[ty];
            float     hmin = 1e30f, hmax = -1e30f;
            for (int y = 0; y < th; y++) {
                memcpy(crgb + (size_t)y * tw * 3, rgb->data + ((size_t)(y0 + y) * w + x0) * 3, sizeof(float) * tw * 3);
                memcpy(chint + (size_t)y * tw, hint + (size_t)(y0 + y) * w + x0, sizeof(float) * tw);
                for (int x = 0; x < tw; x++) {
                    const float v = chint[(size_t)y * tw + x];
                    hmin = v < hmin ? v : hmin, hmax = v > hmax ? v : hmax;
                }
            }
            if (hmax < 0.01f || hmin > 0.99f) { /* hint-driven skip */
                const int fgnd = hmin > 0.99f;
                for (size_t i = 0; i < (size_t)tw * th; i++) {
                    tout[4 * i] = fgnd ? 1.0f : 0.0f;
                    for (int c = 0; c < 3; c++) {
                        const float v   = crgb[3 * i + c];
                        tout[4 * i + 1 + c] = fgnd ? (p->input_is_linear ? ck_linear_to_srgb(v) : v) : 0.0f;
                    }
                }
            } else {
                ck_preprocess(ctx->host_x, crgb, tw, th, chint, tw, th, S, p->input_is_linear, scr);
                st = ck__ctx_forward(ctx);
                if (st != CK_OK) break;
                if (tw == S && th == S) memcpy(tout, ctx->host_out, sizeof(float) * (size_t)S * S * 4);
                else ck_resize_lanczos4(tout, tw, th, ctx->host_out, S, S, 4);
            }
            for (int y = 0; y < th; y++) {
                const float wy = ck_tile_weight_1d(y, y0, th, h, p->tile_overlap);
                for (int x = 0; x < tw; x++) {
                    const float  wt = wy * ck_tile_weight_1d(x, x0, tw, w, p->tile_overlap);
                    const size_t o  = (size_t)(y0 + y) * w + x0 + x, t = (size_t)y * tw + x;
                    wsum[o] += wt;
                    for (int c = 0; c < 4; c++) acc[o * 4 + c] += wt * tout[t * 4 + c];
                }
            }
        }
    for (size_t i = 0; i < F && st == CK_OK; i++) {
        const float inv = wsum[i] > 0 ? 1.0f / wsum[i] : 0.0f; /* 0 outside a single shortcut tile */
        alpha[i]        = acc[i * 4] * inv;
        for (int c = 0; c < 3; c++) fg[i * 3 + c] = acc[i * 4 + 1 + c] * inv;
    }
    free(acc), free(wsum), free(crgb), free(chint), free(tout), free(scr);
    return st;
}

/* alpha (w,h,1) and fg (w,h,3) buffers of res, zeroed struct on failure. */
static int alloc_keyed(ck_result *res, int w, int h) {
    const size_t F = (size_t)w * h;
    memset(res, 0, sizeof *res);
    res->alpha = (ck_image){w, h, 1, malloc(sizeof(float) * F)};
    res->fg    = (ck_image){w, h, 3, malloc(sizeof(float) * F * 3)};
    if (res->alpha.data && res->fg.data) return 1;
    ck_result_free(res);
    return 0;
}

ck_status ck_key_image_begin(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, ck_result *res) {
    if (!ctx || !res) return CK_STATUS_EINVAL;
    memset(res, 0, sizeof *res);
    ck_status st = ck__check_frame(ctx, rgb, hint);
    if (st != CK_OK) return st;
    const int S = ctx->cfg.size, w = rgb->width, h = rgb->height;

    if (ctx->params.tile > 0) {
        /* the hint at the plate's size first (bilinear, as CorridorKey when sizes differ) */
        float *hint_full = hint->data;
        if (hint->width != w || hint->height != h) {
            hint_full = malloc(sizeof(float) * (size_t)w * h);
            if (!hint_full) return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory");
            ck_resize_linear_cv(hint_full, w, h, hint->data, hint->width, hint->height, 1);
        }
        st = alloc_keyed(res, w, h) ? CK_OK : ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for %dx%d outputs", w, h);
        if (st == CK_OK) st = key_tiled(ctx, rgb, hint_full, res->alpha.data, res->fg.data);
        if (hint_full != hint->data) free(hint_full);
        if (st != CK_OK) ck_result_free(res);
        return st;
    }

    st = ck__ctx_preprocess(ctx, rgb, hint);
    if (st == CK_OK) st = ck__ctx_compute(ctx);
    if (st == CK_OK) st = ck__ctx_download(ctx);
    if (st != CK_OK) {
        ctx->failed = 1;
        return st;
    }
    if (!alloc_keyed(res, S, S)) return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for %dx%d outputs", S, S);
    const size_t P = (size_t)S * S;
    float       *a = res->alpha.data, *fg = res->fg.data;
    for (size_t i = 0; i < P; i++) {
        const float *o = ctx->host_out + 4 * i;
        a[i] = o[0], fg[3 * i] = o[1], fg[3 * i + 1] = o[2], fg[3 * i + 2] = o[3];
    }
    return CK_OK;
}

ck_status ck_result_finish(const ck_params *p, int w, int h, ck_result *res) {
    if (!p || !res || w <= 0 || h <= 0 || !res->alpha.data || !res->fg.data) return CK_STATUS_EINVAL;
    if (res->alpha.width != w || res->alpha.height != h) {
        /* back to the frame size with OpenCV's Lanczos-4, as CorridorKey's CLI path */
        ck_result sized;
        if (!alloc_keyed(&sized, w, h)) return CK_STATUS_EOOM;
        ck_resize_lanczos4(sized.alpha.data, w, h, res->alpha.data, res->alpha.width, res->alpha.height, 1);
        ck_resize_lanczos4(sized.fg.data, w, h, res->fg.data, res->fg.width, res->fg.height, 3);
        ck_result_free(res);
        *res = sized;
    }
    const size_t F = (size_t)w * h;
    free(res->processed.data), free(res->comp.data);
    res->processed = (ck_image){w, h, 4, malloc(sizeof(float) * F * 4)};
    res->comp      = p->comp ? (ck_image){w, h, 3, malloc(sizeof(float) * F * 3)} : (ck_image){0, 0, 0, NULL};
    if (!res->processed.data || (p->comp && !res->comp.data)) {
        ck_result_free(res);
        return CK_STATUS_EOOM;
    }
    ck_post_params pp = {p->despill, p->despeckle, p->despeckle_size, p->comp};
    ck_status      st = ck_postprocess(res->processed.data, p->comp ? res->comp.data : NULL, res->alpha.data,
                                       res->fg.data, w, h, &pp);
    if (st != CK_OK) ck_result_free(res);
    return st;
}

ck_status ck_key_image(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, ck_result *res) {
    ck_status st = ck_key_image_begin(ctx, rgb, hint, res);
    if (st != CK_OK) return st;
    st = ck_result_finish(&ctx->params, rgb->width, rgb->height, res);
    if (st != CK_OK) return ck__fail(&ctx->err, st, "post-processing of a %dx%d frame failed (out of memory)", rgb->width,
                                     rgb->height);
    return CK_OK;
}

void ck_result_free(ck_result *res) {
    if (!res) return;
    free(res->alpha.data);
    free(res->fg.data);
    free(res->processed.data);
    free(res->comp.data);
    memset(res, 0, sizeof *res);
}
