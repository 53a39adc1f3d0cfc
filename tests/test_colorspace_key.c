/* Keying a plate in a camera / ACES / Rec.2020 encoding (ck_params.colorspace) gives the passes of
 * keying its linear Rec.709 equivalent (CPU, the built-in small keyer at S = 128: its matte is opaque
 * on the subject, which the highlights need): a linear Rec.709 plate L
 * (a synthetic green-screen plate linearized, with a region of scene-linear highlights up to 4.0) is
 * encoded into each colour space with ck_colorspace_from_working (checked against OpenColorIO by
 * test_colorspace_ocio), and both are keyed through ck_key_passes, full frame and tiled:
 *   Matte and FG (the network's working space) agree within half-float tolerance;
 *   Processed of the encoded plate is in its gamut: taken to Rec.709 by the gamut matrix it agrees
 *   with L's Processed within half-float tolerance (relative above 1), alpha too;
 *   with keep_highlights, the highlights (4.0) come out of both, where the matte is opaque.
 * And the default (colorspace 0 with input_is_linear) is bit-identical to colorspace "linear". */
#include "ckey.h"
#include "core/tensor.h"
#include "harness.h"
#include "frame/colorspace.h"
#include "frame/frame_ops.h"
#include "ckey_qa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { W = 200, H = 150 };

static char g_ckpt[1024];

static ck_ctx *open_ctx(int cs, int input_is_linear, int highlights, int tile) {
    ck_params p       = ck_params_default();
    p.size            = 128;
    p.device          = CK_DEVICE_CPU;
    p.colorspace      = cs;
    p.input_is_linear = input_is_linear;
    p.keep_highlights = highlights;
    p.tile            = tile;
    p.tile_overlap    = tile ? 32 : 0;
    p.despeckle       = 0;
    ck_ctx *ctx       = NULL;
    if (ck_ctx_init(&ctx, g_ckpt, &p) != CK_OK) {
        printf("NOT OK init: %s\n", ck_ctx_last_error(ctx));
        exit(1);
    }
    return ctx;
}

static int key(ck_ctx *ctx, const float *rgb, const float *hint, ck_passes *out) {
    ck_image im = {W, H, 3, (float *)rgb}, hi = {W, H, 1, (float *)hint};
    ck_status st = ck_key_passes(ctx, &im, &hi, out);
    CHECK_MSG(st == CK_OK, "%s", ck_ctx_last_error(ctx));
    return st == CK_OK;
}

/* max |a − b| / max(1, |b|) over n halves */
static double half_diff(const uint16_t *a, const uint16_t *b, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double x = ck_f16_to_f32(a[i]), y = ck_f16_to_f32(b[i]);
        worst          = fmax(worst, fabs(x - y) / fmax(1.0, fabs(y)));
    }
    return worst;
}

/* Processed of cs (its gamut) taken to Rec.709 against ref's: worst relative RGB difference, and
 * the worst alpha difference. */
static double processed_diff(int cs, const ck_passes *got, const ck_passes *ref, double *alpha_diff) {
    float m[9];
    ck_colorspace_matrix_to_working((ck_colorspace)cs, m);
    double worst = 0.0;
    *alpha_diff  = 0.0;
    for (size_t i = 0; i < (size_t)W * H; i++) {
        float src[3], lin[3];
        for (int c = 0; c < 3; c++) src[c] = ck_f16_to_f32(got->processed[4 * i + c]);
        ck_cs_mat3(m, src, lin);
        for (int c = 0; c < 3; c++) {
            const double y = ck_f16_to_f32(ref->processed[4 * i + c]);
            worst          = fmax(worst, fabs(lin[c] - y) / fmax(1.0, fabs(y)));
        }
        *alpha_diff = fmax(*alpha_diff, fabs((double)ck_f16_to_f32(got->processed[4 * i + 3]) -
                                             ck_f16_to_f32(ref->processed[4 * i + 3])));
    }
    return worst;
}

int main(void) {
    snprintf(g_ckpt, sizeof g_ckpt, "builtin:small");
    ck_plate        pl;
    ck_plate_params pp = ck_plate_params_default();
    pp.width = W, pp.height = H;
    CHECK(ck_plate_alloc(&pl, W, H) == CK_OK && ck_plate_generate(&pl, &pp) == CK_OK);
    /* L: the plate in linear Rec.709, with highlights (×4) on the subject's brightest part */
    float *lin = malloc(sizeof(float) * 3 * W * H), *enc = malloc(sizeof(float) * 3 * W * H);
    for (size_t i = 0; i < (size_t)W * H; i++)
        for (int c = 0; c < 3; c++) {
            float v = ck_srgb_to_linear(pl.rgb[3 * i + c]);
            if (pl.alpha[i] > 0.999f && (i % W) > W / 2) v *= 4.0f;
            lin[3 * i + c] = v;
        }
    const int spaces[] = {CK_CS_LOGC3, CK_CS_LOGC4,   CK_CS_SLOG3,  CK_CS_LOG3G10,
                          CK_CS_ACESCCT, CK_CS_ACES2065_1, CK_CS_ACESCG, CK_CS_REC2020_LINEAR};
    for (int tile = 0; tile <= 64; tile += 64)
        for (int highlights = 0; highlights <= 1; highlights++) {
            ck_ctx   *ref_ctx = open_ctx(CK_CS_LINEAR_REC709, 0, highlights, tile);
            ck_passes ref     = {0};
            if (!key(ref_ctx, lin, pl.hint, &ref)) return test_summary();
            if (!tile && !highlights) { /* the default path, unchanged */
                ck_ctx   *def = open_ctx(CK_CS_DEFAULT, 1, 0, 0);
                ck_passes dp  = {0};
                const size_t F = (size_t)W * H;
                if (key(def, lin, pl.hint, &dp))
                    CHECK_MSG(!memcmp(dp.alpha, ref.alpha, 2 * F) && !memcmp(dp.fg, ref.fg, 6 * F) &&
                                  !memcmp(dp.processed, ref.processed, 8 * F) && !memcmp(dp.comp, ref.comp, 3 * F),
                              "colorspace linear == input_is_linear, bit for bit");
                CHECK(ck_ctx_params(def)->colorspace == CK_CS_LINEAR_REC709);
                ck_passes_free(def, &dp);
                ck_ctx_free(def);
            }
            if (!tile) { /* opaque pixels whose plate exceeds 1.25: Processed is the plate's value with the
                          * option (the small keyer is not that opaque on 64-pixel tiles) */
                size_t n = 0, at_plate = 0, opaque = 0;
                for (size_t i = 0; i < (size_t)W * H; i++) {
                    const float a = ck_f16_to_f32(ref.processed[4 * i + 3]);
                    const float *L = lin + 3 * i, mx = fmaxf(L[0], fmaxf(L[1], L[2]));
                    /* 0.9995 as a half is at least 0.999 as the float the rule saw */
                    opaque += a >= 0.9995f;
                    if (a < 0.9995f || mx < 1.25f) continue;
                    n++;
                    int same = 1; /* premultiplied: the plate times alpha */
                    for (int c = 0; c < 3; c++)
                        same &= fabsf(ck_f16_to_f32(ref.processed[4 * i + c]) - L[c] * a) <= 2e-3f * fmaxf(1.0f, L[c]);
                    at_plate += same;
                }
                const int ok = n >= 5 && (highlights ? at_plate == n : at_plate == 0);
                printf("%s tile %d highlights %d: %zu opaque pixels, %zu with a plate above 1.25, %zu of them at the plate's "
                       "value\n", ok ? "ok" : "NOT OK", tile, highlights, opaque, n, at_plate);
                CHECK(ok);
            }
            for (size_t k = 0; k < sizeof spaces / sizeof spaces[0]; k++) {
                const int cs = spaces[k];
                memcpy(enc, lin, sizeof(float) * 3 * W * H);
                ck_colorspace_from_working((ck_colorspace)cs, enc, (size_t)W * H);
                ck_ctx   *ctx = open_ctx(cs, 0, highlights, tile);
                ck_passes got = {0};
                if (key(ctx, enc, pl.hint, &got)) {
                    const size_t F  = (size_t)W * H;
                    const double da = half_diff(got.alpha, ref.alpha, F), df = half_diff(got.fg, ref.fg, 3 * F);
                    double       dpa = 0.0;
                    const double dp  = processed_diff(cs, &got, &ref, &dpa);
                    const int    ok  = da <= 2e-3 && df <= 2e-3 && dp <= 4e-3 && dpa <= 2e-3;
                    printf("%s %-14s tile %2d highlights %d: Matte %.2g, FG %.2g, Processed (to Rec.709) %.2g, its "
                           "alpha %.2g\n",
                           ok ? "ok" : "NOT OK", ck_colorspace_name((ck_colorspace)cs), tile, highlights, da, df, dp, dpa);
                    g_checks++;
                    g_failures += !ok;
                }
                ck_passes_free(ctx, &got);
                ck_ctx_free(ctx);
            }
            ck_passes_free(ref_ctx, &ref);
            ck_ctx_free(ref_ctx);
        }
    /* a colour space out of range is refused at init, with a message */
    ck_params p  = ck_params_default();
    p.device     = CK_DEVICE_CPU;
    p.size       = 128;
    p.colorspace = CK_CS_COUNT;
    ck_ctx *bad  = NULL;
    CHECK(ck_ctx_init(&bad, g_ckpt, &p) == CK_STATUS_EINVAL && strstr(ck_ctx_last_error(bad), "colour space"));
    ck_ctx_free(bad);
    free(lin), free(enc);
    ck_plate_free(&pl);
    return test_summary();
}
