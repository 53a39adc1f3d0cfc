/* "random:<config>" checkpoints (src/model/random_weights.c): the tiny state dict has exactly the
 * tensors of the committed tiny fixture; Hiera-B+ has the CorridorKey architecture and the documented
 * distributions; generation and a forward through ck_ctx_init are deterministic and finite. */
#include "harness.h"
#include "engine/ctx.h"
#include "model/random_weights.h"

#include <math.h>

static void same_tensor_set(const ck_checkpoint *a, const ck_checkpoint *b, const char *what) {
    CHECK_MSG(a->n_tensors == b->n_tensors, "%s: %d tensors vs %d", what, a->n_tensors, b->n_tensors);
    for (int i = 0; i < a->n_tensors; i++) {
        const ck_ckpt_tensor *t = &a->tensors[i], *u = ck_checkpoint_find(b, t->name);
        CHECK_MSG(u != NULL, "%s: '%s' missing from the fixture", what, t->name);
        if (!u) continue;
        int same = t->ndim == u->ndim && t->dtype == u->dtype;
        for (int d = 0; same && d < t->ndim; d++) same = t->shape[d] == u->shape[d];
        CHECK_MSG(same, "%s: '%s' differs in shape or dtype", what, t->name);
    }
    for (int i = 0; i < b->n_tensors; i++)
        CHECK_MSG(ck_checkpoint_find(a, b->tensors[i].name) != NULL, "%s: fixture tensor '%s' not generated", what,
                  b->tensors[i].name);
}

static const float *data_of(const ck_checkpoint *ck, const char *name, size_t *n) {
    const ck_ckpt_tensor *t = ck_checkpoint_find(ck, name);
    CHECK_MSG(t && t->dtype == CK_DTYPE_F32, "tensor %s", name);
    *n = t ? t->nbytes / 4 : 0;
    return t ? (const float *)t->data : NULL;
}

static void moments(const float *v, size_t n, double *mean, double *std, double *mn, double *mx) {
    double s = 0, s2 = 0;
    *mn = INFINITY, *mx = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        s += v[i], s2 += (double)v[i] * v[i];
        *mn = v[i] < *mn ? v[i] : *mn, *mx = v[i] > *mx ? v[i] : *mx;
    }
    *mean = s / (double)n;
    *std  = sqrt(s2 / (double)n - *mean * *mean);
}

/* std of a unit normal truncated to ±2 */
#define TN2 0.879626

static void check_std(const ck_checkpoint *ck, const char *name, double want, double rel) {
    size_t       n;
    const float *v = data_of(ck, name, &n);
    if (!v) return;
    double mean, std, mn, mx;
    moments(v, n, &mean, &std, &mn, &mx);
    printf("%-45s n=%zu std %.5f (want %.5f) mean %+.5f\n", name, n, std, want, mean);
    CHECK_MSG(fabs(std / want - 1) < rel, "%s: std %.5f, expected %.5f", name, std, want);
    CHECK_MSG(fabs(mean) < 5 * want / sqrt((double)n) + 1e-6, "%s: mean %.5f", name, mean);
}

static void test_tiny_matches_fixture(void) {
    char          fx[1024];
    ck_checkpoint gen, ref, gen2;
    ck_err        err = {{0}};
    test_path(fx, sizeof fx, "CK_FIXTURES", "tiny/s128/model.safetensors");
    CHECK_MSG(ck_random_checkpoint(&gen, "random:tiny", &err) == CK_OK, "%s", err.msg);
    CHECK_MSG(ck_checkpoint_open(&ref, fx, &err) == CK_OK, "%s", err.msg);
    same_tensor_set(&gen, &ref, "random:tiny vs tiny fixture");
    CHECK(!strcmp(ck_checkpoint_meta(&gen, "head_dim"), ck_checkpoint_meta(&ref, "head_dim")));
    /* generation is deterministic, bit for bit */
    CHECK(ck_random_checkpoint(&gen2, "random:tiny", &err) == CK_OK);
    int same = gen.n_tensors == gen2.n_tensors;
    for (int i = 0; same && i < gen.n_tensors; i++)
        same = gen.tensors[i].nbytes == gen2.tensors[i].nbytes &&
               !memcmp(gen.tensors[i].data, gen2.tensors[i].data, gen.tensors[i].nbytes);
    CHECK_MSG(same, "two generations of random:tiny differ");
    ck_checkpoint_close(&gen2);
    ck_checkpoint_close(&ref);
    ck_checkpoint_close(&gen);
    CHECK(ck_random_checkpoint(&gen, "random:nope", &err) == CK_STATUS_EINVAL);
    CHECK(gen.n_tensors == 0 && gen.map == NULL);
}

static void test_base_plus(void) {
    ck_checkpoint ck;
    ck_err        err = {{0}};
    CHECK_MSG(ck_random_checkpoint(&ck, "random:base_plus", &err) == CK_OK, "%s", err.msg);
    if (!ck.n_tensors) return;
    /* encoder 3 + 24·12 + 3 expand projections·2; two heads ·16; refiner 4 + 4·8 + 2 */
    CHECK_MSG(ck.n_tensors == 297 + 32 + 38, "%d tensors", ck.n_tensors);
    ck_config cfg;
    CHECK_MSG(ck_config_from_checkpoint(&cfg, &ck, 512, 0, &err) == CK_OK, "%s", err.msg);
    CHECK(cfg.embed_dim == 112 && cfg.num_blocks == 24 && cfg.head_dim == 56 && cfg.pos_grid == 512);
    CHECK(cfg.stage_dim[0] == 112 && cfg.stage_dim[1] == 224 && cfg.stage_dim[2] == 448 && cfg.stage_dim[3] == 896);
    CHECK(cfg.stage_blocks[0] == 2 && cfg.stage_blocks[1] == 3 && cfg.stage_blocks[2] == 16 && cfg.stage_blocks[3] == 3);
    CHECK(cfg.dec_dim == 256 && cfg.ref_hidden == 64 && cfg.ref_blocks == 4);
    const ck_ckpt_tensor *t = ck_checkpoint_find(&ck, "encoder.model.blocks.21.attn.qkv.weight");
    CHECK(t && t->ndim == 2 && t->shape[0] == 3 * 896 && t->shape[1] == 448);
    t = ck_checkpoint_find(&ck, "alpha_decoder.bn.num_batches_tracked");
    CHECK(t && t->dtype == CK_DTYPE_I64 && t->ndim == 0 && *(const int64_t *)t->data == 0);

    /* greenformer_ref.init_weights' scales */
    check_std(&ck, "encoder.model.blocks.10.attn.qkv.weight", TN2 / sqrt(448.0), 0.02);
    check_std(&ck, "encoder.model.blocks.10.attn.proj.weight", 0.5 * TN2 / sqrt(448.0), 0.02);
    check_std(&ck, "encoder.model.blocks.10.mlp.fc2.weight", 0.5 * TN2 / sqrt(1792.0), 0.02);
    check_std(&ck, "encoder.model.patch_embed.proj.weight", TN2 / sqrt(196.0), 0.05);
    check_std(&ck, "refiner.res2.conv1.weight", TN2 / sqrt(576.0), 0.05);
    check_std(&ck, "fg_decoder.linear_fuse.weight", TN2 / sqrt(1024.0), 0.02);
    check_std(&ck, "encoder.model.blocks.10.mlp.fc1.bias", 0.02, 0.1);
    size_t       n;
    double       mean, std, mn, mx;
    const float *v = data_of(&ck, "encoder.model.blocks.10.attn.qkv.weight", &n);
    if (v) {
        moments(v, n, &mean, &std, &mn, &mx);
        CHECK_MSG(mn >= -2 / sqrt(448.0) && mx <= 2 / sqrt(448.0), "truncation at 2 std: [%g, %g]", mn, mx);
    }
    if ((v = data_of(&ck, "encoder.model.blocks.10.norm1.weight", &n))) {
        moments(v, n, &mean, &std, &mn, &mx);
        CHECK_MSG(fabs(mean - 1) < 0.03 && fabs(std - 0.1) < 0.02, "norm weight mean %g std %g", mean, std);
    }
    if ((v = data_of(&ck, "alpha_decoder.bn.running_var", &n))) {
        moments(v, n, &mean, &std, &mn, &mx);
        CHECK_MSG(mn >= 0.5 && mx < 1.5 && fabs(mean - 1) < 0.08, "running_var in [%g, %g], mean %g", mn, mx, mean);
    }
    if ((v = data_of(&ck, "encoder.model.pos_embed", &n))) {
        moments(v, n, &mean, &std, &mn, &mx);
        const double rms = sqrt(std * std + mean * mean);
        printf("pos_embed rms %.4f (three waves of rms 0.25 + noise)\n", rms);
        CHECK_MSG(rms > 0.2 && rms < 0.3, "pos_embed rms %g", rms);
        /* smooth: neighbouring tokens of one channel are close (the noise alone differs by ~0.025) */
        double d = 0;
        for (int x = 0; x < 511; x++) d += fabs(v[(size_t)x * 112 + 5] - v[(size_t)(x + 1) * 112 + 5]);
        CHECK_MSG(d / 511 < 0.05, "pos_embed neighbours differ by %g on average", d / 511);
    }
    ck_checkpoint_close(&ck);
}

/* Forward at S=64 on the CPU through the public path; returns the output (S, S, 4), malloc'd. */
static float *forward_tiny(int S) {
    ck_params p = ck_params_default();
    p.size      = S;
    p.device    = CK_DEVICE_CPU;
    ck_ctx   *ctx = NULL;
    ck_status st  = ck_ctx_init(&ctx, "random:tiny", &p);
    CHECK_MSG(st == CK_OK, "init random:tiny: %s", ck_ctx_last_error(ctx));
    if (st != CK_OK) {
        ck_ctx_free(ctx);
        return NULL;
    }
    const size_t P = (size_t)S * S;
    float       *x = malloc(sizeof(float) * P * 4), *alpha = malloc(sizeof(float) * P), *fg = malloc(sizeof(float) * P * 3);
    for (int y = 0; y < S; y++)
        for (int xx = 0; xx < S; xx++)
            for (int c = 0; c < 4; c++)
                x[((size_t)y * S + xx) * 4 + c] = (float)(sin(0.13 * (xx + 1) * (c + 1)) * cos(0.21 * y) * 1.5);
    CHECK(ck_run_network(ctx, x, alpha, fg) == CK_OK);
    float *out = malloc(sizeof(float) * P * 4);
    memcpy(out, ctx->host_out, sizeof(float) * P * 4);
    free(x), free(alpha), free(fg);
    ck_ctx_free(ctx);
    return out;
}

static void test_forward(void) {
    const int S = 64;
    float    *a = forward_tiny(S), *b = forward_tiny(S);
    if (!a || !b) {
        free(a), free(b);
        return;
    }
    const size_t n      = (size_t)S * S * 4;
    int          finite = 1;
    double       mn = 1e30, mx = -1e30;
    for (size_t i = 0; i < n; i++) {
        finite &= isfinite(a[i]) != 0;
        if (i % 4 == 0) mn = a[i] < mn ? a[i] : mn, mx = a[i] > mx ? a[i] : mx;
    }
    printf("random:tiny S=%d: alpha in [%.4f, %.4f]\n", S, mn, mx);
    CHECK_MSG(finite, "non-finite output");
    CHECK_MSG(mn >= 0 && mx <= 1 && mx - mn > 1e-3, "alpha range [%g, %g]: not a varying sigmoid output", mn, mx);
    CHECK_MSG(!memcmp(a, b, n * sizeof(float)), "two contexts gave different outputs");
    free(a), free(b);
}

int main(void) {
    test_tiny_matches_fixture();
    test_base_plus();
    test_forward();
    return test_summary();
}
