/* Frame sequences: natural order, frame ranges, shards; the CLI over a folder of frames: two shards
 * together equal one unsharded run (byte for byte), an interrupted run resumed with --skip-existing equals
 * an uninterrupted one, and mismatched frame/hint counts are an error that writes nothing. */
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
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s %s > %s/seq.log 2>&1", g_bin, args, g_tmp);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char g_logged[2048];
static void capture_log(ck_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == CK_LOG_WARN) snprintf(g_logged, sizeof g_logged, "%s", msg);
}

static int sh(const char *fmt, const char *a, const char *b) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    return system(cmd) == 0;
}

int main(void) {
    /* natural order */
    CHECK(ck_natural_cmp("f2", "f10") < 0);
    CHECK(ck_natural_cmp("f010", "f9") > 0);
    CHECK(ck_natural_cmp("Shot_1.exr", "shot_1.exr") == 0);
    CHECK(ck_natural_cmp("a", "ab") < 0);
    CHECK(ck_natural_cmp("frame_0001", "frame_0001_b") < 0);
    /* ranges and shards */
    int a, b, i, n, s0;
    CHECK(ck_parse_frames("3-7", &a, &b) && a == 3 && b == 7);
    CHECK(ck_parse_frames("5", &a, &b) && a == 5 && b == 5);
    CHECK(!ck_parse_frames("7-3", &a, &b) && !ck_parse_frames("x", &a, &b) && !ck_parse_frames("-2", &a, &b));
    CHECK(ck_parse_shard("1/3", &i, &n) && i == 1 && n == 3);
    CHECK(!ck_parse_shard("3/3", &i, &n) && !ck_parse_shard("1", &i, &n));
    int covered = 0, next = 0, ok = 1;
    for (int k = 0; k < 3; k++) { /* 10 frames over 3 shards: 4, 3, 3, contiguous */
        int c = ck_shard_range(0, 9, k, 3, &s0);
        ok &= s0 == next && c == (k == 0 ? 4 : 3);
        next = s0 + c, covered += c;
    }
    CHECK(ok && covered == 10);

    const char *bin = getenv("CK_BIN");
    snprintf(g_bin, sizeof g_bin, "%s", bin ? bin : "./ckey");
    test_path(g_fx, sizeof g_fx, "CK_FIXTURES", "tiny/s128");
    test_path(g_tmp, sizeof g_tmp, "CK_TMP", "seq");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s/in %s/hint", g_tmp, g_tmp, g_tmp);
    CHECK(system(cmd) == 0);
    /* five frames named so that plain sorting and natural sorting differ */
    const char *names[5] = {"sh_1", "sh_2", "sh_9", "sh_10", "sh_11"};
    for (int k = 0; k < 5; k++) {
        char dst[2048];
        snprintf(dst, sizeof dst, "%s/in/%s.png", g_tmp, names[k]);
        CHECK(sh("cp %s/frame_rgb.png %s", g_fx, dst));
        snprintf(dst, sizeof dst, "%s/hint/h%d.png", g_tmp, k);
        CHECK(sh("cp %s/frame_hint.png %s", g_fx, dst));
    }
    ck_seq seq;
    ck_err err = {{0}};
    char   dir[2048];
    snprintf(dir, sizeof dir, "%s/in", g_tmp);
    CHECK(ck_seq_list(&seq, dir, &err) == CK_OK && seq.n == 5 && !strcmp(seq.stems[3], "sh_10"));
    ck_seq_free(&seq);
    /* a total order: "1" and "01" (equal as numbers) by their bytes, whatever the directory's order */
    {
        char cmd2[4096], d2[2048];
        snprintf(d2, sizeof d2, "%s/order", g_tmp);
        snprintf(cmd2, sizeof cmd2, "mkdir -p %s && for f in 1 01 001 2 B b; do cp %s/frame_rgb.png %s/$f.png; done", d2,
                 g_fx, d2);
        CHECK(system(cmd2) == 0);
        ck_seq  so;
        ck_err  e2 = {{0}};
        const char *want[6] = {"001", "01", "1", "2", "B", "b"};
        int     same = ck_seq_list(&so, d2, &e2) == CK_OK && so.n == 6;
        for (int k = 0; same && k < 6; k++) same = !strcmp(so.stems[k], want[k]);
        CHECK_MSG(same, "natural order made total: 001 01 1 2 B b");
        if (so.n) ck_seq_free(&so);
        /* the same stem twice (.png and .PNG, or .png and .exr) is an error naming both */
        snprintf(cmd2, sizeof cmd2, "mkdir -p %s/dup && cp %s/frame_rgb.png %s/dup/0000.png && cp %s/frame_rgb.png %s/dup/0000.PNG",
                 g_tmp, g_fx, g_tmp, g_fx, g_tmp);
        CHECK(system(cmd2) == 0);
        snprintf(d2, sizeof d2, "%s/dup", g_tmp);
        memset(&e2, 0, sizeof e2);
        const ck_status st = ck_seq_list(&so, d2, &e2);
        CHECK_MSG(st == CK_STATUS_EINVAL && strstr(e2.msg, "0000.png") && strstr(e2.msg, "0000.PNG") &&
                  strstr(e2.msg, "would both be written as '0000'"), "same stem twice: %s", e2.msg);
        printf("OK     %s\n", e2.msg);
        /* files that are not frames (a camera raw, which this reader does not take) are named in a warning */
        snprintf(cmd2, sizeof cmd2, "mkdir -p %s/mixed && cp %s/frame_rgb.png %s/mixed/0000.png && touch %s/mixed/0001.dng",
                 g_tmp, g_fx, g_tmp, g_tmp);
        CHECK(system(cmd2) == 0);
        snprintf(d2, sizeof d2, "%s/mixed", g_tmp);
        ck_set_log(capture_log, NULL, CK_LOG_INFO);
        CHECK(ck_seq_list(&so, d2, &e2) == CK_OK && so.n == 1);
        ck_set_log(NULL, NULL, CK_LOG_INFO);
        ck_seq_free(&so);
        CHECK_MSG(strstr(g_logged, "1 file that is not frames") && strstr(g_logged, "0001.dng"), "ignored files named: %s",
                  g_logged);
    }

    if (!ck_image_format_supported(CK_IMAGE_EXR) || !ck_image_format_supported(CK_IMAGE_PNG)) {
        printf("SKIP: the CLI runs: this build cannot write EXR and PNG (OpenEXR or libpng not found at "
               "configure time)\n");
        return test_summary();
    }
    char common[4096];
    snprintf(common, sizeof common,
             "key --image %s/in --hint %s/hint --checkpoint %s/model.safetensors --size 128 --device cpu --quiet",
             g_tmp, g_tmp, g_fx);
    char args[8192];
    snprintf(args, sizeof args, "%s --out %s/full", common, g_tmp);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "%s --out %s/sharded --shard 0/2", common, g_tmp);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "%s --out %s/sharded --shard 1/2", common, g_tmp);
    CHECK(run(args) == 0);
    snprintf(cmd, sizeof cmd, "diff -r %s/full %s/sharded > /dev/null", g_tmp, g_tmp);
    CHECK_MSG(system(cmd) == 0, "two shards together differ from the unsharded run");
    /* interrupted after frames 0-1, then resumed */
    snprintf(args, sizeof args, "%s --out %s/resumed --frames 0-1", common, g_tmp);
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "%s --out %s/resumed --skip-existing", common, g_tmp);
    CHECK(run(args) == 0);
    snprintf(cmd, sizeof cmd, "diff -r %s/full %s/resumed > /dev/null", g_tmp, g_tmp);
    CHECK_MSG(system(cmd) == 0, "resumed run differs from the uninterrupted run");
    snprintf(cmd, sizeof cmd, "test $(ls %s/full/Matte | wc -l) -eq 5", g_tmp);
    CHECK(system(cmd) == 0);
    printf("OK     shards 0/2 + 1/2 == one run; --frames 0-1 then --skip-existing == one run\n");
    /* mismatched counts: an error, nothing written */
    snprintf(cmd, sizeof cmd, "rm %s/hint/h4.png", g_tmp);
    CHECK(system(cmd) == 0);
    snprintf(args, sizeof args, "%s --out %s/mismatch", common, g_tmp);
    CHECK(run(args) == 1);
    snprintf(cmd, sizeof cmd, "test ! -e %s/mismatch", g_tmp);
    CHECK_MSG(system(cmd) == 0, "mismatched counts left output");
    printf("OK     mismatched frame/hint counts: exit 1, no output\n");

    /* clip folders: a root with two clips (one without AlphaHint: automatic hint) and one skipped */
    snprintf(cmd, sizeof cmd,
             "cd %s && mkdir -p clips/shotA/Input clips/shotA/AlphaHint clips/shotB/Input clips/_old/Input && "
             "cp in/sh_1.png in/sh_2.png clips/shotA/Input/ && cp hint/h0.png hint/h1.png clips/shotA/AlphaHint/ && "
             "cp in/sh_9.png clips/shotB/Input/ && cp in/sh_10.png clips/_old/Input/", g_tmp);
    CHECK(system(cmd) == 0);
    snprintf(args, sizeof args, "clip %s/clips --checkpoint %s/model.safetensors --size 128 --device cpu --quiet", g_tmp,
             g_fx);
    CHECK(run(args) == 0);
    snprintf(cmd, sizeof cmd,
             "cd %s/clips && test $(ls shotA/Output/Matte | wc -l) -eq 2 && test $(ls shotA/Output/Comp | wc -l) -eq 2 "
             "&& test -f shotB/Output/Processed/sh_9.exr && test ! -e _old/Output",
             g_tmp);
    CHECK_MSG(system(cmd) == 0, "clip folder outputs");
    /* the clip's frames equal keying the same files directly */
    snprintf(cmd, sizeof cmd, "cmp %s/clips/shotA/Output/Matte/sh_2.exr %s/full/Matte/sh_2.exr", g_tmp, g_tmp);
    CHECK_MSG(system(cmd) == 0, "clip output differs from ckey key");
    printf("OK     ckey clip: folder of clips, automatic hint for the clip without AlphaHint, _old skipped\n");
    return test_summary();
}
