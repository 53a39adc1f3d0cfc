/* The command lines of `ckey key` and `ckey clip` (the option table does the options; the checks spanning
 * several options and the usage texts are here) and CorridorKey's clip folder layout (Input/ or
 * Input.<video>, AlphaHint/, Output/). Used by main.c and the farm commands. */
#include "ckey.h"
#include "cli.h"
#include "key.h"
#include "options.h"
#include "ckey_io.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void key_defaults(key_opts *o) {
    memset(o, 0, sizeof *o);
    o->p              = ck_params_default();
    o->p.tile_overlap = -1; /* 64 with --tile unless given */
    o->exr            = CK_EXR_PXR24;
}

/* Command lines go through the option table (option_table.c); the checks that span several options are
 * here. `cmd` is CK_CMD_KEY or CK_CMD_CLIP (whose folder comes back in res->pos[0]). 0 after a message. */
int ck_cli_parse_key_cmd(int argc, char **argv, key_opts *o, ck_cmd cmd, ck_opt_result *res) {
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
    if (o->devices) { /* several CUDA devices */
        if (o->p.device == CK_DEVICE_CPU) {
            fprintf(stderr, "ckey: --devices keys on CUDA devices; not with --device cpu\n");
            return 0;
        }
        o->p.device = CK_DEVICE_CUDA;
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

int ck_cli_parse_key(int argc, char **argv, key_opts *o) {
    ck_opt_result res;
    return ck_cli_parse_key_cmd(argc, argv, o, CK_CMD_KEY, &res);
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
int ck_cli_is_clip(const char *dir, char *input, char *hint, char *out, size_t n) {
    snprintf(input, n, "%s/Input", dir);
    if (!is_dir(input) && !find_video(input, n, dir, "Input")) return 0;
    snprintf(hint, n, "%s/AlphaHint", dir);
    if (!is_dir(hint)) snprintf(hint, n, "%s/alphahint", dir);
    if (!is_dir(hint) && !find_video(hint, n, dir, "AlphaHint")) hint[0] = '\0';
    snprintf(out, n, "%s/Output", dir);
    return 1;
}

char **ck_cli_clip_names(const char *dir, int *n) {
    *n     = 0;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "ckey: %s: cannot open folder: %s\n", dir, strerror(errno));
        return NULL;
    }
    char         **names = malloc(sizeof *names); /* non-NULL also for an empty folder */
    struct dirent *e;
    while (names && (e = readdir(d))) {
        if (e->d_name[0] == '.' || e->d_name[0] == '_' || !strcmp(e->d_name, "Output") ||
            !strcmp(e->d_name, "IgnoredClips"))
            continue;
        char **nn = realloc(names, sizeof *names * (size_t)(*n + 1));
        if (!nn) break;
        names        = nn;
        names[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    for (int i = 0; names && i < *n; i++) /* natural order */
        for (int j = i + 1; j < *n; j++)
            if (ck_natural_cmp(names[j], names[i]) < 0) {
                char *t  = names[i];
                names[i] = names[j], names[j] = t;
            }
    return names;
}

void ck_cli_free_names(char **names, int n) {
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
}
