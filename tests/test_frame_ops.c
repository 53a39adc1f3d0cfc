/* Pre/post-processing and resampling against PyTorch / OpenCV / numpy references.
 *
 * Fixtures: tests/fixtures/frame_ops/, written by tools/reference/make_frame_ops_fixtures.py (keep the
 * case lists below in step with it). Found through $CK_FIXTURES (the tests/fixtures directory).
 *
 * Each comparison prints max-abs error and the share of bit-identical elements. The implementation
 * reproduces the reference arithmetic, so the expected result is 100 % identical; the pass limits are
 * tolerances a little above float rounding, so that a different libm (sin, exp, powf) cannot fail the
 * suite while a wrong tap, weight or border still does.
 *
 * Set CK_FRAME_OPS_BENCH=1 to also time the 4K frame path (3840x2160 <-> 2048).
 */
#include "harness.h"
#include "ckey_io.h"
#include "frame/frame_ops.h"

#include <stdint.h>
#include <time.h>

#define SENTINEL 1234.5f
#define GUARD    16

static ck_npy load(const char *name) {
    char   rel[256], path[1024];
    ck_npy a;
    ck_err err = {{0}};
    snprintf(rel, sizeof rel, "frame_ops/%s.npy", name);
    test_path(path, sizeof path, "CK_FIXTURES", rel);
    if (ck_npy_read(path, &a, &err) != CK_OK) {
        fprintf(stderr, "cannot read fixture %s: %s\nHINT: set CK_FIXTURES to tests/fixtures, or run "
                        "tools/reference/make_frame_ops_fixtures.py\n", path, err.msg);
        exit(1);
    }
    return a;
}

/* (H, W, C) of an image fixture */
static void hwc(const ck_npy *a, int *h, int *w, int *c) {
    CK_ASSERT(a->ndim == 3);
    *h = (int)a->shape[0], *w = (int)a->shape[1], *c = (int)a->shape[2];
}

static float *guarded(size_t n) {
    float *p = malloc(sizeof(float) * (n + GUARD));
    CK_ASSERT(p);
    for (size_t i = 0; i < n + GUARD; i++) p[i] = SENTINEL;
    return p;
}

static int guard_ok(const float *p, size_t n) {
    for (size_t i = n; i < n + GUARD; i++)
        if (p[i] != SENTINEL) return 0;
    return 1;
}

static double max_abs(const float *a, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(a[i]) > m) m = fabs(a[i]);
    return m;
}

static double exact_share(const float *got, const float *ref, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += got[i] == ref[i];
    return n ? (double)k / n : 1.0;
}

/* |got - ref| <= rel * max|ref| + abs_floor, plus the identical share. */
static void compare(const char *what, const float *got, const float *ref, size_t n, double rel, double abs_floor) {
    double scale = max_abs(ref, n);
    check_close(what, got, ref, n, rel * (scale > 0 ? scale : 1.0) + abs_floor, 0.0);
    printf("       identical %.4f%%\n", 100.0 * exact_share(got, ref, n));
}

/* ---- resampling ---- */

typedef struct {
    ck_resize_mode mode;
    const char    *name;
    double         rel; /* tolerance relative to max|ref| */
} resize_case;

static const resize_case k_resize[] = {
    {CK_RESIZE_BILINEAR_AA, "aa_up_37x23_64x64_c3", 1e-6},
    {CK_RESIZE_BILINEAR_AA, "aa_down_40x30_23x17_c4", 1e-6},
    {CK_RESIZE_BILINEAR_AA, "aa_down_60x34_32x18_c3", 1e-6},
    {CK_RESIZE_BILINEAR_AA, "aa_down_120x60_13x7_c1", 1e-6},
    {CK_RESIZE_BILINEAR_AA, "aa_down_96x54_23x13_c1", 1e-6},
    {CK_RESIZE_BILINEAR_AA, "aa_w1_1x50_7x13_c1", 1e-6},
    {CK_RESIZE_BILINEAR_AA, "aa_to_w1_50x37_1x9_c1", 1e-6},
    {CK_RESIZE_BILINEAR_AA, "aa_hsame_60x50_60x29_c1", 1e-6},
    {CK_RESIZE_BICUBIC_TORCH, "bc_32_16_c4", 1e-6},
    {CK_RESIZE_BICUBIC_TORCH, "bc_16_40_c4", 1e-6},
    {CK_RESIZE_BICUBIC_TORCH, "bc_7_3_c3", 1e-6},
    {CK_RESIZE_BICUBIC_TORCH, "bc_3_7_c3", 1e-6},
    {CK_RESIZE_BICUBIC_TORCH, "bc_48_18_c2", 1e-6},
    {CK_RESIZE_LANCZOS4, "lz_down_64x64_37x23_c1", 1e-6},
    {CK_RESIZE_LANCZOS4, "lz_up_37x23_52x41_c3", 1e-6},
    {CK_RESIZE_LANCZOS4, "lz_up_20x15_43x31_c4", 1e-6},
    {CK_RESIZE_LANCZOS4, "lz_w1_1x30_1x17_c1", 1e-6},
    {CK_RESIZE_LANCZOS4, "lz_hsame_50x40_50x23_c1", 1e-6},
    {CK_RESIZE_LANCZOS4, "lz_step_32x32_71x45_c1", 1e-6},
    {CK_RESIZE_LINEAR_CV, "lin_up_37x23_64x64_c1", 1e-6},
    {CK_RESIZE_LINEAR_CV, "lin_down_70x50_43x29_c1", 1e-6},
    {CK_RESIZE_LINEAR_CV, "lin_half_40x40_20x20_c1", 1e-6},
    {CK_RESIZE_LINEAR_CV, "lin_up_37x23_50x40_c3", 1e-6},
    /* A 1-pixel-wide image bypasses cv2's IPP layer: OpenCV's generic path rounds the source position
     * to float first, which moves the weights by ~1e-6 (see taps_linear_cv). */
    {CK_RESIZE_LINEAR_CV, "lin_w1_1x50_1x77_c1", 1e-5},
};

typedef void (*resize_fn)(float *, int, int, const float *, int, int, int);

static void test_resizes(void) {
    static const resize_fn fns[] = {ck_resize_bilinear_aa, ck_resize_lanczos4, ck_resize_linear_cv,
                                    ck_resize_bicubic_torch};
    for (size_t k = 0; k < sizeof k_resize / sizeof k_resize[0]; k++) {
        const resize_case *rc = &k_resize[k];
        char               nm[128];
        snprintf(nm, sizeof nm, "%s.in", rc->name);
        ck_npy in = load(nm);
        snprintf(nm, sizeof nm, "%s.out", rc->name);
        ck_npy ref = load(nm);
        int    sh, sw, c, dh, dw, c2;
        hwc(&in, &sh, &sw, &c);
        hwc(&ref, &dh, &dw, &c2);
        CK_ASSERT(c == c2);

        float *got = guarded(ref.numel);
        fns[rc->mode](got, dw, dh, in.data, sw, sh, c);
        compare(rc->name, got, ref.data, ref.numel, rc->rel, 0.0);
        CHECK_MSG(guard_ok(got, ref.numel), "%s wrote past its output", rc->name);
        free(got);
        ck_npy_free(&in);
        ck_npy_free(&ref);
    }
}

/* ck_resize_ws into a wider interleaved image: only channels [off, off+c) of each pixel change, and
 * the workspace of exactly ck_resize_ws_floats is enough. */
static void test_resize_strided(void) {
    ck_npy in = load("lz_up_37x23_52x41_c3.in"), ref = load("lz_up_37x23_52x41_c3.out");
    int    sh, sw, c, dh, dw;
    hwc(&in, &sh, &sw, &c);
    hwc(&ref, &dh, &dw, &c);
    const int stride = 5, off = 1;
    size_t    n = (size_t)dw * dh * stride, nws = ck_resize_ws_floats(CK_RESIZE_LANCZOS4, dw, dh, sw, sh, c);
    float    *dst = guarded(n), *ws = guarded(nws);
    ck_resize_ws(CK_RESIZE_LANCZOS4, dst + off, stride, dw, dh, in.data, sw, sh, c, ws);
    float *picked = calloc(ref.numel, sizeof(float));
    CK_ASSERT(picked);
    int    others_ok = 1;
    for (size_t p = 0; p < (size_t)dw * dh; p++)
        for (int k = 0; k < stride; k++) {
            float v = dst[p * stride + k];
            if (k >= off && k < off + c) picked[p * c + (k - off)] = v;
            else others_ok &= v == SENTINEL;
        }
    compare("lanczos strided into (.., 5)", picked, ref.data, ref.numel, 1e-6, 0.0);
    CHECK_MSG(others_ok, "strided resize touched channels outside its range");
    CHECK_MSG(guard_ok(dst, n) && guard_ok(ws, nws), "strided resize wrote past its buffers");
    free(picked), free(dst), free(ws);
    ck_npy_free(&in), ck_npy_free(&ref);
}

/* ---- colour and despill ---- */

static void test_color(void) {
    ck_npy x = load("color_x"), l2s = load("color_lin2srgb"), s2l = load("color_srgb2lin");
    float *a = malloc(sizeof(float) * x.numel), *b = malloc(sizeof(float) * x.numel);
    for (size_t i = 0; i < x.numel; i++) a[i] = ck_linear_to_srgb(x.data[i]), b[i] = ck_srgb_to_linear(x.data[i]);
    /* numpy's float32 power may come from SVML: allow an ulp or two */
    check_close("linear_to_srgb", a, l2s.data, x.numel, 1e-9, 3e-7);
    printf("       identical %.4f%%\n", 100.0 * exact_share(a, l2s.data, x.numel));
    check_close("srgb_to_linear", b, s2l.data, x.numel, 1e-9, 3e-7);
    printf("       identical %.4f%%\n", 100.0 * exact_share(b, s2l.data, x.numel));
    CHECK(ck_linear_to_srgb(-1.0f) == 0.0f && ck_srgb_to_linear(-1.0f) == 0.0f);
    CHECK(ck_linear_to_srgb(0.002f) == 0.002f * 12.92f);
    free(a), free(b);
    ck_npy_free(&x), ck_npy_free(&l2s), ck_npy_free(&s2l);
}

static void test_despill(void) {
    ck_npy      fg = load("despill_fg");
    const char *names[3] = {"despill_s100", "despill_s075", "despill_s050"};
    const float s[3]     = {1.0f, 0.75f, 0.5f};
    for (int k = 0; k < 3; k++) {
        ck_npy ref = load(names[k]);
        float *got = malloc(sizeof(float) * fg.numel);
        memcpy(got, fg.data, sizeof(float) * fg.numel);
        ck_despill(got, fg.numel / 3, s[k]);
        compare(names[k], got, ref.data, ref.numel, 0.0, 1e-7);
        free(got);
        ck_npy_free(&ref);
    }
    float px[3] = {0.2f, 0.9f, 0.1f};
    ck_despill(px, 1, 0.0f);
    CHECK(px[0] == 0.2f && px[1] == 0.9f && px[2] == 0.1f);
    ck_npy_free(&fg);
}

/* ---- despeckle ---- */

static void check_despeckle(const char *what, const float *got, const float *ref, const float *alpha, size_t n) {
    /* Every kept/removed decision must agree exactly: the output is zero where, and only where, the
     * dilated blurred mask is zero (for non-zero alpha). Values may differ by at most one 8-bit step of
     * the blurred mask. */
    size_t decisions = 0, over = 0, same = 0;
    double worst     = 0;
    for (size_t i = 0; i < n; i++) {
        if (alpha[i] != 0.0f && ((got[i] == 0.0f) != (ref[i] == 0.0f))) decisions++;
        double d = fabs((double)got[i] - ref[i]);
        if (d > worst) worst = d;
        if (d > fabs(alpha[i]) / 255.0 + 1e-7) over++;
        same += got[i] == ref[i];
    }
    printf("%-6s %-28s n=%zu max_abs=%.3e identical=%.4f%% decision_mismatches=%zu\n",
           decisions || over ? "NOT OK" : "OK", what, n, worst, 100.0 * same / n, decisions);
    CHECK_MSG(decisions == 0, "%s: %zu kept/removed decisions differ from cv2", what, decisions);
    CHECK_MSG(over == 0, "%s: %zu pixels off by more than 1/255", what, over);
    CHECK_MSG((double)same / n >= 0.999, "%s: only %.4f%% identical", what, 100.0 * same / n);
}

static void test_despeckle(void) {
    const char *cases[][2] = {
        {"ds_120x90", "ds_120x90"}, {"ds_120x90_area50", "ds_120x90"}, {"ds_7x5", "ds_7x5"}, {"ds_30x1", "ds_30x1"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char nm[128];
        snprintf(nm, sizeof nm, "%s.in", cases[k][1]);
        ck_npy in = load(nm);
        snprintf(nm, sizeof nm, "%s.out", cases[k][0]);
        ck_npy ref = load(nm);
        snprintf(nm, sizeof nm, "%s.area", cases[k][0]);
        ck_npy area = load(nm);
        int    h, w, c;
        hwc(&in, &h, &w, &c);
        float *got = guarded(in.numel);
        CHECK(ck_despeckle(got, in.data, w, h, (int)area.data[0]) == CK_OK);
        check_despeckle(cases[k][0], got, ref.data, in.data, in.numel);
        CHECK(guard_ok(got, in.numel));
        /* in place (out aliases alpha) gives the same bits */
        float *inplace = malloc(sizeof(float) * in.numel);
        memcpy(inplace, in.data, sizeof(float) * in.numel);
        CHECK(ck_despeckle(inplace, inplace, w, h, (int)area.data[0]) == CK_OK);
        CHECK_MSG(memcmp(inplace, got, sizeof(float) * in.numel) == 0, "%s: in-place result differs", cases[k][0]);
        free(inplace), free(got);
        ck_npy_free(&in), ck_npy_free(&ref), ck_npy_free(&area);
    }
    float one = 0.9f;
    CHECK(ck_despeckle(&one, &one, 0, 1, 400) == CK_STATUS_EINVAL);
}

/* ---- full post-processing ---- */

static void test_postprocess(void) {
    ck_npy alpha = load("post.alpha"), fg = load("post.fg");
    int    h, w, c;
    hwc(&alpha, &h, &w, &c);
    struct {
        const char *tag;
        float       despill;
        int         despeckle, comp;
    } v[3] = {{"a", 1.0f, 1, 1}, {"b", 0.5f, 0, 1}, {"c", 0.0f, 1, 0}};
    for (int k = 0; k < 3; k++) {
        char nm[128];
        snprintf(nm, sizeof nm, "post_%s.processed", v[k].tag);
        ck_npy         ref_p = load(nm);
        size_t         n     = (size_t)w * h;
        float         *proc = guarded(4 * n), *comp = v[k].comp ? guarded(3 * n) : NULL;
        ck_post_params pp   = {v[k].despill, v[k].despeckle, 400, v[k].comp};
        CHECK(ck_postprocess(proc, comp, alpha.data, fg.data, w, h, &pp) == CK_OK);
        snprintf(nm, sizeof nm, "post_%s processed", v[k].tag);
        /* powf in srgb_to_linear may differ from numpy's by an ulp */
        compare(nm, proc, ref_p.data, ref_p.numel, 1e-6, 0.0);
        CHECK(guard_ok(proc, 4 * n));
        if (comp) {
            snprintf(nm, sizeof nm, "post_%s.comp", v[k].tag);
            ck_npy ref_c = load(nm);
            snprintf(nm, sizeof nm, "post_%s comp", v[k].tag);
            compare(nm, comp, ref_c.data, ref_c.numel, 1e-6, 0.0);
            CHECK(guard_ok(comp, 3 * n));
            ck_npy_free(&ref_c);
        }
        free(proc), free(comp);
        ck_npy_free(&ref_p);
    }
    ck_post_params pp = {1.0f, 1, 400, 0};
    CHECK(ck_postprocess(NULL, NULL, alpha.data, fg.data, w, h, &pp) == CK_STATUS_EINVAL);
    ck_npy_free(&alpha), ck_npy_free(&fg);
}

/* ---- pre-processing ---- */

static void test_preprocess(void) {
    struct {
        const char *name;
        int         S, linear;
    } cases[] = {{"pre_srgb_37x23_s48", 48, 0}, {"pre_linear_60x34_hint45x25_s32", 32, 1}, {"pre_down_60x34_s32", 32, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char nm[128];
        snprintf(nm, sizeof nm, "%s.rgb", cases[k].name);
        ck_npy rgb = load(nm);
        snprintf(nm, sizeof nm, "%s.hint", cases[k].name);
        ck_npy hint = load(nm);
        snprintf(nm, sizeof nm, "%s.out", cases[k].name);
        ck_npy ref = load(nm);
        int    h, w, c, hh, hw, hc;
        hwc(&rgb, &h, &w, &c);
        hwc(&hint, &hh, &hw, &hc);
        const int S  = cases[k].S;
        size_t    ns = ck_preprocess_scratch_floats(w, h, hw, hh, S), nx = (size_t)S * S * 4;
        float    *scratch = guarded(ns), *x = guarded(nx);
        CK_ASSERT(ref.numel == nx);
        ck_preprocess(x, rgb.data, w, h, hint.data, hw, hh, S, cases[k].linear, scratch);
        /* linear->sRGB uses powf where torch uses Sleef: an ulp apart at most */
        compare(cases[k].name, x, ref.data, nx, 1e-6, 0.0);
        CHECK_MSG(guard_ok(x, nx) && guard_ok(scratch, ns), "%s wrote past its buffers", cases[k].name);
        free(scratch), free(x);
        ck_npy_free(&rgb), ck_npy_free(&hint), ck_npy_free(&ref);
    }
}

/* ---- edge cases that need no reference ---- */

static void test_edges(void) {
    /* same size: every mode copies */
    float src[5 * 3 * 2], dst[5 * 3 * 2];
    for (int i = 0; i < 30; i++) src[i] = (float)i * 0.37f - 3.0f;
    resize_fn fns[] = {ck_resize_bilinear_aa, ck_resize_lanczos4, ck_resize_linear_cv, ck_resize_bicubic_torch};
    for (int k = 0; k < 4; k++) {
        memset(dst, 0, sizeof dst);
        fns[k](dst, 5, 3, src, 5, 3, 2);
        CHECK_MSG(memcmp(dst, src, sizeof src) == 0, "mode %d does not copy at equal size", k);
    }
    /* a constant image stays constant under the interpolating filters (weights sum to 1 up to
     * rounding; OpenCV's linear path is exact) */
    float flat[7 * 4], out[11 * 9];
    for (int i = 0; i < 28; i++) flat[i] = 0.25f;
    ck_resize_linear_cv(out, 11, 9, flat, 7, 4, 1);
    int same = 1;
    for (int i = 0; i < 99; i++) same &= out[i] == 0.25f;
    CHECK_MSG(same, "linear resize of a constant image is not constant");

    /* despeckle: nothing above 0.5 clears everything; min_area <= 1 keeps every component */
    enum { W = 64, H = 48 };
    static float a[W * H], o[W * H];
    for (int i = 0; i < W * H; i++) a[i] = 0.4f;
    CHECK(ck_despeckle(o, a, W, H, 400) == CK_OK);
    int zero = 1;
    for (int i = 0; i < W * H; i++) zero &= o[i] == 0.0f;
    CHECK_MSG(zero, "despeckle of an empty mask is not zero");
    a[20 * W + 30] = 0.9f; /* one isolated pixel */
    CHECK(ck_despeckle(o, a, W, H, 1) == CK_OK);
    CHECK_MSG(o[20 * W + 30] > 0.0f && o[20 * W + 30] <= 0.9f, "a kept single pixel vanished");
    CHECK(ck_despeckle(o, a, W, H, 2) == CK_OK);
    CHECK_MSG(o[20 * W + 30] == 0.0f, "a 1-pixel speck survived min_area 2");
}

/* ---- optional timing at 4K ---- */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void bench_4k(void) {
    const int W = 3840, H = 2160, S = 2048;
    size_t    n = (size_t)W * H;
    float    *rgb = malloc(sizeof(float) * n * 3), *hint = malloc(sizeof(float) * n);
    float    *x = malloc(sizeof(float) * S * S * 4), *scratch = malloc(sizeof(float) * ck_preprocess_scratch_floats(W, H, W, H, S));
    float    *a = malloc(sizeof(float) * S * S), *fg = malloc(sizeof(float) * S * S * 3);
    float    *af = malloc(sizeof(float) * n), *fgf = malloc(sizeof(float) * n * 3);
    float    *proc = malloc(sizeof(float) * n * 4), *comp = malloc(sizeof(float) * n * 3);
    CK_ASSERT(rgb && hint && x && scratch && a && fg && af && fgf && proc && comp);
    uint32_t s = 1;
    for (size_t i = 0; i < n * 3; i++) s = s * 1664525u + 1013904223u, rgb[i] = (s >> 8) * (1.0f / 16777216.0f);
    for (size_t i = 0; i < n; i++) {
        int px = (int)(i % W), py = (int)(i / W);
        hint[i] = (px - W / 2) * (px - W / 2) + (py - H / 2) * (py - H / 2) < 700 * 700 ? 1.0f : 0.0f;
    }
    double t0 = now_s();
    ck_preprocess(x, rgb, W, H, hint, W, H, S, 0, scratch);
    double t1 = now_s();
    for (size_t i = 0; i < (size_t)S * S; i++) a[i] = x[4 * i + 3], fg[3 * i] = fg[3 * i + 1] = fg[3 * i + 2] = 0.5f;
    ck_resize_lanczos4(af, W, H, a, S, S, 1);
    ck_resize_lanczos4(fgf, W, H, fg, S, S, 3);
    double         t2 = now_s();
    ck_post_params pp = {1.0f, 1, 400, 1};
    CHECK(ck_postprocess(proc, comp, af, fgf, W, H, &pp) == CK_OK);
    double t3 = now_s();
    float *tmp = malloc(sizeof(float) * n);
    CHECK(ck_despeckle(tmp, af, W, H, 400) == CK_OK);
    double t4 = now_s();
    printf("bench 4K: preprocess %.1f ms, lanczos back (1+3 ch) %.1f ms, postprocess %.1f ms (despeckle alone %.1f ms)\n",
           (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, (t4 - t3) * 1e3);
    free(tmp);
    free(rgb), free(hint), free(x), free(scratch), free(a), free(fg), free(af), free(fgf), free(proc), free(comp);
}

int main(void) {
    test_resizes();
    test_resize_strided();
    test_color();
    test_despill();
    test_despeckle();
    test_postprocess();
    test_preprocess();
    test_edges();
    const char *b = getenv("CK_FRAME_OPS_BENCH");
    if (b && *b == '1') bench_4k();
    return test_summary();
}
