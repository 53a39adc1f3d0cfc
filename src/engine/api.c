/* Public API (include/ckey.h): context lifetime, planning, and the frame path
 * pre-process → network → resize back → post-process. */
#include "engine/ctx.h"
#include "frame/colorspace.h"
#include "frame/frame_ops.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CK_STR2(x) #x
#define CK_STR(x)  CK_STR2(x)
const char *ck_version(void) { return CK_STR(CK_VERSION_MAJOR) "." CK_STR(CK_VERSION_MINOR) "." CK_STR(CK_VERSION_PATCH); }

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
    p.fg_unmix        = -1;
    return p;
}

static ck_status init_fail(ck_ctx *ctx, ck_status st) {
    ctx->failed = 1;
    return st;
}

/* Images per forward: params.max_batch, or auto (0): in tiled mode on CUDA as many tiles as fit
 * CK_AUTO_BATCH_BYTES of activations (planned at B = 1 and 2: the arena grows by a fixed amount per
 * image), at most 16; else 1. */
#define CK_AUTO_BATCH_BYTES ((size_t)2 << 30)

static size_t plan_bytes(ck_ctx *ctx, int B) {
    const int S = ctx->cfg.size;
    ck_arena_init(&ctx->arena, NULL, 0);
    ck_exec      ex = ck__ctx_exec(ctx, 1);
    ck_tensor    x  = CK_NEW(&ex, B, S, S, 4); /* the input, in the activation dtype */
    ck_model_out o;
    ck_model_forward(&ex, &ctx->cfg, &ctx->w, &x, ctx->params.refiner_scale, ctx->params.use_refiner,
                     ctx->params.keep_intermediates, &o);
    return ctx->arena.high;
}

static int resolve_batch(ck_ctx *ctx) {
    if (ctx->params.max_batch > 0) return ctx->params.max_batch;
    if (ctx->params.tile <= 0 || ctx->be->device != CK_DEVICE_CUDA) return 1;
    const size_t one = plan_bytes(ctx, 1), two = plan_bytes(ctx, 2);
    const size_t per = two > one ? two - one : one;
    int          n   = (int)(CK_AUTO_BATCH_BYTES / (per ? per : 1));
    return n < 1 ? 1 : n > 16 ? 16 : n;
}

/* Plans (measures) the forward at S for every batch size up to max_batch, then allocates the
 * activation arena once, for the largest. */
static ck_status plan(ck_ctx *ctx) {
    const int S    = ctx->cfg.size;
    ctx->max_batch = resolve_batch(ctx);
    size_t high    = 0;
    for (int B = 1; B <= ctx->max_batch; B++) {
        const size_t b = plan_bytes(ctx, B);
        high           = b > high ? b : high;
    }
    ctx->act_bytes = high;
    ctx->act_block = ctx->be->alloc(ctx->be, ctx->act_bytes);
    /* an automatic batch gives way to a device with less memory: halved until the arena fits */
    while (!ctx->act_block && ctx->params.max_batch == 0 && ctx->max_batch > 1) {
        ctx->max_batch /= 2;
        high = 0;
        for (int B = 1; B <= ctx->max_batch; B++) {
            const size_t b = plan_bytes(ctx, B);
            high           = b > high ? b : high;
        }
        ctx->act_bytes = high;
        ctx->act_block = ctx->be->alloc(ctx->be, ctx->act_bytes);
    }
    if (!ctx->act_block)
        return ck__fail(&ctx->err, CK_STATUS_EOOM, "cannot allocate %.1f MiB of activations on %s for S=%d%s",
                        ctx->act_bytes / 1048576.0, ctx->be->name, S,
                        ctx->max_batch > 1 ? " (lower the batch size)" : "");
    ck_arena_init(&ctx->arena, ctx->act_block, ctx->act_bytes);
    return CK_OK;
}

ck_frame_params ck_ctx_frame_params(const ck_ctx *ctx) {
    const ck_params *p = &ctx->params;
    return (ck_frame_params){p->refiner_scale, p->despill, p->despeckle, p->despeckle_size, p->comp};
}

ck_status ck_ctx_set_frame_params(ck_ctx *ctx, const ck_frame_params *fp) {
    if (!ctx || !fp) return CK_STATUS_EINVAL;
    if (!ctx->failed) ctx->err.msg[0] = '\0';
    if (!(fp->refiner_scale == fp->refiner_scale) || !isfinite(fp->refiner_scale))
        return ck__fail(&ctx->err, CK_STATUS_EINVAL, "refiner scale is not a finite number");
    if (!(fp->despill >= 0.0f && fp->despill <= 1.0f))
        return ck__fail(&ctx->err, CK_STATUS_EINVAL, "despill %g outside 0..1", (double)fp->despill);
    if (fp->despeckle_size < 1)
        return ck__fail(&ctx->err, CK_STATUS_EINVAL, "despeckle size %d is not positive", fp->despeckle_size);
    ck_params *p = &ctx->params;
    /* the scale is an argument of the recorded kernels: the graphs are recorded again at their next use */
    if (fp->refiner_scale != p->refiner_scale) ctx->graph_ready = 0;
    p->refiner_scale = fp->refiner_scale, p->despill = fp->despill, p->despeckle = fp->despeckle != 0;
    p->despeckle_size = fp->despeckle_size, p->comp = fp->comp != 0;
    return CK_OK;
}

int ck_ctx_max_batch(const ck_ctx *ctx) { return ctx ? ctx->max_batch : 0; }

/* A new context with `params` checked and normalized (the fields the model decides are checked against
 * it later); *out is set whatever happens, so that the message can be read. */
static ck_status ctx_new(ck_ctx **out, const ck_params *params) {
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
    if (pm->max_batch < 0 || pm->max_batch > CK_MAX_BATCH)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "batch %d: must be between 1 and %d (0 = auto)",
                                       pm->max_batch, CK_MAX_BATCH));
    if (pm->tile != 0) {
        if (pm->tile < 32 || pm->tile % 32 != 0 || pm->tile_overlap < 0 || pm->tile_overlap >= pm->tile)
            return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL,
                                           "tile %d / overlap %d: the tile must be a multiple of 32 and the overlap "
                                           "in [0, tile)", pm->tile, pm->tile_overlap));
        pm->size = pm->tile; /* the model runs at the tile size; pos_embed is resized to it */
    }
    if (pm->colorspace < 0 || pm->colorspace >= CK_CS_COUNT)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "colour space %d: not a ck_colorspace", pm->colorspace));
    if (pm->colorspace != CK_CS_DEFAULT) pm->input_is_linear = pm->colorspace != CK_CS_SRGB; /* converted plates are linear */
    pm->colorspace = ck_colorspace_resolve(pm->colorspace, pm->input_is_linear);
    if (pm->size < 32 || pm->size % 32 != 0)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "size %d is not a positive multiple of 32", pm->size));
    if (pm->refiner_scale != pm->refiner_scale)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "refiner scale is not a number"));
    if (pm->device_index < 0)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "device index %d: must be 0 or more", pm->device_index));
    if (pm->fg_unmix < -1 || pm->fg_unmix > 1)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "fg un-mixing %d: must be 1 (on), 0 (off) or -1 (auto)",
                                       pm->fg_unmix));
    return CK_OK;
}

/* The context's own part over model m (whose reference it takes): its backend on the model's device, the
 * activation arena planned for its batch sizes, host buffers. */
static ck_status ctx_attach(ck_ctx *ctx, ck_model *m) {
    ctx->model = m;
    ctx->cfg   = m->cfg;
    if (ctx->params.fg_unmix < 0) ctx->params.fg_unmix = m->builtin; /* auto: the built-in keyer's default */
    if (ctx->params.fg_unmix > 0) CK_LOG_INFO("fg un-mixed from the plate where the matte is above %.2f", CK_UNMIX_ALPHA_LO);
    ctx->w     = m->w; /* the model's tensors: never freed through the context */
    ck_params bp    = ctx->params;
    bp.device       = m->params.device;
    bp.precision    = m->params.precision;
    bp.device_index = m->params.device_index;
    ck_status st    = CK_OK;
    ctx->be         = ck__make_backend(&bp, 0, &ctx->err, &st);
    if (!ctx->be) return init_fail(ctx, st != CK_OK ? st : CK_STATUS_ENODEV);
    st = plan(ctx);
    if (st == CK_OK) st = ck__ctx_device_status(ctx);
    if (st == CK_OK) st = ck__ctx_host_batch(ctx, 1);
    if (st != CK_OK) return init_fail(ctx, st);
    ck_config_log(&ctx->cfg);
    CK_LOG_INFO("%s: weights %.1f MiB on device (+ the checkpoint in host memory), activations %.1f MiB%s", ctx->be->name,
                ctx->w.bytes / 1048576.0, ctx->act_bytes / 1048576.0, "");
    if (ctx->max_batch > 1) CK_LOG_INFO("batches of up to %d images per forward", ctx->max_batch);
    return CK_OK;
}

ck_status ck_ctx_init(ck_ctx **out, const char *checkpoint_path, const ck_params *params) {
    ck_status st = ctx_new(out, params);
    if (st != CK_OK) return st;
    ck_ctx *ctx = *out;
    if (!checkpoint_path)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "no checkpoint given"));
    ck_model *m = NULL;
    st          = ck__model_load(&m, checkpoint_path, &ctx->params, &ctx->err);
    if (st != CK_OK) return init_fail(ctx, st);
    return ctx_attach(ctx, m); /* the loader's reference becomes the context's */
}

ck_status ck_ctx_init_model(ck_ctx **out, ck_model *model, const ck_params *params) {
    ck_status st = ctx_new(out, params);
    if (st != CK_OK) return st;
    ck_ctx *ctx = *out;
    if (!model) return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "no model given"));
    /* what the model fixed: the size its pos_embed was resized to, the device and the weights' dtype */
    const ck_params *mp = &model->params, *p = &ctx->params;
    if (p->size != mp->size)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "size %d: the model was loaded for %d%s", p->size,
                                       mp->size, p->tile ? " (tiles run the model at the tile size)" : ""));
    if (p->device != CK_DEVICE_AUTO && p->device != mp->device)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "device %s: the model was loaded on %s",
                                       p->device == CK_DEVICE_CUDA ? "cuda" : "cpu",
                                       mp->device == CK_DEVICE_CUDA ? "cuda" : "cpu"));
    if (p->precision != CK_PREC_AUTO && p->precision != mp->precision)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "precision %s: the model was loaded in %s",
                                       ck_dtype_name(p->precision == CK_PREC_FP16   ? CK_DTYPE_F16
                                                     : p->precision == CK_PREC_BF16 ? CK_DTYPE_BF16
                                                                                    : CK_DTYPE_F32),
                                       ck_dtype_name(model->be->act_dtype)));
    if (p->head_dim != 0 && p->head_dim != mp->head_dim)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "head dim %d: the model has %d", p->head_dim,
                                       mp->head_dim));
    if (mp->device == CK_DEVICE_CUDA && p->device_index != mp->device_index)
        return init_fail(ctx, ck__fail(&ctx->err, CK_STATUS_EINVAL, "device index %d: the model was loaded on device %d",
                                       p->device_index, mp->device_index));
    return ctx_attach(ctx, ck__model_retain(model));
}

ck_status ck_model_load(ck_model **out, const char *checkpoint_path, const ck_params *params, char *msg, size_t msg_len) {
    ck_err    err = {{0}};
    ck_params p   = params ? *params : ck_params_default();
    ck_status st;
    if (!out) return CK_STATUS_EINVAL;
    *out = NULL;
    if (p.tile != 0) p.size = p.tile;
    if (!checkpoint_path) st = ck__fail(&err, CK_STATUS_EINVAL, "no checkpoint given");
    else if (p.size < 32 || p.size % 32 != 0) st = ck__fail(&err, CK_STATUS_EINVAL, "size %d is not a positive multiple of 32", p.size);
    else if (p.device_index < 0) st = ck__fail(&err, CK_STATUS_EINVAL, "device index %d: must be 0 or more", p.device_index);
    else st = ck__model_load(out, checkpoint_path, &p, &err);
    if (msg && msg_len) snprintf(msg, msg_len, "%s", st == CK_OK ? "" : err.msg);
    return st;
}

void ck_ctx_free(ck_ctx *ctx) {
    if (!ctx) return;
    if (ctx->be) {
        if (ctx->graph_ready && ctx->be->ext.graph_reset) ctx->be->ext.graph_reset(ctx->be);
        if (ctx->pre_dev) ctx->be->free(ctx->be, ctx->pre_dev);
        if (ctx->post_dev) ctx->be->free(ctx->be, ctx->post_dev);
        ck__tiled_free(ctx);
        if (ctx->act_block) ctx->be->free(ctx->be, ctx->act_block);
        ctx->be->destroy(ctx->be);
    }
    ck_model_release(ctx->model);
    free(ctx->host_x);
    free(ctx->host_out);
    free(ctx->pre_scratch);
    free(ctx->into_keyed);
    free(ctx->into_ws);
    free(ctx->cs_plate);
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

ck_status ck_ctx_warmup(ck_ctx *ctx) {
    if (!ctx) return CK_STATUS_EINVAL;
    if (ctx->failed) return ck__ctx_failed_status(ctx);
    if (ctx->be->device == CK_DEVICE_CPU) return CK_OK;
    /* tiled: the batch the tiles of a plate fill (usually all of max_batch) */
    const int       n = ctx->params.tile > 0 ? ctx->max_batch : 1;
    const ck_tensor x = ck__ctx_input(ctx, n);
    ctx->be->zero(ctx->be, &x); /* a blank input */
    ck_status st = ck__ctx_compute_n(ctx, n);
    if (st == CK_OK) {
        ctx->be->synchronize(ctx->be);
        st = ck__ctx_device_status(ctx);
    }
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
    /* behind the input x of the largest batch: the slots filled before stay intact */
    const size_t in_bytes = align256((size_t)ctx->max_batch * S * S * 4 * ck_dtype_size(be->act_dtype));
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

ck_status ck__ctx_working_plate(ck_ctx *ctx, const ck_image *rgb, ck_image *out) {
    *out = *rgb;
    if (!ck_colorspace_converts(ctx->params.colorspace)) return CK_OK;
    const size_t need = (size_t)3 * rgb->width * rgb->height;
    if (need > ctx->cs_plate_floats) { /* grows once per frame size, not per frame */
        free(ctx->cs_plate);
        ctx->cs_plate        = malloc(sizeof(float) * need);
        ctx->cs_plate_floats = ctx->cs_plate ? need : 0;
        if (!ctx->cs_plate)
            return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory converting a %dx%d plate from %s", rgb->width,
                            rgb->height, ck_colorspace_name((ck_colorspace)ctx->params.colorspace));
    }
    ck_colorspace_plate_to_working((ck_colorspace)ctx->params.colorspace, ctx->cs_plate, rgb->data,
                                   (size_t)rgb->width * rgb->height);
    out->data = ctx->cs_plate;
    return CK_OK;
}

ck_status ck__ctx_preprocess_slot(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, int slot) {
    const int   S  = ctx->cfg.size;
    ck_backend *be = ctx->be;
    CK_ASSERT(slot >= 0 && slot < ctx->max_batch);
    if (be->ext.preprocess && ctx->params.gpu_preprocess != 0 && hint->width == rgb->width &&
        hint->height == rgb->height) {
        if (rgb->width != ctx->pre_w || rgb->height != ctx->pre_h) {
            ck_status st = gpu_preprocess_setup(ctx, rgb->width, rgb->height);
            if (st != CK_OK) return st;
        }
        const size_t    npx  = (size_t)rgb->width * rgb->height;
        const ck_tensor all  = ck__ctx_input(ctx, slot + 1);
        const size_t    per  = ck_tensor_nbytes(&all) / (size_t)(slot + 1);
        ck_tensor       x    = ck_tensor_make((uint8_t *)all.data + per * slot, all.dtype, 4, (int64_t[]){1, S, S, 4});
        ctx->pre.x           = &x;
        ctx->pre.pitch       = rgb->width;
        ctx->pre.input_is_linear = ctx->params.input_is_linear;
        /* a converted colour space is decoded on the device, in place, before the resize */
        ctx->pre.colorspace = ck_colorspace_converts(ctx->params.colorspace) ? ctx->params.colorspace : 0;
        ck_colorspace_matrix_to_working((ck_colorspace)ctx->params.colorspace, ctx->pre.to_working);
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
    ck_status st = ck__ctx_host_batch(ctx, slot + 1);
    ck_image  plate;
    if (st == CK_OK) st = ck__ctx_working_plate(ctx, rgb, &plate);
    if (st != CK_OK) return st;
    ck_preprocess(ctx->host_x + (size_t)slot * S * S * 4, plate.data, rgb->width, rgb->height, hint->data, hint->width,
                  hint->height, S, ctx->params.input_is_linear, ctx->pre_scratch);
    ck__ctx_upload_slots(ctx, slot, 1);
    return CK_OK;
}

ck_status ck__ctx_preprocess(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint) {
    return ck__ctx_preprocess_slot(ctx, rgb, hint, 0);
}

/* The context's own peak plus its model's weights (counted in each context of a shared model). */
size_t ck_ctx_device_peak_bytes(const ck_ctx *ctx) {
    if (!ctx->be->ext.mem_peak) return 0;
    const ck_backend *mb = ctx->model->be;
    return ctx->be->ext.mem_peak(ctx->be) + (mb->ext.mem_peak ? mb->ext.mem_peak((ck_backend *)mb) : 0);
}
const char *ck_ctx_device_name(const ck_ctx *ctx) { return ctx->be->name; }
const char *ck_ctx_precision_name(const ck_ctx *ctx) { return ck_dtype_name(ctx->be->act_dtype); }

ck_status ck_run_network_batch(ck_ctx *ctx, int n, const float *x_nhwc, float *alpha, float *fg_rgb) {
    if (!ctx || !x_nhwc) return CK_STATUS_EINVAL;
    if (ctx->failed) return ck__ctx_failed_status(ctx);
    ck__ctx_begin_call(ctx);
    if (n < 1 || n > ctx->max_batch)
        return ck__fail(&ctx->err, CK_STATUS_EINVAL, "a batch of %d images: this context takes 1 to %d", n,
                        ctx->max_batch);
    ck_status st = ck__ctx_host_batch(ctx, n);
    if (st != CK_OK) return st;
    const size_t P = (size_t)ctx->cfg.size * ctx->cfg.size * n;
    memcpy(ctx->host_x, x_nhwc, P * 4 * sizeof(float));
    st = ck__ctx_forward_n(ctx, n);
    if (st != CK_OK) return st;
    for (size_t i = 0; i < P; i++) {
        const float *o = ctx->host_out + 4 * i;
        if (alpha) alpha[i] = o[0];
        if (fg_rgb) fg_rgb[3 * i] = o[1], fg_rgb[3 * i + 1] = o[2], fg_rgb[3 * i + 2] = o[3];
    }
    return CK_OK;
}

ck_status ck_run_network(ck_ctx *ctx, const float *x_nhwc, float *alpha, float *fg_rgb) {
    return ck_run_network_batch(ctx, 1, x_nhwc, alpha, fg_rgb);
}

static int image_ok(const ck_image *im, int channels) {
    return im && im->data && im->width > 0 && im->height > 0 && im->channels == channels;
}

void ck__ctx_begin_call(ck_ctx *ctx) {
    ctx->err.msg[0] = '\0';
    if (ctx->params.threads > 0) omp_set_num_threads(ctx->params.threads);
}

ck_status ck__check_frame(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint) {
    if (ctx->failed) return ck__ctx_failed_status(ctx);
    if (!image_ok(rgb, 3)) return ck__fail(&ctx->err, CK_STATUS_EINVAL, "input image must be a non-empty 3-channel image");
    if (!image_ok(hint, 1)) return ck__fail(&ctx->err, CK_STATUS_EINVAL, "hint must be a non-empty 1-channel image");
    return CK_OK;
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

/* keep_highlights, fg_unmix: the plate as given, for ck_result_finish (it may run after the caller's plate is
 * gone). */
static ck_status keep_plate(ck_ctx *ctx, const ck_image *rgb, ck_result *res) {
    if (!ctx->params.keep_highlights && ctx->params.fg_unmix <= 0) return CK_OK;
    const size_t n = (size_t)3 * rgb->width * rgb->height;
    res->plate     = (ck_image){rgb->width, rgb->height, 3, malloc(sizeof(float) * n)};
    if (!res->plate.data) return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for a %dx%d plate", rgb->width, rgb->height);
    memcpy(res->plate.data, rgb->data, sizeof(float) * n);
    return CK_OK;
}

/* Full frame: pre-processing and the forward into ctx->host_out ((S, S, 4): alpha, then fg). A failure
 * here leaves the context failed: the device may be in any state. */
static ck_status forward_frame(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint) {
    ck_status st = ck__ctx_preprocess(ctx, rgb, hint);
    if (st == CK_OK) st = ck__ctx_compute(ctx);
    if (st == CK_OK) st = ck__ctx_download(ctx);
    if (st != CK_OK) ctx->failed = 1;
    return st;
}

/* The network's n interleaved (alpha, fg) pixels o4 into alpha (n) and fg (n, 3). */
static void split_keyed(const float *o4, size_t n, float *alpha, float *fg) {
    for (size_t i = 0; i < n; i++) {
        const float *o = o4 + 4 * i;
        alpha[i] = o[0], fg[3 * i] = o[1], fg[3 * i + 1] = o[2], fg[3 * i + 2] = o[3];
    }
}

/* Tiled keying (tiled.c) of rgb as given into alpha (w·h) and fg (w·h·3) at the plate's size. blended:
 * w·h·4 floats of scratch for the device path (NULL: allocated for this call). */
static ck_status key_tiled(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, float *alpha, float *fg,
                           float *blended) {
    const int w = rgb->width, h = rgb->height;
    ck_image  plate;
    ck_status st = ck__ctx_working_plate(ctx, rgb, &plate);
    if (st != CK_OK) return st;
    if (!ck__tiled_on_device(ctx, w, h)) return ck__key_tiled_host(ctx, &plate, hint, alpha, fg);
    float *own = blended ? NULL : malloc(sizeof(float) * 4 * (size_t)w * h);
    if (!blended && !own) return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for %dx%d outputs", w, h);
    if (!blended) blended = own;
    const float *dev = NULL;
    st               = ck__key_tiled_device(ctx, &plate, hint, &dev);
    if (st == CK_OK) {
        ctx->be->download(ctx->be, blended, dev, sizeof(float) * 4 * (size_t)w * h);
        st = ck__ctx_device_status(ctx);
    }
    if (st == CK_OK) split_keyed(blended, (size_t)w * h, alpha, fg);
    free(own);
    return st;
}

ck_status ck_key_image_begin(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, ck_result *res) {
    if (!ctx || !res) return CK_STATUS_EINVAL;
    memset(res, 0, sizeof *res);
    if (!ctx->failed) ck__ctx_begin_call(ctx);
    ck_status st = ck__check_frame(ctx, rgb, hint);
    if (st != CK_OK) return st;
    const int S = ctx->cfg.size, w = rgb->width, h = rgb->height;

    if (ctx->params.tile > 0) { /* tiled.c: alpha and fg at the plate's size */
        if (!alloc_keyed(res, w, h)) return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for %dx%d outputs", w, h);
        st = keep_plate(ctx, rgb, res);
        if (st == CK_OK) st = key_tiled(ctx, rgb, hint, res->alpha.data, res->fg.data, NULL);
        if (st != CK_OK) ck_result_free(res);
        return st;
    }

    if ((st = forward_frame(ctx, rgb, hint)) != CK_OK) return st;
    if (!alloc_keyed(res, S, S)) return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for %dx%d outputs", S, S);
    if ((st = keep_plate(ctx, rgb, res)) != CK_OK) {
        ck_result_free(res);
        return st;
    }
    split_keyed(ctx->host_out, (size_t)S * S, res->alpha.data, res->fg.data);
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
        sized.plate = res->plate, res->plate = (ck_image){0, 0, 0, NULL};
        ck_result_free(res);
        *res = sized;
    }
    /* the kept plate (keep_highlights, fg_unmix) must be the frame's */
    const int highlights = p->keep_highlights && res->plate.data;
    const int unmix      = p->fg_unmix > 0 && res->plate.data;
    if ((highlights || unmix) && (res->plate.width != w || res->plate.height != h || res->plate.channels != 3)) {
        ck_result_free(res);
        return CK_STATUS_ESHAPE;
    }
    const size_t F = (size_t)w * h;
    if (unmix && ck_fg_unmix(res->fg.data, res->alpha.data, res->plate.data,
                             ck_colorspace_resolve(p->colorspace, p->input_is_linear), w, h, CK_UNMIX_ALPHA_LO) != CK_OK) {
        ck_result_free(res);
        return CK_STATUS_EOOM;
    }
    free(res->processed.data), free(res->comp.data);
    res->processed = (ck_image){w, h, 4, malloc(sizeof(float) * F * 4)};
    res->comp      = p->comp ? (ck_image){w, h, 3, malloc(sizeof(float) * F * 3)} : (ck_image){0, 0, 0, NULL};
    if (!res->processed.data || (p->comp && !res->comp.data)) {
        ck_result_free(res);
        return CK_STATUS_EOOM;
    }
    ck_post_params pp = {p->despill, p->despeckle, p->despeckle_size, p->comp,
                         ck_colorspace_resolve(p->colorspace, p->input_is_linear), highlights ? res->plate.data : NULL};
    ck_status      st = ck_postprocess(res->processed.data, p->comp ? res->comp.data : NULL, res->alpha.data,
                                       res->fg.data, w, h, &pp);
    free(res->plate.data);
    res->plate = (ck_image){0, 0, 0, NULL};
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

/* *buf holding at least n floats: grown (never shrunk) once per frame size, not per frame. NULL when out of
 * memory (the old buffer freed). */
static float *grow_floats(float **buf, size_t *have, size_t n) {
    if (n > *have) {
        free(*buf);
        *buf  = malloc(sizeof(float) * n);
        *have = *buf ? n : 0;
    }
    return *buf;
}

/* One of out's images as ck_key_image_into needs it, checked before any work is done. */
typedef struct kept_image {
    ck_image   *im;
    int         channels;
    const char *name;
} kept_image;

ck_status ck_key_image_into(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, const ck_params *post,
                            ck_result *out) {
    if (!ctx || !out) return CK_STATUS_EINVAL;
    if (!ctx->failed) ck__ctx_begin_call(ctx);
    ck_status st = ck__check_frame(ctx, rgb, hint);
    if (st != CK_OK) return st;
    const ck_params *p = post ? post : &ctx->params;
    const int        S = ctx->cfg.size, w = rgb->width, h = rgb->height;
    if (out->plate.data)
        return ck__fail(&ctx->err, CK_STATUS_EINVAL, "ck_key_image_into: out->plate must be empty (the plate is read "
                        "in place; a result of ck_key_image_begin is not a kept result)");

    /* every buffer the caller gave checked first: a mismatch changes nothing in out and keys nothing, and the
     * library never frees or resizes the caller's memory (it may not be malloc'd) */
    const kept_image kept[4] = {{&out->alpha, 1, "alpha"}, {&out->fg, 3, "fg"}, {&out->processed, 4, "processed"},
                                {&out->comp, 3, "comp"}};
    const int        n_kept  = p->comp ? 4 : 3; /* without the comp, out->comp is left alone */
    for (int i = 0; i < n_kept; i++) {
        const ck_image *im = kept[i].im;
        if (im->data && (im->width != w || im->height != h || im->channels != kept[i].channels))
            return ck__fail(&ctx->err, CK_STATUS_ESHAPE,
                            "ck_key_image_into: out->%s is %dx%d with %d channels; this frame's is %dx%d with %d "
                            "(free it and pass it empty for a frame of another size)",
                            kept[i].name, im->width, im->height, im->channels, w, h, kept[i].channels);
    }
    for (int i = 0; i < n_kept; i++) {
        ck_image *im = kept[i].im;
        if (im->data) continue;
        /* the caller's from now on, as ck_key_image's buffers are (ck_result_free) */
        float *d = malloc(sizeof(float) * (size_t)w * h * kept[i].channels);
        if (!d) return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for a %dx%d %s buffer", w, h, kept[i].name);
        *im = (ck_image){w, h, kept[i].channels, d};
    }
    for (int i = 0; i < n_kept; i++) /* what the keying below writes w × h × channels floats into */
        CK_ASSERT(kept[i].im->data && kept[i].im->width == w && kept[i].im->height == h &&
                  kept[i].im->channels == kept[i].channels);

    if (ctx->params.tile > 0) { /* alpha and fg come at the plate's size: straight into out */
        float *blended = NULL;
        if (ck__tiled_on_device(ctx, w, h) &&
            !(blended = grow_floats(&ctx->into_keyed, &ctx->into_keyed_floats, (size_t)4 * w * h)))
            return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for %dx%d outputs", w, h);
        st = key_tiled(ctx, rgb, hint, out->alpha.data, out->fg.data, blended);
        if (st != CK_OK) return st;
    } else {
        if ((st = forward_frame(ctx, rgb, hint)) != CK_OK) return st;
        const size_t P = (size_t)S * S;
        if (w == S && h == S) { /* nothing to resize: ck_result_finish keeps these as they are */
            split_keyed(ctx->host_out, P, out->alpha.data, out->fg.data);
        } else {
            /* ck_result_finish's resize (ck_resize_lanczos4 is ck_resize_ws with a workspace of its own) */
            const size_t ws_n = ck_resize_ws_floats(CK_RESIZE_LANCZOS4, w, h, S, S, 3);
            const size_t ws_1 = ck_resize_ws_floats(CK_RESIZE_LANCZOS4, w, h, S, S, 1);
            float       *keyed = grow_floats(&ctx->into_keyed, &ctx->into_keyed_floats, 4 * P);
            float       *ws    = grow_floats(&ctx->into_ws, &ctx->into_ws_floats, ws_n > ws_1 ? ws_n : ws_1);
            if (!keyed || !ws) return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for %dx%d outputs", w, h);
            split_keyed(ctx->host_out, P, keyed, keyed + P);
            ck_resize_ws(CK_RESIZE_LANCZOS4, out->alpha.data, 1, w, h, keyed, S, S, 1, ws);
            ck_resize_ws(CK_RESIZE_LANCZOS4, out->fg.data, 3, w, h, keyed + P, S, S, 3, ws);
        }
    }

    /* ck_result_finish's post-processing; the plate kept for keep_highlights and fg_unmix is the caller's own,
     * still there */
    if (ctx->params.fg_unmix > 0 && p->fg_unmix != 0 &&
        ck_fg_unmix(out->fg.data, out->alpha.data, rgb->data, ctx->params.colorspace, w, h, CK_UNMIX_ALPHA_LO) != CK_OK)
        return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory un-mixing the fg of a %dx%d frame", w, h);
    const int      highlights = ctx->params.keep_highlights && p->keep_highlights;
    ck_post_params pp = {p->despill, p->despeckle, p->despeckle_size, p->comp,
                         ck_colorspace_resolve(p->colorspace, p->input_is_linear), highlights ? rgb->data : NULL};
    st = ck_postprocess(out->processed.data, p->comp ? out->comp.data : NULL, out->alpha.data, out->fg.data, w, h, &pp);
    if (st != CK_OK)
        return ck__fail(&ctx->err, st, "post-processing of a %dx%d frame failed: %s", w, h, ck_status_str(st));
    return CK_OK;
}

void ck_result_free(ck_result *res) {
    if (!res) return;
    free(res->alpha.data);
    free(res->fg.data);
    free(res->processed.data);
    free(res->comp.data);
    free(res->plate.data);
    memset(res, 0, sizeof *res);
}
