/* `ckey doctor`: what this machine has (CPU, memory, CUDA devices), where the checkpoint is and whether
 * it loads, and the configuration to key 2048 frames with (`--preset auto` applies the same choice).
 *
 * The choice follows the seed benchmarks' rule: a machine whose memory cannot hold the full-frame
 * working set at 2048 must tile (their 24 GB unified-memory Macs swapped at 2048 full frame; tiled
 * 768/64 needed ~2.3 GB). Working sets come from a stored `ckey bench --sweep ... --json` of this device
 * when one exists (--bench-json FILE, else ~/.cache/ckey/bench.json), otherwise from this formula, a
 * constant (weights, workspaces, process) plus a part growing with the pixel count, fitted to the peaks
 * `ckey bench --sweep` measured on fresh contexts (Hiera-B+, slim on, ckey's defaults; H200 host):
 *
 *   CUDA device peak MiB(S) = C + Q · (S / 2048)²
 *     16-bit: C = 301, Q = 1225 (measured 377.8 / 475.0 / 609.1 / 1526.1 at S = 512 / 768 / 1024 / 2048);
 *     fp32:   C = 441, Q = 2382 (measured 589.6 / 2822.3 at 512 / 2048).
 *   CPU peak RSS MiB(S) = checkpoint + 218 + 2489 · (S / 2048)²
 *     (measured 753.5 / 3086.5 at 512 / 2048 with the 380 MiB random:base_plus weights).
 * These move as the engine's memory use changes; a stored sweep of the machine is the better source.
 * A tiled mode needs the model at S = tile, whatever the frame size; on CUDA it runs batches of tiles,
 * each more tile costing the part that grows with the pixel count (measured: tiled 768/64 at 2048²
 * in batches of 8 peaked at 2296 MiB, 512/64 in 16 at 2082, 1024/64 in 3 at 1695, against 1476 for
 * the full frame), so the recommendation sets the batch that fits the budget. Budget: 90 % of the free device
 * memory (CUDA; for a GPU that shares host memory, also at most 90 % of the host's available memory),
 * 80 % of the available memory on the CPU.
 *
 * Which tiling, when the full frame does not fit, depends on the weights. CorridorKey's checkpoint: the
 * seed's order (768/64, then 512/64, then 1024/64; a faster one measured in a stored sweep wins), its
 * tiles scoring better than its full frame. The built-in small keyer: the largest tile first, and the full
 * frame at 2048 above every tiling, from `ckey quality` on 16 held-out 2048² plates: version 5 (H100, 2026-12-06,
 * docs/benchmarks/2026-12-06-h100-version5.md) alpha MAE full frame 2048 0.0073, tiled 1024/64 0.0080, 768/64
 * 0.0093, 512/64 0.0101 (edge band 0.091 / 0.101 / 0.124 / 0.138); version 3 (2026-12-06,
 * docs/model_card_small.md) alpha MAE full frame 2048 0.0094, tiled 1024/64 0.0105, 768/64 0.0117, 512/64
 * 0.0122, full frame at its training size 1024 0.0118; version 2 (H200, 2026-12-04, also on 8 3840×2160
 * plates, docs/benchmarks/2026-12-04-h200.md) in the same order: 0.0123 / 0.0060 (2048² / 4K), 0.0134 /
 * 0.0068, 0.0145 / 0.0070, 0.0148 / 0.0070, and 0.0177 / 0.0095 at 512 (version 1's order too). */
#include "ckey.h"
#include "cli.h"
#include "cmd_opts.h"
#include "key.h"
#include "options.h"
#include "ckey_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TARGET 2048 /* the training size: what `ckey key` runs by default */
#define MiB 1048576.0
#define MAX_GPUS 16 /* GPUs given a recommendation each */

typedef struct host_info {
    char   cpu[256];
    int    cores;
    double mem_total_mib, mem_avail_mib;
} host_info;

typedef struct bench_row { /* one row of a stored sweep */
    int    res, tile, overlap, ok;
    char   precision[16], config[160];
    double median_ms, peak_mib;
    int    toggles[8]; /* -1 = not in the row */
} bench_row;

typedef struct bench_file {
    char       path[1024], device[16], device_name[300];
    bench_row *rows;
    int        n;
    int        usable; /* same device as now */
} bench_file;

typedef struct mode {
    int         tile, overlap; /* 0: full frame */
    double      peak_mib;
    double      median_ms;     /* from a stored sweep, else 0 */
    const char *source;        /* "formula" or "bench" */
} mode;

typedef struct advice {
    ck_params      p;          /* what --preset auto sets */
    int            cuda_index; /* -1: CPU */
    ck_device_info gpu;
    double         budget_mib, peak_mib, median_ms;
    const char    *source;
    char           why[768];
    int            feasible;
} advice;

/* ---- machine ---- */

static void read_host(host_info *h) {
    memset(h, 0, sizeof *h);
    snprintf(h->cpu, sizeof h->cpu, "unknown CPU");
    h->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char  line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *c = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && c) {
            snprintf(h->cpu, sizeof h->cpu, "%s", c + 2);
            h->cpu[strcspn(h->cpu, "\r\n")] = '\0';
            break;
        }
    }
    if (f) fclose(f);
    f = fopen("/proc/meminfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        double kb;
        if (sscanf(line, "MemTotal: %lf kB", &kb) == 1) h->mem_total_mib = kb / 1024.0;
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) h->mem_avail_mib = kb / 1024.0;
    }
    if (f) fclose(f);
    if (h->mem_total_mib <= 0) { /* no /proc: sysconf */
        const double page = (double)sysconf(_SC_PAGESIZE);
        h->mem_total_mib  = (double)sysconf(_SC_PHYS_PAGES) * page / MiB;
        h->mem_avail_mib  = (double)sysconf(_SC_AVPHYS_PAGES) * page / MiB;
    }
    if (h->mem_avail_mib <= 0) h->mem_avail_mib = h->mem_total_mib;
}

/* ---- stored sweep (the JSON `ckey bench --json` writes: a header line, then one row per line) ---- */

static double num_after(const char *line, const char *key, double dflt) {
    const char *s = strstr(line, key);
    return s ? strtod(s + strlen(key), NULL) : dflt;
}

static void str_after(const char *line, const char *key, char *out, size_t n) {
    const char *s = strstr(line, key);
    out[0]        = '\0';
    if (!s) return;
    s += strlen(key);
    size_t i = 0;
    for (; s[i] && s[i] != '"' && i + 1 < n; i++) out[i] = s[i];
    out[i] = '\0';
}

static const char *const TOGGLE_KEYS[8] = {"\"slim\": ",           "\"stage_gc\": ",       "\"sdpa\": ",
                                           "\"bf16\": ",           "\"fused_decode\": ",   "\"gpu_preprocess\": ",
                                           "\"compile\": ",        "\"pad64\": "};

static int read_bench(bench_file *b, const char *path) {
    memset(b, 0, sizeof *b);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    snprintf(b->path, sizeof b->path, "%s", path);
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "{\"header\": ", 11)) {
            str_after(line, "\"device\": \"", b->device, sizeof b->device);
            str_after(line, "\"device_name\": \"", b->device_name, sizeof b->device_name);
            continue;
        }
        if (strncmp(line, "{\"res\": ", 8) != 0) continue;
        bench_row *r = realloc(b->rows, sizeof *r * (size_t)(b->n + 1));
        if (!r) break;
        b->rows = r;
        r       = &b->rows[b->n++];
        memset(r, 0, sizeof *r);
        r->res     = (int)num_after(line, "{\"res\": ", 0);
        r->tile    = (int)num_after(line, "\"tile\": ", 0);
        r->overlap = (int)num_after(line, "\"overlap\": ", 0);
        r->ok      = strstr(line, "\"status\": \"ok\"") != NULL;
        r->median_ms = num_after(line, "\"median_ms\": ", 0);
        r->peak_mib  = num_after(line, "\"peak_mib\": ", 0);
        str_after(line, "\"precision\": \"", r->precision, sizeof r->precision);
        str_after(line, "\"config\": \"", r->config, sizeof r->config);
        const char *tg  = strstr(line, "\"toggles\": {");
        const char *end = tg ? strchr(tg, '}') : NULL;
        for (int t = 0; t < 8; t++) {
            const char *s = tg ? strstr(tg, TOGGLE_KEYS[t]) : NULL;
            r->toggles[t] = s && s < end ? atoi(s + strlen(TOGGLE_KEYS[t])) : -1;
        }
    }
    fclose(f);
    return 1;
}

/* ---- memory model (see the banner) ---- */

static double cuda_peak_mib(int S, int half) {
    const double s2 = (double)S * S / (2048.0 * 2048.0);
    return half ? 301.0 + 1225.0 * s2 : 441.0 + 2382.0 * s2;
}

static double cpu_peak_mib(int S, double ckpt_mib) {
    return ckpt_mib + 218.0 + 2489.0 * (double)S * S / (2048.0 * 2048.0);
}

/* From a usable stored sweep, the measured rows of a mode at TARGET (half: 16-bit rows only, 0: fp32
 * only, -1: any): the fastest that fits the budget, else the one with the smallest peak. */
static const bench_row *measured(const bench_file *b, int tile, int overlap, int half, double budget) {
    const bench_row *fast = NULL, *small = NULL;
    for (int i = 0; b && b->usable && i < b->n; i++) {
        const bench_row *r = &b->rows[i];
        if (!r->ok || r->res != TARGET || r->tile != tile || (tile && r->overlap != overlap)) continue;
        if (!tile && half >= 0 && (strcmp(r->precision, "float32") != 0) != half) continue;
        if (!small || r->peak_mib < small->peak_mib) small = r;
        if (r->peak_mib <= budget && (!fast || r->median_ms < fast->median_ms)) fast = r;
    }
    return fast ? fast : small;
}

static const int TILES[3][2] = {{768, 64}, {512, 64}, {1024, 64}};         /* the seed's preference order */
static const int TILES_BUILTIN[3][2] = {{1024, 64}, {768, 64}, {512, 64}}; /* the built-in keyer's, by quality */

/* Fills the modes at TARGET (full frame, then the tiles in preference order) for this device. */
static int list_modes(mode *m, int cuda, int half, double ckpt_mib, const bench_file *b, double budget, int builtin) {
    int n = 0;
    for (int i = -1; i < 3; i++) {
        mode *x    = &m[n++];
        x->tile    = i < 0 ? 0 : builtin ? TILES_BUILTIN[i][0] : TILES[i][0];
        x->overlap = i < 0 ? 0 : builtin ? TILES_BUILTIN[i][1] : TILES[i][1];
        const int S = i < 0 ? TARGET : x->tile;
        x->peak_mib = cuda ? cuda_peak_mib(S, half) : cpu_peak_mib(S, ckpt_mib);
        x->source   = "formula";
        x->median_ms = 0;
        const bench_row *r = measured(b, x->tile, x->overlap, cuda ? half : -1, budget);
        if (r) x->peak_mib = r->peak_mib, x->median_ms = r->median_ms, x->source = "bench";
    }
    return n;
}

/* ---- checkpoint ---- */

static int file_size(const char *p, double *mib) {
    struct stat st;
    if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    *mib = st.st_size / MiB;
    return 1;
}

typedef struct ckpt_status {
    char   searched[4][CK_PATH_MAX];
    int    n_searched, found_at; /* index into searched, -1 none */
    double size_mib;
    char   format[40], summary[768];
    int    valid, given;
    int    builtin; /* the built-in small keyer: given as `builtin[:small]`, or no checkpoint found */
} ckpt_status;

static void quiet_log(ck_log_level level, const char *msg, void *user) { (void)level, (void)msg, (void)user; }

static void check_checkpoint(ckpt_status *c, const char *given) {
    memset(c, 0, sizeof *c);
    c->found_at     = -1;
    c->given        = given != NULL;
    int from_env = 0;
    if (given) snprintf(c->searched[c->n_searched++], sizeof c->searched[0], "%s", given);
    else c->n_searched = checkpoint_candidates(c->searched, &from_env); /* the order `ckey key` uses */
    const int random = given && (ck_random_weights_is_spec(given) || ck_builtin_is_spec(given));
    c->builtin       = given && ck_builtin_is_spec(given);
    for (int i = 0; i < c->n_searched && c->found_at < 0; i++)
        if (random || file_size(c->searched[i], &c->size_mib)) c->found_at = i;
    if (c->found_at < 0) {
        c->builtin = 1; /* what `ckey key` then uses */
        return;
    }
    const char *path = c->searched[c->found_at];
    unsigned char magic[16] = {0};
    FILE         *f = random ? NULL : fopen(path, "rb");
    size_t        got = f ? fread(magic, 1, sizeof magic, f) : 0;
    if (f) fclose(f);
    snprintf(c->format, sizeof c->format, "%s",
             c->builtin                                     ? "built-in small keyer (in the library)"
             : random                                       ? "random weights (in memory)"
             : got >= 4 && magic[0] == 'P' && magic[1] == 'K' ? "pth (torch.save zip)"
             : got >= 9 && magic[8] == '{'                  ? "safetensors"
                                                            : "unknown");
    ck_set_log(quiet_log, NULL, CK_LOG_ERROR); /* a failure goes into the summary, not onto stderr */
    ck_checkpoint_info ci;
    ck_checkpoint_inspect(c->builtin ? CK_BUILTIN_SPEC : path, TARGET, &ci);
    if (random && ci.opened) c->size_mib = ci.bytes / MiB;
    if (!ci.opened) {
        snprintf(c->summary, sizeof c->summary, "does not load: %s", ci.message);
    } else if (!ci.greenformer) {
        snprintf(c->summary, sizeof c->summary, "%d tensors, not a GreenFormer: %s", ci.n_tensors, ci.message);
    } else {
        c->valid = 1;
        const int bp = ci.embed_dim == 112 && ci.num_blocks == 24;
        snprintf(c->summary, sizeof c->summary,
                 "%d tensors, Hiera widths %d/%d/%d/%d, %d blocks, head_dim %d, pos grid %d%s", ci.n_tensors,
                 ci.stage_dim[0], ci.stage_dim[1], ci.stage_dim[2], ci.stage_dim[3], ci.num_blocks, ci.head_dim,
                 ci.pos_grid, bp ? ": CorridorKey (Hiera-Base-Plus)" : "");
    }
    ck_set_log(NULL, NULL, CK_LOG_INFO);
}

/* ---- the recommendation ---- */

/* The configuration for CUDA device `dev` (ckey key's default is 0; --devices picks others), or the CPU when
 * it is not a usable device (sm_80 or newer). */
static void advise(advice *a, const host_info *h, double ckpt_mib, const bench_file *b, int builtin, int dev) {
    memset(a, 0, sizeof *a);
    a->p          = ck_params_default();
    a->cuda_index = -1;
    if (dev >= 0 && dev < ck_cuda_device_count() && ck_cuda_device_info(dev, &a->gpu) == CK_OK && a->gpu.cc_major >= 8) {
        a->cuda_index = dev;
        double free_mib = (a->gpu.free_bytes ? a->gpu.free_bytes : a->gpu.total_bytes) / MiB;
        if (a->gpu.integrated && h->mem_avail_mib < free_mib) free_mib = h->mem_avail_mib;
        a->budget_mib = 0.9 * free_mib;
    } else {
        a->budget_mib = 0.8 * h->mem_avail_mib;
    }
    const int cuda = a->cuda_index >= 0;
    mode      m[4];
    const int nm = list_modes(m, cuda, 1, ckpt_mib, b, a->budget_mib, builtin);
    /* full frame when it fits (one forward over the whole frame; for CorridorKey's weights a stored sweep
     * may show a tiled mode faster, then that one), else the first tiling that fits; the built-in keyer
     * goes by its measured quality order only */
    const mode *pick = NULL;
    for (int i = 0; i < nm; i++) {
        if (m[i].peak_mib > a->budget_mib) continue;
        if (!pick) pick = &m[i];
        else if (!builtin && m[i].median_ms > 0 && pick->median_ms > 0 && m[i].median_ms < pick->median_ms)
            pick = &m[i];
    }
    ck_params *p = &a->p;
    p->device    = cuda ? CK_DEVICE_CUDA : CK_DEVICE_CPU;
    p->precision = cuda ? CK_PREC_FP16 : CK_PREC_FP32;
    p->threads   = 0; /* all cores */
    p->size      = TARGET;
    /* the fast defaults: fused attention, pad64 (16-bit), CUDA Graph, fused decode, device pre-processing
     * (full frame), no stage sync (the seed: harmful on large machines, and a no-op under a graph) */
    p->fused_attention = 1, p->pad64 = -1, p->cuda_graph = -1, p->stage_gc = 0, p->keep_intermediates = 0;
    p->fused_decode = 1, p->gpu_preprocess = -1;
    if (!pick) {
        pick        = &m[nm - 2]; /* 512/64: the smallest working set */
        a->feasible = 0;
        snprintf(a->why, sizeof a->why,
                 "even tiled %d/%d needs ~%.0f MiB, more than the %.0f MiB budget: free memory first or key at a "
                 "smaller --size",
                 pick->tile, pick->overlap, pick->peak_mib, a->budget_mib);
    } else {
        a->feasible = 1;
        if (!pick->tile)
            snprintf(a->why, sizeof a->why, "the full-frame working set at %d (~%.0f MiB, %s) fits the %.0f MiB budget",
                     TARGET, pick->peak_mib, pick->source, a->budget_mib);
        else if (m[0].peak_mib <= a->budget_mib)
            snprintf(a->why, sizeof a->why, "both fit; tiled %d/%d measured faster than full frame (%.1f vs %.1f ms)",
                     pick->tile, pick->overlap, pick->median_ms, m[0].median_ms);
        else
            snprintf(a->why, sizeof a->why,
                     "full frame at %d needs ~%.0f MiB, more than the %.0f MiB budget (%s): tiled %d/%d needs ~%.0f MiB",
                     TARGET, m[0].peak_mib, a->budget_mib, m[0].source, pick->tile, pick->overlap, pick->peak_mib);
    }
    p->tile = pick->tile, p->tile_overlap = pick->overlap;
    if (pick->tile && cuda) {
        /* batches of tiles: each more tile adds the pixel-dependent part of the working set; a 4K
         * plate's buffers on the device (plate, blend, 36 bytes a pixel) come on top */
        const double per  = 1225.0 * pick->tile * pick->tile / (2048.0 * 2048.0), plate = 36.0 * 3840 * 2160 / MiB;
        const double room = a->budget_mib - pick->peak_mib - plate;
        int          nb   = room > 0 ? 1 + (int)(room / per) : 1;
        p->max_batch      = nb < 1 ? 1 : nb > 16 ? 16 : nb;
        const size_t used = strlen(a->why);
        snprintf(a->why + used, sizeof a->why - used, "; batches of %d tiles", p->max_batch);
    }
    a->peak_mib = pick->peak_mib, a->median_ms = pick->median_ms, a->source = pick->source;
    /* a stored sweep's fastest fitting full-frame configuration sets the toggles */
    const bench_row *r = !pick->tile ? measured(b, 0, 0, cuda ? 1 : -1, a->budget_mib) : NULL;
    if (r && r->peak_mib <= a->budget_mib) {
        const size_t used = strlen(a->why);
        snprintf(a->why + used, sizeof a->why - used, "; toggles of the fastest measured row that fits (%s, %.1f ms)",
                 r->config, r->median_ms);
        if (r->toggles[0] >= 0) p->keep_intermediates = !r->toggles[0];
        /* under a CUDA Graph stage_gc does nothing: keep it off then (the seed found it harmful elsewhere) */
        if (r->toggles[1] >= 0) p->stage_gc = r->toggles[1] && !(cuda && r->toggles[6] != 0);
        if (r->toggles[2] >= 0) p->fused_attention = r->toggles[2];
        if (r->toggles[4] >= 0) p->fused_decode = r->toggles[4];
        if (r->toggles[5] >= 0 && cuda) p->gpu_preprocess = r->toggles[5];
        if (r->toggles[6] >= 0 && cuda) p->cuda_graph = r->toggles[6];
        if (r->toggles[7] >= 0) p->pad64 = r->toggles[7];
        if (cuda && !strcmp(r->precision, "bfloat16")) p->precision = CK_PREC_BF16;
    }
}

static const char *prec_name(ck_precision p) {
    return p == CK_PREC_FP32 ? "fp32" : p == CK_PREC_BF16 ? "bf16" : p == CK_PREC_FP16 ? "fp16" : "auto";
}

static const char *tri(int v) { return v < 0 ? "auto" : v ? "on" : "off"; }

static void bench_path(char *buf, size_t n, const char *given) {
    const char *home = getenv("HOME");
    buf[0]           = '\0';
    if (given) snprintf(buf, n, "%s", given);
    else if (home) snprintf(buf, n, "%s/.cache/ckey/bench.json", home);
}

/* The stored sweep, usable when it was measured on this device. */
static void load_bench(bench_file *b, const char *path, const host_info *h) {
    memset(b, 0, sizeof *b);
    if (!path[0] || !read_bench(b, path)) return;
    ck_device_info g;
    if (!strcmp(b->device, "cuda") && ck_cuda_device_count() > 0 && ck_cuda_device_info(0, &g) == CK_OK)
        b->usable = !strncmp(b->device_name, g.name, strlen(g.name));
    else if (!strcmp(b->device, "cpu") && ck_cuda_device_count() == 0)
        b->usable = !strcmp(b->device_name, h->cpu);
}

/* ---- output ---- */

static void json_s(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

/* One line per GPU: the mode its memory allows (human) or the same fields as the recommendation (JSON). */
static const char *advice_mode(const advice *a, char *buf, size_t n) {
    if (a->p.tile) snprintf(buf, n, "tiled %d/%d", a->p.tile, a->p.tile_overlap);
    else snprintf(buf, n, "full frame at %d", a->p.size);
    return buf;
}

static void print_json(const host_info *h, const ckpt_status *c, const bench_file *b, const advice *a, const mode *m,
                       int nm, const advice *per, int ng) {
    printf("{\"cpu\": {\"model\": ");
    json_s(h->cpu);
    printf(", \"cores\": %d, \"mem_total_mib\": %.0f, \"mem_available_mib\": %.0f},\n", h->cores, h->mem_total_mib,
           h->mem_avail_mib);
#ifdef CK_HAVE_CUDA
    printf(" \"cuda_built\": true, \"cuda_devices\": [");
#else
    printf(" \"cuda_built\": false, \"cuda_devices\": [");
#endif
    const int nd = ck_cuda_device_count();
    for (int i = 0; i < nd; i++) {
        ck_device_info d;
        if (ck_cuda_device_info(i, &d) != CK_OK) continue;
        printf("%s{\"index\": %d, \"name\": ", i ? ", " : "", i);
        json_s(d.name);
        printf(", \"total_mib\": %.0f, \"free_mib\": %.0f, \"compute_capability\": \"%d.%d\", \"multiprocessors\": %d, "
               "\"integrated\": %s}",
               d.total_bytes / MiB, d.free_bytes / MiB, d.cc_major, d.cc_minor, d.multiprocessors,
               d.integrated ? "true" : "false");
    }
    printf("],\n \"checkpoint\": {\"searched\": [");
    for (int i = 0; i < c->n_searched; i++) {
        printf("%s", i ? ", " : "");
        json_s(c->searched[i]);
    }
    printf("], \"found\": ");
    if (c->found_at < 0) printf("null");
    else {
        json_s(c->searched[c->found_at]);
        printf(", \"format\": ");
        json_s(c->format);
        printf(", \"size_mib\": %.1f, \"valid\": %s, \"summary\": ", c->size_mib, c->valid ? "true" : "false");
        json_s(c->summary);
    }
    printf("},\n \"bench_json\": ");
    if (b->path[0]) {
        json_s(b->path);
        printf(", \"bench_json_usable\": %s", b->usable ? "true" : "false");
    } else printf("null");
    printf(",\n \"estimates\": [");
    for (int i = 0; i < nm; i++)
        printf("%s{\"mode\": \"%s\", \"size\": %d, \"tile\": %d, \"overlap\": %d, \"peak_mib\": %.0f, \"source\": \"%s\"}",
               i ? ", " : "", m[i].tile ? "tiled" : "full", TARGET, m[i].tile, m[i].overlap, m[i].peak_mib, m[i].source);
    const ck_params *p = &a->p;
    printf("],\n \"recommendation\": {\"device\": \"%s\", \"feasible\": %s, \"precision\": \"%s\", \"mode\": \"%s\", "
           "\"size\": %d, \"tile\": %d, \"overlap\": %d, \"batch\": %d, \"threads\": %d, \"budget_mib\": %.0f, "
           "\"peak_mib\": %.0f, "
           "\"source\": \"%s\", \"toggles\": {\"slim\": %d, \"stage_gc\": %d, \"sdpa\": %d, \"fused_decode\": %d, "
           "\"gpu_preprocess\": \"%s\", \"compile\": \"%s\", \"pad64\": \"%s\"}, \"reason\": ",
           a->cuda_index >= 0 ? "cuda" : "cpu", a->feasible ? "true" : "false", prec_name(p->precision),
           p->tile ? "tiled" : "full", p->size, p->tile, p->tile_overlap, p->max_batch ? p->max_batch : 1,
           p->threads ? p->threads : h->cores,
           a->budget_mib, a->peak_mib, a->source, !p->keep_intermediates, p->stage_gc, p->fused_attention,
           p->fused_decode, tri(p->gpu_preprocess), tri(p->cuda_graph), tri(p->pad64));
    json_s(a->why);
    printf(", \"preset\": \"--preset auto\"}");
    if (ng > 0) { /* every GPU's own: its memory decides the mode (ckey key --devices keys on several) */
        printf(",\n \"per_device\": [");
        for (int i = 0; i < ng; i++) {
            const ck_params *q = &per[i].p;
            printf("%s{\"index\": %d, \"feasible\": %s, \"mode\": \"%s\", \"size\": %d, \"tile\": %d, \"overlap\": %d, "
                   "\"batch\": %d, \"budget_mib\": %.0f, \"peak_mib\": %.0f}",
                   i ? ", " : "", per[i].cuda_index, per[i].feasible ? "true" : "false", q->tile ? "tiled" : "full",
                   q->size, q->tile, q->tile_overlap, q->max_batch ? q->max_batch : 1, per[i].budget_mib, per[i].peak_mib);
        }
        printf("]");
    }
    printf("}\n");
}

static void print_human(const host_info *h, const ckpt_status *c, const bench_file *b, const advice *a, const mode *m,
                        int nm, const advice *per, int ng) {
    printf("ckey doctor\n\nDevices\n  CPU: %s, %d cores, memory %.1f GiB (%.1f GiB available)\n", h->cpu, h->cores,
           h->mem_total_mib / 1024, h->mem_avail_mib / 1024);
    const int nd = ck_cuda_device_count();
#ifdef CK_HAVE_CUDA
    if (!nd) printf("  CUDA: built in, but no usable driver or device\n");
#else
    printf("  CUDA: this build has no CUDA support (built without nvcc)\n");
#endif
    for (int i = 0; i < nd; i++) {
        ck_device_info d;
        if (ck_cuda_device_info(i, &d) != CK_OK) continue;
        printf("  CUDA %d: %s, sm_%d%d, %d SMs, memory %.1f GiB (%.1f GiB free)%s%s\n", i, d.name, d.cc_major,
               d.cc_minor, d.multiprocessors, d.total_bytes / MiB / 1024, d.free_bytes / MiB / 1024,
               d.integrated ? ", shares host memory" : "", d.cc_major < 8 ? " - too old for ckey (sm_80+)" : "");
    }
    if (nd > 1)
        printf("  ckey key/clip use CUDA device 0; --devices 1 keys on device 1, --devices all on every device (a model "
               "each, frames shared)\n");
    if (c->given) printf("\nCheckpoint\n");
    else printf("\nCheckpoint (`ckey key` looks in this order)\n");
    if (!c->given && (!getenv("CKEY_CHECKPOINT") || !*getenv("CKEY_CHECKPOINT"))) printf("  unset:   $CKEY_CHECKPOINT\n");
    for (int i = 0; i < c->n_searched; i++)
        printf("  %s %s\n", c->found_at == i ? "found:  " : c->found_at >= 0 && i > c->found_at ? "skipped:" : "absent: ",
               c->searched[i]);
    if (c->found_at >= 0)
        printf("  %s, %.1f MiB: %s\n", c->format, c->size_mib, c->summary);
    else
        printf("  none: `ckey key` uses the built-in small keyer (7 MB, far below CorridorKey's quality: see\n"
               "  docs/model_card_small.md); for CorridorKey quality get CorridorKey.pth (Hugging Face\n"
               "  nikopueringer/CorridorKey_v1.0) into ~/.cache/ckey/, or pass --checkpoint FILE\n");
    printf("\nWorking set at %d (%s, MiB; budget %.0f)\n", TARGET, a->cuda_index >= 0 ? "device peak" : "peak RSS",
           a->budget_mib);
    for (int i = 0; i < nm; i++) {
        char name[64];
        if (m[i].tile) snprintf(name, sizeof name, "tiled %d/%d", m[i].tile, m[i].overlap);
        else snprintf(name, sizeof name, "full frame");
        printf("  %-14s %7.0f  %s%s", name, m[i].peak_mib, m[i].peak_mib <= a->budget_mib ? "fits" : "too big",
               !strcmp(m[i].source, "bench") ? " (measured)" : "");
        if (m[i].median_ms > 0) printf(", %.1f ms per frame (measured)", m[i].median_ms);
        printf("\n");
    }
    if (b->path[0])
        printf("  stored sweep %s: %s\n", b->path,
               b->usable ? "used (same device)" : "not used (measured on another device)");
    else
        printf("  (estimates from ckey's measured formula; `ckey bench --sweep ablation --resolution 2048 --tiled "
               "768/64 512/64 --json ~/.cache/ckey/bench.json` measures this machine)\n");
    const ck_params *p = &a->p;
    printf("\nRecommendation%s\n", a->feasible ? "" : " (does not fit: see why)");
    printf("  device %s, precision %s, %s", a->cuda_index >= 0 ? "cuda" : "cpu", prec_name(p->precision),
           p->tile ? "" : "full frame at 2048");
    if (p->tile) printf("tiled %d/%d", p->tile, p->tile_overlap);
    if (p->tile && p->max_batch > 1) printf(" in batches of %d tiles", p->max_batch);
    if (a->cuda_index < 0) printf(", %d threads (all cores)", h->cores);
    printf("\n  toggles: slim %s, sdpa %s, pad64 %s, compile %s, fused_decode %s, gpu_preprocess %s, stage_gc %s\n",
           tri(!p->keep_intermediates), tri(p->fused_attention), tri(p->pad64), a->cuda_index >= 0 ? tri(p->cuda_graph) : "n/a",
           tri(p->fused_decode), a->cuda_index >= 0 ? tri(p->gpu_preprocess) : "n/a", tri(p->stage_gc));
    printf("  why: %s\n", a->why);
    if (a->cuda_index < 0)
        printf("  note: the CPU backend computes in fp32 only; a 2048 frame takes about 30 s on 16 cores and minutes "
               "on a few (measured: 31.6 s on 16 cores, 157 s on 2)\n");
    printf("  use: ckey key --preset auto ...   (explicit options override the preset)\n");
    for (int i = 0; i < ng; i++) { /* several GPUs: each one's own, by its free memory */
        char mode_name[64];
        if (i == 0) printf("\nPer GPU (ckey key --devices LIST keys on several)\n");
        if (per[i].cuda_index < 0) printf("  CUDA %d: not usable by ckey\n", i);
        else
            printf("  CUDA %d: %s%s, ~%.0f of a %.0f MiB budget%s\n", i, advice_mode(&per[i], mode_name, sizeof mode_name),
                   per[i].p.tile && per[i].p.max_batch > 1 ? " in batches of tiles" : "", per[i].peak_mib,
                   per[i].budget_mib, per[i].feasible ? "" : " (does not fit)");
    }
}

static void usage_doctor(FILE *f) {
    fprintf(f, "usage: ckey doctor [--json] [--checkpoint FILE] [--bench-json FILE]\n"
               "Prints the CPU, memory and CUDA devices, where the checkpoint is looked for ($CKEY_CHECKPOINT,\n"
               "./CorridorKey.pth, ~/.cache/ckey/CorridorKey.pth) and whether it loads, the working set of each\n"
               "mode at 2048 (full frame, tiled 768/64, 512/64, 1024/64) and the recommended configuration, which\n"
               "`ckey key --preset auto` applies. Working sets come from a stored `ckey bench --sweep ... --json`\n"
               "measured on this device (--bench-json FILE, default ~/.cache/ckey/bench.json) when present, else\n"
               "from ckey's measured formula. --json prints one JSON object instead.\n"
               "\n"
               "options:\n");
    ck_opts_help(f, CK_CMD_DOCTOR);
}

static double ckpt_mib_for(const ckpt_status *c) { return c->found_at >= 0 ? c->size_mib : 380.0; }

int ck_cli_doctor(int argc, char **argv) {
    doctor_opts o = {0};
    ck_opt_result r;
    const int     st = ck_opts_parse(CK_CMD_DOCTOR, argc, argv, &o, &r);
    if (st == CK_OPT_HELP) {
        usage_doctor(stdout);
        return 0;
    }
    if (st != CK_OPT_OK) return 2;
    const int   json = o.json;
    const char *ckpt = o.ckpt, *bench = o.bench;
    host_info h;
    read_host(&h);
    ckpt_status c;
    check_checkpoint(&c, ckpt);
    char path[1100];
    bench_path(path, sizeof path, bench);
    bench_file b;
    load_bench(&b, path, &h);
    if (bench && !b.path[0]) {
        fprintf(stderr, "ckey: doctor: cannot read %s\n", bench);
        return 1;
    }
    advice a;
    advise(&a, &h, ckpt_mib_for(&c), &b, c.builtin, 0);
    mode      m[4];
    const int nm = list_modes(m, a.cuda_index >= 0, a.p.precision != CK_PREC_FP32, ckpt_mib_for(&c), &b, a.budget_mib,
                              c.builtin);
    /* with several GPUs, each one's own (their free memory, and so the mode that fits, may differ) */
    advice    per[MAX_GPUS];
    const int ng = ck_cuda_device_count() > 1 ? (ck_cuda_device_count() < MAX_GPUS ? ck_cuda_device_count() : MAX_GPUS) : 0;
    for (int i = 0; i < ng; i++) advise(&per[i], &h, ckpt_mib_for(&c), &b, c.builtin, i);
    if (json) print_json(&h, &c, &b, &a, m, nm, per, ng);
    else print_human(&h, &c, &b, &a, m, nm, per, ng);
    free(b.rows);
    return 0;
}

int ck_cli_apply_preset(const char *name, ck_params *p) {
    if (!name || strcmp(name, "auto") != 0) {
        fprintf(stderr, "ckey: --preset expects auto, got '%s'\n", name ? name : "");
        return 0;
    }
    host_info h;
    read_host(&h);
    char path[1100];
    bench_path(path, sizeof path, NULL);
    bench_file b;
    load_bench(&b, path, &h);
    advice a;
    advise(&a, &h, 380.0, &b, 0, 0); /* the checkpoint is not known yet: CorridorKey's order */
    free(b.rows);
    /* only what the preset decides: a later --tile without --overlap still gets its default overlap */
    const ck_params *q = &a.p;
    /* fp16 on CUDA and fp32 on the CPU are what "auto" resolves to: kept as auto, a later --device cpu
     * still gets the CPU's fp32 */
    p->device    = q->device, p->threads = q->threads;
    p->precision = q->precision == CK_PREC_BF16 ? CK_PREC_BF16 : CK_PREC_AUTO;
    p->tile   = q->tile;
    if (q->tile) p->tile_overlap = q->tile_overlap, p->max_batch = p->max_batch ? p->max_batch : q->max_batch;
    else p->size = q->size;
    p->keep_intermediates = q->keep_intermediates, p->stage_gc = q->stage_gc, p->fused_attention = q->fused_attention;
    p->fused_decode = q->fused_decode, p->gpu_preprocess = q->gpu_preprocess, p->cuda_graph = q->cuda_graph;
    p->pad64 = q->pad64;
    fprintf(stderr, "ckey: --preset auto: %s %s, %s", a.cuda_index >= 0 ? "cuda" : "cpu", prec_name(p->precision),
            p->tile ? "tiled" : "full frame");
    if (p->tile) fprintf(stderr, " %d/%d", p->tile, p->tile_overlap);
    fprintf(stderr, " (%s)\n", a.why);
    return 1;
}
