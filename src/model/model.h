/* GreenFormer: Hiera encoder + two SegFormer-style decoder heads + CNN refiner (model_spec §1-§5).
 *
 *     ck_config cfg; ck_config_from_checkpoint(&cfg, &ckpt, S, head_dim, &err);
 *     ck_weights w;  ck_weights_load(&w, &cfg, &ckpt, be, &err);
 *     ck_model_out o; ck_model_forward(&ex, &cfg, &w, &x, refiner_scale, use_refiner, keep, &o);
 *
 * Architecture hyper-parameters come from the checkpoint's tensor shapes, so small test models run
 * through exactly the same code as Hiera-Base-Plus.
 */
#ifndef CK_MODEL_H
#define CK_MODEL_H

#include "io/checkpoint.h"
#include "ops/ops.h"

#define CK_MAX_STAGES 4
#define CK_MAX_BLOCKS 64
#define CK_MAX_REF_BLOCKS 8
/* The refiner's input channels: normalized RGB (3), σ(logits_up) (4) and one zero channel, so that a pixel is
 * 16 bytes in 16-bit precisions, which cuDNN's implicit-GEMM convolutions need (with 7 the stem ran on its
 * generic engine: 2.0 ms at S = 2048). The stem weight gets a matching zero input channel at load (exact). */
#define CK_REF_IN 8

typedef struct ck_block_cfg {
    int dim_in, dim_out; /* channels in/out (differ at q-pool blocks) */
    int heads;           /* dim_out / head_dim */
    int mlp_hidden;      /* fc1 outputs */
    int stage;           /* stage of the output grid */
    int q_pool;          /* 1: q and the projected residual are 2×2 max-pooled */
    int windowed;        /* mask-unit attention (with timm's one-block lag) vs global */
} ck_block_cfg;

typedef struct ck_config {
    int size;            /* S, model resolution, multiple of 32 */
    int in_chans;        /* 4: R, G, B, hint */
    int embed_dim;       /* stage-0 width (112 for B+) */
    int patch_kernel, patch_stride, patch_pad; /* 7, 4, 3 */
    int pos_grid;        /* side of the checkpoint's pos_embed grid (512 for a 2048 training size) */
    int head_dim;        /* 56 unless the checkpoint says otherwise */
    int num_stages;
    int stage_blocks[CK_MAX_STAGES];
    int stage_dim[CK_MAX_STAGES];
    int num_blocks;
    ck_block_cfg blocks[CK_MAX_BLOCKS];
    int mask_unit;       /* mask-unit side in stage-0 tokens (8 → 32×32 input pixels) */
    float ln_eps;        /* 1e-6 (timm LayerNorm) */
    int dec_dim;         /* decoder embedding dim (256) */
    int dec_out[2];      /* alpha head 1, fg head 3 */
    int ref_hidden;      /* refiner width (64) */
    int ref_blocks;      /* residual blocks (4), dilation 2^i */
    int ref_groups;      /* GroupNorm groups (8) */
    float bn_eps, gn_eps; /* 1e-5 */
} ck_config;

typedef struct ck_block_w {
    ck_tensor norm1_w, norm1_b;   /* (C_in) */
    ck_tensor proj_w, proj_b;     /* (C_out, C_in), (C_out): q-pool blocks only */
    ck_tensor qkv_w, qkv_b;       /* (3·C_out, C_in), (3·C_out) */
    ck_tensor aproj_w, aproj_b;   /* (C_out, C_out), (C_out) */
    ck_tensor norm2_w, norm2_b;   /* (C_out) */
    ck_tensor fc1_w, fc1_b;       /* (hidden, C_out), (hidden) */
    ck_tensor fc2_w, fc2_b;       /* (C_out, hidden), (C_out) */
} ck_block_w;

typedef struct ck_res_w {
    ck_tensor conv1_w, conv1_b, gn1_w, gn1_b; /* (H, H, 3, 3), (H), (H), (H) */
    ck_tensor conv2_w, conv2_b, gn2_w, gn2_b;
} ck_res_w;

typedef struct ck_weights {
    ck_tensor  patch_w, patch_b; /* (C0, 4, 7, 7), (C0) */
    ck_tensor  patch_w_s2d;      /* (C0, 64, 2, 2): patch_w over 4×4 blocks (ck_patch_weight_s2d), zeros elsewhere */
    ck_tensor  pos_embed;        /* (1, S/4, S/4, C0): resized to the model grid at load */
    ck_block_w blocks[CK_MAX_BLOCKS];
    /* Both decoder heads fused (model_spec §4 exact folds): for feature i (c1..c4),
     * dec_w[i] = diag(bn scale) · W_fuse[:, block_i] · W_ci, stacked alpha-then-fg: (2E, C_i);
     * dec_b[i] likewise, with the BatchNorm shift folded into dec_b[0].
     * The classifier is block-diagonal: (1+3, 2E) → logits channel 0 alpha, 1..3 fg. */
    ck_tensor dec_w[CK_MAX_STAGES], dec_b[CK_MAX_STAGES];
    ck_tensor cls_w, cls_b;       /* (4, 2E), (4) */
    ck_tensor cls_head_w[2], cls_head_b[2]; /* per head (alpha, fg): (4, E), (4), other head's rows 0 */
    ck_tensor stem_w, stem_b;     /* (H, 7, 3, 3), (H) */
    ck_tensor stem_gn_w, stem_gn_b;
    ck_res_w  res[CK_MAX_REF_BLOCKS];
    ck_tensor final_w, final_b;   /* (4, H), (4) */
    void     *device_block;       /* one allocation on the backend holding every tensor */
    size_t    bytes;
    ck_backend *be;
} ck_weights;

/* Accepts the MLX port's safetensors layout (corridorkey-mlx converter): renames refiner.stem_conv /
 * stem_gn to the PyTorch names and marks its OHWI conv kernels so they are read as OIHW.
 * A PyTorch-layout checkpoint is left unchanged. Returns 1 when the MLX layout was found. */
int ck_checkpoint_canonicalize(ck_checkpoint *ck);

/* Derives the architecture from the checkpoint (shapes) for model size S; head_dim 0 = from the
 * checkpoint metadata ("head_dim") or 56. */
ck_status ck_config_from_checkpoint(ck_config *cfg, const ck_checkpoint *ck, int size, int head_dim, ck_err *err);
void      ck_config_log(const ck_config *cfg);

/* Every tensor a checkpoint for configuration c holds, in state_dict order (validation, random
 * weights): ndim ≤ 4, unused dims 0; is_counter marks BatchNorm's int64 num_batches_tracked. */
typedef void (*ck_layout_fn)(void *user, const char *name, int ndim, const int64_t shape[4], int is_counter);
void ck_weights_layout(const ck_config *c, ck_layout_fn fn, void *user);

/* The patch embedding's kernel w (OC, IC, 7, 7) (stride 4, padding 3) as a 2×2 kernel over 4×4 blocks of the input
 * (space_to_depth with block 4, lead 4): dst (OC, 16·IC, 2, 2), dst[o][(dy·4 + dx)·IC + i][jy][jx] =
 * w[o][i][4·jy + dy − 1][4·jx + dx − 1], zero where that tap is outside the 7×7 kernel. */
void ck_patch_weight_s2d(float *dst, const float *w, int64_t OC, int64_t IC);

/* Validates every tensor (name, shape, dtype; missing and unexpected keys reported one per message),
 * converts to fp32, resizes pos_embed, folds the decoders, and uploads once to the backend. */
ck_status ck_weights_load(ck_weights *w, const ck_config *cfg, const ck_checkpoint *ck, ck_backend *be, ck_err *err);
void      ck_weights_free(ck_weights *w);

typedef struct ck_model_out {
    ck_tensor f[CK_MAX_STAGES]; /* encoder features (B, S/4/2^i, .., C_i); valid when kept */
    ck_tensor logits;           /* (B, S/4, S/4, 4): channel 0 alpha, 1..3 fg */
    ck_tensor logits_up;        /* (B, S, S, 4); kept only (else transient, data NULL) */
    ck_tensor delta_raw;        /* (B, S, S, 4): refiner output before ×10·refiner_scale; kept only */
    ck_tensor out;              /* (B, S, S, 4): σ(logits_up + delta): alpha, fg R, G, B */
} ck_model_out;

/* Runs (or plans, when ex->planning) the whole network on x (B, S, S, 4), float32 or ex's activation
 * dtype, already in ex's arena; out->out is float32 whatever the activation dtype.
 * keep != 0 keeps every intermediate alive (debugging and parity tests). */
void ck_model_forward(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                      float refiner_scale, int use_refiner, int keep, ck_model_out *out);

/* Pieces, for tests and tiling. */
void ck_hiera_forward(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                      ck_tensor feats[CK_MAX_STAGES], int keep);
void ck_decoder_forward(ck_exec *ex, const ck_config *cfg, const ck_weights *w,
                        const ck_tensor feats[CK_MAX_STAGES], const ck_tensor *logits);
void ck_refiner_forward(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                        const ck_tensor *logits_up, const ck_tensor *delta_raw);
/* The refiner in two full-size activation buffers instead of three (see refiner.c), with logits_up
 * recomputed from the coarse logits (B, S/4, S/4, 4) where needed: out (B, S, S, 4) float32 ←
 * σ(up(logits) + delta_scale · final(...)). Equal to ck_refiner_forward + ck_sigmoid_add. */
void ck_refiner_forward_slim(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                             const ck_tensor *logits, const ck_tensor *out, float delta_scale);
/* Same result, computed per tile (tile×tile owned pixels, `halo` margin) with GroupNorm statistics
 * frozen from a full-image pass (bounded = 0: bit-identical to the untiled refiner when halo ≥ 31) or
 * gathered tile by tile (bounded = 1: tile-sized memory only, equal within float rounding). */
void ck_refiner_forward_tiled(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                              const ck_tensor *logits_up, const ck_tensor *delta_raw, int tile, int halo,
                              int bounded);

#endif
