/* The diagnostics of include/ckey_bench.h, through public headers only: the stages one at a time give what
 * the one-call paths give (bit for bit), the kept tensors come back with their shapes, tile counts, the
 * timers and the profile, checkpoint inspection and writing; ck_log reaches the log sink. */
#include "harness.h"
#include "ckey.h"
#include "ckey_bench.h"

#include <math.h>
#include <stdarg.h>

enum { S = 64 };

static char g_logged[1024];
static void capture(ck_log_level level, const char *msg, void *user) {
    (void)user;
    if (level == CK_LOG_WARN) snprintf(g_logged, sizeof g_logged, "%s", msg);
}

static ck_ctx *tiny_ctx(int keep) {
    ck_params p          = ck_params_default();
    p.size               = S;
    p.device             = CK_DEVICE_CPU;
    p.keep_intermediates = keep;
    ck_ctx *ctx          = NULL;
    if (ck_ctx_init(&ctx, "random:tiny", &p) != CK_OK) {
        fprintf(stderr, "NOT OK: random:tiny: %s\n", ck_ctx_last_error(ctx));
        exit(1);
    }
    return ctx;
}

static void structured(float *x, size_t n, int salt) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(0.5 + 0.45 * sin(0.37 * (double)i + salt));
}

static void stages(void) {
    ck_ctx      *ctx = tiny_ctx(1);
    const size_t P   = (size_t)S * S;
    float       *x = malloc(sizeof(float) * P * 4), *ref = malloc(sizeof(float) * P * 4);
    structured(x, P * 4, 1);
    CHECK(ck_run_network_batch(ctx, 1, x, NULL, NULL) == CK_OK);
    memcpy(ref, ck_bench_output(ctx), sizeof(float) * P * 4);
    /* the stages again on the same input: the same output */
    memset((void *)ck_bench_output(ctx), 0, sizeof(float) * P * 4);
    CHECK(ck_bench_upload(ctx, 1) == CK_OK);
    CHECK(ck_bench_has_device_timer(ctx) == 0); /* the CPU backend */
    ck_bench_timer_start(ctx);
    CHECK(ck_bench_compute(ctx, 1) == CK_OK);
    const double ms = ck_bench_timer_ms(ctx);
    CHECK_MSG(ms >= 0 && ms < 60000, "%g ms", ms);
    CHECK(ck_bench_download(ctx, 1) == CK_OK);
    CHECK_MSG(!memcmp(ref, ck_bench_output(ctx), sizeof(float) * P * 4), "stage by stage differs from one call");
    /* a batch the context was not planned for: refused, the context still usable */
    CHECK(ck_bench_compute(ctx, 2) == CK_STATUS_EINVAL);
    CHECK(strstr(ck_ctx_last_error(ctx), "1 to 1") != NULL);
    CHECK(ck_bench_download(ctx, 1) == CK_OK);

    /* the kept tensors, named as the fixtures */
    int n_names = 0;
    while (ck_bench_intermediate_name(n_names)) n_names++;
    CHECK(n_names == 7);
    CHECK(!strcmp(ck_bench_intermediate_name(0), "f1") && !strcmp(ck_bench_intermediate_name(6), "delta_raw"));
    float  *t = NULL;
    int     nd = 0;
    int64_t sh[8];
    CHECK(ck_bench_intermediate(ctx, "logits", &t, &nd, sh) == CK_OK);
    CHECK_MSG(nd == 4 && sh[0] == 1 && sh[1] == S / 4 && sh[2] == S / 4 && sh[3] == 4, "logits %d-d", nd);
    int finite = t != NULL;
    for (size_t i = 0; t && i < (size_t)(S / 4) * (S / 4) * 4; i++) finite &= isfinite(t[i]) != 0;
    CHECK(finite);
    free(t);
    CHECK(ck_bench_intermediate(ctx, "f1", &t, &nd, sh) == CK_OK && nd == 4 && sh[1] == S / 4);
    free(t);
    CHECK(ck_bench_intermediate(ctx, "f9", &t, &nd, sh) == CK_STATUS_EINVAL && t == NULL);

    /* the per-op profile */
    ck_bench_profile(1);
    CHECK(ck_bench_compute(ctx, 1) == CK_OK);
    FILE *f = tmpfile();
    ck_bench_profile_report(f, 1);
    ck_bench_profile(0);
    char line[256] = "";
    rewind(f);
    CHECK(fgets(line, sizeof line, f) && strstr(line, "op profile (1 frames"));
    fclose(f);

    /* a frame's pre-processing + forward = the network half of ck_key_image_begin */
    ck_image rgb = {80, 60, 3, malloc(sizeof(float) * 80 * 60 * 3)}, hint = {80, 60, 1, malloc(sizeof(float) * 80 * 60)};
    structured(rgb.data, 80 * 60 * 3, 2), structured(hint.data, 80 * 60, 3);
    CHECK(ck_bench_preprocess(ctx, &rgb, &hint) == CK_OK);
    CHECK(ck_bench_compute(ctx, 1) == CK_OK);
    CHECK(ck_bench_download(ctx, 1) == CK_OK);
    ck_result res = {0};
    CHECK(ck_key_image_begin(ctx, &rgb, &hint, &res) == CK_OK);
    int same = res.alpha.width == S && res.alpha.height == S;
    for (size_t i = 0; same && i < P; i++) same = res.alpha.data[i] == ck_bench_output(ctx)[4 * i];
    CHECK_MSG(same, "ck_bench_preprocess + compute differs from ck_key_image_begin");
    ck_result_free(&res);
    CHECK(ck_bench_key_tiled(ctx, &rgb, &hint) == CK_STATUS_EINVAL); /* not a tiled context */
    CHECK(ck_bench_tiled_on_device(ctx, 80, 60) == 0);
    free(rgb.data), free(hint.data);
    ck_ctx_free(ctx);

    /* not kept without keep_intermediates */
    ctx = tiny_ctx(0);
    CHECK(ck_run_network_batch(ctx, 1, x, NULL, NULL) == CK_OK);
    CHECK(ck_bench_intermediate(ctx, "logits_up", &t, &nd, sh) == CK_STATUS_EMISSING && t == NULL);
    ck_ctx_free(ctx);
    free(x), free(ref);
}

static void tiles(void) {
    CHECK(ck_bench_tiles_along(512, 256, 64) == 3); /* origins 0, 192, 256 */
    CHECK(ck_bench_tiles_along(2048, 1024, 128) == 3);
    CHECK(ck_bench_tiles_along(512, 1024, 128) == 1);
    CHECK(ck_bench_tiles_along(512, 0, 0) == 0);
}

static void checkpoints(void) {
    ck_set_log(NULL, NULL, CK_LOG_ERROR);
    ck_checkpoint_info ci;
    CHECK(ck_checkpoint_inspect("random:tiny", 64, &ci) == CK_OK);
    CHECK(ci.opened && ci.greenformer && ci.n_tensors > 0 && ci.bytes > 0 && ci.num_blocks > 0 && ci.stage_dim[0] > 0);
    const int tiny_tensors = ci.n_tensors;
    CHECK(ck_checkpoint_inspect("builtin", 512, &ci) == CK_OK);
    CHECK_MSG(ci.greenformer && ci.stage_dim[0] == 32 && ci.stage_dim[3] == 256, "builtin widths %d..%d", ci.stage_dim[0],
              ci.stage_dim[3]);
    CHECK(ck_builtin_is_spec("builtin:small") && ck_builtin_train_size() > 0 && ck_random_weights_is_spec("random:x"));
    CHECK(ck_checkpoint_inspect("/nonexistent/ckey.pth", 64, &ci) == CK_STATUS_EIO);
    CHECK(!ci.opened && strstr(ci.message, "/nonexistent/ckey.pth"));
    char path[4200];
    snprintf(path, sizeof path, "%s/ckpt/f32.safetensors", getenv("CK_FIXTURES") ? getenv("CK_FIXTURES") : "tests/fixtures");
    CHECK(ck_checkpoint_inspect(path, 64, &ci) != CK_OK);
    CHECK_MSG(ci.opened && !ci.greenformer && ci.message[0], "%s: opened %d greenformer %d", path, ci.opened, ci.greenformer);

    const char *tmp = getenv("CK_TMP") ? getenv("CK_TMP") : "/tmp";
    snprintf(path, sizeof path, "%s/bench_api_tiny.safetensors", tmp);
    ck_err err = {{0}};
    CHECK(ck_checkpoint_write_safetensors("random:tiny", path, &err) == CK_OK);
    CHECK(ck_checkpoint_inspect(path, 64, &ci) == CK_OK && ci.n_tensors == tiny_tensors);
    double             open_ms = -1, pass_ms = -1;
    unsigned long long sum = 0;
    CHECK(ck_bench_checkpoint_read(path, &open_ms, &pass_ms, &sum, &err) == CK_OK);
    CHECK(open_ms >= 0 && pass_ms >= 0 && sum > 0);
    remove(path);
    ck_set_log(NULL, NULL, CK_LOG_INFO);
}

static void log_sink(void) {
    ck_set_log(capture, NULL, CK_LOG_INFO);
    ck_log(CK_LOG_WARN, "from the host: %d", 42);
    ck_set_log(NULL, NULL, CK_LOG_INFO);
    CHECK_MSG(!strcmp(g_logged, "from the host: 42"), "logged \"%s\"", g_logged);
}

int main(void) {
    stages();
    tiles();
    checkpoints();
    log_sink();
    return test_summary();
}
