/* Colour spaces, keep_highlights and the fg un-mixing on CUDA (the built-in small keyer at S = 128, fp32): the
 * device path (the plate decoded in place by frame/cuda/preprocess.cu before the resize; Processed taken to the
 * plate's gamut, with its highlights, and the fg un-mixed from the plate by frame/cuda/postprocess.cu; the plate
 * uploaded next to the passes) against the host path of the same engine (ck__ctx_working_plate, ck_fg_unmix,
 * ck_postprocess), full frame and tiled (64-pixel tiles of a 200×150 plate: the device tiled path), with the
 * un-mixing off and on (its device path is opt-in: the test sets CK_UNMIX_DEVICE=1):
 *   Matte and FG halves within 2 half-ulps (the device's exp2f/powf differ from glibc's by an ulp, so
 *   the network's inputs may differ in their last bit); with the un-mixing, which divides by alpha (a 1-ulp
 *   alpha at 0.25 moves F by up to 2e-3 in linear light, more in sRGB's dark end), FG within 1.5e-2 and 2e-4
 *   on average (the kernels alone match the host to an ulp: test_cuda_postprocess); Processed within 2e-3
 *   relative (a few half-ulps) and alpha within 2e-3;
 *   opaque pixels of a plate above 1.25 come out at the plate's own value (its gamut) on the device;
 *   the un-mixing changes at least 5 % of the device's FG values (so that it is exercised).
 * Skips (exit 77) without a CUDA device. */
#include "ckey.h"
#include "ops/backend.h"
#include "core/tensor.h"
#include "cuda_test.h"
#include "harness.h"
#include "frame/colorspace.h"
#include "frame/frame_ops.h"
#include "ckey_qa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { W = 200, H = 150 };

static ck_ctx *open_ctx(int cs, int on_device, int tile, int unmix) {
    ck_params p       = ck_params_default();
    p.size            = 128;
    p.device          = CK_DEVICE_CUDA;
    p.precision       = CK_PREC_FP32;
    p.colorspace      = cs;
    p.keep_highlights = 1;
    p.gpu_preprocess  = on_device;
    p.gpu_postprocess = on_device;
    p.gpu_encode      = 0;
    p.despeckle       = 0;
    p.tile            = tile;
    p.tile_overlap    = tile ? 32 : 0;
    p.fg_unmix        = unmix;
    ck_ctx *ctx       = NULL;
    if (ck_ctx_init(&ctx, "builtin:small", &p) != CK_OK) {
        printf("NOT OK init: %s\n", ck_ctx_last_error(ctx));
        ck_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

static int ulps(uint16_t a, uint16_t b) { return a > b ? a - b : b - a; }

static double rel(uint16_t a, uint16_t b) {
    const double x = ck_f16_to_f32(a), y = ck_f16_to_f32(b);
    return fabs(x - y) / fmax(1.0, fabs(y));
}

int main(void) {
    ck_backend *probe = cuda_backend_or_skip();
    if (!probe) return CK_TEST_SKIP;
    setenv("CK_UNMIX_DEVICE", "1", 1); /* the un-mixing's device path (opt-in: passes.c) */
    probe->destroy(probe);
    ck_plate        pl;
    ck_plate_params pp = ck_plate_params_default();
    pp.width = W, pp.height = H;
    CHECK(ck_plate_alloc(&pl, W, H) == CK_OK && ck_plate_generate(&pl, &pp) == CK_OK);
    float *lin = malloc(sizeof(float) * 3 * W * H), *enc = malloc(sizeof(float) * 3 * W * H);
    for (size_t i = 0; i < (size_t)W * H; i++) /* linear Rec.709 with highlights (×4) on the subject */
        for (int c = 0; c < 3; c++) {
            float v = ck_srgb_to_linear(pl.rgb[3 * i + c]);
            if (pl.alpha[i] > 0.999f && (i % W) > W / 2) v *= 4.0f;
            lin[3 * i + c] = v;
        }
    const int spaces[] = {CK_CS_LOGC3, CK_CS_SLOG3, CK_CS_LOG3G10, CK_CS_ACESCCT, CK_CS_REC2020_LINEAR};
    const size_t F       = (size_t)W * H;
    uint16_t    *fg_off  = malloc(sizeof(uint16_t) * 3 * F); /* the device's FG without the un-mixing */
    for (int tile = 0; tile <= 64; tile += 64)
        for (size_t k = 0; k < sizeof spaces / sizeof spaces[0]; k++)
            for (int unmix = 0; unmix <= 1; unmix++) {
                const int cs = spaces[k];
                memcpy(enc, lin, sizeof(float) * 3 * W * H);
                ck_colorspace_from_working((ck_colorspace)cs, enc, (size_t)W * H);
                ck_ctx *dev = open_ctx(cs, 1, tile, unmix), *host = open_ctx(cs, 0, tile, unmix);
                if (!dev || !host) return 1;
                CHECK(ck_ctx_postprocess_on_device(dev) && !ck_ctx_postprocess_on_device(host));
                ck_image  rgb = {W, H, 3, enc}, hint = {W, H, 1, pl.hint};
                ck_passes pd = {0}, ph = {0};
                CHECK_MSG(ck_key_passes(dev, &rgb, &hint, &pd) == CK_OK, "%s", ck_ctx_last_error(dev));
                CHECK_MSG(ck_key_passes(host, &rgb, &hint, &ph) == CK_OK, "%s", ck_ctx_last_error(host));
                if (pd.alpha && ph.alpha) {
                    int    um = 0, uf = 0;
                    double dp = 0.0, da = 0.0, df = 0.0, df_sum = 0.0;
                    size_t changed = 0;
                    for (size_t i = 0; i < F; i++) {
                        um = um > ulps(pd.alpha[i], ph.alpha[i]) ? um : ulps(pd.alpha[i], ph.alpha[i]);
                        for (int c = 0; c < 3; c++) {
                            const int u = ulps(pd.fg[3 * i + c], ph.fg[3 * i + c]);
                            uf          = uf > u ? uf : u;
                            const double d = fabs(ck_f16_to_f32(pd.fg[3 * i + c]) - ck_f16_to_f32(ph.fg[3 * i + c]));
                            df = fmax(df, d), df_sum += d;
                            dp = fmax(dp, rel(pd.processed[4 * i + c], ph.processed[4 * i + c]));
                            if (unmix) changed += pd.fg[3 * i + c] != fg_off[3 * i + c];
                        }
                        da = fmax(da, rel(pd.processed[4 * i + 3], ph.processed[4 * i + 3]));
                    }
                    if (!unmix) memcpy(fg_off, pd.fg, sizeof(uint16_t) * 3 * F);
                    /* the device's opaque highlights are the plate's own values (its gamut), premultiplied */
                    size_t n = 0, at_plate = 0;
                    for (size_t i = 0; i < F && !tile; i++) {
                        const float a = ck_f16_to_f32(pd.processed[4 * i + 3]);
                        const float mx = fmaxf(lin[3 * i], fmaxf(lin[3 * i + 1], lin[3 * i + 2]));
                        if (a < 0.9995f || mx < 1.25f) continue;
                        n++;
                        float src[3] = {enc[3 * i], enc[3 * i + 1], enc[3 * i + 2]};
                        ck_colorspace_decode((ck_colorspace)cs, src, 1);
                        int same = 1;
                        for (int c = 0; c < 3; c++)
                            same &= fabsf(ck_f16_to_f32(pd.processed[4 * i + c]) - src[c] * a) <= 2e-3f * fmaxf(1.0f, fabsf(src[c]));
                        at_plate += same;
                    }
                    const double df_mean = df_sum / (double)(3 * F);
                    const int    fg_ok   = unmix ? df <= 1.5e-2 && df_mean <= 2e-4 && changed >= 3 * F / 20 : uf <= 2;
                    const int ok    = um <= 2 && fg_ok && dp <= 2e-3 && da <= 2e-3 && (tile || (n >= 5 && at_plate == n));
                    printf("%s %-14s tile %2d, un-mixing %s: device vs host: Matte %d ulps, FG %d ulps (max %.2g, "
                           "mean %.2g), Processed %.2g, alpha %.2g; %zu opaque highlights, %zu at the plate's value",
                           ok ? "ok" : "NOT OK", ck_colorspace_name((ck_colorspace)cs), tile, unmix ? "on " : "off",
                           um, uf, df, df_mean, dp, da, n, at_plate);
                    if (unmix) printf("; FG changed by it: %zu of %zu values", changed, 3 * F);
                    printf("\n");
                    g_checks++;
                    g_failures += !ok;
                }
                ck_passes_free(dev, &pd);
                ck_passes_free(host, &ph);
                ck_ctx_free(dev);
                ck_ctx_free(host);
            }
    free(fg_off);
    free(lin), free(enc);
    ck_plate_free(&pl);
    return test_summary();
}
