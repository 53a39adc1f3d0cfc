/* The PNG reader's libdeflate path (src/io/image_png_direct.c) against known samples: files written by
 * libpng with each of the five row filters forced (and its adaptive choice), 8 and 16 bits, 1 to 4
 * channels, IDAT split into small chunks; layouts it leaves to libpng (palette, tRNS, Adam7, low bit
 * depths) still decode through libpng; decoding into a caller's buffer (ck_image_read_into); a bad
 * CRC or a cut file ends in libpng's errors, never in wrong pixels; and what the direct writer makes
 * (every layout, from floats and from bytes) read back by libpng itself. */
#include "harness.h"

#include "io/image.h"

#include <png.h>
#include <stdint.h>
#include <zlib.h>

static char g_tmp[512];

static uint32_t g_rng = 777u;
static uint32_t rng(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return g_rng >> 8;
}

/* A w x h x C image of `depth` bits (samples in 0..max) with smooth areas and noise, so every filter
 * makes a difference; written by libpng with `filters` and small IDAT chunks. */
static int write_png(const char *path, int w, int h, int C, int depth, int filters, int interlace,
                     const uint16_t *samples) {
    static const int ctypes[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                  PNG_COLOR_TYPE_RGB_ALPHA};
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    png_structp png  = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop   info = png_create_info_struct(png);
    unsigned char *row = malloc((size_t)w * C * 2);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        free(row);
        return 0;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, ctypes[C], interlace, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, filters);
    png_set_compression_buffer_size(png, 1024); /* many IDAT chunks */
    png_write_info(png, info);
    const int passes = interlace ? png_set_interlace_handling(png) : 1;
    for (int pass = 0; pass < passes; pass++)
        for (int y = 0; y < h; y++) {
            for (int i = 0; i < w * C; i++) {
                const uint16_t v = samples[(size_t)y * w * C + i];
                if (depth == 8) row[i] = (unsigned char)v;
                else row[2 * i] = (unsigned char)(v >> 8), row[2 * i + 1] = (unsigned char)v;
            }
            png_write_row(png, row);
        }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);
    return fclose(f) == 0;
}

static uint16_t *make_samples(int w, int h, int C, int depth) {
    uint16_t      *s   = malloc(sizeof(uint16_t) * (size_t)w * h * C);
    const unsigned max = depth == 8 ? 255u : 65535u;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < C; c++) {
                const unsigned smooth = (unsigned)((x * 7 + y * 3 + c * 50) % (max + 1));
                s[((size_t)y * w + x) * C + c] = (uint16_t)(x < w / 2 ? smooth : rng() % (max + 1));
            }
    return s;
}

static int read_equals(const char *path, const uint16_t *samples, int w, int h, int C, int depth, float *buf,
                       size_t cap) {
    ck_image  img = {0};
    ck_err    err = {{0}};
    int       got_depth = 0;
    ck_status st  = ck_image_read_into(path, &img, buf, cap, &got_depth, &err);
    if (st != CK_OK) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        return 0;
    }
    int ok = img.width == w && img.height == h && img.channels == C && got_depth == depth;
    const float scale = depth == 8 ? 255.0f : 65535.0f;
    for (size_t i = 0; ok && i < (size_t)w * h * C; i++) ok = img.data[i] == (float)samples[i] / scale;
    if (buf && (size_t)w * h * C <= cap) ok = ok && img.data == buf;
    else ck_image_release(&img);
    return ok;
}

static void test_filters_and_layouts(void) {
    static const int filters[6] = {PNG_FILTER_NONE, PNG_FILTER_SUB, PNG_FILTER_UP, PNG_FILTER_AVG, PNG_FILTER_PAETH,
                                   PNG_ALL_FILTERS};
    char path[700];
    int  n = 0;
    for (int depth = 8; depth <= 16; depth += 8)
        for (int C = 1; C <= 4; C++)
            for (int k = 0; k < 6; k++) {
                const int w = 37 + C, h = 23;
                uint16_t *s = make_samples(w, h, C, depth);
                snprintf(path, sizeof path, "%s/direct_%d_%d_%d.png", g_tmp, depth, C, k);
                CHECK(write_png(path, w, h, C, depth, filters[k], PNG_INTERLACE_NONE, s));
                CHECK_MSG(read_equals(path, s, w, h, C, depth, NULL, 0), "%d-bit, %d channels, filter set %d", depth,
                          C, k);
                n++;
                free(s);
                remove(path);
            }
    printf("ok: %d PNG layouts x filters decode to their exact samples\n", n);

    /* Adam7 goes through libpng, with the same result */
    uint16_t *s = make_samples(29, 17, 3, 16);
    snprintf(path, sizeof path, "%s/direct_adam7.png", g_tmp);
    CHECK(write_png(path, 29, 17, 3, 16, PNG_ALL_FILTERS, PNG_INTERLACE_ADAM7, s));
    CHECK(read_equals(path, s, 29, 17, 3, 16, NULL, 0));
    ck_image img = {0};
    int      depth;
    CHECK(ck__png_read_direct(path, &img, NULL, &depth) == 0 && img.data == NULL);
    remove(path);
    free(s);
}

static void test_read_into(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/direct_into.png", g_tmp);
    uint16_t *s = make_samples(64, 48, 3, 16);
    CHECK(write_png(path, 64, 48, 3, 16, PNG_FILTER_SUB, PNG_INTERLACE_NONE, s));
    float *buf = malloc(sizeof(float) * 64 * 48 * 4);
    CHECK(read_equals(path, s, 64, 48, 3, 16, buf, 64 * 48 * 4));     /* into the buffer */
    CHECK(read_equals(path, s, 64, 48, 3, 16, buf, 64 * 48 * 3 - 1)); /* too small: malloc'd */
    /* the same through libpng (Adam7) and the EXR / JPEG back ends share ck__image_alloc */
    uint16_t *s7 = make_samples(64, 48, 3, 8);
    CHECK(write_png(path, 64, 48, 3, 8, PNG_ALL_FILTERS, PNG_INTERLACE_ADAM7, s7));
    CHECK(read_equals(path, s7, 64, 48, 3, 8, buf, 64 * 48 * 3));
    remove(path);
    free(s), free(s7), free(buf);
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *len              = (size_t)ftell(f);
    unsigned char *b  = malloc(*len + 64);
    fseek(f, 0, SEEK_SET);
    if (fread(b, 1, *len, f) != *len) *len = 0;
    fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
}

/* Damaged copies: the direct path declines every one, and libpng's verdict is what the caller sees. */
static void test_damage(void) {
    char path[700], bad[760];
    snprintf(path, sizeof path, "%s/direct_good.png", g_tmp);
    snprintf(bad, sizeof bad, "%s/direct_bad.png", g_tmp);
    uint16_t *s = make_samples(50, 40, 3, 8);
    CHECK(write_png(path, 50, 40, 3, 8, PNG_ALL_FILTERS, PNG_INTERLACE_NONE, s));
    size_t         n = 0;
    unsigned char *b = slurp(path, &n);
    CHECK(b && n > 200);
    ck_image img = {0};
    int      depth;
    CHECK(ck__png_read_direct(path, &img, NULL, &depth) == 1 && img.data);
    ck_image_release(&img);

    /* a flipped byte inside the first IDAT's payload: its CRC no longer matches */
    unsigned char *c = malloc(n + 64);
    memcpy(c, b, n);
    c[33 + 8 + 5] ^= 0x40;
    spit(bad, c, n);
    ck_err err = {{0}};
    CHECK(ck__png_read_direct(bad, &img, NULL, &depth) == 0 && img.data == NULL);
    ck_status st = ck_image_read(bad, &img, NULL, &err);
    CHECK_MSG(st == CK_STATUS_EFORMAT && strstr(err.msg, bad), "st=%d %s", st, err.msg);

    /* cut in the middle of the pixel data, and cut before IEND */
    for (size_t cut = n / 2; cut <= n - 12; cut += n - 12 - n / 2) {
        spit(bad, b, cut);
        CHECK(ck__png_read_direct(bad, &img, NULL, &depth) == 0 && img.data == NULL);
        st = ck_image_read(bad, &img, NULL, &err);
        CHECK_MSG(st == CK_STATUS_EFORMAT && strstr(err.msg, bad), "cut at %zu: st=%d %s", cut, st, err.msg);
    }

    /* a chunk whose type is not four letters (CRC intact) after IHDR: libpng's to refuse */
    const unsigned char odd[12] = {0, 0, 0, 0, 't', 'E', 5, 't', 0, 0, 0, 0};
    memcpy(c, b, 33);
    memcpy(c + 33, odd, 12);
    const uLong crc = crc32(0L, odd + 4, 4);
    c[41] = (unsigned char)(crc >> 24), c[42] = (unsigned char)(crc >> 16), c[43] = (unsigned char)(crc >> 8),
    c[44] = (unsigned char)crc;
    memcpy(c + 45, b + 33, n - 33);
    spit(bad, c, n + 12);
    CHECK(ck__png_read_direct(bad, &img, NULL, &depth) == 0 && img.data == NULL);
    st = ck_image_read(bad, &img, NULL, &err);
    CHECK_MSG(st == CK_STATUS_EFORMAT && strstr(err.msg, bad), "odd chunk type: st=%d %s", st, err.msg);

    /* a header claiming far more rows than its data can inflate to: declined before anything is sized */
    memcpy(c, b, n);
    c[16] = 0, c[17] = 0, c[18] = 0x10, c[19] = 0;     /* width 4096 */
    c[20] = 0, c[21] = 0, c[22] = 0x10, c[23] = 0;     /* height 4096 */
    const uLong hcrc = crc32(0L, c + 12, 17);
    c[29] = (unsigned char)(hcrc >> 24), c[30] = (unsigned char)(hcrc >> 16), c[31] = (unsigned char)(hcrc >> 8),
    c[32] = (unsigned char)hcrc;
    spit(bad, c, n);
    CHECK(ck__png_read_direct(bad, &img, NULL, &depth) == 0 && img.data == NULL);
    st = ck_image_read(bad, &img, NULL, &err);
    CHECK_MSG(st == CK_STATUS_EFORMAT && strstr(err.msg, bad), "oversized header: st=%d %s", st, err.msg);
    free(c), free(b), free(s);
    remove(path), remove(bad);
}

/* libpng's own decoder on what ckey writes (8 bits from floats and from bytes, 16 bits), so a fault
 * shared by ckey's writer and reader cannot hide. */
static int libpng_read(const char *path, int *w, int *h, int *C, int *depth, uint16_t **out) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    png_structp png  = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop   info = png_create_info_struct(png);
    *out             = NULL;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        fclose(f);
        free(*out);
        *out = NULL;
        return 0;
    }
    png_init_io(png, f);
    png_read_info(png, info);
    *w = (int)png_get_image_width(png, info), *h = (int)png_get_image_height(png, info);
    *C = png_get_channels(png, info), *depth = png_get_bit_depth(png, info);
    const size_t rb  = png_get_rowbytes(png, info);
    unsigned char *row = malloc(rb);
    *out = malloc(sizeof(uint16_t) * (size_t)*w * *h * *C);
    for (int y = 0; y < *h; y++) {
        png_read_row(png, row, NULL);
        for (int i = 0; i < *w * *C; i++)
            (*out)[(size_t)y * *w * *C + i] = *depth == 8 ? row[i] : (uint16_t)(row[2 * i] << 8 | row[2 * i + 1]);
    }
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    free(row);
    fclose(f);
    return 1;
}

static void test_writer_against_libpng(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/direct_written.png", g_tmp);
    int n = 0;
    for (int C = 1; C <= 4; C++)
        for (int bits = 8; bits <= 16; bits += 8)
            for (int from_bytes = 0; from_bytes <= (bits == 8); from_bytes++) {
                const int w = 45 + C, h = 19;
                ck_image  img = {w, h, C, malloc(sizeof(float) * (size_t)w * h * C)};
                uint8_t  *u8  = malloc((size_t)w * h * C);
                for (size_t i = 0; i < (size_t)w * h * C; i++) {
                    img.data[i] = i % 7 == 0 ? -0.2f : i % 11 == 0 ? 1.3f : (float)(rng() % 10000) / 9999.0f;
                    u8[i]       = (uint8_t)(rng() % 256);
                }
                ck_err    err = {{0}};
                ck_status st  = from_bytes ? ck_image_write_png_u8(path, w, h, C, u8, &err)
                              : bits == 8  ? ck_image_write_png8(path, &img, &err)
                                           : ck_image_write_png16(path, &img, &err);
                CHECK_MSG(st == CK_OK, "%s", err.msg);
                int       gw, gh, gc, gd;
                uint16_t *got = NULL;
                int       ok  = libpng_read(path, &gw, &gh, &gc, &gd, &got) && gw == w && gh == h && gc == C && gd == bits;
                for (size_t i = 0; ok && i < (size_t)w * h * C; i++) {
                    const float    v    = img.data[i] < 0 ? 0 : img.data[i] > 1 ? 1 : img.data[i];
                    const unsigned want = from_bytes ? u8[i] : bits == 8 ? (unsigned)(v * 255.0f) : (unsigned)lrintf(v * 65535.0f);
                    ok                  = got[i] == want;
                }
                CHECK_MSG(ok, "%d channels, %d bits%s: libpng reads back the samples", C, bits, from_bytes ? " (bytes)" : "");
                n += ok;
                free(got), free(u8), free(img.data);
            }
    printf("ok: %d written PNG layouts read back by libpng as written\n", n);
    remove(path);
}

int main(void) {
    const char *t = getenv("CK_TMP");
    snprintf(g_tmp, sizeof g_tmp, "%s", t ? t : "/tmp");
    if (!ck_image_format_supported(CK_IMAGE_PNG)) {
        printf("SKIP: PNG support not built\n");
        return 0;
    }
#ifdef CK_HAVE_DEFLATE
    test_filters_and_layouts();
    test_damage();
#else
    printf("SKIP: the libdeflate PNG path is not built (libdeflate-dev missing); checking read_into only\n");
#endif
    test_read_into();
    test_writer_against_libpng();
    return test_summary();
}
