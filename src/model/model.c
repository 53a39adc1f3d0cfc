/* GreenFormer forward (model_spec §1 steps 2-6).
 * ref: CorridorKeyModule/core/model_transformer.py GreenFormer.forward.
 * Arena order: the input (placed by the caller), then the outputs (the coarse logits; out; with `keep`
 * also logits_up and delta_raw), then the encoder's streams and features and per-block scratch. Without
 * `keep` everything after the outputs is released once the coarse logits exist, so the refiner reuses
 * the encoder's memory, and logits_up / delta_raw are transient inside the refiner
 * (ck_refiner_forward_slim). */
#include "model/model.h"

#include <string.h>

void ck_model_forward(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x_in,
                      float refiner_scale, int use_refiner, int keep, ck_model_out *out) {
    const int64_t B = x_in->shape[0], S = cfg->size, G0 = S / 4;
    CK_ASSERT(x_in->dtype == CK_DTYPE_F32 || x_in->dtype == ex->dtype);
    /* The heads' outputs stay float32 in every precision: delta is multiplied by 10 before the sigmoid,
     * and 16-bit storage of logits and delta would put ~1e-2 errors into alpha. */
    out->logits = CK_NEW_DT(ex, CK_DTYPE_F32, B, G0, G0, 4);
    out->out    = CK_NEW_DT(ex, CK_DTYPE_F32, B, S, S, 4); /* last: the slim refiner borrows its tail */
    memset(&out->logits_up, 0, sizeof out->logits_up);
    memset(&out->delta_raw, 0, sizeof out->delta_raw);
    if (keep) {
        out->logits_up = CK_NEW_DT(ex, CK_DTYPE_F32, B, S, S, 4);
        out->delta_raw = CK_NEW_DT(ex, CK_DTYPE_F32, B, S, S, 4);
    }
    ck_tensor xa = *x_in; /* network input in the activation dtype */
    if (xa.dtype != ex->dtype) {
        xa = CK_NEW(ex, B, S, S, 4);
        ck_convert(ex, &xa, x_in);
    }
    const ck_tensor *x    = &xa;
    const size_t     mark = ck_arena_mark(ex->arena);

    ck_hiera_forward(ex, cfg, w, x, out->f, keep);
    if (ex->stage_gc && !ex->planning) ex->be->synchronize(ex->be);
    ck_decoder_forward(ex, cfg, w, out->f, &out->logits);
    if (!keep) ck_arena_reset(ex->arena, mark);
    if (ex->stage_gc && !ex->planning) ex->be->synchronize(ex->be);

    /* delta = refiner_scale · 10 · final(x): the engine's hook scales the module output */
    const float k = 10.0f * refiner_scale;
    if (keep) {
        ck_resize_bilinear(ex, &out->logits_up, &out->logits, 0);
        if (use_refiner) {
            ck_refiner_forward(ex, cfg, w, x, &out->logits_up, &out->delta_raw);
            ck_sigmoid_add(ex, &out->out, &out->logits_up, &out->delta_raw, k);
        } else {
            ck_sigmoid_add(ex, &out->out, &out->logits_up, NULL, 0.0f);
        }
    } else if (use_refiner) {
        ck_refiner_forward_slim(ex, cfg, w, x, &out->logits, &out->out, k);
    } else {
        ck_tensor up = CK_NEW_DT(ex, CK_DTYPE_F32, B, S, S, 4);
        ck_resize_bilinear(ex, &up, &out->logits, 0);
        ck_sigmoid_add(ex, &out->out, &up, NULL, 0.0f);
        ck_arena_reset(ex->arena, mark);
    }
}
