/* The diagnostics of include/ckey_bench.h: thin public calls over the context's stages (forward.c, api.c,
 * tiled.c), the backend's timers, the ops' profile and the checkpoint readers. Nothing here is on the keying
 * path. */
#include "ckey_bench.h"
#include "engine/ctx.h"
#include "model/builtin.h"
#include "model/random_weights.h"
#include "ops/ops.h"
#include "frame/tiling.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A context a diagnostic may run on: not failed, n images within its plan. */
static ck_status begin(ck_ctx *ctx, int n) {
    if (!ctx) return CK_STATUS_EINVAL;
    if (ctx->failed) return ck__ctx_failed_status(ctx);
    ck__ctx_begin_call(ctx);
    if (n < 1 || n > ctx->max_batch)
        return ck__fail(&ctx->err, CK_STATUS_EINVAL, "a batch of %d images: this context takes 1 to %d", n,
                        ctx->max_batch);
    return CK_OK;
}

ck_status ck_bench_upload(ck_ctx *ctx, int n) {
    ck_status st = begin(ctx, n);
    if (st != CK_OK) return st;
    if (n > ctx->host_batch)
        return ck__fail(&ctx->err, CK_STATUS_EINVAL, "no host input of %d images: run ck_run_network_batch first", n);
    return ck__ctx_upload_n(ctx, n);
}

ck_status ck_bench_compute(ck_ctx *ctx, int n) {
    ck_status st = begin(ctx, n);
    return st != CK_OK ? st : ck__ctx_compute_n(ctx, n);
}

ck_status ck_bench_download(ck_ctx *ctx, int n) {
    ck_status st = begin(ctx, n);
    if (st != CK_OK) return st;
    if (n != ctx->last_batch || n > ctx->host_batch)
        return ck__fail(&ctx->err, CK_STATUS_EINVAL, "the last forward ran %d images, not %d", ctx->last_batch, n);
    return ck__ctx_download_n(ctx, n);
}

const float *ck_bench_output(const ck_ctx *ctx) { return ctx ? ctx->host_out : NULL; }

ck_status ck_bench_preprocess(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint) {
    ck_status st = begin(ctx, 1);
    if (st == CK_OK) st = ck__check_frame(ctx, rgb, hint);
    return st != CK_OK ? st : ck__ctx_preprocess(ctx, rgb, hint);
}

int ck_bench_tiled_on_device(const ck_ctx *ctx, int w, int h) { return ctx && ck__tiled_on_device(ctx, w, h); }

ck_status ck_bench_key_tiled(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint) {
    ck_status st = begin(ctx, 1);
    if (st == CK_OK) st = ck__check_frame(ctx, rgb, hint);
    if (st != CK_OK) return st;
    if (!ck__tiled_on_device(ctx, rgb->width, rgb->height))
        return ck__fail(&ctx->err, CK_STATUS_EINVAL, "a %dx%d plate is not keyed in tiles on the device here",
                        rgb->width, rgb->height);
    const float *blended = NULL;
    return ck__key_tiled_device(ctx, rgb, hint, &blended);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int ck_bench_has_device_timer(const ck_ctx *ctx) { return ctx && ctx->be->ext.timer_mark != NULL; }

void ck_bench_timer_start(ck_ctx *ctx) {
    ck_backend *be = ctx->be;
    if (be->ext.timer_mark) be->ext.timer_mark(be, 0);
    else ctx->bench_t0_ms = now_ms();
}

double ck_bench_timer_ms(ck_ctx *ctx) {
    ck_backend *be = ctx->be;
    if (be->ext.timer_mark) {
        be->ext.timer_mark(be, 1);
        return be->ext.timer_elapsed_ms(be);
    }
    be->synchronize(be);
    return now_ms() - ctx->bench_t0_ms;
}

void ck_bench_profile(int on) { ck_ops_profile_enable(on); }
void ck_bench_profile_report(FILE *f, int frames) { ck_ops_profile_report(f, frames); }

static const char *const k_inter_names[] = {"f1", "f2", "f3", "f4", "logits", "logits_up", "delta_raw"};
enum { K_INTER = (int)(sizeof k_inter_names / sizeof k_inter_names[0]) };

const char *ck_bench_intermediate_name(int i) { return i >= 0 && i < K_INTER ? k_inter_names[i] : NULL; }

ck_status ck_bench_intermediate(ck_ctx *ctx, const char *name, float **data, int *ndim, int64_t shape[8]) {
    if (!ctx || !name || !data || !ndim || !shape) return CK_STATUS_EINVAL;
    *data = NULL;
    if (ctx->failed) return ck__ctx_failed_status(ctx);
    ck__ctx_begin_call(ctx);
    const ck_model_out *m       = &ctx->last;
    const ck_tensor    *t[K_INTER] = {&m->f[0], &m->f[1], &m->f[2], &m->f[3], &m->logits, &m->logits_up, &m->delta_raw};
    int                 i       = 0;
    while (i < K_INTER && strcmp(name, k_inter_names[i])) i++;
    if (i == K_INTER) return ck__fail(&ctx->err, CK_STATUS_EINVAL, "no intermediate tensor is called \"%s\"", name);
    const ck_tensor *x = t[i];
    if (!x->data) return CK_STATUS_EMISSING; /* not kept */
    const size_t n   = (size_t)ck_tensor_numel(x);
    float       *out = malloc(n * sizeof(float));
    void        *raw = malloc(ck_tensor_nbytes(x));
    if (!out || !raw) {
        free(out), free(raw);
        return ck__fail(&ctx->err, CK_STATUS_EOOM, "out of memory for %s", name);
    }
    ctx->be->download(ctx->be, raw, x->data, ck_tensor_nbytes(x));
    for (size_t k = 0; k < n; k++) {
        if (x->dtype == CK_DTYPE_BF16) out[k] = ck_bf16_to_f32(((const uint16_t *)raw)[k]);
        else if (x->dtype == CK_DTYPE_F16) out[k] = ck_f16_to_f32(((const uint16_t *)raw)[k]);
        else out[k] = ((const float *)raw)[k];
    }
    free(raw);
    const ck_status st = ck__ctx_device_status(ctx);
    if (st != CK_OK) {
        free(out);
        return st;
    }
    *ndim = x->ndim;
    for (int d = 0; d < x->ndim && d < 8; d++) shape[d] = x->shape[d];
    *data = out;
    return CK_OK;
}

int ck_bench_tiles_along(int n, int tile, int overlap) {
    if (n < 1 || tile < 1 || overlap < 0) return 0;
    int origins[4096];
    return ck_tile_origins(n, tile < n ? tile : n, overlap, origins, 4096);
}

/* A checkpoint path or name of ckey.h opened into ck. */
static ck_status open_any(ck_checkpoint *ck, const char *path, ck_err *err) {
    return ck_random_weights_is_spec(path) ? ck_random_checkpoint(ck, path, err)
           : ck_builtin_is_spec(path)      ? ck_builtin_checkpoint(ck, err)
                                           : ck_checkpoint_open(ck, path, err);
}

ck_status ck_bench_checkpoint_read(const char *path, double *open_ms, double *pass_ms, unsigned long long *checksum,
                                   ck_err *err) {
    ck_checkpoint ck;
    const double  t0 = now_ms();
    ck_status     st = ck_checkpoint_open(&ck, path, err);
    if (st != CK_OK) return st;
    const double       t1  = now_ms();
    unsigned long long sum = 0;
    for (int i = 0; i < ck.n_tensors; i++) {
        const unsigned char *p = ck.tensors[i].data;
        for (size_t k = 0; k < ck.tensors[i].nbytes; k += 64) sum += p[k]; /* one read per cache line */
    }
    const double t2 = now_ms();
    ck_checkpoint_close(&ck);
    if (open_ms) *open_ms = t1 - t0;
    if (pass_ms) *pass_ms = t2 - t1;
    if (checksum) *checksum = sum;
    return CK_OK;
}

ck_status ck_checkpoint_write_safetensors(const char *src, const char *path, ck_err *err) {
    ck_checkpoint ck;
    ck_status     st = open_any(&ck, src, err);
    if (st != CK_OK) return st;
    st = ck_safetensors_write(path, ck.tensors, ck.n_tensors, ck.meta, ck.n_meta, err);
    ck_checkpoint_close(&ck);
    return st;
}

ck_status ck_checkpoint_inspect(const char *path, int size, ck_checkpoint_info *info) {
    if (!info) return CK_STATUS_EINVAL;
    memset(info, 0, sizeof *info);
    if (!path) return CK_STATUS_EINVAL;
    ck_checkpoint ck;
    ck_err        err = {{0}};
    ck_status     st  = open_any(&ck, path, &err);
    if (st != CK_OK) {
        snprintf(info->message, sizeof info->message, "%s", err.msg);
        return st;
    }
    info->opened    = 1;
    info->n_tensors = ck.n_tensors;
    info->bytes     = ck.map_size;
    ck_checkpoint_canonicalize(&ck);
    ck_config cfg;
    st = ck_config_from_checkpoint(&cfg, &ck, size, 0, &err);
    if (st == CK_OK) {
        info->greenformer = 1;
        info->embed_dim = cfg.embed_dim, info->num_blocks = cfg.num_blocks, info->head_dim = cfg.head_dim;
        info->pos_grid = cfg.pos_grid;
        for (int i = 0; i < 4; i++) info->stage_dim[i] = cfg.stage_dim[i];
    } else {
        snprintf(info->message, sizeof info->message, "%s", err.msg);
    }
    ck_checkpoint_close(&ck);
    return st;
}
