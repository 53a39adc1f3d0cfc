/* Quality measurement (public; the library ckey_qa, which the engine libraries do not depend on): synthetic
 * green-screen plates with exact ground truth, and the scores of a key against it (`ckey plates`,
 * `ckey quality`, the tests). Buffers are the caller's unless a call says it allocates; every image is
 * interleaved float32, row-major, (h, w, c).
 *
 * ---- plates (ck_plate_*) ----
 *
 * A plate is a small scene composited in linear light over a chroma-green screen:
 *   - a soft-alpha subject: a wobbly ellipse whose edge softness varies around the outline (1-14 px
 *     at 2048), its colour a smooth texture;
 *   - fine hair-like strands: tapered quadratic curves 0.35-1.3 px wide rising from the subject's upper
 *     outline, with box-filtered (sub-pixel) coverage;
 *   - motion-blur stripes: bars box-blurred across their width (alpha is the exact box convolution, so
 *     its peak is below 1 when the blur is longer than the bar is wide);
 *   - a defocus disk: a partially opaque disk with a smooth edge as wide as its blur;
 * over a screen lit unevenly (a gradient and a vignette). Geometry scales with min(W, H) (designed at
 * 2048); strand widths and the 1-px anti-aliasing are in real pixels at every size.
 *
 * Composite (layers back to front: subject, strands, stripes, disk; premultiplied "over"):
 *     A = a + (1 - a) A,   P = a c + (1 - a) P          (c: a layer's colour, linear)
 *     truth alpha = A,     truth fg = linear_to_srgb(P / A)  (0 where A = 0)
 *     plate = linear_to_srgb(srgb_to_linear(fg) A + screen (1 - A)) + noise, clamped to [0, 1]
 * The plate is computed from the stored truth, so re-compositing truth fg/alpha over `screen` gives the
 * noise-free plate up to float rounding, and truth alpha is exactly the alpha of the composite.
 *
 * Green spill: light from the screen falling on the subject near its outline (and on the thin strands)
 * tints the layer colour, c' = c (1 - w) + screen w. It is part of the foreground's observed colour, so
 * the truth fg includes it: the network's fg output precedes despill and is scored against it.
 *
 * Noise: triangular (sum of two uniforms), |noise| <= params.noise, added to the sRGB values per
 * channel (sensor-like, in code values). It comes from a hash of (seed, index, pixel, channel), so a plate
 * does not depend on the thread count.
 *
 * Values: plate and truth fg are sRGB-encoded floats in [0, 1], as the network's 8-bit-style input and
 * its fg output; truth alpha is linear coverage in [0, 1]; screen is linear light.
 *
 * Hint: truth alpha averaged over 8×8 cells (partial cells at the right/bottom average the pixels they
 * hold) and scaled back up bilinearly (cell centres at 8 i + 3.5, edges clamped), as the seed benchmarks'
 * "hint = 8× downscaled truth"; then optionally eroded and/or dilated (grey min/max over a
 * (2r+1)×(2r+1) square, erosion first).
 *
 *     ck_plate pl;
 *     ck_plate_params pp = ck_plate_params_default();
 *     pp.width = 2048, pp.height = 2048, pp.seed = 1;
 *     if (ck_plate_alloc(&pl, pp.width, pp.height) != CK_OK) ...;
 *     for (int i = 0; i < 4; i++) { pp.index = i; ck_plate_generate(&pl, &pp); ... }
 *     ck_plate_free(&pl);
 *
 * ---- scores (ck_score_*, ck_agree_*) ----
 *
 * Both are accumulators, so a set of plates is scored as one pool of pixels (every sum in double; the
 * loops are serial, so results do not depend on the thread count):
 *
 *     ck_score s = {0};
 *     for each plate: ck_score_add(&s, res.alpha.data, res.fg.data, truth_alpha, truth_fg, w * h);
 *     ck_score_summary r = ck_score_finish(&s);
 *
 * Definitions (n pixels, e = |alpha - truth alpha|):
 *   mae = Σe / n,  max_err = max e,  mse = Σe² / n;
 *   edge_mae = Σe / edge_n over the edge band, the pixels with 0 < truth alpha < 1 (strictly): the soft
 *     edges, strands, blur and defocus that decide a key. edge_n = 0 (an empty band) gives NAN;
 *   fg_mae = mean over pixels with truth alpha > 0 of the per-channel mean |fg - truth fg| (both
 *     sRGB-encoded), i.e. Σ over those pixels and 3 channels / (3 fg_n); fg_n = 0 gives NAN (also when
 *     fg is not given).
 * A non-finite output value makes the sums (and max_err) NaN: a broken key cannot score well.
 *
 * Agreement of two outputs a, b (same length): max_diff = max |a - b|, mean_diff = Σ|a - b| / n,
 * mse = Σ(a - b)² / n, psnr = 10 log10(1 / mse) dB (peak 1.0); identical outputs give psnr = +INFINITY.
 * n = 0 gives NAN for everything.
 */
#ifndef CKEY_QA_H
#define CKEY_QA_H

#include "ckey.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- plates ---- */

enum { CK_PLATE_MIN_DIM = 16, CK_PLATE_HINT_CELL = 8 };

typedef struct ck_plate_params {
    int      width, height; /* pixels, >= CK_PLATE_MIN_DIM */
    uint64_t seed;          /* the plate set */
    int      index;         /* plate number in the set: (seed, index) fixes every pixel */
    int      hint_erode;    /* px >= 0: grey erosion of the hint */
    int      hint_dilate;   /* px >= 0: grey dilation of the hint, after the erosion */
    float    noise;         /* bound of the triangular noise on sRGB values; default 2/255 */
    float    spill;         /* 0..1 green spill strength at the outline; default 0.35 */
} ck_plate_params;

ck_plate_params ck_plate_params_default(void); /* 2048×2048, seed 1, index 0 */

typedef struct ck_plate {
    int    width, height;
    float *rgb;     /* (h, w, 3) the plate, sRGB-encoded, [0, 1] */
    float *alpha;   /* (h, w) truth coverage, linear, [0, 1] */
    float *fg;      /* (h, w, 3) truth straight foreground, sRGB-encoded, [0, 1]; 0 where alpha = 0 */
    float *screen;  /* (h, w, 3) the screen behind the subject, linear light */
    float *hint;    /* (h, w) 8× down/up-sampled truth alpha, eroded/dilated as asked */
    float *scratch; /* (h, w) + (ceil(h/8), ceil(w/8)) floats for the hint */
} ck_plate;

/* Allocates every buffer once for w×h plates (generation itself allocates nothing). */
ck_status ck_plate_alloc(ck_plate *pl, int w, int h);
void      ck_plate_free(ck_plate *pl);

/* Fills pl (allocated at pp's size) with plate `pp->index` of set `pp->seed`. CK_STATUS_EINVAL for a size
 * mismatch or out-of-range parameters. */
ck_status ck_plate_generate(ck_plate *pl, const ck_plate_params *pp);

/* Parses "WxH" (decimal, each in [CK_PLATE_MIN_DIM, 32768]); 1 on success. */
int ck_plate_parse_size(const char *s, int *w, int *h);

/* The hint rule above on any alpha (h, w) into hint (h, w); scratch holds ck_plate_hint_scratch_floats. */
size_t ck_plate_hint_scratch_floats(int w, int h);
void   ck_plate_hint(float *hint, const float *alpha, int w, int h, int erode, int dilate, float *scratch);

/* ---- scores ---- */

typedef struct ck_score {
    size_t n, edge_n, fg_n, fg_solid_n;
    double sum_abs, sum_sq, max_abs, edge_sum_abs, fg_sum_abs, fg_solid_sum_abs;
} ck_score;

/* fg_mae over every pixel with truth alpha > 0, split into the opaque ones (truth alpha = 1: fg_solid_mae)
 * and the rest (0 < truth alpha < 1: fg_edge_mae), where the plate holds only part of the foreground. */
typedef struct ck_score_summary {
    size_t n, edge_n, fg_n, fg_solid_n;
    double mae, max_err, mse, edge_mae, fg_mae, fg_solid_mae, fg_edge_mae;
} ck_score_summary;

/* alpha, truth_alpha: (n_pixels); fg, truth_fg: (n_pixels, 3) or both NULL (alpha only). */
void             ck_score_add(ck_score *s, const float *alpha, const float *fg, const float *truth_alpha,
                              const float *truth_fg, size_t n_pixels);
ck_score_summary ck_score_finish(const ck_score *s);

typedef struct ck_agree {
    size_t n;
    double sum_abs, sum_sq, max_abs;
} ck_agree;

typedef struct ck_agree_summary {
    size_t n;
    double max_diff, mean_diff, mse, psnr;
} ck_agree_summary;

/* a, b: n values each (any layout, compared element by element). */
void             ck_agree_add(ck_agree *g, const float *a, const float *b, size_t n);
ck_agree_summary ck_agree_finish(const ck_agree *g);

#ifdef __cplusplus
}
#endif

#endif /* CKEY_QA_H */
