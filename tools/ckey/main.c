/* ckey command-line tool: command dispatch and the options of `ckey key` / `ckey clip` (key.c runs
 * them; bench.c, quality.c, plates.c and doctor.c hold the other commands).
 * Exit codes: 0 success, 1 runtime failure (I/O, model, device), 2 usage error. */
#include "ckey.h"
#include "cli.h"
#include "key.h"
#include "io/image.h"
#include "io/sequence.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void usage_main(FILE *f) {
    fprintf(f,
            "ckey %d.%d.%d - CorridorKey neural green-screen keyer\n"
            "\n"
            "usage: ckey <command> [options]\n"
            "\n"
            "commands:\n"
            "  key       key a frame, a folder of frames or a video: plate + rough alpha hint -> Matte, FG,\n"
            "            Processed, Comp passes (and ProRes 4444 / FFV1 / H.264 videos)\n"
            "  clip      key a CorridorKey clip folder (Input/, AlphaHint/ -> Output/), or a folder of clips\n"
            "  encode    a shot's videos (ProRes 4444, FFV1, H.264) from the passes in its output folder\n"
            "  farm      render farms: `farm slurm` submits a shot as a Slurm array job, `farm assemble`\n"
            "            checks and finishes a farmed shot (manifest, videos)\n"
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
            "                        ./CorridorKey.pth, else ~/.cache/ckey/CorridorKey.pth, else the built-in\n"
            "                        small keyer, `--checkpoint builtin`: 4 MB, trained by ckey on synthetic\n"
            "                        plates, run at 2048 on CUDA and at its training size 512 on the CPU\n"
            "                        unless --size is given; far below CorridorKey's quality, see\n"
            "                        docs/model_card_small.md)\n"
            "sequences:\n"
            "  --image DIR --hint DIR  key every frame of a folder (.png/.jpg/.exr, natural order), paired by\n"
            "                        position with the hint folder (same count, else an error); a single\n"
            "                        --hint FILE is used for every frame\n"
            "  --frames A-B          only positions A..B (0-based, inclusive) of the sorted folder\n"
            "  --frame-numbers A-B   only the frames numbered A..B (inclusive): the last run of digits in the\n"
            "                        file name (plate.1001.exr is 1001), a video's 0-based index; for\n"
            "                        Deadline / OpenJD chunks (a range outside the shot's numbers is an error)\n"
            "  --shard I/N           contiguous share I (0-based: 0/N .. N-1/N) of N, for render-farm nodes\n"
            "  --shard auto          the share from the scheduler: a Slurm array task (SLURM_ARRAY_TASK_ID,\n"
            "                        any start and step: --array=1-10 or 0-98:2), a Kubernetes Indexed Job\n"
            "                        (JOB_COMPLETION_INDEX, with --shard-count N or $CKEY_SHARD_COUNT)\n"
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
            "  --batch N             images per forward, 1 to 32: with --tile, tiles of a plate (default: as\n"
            "                        many as fit 2 GiB of activations on CUDA); else frames of a sequence or\n"
            "                        video keyed together (CUDA, default 1; helps small sizes and previews)\n"
            "  --preset auto         device, precision, full frame or tiles and toggles as `ckey doctor`\n"
            "                        recommends for this machine; explicit options override it\n"
            "  --linear              the plate is linear light (converted to sRGB after resizing)\n"
            "  --colorspace NAME     the plates' encoding, whatever the file type (values taken as stored;\n"
            "                        overrides --linear): srgb (= rec709), linear (linear Rec.709), logc3\n"
            "                        (ARRI LogC3 EI 800 / AWG3), logc4 (ARRI LogC4 / AWG4), slog3 (Sony\n"
            "                        S-Log3 / S-Gamut3.Cine), log3g10 (RED Log3G10 / REDWideGamutRGB),\n"
            "                        acescct, aces2065-1, acescg, rec2020-linear (any case; OCIO-style long\n"
            "                        names too). Decoded to linear Rec.709 for the network; Processed is\n"
            "                        written linear in the plate's gamut (acescct: ACEScg). Default: 8/16-bit\n"
            "                        files sRGB, EXR and float TIFF linear Rec.709\n"
            "  --refiner-scale X     scale of the refiner's correction in logit space (default 1.0;\n"
            "                        0 = coarse decoder output only)\n"
            "  --head-dim N          attention head width (default: from the checkpoint, else 56)\n"
            "post-processing:\n"
            "  --despill S           green despill strength 0..1 (default 0.5)\n"
            "  --despeckle-size N    remove matte islands smaller than N pixels (default 400)\n"
            "  --no-despeckle        keep every island\n"
            "  --keep-highlights     Processed keeps the plate's scene-linear values above 1.0 where the matte\n"
            "                        is opaque (the network's foreground stops near 1.0): weight\n"
            "                        clamp((alpha-0.98)/0.019, 0, 1) * clamp((max(R,G,B)-1)/0.25, 0, 1)\n"
            "                        (R, G, B: the plate in linear Rec.709) of the plate's own value\n"
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
            "  --readers N           threads that decode frames of a sequence ahead of the network (default:\n"
            "                        three eighths of the cores, 1 to 16; a video is decoded by one)\n"
            "  --no-gpu-postprocess  CUDA: resize back and post-process on the host instead of the device\n"
            "                        (the device path downloads only the passes as stored; same values)\n"
            "  --no-gpu-encode       CUDA: compress the PXR24 EXR passes on the host (libdeflate) instead of\n"
            "                        the device (same pixels; the device's streams are a few %% larger)\n"
            "  --stage-gc            synchronize between backbone, decoders and refiner\n"
            "  --quiet               only print errors\n"
            "  --json                machine-readable progress: one JSON object per line on stdout, with\n"
            "                        \"event\" = started | progress | frame_written | warning | completed | failed\n"
            "\n"
            "exit status: 0 success, 1 failure (unreadable input, bad checkpoint, device or write error),\n"
            "2 invalid command line.\n");
}


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
        else if (!strcmp(a, "--shard-count")) o->shard_count = TAKE();
        else if (!strcmp(a, "--frame-numbers")) o->frame_numbers = TAKE();
        else if (!strcmp(a, "--skip-existing")) o->skip_existing = 1;
        else if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--video-out")) o->video_out = TAKE();
        else if (!strcmp(a, "--preset")) i++; /* applied before this loop */
        else if (!strcmp(a, "--size")) {
            if (!parse_int(a, TAKE(), 32, 16384, &o->p.size)) return 0;
            o->size_set = 1;
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
        else if (!strcmp(a, "--colorspace")) {
            const char   *c = TAKE();
            ck_colorspace cs;
            if (!c || ck_colorspace_parse(c, &cs) != 0) {
                fprintf(stderr, "ckey: --colorspace expects one of: %s; got '%s'\n", ck_colorspace_names(), c ? c : "");
                return 0;
            }
            o->p.colorspace = (int)cs;
        } else if (!strcmp(a, "--keep-highlights")) o->p.keep_highlights = 1;
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
        else if (!strcmp(a, "--batch")) {
            if (!parse_int(a, TAKE(), 1, CK_MAX_BATCH, &o->p.max_batch)) return 0;
        } else if (!strcmp(a, "--workers")) {
            if (!parse_int(a, TAKE(), 1, 64, &o->workers)) return 0;
        } else if (!strcmp(a, "--readers")) {
            if (!parse_int(a, TAKE(), 1, 64, &o->readers)) return 0;
        } else if (!strcmp(a, "--no-gpu-postprocess")) o->p.gpu_postprocess = 0;
        else if (!strcmp(a, "--no-gpu-encode")) o->p.gpu_encode = 0;
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
    if (o->exr != CK_EXR_PXR24) o->p.gpu_encode = 0; /* the device encodes PXR24 only */
    /* --colorspace: plates are read as stored (a float file stays linear, negatives clamped), and the
     * library decodes them */
    if (o->p.colorspace != CK_CS_DEFAULT) o->p.input_is_linear = 1;
    if (o->p.tile_overlap < 0) o->p.tile_overlap = o->p.tile ? (o->p.tile > 128 ? 64 : o->p.tile / 4) : 0;
    if (o->p.tile && o->p.tile_overlap >= o->p.tile) {
        fprintf(stderr, "ckey: --overlap %d must be smaller than --tile %d\n", o->p.tile_overlap, o->p.tile);
        return 0;
    }
    if (o->frames && o->frame_numbers) {
        fprintf(stderr, "ckey: give --frames (positions) or --frame-numbers (numbers in the names), not both\n");
        return 0;
    }
    if (o->shard_count && (!o->shard || strcmp(o->shard, "auto"))) {
        fprintf(stderr, "ckey: --shard-count goes with --shard auto\n");
        return 0;
    }
    if (!clip_mode && (!o->image || !o->out)) {
        fprintf(stderr, "ckey: key needs --image and --out (see 'ckey key --help')\n");
        return 0;
    }
    return 1;
}

int run_key(key_opts o);

int ck_cli_parse_key(int argc, char **argv, key_opts *o) { return parse_key(argc, argv, o, 0); }

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

int ck_cli_is_clip(const char *dir, char *input, char *hint, char *out, size_t n) { return is_clip(dir, input, hint, out, n); }

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
    /* every clip is keyed; the ones that fail and the folders that are not clips are named at the end */
    int    clips = 0, failed = 0, usage = 0;
    char   failed_names[2048] = "", skipped_names[2048] = "";
    for (int i = 0; i < n && !usage; i++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
        if (!is_dir(dir)) continue;
        if (!is_clip(dir, input, hint, out, sizeof input)) {
            const size_t l = strlen(skipped_names);
            snprintf(skipped_names + l, sizeof skipped_names - l, "%s%s", l ? ", " : "", names[i]);
            continue;
        }
        key_opts o = base;
        o.image = input, o.hint = hint[0] ? hint : NULL, o.out = out;
        if (!o.quiet && !o.json) fprintf(stderr, "ckey: clip %s\n", names[i]);
        const int r = run_key(o);
        clips++;
        if (r == EXIT_USAGE || r >= 128) usage = 1, rc = r; /* wrong options for every clip, or interrupted: stop */
        else if (r != 0) {
            const size_t l = strlen(failed_names);
            snprintf(failed_names + l, sizeof failed_names - l, "%s%s", l ? ", " : "", names[i]);
            failed++, rc = EXIT_RUNTIME;
        }
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (skipped_names[0])
        fprintf(stderr, "ckey: warning: %s: not clips (no Input/ folder or Input video), skipped: %s\n", root,
                skipped_names);
    if (failed)
        fprintf(stderr, "ckey: %d of %d clips failed: %s (the others were keyed)\n", failed, clips, failed_names);
    if (rc == 0 && clips == 0) {
        fprintf(stderr, "ckey: %s: neither a clip (no Input/ folder) nor a folder of clips\n", root);
        return EXIT_RUNTIME;
    }
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
        printf("ckey %s\n", ck_version());
        return 0;
    }
    if (!strcmp(cmd, "key")) return cmd_key(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return ck_cli_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "doctor")) return ck_cli_doctor(argc - 2, argv + 2);
    if (!strcmp(cmd, "plates")) return ck_cli_plates(argc - 2, argv + 2);
    if (!strcmp(cmd, "quality")) return ck_cli_quality(argc - 2, argv + 2);
    if (!strcmp(cmd, "clip")) return cmd_clip(argc - 2, argv + 2);
    if (!strcmp(cmd, "encode")) return cmd_encode(argc - 2, argv + 2);
    if (!strcmp(cmd, "farm")) return cmd_farm(argc - 2, argv + 2);
    fprintf(stderr, "ckey: unknown command '%s'\n", cmd);
    usage_main(stderr);
    return EXIT_USAGE;
}
