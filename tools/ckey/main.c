/* ckey command-line tool: `ckey key` keys one frame and writes CorridorKey's output passes.
 * Exit codes: 0 success, 1 runtime failure (I/O, model, device), 2 usage error. */
#include "ckey.h"
#include "cli.h"
#include "pipeline.h"
#include "ctx.h"
#include "io/image.h"
#include "io/sequence.h"
#ifdef CK_HAVE_FFMPEG
#include "io/video.h"
#endif
#include "pipeline/frame_ops.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

static void usage_main(FILE *f) {
    fprintf(f,
            "ckey %d.%d.%d - CorridorKey neural green-screen keyer\n"
            "\n"
            "usage: ckey <command> [options]\n"
            "\n"
            "commands:\n"
            "  key       key one frame: plate + rough alpha hint -> Matte, FG, Processed, Comp passes\n"
            "  clip      key a CorridorKey clip folder (Input/, AlphaHint/ -> Output/), or a folder of clips\n"
            "  bench     time the network alone at one size (JSON), or sweep the toggles (--sweep)\n"
            "  doctor    devices, checkpoint, and the configuration this machine should use\n"
            "  plates    write synthetic green-screen plates with exact ground truth (alpha, fg, hint)\n"
            "  quality   score configurations (full frame, tiled, precision, refiner) against plate truth\n"
            "  version   print the version\n"
            "\n"
            "Run 'ckey <command> --help' for the options of a command.\n",
            CK_VERSION_MAJOR, CK_VERSION_MINOR, CK_VERSION_PATCH);
}

static void usage_key(FILE *f) {
    fprintf(f,
            "usage: ckey key --image FILE|DIR [--hint FILE|DIR] --out DIR [options]\n"
            "\n"
            "Keys one green-screen frame with the CorridorKey GreenFormer network and writes\n"
            "  DIR/Matte/<stem>.exr      alpha, linear, 1 channel \"Y\", half float\n"
            "  DIR/FG/<stem>.exr         straight foreground, sRGB-encoded values, RGB half float\n"
            "  DIR/Processed/<stem>.exr  linear premultiplied RGBA (despilled, despeckled), half float\n"
            "  DIR/Comp/<stem>.png       8-bit sRGB preview over a checkerboard\n"
            "where <stem> is the image file name without its extension. Files appear only when\n"
            "every pass has been written (temporary files are renamed into place).\n"
            "\n"
            "inputs:\n"
            "  --image FILE          plate: PNG (8/16-bit), JPEG or EXR (half/float; alpha dropped).\n"
            "                        8/16-bit files are sRGB; EXR files are linear and converted to\n"
            "                        sRGB on read unless --linear is given\n"
            "  --hint FILE           rough alpha hint (white = foreground), any of the same formats;\n"
            "                        a multi-channel hint uses its first channel (R); resized to the\n"
            "                        image with bilinear filtering when sizes differ. Without --hint an\n"
            "                        automatic chroma-difference hint against the detected green or blue\n"
            "                        screen is used (with a warning)\n"
            "  --checkpoint FILE     CorridorKey.pth or .safetensors (default: $CKEY_CHECKPOINT, else\n"
            "                        ./CorridorKey.pth, else ~/.cache/ckey/CorridorKey.pth)\n"
            "sequences:\n"
            "  --image DIR --hint DIR  key every frame of a folder (.png/.jpg/.exr, natural order), paired by\n"
            "                        position with the hint folder (same count, else an error); a single\n"
            "                        --hint FILE is used for every frame\n"
            "  --frames A-B          only positions A..B (0-based, inclusive) of the sorted folder\n"
            "  --shard I/N           contiguous share I (0-based) of N, for render-farm nodes\n"
            "  --skip-existing       skip frames whose passes are all present (resume an interrupted run)\n"
            "video:\n"
            "  --image FILE.mov|mp4|mkv|...  a video plate (any codec FFmpeg decodes, 8-16 bit); passes are\n"
            "                        named by zero-padded frame index; --hint may be a video, a folder or\n"
            "                        one image\n"
            "  --video-out LIST      also encode videos into --out (comma list): prores (ProRes 4444 .mov,\n"
            "                        straight sRGB foreground + the matte as alpha), ffv1 (.mkv, lossless\n"
            "                        16-bit, same content), h264 (.mp4 preview of the comp). Default for a\n"
            "                        video plate: prores,h264; for sequences: none. Not with --shard or\n"
            "                        --skip-existing (the videos would miss frames)\n"
            "output:\n"
            "  --out DIR             output folder (created if missing)\n"
            "  --exr-compression C   pxr24 (default, as CorridorKey), zip or none\n"
            "  --no-comp             skip the Comp pass\n"
            "model:\n"
            "  --size N              model resolution, multiple of 32 (default 2048, the training size)\n"
            "  --tile N              tiled mode: run the model at S = N on N x N tiles of the plate at its\n"
            "                        native resolution, blended with linear ramps (e.g. 512, 768, 1024);\n"
            "                        tiles whose hint is all background/foreground are skipped\n"
            "  --overlap PX          tile overlap in pixels (default 64 with --tile)\n"
            "  --preset auto         device, precision, full frame or tiles and toggles as `ckey doctor`\n"
            "                        recommends for this machine; explicit options override it\n"
            "  --linear              the plate is linear light (converted to sRGB after resizing)\n"
            "  --refiner-scale X     scale of the refiner's correction in logit space (default 1.0;\n"
            "                        0 = coarse decoder output only)\n"
            "  --head-dim N          attention head width (default: from the checkpoint, else 56)\n"
            "post-processing:\n"
            "  --despill S           green despill strength 0..1 (default 0.5)\n"
            "  --despeckle-size N    remove matte islands smaller than N pixels (default 400)\n"
            "  --no-despeckle        keep every island\n"
            "execution:\n"
            "  --device D            cpu, cuda or auto (default auto: CUDA when available, else CPU)\n"
            "  --threads N           CPU threads (default: all cores)\n"
            "  --precision P         fp32 (exact parity mode), bf16, fp16 or auto (default auto: fp16 on\n"
            "                        CUDA, fp32 on the CPU, which computes in fp32 only)\n"
            "  --no-sdpa             CUDA: unfused reference attention instead of the fused kernel\n"
            "  --pad64 / --no-pad64  CUDA: pad head_dim 56 to 64 in attention (default: on for bf16/fp16)\n"
            "  --no-compile          CUDA: do not capture the forward as a CUDA Graph\n"
            "  --workers N           threads that post-process and write frames while the next frames are\n"
            "                        decoded and keyed (default: a quarter of the cores, 1 to 8)\n"
            "  --stage-gc            synchronize between backbone, decoders and refiner\n"
            "  --quiet               only print errors\n"
            "  --json                machine-readable progress: one JSON object per line on stdout, with\n"
            "                        \"event\" = started | progress | frame_written | warning | completed | failed\n"
            "\n"
            "exit status: 0 success, 1 failure (unreadable input, bad checkpoint, device or write error),\n"
            "2 invalid command line.\n");
}

typedef struct key_opts {
    const char        *image, *hint, *checkpoint, *out, *frames, *shard;
    int                skip_existing;
    int                json; /* NDJSON events on stdout */
    const char        *video_out; /* comma list: prores, ffv1, h264 */
    ck_exr_compression exr;
    int                quiet;
    int                workers; /* post-processing and writing threads; 0 = ck_pipe_default_workers() */
    ck_params          p;
} key_opts;

int ck_cli_parse_device(const char *d, ck_device *out) {
    if (d && !strcmp(d, "cpu")) *out = CK_DEVICE_CPU;
    else if (d && !strcmp(d, "cuda")) *out = CK_DEVICE_CUDA;
    else if (d && !strcmp(d, "auto")) *out = CK_DEVICE_AUTO;
    else {
        fprintf(stderr, "ckey: --device expects cpu, cuda or auto, got '%s'\n", d ? d : "");
        return 0;
    }
    return 1;
}

int ck_cli_parse_precision(const char *v, ck_precision *out) {
    if (v && !strcmp(v, "fp32")) *out = CK_PREC_FP32;
    else if (v && !strcmp(v, "bf16")) *out = CK_PREC_BF16;
    else if (v && !strcmp(v, "fp16")) *out = CK_PREC_FP16;
    else if (v && !strcmp(v, "auto")) *out = CK_PREC_AUTO;
    else {
        fprintf(stderr, "ckey: --precision expects fp32, bf16, fp16 or auto, got '%s'\n", v ? v : "");
        return 0;
    }
    return 1;
}

const char *ck_cli_device_name(const ck_ctx *ctx) { return ck_ctx_device_name(ctx); }

static int parse_int(const char *opt, const char *v, int lo, int hi, int *out) {
    char *end;
    errno  = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || x < lo || x > hi) {
        fprintf(stderr, "ckey: %s expects an integer in [%d, %d], got '%s'\n", opt, lo, hi, v ? v : "");
        return 0;
    }
    *out = (int)x;
    return 1;
}

static int parse_float(const char *opt, const char *v, float lo, float hi, float *out) {
    char *end;
    errno   = 0;
    float x = v ? strtof(v, &end) : 0;
    if (!v || errno || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "ckey: %s expects a number in [%g, %g], got '%s'\n", opt, lo, hi, v ? v : "");
        return 0;
    }
    *out = x;
    return 1;
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static const char *default_checkpoint(char *buf, size_t n) {
    const char *env = getenv("CKEY_CHECKPOINT");
    if (env && *env) return env;
    if (file_exists("CorridorKey.pth")) return "CorridorKey.pth";
    const char *home = getenv("HOME");
    if (home) {
        snprintf(buf, n, "%s/.cache/ckey/CorridorKey.pth", home);
        if (file_exists(buf)) return buf;
    }
    return NULL;
}

static int mkdir_p(const char *path) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return 0;
        *p = '/';
    }
    return mkdir(tmp, 0777) == 0 || errno == EEXIST;
}

static void file_stem(char *out, size_t n, const char *path) {
    const char *base = strrchr(path, '/');
    base             = base ? base + 1 : path;
    snprintf(out, n, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && dot != out) *dot = '\0';
}

static int parse_key(int argc, char **argv, key_opts *o, int clip_mode) {
    memset(o, 0, sizeof *o);
    o->p   = ck_params_default();
    o->p.tile_overlap = -1; /* 64 with --tile unless given */
    o->exr = CK_EXR_PXR24;
    for (int i = 0; i < argc; i++) /* --preset first, so explicit options override its choices */
        if (!strcmp(argv[i], "--preset") && !ck_cli_apply_preset(i + 1 < argc ? argv[i + 1] : NULL, &o->p)) return 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKE() (i++, v)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_key(stdout);
            exit(0);
        } else if (!strcmp(a, "--image")) o->image = TAKE();
        else if (!strcmp(a, "--hint")) o->hint = TAKE();
        else if (!strcmp(a, "--checkpoint")) o->checkpoint = TAKE();
        else if (!strcmp(a, "--out")) o->out = TAKE();
        else if (!strcmp(a, "--frames")) o->frames = TAKE();
        else if (!strcmp(a, "--shard")) o->shard = TAKE();
        else if (!strcmp(a, "--skip-existing")) o->skip_existing = 1;
        else if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--video-out")) o->video_out = TAKE();
        else if (!strcmp(a, "--preset")) i++; /* applied before this loop */
        else if (!strcmp(a, "--size")) {
            if (!parse_int(a, TAKE(), 32, 16384, &o->p.size)) return 0;
            if (o->p.size % 32) {
                fprintf(stderr, "ckey: --size %d is not a multiple of 32\n", o->p.size);
                return 0;
            }
        } else if (!strcmp(a, "--tile")) {
            if (!parse_int(a, TAKE(), 32, 16384, &o->p.tile)) return 0;
            if (o->p.tile % 32) {
                fprintf(stderr, "ckey: --tile %d is not a multiple of 32\n", o->p.tile);
                return 0;
            }
        } else if (!strcmp(a, "--overlap")) {
            if (!parse_int(a, TAKE(), 0, 16383, &o->p.tile_overlap)) return 0;
        } else if (!strcmp(a, "--linear")) o->p.input_is_linear = 1;
        else if (!strcmp(a, "--despill")) {
            if (!parse_float(a, TAKE(), 0.0f, 1.0f, &o->p.despill)) return 0;
        } else if (!strcmp(a, "--despeckle-size")) {
            if (!parse_int(a, TAKE(), 1, 1 << 30, &o->p.despeckle_size)) return 0;
        } else if (!strcmp(a, "--no-despeckle")) o->p.despeckle = 0;
        else if (!strcmp(a, "--refiner-scale")) {
            if (!parse_float(a, TAKE(), -100.0f, 100.0f, &o->p.refiner_scale)) return 0;
        } else if (!strcmp(a, "--head-dim")) {
            if (!parse_int(a, TAKE(), 1, 4096, &o->p.head_dim)) return 0;
        } else if (!strcmp(a, "--threads")) {
            if (!parse_int(a, TAKE(), 1, 4096, &o->p.threads)) return 0;
        } else if (!strcmp(a, "--no-comp")) o->p.comp = 0;
        else if (!strcmp(a, "--precision")) {
            if (!ck_cli_parse_precision(TAKE(), &o->p.precision)) return 0;
        } else if (!strcmp(a, "--no-sdpa")) o->p.fused_attention = 0;
        else if (!strcmp(a, "--pad64")) o->p.pad64 = 1;
        else if (!strcmp(a, "--no-pad64")) o->p.pad64 = 0;
        else if (!strcmp(a, "--no-compile")) o->p.cuda_graph = 0;
        else if (!strcmp(a, "--workers")) {
            if (!parse_int(a, TAKE(), 1, 64, &o->workers)) return 0;
        }
        else if (!strcmp(a, "--stage-gc")) o->p.stage_gc = 1;
        else if (!strcmp(a, "--quiet")) o->quiet = 1;
        else if (!strcmp(a, "--device")) {
            if (!ck_cli_parse_device(TAKE(), &o->p.device)) return 0;
        } else if (!strcmp(a, "--exr-compression")) {
            const char *c = TAKE();
            if (c && !strcmp(c, "pxr24")) o->exr = CK_EXR_PXR24;
            else if (c && !strcmp(c, "zip")) o->exr = CK_EXR_ZIP;
            else if (c && !strcmp(c, "none")) o->exr = CK_EXR_NONE;
            else {
                fprintf(stderr, "ckey: --exr-compression expects pxr24, zip or none, got '%s'\n", c ? c : "");
                return 0;
            }
        } else {
            fprintf(stderr, "ckey: unknown option '%s' (see 'ckey key --help')\n", a);
            return 0;
        }
#undef TAKE
    }
    if (o->p.tile_overlap < 0) o->p.tile_overlap = o->p.tile ? (o->p.tile > 128 ? 64 : o->p.tile / 4) : 0;
    if (o->p.tile && o->p.tile_overlap >= o->p.tile) {
        fprintf(stderr, "ckey: --overlap %d must be smaller than --tile %d\n", o->p.tile_overlap, o->p.tile);
        return 0;
    }
    if (!clip_mode && (!o->image || !o->out)) {
        fprintf(stderr, "ckey: key needs --image and --out (see 'ckey key --help')\n");
        return 0;
    }
    return 1;
}

/* Reads the plate as 3-channel sRGB-or-linear floats following CorridorKey's CLI conventions. */
static ck_status read_plate(const char *path, int input_is_linear, ck_image *rgb, ck_err *err) {
    ck_image  raw;
    ck_status st = ck_image_read(path, &raw, NULL, err);
    if (st != CK_OK) return st;
    const int is_exr = ck_image_sniff(path) == CK_IMAGE_EXR;
    size_t    n      = (size_t)raw.width * raw.height;
    rgb->width = raw.width, rgb->height = raw.height, rgb->channels = 3;
    rgb->data  = malloc(sizeof(float) * n * 3);
    if (!rgb->data) {
        ck_image_release(&raw);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    }
    for (size_t i = 0; i < n; i++) {
        for (int c = 0; c < 3; c++) {
            /* grey files are replicated; alpha (4th channel) is dropped */
            float v = raw.data[i * raw.channels + (raw.channels >= 3 ? c : 0)];
            if (is_exr) {
                v = v > 0.0f ? v : 0.0f; /* negatives clamped as CorridorKey does */
                if (!input_is_linear) v = ck_linear_to_srgb(v);
            }
            rgb->data[i * 3 + c] = v;
        }
    }
    ck_image_release(&raw);
    return CK_OK;
}

static ck_status read_hint(const char *path, ck_image *hint, ck_err *err) {
    ck_image  raw;
    ck_status st = ck_image_read(path, &raw, NULL, err);
    if (st != CK_OK) return st;
    size_t n    = (size_t)raw.width * raw.height;
    hint->width = raw.width, hint->height = raw.height, hint->channels = 1;
    hint->data  = malloc(sizeof(float) * n);
    if (!hint->data) {
        ck_image_release(&raw);
        return ck__fail(err, CK_STATUS_EOOM, "%s: out of memory", path);
    }
    for (size_t i = 0; i < n; i++) hint->data[i] = raw.data[i * raw.channels];
    ck_image_release(&raw);
    return CK_OK;
}

typedef struct pass_out {
    const char *dir;
    const char *ext;
    ck_image   *img;
    char        final_path[5200];
    char        tmp_path[5300];
} pass_out;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* CorridorKey's passes, in writing order (Comp only when enabled); images bound when res is given. */
static int init_passes(pass_out *passes, const key_opts *o, ck_result *res) {
    static const char *dirs[4] = {"Matte", "FG", "Processed", "Comp"};
    static const char *exts[4] = {"exr", "exr", "exr", "png"};
    ck_image          *imgs[4] = {res ? &res->alpha : NULL, res ? &res->fg : NULL, res ? &res->processed : NULL,
                                  res ? &res->comp : NULL};
    for (int i = 0; i < 4; i++) {
        passes[i].dir = dirs[i], passes[i].ext = exts[i], passes[i].img = imgs[i];
        passes[i].final_path[0] = passes[i].tmp_path[0] = '\0';
    }
    return o->p.comp ? 4 : 3;
}

static void pass_paths(pass_out *passes, int npass, const char *out, const char *stem) {
    for (int i = 0; i < npass; i++) {
        pass_out *p = &passes[i];
        snprintf(p->final_path, sizeof p->final_path, "%s/%s/%s.%s", out, p->dir, stem, p->ext);
        snprintf(p->tmp_path, sizeof p->tmp_path, "%s/%s/.%s.partial%d.%s", out, p->dir, stem, (int)getpid(), p->ext);
    }
}

/* Writes every pass of one frame: phase 1 each pass into a hidden temporary file, phase 2 rename all.
 * A failure in phase 1 removes what was written, so the output folder never holds a partial set. */
static int write_passes(const key_opts *o, const char *stem, ck_result *res) {
    pass_out  passes[4];
    const int npass = init_passes(passes, o, res);
    ck_err    err   = {{0}};
    int       rc = 0, written = 0;
    pass_paths(passes, npass, o->out, stem);
    for (int i = 0; i < npass && rc == 0; i++) {
        pass_out *p = &passes[i];
        char      dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", o->out, p->dir);
        if (!mkdir_p(dir)) {
            fprintf(stderr, "ckey: cannot create output folder %s: %s\n", dir, strerror(errno));
            rc = EXIT_RUNTIME;
            break;
        }
        ck_status st = !strcmp(p->ext, "png") ? ck_image_write_png8(p->tmp_path, p->img, &err)
                                              : ck_image_write_exr(p->tmp_path, p->img, o->exr, &err);
        if (st != CK_OK) rc = EXIT_RUNTIME;
        else written = i + 1;
    }
    if (rc == 0) {
        for (int i = 0; i < npass; i++)
            if (rename(passes[i].tmp_path, passes[i].final_path) != 0) {
                fprintf(stderr, "ckey: cannot move %s into place: %s\n", passes[i].final_path, strerror(errno));
                rc = EXIT_RUNTIME;
            }
    } else {
        for (int i = 0; i < written; i++) remove(passes[i].tmp_path);
    }
    return rc;
}

/* --skip-existing: every pass of the frame is already there. */
static int frame_done(const key_opts *o, const char *stem) {
    pass_out  passes[4];
    const int npass = init_passes(passes, o, NULL);
    pass_paths(passes, npass, o->out, stem);
    for (int i = 0; i < npass; i++)
        if (!file_exists(passes[i].final_path)) return 0;
    return 1;
}

/* Writes s as a JSON string literal. */
static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_failed(const key_opts *o, const char *msg, int code) {
    if (!o->json) return;
    printf("{\"event\": \"failed\", \"exit_code\": %d, \"message\": ", code);
    json_str(stdout, msg);
    printf("}\n");
    fflush(stdout);
}

/* Human progress: a redrawn bar on a terminal, one line per frame otherwise. */
static void progress_human(int done_idx, int count, const char *stem, double fps, double eta) {
    if (isatty(2)) {
        const int width = 30, fill = count ? (int)((double)done_idx / count * width) : width;
        fprintf(stderr, "\r[");
        for (int i = 0; i < width; i++) fputc(i < fill ? '=' : ' ', stderr);
        fprintf(stderr, "] %d/%d  %.2f fps  ETA %.0f s  %-24.24s", done_idx, count, fps, eta, stem);
        if (done_idx == count) fputc('\n', stderr);
    } else {
        fprintf(stderr, "ckey: [%d/%d] %s  %.2f fps  ETA %.0f s\n", done_idx, count, stem, fps, eta);
    }
}

static int run_key(key_opts o);

static int cmd_key(int argc, char **argv) {
    key_opts o;
    if (!parse_key(argc, argv, &o, 0)) return EXIT_USAGE;
    return run_key(o);
}

/* First existing "<dir>/<stem>.<ext>" for the video extensions CorridorKey accepts (either case of the
 * stem's first letter). */
static int find_video(char *path, size_t n, const char *dir, const char *stem) {
    static const char *ext[] = {"mp4", "mov", "avi", "mkv", "MP4", "MOV", "AVI", "MKV"};
    char               alt[64];
    snprintf(alt, sizeof alt, "%s", stem);
    alt[0] = (char)(alt[0] ^ 0x20); /* Input <-> input */
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
            snprintf(path, n, "%s/%s.%s", dir, k ? alt : stem, ext[i]);
            if (file_exists(path)) return 1;
        }
    return 0;
}

/* A clip folder in CorridorKey's layout: Input/ frames or an Input.<video>, AlphaHint/ (or alphahint/)
 * hints or an AlphaHint.<video>, Output/. */
static int is_clip(const char *dir, char *input, char *hint, char *out, size_t n) {
    snprintf(input, n, "%s/Input", dir);
    if (!is_dir(input) && !find_video(input, n, dir, "Input")) return 0;
    snprintf(hint, n, "%s/AlphaHint", dir);
    if (!is_dir(hint)) snprintf(hint, n, "%s/alphahint", dir);
    if (!is_dir(hint) && !find_video(hint, n, dir, "AlphaHint")) hint[0] = '\0';
    snprintf(out, n, "%s/Output", dir);
    return 1;
}

static int cmd_clip(int argc, char **argv) {
    if (argc < 1 || argv[0][0] == '-') {
        if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
            printf("usage: ckey clip DIR [key options]\n"
                   "Keys a CorridorKey clip folder: DIR/Input/ (frames) or DIR/Input.<mp4|mov|avi|mkv>, DIR/AlphaHint/\n"
                   "or DIR/AlphaHint.<video> (hints, optional: without them the automatic hint is used), writing DIR/Output/{Matte,FG,Processed,Comp}/<stem>. DIR may\n"
                   "also hold several clips as sub-folders (names starting with '.' or '_', IgnoredClips and\n"
                   "Output are skipped). Every 'ckey key' option applies (--frames, --shard, --skip-existing,\n"
                   "--json, --tile, ...), except --image, --hint and --out.\n");
            return 0;
        }
        fprintf(stderr, "ckey: clip needs a folder: ckey clip DIR [options] (see 'ckey clip --help')\n");
        return EXIT_USAGE;
    }
    const char *root = argv[0];
    key_opts    base;
    if (!parse_key(argc - 1, argv + 1, &base, 1)) return EXIT_USAGE;
    if (base.image || base.hint || base.out) {
        fprintf(stderr, "ckey: clip takes its inputs and outputs from the clip folder; drop --image/--hint/--out\n");
        return EXIT_USAGE;
    }
    static char input[4096], hint[4096], out[4096];
    if (is_clip(root, input, hint, out, sizeof input)) {
        key_opts o = base;
        o.image = input, o.hint = hint[0] ? hint : NULL, o.out = out;
        return run_key(o);
    }
    /* a folder of clips */
    DIR *d = opendir(root);
    if (!d) {
        fprintf(stderr, "ckey: %s: cannot open folder: %s\n", root, strerror(errno));
        return EXIT_RUNTIME;
    }
    struct dirent *e;
    char         **names = NULL;
    int            n = 0, rc = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || e->d_name[0] == '_' || !strcmp(e->d_name, "IgnoredClips") ||
            !strcmp(e->d_name, "Output"))
            continue;
        char **nn = realloc(names, sizeof *names * (size_t)(n + 1));
        if (!nn) break;
        names      = nn;
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    for (int i = 0; i < n; i++) /* natural order */
        for (int j = i + 1; j < n; j++)
            if (ck_natural_cmp(names[j], names[i]) < 0) {
                char *t = names[i];
                names[i] = names[j], names[j] = t;
            }
    int clips = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
        if (!is_dir(dir) || !is_clip(dir, input, hint, out, sizeof input)) continue;
        key_opts o = base;
        o.image = input, o.hint = hint[0] ? hint : NULL, o.out = out;
        if (!o.quiet && !o.json) fprintf(stderr, "ckey: clip %s\n", names[i]);
        rc = run_key(o);
        clips++;
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (rc == 0 && clips == 0) {
        fprintf(stderr, "ckey: %s: neither a clip (no Input/ folder) nor a folder of clips\n", root);
        return EXIT_RUNTIME;
    }
    return rc;
}

/* State of one `ckey key` run shared by the pipeline's callbacks (pipeline.h). The reader callback runs
 * on one thread in frame order; write on several threads; ordered and done are serialized. */
typedef struct key_run {
    const key_opts *o;
    const ck_seq   *imgs, *hints;
    int             seq, vid;
    const char     *stem1;
#ifdef CK_HAVE_FFMPEG
    ck_video_reader *vin, *vhint;
    int              want[3];
    ck_video_writer *vw[3];
#endif
    int    start, count, completed;
    double t1;
} key_run;

/* stdout carries NDJSON from several threads: one event per locked print */
static pthread_mutex_t g_out_mu = PTHREAD_MUTEX_INITIALIZER;

static void json_warning(const key_opts *o, int f, const char *msg, const char *stem) {
    pthread_mutex_lock(&g_out_mu);
    printf("{\"event\": \"warning\", \"frame\": %d, \"message\": ", f);
    json_str(stdout, msg);
    if (stem) {
        printf(", \"stem\": ");
        json_str(stdout, stem);
    }
    printf("}\n");
    fflush(stdout);
    pthread_mutex_unlock(&g_out_mu);
    (void)o;
}

static int frame_read(void *user, ck_pipe_frame *fr, char *emsg, size_t n) {
    key_run        *kr = user;
    const key_opts *o  = kr->o;
    const int       f  = fr->index;
    ck_err          err = {{0}};
    const char     *ipath = kr->seq ? kr->imgs->paths[f] : o->image;
    const char     *hpath = kr->hints->n ? kr->hints->paths[f] : o->hint;
    if (kr->seq) snprintf(fr->stem, sizeof fr->stem, "%s", kr->imgs->stems[f]);
    else if (kr->vid) snprintf(fr->stem, sizeof fr->stem, "%05d", f);
    else snprintf(fr->stem, sizeof fr->stem, "%s", kr->stem1);
    ck_image rgb = {0}, hint = {0};
#ifdef CK_HAVE_FFMPEG
    if (kr->vid) { /* the frame is decoded even when it is skipped: the reader is sequential */
        int eof = 0;
        rgb     = (ck_image){ck_video_width(kr->vin), ck_video_height(kr->vin), 3,
                         malloc(sizeof(float) * 3 * (size_t)ck_video_width(kr->vin) * ck_video_height(kr->vin))};
        if (!rgb.data || ck_video_read(kr->vin, rgb.data, 3, &eof, &err) != CK_OK || eof) {
            snprintf(emsg, n, "%s", eof ? "video ended early" : err.msg);
            if (eof) snprintf(emsg, n, "%s ended at frame %d", o->image, f);
            free(rgb.data);
            return 0;
        }
        if (kr->vhint) { /* a hint video: its red channel, as CorridorKey */
            float *t3 = malloc(sizeof(float) * 3 * (size_t)rgb.width * rgb.height);
            hint      = (ck_image){rgb.width, rgb.height, 1, malloc(sizeof(float) * (size_t)rgb.width * rgb.height)};
            if (!t3 || !hint.data || ck_video_read(kr->vhint, t3, 3, &eof, &err) != CK_OK || eof) {
                free(t3), free(rgb.data), free(hint.data);
                snprintf(emsg, n, "hint video ended early or failed to decode");
                return 0;
            }
            for (size_t i = 0; i < (size_t)rgb.width * rgb.height; i++) hint.data[i] = t3[3 * i];
            free(t3);
            hpath = NULL;
        }
    }
#endif
    if (o->skip_existing && frame_done(o, fr->stem)) {
        free(rgb.data), free(hint.data);
        fr->skipped = 1;
        if (o->json) json_warning(o, f, "already written; skipped (--skip-existing)", fr->stem);
        return 1;
    }
    int ok = 1;
    if (!rgb.data) ok = read_plate(ipath, o->p.input_is_linear, &rgb, &err) == CK_OK;
    if (ok && hint.data) {
        /* from the hint video */
    } else if (ok && hpath) {
        ok = read_hint(hpath, &hint, &err) == CK_OK;
    } else if (ok) { /* no hint: the automatic chroma-difference fallback */
        int blue = 0;
        hint     = (ck_image){rgb.width, rgb.height, 1, malloc(sizeof(float) * (size_t)rgb.width * rgb.height)};
        ok       = hint.data && ck_auto_hint(hint.data, rgb.data, rgb.width, rgb.height, &blue) == CK_OK;
        if (ok && f == kr->start) {
            const char *msg = blue ? "no --hint: using an automatic chroma-difference hint against the detected "
                                     "blue screen (a fallback; a drawn or generated hint keys better)"
                                   : "no --hint: using an automatic chroma-difference hint against the detected "
                                     "green screen (a fallback; a drawn or generated hint keys better)";
            if (o->json) json_warning(o, f, msg, NULL);
            else if (!o->quiet) fprintf(stderr, "ckey: warning: %s\n", msg);
        }
        if (!ok) snprintf(err.msg, sizeof err.msg, "%s: out of memory for the automatic hint", ipath);
    }
    if (!ok) {
        free(rgb.data), free(hint.data);
        snprintf(emsg, n, "%s", err.msg);
        return 0;
    }
    fr->rgb = rgb, fr->hint = hint;
    return 1;
}

static int frame_write(void *user, ck_pipe_frame *fr, char *emsg, size_t n) {
    key_run *kr = user;
    if (write_passes(kr->o, fr->stem, &fr->res) == 0) return 1;
    snprintf(emsg, n, "%s: could not write the output passes", fr->stem);
    return 0;
}

#ifdef CK_HAVE_FFMPEG
static int frame_ordered(void *user, ck_pipe_frame *fr, char *emsg, size_t n) {
    static const char *vext[3] = {"_prores4444.mov", "_ffv1.mkv", "_comp.mp4"};
    key_run           *kr      = user;
    const ck_result   *res     = &fr->res;
    ck_err             err     = {{0}};
    for (int k = 0; k < 3; k++) {
        if (!kr->want[k]) continue;
        const int w = res->alpha.width, h = res->alpha.height;
        if (!kr->vw[k]) {
            char path[5200];
            mkdir_p(kr->o->out);
            snprintf(path, sizeof path, "%s/%s%s", kr->o->out, kr->stem1, vext[k]);
            if (ck_video_writer_open(&kr->vw[k], path, (ck_video_codec)k, w, h, kr->vid ? ck_video_fps(kr->vin) : 24.0,
                                     &err) != CK_OK) {
                snprintf(emsg, n, "%s", err.msg);
                return 0;
            }
        }
        float *rgba = malloc(sizeof(float) * 4 * (size_t)w * h);
        if (!rgba) {
            snprintf(emsg, n, "out of memory for the video frame");
            return 0;
        }
        for (size_t i = 0; i < (size_t)w * h; i++) {
            const float *src = k == 2 ? res->comp.data + 3 * i : res->fg.data + 3 * i;
            rgba[4 * i] = src[0], rgba[4 * i + 1] = src[1], rgba[4 * i + 2] = src[2];
            rgba[4 * i + 3] = k == 2 ? 1.0f : res->alpha.data[i];
        }
        const ck_status st = ck_video_write(kr->vw[k], rgba, &err);
        free(rgba);
        if (st != CK_OK) {
            snprintf(emsg, n, "%s", err.msg);
            return 0;
        }
    }
    return 1;
}
#else
#define frame_ordered NULL
#endif

/* Progress and events after each frame (serialized by the pipeline). */
static void frame_done_report(void *user, const ck_pipe_frame *fr) {
    key_run        *kr = user;
    const key_opts *o  = kr->o;
    kr->completed++;
    if (fr->skipped) return;
    const double el = now_s() - kr->t1, fps = kr->completed / (el > 0 ? el : 1e-9);
    const double eta = (kr->count - kr->completed) / (fps > 0 ? fps : 1e-9);
    if (o->json) {
        pthread_mutex_lock(&g_out_mu);
        printf("{\"event\": \"frame_written\", \"frame\": %d, \"stem\": ", fr->index);
        json_str(stdout, fr->stem);
        printf("}\n{\"event\": \"progress\", \"done\": %d, \"total\": %d, \"fps\": %.3f, \"eta_s\": %.1f}\n",
               kr->completed, kr->count, fps, eta);
        fflush(stdout);
        pthread_mutex_unlock(&g_out_mu);
    } else if (!o->quiet) {
        progress_human(kr->completed, kr->count, fr->stem, fps, eta);
    }
}

static int run_key(key_opts o) {
    if (o.quiet) ck_set_log(NULL, NULL, CK_LOG_ERROR);
    char        ckbuf[4096];
    const char *ckpt = o.checkpoint ? o.checkpoint : default_checkpoint(ckbuf, sizeof ckbuf);
    if (!ckpt) {
        fprintf(stderr, "ckey: no checkpoint: pass --checkpoint FILE or set CKEY_CHECKPOINT "
                        "(see README: getting the checkpoint)\n");
        return EXIT_USAGE;
    }

    /* frames: one file, or a folder of frames paired by position with a folder of hints (or one hint) */
    ck_err err = {{0}};
    ck_seq imgs = {0}, hints = {0};
    char   stem1[1024];
    int    seq  = is_dir(o.image);
    if (seq) {
        /* videos written from a sequence are named after its folder */
        char folder[1024];
        snprintf(folder, sizeof folder, "%s", o.image);
        for (size_t l = strlen(folder); l > 1 && folder[l - 1] == '/'; l--) folder[l - 1] = '\0';
        file_stem(stem1, sizeof stem1, folder);
        if (ck_seq_list(&imgs, o.image, &err) != CK_OK) return EXIT_RUNTIME;
        if (imgs.n == 0) {
            fprintf(stderr, "ckey: %s: no .png/.jpg/.exr frames in this folder\n", o.image);
            ck_seq_free(&imgs);
            return EXIT_RUNTIME;
        }
        if (o.hint && is_dir(o.hint)) {
            if (ck_seq_list(&hints, o.hint, &err) != CK_OK) {
                ck_seq_free(&imgs);
                return EXIT_RUNTIME;
            }
            if (hints.n != imgs.n) {
                fprintf(stderr, "ckey: %s has %d frames but %s has %d hints; they are paired by position\n",
                        o.image, imgs.n, o.hint, hints.n);
                ck_seq_free(&imgs), ck_seq_free(&hints);
                return EXIT_RUNTIME;
            }
        }
    } else {
        file_stem(stem1, sizeof stem1, o.image);
    }
    int vid = 0, vtotal = 0;
#ifdef CK_HAVE_FFMPEG
    ck_video_reader *vin = NULL, *vhint = NULL;
    if (!seq && ck_image_sniff(o.image) == CK_IMAGE_UNKNOWN && ck_video_probe(o.image)) {
        vid    = 1;
        vtotal = ck_video_count_frames(o.image);
        if (vtotal <= 0 || ck_video_open(&vin, o.image, &err) != CK_OK) {
            if (vtotal <= 0) fprintf(stderr, "ckey: %s: no video frames\n", o.image);
            return EXIT_RUNTIME;
        }
        if (o.hint && is_dir(o.hint)) {
            if (ck_seq_list(&hints, o.hint, &err) != CK_OK || hints.n != vtotal) {
                if (hints.n != vtotal)
                    fprintf(stderr, "ckey: %s has %d frames but %s has %d hints\n", o.image, vtotal, o.hint, hints.n);
                ck_video_close(vin), ck_seq_free(&hints);
                return EXIT_RUNTIME;
            }
        } else if (o.hint && ck_image_sniff(o.hint) == CK_IMAGE_UNKNOWN) {
            const int hn = ck_video_count_frames(o.hint);
            if (hn != vtotal || ck_video_open(&vhint, o.hint, &err) != CK_OK) {
                if (hn != vtotal) fprintf(stderr, "ckey: %s has %d frames but %s has %d\n", o.image, vtotal, o.hint, hn);
                ck_video_close(vin);
                return EXIT_RUNTIME;
            }
        }
    }
#endif
    const int total = seq ? imgs.n : vid ? vtotal : 1;
    int       first = 0, last = total - 1;
    if (o.frames) {
        if (!ck_parse_frames(o.frames, &first, &last) || last >= total) {
            fprintf(stderr, "ckey: --frames %s is outside 0-%d\n", o.frames, total - 1);
            ck_seq_free(&imgs), ck_seq_free(&hints);
            return EXIT_USAGE;
        }
    }
    int start = first, count = last - first + 1;
    if (o.shard) {
        int si, sn;
        if (!ck_parse_shard(o.shard, &si, &sn)) {
            fprintf(stderr, "ckey: --shard expects I/N with 0 <= I < N, got '%s'\n", o.shard);
            ck_seq_free(&imgs), ck_seq_free(&hints);
            return EXIT_USAGE;
        }
        count = ck_shard_range(first, last, si, sn, &start);
    }

    double  t0  = now_s();
    ck_ctx *ctx = NULL;
    if (ck_ctx_init(&ctx, ckpt, &o.p) != CK_OK) {
        json_failed(&o, ck_ctx_last_error(ctx), EXIT_RUNTIME);
        ck_ctx_free(ctx);
        ck_seq_free(&imgs), ck_seq_free(&hints);
        return EXIT_RUNTIME;
    }
    if (!o.quiet) fprintf(stderr, "ckey: loaded in %.2f s; %d frame%s to key\n", now_s() - t0, count, count == 1 ? "" : "s");
    if (o.json) {
        printf("{\"event\": \"started\", \"frames\": %d, \"first\": %d, \"size\": %d, \"device\": ", count, start,
               o.p.tile ? o.p.tile : o.p.size);
        json_str(stdout, ck_ctx_device_name(ctx));
        printf(", \"load_s\": %.3f, \"out\": ", now_s() - t0);
        json_str(stdout, o.out);
        printf("}\n");
        fflush(stdout);
    }

#ifdef CK_HAVE_FFMPEG
    /* video outputs: ProRes 4444 / FFV1 (fg + matte as alpha), H.264 (comp); opened at the first frame */
    const char *vo = o.video_out ? o.video_out : vid ? "prores,h264" : "";
    key_run     kr = {&o, &imgs, &hints, seq, vid, stem1, vin, vhint,
                      {strstr(vo, "prores") != NULL, strstr(vo, "ffv1") != NULL, strstr(vo, "h264") != NULL},
                      {NULL, NULL, NULL}, start, count, 0, now_s()};
    if ((kr.want[0] || kr.want[1] || kr.want[2]) && (o.shard || o.skip_existing)) {
        if (o.video_out) fprintf(stderr, "ckey: warning: --video-out is ignored with --shard or --skip-existing\n");
        kr.want[0] = kr.want[1] = kr.want[2] = 0;
    }
    if (kr.want[2] && !o.p.comp) kr.want[2] = 0;
    int rc = 0;
    for (int k = 0; vid && k < start && rc == 0; k++) { /* decode up to the first frame of the range */
        int    eof = 0;
        float *tmp = malloc(sizeof(float) * 3 * (size_t)ck_video_width(vin) * ck_video_height(vin));
        if (!tmp || ck_video_read(vin, tmp, 3, &eof, &err) != CK_OK || eof) rc = EXIT_RUNTIME;
        if (vhint && tmp && (ck_video_read(vhint, tmp, 3, &eof, &err) != CK_OK || eof)) rc = EXIT_RUNTIME;
        free(tmp);
    }
    const int ordered = kr.want[0] || kr.want[1] || kr.want[2];
#else
    key_run   kr      = {&o, &imgs, &hints, seq, vid, stem1, start, count, 0, now_s()};
    int       rc      = 0;
    const int ordered = 0;
#endif
    ck_pipe_ops   ops = {&kr, frame_read, frame_write, ordered ? frame_ordered : NULL, frame_done_report};
    ck_pipe_stats ps;
    char          perr[1024] = "";
    const int     workers    = o.workers > 0 ? o.workers : ck_pipe_default_workers();
    /* file sequences decode in parallel (a 16-bit 4K PNG takes a few hundred ms); video is sequential */
    const int readers = vid ? 1 : workers < 4 ? workers : 4;
    if (rc == 0 && !ck_pipe_run(ctx, start, count, readers, workers, &ops, &ps, perr, sizeof perr)) {
        fprintf(stderr, "ckey: %s\n", perr);
        rc = EXIT_RUNTIME;
        json_failed(&o, perr, rc);
    }
#ifdef CK_HAVE_FFMPEG
    for (int k = 0; k < 3; k++)
        if (kr.vw[k] && ck_video_writer_close(kr.vw[k], rc != 0, &err) != CK_OK) rc = EXIT_RUNTIME;
    ck_video_close(vin);
    ck_video_close(vhint);
#endif
    if (rc == 0) {
        const int n = ps.frames > 0 ? ps.frames : 1;
        if (o.json)
            printf("{\"event\": \"completed\", \"frames_written\": %d, \"skipped\": %d, \"seconds\": %.3f, "
                   "\"fps\": %.3f, \"workers\": %d, \"stage_ms_per_frame\": {\"read\": %.1f, \"network\": %.1f, "
                   "\"finish\": %.1f, \"write\": %.1f, \"ordered\": %.1f}}\n",
                   ps.frames, ps.skipped, now_s() - t0, ps.frames / (ps.wall_s > 0 ? ps.wall_s : 1e-9), workers,
                   1e3 * ps.read_s / n, 1e3 * ps.network_s / n, 1e3 * ps.finish_s / n, 1e3 * ps.write_s / n,
                   1e3 * ps.ordered_s / n);
        if (!o.quiet) {
            fprintf(stderr, "ckey: keyed %d frame%s%s into %s\n", ps.frames, ps.frames == 1 ? "" : "s",
                    ps.skipped ? " (others already present, skipped)" : "", o.out);
            if (ps.frames > 1)
                fprintf(stderr,
                        "ckey: %.2f fps; per frame: read %.0f ms, network %.0f ms, post-processing %.0f ms, "
                        "writing %.0f ms, video %.0f ms (%d workers overlap the last three)\n",
                        ps.frames / (ps.wall_s > 0 ? ps.wall_s : 1e-9), 1e3 * ps.read_s / n, 1e3 * ps.network_s / n,
                        1e3 * ps.finish_s / n, 1e3 * ps.write_s / n, 1e3 * ps.ordered_s / n, workers);
        }
    }
    ck_ctx_free(ctx);
    ck_seq_free(&imgs), ck_seq_free(&hints);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage_main(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage_main(stdout);
        return 0;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("ckey %d.%d.%d\n", CK_VERSION_MAJOR, CK_VERSION_MINOR, CK_VERSION_PATCH);
        return 0;
    }
    if (!strcmp(cmd, "key")) return cmd_key(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return ck_cli_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "doctor")) return ck_cli_doctor(argc - 2, argv + 2);
    if (!strcmp(cmd, "plates")) return ck_cli_plates(argc - 2, argv + 2);
    if (!strcmp(cmd, "quality")) return ck_cli_quality(argc - 2, argv + 2);
    if (!strcmp(cmd, "clip")) return cmd_clip(argc - 2, argv + 2);
    fprintf(stderr, "ckey: unknown command '%s'\n", cmd);
    usage_main(stderr);
    return EXIT_USAGE;
}
