/* `ckey bench --sweep` definitions (tools/ckey/sweep.c) against the seed benchmarks
 * (scripts/bench_optimizations.py as described in docs): counts, order and labels of the ablation, key,
 * full and isolate sweeps, the CPU's dropped toggles, the toggle -> ck_params mapping, the median and
 * p95 rules on hand-computed cases, the relative columns and the report's shape. */
#include "harness.h"
#include "sweep.h"

#include <math.h>

#define SEED6 ((1u << CK_TOG_SLIM) | (1u << CK_TOG_STAGE_GC) | (1u << CK_TOG_SDPA) | (1u << CK_TOG_BF16) | \
               (1u << CK_TOG_FUSED_DECODE) | (1u << CK_TOG_GPU_PREPROCESS))

static char g_labels[300][160];

static int labels(ck_sweep_kind k, unsigned avail) {
    unsigned m[300];
    int      n = ck_sweep_configs(k, avail, m, 300);
    for (int i = 0; i < n && i < 300; i++) ck_sweep_label(m[i], g_labels[i], sizeof g_labels[i]);
    return n;
}

static void test_seed_sweeps(void) {
    /* ablation over the seed's six toggles: the wave-2 run order */
    static const char *ablation[8] = {
        "slim+stage_gc+sdpa+bf16+fused_decode+gpu_preprocess", "stage_gc+sdpa+bf16+fused_decode+gpu_preprocess",
        "slim+sdpa+bf16+fused_decode+gpu_preprocess",           "slim+stage_gc+bf16+fused_decode+gpu_preprocess",
        "slim+stage_gc+sdpa+fused_decode+gpu_preprocess",       "slim+stage_gc+sdpa+bf16+gpu_preprocess",
        "slim+stage_gc+sdpa+bf16+fused_decode",                 "baseline"};
    int n = labels(CK_SWEEP_ABLATION, SEED6);
    CHECK_MSG(n == 8, "ablation over 6 toggles: %d rows", n);
    for (int i = 0; i < 8 && i < n; i++) CHECK_MSG(!strcmp(g_labels[i], ablation[i]), "ablation %d: %s", i, g_labels[i]);

    /* key: the seed's six configurations in its order */
    static const char *key[6] = {"baseline", "bf16+fused_decode", "slim+stage_gc+sdpa+gpu_preprocess",
                                 "slim+stage_gc+sdpa+bf16+fused_decode+gpu_preprocess", "sdpa", "stage_gc"};
    n = labels(CK_SWEEP_KEY, SEED6);
    CHECK_MSG(n == 6, "key: %d rows", n);
    for (int i = 0; i < 6 && i < n; i++) CHECK_MSG(!strcmp(g_labels[i], key[i]), "key %d: %s", i, g_labels[i]);

    /* full: 2^6, itertools.product([True, False], repeat=6) order */
    n = labels(CK_SWEEP_FULL, SEED6);
    CHECK_MSG(n == 64, "full: %d rows", n);
    CHECK(!strcmp(g_labels[0], ablation[0]));
    CHECK(!strcmp(g_labels[1], "slim+stage_gc+sdpa+bf16+fused_decode"));
    CHECK(!strcmp(g_labels[2], "slim+stage_gc+sdpa+bf16+gpu_preprocess"));
    CHECK(!strcmp(g_labels[32], "stage_gc+sdpa+bf16+fused_decode+gpu_preprocess"));
    CHECK(!strcmp(g_labels[63], "baseline"));
    int distinct = 1;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) distinct &= strcmp(g_labels[i], g_labels[j]) != 0;
    CHECK_MSG(distinct, "full sweep repeats a configuration");

    /* isolate: all off, then each alone */
    n = labels(CK_SWEEP_ISOLATE, SEED6);
    CHECK(n == 7 && !strcmp(g_labels[0], "baseline") && !strcmp(g_labels[1], "slim") && !strcmp(g_labels[4], "bf16") &&
          !strcmp(g_labels[6], "gpu_preprocess"));
}

static void test_ckey_toggles(void) {
    /* every toggle (8): ablation n + 2, full 2^n; compile and pad64 follow the seed's six */
    int n = labels(CK_SWEEP_ABLATION, CK_TOG_ALL);
    CHECK_MSG(n == CK_TOG_COUNT + 2, "ablation over all toggles: %d rows", n);
    CHECK(!strcmp(g_labels[0], "slim+stage_gc+sdpa+bf16+fused_decode+gpu_preprocess+compile+pad64"));
    CHECK(!strcmp(g_labels[7], "slim+stage_gc+sdpa+bf16+fused_decode+gpu_preprocess+pad64"));
    CHECK(!strcmp(g_labels[8], "slim+stage_gc+sdpa+bf16+fused_decode+gpu_preprocess+compile"));
    CHECK(!strcmp(g_labels[9], "baseline"));
    CHECK(labels(CK_SWEEP_FULL, CK_TOG_ALL) == 256);
    CHECK(labels(CK_SWEEP_ISOLATE, CK_TOG_ALL) == CK_TOG_COUNT + 1);
    /* key: ckey's extra toggles are on in the all-on row only */
    n = labels(CK_SWEEP_KEY, CK_TOG_ALL);
    CHECK(n == 6 && !strcmp(g_labels[3], "slim+stage_gc+sdpa+bf16+fused_decode+gpu_preprocess+compile+pad64") &&
          !strcmp(g_labels[1], "bf16+fused_decode"));

    /* the CPU: bf16, compile and gpu_preprocess dropped */
    const unsigned cpu = CK_TOG_ALL & ~CK_TOG_GPU_ONLY;
    n = labels(CK_SWEEP_ABLATION, cpu);
    CHECK_MSG(n == 5 + 2, "CPU ablation: %d rows", n);
    CHECK(!strcmp(g_labels[0], "slim+stage_gc+sdpa+fused_decode+pad64"));
    n = labels(CK_SWEEP_KEY, cpu);
    CHECK(n == 6 && !strcmp(g_labels[1], "fused_decode") && !strcmp(g_labels[2], "slim+stage_gc+sdpa") &&
          !strcmp(g_labels[3], "slim+stage_gc+sdpa+fused_decode+pad64"));
    CHECK(labels(CK_SWEEP_FULL, cpu) == 32);

    /* a restricted set: rows that coincide after dropping toggles run once */
    n = labels(CK_SWEEP_KEY, 1u << CK_TOG_SDPA);
    CHECK_MSG(n == 2 && !strcmp(g_labels[0], "baseline") && !strcmp(g_labels[1], "sdpa"), "key over sdpa: %d rows", n);
    CHECK(labels(CK_SWEEP_ABLATION, 0) == 1);

    /* names */
    CHECK(ck_toggle_parse("fused_decode") == CK_TOG_FUSED_DECODE && ck_toggle_parse("nope") == -1);
    ck_sweep_kind k;
    CHECK(ck_sweep_parse("isolate", &k) && k == CK_SWEEP_ISOLATE && !ck_sweep_parse("abl", &k));
}

static void test_apply(void) {
    ck_params p = ck_params_default();
    ck_sweep_apply(0, CK_TOG_ALL, CK_PREC_FP16, &p);
    CHECK(p.keep_intermediates == 1 && p.stage_gc == 0 && p.fused_attention == 0 && p.precision == CK_PREC_FP32 &&
          p.fused_decode == 0 && p.gpu_preprocess == 0 && p.cuda_graph == 0 && p.pad64 == 0);
    ck_sweep_apply(CK_TOG_ALL, CK_TOG_ALL, CK_PREC_BF16, &p);
    CHECK(p.keep_intermediates == 0 && p.stage_gc == 1 && p.fused_attention == 1 && p.precision == CK_PREC_BF16 &&
          p.fused_decode == 1 && p.gpu_preprocess == 1 && p.cuda_graph == 1 && p.pad64 == 1);
    /* toggles outside avail keep their values */
    ck_params q = ck_params_default();
    ck_sweep_apply(0, 1u << CK_TOG_SDPA, CK_PREC_FP16, &q);
    ck_params d = ck_params_default();
    CHECK(q.fused_attention == 0 && q.precision == d.precision && q.cuda_graph == d.cuda_graph && q.pad64 == d.pad64);
}

static void test_stats(void) {
    double odd[5] = {5, 1, 4, 2, 3};
    CHECK(ck_sweep_median(odd, 5) == 3.0);
    double odd2[5] = {5, 1, 4, 2, 3};
    CHECK(ck_sweep_median_upper(odd2, 5) == 3.0);
    double even[4] = {4, 1, 3, 2};
    CHECK(ck_sweep_median(even, 4) == 2.5); /* mean of the two middle values */
    double even2[4] = {4, 1, 3, 2};
    CHECK(ck_sweep_median_upper(even2, 4) == 3.0); /* the seed's sorted[n // 2] */
    double ten[10] = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
    CHECK(ck_sweep_median(ten, 10) == 5.5);
    CHECK(ck_sweep_median_upper(ten, 10) == 6.0); /* "the 6th-smallest value" with n = 10 */
    CHECK(ck_sweep_p95(ten, 10) == 10.0);         /* ceil(9.5) - 1 = 9 */
    CHECK(ck_sweep_min(ten, 10) == 1.0);
    double twenty[20];
    for (int i = 0; i < 20; i++) twenty[i] = 20 - i; /* 1..20 */
    CHECK(ck_sweep_p95(twenty, 20) == 19.0);        /* ceil(19) - 1 = 18 -> 19 */
    double one[1] = {7};
    CHECK(ck_sweep_median(one, 1) == 7 && ck_sweep_p95(one, 1) == 7);
    double three[3] = {3, 1, 2};
    CHECK(ck_sweep_p95(three, 3) == 3.0); /* ceil(2.85) - 1 = 2 */
}

static void test_relative_and_report(void) {
    ck_sweep_row r[4];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 4; i++) r[i].res = 512, r[i].ok = 1;
    snprintf(r[0].label, sizeof r[0].label, "slim");
    snprintf(r[1].label, sizeof r[1].label, "baseline");
    snprintf(r[2].label, sizeof r[2].label, "tiled 256/32 (9 tiles)");
    r[2].tile = 256, r[2].overlap = 32, r[2].tiles = 9;
    r[3].res = 1024;
    snprintf(r[3].label, sizeof r[3].label, "sdpa");
    r[0].median_ms = 50, r[0].peak_mib = 100;
    r[1].median_ms = 100, r[1].peak_mib = 200;
    r[2].median_ms = 200, r[2].peak_mib = 50;
    r[3].median_ms = 10, r[3].peak_mib = 10;
    ck_sweep_relative(r, 4);
    CHECK(r[0].speed_vs_base == 2.0 && r[0].mem_vs_base == 0.5);
    CHECK(r[1].speed_vs_base == 1.0 && r[2].speed_vs_base == 0.5 && r[2].mem_vs_base == 0.25);
    CHECK(r[3].speed_vs_base == 1.0 && r[3].mem_vs_base == 1.0); /* no baseline at 1024: its first row */

    ck_sweep_header h = {"ablation", "2026-01-01", "cpu", "test CPU", "abc", "random:tiny", 1, 3, 10, "n/a", "rss",
                         CK_TOG_ALL & ~CK_TOG_GPU_ONLY, CK_TOG_GPU_ONLY, 2};
    char   *buf = NULL;
    size_t  len = 0;
    FILE   *f   = open_memstream(&buf, &len);
    ck_sweep_write_md(f, &h, r, 4);
    fclose(f);
    CHECK(strstr(buf, "### 512×512") && strstr(buf, "### 1024×1024") && strstr(buf, "| baseline | ") &&
          strstr(buf, "mean of the two middle values") && strstr(buf, "sorted[n//2]") &&
          strstr(buf, "dropped: bf16, gpu_preprocess, compile") && strstr(buf, "random weights"));
    free(buf);
    f = open_memstream(&buf, &len);
    ck_sweep_write_json(f, &h, r, 4);
    fclose(f);
    int lines = 0;
    for (char *s = buf; (s = strstr(s, "{\"res\": ")); s++) lines++;
    CHECK_MSG(lines == 4, "%d JSON rows", lines);
    CHECK(strstr(buf, "\"mode\": \"tiled\", \"tile\": 256, \"overlap\": 32, \"tiles\": 9") &&
          strstr(buf, "\"median_upper_ms\"") && strstr(buf, "\"header\": {\"sweep\": \"ablation\""));
    free(buf);
}

int main(void) {
    test_seed_sweeps();
    test_ckey_toggles();
    test_apply();
    test_stats();
    test_relative_and_report();
    return test_summary();
}
