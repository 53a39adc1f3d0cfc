/* Device errors are statuses, not crashes: a failing CUDA call inside an op (here an injected launch
 * failure, CK_CUDA_FAULT=N: the N-th kernel launch check of a context reports one) makes the public
 * call return CK_STATUS_EDEVICE with a message naming the failed call, the error and where; the context
 * answers every later call the same way; the process carries on, and a new context keys correctly.
 * Swept over N from the first launch to past the last one of a whole ck_key_passes (pre-processing, the
 * eager forward, the graph's capture, post-processing and encoding on the device), in fp16 and fp32: every
 * call either fails with EDEVICE or returns exactly the passes of a run without a fault, never a wrong
 * frame. Skips (exit 77) without a CUDA device. */
#include "ckey.h"
#include "cuda_test.h"
#include "harness.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

enum { W = 160, H = 96, S = 128 };

static void make_frame(float *rgb, float *hint) {
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const int   i  = y * W + x;
            const float dx = (x - W / 2) / (float)W, dy = (y - H / 2) / (float)H;
            const int   in = dx * dx + dy * dy < 0.06f;
            rgb[3 * i]     = in ? 0.8f - 0.3f * dx : 0.1f + 0.05f * dy;
            rgb[3 * i + 1] = in ? 0.5f + 0.2f * dy : 0.7f;
            rgb[3 * i + 2] = in ? 0.3f : 0.15f + 0.1f * dx;
            hint[i]        = in ? 1.0f : 0.0f;
        }
}

/* A context with CK_CUDA_FAULT=fault (0: none); *st is ck_ctx_init's status (the context is returned
 * either way, so that its message can be read; NULL only when it could not be allocated). */
static ck_ctx *open_ctx(const char *ck, ck_precision prec, long fault, ck_status *st) {
    char v[32];
    snprintf(v, sizeof v, "%ld", fault);
    if (fault) setenv("CK_CUDA_FAULT", v, 1);
    ck_params p = ck_params_default();
    p.size      = S;
    p.device    = CK_DEVICE_CUDA;
    p.precision = prec;
    p.threads   = 2;
    ck_ctx *ctx = NULL;
    *st         = ck_ctx_init(&ctx, ck, &p);
    unsetenv("CK_CUDA_FAULT");
    return ctx;
}

static int same_passes(const ck_passes *a, const ck_passes *b) {
    const size_t n = (size_t)W * H;
    return a->width == b->width && a->height == b->height && !memcmp(a->alpha, b->alpha, 2 * n) &&
           !memcmp(a->fg, b->fg, 6 * n) && !memcmp(a->processed, b->processed, 8 * n) &&
           (!a->comp || !memcmp(a->comp, b->comp, 3 * n));
}

/* A message that names the failed call and the error, and where it happened. */
static int names_the_failure(const char *msg) {
    return msg && strstr(msg, "kernel launch failed: injected fault (CK_CUDA_FAULT)") && strstr(msg, ".cu:") &&
           strstr(msg, "cannot be used further");
}

static void sweep(const char *ck, ck_precision prec, const ck_image *rgb, const ck_image *hint) {
    const char *tag = prec == CK_PREC_FP32 ? "fp32" : "fp16";
    ck_status   st;
    ck_ctx     *ref_ctx = open_ctx(ck, prec, 0, &st);
    CHECK_MSG(st == CK_OK, "[%s] reference context: %s", tag, ck_ctx_last_error(ref_ctx));
    if (st != CK_OK) {
        ck_ctx_free(ref_ctx);
        return;
    }
    ck_passes ref = {0};
    CHECK_MSG(ck_key_passes(ref_ctx, rgb, hint, &ref) == CK_OK, "[%s] %s", tag, ck_ctx_last_error(ref_ctx));

    int failures = 0, succeeded_at = 0;
    for (long n = 1; n < 100000; n += n < 16 ? 1 : n / 8) {
        ck_ctx   *ctx = open_ctx(ck, prec, n, &st);
        ck_passes out = {0};
        if (st == CK_OK) st = ck_key_passes(ctx, rgb, hint, &out); /* else the fault hit the weights' set-up */
        if (st == CK_OK) { /* the fault lies past this call's launches: the frame must be exact */
            CHECK_MSG(same_passes(&out, &ref), "[%s] fault %ld: a successful call returned other passes", tag, n);
            succeeded_at = (int)n;
        } else {
            failures++;
            const char *msg = ck_ctx_last_error(ctx);
            CHECK_MSG(st == CK_STATUS_EDEVICE, "[%s] fault %ld: status %s", tag, n, ck_status_str(st));
            CHECK_MSG(names_the_failure(msg), "[%s] fault %ld: message \"%s\"", tag, n, msg);
            /* the context stays failed, with the same status and the cause kept */
            ck_passes again = {0};
            CHECK(ck_key_passes(ctx, rgb, hint, &again) == CK_STATUS_EDEVICE);
            CHECK(names_the_failure(ck_ctx_last_error(ctx)));
            ck_result res;
            CHECK(ck_key_image(ctx, rgb, hint, &res) == CK_STATUS_EDEVICE);
            ck_passes_free(ctx, &again);
        }
        ck_passes_free(ctx, &out);
        ck_ctx_free(ctx);
        if (st == CK_OK) break;
    }
    printf("[%s] injected faults at launches 1..%d: %d calls failed with CK_STATUS_EDEVICE, the first fault past "
           "the call's launches gave the exact passes\n",
           tag, succeeded_at, failures);
    CHECK_MSG(failures >= 20, "[%s] only %d faulty calls: the sweep did not cover the call", tag, failures);
    CHECK_MSG(succeeded_at > 0, "[%s] no fault landed past the call", tag);

    /* the process's device is intact: a new context keys exactly as before */
    ck_ctx   *fresh = open_ctx(ck, prec, 0, &st);
    ck_passes out   = {0};
    CHECK(st == CK_OK && ck_key_passes(fresh, rgb, hint, &out) == CK_OK && same_passes(&out, &ref));
    ck_passes_free(fresh, &out);
    ck_ctx_free(fresh);
    ck_passes_free(ref_ctx, &ref);
    ck_ctx_free(ref_ctx);
}

/* `ckey key` on a failing device: one message naming the failure, a non-zero exit, no pass written. */
static void cli(void) {
    const char *bin = getenv("CK_BIN"), *tmp = getenv("CK_TMP");
    if (!bin || !tmp) {
        printf("SKIP cli: CK_BIN / CK_TMP not set\n");
        return;
    }
    char cmd[4096], log[1024], dir[1024];
    snprintf(dir, sizeof dir, "%s/cuda_fault", tmp);
    snprintf(log, sizeof log, "%s/cuda_fault.log", tmp);
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s' && '%s' plates --out '%s/p' --size 160x96 --count 1 --format png > /dev/null 2>&1 && "
             "CK_CUDA_FAULT=5 '%s' key --image '%s/p/Plate' --hint '%s/p/AlphaHint' --out '%s/o' --device cuda "
             "--size 128 > '%s' 2>&1",
             dir, bin, dir, bin, dir, dir, dir, log);
    const int rc = system(cmd);
    CHECK_MSG(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) != 0 && WEXITSTATUS(rc) < 128, "ckey key exit %d", rc);
    FILE *f      = fopen(log, "rb");
    char  text[8192] = {0};
    if (f) {
        fread(text, 1, sizeof text - 1, f);
        fclose(f);
    }
    CHECK_MSG(strstr(text, "injected fault (CK_CUDA_FAULT)") != NULL, "ckey key said: %s", text);
    int mentions = 0;
    for (const char *q = text; (q = strstr(q, "injected fault")) != NULL; q++) mentions++;
    CHECK_MSG(mentions == 1, "the failure is reported %d times:\n%s", mentions, text);
    snprintf(cmd, sizeof cmd, "test -z \"$(find '%s/o' -type f 2>/dev/null)\"", dir);
    CHECK_MSG(system(cmd) == 0, "files were written under %s/o", dir);
}

int main(void) {
    ck_backend *probe = cuda_backend_or_skip();
    if (!probe) return CK_TEST_SKIP;
    probe->destroy(probe);
    char ck[1024];
    test_path(ck, sizeof ck, "CK_FIXTURES", "tiny/s128/model.safetensors");
    float   *rgb_px = malloc(sizeof(float) * 3 * W * H), *hint_px = malloc(sizeof(float) * W * H);
    make_frame(rgb_px, hint_px);
    ck_image rgb = {W, H, 3, rgb_px}, hint = {W, H, 1, hint_px};
    sweep(ck, CK_PREC_FP16, &rgb, &hint);
    sweep(ck, CK_PREC_FP32, &rgb, &hint);
    cli();
    free(rgb_px), free(hint_px);
    return test_summary();
}
