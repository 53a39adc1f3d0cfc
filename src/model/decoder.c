/* Both SegFormer decoder heads (model_spec §4), from the folded weights of weights.c: per feature i,
 * u_i = f_i · dec_w[i]ᵀ + dec_b[i] at the feature's own resolution, bilinear-upsampled to the c1 grid
 * and summed (linear maps commute with bilinear resizing; one resize_sum pass, float32 sums), ReLU, then
 * the classifier.
 * Fused ("fused_decode", default): both heads as one of 2E channels (alpha rows then fg rows), one
 * upsample per scale, the block-diagonal classifier. Unfused: each head on its own E channels (row
 * slices of the same matrices), three upsamples each, its own classifier (zero rows for the other
 * head's logits) accumulated into the same logits; the same arithmetic per channel.
 * ref: CorridorKeyModule/core/model_transformer.py DecoderHead. */
#include "model/model.h"

#include <stdlib.h>

/* CK_DEC_F32=1 (precision study, 16-bit runs): the per-scale projections u_i and the hidden sum in float32
 * until after the ReLU, then one conversion for the classifier. Not the default: on the H200 it cost 0.20 ms at
 * 1024 and 0.77 at 2048 and moved the alpha max against float64 by −3 % in one call, +2 % in another
 * (docs/benchmarks/2026-12-04-h200-b.md). */
static int dec_f32(const ck_exec *ex) {
    const char *e = getenv("CK_DEC_F32");
    return ex->dtype != CK_DTYPE_F32 && e ? atoi(e) : 0;
}

/* Rows [r0, r0 + n) of a (R, K) matrix or of a (R) vector, as a view. */
static ck_tensor row_slice(const ck_tensor *t, int64_t r0, int64_t n) {
    const size_t row = ck_tensor_nbytes(t) / (size_t)t->shape[0];
    if (t->ndim == 1) return ck_tensor_make((uint8_t *)t->data + r0 * row, t->dtype, 1, (int64_t[]){n});
    return ck_tensor_make((uint8_t *)t->data + r0 * row, t->dtype, 2, (int64_t[]){n, t->shape[1]});
}

/* Hidden of channels [c0, c0 + C) of the fused head: Σ_i up(f_i · dec_w[i][c0:c0+C]ᵀ + b), then ReLU. */
static void head_hidden(ck_exec *ex, const ck_weights *w, const ck_tensor feats[CK_MAX_STAGES], const ck_tensor *hsum,
                        int64_t c0, int64_t C) {
    const int64_t B = hsum->shape[0];
    const int     f32 = dec_f32(ex);
    const ck_dtype udt = f32 ? CK_DTYPE_F32 : ex->dtype;
    ck_tensor     u[CK_MAX_STAGES - 1]; /* u[j] (B, H_i, W_i, C) for i = CK_MAX_STAGES-1-j, coarsest first */
    for (int i = CK_MAX_STAGES - 1; i >= 1; i--) {
        const ck_tensor *f  = &feats[i];
        const ck_tensor  wi = row_slice(&w->dec_w[i], c0, C), bi = row_slice(&w->dec_b[i], c0, C);
        ck_tensor       *ui = &u[CK_MAX_STAGES - 1 - i];
        *ui                 = CK_NEW_DT(ex, udt, B, f->shape[1], f->shape[2], C);
        ck_linear(ex, ui, f, &wi, &bi, CK_ACT_NONE, NULL);
    }
    /* one pass: the upsampled projections summed in float32 and rounded once, as PyTorch's fp16 model sums
     * them inside its fuse GEMM (16-bit partial sums were the decoder's extra error against float64) */
    const ck_tensor w0 = row_slice(&w->dec_w[0], c0, C), b0 = row_slice(&w->dec_b[0], c0, C);
    /* the float32 study path sums into s32 and converts once at the end; the default sums into hsum itself */
    const ck_tensor s32 = f32 ? CK_NEW_DT(ex, CK_DTYPE_F32, B, hsum->shape[1], hsum->shape[2], C) : *hsum;
    ck_resize_sum(ex, &s32, u, CK_MAX_STAGES - 1);
    ck_linear(ex, &s32, &feats[0], &w0, &b0, CK_ACT_NONE, &s32);
    ck_activation(ex, &s32, &s32, CK_ACT_RELU);
    if (f32) ck_convert(ex, hsum, &s32);
}

void ck_decoder_forward(ck_exec *ex, const ck_config *cfg, const ck_weights *w,
                        const ck_tensor feats[CK_MAX_STAGES], const ck_tensor *logits) {
    const int64_t B = feats[0].shape[0], H1 = feats[0].shape[1], W1 = feats[0].shape[2];
    const int64_t E = cfg->dec_dim;
    const size_t  mark = ck_arena_mark(ex->arena);
    if (!ex->unfused_decode) {
        ck_tensor hsum = CK_NEW(ex, B, H1, W1, 2 * E); /* fused hidden of both heads */
        head_hidden(ex, w, feats, &hsum, 0, 2 * E);
        ck_linear(ex, logits, &hsum, &w->cls_w, &w->cls_b, CK_ACT_NONE, NULL);
    } else {
        ck_tensor hsum = CK_NEW(ex, B, H1, W1, E); /* one head's hidden, reused by the second */
        for (int h = 0; h < 2; h++) {
            head_hidden(ex, w, feats, &hsum, h * E, E);
            ck_linear(ex, logits, &hsum, &w->cls_head_w[h], &w->cls_head_b[h], CK_ACT_NONE, h ? logits : NULL);
        }
    }
    ck_arena_reset(ex->arena, mark);
}
