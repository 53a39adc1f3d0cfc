/* Key scores and agreement (include/ckey_qa.h: the definitions). */
#include "ckey_qa.h"

#include "core/check.h"

#include <math.h>

/* max that keeps a NaN once seen (a plain `d > m` would skip it) */
static double max_nan(double m, double d) { return isnan(m) || isnan(d) ? NAN : d > m ? d : m; }

void ck_score_add(ck_score *s, const float *alpha, const float *fg, const float *truth_alpha, const float *truth_fg,
                  size_t n_pixels) {
    CK_ASSERT(s && alpha && truth_alpha && (fg == NULL) == (truth_fg == NULL));
    for (size_t i = 0; i < n_pixels; i++) {
        const double t = truth_alpha[i], e = fabs((double)alpha[i] - t);
        s->sum_abs += e;
        s->sum_sq += e * e;
        s->max_abs = s->n + i == 0 ? e : max_nan(s->max_abs, e);
        if (t > 0.0 && t < 1.0) {
            s->edge_sum_abs += e;
            s->edge_n++;
        }
        if (fg && t > 0.0) {
            double f = 0.0;
            for (int c = 0; c < 3; c++) f += fabs((double)fg[3 * i + c] - truth_fg[3 * i + c]);
            s->fg_sum_abs += f;
            s->fg_n++;
            if (t >= 1.0) s->fg_solid_sum_abs += f, s->fg_solid_n++;
        }
    }
    s->n += n_pixels;
}

ck_score_summary ck_score_finish(const ck_score *s) {
    ck_score_summary r;
    r.n = s->n, r.edge_n = s->edge_n, r.fg_n = s->fg_n, r.fg_solid_n = s->fg_solid_n;
    r.mae      = s->n ? s->sum_abs / (double)s->n : NAN;
    r.mse      = s->n ? s->sum_sq / (double)s->n : NAN;
    r.max_err  = s->n ? s->max_abs : NAN;
    r.edge_mae = s->edge_n ? s->edge_sum_abs / (double)s->edge_n : NAN;
    r.fg_mae   = s->fg_n ? s->fg_sum_abs / (3.0 * (double)s->fg_n) : NAN;
    r.fg_solid_mae = s->fg_solid_n ? s->fg_solid_sum_abs / (3.0 * (double)s->fg_solid_n) : NAN;
    r.fg_edge_mae  = s->fg_n > s->fg_solid_n
                         ? (s->fg_sum_abs - s->fg_solid_sum_abs) / (3.0 * (double)(s->fg_n - s->fg_solid_n))
                         : NAN;
    return r;
}

void ck_agree_add(ck_agree *g, const float *a, const float *b, size_t n) {
    CK_ASSERT(g && (n == 0 || (a && b)));
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - b[i]);
        g->sum_abs += d;
        g->sum_sq += d * d;
        g->max_abs = g->n + i == 0 ? d : max_nan(g->max_abs, d);
    }
    g->n += n;
}

ck_agree_summary ck_agree_finish(const ck_agree *g) {
    ck_agree_summary r;
    r.n         = g->n;
    r.max_diff  = g->n ? g->max_abs : NAN;
    r.mean_diff = g->n ? g->sum_abs / (double)g->n : NAN;
    r.mse       = g->n ? g->sum_sq / (double)g->n : NAN;
    r.psnr      = !g->n ? NAN : r.mse == 0.0 ? INFINITY : 10.0 * log10(1.0 / r.mse);
    return r;
}
