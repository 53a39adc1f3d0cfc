/* Per-call state of a context on the CPU (random tiny weights, S = 64). ck_ctx_set_frame_params: a context
 * whose look is changed between frames keys exactly as a context loaded with that look (ck_key_image and
 * ck_key_passes, bit for bit), going back restores the first frames' outputs bit for bit, the refiner scale
 * really reaches the network, and out-of-range values are refused with nothing changed. Each call's error
 * message is its own (not an earlier call's), and a context keys on another thread with its own thread
 * count (the same bits as on the thread that made it). */
#include "ckey.h"
#include "harness.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define W 96
#define H 80

static void synth(ck_image *rgb, ck_image *hint) {
    *rgb  = (ck_image){W, H, 3, malloc(sizeof(float) * 3 * W * H)};
    *hint = (ck_image){W, H, 1, malloc(sizeof(float) * W * H)};
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const int   i      = y * W + x;
            const float dx     = x - 0.5f * W, dy = y - 0.5f * H;
            const int   inside = dx * dx + dy * dy < 0.12f * W * H;
            rgb->data[3 * i]     = inside ? 0.7f + 0.2f * sinf(0.3f * x) : 0.1f;
            rgb->data[3 * i + 1] = inside ? 0.45f : 0.8f;
            rgb->data[3 * i + 2] = inside ? 0.3f + 0.003f * y : 0.12f;
            hint->data[i]        = inside ? 1.0f : 0.0f;
        }
}

static ck_ctx *open_ctx(const ck_params *p) {
    ck_ctx *ctx = NULL;
    if (ck_ctx_init(&ctx, "random:tiny", p) != CK_OK) {
        fprintf(stderr, "init: %s\n", ck_ctx_last_error(ctx));
        ck_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

/* Number of differing floats between two results (every pass); -1 when their layouts differ. */
static long diff_results(const ck_result *a, const ck_result *b) {
    const ck_image *ia[4] = {&a->alpha, &a->fg, &a->processed, &a->comp};
    const ck_image *ib[4] = {&b->alpha, &b->fg, &b->processed, &b->comp};
    long            d     = 0;
    for (int k = 0; k < 4; k++) {
        if ((ia[k]->data == NULL) != (ib[k]->data == NULL)) return -1;
        if (!ia[k]->data) continue;
        if (ia[k]->width != ib[k]->width || ia[k]->height != ib[k]->height || ia[k]->channels != ib[k]->channels)
            return -1;
        const size_t n = (size_t)ia[k]->width * ia[k]->height * ia[k]->channels;
        for (size_t i = 0; i < n; i++) d += memcmp(&ia[k]->data[i], &ib[k]->data[i], sizeof(float)) != 0;
    }
    return d;
}

static long diff_passes(const ck_passes *a, const ck_passes *b) {
    if (a->width != b->width || a->height != b->height || (a->comp == NULL) != (b->comp == NULL)) return -1;
    const size_t n = (size_t)a->width * a->height;
    long         d = 0;
    d += memcmp(a->alpha, b->alpha, n * 2) != 0;
    d += memcmp(a->fg, b->fg, n * 6) != 0;
    d += memcmp(a->processed, b->processed, n * 8) != 0;
    if (a->comp) d += memcmp(a->comp, b->comp, n * 3) != 0;
    return d;
}

typedef struct key_job {
    ck_ctx         *ctx;
    const ck_image *rgb, *hint;
    ck_result       res;
    ck_status       st;
} key_job;

static void *key_on_thread(void *arg) {
    key_job *j = arg;
    j->st      = ck_key_image(j->ctx, j->rgb, j->hint, &j->res);
    return NULL;
}

int main(void) {
    ck_image rgb, hint;
    synth(&rgb, &hint);
    ck_params p0 = ck_params_default();
    p0.size      = 64;
    p0.device    = CK_DEVICE_CPU;
    p0.threads   = 2;
    ck_params p1 = p0;
    p1.refiner_scale = 0.3f, p1.despill = 0.1f, p1.despeckle = 0, p1.despeckle_size = 50, p1.comp = 0;
    const ck_frame_params look1 = {p1.refiner_scale, p1.despill, p1.despeckle, p1.despeckle_size, p1.comp};

    ck_ctx *a = open_ctx(&p0), *b = open_ctx(&p1);
    CHECK(a && b);
    if (!a || !b) return test_summary();

    const ck_frame_params f0 = ck_ctx_frame_params(a);
    CHECK(f0.refiner_scale == 1.0f && f0.despill == 0.5f && f0.despeckle == 1 && f0.comp == 1);

    ck_result r0 = {0}, r1 = {0}, rb = {0}, r2 = {0};
    CHECK(ck_key_image(a, &rgb, &hint, &r0) == CK_OK);
    CHECK(ck_ctx_set_frame_params(a, &look1) == CK_OK);
    const ck_frame_params got = ck_ctx_frame_params(a);
    CHECK(got.refiner_scale == 0.3f && got.despill == 0.1f && got.despeckle == 0 && got.despeckle_size == 50 &&
          got.comp == 0);
    CHECK(ck_key_image(a, &rgb, &hint, &r1) == CK_OK);
    CHECK(ck_key_image(b, &rgb, &hint, &rb) == CK_OK);
    CHECK_MSG(diff_results(&r1, &rb) == 0, "changed look vs loaded look: %ld differing values", diff_results(&r1, &rb));
    CHECK(r1.comp.data == NULL); /* comp off */
    /* the scale reaches the network: the raw alpha differs from the first look's */
    long changed = 0;
    for (int i = 0; i < r0.alpha.width * r0.alpha.height; i++) changed += r0.alpha.data[i] != r1.alpha.data[i];
    CHECK_MSG(changed > 0, "refiner scale 0.3 left the alpha unchanged");
    CHECK(ck_ctx_set_frame_params(a, &f0) == CK_OK);
    CHECK(ck_key_image(a, &rgb, &hint, &r2) == CK_OK);
    CHECK_MSG(diff_results(&r0, &r2) == 0, "back to the first look: %ld differing values", diff_results(&r0, &r2));

    /* ck_key_passes likewise */
    ck_passes pa = {0}, pb = {0};
    CHECK(ck_ctx_set_frame_params(a, &look1) == CK_OK);
    CHECK(ck_key_passes(a, &rgb, &hint, &pa) == CK_OK);
    CHECK(ck_key_passes(b, &rgb, &hint, &pb) == CK_OK);
    CHECK_MSG(diff_passes(&pa, &pb) == 0, "passes: changed look vs loaded look differ");

    /* refused values change nothing */
    const ck_frame_params bad[3] = {{1.0f, 1.5f, 1, 400, 1}, {NAN, 0.5f, 1, 400, 1}, {1.0f, 0.5f, 1, 0, 1}};
    for (int k = 0; k < 3; k++) {
        CHECK(ck_ctx_set_frame_params(a, &bad[k]) == CK_STATUS_EINVAL);
        const ck_frame_params now = ck_ctx_frame_params(a);
        CHECK(now.refiner_scale == 0.3f && now.despill == 0.1f && now.despeckle_size == 50);
    }
    CHECK(ck_ctx_set_frame_params(NULL, &look1) == CK_STATUS_EINVAL);
    CHECK(ck_ctx_set_frame_params(a, NULL) == CK_STATUS_EINVAL);

    /* each call's message is its own */
    const ck_image empty = {0, 0, 3, NULL};
    ck_result      rx    = {0};
    CHECK(ck_key_image(a, &empty, &hint, &rx) == CK_STATUS_EINVAL);
    CHECK(strstr(ck_ctx_last_error(a), "input image") != NULL);
    CHECK(ck_key_image(a, &rgb, &empty, &rx) == CK_STATUS_EINVAL);
    CHECK_MSG(strstr(ck_ctx_last_error(a), "hint") != NULL, "second failure's message: '%s'", ck_ctx_last_error(a));
    CHECK(ck_key_image(a, &rgb, &hint, &rx) == CK_OK);
    ck_result_free(&rx);

    /* one thread: the same bits from the creating thread and from another one */
    ck_params p2 = p0;
    p2.threads   = 1;
    ck_ctx *c    = open_ctx(&p2);
    CHECK(c != NULL);
    if (c) {
        ck_result rm = {0};
        CHECK(ck_key_image(c, &rgb, &hint, &rm) == CK_OK);
        key_job   job = {c, &rgb, &hint, {{0}}, CK_STATUS_EINVAL};
        pthread_t th;
        CHECK(pthread_create(&th, NULL, key_on_thread, &job) == 0);
        pthread_join(th, NULL);
        CHECK(job.st == CK_OK);
        CHECK_MSG(job.st == CK_OK && diff_results(&rm, &job.res) == 0, "another thread: %ld differing values",
                  job.st == CK_OK ? diff_results(&rm, &job.res) : -1);
        ck_result_free(&rm), ck_result_free(&job.res);
        ck_ctx_free(c);
    }

    ck_passes_free(a, &pa), ck_passes_free(b, &pb);
    ck_result_free(&r0), ck_result_free(&r1), ck_result_free(&rb), ck_result_free(&r2);
    ck_ctx_free(a), ck_ctx_free(b);
    free(rgb.data), free(hint.data);
    return test_summary();
}
