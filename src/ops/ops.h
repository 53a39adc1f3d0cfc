/* Op wrappers used by model code: check shapes and dtypes (always on, for every backend), allocate
 * outputs from the activation arena, and call the backend slot unless the model is being planned.
 *
 * Dimension names: B batch, H/W grid, C channels, N tokens, NH heads, HD head dim, OC output
 * channels, K kernel size, G attention groups (batch × heads × windows), T tokens per group.
 */
#ifndef CK_OPS_H
#define CK_OPS_H

#include "backend/backend.h"
#include "core/arena.h"

#include <stdio.h>

typedef struct ck_exec {
    ck_backend *be;
    ck_arena   *arena;    /* activations */
    ck_dtype    dtype;    /* activation dtype */
    int         planning; /* 1: shapes only, no op runs, arena measures */
    int         pad64;    /* attention head dim zero-padded to a multiple of 64 ("pad64") */
    int         stage_gc; /* synchronize the backend between model stages ("stage_gc") */
    int         unfused_decode; /* decoder heads one after the other ("fused_decode" off) */
} ck_exec;

/* New activation tensor from the arena: CK_NEW(ex, B, H, W, C). */
ck_tensor ck_new(ck_exec *ex, int ndim, const int64_t *shape);
#define CK_NEW(ex, ...)                                                                              \
    ck_new((ex), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
/* Same, with an explicit dtype (network input/output stay float32). */
ck_tensor ck_new_dtype(ck_exec *ex, ck_dtype dt, int ndim, const int64_t *shape);
#define CK_NEW_DT(ex, dt, ...)                                                                       \
    ck_new_dtype((ex), (dt), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
/* View with another shape over the same data (numel must match). */
ck_tensor ck_view(const ck_tensor *t, int ndim, const int64_t *shape);
#define CK_VIEW(t, ...)                                                                              \
    ck_view((t), (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

void ck_linear(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b, ck_act act,
               const ck_tensor *residual);
void ck_layernorm(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta,
                  float eps);
void ck_conv2d(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b,
               int stride, int pad, int dilation);
/* Same, with pad_h rows above and below and pad_w columns left and right. */
void ck_conv2d_pad(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b,
                   int stride, int pad_h, int pad_w, int dilation);
void ck_groupnorm(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *gamma, const ck_tensor *beta,
                  int groups, float eps, const ck_tensor *residual, ck_act act, const ck_tensor *stats,
                  int stats_frozen);
void ck_attention(ck_exec *ex, const ck_tensor *o, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v,
                  float scale);
void ck_attn_gather(ck_exec *ex, const ck_tensor *q, const ck_tensor *k, const ck_tensor *v, const ck_tensor *qkv,
                    int heads, int win_h, int win_w, int q_pool);
void ck_attn_scatter(ck_exec *ex, const ck_tensor *y, const ck_tensor *o, int heads, int win_h, int win_w);
void ck_maxpool2x2(ck_exec *ex, const ck_tensor *y, const ck_tensor *x);
void ck_add(ck_exec *ex, const ck_tensor *y, const ck_tensor *a, const ck_tensor *b);
void ck_resize_bilinear(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, int accumulate);
/* y = Σ_k resize(x[k]), k < n, summed in float32 and rounded once (backend.h). */
void ck_resize_sum(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, int n);
void ck_activation(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, ck_act act);
void ck_sigmoid_add(ck_exec *ex, const ck_tensor *y, const ck_tensor *a, const ck_tensor *b, float b_scale);
void ck_convert(ck_exec *ex, const ck_tensor *y, const ck_tensor *x);
void ck_zero(ck_exec *ex, const ck_tensor *y);
void ck_copy_rect(ck_exec *ex, const ck_tensor *y, int dy, int dx, const ck_tensor *x, int sy, int sx, int h, int w);

/* Per-op timing: synchronizes the backend around every op (so it perturbs what it measures, and cannot
 * run inside a CUDA graph); report divides by `frames`. */
void ck_ops_profile_enable(int on);
void ck_ops_profile_report(FILE *f, int frames);
void ck_concat_sigmoid(ck_exec *ex, const ck_tensor *y, const ck_tensor *a, int a_channels, const ck_tensor *b);

#endif
