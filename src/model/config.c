/* Architecture from checkpoint shapes (model_spec §2.1, §2.5, §6.2).
 * What shapes cannot say is fixed by the CorridorKey/Hiera-B+ design: 7×7/4 patch embed with padding 3,
 * mask units of 8×8 stage-0 tokens, mask-unit attention in stages 0-1 applied with timm's one-block
 * lag, LayerNorm eps 1e-6, GroupNorm(8), BatchNorm/GroupNorm eps 1e-5. */
#include "model/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ck_ckpt_tensor *need(const ck_checkpoint *ck, const char *name, int ndim, ck_err *err) {
    const ck_ckpt_tensor *t = ck_checkpoint_find(ck, name);
    if (!t) {
        ck__fail(err, CK_STATUS_EMISSING, "%s: missing tensor '%s' (is this a CorridorKey checkpoint?)", ck->path,
                 name);
        return NULL;
    }
    if (t->ndim != ndim) {
        ck__fail(err, CK_STATUS_ESHAPE, "%s: tensor '%s' has %d dims, expected %d", ck->path, name, t->ndim, ndim);
        return NULL;
    }
    return t;
}

ck_status ck_config_from_checkpoint(ck_config *cfg, const ck_checkpoint *ck, int size, int head_dim, ck_err *err) {
    memset(cfg, 0, sizeof *cfg);
    char name[CK_CKPT_NAME_MAX];
    if (size < 32 || size % 32 != 0 || size > 16384)
        return ck__fail(err, CK_STATUS_EINVAL, "model size %d is not a multiple of 32 in [32, 16384]", size);
    cfg->size = size;

    const ck_ckpt_tensor *pe = need(ck, "encoder.model.patch_embed.proj.weight", 4, err);
    if (!pe) return CK_STATUS_EMISSING;
    cfg->embed_dim    = (int)pe->shape[0];
    cfg->in_chans     = (int)pe->shape[1];
    cfg->patch_kernel = (int)pe->shape[2];
    cfg->patch_stride = 4;
    cfg->patch_pad    = cfg->patch_kernel / 2;
    if (cfg->in_chans != 4 || pe->shape[2] != pe->shape[3] || cfg->patch_kernel != 7)
        return ck__fail(err, CK_STATUS_ESHAPE, "%s: patch_embed.proj.weight is [%lld, %lld, %lld, %lld], expected [C, 4, 7, 7]",
                        ck->path, (long long)pe->shape[0], (long long)pe->shape[1], (long long)pe->shape[2],
                        (long long)pe->shape[3]);

    const ck_ckpt_tensor *pos = need(ck, "encoder.model.pos_embed", 3, err);
    if (!pos) return CK_STATUS_EMISSING;
    const int64_t g = (int64_t)llround(sqrt((double)pos->shape[1]));
    if (pos->shape[0] != 1 || g * g != pos->shape[1] || pos->shape[2] != cfg->embed_dim)
        return ck__fail(err, CK_STATUS_ESHAPE, "%s: pos_embed is [%lld, %lld, %lld], expected [1, g*g, %d]", ck->path,
                        (long long)pos->shape[0], (long long)pos->shape[1], (long long)pos->shape[2], cfg->embed_dim);
    cfg->pos_grid = (int)g;

    if (head_dim <= 0) {
        const char *m = ck_checkpoint_meta(ck, "head_dim");
        head_dim      = m ? atoi(m) : 56;
    }
    cfg->head_dim  = head_dim;
    cfg->mask_unit = 8;
    cfg->ln_eps    = 1e-6f;
    cfg->bn_eps = cfg->gn_eps = 1e-5f;

    static const int mask_unit_attn[CK_MAX_STAGES] = {1, 1, 0, 0};
    int stage = 0;
    for (int i = 0;; i++) {
        snprintf(name, sizeof name, "encoder.model.blocks.%d.norm1.weight", i);
        if (!ck_checkpoint_find(ck, name)) break;
        if (i >= CK_MAX_BLOCKS) return ck__fail(err, CK_STATUS_ESHAPE, "%s: more than %d blocks", ck->path, CK_MAX_BLOCKS);
        ck_block_cfg *b = &cfg->blocks[i];
        const ck_ckpt_tensor *n1 = need(ck, name, 1, err);
        snprintf(name, sizeof name, "encoder.model.blocks.%d.norm2.weight", i);
        const ck_ckpt_tensor *n2 = need(ck, name, 1, err);
        snprintf(name, sizeof name, "encoder.model.blocks.%d.mlp.fc1.weight", i);
        const ck_ckpt_tensor *f1 = need(ck, name, 2, err);
        if (!n1 || !n2 || !f1) return CK_STATUS_EMISSING;
        b->dim_in     = (int)n1->shape[0];
        b->dim_out    = (int)n2->shape[0];
        b->mlp_hidden = (int)f1->shape[0];
        b->q_pool     = b->dim_in != b->dim_out;
        /* timm reads the stage's mask-unit flag before advancing the stage: the first block of a new
         * stage keeps the previous stage's setting (model_spec §2.5). */
        b->windowed = mask_unit_attn[stage];
        if (b->q_pool) {
            stage++;
            if (stage >= CK_MAX_STAGES || b->dim_out != 2 * b->dim_in)
                return ck__fail(err, CK_STATUS_ESHAPE, "%s: block %d widens %d -> %d; expected 3 doublings in total",
                                ck->path, i, b->dim_in, b->dim_out);
        } else if (i > 0 && b->dim_in != cfg->blocks[i - 1].dim_out) {
            return ck__fail(err, CK_STATUS_ESHAPE, "%s: block %d input width %d != block %d output width %d",
                            ck->path, i, b->dim_in, i - 1, cfg->blocks[i - 1].dim_out);
        }
        b->stage = stage;
        if (b->dim_out % head_dim != 0)
            return ck__fail(err, CK_STATUS_ESHAPE, "%s: block %d width %d is not a multiple of head_dim %d", ck->path,
                            i, b->dim_out, head_dim);
        b->heads = b->dim_out / head_dim;
        cfg->stage_blocks[stage]++;
        cfg->stage_dim[stage] = b->dim_out;
        cfg->num_blocks       = i + 1;
    }
    cfg->num_stages = stage + 1;
    if (cfg->num_blocks == 0 || cfg->blocks[0].dim_in != cfg->embed_dim || cfg->num_stages != 4)
        return ck__fail(err, CK_STATUS_ESHAPE, "%s: encoder has %d blocks in %d stages; expected 4 stages", ck->path,
                        cfg->num_blocks, cfg->num_stages);

    const ck_ckpt_tensor *l1 = need(ck, "alpha_decoder.linear_c1.proj.weight", 2, err);
    const ck_ckpt_tensor *ca = need(ck, "alpha_decoder.classifier.weight", 4, err);
    const ck_ckpt_tensor *cf = need(ck, "fg_decoder.classifier.weight", 4, err);
    const ck_ckpt_tensor *st = need(ck, "refiner.stem.0.weight", 4, err);
    if (!l1 || !ca || !cf || !st) return CK_STATUS_EMISSING;
    cfg->dec_dim    = (int)l1->shape[0];
    cfg->dec_out[0] = (int)ca->shape[0];
    cfg->dec_out[1] = (int)cf->shape[0];
    if (cfg->dec_out[0] != 1 || cfg->dec_out[1] != 3)
        return ck__fail(err, CK_STATUS_ESHAPE, "%s: decoder outputs %d/%d channels, expected 1 (alpha) and 3 (fg)",
                        ck->path, cfg->dec_out[0], cfg->dec_out[1]);
    cfg->ref_hidden = (int)st->shape[0];
    cfg->ref_groups = 8;
    if (cfg->ref_hidden % cfg->ref_groups != 0)
        return ck__fail(err, CK_STATUS_ESHAPE, "%s: refiner width %d is not a multiple of 8 groups", ck->path,
                        cfg->ref_hidden);
    for (int r = 1;; r++) {
        snprintf(name, sizeof name, "refiner.res%d.conv1.weight", r);
        if (!ck_checkpoint_find(ck, name)) break;
        if (r > CK_MAX_REF_BLOCKS) return ck__fail(err, CK_STATUS_ESHAPE, "%s: too many refiner blocks", ck->path);
        cfg->ref_blocks = r;
    }
    return CK_OK;
}

void ck_config_log(const ck_config *cfg) {
    CK_LOG_INFO("model: S=%d, Hiera widths %d/%d/%d/%d, blocks %d/%d/%d/%d, head_dim %d, pos grid %d -> %d, "
                "decoder %d, refiner %d x %d blocks",
                cfg->size, cfg->stage_dim[0], cfg->stage_dim[1], cfg->stage_dim[2], cfg->stage_dim[3],
                cfg->stage_blocks[0], cfg->stage_blocks[1], cfg->stage_blocks[2], cfg->stage_blocks[3], cfg->head_dim,
                cfg->pos_grid, cfg->size / 4, cfg->dec_dim, cfg->ref_hidden, cfg->ref_blocks);
}
