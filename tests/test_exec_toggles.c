/* Execution toggles change how the network is computed, not what: on the tiny fixture model at S = 128
 * on the CPU,
 *  - the slim forward (refiner in two full-size buffers, conv2 banded in place, logits_up transient)
 *    equals the forward that keeps every intermediate: automatic bands, bands of 8 rows (= the largest
 *    dilation: every band reads its neighbours' rows) and of 40 rows (a partial last band), and without
 *    the refiner;
 *  - the unfused decoder (fused_decode off: heads one after the other) equals the fused one;
 *  - the fused refiner (CK_REFINER_FUSED=1: GroupNorm moments from the convolutions, GroupNorm 1 applied inside
 *    conv2; on the CPU its reference composition) equals the unfused one, in the keep, slim and banded forwards,
 *    and its GroupNorm 2 folded into the next conv1 gives the bits of its own apply pass (CK_REFINER_FOLD=0);
 *  - the LayerNorms folded into the linears after them (CK_LN_LINEAR=1; on the CPU the composition) change
 *    nothing;
 *  - the patch embedding as a 2×2 convolution over 4×4 blocks (CK_PATCH_S2D=1) equals the 7×7 stride-4 one. */
#include "engine/ctx.h"
#include "harness.h"
#include "ckey_io.h"

#include <stdlib.h>
#include <string.h>

enum { S = 128 };

static ck_ctx *open_ctx(const char *ck, int keep, int use_refiner, int fused_decode) {
    ck_params p          = ck_params_default();
    p.fused_decode       = fused_decode;
    p.size               = S;
    p.device             = CK_DEVICE_CPU;
    p.keep_intermediates = keep;
    p.use_refiner        = use_refiner;
    ck_ctx *ctx          = NULL;
    if (ck_ctx_init(&ctx, ck, &p) != CK_OK) {
        fprintf(stderr, "init: %s\n", ck_ctx_last_error(ctx));
        ck_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

static int run(ck_ctx *ctx, const float *x, float *out) {
    memcpy(ctx->host_x, x, sizeof(float) * S * S * 4);
    if (ck__ctx_forward(ctx) != CK_OK) return 0;
    memcpy(out, ctx->host_out, sizeof(float) * S * S * 4);
    return 1;
}

/* The slim forward with the switch `env`=1 against it unset, within `tol` (absolute). */
static void toggle_case(const char *ck, const float *x, const char *env, const char *label, double tol) {
    float  *ref = malloc(sizeof(float) * S * S * 4), *got = malloc(sizeof(float) * S * S * 4);
    ck_ctx *plain = open_ctx(ck, 0, 1, 1);
    CHECK(ref && got && plain && run(plain, x, ref));
    ck_ctx_free(plain);
    setenv(env, "1", 1);
    ck_ctx *ctx = open_ctx(ck, 0, 1, 1);
    CHECK(ctx && run(ctx, x, got));
    check_close(label, got, ref, (size_t)S * S * 4, tol, 0.0);
    ck_ctx_free(ctx);
    unsetenv(env);
    free(ref), free(got);
}

int main(void) {
    char ck[1024], xp[1024];
    test_path(ck, sizeof ck, "CK_FIXTURES", "tiny/s128/model.safetensors");
    test_path(xp, sizeof xp, "CK_FIXTURES", "tiny/s128/x.npy");
    ck_npy xn;
    ck_err err = {{0}};
    CHECK(ck_npy_read(xp, &xn, &err) == CK_OK);
    if (!xn.data) return test_summary();
    float *x = malloc(sizeof(float) * S * S * 4), *ref = malloc(sizeof(float) * S * S * 4);
    float *got = malloc(sizeof(float) * S * S * 4);
    for (int c = 0; c < 4; c++) /* fixture NCHW → NHWC */
        for (int i = 0; i < S * S; i++) x[i * 4 + c] = xn.data[c * S * S + i];
    ck_npy_free(&xn);

    for (int use_refiner = 1; use_refiner >= 0; use_refiner--) {
        ck_ctx *keep = open_ctx(ck, 1, use_refiner, 1);
        CHECK(keep && run(keep, x, ref));
        const size_t keep_bytes = keep ? ck_ctx_activation_bytes(keep) : 0;
        ck_ctx_free(keep);
        const char *bands[] = {NULL, "8", "40"};
        size_t      band_bytes[3] = {0, 0, 0};
        for (int b = 0; b < (use_refiner ? 3 : 1); b++) {
            if (bands[b]) setenv("CK_REFINER_BAND", bands[b], 1);
            else unsetenv("CK_REFINER_BAND");
            ck_ctx *slim = open_ctx(ck, 0, use_refiner, 1);
            CHECK(slim && run(slim, x, got));
            char label[96];
            snprintf(label, sizeof label, "slim vs keep, refiner %s, band %s", use_refiner ? "on" : "off",
                     bands[b] ? bands[b] : "none");
            /* same ops on the same rows; only BLAS blocking over a different row count may differ */
            check_close(label, got, ref, (size_t)S * S * 4, 1e-6, 0.0);
            if (slim) CHECK(ck_ctx_activation_bytes(slim) < keep_bytes);
            band_bytes[b] = slim ? ck_ctx_activation_bytes(slim) : 0;
            ck_ctx_free(slim);
        }
        if (use_refiner) {
            /* 40-row bands need P = 48 lead rows (band + dmax 8) of 128 px x 16 channels x 4 B; out (128² x 4
             * float32) holds 32 of them, so only 16 more rows are allocated, not all 48 */
            const size_t row = (size_t)S * 16 * 4, out_rows = (size_t)S * S * 16 / row;
            printf("activation bytes: bands none %zu, 8 %zu, 40 %zu (row %zu B)\n", band_bytes[0], band_bytes[1],
                   band_bytes[2], row);
            CHECK(band_bytes[2] > band_bytes[1] && band_bytes[2] - band_bytes[1] <= (48 - out_rows) * row);
        }
    }
    unsetenv("CK_REFINER_BAND");

    {
        ck_ctx *plain = open_ctx(ck, 1, 1, 1);
        CHECK(plain && run(plain, x, ref));
        ck_ctx_free(plain);
        setenv("CK_REFINER_FUSED", "1", 1);
        const char *bands[] = {NULL, "8"};
        for (int v = 0; v < 3; v++) {
            if (v == 2) setenv("CK_REFINER_BAND", bands[1], 1);
            ck_ctx *ctx = open_ctx(ck, v == 0, 1, 1);
            CHECK(ctx && run(ctx, x, got));
            char label[96];
            snprintf(label, sizeof label, "fused refiner vs unfused (%s)", v == 0 ? "keep" : v == 1 ? "slim" : "8-row bands");
            /* the statistics come from merged row moments instead of one sum: float32 rounding only */
            check_close(label, got, ref, (size_t)S * S * 4, 2e-6, 0.0);
            ck_ctx_free(ctx);
        }
        unsetenv("CK_REFINER_BAND");
        /* each GroupNorm 2 folded into the next conv1 (the default where the map is not banded) against its own
         * apply pass (CK_REFINER_FOLD=0): the same operations, so the same bits */
        float  *fold = malloc(sizeof(float) * S * S * 4);
        ck_ctx *a = open_ctx(ck, 0, 1, 1);
        CHECK(fold && a && run(a, x, fold));
        ck_ctx_free(a);
        setenv("CK_REFINER_FOLD", "0", 1);
        ck_ctx *b = open_ctx(ck, 0, 1, 1);
        CHECK(b && run(b, x, got));
        ck_ctx_free(b);
        unsetenv("CK_REFINER_FOLD");
        check_close("fused refiner: GroupNorm 2 folded into conv1 vs its apply pass", got, fold, (size_t)S * S * 4,
                    0.0, 0.0);
        free(fold);
        unsetenv("CK_REFINER_FUSED");
    }

    toggle_case(ck, x, "CK_LN_LINEAR", "LayerNorm folded into the linears vs not", 0.0);
    /* the same products plus zeros, summed in another order: float32 rounding only */
    toggle_case(ck, x, "CK_PATCH_S2D", "patch embedding over 4x4 blocks vs 7x7 stride 4", 2e-6);

    ck_ctx *fused = open_ctx(ck, 0, 1, 1), *unfused = open_ctx(ck, 0, 1, 0);
    CHECK(fused && run(fused, x, ref));
    CHECK(unfused && run(unfused, x, got));
    /* per output channel the same dot products; the GEMM's N differs (2E vs E), so allow BLAS rounding */
    check_close("fused_decode off vs on", got, ref, (size_t)S * S * 4, 2e-6, 0.0);
    ck_ctx_free(fused);
    ck_ctx_free(unfused);
    free(x), free(ref), free(got);
    return test_summary();
}
