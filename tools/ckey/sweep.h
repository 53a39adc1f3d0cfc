/* `ckey bench --sweep`: the toggle sweeps of the seed benchmarks (scripts/bench_optimizations.py of the
 * MLX port, see docs), their labels, the timing statistics and the Markdown / JSON report.
 * Pure functions (no context, no device), so the definitions are unit-tested (tests/test_sweep.c).
 *
 * Toggles, in the seed's order, then ckey's own: slim, stage_gc, sdpa, bf16, fused_decode,
 * gpu_preprocess, compile, pad64. A configuration is a bit mask over them (bit i = toggle i on).
 * Sweeps over a set of available toggles `avail` (the others keep ckey's defaults):
 *   ablation  all-on, then each available toggle off alone (toggle order), then all-off ("baseline");
 *   key       the seed's six: all-off, bf16+fused_decode, slim+stage_gc+sdpa+gpu_preprocess, all-on,
 *             sdpa, stage_gc; compile and pad64 are on in the all-on row only; unavailable toggles are
 *             dropped from each row and a row that then repeats an earlier one is run once;
 *   full      every combination, itertools.product([True, False], repeat=n) order: all-on first,
 *             the last toggle alternating fastest, all-off last;
 *   isolate   all-off, then each available toggle alone.
 * Label: the enabled toggle names joined with "+", "baseline" when none is on. */
#ifndef CK_SWEEP_H
#define CK_SWEEP_H

#include "ckey.h"

#include <stddef.h>
#include <stdio.h>

typedef enum ck_toggle {
    CK_TOG_SLIM = 0,
    CK_TOG_STAGE_GC,
    CK_TOG_SDPA,
    CK_TOG_BF16,
    CK_TOG_FUSED_DECODE,
    CK_TOG_GPU_PREPROCESS,
    CK_TOG_COMPILE,
    CK_TOG_PAD64,
    CK_TOG_COUNT
} ck_toggle;

#define CK_TOG_ALL ((1u << CK_TOG_COUNT) - 1u)
/* Toggles that name a GPU feature (16-bit compute, CUDA Graphs, device pre-processing): not available
 * on the CPU backend, so CPU sweeps drop them. */
#define CK_TOG_GPU_ONLY ((1u << CK_TOG_BF16) | (1u << CK_TOG_COMPILE) | (1u << CK_TOG_GPU_PREPROCESS))

typedef enum ck_sweep_kind { CK_SWEEP_ABLATION, CK_SWEEP_KEY, CK_SWEEP_FULL, CK_SWEEP_ISOLATE } ck_sweep_kind;

const char *ck_toggle_name(int t);
int         ck_toggle_parse(const char *name); /* -1 when unknown */
int         ck_sweep_parse(const char *name, ck_sweep_kind *out);
const char *ck_sweep_name(ck_sweep_kind k);

/* The sweep's configurations over `avail`, in run order. Writes up to cap masks, returns the count. */
int  ck_sweep_configs(ck_sweep_kind k, unsigned avail, unsigned *masks, int cap);
void ck_sweep_label(unsigned mask, char *buf, size_t n);
/* Sets the ck_params fields of every toggle in `avail` from mask; `half` is the precision of "bf16" on
 * (CK_PREC_BF16 or CK_PREC_FP16; off = fp32). */
void ck_sweep_apply(unsigned mask, unsigned avail, ck_precision half, ck_params *p);

/* Statistics over n timings (each sorts v in place). Median: the middle value for odd n, the mean of
 * the two middle values for even n. The seed scripts used sorted[n / 2] (the upper middle value for
 * even n): ck_sweep_median_upper, reported alongside for comparison. p95: sorted[ceil(0.95 n) - 1]. */
double ck_sweep_median(double *v, int n);
double ck_sweep_median_upper(double *v, int n);
double ck_sweep_p95(double *v, int n);
double ck_sweep_min(const double *v, int n);

/* One measured row of a sweep. */
typedef struct ck_sweep_row {
    int      res;            /* frame resolution (res × res) */
    unsigned mask;           /* toggles on (full-frame rows) */
    int      tile, overlap;  /* tiled rows: model at S = tile; 0 for full-frame rows */
    int      tiles;          /* tiles per frame (tiled rows) */
    char     label[160];
    char     precision[16];  /* activation dtype the row ran in: float32, float16, bfloat16 */
    int      ok;
    char     error[256];
    double   first_ms, median_ms, median_upper_ms, min_ms, p95_ms;
    double   peak_mib;       /* device peak (CUDA) or the row process's peak RSS (CPU) */
    double   activation_mib, weights_mib;
    double   speed_vs_base, mem_vs_base; /* baseline median / median, peak / baseline peak; 0 = n/a */
} ck_sweep_row;

/* Fills speed_vs_base and mem_vs_base: per resolution, against the "baseline" row, else the first
 * successful row of that resolution. */
void ck_sweep_relative(ck_sweep_row *rows, int n);

/* What the report header says. */
typedef struct ck_sweep_header {
    const char *sweep;        /* "ablation", ... */
    const char *date;
    const char *device;       /* "cuda" or "cpu" */
    const char *device_name;  /* GPU or CPU model */
    const char *commit;       /* "unknown" when not known */
    const char *checkpoint;   /* path or "random:base_plus" */
    int         random_weights;
    int         warmup, runs;
    const char *half;         /* precision of the bf16 toggle: "fp16" / "bf16" / "n/a" */
    const char *peak_kind;    /* "device" or "rss" */
    unsigned    avail;        /* toggles swept */
    unsigned    dropped;      /* toggles left out because the device lacks them */
    int         threads;      /* CPU threads (0 = all cores) */
} ck_sweep_header;

void ck_sweep_write_md(FILE *f, const ck_sweep_header *h, const ck_sweep_row *rows, int n);
/* One JSON document: {"header": {...}, "rows": [ one object per line ]}. */
void ck_sweep_write_json(FILE *f, const ck_sweep_header *h, const ck_sweep_row *rows, int n);

#endif
