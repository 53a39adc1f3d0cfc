/* CNN refiner at full resolution (model_spec §5.2).
 * ref: CorridorKeyModule/core/model_transformer.py CNNRefinerModule.
 * Input: normalized RGB (x[..., 0:3]) and the coarse probabilities σ(logits_up) → 7 channels.
 * stem: conv3×3 → GN → ReLU; res_d (d = 1, 2, 4, 8): ReLU(GN2(conv2(ReLU(GN1(conv1(x))))) + x);
 * final 1×1 conv. Output delta_raw is before the ×10 (and refiner_scale), applied by the caller. */
#include "model/model.h"

void ck_refiner_forward(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                        const ck_tensor *logits_up, const ck_tensor *delta_raw) {
    const int64_t B = x->shape[0], S = x->shape[1], Hd = cfg->ref_hidden;
    const int     groups = cfg->ref_groups;
    const size_t  mark   = ck_arena_mark(ex->arena);

    ck_tensor in = CK_NEW(ex, B, S, S, 7); /* [rgb_norm(3), σ(alpha logit), σ(fg logits)(3)] */
    ck_concat_sigmoid(ex, &in, x, 3, logits_up);
    ck_tensor a = CK_NEW(ex, B, S, S, Hd); /* residual stream */
    ck_tensor t = CK_NEW(ex, B, S, S, Hd);
    ck_tensor u = CK_NEW(ex, B, S, S, Hd);
    ck_conv2d(ex, &a, &in, &w->stem_w, &w->stem_b, 1, 1, 1);
    ck_groupnorm(ex, &a, &a, &w->stem_gn_w, &w->stem_gn_b, groups, cfg->gn_eps, NULL, CK_ACT_RELU, NULL, 0);
    for (int r = 0; r < cfg->ref_blocks; r++) {
        const ck_res_w *rw = &w->res[r];
        const int       d  = 1 << r;
        ck_conv2d(ex, &t, &a, &rw->conv1_w, &rw->conv1_b, 1, d, d);
        ck_groupnorm(ex, &t, &t, &rw->gn1_w, &rw->gn1_b, groups, cfg->gn_eps, NULL, CK_ACT_RELU, NULL, 0);
        ck_conv2d(ex, &u, &t, &rw->conv2_w, &rw->conv2_b, 1, d, d);
        ck_groupnorm(ex, &a, &u, &rw->gn2_w, &rw->gn2_b, groups, cfg->gn_eps, &a, CK_ACT_RELU, NULL, 0);
    }
    ck_linear(ex, delta_raw, &a, &w->final_w, &w->final_b, CK_ACT_NONE, NULL);
    ck_arena_reset(ex->arena, mark);
}
