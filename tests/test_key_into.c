/* ck_key_image_into on the CPU (random tiny weights, S = 64): keyed into a result the caller keeps, the values
 * equal ck_key_image's (and begin + ck_result_finish with the same post-processing) bit for bit, full frame
 * (resized back and not), tiled, with keep_highlights and a converted colour space; the buffers given are
 * written in place (the same pointers afterwards, the caller's own memory too); a buffer of another size is
 * refused with CK_STATUS_ESHAPE and nothing changed; without the comp out->comp is left alone; a result
 * holding a plate and bad arguments are refused. */
#include "ckey.h"
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void synth(ck_image *rgb, ck_image *hint, int w, int h, float peak) {
    *rgb  = (ck_image){w, h, 3, malloc(sizeof(float) * 3 * w * h)};
    *hint = (ck_image){w, h, 1, malloc(sizeof(float) * w * h)};
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const int   i      = y * w + x;
            const float dx     = x - 0.5f * w, dy = y - 0.5f * h;
            const int   inside = dx * dx + dy * dy < 0.12f * w * h;
            rgb->data[3 * i]     = inside ? peak * (0.7f + 0.2f * sinf(0.3f * x)) : 0.1f;
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

/* Differing floats between two results' alpha, fg, processed and (with_comp) comp; -1 when a layout differs. */
static long diff_results(const ck_result *a, const ck_result *b, int with_comp) {
    const ck_image *ia[4] = {&a->alpha, &a->fg, &a->processed, &a->comp};
    const ck_image *ib[4] = {&b->alpha, &b->fg, &b->processed, &b->comp};
    long            d     = 0;
    for (int k = 0; k < (with_comp ? 4 : 3); k++) {
        if (!ia[k]->data || !ib[k]->data) return -1;
        if (ia[k]->width != ib[k]->width || ia[k]->height != ib[k]->height || ia[k]->channels != ib[k]->channels)
            return -1;
        const size_t n = (size_t)ia[k]->width * ia[k]->height * ia[k]->channels;
        for (size_t i = 0; i < n; i++) d += memcmp(&ia[k]->data[i], &ib[k]->data[i], sizeof(float)) != 0;
    }
    return d;
}

/* ck_key_image against ck_key_image_into, into a zeroed result and then again into the same buffers. */
static void same_as_key_image(const char *what, const ck_params *p, int w, int h, float peak) {
    ck_image rgb, hint;
    synth(&rgb, &hint, w, h, peak);
    ck_ctx *ctx = open_ctx(p);
    CHECK_MSG(ctx != NULL, "%s: context", what);
    if (!ctx) return;
    ck_result ref = {0}, kept = {0};
    CHECK(ck_key_image(ctx, &rgb, &hint, &ref) == CK_OK);
    CHECK_MSG(ck_key_image_into(ctx, &rgb, &hint, NULL, &kept) == CK_OK, "%s: %s", what, ck_ctx_last_error(ctx));
    CHECK_MSG(diff_results(&ref, &kept, 1) == 0, "%s, first call: %ld differing values", what,
              diff_results(&ref, &kept, 1));
    CHECK(kept.alpha.width == w && kept.alpha.height == h && kept.processed.channels == 4 && kept.plate.data == NULL);
    const float *bufs[4] = {kept.alpha.data, kept.fg.data, kept.processed.data, kept.comp.data};
    /* scribbled over: the next call must write every value */
    memset(kept.processed.data, 0xff, sizeof(float) * 4 * w * h);
    memset(kept.alpha.data, 0xff, sizeof(float) * w * h);
    CHECK(ck_key_image_into(ctx, &rgb, &hint, NULL, &kept) == CK_OK);
    CHECK_MSG(kept.alpha.data == bufs[0] && kept.fg.data == bufs[1] && kept.processed.data == bufs[2] &&
                  kept.comp.data == bufs[3], "%s: the buffers were replaced", what);
    CHECK_MSG(diff_results(&ref, &kept, 1) == 0, "%s, reused: %ld differing values", what, diff_results(&ref, &kept, 1));
    ck_result_free(&ref), ck_result_free(&kept);
    ck_ctx_free(ctx);
    free(rgb.data), free(hint.data);
}

int main(void) {
    ck_params p0 = ck_params_default();
    p0.size      = 64;
    p0.device    = CK_DEVICE_CPU;
    p0.threads   = 2;

    same_as_key_image("full frame 96x80", &p0, 96, 80, 1.0f);
    same_as_key_image("full frame at S", &p0, 64, 64, 1.0f);
    ck_params pt   = p0;
    pt.tile        = 64;
    pt.tile_overlap = 16;
    same_as_key_image("tiled 150x90", &pt, 150, 90, 1.0f);
    ck_params ph       = p0;
    ph.keep_highlights = 1;
    ph.input_is_linear = 1;
    same_as_key_image("keep_highlights, linear", &ph, 96, 80, 3.0f);
    ck_params pc  = p0;
    pc.colorspace = CK_CS_LOGC3;
    same_as_key_image("logc3", &pc, 96, 80, 1.0f);

    ck_image rgb, hint;
    synth(&rgb, &hint, 96, 80, 1.0f);
    const int w = 96, h = 80;
    ck_ctx   *ctx = open_ctx(&p0);
    CHECK(ctx != NULL);
    if (!ctx) return test_summary();

    /* this frame's post-processing, as begin + ck_result_finish(post) */
    ck_params post = *ck_ctx_params(ctx);
    post.despill = 0.2f, post.despeckle = 0, post.comp = 0;
    ck_result ref = {0};
    CHECK(ck_key_image_begin(ctx, &rgb, &hint, &ref) == CK_OK);
    CHECK(ck_result_finish(&post, w, h, &ref) == CK_OK);
    /* the caller's own memory, comp included: without the comp it is neither written nor freed */
    float    *mine  = malloc(sizeof(float) * (size_t)w * h * 11);
    ck_result kept  = {{w, h, 1, mine}, {w, h, 3, mine + w * h}, {w, h, 4, mine + 4 * w * h}, {w, h, 3, mine + 8 * w * h},
                       {0, 0, 0, NULL}};
    for (int i = 0; i < 3 * w * h; i++) kept.comp.data[i] = 7.0f;
    CHECK_MSG(ck_key_image_into(ctx, &rgb, &hint, &post, &kept) == CK_OK, "post: %s", ck_ctx_last_error(ctx));
    CHECK(kept.alpha.data == mine && kept.fg.data == mine + w * h && kept.processed.data == mine + 4 * w * h &&
          kept.comp.data == mine + 8 * w * h);
    CHECK_MSG(diff_results(&ref, &kept, 0) == 0, "post-processing per call: %ld differing values", diff_results(&ref, &kept, 0));
    int comp_kept = 1;
    for (int i = 0; i < 3 * w * h; i++) comp_kept &= kept.comp.data[i] == 7.0f;
    CHECK_MSG(comp_kept, "comp off: out->comp was written");
    ck_result_free(&ref);

    /* a buffer of another size: refused before any work, out unchanged */
    ck_result small = {0};
    ck_image  rgb2, hint2;
    synth(&rgb2, &hint2, 48, 40, 1.0f);
    CHECK(ck_key_image_into(ctx, &rgb2, &hint2, NULL, &small) == CK_OK);
    const ck_result before = small;
    CHECK(ck_key_image_into(ctx, &rgb, &hint, NULL, &small) == CK_STATUS_ESHAPE);
    CHECK_MSG(strstr(ck_ctx_last_error(ctx), "out->alpha is 48x40") != NULL, "message: %s", ck_ctx_last_error(ctx));
    CHECK(memcmp(&before, &small, sizeof small) == 0);
    /* one of them only: fg with 4 channels */
    ck_result wrong = kept;
    wrong.fg.channels = 4;
    CHECK(ck_key_image_into(ctx, &rgb, &hint, &post, &wrong) == CK_STATUS_ESHAPE);
    CHECK(strstr(ck_ctx_last_error(ctx), "out->fg") != NULL);
    /* the comp is checked only when it is made */
    ck_result comp_wrong = kept;
    comp_wrong.comp.width = 3;
    CHECK(ck_key_image_into(ctx, &rgb, &hint, &post, &comp_wrong) == CK_OK);
    CHECK(ck_key_image_into(ctx, &rgb, &hint, NULL, &comp_wrong) == CK_STATUS_ESHAPE);
    CHECK(strstr(ck_ctx_last_error(ctx), "out->comp") != NULL);
    /* the frame size changes: free, pass it empty */
    ck_result_free(&small);
    CHECK(ck_key_image_into(ctx, &rgb, &hint, NULL, &small) == CK_OK && small.alpha.width == w);
    ck_result full = {0};
    CHECK(ck_key_image(ctx, &rgb, &hint, &full) == CK_OK);
    CHECK(diff_results(&full, &small, 1) == 0);
    /* a missing comp is allocated when the comp is on, the other buffers kept */
    ck_result partial = kept;
    partial.comp      = (ck_image){0, 0, 0, NULL};
    CHECK(ck_key_image_into(ctx, &rgb, &hint, NULL, &partial) == CK_OK);
    CHECK(partial.alpha.data == mine && partial.comp.data != NULL && partial.comp.channels == 3);
    CHECK(diff_results(&full, &partial, 1) == 0);
    free(partial.comp.data);

    /* a result holding a plate (begin's, keep_highlights) is not a kept result; bad arguments */
    ck_result plated = {0};
    plated.plate     = (ck_image){w, h, 3, rgb.data};
    CHECK(ck_key_image_into(ctx, &rgb, &hint, NULL, &plated) == CK_STATUS_EINVAL);
    CHECK(plated.alpha.data == NULL);
    CHECK(ck_key_image_into(NULL, &rgb, &hint, NULL, &small) == CK_STATUS_EINVAL);
    CHECK(ck_key_image_into(ctx, &rgb, &hint, NULL, NULL) == CK_STATUS_EINVAL);
    const ck_image empty = {0, 0, 3, NULL};
    CHECK(ck_key_image_into(ctx, &empty, &hint, NULL, &small) == CK_STATUS_EINVAL);
    /* the context still keys after those */
    CHECK(ck_key_image_into(ctx, &rgb, &hint, NULL, &small) == CK_OK && diff_results(&full, &small, 1) == 0);

    ck_result_free(&small), ck_result_free(&full);
    free(mine);
    ck_ctx_free(ctx);
    free(rgb.data), free(hint.data), free(rgb2.data), free(hint2.data);
    return test_summary();
}
