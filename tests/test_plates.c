/* Synthetic plates (src/qa/plates.c): deterministic by (seed, index) and independent of the thread count;
 * truth consistent with the composite (re-compositing truth fg/alpha over the screen gives the plate, exactly
 * without noise and within the noise bound with it); values in range; a non-empty edge band; the hint is the
 * 8× area-down / bilinear-up sample of the truth, eroded/dilated as asked (checked against direct loops). */
#include "harness.h"
#include "frame/frame_ops.h"
#include "ckey_qa.h"

#include <omp.h>
#include <stdint.h>

static int same_plate(const ck_plate *a, const ck_plate *b) {
    const size_t n = (size_t)a->width * a->height;
    return a->width == b->width && a->height == b->height && !memcmp(a->rgb, b->rgb, n * 3 * sizeof(float)) &&
           !memcmp(a->alpha, b->alpha, n * sizeof(float)) && !memcmp(a->fg, b->fg, n * 3 * sizeof(float)) &&
           !memcmp(a->hint, b->hint, n * sizeof(float)) && !memcmp(a->screen, b->screen, n * 3 * sizeof(float));
}

static ck_plate make(int w, int h, uint64_t seed, int index, float noise, int erode, int dilate) {
    ck_plate        pl;
    ck_plate_params pp = ck_plate_params_default();
    pp.width = w, pp.height = h, pp.seed = seed, pp.index = index, pp.noise = noise;
    pp.hint_erode = erode, pp.hint_dilate = dilate;
    CHECK(ck_plate_alloc(&pl, w, h) == CK_OK);
    CHECK(ck_plate_generate(&pl, &pp) == CK_OK);
    return pl;
}

/* The hint rule written out directly: cell means, then bilinear at (x + 0.5)/8 - 0.5 clamped, then a
 * (2r+1)² min (erode) and max (dilate) by brute force. */
static void reference_hint(float *out, const float *alpha, int w, int h, int erode, int dilate) {
    const int cw = (w + 7) / 8, chh = (h + 7) / 8;
    double   *cell = calloc((size_t)cw * chh, sizeof(double));
    float    *tmp  = malloc(sizeof(float) * (size_t)w * h);
    for (int cy = 0; cy < chh; cy++)
        for (int cx = 0; cx < cw; cx++) {
            double s = 0;
            int    k = 0;
            for (int y = cy * 8; y < cy * 8 + 8 && y < h; y++)
                for (int x = cx * 8; x < cx * 8 + 8 && x < w; x++) s += alpha[(size_t)y * w + x], k++;
            cell[(size_t)cy * cw + cx] = (float)(s / k);
        }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double u = (x + 0.5) / 8 - 0.5, v = (y + 0.5) / 8 - 0.5;
            u        = u < 0 ? 0 : u > cw - 1 ? cw - 1 : u;
            v        = v < 0 ? 0 : v > chh - 1 ? chh - 1 : v;
            int    i0 = (int)u, j0 = (int)v, i1 = i0 + 1 < cw ? i0 + 1 : i0, j1 = j0 + 1 < chh ? j0 + 1 : j0;
            double fx = u - i0, fy = v - j0;
            double t  = cell[(size_t)j0 * cw + i0] * (1 - fx) + cell[(size_t)j0 * cw + i1] * fx;
            double b  = cell[(size_t)j1 * cw + i0] * (1 - fx) + cell[(size_t)j1 * cw + i1] * fx;
            out[(size_t)y * w + x] = (float)(t * (1 - fy) + b * fy);
        }
    for (int pass = 0; pass < 2; pass++) {
        const int r = pass ? dilate : erode;
        if (!r) continue;
        memcpy(tmp, out, sizeof(float) * (size_t)w * h);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                float m = tmp[(size_t)y * w + x];
                for (int dy = -r; dy <= r; dy++)
                    for (int dx = -r; dx <= r; dx++) {
                        const int yy = y + dy, xx = x + dx;
                        if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
                        const float v = tmp[(size_t)yy * w + xx];
                        m             = pass ? (v > m ? v : m) : (v < m ? v : m);
                    }
                out[(size_t)y * w + x] = m;
            }
    }
    free(cell), free(tmp);
}

int main(void) {
    /* 1. determinism: same (seed, index) -> identical bytes, whatever the thread count */
    {
        omp_set_num_threads(1);
        ck_plate a = make(200, 150, 42, 0, 2.0f / 255, 0, 0);
        omp_set_num_threads(2);
        ck_plate b = make(200, 150, 42, 0, 2.0f / 255, 0, 0);
        ck_plate c = make(200, 150, 43, 0, 2.0f / 255, 0, 0);
        ck_plate d = make(200, 150, 42, 1, 2.0f / 255, 0, 0);
        CHECK_MSG(same_plate(&a, &b), "same seed: plates differ (1 vs 2 threads)");
        CHECK_MSG(memcmp(a.rgb, c.rgb, sizeof(float) * 200 * 150 * 3) != 0, "another seed gives the same plate");
        CHECK_MSG(memcmp(a.alpha, c.alpha, sizeof(float) * 200 * 150) != 0, "another seed gives the same truth");
        CHECK_MSG(memcmp(a.rgb, d.rgb, sizeof(float) * 200 * 150 * 3) != 0, "another index gives the same plate");
        ck_plate_free(&a), ck_plate_free(&b), ck_plate_free(&c), ck_plate_free(&d);
    }

    /* 2. truth vs composite, ranges, edge band, at a size with partial hint cells */
    const int W = 301, H = 227;
    const size_t N = (size_t)W * H;
    ck_plate     clean = make(W, H, 5, 2, 0.0f, 0, 0), noisy = make(W, H, 5, 2, 2.0f / 255, 0, 0);
    {
        double max_recomp = 0, max_noise = 0, sum_noise = 0;
        size_t bad_range = 0, bad_fg0 = 0, edge = 0, sub_half = 0, full = 0;
        for (size_t i = 0; i < N; i++) {
            const float a = clean.alpha[i];
            if (!(a >= 0.0f && a <= 1.0f)) bad_range++;
            edge += a > 0.0f && a < 1.0f;
            sub_half += a > 0.0f && a < 0.5f;
            full += a == 1.0f;
            for (int c = 0; c < 3; c++) {
                const float f = clean.fg[3 * i + c], p = clean.rgb[3 * i + c], q = noisy.rgb[3 * i + c];
                if (!(f >= 0.0f && f <= 1.0f) || !(p >= 0.0f && p <= 1.0f) || !(q >= 0.0f && q <= 1.0f)) bad_range++;
                if (a == 0.0f && f != 0.0f) bad_fg0++;
                const float lin = ck_srgb_to_linear(f) * a + clean.screen[3 * i + c] * (1.0f - a);
                const double d  = fabs((double)ck_linear_to_srgb(lin) - p);
                max_recomp      = d > max_recomp ? d : max_recomp;
                const double e  = (double)q - p;
                max_noise       = fabs(e) > max_noise ? fabs(e) : max_noise;
                sum_noise += e;
            }
        }
        CHECK_MSG(bad_range == 0, "%zu values outside [0, 1]", bad_range);
        CHECK_MSG(bad_fg0 == 0, "%zu fg values non-zero where alpha = 0", bad_fg0);
        CHECK_MSG(max_recomp <= 1e-6, "re-composite differs from the noise-free plate by %.3g", max_recomp);
        CHECK_MSG(max_noise <= 2.0 / 255 + 1e-6 && max_noise > 1.0 / 255, "noise bound: max %.5f", max_noise);
        CHECK_MSG(fabs(sum_noise / (3.0 * N)) < 2e-4, "noise mean %.3g", sum_noise / (3.0 * N));
        CHECK_MSG(edge > N / 100, "edge band: %zu pixels of %zu", edge, N);
        CHECK_MSG(sub_half > 50, "only %zu pixels of low partial coverage (strands, blur)", sub_half);
        CHECK_MSG(full > N / 20, "only %zu opaque pixels", full);
        /* the screen is green and unevenly lit */
        float  gmin = 1, gmax = 0;
        size_t not_green = 0;
        for (size_t i = 0; i < N; i++)
            if (clean.alpha[i] == 0.0f) {
                const float *s = clean.screen + 3 * i;
                not_green += !(s[1] > s[0] && s[1] > s[2]);
                gmin = s[1] < gmin ? s[1] : gmin, gmax = s[1] > gmax ? s[1] : gmax;
            }
        CHECK_MSG(not_green == 0, "%zu screen pixels are not green", not_green);
        CHECK_MSG(gmax > gmin * 1.15f, "screen lighting is flat: %.3f..%.3f", gmin, gmax);
    }

    /* 3. the hint: 8× down/up-sample of the truth, then erode/dilate */
    {
        float *ref = malloc(sizeof(float) * N);
        reference_hint(ref, clean.alpha, W, H, 0, 0);
        check_close("hint = 8x down/up of truth", clean.hint, ref, N, 1e-6, 0.0);
        ck_plate er = make(W, H, 5, 2, 0.0f, 3, 0), di = make(W, H, 5, 2, 0.0f, 0, 4), both = make(W, H, 5, 2, 0.0f, 2, 5);
        reference_hint(ref, clean.alpha, W, H, 3, 0);
        check_close("hint eroded 3 px", er.hint, ref, N, 1e-6, 0.0);
        reference_hint(ref, clean.alpha, W, H, 0, 4);
        check_close("hint dilated 4 px", di.hint, ref, N, 1e-6, 0.0);
        reference_hint(ref, clean.alpha, W, H, 2, 5);
        check_close("hint eroded 2 then dilated 5", both.hint, ref, N, 1e-6, 0.0);
        double se = 0, sc = 0, sd = 0;
        for (size_t i = 0; i < N; i++) se += er.hint[i], sc += clean.hint[i], sd += di.hint[i];
        CHECK_MSG(se < sc && sc < sd, "erode/dilate do not shrink/grow the hint: %.0f %.0f %.0f", se, sc, sd);
        CHECK(!memcmp(er.alpha, clean.alpha, sizeof(float) * N)); /* the truth does not depend on the hint */
        free(ref);
        ck_plate_free(&er), ck_plate_free(&di), ck_plate_free(&both);
    }

    /* 4. the scene scales with the frame: similar coverage at 256² and 512² */
    {
        ck_plate s = make(256, 256, 9, 0, 0.0f, 0, 0), l = make(512, 512, 9, 0, 0.0f, 0, 0);
        double   cs = 0, cl = 0;
        for (size_t i = 0; i < 256 * 256; i++) cs += s.alpha[i];
        for (size_t i = 0; i < 512 * 512; i++) cl += l.alpha[i];
        cs /= 256.0 * 256, cl /= 512.0 * 512;
        CHECK_MSG(fabs(cs - cl) < 0.05 * cl, "mean coverage %.4f at 256 vs %.4f at 512", cs, cl);
        ck_plate_free(&s), ck_plate_free(&l);
    }

    /* 5. arguments */
    {
        ck_plate        pl;
        ck_plate_params pp = ck_plate_params_default();
        CHECK(ck_plate_alloc(&pl, 15, 64) == CK_STATUS_EINVAL);
        CHECK(ck_plate_alloc(&pl, 64, 48) == CK_OK);
        pp.width = 64, pp.height = 64;
        CHECK(ck_plate_generate(&pl, &pp) == CK_STATUS_EINVAL); /* size mismatch */
        pp.height = 48, pp.spill = 2.0f;
        CHECK(ck_plate_generate(&pl, &pp) == CK_STATUS_EINVAL);
        pp.spill = 0.0f, pp.noise = 0.0f;
        CHECK(ck_plate_generate(&pl, &pp) == CK_OK);
        ck_plate_free(&pl);
        int w = 0, h = 0;
        CHECK(ck_plate_parse_size("2048x1080", &w, &h) && w == 2048 && h == 1080);
        CHECK(ck_plate_parse_size("64X64", &w, &h) && w == 64 && h == 64);
        CHECK(!ck_plate_parse_size("64x", &w, &h) && !ck_plate_parse_size("x64", &w, &h));
        CHECK(!ck_plate_parse_size("8x64", &w, &h) && !ck_plate_parse_size("64x64x", &w, &h));
        CHECK(!ck_plate_parse_size("-64x64", &w, &h) && !ck_plate_parse_size("64x99999999999", &w, &h));
    }
    ck_plate_free(&clean), ck_plate_free(&noisy);
    return test_summary();
}
