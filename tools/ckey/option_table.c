/* Every option of every ckey command (options.h): kind, range, help text and where its value goes.
 * Entries are listed in the order of the help texts; a command's help prints its groups in the order
 * ck_commands[] gives and, within a group, its entries in this order. Checks that span several options
 * (--overlap below --tile, --frames or --frame-numbers) and values that need the input (--frames against
 * the shot's length) stay with the commands. */
#include "options.h"

#include "cmd_opts.h"
#include "key.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ENUM values are stored through an int */
_Static_assert(sizeof(ck_device) == sizeof(int) && sizeof(ck_precision) == sizeof(int) &&
                   sizeof(ck_exr_compression) == sizeof(int) && sizeof(ck_sweep_kind) == sizeof(int),
               "enum options are stored as int");
/* the custom parsers below write (width, height) and (tile, overlap) pairs as int[2] */
_Static_assert(offsetof(ck_plate_params, height) == offsetof(ck_plate_params, width) + sizeof(int), "WxH pair");
_Static_assert(offsetof(bench_opts, frame_h) == offsetof(bench_opts, frame_w) + sizeof(int), "WxH pair");
_Static_assert(offsetof(ck_params, tile_overlap) == offsetof(ck_params, tile) + sizeof(int), "T/O pair");
_Static_assert(sizeof(((bench_opts *)0)->tiled[0]) == 2 * sizeof(int), "T/O pair");

const ck_cmd_info ck_commands[CK_CMD_COUNT] = {
    [CK_CMD_KEY]  = {"key", sizeof(key_opts), offsetof(key_opts, p), -1, 0, -1,
                     "inputs,sequences,video,output,model,post-processing,execution", 1},
    [CK_CMD_CLIP] = {"clip", sizeof(key_opts), offsetof(key_opts, p), -1, 1, -1,
                     "inputs,sequences,video,output,model,post-processing,execution", 1},
    [CK_CMD_BENCH] = {"bench", sizeof(bench_opts), offsetof(bench_opts, p), -1, 0, -1,
                      "model,single configuration,post-processing,execution,sweeps,scaling", 1},
    [CK_CMD_QUALITY] = {"quality", sizeof(quality_opts), offsetof(quality_opts, base), offsetof(quality_opts, set), 0,
                        -1, "inputs,plates,model,post-processing,execution,output", 0},
    [CK_CMD_PLATES] = {"plates", sizeof(plates_opts), -1, offsetof(plates_opts, set), 0, -1, "output,plates", 0},
    [CK_CMD_DOCTOR] = {"doctor", sizeof(doctor_opts), -1, -1, 0, -1, "doctor", 0},
    [CK_CMD_ENCODE] = {"encode", sizeof(encode_opts), -1, -1, 1, -1, "encode", 0},
    [CK_CMD_FARM_SLURM] = {"farm slurm", sizeof(farm_opts), -1, -1, 1, CK_CMD_KEY, "farm", 0},
    [CK_CMD_FARM_ASSEMBLE] = {"farm assemble", sizeof(assemble_opts), -1, -1, 1, CK_CMD_KEY, "farm", 0},
    [CK_CMD_SERVE] = {"serve", sizeof(serve_opts), offsetof(serve_opts, k.p), -1, 1, -1,
                      "server,inputs,model,post-processing,execution", 1},
};
_Static_assert(offsetof(serve_opts, k) == 0, "serve's key options are key_opts entries");

/* ---- values that are more than a number or a name ---- */

static int parse_colorspace(const char *v, void *dst, char *why, size_t n) {
    ck_colorspace cs;
    if (ck_colorspace_parse(v, &cs) != 0) {
        snprintf(why, n, "expects one of: %s; got '%s'", ck_colorspace_names(), v);
        return 0;
    }
    *(int *)dst = (int)cs;
    return 1;
}

/* "WxH" into int[2] (width, height), each side in [lo, hi] */
static int parse_wh(const char *v, int *wh, int lo, int hi) {
    char *end, *x;
    long  w = strtol(v, &x, 10);
    if (x == v || *x != 'x') return 0;
    long h = strtol(x + 1, &end, 10);
    if (end == x + 1 || *end || w < lo || w > hi || h < lo || h > hi) return 0;
    wh[0] = (int)w, wh[1] = (int)h;
    return 1;
}

static int parse_plate_size(const char *v, void *dst, char *why, size_t n) {
    int *wh = dst; /* ck_plate_params.width, .height */
    if (ck_plate_parse_size(v, &wh[0], &wh[1])) return 1;
    snprintf(why, n, "expects WxH, each side %d to 32768, got '%s'", CK_PLATE_MIN_DIM, v);
    return 0;
}

static int parse_frame_size(const char *v, void *dst, char *why, size_t n) {
    (void)why, (void)n;
    return parse_wh(v, dst, 1, 16384);
}

static int parse_seed(const char *v, void *dst, char *why, size_t n) {
    (void)why, (void)n;
    char *end;
    errno                  = 0;
    unsigned long long s = strtoull(v, &end, 10);
    if (!*v || *v == '-' || *end || errno) return 0;
    *(uint64_t *)dst = s;
    return 1;
}

/* "T/O" into int[2] (tile, overlap): T a multiple of 32 in [32, 16384], 0 <= O < T */
static int parse_tile_overlap(const char *v, void *dst, char *why, size_t n) {
    (void)why, (void)n;
    int  t = 0, ov = 0;
    char extra;
    if (sscanf(v, "%d/%d%c", &t, &ov, &extra) != 2 || t < 32 || t > 16384 || t % 32 || ov < 0 || ov >= t) return 0;
    ((int *)dst)[0] = t, ((int *)dst)[1] = ov;
    return 1;
}

static int parse_toggles(const char *v, void *dst, char *why, size_t n) {
    char buf[256];
    if (strlen(v) >= sizeof buf) return 0;
    snprintf(buf, sizeof buf, "%s", v);
    unsigned mask = 0;
    for (char *save = NULL, *s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        const int t = ck_toggle_parse(s);
        if (t < 0) {
            snprintf(why, n, "unknown toggle '%s' (slim, stage_gc, sdpa, bf16, fused_decode, gpu_preprocess, compile, "
                             "pad64)", s);
            return 0;
        }
        mask |= 1u << t;
    }
    if (!mask) return 0;
    *(unsigned *)dst = mask;
    return 1;
}

static const ck_opt_name DEVICES[]     = {{"cpu", CK_DEVICE_CPU}, {"cuda", CK_DEVICE_CUDA}, {"auto", CK_DEVICE_AUTO}, {NULL, 0}};
static const ck_opt_name PRECISIONS[]  = {{"fp32", CK_PREC_FP32}, {"bf16", CK_PREC_BF16}, {"fp16", CK_PREC_FP16},
                                          {"auto", CK_PREC_AUTO}, {NULL, 0}};
static const ck_opt_name HALVES[]      = {{"fp16", CK_PREC_FP16}, {"bf16", CK_PREC_BF16}, {NULL, 0}};
static const ck_opt_name EXR_CODECS[]  = {{"pxr24", CK_EXR_PXR24}, {"zip", CK_EXR_ZIP}, {"none", CK_EXR_NONE}, {NULL, 0}};
static const ck_opt_name PRESETS[]     = {{"auto", 1}, {NULL, 0}};
static const ck_opt_name SWEEPS[]      = {{"ablation", CK_SWEEP_ABLATION}, {"key", CK_SWEEP_KEY}, {"full", CK_SWEEP_FULL},
                                          {"isolate", CK_SWEEP_ISOLATE}, {NULL, 0}};
static const ck_opt_name PLATE_FORMATS[] = {{"exr", 0}, {"png", 1}, {NULL, 0}};

/* ---- the table ---- */

#define KEY CK_IN(CK_CMD_KEY)
#define KC (CK_IN(CK_CMD_KEY) | CK_IN(CK_CMD_CLIP))
#define SV CK_IN(CK_CMD_SERVE)
#define BENCH CK_IN(CK_CMD_BENCH)
#define QUAL CK_IN(CK_CMD_QUALITY)
#define PLATES CK_IN(CK_CMD_PLATES)
#define PARAM(f) .dest = CK_DEST_PARAMS, .off = offsetof(ck_params, f)
#define PLATE(f) .dest = CK_DEST_PLATES, .off = offsetof(ck_plate_set, f)
#define OWN(type, f) .dest = CK_DEST_OWN, .off = offsetof(type, f)
#define INT(lo, hi) .kind = CK_OPT_INT, .min = (lo), .max = (hi)
#define REAL(lo, hi) .kind = CK_OPT_REAL, .min = (lo), .max = (hi)

const ck_opt ck_options[] = {
    /* ---- ckey key / clip ---- */
    {.name = "image", .kind = CK_OPT_STRING, .cmds = KEY, .group = "inputs", .arg = "FILE", OWN(key_opts, image),
     .help = "plate: PNG (8/16-bit), JPEG or EXR (half/float; alpha dropped). 8/16-bit files are sRGB; EXR files are "
             "linear and converted to sRGB on read unless --linear is given"},
    {.name = "hint", .kind = CK_OPT_STRING, .cmds = KEY, .group = "inputs", .arg = "FILE", OWN(key_opts, hint),
     .help = "rough alpha hint (white = foreground), any of the same formats; a multi-channel hint uses its first "
             "channel (R); resized to the image with bilinear filtering when sizes differ. Without --hint an automatic "
             "chroma-difference hint against the detected green or blue screen is used (with a warning)"},
    {.name = "checkpoint", .kind = CK_OPT_STRING, .cmds = KC | SV, .group = "inputs", .arg = "FILE",
     OWN(key_opts, checkpoint),
     .help = "CorridorKey.pth or .safetensors (default: $CKEY_CHECKPOINT, else ./CorridorKey.pth, else "
             "~/.cache/ckey/CorridorKey.pth, else the built-in small keyer, `--checkpoint builtin`: 7 MB, trained by "
             "ckey on synthetic plates, run at 2048 on CUDA and at its training size 1024 on the CPU unless --size is "
             "given; far below CorridorKey's quality, see docs/model_card_small.md)"},
    {.name = "", .kind = CK_OPT_NOTE, .cmds = KEY, .group = "sequences", .arg = "--image DIR --hint DIR",
     .help = "key every frame of a folder (.png/.jpg/.exr, natural order), paired by position with the hint folder "
             "(same count, else an error); a single --hint FILE is used for every frame"},
    {.name = "frames", .kind = CK_OPT_STRING, .cmds = KC, .group = "sequences", .arg = "A-B", OWN(key_opts, frames),
     .help = "only positions A..B (0-based, inclusive) of the sorted folder"},
    {.name = "frame-numbers", .kind = CK_OPT_STRING, .cmds = KC, .group = "sequences", .arg = "A-B",
     OWN(key_opts, frame_numbers),
     .help = "only the frames numbered A..B (inclusive): the last run of digits in the file name (plate.1001.exr is "
             "1001), a video's 0-based index; for Deadline / OpenJD chunks (a range outside the shot's numbers is an "
             "error)"},
    {.name = "shard", .kind = CK_OPT_STRING, .cmds = KC, .group = "sequences", .arg = "I/N", OWN(key_opts, shard),
     .help = "contiguous share I (0-based: 0/N .. N-1/N) of N, for render-farm nodes"},
    {.name = "", .kind = CK_OPT_NOTE, .cmds = KC, .group = "sequences", .arg = "--shard auto",
     .help = "the share from the scheduler: a Slurm array task (SLURM_ARRAY_TASK_ID, any start and step: "
             "--array=1-10 or 0-98:2), a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with --shard-count N or "
             "$CKEY_SHARD_COUNT)"},
    {.name = "shard-count", INT(1, 1000000), .cmds = KC, .group = "sequences", .arg = "N", OWN(key_opts, shard_count),
     .help = "with --shard auto: the number of shares where the scheduler gives none (a Kubernetes Indexed Job's "
             "completions), {range}"},
    {.name = "skip-existing", .kind = CK_OPT_FLAG, .cmds = KC, .group = "sequences", OWN(key_opts, skip_existing),
     .help = "skip frames whose passes are all present (resume an interrupted run)"},
    {.name = "", .kind = CK_OPT_NOTE, .cmds = KEY, .group = "video", .arg = "--image FILE.mov|mp4|mkv|...",
     .help = "a video plate (any codec FFmpeg decodes, 8-16 bit); passes are named by zero-padded frame index; --hint "
             "may be a video, a folder or one image"},
    {.name = "devices", .kind = CK_OPT_STRING, .cmds = KC, .group = "execution", .arg = "LIST|all",
     OWN(key_opts, devices),
     .help = "key on several CUDA devices at once (comma list of indices, or all; an index given twice runs two "
             "streams of that GPU): one model per GPU, each frame keyed by whichever is free, the files as with one "
             "device; a device that fails mid-shot stops and the others key its frames. Implies --device cuda"},
    {.name = "video-out", .kind = CK_OPT_STRING, .cmds = KC, .group = "video", .arg = "LIST", OWN(key_opts, video_out),
     .help = "also encode videos into --out (comma list): prores (ProRes 4444 .mov, straight sRGB foreground + the "
             "matte as alpha), ffv1 (.mkv, lossless 16-bit, same content), h264 (.mp4 preview of the comp). Default "
             "for a video plate: prores,h264; for sequences: none. Not with --shard or --skip-existing (the videos "
             "would miss frames)"},
    {.name = "out", .kind = CK_OPT_STRING, .cmds = KEY, .group = "output", .arg = "DIR", OWN(key_opts, out),
     .help = "output folder (created if missing)"},
    {.name = "exr-compression", .kind = CK_OPT_ENUM, .cmds = KC, .group = "output", .names = EXR_CODECS,
     OWN(key_opts, exr), .help = "the EXR passes' compression: pxr24 (default, as CorridorKey), zip or none"},
    {.name = "comp", .kind = CK_OPT_TOGGLE, .cmds = KC, .group = "output", PARAM(comp),
     .help = "write the Comp pass (default); --no-comp skips it"},
    {.name = "size", INT(32, 16384), .step = 32, .cmds = KC | SV, .group = "model", .arg = "N", PARAM(size),
     .help = "model resolution, {range} (default 2048, the training size)"},
    {.name = "tile", INT(32, 16384), .step = 32, .cmds = KC | SV, .group = "model", .arg = "N", PARAM(tile),
     .help = "tiled mode: run the model at S = N on N x N tiles of the plate at its native resolution, blended with "
             "linear ramps (e.g. 512, 768, 1024; {range}); tiles whose hint is all background/foreground are "
             "skipped"},
    {.name = "overlap", INT(0, 16383), .cmds = KC | SV, .group = "model", .arg = "PX", PARAM(tile_overlap),
     .help = "tile overlap in pixels, {range}, below --tile (default 64 with --tile)"},
    {.name = "batch", INT(1, CK_MAX_BATCH), .cmds = KC, .group = "model", .arg = "N", PARAM(max_batch),
     .help = "images per forward, {range}: with --tile, tiles of a plate (default: as many as fit 2 GiB of "
             "activations on CUDA); else frames of a sequence or video keyed together (CUDA, default 1; helps small "
             "sizes and previews)"},
    {.name = "preset", .kind = CK_OPT_ENUM, .cmds = KC, .group = "model", .names = PRESETS, OWN(key_opts, preset),
     .help = "device, precision, full frame or tiles and toggles as `ckey doctor` recommends for this machine; "
             "explicit options override it"},
    {.name = "linear", .kind = CK_OPT_TOGGLE, .cmds = KC | SV, .group = "model", PARAM(input_is_linear),
     .help = "the plate is linear light (converted to sRGB after resizing); default off"},
    {.name = "colorspace", .kind = CK_OPT_CUSTOM, .cmds = KC | SV, .group = "model", .arg = "NAME", PARAM(colorspace),
     .parse = parse_colorspace, .accepts = "a colour space name",
     .help = "the plates' encoding, whatever the file type (values taken as stored; overrides --linear): srgb (= "
             "rec709), linear (linear Rec.709), logc3 (ARRI LogC3 EI 800 / AWG3), logc4 (ARRI LogC4 / AWG4), slog3 "
             "(Sony S-Log3 / S-Gamut3.Cine), log3g10 (RED Log3G10 / REDWideGamutRGB), acescct, aces2065-1, acescg, "
             "rec2020-linear (any case; OCIO-style long names too). Decoded to linear Rec.709 for the network; "
             "Processed is written linear in the plate's gamut (acescct: ACEScg). Default: 8/16-bit files sRGB, EXR "
             "and float TIFF linear Rec.709"},
    {.name = "refiner-scale", REAL(-100, 100), .is_float = 1, .cmds = KC | SV, .group = "model", .arg = "X",
     PARAM(refiner_scale),
     .help = "scale of the refiner's correction in logit space, {range} (default 1.0; 0 = coarse decoder output "
             "only)"},
    {.name = "head-dim", INT(1, 4096), .cmds = KC | BENCH | SV, .group = "model", .arg = "N", PARAM(head_dim),
     .help = "attention head width, {range} (default: from the checkpoint, else 56)"},
    {.name = "despill", REAL(0, 1), .is_float = 1, .cmds = KC | SV, .group = "post-processing", .arg = "S", PARAM(despill),
     .help = "green despill strength, {range} (default 0.5)"},
    {.name = "despeckle-size", INT(1, 1 << 30), .cmds = KC | SV, .group = "post-processing", .arg = "N",
     PARAM(despeckle_size), .help = "remove matte islands smaller than N pixels, {range} (default 400)"},
    {.name = "despeckle", .kind = CK_OPT_TOGGLE, .cmds = KC | SV, .group = "post-processing", PARAM(despeckle),
     .help = "remove small matte islands (default); --no-despeckle keeps every island"},
    {.name = "keep-highlights", .kind = CK_OPT_TOGGLE, .cmds = KC | SV, .group = "post-processing", PARAM(keep_highlights),
     .help = "Processed keeps the plate's scene-linear values above 1.0 where the matte is opaque (the network's "
             "foreground stops near 1.0): weight clamp((alpha-0.98)/0.019, 0, 1) * clamp((max(R,G,B)-1)/0.25, 0, 1) "
             "(R, G, B: the plate in linear Rec.709) of the plate's own value; default off"},
    {.name = "fg-unmix", .kind = CK_OPT_TOGGLE, .cmds = KC | QUAL | SV | BENCH, .group = "post-processing", PARAM(fg_unmix),
     .help = "un-mix the foreground from the plate where the matte is above 0.1: F = (I - (1 - alpha) * B) / alpha in "
             "linear light, B the screen estimated from the pixels the matte calls screen, blended in up to alpha "
             "0.25 (the compositing equation solved for F). Default: on with the built-in keyer, off with any other "
             "checkpoint; with it, post-processing runs on the host"},
    {.name = "device", .kind = CK_OPT_ENUM, .cmds = KC | BENCH | QUAL | SV, .group = "execution", .names = DEVICES,
     PARAM(device), .help = "where the network runs (default auto: CUDA when available, else CPU)"},
    {.name = "threads", INT(1, 4096), .cmds = KC | BENCH | QUAL | SV, .group = "execution", .arg = "N", PARAM(threads),
     .help = "CPU threads, {range} (default: all cores)"},
    {.name = "precision", .kind = CK_OPT_ENUM, .cmds = KC | BENCH | QUAL | SV, .group = "execution", .names = PRECISIONS,
     PARAM(precision),
     .help = "fp32 (exact parity mode), bf16, fp16 or auto (default auto: fp16 on CUDA, fp32 on the CPU, which "
             "computes in fp32 only)"},
    {.name = "sdpa", .kind = CK_OPT_TOGGLE, .cmds = KC | BENCH, .legacy01 = BENCH, .group = "execution",
     PARAM(fused_attention),
     .help = "CUDA: the fused attention kernel (default); --no-sdpa runs the unfused reference attention instead"},
    {.name = "pad64", .kind = CK_OPT_TOGGLE, .cmds = KC | BENCH, .legacy01 = BENCH, .group = "execution", PARAM(pad64),
     .help = "CUDA: pad head_dim 56 to 64 in attention (default: on for bf16/fp16)"},
    {.name = "compile", .kind = CK_OPT_TOGGLE, .cmds = KC | BENCH, .legacy01 = BENCH, .group = "execution",
     PARAM(cuda_graph), .help = "CUDA: capture the forward as a CUDA Graph (default); --no-compile does not"},
    {.name = "workers", INT(1, 64), .cmds = KC, .group = "execution", .arg = "N", OWN(key_opts, workers),
     .help = "threads that post-process and write frames while the next frames are decoded and keyed, {range} "
             "(default: a quarter of the cores, 1 to 8)"},
    {.name = "readers", INT(1, 64), .cmds = KC, .group = "execution", .arg = "N", OWN(key_opts, readers),
     .help = "threads that decode frames of a sequence ahead of the network, {range} (default: three eighths of the "
             "cores, 1 to 16; a video is decoded by one)"},
    {.name = "gpu-postprocess", .kind = CK_OPT_TOGGLE, .cmds = KC | BENCH, .group = "execution", PARAM(gpu_postprocess),
     .help = "CUDA: resize back and post-process on the device (default; it downloads only the passes as stored); "
             "--no-gpu-postprocess does it on the host (same values)"},
    {.name = "gpu-encode", .kind = CK_OPT_TOGGLE, .cmds = KC, .group = "execution", PARAM(gpu_encode),
     .help = "CUDA: compress the PXR24 EXR passes on the device (default); --no-gpu-encode compresses them on the "
             "host with libdeflate (same pixels; the device's streams are a few % larger)"},
    {.name = "stage-gc", .kind = CK_OPT_TOGGLE, .cmds = KC | BENCH, .legacy01 = BENCH, .group = "execution",
     PARAM(stage_gc), .help = "synchronize between backbone, decoders and refiner (default off)"},
    {.name = "quiet", .kind = CK_OPT_FLAG, .cmds = KC, .group = "execution", OWN(key_opts, quiet),
     .help = "only print errors"},
    {.name = "json", .kind = CK_OPT_FLAG, .cmds = KC, .group = "execution", OWN(key_opts, json),
     .help = "machine-readable progress: one JSON object per line on stdout, with \"event\" = started | progress | "
             "frame_written | warning | completed | failed"},

    /* ---- ckey serve (besides the key options above that name it) ---- */
    {.name = "port", INT(0, 65535), .cmds = SV, .group = "server", .arg = "N", OWN(serve_opts, port),
     .help = "the TCP port, {range} (default 8642; 0: any free port, the one bound is printed)"},
    {.name = "bind", .kind = CK_OPT_STRING, .cmds = SV, .group = "server", .arg = "ADDR", OWN(serve_opts, bind),
     .help = "the address to listen on, IPv4 or IPv6 (default 127.0.0.1: this machine only; reach it from another "
             "one through `ssh -L`). Any other address lets the network in, with only the token to keep it out"},

    /* ---- ckey bench ---- */
    {.name = "checkpoint", .kind = CK_OPT_STRING, .cmds = BENCH, .group = "model", .arg = "FILE",
     OWN(bench_opts, ckpt),
     .help = "a .pth/.safetensors file, or random:base_plus (the default: Hiera-B+ with random weights generated in "
             "memory, fixed seed) or random:tiny"},
    {.name = "size", INT(32, 16384), .step = 32, .cmds = BENCH, .group = "model", .arg = "N", PARAM(size),
     .help = "model size S, {range} (default 512; with --sweep the resolution when --resolution is not given)"},
    {.name = "tile", .kind = CK_OPT_CUSTOM, .cmds = BENCH, .group = "model", .arg = "T/O", PARAM(tile),
     .parse = parse_tile_overlap, .accepts = "TILE/OVERLAP (TILE a multiple of 32 from 32 to 16384, 0 <= OVERLAP < TILE)",
     .help = "a tiled context (model size T, overlap O; T a multiple of 32, 0 <= O < T): the network runs batches of "
             "tiles (--batch, or as many as fit 2 GiB), and --frame keys the plate in tiles"},
    {.name = "batch", INT(1, CK_MAX_BATCH), .cmds = BENCH, .group = "model", .arg = "N", PARAM(max_batch),
     .help = "images per forward, {range}: median_ms is the batch's, per_image_ms = median_ms / N (the images "
             "differ)"},
    {.name = "warmup", INT(0, 100000), .cmds = BENCH, .group = "single configuration", .arg = "N",
     OWN(bench_opts, warmup), .help = "untimed runs before the timed ones, {range} (default 3)"},
    {.name = "runs", INT(1, 100000), .cmds = BENCH, .group = "single configuration", .arg = "N", OWN(bench_opts, runs),
     .help = "timed runs, {range} (default 10)"},
    {.name = "profile", .kind = CK_OPT_TOGGLE, .cmds = BENCH, .legacy01 = BENCH, .group = "single configuration",
     OWN(bench_opts, profile),
     .help = "add a per-op time table (stderr) from extra synchronized runs without a CUDA graph (default off; "
             "without --compile given, the timed runs then use no graph either)"},
    {.name = "dump", .kind = CK_OPT_STRING, .cmds = BENCH, .group = "single configuration", .arg = "FILE.npy",
     OWN(bench_opts, dump), .help = "write the last output (S, S, 4: alpha, fg R, G, B) as .npy"},
    {.name = "frame", .kind = CK_OPT_CUSTOM, .cmds = BENCH, .group = "single configuration", .arg = "WxH",
     OWN(bench_opts, frame_w), .parse = parse_frame_size, .accepts = "WxH, each side 1 to 16384 (e.g. 3840x2160)",
     .help = "adds frame_median_ms: ck_key_passes on a synthetic WxH plate (each side 1 to 16384; upload, "
             "pre-processing, forward, post-processing, download of every pass; inputs in page-locked memory), and "
             "again with the inputs in ordinary memory: frame_pageable_inputs_median_ms"},
    {.name = "devices", .kind = CK_OPT_STRING, .cmds = BENCH, .group = "scaling", .arg = "LIST|all",
     OWN(bench_opts, devices),
     .help = "how keying scales over CUDA devices (comma list of indices, or all; an index twice = two streams of "
             "that GPU): for k = 1..N of them, the network's frames per second with k contexts on their own threads "
             "(--size, --warmup, --runs each) and the speed-up against one; one JSON line per k"},
    {.name = "clip", .kind = CK_OPT_STRING, .cmds = BENCH, .group = "scaling", .arg = "DIR", OWN(bench_opts, clip),
     .help = "with --devices: also end to end, the frames of DIR keyed through the shot library with k devices (every "
             "pass written to a scratch folder, then removed): frames per second and the CPU stages per frame"},
    {.name = "clip-hint", .kind = CK_OPT_STRING, .cmds = BENCH, .group = "scaling", .arg = "DIR",
     OWN(bench_opts, clip_hint), .help = "the hints of --clip (default: the automatic hint)"},
    {.name = "input", .kind = CK_OPT_STRING, .cmds = BENCH, .group = "single configuration", .arg = "X.npy",
     OWN(bench_opts, input),
     .help = "run the network on a given pre-processed input (S, S, 4 float32: normalized RGB and hint, NHWC) "
             "instead of the built-in smooth one"},
    {.name = "dump-intermediates", .kind = CK_OPT_STRING, .cmds = BENCH, .group = "single configuration",
     .arg = "DIR", OWN(bench_opts, dump_inter),
     .help = "write f1..f4, logits, logits_up and delta_raw of the last run as float32 .npy files (NHWC) into DIR, "
             "for precision studies against a reference (implies --no-slim)"},
    {.name = "slim", .kind = CK_OPT_TOGGLE, .invert = 1, .cmds = BENCH, .legacy01 = BENCH, .group = "execution",
     PARAM(keep_intermediates),
     .help = "keep no intermediates (default); --no-slim keeps f1..f4 and the logits of the last run (more memory)"},
    {.name = "sweep", .kind = CK_OPT_ENUM, .cmds = BENCH, .group = "sweeps", .names = SWEEPS, OWN(bench_opts, sweep),
     .help = "sweep the toggles instead of timing one configuration (the sweeps are described below)"},
    {.name = "resolution", INT(32, 16384), .step = 32, .cmds = BENCH, .group = "sweeps", .arg = "N",
     OWN(bench_opts, res), .max_n = BENCH_MAX_RES, .count_off = offsetof(bench_opts, n_res), .multi = 1,
     .help = "frame and model sizes, {range} (default 512, or --size), the outer loop"},
    {.name = "tiled", .kind = CK_OPT_CUSTOM, .cmds = BENCH, .group = "sweeps", .arg = "T/O", OWN(bench_opts, tiled),
     .max_n = BENCH_MAX_RES, .count_off = offsetof(bench_opts, n_tiled), .elem_size = 2 * sizeof(int), .multi = 1,
     .parse = parse_tile_overlap, .accepts = "TILE/OVERLAP (TILE a multiple of 32 from 32 to 16384, 0 <= OVERLAP < TILE)",
     .help = "add per resolution a row keying the res x res frame in T-pixel tiles with O overlap (ck_key_image; "
             "ckey's default toggles; time per frame)"},
    {.name = "toggles", .kind = CK_OPT_CUSTOM, .cmds = BENCH, .group = "sweeps", .arg = "LIST",
     OWN(bench_opts, toggles), .parse = parse_toggles, .accepts = "a comma list of toggles",
     .help = "comma list of the toggles to sweep (default all); the others keep ckey's defaults or the "
             "single-configuration options given"},
    {.name = "half", .kind = CK_OPT_ENUM, .cmds = BENCH, .group = "sweeps", .names = HALVES, OWN(bench_opts, half),
     .help = "the precision \"bf16\" on means (default fp16: as fast as bf16 on CUDA and within the accuracy bounds)"},
    {.name = "md", .kind = CK_OPT_STRING, .cmds = BENCH, .group = "sweeps", .arg = "FILE", OWN(bench_opts, md),
     .help = "also write the Markdown table"},
    {.name = "json", .kind = CK_OPT_STRING, .cmds = BENCH, .group = "sweeps", .arg = "FILE|-", OWN(bench_opts, json),
     .help = "also write the JSON (header + one object per row); `--json -` prints it instead of the table. `ckey "
             "doctor` reads ~/.cache/ckey/bench.json when present"},

    /* ---- ckey quality and ckey plates ---- */
    {.name = "checkpoint", .kind = CK_OPT_STRING, .cmds = QUAL, .group = "inputs", .arg = "F",
     OWN(quality_opts, ckpt),
     .help = "weights (default: the checkpoint `ckey key` would use, else the built-in small keyer at its training "
             "size; random:base_plus gives random Hiera-B+ weights built in memory, and the report then carries a "
             "caveat: they do not key)"},
    {.name = "plates", .kind = CK_OPT_STRING, .cmds = QUAL, .group = "inputs", .arg = "DIR",
     OWN(quality_opts, plates),
     .help = "score files written by 'ckey plates' (DIR/Plate, DIR/AlphaHint, DIR/Truth/Alpha, DIR/Truth/FG; EXR "
             "plates are read as linear and converted to sRGB, as 'ckey key' does). Without it the plates are made in "
             "memory (exact float truth; no image library needed)"},
    {.name = "out", .kind = CK_OPT_STRING, .cmds = PLATES, .group = "output", .arg = "DIR", OWN(plates_opts, out),
     .help = "output folder (created if missing)"},
    {.name = "size", .kind = CK_OPT_CUSTOM, .cmds = QUAL | PLATES, .group = "plates", .arg = "WxH", PLATE(pp.width),
     .parse = parse_plate_size, .accepts = "WxH", .help = "plate size (default 2048x2048; each side 16 to 32768)"},
    {.name = "count", INT(1, 100000), .cmds = QUAL | PLATES, .group = "plates", .arg = "N", PLATE(count),
     .help = "number of plates, {range} (default 4)"},
    {.name = "seed", .kind = CK_OPT_CUSTOM, .cmds = QUAL | PLATES, .group = "plates", .arg = "N", PLATE(pp.seed),
     .parse = parse_seed, .accepts = "a non-negative integer",
     .help = "plate set; the same seed and size give identical plates (default 1)"},
    {.name = "hint-erode", INT(0, 4096), .cmds = QUAL | PLATES, .group = "plates", .arg = "PX", PLATE(pp.hint_erode),
     .help = "shrink the hints: grey erosion over a (2PX+1)^2 square, {range} (default 0)"},
    {.name = "hint-dilate", INT(0, 4096), .cmds = QUAL | PLATES, .group = "plates", .arg = "PX",
     PLATE(pp.hint_dilate), .help = "grow the hints: grey dilation, after any erosion, {range} (default 0)"},
    {.name = "format", .kind = CK_OPT_ENUM, .cmds = PLATES, .group = "plates", .names = PLATE_FORMATS,
     OWN(plates_opts, png), .help = "plate format: exr (default) or png"},
    {.name = "noise", REAL(0, 1), .is_float = 1, .cmds = PLATES, .group = "plates", .arg = "X", PLATE(pp.noise),
     .help = "bound of the triangular noise on sRGB values, {range} (default 0.00784 = 2/255)"},
    {.name = "spill", REAL(0, 1), .is_float = 1, .cmds = PLATES, .group = "plates", .arg = "X", PLATE(pp.spill),
     .help = "green spill strength near edges, {range} (default 0.35)"},
    {.name = "model-size", INT(32, 16384), .step = 32, .cmds = QUAL, .group = "model", .arg = "N",
     OWN(quality_opts, model_size),
     .help = "model resolution of 'full' configurations, {range} (default 2048; the built-in model's training size "
             "with the built-in model)"},
    {.name = "configs", .kind = CK_OPT_STRING, .cmds = QUAL, .group = "model", .arg = "LIST",
     OWN(quality_opts, configs),
     .help = "comma list (default full,tile768/64,tile512/64), each\n"
             "  full         the whole frame resized to --model-size\n"
             "  fullN        the whole frame at model size N\n"
             "  tileT/O      tiled mode: T x T tiles at native resolution, overlap O px\n"
             "  tileT        overlap 64 (T/4 for tiles of 128 and less)\n"
             "with optional suffixes -norefiner (coarse decoder output only) and @fp32, @bf16 or @fp16 (precision, "
             "else --precision; the CPU computes in fp32 only), in this order: e.g. full-norefiner@fp16\n"
             "  chroma       the baseline without a network: alpha = the automatic\n"
             "               chroma-difference hint of the plate, fg = the plate"},
    {.name = "warmup", INT(0, 1000), .cmds = QUAL, .group = "execution", .arg = "N", OWN(quality_opts, warmup),
     .help = "untimed ck_key_image calls on the first plate before timing, {range} (default: 1 on CUDA, where the "
             "first frame captures the CUDA Graph; 0 on the CPU)"},
    {.name = "json", .kind = CK_OPT_STRING, .cmds = QUAL, .group = "output", .arg = "FILE", OWN(quality_opts, json),
     .help = "also write the results as JSON (NaN as null, infinite PSNR as \"inf\")"},
    {.name = "md", .kind = CK_OPT_STRING, .cmds = QUAL, .group = "output", .arg = "FILE", OWN(quality_opts, md),
     .help = "also write the Markdown report to FILE"},

    /* ---- ckey doctor ---- */
    {.name = "json", .kind = CK_OPT_FLAG, .cmds = CK_IN(CK_CMD_DOCTOR), .group = "doctor", OWN(doctor_opts, json),
     .help = "print one JSON object instead of the report"},
    {.name = "checkpoint", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_DOCTOR), .group = "doctor", .arg = "FILE",
     OWN(doctor_opts, ckpt),
     .help = "the checkpoint to check (default: where `ckey key` looks for one; builtin: the built-in small keyer)"},
    {.name = "bench-json", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_DOCTOR), .group = "doctor", .arg = "FILE",
     OWN(doctor_opts, bench),
     .help = "the stored `ckey bench --sweep ... --json` of this device (default ~/.cache/ckey/bench.json when "
             "present)"},

    /* ---- ckey encode ---- */
    {.name = "video-out", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_ENCODE), .group = "encode", .arg = "LIST",
     OWN(encode_opts, list),
     .help = "the videos, a comma list of prores, ffv1 and h264 (default prores,h264)"},
    {.name = "fps", REAL(0, 1000), .min_open = 1, .cmds = CK_IN(CK_CMD_ENCODE), .group = "encode", .arg = "F",
     OWN(encode_opts, fps), .help = "their frame rate, {range} (default 24)"},
    {.name = "timecode", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_ENCODE), .group = "encode", .arg = "HH:MM:SS:FF",
     OWN(encode_opts, timecode),
     .help = "the start timecode of the first frame (';' before FF for drop-frame), written as the videos' timecode "
             "(a tmcd track in MOV/MP4); without it the videos carry none"},
    {.name = "name", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_ENCODE), .group = "encode", .arg = "STEM",
     OWN(encode_opts, name), .help = "the videos' names, STEM_prores4444.mov ... (default: OUT's folder name)"},

    /* ---- ckey farm slurm / assemble ---- */
    {.name = "out", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm", .arg = "DIR",
     OWN(farm_opts, out), .help = "the shot's output folder (default for a clip folder: its Output/)"},
    {.name = "hint", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm", .arg = "FILE|DIR",
     OWN(farm_opts, hint), .help = "the hints, as for ckey key (a clip folder's are its AlphaHint)"},
    {.name = "chunk", INT(1, 1000000), .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm", .arg = "N",
     OWN(farm_opts, chunk), .help = "frames per task, {range} (default 10)"},
    {.name = "gpus-per-task", INT(0, 64), .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm", .arg = "N",
     OWN(farm_opts, gpus),
     .help = "GPUs per task (sbatch --ntasks=1 --gpus-per-task=N), {range} (default: none asked)"},
    {.name = "partition", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm", .arg = "P",
     OWN(farm_opts, partition), .help = "Slurm partition of both jobs"},
    {.name = "time", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm", .arg = "T",
     OWN(farm_opts, time), .help = "time limit of each key task (sbatch --time)"},
    {.name = "sbatch-arg", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm", .arg = "ARG",
     OWN(farm_opts, sbatch_args), .max_n = FARM_MAX_SBATCH, .count_off = offsetof(farm_opts, n_sbatch),
     .help = "passed to both sbatch commands as given, e.g. --sbatch-arg=--account=vfx --sbatch-arg=--cpus-per-task=4"},
    {.name = "job-name", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm", .arg = "NAME",
     OWN(farm_opts, job_name), .help = "the jobs' name (default ckey-<shot>)"},
    {.name = "video-out", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm", .arg = "LIST",
     OWN(farm_opts, video_out),
     .help = "videos the assemble step encodes: prores, ffv1, h264 or none (default prores,h264)"},
    {.name = "fps", REAL(0, 1000), .min_open = 1, .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm", .arg = "F",
     OWN(farm_opts, fps), .help = "their frame rate, {range} (default: the video's, else 24)"},
    {.name = "ckey", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm", .arg = "PATH",
     OWN(farm_opts, ckey), .help = "the ckey the nodes run (default: this executable)"},
    {.name = "dry-run", .kind = CK_OPT_FLAG, .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm",
     OWN(farm_opts, dry_run), .help = "write DIR/.farm/ and print the sbatch commands; submit nothing"},
    {.name = "wait", .kind = CK_OPT_FLAG, .cmds = CK_IN(CK_CMD_FARM_SLURM), .group = "farm", OWN(farm_opts, wait),
     .help = "sbatch --wait: return when the assemble step has run (or cannot, because a task failed), with its "
             "status: 0 when the shot is complete"},
    {.name = "video-out", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_FARM_ASSEMBLE), .group = "farm",
     .arg = "LIST|none", OWN(assemble_opts, video_out),
     .help = "the videos to encode: prores, ffv1, h264 or none (default: job.conf's, else prores,h264)"},
    {.name = "fps", REAL(0, 1000), .min_open = 1, .cmds = CK_IN(CK_CMD_FARM_ASSEMBLE), .group = "farm", .arg = "F",
     OWN(assemble_opts, fps), .help = "their frame rate, {range} (default: job.conf's, else the video's, else 24)"},
    {.name = "name", .kind = CK_OPT_STRING, .cmds = CK_IN(CK_CMD_FARM_ASSEMBLE), .group = "farm", .arg = "N",
     OWN(assemble_opts, name),
     .help = "the name of the videos and the manifest (default: job.conf's, else the input's)"},
};

const int ck_options_count = (int)(sizeof ck_options / sizeof ck_options[0]);
