/* ck_key_passes / ck_passes_from_result on the CPU (tiny fixture model, S = 128): the passes hold
 * exactly the file samples of ck_key_image's result (half of every float, the comp's 8-bit rule), with
 * and without the comp; the block is reused for an equal or smaller frame and grown for a larger one;
 * bad arguments are refused. (The device path is checked against this one by test_cuda_postprocess.) */
#include "ckey.h"
#include "core/tensor.h"
#include "engine/ctx.h" /* ck_passes_mem: the blocks behind the passes */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void synth(ck_image *rgb, ck_image *hint, int w, int h) {
    *rgb  = (ck_image){w, h, 3, malloc(sizeof(float) * 3 * (size_t)w * h)};
    *hint = (ck_image){w, h, 1, malloc(sizeof(float) * (size_t)w * h)};
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const size_t i    = (size_t)y * w + x;
            const float  dx   = x - 0.5f * w, dy = y - 0.5f * h;
            const int    inside = dx * dx + dy * dy < 0.1f * w * h;
            rgb->data[3 * i]     = inside ? 0.8f * (0.5f + 0.5f * sinf(0.05f * x)) : 0.1f;
            rgb->data[3 * i + 1] = inside ? 0.4f : 0.85f;
            rgb->data[3 * i + 2] = inside ? 0.3f + 0.002f * (y % 100) : 0.15f;
            hint->data[i]        = inside ? 1.0f : 0.0f;
        }
}

/* passes == the samples of res; returns the number of differing samples */
static size_t compare(const ck_passes *pv, const ck_result *res) {
    const size_t F    = (size_t)res->alpha.width * res->alpha.height;
    size_t       diff = 0;
    for (size_t i = 0; i < F; i++) {
        diff += pv->alpha[i] != ck_f32_to_f16(res->alpha.data[i]);
        for (int c = 0; c < 3; c++) diff += pv->fg[3 * i + c] != ck_f32_to_f16(res->fg.data[3 * i + c]);
        for (int c = 0; c < 4; c++) diff += pv->processed[4 * i + c] != ck_f32_to_f16(res->processed.data[4 * i + c]);
        if (res->comp.data)
            for (int c = 0; c < 3; c++) diff += pv->comp[3 * i + c] != ck_f32_to_u8_trunc(res->comp.data[3 * i + c]);
    }
    return diff;
}

int main(void) {
    char ck[1024];
    test_path(ck, sizeof ck, "CK_FIXTURES", "tiny/s128/model.safetensors");
    for (int comp = 0; comp <= 1; comp++) {
        ck_params p = ck_params_default();
        p.size      = 128;
        p.device    = CK_DEVICE_CPU;
        p.comp      = comp;
        ck_ctx *ctx = NULL;
        if (ck_ctx_init(&ctx, ck, &p) != CK_OK) {
            printf("NOT OK init: %s\n", ck_ctx_last_error(ctx));
            return 1;
        }
        CHECK(!ck_ctx_postprocess_on_device(ctx));
        ck_passes   pv      = {0};
        /* CPU: nothing to warm up, nothing to reserve ahead (the host path sizes the passes itself) */
        CHECK(ck_ctx_warmup(ctx) == CK_OK && ck_passes_reserve(ctx, &pv, 200, 150) == CK_OK && !pv.mem);
        CHECK(ck_passes_reserve(ctx, &pv, 0, 150) == CK_STATUS_EINVAL);
        const int   sizes[3][2] = {{200, 150}, {97, 131}, {260, 190}};
        void       *first_block = NULL;
        for (int k = 0; k < 3; k++) {
            const int w = sizes[k][0], h = sizes[k][1];
            ck_image  rgb, hint;
            synth(&rgb, &hint, w, h);
            ck_result res = {0};
            CHECK_MSG(ck_key_image(ctx, &rgb, &hint, &res) == CK_OK, "%s", ck_ctx_last_error(ctx));
            CHECK_MSG(ck_key_passes(ctx, &rgb, &hint, &pv) == CK_OK, "%s", ck_ctx_last_error(ctx));
            CHECK(pv.width == w && pv.height == h && !ck_passes_pinned(&pv) && (pv.comp != NULL) == comp);
            if (k == 0) first_block = pv.mem->block;
            if (k == 1) CHECK_MSG(pv.mem->block == first_block, "a smaller frame reuses the block");
            if (res.alpha.data && pv.alpha) {
                const size_t d = compare(&pv, &res);
                g_checks++;
                if (d) g_failures++;
                printf("%-6s passes of %dx%d (comp %d) == file samples of ck_key_image: %zu differ\n", d ? "NOT OK" : "OK",
                       w, h, comp, d);
            }
            /* the host conversion on its own */
            ck_passes conv = {0};
            CHECK(ck_passes_from_result(&res, &conv) == CK_OK && compare(&conv, &res) == 0);
            ck_passes_free(NULL, &conv);
            ck_result_free(&res);
            free(rgb.data), free(hint.data);
        }
        /* refused */
        ck_result bad = {0};
        ck_passes conv = {0};
        CHECK(ck_passes_from_result(&bad, &conv) == CK_STATUS_EINVAL);
        ck_image rgb, hint;
        synth(&rgb, &hint, 64, 64);
        rgb.channels = 4;
        CHECK(ck_key_passes(ctx, &rgb, &hint, &pv) != CK_OK);
        free(rgb.data), free(hint.data);
        ck_passes_free(ctx, &pv);
        CHECK(pv.mem == NULL);
        ck_ctx_free(ctx);
    }
    return test_summary();
}
