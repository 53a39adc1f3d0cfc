/* What test_shared_model (CPU) and test_cuda_streams (CUDA) both check: contexts made from one loaded model
 * (ck_model_load + ck_ctx_init_model), keying different frames in parallel threads, give exactly what a
 * context of its own (ck_ctx_init) gives for the same frames and parameters, and keep working after the
 * caller's reference to the model is gone. */
#ifndef CK_TEST_SHARED_MODEL_CHECK_H
#define CK_TEST_SHARED_MODEL_CHECK_H

#include "ckey.h"
#include "engine/ctx.h"
#include "harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { SM_W = 150, SM_H = 110, SM_FRAMES = 3, SM_STREAMS = 2 };

/* Frame f of stream s: a soft disc over a graded green screen, different per (s, f). */
static void sm_frame(int s, int f, float *rgb, float *hint) {
    const float cx = 0.35f + 0.1f * f + 0.05f * s, cy = 0.45f + 0.07f * s, r2 = 0.04f + 0.01f * f;
    for (int y = 0; y < SM_H; y++)
        for (int x = 0; x < SM_W; x++) {
            const int   i = y * SM_W + x;
            const float u = (float)x / SM_W - cx, v = (float)y / SM_H - cy, d = u * u + v * v;
            const float a = d < r2 ? 1.0f : d < 1.3f * r2 ? (1.3f * r2 - d) / (0.3f * r2) : 0.0f;
            const float g[3] = {0.1f + 0.1f * v, 0.65f + 0.1f * u, 0.2f};
            const float fg[3] = {0.8f - 0.2f * u, 0.4f + 0.3f * v, 0.3f + 0.1f * s};
            for (int c = 0; c < 3; c++) rgb[3 * i + c] = a * fg[c] + (1.0f - a) * g[c];
            hint[i] = d < 1.1f * r2 ? 1.0f : 0.0f;
        }
}

typedef struct sm_job {
    ck_ctx   *ctx;
    int       stream;
    ck_passes out[SM_FRAMES];
    ck_status st;
} sm_job;

static void *sm_run(void *arg) {
    sm_job *j   = arg;
    float  *rgb = malloc(sizeof(float) * 3 * SM_W * SM_H), *hint = malloc(sizeof(float) * SM_W * SM_H);
    j->st       = CK_OK;
    for (int f = 0; f < SM_FRAMES && j->st == CK_OK; f++) {
        sm_frame(j->stream, f, rgb, hint);
        const ck_image im = {SM_W, SM_H, 3, rgb}, hm = {SM_W, SM_H, 1, hint};
        j->st = ck_key_passes(j->ctx, &im, &hm, &j->out[f]);
    }
    free(rgb), free(hint);
    return NULL;
}

static int sm_same(const ck_passes *a, const ck_passes *b) {
    const size_t n = (size_t)SM_W * SM_H;
    return a->alpha && b->alpha && !memcmp(a->alpha, b->alpha, 2 * n) && !memcmp(a->fg, b->fg, 6 * n) &&
           !memcmp(a->processed, b->processed, 8 * n) && (!a->comp || !memcmp(a->comp, b->comp, 3 * n));
}

/* Stream s keys with despill 0.2 + 0.4 s (a per-context look on a shared model). */
static ck_params sm_params(const ck_params *base, int s) {
    ck_params p = *base;
    p.despill   = 0.2f + 0.4f * (float)s;
    return p;
}

/* The whole check for checkpoint ck with params base; returns the shared model's weight bytes. */
static size_t sm_check(const char *ck, const ck_params *base, const char *tag) {
    char      msg[512];
    ck_model *m  = NULL;
    ck_status st = ck_model_load(&m, ck, base, msg, sizeof msg);
    CHECK_MSG(st == CK_OK && m, "[%s] ck_model_load: %s", tag, msg);
    if (!m) return 0;
    const size_t wbytes = ck_model_weight_bytes(m);
    CHECK(wbytes > 0);

    sm_job shared[SM_STREAMS], own[SM_STREAMS];
    memset(shared, 0, sizeof shared), memset(own, 0, sizeof own);
    for (int s = 0; s < SM_STREAMS; s++) {
        const ck_params p = sm_params(base, s);
        shared[s].stream = own[s].stream = s;
        CHECK_MSG(ck_ctx_init_model(&shared[s].ctx, m, &p) == CK_OK, "[%s] %s", tag, ck_ctx_last_error(shared[s].ctx));
        CHECK_MSG(ck_ctx_init(&own[s].ctx, ck, &p) == CK_OK, "[%s] %s", tag, ck_ctx_last_error(own[s].ctx));
        CHECK(ck_ctx_weight_bytes(shared[s].ctx) == wbytes);
    }
    /* one copy of the weights: both contexts read the model's tensors */
    CHECK(shared[0].ctx && shared[1].ctx && shared[0].ctx->w.patch_w.data == shared[1].ctx->w.patch_w.data &&
          shared[0].ctx->w.final_w.data == shared[1].ctx->w.final_w.data);
    CHECK(own[0].ctx && own[1].ctx && own[0].ctx->w.patch_w.data != own[1].ctx->w.patch_w.data);
    ck_model_release(m); /* the contexts keep the model alive */

    pthread_t th[SM_STREAMS];
    for (int s = 0; s < SM_STREAMS; s++) pthread_create(&th[s], NULL, sm_run, &shared[s]);
    for (int s = 0; s < SM_STREAMS; s++) pthread_join(th[s], NULL);
    for (int s = 0; s < SM_STREAMS; s++) sm_run(&own[s]); /* one at a time, each with a model of its own */

    for (int s = 0; s < SM_STREAMS; s++) {
        CHECK_MSG(shared[s].st == CK_OK, "[%s] stream %d: %s", tag, s, ck_ctx_last_error(shared[s].ctx));
        CHECK_MSG(own[s].st == CK_OK, "[%s] own context %d: %s", tag, s, ck_ctx_last_error(own[s].ctx));
        for (int f = 0; f < SM_FRAMES && shared[s].st == CK_OK && own[s].st == CK_OK; f++)
            CHECK_MSG(sm_same(&shared[s].out[f], &own[s].out[f]),
                      "[%s] stream %d frame %d: the shared model's passes differ from a context of its own", tag, s, f);
    }
    /* the looks differ between the streams: the despill reached each context */
    if (shared[0].st == CK_OK && shared[1].st == CK_OK)
        CHECK(memcmp(shared[0].out[0].processed, shared[1].out[0].processed, 8 * SM_W * SM_H) != 0 ||
              memcmp(shared[0].out[0].alpha, shared[1].out[0].alpha, 2 * SM_W * SM_H) != 0);
    for (int s = 0; s < SM_STREAMS; s++) {
        for (int f = 0; f < SM_FRAMES; f++) ck_passes_free(shared[s].ctx, &shared[s].out[f]), ck_passes_free(own[s].ctx, &own[s].out[f]);
        ck_ctx_free(shared[s].ctx), ck_ctx_free(own[s].ctx);
    }
    printf("[%s] %d contexts on one model (%.1f MiB of weights) keyed %d frames each in parallel threads, equal to "
           "contexts of their own\n", tag, SM_STREAMS, wbytes / 1048576.0, SM_FRAMES);
    return wbytes;
}

#endif
