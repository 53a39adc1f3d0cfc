/* `ckey quality` and `ckey plates` end to end on the tiny fixture model at a tiny size: the JSON and Markdown
 * reports have one row per configuration with finite numbers, repeating a configuration agrees exactly
 * (PSNR inf), plate files round-trip into `quality --plates` and `key`, and bad options exit with 2. */
#include "harness.h"
#include "io/image.h"

#include <sys/stat.h>
#include <sys/wait.h>

static char g_bin[1024], g_tmp[1024], g_ckpt[1024];

static int run(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s %s > %s/out.log 2> %s/err.log", g_bin, args, g_tmp, g_tmp);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

/* The number after `"key": ` in the JSON object that starts at obj (the next one only). */
static double json_field(const char *obj, const char *key) {
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(obj, pat);
    if (!p) return NAN;
    p += strlen(pat);
    if (!strncmp(p, "\"inf\"", 5)) return INFINITY;
    char  *end;
    double v = strtod(p, &end);
    return end == p ? NAN : v;
}

/* Checks the rows of a quality JSON report; returns the object of config k (pointer into s). */
static const char *config_obj(const char *s, const char *label) {
    char pat[128];
    snprintf(pat, sizeof pat, "{\"config\": \"%s\"", label);
    return strstr(s, pat);
}

int main(void) {
    const char *bin = getenv("CK_BIN");
    snprintf(g_bin, sizeof g_bin, "%s", bin ? bin : "./ckey");
    test_path(g_tmp, sizeof g_tmp, "CK_TMP", "quality");
    test_path(g_ckpt, sizeof g_ckpt, "CK_FIXTURES", "tiny/s128/model.safetensors");
    mkdir(g_tmp, 0777);
    char args[4096], path[2048];

    /* 1. generated plates, four configurations (the last repeats the first) */
    static const char *labels[4] = {"full", "tile64/16", "full-norefiner", "full@fp32"};
    snprintf(args, sizeof args,
             "quality --checkpoint %s --size 96x72 --count 2 --seed 3 --model-size 64 --device cpu --threads 2 "
             "--configs full,tile64/16,full-norefiner,full@fp32 --json %s/q.json --md %s/q.md",
             g_ckpt, g_tmp, g_tmp);
    CHECK_MSG(run(args) == 0, "quality exited non-zero (see %s/err.log)", g_tmp);
    snprintf(path, sizeof path, "%s/q.json", g_tmp);
    char *js = slurp(path);
    snprintf(path, sizeof path, "%s/q.md", g_tmp);
    char *md = slurp(path);
    CHECK(js && md);
    if (js && md) {
        static const char *fields[8] = {"alpha_mae", "alpha_max_err", "alpha_mse",   "edge_mae",
                                        "fg_mae",    "fg_solid_mae",  "fg_edge_mae", "ms_per_frame"};
        for (int k = 0; k < 4; k++) {
            const char *o = config_obj(js, labels[k]);
            CHECK_MSG(o != NULL, "no JSON row for %s", labels[k]);
            if (!o) continue;
            CHECK_MSG(!strncmp(strstr(o, "\"ok\": "), "\"ok\": true", 10), "%s not ok", labels[k]);
            for (int f = 0; f < 8; f++) {
                const double v = json_field(o, fields[f]);
                CHECK_MSG(isfinite(v) && v >= 0, "%s %s = %g", labels[k], fields[f], v);
            }
            CHECK_MSG(json_field(o, "alpha_mae") < 1.0 && json_field(o, "edge_pixels") > 0, "%s", labels[k]);
            char row[128];
            snprintf(row, sizeof row, "\n| %s | ", labels[k]);
            CHECK_MSG(strstr(md, row) != NULL, "no Markdown row for %s", labels[k]);
        }
        const char *o0 = config_obj(js, "full"), *o3 = config_obj(js, "full@fp32");
        if (o0 && o3) {
            CHECK_MSG(json_field(o0, "alpha_mae") == json_field(o3, "alpha_mae"), "full and full@fp32 differ on the CPU");
            const char *ag = strstr(o3, "\"agreement\"");
            CHECK_MSG(ag && json_field(ag, "psnr") == INFINITY && json_field(ag, "max_diff") == 0.0,
                      "repeated configuration: agreement not exact");
            const char *o1 = config_obj(js, "tile64/16");
            const char *a1 = o1 ? strstr(o1, "\"agreement\"") : NULL;
            CHECK_MSG(a1 && isfinite(json_field(a1, "psnr")) && json_field(a1, "mean_diff") > 0, "tiled agreement");
        }
        CHECK(strstr(md, "| config | alpha MAE | max err | MSE | edge-band MAE | fg MAE | fg MAE, alpha 1 | fg MAE, alpha < 1 | "
                         "ms/frame | device peak MiB |") != NULL);
        CHECK(strstr(md, "| full@fp32 | 0.000e+00 | 0.000e+00 | inf |") != NULL);
        CHECK(strstr(md, "Caveat") == NULL); /* a checkpoint file: no random-weights caveat */
        CHECK(strstr(md, "Against the baseline") == NULL); /* no `chroma` configuration: no ratios */
    }
    free(js), free(md);

    /* 1b. with the baseline: each configuration's errors over chroma's, as the Markdown's ratio table */
    snprintf(args, sizeof args,
             "quality --checkpoint %s --size 96x72 --count 2 --seed 3 --model-size 64 --device cpu --threads 2 "
             "--configs full,chroma --json %s/r.json --md %s/r.md",
             g_ckpt, g_tmp, g_tmp);
    CHECK_MSG(run(args) == 0, "quality with chroma exited non-zero (see %s/err.log)", g_tmp);
    snprintf(path, sizeof path, "%s/r.json", g_tmp);
    js = slurp(path);
    snprintf(path, sizeof path, "%s/r.md", g_tmp);
    md = slurp(path);
    CHECK(js && md);
    if (js && md) {
        const char *of = config_obj(js, "full"), *oc = config_obj(js, "chroma");
        CHECK(of && oc && strstr(md, "Against the baseline (`chroma`"));
        if (of && oc) {
            char row[160];
            snprintf(row, sizeof row, "| full | %.3f× | %.3f× | %.3f× |",
                     json_field(of, "alpha_mae") / json_field(oc, "alpha_mae"),
                     json_field(of, "edge_mae") / json_field(oc, "edge_mae"),
                     json_field(of, "fg_mae") / json_field(oc, "fg_mae"));
            CHECK_MSG(strstr(md, row) != NULL, "no ratio row '%s'", row);
            CHECK(json_field(of, "alpha_mae") != json_field(oc, "alpha_mae")); /* two different keys */
        }
    }
    free(js), free(md);

    /* 2. bad command lines exit with 2 */
    static const char *bad[] = {"quality --configs tile100/8", "quality --configs full@fp8", "quality --configs bogus",
                                "quality --model-size 100", "quality --size 8x8", "quality --count 0",
                                "plates --out", "plates --out x --format tiff", "plates --out x --size 12x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_MSG(run(bad[i]) == 2, "'%s' did not exit 2", bad[i]);

    /* 3. plates as files: quality --plates scores them like the in-memory plates (half-float rounding
     *    apart), and key reads the Plate/AlphaHint layout */
    if (ck_image_format_supported(CK_IMAGE_EXR) && ck_image_format_supported(CK_IMAGE_PNG)) {
        snprintf(args, sizeof args, "plates --out %s/set --size 96x72 --count 2 --seed 3", g_tmp);
        CHECK_MSG(run(args) == 0, "plates exited non-zero");
        static const char *files[] = {"Plate/0000.exr", "Plate/0001.exr", "AlphaHint/0001.png", "Truth/Alpha/0001.exr",
                                      "Truth/FG/0001.exr"};
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            struct stat st;
            snprintf(path, sizeof path, "%s/set/%s", g_tmp, files[i]);
            CHECK_MSG(stat(path, &st) == 0, "missing %s", path);
        }
        snprintf(args, sizeof args,
                 "quality --checkpoint %s --plates %s/set --model-size 64 --device cpu --configs full --json %s/f.json",
                 g_ckpt, g_tmp, g_tmp);
        CHECK_MSG(run(args) == 0, "quality --plates exited non-zero");
        snprintf(path, sizeof path, "%s/f.json", g_tmp);
        char *fj = slurp(path);
        snprintf(path, sizeof path, "%s/q.json", g_tmp);
        char *qj = slurp(path);
        const char *a = fj ? config_obj(fj, "full") : NULL, *b = qj ? config_obj(qj, "full") : NULL;
        CHECK(a && b);
        if (a && b) {
            const double ma = json_field(a, "alpha_mae"), mb = json_field(b, "alpha_mae");
            CHECK_MSG(fabs(ma - mb) < 0.01 * mb + 1e-3, "files vs memory: alpha MAE %.5f vs %.5f", ma, mb);
            CHECK(json_field(a, "edge_pixels") > 0.9 * json_field(b, "edge_pixels"));
        }
        free(fj), free(qj);
        snprintf(args, sizeof args, "key --image %s/set/Plate --hint %s/set/AlphaHint --checkpoint %s --size 64 "
                 "--device cpu --quiet --out %s/keyed", g_tmp, g_tmp, g_ckpt, g_tmp);
        CHECK_MSG(run(args) == 0, "key on the plate folders failed");
        snprintf(path, sizeof path, "%s/keyed/Matte/0001.exr", g_tmp);
        struct stat st;
        CHECK_MSG(stat(path, &st) == 0, "missing %s", path);
    } else {
        printf("SKIP: plate files (this build cannot write EXR and PNG)\n");
    }
    return test_summary();
}
