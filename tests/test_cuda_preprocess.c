/* Device pre-processing ("gpu_preprocess") against the host's ck_preprocess: frames that are downscaled
 * (antialiased), upscaled, of the model size, and with one axis of the model size (skipped as PyTorch
 * does), sRGB and linear input, fp32 and fp16 engines. The device sums the host's taps in the host's
 * order, so fp32 agrees to the last bits (powf may differ by an ulp); fp16 to one fp16 rounding.
 * Each frame is pre-processed twice with a forward in between (the buffers can share the activation
 * arena with the forward). A hint of another size than the frame takes the host path; checked too.
 * Skips cleanly (exit 0) without a CUDA device or without the fixture. */
#include "engine/ctx.h"
#include "harness.h"
#include "cuda_test.h"
#include "frame/frame_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S 128

static void synth(float *rgb, float *hint, int w, int h, int seed) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float *p = rgb + ((size_t)y * w + x) * 3;
            p[0]     = 0.5f + 0.5f * sinf(0.071f * x + 0.013f * y + seed);
            p[1]     = 0.5f + 0.45f * cosf(0.023f * x - 0.057f * y);
            p[2]     = ((x / 7 + y / 5 + seed) % 3) * 0.4f; /* hard edges: exercises every tap */
            const float dx = x - 0.5f * w, dy = y - 0.45f * h;
            hint[(size_t)y * w + x] = dx * dx + dy * dy < 0.08f * w * h ? 1.0f : 0.02f * (x % 9);
        }
}

/* the network input on the device, as float32 */
static void fetch_input(ck_ctx *ctx, float *out) {
    const size_t n   = (size_t)S * S * 4;
    const size_t es  = ck_dtype_size(ctx->be->act_dtype);
    void        *raw = malloc(n * es);
    ctx->be->download(ctx->be, raw, ctx->act_block, n * es);
    ctx->be->synchronize(ctx->be);
    for (size_t i = 0; i < n; i++)
        out[i] = es == 4 ? ((float *)raw)[i] : ck_f16_to_f32(((uint16_t *)raw)[i]);
    free(raw);
}

int main(void) {
    ck_backend *probe = cuda_backend_or_skip();
    if (!probe) return CK_TEST_SKIP;
    probe->destroy(probe);
    char ck[1024];
    test_path(ck, sizeof ck, "CK_FIXTURES", "tiny/s128/model.safetensors");

    const int sizes[][2] = {{300, 200}, {1000, 130}, {100, 60}, {S, S}, {S, 77}, {333, S}};
    float    *want = malloc(sizeof(float) * S * S * 4), *got = malloc(sizeof(float) * S * S * 4);
    for (int prec = 0; prec < 2; prec++) {
        ck_params p      = ck_params_default();
        p.size           = S;
        p.device         = CK_DEVICE_CUDA;
        p.precision      = prec ? CK_PREC_FP16 : CK_PREC_FP32;
        p.gpu_preprocess = 1;
        for (int lin = 0; lin < 2; lin++) {
            p.input_is_linear = lin;
            ck_ctx *ctx       = NULL;
            CHECK_MSG(ck_ctx_init(&ctx, ck, &p) == CK_OK, "init: %s", ck_ctx_last_error(ctx));
            if (!ctx || ctx->failed) return test_summary();
            for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
                const int w = sizes[i][0], h = sizes[i][1];
                float    *rgb = malloc(sizeof(float) * w * h * 3), *hint = malloc(sizeof(float) * w * h);
                synth(rgb, hint, w, h, (int)i);
                float *scr = malloc(sizeof(float) * ck_preprocess_scratch_floats(w, h, w, h, S));
                ck_preprocess(want, rgb, w, h, hint, w, h, S, lin, scr);
                if (prec)
                    for (int k = 0; k < S * S * 4; k++) want[k] = ck_f16_to_f32(ck_f32_to_f16(want[k]));
                ck_image im = {w, h, 3, rgb}, hm = {w, h, 1, hint};
                /* twice with a forward in between: the buffers may live in the activation arena, which
                 * the forward overwrites (the taps too) */
                CHECK(ck__ctx_preprocess(ctx, &im, &hm) == CK_OK);
                CHECK(ck__ctx_compute(ctx) == CK_OK);
                CHECK(ck__ctx_preprocess(ctx, &im, &hm) == CK_OK);
                fetch_input(ctx, got);
                char label[96];
                snprintf(label, sizeof label, "%s %s %dx%d -> %d", prec ? "fp16" : "fp32", lin ? "linear" : "sRGB", w, h, S);
                /* fp16: a value within an ulp of a rounding boundary may round the other way */
                check_close(label, got, want, (size_t)S * S * 4, prec ? 1e-6 : 2e-6, prec ? 1e-3 : 0.0);
                free(rgb), free(hint), free(scr);
            }
            /* hint of another size: the host path (bilinear hint resize first), same result as the host */
            {
                const int w = 300, h = 200, hw = 150, hh = 100;
                float    *rgb = malloc(sizeof(float) * w * h * 3), *hint = malloc(sizeof(float) * w * h);
                synth(rgb, hint, w, h, 7);
                float *scr = malloc(sizeof(float) * ck_preprocess_scratch_floats(w, h, hw, hh, S));
                ck_preprocess(want, rgb, w, h, hint, hw, hh, S, lin, scr);
                if (prec)
                    for (int k = 0; k < S * S * 4; k++) want[k] = ck_f16_to_f32(ck_f32_to_f16(want[k]));
                ck_image im = {w, h, 3, rgb}, hm = {hw, hh, 1, hint};
                CHECK(ck__ctx_preprocess(ctx, &im, &hm) == CK_OK);
                fetch_input(ctx, got);
                check_close("hint of another size (host path)", got, want, (size_t)S * S * 4, 0.0, 0.0);
                free(rgb), free(hint), free(scr);
            }
            ck_ctx_free(ctx);
        }
    }
    free(want), free(got);
    return test_summary();
}
