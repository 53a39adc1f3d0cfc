/* GreenFormer forward (model_spec §1 steps 2-6).
 * ref: CorridorKeyModule/core/model_transformer.py GreenFormer.forward.
 * Arena order: outputs first (logits_up, out, delta), then the encoder's streams and features, then
 * per-block scratch; everything after the outputs is released once the coarse logits exist, so the
 * refiner reuses the encoder's memory (unless `keep`). */
#include "model/model.h"

void ck_model_forward(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x_f32,
                      float refiner_scale, int use_refiner, int keep, ck_model_out *out) {
    const int64_t B = x_f32->shape[0], S = cfg->size, G0 = S / 4;
    CK_ASSERT(x_f32->dtype == CK_DTYPE_F32);
    /* The heads' outputs stay float32 in every precision: delta is multiplied by 10 before the sigmoid,
     * and 16-bit storage of logits and delta would put ~1e-2 errors into alpha. */
    out->out       = CK_NEW_DT(ex, CK_DTYPE_F32, B, S, S, 4);
    out->logits_up = CK_NEW_DT(ex, CK_DTYPE_F32, B, S, S, 4);
    out->delta_raw = CK_NEW_DT(ex, CK_DTYPE_F32, B, S, S, 4);
    ck_tensor xa   = *x_f32; /* network input in the activation dtype */
    if (ex->dtype != CK_DTYPE_F32) {
        xa = CK_NEW(ex, B, S, S, 4);
        ck_convert(ex, &xa, x_f32);
    }
    const ck_tensor *x    = &xa;
    const size_t     mark = ck_arena_mark(ex->arena);

    ck_hiera_forward(ex, cfg, w, x, out->f, keep);
    if (ex->stage_gc && !ex->planning) ex->be->synchronize(ex->be);
    out->logits = CK_NEW_DT(ex, CK_DTYPE_F32, B, G0, G0, 4);
    ck_decoder_forward(ex, cfg, w, out->f, &out->logits);
    ck_resize_bilinear(ex, &out->logits_up, &out->logits, 0);
    if (!keep) ck_arena_reset(ex->arena, mark);
    if (ex->stage_gc && !ex->planning) ex->be->synchronize(ex->be);

    if (use_refiner) {
        ck_refiner_forward(ex, cfg, w, x, &out->logits_up, &out->delta_raw);
        /* delta = refiner_scale · 10 · final(x): the engine's hook scales the module output */
        ck_sigmoid_add(ex, &out->out, &out->logits_up, &out->delta_raw, 10.0f * refiner_scale);
    } else {
        ck_sigmoid_add(ex, &out->out, &out->logits_up, NULL, 0.0f);
    }
}
