/* One loaded model, several contexts (ck_model_load, ck_ctx_init_model) on the CPU backend (tiny fixture):
 *  - two contexts of one model with different looks key different frames in parallel threads, each equal
 *    byte for byte to a context of its own (shared_model_check.h), and outlive the caller's reference;
 *  - what the model fixes is checked: a context asking another size, precision, head dim or device gets
 *    CK_STATUS_EINVAL naming both values; a model that cannot load says why, naming the file. */
#include "shared_model_check.h"

static void mismatches(const char *ck) {
    ck_params base = ck_params_default();
    base.size      = 128;
    base.device    = CK_DEVICE_CPU;
    base.threads   = 1;
    char      msg[512];
    ck_model *m = NULL;
    CHECK(ck_model_load(&m, ck, &base, msg, sizeof msg) == CK_OK);
    if (!m) return;
    const ck_params *mp = ck_model_params(m);
    CHECK(mp->size == 128 && mp->device == CK_DEVICE_CPU && mp->precision == CK_PREC_FP32 && mp->head_dim > 0);
    struct {
        const char *what, *says;
        ck_params   p;
    } cases[4];
    for (int i = 0; i < 4; i++) cases[i].p = base;
    cases[0].what = "size", cases[0].p.size = 256, cases[0].says = "size 256: the model was loaded for 128";
    cases[1].what = "precision", cases[1].p.precision = CK_PREC_FP16, cases[1].says = "the model was loaded in float32";
    cases[2].what = "head dim", cases[2].p.head_dim = mp->head_dim + 8, cases[2].says = "the model has";
    cases[3].what = "device", cases[3].p.device = CK_DEVICE_CUDA, cases[3].says = "device cuda: the model was loaded on cpu";
    for (int i = 0; i < 4; i++) {
        ck_ctx   *ctx = NULL;
        ck_status st  = ck_ctx_init_model(&ctx, m, &cases[i].p);
        CHECK_MSG(st == CK_STATUS_EINVAL && strstr(ck_ctx_last_error(ctx), cases[i].says), "%s: %s / \"%s\"",
                  cases[i].what, ck_status_str(st), ck_ctx_last_error(ctx));
        ck_ctx_free(ctx);
    }
    /* a tiled context runs the model at the tile size */
    ck_params tp = base;
    tp.size = 512, tp.tile = 128, tp.tile_overlap = 16;
    ck_ctx *ctx  = NULL;
    CHECK_MSG(ck_ctx_init_model(&ctx, m, &tp) == CK_OK, "%s", ck_ctx_last_error(ctx));
    ck_ctx_free(ctx);
    CHECK(ck_ctx_init_model(&ctx, NULL, &base) == CK_STATUS_EINVAL);
    ck_ctx_free(ctx);
    ck_model_release(m);

    m = (ck_model *)&base; /* overwritten on failure */
    CHECK(ck_model_load(&m, "/nonexistent/CorridorKey.pth", &base, msg, sizeof msg) != CK_OK && m == NULL);
    CHECK_MSG(strstr(msg, "/nonexistent/CorridorKey.pth") != NULL, "message: %s", msg);
    ck_params bad = base;
    bad.size      = 100;
    CHECK(ck_model_load(&m, ck, &bad, msg, sizeof msg) == CK_STATUS_EINVAL && strstr(msg, "size 100"));
    ck_model_release(NULL);
}

int main(void) {
    char ck[1024];
    test_path(ck, sizeof ck, "CK_FIXTURES", "tiny/s128/model.safetensors");
    ck_params p = ck_params_default();
    p.size      = 128;
    p.device    = CK_DEVICE_CPU;
    p.threads   = 1; /* the same reduction order in every context: byte-identical outputs */
    sm_check(ck, &p, "cpu");
    mismatches(ck);
    return test_summary();
}
