/* ck_key_passes on CUDA (tiny fixture model, S = 128, fp32): the device path (gpu_postprocess, and
 * gpu_encode: PXR24 chunks deflated on the device) against the host path of the same engine:
 *  - alpha and fg halves bit-identical to the host's; processed within one half ulp, comp within ±1
 *    (the device's powf), the despeckled alpha bit-identical;
 *  - with and without gpu_encode the halves are identical;
 *  - every encoded chunk inflates (zlib) to the PXR24 transform of its scanlines, stored chunks are
 *    marked 0, and the EXR written from the chunks reads back as the halves.
 * Frames: upscaled 300×200 (chunk tail of 8 rows), the model size 128×128, and 333×77.
 * Skips cleanly (exit 0) without a CUDA device. */
#include "ckey.h"
#include "ops/backend.h"
#include "core/tensor.h"
#include "engine/ctx.h" /* ck_passes_mem: the blocks behind the passes */
#include "harness.h"
#include "cuda_test.h"
#include "pxr24_ref.h"
#include "io/image.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void synth(ck_image *rgb, ck_image *hint, int w, int h) {
    *rgb  = (ck_image){w, h, 3, malloc(sizeof(float) * 3 * (size_t)w * h)};
    *hint = (ck_image){w, h, 1, malloc(sizeof(float) * (size_t)w * h)};
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const size_t i  = (size_t)y * w + x;
            const float  dx = x - 0.5f * w, dy = y - 0.45f * h;
            const int    in = dx * dx + dy * dy < 0.08f * w * h;
            rgb->data[3 * i]     = in ? 0.7f + 0.2f * sinf(0.1f * x) : 0.12f;
            rgb->data[3 * i + 1] = in ? 0.45f : 0.8f + 0.05f * cosf(0.07f * y);
            rgb->data[3 * i + 2] = in ? 0.35f + 0.003f * (x % 50) : 0.2f;
            hint->data[i]        = in ? 1.0f : (x % 23 == 0 ? 0.6f : 0.0f);
        }
}

static ck_ctx *open_ctx(const char *ck, int post, int encode) {
    ck_params p       = ck_params_default();
    p.size            = 128;
    p.device          = CK_DEVICE_CUDA;
    p.precision       = CK_PREC_FP32;
    p.gpu_postprocess = post;
    p.gpu_encode      = encode;
    p.despeckle_size  = 30; /* the small frames have islands on both sides of it */
    ck_ctx *ctx       = NULL;
    if (ck_ctx_init(&ctx, ck, &p) != CK_OK) {
        printf("NOT OK init: %s\n", ck_ctx_last_error(ctx));
        ck_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

/* half ulp distance (same sign assumed; both finite) */
static int ulps(uint16_t a, uint16_t b) { return a > b ? a - b : b - a; }

/* every chunk of pass p: inflates to its PXR24 transform, or is marked stored */
static void check_chunks(const ck_passes *pv, int p, int C, const uint16_t *half) {
    const int        W = pv->width, H = pv->height, L = pv->exr_lines;
    size_t           ofs = 0;
    for (int q = 0; q < p; q++)
        for (int c = 0; c < pv->exr_chunks; c++) ofs += (size_t)pv->chunk_bytes[(size_t)q * pv->exr_chunks + c];
    uint8_t *want = malloc((size_t)L * W * C * 2), *got = malloc((size_t)L * W * C * 2);
    int      bad = 0, stored = 0;
    size_t   total = 0, raw = 0;
    for (int c = 0; c < pv->exr_chunks; c++) {
        const int     rows  = H - c * L < L ? H - c * L : L;
        const size_t  n     = pxr24_ref_chunk(half, W, C, c * L, rows, want);
        const int32_t bytes = pv->chunk_bytes[(size_t)p * pv->exr_chunks + c];
        raw += n;
        if (bytes == 0) {
            stored++;
            total += n;
            continue;
        }
        uLongf got_n = (uLongf)n;
        if (bytes < 0 || (size_t)bytes >= n || uncompress(got, &got_n, pv->chunk_data + ofs, (uLong)bytes) != Z_OK ||
            got_n != n || memcmp(got, want, n))
            bad++;
        ofs += (size_t)bytes;
        total += (size_t)bytes;
    }
    g_checks++;
    if (bad) g_failures++;
    printf("%-6s %dx%d pass %d: %d chunks inflate to the PXR24 transform (%d bad, %d stored), %zu of %zu bytes\n",
           bad ? "NOT OK" : "OK", W, H, p, pv->exr_chunks, bad, stored, total, raw);
    free(want), free(got);
}

/* chunks_only: the same chunks and comp as the full download; the halves are absent when no chunk is
 * stored (the usual case: PXR24 shrinks image data), else exactly the rows of the stored chunks come
 * back (the rest keeps a marker); the EXR files written from them equal the full passes' files. */
static void check_chunks_only(ck_ctx *enc, const ck_image *rgb, const ck_image *hint, const ck_passes *pe) {
    const int w = rgb->width, h = rgb->height, n = pe->exr_chunks;
    ck_passes pc = {0};
    pc.chunks_only = 1;
    /* sized ahead (as pipelines do on their reader threads): keying then allocates nothing */
    CHECK(ck_passes_reserve(enc, &pc, w, h) == CK_OK && pc.mem && pc.mem->block && pc.mem->chunk_block && pc.comp && !pc.alpha);
    if (!pc.mem || !pc.mem->block) return;
    void *blk = pc.mem->block, *cblk = pc.mem->chunk_block;
    memset(pc.mem->block, 0xA5, pc.mem->block_bytes);
    CHECK_MSG(ck_key_passes(enc, rgb, hint, &pc) == CK_OK, "%s", ck_ctx_last_error(enc));
    CHECK_MSG(pc.mem->block == blk && pc.mem->chunk_block == cblk, "%dx%d: ck_key_passes kept the reserved blocks", w, h);
    CHECK(pc.exr_chunks == n && !memcmp(pc.chunk_bytes, pe->chunk_bytes, sizeof(int32_t) * 3 * n));
    size_t total = 0;
    for (int i = 0; i < 3 * n; i++) total += (size_t)pe->chunk_bytes[i];
    CHECK(!memcmp(pc.chunk_data, pe->chunk_data, total) && !memcmp(pc.comp, pe->comp, (size_t)w * h * 3));
    const int       C[3]  = {1, 3, 4};
    const uint16_t *hp[3] = {pc.alpha, pc.fg, pc.processed}, *he[3] = {pe->alpha, pe->fg, pe->processed};
    int             stored = 0, rows_ok = 1, untouched = 1, files_ok = 1;
    for (int i = 0; i < 3 * n; i++) stored += pc.chunk_bytes[i] == 0;
    const int halves = pc.alpha && pc.fg && pc.processed;
    CHECK_MSG(halves == (stored > 0) && (halves || (!pc.alpha && !pc.fg && !pc.processed)),
              "%dx%d: halves present exactly when a chunk is stored (%d stored)", w, h, stored);
    CHECK(halves || pc.mem->block_bytes < pe->mem->block_bytes);
    for (int p = 0; p < 3; p++) {
        for (int c = 0; c < n && halves; c++) {
            const int    y0 = c * 16, y1 = y0 + 16 < h ? y0 + 16 : h;
            const size_t a = (size_t)y0 * w * C[p], b = (size_t)y1 * w * C[p];
            const int    st = pe->chunk_bytes[(size_t)p * n + c] == 0;
            for (size_t i = a; i < b; i++) {
                if (st) rows_ok = rows_ok && hp[p][i] == he[p][i];
                else untouched = untouched && hp[p][i] == 0xA5A5;
            }
        }
        char path[1100];
        snprintf(path, sizeof path, "%s/ckey_cuda_chunks_only_%d.exr", getenv("CK_TMP") ? getenv("CK_TMP") : "/tmp", p);
        size_t ofs = 0;
        for (int i = 0; i < p * n; i++) ofs += (size_t)pc.chunk_bytes[i];
        ck_err   err  = {{0}};
        ck_image back = {0};
        files_ok = files_ok &&
                   ck_image_write_exr_chunks(path, w, h, C[p], hp[p], 16, pc.chunk_bytes + (size_t)p * n,
                                             pc.chunk_data + ofs, &err) == CK_OK &&
                   ck_image_read(path, &back, NULL, &err) == CK_OK && back.channels == C[p];
        for (size_t i = 0; files_ok && i < (size_t)w * h * C[p]; i++) files_ok = ck_f32_to_f16(back.data[i]) == he[p][i];
        ck_image_release(&back);
        remove(path);
    }
    g_checks++;
    const int ok = rows_ok && untouched && files_ok;
    if (!ok) g_failures++;
    printf("%-6s %dx%d chunks_only: %d of %d chunks stored, halves %s (%zu of %zu block bytes), stored rows "
           "downloaded (%s), the others not (%s), EXR files equal the full passes' (%s)\n",
           ok ? "OK" : "NOT OK", w, h, stored, 3 * n, halves ? "present" : "absent", pc.mem->block_bytes, pe->mem->block_bytes,
           rows_ok ? "yes" : "NO", untouched ? "yes" : "NO", files_ok ? "yes" : "NO");
    ck_passes_free(enc, &pc);
}

int main(void) {
    ck_backend *probe = cuda_backend_or_skip();
    if (!probe) return CK_TEST_SKIP;
    const int have_encoder = probe->ext.deflate != NULL;
    ck_err    err          = {{0}};
    probe->destroy(probe);
    char ck[1024];
    test_path(ck, sizeof ck, "CK_FIXTURES", "tiny/s128/model.safetensors");
    ck_ctx *enc = open_ctx(ck, 1, 1), *dev = open_ctx(ck, 1, 0), *host = open_ctx(ck, 0, 0);
    if (!enc || !dev || !host) return 1;
    /* warmed up (a forward on a blank input): every comparison below runs after it */
    CHECK_MSG(ck_ctx_warmup(enc) == CK_OK && ck_ctx_warmup(host) == CK_OK, "%s", ck_ctx_last_error(enc));
    CHECK(ck_ctx_postprocess_on_device(enc) && !ck_ctx_postprocess_on_device(host));
    CHECK(ck_ctx_encodes_on_device(enc) == have_encoder && !ck_ctx_encodes_on_device(dev));

    const int sizes[3][2] = {{300, 200}, {128, 128}, {333, 77}};
    for (int s = 0; s < 3; s++) {
        const int w = sizes[s][0], h = sizes[s][1];
        ck_image  rgb, hint;
        synth(&rgb, &hint, w, h);
        ck_passes pe = {0}, pd = {0}, ph = {0};
        CHECK_MSG(ck_key_passes(enc, &rgb, &hint, &pe) == CK_OK, "%s", ck_ctx_last_error(enc));
        CHECK_MSG(ck_key_passes(dev, &rgb, &hint, &pd) == CK_OK, "%s", ck_ctx_last_error(dev));
        CHECK_MSG(ck_key_passes(host, &rgb, &hint, &ph) == CK_OK, "%s", ck_ctx_last_error(host));
        if (!pe.alpha || !pd.alpha || !ph.alpha) continue;
        const size_t F = (size_t)w * h;
        CHECK_MSG(!memcmp(pe.alpha, pd.alpha, F * 2) && !memcmp(pe.fg, pd.fg, F * 6) &&
                      !memcmp(pe.processed, pd.processed, F * 8) && !memcmp(pe.comp, pd.comp, F * 3),
                  "%dx%d: passes with and without gpu_encode", w, h);
        size_t da = 0, dfg = 0, dp = 0, dpa = 0, dc = 0;
        int    up = 0, uc = 0;
        for (size_t i = 0; i < F; i++) {
            da += pe.alpha[i] != ph.alpha[i];
            for (int c = 0; c < 3; c++) dfg += pe.fg[3 * i + c] != ph.fg[3 * i + c];
            for (int c = 0; c < 4; c++) {
                const int u = ulps(pe.processed[4 * i + c], ph.processed[4 * i + c]);
                dp += u != 0, up = u > up ? u : up;
            }
            dpa += pe.processed[4 * i + 3] != ph.processed[4 * i + 3];
            for (int c = 0; c < 3; c++) {
                const int d = abs((int)pe.comp[3 * i + c] - (int)ph.comp[3 * i + c]);
                dc += d != 0, uc = d > uc ? d : uc;
            }
        }
        g_checks++;
        const int ok = da == 0 && dfg == 0 && dpa == 0 && up <= 1 && uc <= 1 && dp * 1000 <= F * 4 + 1000 &&
                       dc * 1000 <= F * 3 + 1000;
        if (!ok) g_failures++;
        printf("%-6s %dx%d device vs host passes: alpha %zu, fg %zu differ; processed %zu (max %d ulp, despeckled "
               "alpha %zu), comp %zu (max %d)\n",
               ok ? "OK" : "NOT OK", w, h, da, dfg, dp, up, dpa, dc, uc);
        if (have_encoder) {
            CHECK(pe.exr_chunks == (h + 15) / 16 && pe.exr_lines == 16 && pd.exr_chunks == 0);
            const int       C[3]    = {1, 3, 4};
            const uint16_t *half[3] = {pe.alpha, pe.fg, pe.processed};
            for (int p = 0; p < 3 && pe.exr_chunks; p++) {
                check_chunks(&pe, p, C[p], half[p]);
                char path[1100];
                snprintf(path, sizeof path, "%s/ckey_cuda_passes_%d.exr", getenv("CK_TMP") ? getenv("CK_TMP") : "/tmp",
                         p);
                size_t ofs = 0;
                for (int q = 0; q < p; q++)
                    for (int c = 0; c < pe.exr_chunks; c++) ofs += (size_t)pe.chunk_bytes[(size_t)q * pe.exr_chunks + c];
                CHECK_MSG(ck_image_write_exr_chunks(path, w, h, C[p], half[p], 16,
                                                    pe.chunk_bytes + (size_t)p * pe.exr_chunks, pe.chunk_data + ofs,
                                                    &err) == CK_OK,
                          "%s", err.msg);
                ck_image back = {0};
                int      same = ck_image_read(path, &back, NULL, &err) == CK_OK && back.channels == C[p];
                for (size_t i = 0; same && i < F * C[p]; i++) same = ck_f32_to_f16(back.data[i]) == half[p][i];
                CHECK_MSG(same, "%dx%d pass %d: the EXR from device chunks reads back as the halves", w, h, p);
                ck_image_release(&back);
                remove(path);
            }
        }
        if (have_encoder && pe.exr_chunks) check_chunks_only(enc, &rgb, &hint, &pe);
        ck_passes_free(enc, &pe), ck_passes_free(dev, &pd), ck_passes_free(host, &ph);
        free(rgb.data), free(hint.data);
    }
    ck_ctx_free(enc), ck_ctx_free(dev), ck_ctx_free(host);
    return test_summary();
}
