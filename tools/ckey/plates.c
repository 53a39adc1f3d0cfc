/* `ckey plates`: writes synthetic green-screen plates with exact ground truth (include/ckey_qa.h) as files,
 * in a layout `ckey key --image DIR/Plate --hint DIR/AlphaHint` and `ckey quality --plates DIR` read. */
#include "ckey.h"
#include "cli.h"
#include "cmd_opts.h"
#include "options.h"
#include "ckey_io.h"
#include "ckey_qa.h"

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
            "options:\n");
    ck_opts_help(f, CK_CMD_PLATES);
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

int ck_cli_plates(int argc, char **argv) {
    plates_opts po;
    memset(&po, 0, sizeof po);
    po.set.pp    = ck_plate_params_default();
    po.set.count = 4;
    ck_opt_result r;
    const int     st = ck_opts_parse(CK_CMD_PLATES, argc, argv, &po, &r);
    if (st == CK_OPT_HELP) {
        usage_plates(stdout);
        return 0;
    }
    if (st != CK_OPT_OK) return 2;
    if (!po.out) {
        fprintf(stderr, "ckey: plates needs --out DIR (see 'ckey plates --help')\n");
        return 2;
    }
    const char     *out   = po.out;
    const int       png   = po.png;
    const long      count = po.set.count;
    ck_plate_params pp    = po.set.pp;
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
