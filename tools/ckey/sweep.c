/* Sweep definitions, statistics and the report of `ckey bench --sweep` (see sweep.h). */
#include "sweep.h"
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const TOGGLES[CK_TOG_COUNT] = {"slim",         "stage_gc",       "sdpa",    "bf16",
                                                  "fused_decode", "gpu_preprocess", "compile", "pad64"};

const char *ck_toggle_name(int t) { return t >= 0 && t < CK_TOG_COUNT ? TOGGLES[t] : "?"; }

int ck_toggle_parse(const char *name) {
    for (int t = 0; name && t < CK_TOG_COUNT; t++)
        if (!strcmp(name, TOGGLES[t])) return t;
    return -1;
}

static const char *const SWEEPS[] = {"ablation", "key", "full", "isolate"};

int ck_sweep_parse(const char *name, ck_sweep_kind *out) {
    for (int k = 0; name && k < 4; k++)
        if (!strcmp(name, SWEEPS[k])) {
            *out = (ck_sweep_kind)k;
            return 1;
        }
    return 0;
}

const char *ck_sweep_name(ck_sweep_kind k) { return (unsigned)k < 4 ? SWEEPS[k] : "?"; }

#define BIT(t) (1u << (t))

/* Appends mask unless an earlier configuration already is the same (after dropping toggles). */
static void push(unsigned *masks, int cap, int *n, unsigned mask) {
    for (int i = 0; i < *n && i < cap; i++)
        if (masks[i] == mask) return;
    if (*n < cap) masks[*n] = mask;
    (*n)++;
}

int ck_sweep_configs(ck_sweep_kind k, unsigned avail, unsigned *masks, int cap) {
    avail &= CK_TOG_ALL;
    int idx[CK_TOG_COUNT], na = 0, n = 0;
    for (int t = 0; t < CK_TOG_COUNT; t++)
        if (avail & BIT(t)) idx[na++] = t;
    switch (k) {
    case CK_SWEEP_ABLATION:
        push(masks, cap, &n, avail);
        for (int j = 0; j < na; j++) push(masks, cap, &n, avail & ~BIT(idx[j]));
        push(masks, cap, &n, 0);
        break;
    case CK_SWEEP_KEY: {
        /* the seed's list: wave 1 baseline, wave 1, wave 2 only, all-on, sdpa only, stage_gc only */
        const unsigned key[6] = {0,
                                 BIT(CK_TOG_BF16) | BIT(CK_TOG_FUSED_DECODE),
                                 BIT(CK_TOG_SLIM) | BIT(CK_TOG_STAGE_GC) | BIT(CK_TOG_SDPA) | BIT(CK_TOG_GPU_PREPROCESS),
                                 CK_TOG_ALL,
                                 BIT(CK_TOG_SDPA),
                                 BIT(CK_TOG_STAGE_GC)};
        for (int i = 0; i < 6; i++) push(masks, cap, &n, key[i] & avail);
        break;
    }
    case CK_SWEEP_FULL:
        /* itertools.product([True, False], repeat=na): the first toggle is the slowest-changing digit */
        for (unsigned c = 0; c < (1u << na); c++) {
            unsigned m = 0;
            for (int j = 0; j < na; j++)
                if (!(c & (1u << (na - 1 - j)))) m |= BIT(idx[j]);
            push(masks, cap, &n, m);
        }
        break;
    case CK_SWEEP_ISOLATE:
        push(masks, cap, &n, 0);
        for (int j = 0; j < na; j++) push(masks, cap, &n, BIT(idx[j]));
        break;
    }
    return n;
}

void ck_sweep_label(unsigned mask, char *buf, size_t n) {
    size_t o = 0;
    buf[0]   = '\0';
    for (int t = 0; t < CK_TOG_COUNT; t++)
        if (mask & BIT(t)) {
            int w = snprintf(buf + o, o < n ? n - o : 0, "%s%s", o ? "+" : "", TOGGLES[t]);
            o += w > 0 ? (size_t)w : 0;
        }
    if (!o) snprintf(buf, n, "baseline");
}

void ck_sweep_apply(unsigned mask, unsigned avail, ck_precision half, ck_params *p) {
#define ON(t) ((mask & BIT(t)) != 0)
    if (avail & BIT(CK_TOG_SLIM)) p->keep_intermediates = !ON(CK_TOG_SLIM);
    if (avail & BIT(CK_TOG_STAGE_GC)) p->stage_gc = ON(CK_TOG_STAGE_GC);
    if (avail & BIT(CK_TOG_SDPA)) p->fused_attention = ON(CK_TOG_SDPA);
    if (avail & BIT(CK_TOG_BF16)) p->precision = ON(CK_TOG_BF16) ? half : CK_PREC_FP32;
    if (avail & BIT(CK_TOG_FUSED_DECODE)) p->fused_decode = ON(CK_TOG_FUSED_DECODE);
    if (avail & BIT(CK_TOG_GPU_PREPROCESS)) p->gpu_preprocess = ON(CK_TOG_GPU_PREPROCESS);
    if (avail & BIT(CK_TOG_COMPILE)) p->cuda_graph = ON(CK_TOG_COMPILE);
    if (avail & BIT(CK_TOG_PAD64)) p->pad64 = ON(CK_TOG_PAD64);
#undef ON
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double ck_sweep_median(double *v, int n) {
    if (n < 1) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double ck_sweep_median_upper(double *v, int n) {
    if (n < 1) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

double ck_sweep_p95(double *v, int n) {
    if (n < 1) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    const int i = (int)ceil(0.95 * n) - 1;
    return v[i < 0 ? 0 : i];
}

double ck_sweep_min(const double *v, int n) {
    double m = n > 0 ? v[0] : NAN;
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

void ck_sweep_relative(ck_sweep_row *rows, int n) {
    for (int i = 0; i < n; i++) {
        const ck_sweep_row *base = NULL;
        for (int j = 0; j < n && !base; j++) /* the all-off full-frame row of this resolution */
            if (rows[j].res == rows[i].res && rows[j].ok && !rows[j].tile && !strcmp(rows[j].label, "baseline"))
                base = &rows[j];
        for (int j = 0; j < n && !base; j++)
            if (rows[j].res == rows[i].res && rows[j].ok) base = &rows[j];
        rows[i].speed_vs_base = rows[i].ok && base && rows[i].median_ms > 0 ? base->median_ms / rows[i].median_ms : 0;
        rows[i].mem_vs_base   = rows[i].ok && base && base->peak_mib > 0 ? rows[i].peak_mib / base->peak_mib : 0;
    }
}

/* ---- report ---- */

static void toggle_list(char *buf, size_t n, unsigned mask) {
    size_t o = 0;
    buf[0]   = '\0';
    for (int t = 0; t < CK_TOG_COUNT; t++)
        if (mask & BIT(t)) {
            int w = snprintf(buf + o, o < n ? n - o : 0, "%s%s", o ? ", " : "", TOGGLES[t]);
            o += w > 0 ? (size_t)w : 0;
        }
    if (!o) snprintf(buf, n, "none");
}

void ck_sweep_write_md(FILE *f, const ck_sweep_header *h, const ck_sweep_row *rows, int n) {
    char on[256], dropped[256];
    toggle_list(on, sizeof on, h->avail);
    toggle_list(dropped, sizeof dropped, h->dropped);
    fprintf(f, "## ckey bench --sweep %s\n\n", h->sweep);
    fprintf(f, "- date: %s\n- device: %s (%s)", h->date, h->device, h->device_name);
    if (!strcmp(h->device, "cpu") && h->threads) fprintf(f, ", %d threads", h->threads);
    else if (!strcmp(h->device, "cpu")) fprintf(f, ", all cores");
    fprintf(f, "\n- commit: %s\n", h->commit);
    if (h->random_weights) fprintf(f, "- checkpoint: random weights (%s, fixed seed)\n", h->checkpoint);
    else fprintf(f, "- checkpoint: %s\n", h->checkpoint);
    fprintf(f, "- runs: %d warm-up (the first, right after load, timed alone as \"First\"), then %d timed\n",
            h->warmup, h->runs);
    fprintf(f, "- toggles swept: %s", on);
    if (h->dropped) fprintf(f, "; not available on this device, dropped: %s", dropped);
    fprintf(f, "; toggles not swept keep ckey's defaults\n");
    if (h->avail & BIT(CK_TOG_BF16)) fprintf(f, "- \"bf16\" on = %s activations (off = fp32)\n", h->half);
    fprintf(f, "- timed per frame: pre-processing of a %s frame + network + device sync; tiled rows: "
               "ck_key_image on the frame (tiles, blending; despill, despeckle and comp off)\n",
            "structured RGB + hint");
    fprintf(f, "- Median: mean of the two middle values for even n (the seed scripts took sorted[n//2], the upper "
               "middle: median_upper_ms in the JSON); P95: sorted[ceil(0.95·n) − 1]\n");
    if (!strcmp(h->device, "cuda"))
        fprintf(f, "- a throwaway random:tiny frame before the first row takes the process's one-time CUDA start-up "
                   "out of that row's First\n");
    fprintf(f, "- Peak: %s, MiB, of a fresh context per row\n",
            !strcmp(h->peak_kind, "device") ? "device memory peak (ck_ctx_device_peak_bytes)"
                                            : "peak RSS of the row's own process (weights, activations, frame buffers, "
                                              "process baseline)");
    fprintf(f, "- Speed / Mem vs baseline: baseline median ÷ median, peak ÷ baseline peak (baseline = all toggles "
               "off at that resolution, else its first row)\n");
    int res = -1;
    for (int i = 0; i < n; i++) {
        const ck_sweep_row *r = &rows[i];
        if (r->res != res) {
            res = r->res;
            fprintf(f, "\n### %d×%d\n\n", res, res);
            fprintf(f, "| Config | First (ms) | Median (ms) | Min (ms) | P95 (ms) | Peak (MiB) | Speed vs baseline "
                       "| Mem vs baseline |\n|---|---|---|---|---|---|---|---|\n");
        }
        if (!r->ok) {
            fprintf(f, "| %s | FAIL: %s | - | - | - | - | - | - |\n", r->label, r->error);
            continue;
        }
        fprintf(f, "| %s | %.1f | %.2f | %.2f | %.2f | %.1f | %.2fx | %.2fx |\n", r->label, r->first_ms, r->median_ms,
                r->min_ms, r->p95_ms, r->peak_mib, r->speed_vs_base, r->mem_vs_base);
    }
}

static void json_toggles(FILE *f, unsigned mask, unsigned avail) {
    fputc('{', f);
    int first = 1;
    for (int t = 0; t < CK_TOG_COUNT; t++)
        if (avail & BIT(t)) {
            fprintf(f, "%s\"%s\": %d", first ? "" : ", ", TOGGLES[t], (mask & BIT(t)) != 0);
            first = 0;
        }
    fputc('}', f);
}

void ck_sweep_write_json(FILE *f, const ck_sweep_header *h, const ck_sweep_row *rows, int n) {
    fprintf(f, "{\"header\": {\"sweep\": ");
    ck_cli_json_str(f, h->sweep);
    fprintf(f, ", \"date\": ");
    ck_cli_json_str(f, h->date);
    fprintf(f, ", \"device\": ");
    ck_cli_json_str(f, h->device);
    fprintf(f, ", \"device_name\": ");
    ck_cli_json_str(f, h->device_name);
    fprintf(f, ", \"commit\": ");
    ck_cli_json_str(f, h->commit);
    fprintf(f, ", \"checkpoint\": ");
    ck_cli_json_str(f, h->checkpoint);
    fprintf(f, ", \"random_weights\": %d, \"warmup\": %d, \"runs\": %d, \"half\": ", h->random_weights, h->warmup,
            h->runs);
    ck_cli_json_str(f, h->half);
    fprintf(f, ", \"threads\": %d, \"peak\": ", h->threads);
    ck_cli_json_str(f, h->peak_kind);
    fprintf(f, ", \"toggles\": ");
    json_toggles(f, h->avail, h->avail);
    fprintf(f, ", \"dropped\": ");
    json_toggles(f, 0, h->dropped);
    fprintf(f, ", \"median_rule\": \"mean of the two middle values for even n\", \"p95_rule\": \"sorted[ceil(0.95 n) - 1]\"},\n"
               "\"rows\": [\n");
    for (int i = 0; i < n; i++) {
        const ck_sweep_row *r = &rows[i];
        fprintf(f, "{\"res\": %d, \"config\": ", r->res);
        ck_cli_json_str(f, r->label);
        fprintf(f, ", \"mode\": \"%s\", \"tile\": %d, \"overlap\": %d, \"tiles\": %d, \"toggles\": ",
                r->tile ? "tiled" : "full", r->tile, r->overlap, r->tiles);
        json_toggles(f, r->mask, r->tile ? 0 : h->avail);
        fprintf(f, ", \"precision\": ");
        ck_cli_json_str(f, r->precision);
        fprintf(f, ", \"status\": \"%s\"", r->ok ? "ok" : "fail");
        if (!r->ok) {
            fprintf(f, ", \"error\": ");
            ck_cli_json_str(f, r->error);
        } else {
            fprintf(f, ", \"first_ms\": %.3f, \"median_ms\": %.3f, \"median_upper_ms\": %.3f, \"min_ms\": %.3f, "
                       "\"p95_ms\": %.3f, \"peak_mib\": %.1f, \"activation_mib\": %.1f, \"weights_mib\": %.1f, "
                       "\"speed_vs_baseline\": %.4f, \"mem_vs_baseline\": %.4f",
                    r->first_ms, r->median_ms, r->median_upper_ms, r->min_ms, r->p95_ms, r->peak_mib,
                    r->activation_mib, r->weights_mib, r->speed_vs_base, r->mem_vs_base);
        }
        fprintf(f, "}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(f, "]}\n");
}
