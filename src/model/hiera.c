/* Hiera encoder in spatial token order (model_spec §2).
 * ref: timm/models/hiera.py Hiera.forward_intermediates, HieraBlock, MaskUnitAttention.
 * Tokens stay (B, H, W, C) on the current stage grid; unroll/reroll are replaced by windows of the
 * grid and 2×2 max-pools, which is exact up to float summation order (model_spec §2.4). */
#include "model/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* CK_LN_LINEAR=1: each LayerNorm runs inside the linear after it (layernorm_linear) where the backend has a fused
 * path for the shape (CUDA: the narrow GEMM with CK_LINEAR_NARROW=1, the tiled one with CK_LINEAR_GEMM=1), else as
 * the two ops; off by default: with both GEMMs it cost 4.0 ms at 2048 on the H100 (2026-12-05). Not at the
 * q-pooling blocks, where LN1(x) also feeds the residual's projection. */
static int ln_folded(const ck_exec *ex) {
    const char *env = getenv("CK_LN_LINEAR");
    return ex->be->ext.layernorm_linear && env && !strcmp(env, "1");
}

/* One HieraBlock. x: (B, H, W, C_in) → returns (B, H', W', C_out), H' = H/2 at q-pool blocks.
 * Non-pooling blocks update x in place; pooling blocks return a new stream allocated before the
 * block's scratch so that it survives the scratch reset. */
static ck_tensor hiera_block(ck_exec *ex, const ck_config *cfg, const ck_block_cfg *bc, const ck_block_w *bw,
                             const ck_tensor *x) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], Cin = x->shape[3];
    const int64_t Cout = bc->dim_out, HD = cfg->head_dim;
    const int64_t Hq = bc->q_pool ? H / 2 : H, Wq = bc->q_pool ? W / 2 : W;

    ck_tensor y = *x;
    if (bc->q_pool) y = CK_NEW(ex, B, Hq, Wq, Cout);
    const size_t mark = ck_arena_mark(ex->arena);

    const int fold_ln = ln_folded(ex);
    ck_tensor xn      = CK_NEW(ex, B, H, W, Cin); /* LN1(x) */
    ck_tensor qkv     = CK_NEW(ex, B, H, W, 3 * Cout);
    if (bc->q_pool || !fold_ln) {
        ck_layernorm(ex, &xn, x, &bw->norm1_w, &bw->norm1_b, cfg->ln_eps);
        if (bc->q_pool) { /* residual = MaxPool2x2(proj(LN1(x))): the raw x is dropped (model_spec §2.5) */
            ck_tensor t = CK_NEW(ex, B, H, W, Cout);
            ck_linear(ex, &t, &xn, &bw->proj_w, &bw->proj_b, CK_ACT_NONE, NULL);
            ck_maxpool2x2(ex, &y, &t);
        }
        ck_linear(ex, &qkv, &xn, &bw->qkv_w, &bw->qkv_b, CK_ACT_NONE, NULL);
    } else {
        ck_layernorm_linear(ex, &qkv, x, &bw->norm1_w, &bw->norm1_b, cfg->ln_eps, &bw->qkv_w, &bw->qkv_b,
                            CK_ACT_NONE, NULL, &xn);
    }

    /* Mask units always cover 32×32 input pixels: S/32 units per side on every stage grid. */
    const int     units = cfg->size / (4 * cfg->mask_unit);
    const int     win_h = bc->windowed ? (int)(H / units) : (int)H;
    const int     win_w = bc->windowed ? (int)(W / units) : (int)W;
    const int64_t nwin  = (H / win_h) * (W / win_w);
    const int64_t G = B * bc->heads * nwin, T = (int64_t)win_h * win_w, Tq = bc->q_pool ? T / 4 : T;
    /* pad64: zero columns up to a multiple of 64 keep the fused kernels on their fast path; the scale
     * stays 1/√HD and the padded output columns are dropped by the scatter (model_spec §10). */
    const int64_t HDp = ex->pad64 ? (HD + 63) / 64 * 64 : HD;
    ck_tensor     q   = CK_NEW(ex, G, Tq, HDp);
    ck_tensor     k   = CK_NEW(ex, G, T, HDp);
    ck_tensor     v   = CK_NEW(ex, G, T, HDp);
    ck_tensor     o     = CK_NEW(ex, G, Tq, HDp);
    ck_tensor     a     = CK_NEW(ex, B, Hq, Wq, Cout);
    const float   scale = (float)(1.0 / sqrt((double)HD));
    /* one op, which a backend may run without the copies into q, k, v, o */
    ck_attention_qkv(ex, &a, &qkv, bc->heads, win_h, win_w, bc->q_pool, scale, &q, &k, &v, &o);
    ck_linear(ex, &y, &a, &bw->aproj_w, &bw->aproj_b, CK_ACT_NONE, &y); /* x = residual + attn */
    /* the attention's scratch is dead: the MLP reuses it (at S = 2048 the first pooling block would
     * otherwise stack its MLP on top of full-resolution qkv, k and v, the encoder's peak) */
    ck_arena_reset(ex->arena, mark);

    ck_tensor xn2 = CK_NEW(ex, B, Hq, Wq, Cout);
    ck_tensor hid = CK_NEW(ex, B, Hq, Wq, bc->mlp_hidden);
    if (fold_ln) {
        ck_layernorm_linear(ex, &hid, &y, &bw->norm2_w, &bw->norm2_b, cfg->ln_eps, &bw->fc1_w, &bw->fc1_b,
                            CK_ACT_GELU, NULL, &xn2);
    } else {
        ck_layernorm(ex, &xn2, &y, &bw->norm2_w, &bw->norm2_b, cfg->ln_eps);
        ck_linear(ex, &hid, &xn2, &bw->fc1_w, &bw->fc1_b, CK_ACT_GELU, NULL);
    }
    ck_linear(ex, &y, &hid, &bw->fc2_w, &bw->fc2_b, CK_ACT_NONE, &y); /* x = x + mlp(LN2(x)) */

    ck_arena_reset(ex->arena, mark);
    return y;
}

/* CK_PATCH_S2D=1: the patch embedding as a 2×2 convolution over 4×4 blocks of x (space_to_depth, then
 * patch_w_s2d: the same products plus exact zeros, summed in another order), so that it runs on the convolution
 * kernels' 64-channel path instead of a 4-channel 7×7 one; where the backend has the op and the weights the
 * kernel (a 7×7 stride-4 padding-3 patch embedding), on S a multiple of 4. Read at every forward. */
static int patch_s2d_wanted(const ck_exec *ex, const ck_weights *w, int64_t S) {
    const char *e = getenv("CK_PATCH_S2D");
    return e && !strcmp(e, "1") && ex->be->ext.space_to_depth && w->patch_w_s2d.ndim == 4 && S % 4 == 0;
}

void ck_hiera_forward(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                      ck_tensor feats[CK_MAX_STAGES], int keep) {
    /* x: (B, S, S, 4) → patch embed (B, S/4, S/4, C0) + pos_embed, in raster order */
    const int64_t B = x->shape[0], S = cfg->size, G0 = S / 4;
    CK_ASSERT(x->shape[1] == S && x->shape[2] == S && x->shape[3] == cfg->in_chans);
    ck_tensor tok = CK_NEW(ex, B, G0, G0, cfg->embed_dim);
    if (patch_s2d_wanted(ex, w, S)) {
        const size_t mark = ck_arena_mark(ex->arena);
        ck_tensor    blocks = CK_NEW(ex, B, G0 + 1, G0 + 1, 16 * cfg->in_chans); /* block j: rows 4j − 4 … 4j − 1 */
        ck_space_to_depth(ex, &blocks, x, 4, 4);
        ck_conv2d(ex, &tok, &blocks, &w->patch_w_s2d, &w->patch_b, 1, 0, 1);
        ck_arena_reset(ex->arena, mark);
    } else {
        ck_conv2d(ex, &tok, x, &w->patch_w, &w->patch_b, cfg->patch_stride, cfg->patch_pad, 1);
    }
    ck_add(ex, &tok, &tok, &w->pos_embed);

    int stage_end[CK_MAX_BLOCKS] = {0};
    for (int i = 0; i < cfg->num_blocks; i++)
        stage_end[i] = i == cfg->num_blocks - 1 || cfg->blocks[i + 1].q_pool;
    for (int i = 0; i < cfg->num_blocks; i++) {
        const ck_block_cfg *bc = &cfg->blocks[i];
        /* A pooled block allocates its output stream; the previous stage's stream stays as a feature. */
        tok = hiera_block(ex, cfg, bc, &w->blocks[i], &tok);
        if (stage_end[i]) feats[bc->stage] = tok;
    }
    (void)keep;
}
