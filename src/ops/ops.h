/* Op wrappers used by model code: check shapes and dtypes (always on, for every backend), allocate
 * outputs from the activation arena, and call the backend slot unless the model is being planned.
 *
 * Dimension names: B batch, H/W grid, C channels, N tokens, NH heads, HD head dim, OC output
 * channels, K kernel size, G attention groups (batch × heads × windows), T tokens per group.
 */
#ifndef CK_OPS_H
#define CK_OPS_H

#include "ops/backend.h"
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

/* The wrappers: void ck_<op>(ck_exec *ex, <the op's parameters>), semantics in ops_list.h. */
#define CK_OP_WRAPPER(name, op) void name CK_OP_PARAMS_WITH(ck_exec *ex, op);
CK_OP_WRAPPER(ck_linear, linear)
CK_OP_WRAPPER(ck_layernorm, layernorm)
CK_OP_WRAPPER(ck_conv2d_pad, conv2d) /* pad_h rows above and below, pad_w columns left and right */
CK_OP_WRAPPER(ck_groupnorm, groupnorm)
CK_OP_WRAPPER(ck_groupnorm_linear, groupnorm_linear)
CK_OP_WRAPPER(ck_attention, attention)
CK_OP_WRAPPER(ck_attn_gather, attn_gather)
CK_OP_WRAPPER(ck_attn_scatter, attn_scatter)
CK_OP_WRAPPER(ck_attention_qkv, attention_qkv)
CK_OP_WRAPPER(ck_maxpool2x2, maxpool2x2)
CK_OP_WRAPPER(ck_add, add)
CK_OP_WRAPPER(ck_resize_bilinear, resize_bilinear)
CK_OP_WRAPPER(ck_resize_sum, resize_sum)
CK_OP_WRAPPER(ck_activation, activation)
CK_OP_WRAPPER(ck_sigmoid_add, sigmoid_add)
CK_OP_WRAPPER(ck_concat_sigmoid, concat_sigmoid)
CK_OP_WRAPPER(ck_convert, convert)
CK_OP_WRAPPER(ck_zero, zero)
/* The optional ops: assert that the backend has them. */
CK_OP_WRAPPER(ck_groupnorm_stats, groupnorm_stats)
CK_OP_WRAPPER(ck_copy_rect, copy_rect)
CK_OP_WRAPPER(ck_conv3x3_gn, conv3x3_gn)
CK_OP_WRAPPER(ck_gn_moments_stats, gn_moments_stats)
CK_OP_WRAPPER(ck_space_to_depth, space_to_depth)
CK_OP_WRAPPER(ck_layernorm_linear, layernorm_linear)
#undef CK_OP_WRAPPER
/* conv2d with the same padding on every side. */
void ck_conv2d(ck_exec *ex, const ck_tensor *y, const ck_tensor *x, const ck_tensor *w, const ck_tensor *b,
               int stride, int pad, int dilation);

/* Per-op timing: synchronizes the backend around every op (so it perturbs what it measures, and cannot
 * run inside a CUDA graph); report divides by `frames`. */
void ck_ops_profile_enable(int on);
void ck_ops_profile_report(FILE *f, int frames);

#endif
