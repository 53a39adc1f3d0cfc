/* Still-image I/O: exact round trips (PNG 8/16-bit, half EXR with every compression), fixtures written by
 * independent encoders (tests/fixtures/images/make_fixtures.py), hostile and truncated inputs, and the
 * atomic-replace contract of every writer.
 *
 * Env: CK_TMP (scratch folder, must exist), CK_FIXTURES (tests/fixtures). Run under ASan/UBSan too
 * (cmake -DCK_SANITIZE=ON): the corrupt-input cases exist to catch reads past the end and leaks.
 * A format whose library was not found at configure time is checked for the "not built" error instead.
 */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"
#include "pxr24_ref.h"

#include "core/tensor.h"

#include <zlib.h>
#include "io/image.h"
#include "ckey_io.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- helpers */

static char g_tmpdir[512];

static const char *tmp_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", g_tmpdir, name);
    return buf;
}

static const char *fixture(char *buf, size_t n, const char *name) {
    char sub[256];
    snprintf(sub, sizeof sub, "images/%s", name);
    return test_path(buf, n, "CK_FIXTURES", sub);
}

static unsigned char *slurp(const char *path, size_t *len) {
    *len    = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) *len = (size_t)n;
    return b;
}

static int spit(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    size_t w  = len ? fwrite(data, 1, len, f) : 0;
    int    ok = fclose(f) == 0 && w == len;
    return ok;
}

/* Counts entries of g_tmpdir whose name starts with prefix (temp-file leak check). */
static int count_prefixed(const char *prefix) {
    DIR *d = opendir(g_tmpdir);
    if (!d) return -1;
    int            n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
    closedir(d);
    return n;
}

static uint32_t g_rng = 12345u;
static uint32_t rng(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}

static int same_bits(float a, float b) {
    if (isnan(a) && isnan(b)) return 1;
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y;
}

/* Reference float -> half -> float, independent of the code under test where the compiler offers it. */
static float f16_round(float v) {
#if defined(__FLT16_MAX__)
    return (float)(_Float16)v;
#else
    return ck_f16_to_f32(ck_f32_to_f16(v));
#endif
}

static ck_image make_image(int w, int h, int c) {
    ck_image img = {w, h, c, calloc((size_t)w * h * c, sizeof(float))};
    CK_ASSERT(img.data);
    return img;
}

/* The CorridorKey rule, written from the spec: (uint8)(clip(v, 0, 1) * 255) in float32, NaN -> 0. */
static float png8_expect(float v) {
    if (isnan(v) || v <= 0.0f) return 0.0f;
    if (v >= 1.0f) return 1.0f;
    float t = v * 255.0f;
    return (float)(int)t / 255.0f;
}

static float png16_expect(float v) {
    if (isnan(v) || v <= 0.0f) return 0.0f;
    if (v >= 1.0f) return 1.0f;
    return (float)(long)nearbyintf(v * 65535.0f) / 65535.0f;
}

static int images_equal_bits(const ck_image *a, const float *ref, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!same_bits(a->data[i], ref[i])) {
            printf("       first mismatch at %zu: got %.9g want %.9g\n", i, (double)a->data[i], (double)ref[i]);
            return 0;
        }
    return 1;
}

/* Minimal EXR header walk (attribute name, type, size, value) so the test checks channel names and the
 * compression actually stored, independently of the reader under test. */
static int exr_header_info(const char *path, char names[8][32], int *nnames, int *compression) {
    size_t         len;
    unsigned char *b = slurp(path, &len);
    int            ok = 0;
    *nnames = 0, *compression = -1;
    if (!b || len < 8) goto done;
    size_t p = 8;
    while (p < len && b[p] != 0) {
        const char *aname = (const char *)b + p;
        p += strnlen(aname, len - p) + 1;
        const char *atype = (const char *)b + p;
        p += strnlen(atype, len - p) + 1;
        if (p + 4 > len) goto done;
        uint32_t asize = b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | ((uint32_t)b[p + 3] << 24);
        p += 4;
        if (asize > len - p) goto done;
        if (!strcmp(aname, "channels")) {
            size_t q = p;
            while (q < p + asize && b[q] != 0 && *nnames < 8) {
                snprintf(names[(*nnames)++], 32, "%s", (const char *)b + q);
                q += strnlen((const char *)b + q, p + asize - q) + 1 + 16;
            }
        }
        if (!strcmp(aname, "compression") && asize == 1) *compression = b[p];
        p += asize;
    }
    ok = 1;
done:
    free(b);
    return ok;
}

/* ---------------------------------------------------------------- PNG */

static void test_png8_roundtrip(void) {
    /* spot values with their hand-computed 8-bit codes */
    static const float v[]    = {-0.5f, 0.0f, 0.5f, 254.9f / 255.0f, 1.0f, 1.7f, 1.0f / 255.0f, 0.99999f,
                                 0.25f, 0.75f, NAN, INFINITY, -INFINITY, 128.0f / 255.0f, 0.003f, 2e-9f};
    static const int   code[] = {0, 0, 127, 254, 255, 255, 1, 254, 63, 191, 0, 255, 0, 128, 0, 0};
    const int          n      = (int)(sizeof v / sizeof v[0]);
    for (int C = 1; C <= 4; C++) {
        ck_image img = make_image(13, 7, C);
        size_t   N   = (size_t)13 * 7 * C;
        for (size_t i = 0; i < N; i++) img.data[i] = (i < (size_t)n) ? v[i] : (float)(i % 300) / 255.0f - 0.1f;
        char path[1100], name[64];
        snprintf(name, sizeof name, "imgio_png8_c%d.png", C);
        tmp_path(path, sizeof path, name);
        ck_err    err = {{0}};
        ck_status st  = ck_image_write_png8(path, &img, &err);
        CHECK_MSG(st == CK_OK, "%s", err.msg);
        ck_image back  = {0};
        int      depth = 0;
        st             = ck_image_read(path, &back, &depth, &err);
        CHECK_MSG(st == CK_OK, "%s", err.msg);
        CHECK(back.width == 13 && back.height == 7 && back.channels == C && depth == 8);
        if (st == CK_OK && back.channels == C) {
            float *ref = malloc(N * sizeof(float));
            for (size_t i = 0; i < N; i++) ref[i] = png8_expect(img.data[i]);
            char what[64];
            snprintf(what, sizeof what, "png8 round trip C=%d", C);
            check_close(what, back.data, ref, N, 0.0, 0.0);
            for (int i = 0; i < n && i < (int)N; i++)
                CHECK_MSG(back.data[i] == (float)code[i] / 255.0f, "value %d (%g): got code %g, want %d", i,
                          (double)v[i], (double)(back.data[i] * 255.0f), code[i]);
            free(ref);
        }
        ck_image_release(&back);
        ck_image_release(&img);
    }
    /* every 8-bit code survives read -> write unchanged (k/255 * 255 never truncates to k-1 in float32) */
    ck_image img = make_image(256, 1, 1);
    for (int k = 0; k < 256; k++) img.data[k] = (float)k / 255.0f;
    char path[1100];
    tmp_path(path, sizeof path, "imgio_png8_codes.png");
    ck_err err = {{0}};
    CHECK(ck_image_write_png8(path, &img, &err) == CK_OK);
    ck_image back = {0};
    CHECK(ck_image_read(path, &back, NULL, &err) == CK_OK);
    if (back.data) check_close("png8 all 256 codes", back.data, img.data, 256, 0.0, 0.0);
    ck_image_release(&back);
    ck_image_release(&img);
}

static void test_png16_roundtrip(void) {
    for (int C = 1; C <= 4; C++) {
        const int W = 17, H = 9;
        ck_image  img = make_image(W, H, C);
        size_t    N   = (size_t)W * H * C;
        for (size_t i = 0; i < N; i++) {
            if (i % 3 == 0) img.data[i] = (float)((i * 7919) % 65536) / 65535.0f; /* exact codes */
            else img.data[i] = (float)(rng() % 1200000) / 1000000.0f - 0.1f;      /* arbitrary, some out of range */
        }
        img.data[0] = 1.0f, img.data[1] = 0.0f, img.data[2] = 0.5f; /* 0.5 -> 32767.5 -> 32768 (half to even) */
        char path[1100], name[64];
        snprintf(name, sizeof name, "imgio_png16_c%d.png", C);
        tmp_path(path, sizeof path, name);
        ck_err err = {{0}};
        CHECK_MSG(ck_image_write_png16(path, &img, &err) == CK_OK, "%s", err.msg);
        ck_image back  = {0};
        int      depth = 0;
        CHECK_MSG(ck_image_read(path, &back, &depth, &err) == CK_OK, "%s", err.msg);
        CHECK(back.channels == C && depth == 16);
        if (back.data && back.channels == C) {
            float *ref = malloc(N * sizeof(float));
            for (size_t i = 0; i < N; i++) ref[i] = png16_expect(img.data[i]);
            char what[64];
            snprintf(what, sizeof what, "png16 round trip C=%d", C);
            check_close(what, back.data, ref, N, 0.0, 0.0);
            CHECK(back.data[2] == 32768.0f / 65535.0f);
            free(ref);
        }
        ck_image_release(&back);
        ck_image_release(&img);
    }
}

/* Fixture with a .npy of raw integer samples; `scale` 255 or 65535. */
static void check_fixture(const char *image, const char *npy, int want_c, int want_depth, float scale) {
    char path[1100], npath[1100];
    fixture(path, sizeof path, image);
    fixture(npath, sizeof npath, npy);
    ck_npy    ref = {0};
    ck_err    err = {{0}};
    ck_status st  = ck_npy_read(npath, &ref, &err);
    CHECK_MSG(st == CK_OK, "%s", err.msg);
    ck_image img   = {0};
    int      depth = 0;
    st             = ck_image_read(path, &img, &depth, &err);
    CHECK_MSG(st == CK_OK, "%s: %s", image, err.msg);
    if (st == CK_OK && ref.data) {
        CHECK_MSG(ref.ndim == 3 && img.height == ref.shape[0] && img.width == ref.shape[1] &&
                      img.channels == ref.shape[2] && img.channels == want_c && depth == want_depth,
                  "%s: got %dx%dx%d depth %d", image, img.width, img.height, img.channels, depth);
        if (img.channels == want_c && (size_t)img.width * img.height * img.channels == ref.numel) {
            if (scale > 0)
                for (size_t i = 0; i < ref.numel; i++) ref.data[i] /= scale;
            check_close(image, img.data, ref.data, ref.numel, 0.0, 0.0);
        }
    }
    ck_image_release(&img);
    ck_npy_free(&ref);
}

static void test_png_fixtures(void) {
    check_fixture("rgb16.png", "rgb16.npy", 3, 16, 65535.0f);
    check_fixture("ga16.png", "ga16.npy", 2, 16, 65535.0f);
    check_fixture("pal4_trns.png", "pal4_trns.npy", 4, 8, 255.0f);
    check_fixture("gray2.png", "gray2.npy", 1, 8, 255.0f);
    check_fixture("rgb8_adam7.png", "rgb8_adam7.npy", 3, 8, 255.0f);
}

/* ---------------------------------------------------------------- JPEG */

static void test_jpeg_fixtures(void) {
    /* references are cv2.imread's decode: same libjpeg-turbo algorithms, so exact equality is expected */
    check_fixture("rgb420.jpg", "rgb420.npy", 3, 8, 255.0f);
    check_fixture("rgb_prog.jpg", "rgb_prog.npy", 3, 8, 255.0f);
    check_fixture("gray.jpg", "gray.npy", 1, 8, 255.0f);

    char path[1100];
    fixture(path, sizeof path, "cmyk.jpg");
    ck_image  img = {0};
    ck_err    err = {{0}};
    ck_status st  = ck_image_read(path, &img, NULL, &err);
    CHECK_MSG(st == CK_STATUS_EFORMAT && strstr(err.msg, "CMYK") && strstr(err.msg, path), "st=%d msg=%s", st,
              err.msg);
    CHECK(img.data == NULL && img.width == 0);
}

/* ---------------------------------------------------------------- EXR */

static void fill_hdr_pattern(ck_image *img) {
    static const float special[] = {0.0f, -0.0f, -1.0f, 37.5f, 1e-7f, 6e-8f, 3e-5f, 65504.0f, 1e5f, -2.5e-6f,
                                    0.1f, 1.0f / 3.0f, 0.5f, 1.0f, 1000.125f, -37.5f, 5.96e-8f, 2.9e-8f, 1e-9f};
    const size_t       ns        = sizeof special / sizeof special[0];
    size_t             N         = (size_t)img->width * img->height * img->channels;
    for (size_t i = 0; i < N; i++) {
        if (i < ns * 4) img->data[i] = special[(i / 4 + i % 4) % ns] * (i % 4 == 3 ? 1.0f : 1.0f + (float)(i % 4));
        else img->data[i] = ((float)(rng() % 2000001) / 1000000.0f - 1.0f) * (i % 7 == 0 ? 100.0f : 1.0f);
    }
    /* channel identity check: channel k of pixel 0 holds k+1 (catches swapped R/B or A/Y) */
    for (int k = 0; k < img->channels; k++) img->data[(size_t)5 * img->channels + k] = (float)(k + 1);
}

static void test_exr_roundtrip(void) {
    static const ck_exr_compression comps[3]     = {CK_EXR_PXR24, CK_EXR_ZIP, CK_EXR_NONE};
    static const int                comp_code[3] = {5, 3, 0}; /* as stored in the file header */
    static const char              *cname[3]     = {"pxr24", "zip", "none"};
    static const char *const        want[5][4]   = {{0}, {"Y"}, {"A", "Y"}, {"B", "G", "R"}, {"A", "B", "G", "R"}};
    static const int                sizes[2][2]  = {{37, 23}, {301, 70}}; /* chunk tails; many chunks */
    for (int s = 0; s < 2; s++)
        for (int ci = 0; ci < 3; ci++)
            for (int C = 1; C <= 4; C++) {
                const int W = sizes[s][0], H = sizes[s][1];
                ck_image  img = make_image(W, H, C);
                fill_hdr_pattern(&img);
                char path[1100], name[64];
                snprintf(name, sizeof name, "imgio_exr_%s_c%d_%d.exr", cname[ci], C, W);
                tmp_path(path, sizeof path, name);
                ck_err err = {{0}};
                CHECK_MSG(ck_image_write_exr(path, &img, comps[ci], &err) == CK_OK, "%s", err.msg);

                char names[8][32];
                int  nn, comp;
                CHECK(exr_header_info(path, names, &nn, &comp));
                CHECK_MSG(comp == comp_code[ci], "%s: compression %d", name, comp);
                CHECK_MSG(nn == C, "%s: %d channels in header", name, nn);
                for (int k = 0; k < nn && k < C; k++)
                    CHECK_MSG(!strcmp(names[k], want[C][k]), "%s: channel %d is %s, want %s", name, k, names[k],
                              want[C][k]);

                ck_image back  = {0};
                int      depth = 0;
                CHECK_MSG(ck_image_read(path, &back, &depth, &err) == CK_OK, "%s", err.msg);
                CHECK(back.width == W && back.height == H && back.channels == C && depth == 16);
                if (back.data && back.channels == C) {
                    size_t N   = (size_t)W * H * C;
                    float *ref = malloc(N * sizeof(float));
                    for (size_t i = 0; i < N; i++) ref[i] = f16_round(img.data[i]);
                    g_checks++;
                    int ok = images_equal_bits(&back, ref, N);
                    if (!ok) g_failures++;
                    printf("%-6s exr %s C=%d %dx%d bit-exact vs fp16 rounding\n", ok ? "OK" : "NOT OK", cname[ci], C,
                           W, H);
                    for (int k = 0; k < C; k++) CHECK(back.data[(size_t)5 * C + k] == (float)(k + 1));
                    free(ref);
                }
                ck_image_release(&back);
                ck_image_release(&img);
            }
}

static void test_exr_fixtures(void) {
    /* written by the OpenEXR library's own C++ writer: tiled 8x4, PIZ, half RGB + float A, data window at (5,-3) */
    check_fixture("tiled_rgba_piz.exr", "tiled_rgba_piz.npy", 4, 32, 0.0f);
    /* scanline ZIP, float Y next to an ignored Z channel */
    check_fixture("y_float_zip.exr", "y_float_zip.npy", 1, 32, 0.0f);

    /* a single uint channel named "mask" (RLE): 1 channel, values as floats */
    check_fixture("single_uint_rle.exr", "single_uint_rle.npy", 1, 32, 0.0f);

    char path[1100];
    fixture(path, sizeof path, "layers_only.exr");
    ck_image  img = {0};
    ck_err    err = {{0}};
    ck_status st  = ck_image_read(path, &img, NULL, &err);
    CHECK_MSG(st == CK_STATUS_EFORMAT && strstr(err.msg, "diffuse.R"), "st=%d msg=%s", st, err.msg);
    fixture(path, sizeof path, "yc_subsampled.exr");
    memset(&err, 0, sizeof err);
    st = ck_image_read(path, &img, NULL, &err);
    CHECK_MSG(st == CK_STATUS_EFORMAT && strstr(err.msg, "luminance/chroma"), "st=%d msg=%s", st, err.msg);
}

/* ---------------------------------------------------------------- corrupt and hostile inputs */

/* Reads `path`, expecting failure with `want` (0: any error). The image must come back zeroed and the
 * message must name the file. */
static void expect_read_error(const char *path, ck_status want, const char *what) {
    ck_image  img   = {0};
    int       depth = -1;
    ck_err    err   = {{0}};
    ck_status st    = ck_image_read(path, &img, &depth, &err);
    int       ok    = st != CK_OK && (want == 0 || st == want) && img.data == NULL && img.width == 0 &&
             depth == 0 && strstr(err.msg, path) != NULL;
    CHECK_MSG(ok, "%s: status %d (%s), want %d; msg: %s", what, st, ck_status_str(st), want, err.msg);
    ck_image_release(&img);
}

static void truncation_sweep(const char *src, const char *stem, ck_status want) {
    size_t         len;
    unsigned char *b = slurp(src, &len);
    CHECK_MSG(b != NULL && len > 64, "cannot load %s", src);
    if (!b) return;
    size_t cuts[] = {1, 2, 3, 4, 7, 8, 9, 12, 16, 24, 33, 50, 64, 100, len / 5, len / 3, len / 2, 2 * len / 3,
                     len - 40, len - 16, len - 9, len - 3};
    int    fails  = 0;
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        if (cuts[i] == 0 || cuts[i] >= len) continue;
        char path[1100], name[96];
        snprintf(name, sizeof name, "imgio_trunc_%s_%zu", stem, cuts[i]);
        tmp_path(path, sizeof path, name);
        spit(path, b, cuts[i]);
        int before = g_failures;
        expect_read_error(path, want, name);
        fails += g_failures != before;
        unlink(path);
    }
    printf("%-6s truncation sweep %s (%zu bytes)\n", fails ? "NOT OK" : "OK", stem, len);
    free(b);
}

/* Random byte flips: any status is acceptable, a crash or sanitizer report is not. A decode that
 * "succeeds" must still return a well-formed image. */
static void mutation_sweep(const char *src, const char *stem, int rounds) {
    size_t         len;
    unsigned char *b = slurp(src, &len);
    if (!b) return;
    unsigned char *m = malloc(len);
    int            decoded = 0;
    for (int r = 0; r < rounds; r++) {
        memcpy(m, b, len);
        int flips = 1 + (int)(rng() % 4);
        for (int k = 0; k < flips; k++) m[rng() % len] ^= (unsigned char)(1u + rng() % 255u);
        char path[1100], name[96];
        snprintf(name, sizeof name, "imgio_mut_%s", stem);
        tmp_path(path, sizeof path, name);
        spit(path, m, len);
        ck_image  img = {0};
        ck_err    err = {{0}};
        ck_status st  = ck_image_read(path, &img, NULL, &err);
        if (st == CK_OK) {
            decoded++;
            CHECK(img.data && img.width >= 1 && img.height >= 1 && img.channels >= 1 && img.channels <= 4);
        } else {
            CHECK_MSG(err.msg[0] != 0, "%s: error without a message", stem);
        }
        ck_image_release(&img);
        unlink(path);
    }
    g_checks++;
    printf("OK     mutation sweep %s: %d rounds, %d still decodable, no crash\n", stem, rounds, decoded);
    free(m);
    free(b);
}

static void test_corrupt_inputs(void) {
    char path[1100], src[1100];
    ck_err err = {{0}};

    /* non-existent path, directory, empty file, garbage */
    tmp_path(path, sizeof path, "imgio_does_not_exist.png");
    unlink(path);
    expect_read_error(path, CK_STATUS_EIO, "missing file");
    expect_read_error(g_tmpdir, CK_STATUS_EIO, "directory");
    tmp_path(path, sizeof path, "imgio_empty.png");
    spit(path, "", 0);
    expect_read_error(path, CK_STATUS_EFORMAT, "empty file");
    CHECK(ck_image_sniff(path) == CK_IMAGE_UNKNOWN);

    static const unsigned char png_sig[8]  = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const unsigned char jpeg_sig[4] = {0xff, 0xd8, 0xff, 0xe0};
    static const unsigned char exr_sig[8]  = {0x76, 0x2f, 0x31, 0x01, 2, 0, 0, 0};
    const unsigned char       *sigs[3]     = {png_sig, jpeg_sig, exr_sig};
    const size_t               siglen[3]   = {8, 4, 8};
    for (int s = 0; s < 3; s++)
        for (int r = 0; r < 8; r++) {
            unsigned char buf[600];
            memcpy(buf, sigs[s], siglen[s]);
            for (size_t i = siglen[s]; i < sizeof buf; i++) buf[i] = (unsigned char)rng();
            size_t n = siglen[s] + (size_t)(r * 70);
            tmp_path(path, sizeof path, "imgio_garbage");
            spit(path, buf, n);
            expect_read_error(path, CK_STATUS_EFORMAT, "garbage after a valid signature");
        }
    tmp_path(path, sizeof path, "imgio_text.png");
    spit(path, "hello, I am not an image\n", 25);
    expect_read_error(path, CK_STATUS_EFORMAT, "text file");
    tmp_path(path, sizeof path, "imgio_tiff.tif");
    spit(path, "II*\0\x08\0\0\0", 8);
    expect_read_error(path, CK_STATUS_EFORMAT, "TIFF");

    /* truncated files of every format, at many lengths */
    ck_image img = make_image(40, 30, 4);
    fill_hdr_pattern(&img);
    for (size_t i = 0; i < (size_t)40 * 30 * 4; i++) img.data[i] = fabsf(img.data[i]) / 100.0f;
    tmp_path(src, sizeof src, "imgio_src8.png");
    CHECK(ck_image_write_png8(src, &img, &err) == CK_OK);
    truncation_sweep(src, "png8", CK_STATUS_EFORMAT);
    mutation_sweep(src, "png8", 300);
    tmp_path(src, sizeof src, "imgio_src16.png");
    CHECK(ck_image_write_png16(src, &img, &err) == CK_OK);
    truncation_sweep(src, "png16", CK_STATUS_EFORMAT);
    tmp_path(src, sizeof src, "imgio_src.exr");
    CHECK(ck_image_write_exr(src, &img, CK_EXR_PXR24, &err) == CK_OK);
    truncation_sweep(src, "exr_pxr24", CK_STATUS_EFORMAT);
    mutation_sweep(src, "exr_pxr24", 300);
    tmp_path(src, sizeof src, "imgio_src_zip.exr");
    CHECK(ck_image_write_exr(src, &img, CK_EXR_ZIP, &err) == CK_OK);
    truncation_sweep(src, "exr_zip", CK_STATUS_EFORMAT);
    mutation_sweep(src, "exr_zip", 200);
    tmp_path(src, sizeof src, "imgio_src_none.exr");
    CHECK(ck_image_write_exr(src, &img, CK_EXR_NONE, &err) == CK_OK);
    truncation_sweep(src, "exr_none", CK_STATUS_EFORMAT);
    mutation_sweep(src, "exr_none", 200);
    ck_image_release(&img);

    fixture(src, sizeof src, "tiled_rgba_piz.exr");
    truncation_sweep(src, "exr_tiled", CK_STATUS_EFORMAT);
    /* JPEG: every cut must fail, also one that removes only the final EOI marker (test_jpeg_strict.c) */
    fixture(src, sizeof src, "rgb420.jpg");
    truncation_sweep(src, "jpeg", CK_STATUS_EFORMAT);
    mutation_sweep(src, "jpeg", 300);
    fixture(src, sizeof src, "rgb_prog.jpg");
    truncation_sweep(src, "jpeg_prog", CK_STATUS_EFORMAT);
    mutation_sweep(src, "jpeg_prog", 200);
    fixture(src, sizeof src, "pal4_trns.png");
    mutation_sweep(src, "png_palette", 200);
}

/* Headers announcing sizes above CK_IMAGE_MAX_DIM must be refused before anything is allocated. */
static void test_hostile_dimensions(void) {
    char   src[1100], path[1100];
    ck_err err = {{0}};
    ck_image img = make_image(8, 8, 3);
    tmp_path(src, sizeof src, "imgio_dim.png");
    CHECK(ck_image_write_png8(src, &img, &err) == CK_OK);
    size_t         len;
    unsigned char *b = slurp(src, &len);
    if (b && len > 24) {
        /* IHDR width at offset 16 (big-endian); the CRC no longer matches either, both must be caught */
        b[16] = 0, b[17] = 1, b[18] = 0, b[19] = 0; /* 65536 */
        tmp_path(path, sizeof path, "imgio_dim_big.png");
        spit(path, b, len);
        expect_read_error(path, CK_STATUS_EFORMAT, "PNG width 65536");
    }
    free(b);

    tmp_path(src, sizeof src, "imgio_dim.exr");
    CHECK(ck_image_write_exr(src, &img, CK_EXR_NONE, &err) == CK_OK);
    b = slurp(src, &len);
    /* dataWindow box2i: "dataWindow\0box2i\0" + size 16 + xmin ymin xmax ymax */
    for (size_t i = 8; b && i + 34 < len; i++)
        if (!memcmp(b + i, "dataWindow\0box2i\0", 17)) {
            unsigned char *xmax = b + i + 17 + 4 + 8;
            xmax[0] = 0x40, xmax[1] = 0x9c, xmax[2] = 0, xmax[3] = 0; /* 40000 */
            tmp_path(path, sizeof path, "imgio_dim_big.exr");
            spit(path, b, len);
            expect_read_error(path, CK_STATUS_EFORMAT, "EXR width 40001");
            break;
        }
    free(b);

    char jpg[1100];
    fixture(jpg, sizeof jpg, "rgb420.jpg");
    b = slurp(jpg, &len);
    for (size_t i = 2; b && i + 9 < len; i++)
        if (b[i] == 0xff && b[i + 1] == 0xc0) { /* SOF0: len(2) precision(1) height(2) width(2) */
            b[i + 5] = 0xff, b[i + 6] = 0xf0;    /* height 65520 */
            tmp_path(path, sizeof path, "imgio_dim_big.jpg");
            spit(path, b, len);
            expect_read_error(path, CK_STATUS_EFORMAT, "JPEG height 65520");
            break;
        }
    free(b);
    ck_image_release(&img);
}

/* ---------------------------------------------------------------- atomic writes and argument checks */

static ck_status failing_writer(const char *tmp, const void *ctx, ck_err *err) {
    (void)ctx;
    FILE *f = fopen(tmp, "wb");
    if (f) {
        fputs("partial", f);
        fclose(f);
    }
    return ck__fail(err, CK_STATUS_EIO, "simulated failure half-way through");
}

static ck_status text_writer(const char *tmp, const void *ctx, ck_err *err) {
    FILE *f = fopen(tmp, "wb");
    if (!f) return ck__fail(err, CK_STATUS_EIO, "cannot create %s", tmp);
    fputs((const char *)ctx, f);
    return fclose(f) == 0 ? CK_OK : ck__fail(err, CK_STATUS_EIO, "close failed");
}

/* ck_write_atomic on its own (needs no image library). */
static void test_atomic_generic(void) {
    char   path[1100];
    ck_err err = {{0}};
    tmp_path(path, sizeof path, "imgio_generic.txt");
    CHECK(ck_write_atomic(path, text_writer, "first", &err) == CK_OK);
    CHECK(ck_write_atomic(path, text_writer, "second", &err) == CK_OK);
    size_t         len;
    unsigned char *b = slurp(path, &len);
    CHECK(b && len == 6 && !memcmp(b, "second", 6));
    free(b);
    CHECK(ck_write_atomic(path, failing_writer, NULL, &err) == CK_STATUS_EIO);
    b = slurp(path, &len);
    CHECK(b && len == 6 && !memcmp(b, "second", 6));
    free(b);
    CHECK(count_prefixed("imgio_generic.txt.tmp") == 0);
    memset(&err, 0, sizeof err);
    char missing[1100];
    snprintf(missing, sizeof missing, "%s/imgio_no_such_dir/x.txt", g_tmpdir);
    CHECK(ck_write_atomic(missing, text_writer, "x", &err) == CK_STATUS_EIO);
}

static void test_atomic_write(void) {
    char     path[1100], dir[600];
    ck_err   err = {{0}};
    ck_image a   = make_image(6, 4, 3), b = make_image(6, 4, 3);
    for (int i = 0; i < 6 * 4 * 3; i++) a.data[i] = 0.25f, b.data[i] = 0.75f;

    /* non-existent directory: clean failure, nothing left behind */
    snprintf(dir, sizeof dir, "%s/imgio_no_such_dir", g_tmpdir);
    rmdir(dir);
    snprintf(path, sizeof path, "%s/out.png", dir);
    ck_status st = ck_image_write_png8(path, &a, &err);
    CHECK_MSG(st == CK_STATUS_EIO && strstr(err.msg, "out.png"), "st=%d msg=%s", st, err.msg);
    memset(&err, 0, sizeof err);
    snprintf(path, sizeof path, "%s/out.exr", dir);
    st = ck_image_write_exr(path, &a, CK_EXR_PXR24, &err);
    CHECK_MSG(st == CK_STATUS_EIO, "exr into missing dir: st=%d msg=%s", st, err.msg);
    struct stat sb;
    CHECK(stat(dir, &sb) != 0);

    /* overwrite an existing file */
    tmp_path(path, sizeof path, "imgio_atomic.png");
    CHECK(ck_image_write_png8(path, &a, &err) == CK_OK);
    CHECK(ck_image_write_png8(path, &b, &err) == CK_OK);
    ck_image back = {0};
    CHECK(ck_image_read(path, &back, NULL, &err) == CK_OK);
    CHECK(back.data && back.data[0] == 191.0f / 255.0f);
    ck_image_release(&back);
    CHECK(count_prefixed("imgio_atomic.png.tmp") == 0);

    /* a writer failing half-way: temp removed, existing destination untouched */
    size_t         len0, len1;
    unsigned char *before = slurp(path, &len0);
    memset(&err, 0, sizeof err);
    st = ck_write_atomic(path, failing_writer, NULL, &err);
    CHECK(st == CK_STATUS_EIO && strstr(err.msg, "simulated"));
    unsigned char *after = slurp(path, &len1);
    CHECK(before && after && len0 == len1 && !memcmp(before, after, len0));
    CHECK(count_prefixed("imgio_atomic.png.tmp") == 0);
    free(before);
    free(after);

    /* destination is a directory: the temp file is written, rename fails, the temp must go */
    snprintf(dir, sizeof dir, "%s/imgio_dir_target.exr", g_tmpdir);
    remove(dir); /* a file left there by an interrupted run would turn this into a plain write */
    CHECK(mkdir(dir, 0755) == 0);
    memset(&err, 0, sizeof err);
    st = ck_image_write_exr(dir, &a, CK_EXR_ZIP, &err);
    CHECK_MSG(st == CK_STATUS_EIO, "st=%d msg=%s", st, err.msg);
    CHECK(count_prefixed("imgio_dir_target.exr.tmp") == 0);
    CHECK(stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode));
    rmdir(dir);

    /* argument checks */
    ck_image bad = a;
    bad.channels = 5;
    tmp_path(path, sizeof path, "imgio_bad.png");
    memset(&err, 0, sizeof err);
    CHECK(ck_image_write_png8(path, &bad, &err) == CK_STATUS_ESHAPE);
    bad          = a;
    bad.width    = 0;
    CHECK(ck_image_write_exr(path, &bad, CK_EXR_PXR24, &err) == CK_STATUS_ESHAPE);
    bad       = a;
    bad.data  = NULL;
    CHECK(ck_image_write_png16(path, &bad, &err) == CK_STATUS_EINVAL);
    CHECK(ck_image_write_exr(path, &a, (ck_exr_compression)7, &err) == CK_STATUS_EINVAL);
    CHECK(access(path, F_OK) != 0);
    ck_image_release(&a);
    ck_image_release(&b);
}

static void test_sniff(void) {
    char p[1100];
    CHECK(ck_image_sniff(fixture(p, sizeof p, "rgb16.png")) == CK_IMAGE_PNG);
    CHECK(ck_image_sniff(fixture(p, sizeof p, "gray.jpg")) == CK_IMAGE_JPEG);
    CHECK(ck_image_sniff(fixture(p, sizeof p, "y_float_zip.exr")) == CK_IMAGE_EXR);
    CHECK(ck_image_sniff(fixture(p, sizeof p, "rgb16.npy")) == CK_IMAGE_UNKNOWN);
    CHECK(ck_image_sniff(fixture(p, sizeof p, "no_such_file")) == CK_IMAGE_UNKNOWN);
    CHECK(!strcmp(ck_image_format_name(CK_IMAGE_EXR), "EXR"));
}

/* A build without one of the libraries must say so clearly instead of failing obscurely. */
static void check_not_built(ck_image_format fmt, const char *fixture_name) {
    char   p[1100];
    ck_err err = {{0}};
    fixture(p, sizeof p, fixture_name);
    ck_image  img = {0};
    ck_status st  = ck_image_read(p, &img, NULL, &err);
    CHECK_MSG(st == CK_STATUS_EUNSUPPORTED && strstr(err.msg, "not built"), "%s: st=%d msg=%s",
              ck_image_format_name(fmt), st, err.msg);
}

static void quiet_log(ck_log_level level, const char *msg, void *user) {
    (void)level, (void)msg, (void)user; /* expected failures would flood the output */
}

/* The sample-typed writers (fed by ck_passes) give the same files as the float writers on the same
 * samples: EXR from halves (each compression), 8-bit PNG from bytes. */
static void test_sample_writers(void) {
    static const ck_exr_compression comps[3] = {CK_EXR_PXR24, CK_EXR_ZIP, CK_EXR_NONE};
    for (int C = 1; C <= 4; C++) {
        const int W = 301, H = 70;
        ck_image  img = make_image(W, H, C);
        fill_hdr_pattern(&img);
        const size_t N    = (size_t)W * H * C;
        uint16_t    *half = malloc(N * sizeof *half);
        uint8_t     *u8   = malloc(N);
        for (size_t i = 0; i < N; i++) half[i] = ck_f32_to_f16(img.data[i]), u8[i] = ck_f32_to_u8_trunc(img.data[i]);
        for (int ci = 0; ci < 3; ci++) {
            char pa[1100], pb[1100];
            tmp_path(pa, sizeof pa, "imgio_samples_a.exr");
            tmp_path(pb, sizeof pb, "imgio_samples_b.exr");
            ck_err err = {{0}};
            CHECK_MSG(ck_image_write_exr(pa, &img, comps[ci], &err) == CK_OK, "%s", err.msg);
            CHECK_MSG(ck_image_write_exr_half(pb, W, H, C, half, comps[ci], &err) == CK_OK, "%s", err.msg);
            size_t la = 0, lb = 0;
            unsigned char *a = slurp(pa, &la), *b = slurp(pb, &lb);
            CHECK_MSG(a && b && la == lb && !memcmp(a, b, la), "exr from halves C=%d comp %d: %zu vs %zu bytes", C,
                      (int)comps[ci], la, lb);
            free(a), free(b);
            remove(pa), remove(pb);
        }
        if (C != 2) {
            char pa[1100], pb[1100];
            tmp_path(pa, sizeof pa, "imgio_samples_a.png");
            tmp_path(pb, sizeof pb, "imgio_samples_b.png");
            ck_err err = {{0}};
            CHECK_MSG(ck_image_write_png8(pa, &img, &err) == CK_OK, "%s", err.msg);
            CHECK_MSG(ck_image_write_png_u8(pb, W, H, C, u8, &err) == CK_OK, "%s", err.msg);
            size_t la = 0, lb = 0;
            unsigned char *a = slurp(pa, &la), *b = slurp(pb, &lb);
            CHECK_MSG(a && b && la == lb && !memcmp(a, b, la), "png from bytes C=%d: %zu vs %zu bytes", C, la, lb);
            free(a), free(b);
            remove(pa), remove(pb);
        }
        ck_err err = {{0}};
        CHECK(ck_image_write_exr_half(NULL, W, H, C, half, CK_EXR_PXR24, &err) == CK_STATUS_EINVAL);
        CHECK(ck_image_write_png_u8("/tmp/x.png", W, H, 5, u8, &err) == CK_STATUS_ESHAPE);
        free(half), free(u8);
        ck_image_release(&img);
    }
}

/* Pre-encoded PXR24 chunks (the device encoder's output) written as given: transformed and deflated
 * here with zlib, every third chunk stored uncompressed; the file reads back as the halves. */
static void test_exr_given_chunks(void) {
    for (int C = 1, all = 0; C <= 4; C += all, all = !all) { /* all: every chunk encoded, no halves given */
        const int W = 301, H = 70, L = 16, nch = (H + L - 1) / L;
        ck_image  img = make_image(W, H, C);
        fill_hdr_pattern(&img);
        const size_t N    = (size_t)W * H * C;
        uint16_t    *half = malloc(N * sizeof *half);
        for (size_t i = 0; i < N; i++) half[i] = ck_f32_to_f16(img.data[i]);
        int32_t *bytes = calloc((size_t)nch, sizeof *bytes);
        uint8_t *data = malloc(2 * N + 1024), *xf = malloc((size_t)L * W * C * 2), *p = data;
        for (int c = 0; c < nch; c++) {
            const int    rows = H - c * L < L ? H - c * L : L;
            const size_t nxf  = pxr24_ref_chunk(half, W, C, c * L, rows, xf);
            uLongf       cap  = (uLongf)(2 * N + 1024 - (size_t)(p - data));
            if ((all || c % 3 != 2) && compress2(p, &cap, xf, (uLong)nxf, 1) == Z_OK && cap < (uLongf)nxf) {
                bytes[c] = (int32_t)cap;
                p += cap;
            }
        }
        char path[1100];
        tmp_path(path, sizeof path, "imgio_given_chunks.exr");
        ck_err err = {{0}};
        int encoded = 0;
        for (int c = 0; c < nch; c++) encoded += bytes[c] > 0;
        if (all) CHECK(encoded == nch); /* the pattern compresses */
        if (!all) { /* stored chunks and no halves: refused, naming the chunk */
            CHECK(ck_image_write_exr_chunks(path, W, H, C, NULL, 16, bytes, data, &err) == CK_STATUS_EINVAL &&
                  strstr(err.msg, "chunk 2 is stored"));
        }
        CHECK_MSG(ck_image_write_exr_chunks(path, W, H, C, all ? NULL : half, 16, bytes, data, &err) == CK_OK, "%s",
                  err.msg);
        ck_image back = {0};
        CHECK_MSG(ck_image_read(path, &back, NULL, &err) == CK_OK, "%s", err.msg);
        int same = back.data && back.channels == C && back.width == W && back.height == H;
        for (size_t i = 0; same && i < N; i++) same = ck_f32_to_f16(back.data[i]) == half[i];
        g_checks++;
        if (!same) g_failures++;
        printf("%-6s exr from given PXR24 chunks C=%d (%d chunks, %s) reads back as the halves\n",
               same ? "OK" : "NOT OK", C, nch, all ? "all encoded, no halves given" : "every third stored");
        CHECK(ck_image_write_exr_chunks(path, W, H, C, half, 32, bytes, data, &err) == CK_STATUS_EINVAL);
        ck_image_release(&back);
        remove(path);
        free(half), free(bytes), free(data), free(xf);
        ck_image_release(&img);
    }
}

static uint32_t crc32_png(const unsigned char *p, size_t n) { /* PNG's CRC-32 (ISO 3309), bitwise */
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xffffffffu;
}

static void put32(unsigned char *p, uint32_t v) { p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = (unsigned char)v; }

/* Small files that claim huge images: an 8192×8192 1-bit PNG (valid header and CRCs, 67 Mpx) and a
 * baseline JPEG whose frame header says 30000×30000 are refused by the pixel limit before their pixels
 * are allocated (they cost 5.2 GB and 9.6 GB before); CKEY_MAX_PIXELS lifts the limit. */
static void test_pixel_limit(void) {
    char          path[1100];
    unsigned char png[8 + 25 + 12 + 4 + 12];
    memcpy(png, "\x89PNG\r\n\x1a\n", 8);
    put32(png + 8, 13), memcpy(png + 12, "IHDR", 4), put32(png + 16, 8192), put32(png + 20, 8192);
    png[24] = 1, png[25] = 0, png[26] = png[27] = png[28] = 0;
    put32(png + 29, crc32_png(png + 12, 17));
    put32(png + 33, 4), memcpy(png + 37, "IDAT", 4), memcpy(png + 41, "\x78\x9c\x03\x00", 4);
    put32(png + 45, crc32_png(png + 37, 8));
    put32(png + 49, 0), memcpy(png + 53, "IEND", 4), put32(png + 57, crc32_png(png + 53, 4));
    tmp_path(path, sizeof path, "imgio_8192_1bit.png");
    spit(path, png, sizeof png);
    ck_image  img = {0};
    int       depth;
    ck_err    err = {{0}};
    ck_status st  = ck_image_read(path, &img, &depth, &err);
    CHECK_MSG(st == CK_STATUS_EFORMAT && strstr(err.msg, "larger than the limit of 40.0 Mpx"), "8192^2 PNG: %s", err.msg);
    ck_image_release(&img);
    printf("OK     %s\n", err.msg);
    /* a JPEG: SOI, a DQT, SOF0 of 30000x30000 grey, an SOS and EOI: no scan data at all */
    unsigned char jpg[2 + 69 + 13 + 10 + 2] = {0xff, 0xd8, 0xff, 0xdb, 0x00, 0x43, 0x00};
    for (int i = 0; i < 64; i++) jpg[7 + i] = 1;
    const unsigned char sof[13] = {0xff, 0xc0, 0x00, 0x0b, 0x08, 0x75, 0x30, 0x75, 0x30, 0x01, 0x01, 0x11, 0x00};
    const unsigned char sos[12] = {0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3f, 0x00, 0xff, 0xd9};
    memcpy(jpg + 71, sof, sizeof sof);
    memcpy(jpg + 84, sos, sizeof sos);
    tmp_path(path, sizeof path, "imgio_30000.jpg");
    spit(path, jpg, sizeof jpg);
    memset(&err, 0, sizeof err);
    st = ck_image_read(path, &img, &depth, &err);
    CHECK_MSG(st == CK_STATUS_EFORMAT && strstr(err.msg, "30000x30000 JPEG (900.0 Mpx) is larger than the limit"),
              "30000^2 JPEG: %s", err.msg);
    ck_image_release(&img);
    printf("OK     %s\n", err.msg);
    /* the limit moves with CKEY_MAX_PIXELS: the PNG's header passes it and its (empty) data fails instead */
    setenv("CKEY_MAX_PIXELS", "100000000", 1);
    CHECK(ck_image_max_pixels() == 100000000LL);
    setenv("CKEY_MAX_PIXELS", "junk", 1);
    CHECK(ck_image_max_pixels() == CK_IMAGE_MAX_PIXELS_DEFAULT);
    unsetenv("CKEY_MAX_PIXELS");
}

#ifdef CK_HAVE_TIFF
#include <tiffio.h>
/* TIFF plates: 8- and 16-bit integer (strips, LZW), 32-bit float (tiles) and 16-bit float (planar) files
 * written with libtiff read back to the values written; float TIFFs count as scene-linear. */
static void test_tiff(void) {
    const int W = 37, H = 23;
    struct {
        const char *name;
        int         bps, fmt, spp, tiled, planar, compression;
    } cases[] = {{"tiff8_rgb.tif", 8, SAMPLEFORMAT_UINT, 3, 0, 0, COMPRESSION_NONE},
                 {"tiff16_rgba_lzw.tif", 16, SAMPLEFORMAT_UINT, 4, 0, 0, COMPRESSION_LZW},
                 {"tiff32f_rgb_tiled.tif", 32, SAMPLEFORMAT_IEEEFP, 3, 1, 0, COMPRESSION_ADOBE_DEFLATE},
                 {"tiff16f_grey_planar.tif", 16, SAMPLEFORMAT_IEEEFP, 2, 0, 1, COMPRESSION_NONE}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char path[1100];
        tmp_path(path, sizeof path, cases[k].name);
        TIFF *t = TIFFOpen(path, "w");
        CHECK(t != NULL);
        if (!t) continue;
        const int spp = cases[k].spp, B = cases[k].bps / 8;
        TIFFSetField(t, TIFFTAG_IMAGEWIDTH, W), TIFFSetField(t, TIFFTAG_IMAGELENGTH, H);
        TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, spp), TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, cases[k].bps);
        TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, cases[k].fmt), TIFFSetField(t, TIFFTAG_COMPRESSION, cases[k].compression);
        TIFFSetField(t, TIFFTAG_PHOTOMETRIC, spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
        TIFFSetField(t, TIFFTAG_PLANARCONFIG, cases[k].planar ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG);
        if (spp == 4 || spp == 2) {
            uint16_t extra = EXTRASAMPLE_UNASSALPHA;
            TIFFSetField(t, TIFFTAG_EXTRASAMPLES, 1, &extra);
        }
        /* value of (x, y, c): integers cover their range, floats include values above 1 */
        float *want = malloc(sizeof(float) * W * H * spp);
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                for (int c = 0; c < spp; c++) {
                    const float v = (float)((x * 7 + y * 13 + c * 29) % 97) / 96.0f;
                    float      *o = want + ((size_t)y * W + x) * spp + c;
                    if (cases[k].fmt == SAMPLEFORMAT_IEEEFP) *o = cases[k].bps == 16 ? ck_f16_to_f32(ck_f32_to_f16(v * 1.5f)) : v * 1.5f;
                    else *o = cases[k].bps == 8 ? (float)(int)(v * 255) / 255.0f : (float)(int)(v * 65535) / 65535.0f;
                }
        uint8_t *row = calloc((size_t)W * spp * 4 * 16 * 16, 1);
        const int planes = cases[k].planar ? spp : 1, per = cases[k].planar ? 1 : spp;
        if (cases[k].tiled) {
            TIFFSetField(t, TIFFTAG_TILEWIDTH, 16), TIFFSetField(t, TIFFTAG_TILELENGTH, 16);
            for (int y0 = 0; y0 < H; y0 += 16)
                for (int x0 = 0; x0 < W; x0 += 16) {
                    memset(row, 0, (size_t)16 * 16 * spp * B);
                    for (int dy = 0; dy < 16 && y0 + dy < H; dy++)
                        for (int dx = 0; dx < 16 && x0 + dx < W; dx++)
                            memcpy(row + ((size_t)dy * 16 + dx) * spp * B, want + ((size_t)(y0 + dy) * W + x0 + dx) * spp,
                                   (size_t)spp * B);
                    TIFFWriteTile(t, row, (uint32_t)x0, (uint32_t)y0, 0, 0);
                }
        } else {
            TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 4);
            for (int pl = 0; pl < planes; pl++)
                for (int y = 0; y < H; y++) {
                    for (int x = 0; x < W; x++)
                        for (int c = 0; c < per; c++) {
                            const float v  = want[((size_t)y * W + x) * spp + (planes > 1 ? pl : c)];
                            uint8_t    *p  = row + ((size_t)x * per + c) * B;
                            if (cases[k].fmt == SAMPLEFORMAT_IEEEFP && B == 4) memcpy(p, &v, 4);
                            else if (cases[k].fmt == SAMPLEFORMAT_IEEEFP) {
                                const uint16_t hh = ck_f32_to_f16(v);
                                memcpy(p, &hh, 2);
                            } else if (B == 1) *p = (uint8_t)(v * 255.0f + 0.5f);
                            else {
                                const uint16_t u = (uint16_t)(v * 65535.0f + 0.5f);
                                memcpy(p, &u, 2);
                            }
                        }
                    TIFFWriteScanline(t, row, (uint32_t)y, (uint16_t)pl);
                }
        }
        TIFFClose(t);
        ck_image  img   = {0};
        int       depth = 0;
        ck_err    err   = {{0}};
        ck_status st    = ck_image_read(path, &img, &depth, &err);
        CHECK_MSG(st == CK_OK && img.width == W && img.height == H && img.channels == spp && depth == cases[k].bps,
                  "%s: %s", cases[k].name, err.msg);
        if (st == CK_OK) check_close(cases[k].name, img.data, want, (size_t)W * H * spp, 1e-6, 0);
        CHECK(ck_image_is_linear(path) == (cases[k].fmt == SAMPLEFORMAT_IEEEFP));
        CHECK(ck_image_sniff(path) == CK_IMAGE_TIFF);
        ck_image_release(&img);
        free(want), free(row);
    }
    /* a truncated TIFF: an error naming the file, no crash */
    char src[1100], path[1100];
    tmp_path(src, sizeof src, "tiff16_rgba_lzw.tif");
    size_t         len;
    unsigned char *b = slurp(src, &len);
    if (b) {
        tmp_path(path, sizeof path, "tiff_truncated.tif");
        spit(path, b, len / 3);
        expect_read_error(path, CK_STATUS_EFORMAT, "truncated TIFF");
        free(b);
    }
}
#endif

/* A .npy whose 128-byte header claims 16 GB of data: refused by the file's size, before any allocation. */
static void test_npy_claims(void) {
    char path[1200];
    snprintf(path, sizeof path, "%s/ckey_claims.npy", g_tmpdir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    char hdr[118];
    int  n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536), }");
    memset(hdr + n, ' ', sizeof hdr - 1 - (size_t)n);
    hdr[sizeof hdr - 1] = '\n';
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    const unsigned char hl[2] = {sizeof hdr & 0xff, sizeof hdr >> 8};
    fwrite(hl, 1, 2, f);
    fwrite(hdr, 1, sizeof hdr, f);
    fwrite("0123456789abcdef", 1, 16, f);
    fclose(f);
    ck_npy    a   = {0};
    ck_err    err = {{0}};
    ck_status st  = ck_npy_read(path, &a, &err);
    CHECK_MSG(st == CK_STATUS_EFORMAT && strstr(err.msg, "17179869184 bytes expected, 16 in the file"),
              ".npy claiming 16 GB: %d '%s'", st, err.msg);
    if (st == CK_OK) ck_npy_free(&a);
    remove(path);
    printf("OK     .npy header claiming 16 GB refused before allocating: %s\n", err.msg);
}

int main(void) {
    const char *t = getenv("CK_TMP");
    snprintf(g_tmpdir, sizeof g_tmpdir, "%s", t ? t : "/tmp");
    if (!getenv("CK_VERBOSE")) ck_set_log(quiet_log, NULL, CK_LOG_ERROR);

    test_sniff();
    test_npy_claims();
#ifdef CK_HAVE_TIFF
    test_tiff();
#endif
    if (ck_image_format_supported(CK_IMAGE_PNG) && ck_image_format_supported(CK_IMAGE_JPEG)) test_pixel_limit();
    test_atomic_generic();
    if (ck_image_format_supported(CK_IMAGE_PNG) && ck_image_format_supported(CK_IMAGE_EXR)) test_atomic_write();
    if (ck_image_format_supported(CK_IMAGE_PNG)) {
        test_png8_roundtrip();
        test_png16_roundtrip();
        test_png_fixtures();
    } else {
        check_not_built(CK_IMAGE_PNG, "rgb16.png");
    }
    if (ck_image_format_supported(CK_IMAGE_JPEG)) test_jpeg_fixtures();
    else check_not_built(CK_IMAGE_JPEG, "gray.jpg");
    if (ck_image_format_supported(CK_IMAGE_EXR)) {
        test_exr_roundtrip();
        test_exr_fixtures();
        if (ck_image_format_supported(CK_IMAGE_PNG)) test_sample_writers();
        test_exr_given_chunks();
    } else {
        check_not_built(CK_IMAGE_EXR, "y_float_zip.exr");
    }
    if (ck_image_format_supported(CK_IMAGE_PNG) && ck_image_format_supported(CK_IMAGE_JPEG) &&
        ck_image_format_supported(CK_IMAGE_EXR)) {
        test_corrupt_inputs();
        test_hostile_dimensions();
    }
    return test_summary();
}
