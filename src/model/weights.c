/* Weight table, validation and preparation (model_spec §6.2).
 *
 * Every checkpoint tensor is checked against the table built from the config: name, shape, dtype.
 * All problems are reported (one message each) before failing. Accepted storage dtypes for parameters:
 * float32, float16, bfloat16 (converted to float32 here). Preparation: pos_embed resized with PyTorch's
 * bicubic to the model grid, decoder heads folded (BN, linear_fuse and the per-scale linears; exact up
 * to rounding, model_spec §4), classifiers made block-diagonal, 1×1 convs viewed as linears.
 * On the CPU, tensors that need no transformation point straight into the checkpoint's in-memory copy of the file. */
#include "model/model.h"
#include "frame/frame_ops.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EXPECT 1024

typedef struct expect {
    char    name[CK_CKPT_NAME_MAX];
    int     ndim;
    int64_t shape[4];
    int     is_counter; /* BatchNorm num_batches_tracked: int64 scalar, unused */
} expect;

typedef struct table {
    expect e[MAX_EXPECT];
    int    n;
} table;

/* The checkpoint's tensors for configuration c, in state_dict order: name, shape; counters are
 * BatchNorm's num_batches_tracked (int64 scalars the model never reads). */
void ck_weights_layout(const ck_config *c, ck_layout_fn fn, void *user) {
    char          name[CK_CKPT_NAME_MAX];
    const int64_t z = 0;
#define ADD(counter, ndim, d0, d1, d2, d3, ...)                                                         \
    do {                                                                                              \
        snprintf(name, sizeof name, __VA_ARGS__);                                                     \
        fn(user, name, ndim, (const int64_t[]){(d0), (d1), (d2), (d3)}, counter);                     \
    } while (0)
    const int C0 = c->embed_dim;
    ADD(0, 3, 1, (int64_t)c->pos_grid * c->pos_grid, C0, z, "encoder.model.pos_embed");
    ADD(0, 4, C0, c->in_chans, c->patch_kernel, c->patch_kernel, "encoder.model.patch_embed.proj.weight");
    ADD(0, 1, C0, z, z, z, "encoder.model.patch_embed.proj.bias");
    for (int i = 0; i < c->num_blocks; i++) {
        const ck_block_cfg *b = &c->blocks[i];
        const int64_t ci = b->dim_in, co = b->dim_out, hid = b->mlp_hidden;
        ADD(0, 1, ci, z, z, z, "encoder.model.blocks.%d.norm1.weight", i);
        ADD(0, 1, ci, z, z, z, "encoder.model.blocks.%d.norm1.bias", i);
        if (b->q_pool) {
            ADD(0, 2, co, ci, z, z, "encoder.model.blocks.%d.proj.weight", i);
            ADD(0, 1, co, z, z, z, "encoder.model.blocks.%d.proj.bias", i);
        }
        ADD(0, 2, 3 * co, ci, z, z, "encoder.model.blocks.%d.attn.qkv.weight", i);
        ADD(0, 1, 3 * co, z, z, z, "encoder.model.blocks.%d.attn.qkv.bias", i);
        ADD(0, 2, co, co, z, z, "encoder.model.blocks.%d.attn.proj.weight", i);
        ADD(0, 1, co, z, z, z, "encoder.model.blocks.%d.attn.proj.bias", i);
        ADD(0, 1, co, z, z, z, "encoder.model.blocks.%d.norm2.weight", i);
        ADD(0, 1, co, z, z, z, "encoder.model.blocks.%d.norm2.bias", i);
        ADD(0, 2, hid, co, z, z, "encoder.model.blocks.%d.mlp.fc1.weight", i);
        ADD(0, 1, hid, z, z, z, "encoder.model.blocks.%d.mlp.fc1.bias", i);
        ADD(0, 2, co, hid, z, z, "encoder.model.blocks.%d.mlp.fc2.weight", i);
        ADD(0, 1, co, z, z, z, "encoder.model.blocks.%d.mlp.fc2.bias", i);
    }
    const char   *heads[2] = {"alpha_decoder", "fg_decoder"};
    const int64_t E        = c->dec_dim;
    for (int h = 0; h < 2; h++) {
        for (int s = 4; s >= 1; s--) {
            ADD(0, 2, E, c->stage_dim[s - 1], z, z, "%s.linear_c%d.proj.weight", heads[h], s);
            ADD(0, 1, E, z, z, z, "%s.linear_c%d.proj.bias", heads[h], s);
        }
        ADD(0, 4, E, 4 * E, 1, 1, "%s.linear_fuse.weight", heads[h]);
        ADD(0, 1, E, z, z, z, "%s.bn.weight", heads[h]);
        ADD(0, 1, E, z, z, z, "%s.bn.bias", heads[h]);
        ADD(0, 1, E, z, z, z, "%s.bn.running_mean", heads[h]);
        ADD(0, 1, E, z, z, z, "%s.bn.running_var", heads[h]);
        ADD(1, 0, z, z, z, z, "%s.bn.num_batches_tracked", heads[h]);
        ADD(0, 4, c->dec_out[h], E, 1, 1, "%s.classifier.weight", heads[h]);
        ADD(0, 1, c->dec_out[h], z, z, z, "%s.classifier.bias", heads[h]);
    }
    const int64_t H = c->ref_hidden;
    ADD(0, 4, H, 7, 3, 3, "refiner.stem.0.weight");
    ADD(0, 1, H, z, z, z, "refiner.stem.0.bias");
    ADD(0, 1, H, z, z, z, "refiner.stem.1.weight");
    ADD(0, 1, H, z, z, z, "refiner.stem.1.bias");
    for (int r = 1; r <= c->ref_blocks; r++) {
        ADD(0, 4, H, H, 3, 3, "refiner.res%d.conv1.weight", r);
        ADD(0, 1, H, z, z, z, "refiner.res%d.conv1.bias", r);
        ADD(0, 1, H, z, z, z, "refiner.res%d.gn1.weight", r);
        ADD(0, 1, H, z, z, z, "refiner.res%d.gn1.bias", r);
        ADD(0, 4, H, H, 3, 3, "refiner.res%d.conv2.weight", r);
        ADD(0, 1, H, z, z, z, "refiner.res%d.conv2.bias", r);
        ADD(0, 1, H, z, z, z, "refiner.res%d.gn2.weight", r);
        ADD(0, 1, H, z, z, z, "refiner.res%d.gn2.bias", r);
    }
    ADD(0, 4, 4, H, 1, 1, "refiner.final.weight");
    ADD(0, 1, 4, z, z, z, "refiner.final.bias");
#undef ADD
}

static void table_add(void *user, const char *name, int ndim, const int64_t shape[4], int is_counter) {
    table *t = user;
    CK_ASSERT(t->n < MAX_EXPECT);
    expect *e = &t->e[t->n++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->ndim = ndim;
    for (int d = 0; d < 4; d++) e->shape[d] = shape[d];
    e->is_counter = is_counter;
}

static void build_table(table *t, const ck_config *c) {
    t->n = 0;
    ck_weights_layout(c, table_add, t);
}

static const expect *find_expect(const table *t, const char *name) {
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->e[i].name, name) == 0) return &t->e[i];
    return NULL;
}

static void shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t o = 0;
    o += (size_t)snprintf(buf + o, n - o, "[");
    for (int i = 0; i < ndim && o < n; i++) o += (size_t)snprintf(buf + o, n - o, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

static ck_status validate(const table *t, const ck_checkpoint *ck, ck_err *err) {
    ck_status st = CK_OK;
    for (int i = 0; i < t->n; i++) {
        const expect         *e  = &t->e[i];
        const ck_ckpt_tensor *ct = ck_checkpoint_find(ck, e->name);
        if (!ct) {
            if (e->is_counter) continue; /* unused buffer; its absence is harmless */
            st = ck__fail(err, CK_STATUS_EMISSING, "%s: missing tensor '%s'", ck->path, e->name);
            continue;
        }
        if (e->is_counter) continue;
        int ok = ct->ndim == e->ndim;
        for (int d = 0; ok && d < e->ndim; d++) ok = ct->shape[d] == e->shape[d];
        if (!ok) {
            char got[96], want[96];
            shape_str(got, sizeof got, ct->ndim, ct->shape);
            shape_str(want, sizeof want, e->ndim, e->shape);
            st = ck__fail(err, CK_STATUS_ESHAPE, "%s: tensor '%s' has shape %s, expected %s", ck->path, e->name, got,
                          want);
            continue;
        }
        if (ct->dtype != CK_DTYPE_F32 && ct->dtype != CK_DTYPE_F16 && ct->dtype != CK_DTYPE_BF16)
            st = ck__fail(err, CK_STATUS_EDTYPE, "%s: tensor '%s' has dtype %s, expected float32/float16/bfloat16",
                          ck->path, e->name, ck_dtype_name(ct->dtype));
    }
    for (int i = 0; i < ck->n_tensors; i++)
        if (!find_expect(t, ck->tensors[i].name))
            st = ck__fail(err, CK_STATUS_ESHAPE, "%s: unexpected tensor '%s' (not part of this architecture)",
                          ck->path, ck->tensors[i].name);
    return st;
}

/* ---- preparation: host fp32 staging, then one upload ---- */

typedef struct staged {
    ck_tensor  *dst;    /* the weight slot to fill */
    float      *host;   /* fp32 data (owned unless borrowed) */
    int         owned;
    size_t      offset; /* in the device block */
} staged;

typedef struct stager {
    staged              s[MAX_EXPECT];
    int                 n;
    const ck_checkpoint *ck;
    ck_backend          *be;
} stager;

int ck_checkpoint_canonicalize(ck_checkpoint *ck) {
    if (!ck_checkpoint_find(ck, "refiner.stem_conv.weight")) return 0;
    for (int i = 0; i < ck->n_tensors; i++) {
        ck_ckpt_tensor *t = &ck->tensors[i];
        char            rest[CK_CKPT_NAME_MAX - 16];
        if (!strncmp(t->name, "refiner.stem_conv.", 18)) {
            snprintf(rest, sizeof rest, "%s", t->name + 18);
            snprintf(t->name, sizeof t->name, "refiner.stem.0.%s", rest);
        } else if (!strncmp(t->name, "refiner.stem_gn.", 16)) {
            snprintf(rest, sizeof rest, "%s", t->name + 16);
            snprintf(t->name, sizeof t->name, "refiner.stem.1.%s", rest);
        }
        /* every 4-D tensor of this model is a conv kernel, transposed OIHW -> OHWI by the converter */
        if (t->ndim == 4) {
            const int64_t o = t->shape[0], kh = t->shape[1], kw = t->shape[2], in = t->shape[3];
            t->shape[1] = in, t->shape[2] = kh, t->shape[3] = kw;
            (void)o;
            t->ohwi = 1;
        }
    }
    CK_LOG_INFO("%s: MLX-port layout (OHWI convolutions) read as PyTorch layout", ck->path);
    return 1;
}

static float load_elem(const ck_ckpt_tensor *t, size_t i) {
    const uint8_t *p = (const uint8_t *)t->data;
    if (t->dtype == CK_DTYPE_F32) {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return t->dtype == CK_DTYPE_F16 ? ck_f16_to_f32(h) : ck_bf16_to_f32(h);
}

static float *to_f32(const ck_ckpt_tensor *t, int *owned) {
    const size_t n = t->nbytes / ck_dtype_size(t->dtype);
    if (t->ohwi) { /* (O, KH, KW, I) storage -> (O, I, KH, KW) */
        const int64_t O = t->shape[0], I = t->shape[1], KH = t->shape[2], KW = t->shape[3];
        float        *f = malloc(sizeof(float) * (n ? n : 1));
        CK_ASSERT(f);
        for (int64_t o = 0; o < O; o++)
            for (int64_t i = 0; i < I; i++)
                for (int64_t y = 0; y < KH; y++)
                    for (int64_t x = 0; x < KW; x++)
                        f[((o * I + i) * KH + y) * KW + x] = load_elem(t, (size_t)(((o * KH + y) * KW + x) * I + i));
        *owned = 1;
        return f;
    }
    if (t->dtype == CK_DTYPE_F32 && ((uintptr_t)t->data % 4) == 0) {
        *owned = 0;
        return (float *)(uintptr_t)t->data;
    }
    float *f = malloc(sizeof(float) * (n ? n : 1));
    CK_ASSERT(f);
    for (size_t i = 0; i < n; i++) f[i] = load_elem(t, i);
    *owned = 1;
    return f;
}

static const ck_ckpt_tensor *src(const stager *sg, const char *fmt, ...) CK_PRINTF(2, 3);
static const ck_ckpt_tensor *src(const stager *sg, const char *fmt, ...) {
    char    name[CK_CKPT_NAME_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const ck_ckpt_tensor *t = ck_checkpoint_find(sg->ck, name);
    CK_ASSERT(t); /* validated before */
    return t;
}

/* Stage host data for a weight slot with the given shape. */
static void stage(stager *sg, ck_tensor *dst, float *host, int owned, int ndim, const int64_t *shape) {
    CK_ASSERT(sg->n < MAX_EXPECT);
    *dst = ck_tensor_make(NULL, CK_DTYPE_F32, ndim, shape);
    staged *s = &sg->s[sg->n++];
    s->dst = dst, s->host = host, s->owned = owned;
}

/* Stage a checkpoint tensor as is (shape from the checkpoint, or reshaped when ndim > 0). */
static void stage_ck(stager *sg, ck_tensor *dst, const ck_ckpt_tensor *t, int ndim, const int64_t *shape) {
    int    owned;
    float *h = to_f32(t, &owned);
    if (ndim == 0) stage(sg, dst, h, owned, t->ndim, t->shape);
    else stage(sg, dst, h, owned, ndim, shape);
}

static void stage_pos_embed(stager *sg, ck_weights *w, const ck_config *c) {
    const ck_ckpt_tensor *t = src(sg, "encoder.model.pos_embed");
    int                   owned;
    float                *h  = to_f32(t, &owned);
    const int             gd = c->size / 4, gs = c->pos_grid, C0 = c->embed_dim;
    if (gd != gs) {
        /* PyTorch bicubic (A = -0.75, align_corners=False) on the (C0, g, g) image = our (g, g, C0) grid */
        float *r = malloc(sizeof(float) * (size_t)gd * gd * C0);
        CK_ASSERT(r);
        ck_resize_bicubic_torch(r, gd, gd, h, gs, gs, C0);
        if (owned) free(h);
        h = r, owned = 1;
    }
    stage(sg, &w->pos_embed, h, owned, 4, (int64_t[]){1, gd, gd, C0});
}

/* Both heads folded: see ck_weights.dec_w. Double accumulation; the folded product is exact math. */
static void stage_decoders(stager *sg, ck_weights *w, const ck_config *c) {
    const int   E        = c->dec_dim;
    const char *names[2] = {"alpha_decoder", "fg_decoder"};
    double      scale[2][1024], shift[2][1024];
    CK_ASSERT(E <= 1024);
    float *fuse[2];
    int    fuse_owned[2];
    for (int h = 0; h < 2; h++) {
        int    o[4];
        float *g  = to_f32(src(sg, "%s.bn.weight", names[h]), &o[0]);
        float *b  = to_f32(src(sg, "%s.bn.bias", names[h]), &o[1]);
        float *mu = to_f32(src(sg, "%s.bn.running_mean", names[h]), &o[2]);
        float *vr = to_f32(src(sg, "%s.bn.running_var", names[h]), &o[3]);
        for (int e = 0; e < E; e++) {
            scale[h][e] = (double)g[e] / sqrt((double)vr[e] + (double)c->bn_eps);
            shift[h][e] = (double)b[e] - (double)mu[e] * scale[h][e];
        }
        if (o[0]) free(g);
        if (o[1]) free(b);
        if (o[2]) free(mu);
        if (o[3]) free(vr);
        fuse[h] = to_f32(src(sg, "%s.linear_fuse.weight", names[h]), &fuse_owned[h]); /* (E, 4E) */
    }
    for (int i = 0; i < 4; i++) {       /* feature c_{i+1} */
        const int j  = 3 - i;           /* its block in the concat order c4, c3, c2, c1 */
        const int Ci = c->stage_dim[i];
        float    *M  = malloc(sizeof(float) * (size_t)2 * E * Ci); /* (2E, Ci) */
        float    *m  = malloc(sizeof(float) * (size_t)2 * E);      /* (2E) */
        CK_ASSERT(M && m);
        for (int h = 0; h < 2; h++) {
            int    ow, ob;
            float *Wc = to_f32(src(sg, "%s.linear_c%d.proj.weight", names[h], i + 1), &ow); /* (E, Ci) */
            float *bc = to_f32(src(sg, "%s.linear_c%d.proj.bias", names[h], i + 1), &ob);   /* (E) */
            const float *Wf = fuse[h];
#pragma omp parallel for schedule(static)
            for (int e = 0; e < E; e++) {
                double *row = calloc((size_t)Ci, sizeof(double));
                CK_ASSERT(row);
                double bias = 0.0;
                for (int k = 0; k < E; k++) {
                    const double f = Wf[(size_t)e * 4 * E + (size_t)j * E + k];
                    for (int cc = 0; cc < Ci; cc++) row[cc] += f * Wc[(size_t)k * Ci + cc];
                    bias += f * bc[k];
                }
                for (int cc = 0; cc < Ci; cc++) M[((size_t)h * E + e) * Ci + cc] = (float)(scale[h][e] * row[cc]);
                m[h * E + e] = (float)(scale[h][e] * bias + (i == 0 ? shift[h][e] : 0.0));
                free(row);
            }
            if (ow) free(Wc);
            if (ob) free(bc);
        }
        stage(sg, &w->dec_w[i], M, 1, 2, (int64_t[]){2 * E, Ci});
        stage(sg, &w->dec_b[i], m, 1, 1, (int64_t[]){2 * E});
    }
    for (int h = 0; h < 2; h++)
        if (fuse_owned[h]) free(fuse[h]);

    float *cw = calloc((size_t)4 * 2 * E, sizeof(float)); /* (4, 2E) block-diagonal */
    float *cb = malloc(sizeof(float) * 4);
    CK_ASSERT(cw && cb);
    int    o1, o2, o3, o4;
    float *aw = to_f32(src(sg, "alpha_decoder.classifier.weight"), &o1); /* (1, E) */
    float *ab = to_f32(src(sg, "alpha_decoder.classifier.bias"), &o2);
    float *fw = to_f32(src(sg, "fg_decoder.classifier.weight"), &o3); /* (3, E) */
    float *fb = to_f32(src(sg, "fg_decoder.classifier.bias"), &o4);
    for (int e = 0; e < E; e++) cw[e] = aw[e];
    for (int r = 0; r < 3; r++)
        for (int e = 0; e < E; e++) cw[(size_t)(1 + r) * 2 * E + E + e] = fw[(size_t)r * E + e];
    cb[0] = ab[0], cb[1] = fb[0], cb[2] = fb[1], cb[3] = fb[2];
    if (o1) free(aw);
    if (o2) free(ab);
    if (o3) free(fw);
    if (o4) free(fb);
    /* per-head classifiers for the unfused decoder (fused_decode off): (4, E) each, zero rows for the
     * other head's channels, so the two head outputs are summed into the same 4-channel logits */
    for (int h = 0; h < 2; h++) {
        float *hw = calloc((size_t)4 * E, sizeof(float)), *hb = calloc(4, sizeof(float));
        CK_ASSERT(hw && hb);
        for (int r = h == 0 ? 0 : 1; r < (h == 0 ? 1 : 4); r++) {
            for (int e = 0; e < E; e++) hw[(size_t)r * E + e] = cw[(size_t)r * 2 * E + (size_t)h * E + e];
            hb[r] = cb[r];
        }
        stage(sg, &w->cls_head_w[h], hw, 1, 2, (int64_t[]){4, E});
        stage(sg, &w->cls_head_b[h], hb, 1, 1, (int64_t[]){4});
    }
    stage(sg, &w->cls_w, cw, 1, 2, (int64_t[]){4, 2 * E});
    stage(sg, &w->cls_b, cb, 1, 1, (int64_t[]){4});
}

/* The refiner stem's (Hd, 7, 3, 3) weight with zero input channels up to CK_REF_IN (the refiner's input
 * carries them, model.h): (Hd, CK_REF_IN, 3, 3). The extra products are exact zeros. */
static void stage_stem(stager *sg, ck_weights *w, const ck_config *c) {
    int                   owned;
    const ck_ckpt_tensor *t  = src(sg, "refiner.stem.0.weight");
    const int64_t         Hd = t->shape[0], IC = t->shape[1], KK = t->shape[2] * t->shape[3];
    CK_ASSERT(Hd == c->ref_hidden && IC <= CK_REF_IN);
    float *s = to_f32(t, &owned);                                          /* (Hd, IC, KH, KW) */
    float *p = calloc((size_t)(Hd * CK_REF_IN * KK), sizeof(float)); /* (Hd, CK_REF_IN, KH, KW) */
    CK_ASSERT(p);
    for (int64_t o = 0; o < Hd; o++)
        for (int64_t i = 0; i < IC; i++)
            memcpy(p + (o * CK_REF_IN + i) * KK, s + (o * IC + i) * KK, sizeof(float) * (size_t)KK);
    if (owned) free(s);
    stage(sg, &w->stem_w, p, 1, 4, (int64_t[]){Hd, CK_REF_IN, t->shape[2], t->shape[3]});
}

void ck_patch_weight_s2d(float *dst, const float *w, int64_t OC, int64_t IC) {
    for (int64_t o = 0; o < OC; o++)
        for (int64_t dy = 0; dy < 4; dy++)
            for (int64_t dx = 0; dx < 4; dx++)
                for (int64_t i = 0; i < IC; i++)
                    for (int64_t jy = 0; jy < 2; jy++)
                        for (int64_t jx = 0; jx < 2; jx++) {
                            const int64_t ky = 4 * jy + dy - 1, kx = 4 * jx + dx - 1;
                            dst[((o * 16 * IC + (dy * 4 + dx) * IC + i) * 2 + jy) * 2 + jx] =
                                ky < 0 || kx < 0 ? 0.0f : w[((o * IC + i) * 7 + ky) * 7 + kx];
                        }
}

/* patch_w_s2d where the patch embedding is 7×7, stride 4, padding 3 (every Hiera checkpoint's; config.c). */
static void stage_patch_s2d(stager *sg, ck_weights *w, const ck_config *c) {
    if (c->patch_kernel != 7 || c->patch_stride != 4 || c->patch_pad != 3) return;
    int                   owned;
    const ck_ckpt_tensor *t  = src(sg, "encoder.model.patch_embed.proj.weight");
    const int64_t         OC = t->shape[0], IC = t->shape[1];
    float                *s  = to_f32(t, &owned); /* (OC, IC, 7, 7) */
    float                *p  = malloc(sizeof(float) * (size_t)(OC * 16 * IC * 4));
    CK_ASSERT(p);
    ck_patch_weight_s2d(p, s, OC, IC);
    if (owned) free(s);
    stage(sg, &w->patch_w_s2d, p, 1, 4, (int64_t[]){OC, 16 * IC, 2, 2});
}

ck_status ck_weights_load(ck_weights *w, const ck_config *c, const ck_checkpoint *ck, ck_backend *be, ck_err *err) {
    memset(w, 0, sizeof *w);
    table *t = malloc(sizeof *t);
    if (!t) return ck__fail(err, CK_STATUS_EOOM, "out of memory");
    build_table(t, c);
    ck_status st = validate(t, ck, err);
    free(t);
    if (st != CK_OK) return st;

    stager *sg = calloc(1, sizeof *sg);
    if (!sg) return ck__fail(err, CK_STATUS_EOOM, "out of memory");
    sg->ck = ck, sg->be = be;

    stage_ck(sg, &w->patch_w, src(sg, "encoder.model.patch_embed.proj.weight"), 0, NULL);
    stage_ck(sg, &w->patch_b, src(sg, "encoder.model.patch_embed.proj.bias"), 0, NULL);
    stage_patch_s2d(sg, w, c);
    stage_pos_embed(sg, w, c);
    for (int i = 0; i < c->num_blocks; i++) {
        ck_block_w *b = &w->blocks[i];
#define BLK(slot, key) stage_ck(sg, &b->slot, src(sg, "encoder.model.blocks.%d." key, i), 0, NULL)
        BLK(norm1_w, "norm1.weight");
        BLK(norm1_b, "norm1.bias");
        if (c->blocks[i].q_pool) {
            BLK(proj_w, "proj.weight");
            BLK(proj_b, "proj.bias");
        }
        BLK(qkv_w, "attn.qkv.weight");
        BLK(qkv_b, "attn.qkv.bias");
        BLK(aproj_w, "attn.proj.weight");
        BLK(aproj_b, "attn.proj.bias");
        BLK(norm2_w, "norm2.weight");
        BLK(norm2_b, "norm2.bias");
        BLK(fc1_w, "mlp.fc1.weight");
        BLK(fc1_b, "mlp.fc1.bias");
        BLK(fc2_w, "mlp.fc2.weight");
        BLK(fc2_b, "mlp.fc2.bias");
#undef BLK
    }
    stage_decoders(sg, w, c);
    stage_stem(sg, w, c);
    stage_ck(sg, &w->stem_b, src(sg, "refiner.stem.0.bias"), 0, NULL);
    stage_ck(sg, &w->stem_gn_w, src(sg, "refiner.stem.1.weight"), 0, NULL);
    stage_ck(sg, &w->stem_gn_b, src(sg, "refiner.stem.1.bias"), 0, NULL);
    for (int r = 0; r < c->ref_blocks; r++) {
        ck_res_w *rw = &w->res[r];
#define RES(slot, key) stage_ck(sg, &rw->slot, src(sg, "refiner.res%d." key, r + 1), 0, NULL)
        RES(conv1_w, "conv1.weight");
        RES(conv1_b, "conv1.bias");
        RES(gn1_w, "gn1.weight");
        RES(gn1_b, "gn1.bias");
        RES(conv2_w, "conv2.weight");
        RES(conv2_b, "conv2.bias");
        RES(gn2_w, "gn2.weight");
        RES(gn2_b, "gn2.bias");
#undef RES
    }
    stage_ck(sg, &w->final_w, src(sg, "refiner.final.weight"), 2, (int64_t[]){4, c->ref_hidden});
    stage_ck(sg, &w->final_b, src(sg, "refiner.final.bias"), 0, NULL);

    /* Weight matrices (Linear, Conv2d) are stored in the backend's weight dtype; vectors stay float32
     * (model_spec: norms and biases are kept at full precision). pos_embed (117 MiB in float32 at
     * S = 2048) is stored in fp16 for an fp16 engine, whose sum with it is rounded to fp16 anyway; a
     * bf16 engine keeps it in float32 (8 mantissa bits would add visible error). */
    for (int i = 0; i < sg->n; i++) {
        staged *s = &sg->s[i];
        if (s->dst == &w->pos_embed) {
            if (be->weight_dtype == CK_DTYPE_F16) s->dst->dtype = CK_DTYPE_F16;
        } else if (be->weight_dtype != CK_DTYPE_F32 && s->dst->ndim >= 2) {
            s->dst->dtype = be->weight_dtype;
        }
    }
    /* One device block for everything that is not borrowed from the checkpoint's copy of the file. */
    const int borrow = be->device == CK_DEVICE_CPU && be->weight_dtype == CK_DTYPE_F32;
    size_t    total  = 0;
    for (int i = 0; i < sg->n; i++) {
        staged *s = &sg->s[i];
        if (borrow && !s->owned) continue;
        s->offset = total;
        total += (ck_tensor_nbytes(s->dst) + 255) & ~(size_t)255;
    }
    w->be           = be;
    w->bytes        = total;
    w->device_block = total ? be->alloc(be, total) : NULL;
    if (total && !w->device_block) {
        for (int i = 0; i < sg->n; i++)
            if (sg->s[i].owned) free(sg->s[i].host);
        free(sg);
        return ck__fail(err, CK_STATUS_EOOM, "cannot allocate %.1f MiB for weights on %s", total / 1048576.0,
                        be->name);
    }
    for (int i = 0; i < sg->n; i++) {
        staged *s = &sg->s[i];
        if (borrow && !s->owned) {
            s->dst->data = s->host; /* read-only view into the mapping */
            continue;
        }
        s->dst->data = (uint8_t *)w->device_block + s->offset;
        if (s->dst->dtype == CK_DTYPE_F32) {
            be->upload(be, s->dst->data, s->host, ck_tensor_nbytes(s->dst));
        } else {
            const int64_t n  = ck_tensor_numel(s->dst);
            uint16_t     *lp = malloc(sizeof(uint16_t) * (size_t)n);
            CK_ASSERT(lp);
            for (int64_t j = 0; j < n; j++)
                lp[j] = s->dst->dtype == CK_DTYPE_BF16 ? ck_f32_to_bf16(s->host[j]) : ck_f32_to_f16(s->host[j]);
            be->upload(be, s->dst->data, lp, ck_tensor_nbytes(s->dst));
            free(lp);
        }
        if (s->owned) free(s->host);
    }
    free(sg);
    return CK_OK;
}

void ck_weights_free(ck_weights *w) {
    if (w->device_block && w->be) w->be->free(w->be, w->device_block);
    memset(w, 0, sizeof *w);
}
