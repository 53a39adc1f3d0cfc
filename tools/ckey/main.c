/* ckey command-line tool: command dispatch and the options of `ckey key` / `ckey clip` (key.c runs
 * them; bench.c, quality.c, plates.c and doctor.c hold the other commands).
 * Exit codes: 0 success, 1 runtime failure (I/O, model, device), 2 usage error. */
#include "ckey.h"
#include "cli.h"
#include "key.h"
#include "options.h"
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
            "Run 'ckey <command> --help' for the options of a command. An option takes its value as the next\n"
            "argument or after '=' (--size 1024, --size=1024); a toggle is --x / --no-x (--sdpa, --no-sdpa).\n",
            CK_VERSION_MAJOR, CK_VERSION_MINOR, CK_VERSION_PATCH);
}

static void usage_key(FILE *f) {
    fprintf(f, "usage: ckey key --image FILE|DIR [--hint FILE|DIR] --out DIR [options]\n"
               "\n"
               "Keys one green-screen frame with the CorridorKey GreenFormer network and writes\n"
               "  DIR/Matte/<stem>.exr      alpha, linear, 1 channel \"Y\", half float\n"
               "  DIR/FG/<stem>.exr         straight foreground, sRGB-encoded values, RGB half float\n"
               "  DIR/Processed/<stem>.exr  linear premultiplied RGBA (despilled, despeckled), half float\n"
               "  DIR/Comp/<stem>.png       8-bit sRGB preview over a checkerboard\n"
               "where <stem> is the image file name without its extension. Files appear only when\n"
               "every pass has been written (temporary files are renamed into place).\n"
               "\n");
    ck_opts_help(f, CK_CMD_KEY);
    fprintf(f, "\n"
               "exit status: 0 success, 1 failure (unreadable input, bad checkpoint, device or write error),\n"
               "2 invalid command line.\n");
}

static void usage_clip(FILE *f) {
    fprintf(f, "usage: ckey clip DIR [key options]\n"
               "Keys a CorridorKey clip folder: DIR/Input/ (frames) or DIR/Input.<mp4|mov|avi|mkv>, DIR/AlphaHint/\n"
               "or DIR/AlphaHint.<video> (hints, optional: without them the automatic hint is used), writing\n"
               "DIR/Output/{Matte,FG,Processed,Comp}/<stem>. DIR may also hold several clips as sub-folders (names\n"
               "starting with '.' or '_', IgnoredClips and Output are skipped). Every 'ckey key' option applies\n"
               "(--frames, --shard, --skip-existing, --json, --tile, ...), except --image, --hint and --out:\n"
               "\n");
    ck_opts_help(f, CK_CMD_CLIP);
}

const char *ck_cli_device_name(const ck_ctx *ctx) { return ck_ctx_device_name(ctx); }

static void key_defaults(key_opts *o) {
    memset(o, 0, sizeof *o);
    o->p              = ck_params_default();
    o->p.tile_overlap = -1; /* 64 with --tile unless given */
    o->exr            = CK_EXR_PXR24;
}

/* Command lines go through the option table (option_table.c); the checks that span several options are
 * here. `cmd` is CK_CMD_KEY or CK_CMD_CLIP (whose folder comes back in res->pos[0]). 0 after a message. */
static int parse_key(int argc, char **argv, key_opts *o, ck_cmd cmd, ck_opt_result *res) {
    key_defaults(o);
    const int st = ck_opts_parse(cmd, argc, argv, o, res);
    if (st == CK_OPT_HELP) {
        if (cmd == CK_CMD_CLIP) usage_clip(stdout);
        else usage_key(stdout);
        exit(0);
    }
    if (st != CK_OPT_OK) return 0;
    if (o->preset) { /* the preset first, then the command line again: explicit options override its choices */
        key_defaults(o);
        if (!ck_cli_apply_preset("auto", &o->p)) return 0;
        if (ck_opts_parse(cmd, argc, argv, o, res) != CK_OPT_OK) return 0;
    }
    o->size_set = ck_opts_given(res, cmd, "size");
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
    if (cmd == CK_CMD_KEY && (!o->image || !o->out)) {
        fprintf(stderr, "ckey: key needs --image and --out (see 'ckey key --help')\n");
        return 0;
    }
    return 1;
}

int run_key(key_opts o);

int ck_cli_parse_key(int argc, char **argv, key_opts *o) {
    ck_opt_result res;
    return parse_key(argc, argv, o, CK_CMD_KEY, &res);
}

static int cmd_key(int argc, char **argv) {
    key_opts      o;
    ck_opt_result res;
    if (!parse_key(argc, argv, &o, CK_CMD_KEY, &res)) return EXIT_USAGE;
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
    key_opts      base;
    ck_opt_result res;
    if (!parse_key(argc, argv, &base, CK_CMD_CLIP, &res)) return EXIT_USAGE;
    if (res.npos < 1) {
        fprintf(stderr, "ckey: clip needs a folder: ckey clip DIR [options] (see 'ckey clip --help')\n");
        return EXIT_USAGE;
    }
    const char *root = res.pos[0];
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
