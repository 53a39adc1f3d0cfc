/* Writes the hostile files of the crashers corpus: every damaged or hostile input ckey is known to have
 * met or guarded against, each small enough to be a fuzzing seed.
 *
 *     make_crashers DIR           the small files (tests/crashers/ holds them, committed)
 *     make_crashers --large DIR   the files over 100 KB, not committed: ctest crashers_replay makes them
 *
 * Every file is deterministic (no clock, no randomness), so DIR can be compared with tests/crashers/.
 * Files that fuzzers find are added to tests/crashers/ as they are; this program keeps the known cases
 * reproducible. Formats whose library this build lacks are skipped with a note.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/check.h"
#include "io/image.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#ifdef CK_HAVE_JPEG
#include <jpeglib.h>
#endif
#ifdef CK_HAVE_TIFF
#include <tiffio.h>
#endif

static const char *g_dir;
static int         g_written;

typedef struct buf {
    uint8_t *p;
    size_t   n, cap;
} buf;

static void b_put(buf *b, const void *s, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void b_u8(buf *b, unsigned v) {
    uint8_t x = (uint8_t)v;
    b_put(b, &x, 1);
}
static void b_le(buf *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) b_u8(b, (unsigned)(v >> (8 * i)) & 0xFF);
}
static void b_be(buf *b, uint64_t v, int n) {
    for (int i = n - 1; i >= 0; i--) b_u8(b, (unsigned)(v >> (8 * i)) & 0xFF);
}
static void b_str(buf *b, const char *s) { b_put(b, s, strlen(s)); }

static const char *path_of(const char *name) {
    static char p[4096];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    return p;
}

static void emit(const char *name, const uint8_t *p, size_t n) {
    FILE *f = fopen(path_of(name), "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
        fprintf(stderr, "make_crashers: cannot write %s\n", path_of(name));
        exit(1);
    }
    printf("%-40s %8zu bytes\n", name, n);
    g_written++;
}

static buf slurp(const char *path) {
    buf   b = {0};
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "make_crashers: cannot read %s\n", path);
        exit(1);
    }
    uint8_t tmp[65536];
    size_t  k;
    while ((k = fread(tmp, 1, sizeof tmp, f)) > 0) b_put(&b, tmp, k);
    fclose(f);
    return b;
}

/* A file written by one of ckey's writers into DIR under a temporary name, read back and removed. */
static buf written(ck_status (*write)(const char *, const ck_image *, ck_err *), const ck_image *img) {
    ck_err err = {{0}};
    if (write(path_of(".make_crashers.tmp"), img, &err) != CK_OK) {
        fprintf(stderr, "make_crashers: %s\n", err.msg);
        exit(1);
    }
    buf b = slurp(path_of(".make_crashers.tmp"));
    remove(path_of(".make_crashers.tmp"));
    return b;
}

static ck_image pattern_image(int w, int h, int c) {
    ck_image img = {0};
    img.width = w, img.height = h, img.channels = c;
    img.data = malloc(sizeof(float) * (size_t)w * h * c);
    for (size_t i = 0; i < (size_t)w * h * c; i++) img.data[i] = (float)((i * 2654435761u) % 1000u) / 999.0f;
    return img;
}

static uint32_t rd32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t crc32_of(const uint8_t *p, size_t n) { return (uint32_t)crc32(0L, p, (uInt)n); }

/* ---------------------------------------------------------------- PNG */

static void png_chunk(buf *b, const char *type, const uint8_t *data, size_t n) {
    b_be(b, n, 4);
    size_t at = b->n;
    b_str(b, type);
    b_put(b, data, n);
    b_be(b, crc32_of(b->p + at, n + 4), 4);
}

static void png_files(void) {
    /* 8192 x 8192, 1 bit per pixel, every row zero: a valid file of ~8 KB that decodes to 67 Mpx */
    const size_t row = 1 + 8192 / 8, raw_n = row * 8192;
    uint8_t     *raw = calloc(raw_n, 1);
    uLongf       zn  = compressBound((uLong)raw_n);
    uint8_t     *z   = malloc(zn);
    compress2(z, &zn, raw, (uLong)raw_n, 9);
    const uint8_t ihdr[13] = {0, 0, 0x20, 0, 0, 0, 0x20, 0, 1, 0, 0, 0, 0};
    buf           b        = {0};
    b_put(&b, "\x89PNG\r\n\x1a\n", 8);
    png_chunk(&b, "IHDR", ihdr, 13);
    png_chunk(&b, "IDAT", z, zn);
    png_chunk(&b, "IEND", NULL, 0);
    emit("png_1bit_8192x8192.png", b.p, b.n);
    free(raw), free(z), free(b.p);

    ck_image img = pattern_image(40, 30, 4);
    b            = written(ck_image_write_png8, &img);
    emit("png8_truncated_idat.png", b.p, b.n / 2);
    /* IHDR width 65536 (above CK_IMAGE_MAX_DIM), CRC left stale */
    b.p[16] = 0, b.p[17] = 1, b.p[18] = 0, b.p[19] = 0;
    emit("png_width_65536.png", b.p, b.n);
    free(b.p);
    b = written(ck_image_write_png16, &img);
    emit("png16_truncated_iend.png", b.p, b.n - 6);
    free(b.p);
    free(img.data);
}

/* ---------------------------------------------------------------- EXR */

static ck_status write_exr_pxr24(const char *p, const ck_image *img, ck_err *err) {
    return ck_image_write_exr(p, img, CK_EXR_PXR24, err);
}
static ck_status write_exr_zip(const char *p, const ck_image *img, ck_err *err) {
    return ck_image_write_exr(p, img, CK_EXR_ZIP, err);
}

static void exr_files(void) {
    if (!ck_image_format_supported(CK_IMAGE_EXR)) {
        printf("(EXR not built: no EXR files)\n");
        return;
    }
    ck_image img = pattern_image(40, 30, 4);
    buf      b   = written(write_exr_pxr24, &img);
    emit("exr_pxr24_truncated.exr", b.p, 2 * b.n / 3);
    for (size_t i = 8; i + 34 < b.n; i++)
        if (!memcmp(b.p + i, "dataWindow\0box2i\0", 17)) { /* xmax of the data window: 40000 */
            uint8_t *xmax = b.p + i + 17 + 4 + 8;
            xmax[0] = 0x40, xmax[1] = 0x9c, xmax[2] = 0, xmax[3] = 0;
            emit("exr_width_40001.exr", b.p, b.n);
            break;
        }
    free(b.p);
    b = written(write_exr_zip, &img);
    emit("exr_zip_truncated_offsets.exr", b.p, b.n / 3);
    free(b.p);
    free(img.data);
}

/* ---------------------------------------------------------------- JPEG */

#ifdef CK_HAVE_JPEG
static buf jpeg_encode(int w, int h, int arith, int progressive, const jpeg_scan_info *scans, int n_scans) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr       e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    unsigned char *out = NULL;
    unsigned long  n   = 0;
    jpeg_mem_dest(&c, &out, &n);
    c.image_width = (JDIMENSION)w, c.image_height = (JDIMENSION)h;
    c.input_components = 3, c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    c.arith_code = arith ? TRUE : FALSE;
    if (progressive) jpeg_simple_progression(&c);
    if (scans) c.scan_info = scans, c.num_scans = n_scans;
    jpeg_start_compress(&c, TRUE);
    unsigned char *row = malloc((size_t)w * 3);
    while (c.next_scanline < c.image_height) {
        for (int x = 0; x < w * 3; x++) row[x] = (unsigned char)((x * 5 + (int)c.next_scanline * 3) & 255);
        JSAMPROW r = row;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    buf b = {0};
    b_put(&b, out, n);
    free(out);
    return b;
}

/* Offset of the k-th SOS marker (0-based), by segment lengths and entropy-data skipping; 0 if none. */
static size_t jpeg_sos(const buf *b, int k) {
    for (size_t i = 2; i + 3 < b->n;) {
        if (b->p[i] != 0xFF) {
            i++;
            continue;
        }
        const int m = b->p[i + 1];
        if (m == 0xFF || m == 0x00 || (m >= 0xD0 && m <= 0xD7)) {
            i++;
            continue;
        }
        if (m == 0xD9) break;
        if (m == 0xDA && k-- == 0) return i;
        size_t next = i + 2 + (size_t)(b->p[i + 2] << 8 | b->p[i + 3]);
        if (m == 0xDA)
            while (next + 1 < b->n && !(b->p[next] == 0xFF && b->p[next + 1] != 0 &&
                                       !(b->p[next + 1] >= 0xD0 && b->p[next + 1] <= 0xD7)))
                next++;
        i = next;
    }
    return 0;
}

static void jpeg_files(void) {
    /* arithmetic-coded header claiming 6000 x 6000 with no scan data (libjpeg "decodes" 36 Mpx of zeros) */
    buf    b   = jpeg_encode(16, 16, 1, 0, NULL, 0);
    size_t sos = jpeg_sos(&b, 0), sos_end = sos + 2 + (size_t)(b.p[sos + 2] << 8 | b.p[sos + 3]);
    buf    h   = {0};
    b_put(&h, b.p, sos_end);
    b_put(&h, "\xff\xd9", 2);
    for (size_t i = 2; i + 8 < h.n; i++)
        if (h.p[i] == 0xFF && h.p[i + 1] == 0xC9) {
            h.p[i + 5] = 6000 >> 8, h.p[i + 6] = 6000 & 255, h.p[i + 7] = 6000 >> 8, h.p[i + 8] = 6000 & 255;
            break;
        }
    emit("jpeg_arith_no_scan_data_6000x6000.jpg", h.p, h.n);
    free(h.p), free(b.p);

    b = jpeg_encode(77, 45, 0, 0, NULL, 0);
    emit("jpeg_baseline_cut_in_scan.jpg", b.p, b.n / 2);
    emit("jpeg_baseline_no_eoi.jpg", b.p, b.n - 2);
    free(b.p);

    /* progressive, cut before its 4th scan and closed with EOI: a valid marker sequence, scans missing */
    b   = jpeg_encode(77, 45, 0, 1, NULL, 0);
    h   = (buf){0};
    sos = jpeg_sos(&b, 3);
    b_put(&h, b.p, sos), b_put(&h, "\xff\xd9", 2);
    emit("jpeg_progressive_3_of_10_scans.jpg", h.p, h.n);
    free(h.p), free(b.p);

    /* one scan per component, the last one cut out */
    static const jpeg_scan_info per_comp[3] = {{1, {0}, 0, 63, 0, 0}, {1, {1}, 0, 63, 0, 0}, {1, {2}, 0, 63, 0, 0}};
    b                                       = jpeg_encode(80, 48, 0, 0, per_comp, 3);
    h                                       = (buf){0};
    b_put(&h, b.p, jpeg_sos(&b, 2)), b_put(&h, "\xff\xd9", 2);
    emit("jpeg_component_without_scan.jpg", h.p, h.n);
    free(h.p), free(b.p);

    /* 570 scans: each AC coefficient of each component alone, in three bit steps */
    static jpeg_scan_info s[600];
    int                   n = 0;
    s[n++]                  = (jpeg_scan_info){3, {0, 1, 2}, 0, 0, 0, 0};
    for (int al = 2; al >= 0; al--)
        for (int c = 0; c < 3; c++)
            for (int k = 1; k < 64; k++) s[n++] = (jpeg_scan_info){1, {c}, k, k, al == 2 ? 0 : al + 1, al};
    b = jpeg_encode(32, 32, 0, 0, s, n);
    emit("jpeg_570_scans.jpg", b.p, b.n);
    free(b.p);

    /* SOF0 of 30000 x 30000 grey (900 Mpx), an SOS and EOI */
    b = (buf){0};
    b_put(&b, "\xff\xd8\xff\xdb\x00\x43\x00", 7);
    for (int i = 0; i < 64; i++) b_u8(&b, 1);
    b_put(&b, "\xff\xc0\x00\x0b\x08\x75\x30\x75\x30\x01\x01\x11\x00", 13);
    b_put(&b, "\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00\xff\xd9", 12);
    emit("jpeg_30000x30000_header.jpg", b.p, b.n);
    free(b.p);
}
#else
static void jpeg_files(void) { printf("(JPEG not built: no JPEG files)\n"); }
#endif

/* ---------------------------------------------------------------- TIFF */

#ifdef CK_HAVE_TIFF
static void tiff_files(void) {
    const char *tmp = path_of(".make_crashers.tif");
    TIFF       *t   = TIFFOpen(tmp, "w");
    if (!t) exit(1);
    const int W = 64, H = 48;
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, W), TIFFSetField(t, TIFFTAG_IMAGELENGTH, H);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 3), TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_LZW), TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG), TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 8);
    uint8_t row[64 * 3];
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W * 3; x++) row[x] = (uint8_t)(x * 7 + y * 13);
        TIFFWriteScanline(t, row, (uint32_t)y, 0);
    }
    TIFFClose(t);
    buf b = slurp(tmp);
    remove(tmp);
    emit("tiff_lzw_truncated.tif", b.p, b.n / 2);
    /* the whole file, its strip byte counts (tag 279, an array of LONGs) claiming ~2 GB each */
    const uint32_t ifd = rd32le(b.p + 4);
    const unsigned n_entries = b.p[ifd] | b.p[ifd + 1] << 8;
    for (unsigned i = 0; i < n_entries; i++) {
        const uint8_t *e = b.p + ifd + 2 + 12 * i;
        if ((e[0] | e[1] << 8) != 279 || (e[2] | e[3] << 8) != 4) continue;
        const uint32_t count = rd32le(e + 4), at = count > 1 ? rd32le(e + 8) : ifd + 2 + 12 * i + 8;
        for (uint32_t k = 0; k < count; k++) memcpy(b.p + at + 4 * k, "\x00\x00\xff\x7f", 4);
    }
    emit("tiff_strip_counts_past_eof.tif", b.p, b.n);
    free(b.p);

    /* a little-endian header and one IFD claiming 60000 x 60000 8-bit grey in one 16-byte strip */
    b = (buf){0};
    b_put(&b, "II*\0", 4), b_le(&b, 8, 4);
    static const uint16_t tags[][2] = {{256, 4}, {257, 4}, {258, 3}, {259, 3}, {262, 3}, {273, 4}, {277, 3},
                                       {278, 4}, {279, 4}};
    const uint32_t        vals[]    = {60000, 60000, 8, 1, 1, 8 + 2 + 9 * 12 + 4, 1, 60000, 16};
    b_le(&b, 9, 2);
    for (int i = 0; i < 9; i++) {
        b_le(&b, tags[i][0], 2), b_le(&b, tags[i][1], 2), b_le(&b, 1, 4);
        b_le(&b, vals[i], tags[i][1] == 3 ? 2 : 4);
        if (tags[i][1] == 3) b_le(&b, 0, 2);
    }
    b_le(&b, 0, 4);
    for (int i = 0; i < 16; i++) b_u8(&b, 0);
    emit("tiff_60000x60000_header.tif", b.p, b.n);
    free(b.p);
}
#else
static void tiff_files(void) { printf("(TIFF not built: no TIFF files)\n"); }
#endif

/* ---------------------------------------------------------------- DPX */

/* A big-endian DPX header (SMPTE 268M: generic, image, film and television headers, 2048 bytes) for one RGB
 * element of bits-per-sample codes, packed into 32-bit words (method A), image data at byte 2048. */
static buf dpx_header(uint32_t w, uint32_t h, int bits, uint32_t file_size) {
    buf b = {0};
    for (int i = 0; i < 2048; i++) b_u8(&b, 0);
    uint8_t *p = b.p;
    memcpy(p, "SDPX", 4);
    p[4] = 0, p[5] = 0, p[6] = 0x08, p[7] = 0; /* image data offset 2048 */
    memcpy(p + 8, "V2.0", 4);
    for (int i = 0; i < 4; i++) p[16 + i] = (uint8_t)(file_size >> (24 - 8 * i));
    p[27] = 0x80, p[26] = 0x06;                /* generic header size 1664 */
    p[30] = 0x01, p[31] = 0x80;                /* industry header size 384 */
    p[771] = 1;                                /* one image element */
    for (int i = 0; i < 4; i++) p[772 + i] = (uint8_t)(w >> (24 - 8 * i)), p[776 + i] = (uint8_t)(h >> (24 - 8 * i));
    p[800] = 50, p[801] = 2, p[802] = 2;       /* RGB, linear, linear */
    p[803] = (uint8_t)bits;
    p[805] = 1;                                /* packing: method A */
    p[810] = 0x08;                             /* element data offset 2048 */
    memset(p + 1920, 0xFF, 4);                 /* no timecode */
    return b;
}

static void dpx_files(void) {
    /* 60000 x 60000 10-bit RGB (3.6 Gpx) over 16 bytes of data */
    buf b = dpx_header(60000, 60000, 10, 2048 + 16);
    for (int i = 0; i < 16; i++) b_u8(&b, 0);
    emit("dpx_60000x60000_header.dpx", b.p, b.n);
    free(b.p);
    /* 64 x 48 10-bit RGB (one 32-bit word per pixel): the file stops halfway through the pixels */
    b = dpx_header(64, 48, 10, 2048 + 64 * 48 * 4);
    for (int i = 0; i < 64 * 24 * 4; i++) b_u8(&b, (unsigned)(i * 37));
    emit("dpx_10bit_truncated.dpx", b.p, b.n);
    free(b.p);
    /* the image data offset a gigabyte past the header */
    b       = dpx_header(64, 48, 10, 2048 + 64 * 48 * 4);
    b.p[4]  = 0x40, b.p[5] = 0, b.p[6] = 0, b.p[7] = 0;
    for (int i = 0; i < 64 * 48 * 4; i++) b_u8(&b, (unsigned)i);
    emit("dpx_data_offset_1GB.dpx", b.p, b.n);
    free(b.p);
}

/* ---------------------------------------------------------------- .npy */

static void npy_files(void) {
    /* a header claiming 65536 x 65536 float32 (16 GB) over a few bytes of data */
    const char *hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536), }";
    buf         b   = {0};
    b_put(&b, "\x93NUMPY\x01\x00", 8);
    size_t len = strlen(hdr), pad = (64 - (10 + len + 1) % 64) % 64;
    b_le(&b, len + pad + 1, 2);
    b_str(&b, hdr);
    for (size_t i = 0; i < pad; i++) b_u8(&b, ' ');
    b_u8(&b, '\n');
    b_le(&b, 0, 8);
    emit("npy_claims_16GB.npy", b.p, b.n);
    free(b.p);
}

/* ---------------------------------------------------------------- checkpoints */

typedef struct rec {
    const char    *name;
    const uint8_t *data;
    size_t         n;
} rec;

/* A stored zip in torch.save's layout: records aligned to 64 bytes (extra field 0x4246), central directory,
 * end record. */
static buf build_zip(const rec *r, int n) {
    buf z = {0}, cd = {0};
    for (int i = 0; i < n; i++) {
        size_t   nl = strlen(r[i].name), off = z.n;
        size_t   pad = (64 - (off + 30 + nl + 4) % 64) % 64;
        uint32_t crc = crc32_of(r[i].data, r[i].n);
        b_le(&z, 0x04034b50, 4), b_le(&z, 20, 2), b_le(&z, 0, 2), b_le(&z, 0, 2), b_le(&z, 0, 4);
        b_le(&z, crc, 4), b_le(&z, r[i].n, 4), b_le(&z, r[i].n, 4), b_le(&z, nl, 2), b_le(&z, 4 + pad, 2);
        b_str(&z, r[i].name);
        b_le(&z, 0x4246, 2), b_le(&z, pad, 2);
        for (size_t k = 0; k < pad; k++) b_u8(&z, 'Z');
        b_put(&z, r[i].data, r[i].n);
        b_le(&cd, 0x02014b50, 4), b_le(&cd, 20, 2), b_le(&cd, 20, 2), b_le(&cd, 0, 2), b_le(&cd, 0, 2);
        b_le(&cd, 0, 4), b_le(&cd, crc, 4), b_le(&cd, r[i].n, 4), b_le(&cd, r[i].n, 4), b_le(&cd, nl, 2);
        b_le(&cd, 0, 2), b_le(&cd, 0, 2), b_le(&cd, 0, 2), b_le(&cd, 0, 2), b_le(&cd, 0, 4), b_le(&cd, off, 4);
        b_str(&cd, r[i].name);
    }
    size_t cd_off = z.n;
    b_put(&z, cd.p, cd.n);
    b_le(&z, 0x06054b50, 4), b_le(&z, 0, 4), b_le(&z, (unsigned)n, 2), b_le(&z, (unsigned)n, 2);
    b_le(&z, cd.n, 4), b_le(&z, cd_off, 4), b_le(&z, 0, 2);
    free(cd.p);
    return z;
}

/* pickle protocol 2, as torch.save writes it */
static void pk_str(buf *b, const char *s) { b_u8(b, 'X'), b_le(b, strlen(s), 4), b_str(b, s); }
static void pk_int(buf *b, int64_t v) {
    if (v >= 0 && v < 256) b_u8(b, 'K'), b_u8(b, (unsigned)v);
    else b_u8(b, 0x8a), b_u8(b, 8), b_le(b, (uint64_t)v, 8);
}
static void pk_global(buf *b, const char *mod, const char *name) {
    b_u8(b, 'c'), b_str(b, mod), b_u8(b, '\n'), b_str(b, name), b_u8(b, '\n');
}
/* name -> _rebuild_tensor_v2(('storage', torch.FloatStorage, key, 'cpu', numel), 0, (numel,), (1,), False,
 * OrderedDict()) */
static void pk_tensor(buf *b, const char *name, const char *key, int64_t numel) {
    pk_str(b, name);
    pk_global(b, "torch._utils", "_rebuild_tensor_v2");
    b_u8(b, '('), b_u8(b, '(');
    pk_str(b, "storage"), pk_global(b, "torch", "FloatStorage"), pk_str(b, key), pk_str(b, "cpu"), pk_int(b, numel);
    b_u8(b, 't'), b_u8(b, 'Q');
    pk_int(b, 0);
    b_u8(b, '('), pk_int(b, numel), b_u8(b, 't');
    b_u8(b, '('), pk_int(b, 1), b_u8(b, 't');
    b_u8(b, 0x89);
    pk_global(b, "collections", "OrderedDict"), b_u8(b, ')'), b_u8(b, 'R');
    b_u8(b, 't'), b_u8(b, 'R');
}

static const float STORE[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

/* {names[i]: a 16-float tensor on storage "0"} in archive folder "m/" */
static buf pth_of(const char *const *names, int n) {
    buf p = {0};
    b_u8(&p, 0x80), b_u8(&p, 2), b_u8(&p, '}'), b_u8(&p, '(');
    for (int i = 0; i < n; i++) pk_tensor(&p, names[i], "0", 16);
    b_u8(&p, 'u'), b_u8(&p, '.');
    rec r[] = {{"m/data.pkl", p.p, p.n},
               {"m/byteorder", (const uint8_t *)"little", 6},
               {"m/data/0", (const uint8_t *)STORE, sizeof STORE},
               {"m/version", (const uint8_t *)"3\n", 2}};
    buf z   = build_zip(r, 4);
    free(p.p);
    return z;
}

static buf safetensors_of(const char *json, size_t data_n) {
    buf b = {0};
    b_le(&b, strlen(json), 8);
    b_str(&b, json);
    for (size_t i = 0; i < data_n; i++) b_u8(&b, (unsigned)i);
    return b;
}

static void checkpoint_files(void) {
    const char *twice[] = {"_orig_mod._orig_mod.encoder.w"};
    buf         z       = pth_of(twice, 1);
    emit("pth_orig_mod_prefix_twice.pth", z.p, z.n);
    free(z.p);

    /* the first record claims 40 more bytes than it holds: its data runs into the next local header */
    const char *one[] = {"w"};
    z                 = pth_of(one, 1);
    for (size_t k = 0; k + 46 <= z.n; k++)
        if (z.p[k] == 0x50 && z.p[k + 1] == 0x4b && z.p[k + 2] == 1 && z.p[k + 3] == 2) {
            uint32_t sz = (uint32_t)(z.p[k + 24] | z.p[k + 25] << 8 | z.p[k + 26] << 16 | (uint32_t)z.p[k + 27] << 24) + 40;
            for (int i = 0; i < 4; i++) z.p[k + 20 + i] = z.p[k + 24 + i] = (uint8_t)(sz >> (8 * i));
            break;
        }
    emit("pth_zip_records_overlap.pth", z.p, z.n);
    free(z.p);

    /* a valid archive cut inside its tensor record (the static form of a file truncated while in use) */
    z = pth_of(one, 1);
    for (size_t k = 0; k + 8 <= z.n; k++)
        if (!memcmp(z.p + k, "m/data/0", 8) && z.p[k - 30] == 0x50) { /* the local header's name */
            emit("pth_truncated_in_tensor.pth", z.p, k + 8 + 4 + 20);
            break;
        }
    free(z.p);

    buf s = safetensors_of("{\"w\":{\"dtype\":\"F32\",\"shape\":[1024],\"data_offsets\":[0,4096]}}", 100);
    emit("safetensors_truncated_data.safetensors", s.p, s.n);
    free(s.p);
    s = safetensors_of("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0);
    emit("safetensors_duplicate_metadata.safetensors", s.p, s.n);
    free(s.p);
    /* a header length of 2^63: not a plausible header */
    s = (buf){0};
    b_le(&s, (uint64_t)1 << 63, 8), b_str(&s, "{}");
    emit("safetensors_header_length_2e63.safetensors", s.p, s.n);
    free(s.p);

    /* a data.pkl of 50,000 nested MARKs and empty lists (the reader's stack bound) */
    buf p = {0};
    b_u8(&p, 0x80), b_u8(&p, 2);
    for (int i = 0; i < 25000; i++) b_u8(&p, '('), b_u8(&p, ']');
    b_u8(&p, '.');
    emit("pickle_50000_marks.pkl", p.p, p.n);
    free(p.p);
}

/* ---------------------------------------------------------------- large files (generated at test time) */

/* `ckey serve`'s request targets (fuzz_serve_request.c: the target, a newline, a relative path): escapes of the
 * served folder and values the query parser must refuse */
static void serve_files(void) {
    static const struct {
        const char *name, *text;
    } f[] = {
        {"serve_path_dotdot_encoded.txt", "/files/0/%2e%2e/%2E%2E/etc/passwd?shot=0\n../../etc/passwd"},
        {"serve_path_absolute_encoded.txt", "/files/0/%2fetc%2fpasswd\n/etc/passwd"},
        {"serve_path_symlink_out.txt", "/files/0/link/etc/passwd\nlink/etc/passwd"},
        {"serve_path_nul.txt", "/files/0/Plate/0000.png%00.txt\nPlate/0000.png"},
        {"serve_path_hidden.txt", "/files/0/.hidden\nPlate/../.hidden"},
        {"serve_escape_truncated.txt", "/api/key?frame=1&despill=%4\nPlate/%"},
        {"serve_query_numbers.txt",
         "/api/key?size=99999999999999999999999&despill=1e999&refiner_scale=-nan&tile=-32&overlap=0x10\n"},
        {"serve_query_overlap_tile.txt", "/api/key?tile=64&overlap=64&precision=fp16&despeckle=01\n"},
        {"serve_query_repeated.txt", "/api/key?frame=1&frame=2&=3&&&token=x&token=y\n"},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) emit(f[i].name, (const uint8_t *)f[i].text, strlen(f[i].text));
    buf many = {0};
    b_str(&many, "/api/key?");
    for (int i = 0; i < 40; i++) {
        char kv[32];
        snprintf(kv, sizeof kv, "k%d=%d&", i, i);
        b_str(&many, kv);
    }
    b_str(&many, "\nPlate/0000.png");
    emit("serve_query_40_params.txt", many.p, many.n);
    free(many.p);
}

static void large_files(void) {
    /* 100,000 distinct metadata keys: the pairwise duplicate check took 95 s on this header */
    buf j = {0};
    b_str(&j, "{\"__metadata__\":{");
    for (int i = 0; i < 100000; i++) {
        char kv[64];
        snprintf(kv, sizeof kv, "%s\"key%06d\":\"v\"", i ? "," : "", (i * 7919) % 100000);
        b_str(&j, kv);
    }
    b_str(&j, "},\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}");
    while ((8 + j.n) % 8) b_u8(&j, ' '); /* the data section 8-byte aligned: a valid file */
    b_u8(&j, 0);
    buf s = safetensors_of((const char *)j.p, 8);
    emit("safetensors_100000_metadata_keys.safetensors", s.p, s.n);
    free(s.p), free(j.p);
}

int main(int argc, char **argv) {
    const int large = argc == 3 && !strcmp(argv[1], "--large");
    if (argc != 2 + large) {
        fprintf(stderr, "usage: %s [--large] DIR\n", argv[0]);
        return 2;
    }
    g_dir = argv[1 + large];
    if (large) {
        large_files();
    } else {
        png_files();
        exr_files();
        jpeg_files();
        tiff_files();
        dpx_files();
        npy_files();
        checkpoint_files();
        serve_files();
    }
    printf("%d files in %s\n", g_written, g_dir);
    return 0;
}
