// ckey's colour-space transforms (src/frame/colorspace.c) against OpenColorIO's built-in transforms.
//
// For every encoding: code values 0..1 in 1/1023 steps on every channel (the channels offset against
// each other), grey and pseudo-random triples, and code values down to −0.1 (toes below code 0) go through OCIO's chain "encoding → ACES2065-1 → linear
// Rec.709" (ACES2065-1 → ACEScg by the inverse of ACEScg_to_ACES2065-1, then UTILITY -
// ACES-AP1_to_LINEAR-REC709_BFD) and through ck_colorspace_to_working; the chain's inverse against
// ck_colorspace_from_working on linear values. Agreement: |ckey − OCIO| ≤ 1e-5·max(1, |OCIO|). The
// matrices of each built-in are also read back from OCIO's processor and compared with ckey's (1e-9).
// LogC4 needs OCIO ≥ 2.2: tests/fixtures/colorspace/logc4_ocio.txt holds OCIO 2.6's values
// (tools/ocio/make_logc4_fixture.py).
#include <OpenColorIO/OpenColorIO.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
#include "frame/colorspace.h"
}

namespace OCIO = OCIO_NAMESPACE;

static int g_checks, g_failures;

static void check(bool ok, const char *what) {
    g_checks++;
    if (!ok) {
        g_failures++;
        std::fprintf(stderr, "NOT OK %s\n", what);
    }
}

typedef std::vector<float> rgbs; // (n, 3)

static rgbs code_inputs(bool toes) {
    rgbs v;
    for (int i = 0; i < 1024; i++) {
        v.push_back(i / 1023.0f), v.push_back(((i + 341) % 1024) / 1023.0f), v.push_back(((i + 682) % 1024) / 1023.0f);
    }
    for (int i = 0; i < 1024; i += 8) v.push_back(i / 1023.0f), v.push_back(i / 1023.0f), v.push_back(i / 1023.0f);
    unsigned s = 12345;
    for (int i = 0; i < 3 * 256; i++) {
        s = 1103515245u * s + 12345u;
        v.push_back((float)((s >> 8) & 0xffff) / 65535.0f);
    }
    if (toes) /* code values below 0: Log3G10's and LogC4's toes (sRGB clamps them, as color.c does) */
        for (int i = 0; i < 3 * 64; i++) v.push_back(-0.1f * (float)(i % 64 + 1) / 64.0f);
    return v;
}

static OCIO::ConstCPUProcessorRcPtr cpu_of(const OCIO::ConstTransformRcPtr &t, OCIO::TransformDirection dir) {
    static OCIO::ConstConfigRcPtr cfg = OCIO::Config::CreateRaw();
    return cfg->getProcessor(t, dir)->getOptimizedCPUProcessor(OCIO::OPTIMIZATION_NONE);
}

static OCIO::TransformRcPtr builtin(const char *style, OCIO::TransformDirection dir = OCIO::TRANSFORM_DIR_FORWARD) {
    OCIO::BuiltinTransformRcPtr b = OCIO::BuiltinTransform::Create();
    b->setStyle(style);
    b->setDirection(dir);
    return b;
}

// ACES2065-1 → linear Rec.709, as an ACES config's Utility - Linear - Rec.709 space does it.
static void append_ap0_to_rec709(OCIO::GroupTransformRcPtr &g) {
    g->appendTransform(builtin("ACEScg_to_ACES2065-1", OCIO::TRANSFORM_DIR_INVERSE));
    g->appendTransform(builtin("UTILITY - ACES-AP1_to_LINEAR-REC709_BFD"));
}

// linear Rec.709 (D65) ← XYZ D65: XYZ → AP1 (Bradford D65 → D60), then AP1 → Rec.709 (back to D65)
static void append_xyz_to_rec709(OCIO::GroupTransformRcPtr &g) {
    g->appendTransform(builtin("UTILITY - ACES-AP1_to_CIE-XYZ-D65_BFD", OCIO::TRANSFORM_DIR_INVERSE));
    g->appendTransform(builtin("UTILITY - ACES-AP1_to_LINEAR-REC709_BFD"));
}

static OCIO::GroupTransformRcPtr chain_for(int cs) {
    OCIO::GroupTransformRcPtr g = OCIO::GroupTransform::Create();
    switch (cs) {
    case CK_CS_LOGC3: g->appendTransform(builtin("ARRI_ALEXA-LOGC-EI800-AWG_to_ACES2065-1")); break;
    case CK_CS_SLOG3: g->appendTransform(builtin("SONY_SLOG3-SGAMUT3.CINE_to_ACES2065-1")); break;
    case CK_CS_LOG3G10: g->appendTransform(builtin("RED_LOG3G10-RWG_to_ACES2065-1")); break;
    case CK_CS_ACESCCT: g->appendTransform(builtin("ACEScct_to_ACES2065-1")); break;
    case CK_CS_ACESCG: g->appendTransform(builtin("ACEScg_to_ACES2065-1")); break;
    case CK_CS_ACES2065_1: break;
    case CK_CS_SRGB: // sRGB code values → XYZ D65 through the display transform's inverse
        g->appendTransform(builtin("DISPLAY - CIE-XYZ-D65_to_sRGB", OCIO::TRANSFORM_DIR_INVERSE));
        append_xyz_to_rec709(g);
        return g;
    case CK_CS_REC2020_LINEAR: { // linear Rec.2020 → BT.1886 code values (^(1/2.4)) → XYZ D65
        OCIO::ExponentTransformRcPtr e = OCIO::ExponentTransform::Create();
        const double                 v[4] = {2.4, 2.4, 2.4, 1.0};
        e->setValue(v);
        e->setDirection(OCIO::TRANSFORM_DIR_INVERSE);
        g->appendTransform(e);
        g->appendTransform(builtin("DISPLAY - CIE-XYZ-D65_to_REC.1886-REC.2020", OCIO::TRANSFORM_DIR_INVERSE));
        append_xyz_to_rec709(g);
        return g;
    }
    default: std::abort();
    }
    append_ap0_to_rec709(g);
    return g;
}

// |got − ref| ≤ tol·max(1, |ref|, mag[pixel]) over n triples; prints the worst. mag: the largest
// scene-linear magnitude the pixel passes through (NULL: none). A float32 3×3 product carries an
// absolute error proportional to its inputs' magnitude, so a saturated colour whose channels cancel
// (a LogC3 (1, 0, 0) is AWG3 (55, −0.02, −0.02), whose Rec.709 red is 80 and green −29) is compared
// relative to that magnitude: OCIO's own float32 result is no closer than that.
static void compare(const char *what, const float *got, const float *ref, const float *in, const float *mag,
                    size_t n, double tol) {
    double worst = 0.0;
    size_t wi    = 0;
    for (size_t i = 0; i < 3 * n; i++) {
        const double scale = std::fmax(std::fmax(1.0, std::fabs((double)ref[i])), mag ? (double)mag[i / 3] : 0.0);
        const double e     = std::fabs((double)got[i] - ref[i]) / scale;
        if (!(e <= worst)) worst = e, wi = i;
    }
    char msg[512];
    std::snprintf(msg, sizeof msg, "%s: worst scaled error %.3g (tolerance %.0e) at value %zu: in %.9g, ckey %.9g, OCIO %.9g",
                  what, worst, tol, wi, in[wi], got[wi], ref[wi]);
    std::printf("%s %s\n", worst <= tol ? "ok" : "NOT OK", msg);
    check(worst <= tol, msg);
}

// The largest |value| of each triple of v.
static std::vector<float> magnitudes(const rgbs &v) {
    std::vector<float> m(v.size() / 3);
    for (size_t i = 0; i < m.size(); i++)
        m[i] = std::fmax(std::fabs(v[3 * i]), std::fmax(std::fabs(v[3 * i + 1]), std::fabs(v[3 * i + 2])));
    return m;
}

static void run_ocio(const OCIO::ConstCPUProcessorRcPtr &p, rgbs &v) {
    OCIO::PackedImageDesc img(v.data(), (long)(v.size() / 3), 1, 3);
    p->apply(img);
}

// The product of the MatrixTransforms of a processor (later ones on the left), 3×3 of the 4×4.
static void ocio_matrix(const OCIO::ConstTransformRcPtr &t, double m[9]) {
    static OCIO::ConstConfigRcPtr cfg = OCIO::Config::CreateRaw();
    OCIO::GroupTransformRcPtr     g   = cfg->getProcessor(t)->createGroupTransform();
    double                        acc[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    for (int i = 0; i < g->getNumTransforms(); i++) {
        OCIO::ConstMatrixTransformRcPtr mt = OCIO_DYNAMIC_POINTER_CAST<const OCIO::MatrixTransform>(g->getTransform(i));
        if (!mt) continue;
        double m16[16], t9[9];
        mt->getMatrix(m16);
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++)
                t9[3 * r + c] = m16[4 * r] * acc[c] + m16[4 * r + 1] * acc[3 + c] + m16[4 * r + 2] * acc[6 + c];
        std::memcpy(acc, t9, sizeof acc);
    }
    std::memcpy(m, acc, sizeof acc);
}

static void check_matrix(const char *what, const double *got, const double *ref, double tol) {
    double worst = 0.0;
    for (int i = 0; i < 9; i++) worst = std::fmax(worst, std::fabs(got[i] - ref[i]));
    char msg[256];
    std::snprintf(msg, sizeof msg, "%s matrix: max |ckey − OCIO| %.3g (tolerance %.0e)", what, worst, tol);
    std::printf("%s %s\n", worst <= tol ? "ok" : "NOT OK", msg);
    check(worst <= tol, msg);
}

static void test_encoding(int cs) {
    const char *name = ck_colorspace_name((ck_colorspace)cs);
    const bool  linear = cs == CK_CS_REC2020_LINEAR || cs == CK_CS_ACESCG || cs == CK_CS_ACES2065_1;
    rgbs        in     = linear ? rgbs() : code_inputs(cs != CK_CS_SRGB);
    if (in.empty()) { // linear encodings: 0..4 in steps, mixed
        rgbs c = code_inputs(false);
        for (float x : c) in.push_back(4.0f * x);
    }
    const size_t n = in.size() / 3;
    OCIO::GroupTransformRcPtr chain = chain_for(cs);

    rgbs ref = in, got = in;
    run_ocio(cpu_of(chain, OCIO::TRANSFORM_DIR_FORWARD), ref);
    ck_colorspace_to_working((ck_colorspace)cs, got.data(), n);
    // the scene-linear magnitude on the way: OCIO's first step alone (to ACES2065-1 or XYZ)
    OCIO::GroupTransformRcPtr first = OCIO::GroupTransform::Create();
    first->appendTransform(chain->getTransform(0));
    rgbs mid = in;
    if (chain->getNumTransforms() > 2) run_ocio(cpu_of(first, OCIO::TRANSFORM_DIR_FORWARD), mid);
    std::string what = std::string(name) + " → linear Rec.709";
    compare(what.c_str(), got.data(), ref.data(), in.data(), magnitudes(mid).data(), n, 1e-5);

    // inverse: the forward results (in range) and a linear ramp to 16 as input
    rgbs lin = ref;
    for (int i = 0; i <= 256; i++) {
        const float x = 16.0f * i / 256.0f;
        lin.push_back(x), lin.push_back(0.5f * x), lin.push_back(0.25f * x);
    }
    if (cs == CK_CS_ACESCCT) // ACEScct's log segment: below 2^-15.98 the toe; above 65504 clamped
        for (float &x : lin) x = std::fmin(x, 60000.0f);
    rgbs iref = lin, igot = lin;
    run_ocio(cpu_of(chain, OCIO::TRANSFORM_DIR_INVERSE), iref);
    ck_colorspace_from_working((ck_colorspace)cs, igot.data(), lin.size() / 3);
    what = std::string("linear Rec.709 → ") + name;
    compare(what.c_str(), igot.data(), iref.data(), lin.data(), magnitudes(lin).data(), lin.size() / 3, 1e-5);

    // the gamut matrix alone, OCIO's ops read back
    double mo[9], mc[9];
    ocio_matrix(chain, mo);
    ck_colorspace_matrix_to_working_d((ck_colorspace)cs, mc);
    check_matrix(name, mc, mo, 1e-9);
    // Processed's matrix (linear Rec.709 → the source gamut) is the inverse
    double inv[9], prod[9];
    ck_colorspace_from_working_linear_d((ck_colorspace)cs, inv);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) prod[3 * r + c] = mo[3 * r] * inv[c] + mo[3 * r + 1] * inv[3 + c] + mo[3 * r + 2] * inv[6 + c];
    const double eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    what = std::string(name) + " OCIO matrix · ckey from_working";
    check_matrix(what.c_str(), prod, eye, 1e-9);
}

// LogC4 against OCIO 2.6's values (the fixture).
static void test_logc4_fixture() {
    const char *dir  = std::getenv("CK_FIXTURES");
    std::string path = std::string(dir ? dir : "tests/fixtures") + "/colorspace/logc4_ocio.txt";
    std::ifstream f(path);
    check((bool)f, "logc4_ocio.txt opens");
    if (!f) return;
    rgbs        fin, fout, iin, iout;
    double      m[9] = {0};
    int         have_m = 0;
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream ss(line);
        std::string        tag;
        ss >> tag;
        if (tag == "matrix") {
            for (double &x : m) ss >> x;
            have_m = (bool)ss;
            continue;
        }
        float v[6];
        for (float &x : v) ss >> x;
        check((bool)ss && (tag == "fwd" || tag == "inv"), "fixture line parses");
        rgbs &a = tag == "fwd" ? fin : iin, &b = tag == "fwd" ? fout : iout;
        a.insert(a.end(), v, v + 3), b.insert(b.end(), v + 3, v + 6);
    }
    check(have_m && fin.size() >= 3 * 100 && iin.size() >= 3 * 100, "fixture has the matrix, 100+ forward and inverse rows");
    rgbs got = fin;
    ck_colorspace_to_working(CK_CS_LOGC4, got.data(), got.size() / 3);
    // the magnitude on the way (ACES2065-1): OCIO's Rec.709 values back through OCIO 2.1's AP0 → Rec.709
    rgbs mid = fout;
    run_ocio(cpu_of(chain_for(CK_CS_ACES2065_1), OCIO::TRANSFORM_DIR_INVERSE), mid);
    compare("logc4 → linear Rec.709 (OCIO 2.6 fixture)", got.data(), fout.data(), fin.data(), magnitudes(mid).data(),
            fin.size() / 3, 1e-5);
    got = iin;
    ck_colorspace_from_working(CK_CS_LOGC4, got.data(), got.size() / 3);
    compare("linear Rec.709 → logc4 (OCIO 2.6 fixture)", got.data(), iout.data(), iin.data(), magnitudes(iin).data(),
            iin.size() / 3, 1e-5);
    // AWG4 → AP0 as OCIO builds it, then OCIO 2.1's AP0 → Rec.709, against ckey's matrix
    double ap0[9], full[9], mc[9];
    ocio_matrix(chain_for(CK_CS_ACES2065_1), ap0);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) full[3 * r + c] = ap0[3 * r] * m[c] + ap0[3 * r + 1] * m[3 + c] + ap0[3 * r + 2] * m[6 + c];
    ck_colorspace_matrix_to_working_d(CK_CS_LOGC4, mc);
    check_matrix("logc4 (OCIO 2.6 AWG4 → AP0)", mc, full, 1e-9);
}

int main() {
    std::printf("OpenColorIO %s\n", OCIO::GetVersion());
    const int all[] = {CK_CS_SRGB,    CK_CS_LOGC3,      CK_CS_SLOG3,  CK_CS_LOG3G10,
                       CK_CS_ACESCCT, CK_CS_ACES2065_1, CK_CS_ACESCG, CK_CS_REC2020_LINEAR};
    for (int cs : all) test_encoding(cs);
    test_logc4_fixture();
    std::printf("%d checks, %d failed\n", g_checks, g_failures);
    std::printf("%d passed, %d failed\n", g_checks - g_failures, g_failures);
    return g_failures ? 1 : 0;
}
