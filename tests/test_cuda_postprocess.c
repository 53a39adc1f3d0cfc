/* Device post-processing ("gpu_postprocess") against the host path of ck_result_finish: Lanczos-4 back
 * to the frame size (ck_resize_lanczos4, skipped for an S×S frame), ck_postprocess, then the writers'
 * conversions (ck_f32_to_f16 for the EXR passes, uint8(clip(v, 0, 1)·255) truncated for the comp).
 *
 * Frames: model size, upscaled, downscaled, one axis of the model size, 1-pixel-wide and -high, and one
 * large enough for many blocks per row; despeckle on/off with area thresholds that keep some islands
 * and remove others (islands of many sizes, touching diagonally, on the borders, alpha straddling 0.5),
 * despill 0 / 0.3 / 0.5 / 1, comp on/off, values slightly outside [0, 1]; the fg un-mixed from a plate
 * (ck_fg_unmix, sRGB plate: the soft background's stripes below alpha 0.02 are its screen) with and without a
 * resize and the despeckle.
 *
 * Pass rule: raw alpha and fg halves and the despeckled alpha (processed channel 3) bit-identical;
 * processed RGB halves within 1 half-ulp on at most 0.1% of the values, comp bytes within ±1 on at most
 * 0.1% (at least one value either way; the device's powf may differ from glibc's by an ulp); with the
 * un-mixing (which decodes and encodes the plate with powf) the fg halves too (or within 2^-20 where the
 * blend lands near 0), and the un-mixing must change at least 5 % of the fg values. Each frame
 * runs twice and must repeat to the bit (the component labelling is concurrent). Outputs and scratch
 * carry guard bytes that must survive, and outputs start as 0xFF so that an element never written
 * fails. Two frames take the exact area of one of their components as the threshold (`>=` itself).
 * Without a CUDA device it prints "SKIP: ..." and exits 0. */
#include "ops/backend.h"
#include "core/tensor.h"
#include "harness.h"
#include "cuda_test.h"
#include "frame/colorspace.h"
#include "frame/frame_ops.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 256
#define GUARD_BYTE 0xA5

typedef struct pcase {
    int   S, w, h;
    int   despeckle, despeckle_size;
    float despill;
    int   comp;
    int   unmix; /* fg un-mixed from a plate (sRGB) */
} pcase;

/* The plate (h, w, 3), sRGB-encoded: smooth colours, some above 1. */
static float *synth_plate(int w, int h) {
    float *p = malloc(sizeof(float) * 3 * (size_t)w * h);
    CK_ASSERT(p);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float *q = p + ((size_t)y * w + x) * 3;
            q[0]     = 0.3f + 0.25f * sinf(0.013f * x + 0.021f * y);
            q[1]     = 0.65f + 0.4f * cosf(0.017f * y) * sinf(0.009f * x);
            q[2]     = 0.2f + 0.15f * cosf(0.031f * x - 0.011f * y);
        }
    return p;
}

/* The PNG writer's 8-bit rule (io/image_png.c). */
static uint8_t to_u8(float v) {
    if (!(v > 0.0f)) return 0;
    if (v > 1.0f) v = 1.0f;
    return (uint8_t)(v * 255.0f);
}

/* Network output (S, S, 4): alpha, fg R, G, B. */
static void synth(float *out, int S, int seed) {
    uint32_t r = 2463534242u + (uint32_t)seed * 7919u;
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            float *p = out + ((size_t)y * S + x) * 4;
            /* soft background with a few values below 0, and a big disc with a smooth edge overshooting 1 */
            float       a  = 0.12f + 0.15f * sinf(0.11f * x + 0.5f * seed) * cosf(0.07f * y) - 0.03f;
            const float dx = x - 0.62f * S, dy = y - 0.55f * S, d = sqrtf(dx * dx + dy * dy);
            const float e  = (0.22f * S - d) / 3.0f + 0.5f;
            if (e > 0.0f) a = e > 1.0f ? 1.03f : (a > e ? a : e);
            /* hard-edged squares of sides 1..8 on a grid in the upper-left quadrant */
            const int gx = x / 12, gy = y / 12, ox = x % 12, oy = y % 12, side = 1 + (gx + 2 * gy + seed) % 8;
            if (x < S / 2 && y < S / 2 && ox < side && oy < side) a = 0.97f;
            /* pairs of squares that touch only at a corner */
            if (y >= S / 2 && y < S / 2 + 8 && x < S / 2) {
                const int q = x % 16, t = y - S / 2;
                if ((q < 4 && t < 4) || (q >= 4 && q < 8 && t >= 4)) a = 0.9f;
            }
            /* islands on the borders */
            if ((x == 0 && y % 9 < 2) || (y == S - 1 && x % 11 < 3) || (x == S - 1 && y % 17 < 6)) a = 1.0f;
            /* a band straddling the threshold */
            if (y >= S - 12 && y < S - 6 && x > S / 3)
                a = (x + y) % 3 == 0 ? 0.5f : ((x + y) % 3 == 1 ? 0.50001f : 0.49999f);
            /* scattered single-pixel specks */
            r ^= r << 13, r ^= r >> 17, r ^= r << 5;
            if ((r >> 8) % 211 == 0) a = 0.8f;
            p[0] = a;
            /* fg: green spill in places, a little outside [0, 1] */
            p[1] = 0.45f + 0.5f * sinf(0.05f * x + seed) + 0.04f;
            p[2] = 0.55f + 0.5f * cosf(0.03f * y - 0.02f * x);
            p[3] = (float)((x / 9 + y / 4 + seed) % 3) * 0.45f + (x % 5 == 0 ? -0.02f : 0.0f);
        }
}

/* The area of a middle-sized 8-connected component of (alpha > 0.5) at the frame size: as the area
 * threshold it keeps that component and removes smaller ones, so `>=` itself is tested. */
static int median_component_area(const pcase *c, const float *out) {
    const int    S = c->S, w = c->w, h = c->h;
    const size_t m = (size_t)S * S, n = (size_t)w * h;
    float       *a = malloc(sizeof(float) * m), *A = malloc(sizeof(float) * n);
    int32_t     *stack = malloc(sizeof(int32_t) * n), *areas = malloc(sizeof(int32_t) * n);
    uint8_t     *seen = calloc(n, 1);
    CK_ASSERT(a && A && stack && areas && seen);
    for (size_t i = 0; i < m; i++) a[i] = out[i * 4];
    if (w == S && h == S) memcpy(A, a, sizeof(float) * n);
    else ck_resize_lanczos4(A, w, h, a, S, S, 1);
    size_t ncomp = 0;
    for (size_t i = 0; i < n; i++) {
        if (seen[i] || !(A[i] > 0.5f)) continue;
        size_t top = 0;
        int32_t area = 0;
        stack[top++] = (int32_t)i, seen[i] = 1;
        while (top) {
            const int32_t p = stack[--top];
            const int     px = p % w, py = p / w;
            area++;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    const int qx = px + dx, qy = py + dy;
                    if (qx < 0 || qy < 0 || qx >= w || qy >= h) continue;
                    const size_t q = (size_t)qy * w + qx;
                    if (!seen[q] && A[q] > 0.5f) seen[q] = 1, stack[top++] = (int32_t)q;
                }
        }
        areas[ncomp++] = area;
    }
    /* middle of the sorted areas (insertion sort: few components) */
    for (size_t i = 1; i < ncomp; i++)
        for (size_t j = i; j > 0 && areas[j - 1] > areas[j]; j--) {
            const int32_t t = areas[j];
            areas[j] = areas[j - 1], areas[j - 1] = t;
        }
    const int pick = ncomp ? areas[ncomp / 2] : 1;
    printf("       %zu components, areas %d .. %d, threshold %d\n", ncomp, ncomp ? areas[0] : 0,
           ncomp ? areas[ncomp - 1] : 0, pick);
    free(a), free(A), free(stack), free(areas), free(seen);
    return pick;
}

/* Host path: ck_result_finish's steps, stored as the writers store them. */
static void host_path(const pcase *c, const float *out, const float *plate, uint16_t *ha, uint16_t *hf, uint16_t *hp,
                      uint8_t *hc) {
    const int    S = c->S, w = c->w, h = c->h;
    const size_t m = (size_t)S * S, n = (size_t)w * h;
    float       *a = malloc(sizeof(float) * m), *f = malloc(sizeof(float) * m * 3);
    CK_ASSERT(a && f);
    for (size_t i = 0; i < m; i++) {
        a[i] = out[i * 4];
        for (int k = 0; k < 3; k++) f[i * 3 + k] = out[i * 4 + 1 + k];
    }
    float *A = a, *F = f;
    if (!(w == S && h == S)) {
        A = malloc(sizeof(float) * n), F = malloc(sizeof(float) * n * 3);
        CK_ASSERT(A && F);
        ck_resize_lanczos4(A, w, h, a, S, S, 1);
        ck_resize_lanczos4(F, w, h, f, S, S, 3);
    }
    if (c->unmix) {
        float *before = malloc(sizeof(float) * n * 3);
        CK_ASSERT(before);
        memcpy(before, F, sizeof(float) * n * 3);
        CHECK(ck_fg_unmix(F, A, plate, CK_CS_SRGB, w, h, CK_UNMIX_ALPHA_LO) == CK_OK);
        size_t changed = 0;
        for (size_t i = 0; i < 3 * n; i++) changed += ck_f32_to_f16(before[i]) != ck_f32_to_f16(F[i]);
        printf("       the un-mixing changes %zu of %zu fg values\n", changed, 3 * n);
        CHECK_MSG(changed >= 3 * n / 20, "the un-mixing is not exercised (%zu of %zu fg values)", changed, 3 * n);
        free(before);
    }
    float *P = malloc(sizeof(float) * n * 4), *C = c->comp ? malloc(sizeof(float) * n * 3) : NULL;
    CK_ASSERT(P && (!c->comp || C));
    ck_post_params pp = {c->despill, c->despeckle, c->despeckle_size, c->comp, c->unmix ? CK_CS_SRGB : 0, NULL};
    CHECK(ck_postprocess(P, C, A, F, w, h, &pp) == CK_OK);
    for (size_t i = 0; i < n; i++) {
        ha[i] = ck_f32_to_f16(A[i]);
        for (int k = 0; k < 3; k++) hf[i * 3 + k] = ck_f32_to_f16(F[i * 3 + k]);
        for (int k = 0; k < 4; k++) hp[i * 4 + k] = ck_f32_to_f16(P[i * 4 + k]);
        if (C)
            for (int k = 0; k < 3; k++) hc[i * 3 + k] = to_u8(C[i * 3 + k]);
    }
    if (A != a) free(A), free(F);
    free(a), free(f), free(P), free(C);
}

/* Device buffer of `bytes` plus guard bytes, filled with `fill`, guard with GUARD_BYTE. */
static void *dev_buf(ck_backend *be, size_t bytes, int fill) {
    uint8_t *tmp = malloc(bytes + GUARD);
    void    *d   = be->alloc(be, bytes + GUARD);
    CK_ASSERT(tmp && d);
    memset(tmp, fill, bytes);
    memset(tmp + bytes, GUARD_BYTE, GUARD);
    be->upload(be, d, tmp, bytes + GUARD);
    free(tmp);
    return d;
}

/* Downloads `bytes` into dst; returns 1 when the guard after them is intact. */
static int dev_fetch(ck_backend *be, void *dst, const void *d, size_t bytes) {
    uint8_t *tmp = malloc(bytes + GUARD);
    CK_ASSERT(tmp);
    be->download(be, tmp, d, bytes + GUARD);
    be->synchronize(be);
    if (dst) memcpy(dst, tmp, bytes);
    int ok = 1;
    for (size_t i = 0; i < GUARD; i++) ok &= tmp[bytes + i] == GUARD_BYTE;
    free(tmp);
    return ok;
}

typedef struct dev_out {
    uint16_t *a, *f, *p;
    uint8_t  *c;
    int       guards_ok;
} dev_out;

static void device_path(ck_backend *be, const pcase *c, const float *out, const float *plate, dev_out *o) {
    const int    S = c->S, w = c->w, h = c->h;
    const size_t n = (size_t)w * h;
    int32_t     *ix = malloc(sizeof(int32_t) * 8 * w), *iy = malloc(sizeof(int32_t) * 8 * h);
    float       *wx = malloc(sizeof(float) * 8 * w), *wy = malloc(sizeof(float) * 8 * h);
    CK_ASSERT(ix && iy && wx && wy);
    ck_resize_lanczos4_taps(S, w, ix, wx);
    ck_resize_lanczos4_taps(S, h, iy, wy);

    void *d_out = be->alloc(be, sizeof(float) * S * S * 4);
    void *d_ix = be->alloc(be, sizeof(int32_t) * 8 * w), *d_wx = be->alloc(be, sizeof(float) * 8 * w);
    void *d_iy = be->alloc(be, sizeof(int32_t) * 8 * h), *d_wy = be->alloc(be, sizeof(float) * 8 * h);
    CK_ASSERT(d_out && d_ix && d_wx && d_iy && d_wy);
    be->upload(be, d_out, out, sizeof(float) * S * S * 4);
    be->upload(be, d_ix, ix, sizeof(int32_t) * 8 * w), be->upload(be, d_wx, wx, sizeof(float) * 8 * w);
    be->upload(be, d_iy, iy, sizeof(int32_t) * 8 * h), be->upload(be, d_wy, wy, sizeof(float) * 8 * h);

    const size_t scratch_bytes = be->ext.postprocess_scratch_bytes(S, S, w, h);
    void        *d_a = dev_buf(be, 2 * n, 0xFF), *d_f = dev_buf(be, 6 * n, 0xFF), *d_p = dev_buf(be, 8 * n, 0xFF);
    void        *d_c = c->comp ? dev_buf(be, 3 * n, 0xFF) : NULL;
    void        *d_s = dev_buf(be, scratch_bytes, 0x5A);
    void        *d_plate = NULL;
    if (c->unmix) {
        d_plate = be->alloc(be, sizeof(float) * 3 * n);
        CK_ASSERT(d_plate);
        be->upload(be, d_plate, plate, sizeof(float) * 3 * n);
    }

    ck_postprocess_args args = {0};
    args.out                 = d_out;
    args.sw = S, args.sh = S, args.w = w, args.h = h;
    args.idx_x = d_ix, args.w_x = d_wx, args.idx_y = d_iy, args.w_y = d_wy;
    args.despill        = c->despill;
    args.despeckle      = c->despeckle;
    args.despeckle_size = c->despeckle_size;
    args.alpha = d_a, args.fg = d_f, args.processed = d_p, args.comp = d_c;
    args.scratch = d_s;
    if (c->unmix) {
        ck_colorspace_post(CK_CS_SRGB, &args.cs);
        args.unmix_plate = d_plate, args.unmix_lo = CK_UNMIX_ALPHA_LO;
    }
    be->ext.postprocess(be, &args);
    be->synchronize(be);

    int ok = dev_fetch(be, o->a, d_a, 2 * n);
    ok &= dev_fetch(be, o->f, d_f, 6 * n);
    ok &= dev_fetch(be, o->p, d_p, 8 * n);
    if (d_c) ok &= dev_fetch(be, o->c, d_c, 3 * n);
    ok &= dev_fetch(be, NULL, d_s, scratch_bytes);
    o->guards_ok = ok;

    void *bufs[] = {d_out, d_ix, d_wx, d_iy, d_wy, d_a, d_f, d_p, d_c, d_s, d_plate};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) be->free(be, bufs[i]);
    free(ix), free(iy), free(wx), free(wy);
}

/* Half bits → a signed integer ordered like the values (±0 both 0). */
static int half_ord(uint16_t v) { return (v & 0x8000) ? -(int)(v & 0x7fff) : (int)v; }

static size_t count_diff16(const uint16_t *a, const uint16_t *b, size_t n) {
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += a[i] != b[i];
    return d;
}

static void compare(const char *label, const pcase *c, const dev_out *g, const uint16_t *ha, const uint16_t *hf,
                    const uint16_t *hp, const uint8_t *hc) {
    const size_t n  = (size_t)c->w * c->h;
    const size_t da = count_diff16(g->a, ha, n), df = count_diff16(g->f, hf, 3 * n);
    size_t       dp = 0, dp_alpha = 0;
    int          max_ulp = 0, max_ulp_fg = 0;
    for (size_t i = 0; i < 3 * n; i++) {
        /* the un-mixed fg may land near 0 by cancellation (wgt·f + (1 − wgt)·fg), where halves are ~6e-8 apart
         * and a powf ulp upstream spans several: such values count by their absolute difference (≤ 2^-20) */
        const float d = fabsf(ck_f16_to_f32(g->f[i]) - ck_f16_to_f32(hf[i]));
        const int   u = abs(half_ord(g->f[i]) - half_ord(hf[i]));
        if (u > max_ulp_fg && !(c->unmix && d <= 0x1p-20f)) max_ulp_fg = u;
    }
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) {
            const uint16_t x = g->p[i * 4 + k], y = hp[i * 4 + k];
            if (x == y) continue;
            if (k == 3) dp_alpha++;
            else dp++;
            const int u = abs(half_ord(x) - half_ord(y));
            if (u > max_ulp) max_ulp = u;
        }
    size_t dc = 0;
    int    max_dc = 0;
    if (c->comp)
        for (size_t i = 0; i < 3 * n; i++) {
            const int d = abs((int)g->c[i] - (int)hc[i]);
            dc += d != 0;
            if (d > max_dc) max_dc = d;
        }
    /* 0.1% of the values, at least one (a frame of 150 values may hold one powf-sensitive value) */
    const double lim = 0.001 * (double)(3 * n) > 1.0 ? 0.001 * (double)(3 * n) : 1.0;
    const int    fg_ok = c->unmix ? max_ulp_fg <= 1 && df <= lim : df == 0;
    const int    ok = da == 0 && fg_ok && dp_alpha == 0 && max_ulp <= 1 && dp <= lim && max_dc <= 1 && dc <= lim &&
                   g->guards_ok;
    printf("%-6s %-44s alpha %zu, fg %zu, proc.alpha %zu differ; proc.rgb %zu/%zu differ (max %d ulp); comp %zu/%zu "
           "differ (max %d)%s\n",
           ok ? "OK" : "NOT OK", label, da, df, dp_alpha, dp, 3 * n, max_ulp, dc, c->comp ? 3 * n : 0, max_dc,
           g->guards_ok ? "" : "; GUARD BYTES OVERWRITTEN");
    CHECK_MSG(da == 0, "%s: raw alpha halves differ", label);
    CHECK_MSG(fg_ok, "%s: raw fg halves differ (%zu, max %d ulp)", label, df, max_ulp_fg);
    CHECK_MSG(dp_alpha == 0, "%s: despeckled alpha differs", label);
    CHECK_MSG(max_ulp <= 1 && dp <= lim, "%s: processed RGB beyond 1 ulp or on more than 0.1%%", label);
    CHECK_MSG(max_dc <= 1 && dc <= lim, "%s: comp beyond ±1 or on more than 0.1%%", label);
    CHECK_MSG(g->guards_ok, "%s: guard bytes overwritten", label);
}

int main(void) {
    ck_backend *be = cuda_backend_or_skip();
    if (!be) return CK_TEST_SKIP;
    CHECK(be->ext.postprocess != NULL && be->ext.postprocess_scratch_bytes != NULL);
    if (!be->ext.postprocess || !be->ext.postprocess_scratch_bytes) return test_summary();
    printf("scratch at S=2048, 3840x2160: %zu bytes\n", be->ext.postprocess_scratch_bytes(2048, 2048, 3840, 2160));

    const pcase cases[] = {
        {128, 128, 128, 1, 40, 1.0f, 1, 0},   /* model size: no resize */
        {128, 300, 200, 1, 150, 0.5f, 1, 0},  /* upscale */
        {128, 300, 200, 0, 400, 0.0f, 0, 0},  /* no despeckle, no despill, no comp */
        {128, 97, 61, 1, 30, 0.5f, 1, 0},     /* downscale */
        {128, 128, 77, 1, 60, 1.0f, 1, 0},    /* width of the model size */
        {128, 333, 128, 1, 100, 0.3f, 0, 0},  /* height of the model size */
        {128, 1000, 700, 1, 400, 0.5f, 1, 0}, /* many blocks per row */
        {128, 1000, 700, 0, 400, 1.0f, 1, 0},
        {64, 1, 50, 1, 3, 0.5f, 1, 0},        /* 1-pixel-wide: 1-tap blur along x */
        {64, 50, 1, 1, 3, 0.0f, 1, 0},        /* 1-pixel-high */
        {256, 199, 403, 1, 60, 1.0f, 1, 0},   /* downscale in x, upscale in y */
        {128, 300, 200, 1, -1, 0.5f, 1, 0},   /* threshold = a component's exact area */
        {128, 1000, 700, 1, -1, 0.0f, 0, 0},
        {128, 128, 128, 0, 40, 0.0f, 1, 1},  /* un-mixed: no resize */
        {128, 300, 200, 1, 150, 0.5f, 1, 1}, /* un-mixed after the resize, despeckled */
        {128, 1000, 700, 1, 400, 1.0f, 0, 1},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        pcase        cc = cases[ci];
        const pcase *c  = &cc;
        const size_t n  = (size_t)c->w * c->h;
        float       *out = malloc(sizeof(float) * c->S * c->S * 4);
        uint16_t    *ha = malloc(2 * n), *hf = malloc(6 * n), *hp = malloc(8 * n);
        uint8_t     *hc = malloc(3 * n);
        dev_out      g[2];
        CK_ASSERT(out && ha && hf && hp && hc);
        for (int r = 0; r < 2; r++) {
            g[r].a = malloc(2 * n), g[r].f = malloc(6 * n), g[r].p = malloc(8 * n), g[r].c = malloc(3 * n);
            CK_ASSERT(g[r].a && g[r].f && g[r].p && g[r].c);
        }
        synth(out, c->S, (int)ci);
        if (cc.despeckle_size < 0) cc.despeckle_size = median_component_area(c, out);
        float *plate = c->unmix ? synth_plate(c->w, c->h) : NULL;
        host_path(c, out, plate, ha, hf, hp, hc);
        device_path(be, c, out, plate, &g[0]);
        device_path(be, c, out, plate, &g[1]);
        free(plate);

        char label[96];
        snprintf(label, sizeof label, "S=%d %dx%d despeckle=%d/%d despill=%.1f comp=%d%s", c->S, c->w, c->h,
                 c->despeckle, c->despeckle_size, c->despill, c->comp, c->unmix ? " un-mixed" : "");
        compare(label, c, &g[0], ha, hf, hp, hc);

        /* the run must repeat to the bit */
        const int same = memcmp(g[0].a, g[1].a, 2 * n) == 0 && memcmp(g[0].f, g[1].f, 6 * n) == 0 &&
                         memcmp(g[0].p, g[1].p, 8 * n) == 0 && (!c->comp || memcmp(g[0].c, g[1].c, 3 * n) == 0);
        CHECK_MSG(same, "%s: second run differs", label);

        /* the frame must exercise the despeckle: thresholded pixels it removes and pixels it keeps */
        if (c->despeckle) {
            size_t fg = 0, removed = 0, kept = 0;
            for (size_t i = 0; i < n; i++) {
                if (!(ck_f16_to_f32(ha[i]) > 0.5f)) continue;
                fg++;
                if (hp[i * 4 + 3] == 0) removed++;
                else kept++;
            }
            printf("       alpha > 0.5 on %zu pixels: %zu removed, %zu kept\n", fg, removed, kept);
            if (c->w > 1 && c->h > 1) CHECK_MSG(removed > 0 && kept > 0, "%s: despeckle not exercised", label);
        }
        for (int r = 0; r < 2; r++) free(g[r].a), free(g[r].f), free(g[r].p), free(g[r].c);
        free(out), free(ha), free(hf), free(hp), free(hc);
    }
    be->destroy(be);
    return test_summary();
}
