/* CNN refiner at full resolution (model_spec §5.2).
 * ref: CorridorKeyModule/core/model_transformer.py CNNRefinerModule.
 * Input: normalized RGB (x[..., 0:3]) and the coarse probabilities σ(logits_up) → 7 channels.
 * stem: conv3×3 → GN → ReLU; res_d (d = 1, 2, 4, 8): ReLU(GN2(conv2(ReLU(GN1(conv1(x))))) + x);
 * final 1×1 conv. Output delta_raw is before the ×10 (and refiner_scale), applied by the caller. */
#include "model/model.h"

/* One GroupNorm's statistics slot: (B, groups, 2) float32 inside the (n_gn, B, groups, 2) block. */
static ck_tensor stats_slot(const ck_tensor *all, int i) {
    const int64_t per = all->shape[1] * all->shape[2] * 2;
    return ck_tensor_make((float *)all->data + i * per, CK_DTYPE_F32, 3, (int64_t[]){all->shape[1], all->shape[2], 2});
}

/* x (B,h,w,≥3) and logits_up (B,h,w,4) → delta_raw (B,h,w,4). With `stats` (2·blocks+1, B, groups, 2):
 * frozen → each GroupNorm reads its slot; else each writes its slot. */
static void refiner_run(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                        const ck_tensor *logits_up, const ck_tensor *delta_raw, const ck_tensor *stats, int frozen) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], Hd = cfg->ref_hidden;
    const int     groups = cfg->ref_groups;
    const size_t  mark   = ck_arena_mark(ex->arena);
    ck_tensor     st[2 * CK_MAX_REF_BLOCKS + 1];
    for (int i = 0; stats && i < 2 * cfg->ref_blocks + 1; i++) st[i] = stats_slot(stats, i);
#define GN_STATS(i) (stats ? &st[i] : NULL)

    ck_tensor in = CK_NEW(ex, B, H, W, 7); /* [rgb_norm(3), σ(alpha logit), σ(fg logits)(3)] */
    ck_concat_sigmoid(ex, &in, x, 3, logits_up);
    ck_tensor a = CK_NEW(ex, B, H, W, Hd); /* residual stream */
    ck_tensor t = CK_NEW(ex, B, H, W, Hd);
    ck_tensor u = CK_NEW(ex, B, H, W, Hd);
    ck_conv2d(ex, &a, &in, &w->stem_w, &w->stem_b, 1, 1, 1);
    ck_groupnorm(ex, &a, &a, &w->stem_gn_w, &w->stem_gn_b, groups, cfg->gn_eps, NULL, CK_ACT_RELU, GN_STATS(0), frozen);
    for (int r = 0; r < cfg->ref_blocks; r++) {
        const ck_res_w *rw = &w->res[r];
        const int       d  = 1 << r;
        ck_conv2d(ex, &t, &a, &rw->conv1_w, &rw->conv1_b, 1, d, d);
        ck_groupnorm(ex, &t, &t, &rw->gn1_w, &rw->gn1_b, groups, cfg->gn_eps, NULL, CK_ACT_RELU, GN_STATS(1 + 2 * r),
                     frozen);
        ck_conv2d(ex, &u, &t, &rw->conv2_w, &rw->conv2_b, 1, d, d);
        ck_groupnorm(ex, &a, &u, &rw->gn2_w, &rw->gn2_b, groups, cfg->gn_eps, &a, CK_ACT_RELU, GN_STATS(2 + 2 * r),
                     frozen);
    }
#undef GN_STATS
    ck_linear(ex, delta_raw, &a, &w->final_w, &w->final_b, CK_ACT_NONE, NULL);
    ck_arena_reset(ex->arena, mark);
}

void ck_refiner_forward(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                        const ck_tensor *logits_up, const ck_tensor *delta_raw) {
    refiner_run(ex, cfg, w, x, logits_up, delta_raw, NULL, 0);
}

/* Frozen GroupNorm (the MLX port's scheme, exact): one full-image pass records the statistics of all
 * GroupNorms, then the refiner runs per tile of `tile`×`tile` output pixels with a `halo` margin (clamped
 * to the image, so the image border keeps its zero padding) using those statistics. With halo ≥ the
 * receptive radius (1 + 2·(1+2+4+8) = 31) every owned pixel sees exactly what the untiled refiner sees. */
void ck_refiner_forward_tiled(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                              const ck_tensor *logits_up, const ck_tensor *delta_raw, int tile, int halo) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2];
    CK_ASSERT(tile > 0 && halo >= 0);
    const size_t mark  = ck_arena_mark(ex->arena);
    ck_tensor    stats = CK_NEW_DT(ex, CK_DTYPE_F32, 2 * cfg->ref_blocks + 1, B, cfg->ref_groups, 2);
    refiner_run(ex, cfg, w, x, logits_up, delta_raw, &stats, 0); /* statistics pass */
    for (int y0 = 0; y0 < H; y0 += tile)
        for (int x0 = 0; x0 < W; x0 += tile) {
            const int    y1 = y0 + tile < H ? y0 + tile : (int)H, x1 = x0 + tile < W ? x0 + tile : (int)W;
            const int    ya = y0 - halo > 0 ? y0 - halo : 0, xa = x0 - halo > 0 ? x0 - halo : 0;
            const int    yb = y1 + halo < H ? y1 + halo : (int)H, xb = x1 + halo < W ? x1 + halo : (int)W;
            const size_t tm = ck_arena_mark(ex->arena);
            ck_tensor    tx = ck_new_dtype(ex, x->dtype, 4, (int64_t[]){B, yb - ya, xb - xa, x->shape[3]});
            ck_tensor    tl = ck_new_dtype(ex, logits_up->dtype, 4, (int64_t[]){B, yb - ya, xb - xa, 4});
            ck_tensor    td = ck_new_dtype(ex, delta_raw->dtype, 4, (int64_t[]){B, yb - ya, xb - xa, 4});
            ck_copy_rect(ex, &tx, 0, 0, x, ya, xa, yb - ya, xb - xa);
            ck_copy_rect(ex, &tl, 0, 0, logits_up, ya, xa, yb - ya, xb - xa);
            refiner_run(ex, cfg, w, &tx, &tl, &td, &stats, 1);
            ck_copy_rect(ex, delta_raw, y0, x0, &td, y0 - ya, x0 - xa, y1 - y0, x1 - x0);
            ck_arena_reset(ex->arena, tm);
        }
    ck_arena_reset(ex->arena, mark);
}
