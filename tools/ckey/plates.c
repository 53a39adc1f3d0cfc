/* `ckey plates`: writes synthetic green-screen plates with exact ground truth (pipeline/plates.h) as files,
 * in a layout `ckey key --image DIR/Plate --hint DIR/AlphaHint` and `ckey quality --plates DIR` read. */
#include "ckey.h"
#include "cli.h"
#include "io/image.h"
#include "pipeline/frame_ops.h"
#include "pipeline/plates.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage_plates(FILE *f) {
    fprintf(f,
            "usage: ckey plates --out DIR [--size WxH] [--count N] [--seed N] [--hint-erode PX]\n"
            "                   [--hint-dilate PX] [--format exr|png] [--noise X] [--spill X]\n"
            "\n"
            "Writes synthetic green-screen plates with exact ground truth: a soft-edged subject with fine\n"
            "hair-like strands, motion-blurred stripes and a defocused disk, composited in linear light over\n"
            "an unevenly lit chroma-green screen, with green spill near the edges and noise.\n"
            "  DIR/Plate/NNNN.exr        the plate; EXR holds linear light (ckey key converts it to sRGB),\n"
            "                            with --format png a 16-bit sRGB PNG instead (DIR/Plate/NNNN.png)\n"
            "  DIR/AlphaHint/NNNN.png    16-bit hint: truth alpha averaged over 8x8 cells and scaled back\n"
            "                            up bilinearly (then eroded/dilated when asked)\n"
            "  DIR/Truth/Alpha/NNNN.exr  truth alpha, linear coverage, channel Y\n"
            "  DIR/Truth/FG/NNNN.exr     truth straight foreground, sRGB-encoded values (as the FG pass),\n"
            "                            including the spill; 0 where alpha is 0\n"
            "EXR files are half float (truth alpha within 2.5e-4); 'ckey quality' without --plates scores\n"
            "against the exact float truth in memory. Key them with\n"
            "  ckey key --image DIR/Plate --hint DIR/AlphaHint --out OUT\n"
            "\n"
            "options:\n"
            "  --out DIR          output folder (created if missing)\n"
            "  --size WxH         plate size (default 2048x2048; at least 16x16)\n"
            "  --count N          number of plates (default 4)\n"
            "  --seed N           plate set; the same seed and size give identical files (default 1)\n"
            "  --hint-erode PX    shrink the hint: grey erosion over a (2PX+1)^2 square (default 0)\n"
            "  --hint-dilate PX   grow the hint: grey dilation, after any erosion (default 0)\n"
            "  --format F         plate format: exr (default) or png\n"
            "  --noise X          bound of the triangular noise on sRGB values (default 0.00784 = 2/255)\n"
            "  --spill X          green spill strength near edges, 0..1 (default 0.35)\n");
}

static int mkdirs(const char *path) {
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return 0;
        *p = '/';
    }
    return mkdir(tmp, 0777) == 0 || errno == EEXIST;
}

int ck_cli_arg_long(const char *opt, const char *v, long lo, long hi, long *out) {
    char *end;
    errno  = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || errno || *end || x < lo || x > hi) {
        fprintf(stderr, "ckey: %s expects an integer in [%ld, %ld], got '%s'\n", opt, lo, hi, v ? v : "");
        return 0;
    }
    *out = x;
    return 1;
}

int ck_cli_plate_option(const char *a, const char *val, ck_plate_params *pp, long *count) {
    long v;
    if (!strcmp(a, "--size")) {
        if (ck_plate_parse_size(val, &pp->width, &pp->height)) return 1;
        fprintf(stderr, "ckey: --size expects WxH (each 16..32768), got '%s'\n", val);
        return -1;
    }
    if (!strcmp(a, "--count")) return ck_cli_arg_long(a, val, 1, 100000, count) ? 1 : -1;
    if (!strcmp(a, "--seed")) {
        char *end;
        errno    = 0;
        pp->seed = strtoull(val, &end, 10);
        if (errno || *end || *val == '-' || !*val) {
            fprintf(stderr, "ckey: --seed expects a non-negative integer, got '%s'\n", val);
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--hint-erode") || !strcmp(a, "--hint-dilate")) {
        if (!ck_cli_arg_long(a, val, 0, 4096, &v)) return -1;
        *(!strcmp(a, "--hint-erode") ? &pp->hint_erode : &pp->hint_dilate) = (int)v;
        return 1;
    }
    return 0;
}

static int arg_unit(const char *opt, const char *v, float *out) {
    char *end;
    float x = v ? strtof(v, &end) : 0;
    if (!v || !*v || *end || !(x >= 0.0f && x <= 1.0f)) {
        fprintf(stderr, "ckey: %s expects a number in [0, 1], got '%s'\n", opt, v ? v : "");
        return 0;
    }
    *out = x;
    return 1;
}

int ck_cli_plates(int argc, char **argv) {
    const char     *out = NULL, *format = "exr";
    long            count = 4;
    ck_plate_params pp = ck_plate_params_default();
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_plates(stdout);
            return 0;
        }
        if (!val) {
            fprintf(stderr, "ckey: %s needs a value (see 'ckey plates --help')\n", a);
            return 2;
        }
        i++;
        const int plate_opt = ck_cli_plate_option(a, val, &pp, &count);
        if (plate_opt < 0) return 2;
        if (plate_opt > 0) continue;
        if (!strcmp(a, "--out")) out = val;
        else if (!strcmp(a, "--format")) format = val;
        else if (!strcmp(a, "--noise")) {
            if (!arg_unit(a, val, &pp.noise)) return 2;
        } else if (!strcmp(a, "--spill")) {
            if (!arg_unit(a, val, &pp.spill)) return 2;
        } else {
            fprintf(stderr, "ckey: unknown plates option '%s' (see 'ckey plates --help')\n", a);
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "ckey: plates needs --out DIR (see 'ckey plates --help')\n");
        return 2;
    }
    const int png = !strcmp(format, "png");
    if (!png && strcmp(format, "exr")) {
        fprintf(stderr, "ckey: --format expects exr or png, got '%s'\n", format);
        return 2;
    }
    if (!ck_image_format_supported(CK_IMAGE_EXR) || !ck_image_format_supported(CK_IMAGE_PNG)) {
        fprintf(stderr, "ckey: plates writes EXR and PNG files, and this build lacks %s (library not found at "
                        "configure time); 'ckey quality' generates plates in memory without them\n",
                ck_image_format_supported(CK_IMAGE_EXR) ? "PNG" : "EXR");
        return 1;
    }
    static const char *dirs[4] = {"Plate", "AlphaHint", "Truth/Alpha", "Truth/FG"};
    for (int d = 0; d < 4; d++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", out, dirs[d]);
        if (!mkdirs(path)) {
            fprintf(stderr, "ckey: cannot create output folder %s: %s\n", path, strerror(errno));
            return 1;
        }
    }

    ck_plate pl;
    if (ck_plate_alloc(&pl, pp.width, pp.height) != CK_OK) {
        fprintf(stderr, "ckey: out of memory for %dx%d plates\n", pp.width, pp.height);
        return 1;
    }
    const size_t n   = (size_t)pp.width * pp.height;
    float       *lin = png ? NULL : malloc(sizeof(float) * n * 3); /* (h, w, 3) the EXR plate, linear */
    if (!png && !lin) {
        ck_plate_free(&pl);
        fprintf(stderr, "ckey: out of memory\n");
        return 1;
    }
    int rc = 0;
    for (long k = 0; k < count && rc == 0; k++) {
        pp.index = (int)k;
        if (ck_plate_generate(&pl, &pp) != CK_OK) {
            fprintf(stderr, "ckey: plate %ld: invalid parameters\n", k);
            rc = 2;
            break;
        }
        if (!png)
            for (size_t i = 0; i < n * 3; i++) lin[i] = ck_srgb_to_linear(pl.rgb[i]);
        const ck_image plate = {pl.width, pl.height, 3, png ? pl.rgb : lin};
        const ck_image hint = {pl.width, pl.height, 1, pl.hint}, alpha = {pl.width, pl.height, 1, pl.alpha};
        const ck_image fg = {pl.width, pl.height, 3, pl.fg};
        char           path[4][4300];
        for (int d = 0; d < 4; d++)
            snprintf(path[d], sizeof path[d], "%s/%s/%04ld.%s", out, dirs[d], k, d == 1 || (d == 0 && png) ? "png" : "exr");
        ck_err err = {{0}};
        /* each writer goes through a temporary file renamed into place (io/image.h) */
        if ((png ? ck_image_write_png16(path[0], &plate, &err) : ck_image_write_exr(path[0], &plate, CK_EXR_ZIP, &err)) != CK_OK ||
            ck_image_write_png16(path[1], &hint, &err) != CK_OK ||
            ck_image_write_exr(path[2], &alpha, CK_EXR_ZIP, &err) != CK_OK ||
            ck_image_write_exr(path[3], &fg, CK_EXR_ZIP, &err) != CK_OK) {
            rc = 1; /* the writer has reported the file and the problem */
            break;
        }
        size_t edge = 0;
        for (size_t i = 0; i < n; i++) edge += pl.alpha[i] > 0.0f && pl.alpha[i] < 1.0f;
        fprintf(stderr, "ckey: plates: [%ld/%ld] %s (%zu edge pixels)\n", k + 1, count, path[0], edge);
    }
    free(lin);
    ck_plate_free(&pl);
    if (rc == 0) fprintf(stderr, "ckey: wrote %ld plate%s into %s\n", count, count == 1 ? "" : "s", out);
    return rc;
}
