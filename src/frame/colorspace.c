/* Colour spaces of plates: names, gamut matrices and whole-buffer conversions (colorspace.h).
 *
 * Matrices are built in double from the gamuts' primaries and white points, the standard way (the
 * RGB → XYZ matrix whose columns are the primaries scaled so that RGB 1,1,1 is the white with Y = 1;
 * von Kries adaptation in the Bradford or CAT02 cone space), with the adaptation OpenColorIO's
 * built-in camera transforms use to reach ACES2065-1 (ARRI, Sony: CAT02; RED: Bradford), then
 * ACES2065-1 → linear Rec.709 with Bradford. */
#include "frame/colorspace.h"
#include "core/check.h"

#include <ctype.h>
#include <string.h>

/* ---- names ---- */

typedef struct cs_name {
    const char *name;
    int         cs;
} cs_name;

/* Compared after lower-casing and dropping everything but letters and digits. */
static const cs_name k_names[] = {
    {"srgb", CK_CS_SRGB},
    {"rec709", CK_CS_SRGB},
    {"srgbrec709", CK_CS_SRGB},
    {"srgbtexture", CK_CS_SRGB},
    {"linear", CK_CS_LINEAR_REC709},
    {"linearrec709", CK_CS_LINEAR_REC709},
    {"linrec709", CK_CS_LINEAR_REC709},
    {"linearsrgb", CK_CS_LINEAR_REC709},
    {"linsrgb", CK_CS_LINEAR_REC709},
    {"scenelinearrec709", CK_CS_LINEAR_REC709},
    {"utilitylinearrec709", CK_CS_LINEAR_REC709},
    {"linearrec709srgb", CK_CS_LINEAR_REC709},
    {"logc3", CK_CS_LOGC3},
    {"logc", CK_CS_LOGC3},
    {"arrilogc3", CK_CS_LOGC3},
    {"arrilogc3ei800awg3", CK_CS_LOGC3},
    {"arrilogc3awg3", CK_CS_LOGC3},
    {"logc3ei800awg3", CK_CS_LOGC3},
    {"logc3awg3", CK_CS_LOGC3},
    {"logcawg", CK_CS_LOGC3},
    {"inputarriv3logcei800alexawidegamut", CK_CS_LOGC3},
    {"arriv3logcei800alexawidegamut", CK_CS_LOGC3},
    {"arrialexalogcei800awg", CK_CS_LOGC3},
    {"logc4", CK_CS_LOGC4},
    {"arrilogc4", CK_CS_LOGC4},
    {"logc4awg4", CK_CS_LOGC4},
    {"arrilogc4awg4", CK_CS_LOGC4},
    {"slog3", CK_CS_SLOG3},
    {"slog3sgamut3cine", CK_CS_SLOG3},
    {"sonyslog3sgamut3cine", CK_CS_SLOG3},
    {"inputsonyslog3sgamut3cine", CK_CS_SLOG3},
    {"log3g10", CK_CS_LOG3G10},
    {"redlog3g10", CK_CS_LOG3G10},
    {"log3g10redwidegamutrgb", CK_CS_LOG3G10},
    {"redlog3g10redwidegamutrgb", CK_CS_LOG3G10},
    {"log3g10rwg", CK_CS_LOG3G10},
    {"redlog3g10rwg", CK_CS_LOG3G10},
    {"inputredlog3g10redwidegamutrgb", CK_CS_LOG3G10},
    {"acescct", CK_CS_ACESCCT},
    {"acesacescct", CK_CS_ACESCCT},
    {"aces2065", CK_CS_ACES2065_1},
    {"aces20651", CK_CS_ACES2065_1},
    {"acesaces20651", CK_CS_ACES2065_1},
    {"ap0", CK_CS_ACES2065_1},
    {"linearap0", CK_CS_ACES2065_1},
    {"acescg", CK_CS_ACESCG},
    {"acesacescg", CK_CS_ACESCG},
    {"linearap1", CK_CS_ACESCG},
    {"rec2020linear", CK_CS_REC2020_LINEAR},
    {"linearrec2020", CK_CS_REC2020_LINEAR},
    {"linrec2020", CK_CS_REC2020_LINEAR},
    {"utilitylinearrec2020", CK_CS_REC2020_LINEAR},
};

static const char *const k_short[CK_CS_COUNT] = {"default", "srgb",    "linear",     "logc3",  "logc4",
                                                 "slog3",   "log3g10", "acescct",    "aces2065-1", "acescg",
                                                 "rec2020-linear"};

int ck_colorspace_parse(const char *name, ck_colorspace *out) {
    if (!name || !out) return -1;
    char   key[96];
    size_t k = 0;
    for (const char *s = name; *s; s++) {
        if (!isalnum((unsigned char)*s)) continue;
        if (k + 1 >= sizeof key) return -1;
        key[k++] = (char)tolower((unsigned char)*s);
    }
    key[k] = '\0';
    for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; i++)
        if (!strcmp(key, k_names[i].name)) {
            *out = (ck_colorspace)k_names[i].cs;
            return 0;
        }
    return -1;
}

const char *ck_colorspace_name(ck_colorspace cs) {
    return (int)cs >= 0 && cs < CK_CS_COUNT ? k_short[cs] : NULL;
}

const char *ck_colorspace_names(void) {
    return "srgb (= rec709), linear (linear Rec.709), logc3 (ARRI LogC3 EI 800 / AWG3), logc4 (ARRI LogC4 / "
           "AWG4), slog3 (Sony S-Log3 / S-Gamut3.Cine), log3g10 (RED Log3G10 / REDWideGamutRGB), acescct, "
           "aces2065-1, acescg, rec2020-linear";
}

/* ---- matrices ---- */

typedef struct primaries {
    double rx, ry, gx, gy, bx, by, wx, wy;
} primaries;

static const primaries k_rec709 = {0.64, 0.33, 0.30, 0.60, 0.15, 0.06, 0.3127, 0.3290};
static const primaries k_rec2020 = {0.708, 0.292, 0.170, 0.797, 0.131, 0.046, 0.3127, 0.3290};
static const primaries k_ap0 = {0.7347, 0.2653, 0.0, 1.0, 0.0001, -0.0770, 0.32168, 0.33767};
static const primaries k_ap1 = {0.713, 0.293, 0.165, 0.830, 0.128, 0.044, 0.32168, 0.33767};
static const primaries k_awg3 = {0.6840, 0.3130, 0.2210, 0.8480, 0.0861, -0.1020, 0.3127, 0.3290};
static const primaries k_awg4 = {0.7347, 0.2653, 0.1424, 0.8576, 0.0991, -0.0308, 0.3127, 0.3290};
static const primaries k_sgamut3cine = {0.766, 0.275, 0.225, 0.800, 0.089, -0.087, 0.3127, 0.3290};
static const primaries k_rwg = {0.780308, 0.304253, 0.121595, 1.493994, 0.095612, -0.084589, 0.3127, 0.3290};

typedef enum adapt { ADAPT_NONE, ADAPT_BRADFORD, ADAPT_CAT02 } adapt;

static void mul3(const double *a, const double *b, double *out) { /* out = a · b (out may alias neither) */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) out[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
}

static void inv3(const double *m, double *out) {
    const double c00 = m[4] * m[8] - m[5] * m[7], c01 = m[5] * m[6] - m[3] * m[8], c02 = m[3] * m[7] - m[4] * m[6];
    const double det = m[0] * c00 + m[1] * c01 + m[2] * c02;
    CK_ASSERT(det != 0.0);
    const double d = 1.0 / det;
    out[0] = c00 * d, out[1] = (m[2] * m[7] - m[1] * m[8]) * d, out[2] = (m[1] * m[5] - m[2] * m[4]) * d;
    out[3] = c01 * d, out[4] = (m[0] * m[8] - m[2] * m[6]) * d, out[5] = (m[2] * m[3] - m[0] * m[5]) * d;
    out[6] = c02 * d, out[7] = (m[1] * m[6] - m[0] * m[7]) * d, out[8] = (m[0] * m[4] - m[1] * m[3]) * d;
}

static void mulv(const double *m, const double *v, double *out) {
    for (int i = 0; i < 3; i++) out[i] = m[3 * i] * v[0] + m[3 * i + 1] * v[1] + m[3 * i + 2] * v[2];
}

/* RGB → XYZ: columns = the primaries' xyz scaled so that RGB (1, 1, 1) is the white with Y = 1. */
static void rgb_to_xyz(const primaries *g, double *m) {
    const double p[9] = {g->rx, g->gx, g->bx, g->ry, g->gy, g->by, 1 - g->rx - g->ry, 1 - g->gx - g->gy,
                         1 - g->bx - g->by};
    const double w[3] = {g->wx / g->wy, 1.0, (1 - g->wx - g->wy) / g->wy};
    double       pi[9], s[3];
    inv3(p, pi);
    mulv(pi, w, s);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) m[3 * i + j] = p[3 * i + j] * s[j];
}

/* von Kries adaptation of XYZ from white src to white dst (XYZ, Y = 1) in a cone space. */
static void adaptation(const double *src_w, const double *dst_w, adapt how, double *m) {
    static const double bradford[9] = {0.8951, 0.2664, -0.1614, -0.7502, 1.7135, 0.0367, 0.0389, -0.0685, 1.0296};
    static const double cat02[9]    = {0.7328, 0.4296, -0.1624, -0.7036, 1.6975, 0.0061, 0.0030, 0.0136, 0.9834};
    const double       *cone        = how == ADAPT_CAT02 ? cat02 : bradford;
    double              ci[9], s[3], d[3], scale[9] = {0}, t[9];
    inv3(cone, ci);
    mulv(cone, src_w, s);
    mulv(cone, dst_w, d);
    for (int i = 0; i < 3; i++) scale[4 * i] = d[i] / s[i];
    mul3(scale, cone, t);
    mul3(ci, t, m);
}

/* Linear RGB of gamut src → linear RGB of gamut dst, adapting the white when they differ. */
static void conversion(const primaries *src, const primaries *dst, adapt how, double *m) {
    double s2x[9], d2x[9], x2d[9], t[9];
    rgb_to_xyz(src, s2x);
    rgb_to_xyz(dst, d2x);
    inv3(d2x, x2d);
    if (how == ADAPT_NONE || (src->wx == dst->wx && src->wy == dst->wy)) {
        mul3(x2d, s2x, m);
        return;
    }
    const double one[3] = {1, 1, 1};
    double       sw[3], dw[3], a[9];
    mulv(s2x, one, sw);
    mulv(d2x, one, dw);
    adaptation(sw, dw, how, a);
    mul3(a, s2x, t);
    mul3(x2d, t, m);
}

void ck_colorspace_matrix_to_working_d(ck_colorspace cs, double m[9]) {
    double to_ap0[9], ap0_to_709[9];
    conversion(&k_ap0, &k_rec709, ADAPT_BRADFORD, ap0_to_709);
    switch ((int)cs) {
    case CK_CS_LOGC3: conversion(&k_awg3, &k_ap0, ADAPT_CAT02, to_ap0); break;
    case CK_CS_LOGC4: conversion(&k_awg4, &k_ap0, ADAPT_CAT02, to_ap0); break;
    case CK_CS_SLOG3: conversion(&k_sgamut3cine, &k_ap0, ADAPT_CAT02, to_ap0); break;
    case CK_CS_LOG3G10: conversion(&k_rwg, &k_ap0, ADAPT_BRADFORD, to_ap0); break;
    case CK_CS_ACESCCT:
    case CK_CS_ACESCG: conversion(&k_ap1, &k_rec709, ADAPT_BRADFORD, m); return;
    case CK_CS_ACES2065_1: memcpy(m, ap0_to_709, sizeof ap0_to_709); return;
    case CK_CS_REC2020_LINEAR: conversion(&k_rec2020, &k_rec709, ADAPT_NONE, m); return;
    default: /* Rec.709 primaries */
        for (int i = 0; i < 9; i++) m[i] = i % 4 == 0;
        return;
    }
    mul3(ap0_to_709, to_ap0, m);
}

void ck_colorspace_from_working_linear_d(ck_colorspace cs, double m[9]) {
    double t[9];
    ck_colorspace_matrix_to_working_d(cs, t);
    inv3(t, m);
}

void ck_colorspace_matrix_to_working(ck_colorspace cs, float m[9]) {
    double d[9];
    ck_colorspace_matrix_to_working_d(cs, d);
    for (int i = 0; i < 9; i++) m[i] = (float)d[i];
}

void ck_colorspace_from_working_linear(ck_colorspace cs, float m[9]) {
    double d[9];
    ck_colorspace_from_working_linear_d(cs, d);
    for (int i = 0; i < 9; i++) m[i] = (float)d[i];
}

/* ---- buffers ---- */

static int resolved(ck_colorspace cs) { return ck_colorspace_resolve((int)cs, 0); }

void ck_colorspace_decode(ck_colorspace cs, float *rgb, size_t n) {
    const int c = resolved(cs);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < 3 * n; i++) rgb[i] = ck_cs_decode(c, rgb[i]);
}

void ck_colorspace_encode(ck_colorspace cs, float *rgb, size_t n) {
    const int c = resolved(cs);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < 3 * n; i++) rgb[i] = ck_cs_encode(c, rgb[i]);
}

void ck_colorspace_to_working(ck_colorspace cs, float *rgb, size_t n) {
    const int c = resolved(cs);
    float     m[9];
    ck_colorspace_matrix_to_working((ck_colorspace)c, m);
    const int gamut = ck_colorspace_has_gamut(c);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float *p      = rgb + 3 * i;
        float  lin[3] = {ck_cs_decode(c, p[0]), ck_cs_decode(c, p[1]), ck_cs_decode(c, p[2])};
        if (gamut) ck_cs_mat3(m, lin, p);
        else p[0] = lin[0], p[1] = lin[1], p[2] = lin[2];
    }
}

void ck_colorspace_from_working(ck_colorspace cs, float *rgb, size_t n) {
    const int c = resolved(cs);
    float     m[9];
    ck_colorspace_from_working_linear((ck_colorspace)c, m);
    const int gamut = ck_colorspace_has_gamut(c);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float *p      = rgb + 3 * i;
        float  lin[3] = {p[0], p[1], p[2]};
        if (gamut) ck_cs_mat3(m, p, lin);
        for (int k = 0; k < 3; k++) p[k] = ck_cs_encode(c, lin[k]);
    }
}

void ck_colorspace_plate_to_working(ck_colorspace cs, float *dst, const float *src, size_t n) {
    const int c = resolved(cs);
    float     m[9];
    ck_colorspace_matrix_to_working((ck_colorspace)c, m);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) ck_cs_plate_px(c, m, src + 3 * i, dst + 3 * i);
}

void ck_colorspace_post(int cs, ck_cs_post *out) {
    memset(out, 0, sizeof *out);
    out->colorspace = resolved((ck_colorspace)cs);
    out->gamut      = ck_colorspace_has_gamut(out->colorspace);
    ck_colorspace_from_working_linear((ck_colorspace)out->colorspace, out->to_source);
    ck_colorspace_matrix_to_working((ck_colorspace)out->colorspace, out->to_working);
}
