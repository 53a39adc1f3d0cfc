/* CPU post-processing, as CorridorKeyEngine._postprocess_opencv steps 2-6 (model_spec §7.3, §9.3).
 *
 * References: CorridorKeyModule/core/color_utils.py (clean_matte_opencv, despill_opencv,
 * srgb_to_linear, premultiply, composite_straight, create_checkerboard) at d836296, and OpenCV
 * connectedComponentsWithStats, getStructuringElement(MORPH_ELLIPSE), dilate, GaussianBlur
 * (smooth.dispatch.cpp: getGaussianKernelBitExact, getGaussianKernelFixedPoint_ED; smooth.simd.hpp:
 * the ufixedpoint16 separable filter for CV_8U).
 *
 * Despeckle in integers, so that it equals cv2 exactly:
 *   1. mask = alpha > 0.5; 8-connected components by union-find over horizontal runs (deterministic:
 *      a root is always the run with the smallest index), keep components with area >= min_area;
 *   2. dilation with the 51×51 ellipse: per row, the distance to the nearest kept pixel of that row
 *      (two passes), then a pixel is set if, for some ellipse row dy, that distance in row y+dy is
 *      within the ellipse half-width of dy — 51 byte compares per pixel instead of 2601;
 *   3. 11×11 Gaussian on the 0/255 image in OpenCV's 8-bit fixed point: kernel quantized to 8
 *      fraction bits by error diffusion, horizontal sums kept exact in 16 bits, vertical sums in 32 bits
 *      rounded once (+2^15 >> 16), reflect-101 borders;
 *   4. out = alpha * (float)blurred / 255 in float32, as numpy.
 * The per-pixel colour steps are float32 in numpy's operation order (no fused multiply-adds).
 */
#include "frame/frame_ops.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#include "frame/colorspace.h" /* after the pragma: its per-pixel rule is not contracted either */

enum { DESPECKLE_DILATION = 25, DESPECKLE_BLUR = 5 };

/* ---- connected components over runs ---- */

typedef struct ck__runs {
    int32_t *start, *end; /* inclusive column range of each run */
    int32_t *parent;      /* union-find forest; parent[r] <= r always */
    int32_t *area;        /* pixel count, valid at roots */
    int32_t *row_ofs;     /* (h + 1): runs of row y are [row_ofs[y], row_ofs[y+1]) */
} ck__runs;

static int32_t uf_find(int32_t *parent, int32_t r) {
    while (parent[r] != r) {
        parent[r] = parent[parent[r]];
        r         = parent[r];
    }
    return r;
}

static void uf_union(int32_t *parent, int32_t a, int32_t b) {
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a < b) parent[b] = a;
    else if (b < a) parent[a] = b;
}

/* Runs of row y-1 and row y touch under 8-connectivity when their column ranges, widened by one,
 * overlap. Both lists are sorted, so one merge-like sweep finds every touching pair. */
static void union_rows(ck__runs *R, int y) {
    int32_t i = R->row_ofs[y], ie = R->row_ofs[y + 1];
    int32_t j = R->row_ofs[y - 1], je = R->row_ofs[y];
    while (i < ie && j < je) {
        if (R->end[j] < R->start[i] - 1) {
            j++;
        } else if (R->start[j] > R->end[i] + 1) {
            i++;
        } else {
            uf_union(R->parent, i, j);
            if (R->end[j] < R->end[i]) j++;
            else i++;
        }
    }
}

/* ---- ellipse, Gaussian kernel, borders ---- */

/* getStructuringElement(MORPH_ELLIPSE, (2r+1, 2r+1)): row i holds columns [r-dx, r+dx] with
 * dx = saturate_cast<int>(r*sqrt((r*r - dy*dy)/(r*r))), dy = i - r (round half to even). */
static void ellipse_half_widths(int r, int *half) {
    double inv_r2 = r ? 1.0 / ((double)r * r) : 0.0;
    for (int i = 0; i < 2 * r + 1; i++) {
        int dy  = i - r;
        half[i] = (int)lrint(r * sqrt((double)(r * r - dy * dy) * inv_r2));
    }
}

/* getGaussianKernelBitExact (sigma <= 0: sigma = 0.15*n + 0.35, fused) followed by
 * getGaussianKernelFixedPoint_ED for ufixedpoint16, in double where OpenCV uses softdouble. The taps
 * sum to 256 by construction (the centre takes the remainder). n = 11 gives
 * {2, 7, 17, 31, 45, 52, 45, 31, 17, 7, 2}. */
static void gaussian_kernel_q8(int n, int *k) {
    CK_ASSERT(n == 1 || (n > 9 && n % 2 == 1 && n <= 63)); /* n <= 9 uses OpenCV's fixed tables */
    if (n == 1) {
        k[0] = 256;
        return;
    }
    double sigma = fma((double)n, 0.15, 0.35), scale2 = -0.125 / (sigma * sigma);
    int    n2 = (n - 1) / 2;
    double values[32], sum = 0.0;
    for (int i = 0, x = 1 - n; i < n2; i++, x += 2) {
        values[i] = exp((double)(x * x) * scale2);
        sum += values[i];
    }
    sum        = sum * 2.0 + 1.0;
    double mul = 1.0 / sum, err = 0.0;
    int    isum = 0;
    for (int i = 0; i < n2; i++) {
        double adj = values[i] * mul * 256.0 + err;
        int    v   = (int)lrint(adj);
        err        = adj - v;
        k[i] = k[n - 1 - i] = v;
        isum += v;
    }
    k[n2] = 256 - 2 * isum;
}

/* OpenCV borderInterpolate for BORDER_REFLECT_101 (repeats for kernels wider than the image). */
static int reflect101(int p, int len) {
    if (len == 1) return 0;
    while ((unsigned)p >= (unsigned)len) p = p < 0 ? -p : 2 * (len - 1) - p;
    return p;
}

/* ---- despeckle ---- */

/* Despeckle with strided alpha input and output (both may alias: each output element is written
 * only after its own alpha was read in the last step). */
static ck_status despeckle_core(float *out, int out_stride, const float *alpha, int alpha_stride, int w, int h,
                                int min_area) {
    const int r = DESPECKLE_DILATION, kb = 2 * DESPECKLE_BLUR + 1;
    size_t    npx;
    if (w <= 0 || h <= 0 || !ck_mul_size((size_t)w, (size_t)h, &npx) || npx > INT32_MAX) return CK_STATUS_EINVAL;

    /* mask (h, w) u8 | dist (h, w) u8 | blur rows (h, w) u16 | row_ofs (h + 1) i32 | xmap (w + kb) i32 |
     * row_min (h) u8 */
    uint8_t *mask = malloc(npx * 4 + sizeof(int32_t) * ((size_t)h + 1 + (size_t)w + kb) + (size_t)h);
    ck__runs R    = {0};
    if (!mask) return CK_STATUS_EOOM;
    uint8_t  *dist    = mask + npx;
    uint16_t *hsum    = (uint16_t *)(mask + 2 * npx);
    R.row_ofs         = (int32_t *)(mask + 4 * npx);
    int32_t *xmap     = R.row_ofs + h + 1; /* xmap[x + j] = reflected column of x + j - nx/2 */
    uint8_t *row_min  = (uint8_t *)(xmap + w + kb); /* smallest distance in each row of dist */

    /* 1. threshold and count runs per row */
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
        const float *a = alpha + (size_t)y * w * alpha_stride;
        uint8_t     *m = mask + (size_t)y * w;
        int32_t      n = 0;
        for (int x = 0; x < w; x++) {
            m[x] = a[(size_t)x * alpha_stride] > 0.5f;
            n += m[x] && (x == 0 || !m[x - 1]);
        }
        R.row_ofs[y + 1] = n;
    }
    R.row_ofs[0] = 0;
    for (int y = 0; y < h; y++) R.row_ofs[y + 1] += R.row_ofs[y];
    size_t nruns = (size_t)R.row_ofs[h];

    int32_t *runbuf = malloc(sizeof(int32_t) * 4 * (nruns ? nruns : 1));
    if (!runbuf) {
        free(mask);
        return CK_STATUS_EOOM;
    }
    R.start  = runbuf;
    R.end    = runbuf + nruns;
    R.parent = runbuf + 2 * nruns;
    R.area   = runbuf + 3 * nruns;

#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
        const uint8_t *m = mask + (size_t)y * w;
        int32_t        k = R.row_ofs[y];
        for (int x = 0; x < w; x++) {
            if (!m[x] || (x > 0 && m[x - 1])) continue;
            int e = x;
            while (e + 1 < w && m[e + 1]) e++;
            R.start[k] = x, R.end[k] = e, R.parent[k] = k, R.area[k] = 0;
            k++;
        }
    }
    for (int y = 1; y < h; y++) union_rows(&R, y);
    /* parent[r] < r for non-roots, so one ascending pass resolves every run to its root. */
    for (size_t k = 0; k < nruns; k++) R.parent[k] = R.parent[R.parent[k]];
    for (size_t k = 0; k < nruns; k++) R.area[R.parent[k]] += R.end[k] - R.start[k] + 1;

    /* kept components only */
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
        uint8_t *m = mask + (size_t)y * w;
        memset(m, 0, (size_t)w);
        for (int32_t k = R.row_ofs[y]; k < R.row_ofs[y + 1]; k++)
            if (R.area[R.parent[k]] >= min_area) memset(m + R.start[k], 1, (size_t)(R.end[k] - R.start[k] + 1));
    }
    free(runbuf);

    /* 2. distance to the nearest kept pixel within the row (capped at 255), then the ellipse test */
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
        const uint8_t *m = mask + (size_t)y * w;
        uint8_t       *d = dist + (size_t)y * w;
        int            run = 255;
        for (int x = 0; x < w; x++) {
            run  = m[x] ? 0 : (run < 255 ? run + 1 : 255);
            d[x] = (uint8_t)run;
        }
        run         = 255;
        uint8_t low = 255;
        for (int x = w - 1; x >= 0; x--) {
            run = m[x] ? 0 : (run < 255 ? run + 1 : 255);
            if (run < d[x]) d[x] = (uint8_t)run;
            if (d[x] < low) low = d[x];
        }
        row_min[y] = low;
    }
    int half[2 * DESPECKLE_DILATION + 1];
    ellipse_half_widths(r, half);
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
        uint8_t *o = mask + (size_t)y * w; /* the kept mask is no longer needed */
        memset(o, 0, (size_t)w);
        for (int dy = -r; dy <= r; dy++) {
            int yy = y + dy;
            if (yy < 0 || yy >= h) continue; /* outside the image counts as -inf for dilate */
            const uint8_t hw = (uint8_t)half[dy + r];
            if (row_min[yy] > hw) continue; /* nothing in that row is close enough */
            const uint8_t *d = dist + (size_t)yy * w;
            for (int x = 0; x < w; x++) o[x] |= (uint8_t)(d[x] <= hw);
        }
    }

    /* 3. Gaussian blur of the 0/255 image. GaussianBlur shrinks the kernel to 1 along a dimension of
     *    size 1. */
    int kx[2 * DESPECKLE_BLUR + 1], ky[2 * DESPECKLE_BLUR + 1];
    int nx = w == 1 ? 1 : kb, ny = h == 1 ? 1 : kb;
    gaussian_kernel_q8(nx, kx);
    gaussian_kernel_q8(ny, ky);
    for (int p = 0; p < w + nx - 1; p++) xmap[p] = reflect101(p - nx / 2, w);
    int kk[2 * DESPECKLE_BLUR + 1]; /* horizontal taps times 255: the dilated mask holds 0/1 */
    for (int j = 0; j < nx; j++) kk[j] = 255 * kx[j];
    const int rx = nx / 2, ry = ny / 2;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
        const uint8_t *m = mask + (size_t)y * w;
        uint16_t      *s = hsum + (size_t)y * w;
        /* exact in 16 bits (<= 255*256), as OpenCV's ufixedpoint16 row buffer */
        int x0 = rx < w ? rx : w, x1 = w - rx > x0 ? w - rx : x0;
        for (int x = 0; x < x0; x++) {
            int acc = 0;
            for (int j = 0; j < nx; j++) acc += kk[j] * m[xmap[x + j]];
            s[x] = (uint16_t)acc;
        }
        if (nx == 2 * DESPECKLE_BLUR + 1) {
            /* constant trip count: the compiler vectorizes along x */
            for (int x = x0; x < x1; x++) {
                int acc = 0;
                for (int j = 0; j < 2 * DESPECKLE_BLUR + 1; j++) acc += kk[j] * m[x - DESPECKLE_BLUR + j];
                s[x] = (uint16_t)acc;
            }
        } else {
            for (int x = x0; x < x1; x++) s[x] = (uint16_t)(kk[0] * m[x]);
        }
        for (int x = x1; x < w; x++) {
            int acc = 0;
            for (int j = 0; j < nx; j++) acc += kk[j] * m[xmap[x + j]];
            s[x] = (uint16_t)acc;
        }
    }
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
        const uint16_t *rows[2 * DESPECKLE_BLUR + 1];
        for (int i = 0; i < ny; i++) rows[i] = hsum + (size_t)reflect101(y + i - ry, h) * w;
        const float *a = alpha + (size_t)y * w * alpha_stride;
        float       *o = out + (size_t)y * w * out_stride;
        enum { CHUNK = 512 };
        uint8_t blurred[CHUNK];
        for (int xc = 0; xc < w; xc += CHUNK) {
            int len = w - xc < CHUNK ? w - xc : CHUNK;
            if (ny == 2 * DESPECKLE_BLUR + 1) {
                /* constant trip count: the compiler vectorizes along x */
                for (int x = 0; x < len; x++) {
                    uint32_t acc = 0;
                    for (int i = 0; i < 2 * DESPECKLE_BLUR + 1; i++) acc += (uint32_t)ky[i] * rows[i][xc + x];
                    uint32_t v = (acc + (1u << 15)) >> 16; /* one rounding, saturated to 8 bits */
                    blurred[x] = (uint8_t)(v > 255 ? 255 : v);
                }
            } else {
                for (int x = 0; x < len; x++) {
                    uint32_t v = ((uint32_t)ky[0] * rows[0][xc + x] + (1u << 15)) >> 16;
                    blurred[x] = (uint8_t)(v > 255 ? 255 : v);
                }
            }
            /* 4. numpy: cleaned.astype(float32) / 255.0, then alpha * safe_zone */
            for (int x = 0; x < len; x++) {
                size_t px          = (size_t)(xc + x);
                o[px * out_stride] = a[px * alpha_stride] * ((float)blurred[x] / 255.0f);
            }
        }
    }
    free(mask);
    return CK_OK;
}

ck_status ck_despeckle(float *out, const float *alpha, int w, int h, int min_area) {
    if (!out || !alpha) return CK_STATUS_EINVAL;
    return despeckle_core(out, 1, alpha, 1, w, h, min_area);
}

/* ---- colour ---- */

/* despill_opencv "average" on one sRGB pixel, numpy float32 order. */
static void despill_px(float *p, float s) {
    float r = p[0], g = p[1], b = p[2];
    float limit = (r + b) / 2.0f;
    float d     = g - limit;
    float spill = d < 0.0f ? 0.0f : d; /* np.maximum(d, 0.0) keeps NaN */
    float rn = r + spill * 0.5f, gn = g - spill, bn = b + spill * 0.5f;
    if (s < 1.0f) {
        /* image * (1.0 - strength) + despilled * strength: 1 - s in double, then float32 */
        float keep = (float)(1.0 - (double)s);
        rn         = r * keep + rn * s;
        gn         = g * keep + gn * s;
        bn         = b * keep + bn * s;
    }
    p[0] = rn, p[1] = gn, p[2] = bn;
}

void ck_despill(float *fg, size_t n_pixels, float strength) {
    if (strength <= 0.0f) return;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n_pixels; i++) despill_px(fg + 3 * i, strength);
}

ck_status ck_postprocess(float *processed, float *comp, const float *alpha, const float *fg, int w, int h,
                         const ck_post_params *pp) {
    if (!processed || !alpha || !fg || !pp || w <= 0 || h <= 0) return CK_STATUS_EINVAL;

    if (pp->despeckle) {
        ck_status st = despeckle_core(processed + 3, 4, alpha, 1, w, h, pp->despeckle_size);
        if (st != CK_OK) return st;
    } else {
        for (size_t i = 0, n = (size_t)w * h; i < n; i++) processed[4 * i + 3] = alpha[i];
    }

    /* create_checkerboard(w, h, 128, 0.15, 0.55) in float32, then srgb_to_linear */
    const float bg_lin[2] = {ck_srgb_to_linear(0.15f), ck_srgb_to_linear(0.55f)};
    const float s         = pp->despill;
    /* Processed in the plate's gamut and its highlights (colorspace.h); the comp stays the network's
     * Rec.709 preview */
    ck_cs_post cs;
    ck_colorspace_post(pp->colorspace, &cs);
    const int    recolour = cs.gamut || pp->plate;
    const float *plate    = pp->plate;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            size_t i = (size_t)y * w + x;
            float *P = processed + 4 * i;
            float  a = P[3];
            float  c[3] = {fg[3 * i], fg[3 * i + 1], fg[3 * i + 2]};
            float  lin3[3];
            if (!(s <= 0.0f)) despill_px(c, s);
            for (int k = 0; k < 3; k++) {
                float lin = ck_srgb_to_linear(c[k]);
                P[k]      = lin * a;
                lin3[k]   = lin;
                if (comp) {
                    float bg        = bg_lin[((x >> 7) + (y >> 7)) & 1];
                    comp[3 * i + k] = ck_linear_to_srgb(lin * a + bg * (1.0f - a));
                }
            }
            if (recolour) ck_cs_processed_px(&cs, lin3, plate ? plate + 3 * i : NULL, a, P);
        }
    }
    return CK_OK;
}
