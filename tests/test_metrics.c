/* Key scores and agreement (src/qa/metrics.c) on hand-computed cases: every metric, an empty edge band,
 * pooling over several adds, NaN propagation, identical outputs (PSNR inf) and empty inputs. */
#include "harness.h"
#include "ckey_qa.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-12)

int main(void) {
    /* 1. alpha and fg: values exact in binary so the expected sums are exact */
    {
        const float alpha[4] = {0.0f, 0.5f, 1.0f, 0.25f}, truth[4] = {0.0f, 1.0f, 1.0f, 0.5f};
        /* e = 0, 0.5, 0, 0.25: mae 0.1875, max 0.5, mse (0.25 + 0.0625) / 4; edge band = pixel 3 only */
        const float fg[12]  = {0.9f, 0.9f, 0.9f, 0.5f, 0.5f, 0.5f, 0.25f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f};
        const float tfg[12] = {0.0f, 0.0f, 0.0f, 0.5f, 0.75f, 0.5f, 0.25f, 0.5f, 1.0f, 0.125f, 0.125f, 0.125f};
        /* fg over truth alpha > 0 (pixels 1-3): |diff| sums 0.25, 0.5, 0.375 -> 1.125 / 9 = 0.125 (pixel 0 ignored) */
        ck_score s = {0};
        ck_score_add(&s, alpha, fg, truth, tfg, 4);
        const ck_score_summary r = ck_score_finish(&s);
        CHECK(r.n == 4 && r.edge_n == 1 && r.fg_n == 3);
        CHECK_MSG(NEAR(r.mae, 0.1875), "mae %.17g", r.mae);
        CHECK_MSG(NEAR(r.max_err, 0.5), "max %.17g", r.max_err);
        CHECK_MSG(NEAR(r.mse, 0.078125), "mse %.17g", r.mse);
        CHECK_MSG(NEAR(r.edge_mae, 0.25), "edge mae %.17g", r.edge_mae);
        CHECK_MSG(NEAR(r.fg_mae, 0.125), "fg mae %.17g", r.fg_mae);
        /* split: pixels 1 and 2 are opaque ((0.25 + 0.5) / 6), pixel 3 partly covered (0.375 / 3) */
        CHECK(r.fg_solid_n == 2);
        CHECK_MSG(NEAR(r.fg_solid_mae, 0.125), "fg solid mae %.17g", r.fg_solid_mae);
        CHECK_MSG(NEAR(r.fg_edge_mae, 0.125), "fg edge mae %.17g", r.fg_edge_mae);

        /* pooling: two adds equal one add of the concatenation */
        ck_score p = {0};
        ck_score_add(&p, alpha, fg, truth, tfg, 2);
        ck_score_add(&p, alpha + 2, fg + 6, truth + 2, tfg + 6, 2);
        const ck_score_summary q = ck_score_finish(&p);
        CHECK(q.n == 4 && q.edge_n == 1 && q.fg_n == 3 && NEAR(q.mae, r.mae) && NEAR(q.max_err, r.max_err) &&
              NEAR(q.mse, r.mse) && NEAR(q.edge_mae, r.edge_mae) && NEAR(q.fg_mae, r.fg_mae));
    }
    /* 2. empty edge band (truth only 0 and 1), no fg, exact key */
    {
        const float truth[3] = {0.0f, 1.0f, 1.0f}, alpha[3] = {0.0f, 1.0f, 0.75f};
        ck_score    s = {0};
        ck_score_add(&s, alpha, NULL, truth, NULL, 3);
        const ck_score_summary r = ck_score_finish(&s);
        CHECK(r.edge_n == 0 && isnan(r.edge_mae));
        CHECK(r.fg_n == 0 && isnan(r.fg_mae));
        CHECK(NEAR(r.mae, 0.25 / 3) && NEAR(r.max_err, 0.25) && NEAR(r.mse, 0.0625 / 3));
        ck_score z = {0};
        ck_score_add(&z, truth, NULL, truth, NULL, 3);
        const ck_score_summary e = ck_score_finish(&z);
        CHECK(e.mae == 0.0 && e.max_err == 0.0 && e.mse == 0.0);
        const ck_score_summary none = ck_score_finish(&(ck_score){0});
        CHECK(none.n == 0 && isnan(none.mae) && isnan(none.max_err) && isnan(none.mse));
    }
    /* 3. a NaN in the output poisons mae, mse and max (also when it is not the first pixel) */
    {
        const float truth[3] = {0.5f, 0.5f, 0.5f}, alpha[3] = {0.5f, NAN, 0.9f};
        ck_score    s = {0};
        ck_score_add(&s, alpha, NULL, truth, NULL, 3);
        const ck_score_summary r = ck_score_finish(&s);
        CHECK(isnan(r.mae) && isnan(r.mse) && isnan(r.max_err) && isnan(r.edge_mae));
    }
    /* 4. agreement */
    {
        const float a[4] = {0.0f, 1.0f, 0.25f, 0.5f}, b[4] = {0.5f, 1.0f, 0.25f, 0.5f};
        ck_agree    g = {0};
        ck_agree_add(&g, a, a, 4);
        ck_agree_summary r = ck_agree_finish(&g);
        CHECK(r.n == 4 && r.max_diff == 0.0 && r.mean_diff == 0.0 && r.mse == 0.0 && isinf(r.psnr) && r.psnr > 0);
        g = (ck_agree){0};
        ck_agree_add(&g, a, b, 4); /* diffs 0.5, 0, 0, 0: mse 0.0625, PSNR 10 log10(16) */
        r = ck_agree_finish(&g);
        CHECK_MSG(NEAR(r.max_diff, 0.5) && NEAR(r.mean_diff, 0.125) && NEAR(r.mse, 0.0625), "max %g mean %g mse %g",
                  r.max_diff, r.mean_diff, r.mse);
        CHECK_MSG(fabs(r.psnr - 12.041199826559248) < 1e-9, "psnr %.15g", r.psnr);
        g = (ck_agree){0};
        ck_agree_add(&g, a, b, 2);
        ck_agree_add(&g, a + 2, b + 2, 2);
        const ck_agree_summary p = ck_agree_finish(&g);
        CHECK(NEAR(p.mse, r.mse) && NEAR(p.max_diff, r.max_diff) && NEAR(p.psnr, r.psnr));
        /* mse 0.01 -> 20 dB (0.1f is not exact: within float rounding) */
        const float x = 0.1f, y = 0.0f;
        g = (ck_agree){0};
        ck_agree_add(&g, &x, &y, 1);
        CHECK(fabs(ck_agree_finish(&g).psnr - 20.0) < 1e-5);
        const ck_agree_summary e = ck_agree_finish(&(ck_agree){0});
        CHECK(e.n == 0 && isnan(e.psnr) && isnan(e.mean_diff) && isnan(e.max_diff));
        const float n1[2] = {0.0f, NAN};
        g = (ck_agree){0};
        ck_agree_add(&g, n1, b, 2);
        r = ck_agree_finish(&g);
        CHECK(isnan(r.max_diff) && isnan(r.psnr));
    }
    return test_summary();
}
