/* Refiner tiling with frozen GroupNorm statistics equals the untiled refiner (fp32, CPU backend), on the
 * tiny fixture model at S = 128: tiles of 32 and 48 (a partial last tile) with halos 31 and 32, the
 * statistics from one untiled pass (the untiled arithmetic: equal up to the GEMM library's accumulation
 * order, 32 ulps of the output's scale) or gathered tile by tile with tile-sized memory (within float
 * rounding: delta = 10·delta_raw ≤ 1e-5, the bound, for both). Without a halo the result must
 * differ, which shows the comparison can fail. */
#include "engine/ctx.h"
#include "harness.h"
#include "ckey_io.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

static double tiled_delta(ck_ctx *ctx, int tile, int halo, int bounded, float *out) {
    const int64_t S = ctx->cfg.size;
    ck_arena      arena;
    const size_t  cap  = (size_t)64 << 20;
    void         *base = ctx->be->alloc(ctx->be, cap);
    ck_arena_init(&arena, base, cap);
    ck_exec   ex = {ctx->be, &arena, CK_DTYPE_F32, 0, 0, 0, 0};
    ck_tensor x  = ck_tensor_make(ctx->act_block, CK_DTYPE_F32, 4, (int64_t[]){1, S, S, 4});
    ck_tensor d  = CK_NEW(&ex, 1, S, S, 4);
    ck_refiner_forward_tiled(&ex, &ctx->cfg, &ctx->w, &x, &ctx->last.logits_up, &d, tile, halo, bounded);
    memcpy(out, d.data, sizeof(float) * (size_t)(S * S * 4));
    ctx->be->free(ctx->be, base);
    const float *ref = (const float *)ctx->last.delta_raw.data;
    double       m   = 0;
    for (int64_t i = 0; i < S * S * 4; i++) m = fabs(out[i] - ref[i]) > m ? fabs(out[i] - ref[i]) : m;
    return m;
}

/* max |delta_raw| of the untiled forward: the scale that float rounding is measured against */
static double delta_scale(const ck_ctx *ctx) {
    const float  *ref = (const float *)ctx->last.delta_raw.data;
    const int64_t n   = ctx->cfg.size * ctx->cfg.size * 4;
    double        r   = 0;
    for (int64_t i = 0; i < n; i++) r = fabs(ref[i]) > r ? fabs(ref[i]) : r;
    return r;
}

int main(void) {
    char ck[1024], xp[1024];
    test_path(ck, sizeof ck, "CK_FIXTURES", "tiny/s128/model.safetensors");
    test_path(xp, sizeof xp, "CK_FIXTURES", "tiny/s128/x.npy");
    ck_params p          = ck_params_default();
    p.size               = 128;
    p.device             = CK_DEVICE_CPU;
    p.keep_intermediates = 1;
    ck_ctx *ctx          = NULL;
    CHECK_MSG(ck_ctx_init(&ctx, ck, &p) == CK_OK, "init: %s", ck_ctx_last_error(ctx));
    ck_npy x;
    ck_err err = {{0}};
    CHECK(ck_npy_read(xp, &x, &err) == CK_OK);
    if (!ctx || !x.data) return test_summary();
    const int S = 128;
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < S * S; i++) ctx->host_x[i * 4 + c] = x.data[c * S * S + i];
    ck_npy_free(&x);
    CHECK(ck__ctx_forward(ctx) == CK_OK);

    float       *d     = malloc(sizeof(float) * S * S * 4);
    const double scale = delta_scale(ctx);
    const struct {
        int tile, halo;
    } cases[] = {{32, 32}, {48, 31}, {64, 40}};
    size_t highs[2][3];
    for (int bounded = 0; bounded <= 1; bounded++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            double m = tiled_delta(ctx, cases[i].tile, cases[i].halo, bounded, d);
            char   label[80];
            snprintf(label, sizeof label, "tile %d halo %d, %s statistics", cases[i].tile, cases[i].halo,
                     bounded ? "tiled" : "untiled");
            /* delta = 10·delta_raw enters the logits: the bound holds for delta itself */
            check_close(label, d, (const float *)ctx->last.delta_raw.data, (size_t)S * S * 4, 1e-6, 0.0);
            printf("       %s: max abs delta_raw %.3e (x10 = %.3e)\n", label, m, 10 * m);
            CHECK(10 * m <= 1e-5);
            /* with the full-image statistics every tile computes the untiled arithmetic; only the GEMM
             * library's accumulation order may differ with the tile's width (OpenBLAS picks kernels by the
             * matrix shape: 0 on one machine, 3e-8 on another, 5.5e-7 = 13 ulps of max |delta_raw| 0.35 on
             * an AMD Zen with OpenBLAS 0.3.21), so ulps of the output's scale, not bits */
            if (!bounded)
                CHECK_MSG(m <= 32 * FLT_EPSILON * scale, "untiled statistics: %.3e, want float rounding only (%.3e)",
                          m, 32 * FLT_EPSILON * scale);
        }
    /* memory at a large size, from the planner (shapes only, nothing runs): the untiled statistics pass
     * holds three full-size 16-channel buffers, the tiled one only tile-sized ones */
    for (int bounded = 0; bounded <= 1; bounded++) {
        const int64_t Sp = 2048;
        ck_arena      pa;
        ck_arena_init(&pa, NULL, 0);
        ck_exec   pex = {ctx->be, &pa, CK_DTYPE_F32, 1, 0, 0, 0};
        ck_tensor px  = CK_NEW(&pex, 1, Sp, Sp, 4), pl = CK_NEW(&pex, 1, Sp, Sp, 4), pd = CK_NEW(&pex, 1, Sp, Sp, 4);
        const size_t fixed = pa.high;
        ck_refiner_forward_tiled(&pex, &ctx->cfg, &ctx->w, &px, &pl, &pd, 256, 32, bounded);
        highs[bounded][0] = pa.high - fixed;
    }
    printf("       S=2048, tiles 256/32: refiner scratch %.1f MiB with untiled statistics, %.1f MiB tiled\n",
           highs[0][0] / 1048576.0, highs[1][0] / 1048576.0);
    CHECK_MSG(highs[1][0] * 10 < highs[0][0], "tiled statistics must not need full-size buffers");
    double m0 = tiled_delta(ctx, 32, 0, 0, d);
    printf("       tile 32 halo 0 (control): max abs %.3e\n", m0);
    CHECK_MSG(m0 > 1e-3, "tiles without a halo should differ from the untiled refiner");
    free(d);
    ck_ctx_free(ctx);
    return test_summary();
}
