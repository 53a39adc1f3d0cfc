/* Scores of a key against exact ground truth, and agreement between two keys (`ckey quality`).
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
#ifndef CK_METRICS_H
#define CK_METRICS_H

#include <stddef.h>

typedef struct ck_score {
    size_t n, edge_n, fg_n;
    double sum_abs, sum_sq, max_abs, edge_sum_abs, fg_sum_abs;
} ck_score;

typedef struct ck_score_summary {
    size_t n, edge_n, fg_n;
    double mae, max_err, mse, edge_mae, fg_mae;
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

#endif
