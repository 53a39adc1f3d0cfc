/* CNN refiner at full resolution (model_spec §5.2).
 * ref: CorridorKeyModule/core/model_transformer.py CNNRefinerModule.
 * Input: normalized RGB (x[..., 0:3]) and the coarse probabilities σ(logits_up) → 7 channels (and a zero eighth, CK_REF_IN).
 * stem: conv3×3 → GN → ReLU; res_d (d = 1, 2, 4, 8): ReLU(GN2(conv2(ReLU(GN1(conv1(x))))) + x);
 * final 1×1 conv. Output delta_raw is before the ×10 (and refiner_scale), applied by the caller.
 *
 * Memory: at S = 2048 one 64-channel buffer is 512 MiB in fp16, so the refiner decides the peak. The
 * plain path holds three (residual stream a, t, u); the slim path at large sizes holds two: conv2 writes
 * its result a few rows above its own input, band by band (conv2_shifted), and the 7-channel input lives
 * where t goes later. */
#include "model/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One GroupNorm's statistics slot: (B, groups, 2) float32 inside the (n_gn, B, groups, 2) block. */
static ck_tensor stats_slot(const ck_tensor *all, int i) {
    const int64_t per = all->shape[1] * all->shape[2] * 2;
    return ck_tensor_make((float *)all->data + i * per, CK_DTYPE_F32, 3, (int64_t[]){all->shape[1], all->shape[2], 2});
}

/* Rows [y0, y0 + n) of an NHWC tensor with B = 1, as a view. */
static ck_tensor rows_view(const ck_tensor *t, int64_t y0, int64_t n) {
    CK_ASSERT(t->ndim == 4 && t->shape[0] == 1 && y0 >= 0 && y0 + n <= t->shape[1]);
    const size_t row = ck_tensor_nbytes(t) / (size_t)t->shape[1];
    return ck_tensor_make((uint8_t *)t->data + (size_t)y0 * row, t->dtype, 4,
                          (int64_t[]){1, n, t->shape[2], t->shape[3]});
}

/* The banded buffer of the slim refiner: `base` (1, P + H + dmax, W, Hd) holds t at rows [P, P + H),
 * zero halo rows above it ([P − d, P), refreshed before each conv2) and below it ([P + H, P + H + dmax)).
 * conv2 (dilation d) reads t and writes its result to rows [P − band − d, P − band − d + H): band k
 * (output rows [y0, y1)) reads rows [P + y0 − d, P + y1 + d) of the view (real or zero halo rows, so no
 * padding in y) and writes rows [P + y0 − band − d, P + y1 − band − d), all above what it and every
 * later band reads (P ≥ band + dmax). No copies, no extra full-size buffer; each output row sees exactly
 * the input rows of the out-of-place convolution. Returns the result as a view. */
static ck_tensor conv2_shifted(ck_exec *ex, const ck_tensor *base, int64_t P, int64_t H, int band, int d,
                               const ck_tensor *wt, const ck_tensor *bias) {
    CK_ASSERT(P >= band + d);
    const ck_tensor halo = rows_view(base, P - d, d);
    ck_zero(ex, &halo);
    const int64_t dst0 = P - band - d;
    for (int64_t y0 = 0; y0 < H; y0 += band) {
        const int64_t   y1  = y0 + band < H ? y0 + band : H;
        const ck_tensor in  = rows_view(base, P + y0 - d, y1 - y0 + 2 * d);
        const ck_tensor out = rows_view(base, dst0 + y0, y1 - y0);
        ck_conv2d_pad(ex, &out, &in, wt, bias, 1, 0, d, d);
    }
    return rows_view(base, dst0, H);
}

/* Rows per band at height H: P = band + dmax rows take `room` bytes (the float32 output, not yet written while
 * the refiner's blocks run, lies right before the buffer) and as many again allocated right before t: fewer,
 * larger bands (at 2048² in 16 bits 4 of 504 rows instead of 9 of 248: 34.80 against 35.18 ms on the H100 for
 * 64 MiB, which the CUDA backend's scratch gave back, 128 → 64 MiB: the same 1477.7 MiB peak, 2026-12-06).
 * 0 = do not band: images up to 1024² pixels (whole maps cost little memory there, and with them the fused
 * refiner folds its GroupNorm apply passes: at 1024², 6.19 ms against 7.21 banded, device peak 845 against
 * 590 MiB, H100, 2026-12-06) or no room.
 * CK_REFINER_BAND=N forces N-row bands (tests, experiments), with the P rows out cannot hold allocated right
 * before t; =off never bands (whole maps at any size). */
static int band_rows(const ck_config *cfg, int64_t H, int64_t W, size_t elem, size_t room) {
    const char   *env  = getenv("CK_REFINER_BAND");
    const int64_t dmax = 1 << (cfg->ref_blocks - 1);
    if (env && !strcmp(env, "off")) return 0;
    if (env && atoi(env) > 0) return atoi(env) < dmax ? (int)dmax : atoi(env);
    const int64_t band = (int64_t)(2 * room / ((size_t)W * cfg->ref_hidden * elem)) - dmax;
    if (H * W <= 1024 * 1024 || band < 64 || band >= H) return 0;
    return (int)band;
}

/* GroupNorm i of the refiner, then ReLU: the plain op, or, with `st` (the tiled refiner), the optional
 * groupnorm_stats writing slot st[i] or (frozen) reading it. */
static void refiner_gn(ck_exec *ex, const ck_config *cfg, const ck_tensor *y, const ck_tensor *x, const ck_tensor *g,
                       const ck_tensor *b, const ck_tensor *residual, const ck_tensor *st, int i, int frozen) {
    if (st) ck_groupnorm_stats(ex, y, x, g, b, cfg->ref_groups, cfg->gn_eps, residual, CK_ACT_RELU, &st[i], frozen);
    else ck_groupnorm(ex, y, x, g, b, cfg->ref_groups, cfg->gn_eps, residual, CK_ACT_RELU);
}

/* The fused refiner (conv3x3_gn): each residual block's convolutions take their GroupNorm moments in the
 * epilogue, and conv2 applies GroupNorm 1 + ReLU while loading t, so t is never normalized in memory and no
 * statistics pass reads the maps; the stem's GroupNorm takes its statistics from the stem convolution's moments
 * too (its apply pass stays: the result is the residual stream). CK_REFINER_FUSED=1 takes it wherever the
 * backend has the op (the CPU's is the reference composition); =auto, the default, where the backend says its op
 * is fast for these maps (CUDA: the Hopper kernel in 16 bits; 2.7 ms less at 2048 on the H100, 2026-12-05);
 * 0: never. */
typedef struct fused_gn {
    ck_tensor moments;        /* (B, H, ⌈W/CK_GN_SEG⌉, groups, 2) */
    ck_tensor stats1, stats2; /* (B, groups, 2) (mean, rstd) of t and of conv2's result */
} fused_gn;

static int fused_wanted(const ck_exec *ex, const ck_config *cfg) {
    const char *env = getenv("CK_REFINER_FUSED");
    if (!env || !*env) env = "auto";
    if (!ex->be->ext.conv3x3_gn || !ex->be->ext.gn_moments_stats) return 0;
    if (!strcmp(env, "1")) return 1;
    return !strcmp(env, "auto") && ex->be->ext.conv3x3_gn_fast &&
           ex->be->ext.conv3x3_gn_fast(ex->be, ex->dtype, cfg->ref_hidden, cfg->ref_groups);
}

static fused_gn fused_new(ck_exec *ex, const ck_config *cfg, int64_t B, int64_t H, int64_t W) {
    fused_gn f;
    f.moments = CK_NEW_DT(ex, CK_DTYPE_F32, B, H, (W + CK_GN_SEG - 1) / CK_GN_SEG, cfg->ref_groups, 2);
    f.stats1  = CK_NEW_DT(ex, CK_DTYPE_F32, B, cfg->ref_groups, 2);
    f.stats2  = CK_NEW_DT(ex, CK_DTYPE_F32, B, cfg->ref_groups, 2);
    return f;
}

/* conv3x3_gn over all rows, then the statistics of its result into `stats`. With `residual` and `a_out`, x's
 * GroupNorm (x_stats, g, be) takes the residual before its ReLU and the formed input goes to a_out. */
static void fused_conv(ck_exec *ex, const ck_config *cfg, const fused_gn *f, const ck_tensor *y, const ck_tensor *x,
                       const ck_tensor *w, const ck_tensor *b, int d, const ck_tensor *x_stats, const ck_tensor *g,
                       const ck_tensor *be, const ck_tensor *residual, const ck_tensor *a_out,
                       const ck_tensor *stats) {
    ck_conv3x3_gn(ex, y, x, w, b, d, 0, x_stats, g, be, residual, a_out, &f->moments);
    ck_gn_moments_stats(ex, stats, &f->moments, (int)x->shape[2], (int)(cfg->ref_hidden / cfg->ref_groups),
                        cfg->gn_eps);
}

/* conv2_shifted for the fused path: band k reads t (all H rows, the op pads) with GroupNorm 1 applied on load
 * and writes its rows where conv2_shifted writes them; then the statistics of the result. */
static ck_tensor conv2_shifted_fused(ck_exec *ex, const ck_config *cfg, const fused_gn *f, const ck_tensor *base,
                                     int64_t P, int64_t H, int band, int d, const ck_res_w *rw) {
    CK_ASSERT(P >= band + d);
    const ck_tensor t    = rows_view(base, P, H);
    const int64_t   dst0 = P - band - d;
    for (int64_t y0 = 0; y0 < H; y0 += band) {
        const int64_t   y1  = y0 + band < H ? y0 + band : H;
        const ck_tensor out = rows_view(base, dst0 + y0, y1 - y0);
        ck_conv3x3_gn(ex, &out, &t, &rw->conv2_w, &rw->conv2_b, d, (int)y0, &f->stats1, &rw->gn1_w, &rw->gn1_b,
                      NULL, NULL, &f->moments);
    }
    ck_gn_moments_stats(ex, &f->stats2, &f->moments, (int)t.shape[2], (int)(cfg->ref_hidden / cfg->ref_groups),
                        cfg->gn_eps);
    return rows_view(base, dst0, H);
}

/* A GroupNorm + ReLU (+ the residual before the ReLU) that the next conv1 applies while loading x, on the
 * folded path: the stem's, or a residual block's GroupNorm 2. */
typedef struct pending_gn {
    ck_tensor        x;                    /* the map it normalizes (B,H,W,Hd) */
    const ck_tensor *stats, *gamma, *beta; /* frozen statistics (B, groups, 2) and the affine */
    const ck_tensor *residual;             /* (B,H,W,Hd) or NULL */
} pending_gn;

/* stem: in (B,H,W,CK_REF_IN) → a (B,H,W,Hd). `st` (2·blocks+1 slots) receives or (frozen) supplies the
 * GroupNorm statistics; NULL: plain GroupNorm. With `raw` (the folded path), the fused convolution's raw result
 * goes there and its GroupNorm is returned in *pend for block 0's conv1 to apply; returns whether it did. */
static int refiner_stem(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *in,
                        const ck_tensor *a, const ck_tensor *st, int frozen, const fused_gn *f, const ck_tensor *raw,
                        pending_gn *pend) {
    if (f && raw && cfg->ref_blocks > 0) { /* a block's conv1 must follow to apply it */
        fused_conv(ex, cfg, f, raw, in, &w->stem_w, &w->stem_b, 1, NULL, NULL, NULL, NULL, NULL, &f->stats1);
        *pend = (pending_gn){*raw, &f->stats1, &w->stem_gn_w, &w->stem_gn_b, NULL};
        return 1;
    }
    if (f) { /* the GroupNorm's statistics from the convolution's moments; then its apply pass */
        fused_conv(ex, cfg, f, a, in, &w->stem_w, &w->stem_b, 1, NULL, NULL, NULL, NULL, NULL, &f->stats1);
        ck_groupnorm_stats(ex, a, a, &w->stem_gn_w, &w->stem_gn_b, cfg->ref_groups, cfg->gn_eps, NULL, CK_ACT_RELU,
                           &f->stats1, 1);
        return 0;
    }
    ck_conv2d(ex, a, in, &w->stem_w, &w->stem_b, 1, 1, 1);
    refiner_gn(ex, cfg, a, a, &w->stem_gn_w, &w->stem_gn_b, NULL, st, 0, frozen);
    return 0;
}

/* Residual blocks on the stream a (B,H,W,Hd). t is scratch of a's shape; u is scratch of a's shape, or
 * NULL, and then t lies at row P of the banded buffer `base` and each conv2 runs as conv2_shifted.
 * With `head` (B,H,W,4) float32, the last block's GroupNorm 2, residual and ReLU run inside the final 1×1
 * convolution (groupnorm_linear: the last stream is neither stored nor rounded) and head receives delta_raw;
 * else a holds the last stream.
 * The folded path (fused, u, and `a_alt`: a fourth map of a's shape): `stem` is the stem's GroupNorm, still to
 * apply (its raw map in a_alt), and each block's GroupNorm 2 + residual + ReLU likewise waits for the next
 * block's conv1, which applies it while loading its operand and stores the result, the next stream, into the
 * other of a and a_alt. No apply pass then reads a map and writes the stream (all four gone at four blocks; the
 * last GroupNorm 2 rides on the head). The same operations, so the same bits. */
static void refiner_blocks(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *a,
                           const ck_tensor *a_alt, const pending_gn *stem, const ck_tensor *t, const ck_tensor *u,
                           const ck_tensor *base, int64_t P, int band, const ck_tensor *st, int frozen,
                           const ck_tensor *head, const fused_gn *f) {
    CK_ASSERT(!head || !st);
    CK_ASSERT(!f || !st);
    CK_ASSERT(!a_alt || (f && u));
    CK_ASSERT(!stem || (a_alt && stem->x.data == a_alt->data));
    const ck_tensor *cur = a, *spare = a_alt; /* the stream, and where a folded GroupNorm 2 puts the next one */
    pending_gn       pend;
    int              pending = stem != NULL;
    if (stem) pend = *stem;
    for (int r = 0; r < cfg->ref_blocks; r++) {
        const ck_res_w *rw = &w->res[r];
        const int       d  = 1 << r;
        ck_tensor       c2;
        if (f) { /* t keeps conv1's raw result; GroupNorm 1 is applied inside conv2's loads */
            if (pending) { /* conv1 forms the pending GroupNorm's output on load and stores it as the stream */
                const ck_tensor *dst = pend.residual ? spare : cur; /* the stem's raw map is in spare */
                fused_conv(ex, cfg, f, t, &pend.x, &rw->conv1_w, &rw->conv1_b, d, pend.stats, pend.gamma, pend.beta,
                           pend.residual, dst, &f->stats1);
                if (pend.residual) spare = cur, cur = dst;
                pending = 0;
            } else {
                fused_conv(ex, cfg, f, t, cur, &rw->conv1_w, &rw->conv1_b, d, NULL, NULL, NULL, NULL, NULL,
                           &f->stats1);
            }
            if (u) {
                fused_conv(ex, cfg, f, u, t, &rw->conv2_w, &rw->conv2_b, d, &f->stats1, &rw->gn1_w, &rw->gn1_b,
                           NULL, NULL, &f->stats2);
                c2 = *u;
            } else {
                c2 = conv2_shifted_fused(ex, cfg, f, base, P, t->shape[1], band, d, rw);
            }
        } else {
            ck_conv2d(ex, t, cur, &rw->conv1_w, &rw->conv1_b, 1, d, d);
            refiner_gn(ex, cfg, t, t, &rw->gn1_w, &rw->gn1_b, NULL, st, 1 + 2 * r, frozen);
            if (u) ck_conv2d(ex, u, t, &rw->conv2_w, &rw->conv2_b, 1, d, d), c2 = *u;
            else c2 = conv2_shifted(ex, base, P, t->shape[1], band, d, &rw->conv2_w, &rw->conv2_b);
        }
        if (head && r == cfg->ref_blocks - 1)
            ck_groupnorm_linear(ex, head, &c2, &rw->gn2_w, &rw->gn2_b, cfg->ref_groups, cfg->gn_eps, cur, CK_ACT_RELU,
                                &w->final_w, &w->final_b, f ? &f->stats2 : NULL);
        else if (a_alt && r < cfg->ref_blocks - 1) /* the next conv1 applies it */
            pend = (pending_gn){c2, &f->stats2, &rw->gn2_w, &rw->gn2_b, cur}, pending = 1;
        else if (f) ck_groupnorm_stats(ex, a, &c2, &rw->gn2_w, &rw->gn2_b, cfg->ref_groups, cfg->gn_eps, cur,
                                       CK_ACT_RELU, &f->stats2, 1);
        else refiner_gn(ex, cfg, a, &c2, &rw->gn2_w, &rw->gn2_b, a, st, 2 + 2 * r, frozen);
    }
    CK_ASSERT(!pending);
}

/* Whether the fused refiner folds the stem's GroupNorm and each GroupNorm 2 into the next conv1 (a fourth map;
 * CK_REFINER_FOLD=0: never). */
static int fold_wanted(void) {
    const char *env = getenv("CK_REFINER_FOLD");
    return !(env && !strcmp(env, "0"));
}

/* x (B,h,w,≥3) and logits_up (B,h,w,4) → delta_raw (B,h,w,4), three full buffers. With `stats`
 * (2·blocks+1, B, groups, 2): frozen → each GroupNorm reads its slot; else each writes its slot. */
static void refiner_run(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                        const ck_tensor *logits_up, const ck_tensor *delta_raw, const ck_tensor *stats, int frozen) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], Hd = cfg->ref_hidden;
    const size_t  mark = ck_arena_mark(ex->arena);
    ck_tensor     st[2 * CK_MAX_REF_BLOCKS + 1];
    for (int i = 0; stats && i < 2 * cfg->ref_blocks + 1; i++) st[i] = stats_slot(stats, i);
    const ck_tensor *stp = stats ? st : NULL;

    ck_tensor in = CK_NEW(ex, B, H, W, CK_REF_IN); /* [rgb_norm(3), σ(alpha logit), σ(fg logits)(3), 0] */
    ck_concat_sigmoid(ex, &in, x, 3, logits_up);
    ck_tensor a = CK_NEW(ex, B, H, W, Hd); /* residual stream */
    ck_tensor t = CK_NEW(ex, B, H, W, Hd);
    ck_tensor u = CK_NEW(ex, B, H, W, Hd);
    fused_gn        fg;
    const fused_gn *fp = !stp && fused_wanted(ex, cfg) ? (fg = fused_new(ex, cfg, B, H, W), &fg) : NULL;
    ck_tensor       a2; /* the folded path's second stream buffer */
    const ck_tensor *ap = fp && fold_wanted() ? (a2 = CK_NEW(ex, B, H, W, Hd), &a2) : NULL;
    pending_gn       stem;
    const int        held = refiner_stem(ex, cfg, w, &in, &a, stp, frozen, fp, ap, &stem);
    refiner_blocks(ex, cfg, w, &a, ap, held ? &stem : NULL, &t, &u, NULL, 0, 0, stp, frozen,
                   stp ? NULL : delta_raw, fp);
    if (stp) ck_linear(ex, delta_raw, &a, &w->final_w, &w->final_b, CK_ACT_NONE, NULL);
    ck_arena_reset(ex->arena, mark);
}

void ck_refiner_forward(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                        const ck_tensor *logits_up, const ck_tensor *delta_raw) {
    refiner_run(ex, cfg, w, x, logits_up, delta_raw, NULL, 0);
}

/* Two full-size buffers, t (banded, when the image is large; else t and u) and the residual stream a.
 * logits_up (float32) and the 7-channel input live in t's memory before t is first written, and
 * logits_up again after the last block. The banded buffer starts P rows before t, inside `out` (written
 * only by the final 1×1 convolution) when out lies right before it in the arena. */
void ck_refiner_forward_slim(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                             const ck_tensor *logits, const ck_tensor *out, float delta_scale) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], Hd = cfg->ref_hidden;
    const int64_t dmax = 1 << (cfg->ref_blocks - 1);
    const size_t  es = ck_dtype_size(ex->dtype), row = (size_t)W * Hd * es;
    const size_t  mark = ck_arena_mark(ex->arena);
    CK_ASSERT(out->dtype == CK_DTYPE_F32 && out->shape[1] == H && out->shape[2] == W && out->shape[3] == 4);
    const int band = B == 1 ? band_rows(cfg, H, W, es, ck_tensor_nbytes(out)) : 0;

    /* t's memory: [P rows borrowed from out, or allocated][t: H rows][dmax zero rows] */
    int64_t   P = band ? band + dmax : 0;
    ck_tensor T = CK_NEW(ex, B, H + (band ? dmax : 0), W, Hd);
    uint8_t  *out_end = (uint8_t *)out->data + ck_tensor_nbytes(out);
    const int adjacent = out_end <= (uint8_t *)T.data && (uint8_t *)T.data - out_end < 4096; /* out, then t */
    const int borrow   = band && adjacent && (size_t)P * row <= ck_tensor_nbytes(out);
    if (band && !borrow) { /* bands larger than out's room: out's memory, and the rest of the P rows
                            * allocated right before t; where out lies elsewhere, all P rows */
        const size_t  have     = adjacent ? (size_t)((uint8_t *)T.data - (uint8_t *)out->data) : 0;
        const int64_t short_by = P - (int64_t)(have / row); /* rows out (and the padding after it) cannot hold */
        const int64_t lead     = short_by > 0 ? short_by : 0;
        CK_ASSERT(lead <= P);
        ck_arena_reset(ex->arena, mark); /* the lead rows start where t started (right after out), t after them */
        T = CK_NEW(ex, B, lead + H + dmax, W, Hd);
        T = ck_tensor_make((uint8_t *)T.data + (size_t)lead * row, ex->dtype, 4, (int64_t[]){B, H + dmax, W, Hd});
    }
    const ck_tensor base = band ? ck_tensor_make((uint8_t *)T.data - (size_t)P * row, ex->dtype, 4,
                                                 (int64_t[]){1, P + H + dmax, W, Hd})
                                : T;
    const ck_tensor t = band ? rows_view(&base, P, H) : T;
    ck_tensor       a = CK_NEW(ex, B, H, W, Hd); /* residual stream */

    /* input: [rgb_norm(3), σ(logits_up)(4)], through t's memory */
    CK_ASSERT((size_t)B * H * W * (4 * sizeof(float) + CK_REF_IN * es) <= ck_tensor_nbytes(&t));
    ck_tensor up = ck_tensor_make(t.data, CK_DTYPE_F32, 4, (int64_t[]){B, H, W, 4});
    ck_tensor in = ck_tensor_make((uint8_t *)t.data + ck_tensor_nbytes(&up), ex->dtype, 4, (int64_t[]){B, H, W, CK_REF_IN});
    ck_resize_bilinear(ex, &up, logits, 0);
    ck_concat_sigmoid(ex, &in, x, 3, &up);
    fused_gn        fg;
    const fused_gn *fp = fused_wanted(ex, cfg) ? (fg = fused_new(ex, cfg, B, H, W), &fg) : NULL;
    /* the folded path's second stream buffer, and the last scratch map, where the image is not banded */
    ck_tensor        u, a2;
    const ck_tensor *ap = !band && fp && fold_wanted() ? (a2 = CK_NEW(ex, B, H, W, Hd), &a2) : NULL;
    if (!band) u = CK_NEW(ex, B, H, W, Hd);
    pending_gn stem;
    const int  held = refiner_stem(ex, cfg, w, &in, &a, NULL, 0, fp, ap, &stem);

    ck_tensor delta = *out; /* delta_raw (B,H,W,4) float32 */
    if (band) {
        const ck_tensor below = rows_view(&base, P + H, dmax);
        ck_zero(ex, &below);
        /* The last conv2's result starts band + dmax rows above t, inside `out` when out's memory is borrowed,
         * so the head (groupnorm_linear, which reads it) writes delta_raw below it, into the banded buffer's
         * dead tail rows [P + H − band − dmax, P + H + dmax), clear of where logits_up goes again (t's first
         * rows); without room there, the last GroupNorm writes a and the head runs as its own 1×1 conv. */
        const int64_t tail0 = P + H - band - dmax;
        const size_t  dbytes = ck_tensor_nbytes(out);
        const int     room   = (size_t)(band + 2 * dmax) * row >= dbytes && (size_t)(tail0 - P) * row >= dbytes;
        if (room) delta = ck_tensor_make((uint8_t *)base.data + (size_t)tail0 * row, CK_DTYPE_F32, 4, out->shape);
        refiner_blocks(ex, cfg, w, &a, NULL, NULL, &t, NULL, &base, P, band, NULL, 0, room ? &delta : NULL, fp);
        if (!room) ck_linear(ex, out, &a, &w->final_w, &w->final_b, CK_ACT_NONE, NULL);
    } else {
        refiner_blocks(ex, cfg, w, &a, ap, held ? &stem : NULL, &t, &u, NULL, 0, 0, NULL, 0, out, fp); /* delta_raw */
    }
    ck_resize_bilinear(ex, &up, logits, 0); /* t's memory is free again */
    ck_sigmoid_add(ex, out, &up, &delta, delta_scale);
    ck_arena_reset(ex->arena, mark);
}

/* The pre-norm input of GroupNorm `stop` (0 = stem, 1 + 2r = gn1 of block r, 2 + 2r = gn2 of block r)
 * on a tile: the refiner's layers before it, with the statistics of the earlier GroupNorms frozen in
 * `st`. in (B,h,w,CK_REF_IN) → returns a view of a, t or u (B,h,w,Hd). */
static ck_tensor refiner_until(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *in,
                               const ck_tensor *a, const ck_tensor *t, const ck_tensor *u, const ck_tensor *st,
                               int stop) {
    ck_conv2d(ex, a, in, &w->stem_w, &w->stem_b, 1, 1, 1);
    if (stop == 0) return *a;
    refiner_gn(ex, cfg, a, a, &w->stem_gn_w, &w->stem_gn_b, NULL, st, 0, 1);
    for (int r = 0; r < cfg->ref_blocks; r++) {
        const ck_res_w *rw = &w->res[r];
        const int       d  = 1 << r;
        ck_conv2d(ex, t, a, &rw->conv1_w, &rw->conv1_b, 1, d, d);
        if (stop == 1 + 2 * r) return *t;
        refiner_gn(ex, cfg, t, t, &rw->gn1_w, &rw->gn1_b, NULL, st, 1 + 2 * r, 1);
        ck_conv2d(ex, u, t, &rw->conv2_w, &rw->conv2_b, 1, d, d);
        if (stop == 2 + 2 * r) return *u;
        refiner_gn(ex, cfg, a, u, &rw->gn2_w, &rw->gn2_b, a, st, 2 + 2 * r, 1);
    }
    CK_ASSERT(!"GroupNorm index out of range");
    return *a;
}

/* GroupNorm `which`'s affine parameters. */
static void gn_affine(const ck_weights *w, int which, const ck_tensor **g, const ck_tensor **b) {
    if (which == 0) *g = &w->stem_gn_w, *b = &w->stem_gn_b;
    else if (which % 2) *g = &w->res[(which - 1) / 2].gn1_w, *b = &w->res[(which - 1) / 2].gn1_b;
    else *g = &w->res[(which - 2) / 2].gn2_w, *b = &w->res[(which - 2) / 2].gn2_b;
}

/* Tile grid: owned rectangle [y0,y1)×[x0,x1) and its halo-extended one [ya,yb)×[xa,xb), clamped. */
typedef struct tile_rect {
    int y0, y1, x0, x1, ya, yb, xa, xb;
} tile_rect;

static tile_rect tile_at(int64_t H, int64_t W, int y0, int x0, int tile, int halo) {
    tile_rect r;
    r.y0 = y0, r.x0 = x0;
    r.y1 = y0 + tile < H ? y0 + tile : (int)H, r.x1 = x0 + tile < W ? x0 + tile : (int)W;
    r.ya = y0 - halo > 0 ? y0 - halo : 0, r.xa = x0 - halo > 0 ? x0 - halo : 0;
    r.yb = r.y1 + halo < H ? r.y1 + halo : (int)H, r.xb = r.x1 + halo < W ? r.x1 + halo : (int)W;
    return r;
}

/* Copies of x and logits_up over the tile's halo-extended rectangle, from the arena. */
static void tile_inputs(ck_exec *ex, const ck_tensor *x, const ck_tensor *logits_up, const tile_rect *r,
                        ck_tensor *tx, ck_tensor *tl) {
    const int64_t B = x->shape[0], th = r->yb - r->ya, tw = r->xb - r->xa;
    *tx = ck_new_dtype(ex, x->dtype, 4, (int64_t[]){B, th, tw, x->shape[3]});
    *tl = ck_new_dtype(ex, logits_up->dtype, 4, (int64_t[]){B, th, tw, 4});
    ck_copy_rect(ex, tx, 0, 0, x, r->ya, r->xa, (int)th, (int)tw);
    ck_copy_rect(ex, tl, 0, 0, logits_up, r->ya, r->xa, (int)th, (int)tw);
}

/* The statistics of all GroupNorms without a full-size activation: for each GroupNorm in order, every
 * tile runs the layers before it (earlier statistics frozen) and the group moments of its owned pixels
 * are merged on the host in double precision (Chan's pairwise formula). Memory: tile-sized buffers;
 * compute: about five times the refiner. Exact up to the float rounding of the per-tile (mean, rstd)
 * and of the merge order. Synchronizes the backend (not for graph capture). */
static void stats_bounded(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                          const ck_tensor *logits_up, const ck_tensor *stats, int tile, int halo) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], Hd = cfg->ref_hidden;
    const int     groups = cfg->ref_groups, n_gn = 2 * cfg->ref_blocks + 1;
    ck_tensor     st[2 * CK_MAX_REF_BLOCKS + 1];
    for (int i = 0; i < n_gn; i++) st[i] = stats_slot(stats, i);
    const size_t n_stat = (size_t)(B * groups);
    double      *cnt = calloc(n_stat, sizeof(double)), *mean = calloc(n_stat, sizeof(double));
    double      *m2  = calloc(n_stat, sizeof(double));
    float       *tmp = malloc(sizeof(float) * 2 * n_stat);
    CK_ASSERT(cnt && mean && m2 && tmp);
    for (int L = 0; L < n_gn; L++) {
        for (size_t i = 0; i < n_stat; i++) cnt[i] = mean[i] = m2[i] = 0.0;
        const ck_tensor *gg, *gb;
        gn_affine(w, L, &gg, &gb);
        for (int y0 = 0; y0 < H; y0 += tile)
            for (int x0 = 0; x0 < W; x0 += tile) {
                const tile_rect r  = tile_at(H, W, y0, x0, tile, halo);
                const int       th = r.yb - r.ya, tw = r.xb - r.xa, oh = r.y1 - r.y0, ow = r.x1 - r.x0;
                const size_t    tm = ck_arena_mark(ex->arena);
                ck_tensor       tx, tl;
                tile_inputs(ex, x, logits_up, &r, &tx, &tl);
                ck_tensor       in = CK_NEW(ex, B, th, tw, CK_REF_IN);
                ck_tensor       a = CK_NEW(ex, B, th, tw, Hd), t = CK_NEW(ex, B, th, tw, Hd);
                ck_tensor       u = CK_NEW(ex, B, th, tw, Hd), own = CK_NEW(ex, B, oh, ow, Hd);
                ck_tensor       ts = CK_NEW_DT(ex, CK_DTYPE_F32, B, groups, 2);
                ck_concat_sigmoid(ex, &in, &tx, 3, &tl);
                const ck_tensor pre = refiner_until(ex, cfg, w, &in, &a, &t, &u, st, L);
                ck_copy_rect(ex, &own, 0, 0, &pre, r.y0 - r.ya, r.x0 - r.xa, oh, ow);
                ck_groupnorm_stats(ex, &own, &own, gg, gb, groups, cfg->gn_eps, NULL, CK_ACT_NONE, &ts, 0);
                if (!ex->planning) { /* merge this tile's moments */
                    ex->be->download(ex->be, tmp, ts.data, sizeof(float) * 2 * n_stat);
                    ex->be->synchronize(ex->be);
                    const double nt = (double)oh * ow * (double)(Hd / groups);
                    for (size_t i = 0; i < n_stat; i++) {
                        const double mt = tmp[2 * i], rs = tmp[2 * i + 1];
                        double       vt = 1.0 / (rs * rs) - (double)cfg->gn_eps;
                        if (vt < 0) vt = 0;
                        const double n = cnt[i] + nt, dlt = mt - mean[i];
                        mean[i] += dlt * nt / n;
                        m2[i] += vt * nt + dlt * dlt * cnt[i] * nt / n;
                        cnt[i] = n;
                    }
                }
                ck_arena_reset(ex->arena, tm);
            }
        if (!ex->planning) {
            for (size_t i = 0; i < n_stat; i++) {
                const double v = m2[i] / cnt[i];
                tmp[2 * i]     = (float)mean[i];
                tmp[2 * i + 1] = (float)(1.0 / sqrt((v > 0 ? v : 0) + (double)cfg->gn_eps));
            }
            ex->be->upload(ex->be, st[L].data, tmp, sizeof(float) * 2 * n_stat);
        }
    }
    free(cnt), free(mean), free(m2), free(tmp);
}

/* Needs the backend's optional ops groupnorm_stats and copy_rect (ops_list.h CK_OPS_OPTIONAL).
 * Frozen GroupNorm (the MLX port's scheme, exact): the statistics of all GroupNorms from the whole
 * image, then the refiner runs per tile of `tile`×`tile` output pixels with a `halo` margin (clamped
 * to the image, so the image border keeps its zero padding) using those statistics. With halo ≥ the
 * receptive radius (1 + 2·(1+2+4+8) = 31) every owned pixel sees exactly what the untiled refiner sees.
 * bounded = 0: the statistics come from one untiled pass (bit-identical to the untiled refiner);
 * bounded = 1: from stats_bounded (tile-sized memory throughout; equal within float rounding). */
void ck_refiner_forward_tiled(ck_exec *ex, const ck_config *cfg, const ck_weights *w, const ck_tensor *x,
                              const ck_tensor *logits_up, const ck_tensor *delta_raw, int tile, int halo, int bounded) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2];
    CK_ASSERT(tile > 0 && halo >= 0);
    const size_t mark  = ck_arena_mark(ex->arena);
    ck_tensor    stats = CK_NEW_DT(ex, CK_DTYPE_F32, 2 * cfg->ref_blocks + 1, B, cfg->ref_groups, 2);
    if (bounded) stats_bounded(ex, cfg, w, x, logits_up, &stats, tile, halo);
    else refiner_run(ex, cfg, w, x, logits_up, delta_raw, &stats, 0); /* statistics pass */
    for (int y0 = 0; y0 < H; y0 += tile)
        for (int x0 = 0; x0 < W; x0 += tile) {
            const tile_rect r  = tile_at(H, W, y0, x0, tile, halo);
            const int       th = r.yb - r.ya, tw = r.xb - r.xa;
            const size_t    tm = ck_arena_mark(ex->arena);
            ck_tensor       tx, tl;
            tile_inputs(ex, x, logits_up, &r, &tx, &tl);
            ck_tensor       td = ck_new_dtype(ex, delta_raw->dtype, 4, (int64_t[]){B, th, tw, 4});
            refiner_run(ex, cfg, w, &tx, &tl, &td, &stats, 1);
            ck_copy_rect(ex, delta_raw, r.y0, r.x0, &td, r.y0 - r.ya, r.x0 - r.xa, r.y1 - r.y0, r.x1 - r.x0);
            ck_arena_reset(ex->arena, tm);
        }
    ck_arena_reset(ex->arena, mark);
}
