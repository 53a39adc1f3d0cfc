/* Minimal test harness: loud per-check output, one verdict, non-zero exit on failure.
 *
 *     int main(void) {
 *         CHECK(x == 3);
 *         check_close("alpha", got, ref, n, 1e-5f, 0.0f);
 *         return test_summary();
 *     }
 */
#ifndef CK_TEST_HARNESS_H
#define CK_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_checks, g_failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        g_checks++;                                                                  \
        if (!(cond)) {                                                               \
            g_failures++;                                                            \
            fprintf(stderr, "NOT OK %s:%d: %s\n", __FILE__, __LINE__, #cond);      \
        }                                                                            \
    } while (0)

#define CHECK_MSG(cond, ...)                                                         \
    do {                                                                             \
        g_checks++;                                                                  \
        if (!(cond)) {                                                               \
            g_failures++;                                                            \
            fprintf(stderr, "NOT OK %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
        }                                                                            \
    } while (0)

/* Element-wise |got - ref| <= atol + rtol*|ref|; non-finite values fail unless both match.
 * Prints max-abs, mean-abs and the share of the tolerance used. Returns max-abs. */
static double check_close(const char *what, const float *got, const float *ref, size_t n, double atol,
                          double rtol) {
    double max_abs = 0, sum_abs = 0, worst_ratio = 0;
    size_t bad = 0, first_bad = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i];
        if (!isfinite(g) || !isfinite(r)) {
            if (!(isnan(g) && isnan(r)) && g != r) {
                if (first_bad == (size_t)-1) first_bad = i;
                bad++;
            }
            continue;
        }
        double d   = fabs(g - r);
        double tol = atol + rtol * fabs(r);
        sum_abs += d;
        if (d > max_abs) max_abs = d;
        if (tol > 0 && d / tol > worst_ratio) worst_ratio = d / tol;
        if (d > tol) {
            if (first_bad == (size_t)-1) first_bad = i;
            bad++;
        }
    }
    g_checks++;
    printf("%-6s %-28s n=%zu max_abs=%.3e mean_abs=%.3e tol_used=%.1f%%\n", bad ? "NOT OK" : "OK", what, n,
           max_abs, n ? sum_abs / (double)n : 0.0, worst_ratio * 100.0);
    if (bad) {
        g_failures++;
        printf("       %zu elements out of tolerance; first at %zu: got %.8g ref %.8g\n", bad, first_bad,
               (double)got[first_bad], (double)ref[first_bad]);
    }
    return max_abs;
}

static int test_summary(void) {
    printf("%s: %d checks, %d failures\n", g_failures ? "FAIL" : "PASS", g_checks, g_failures);
    return g_failures ? 1 : 0;
}

/* Environment path helper: $VAR/name into buf. */
static const char *test_path(char *buf, size_t n, const char *var, const char *name) {
    const char *d = getenv(var);
    snprintf(buf, n, "%s/%s", d ? d : ".", name);
    return buf;
}

#endif
