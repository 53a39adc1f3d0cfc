/* The ckey CLI end to end on the tiny fixture: the written passes (EXR half, PNG 8-bit) are read back
 * and compared with CorridorKey's pipeline run in PyTorch/OpenCV (tools/reference/make_fixtures.py).
 * Then bad inputs: each must exit non-zero with a message and leave no output file behind. */
#include "harness.h"
#include "io/image.h"
#include "ckey_io.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char g_bin[1024], g_fx[1024], g_tmp[1024];

static int run(const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s > %s/cli.log 2>&1", g_bin, args, g_tmp);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The last run's output (cli.log) into text. */
static void read_log(char *text, size_t n) {
    char log[2048];
    snprintf(log, sizeof log, "%s/cli.log", g_tmp);
    FILE  *f   = fopen(log, "r");
    size_t got = f ? fread(text, 1, n - 1, f) : 0;
    text[got]  = '\0';
    if (f) fclose(f);
}

/* Counts regular files under dir, recursively (hidden temporaries included). */
static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int            n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char        p[2048];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (stat(p, &st) != 0) continue;
        n += S_ISDIR(st.st_mode) ? count_files(p) : 1;
    }
    closedir(d);
    return n;
}

static void compare_pass(const char *out, const char *pass, const char *ext, const char *ref_name, int channels,
                         double atol) {
    char     path[2048], ref_path[2048];
    ck_image img;
    ck_npy   ref;
    ck_err   err = {{0}};
    snprintf(path, sizeof path, "%s/%s/frame_rgb.%s", out, pass, ext);
    snprintf(ref_path, sizeof ref_path, "%s/%s.npy", g_fx, ref_name);
    CHECK_MSG(ck_image_read(path, &img, NULL, &err) == CK_OK, "%s: %s", path, err.msg);
    CHECK_MSG(ck_npy_read(ref_path, &ref, &err) == CK_OK, "%s", ref_path);
    if (!img.data || !ref.data) return;
    CHECK(img.channels == channels && img.width == 72 && img.height == 136);
    size_t n = (size_t)img.width * img.height * (size_t)img.channels;
    CHECK(n == ref.numel);
    float *want = ref.data;
    if (!strcmp(ext, "png")) /* the reference before 8-bit quantization: apply CorridorKey's truncation */
        for (size_t i = 0; i < n; i++) {
            float v = want[i] < 0 ? 0 : want[i] > 1 ? 1 : want[i];
            want[i] = (float)(int)(v * 255.0f) / 255.0f;
        }
    if (n == ref.numel) check_close(pass, img.data, want, n, atol, 0.0);
    ck_image_release(&img);
    ck_npy_free(&ref);
}

int main(void) {
    const char *bin = getenv("CK_BIN");
    snprintf(g_bin, sizeof g_bin, "%s", bin ? bin : "./ckey");
    test_path(g_fx, sizeof g_fx, "CK_FIXTURES", "tiny/s128");
    test_path(g_tmp, sizeof g_tmp, "CK_TMP", "cli");
    mkdir(g_tmp, 0777);
    char args[4096], out[2048];
    if (!ck_image_format_supported(CK_IMAGE_EXR) || !ck_image_format_supported(CK_IMAGE_PNG)) {
        printf("SKIP: this build cannot write EXR and PNG (OpenEXR or libpng not found at configure time)\n");
        return 0;
    }

    /* 1. the main job on the fixture frame, CorridorKey's settings used by the reference */
    snprintf(out, sizeof out, "%s/ok", g_tmp);
    snprintf(args, sizeof args,
             "key --image %s/frame_rgb.png --hint %s/frame_hint.png --checkpoint %s/model.safetensors --size 128 "
             "--despill 0.5 --despeckle-size 20 --device cpu --out %s",
             g_fx, g_fx, g_fx, out);
    int rc = run(args);
    CHECK_MSG(rc == 0, "ckey key exited %d (see %s/cli.log)", rc, g_tmp);
    /* half-float storage: |v| < 1 rounds within 2^-12; plus the engine's 1e-5 */
    compare_pass(out, "Matte", "exr", "post_alpha", 1, 6e-4);
    compare_pass(out, "FG", "exr", "post_fg", 3, 6e-4);
    compare_pass(out, "Processed", "exr", "processed", 4, 6e-4);
    compare_pass(out, "Comp", "png", "comp", 3, 1.0 / 255 + 1e-6);
    CHECK(count_files(out) == 4);

    /* 2. bad inputs: non-zero exit, nothing written */
    struct {
        const char *what, *fmt;
        int         want_rc;
    } bad[] = {
        {"missing image", "key --image %s/nope.png --hint %s/frame_hint.png --checkpoint %s/model.safetensors --size 128 --out %s", 1},
        {"unreadable image", "key --image %s/model.safetensors --hint %s/frame_hint.png --checkpoint %s/model.safetensors --size 128 --out %s", 1},
        {"size not multiple of 32", "key --image %s/frame_rgb.png --hint %s/frame_hint.png --checkpoint %s/model.safetensors --size 100 --out %s", 2},
        {"corrupt checkpoint", "key --image %s/frame_rgb.png --hint %s/frame_hint.png --checkpoint %s/frame_rgb.npy --size 128 --out %s", 1},
        {"missing hint", "key --image %s/frame_rgb.png --hint %s/none.png --checkpoint %s/model.safetensors --size 128 --out %s", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(out, sizeof out, "%s/bad%zu", g_tmp, i);
        snprintf(args, sizeof args, bad[i].fmt, g_fx, g_fx, g_fx, out);
        rc = run(args);
        CHECK_MSG(rc == bad[i].want_rc, "%s: exit %d, expected %d", bad[i].what, rc, bad[i].want_rc);
        CHECK_MSG(count_files(out) == 0, "%s: files left in %s", bad[i].what, out);
        printf("OK     bad input: %-26s exit %d, no output\n", bad[i].what, rc);
    }
    /* an output folder that cannot be created is found before the checkpoint is loaded */
    snprintf(args, sizeof args, "key --image %s/frame_rgb.png --hint %s/frame_hint.png --checkpoint %s/model.safetensors "
             "--size 128 --device cpu --out %s/frame_rgb.png/out", g_fx, g_fx, g_fx, g_fx);
    rc = run(args);
    {
        char text[4096];
        read_log(text, sizeof text);
        CHECK_MSG(rc == 1 && strstr(text, "cannot create the output folder") && !strstr(text, "loaded in"),
                  "unwritable output: exit %d, reported before loading: %s", rc, text);
        printf("OK     bad output folder reported before loading (exit %d)\n", rc);
    }
    /* a truncated checkpoint: the first 1000 bytes of the real one */
    char trunc[2048], src[2048];
    snprintf(trunc, sizeof trunc, "%s/truncated.pth", g_tmp);
    snprintf(src, sizeof src, "%s/model.pth", g_fx);
    FILE *fi = fopen(src, "rb"), *fo = fopen(trunc, "wb");
    CHECK(fi && fo);
    if (fi && fo) {
        char buf[1000];
        size_t n = fread(buf, 1, sizeof buf, fi);
        fwrite(buf, 1, n, fo);
    }
    if (fi) fclose(fi);
    if (fo) fclose(fo);
    snprintf(out, sizeof out, "%s/badtrunc", g_tmp);
    snprintf(args, sizeof args, "key --image %s/frame_rgb.png --hint %s/frame_hint.png --checkpoint %s --size 128 --out %s",
             g_fx, g_fx, trunc, out);
    rc = run(args);
    CHECK_MSG(rc == 1 && count_files(out) == 0, "truncated checkpoint: exit %d", rc);
    /* --json: NDJSON events with stable names, ending in "completed" (or "failed" with the cause) */
    snprintf(out, sizeof out, "%s/json", g_tmp);
    snprintf(args, sizeof args,
             "key --image %s/frame_rgb.png --hint %s/frame_hint.png --checkpoint %s/model.safetensors --size 128 "
             "--device cpu --json --quiet --out %s", g_fx, g_fx, g_fx, out);
    CHECK(run(args) == 0);
    {
        char  log[2048], line[1024];
        int   started = 0, written = 0, completed = 0;
        snprintf(log, sizeof log, "%s/cli.log", g_tmp);
        FILE *f = fopen(log, "r");
        while (f && fgets(line, sizeof line, f)) {
            started += strstr(line, "{\"event\": \"started\"") == line;
            written += strstr(line, "{\"event\": \"frame_written\", \"frame\": 0, \"stem\": \"frame_rgb\", \"paths\": "
                                    "{\"matte\": \"") == line &&
                       strstr(line, "/Matte/frame_rgb.exr\", \"fg\": \"") && strstr(line, "/Comp/frame_rgb.png\"}}");
            completed += strstr(line, "{\"event\": \"completed\", \"frames_written\": 1") == line;
        }
        if (f) fclose(f);
        CHECK_MSG(started == 1 && written == 1 && completed == 1, "--json events missing");
    }
    snprintf(args, sizeof args, "key --image %s/frame_rgb.png --hint %s/frame_hint.png --checkpoint %s/frame_rgb.npy "
             "--size 128 --json --quiet --out %s/jsonbad", g_fx, g_fx, g_fx, g_tmp);
    CHECK(run(args) == 1);
    {
        char  log[2048], line[1024];
        int   failed = 0;
        snprintf(log, sizeof log, "%s/cli.log", g_tmp);
        FILE *f = fopen(log, "r");
        while (f && fgets(line, sizeof line, f)) failed += strstr(line, "{\"event\": \"failed\", \"exit_code\": 1") == line;
        if (f) fclose(f);
        CHECK_MSG(failed == 1, "--json: no failed event for a corrupt checkpoint");
    }
    /* a folder of clips with a bad one (its only frame is not an image) and a folder that is no clip:
     * the good clips are keyed, the bad one is named, the exit status is 1 */
    {
        char root[2048], path[2600], cmd[8192];
        snprintf(root, sizeof root, "%s/clips", g_tmp);
        snprintf(cmd, sizeof cmd,
                 "rm -rf %s && mkdir -p %s/A_good/Input %s/A_good/AlphaHint %s/B_bad/Input %s/B_bad/AlphaHint "
                 "%s/C_good/Input %s/C_good/AlphaHint %s/D_notes && "
                 "cp %s/frame_rgb.png %s/A_good/Input/0000.png && cp %s/frame_hint.png %s/A_good/AlphaHint/0000.png && "
                 "cp %s/frame_rgb.png %s/C_good/Input/0000.png && cp %s/frame_hint.png %s/C_good/AlphaHint/0000.png && "
                 "head -c 300 %s/model.safetensors > %s/B_bad/Input/0000.png && cp %s/frame_hint.png %s/B_bad/AlphaHint/0000.png",
                 root, root, root, root, root, root, root, root, g_fx, root, g_fx, root, g_fx, root, g_fx, root, g_fx,
                 root, g_fx, root);
        CHECK(system(cmd) == 0);
        snprintf(args, sizeof args, "clip %s --checkpoint %s/model.safetensors --size 128 --device cpu --quiet", root, g_fx);
        rc = run(args);
        CHECK_MSG(rc == 1, "a batch with a bad clip exits 1 (got %d)", rc);
        snprintf(path, sizeof path, "%s/A_good/Output", root);
        CHECK_MSG(count_files(path) == 4, "the clip before the bad one is keyed (%d files)", count_files(path));
        snprintf(path, sizeof path, "%s/C_good/Output", root);
        CHECK_MSG(count_files(path) == 4, "the clip after the bad one is keyed (%d files)", count_files(path));
        snprintf(path, sizeof path, "%s/B_bad/Output", root);
        CHECK_MSG(count_files(path) == 0, "the bad clip leaves nothing");
        char text[8192];
        read_log(text, sizeof text);
        CHECK_MSG(strstr(text, "1 of 3 clips failed: B_bad") != NULL, "the bad clip is named at the end");
        CHECK_MSG(strstr(text, "not clips") && strstr(text, "D_notes"), "the folder that is no clip is named");
        printf("OK     clip batch: the good clips keyed, B_bad named, exit %d\n", rc);
    }
    /* --help documents every option */
    CHECK(run("key --help") == 0);
    CHECK(run("bogus") == 2);
    return test_summary();
}
