/* The network's forward on a context's activation arena: the execution settings, the host batch buffers,
 * the input tensor, upload, compute (eager, or a CUDA Graph per batch size recorded on first use) and
 * download. Used by api.c (whole frames), tiled.c (batches of tiles) and passes.c; it calls neither. */
#include "engine/ctx.h"

#include <stdlib.h>
#include <string.h>

int ck__ctx_use_graph(const ck_ctx *ctx) {
    return ctx->be->ext.graph_begin && ctx->params.cuda_graph != 0;
}

ck_exec ck__ctx_exec(ck_ctx *ctx, int planning) {
    ck_exec ex;
    memset(&ex, 0, sizeof ex);
    ex.be       = ctx->be;
    ex.arena    = &ctx->arena;
    ex.dtype    = ctx->be->act_dtype;
    ex.planning = planning;
    ex.pad64    = ctx->params.pad64 < 0 ? ctx->be->act_dtype != CK_DTYPE_F32 : ctx->params.pad64;
    /* a synchronize cannot be recorded into a graph */
    ex.stage_gc = ctx->params.stage_gc && !ck__ctx_use_graph(ctx);
    ex.unfused_decode = !ctx->params.fused_decode;
    return ex;
}

ck_status ck__ctx_host_batch(ck_ctx *ctx, int n) {
    CK_ASSERT(n >= 1 && n <= ctx->max_batch);
    if (n <= ctx->host_batch) return CK_OK;
    const size_t per = (size_t)ctx->cfg.size * ctx->cfg.size * 4;
    float       *x = malloc(per * n * sizeof(float)), *o = malloc(per * n * sizeof(float));
    uint16_t    *x16 = ctx->be->act_dtype != CK_DTYPE_F32 ? malloc(per * n * sizeof(uint16_t)) : NULL;
    if (!x || !o || (ctx->be->act_dtype != CK_DTYPE_F32 && !x16)) {
        free(x), free(o), free(x16);
        return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for %d S=%d images", n, ctx->cfg.size);
    }
    if (ctx->host_x) memcpy(x, ctx->host_x, per * ctx->host_batch * sizeof(float));
    free(ctx->host_x), free(ctx->host_out), free(ctx->host_x16);
    ctx->host_x = x, ctx->host_out = o, ctx->host_x16 = x16, ctx->host_batch = n;
    return CK_OK;
}

/* The input always sits at the start of the arena, so a captured graph stays valid across frames. */
ck_tensor ck__ctx_input(ck_ctx *ctx, int n) {
    const int64_t shape[4] = {n, ctx->cfg.size, ctx->cfg.size, 4};
    return ck_tensor_make(ctx->act_block, ctx->be->act_dtype, 4, shape);
}

/* host_x (float32) images [first, first + n) → the input tensor's slots. A 16-bit engine gets 16-bit
 * values (rounded to nearest even here, as the device conversion would): half the bytes over the bus
 * and no float32 copy on the device. */
void ck__ctx_upload_slots(ck_ctx *ctx, int first, int n) {
    CK_ASSERT(first >= 0 && n >= 1 && first + n <= ctx->host_batch && first + n <= ctx->max_batch);
    const ck_tensor x   = ck__ctx_input(ctx, first + n);
    const int64_t   per = (int64_t)ctx->cfg.size * ctx->cfg.size * 4, i0 = first * per, i1 = (first + n) * per;
    const size_t    es  = ck_dtype_size(x.dtype);
    uint8_t        *dst = (uint8_t *)x.data + (size_t)i0 * es;
    if (x.dtype == CK_DTYPE_F32) {
        ctx->be->upload(ctx->be, dst, ctx->host_x + i0, (size_t)(i1 - i0) * es);
        return;
    }
    uint16_t    *h = ctx->host_x16;
    const float *f = ctx->host_x;
    if (x.dtype == CK_DTYPE_F16) {
#pragma omp parallel for schedule(static)
        for (int64_t i = i0; i < i1; i++) h[i] = ck_f32_to_f16(f[i]);
    } else {
#pragma omp parallel for schedule(static)
        for (int64_t i = i0; i < i1; i++) h[i] = ck_f32_to_bf16(f[i]);
    }
    ctx->be->upload(ctx->be, dst, h + i0, (size_t)(i1 - i0) * es);
}

ck_status ck__ctx_device_status(ck_ctx *ctx) {
    if (!ctx->be || !ctx->be->failed) return CK_OK;
    if (ctx->failed && strstr(ctx->err.msg, ctx->be->failure)) return CK_STATUS_EDEVICE; /* reported already */
    ctx->failed = 1;
    return ck__fail(&ctx->err, CK_STATUS_EDEVICE, "%s; the context cannot be used further", ctx->be->failure);
}

ck_status ck__ctx_failed_status(ck_ctx *ctx) {
    return ctx->be && ctx->be->failed ? ck__ctx_device_status(ctx) : CK_STATUS_EBADSTATE;
}

ck_status ck__ctx_upload_n(ck_ctx *ctx, int n) {
    ck__ctx_upload_slots(ctx, 0, n);
    return ck__ctx_device_status(ctx);
}

ck_status ck__ctx_upload(ck_ctx *ctx) { return ck__ctx_upload_n(ctx, 1); }

static void enqueue_forward(ck_ctx *ctx, int n) {
    ck_arena_reset(&ctx->arena, 0);
    ck_exec   ex = ck__ctx_exec(ctx, 0);
    ck_tensor x  = CK_NEW(&ex, n, ctx->cfg.size, ctx->cfg.size, 4);
    CK_ASSERT(x.data == ctx->act_block);
    ck_model_forward(&ex, &ctx->cfg, &ctx->w, &x, ctx->params.refiner_scale, ctx->params.use_refiner,
                     ctx->params.keep_intermediates, &ctx->last);
    ctx->last_batch = n;
}

ck_status ck__ctx_compute_n(ck_ctx *ctx, int n) {
    ck_backend *be = ctx->be;
    CK_ASSERT(n >= 1 && n <= ctx->max_batch && n < CK_GRAPH_SLOTS);
    if (!ck__ctx_use_graph(ctx)) {
        enqueue_forward(ctx, n);
        return ck__ctx_device_status(ctx);
    }
    if (!(ctx->graph_ready >> n & 1)) { /* first batch of n: record the whole forward once ("compile") */
        /* One eager forward first: ops make their one-time choices (cuDNN plans, weight layouts) outside
         * capture, where they may allocate and time; the capture then records the chosen paths. */
        enqueue_forward(ctx, n);
        be->synchronize(be);
        if (be->failed) return ck__ctx_device_status(ctx);
        if (!be->ext.graph_begin(be)) return ck__fail(&ctx->err, CK_STATUS_EDEVICE, "CUDA graph capture failed to start");
        enqueue_forward(ctx, n);
        const int recorded = be->ext.graph_end(be, n); /* ends the capture whatever happened inside it */
        if (be->failed) return ck__ctx_device_status(ctx);
        if (!recorded) return ck__fail(&ctx->err, CK_STATUS_EDEVICE, "CUDA graph capture failed");
        ctx->graph_ready |= (uint64_t)1 << n;
        ctx->graph_out[n] = ctx->last;
    }
    ctx->last = ctx->graph_out[n], ctx->last_batch = n; /* the replayed forward's tensors */
    if (!be->ext.graph_launch(be, n)) return ck__fail(&ctx->err, CK_STATUS_EDEVICE, "CUDA graph launch failed");
    return ck__ctx_device_status(ctx);
}

ck_status ck__ctx_compute(ck_ctx *ctx) { return ck__ctx_compute_n(ctx, 1); }

ck_status ck__ctx_download_n(ck_ctx *ctx, int n) {
    CK_ASSERT(n == ctx->last_batch && n <= ctx->host_batch);
    ctx->be->download(ctx->be, ctx->host_out, ctx->last.out.data, ck_tensor_nbytes(&ctx->last.out));
    ctx->be->synchronize(ctx->be);
    return ck__ctx_device_status(ctx);
}

ck_status ck__ctx_download(ck_ctx *ctx) { return ck__ctx_download_n(ctx, 1); }

ck_status ck__ctx_forward_n(ck_ctx *ctx, int n) {
    ck_status st = ck__ctx_upload_n(ctx, n);
    if (st == CK_OK) st = ck__ctx_compute_n(ctx, n);
    if (st == CK_OK) st = ck__ctx_download_n(ctx, n);
    if (st != CK_OK) ctx->failed = 1;
    return st;
}

ck_status ck__ctx_forward(ck_ctx *ctx) { return ck__ctx_forward_n(ctx, 1); }
