/* Batches on the CPU (tiny fixture model): several images per forward, and tiled keying in batches
 * of tiles.
 *  - ck_run_network_batch over 3 different inputs equals 3 single-image forwards (within float
 *    rounding: the GEMM library may block a taller matrix differently), and the 3 outputs differ;
 *  - batch sizes outside 1..max_batch are refused with a message;
 *  - tiled keying of a 250×110 plate in 64/16 tiles (all-background, all-foreground and mixed tiles)
 *    with batches of 1, 4 and 32 tiles equals a reference written here: every tile pre-processed,
 *    keyed alone and blended with the ramps of frame/tiling.c, in raster order (the tiled path as
 *    it was before batches);
 *  - the single-tile shortcut (a small subject, a tile larger than the plate's height) keys one tile
 *    and leaves the rest 0. */
#include "engine/ctx.h"
#include "batch_inputs.h"
#include "harness.h"
#include "frame/frame_ops.h"
#include "frame/tiling.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ck_ctx *open_ctx(const char *ck, int size, int tile, int max_batch) {
    ck_params p   = ck_params_default();
    p.size        = size;
    p.device      = CK_DEVICE_CPU;
    p.threads     = 2;
    p.tile        = tile;
    p.tile_overlap = tile ? 16 : 0;
    p.max_batch   = max_batch;
    ck_ctx *ctx   = NULL;
    if (ck_ctx_init(&ctx, ck, &p) != CK_OK) {
        printf("NOT OK init: %s\n", ck_ctx_last_error(ctx));
        ck_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

static void test_network_batch(const char *ck) {
    const int S = 64;
    ck_ctx   *one = open_ctx(ck, S, 0, 1), *three = open_ctx(ck, S, 0, 3);
    if (!one || !three) {
        CHECK(0);
        ck_ctx_free(one), ck_ctx_free(three);
        return;
    }
    CHECK(ck_ctx_max_batch(one) == 1 && ck_ctx_max_batch(three) == 3);
    const size_t P = (size_t)S * S;
    float       *x = malloc(sizeof(float) * P * 4 * 3), *a3 = malloc(sizeof(float) * P * 3);
    float       *f3 = malloc(sizeof(float) * P * 9), *a1 = malloc(sizeof(float) * P * 3), *f1 = malloc(sizeof(float) * P * 9);
    for (int b = 0; b < 3; b++) make_input(x + P * 4 * b, S, b);
    CHECK_MSG(ck_run_network_batch(three, 3, x, a3, f3) == CK_OK, "%s", ck_ctx_last_error(three));
    for (int b = 0; b < 3; b++)
        CHECK_MSG(ck_run_network(one, x + P * 4 * b, a1 + P * b, f1 + P * 3 * b) == CK_OK, "%s", ck_ctx_last_error(one));
    check_close("batch of 3 alpha vs 3 single forwards", a3, a1, P * 3, 1e-5, 0);
    check_close("batch of 3 fg vs 3 single forwards", f3, f1, P * 9, 1e-5, 0);
    double d01 = 0;
    for (size_t i = 0; i < P; i++) d01 = fmax(d01, fabs(a3[i] - a3[P + i]));
    CHECK_MSG(d01 > 1e-3, "the batch's images differ (max |alpha0 - alpha1| = %.2e)", d01);
    /* a batch of 2 on the same context (its own plan), then 1 */
    CHECK(ck_run_network_batch(three, 2, x + P * 4, a3, f3) == CK_OK);
    check_close("batch of 2 (images 1, 2)", a3, a1 + P, P * 2, 1e-5, 0);
    CHECK(ck_run_network_batch(three, 1, x, a3, NULL) == CK_OK);
    check_close("batch of 1 on a batch-3 context", a3, a1, P, 1e-5, 0);
    /* refused sizes */
    CHECK(ck_run_network_batch(three, 4, x, a3, NULL) == CK_STATUS_EINVAL);
    CHECK(strstr(ck_ctx_last_error(three), "1 to 3") != NULL);
    CHECK(ck_run_network_batch(three, 0, x, a3, NULL) == CK_STATUS_EINVAL);
    ck_params p = ck_params_default();
    p.size = S, p.device = CK_DEVICE_CPU, p.max_batch = CK_MAX_BATCH + 1;
    ck_ctx *bad = NULL;
    CHECK(ck_ctx_init(&bad, ck, &p) == CK_STATUS_EINVAL);
    CHECK(strstr(ck_ctx_last_error(bad), "batch") != NULL);
    ck_ctx_free(bad);
    free(x), free(a3), free(f3), free(a1), free(f1);
    ck_ctx_free(one), ck_ctx_free(three);
}

/* 250×110 plate: background (hint 0) left of x = 70, a mixed band, foreground (hint 1) from x = 186 */
static void make_plate(ck_image *rgb, ck_image *hint, int w, int h, int small_subject) {
    *rgb  = (ck_image){w, h, 3, malloc(sizeof(float) * 3 * (size_t)w * h)};
    *hint = (ck_image){w, h, 1, malloc(sizeof(float) * (size_t)w * h)};
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const size_t i = (size_t)y * w + x;
            float        hv;
            if (small_subject) hv = (x - 160) * (x - 160) + (y - 50) * (y - 50) < 400 ? 0.8f : 0.0f;
            else hv = x < 70 ? 0.0f : x >= 186 ? 1.0f : (float)(0.5 + 0.45 * sin(0.09 * x + 0.13 * y));
            hint->data[i]        = hv;
            rgb->data[3 * i]     = 0.2f + 0.6f * hv + 0.05f * sinf(0.3f * x);
            rgb->data[3 * i + 1] = 0.8f - 0.5f * hv;
            rgb->data[3 * i + 2] = 0.25f + 0.1f * cosf(0.2f * y);
        }
}

/* The tiled key as it was before batches: each run tile pre-processed and keyed alone, blended in
 * raster order (tiles exactly S × S here: no resize back). */
static void reference_tiled(ck_ctx *ctx, const ck_image *rgb, const ck_image *hint, int ov, float *alpha, float *fg,
                            int *runs) {
    const int S = ctx->cfg.size, w = rgb->width, h = rgb->height;
    int       ox[64], oy[64];
    const int nx = ck_tile_origins(w, S, ov, ox, 64), ny = ck_tile_origins(h, S, ov, oy, 64);
    float    *acc = calloc((size_t)w * h * 4, sizeof(float)), *ws = calloc((size_t)w * h, sizeof(float));
    float    *crgb = malloc(sizeof(float) * S * S * 3), *chint = malloc(sizeof(float) * S * S);
    float    *tout = malloc(sizeof(float) * S * S * 4);
    float    *scr  = malloc(sizeof(float) * ck_preprocess_scratch_floats(S, S, S, S, S));
    *runs          = 0;
    for (int ty = 0; ty < ny; ty++)
        for (int tx = 0; tx < nx; tx++) {
            float hmin = 1e30f, hmax = -1e30f;
            for (int y = 0; y < S; y++)
                for (int x = 0; x < S; x++) {
                    const size_t o = (size_t)(oy[ty] + y) * w + ox[tx] + x, t = (size_t)y * S + x;
                    for (int c = 0; c < 3; c++) crgb[t * 3 + c] = rgb->data[o * 3 + c];
                    chint[t] = hint->data[o];
                    hmin = fminf(hmin, chint[t]), hmax = fmaxf(hmax, chint[t]);
                }
            if (hmax < 0.01f || hmin > 0.99f) {
                for (int t = 0; t < S * S; t++) {
                    tout[4 * t] = hmin > 0.99f ? 1.0f : 0.0f;
                    for (int c = 0; c < 3; c++) tout[4 * t + 1 + c] = hmin > 0.99f ? crgb[3 * t + c] : 0.0f;
                }
            } else {
                ck_preprocess(ctx->host_x, crgb, S, S, chint, S, S, S, 0, scr);
                CHECK(ck__ctx_forward(ctx) == CK_OK);
                memcpy(tout, ctx->host_out, sizeof(float) * S * S * 4);
                ++*runs;
            }
            for (int y = 0; y < S; y++)
                for (int x = 0; x < S; x++) {
                    const float  wt = ck_tile_weight_1d(y, oy[ty], S, h, ov) * ck_tile_weight_1d(x, ox[tx], S, w, ov);
                    const size_t o  = (size_t)(oy[ty] + y) * w + ox[tx] + x;
                    ws[o] += wt;
                    for (int c = 0; c < 4; c++) acc[o * 4 + c] += wt * tout[((size_t)y * S + x) * 4 + c];
                }
        }
    for (size_t i = 0; i < (size_t)w * h; i++) {
        alpha[i] = acc[4 * i] / ws[i];
        for (int c = 0; c < 3; c++) fg[3 * i + c] = acc[4 * i + 1 + c] / ws[i];
    }
    free(acc), free(ws), free(crgb), free(chint), free(tout), free(scr);
}

static void test_tiled_batches(const char *ck) {
    const int w = 250, h = 110;
    ck_image  rgb, hint;
    make_plate(&rgb, &hint, w, h, 0);
    const size_t F   = (size_t)w * h;
    float       *ra = malloc(sizeof(float) * F), *rf = malloc(sizeof(float) * F * 3);
    ck_ctx      *ref = open_ctx(ck, 64, 0, 1);
    int          runs = 0;
    if (!ref) {
        CHECK(0);
        return;
    }
    reference_tiled(ref, &rgb, &hint, 16, ra, rf, &runs);
    printf("       reference: %d of 10 tiles run\n", runs);
    CHECK(runs == 6); /* columns 1..3 of 5 in both rows */
    const int batches[3] = {1, 4, 32};
    for (int k = 0; k < 3; k++) {
        ck_ctx *ctx = open_ctx(ck, 0, 64, batches[k]);
        if (!ctx) {
            CHECK(0);
            continue;
        }
        ck_result res = {0};
        CHECK_MSG(ck_key_image_begin(ctx, &rgb, &hint, &res) == CK_OK, "%s", ck_ctx_last_error(ctx));
        char label[128];
        snprintf(label, sizeof label, "tiled 64/16, batches of %d: alpha vs the reference", batches[k]);
        if (res.alpha.data) check_close(label, res.alpha.data, ra, F, 1e-5, 0);
        snprintf(label, sizeof label, "tiled 64/16, batches of %d: fg vs the reference", batches[k]);
        if (res.fg.data) check_close(label, res.fg.data, rf, F * 3, 1e-5, 0);
        ck_result_free(&res);
        ck_ctx_free(ctx);
    }
    /* the single-tile shortcut: the subject's box plus 64 px fits a 192 tile (x 58..249, the plate's
     * height resized to 192 and back): keyed there, 0 elsewhere */
    ck_image srgb, shint;
    make_plate(&srgb, &shint, w, h, 1);
    ck_ctx   *ctx = open_ctx(ck, 0, 192, 4);
    ck_result res = {0};
    CHECK(ctx && ck_key_image_begin(ctx, &srgb, &shint, &res) == CK_OK);
    if (res.alpha.data) {
        int inside = 0, outside_zero = 1;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                const float a   = res.alpha.data[(size_t)y * w + x];
                const int   far = x < 50;
                if (far && a != 0.0f) outside_zero = 0;
                if (!far && a > 0.0f) inside++;
            }
        CHECK_MSG(outside_zero && inside > 0, "single-tile shortcut: 0 away from the tile (%d), keyed inside (%d px)",
                  outside_zero, inside);
    }
    ck_result_free(&res);
    ck_ctx_free(ctx), ck_ctx_free(ref);
    free(ra), free(rf), free(rgb.data), free(hint.data), free(srgb.data), free(shint.data);
}

int main(void) {
    char ck[1024];
    test_path(ck, sizeof ck, "CK_FIXTURES", "tiny/s128/model.safetensors");
    test_network_batch(ck);
    test_tiled_batches(ck);
    return test_summary();
}
