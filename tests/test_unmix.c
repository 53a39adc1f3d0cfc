/* ck_fg_unmix (src/frame/unmix.c) on frames composited here from a known foreground, matte and screen:
 * I = α·F + (1 − α)·B in linear light, with an uneven screen (a gradient and a vignette), a wrong "network" fg,
 * and the same frame given as sRGB code values, as linear Rec.709 and as ACEScg.
 * Checks: near the screen and where α ≥ 0.25 the result is the true F (within the screen estimate's error); opaque
 * pixels get the plate's colour; a semi-transparent part far from any screen and everything below α = 0.1 keep
 * the fg they had (bit for bit); so does a frame with no screen at all; two runs give the same bits; the colour
 * spaces agree.
 */
#include "harness.h"
#include "frame/colorspace.h"
#include "frame/frame_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { W = 200, H = 150 };

/* The screen in linear light: green, brighter at the top left. */
static void screen_at(int x, int y, float b[3]) {
    /* as uneven as a lit screen across a 2K frame (25 % across, 15 % down, a vignette of 40 % at the corners):
     * this frame is a 200 × 150 window of one */
    const float u = (float)x / 2000.0f, v = (float)y / 1500.0f, r2 = (u - 0.5f) * (u - 0.5f) + (v - 0.5f) * (v - 0.5f);
    const float k = (1.0f - 0.25f * u - 0.15f * v) * (1.0f - 0.4f * r2);
    b[0] = 0.05f * k, b[1] = 0.45f * k, b[2] = 0.08f * k;
}

/* Matte: screen on the left third, a ramp from 0 to 1 across the middle third, opaque on the right third,
 * with a semi-transparent disc (0.4) in the opaque part's upper half. */
static float alpha_at(int x, int y) {
    if (x < W / 3) return 0.0f;
    if (x < 2 * W / 3) return (float)(x - W / 3) / (float)(W / 3);
    const float dx = (float)x - 0.83f * W, dy = (float)y - 0.3f * H;
    return dx * dx + dy * dy < 400.0f ? 0.4f : 1.0f;
}

/* The subject's colour in linear light: smooth, neither screen-like nor flat. */
static void fg_at(int x, int y, float f[3]) {
    f[0] = 0.55f + 0.3f * sinf(0.05f * x), f[1] = 0.25f + 0.1f * cosf(0.07f * y), f[2] = 0.35f + 0.2f * sinf(0.03f * (x + y));
}

typedef struct frame {
    float alpha[W * H], truth[W * H * 3] /* sRGB-encoded */, lin[W * H * 3] /* the plate, linear */;
} frame;

static void make(frame *fr) {
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const size_t i = (size_t)y * W + x;
            float        b[3], f[3];
            screen_at(x, y, b), fg_at(x, y, f);
            const float a = alpha_at(x, y);
            fr->alpha[i]  = a;
            for (int c = 0; c < 3; c++) {
                fr->lin[3 * i + c]   = a * f[c] + (1.0f - a) * b[c];
                fr->truth[3 * i + c] = ck_linear_to_srgb(f[c]);
            }
        }
}

/* The "network's" fg: the truth shifted by a cast, so that every change is visible. */
static void wrong_fg(const frame *fr, float *fg) {
    for (size_t k = 0; k < (size_t)W * H * 3; k++) fg[k] = fminf(1.0f, fr->truth[k] + 0.08f);
}

static void run(const float *plate, int cs, const frame *fr, float *fg) {
    wrong_fg(fr, fg);
    CHECK(ck_fg_unmix(fg, fr->alpha, plate, cs, W, H, CK_UNMIX_ALPHA_LO) == CK_OK);
}

int main(void) {
    frame *fr    = malloc(sizeof *fr);
    float *srgb  = malloc(sizeof(float) * W * H * 3), *acescg = malloc(sizeof(float) * W * H * 3);
    float *fg    = malloc(sizeof(float) * W * H * 3), *fg2 = malloc(sizeof(float) * W * H * 3);
    float *before = malloc(sizeof(float) * W * H * 3);
    CHECK(fr && srgb && acescg && fg && fg2 && before);
    if (!fr || !srgb || !acescg || !fg || !fg2 || !before) return test_summary();
    make(fr);
    for (size_t k = 0; k < (size_t)W * H * 3; k++) srgb[k] = ck_linear_to_srgb(fr->lin[k]);
    memcpy(acescg, fr->lin, sizeof(float) * W * H * 3);
    ck_colorspace_from_working(CK_CS_ACESCG, acescg, (size_t)W * H);

    /* sRGB code values, the plate as 8/16-bit files give it */
    run(srgb, CK_CS_SRGB, fr, fg);
    wrong_fg(fr, before);
    /* the ramp (screen within 64 px): the truth within the estimate's error; opaque pixels: the plate itself,
     * whatever the estimate; the semi-transparent disc inside the opaque part, where its screen lies more than
     * 90 px away (cells whose 9 × 9 neighbourhood holds no screen): untouched, since 1/α would amplify the far
     * estimate's error; below alpha 0.1: untouched */
    double err_ramp = 0.0, err_opaque = 0.0;
    size_t n_ramp = 0, n_opaque = 0, n_kept = 0, kept_same = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const size_t i = (size_t)y * W + x;
            const float  a = fr->alpha[i];
            for (int c = 0; c < 3; c++) {
                const size_t k = 3 * i + c;
                const double e = fabs(fg[k] - fr->truth[k]);
                if (a >= 0.25f && a < 1.0f && x < 2 * W / 3) err_ramp = fmax(err_ramp, e), n_ramp++;
                if (a == 1.0f) err_opaque = fmax(err_opaque, e), n_opaque++;
                if (a <= CK_UNMIX_ALPHA_LO || (a > 0.3f && a < 0.5f && x >= 160)) /* the disc's part 93+ px away */
                    n_kept++, kept_same += memcmp(&fg[k], &before[k], sizeof(float)) == 0;
            }
        }
    printf("       max |fg - truth|: ramp (alpha 0.25-1) %.5f over %zu values, opaque %.2g over %zu (the wrong fg: "
           "0.08); %zu of %zu values untouched (alpha <= %.2f, the disc)\n", err_ramp, n_ramp, err_opaque, n_opaque,
           kept_same, n_kept, CK_UNMIX_ALPHA_LO);
    CHECK_MSG(n_ramp > 5000 && err_ramp < 0.01, "un-mixed fg within 0.01 of the truth on the ramp: %.5f", err_ramp);
    CHECK_MSG(n_opaque > 10000 && err_opaque < 1e-4, "opaque fg = the plate: %.3g", err_opaque);
    CHECK_MSG(n_kept > 10000 && kept_same == n_kept, "fg untouched below alpha %.2f and on the disc: %zu of %zu",
              CK_UNMIX_ALPHA_LO, kept_same, n_kept);

    /* the same bits again; linear Rec.709 and ACEScg plates give the same fg within float rounding */
    run(srgb, CK_CS_SRGB, fr, fg2);
    CHECK_MSG(memcmp(fg, fg2, sizeof(float) * W * H * 3) == 0, "two runs differ");
    double d_lin = 0.0, d_cg = 0.0;
    run(fr->lin, CK_CS_LINEAR_REC709, fr, fg2);
    for (size_t k = 0; k < (size_t)W * H * 3; k++) d_lin = fmax(d_lin, fabs(fg2[k] - fg[k]));
    run(acescg, CK_CS_ACESCG, fr, fg2);
    for (size_t k = 0; k < (size_t)W * H * 3; k++) d_cg = fmax(d_cg, fabs(fg2[k] - fg[k]));
    printf("       linear Rec.709 plate: max diff %.3g; ACEScg: %.3g\n", d_lin, d_cg);
    CHECK_MSG(d_lin < 1e-4 && d_cg < 1e-3, "colour spaces disagree: %.3g, %.3g", d_lin, d_cg);

    /* one +Inf screen pixel in a linear plate (an EXR can hold one) is left out of the screen estimate: every fg
     * value stays finite (with it in the sums, every box holding it would turn NaN) and the opaque pixels are
     * still the plate */
    {
        float *inf_plate = malloc(sizeof(float) * W * H * 3);
        CHECK(inf_plate != NULL);
        if (inf_plate) {
            memcpy(inf_plate, fr->lin, sizeof(float) * W * H * 3);
            size_t at = 0; /* the first screen pixel */
            while (at < (size_t)W * H && !(fr->alpha[at] < 0.02f)) at++;
            CHECK(at < (size_t)W * H);
            if (at < (size_t)W * H) inf_plate[3 * at + 1] = INFINITY;
            run(inf_plate, CK_CS_LINEAR_REC709, fr, fg2);
            size_t nonfinite = 0, opaque_off = 0;
            for (size_t k = 0; k < (size_t)W * H * 3; k++) {
                nonfinite += !isfinite(fg2[k]);
                if (fr->alpha[k / 3] == 1.0f && fabsf(fg2[k] - fg[k]) > 1e-4f) opaque_off++;
            }
            printf("       a +Inf screen pixel in a linear plate: %zu non-finite fg values, %zu opaque values off\n",
                   nonfinite, opaque_off);
            CHECK_MSG(nonfinite == 0 && opaque_off == 0, "+Inf plate pixel: %zu non-finite, %zu opaque off", nonfinite,
                      opaque_off);
            free(inf_plate);
        }
    }

    /* no screen anywhere: nothing to un-mix against, fg untouched */
    for (size_t i = 0; i < (size_t)W * H; i++) fr->alpha[i] = fmaxf(fr->alpha[i], 0.5f);
    run(srgb, CK_CS_SRGB, fr, fg);
    wrong_fg(fr, before);
    CHECK_MSG(memcmp(fg, before, sizeof(float) * W * H * 3) == 0, "fg changed with no screen in the frame");

    free(fr), free(srgb), free(acescg), free(fg), free(fg2), free(before);
    return test_summary();
}
