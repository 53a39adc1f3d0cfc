/* `ckey quality`: keys synthetic plates with exact ground truth (include/ckey_qa.h) under several engine
 * configurations and scores each against the truth and against the first configuration
 * (include/ckey_qa.h). Prints Markdown tables; --json/--md write them to files.
 *
 * Configurations run one after the other, each with its own context; plates are generated (or read)
 * again for every configuration rather than kept, so memory stays at one plate plus the first
 * configuration's alpha per plate (count × W × H floats) for the agreement table. */
#include "ckey.h"
#include "cli.h"
#include "key.h"
#include "ckey_io.h"
#include "ckey_qa.h"
#include "cmd_opts.h"
#include "options.h"
#include "sweep.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_CONFIGS = 32 };

#define RANDOM_PREFIX "random:"

typedef struct qconfig {
    char             label[64];
    ck_params        p;
    int              ok;                 /* every plate keyed */
    char             device[32], precision[16];
    ck_score_summary score;
    int              has_agree;
    ck_agree_summary agree;              /* alpha vs the first configuration */
    double           ms;                 /* median ck_key_image wall time per plate */
    double           peak_mib;           /* device memory peak of the configuration's context (0: CPU) */
    int              baseline;           /* "chroma": no network (alpha = automatic hint, fg = plate) */
} qconfig;

typedef struct qsource {
    const char     *dir; /* NULL: plates generated in memory from pp */
    ck_plate_params pp;
    int             count;
    ck_seq          plate, hint, alpha, fg;
    int             w0, h0; /* size of plate 0 once read */
} qsource;

static void usage_quality(FILE *f) {
    fprintf(f,
            "usage: ckey quality [--checkpoint F] [--plates DIR | --size WxH --count N --seed N]\n"
            "                    [--model-size N] [--configs LIST] [--device cpu|cuda|auto] [--json FILE]\n"
            "                    [--md FILE] [options]\n"
            "\n"
            "Keys synthetic green-screen plates whose alpha and foreground are known exactly (see 'ckey plates\n"
            "--help') under each configuration and scores the network's alpha and fg (before despill and\n"
            "despeckle) against the truth: alpha MAE, max error, MSE, MAE over the edge band (pixels with\n"
            "0 < truth alpha < 1), fg MAE (sRGB values, pixels with truth alpha > 0; also split into the opaque\n"
            "pixels, truth alpha = 1, and the partly covered ones, 0 < truth alpha < 1), median ms per frame\n"
            "(ck_key_image wall time: pre-processing, network, resize back; despeckle, despill and comp are\n"
            "off since the scores precede them) and the context's device memory peak (CUDA). A second table\n"
            "compares every configuration's alpha with the first one's (max and mean difference, PSNR with\n"
            "peak 1; identical outputs give 'inf'). Pixels of all plates are pooled. Progress goes to stderr,\n"
            "the tables to stdout. --size, --count, --seed, --hint-erode and --hint-dilate describe the plates\n"
            "generated in memory.\n"
            "\n"
            "options:\n");
    ck_opts_help(f, CK_CMD_QUALITY);
    fprintf(f, "\n"
               "exit status: 0 every configuration ran, 1 one failed (the report still lists the others),\n"
               "2 invalid command line.\n");
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* A decimal integer occupying exactly [s, s + len). */
static int int_span(const char *s, size_t len, int *out) {
    if (len == 0 || len > 6) return 0;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

/* One configuration token (see usage) on top of `base`. */
static int parse_config(const char *tok, size_t len, const ck_params *base, qconfig *q) {
    memset(q, 0, sizeof *q);
    if (len == 0 || len >= sizeof q->label) return 0;
    memcpy(q->label, tok, len);
    q->label[len] = '\0';
    q->p          = *base;
    char name[sizeof q->label];
    memcpy(name, q->label, sizeof name);
    char *at = strchr(name, '@');
    if (at) {
        *at++ = '\0';
        if (!strcmp(at, "fp32")) q->p.precision = CK_PREC_FP32;
        else if (!strcmp(at, "bf16")) q->p.precision = CK_PREC_BF16;
        else if (!strcmp(at, "fp16")) q->p.precision = CK_PREC_FP16;
        else return 0;
    }
    if (!strcmp(name, "chroma")) { /* the baseline a keyer must beat */
        q->baseline = 1;
        return 1;
    }
    static const char norefiner[] = "-norefiner";
    size_t            n           = strlen(name);
    if (n > sizeof norefiner - 1 && !strcmp(name + n - (sizeof norefiner - 1), norefiner)) {
        q->p.use_refiner = 0;
        n -= sizeof norefiner - 1;
        name[n] = '\0';
    }
    if (!strncmp(name, "full", 4)) {
        q->p.tile = 0, q->p.tile_overlap = 0;
        if (n > 4 && !int_span(name + 4, n - 4, &q->p.size)) return 0;
        return q->p.size >= 32 && q->p.size % 32 == 0;
    }
    if (!strncmp(name, "tile", 4)) {
        const char *slash = strchr(name, '/');
        const size_t tl   = slash ? (size_t)(slash - name) - 4 : n - 4;
        if (!int_span(name + 4, tl, &q->p.tile)) return 0;
        if (slash) {
            if (!int_span(slash + 1, strlen(slash + 1), &q->p.tile_overlap)) return 0;
        } else {
            q->p.tile_overlap = q->p.tile > 128 ? 64 : q->p.tile / 4; /* as 'ckey key --tile' */
        }
        return q->p.tile >= 32 && q->p.tile % 32 == 0 && q->p.tile_overlap < q->p.tile;
    }
    return 0;
}

/* ---- plates: generated or read ---- */

/* The message through the library's log (as its own failures go), and st. */
static ck_status fail(ck_status st, const char *fmt, ...) {
    char    msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ck_log(CK_LOG_ERROR, "%s", msg);
    return st;
}

static ck_status read_channels(const char *path, float *dst, int w, int h, int ch, int srgb_from_exr) {
    ck_image  img;
    ck_err    err = {{0}};
    ck_status st  = ck_image_read(path, &img, NULL, &err);
    if (st != CK_OK) return st;
    if (img.width != w || img.height != h) {
        ck_image_release(&img);
        return fail(CK_STATUS_ESHAPE, "%s is %dx%d, its plate %dx%d", path, img.width, img.height, w, h);
    }
    const int to_srgb = srgb_from_exr && ck_image_is_linear(path);
    for (size_t i = 0; i < (size_t)w * h; i++)
        for (int c = 0; c < ch; c++) {
            float v = img.data[i * img.channels + (img.channels >= 3 ? c : 0)]; /* grey replicated, A dropped */
            if (to_srgb) v = ck_linear_to_srgb(v > 0.0f ? v : 0.0f);
            dst[i * ch + c] = v;
        }
    ck_image_release(&img);
    return CK_OK;
}

static int open_dir_source(qsource *src) {
    static const char *sub[4] = {"Plate", "AlphaHint", "Truth/Alpha", "Truth/FG"};
    ck_seq            *seq[4] = {&src->plate, &src->hint, &src->alpha, &src->fg};
    ck_err             err    = {{0}};
    for (int k = 0; k < 4; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", src->dir, sub[k]);
        if (ck_seq_list(seq[k], path, &err) != CK_OK) return 0;
        if (seq[k]->n == 0 || (k > 0 && seq[k]->n != seq[0]->n)) {
            fprintf(stderr, "ckey: %s holds %d images, %s/Plate %d: a plate set needs the same number in each\n", path,
                    seq[k]->n, src->dir, seq[0]->n);
            return 0;
        }
    }
    src->count = src->plate.n;
    return 1;
}

/* Plate i into pl (re-allocated when a read plate has another size). */
static ck_status load_plate(qsource *src, int i, ck_plate *pl) {
    if (!src->dir) {
        src->pp.index = i;
        return ck_plate_generate(pl, &src->pp);
    }
    ck_image  head;
    ck_err    err = {{0}};
    ck_status st  = ck_image_read(src->plate.paths[i], &head, NULL, &err); /* its size first */
    if (st != CK_OK) return st;
    const int w = head.width, h = head.height;
    ck_image_release(&head);
    if (i == 0) src->w0 = w, src->h0 = h;
    if (pl->width != w || pl->height != h) {
        ck_plate_free(pl);
        if ((st = ck_plate_alloc(pl, w, h)) != CK_OK)
            return fail(st, "%s: cannot hold a %dx%d plate", src->plate.paths[i], w, h);
    }
    if ((st = read_channels(src->plate.paths[i], pl->rgb, w, h, 3, 1)) != CK_OK) return st;
    if ((st = read_channels(src->hint.paths[i], pl->hint, w, h, 1, 0)) != CK_OK) return st;
    if ((st = read_channels(src->alpha.paths[i], pl->alpha, w, h, 1, 0)) != CK_OK) return st;
    return read_channels(src->fg.paths[i], pl->fg, w, h, 3, 0);
}

/* ---- report ---- */

static const char *fmt(char *buf, size_t n, const char *f, double v) {
    if (isnan(v)) snprintf(buf, n, "n/a");
    else if (isinf(v)) snprintf(buf, n, v > 0 ? "inf" : "-inf");
    else snprintf(buf, n, f, v);
    return buf;
}

static void json_num(FILE *f, double v) {
    if (isnan(v)) fputs("null", f);
    else if (isinf(v)) fputs(v > 0 ? "\"inf\"" : "\"-inf\"", f);
    else fprintf(f, "%.9g", v);
}

typedef struct qrun {
    const char    *ckpt;
    const qsource *src;
    int            model_size, w, h; /* w, h: first plate's size (generated: all) */
    size_t         edge_n;           /* edge-band pixels over all plates (0 when no configuration ran) */
    qconfig       *cfg;
    int            ncfg;
} qrun;

/* Each configuration's errors over the baseline's (`chroma`: the automatic hint as alpha, the plate as fg), when
 * the baseline ran: the figures a keyer is judged by (the built-in keyer's goal is 0.5 or less on all three). */
static void write_md_ratios(FILE *f, const qrun *r) {
    const qconfig *base = NULL;
    for (int k = 0; k < r->ncfg; k++)
        if (r->cfg[k].baseline && r->cfg[k].ok) base = &r->cfg[k];
    if (!base || r->ncfg < 2) return;
    fprintf(f, "\nAgainst the baseline (`%s`: alpha and edge band against its alpha, fg against the plate as fg):\n\n"
               "| config | alpha MAE | edge-band MAE | fg MAE |\n|---|---|---|---|\n", base->label);
    for (int k = 0; k < r->ncfg; k++) {
        const qconfig *q = &r->cfg[k];
        if (q == base || !q->ok) continue;
        char a[32], e[32], g[32];
        fprintf(f, "| %s | %s | %s | %s |\n", q->label,
                fmt(a, sizeof a, "%.3f×", q->score.mae / base->score.mae),
                fmt(e, sizeof e, "%.3f×", q->score.edge_mae / base->score.edge_mae),
                fmt(g, sizeof g, "%.3f×", q->score.fg_mae / base->score.fg_mae));
    }
}

static void write_md(FILE *f, const qrun *r) {
    char a[32], b[32], c[32], d[32], e[32], g[32];
    fprintf(f, "## ckey quality\n\n");
    if (r->src->dir)
        fprintf(f, "- plates: %d from `%s` (first %dx%d), hint as stored in AlphaHint/\n", r->src->count, r->src->dir,
                r->w, r->h);
    else
        fprintf(f, "- plates: %d synthetic %dx%d (seed %llu), hint = truth alpha 8x down/up-sampled%s\n", r->src->count,
                r->w, r->h, (unsigned long long)r->src->pp.seed,
                r->src->pp.hint_erode || r->src->pp.hint_dilate ? " (eroded/dilated)" : "");
    fprintf(f, "- checkpoint: `%s`; model size %d for `full` (`fullN` runs at N)\n", r->ckpt, r->model_size);
    fprintf(f, "- edge band: %zu pixels with 0 < truth alpha < 1 over all plates\n", r->edge_n);
    if (!strncmp(r->ckpt, RANDOM_PREFIX, strlen(RANDOM_PREFIX)))
        fprintf(f, "\n> **Caveat: random weights.** These numbers exercise the harness and compare configurations "
                   "with each other; they do not measure keying quality.\n");
    fprintf(f, "\n| config | alpha MAE | max err | MSE | edge-band MAE | fg MAE | fg MAE, alpha 1 | fg MAE, alpha < 1 | "
               "ms/frame | device peak MiB |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < r->ncfg; k++) {
        const qconfig *q = &r->cfg[k];
        if (!q->ok) {
            fprintf(f, "| %s | failed | | | | | | | | |\n", q->label);
            continue;
        }
        char pk[32];
        if (q->peak_mib > 0) snprintf(pk, sizeof pk, "%.0f", q->peak_mib);
        else snprintf(pk, sizeof pk, "-");
        char fs[32], fe[32];
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", q->label,
                fmt(a, sizeof a, "%.5f", q->score.mae), fmt(b, sizeof b, "%.4f", q->score.max_err),
                fmt(c, sizeof c, "%.3e", q->score.mse), fmt(d, sizeof d, "%.5f", q->score.edge_mae),
                fmt(e, sizeof e, "%.5f", q->score.fg_mae), fmt(fs, sizeof fs, "%.5f", q->score.fg_solid_mae),
                fmt(fe, sizeof fe, "%.5f", q->score.fg_edge_mae), fmt(g, sizeof g, "%.1f", q->ms), pk);
    }
    write_md_ratios(f, r);
    fprintf(f, "\nAlpha agreement with `%s`:\n\n", r->cfg[0].label);
    if (r->ncfg < 2) {
        fprintf(f, "(one configuration: nothing to compare)\n");
        return;
    }
    fprintf(f, "| config | max diff | mean diff | PSNR (dB) |\n|---|---|---|---|\n");
    for (int k = 1; k < r->ncfg; k++) {
        const qconfig *q = &r->cfg[k];
        if (!q->has_agree) fprintf(f, "| %s | n/a | n/a | n/a |\n", q->label);
        else
            fprintf(f, "| %s | %s | %s | %s |\n", q->label, fmt(a, sizeof a, "%.3e", q->agree.max_diff),
                    fmt(b, sizeof b, "%.3e", q->agree.mean_diff), fmt(c, sizeof c, "%.2f", q->agree.psnr));
    }
}

static void write_json(FILE *f, const qrun *r) {
    fprintf(f, "{\"checkpoint\": ");
    ck_cli_json_str(f, r->ckpt);
    fprintf(f, ", \"random_weights\": %s, \"model_size\": %d,\n \"plates\": {\"source\": ",
            !strncmp(r->ckpt, RANDOM_PREFIX, strlen(RANDOM_PREFIX)) ? "true" : "false", r->model_size);
    ck_cli_json_str(f, r->src->dir ? r->src->dir : "generated");
    fprintf(f, ", \"count\": %d, \"width\": %d, \"height\": %d", r->src->count, r->w, r->h);
    if (!r->src->dir)
        fprintf(f, ", \"seed\": %llu, \"hint_erode\": %d, \"hint_dilate\": %d", (unsigned long long)r->src->pp.seed,
                r->src->pp.hint_erode, r->src->pp.hint_dilate);
    fprintf(f, ", \"edge_pixels\": %zu},\n \"configs\": [", r->edge_n);
    for (int k = 0; k < r->ncfg; k++) {
        const qconfig *q = &r->cfg[k];
        fprintf(f, "%s\n  {\"config\": ", k ? "," : "");
        ck_cli_json_str(f, q->label);
        fprintf(f, ", \"ok\": %s, \"device\": ", q->ok ? "true" : "false");
        ck_cli_json_str(f, q->device);
        fprintf(f, ", \"precision\": ");
        ck_cli_json_str(f, q->precision);
        fprintf(f, ", \"size\": %d, \"tile\": %d, \"overlap\": %d, \"refiner\": %d", q->p.tile ? q->p.tile : q->p.size,
                q->p.tile, q->p.tile_overlap, q->p.use_refiner);
        const double v[8] = {q->score.mae,    q->score.max_err,      q->score.mse,         q->score.edge_mae,
                             q->score.fg_mae, q->score.fg_solid_mae, q->score.fg_edge_mae, q->ms};
        static const char *names[8] = {"alpha_mae", "alpha_max_err", "alpha_mse",      "edge_mae",
                                       "fg_mae",    "fg_solid_mae",  "fg_edge_mae",    "ms_per_frame"};
        for (int i = 0; i < 8; i++) {
            fprintf(f, ", \"%s\": ", names[i]);
            json_num(f, q->ok ? v[i] : NAN);
        }
        fprintf(f, ", \"edge_pixels\": %zu, \"fg_pixels\": %zu, \"device_peak_mib\": %.1f", q->score.edge_n,
                q->score.fg_n, q->peak_mib);
        if (q->has_agree) {
            fprintf(f, ", \"agreement\": {\"reference\": ");
            ck_cli_json_str(f, r->cfg[0].label);
            fprintf(f, ", \"max_diff\": ");
            json_num(f, q->agree.max_diff);
            fprintf(f, ", \"mean_diff\": ");
            json_num(f, q->agree.mean_diff);
            fprintf(f, ", \"psnr\": ");
            json_num(f, q->agree.psnr);
            fprintf(f, "}");
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n]}\n");
}

static int write_file(const char *path, void (*fn)(FILE *, const qrun *), const qrun *r) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ckey: cannot write %s: %s\n", path, strerror(errno));
        return 0;
    }
    fn(f, r);
    if (fclose(f) != 0) {
        fprintf(stderr, "ckey: cannot write %s: %s\n", path, strerror(errno));
        return 0;
    }
    return 1;
}

/* ---- one configuration ---- */

/* The baseline: alpha = the automatic chroma-difference hint of the plate (what `ckey key` uses without a
 * hint), fg = the plate itself. */
static ck_status chroma_baseline(const ck_image *rgb, ck_result *res) {
    const size_t n = (size_t)rgb->width * rgb->height;
    memset(res, 0, sizeof *res);
    res->alpha = (ck_image){rgb->width, rgb->height, 1, malloc(sizeof(float) * n)};
    res->fg    = (ck_image){rgb->width, rgb->height, 3, malloc(sizeof(float) * n * 3)};
    if (!res->alpha.data || !res->fg.data) {
        ck_result_free(res);
        return CK_STATUS_EOOM;
    }
    memcpy(res->fg.data, rgb->data, sizeof(float) * n * 3);
    const ck_status st = ck_auto_hint(res->alpha.data, rgb->data, rgb->width, rgb->height, NULL);
    if (st != CK_OK) ck_result_free(res);
    return st;
}

/* Keys every plate with q's context; ref[i] (the first configuration's alpha) is filled when fill_ref,
 * compared with when not NULL otherwise. */
static void run_config(qconfig *q, int idx, int ncfg, qsource *src, ck_plate *pl, const char *ckpt, int warmup,
                       float **ref, int fill_ref, double *ms) {
    ck_ctx *ctx = NULL;
    snprintf(q->device, sizeof q->device, "-");
    snprintf(q->precision, sizeof q->precision, "-");
    fprintf(stderr, "ckey: quality: [%d/%d %s] loading %s\n", idx + 1, ncfg, q->label, q->baseline ? "nothing" : ckpt);
    if (!q->baseline && ck_ctx_init(&ctx, ckpt, &q->p) != CK_OK) {
        fprintf(stderr, "ckey: quality: [%s] failed: %s\n", q->label, ck_ctx_last_error(ctx));
        ck_ctx_free(ctx);
        return;
    }
    if (ctx) {
        snprintf(q->device, sizeof q->device, "%s", ck_ctx_device_name(ctx));
        snprintf(q->precision, sizeof q->precision, "%s", ck_ctx_precision_name(ctx));
    }
    if (warmup < 0 || !ctx) warmup = !ctx || !strcmp(q->device, "cpu") ? 0 : 1;
    ck_score  sc = {0};
    ck_agree  ag = {0};
    ck_status st = CK_OK;
    int       done = 0, agree_ok = 1;
    for (int i = 0; i < src->count && st == CK_OK; i++) {
        if ((st = load_plate(src, i, pl)) != CK_OK) {
            fprintf(stderr, "ckey: quality: plate %d could not be %s\n", i, src->dir ? "read" : "made");
            break;
        }
        const ck_image rgb = {pl->width, pl->height, 3, pl->rgb}, hint = {pl->width, pl->height, 1, pl->hint};
        ck_result      res = {0};
        for (int k = 0; i == 0 && k < warmup && st == CK_OK; k++) {
            st = ck_key_image(ctx, &rgb, &hint, &res);
            ck_result_free(&res);
        }
        const double t0 = now_ms();
        if (st == CK_OK) st = ctx ? ck_key_image(ctx, &rgb, &hint, &res) : chroma_baseline(&rgb, &res);
        ms[i] = now_ms() - t0;
        if (st != CK_OK) {
            fprintf(stderr, "ckey: quality: [%s] plate %d: %s\n", q->label, i, ctx ? ck_ctx_last_error(ctx) : "out of memory");
            break;
        }
        const size_t n = (size_t)pl->width * pl->height;
        ck_score     one = {0};
        ck_score_add(&one, res.alpha.data, res.fg.data, pl->alpha, pl->fg, n);
        ck_score_add(&sc, res.alpha.data, res.fg.data, pl->alpha, pl->fg, n);
        if (fill_ref) {
            ref[i] = malloc(sizeof(float) * n);
            if (ref[i]) memcpy(ref[i], res.alpha.data, sizeof(float) * n);
        } else if (ref && ref[i] && n == (size_t)res.alpha.width * res.alpha.height) {
            ck_agree_add(&ag, ref[i], res.alpha.data, n);
        } else {
            agree_ok = 0;
        }
        ck_result_free(&res);
        const ck_score_summary s1 = ck_score_finish(&one);
        char                   e1[32];
        fprintf(stderr, "ckey: quality: [%d/%d %s] plate %d/%d: alpha MAE %.5f, edge-band MAE %s, %.1f ms\n", idx + 1,
                ncfg, q->label, i + 1, src->count, s1.mae, fmt(e1, sizeof e1, "%.5f", s1.edge_mae), ms[i]);
        done++;
    }
    q->peak_mib = ctx ? ck_ctx_device_peak_bytes(ctx) / 1048576.0 : 0.0;
    ck_ctx_free(ctx);
    q->ok    = st == CK_OK && done == src->count;
    q->score = ck_score_finish(&sc);
    q->ms    = done ? ck_sweep_median(ms, done) : NAN;
    if (q->ok && !fill_ref && ref && agree_ok) {
        q->has_agree = 1;
        q->agree     = ck_agree_finish(&ag);
    }
}

int ck_cli_quality(int argc, char **argv) {
    quality_opts q;
    memset(&q, 0, sizeof q);
    q.configs      = "full,tile768/64,tile512/64";
    q.set.pp       = ck_plate_params_default();
    q.set.count    = 4;
    q.model_size   = 2048;
    q.warmup       = -1;
    q.base         = ck_params_default();
    /* the scored outputs precede post-processing: skip what would only cost time */
    q.base.despeckle = 0, q.base.despill = 0.0f, q.base.comp = 0;
    ck_opt_result r;
    const int     pst = ck_opts_parse(CK_CMD_QUALITY, argc, argv, &q, &r);
    if (pst == CK_OPT_HELP) {
        usage_quality(stdout);
        return 0;
    }
    if (pst != CK_OPT_OK) return 2;
    const char *ckpt = q.ckpt, *configs = q.configs, *json = q.json, *md = q.md;
    qsource     src  = {0};
    src.dir          = q.plates;
    src.pp           = q.set.pp;
    src.count        = q.set.count;
    const int  model_size_set = ck_opts_given(&r, CK_CMD_QUALITY, "model-size");
    long       warmup = q.warmup, model_size = q.model_size;
    char       ckbuf[4096];
    ck_params  base = q.base;
    if (!ckpt && !(ckpt = default_checkpoint(ckbuf, sizeof ckbuf))) { /* as `ckey key`: the built-in keyer */
        ckpt = CK_BUILTIN_SPEC;
        ck_log(CK_LOG_WARN, "%s", CK_CLI_BUILTIN_NOTE);
    }
    if (ck_builtin_is_spec(ckpt) && !model_size_set) model_size = ck_builtin_train_size();
    base.size = (int)model_size;

    qconfig cfg[MAX_CONFIGS];
    int     ncfg = 0;
    for (const char *s = configs; *s;) {
        const char  *comma = strchr(s, ',');
        const size_t len   = comma ? (size_t)(comma - s) : strlen(s);
        if (ncfg == MAX_CONFIGS || !parse_config(s, len, &base, &cfg[ncfg])) {
            fprintf(stderr, "ckey: --configs: '%.*s' is not a configuration (full, fullN, tileT/O, with -norefiner "
                            "and @fp32|bf16|fp16; at most %d; see 'ckey quality --help')\n",
                    (int)len, s, MAX_CONFIGS);
            return 2;
        }
        ncfg++;
        s += len + (comma != NULL);
    }
    if (ncfg == 0) {
        fprintf(stderr, "ckey: --configs is empty\n");
        return 2;
    }

    ck_plate pl = {0};
    if (src.dir) {
        if (!open_dir_source(&src)) {
            ck_seq_free(&src.plate), ck_seq_free(&src.hint), ck_seq_free(&src.alpha), ck_seq_free(&src.fg);
            return 1;
        }
    } else if (ck_plate_alloc(&pl, src.pp.width, src.pp.height) != CK_OK) {
        fprintf(stderr, "ckey: out of memory for %dx%d plates\n", src.pp.width, src.pp.height);
        return 1;
    }
    float  **ref = calloc((size_t)src.count, sizeof *ref); /* (count) first configuration's alpha, (h, w) each */
    double  *ms  = malloc(sizeof(double) * (size_t)src.count); /* (count) ck_key_image wall time, ms */
    int      rc  = 0;
    if (!ref || !ms) {
        fprintf(stderr, "ckey: out of memory\n");
        rc = 1;
    }
    qrun run = {ckpt, &src, (int)model_size, src.pp.width, src.pp.height, 0, cfg, ncfg};
    for (int k = 0; k < ncfg && ref && ms; k++) {
        run_config(&cfg[k], k, ncfg, &src, &pl, ckpt, (int)warmup, cfg[0].ok || k == 0 ? ref : NULL, k == 0, ms);
        if (!cfg[k].ok) rc = 1;
        if (cfg[k].score.n && !run.edge_n) run.edge_n = cfg[k].score.edge_n;
    }
    if (src.dir) run.w = src.w0, run.h = src.h0;
    if (ref && ms) {
        write_md(stdout, &run);
        fflush(stdout);
        if (md && !write_file(md, write_md, &run)) rc = 1;
        if (json && !write_file(json, write_json, &run)) rc = 1;
    }
    for (int i = 0; ref && i < src.count; i++) free(ref[i]);
    free(ref), free(ms);
    ck_plate_free(&pl);
    ck_seq_free(&src.plate), ck_seq_free(&src.hint), ck_seq_free(&src.alpha), ck_seq_free(&src.fg);
    return rc;
}
