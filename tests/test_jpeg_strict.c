/* Strict JPEG decoding: files whose entropy-coded data is missing, truncated or incomplete are refused
 * (CK_STATUS_EFORMAT, a message naming the file), while valid baseline, progressive, arithmetic-coded and
 * non-interleaved files decode to exactly the pixels libjpeg itself gives.
 *
 * Every file is made here with libjpeg (the encoder) and cut or spliced at marker positions found by a
 * small independent marker scan; the reference pixels come from decoding the same bytes with libjpeg
 * directly (islow IDCT, fancy upsampling: what cv2.imread does).
 * Env: CK_TMP (scratch folder).
 */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include "io/image.h"

#include <setjmp.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#ifdef CK_HAVE_JPEG
#include <jpeglib.h>

static char g_tmp[512];

static void quiet_log(ck_log_level level, const char *msg, void *user) { (void)level, (void)msg, (void)user; }

typedef struct bytes {
    unsigned char *p;
    size_t         n;
} bytes;

/* ---------------------------------------------------------------- encoding */

typedef struct enc_opts {
    int w, h, comps;           /* comps 1 (grey) or 3 (RGB -> YCbCr 4:2:0) */
    int arith, progressive;
    int flat;                  /* uniform 128 instead of a pattern */
    const jpeg_scan_info *scans; /* custom scan script (NULL: libjpeg's) */
    int                   n_scans;
} enc_opts;

static bytes encode(const enc_opts *o) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr       e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    unsigned char *out = NULL;
    unsigned long  n   = 0;
    jpeg_mem_dest(&c, &out, &n);
    c.image_width      = (JDIMENSION)o->w;
    c.image_height     = (JDIMENSION)o->h;
    c.input_components = o->comps;
    c.in_color_space   = o->comps == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 90, TRUE);
    c.arith_code = o->arith ? TRUE : FALSE;
    if (o->progressive) jpeg_simple_progression(&c);
    if (o->scans) c.scan_info = o->scans, c.num_scans = o->n_scans;
    jpeg_start_compress(&c, TRUE);
    unsigned char *row = malloc((size_t)o->w * (size_t)o->comps);
    while (c.next_scanline < c.image_height) {
        const int y = (int)c.next_scanline;
        for (int x = 0; x < o->w; x++)
            for (int k = 0; k < o->comps; k++) { /* ramps plus a checker of edges: every coefficient band is used */
                const int v           = x * (3 + k) + y * (5 - k) + ((x / 7 + y / 5) % 2) * 90;
                row[x * o->comps + k] = o->flat ? 128 : (unsigned char)(v & 255);
            }
        JSAMPROW r = row;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    return (bytes){out, n};
}

/* ---------------------------------------------------------------- reference decode */

/* libjpeg's own decode of the bytes, 8-bit samples (w*h*comps); NULL when libjpeg itself gives up. */
typedef struct ref_err {
    struct jpeg_error_mgr mgr;
    jmp_buf               jb;
} ref_err;
static void ref_error_exit(j_common_ptr c) { longjmp(((ref_err *)c->err)->jb, 1); }
static void ref_quiet(j_common_ptr c, int level) { (void)c, (void)level; }

static unsigned char *reference_decode(const bytes *b, int *w, int *h, int *comps) {
    static struct jpeg_decompress_struct d; /* static: not an automatic variable across longjmp */
    static ref_err                       re;
    static unsigned char                *pix;
    pix     = NULL;
    d.err   = jpeg_std_error(&re.mgr);
    re.mgr.error_exit   = ref_error_exit;
    re.mgr.emit_message = ref_quiet;
    if (setjmp(re.jb)) {
        jpeg_destroy_decompress(&d);
        free(pix);
        return NULL;
    }
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, b->p, b->n);
    jpeg_read_header(&d, TRUE);
    d.out_color_space     = d.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    d.dct_method          = JDCT_ISLOW;
    d.do_fancy_upsampling = TRUE;
    jpeg_start_decompress(&d);
    *w = (int)d.output_width, *h = (int)d.output_height, *comps = d.output_components;
    pix = malloc((size_t)*w * (size_t)*h * (size_t)*comps);
    while (d.output_scanline < d.output_height) {
        JSAMPROW r = pix + (size_t)d.output_scanline * (size_t)*w * (size_t)*comps;
        jpeg_read_scanlines(&d, &r, 1);
    }
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    return pix;
}

/* libjpeg alone decodes the bytes without an error (its warnings are not errors). */
static int libjpeg_accepts(const bytes *b) {
    int            w, h, c;
    unsigned char *pix = reference_decode(b, &w, &h, &c);
    free(pix);
    return pix != NULL;
}

/* ---------------------------------------------------------------- markers */

/* Offsets of every SOS marker (0xFF 0xDA) and of EOI, by walking the segments (lengths) and skipping
 * entropy-coded data (stuffed 0xFF 00 and restart markers). Returns the number of SOS found. */
static int find_scans(const bytes *b, size_t *sos, int max, size_t *eoi) {
    int    n = 0;
    size_t i = 2;
    *eoi     = 0;
    while (i + 1 < b->n) {
        if (b->p[i] != 0xFF) {
            i++;
            continue;
        }
        const int m = b->p[i + 1];
        if (m == 0xD9) {
            *eoi = i;
            break;
        }
        if (m == 0xFF || m == 0x00 || (m >= 0xD0 && m <= 0xD7)) {
            i++;
            continue;
        }
        if (i + 3 >= b->n) break;
        const size_t len = (size_t)(b->p[i + 2] << 8 | b->p[i + 3]);
        if (m == 0xDA) {
            if (n < max) sos[n] = i;
            n++;
            size_t j = i + 2 + len;
            while (j + 1 < b->n && !(b->p[j] == 0xFF && b->p[j + 1] != 0 && !(b->p[j + 1] >= 0xD0 && b->p[j + 1] <= 0xD7)))
                j++;
            i = j;
            continue;
        }
        i += 2 + len;
    }
    return n;
}

/* b[0, cut) followed by `tail` (e.g. an EOI marker). */
static bytes splice(const bytes *b, size_t cut, const unsigned char *tail, size_t tail_n) {
    bytes r = {malloc(cut + tail_n + 1), cut + tail_n};
    memcpy(r.p, b->p, cut);
    if (tail_n) memcpy(r.p + cut, tail, tail_n);
    return r;
}

static const unsigned char EOI[2] = {0xFF, 0xD9};

static const char *write_tmp(char *path, size_t cap, const char *name, const bytes *b) {
    snprintf(path, cap, "%s/%s", g_tmp, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        CHECK(b->n == 0 || fwrite(b->p, 1, b->n, f) == b->n);
        fclose(f);
    }
    return path;
}

/* ---------------------------------------------------------------- checks */

/* ck_image_read must give exactly libjpeg's samples (v / 255 in float). */
static void expect_same_pixels(const char *name, const bytes *b) {
    char path[1024];
    write_tmp(path, sizeof path, name, b);
    int            rw = 0, rh = 0, rc = 0;
    unsigned char *ref = reference_decode(b, &rw, &rh, &rc);
    CHECK_MSG(ref != NULL, "%s: libjpeg itself cannot decode the test file", name);
    ck_image  img   = {0};
    int       depth = 0;
    ck_err    err   = {{0}};
    ck_status st    = ck_image_read(path, &img, &depth, &err);
    CHECK_MSG(st == CK_OK, "%s: %s", name, err.msg);
    if (st == CK_OK && ref) {
        CHECK(img.width == rw && img.height == rh && img.channels == rc && depth == 8);
        size_t n = (size_t)rw * rh * rc, bad = 0;
        for (size_t i = 0; i < n && img.width == rw && img.channels == rc; i++)
            if (img.data[i] != (float)ref[i] / 255.0f) bad++;
        CHECK_MSG(bad == 0, "%s: %zu of %zu samples differ from libjpeg's", name, bad, n);
        printf("%-6s %-34s %dx%dx%d, %zu bytes: the same samples as libjpeg\n", bad ? "NOT OK" : "OK", name, rw, rh,
               rc, b->n);
    }
    ck_image_release(&img);
    free(ref);
    unlink(path);
}

/* ck_image_read must refuse the file: CK_STATUS_EFORMAT, no pixels, the path and `needle` in the message. */
static void expect_refused(const char *name, const bytes *b, const char *needle) {
    char path[1024];
    write_tmp(path, sizeof path, name, b);
    ck_image        img   = {0};
    int             depth = 0;
    ck_err          err   = {{0}};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_status st = ck_image_read(path, &img, &depth, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    const int    ok = st == CK_STATUS_EFORMAT && img.data == NULL && strstr(err.msg, path) &&
                   (!needle || strstr(err.msg, needle));
    CHECK_MSG(ok, "%s: status %d, message '%s' (want EFORMAT naming the file%s%s)", name, st, err.msg,
              needle ? " and saying " : "", needle ? needle : "");
    printf("%-6s %-34s refused in %.1f ms: %s\n", ok ? "OK" : "NOT OK", name, ms, err.msg);
    ck_image_release(&img);
    unlink(path);
}

static void test_valid_files(void) {
    struct {
        const char *name;
        enc_opts    o;
    } cases[] = {
        {"jpeg_baseline_rgb.jpg", {77, 45, 3, 0, 0, 0, NULL, 0}},
        {"jpeg_baseline_grey.jpg", {64, 33, 1, 0, 0, 0, NULL, 0}},
        {"jpeg_progressive_rgb.jpg", {77, 45, 3, 0, 1, 0, NULL, 0}},
        {"jpeg_arith_rgb.jpg", {77, 45, 3, 1, 0, 0, NULL, 0}},
        {"jpeg_arith_progressive_rgb.jpg", {77, 45, 3, 1, 1, 0, NULL, 0}},
        {"jpeg_arith_flat_1024.jpg", {1024, 1024, 3, 1, 0, 1, NULL, 0}}, /* a few bytes of scan data */
        {"jpeg_arith_flat_8x8.jpg", {8, 8, 1, 1, 0, 1, NULL, 0}},         /* its scan is empty: valid */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bytes b = encode(&cases[i].o);
        expect_same_pixels(cases[i].name, &b);
        free(b.p);
    }
    /* sequential, one scan per component (non-interleaved) */
    static const jpeg_scan_info per_comp[3] = {{1, {0}, 0, 63, 0, 0}, {1, {1}, 0, 63, 0, 0}, {1, {2}, 0, 63, 0, 0}};
    enc_opts                    o           = {80, 48, 3, 0, 0, 0, per_comp, 3};
    bytes                       b           = encode(&o);
    expect_same_pixels("jpeg_noninterleaved.jpg", &b);
    free(b.p);
}

static void test_missing_data(void) {
    /* an arithmetic-coded header claiming 6000x6000 (36 Mpx, under the pixel limit) with no scan data: libjpeg
     * decodes it "successfully" as 36 Mpx of zeros */
    {
        enc_opts o = {16, 16, 3, 1, 0, 0, NULL, 0};
        bytes    b = encode(&o);
        size_t   sos[4], eoi;
        CHECK(find_scans(&b, sos, 4, &eoi) == 1);
        size_t sos_len = (size_t)(b.p[sos[0] + 2] << 8 | b.p[sos[0] + 3]);
        bytes  h       = splice(&b, sos[0] + 2 + sos_len, EOI, 2);
        for (size_t i = 2; i + 8 < h.n; i++)
            if (h.p[i] == 0xFF && h.p[i + 1] == 0xC9) { /* SOF9: height and width at +5, +7 */
                h.p[i + 5] = 6000 >> 8, h.p[i + 6] = 6000 & 255, h.p[i + 7] = 6000 >> 8, h.p[i + 8] = 6000 & 255;
                break;
            }
        printf("       arithmetic-coded 6000x6000 header with no scan data: %zu bytes\n", h.n);
        expect_refused("jpeg_arith_noscan_6000.jpg", &h, "no entropy-coded data");
        free(h.p), free(b.p);
    }
    /* the same with Huffman coding, at a size that is not exempt */
    {
        enc_opts o = {128, 128, 1, 0, 0, 0, NULL, 0};
        bytes    b = encode(&o);
        size_t   sos[4], eoi;
        CHECK(find_scans(&b, sos, 4, &eoi) == 1);
        size_t sos_len = (size_t)(b.p[sos[0] + 2] << 8 | b.p[sos[0] + 3]);
        bytes  h       = splice(&b, sos[0] + 2 + sos_len, EOI, 2);
        expect_refused("jpeg_huffman_noscan.jpg", &h, "no entropy-coded data");
        free(h.p), free(b.p);
    }
    /* a non-interleaved sequential file whose last component's scan was cut out (EOI put back) */
    {
        static const jpeg_scan_info per_comp[3] = {{1, {0}, 0, 63, 0, 0}, {1, {1}, 0, 63, 0, 0}, {1, {2}, 0, 63, 0, 0}};
        enc_opts                    o           = {80, 48, 3, 0, 0, 0, per_comp, 3};
        bytes                       b           = encode(&o);
        size_t                      sos[4], eoi;
        CHECK(find_scans(&b, sos, 4, &eoi) == 3);
        bytes h = splice(&b, sos[2], EOI, 2);
        CHECK(libjpeg_accepts(&h)); /* libjpeg alone accepts it */
        expect_refused("jpeg_missing_component.jpg", &h, "is in no scan");
        free(h.p), free(b.p);
    }
    /* progressive files cut at a scan boundary and closed with EOI: a valid marker sequence, missing scans
     * (libjpeg shows the blurry early scans without a warning) */
    for (int arith = 0; arith < 2; arith++) {
        enc_opts o = {77, 45, 3, arith, 1, 0, NULL, 0};
        bytes    b = encode(&o);
        size_t   sos[32], eoi;
        int      n = find_scans(&b, sos, 32, &eoi);
        CHECK(n == 10);
        for (int k = 1; k < n && k < 32; k += 4) {
            bytes h = splice(&b, sos[k], EOI, 2);
            char  name[64];
            snprintf(name, sizeof name, "jpeg_prog%s_%d_of_%d_scans.jpg", arith ? "_arith" : "", k, n);
            expect_refused(name, &h, "progressive scans missing");
            free(h.p);
        }
        free(b.p);
    }
}

static void test_truncated(void) {
    for (int prog = 0; prog < 2; prog++) {
        enc_opts o = {77, 45, 3, 0, prog, 0, NULL, 0};
        bytes    b = encode(&o);
        size_t   sos[32], eoi;
        find_scans(&b, sos, 32, &eoi);
        CHECK(eoi == b.n - 2);
        /* in a header segment, right after the first SOS header, in the first scan's data, in the last scan's
         * data, and without the final EOI (or its last byte): every pixel may be there, the file is still cut */
        size_t sos_len = (size_t)(b.p[sos[0] + 2] << 8 | b.p[sos[0] + 3]);
        size_t cuts[]  = {20, sos[0] + 2 + sos_len, sos[0] + 2 + sos_len + 40, b.n - 30, b.n - 2, b.n - 1};
        for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
            bytes h = splice(&b, cuts[i], NULL, 0);
            char  name[64];
            snprintf(name, sizeof name, "jpeg_%s_cut_%zu_of_%zu.jpg", prog ? "prog" : "baseline", cuts[i], b.n);
            expect_refused(name, &h, NULL);
            free(h.p);
        }
        free(b.p);
    }
}

/* More scans than the limit: 3 components x 63 AC coefficients one at a time, each sent in three bit
 * steps, is 570 scans; each progressive scan is a pass over the whole image. */
static void test_scan_limit(void) {
    static jpeg_scan_info s[600];
    int                   n = 0;
    s[n++]                  = (jpeg_scan_info){3, {0, 1, 2}, 0, 0, 0, 0};
    for (int al = 2; al >= 0; al--)
        for (int c = 0; c < 3; c++)
            for (int k = 1; k < 64; k++) s[n++] = (jpeg_scan_info){1, {c}, k, k, al == 2 ? 0 : al + 1, al};
    enc_opts o = {32, 32, 3, 0, 1, 0, s, n};
    o.progressive = 0; /* the script above is the progression */
    bytes  b = encode(&o);
    size_t sos[4], eoi;
    CHECK(find_scans(&b, sos, 4, &eoi) == n && n > 500);
    CHECK(libjpeg_accepts(&b)); /* a valid file */
    expect_refused("jpeg_570_scans.jpg", &b, "more than 500 scans");
    free(b.p);
}

int main(void) {
    const char *t = getenv("CK_TMP");
    snprintf(g_tmp, sizeof g_tmp, "%s", t ? t : "/tmp");
    if (!getenv("CK_VERBOSE")) ck_set_log(quiet_log, NULL, CK_LOG_ERROR);
    test_valid_files();
    test_missing_data();
    test_truncated();
    test_scan_limit();
    return test_summary();
}
#else
int main(void) {
    printf("SKIP: built without libjpeg\n");
    return 77;
}
#endif
