/* A shot keyed by several contexts at once (ck_shot_key_multi; `ckey key --devices`), here two streams of
 * one model on GPU 0 (the one-GPU stand-in for two GPUs: the same code runs a context per device):
 *  - every file is byte-identical to a run with one context, and both contexts keyed frames;
 *  - a context that fails mid-shot (CK_CUDA_FAULT=N set while it is made, swept over N so that it fails
 *    during its warm-up and after some of its frames): the run still succeeds, the failed context is named
 *    in the statistics with the device error, the others keyed its frames, and the files are again those of
 *    the one-context run;
 *  - every context failing fails the run with the device error;
 *  - `ckey key --devices 0,0 --json`: the same files, a `completed` event with one entry per device.
 * Skips (exit 77) without a CUDA device. */
#include "ckey.h"
#include "ckey_shot.h"
#include "cuda_test.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

enum { FRAMES = 12, S = 128 };

static char g_ck[1024], g_tmp[1024], g_bin[1024];

static ck_params params(void) {
    ck_params p = ck_params_default();
    p.size      = S;
    p.device    = CK_DEVICE_CUDA;
    p.precision = CK_PREC_FP16;
    return p;
}

/* Keys the shot into out with n contexts of one model; fault[i] (0: none) is CK_CUDA_FAULT while context i
 * is made. Returns the status; *stats filled. */
static ck_status key_shot(const char *out, int n, const long *fault, ck_shot_stats *stats) {
    char cmd[2300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
    CHECK(system(cmd) == 0);
    const ck_params p = params();
    char            msg[512];
    ck_model       *m = NULL;
    if (ck_model_load(&m, g_ck, &p, msg, sizeof msg) != CK_OK) {
        CHECK_MSG(0, "ck_model_load: %s", msg);
        return CK_STATUS_EINVAL;
    }
    ck_ctx *ctx[4] = {NULL};
    for (int i = 0; i < n; i++) {
        char v[32];
        snprintf(v, sizeof v, "%ld", fault ? fault[i] : 0L);
        if (fault && fault[i]) setenv("CK_CUDA_FAULT", v, 1);
        CHECK_MSG(ck_ctx_init_model(&ctx[i], m, &p) == CK_OK, "%s", ck_ctx_last_error(ctx[i]));
        unsetenv("CK_CUDA_FAULT");
    }
    ck_model_release(m);
    char plate[1100], hint[1100];
    snprintf(plate, sizeof plate, "%s/multi/p/Plate", g_tmp);
    snprintf(hint, sizeof hint, "%s/multi/p/AlphaHint", g_tmp);
    ck_shot_opts o = ck_shot_opts_default();
    o.image = plate, o.hint = hint, o.out = out;
    ck_shot  *shot = NULL;
    ck_status st   = ck_shot_open(&shot, &o);
    CHECK_MSG(st == CK_OK, "%s", ck_shot_last_error(shot));
    if (st == CK_OK) st = ck_shot_key_multi(shot, ctx, n, stats);
    if (st != CK_OK) snprintf(msg, sizeof msg, "%s", ck_shot_last_error(shot)), printf("shot: %s\n", msg);
    ck_shot_free(shot);
    for (int i = 0; i < n; i++) ck_ctx_free(ctx[i]);
    return st;
}

/* One run with the second context failing at its n-th launch check: complete, identical to ref. Returns
 * whether the context failed (counted as before or after its first frame). */
static int same_tree(const char *a, const char *b);
static int fault_run(long n, const char *ref, const char *out, int *early, int *midway) {
    const long    fault[2] = {0, n};
    ck_shot_stats s;
    const ck_status rc = key_shot(out, 2, fault, &s);
    CHECK_MSG(rc == CK_OK && s.frames == FRAMES, "fault at %ld: %s, %d frames", n, ck_status_str(rc), s.frames);
    CHECK_MSG(same_tree(ref, out), "fault at %ld: the files differ from one context's", n);
    CHECK(s.per_context[0].frames + s.per_context[1].frames == FRAMES);
    if (!s.per_context[1].failed) return 0;
    CHECK_MSG(strstr(s.per_context[1].error, "injected fault (CK_CUDA_FAULT)") != NULL, "error: %s", s.per_context[1].error);
    CHECK(!s.per_context[0].failed);
    if (s.per_context[1].frames > 0) ++*midway;
    else ++*early;
    return 1;
}

static int same_tree(const char *a, const char *b) {
    char cmd[2300];
    snprintf(cmd, sizeof cmd, "diff -r '%s' '%s' > /dev/null", a, b);
    return system(cmd) == 0;
}

int main(void) {
    ck_backend *probe = cuda_backend_or_skip();
    if (!probe) return CK_TEST_SKIP;
    probe->destroy(probe);
    test_path(g_ck, sizeof g_ck, "CK_FIXTURES", "tiny/s128/model.safetensors");
    const char *tmp = getenv("CK_TMP"), *bin = getenv("CK_BIN");
    if (!tmp || !bin) return printf("NOT OK: CK_TMP and CK_BIN must be set\n"), 1;
    snprintf(g_tmp, sizeof g_tmp, "%s", tmp), snprintf(g_bin, sizeof g_bin, "%s", bin);
    char cmd[4096], ref[1100], out[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/multi' && '%s' plates --out '%s/multi/p' --size 320x180 --count %d --format png "
             "--seed 21 > /dev/null 2>&1", g_tmp, g_bin, g_tmp, FRAMES);
    CHECK(system(cmd) == 0);
    snprintf(ref, sizeof ref, "%s/multi/ref", g_tmp);
    snprintf(out, sizeof out, "%s/multi/two", g_tmp);

    ck_shot_stats st1, st2;
    CHECK(key_shot(ref, 1, NULL, &st1) == CK_OK && st1.frames == FRAMES && st1.contexts == 1);
    CHECK(key_shot(out, 2, NULL, &st2) == CK_OK && st2.frames == FRAMES && st2.contexts == 2);
    CHECK_MSG(same_tree(ref, out), "two streams wrote other files than one");
    CHECK(st2.per_context[0].frames + st2.per_context[1].frames == FRAMES);
    CHECK_MSG(st2.per_context[0].frames > 0 && st2.per_context[1].frames > 0, "frames per context: %d, %d",
              st2.per_context[0].frames, st2.per_context[1].frames);
    printf("two streams of one model: %d + %d frames, files identical to one context's\n", st2.per_context[0].frames,
           st2.per_context[1].frames);

    /* the second context fails at its N-th kernel launch check: a coarse sweep finds where its launches end
     * (its warm-up takes most of them: the graph replays no launch of its own), a fine one walks the last
     * stretch, where it fails after some of its frames */
    int  failed_early = 0, failed_midway = 0;
    long last_fail = 0, first_ok = 0;
    for (long n = 20; n <= 40000 && !first_ok; n = n * 3 / 2)
        if (fault_run(n, ref, out, &failed_early, &failed_midway)) last_fail = n;
        else if (last_fail) first_ok = n;
    CHECK_MSG(last_fail && first_ok, "the coarse sweep found no end of the second context's launches");
    const long step = (first_ok - last_fail) / 16 > 0 ? (first_ok - last_fail) / 16 : 1;
    for (long n = last_fail + step; n < first_ok; n += step) fault_run(n, ref, out, &failed_early, &failed_midway);
    printf("a failing context: %d runs failed it before its first frame, %d after some of its frames; every run "
           "complete and identical\n", failed_early, failed_midway);
    CHECK_MSG(failed_early > 0 && failed_midway > 0, "the sweep did not fail a context both ways (%d, %d)",
              failed_early, failed_midway);

    /* every context fails: the run fails with the device error */
    const long    both[2] = {30, 30};
    ck_shot_stats s;
    CHECK(key_shot(out, 2, both, &s) == CK_STATUS_EDEVICE);

    /* the command line */
    char log[1100];
    snprintf(log, sizeof log, "%s/multi/cli.json", g_tmp);
    snprintf(cmd, sizeof cmd, "rm -rf '%s/multi/cli' && '%s' key --image '%s/multi/p/Plate' --hint '%s/multi/p/AlphaHint' "
             "--out '%s/multi/cli' --checkpoint '%s' --size %d --precision fp16 --devices 0,0 --json > '%s' 2> /dev/null",
             g_tmp, g_bin, g_tmp, g_tmp, g_tmp, g_ck, S, log);
    CHECK(system(cmd) == 0);
    snprintf(out, sizeof out, "%s/multi/cli", g_tmp);
    CHECK_MSG(same_tree(ref, out), "ckey key --devices 0,0 wrote other files");
    FILE *f = fopen(log, "rb");
    char  text[1 << 15] = {0};
    if (f) fread(text, 1, sizeof text - 1, f), fclose(f);
    const char *c = strstr(text, "\"event\": \"completed\"");
    CHECK_MSG(c && strstr(c, "\"devices\": [{\"device\": 0") && strstr(c, "}, {\"device\": 0"), "%s", c ? c : text);
    return test_summary();
}
