/* Batches and tiled keying on CUDA (tiny fixture model):
 *  - a forward of 3 images equals 3 single-image forwards: fp32 within 1e-5, fp16 within 2e-3;
 *  - tiled keying on the device (tiles pre-processed in place from the uploaded plate, batched
 *    forwards, the blend of frame/cuda/tiling.cu) equals the CPU backend's tiled key within 1e-5 in fp32,
 *    with batches of 1, 4 and 32 tiles, and skipped (all-background / all-foreground) tiles;
 *  - ck_key_passes of a tiled CUDA context (post-processing of the blended plate on the device) against
 *    the CPU's ck_key_passes: alpha and fg halves within one half ulp, processed within two, comp ±1;
 *  - ck_key_passes_batch over 3 frames of different sizes equals ck_key_passes frame by frame.
 * Skips (exit 77) without a CUDA device. */
#include "engine/ctx.h"
#include "core/tensor.h"
#include "cuda_test.h"
#include "batch_inputs.h"
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static ck_ctx *open_ctx(const char *ck, ck_device dev, ck_precision prec, int size, int tile, int max_batch) {
    ck_params p    = ck_params_default();
    p.size         = size;
    p.device       = dev;
    p.precision    = prec;
    p.threads      = 2;
    p.tile         = tile;
    p.tile_overlap = tile ? 16 : 0;
    p.max_batch    = max_batch;
    p.despeckle_size = 30;
    ck_ctx *ctx    = NULL;
    if (ck_ctx_init(&ctx, ck, &p) != CK_OK) {
        printf("NOT OK init: %s\n", ck_ctx_last_error(ctx));
        ck_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

static void test_network_batch(const char *ck, ck_precision prec, double tol) {
    const int    S = 128;
    const size_t P = (size_t)S * S;
    ck_ctx      *one = open_ctx(ck, CK_DEVICE_CUDA, prec, S, 0, 1), *three = open_ctx(ck, CK_DEVICE_CUDA, prec, S, 0, 3);
    float       *x = malloc(sizeof(float) * P * 12), *a3 = malloc(sizeof(float) * P * 3), *a1 = malloc(sizeof(float) * P * 3);
    if (!one || !three) {
        CHECK(0);
    } else {
        for (int b = 0; b < 3; b++) make_input(x + P * 4 * b, S, b);
        for (int rep = 0; rep < 2; rep++) /* eager + capture, then the graph's replay */
            CHECK_MSG(ck_run_network_batch(three, 3, x, a3, NULL) == CK_OK, "%s", ck_ctx_last_error(three));
        for (int b = 0; b < 3; b++) CHECK(ck_run_network(one, x + P * 4 * b, a1 + P * b, NULL) == CK_OK);
        char label[96];
        snprintf(label, sizeof label, "[%s] batch of 3 vs 3 single forwards (alpha)", prec == CK_PREC_FP32 ? "fp32" : "fp16");
        check_close(label, a3, a1, P * 3, tol, 0);
        CHECK(ck_run_network_batch(three, 1, x + P * 8, a3, NULL) == CK_OK); /* batch 1 after batch 3 */
        snprintf(label, sizeof label, "[%s] batch of 1 on the batch-3 context", prec == CK_PREC_FP32 ? "fp32" : "fp16");
        check_close(label, a3, a1 + P * 2, P, tol, 0);
    }
    free(x), free(a3), free(a1);
    ck_ctx_free(one), ck_ctx_free(three);
}

/* background left of x = 70, a mixed band, foreground from x = 186 (as test_batch.c) */
static void make_plate(ck_image *rgb, ck_image *hint, int w, int h, int seed) {
    *rgb  = (ck_image){w, h, 3, malloc(sizeof(float) * 3 * (size_t)w * h)};
    *hint = (ck_image){w, h, 1, malloc(sizeof(float) * (size_t)w * h)};
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const size_t i  = (size_t)y * w + x;
            const float  hv = x < 70 ? 0.0f : x >= 186 ? 1.0f : (float)(0.5 + 0.45 * sin(0.09 * x + 0.13 * y + seed));
            hint->data[i]        = hv;
            rgb->data[3 * i]     = 0.2f + 0.6f * hv + 0.05f * sinf(0.3f * x + seed);
            rgb->data[3 * i + 1] = 0.8f - 0.5f * hv;
            rgb->data[3 * i + 2] = 0.25f + 0.1f * cosf(0.2f * y);
        }
}

static int half_ulps(uint16_t a, uint16_t b) { return a > b ? a - b : b - a; }

static void compare_passes(const char *label, const ck_passes *a, const ck_passes *b, int max_fg_ulps, int max_proc_ulps) {
    const size_t F = (size_t)a->width * a->height;
    int          da = 0, df = 0, dp = 0, dc = 0;
    CHECK(a->width == b->width && a->height == b->height && a->alpha && b->alpha);
    if (!a->alpha || !b->alpha) return;
    for (size_t i = 0; i < F; i++) {
        da = fmax(da, half_ulps(a->alpha[i], b->alpha[i]));
        for (int c = 0; c < 3; c++) df = fmax(df, half_ulps(a->fg[3 * i + c], b->fg[3 * i + c]));
        for (int c = 0; c < 4; c++) dp = fmax(dp, half_ulps(a->processed[4 * i + c], b->processed[4 * i + c]));
        for (int c = 0; c < 3 && a->comp; c++) dc = fmax(dc, abs((int)a->comp[3 * i + c] - (int)b->comp[3 * i + c]));
    }
    CHECK_MSG(da <= max_fg_ulps && df <= max_fg_ulps && dp <= max_proc_ulps && dc <= 1,
              "%s: alpha %d, fg %d, processed %d half ulps, comp %d", label, da, df, dp, dc);
    printf("       %s: alpha %d, fg %d, processed %d half ulps, comp %d\n", label, da, df, dp, dc);
}

static void test_tiled(const char *ck) {
    const int    w = 250, h = 110;
    const size_t F = (size_t)w * h;
    ck_image     rgb, hint;
    make_plate(&rgb, &hint, w, h, 0);
    ck_ctx   *cpu = open_ctx(ck, CK_DEVICE_CPU, CK_PREC_FP32, 0, 64, 1);
    ck_result ref = {0};
    CHECK(cpu && ck_key_image_begin(cpu, &rgb, &hint, &ref) == CK_OK);
    ck_passes ref_passes = {0};
    CHECK(cpu && ck_key_passes(cpu, &rgb, &hint, &ref_passes) == CK_OK);
    const int batches[3] = {1, 4, 32};
    for (int k = 0; k < 3 && ref.alpha.data; k++) {
        ck_ctx *gpu = open_ctx(ck, CK_DEVICE_CUDA, CK_PREC_FP32, 0, 64, batches[k]);
        if (!gpu) {
            CHECK(0);
            continue;
        }
        CHECK(ck__tiled_on_device(gpu, w, h) && ck_ctx_postprocess_on_device(gpu));
        CHECK(ck_ctx_warmup(gpu) == CK_OK);
        for (int rep = 0; rep < 2; rep++) { /* the second frame replays the graphs */
            ck_result res = {0};
            CHECK_MSG(ck_key_image_begin(gpu, &rgb, &hint, &res) == CK_OK, "%s", ck_ctx_last_error(gpu));
            char label[128];
            snprintf(label, sizeof label, "device tiles 64/16, batches of %d, frame %d: alpha vs the CPU's", batches[k],
                     rep);
            if (res.alpha.data) check_close(label, res.alpha.data, ref.alpha.data, F, 1e-5, 0);
            snprintf(label, sizeof label, "device tiles 64/16, batches of %d, frame %d: fg vs the CPU's", batches[k], rep);
            if (res.fg.data) check_close(label, res.fg.data, ref.fg.data, F * 3, 1e-5, 0);
            ck_result_free(&res);
        }
        ck_passes pv = {0};
        CHECK_MSG(ck_key_passes(gpu, &rgb, &hint, &pv) == CK_OK, "%s", ck_ctx_last_error(gpu));
        char label[96];
        snprintf(label, sizeof label, "tiled passes on the device (batches of %d) vs the CPU's", batches[k]);
        compare_passes(label, &pv, &ref_passes, 1, 2);
        ck_passes_free(gpu, &pv);
        ck_ctx_free(gpu);
    }
    ck_result_free(&ref);
    ck_passes_free(cpu, &ref_passes);
    ck_ctx_free(cpu);
    free(rgb.data), free(hint.data);
}

static void test_passes_batch(const char *ck) {
    ck_ctx *gpu = open_ctx(ck, CK_DEVICE_CUDA, CK_PREC_FP32, 128, 0, 3);
    if (!gpu) {
        CHECK(0);
        return;
    }
    const int sizes[3][2] = {{300, 200}, {128, 128}, {333, 77}};
    ck_image  rgb[3], hint[3];
    ck_passes batch[3], single[3];
    memset(batch, 0, sizeof batch), memset(single, 0, sizeof single);
    for (int i = 0; i < 3; i++) make_plate(&rgb[i], &hint[i], sizes[i][0], sizes[i][1], i);
    for (int rep = 0; rep < 2; rep++)
        CHECK_MSG(ck_key_passes_batch(gpu, 3, rgb, hint, batch) == CK_OK, "%s", ck_ctx_last_error(gpu));
    for (int i = 0; i < 3; i++) CHECK(ck_key_passes(gpu, &rgb[i], &hint[i], &single[i]) == CK_OK);
    for (int i = 0; i < 3; i++) {
        char label[64];
        snprintf(label, sizeof label, "ck_key_passes_batch frame %d (%dx%d)", i, sizes[i][0], sizes[i][1]);
        compare_passes(label, &batch[i], &single[i], 1, 2);
    }
    CHECK(ck_key_passes_batch(gpu, 4, rgb, hint, batch) == CK_STATUS_EINVAL);
    for (int i = 0; i < 3; i++) {
        ck_passes_free(gpu, &batch[i]), ck_passes_free(gpu, &single[i]);
        free(rgb[i].data), free(hint[i].data);
    }
    ck_ctx_free(gpu);
}

int main(void) {
    ck_backend *probe = cuda_backend_or_skip();
    if (!probe) return CK_TEST_SKIP;
    probe->destroy(probe);
    char ck[1024];
    test_path(ck, sizeof ck, "CK_FIXTURES", "tiny/s128/model.safetensors");
    test_network_batch(ck, CK_PREC_FP32, 1e-5);
    test_network_batch(ck, CK_PREC_FP16, 2e-3);
    test_tiled(ck);
    test_passes_batch(ck);
    return test_summary();
}
