/* Colour spaces of plates (ck_colorspace, include/ckey.h): transfer curves and gamut matrices.
 *
 * Working space of the network: sRGB-encoded Rec.709. A plate in another encoding is decoded to
 * scene-linear, taken to linear Rec.709 by a 3×3 matrix, negatives clamped (as linear EXR plates are)
 * and sRGB-encoded after the resize (the linear-plate path of pre-processing). Processed comes back
 * linear in the plate's gamut through the inverse matrix.
 *
 * Curves, float32, from the vendors' definitions (the constants to the digits their documents and
 * OpenColorIO carry; the linear toes continue the log segments with equal value and slope):
 *   LogC3   ARRI "ALEXA LogC Curve – Usage in VFX", EI 800
 *   LogC4   ARRI "LogC4 Logarithmic Color Space – Specification"
 *   S-Log3  Sony "Technical Summary for S-Gamut3.Cine/S-Log3 and S-Gamut3/S-Log3"
 *   Log3G10 RED "White Paper on REDWideGamutRGB and Log3G10" (v3, 2017)
 *   ACEScct Academy S-2016-001 (upper clamp at 65504 as specified)
 *   sRGB    IEC 61966-2-1, as color.c (max(x, 0) first)
 * Matrices (colorspace.c), computed in double from the primaries: a camera gamut goes to ACES2065-1
 * with the adaptation OpenColorIO's built-in camera transforms use (CAT02 for ARRI and Sony, Bradford
 * for RED), then AP0 → linear Rec.709 with Bradford D60 → D65, so ckey's linear Rec.709 equals an
 * ACES config's "camera → ACES2065-1 → Utility Linear Rec.709" (tests/test_colorspace_ocio.cpp).
 *
 * The per-value functions below are `static inline` and compile for the device too (nvcc), so both
 * backends run the same formulas.
 */
#ifndef CK_COLORSPACE_H
#define CK_COLORSPACE_H

#include "ckey.h"

#include <math.h>
#include <stddef.h>

#ifdef __CUDACC__
#define CK_CS_FN __host__ __device__ static inline
#else
#define CK_CS_FN static inline
#endif

/* CK_CS_DEFAULT resolved by input_is_linear; other values unchanged. */
CK_CS_FN int ck_colorspace_resolve(int cs, int input_is_linear) {
    return cs != CK_CS_DEFAULT ? cs : input_is_linear ? CK_CS_LINEAR_REC709 : CK_CS_SRGB;
}

/* 1 when the plate must be converted before pre-processing (not sRGB or linear Rec.709). */
CK_CS_FN int ck_colorspace_converts(int cs) {
    return cs != CK_CS_DEFAULT && cs != CK_CS_SRGB && cs != CK_CS_LINEAR_REC709;
}

/* 1 when the colour space's gamut is not Rec.709 (Processed then goes through a matrix). */
CK_CS_FN int ck_colorspace_has_gamut(int cs) { return ck_colorspace_converts(cs); }

/* ---- transfer curves: code value → scene-linear (decode) and back (encode), one value ---- */

/* ARRI LogC3, EI 800: a = 1/0.18·(EI/400)·… = 5.555556, b, c, d as ARRI publishes them; cut (linear)
 * = (1/9 − b)/a, where the log segment equals c·log10(1/9) + d; e, f continue it linearly below. */
#define CK_LOGC3_A 5.555555555555556
#define CK_LOGC3_B 0.0522722750
#define CK_LOGC3_C 0.2471896383
#define CK_LOGC3_D 0.3855369987
#define CK_LOGC3_CUT 0.0105909905           /* (1/9 − b)/a */
#define CK_LOGC3_LOG_CUT 0.149658137941209  /* c·log10(1/9) + d */
#define CK_LOGC3_E 5.367654794867534        /* c·a·9/ln 10 (ARRI: 5.367655) */
#define CK_LOGC3_F 0.09280935700148749      /* log_cut − e·cut (ARRI: 0.092809) */

CK_CS_FN float ck_logc3_decode(float t) {
    if (t > (float)CK_LOGC3_LOG_CUT)
        return (exp2f((t - (float)CK_LOGC3_D) * (float)(3.321928094887362 / CK_LOGC3_C)) - (float)CK_LOGC3_B) /
               (float)CK_LOGC3_A;
    return (t - (float)CK_LOGC3_F) / (float)CK_LOGC3_E;
}
CK_CS_FN float ck_logc3_encode(float x) {
    if (x > (float)CK_LOGC3_CUT) return (float)CK_LOGC3_C * log10f((float)CK_LOGC3_A * x + (float)CK_LOGC3_B) + (float)CK_LOGC3_D;
    return (float)CK_LOGC3_E * x + (float)CK_LOGC3_F;
}

/* ARRI LogC4: a = (2^18 − 16)/117.45, b = (1023 − 95)/1023, c = 95/1023; s, t from them. */
#define CK_LOGC4_A 2231.8263090676883
#define CK_LOGC4_B 0.9071358748778103
#define CK_LOGC4_C 0.09286412512218964
#define CK_LOGC4_S 0.1135972086105891   /* 7·ln 2·2^(7 − 14c/b) / (a·b) */
#define CK_LOGC4_T (-0.01805699611991131) /* (2^(6 − 14c/b) − 64) / a */

CK_CS_FN float ck_logc4_decode(float e) {
    if (e >= 0.0f)
        return (exp2f((e - (float)CK_LOGC4_C) * (float)(14.0 / CK_LOGC4_B) + 6.0f) - 64.0f) / (float)CK_LOGC4_A;
    return e * (float)CK_LOGC4_S + (float)CK_LOGC4_T;
}
CK_CS_FN float ck_logc4_encode(float x) {
    if (x >= (float)CK_LOGC4_T)
        return (log2f((float)CK_LOGC4_A * x + 64.0f) - 6.0f) * (float)(CK_LOGC4_B / 14.0) + (float)CK_LOGC4_C;
    return (x - (float)CK_LOGC4_T) / (float)CK_LOGC4_S;
}

/* Sony S-Log3 (10-bit code values 95, 420, 171.2102946929 at 0, 18 % grey and the toe's end). */
CK_CS_FN float ck_slog3_decode(float t) {
    if (t >= (float)(171.2102946929 / 1023.0))
        return exp2f((t * 1023.0f - 420.0f) * (float)(3.321928094887362 / 261.5)) * 0.19f - 0.01f;
    return (t * 1023.0f - 95.0f) * (float)(0.01125 / (171.2102946929 - 95.0));
}
CK_CS_FN float ck_slog3_encode(float x) {
    if (x >= 0.01125f) return (420.0f + log10f((x + 0.01f) / 0.19f) * 261.5f) / 1023.0f;
    return (x * (float)((171.2102946929 - 95.0) / 0.01125) + 95.0f) / 1023.0f;
}

/* RED Log3G10 (v3): a = 0.224282, b = 155.975327, c = 0.01; below 0 the log segment's tangent, slope
 * a·b/ln 10 = 15.19269 (RED rounds it to 15.1927). */
#define CK_LOG3G10_A 0.224282
#define CK_LOG3G10_B 155.975327
#define CK_LOG3G10_G 15.192688598850603

CK_CS_FN float ck_log3g10_decode(float t) {
    if (t < 0.0f) return t / (float)CK_LOG3G10_G - 0.01f;
    return (exp2f(t * (float)(3.321928094887362 / CK_LOG3G10_A)) - 1.0f) / (float)CK_LOG3G10_B - 0.01f;
}
CK_CS_FN float ck_log3g10_encode(float x) {
    x = x + 0.01f;
    if (x < 0.0f) return x * (float)CK_LOG3G10_G;
    return (float)CK_LOG3G10_A * log10f(x * (float)CK_LOG3G10_B + 1.0f);
}

/* ACEScct (S-2016-001): linear toe below code 0.155251141552511 (linear 2^-7). */
CK_CS_FN float ck_acescct_decode(float t) {
    if (t <= 0.155251141552511f) return (t - 0.0729055341958355f) / 10.5402377416545f;
    if (t < (float)((15.999295387023411 + 9.72) / 17.52)) return exp2f(t * 17.52f - 9.72f); /* log2(65504) */
    return 65504.0f;
}
CK_CS_FN float ck_acescct_encode(float x) {
    if (x <= 0.0078125f) return 10.5402377416545f * x + 0.0729055341958355f;
    return (log2f(x) + 9.72f) / 17.52f;
}

/* sRGB, as color.c (max(x, 0) first). */
CK_CS_FN float ck_cs_srgb_decode(float x) {
    x = x < 0.0f ? 0.0f : x;
    if (x <= 0.04045f) return x / 12.92f;
    return powf((x + 0.055f) / 1.055f, 2.4f);
}
CK_CS_FN float ck_cs_srgb_encode(float x) {
    x = x < 0.0f ? 0.0f : x;
    if (x <= 0.0031308f) return x * 12.92f;
    return 1.055f * powf(x, (float)(1.0 / 2.4)) - 0.055f;
}

/* One value of colour space cs (resolved, not CK_CS_DEFAULT) to scene-linear in its own gamut. */
CK_CS_FN float ck_cs_decode(int cs, float v) {
    switch (cs) {
    case CK_CS_SRGB: return ck_cs_srgb_decode(v);
    case CK_CS_LOGC3: return ck_logc3_decode(v);
    case CK_CS_LOGC4: return ck_logc4_decode(v);
    case CK_CS_SLOG3: return ck_slog3_decode(v);
    case CK_CS_LOG3G10: return ck_log3g10_decode(v);
    case CK_CS_ACESCCT: return ck_acescct_decode(v);
    default: return v; /* linear Rec.709, ACES2065-1, ACEScg, Rec.2020 */
    }
}
CK_CS_FN float ck_cs_encode(int cs, float v) {
    switch (cs) {
    case CK_CS_SRGB: return ck_cs_srgb_encode(v);
    case CK_CS_LOGC3: return ck_logc3_encode(v);
    case CK_CS_LOGC4: return ck_logc4_encode(v);
    case CK_CS_SLOG3: return ck_slog3_encode(v);
    case CK_CS_LOG3G10: return ck_log3g10_encode(v);
    case CK_CS_ACESCCT: return ck_acescct_encode(v);
    default: return v;
    }
}

/* ---- pixels ---- */

/* m (3×3, row-major) · v */
CK_CS_FN void ck_cs_mat3(const float *m, const float *v, float *out) {
    const float r = v[0], g = v[1], b = v[2];
    out[0] = m[0] * r + m[1] * g + m[2] * b;
    out[1] = m[3] * r + m[4] * g + m[5] * b;
    out[2] = m[6] * r + m[7] * g + m[8] * b;
}

/* A plate pixel of cs (converting) into the network's linear Rec.709 input: decoded, to_working
 * (ck_colorspace_matrix_to_working), negatives clamped as linear plates' are. */
CK_CS_FN void ck_cs_plate_px(int cs, const float *to_working, const float *in, float *out) {
    const float lin[3] = {ck_cs_decode(cs, in[0]), ck_cs_decode(cs, in[1]), ck_cs_decode(cs, in[2])};
    float       o[3];
    ck_cs_mat3(to_working, lin, o);
    for (int c = 0; c < 3; c++) out[c] = o[c] > 0.0f ? o[c] : 0.0f;
}

/* How post-processing treats Processed's colour (both backends). */
typedef struct ck_cs_post {
    float to_source[9]; /* linear Rec.709 → the plate's gamut (row-major) */
    float to_working[9]; /* its inverse: the highlights' weight is taken in linear Rec.709 */
    int   gamut;        /* 1: apply to_source; 0: the plate is Rec.709 (skipped) */
    int   colorspace;   /* resolved ck_colorspace: decodes the plate for the highlights */
} ck_cs_post;

/* The highlight rule (ck_params.keep_highlights): weight of the plate's own linear value against the
 * network's, by the opaque matte and by how far the plate's brightest channel in linear Rec.709 (p, the
 * network's working primaries, so that one scene gives one weight whatever gamut it was shot in)
 * exceeds 1.0. */
#define CK_HL_ALPHA_LO 0.98f  /* the matte's weight ramps from 0 here ... */
#define CK_HL_ALPHA_HI 0.999f /* ... to 1 here (the network's sigmoid alpha rarely reaches 1.0) */
#define CK_HL_RAMP 0.25f      /* the plate's weight: 0 at 1.0, 1 from 1.25 up */
CK_CS_FN float ck_cs_highlight_weight(float alpha, const float *p) {
    float ka = (alpha - CK_HL_ALPHA_LO) / (CK_HL_ALPHA_HI - CK_HL_ALPHA_LO);
    float m  = p[0] > p[1] ? p[0] : p[1];
    m        = m > p[2] ? m : p[2];
    float kp = (m - 1.0f) / CK_HL_RAMP;
    ka       = ka < 0.0f ? 0.0f : ka > 1.0f ? 1.0f : ka;
    kp       = kp < 0.0f ? 0.0f : kp > 1.0f ? 1.0f : kp;
    return ka * kp;
}

/* Processed RGB (premultiplied, the plate's gamut) of one pixel from the network's straight linear
 * Rec.709 colour lin, the final alpha a and, with keep_highlights, the plate's pixel as given (NULL:
 * off). */
CK_CS_FN void ck_cs_processed_px(const ck_cs_post *cp, const float *lin, const float *plate, float a, float *out) {
    float c[3] = {lin[0], lin[1], lin[2]};
    if (cp->gamut) ck_cs_mat3(cp->to_source, lin, c);
    if (plate) {
        const float p[3] = {ck_cs_decode(cp->colorspace, plate[0]), ck_cs_decode(cp->colorspace, plate[1]),
                            ck_cs_decode(cp->colorspace, plate[2])};
        float       p709[3] = {p[0], p[1], p[2]};
        if (cp->gamut) ck_cs_mat3(cp->to_working, p, p709);
        const float k = ck_cs_highlight_weight(a, p709);
        if (k > 0.0f)
            for (int j = 0; j < 3; j++) c[j] = c[j] + k * (p[j] - c[j]);
    }
    for (int j = 0; j < 3; j++) out[j] = c[j] * a;
}

/* ---- host functions (colorspace.c) ---- */
#ifndef __CUDACC__

/* 3×3 row-major matrices, linear: the colour space's gamut → linear Rec.709 (to_working) and back
 * (from_working = its inverse); the identity for sRGB / linear Rec.709 / CK_CS_DEFAULT. The _d forms
 * in double. */
void ck_colorspace_matrix_to_working_d(ck_colorspace cs, double m[9]);
void ck_colorspace_matrix_to_working(ck_colorspace cs, float m[9]);
void ck_colorspace_from_working_linear(ck_colorspace cs, float m[9]);
void ck_colorspace_from_working_linear_d(ck_colorspace cs, double m[9]);

/* rgb (n, 3) in place: code values of cs → linear Rec.709 (decode, then the matrix; no clamp), and
 * the inverse. CK_CS_DEFAULT is sRGB here. */
void ck_colorspace_to_working(ck_colorspace cs, float *rgb, size_t n);
void ck_colorspace_from_working(ck_colorspace cs, float *rgb, size_t n);
/* rgb (n, 3) in place: the curve alone (code values ↔ linear in the colour space's own gamut). */
void ck_colorspace_decode(ck_colorspace cs, float *rgb, size_t n);
void ck_colorspace_encode(ck_colorspace cs, float *rgb, size_t n);

/* A plate of cs (converting) into the network's linear Rec.709 input: dst (n, 3) = ck_cs_plate_px of
 * src (n, 3); dst may be src. Multi-threaded. */
void ck_colorspace_plate_to_working(ck_colorspace cs, float *dst, const float *src, size_t n);

/* Post-processing's colour settings for (resolved) colour space cs. */
void ck_colorspace_post(int cs, ck_cs_post *out);

#endif
#endif
