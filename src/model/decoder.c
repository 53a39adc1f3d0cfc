/* Both SegFormer decoder heads in one pass (model_spec §4), from the folded weights of weights.c:
 * per feature i, u_i = f_i · dec_w[i]ᵀ + dec_b[i] at the feature's own resolution (2E channels:
 * alpha head then fg head), bilinear-upsampled to the c1 grid and summed (linear maps commute with
 * bilinear resizing), ReLU, then the block-diagonal classifier.
 * ref: CorridorKeyModule/core/model_transformer.py DecoderHead. */
#include "model/model.h"

void ck_decoder_forward(ck_exec *ex, const ck_config *cfg, const ck_weights *w,
                        const ck_tensor feats[CK_MAX_STAGES], const ck_tensor *logits) {
    const int64_t B = feats[0].shape[0], H1 = feats[0].shape[1], W1 = feats[0].shape[2];
    const int64_t E2 = 2 * (int64_t)cfg->dec_dim;
    const size_t  mark = ck_arena_mark(ex->arena);

    ck_tensor hsum = CK_NEW(ex, B, H1, W1, E2); /* fused hidden of both heads */
    for (int i = CK_MAX_STAGES - 1; i >= 1; i--) {
        const ck_tensor *f = &feats[i];
        ck_tensor        u = CK_NEW(ex, B, f->shape[1], f->shape[2], E2);
        ck_linear(ex, &u, f, &w->dec_w[i], &w->dec_b[i], CK_ACT_NONE, NULL);
        ck_resize_bilinear(ex, &hsum, &u, i != CK_MAX_STAGES - 1);
    }
    ck_linear(ex, &hsum, &feats[0], &w->dec_w[0], &w->dec_b[0], CK_ACT_NONE, &hsum);
    ck_activation(ex, &hsum, &hsum, CK_ACT_RELU);
    ck_linear(ex, logits, &hsum, &w->cls_w, &w->cls_b, CK_ACT_NONE, NULL);
    ck_arena_reset(ex->arena, mark);
}
