/* Tiled keying: tile origins, blend weights (normalized sum 1, border sides weight 1), one tile equal to
 * the full frame, the hint-driven skip rules, and a multi-tile run on the tiny model. */
#include "engine/ctx.h"
#include "harness.h"
#include "ckey_io.h"
#include "frame/tiling.h"

#include <stdlib.h>
#include <string.h>

static void origins_case(int n, int size, int ov, const int *want, int nwant) {
    int o[64], k = ck_tile_origins(n, size, ov, o, 64);
    int ok = k == nwant;
    for (int i = 0; ok && i < k; i++) ok = o[i] == want[i];
    CHECK_MSG(ok, "origins n=%d size=%d overlap=%d: got %d tiles", n, size, ov, k);
}

static ck_ctx *make_ctx(int size, int tile, int overlap) {
    char ck[1024];
    test_path(ck, sizeof ck, "CK_FIXTURES", "tiny/s128/model.safetensors");
    ck_params p    = ck_params_default();
    p.size         = size;
    p.device       = CK_DEVICE_CPU;
    p.tile         = tile;
    p.tile_overlap = overlap;
    p.despeckle    = 0;
    ck_ctx *ctx    = NULL;
    if (ck_ctx_init(&ctx, ck, &p) != CK_OK) {
        CHECK_MSG(0, "init: %s", ck_ctx_last_error(ctx));
        ck_ctx_free(ctx);
        return NULL;
    }
    return ctx;
}

int main(void) {
    /* 1. origins: step = size - overlap, last tile shifted back to the edge */
    origins_case(100, 40, 10, (int[]){0, 30, 60}, 3);
    origins_case(100, 48, 16, (int[]){0, 32, 52}, 3);
    origins_case(100, 100, 16, (int[]){0}, 1);
    origins_case(80, 128, 16, (int[]){0}, 1);
    origins_case(2160, 768, 64, (int[]){0, 704, 1392}, 3);

    /* 2. weights: per pixel the raw weights of all tiles sum to > 0, border sides weigh 1, and regular
     *    overlaps sum to exactly 1 */
    {
        const int n = 300, size = 128, ov = 32;
        int       o[16], k = ck_tile_origins(n, size, ov, o, 16);
        double    minsum = 1e9, maxsum = 0;
        for (int i = 0; i < n; i++) {
            double sum = 0;
            for (int t = 0; t < k; t++)
                if (i >= o[t] && i < o[t] + size) sum += ck_tile_weight_1d(i - o[t], o[t], size, n, ov);
            minsum = sum < minsum ? sum : minsum;
            maxsum = sum > maxsum ? sum : maxsum;
        }
        CHECK(minsum > 0.0);
        CHECK(ck_tile_weight_1d(0, 0, size, n, ov) == 1.0f);           /* image border side */
        CHECK(ck_tile_weight_1d(size - 1, n - size, size, n, ov) == 1.0f);
        CHECK(ck_tile_weight_1d(0, 96, size, n, ov) < 0.05f);          /* interior side ramps to ~0 */
        /* the overlap of tiles 0 and 1 is exactly `ov` pixels: their weights sum to 1 there */
        int exact = 1;
        for (int i = o[1]; i < o[0] + size; i++) {
            double s = ck_tile_weight_1d(i - o[0], o[0], size, n, ov) + ck_tile_weight_1d(i - o[1], o[1], size, n, ov);
            exact &= fabs(s - 1.0) < 1e-6;
        }
        CHECK(exact);
        printf("OK     weights: summed raw weight in [%.3f, %.3f], regular overlaps sum to 1\n", minsum, maxsum);
    }

    /* 3. one tile covering a plate of exactly the tile size == full frame at that size */
    ck_npy rgbn, hintn;
    ck_err err = {{0}};
    char   pr[1024], ph[1024];
    test_path(pr, sizeof pr, "CK_FIXTURES", "tiny/s128/frame_rgb.npy");
    test_path(ph, sizeof ph, "CK_FIXTURES", "tiny/s128/frame_hint.npy");
    CHECK(ck_npy_read(pr, &rgbn, &err) == CK_OK && ck_npy_read(ph, &hintn, &err) == CK_OK);
    const int fw = 72, fh = 136;
    {
        /* the top 64x64 corner of the fixture frame as a 64x64 plate */
        float *r = malloc(sizeof(float) * 64 * 64 * 3), *h = malloc(sizeof(float) * 64 * 64);
        for (int y = 0; y < 64; y++) {
            memcpy(r + y * 64 * 3, rgbn.data + (size_t)y * fw * 3, sizeof(float) * 64 * 3);
            memcpy(h + y * 64, hintn.data + (size_t)y * fw, sizeof(float) * 64);
        }
        ck_image  ri = {64, 64, 3, r}, hi = {64, 64, 1, h};
        ck_ctx   *full = make_ctx(64, 0, 0), *tiled = make_ctx(64, 64, 16);
        ck_result a = {0}, b = {0};
        if (full && tiled) {
            CHECK(ck_key_image(full, &ri, &hi, &a) == CK_OK);
            CHECK(ck_key_image(tiled, &ri, &hi, &b) == CK_OK);
            if (a.alpha.data && b.alpha.data) {
                check_close("one tile == full frame: alpha", b.alpha.data, a.alpha.data, 64 * 64, 1e-6, 0);
                check_close("one tile == full frame: fg", b.fg.data, a.fg.data, 64 * 64 * 3, 1e-6, 0);
            }
        }
        ck_result_free(&a), ck_result_free(&b);

        /* 4. skip rules: hint all 0 -> alpha 0, fg 0; hint all 1 -> alpha 1, fg = the input colour */
        if (tiled) {
            for (int i = 0; i < 64 * 64; i++) h[i] = 0.0f;
            CHECK(ck_key_image(tiled, &ri, &hi, &a) == CK_OK);
            double m = 0;
            for (int i = 0; a.alpha.data && i < 64 * 64; i++) m = fmax(m, fabs(a.alpha.data[i]) + fabs(a.fg.data[3 * i]));
            CHECK_MSG(a.alpha.data && m == 0.0, "background skip");
            ck_result_free(&a);
            for (int i = 0; i < 64 * 64; i++) h[i] = 1.0f;
            CHECK(ck_key_image(tiled, &ri, &hi, &a) == CK_OK);
            m = 0;
            for (int i = 0; a.alpha.data && i < 64 * 64; i++) {
                m = fmax(m, fabs(a.alpha.data[i] - 1.0));
                for (int c = 0; c < 3; c++) m = fmax(m, fabs(a.fg.data[3 * i + c] - r[3 * i + c]));
            }
            CHECK_MSG(a.alpha.data && m == 0.0, "foreground skip");
            ck_result_free(&a);
            printf("OK     skip rules: all-background and all-foreground hints\n");
        }
        ck_ctx_free(full), ck_ctx_free(tiled);
        free(r), free(h);
    }

    /* 5. several tiles over the 72x136 fixture frame at S = 64 (2 x 3 tiles, overlap 16) */
    {
        ck_ctx   *tiled = make_ctx(64, 64, 16);
        ck_image  ri = {fw, fh, 3, rgbn.data}, hi = {fw, fh, 1, hintn.data};
        ck_result a = {0};
        if (tiled && ck_key_image(tiled, &ri, &hi, &a) == CK_OK) {
            double lo = 1, hi_ = 0;
            int    finite = 1;
            for (int i = 0; i < fw * fh; i++) {
                finite &= isfinite(a.alpha.data[i]);
                lo = fmin(lo, a.alpha.data[i]), hi_ = fmax(hi_, a.alpha.data[i]);
            }
            CHECK(finite && lo >= -0.01 && hi_ <= 1.01 && hi_ - lo > 0.5);
            printf("OK     6 tiles over 72x136: alpha in [%.3f, %.3f]\n", lo, hi_);
        } else {
            CHECK_MSG(0, "tiled key failed");
        }
        ck_result_free(&a);
        ck_ctx_free(tiled);
    }
    ck_npy_free(&rgbn), ck_npy_free(&hintn);
    return test_summary();
}
