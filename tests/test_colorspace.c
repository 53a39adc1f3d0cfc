/* Colour spaces (src/frame/colorspace.c/.h) without OpenColorIO (that comparison is
 * test_colorspace_ocio.cpp): names; the curves at the values the vendors publish (ARRI LogC3 EI 800
 * 18 % grey = 400/1023, LogC4 18 % grey = 0.278396, S-Log3 0 and 18 % at 10-bit 95 and 420, Log3G10
 * 18 % = 1/3 and black 0.091551, ACEScct 18 % = 0.413588); round trips and continuity at the breaks;
 * the matrices (white kept, BT.2087's Rec.2020 → Rec.709, ACES's AP0 → Rec.709, inverses); and
 * post-processing: Processed in the plate's gamut and the keep_highlights rule against a float64
 * evaluation of the documented rule written out here. */
#include "harness.h"
#include "frame/colorspace.h"
#include "frame/frame_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_names(void) {
    const struct {
        const char *name;
        int         cs;
    } ok[] = {{"srgb", CK_CS_SRGB},
              {"Rec709", CK_CS_SRGB},
              {"linear", CK_CS_LINEAR_REC709},
              {"Linear Rec.709 (sRGB)", CK_CS_LINEAR_REC709},
              {"LOGC3", CK_CS_LOGC3},
              {"ARRI LogC3 (EI800) AWG3", CK_CS_LOGC3},
              {"Input - ARRI - V3 LogC (EI800) - Alexa Wide Gamut", CK_CS_LOGC3},
              {"logc4", CK_CS_LOGC4},
              {"ARRI LogC4", CK_CS_LOGC4},
              {"slog3", CK_CS_SLOG3},
              {"S-Log3 S-Gamut3.Cine", CK_CS_SLOG3},
              {"Log3G10", CK_CS_LOG3G10},
              {"RED Log3G10 REDWideGamutRGB", CK_CS_LOG3G10},
              {"ACEScct", CK_CS_ACESCCT},
              {"ACES - ACEScct", CK_CS_ACESCCT},
              {"aces2065-1", CK_CS_ACES2065_1},
              {"ACES2065-1", CK_CS_ACES2065_1},
              {"acescg", CK_CS_ACESCG},
              {"ACES - ACEScg", CK_CS_ACESCG},
              {"rec2020-linear", CK_CS_REC2020_LINEAR},
              {"Linear Rec.2020", CK_CS_REC2020_LINEAR}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        ck_colorspace cs = CK_CS_DEFAULT;
        CHECK_MSG(ck_colorspace_parse(ok[i].name, &cs) == 0 && (int)cs == ok[i].cs, "'%s' -> %d", ok[i].name, (int)cs);
    }
    const char *bad[] = {"", "logc5", "rec", "acescc", "srgb2", NULL};
    for (int i = 0; bad[i]; i++) {
        ck_colorspace cs;
        CHECK_MSG(ck_colorspace_parse(bad[i], &cs) != 0, "'%s' is refused", bad[i]);
    }
    CHECK(ck_colorspace_parse(NULL, NULL) != 0);
    for (int cs = CK_CS_SRGB; cs < CK_CS_COUNT; cs++) { /* every short name parses back */
        ck_colorspace back = CK_CS_DEFAULT;
        CHECK_MSG(ck_colorspace_parse(ck_colorspace_name((ck_colorspace)cs), &back) == 0 && (int)back == cs, "%s",
                  ck_colorspace_name((ck_colorspace)cs));
        CHECK_MSG(strstr(ck_colorspace_names(), ck_colorspace_name((ck_colorspace)cs)) != NULL, "%s listed",
                  ck_colorspace_name((ck_colorspace)cs));
    }
    CHECK(ck_colorspace_name(CK_CS_COUNT) == NULL && !strcmp(ck_colorspace_name(CK_CS_DEFAULT), "default"));
}

static void near(const char *what, double got, double want, double tol) {
    CHECK_MSG(fabs(got - want) <= tol, "%s: %.9g, published %.9g (tolerance %g)", what, got, want, tol);
}

static void test_published_values(void) {
    near("LogC3 EI800 18% grey (10-bit 400)", ck_logc3_encode(0.18f), 400.0 / 1023.0, 2e-6);
    near("LogC4 18% grey", ck_logc4_encode(0.18f), 0.278396, 2e-6);
    near("LogC4 black (10-bit 95)", ck_logc4_encode(0.0f), 95.0 / 1023.0, 1e-7);
    near("S-Log3 black (10-bit 95)", ck_slog3_encode(0.0f), 95.0 / 1023.0, 1e-7);
    near("S-Log3 18% grey (10-bit 420)", ck_slog3_encode(0.18f), 420.0 / 1023.0, 1e-6);
    near("S-Log3 90% white (10-bit 598)", ck_slog3_encode(0.90f), 598.0 / 1023.0, 5e-4);
    near("Log3G10 18% grey", ck_log3g10_encode(0.18f), 1.0 / 3.0, 2e-6);
    near("Log3G10 black", ck_log3g10_encode(0.0f), 0.091551, 2e-6);
    near("Log3G10 -0.01 -> 0", ck_log3g10_encode(-0.01f), 0.0, 1e-7);
    near("ACEScct 18% grey", ck_acescct_encode(0.18f), 0.4135884, 1e-6);
    near("ACEScct 0", ck_acescct_encode(0.0f), 0.0729055341958355, 1e-7);
    near("ACEScct break 2^-7", ck_acescct_encode(0.0078125f), 0.155251141552511, 1e-6);
    near("ACEScct 65504 clamp", ck_acescct_decode(1.6f), 65504.0, 0.0);
    near("sRGB 0.5", ck_cs_srgb_decode(0.5f), 0.21404114, 1e-6);
}

static float (*const k_dec[])(float) = {ck_logc3_decode,  ck_logc4_decode,   ck_slog3_decode,
                                        ck_log3g10_decode, ck_acescct_decode, ck_cs_srgb_decode};
static float (*const k_enc[])(float) = {ck_logc3_encode,  ck_logc4_encode,   ck_slog3_encode,
                                        ck_log3g10_encode, ck_acescct_encode, ck_cs_srgb_encode};
static const char *const k_curve[] = {"logc3", "logc4", "slog3", "log3g10", "acescct", "srgb"};

static void test_curves(void) {
    for (int k = 0; k < 6; k++) {
        double worst = 0.0, prev = -1e30;
        int    monotonic = 1;
        for (int i = 0; i <= 4096; i++) {
            const float t = i / 4096.0f, x = k_dec[k](t), back = k_enc[k](x);
            worst = fmax(worst, fabs((double)back - t));
            if (!(x > prev)) monotonic = 0;
            prev = x;
        }
        CHECK_MSG(worst <= 2e-6 && monotonic, "%s: encode(decode(t)) within %.3g of t over [0, 1], monotonic %d",
                  k_curve[k], worst, monotonic);
        /* continuity: no step at the breaks (sampled densely, steps at most the slope's worth) */
        double jump = 0.0;
        for (int i = 0; i < 20000; i++) {
            const float a = i / 20000.0f, b = (i + 1) / 20000.0f;
            const double d = (double)k_dec[k](b) - k_dec[k](a), scale = fmax(1.0, fabs(k_dec[k](b)));
            jump = fmax(jump, fabs(d) / scale);
        }
        CHECK_MSG(jump < 5e-3, "%s: largest relative step between neighbouring code values %.3g", k_curve[k], jump);
    }
    /* the ck_colorspace_decode/encode buffers are the same curves */
    float v[6] = {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f};
    ck_colorspace_decode(CK_CS_SLOG3, v, 2);
    CHECK(v[2] == ck_slog3_decode(0.4f) && v[5] == ck_slog3_decode(1.0f));
    ck_colorspace_encode(CK_CS_SLOG3, v, 2);
    CHECK(fabsf(v[2] - 0.4f) < 2e-6f);
}

static void test_matrices(void) {
    for (int cs = CK_CS_SRGB; cs < CK_CS_COUNT; cs++) {
        double m[9], inv[9];
        ck_colorspace_matrix_to_working_d((ck_colorspace)cs, m);
        ck_colorspace_from_working_linear_d((ck_colorspace)cs, inv);
        double white = 0.0, eye = 0.0;
        for (int r = 0; r < 3; r++) {
            white = fmax(white, fabs(m[3 * r] + m[3 * r + 1] + m[3 * r + 2] - 1.0)); /* (1,1,1) stays white */
            for (int c = 0; c < 3; c++) {
                double s = 0.0;
                for (int k = 0; k < 3; k++) s += m[3 * r + k] * inv[3 * k + c];
                eye = fmax(eye, fabs(s - (r == c)));
            }
        }
        CHECK_MSG(white < 1e-12 && eye < 1e-12, "%s: white off by %.3g, to·from off identity by %.3g",
                  ck_colorspace_name((ck_colorspace)cs), white, eye);
        CHECK(ck_colorspace_has_gamut(cs) == (cs != CK_CS_SRGB && cs != CK_CS_LINEAR_REC709));
    }
    /* ITU-R BT.2087 (Rec.2020 → Rec.709, 4 decimals) and the ACES AP0 → Rec.709 (Bradford) matrix */
    const double bt2087[9] = {1.6605, -0.5876, -0.0728, -0.1246, 1.1329, -0.0083, -0.0182, -0.1006, 1.1187};
    const double aces709[9] = {2.5216862, -1.1341310, -0.3875552, -0.2764799, 1.3727191, -0.0962392,
                               -0.0153781, -0.1529753, 1.1683534};
    double m[9];
    ck_colorspace_matrix_to_working_d(CK_CS_REC2020_LINEAR, m);
    for (int i = 0; i < 9; i++) near("Rec.2020 -> Rec.709 (BT.2087)", m[i], bt2087[i], 6e-5);
    ck_colorspace_matrix_to_working_d(CK_CS_ACES2065_1, m);
    for (int i = 0; i < 9; i++) near("AP0 -> Rec.709 (Bradford)", m[i], aces709[i], 1e-6);
    double cg[9], cct[9];
    ck_colorspace_matrix_to_working_d(CK_CS_ACESCG, cg);
    ck_colorspace_matrix_to_working_d(CK_CS_ACESCCT, cct);
    CHECK(!memcmp(cg, cct, sizeof cg)); /* ACEScct is AP1 */
    /* the plate path clamps negatives after the matrix (a saturated AP0 green is negative in Rec.709 red) */
    float px[3] = {0.0f, 1.0f, 0.0f};
    ck_colorspace_plate_to_working(CK_CS_ACES2065_1, px, px, 1);
    CHECK(px[0] == 0.0f && fabsf(px[1] - 1.3727191f) < 1e-5f && px[2] == 0.0f);
}

/* ---- post-processing: gamut and highlights ---- */

static double srgb_to_lin_d(double x) { return x <= 0.04045 ? x / 12.92 : pow((x + 0.055) / 1.055, 2.4); }

/* The documented keep_highlights rule in float64 for pixel i. */
static void expected_px(int cs, int highlights, const float *fg, float a, const float *plate, double *out) {
    double m[9], lin[3], c[3];
    ck_colorspace_from_working_linear_d((ck_colorspace)cs, m);
    for (int k = 0; k < 3; k++) lin[k] = srgb_to_lin_d(fg[k]);
    for (int r = 0; r < 3; r++) c[r] = m[3 * r] * lin[0] + m[3 * r + 1] * lin[1] + m[3 * r + 2] * lin[2];
    if (highlights) { /* the weight from the plate's brightest channel in linear Rec.709 */
        double p[3], mx = -1e30, to709[9];
        ck_colorspace_matrix_to_working_d((ck_colorspace)cs, to709);
        for (int k = 0; k < 3; k++) p[k] = ck_cs_decode(cs, plate[k]);
        for (int r = 0; r < 3; r++) mx = fmax(mx, to709[3 * r] * p[0] + to709[3 * r + 1] * p[1] + to709[3 * r + 2] * p[2]);
        const double ka = fmin(1.0, fmax(0.0, (a - 0.98) / 0.019)), kp = fmin(1.0, fmax(0.0, (mx - 1.0) / 0.25));
        for (int k = 0; k < 3; k++) c[k] += ka * kp * (p[k] - c[k]);
    }
    for (int k = 0; k < 3; k++) out[k] = c[k] * a;
}

static void test_postprocess(void) {
    enum { W = 7, H = 5, N = W * H };
    const float alphas[W] = {0.0f, 0.5f, 0.97f, 0.98f, 0.99f, 0.9995f, 1.0f};
    const float lins[H]   = {0.5f, 0.95f, 1.1f, 1.2f, 4.0f}; /* the plate's brightest channel, linear */
    float       alpha[N], fg[3 * N], plate[3 * N], proc[4 * N], proc_ref[4 * N], comp[3 * N], comp_ref[3 * N];
    const int   spaces[] = {CK_CS_LINEAR_REC709, CK_CS_SRGB, CK_CS_LOGC3, CK_CS_SLOG3, CK_CS_ACESCCT, CK_CS_REC2020_LINEAR};
    for (size_t si = 0; si < sizeof spaces / sizeof spaces[0]; si++) {
        const int cs = spaces[si];
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                const int i = y * W + x;
                alpha[i]    = alphas[x];
                /* the network's fg tops out near 1 (sigmoid); the plate, in its own encoding, is brighter */
                fg[3 * i] = 0.97f, fg[3 * i + 1] = 0.6f + 0.05f * y, fg[3 * i + 2] = 0.3f;
                /* the plate: these linear Rec.709 values in the colour space's gamut and encoding */
                const float lin[3] = {lins[y], 0.7f * lins[y], 0.2f};
                float       src[3], m[9];
                ck_colorspace_from_working_linear((ck_colorspace)cs, m);
                ck_cs_mat3(m, lin, src);
                for (int c = 0; c < 3; c++) plate[3 * i + c] = ck_cs_encode(cs, src[c]);
            }
        for (int highlights = 0; highlights <= 1; highlights++) {
            ck_post_params pp = {0.0f, 0, 400, 1, cs, highlights ? plate : NULL};
            ck_post_params p0 = {0.0f, 0, 400, 1, 0, NULL}; /* today's Rec.709 output */
            CHECK(ck_postprocess(proc, comp, alpha, fg, W, H, &pp) == CK_OK);
            CHECK(ck_postprocess(proc_ref, comp_ref, alpha, fg, W, H, &p0) == CK_OK);
            double worst = 0.0;
            for (int i = 0; i < N; i++) {
                double e[3];
                expected_px(cs, highlights, fg + 3 * i, alpha[i], plate + 3 * i, e);
                for (int c = 0; c < 3; c++) worst = fmax(worst, fabs(proc[4 * i + c] - e[c]) / fmax(1.0, fabs(e[c])));
                CHECK(proc[4 * i + 3] == alpha[i]);
            }
            /* float32: the weights (alpha − 0.98)/0.02 carry ~1e-6 relative error, times (plate − fg) */
            CHECK_MSG(worst < 1e-5, "%s, highlights %d: Processed within %.3g of the float64 rule",
                      ck_colorspace_name((ck_colorspace)cs), highlights, worst);
            CHECK_MSG(!memcmp(comp, comp_ref, sizeof comp), "%s: the comp stays the Rec.709 preview",
                      ck_colorspace_name((ck_colorspace)cs));
            if (!ck_colorspace_has_gamut(cs) && !highlights)
                CHECK_MSG(!memcmp(proc, proc_ref, sizeof proc), "%s: Processed bit-identical to before",
                          ck_colorspace_name((ck_colorspace)cs));
        }
        /* the rule's corners, read off the output: opaque and 4.0 → the plate's own value (4.0, 2.8,
         * 0.2 in Rec.709); at alpha 0.5 or a plate ≤ 1 → the network's */
        ck_post_params pp = {0.0f, 0, 400, 0, cs, plate};
        CHECK(ck_postprocess(proc, NULL, alpha, fg, W, H, &pp) == CK_OK);
        const int bright = 4 * W + 6, dim = 1 * W + 6, half = 4 * W + 1;
        float     m709[9], back[3];
        ck_colorspace_matrix_to_working((ck_colorspace)cs, m709);
        ck_cs_mat3(m709, proc + 4 * bright, back);
        CHECK_MSG(fabsf(back[0] - 4.0f) < 1e-4f && fabsf(back[1] - 2.8f) < 1e-4f && fabsf(back[2] - 0.2f) < 1e-4f,
                  "%s: opaque 4.0 plate -> Processed (in Rec.709) %.6f %.6f %.6f", ck_colorspace_name((ck_colorspace)cs),
                  back[0], back[1], back[2]);
        ck_post_params pn = {0.0f, 0, 400, 0, cs, NULL};
        CHECK(ck_postprocess(proc_ref, NULL, alpha, fg, W, H, &pn) == CK_OK);
        CHECK(!memcmp(proc + 4 * dim, proc_ref + 4 * dim, 16) && !memcmp(proc + 4 * half, proc_ref + 4 * half, 16));
        ck_cs_mat3(m709, proc_ref + 4 * bright, back);
        CHECK(back[0] < 1.1f); /* without the option: the network's bounded value */
    }
}

int main(void) {
    test_names();
    test_published_values();
    test_curves();
    test_matrices();
    test_postprocess();
    return test_summary();
}
