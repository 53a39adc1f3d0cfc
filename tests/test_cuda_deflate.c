/* Device deflate (ext.deflate, codec/cuda/deflate.cu): zlib streams of byte segments, checked with zlib's
 * own inflate.
 *
 * Segments: all zeros, one repeated non-zero byte, runs of 0x00 / 0xFF with short literal stretches, the
 * PXR24 transform of smooth half-float ramps (with and without grain), uniform random bytes; lengths
 * 1, 2, 3, 4, 7, 21, 22, 257..260, odd ones, the sub-block size (66,048) and its neighbours, up to the
 * 1 MiB maximum, back to back so that runs continue from one segment into the next. Then a 4K frame's
 * passes as the writer chunks them (FG RGB, Matte, Processed RGBA: 405 chunks of 16 scanlines, 133 MB).
 *
 * Pass rule: every stream reported (dst_bytes > 0) is shorter than its segment and inflates to exactly
 * its bytes; random segments report 0; structured segments of 1 KiB and more compress. A second run over
 * a differently filled dst gives the same bytes. The output is placed at every alignment (dst offset by
 * 0..3 bytes, a first segment offset), and dst bytes outside the segments and the source stay as they
 * were. Sizes against zlib's compress2 level 1 and the device time are printed for information only.
 * Without a CUDA device it prints "SKIP: ..." and exits 0. */
#include "ops/backend.h"
#include "core/tensor.h"
#include "harness.h"
#include "cuda_test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define GUARD 256
#define FILL_A 0xA5
#define FILL_B 0x3C

enum { K_ZEROS, K_SEVENS, K_RUNS, K_RAMP, K_GRAIN, K_RANDOM, K_COUNT };
static const char *const k_names[K_COUNT] = {"zeros", "sevens", "runs", "pxr24-ramp", "pxr24-grain", "random"};

static uint32_t g_rng = 2463534242u;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 17, g_rng ^= g_rng << 5;
    return g_rng;
}

/* PXR24 bytes of `rows` scanlines of a (rows, w, C) half image: per row, per file channel (order[k]),
 * each value minus the previous one of the row (mod 2^16), high bytes then low bytes. */
static void pxr24(uint8_t *out, const uint16_t *half, int w, int rows, int C, const int *order) {
    for (int y = 0; y < rows; y++)
        for (int k = 0; k < C; k++) {
            uint8_t *hi = out + ((size_t)y * C + k) * 2 * w, *lo = hi + w;
            unsigned prev = 0;
            for (int x = 0; x < w; x++) {
                const unsigned v = half[((size_t)y * w + x) * C + order[k]], d = (v - prev) & 0xffffu;
                prev = v, hi[x] = (uint8_t)(d >> 8), lo[x] = (uint8_t)d;
            }
        }
}

/* Hash noise in [-1, 1). */
static float grain(uint32_t x, uint32_t y, uint32_t c) {
    uint32_t h = x * 374761393u + y * 668265263u + c * 2246822519u;
    h = (h ^ (h >> 13)) * 1274126177u;
    return (float)((h ^ (h >> 16)) & 0xffff) / 32768.0f - 1.0f;
}

/* L bytes of a kind; the PXR24 kinds transform an RGB image 1000 pixels wide, cut to L. */
static void synth(uint8_t *p, int64_t L, int kind, int seed) {
    if (kind == K_RAMP || kind == K_GRAIN) {
        const int      w = 1000, C = 3, order[3] = {2, 1, 0};
        const int      rows = (int)((L + 2 * C * w - 1) / (2 * C * w));
        uint16_t      *half = malloc(sizeof(uint16_t) * (size_t)rows * w * C);
        uint8_t       *tmp  = malloc((size_t)rows * w * C * 2);
        CK_ASSERT(half && tmp);
        for (int y = 0; y < rows; y++)
            for (int x = 0; x < w; x++)
                for (int c = 0; c < C; c++) {
                    float v = 0.45f + 0.35f * sinf(0.004f * x + 0.007f * y + 0.9f * c + seed);
                    if (kind == K_GRAIN) v += 0.01f * grain((uint32_t)x, (uint32_t)y, (uint32_t)(c + 3 * seed));
                    half[((size_t)y * w + x) * C + c] = ck_f32_to_f16(v);
                }
        pxr24(tmp, half, w, rows, C, order);
        memcpy(p, tmp, (size_t)L);
        free(half), free(tmp);
        return;
    }
    for (int64_t j = 0; j < L; j++) {
        switch (kind) {
        case K_ZEROS: p[j] = 0; break;
        case K_SEVENS: p[j] = 7; break;
        case K_RUNS: {
            const int64_t b = (j + seed * 131) / 300;
            p[j] = b % 3 == 0 ? 0x00 : (b % 3 == 1 ? 0xff : (uint8_t)(rnd() & 3));
            break;
        }
        default: p[j] = (uint8_t)rnd(); break;
        }
    }
}

/* Segments back to back, segment i at off[i] (off[0] ≥ 0: bytes before it belong to no segment). */
typedef struct batch {
    int      n;
    int64_t *off;  /* (n + 1) */
    uint8_t *data; /* off[n] bytes */
    int     *kind; /* (n) expectation: K_*, or -1 for "either" */
} batch;

static void batch_free(batch *b) { free(b->off), free(b->data), free(b->kind); }

/* One device run: dst placed `dalign` bytes past an allocation's start and filled with `fill`. Returns
 * 1 when dst outside the segments and src are unchanged; *ms = device milliseconds. */
static int device_run(ck_backend *be, const batch *b, int dalign, int fill, uint8_t *dst, int32_t *bytes,
                      float *ms) {
    const int     n     = b->n;
    const int64_t end   = b->off[n], total = end - b->off[0];
    const size_t  dsize = (size_t)dalign + (size_t)end + GUARD;
    uint8_t      *d_src = be->alloc(be, (size_t)end), *d_dst = be->alloc(be, dsize);
    int64_t      *d_off = be->alloc(be, sizeof(int64_t) * (n + 1));
    int32_t      *d_bytes = be->alloc(be, sizeof(int32_t) * n);
    const size_t  sbytes  = be->ext.deflate_scratch_bytes(n, total);
    void         *d_scr   = be->alloc(be, sbytes);
    uint8_t      *host    = malloc(dsize > (size_t)end ? dsize : (size_t)end);
    CK_ASSERT(d_src && d_dst && d_off && d_bytes && d_scr && host);
    be->upload(be, d_src, b->data, (size_t)end);
    be->upload(be, d_off, b->off, sizeof(int64_t) * (n + 1));
    memset(host, fill, dsize);
    be->upload(be, d_dst, host, dsize);
    for (int i = 0; i < n; i++) bytes[i] = -1;
    be->upload(be, d_bytes, bytes, sizeof(int32_t) * n);

    const ck_deflate_args a = {d_src, d_off, n, d_dst + dalign, d_bytes, d_scr};
    if (be->ext.timer_mark) be->ext.timer_mark(be, 0);
    be->ext.deflate(be, &a);
    if (be->ext.timer_mark) be->ext.timer_mark(be, 1);
    *ms = be->ext.timer_elapsed_ms ? be->ext.timer_elapsed_ms(be) : 0.0f;

    be->download(be, host, d_dst, dsize);
    be->download(be, bytes, d_bytes, sizeof(int32_t) * n);
    be->synchronize(be);
    memcpy(dst, host + dalign, (size_t)end);
    int ok = 1;
    for (size_t j = 0; j < (size_t)dalign + (size_t)b->off[0]; j++) ok &= host[j] == fill;
    for (size_t j = (size_t)dalign + (size_t)end; j < dsize; j++) ok &= host[j] == fill;
    be->download(be, host, d_src, (size_t)end);
    be->synchronize(be);
    ok &= memcmp(host, b->data, (size_t)end) == 0;
    free(host);
    be->free(be, d_src), be->free(be, d_dst), be->free(be, d_off), be->free(be, d_bytes), be->free(be, d_scr);
    return ok;
}

/* Checks the streams of one run; returns the bytes as stored (stream, or the raw segment). */
static int64_t verify(const char *label, const batch *b, const uint8_t *dst, const int32_t *bytes) {
    int64_t stored = 0;
    int     bad = 0, wrong_keep = 0;
    size_t  cap = 0;
    for (int i = 0; i < b->n; i++) cap = (size_t)(b->off[i + 1] - b->off[i]) > cap ? (size_t)(b->off[i + 1] - b->off[i]) : cap;
    uint8_t *back = malloc(cap + 16);
    CK_ASSERT(back);
    for (int i = 0; i < b->n; i++) {
        const int64_t  L = b->off[i + 1] - b->off[i];
        const uint8_t *seg = b->data + b->off[i];
        const int32_t  got = bytes[i];
        stored += got > 0 ? got : L;
        if (got < 0 || got >= L) {
            if (!bad++) printf("       %s: segment %d (%lld bytes): dst_bytes %d\n", label, i, (long long)L, got);
            continue;
        }
        const int k = b->kind[i];
        if ((k == K_RANDOM && got != 0) || (k >= 0 && k != K_RANDOM && L >= 1024 && got == 0)) {
            if (!wrong_keep++)
                printf("       %s: segment %d (%s, %lld bytes): dst_bytes %d\n", label, i, k >= 0 ? k_names[k] : "?",
                       (long long)L, got);
        }
        if (got == 0) continue;
        uLongf    out = (uLongf)(cap + 16);
        const int zr  = uncompress(back, &out, dst + b->off[i], (uLong)got);
        if (zr != Z_OK || out != (uLongf)L || memcmp(back, seg, (size_t)L) != 0) {
            if (!bad++)
                printf("       %s: segment %d (%lld bytes, stream %d): inflate %d, %lu bytes%s\n", label, i, (long long)L,
                       got, zr, (unsigned long)out, zr == Z_OK && out == (uLongf)L ? ", content differs" : "");
        }
    }
    free(back);
    CHECK_MSG(bad == 0, "%s: %d segments with a wrong length or a stream that does not inflate to the segment", label, bad);
    CHECK_MSG(wrong_keep == 0, "%s: %d segments kept / stored against expectation", label, wrong_keep);
    return stored;
}

/* zlib level 1 of every segment (stored raw when not shorter), as the host writer's fallback rule. */
static int64_t zlib1_bytes(const batch *b, double *sec) {
    int64_t        sum = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < b->n; i++) {
        const uLong L   = (uLong)(b->off[i + 1] - b->off[i]);
        uLongf      cap = compressBound(L);
        uint8_t    *z   = malloc(cap);
        CK_ASSERT(z && compress2(z, &cap, b->data + b->off[i], L, 1) == Z_OK);
        sum += cap < L ? (int64_t)cap : (int64_t)L;
        free(z);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return sum;
}

/* Runs a batch at several placements, checks streams, determinism and placement independence. */
static void check_batch(ck_backend *be, const char *label, const batch *b, int placements, int64_t *stored_out,
                        float *ms_out) {
    const int64_t end = b->off[b->n];
    uint8_t      *d0 = malloc((size_t)end), *d1 = malloc((size_t)end);
    int32_t      *b0 = malloc(sizeof(int32_t) * b->n), *b1 = malloc(sizeof(int32_t) * b->n);
    CK_ASSERT(d0 && d1 && b0 && b1);
    const int failures0 = g_failures;
    float     ms = 0.0f, best = 1e30f;
    const int ok0 = device_run(be, b, 0, FILL_A, d0, b0, &ms);
    best          = ms < best ? ms : best;
    CHECK_MSG(ok0, "%s: dst outside the segments or src changed", label);
    const int64_t stored = verify(label, b, d0, b0);
    for (int p = 1; p <= placements; p++) {
        const int dalign = p % 4, fill = p % 2 ? FILL_B : FILL_A;
        const int okp    = device_run(be, b, dalign, fill, d1, b1, &ms);
        best             = ms < best ? ms : best;
        char l2[160];
        snprintf(l2, sizeof l2, "%s (dst +%d, fill 0x%02X)", label, dalign, fill);
        CHECK_MSG(okp, "%s: dst outside the segments or src changed", l2);
        int same = memcmp(b0, b1, sizeof(int32_t) * b->n) == 0;
        for (int i = 0; same && i < b->n; i++)
            if (b0[i] > 0) same = memcmp(d0 + b->off[i], d1 + b->off[i], (size_t)b0[i]) == 0;
        CHECK_MSG(same, "%s: streams differ from the first run", l2);
    }
    int kept = 0;
    for (int i = 0; i < b->n; i++) kept += b0[i] > 0;
    printf("%-6s %-34s %d segments, %lld bytes -> %lld stored (%.2f%%), %d streams, device %.3f ms\n",
           g_failures > failures0 ? "NOT OK" : "OK", label, b->n, (long long)(end - b->off[0]), (long long)stored,
           100.0 * (double)stored / (double)(end - b->off[0]), kept, best);
    if (stored_out) *stored_out = stored;
    if (ms_out) *ms_out = best;
    free(d0), free(d1), free(b0), free(b1);
}

/* Every kind at every length, back to back (kinds outer, so equal kinds run into each other). */
static batch make_sizes_batch(int64_t first_off) {
    static const int64_t lens[] = {1,      2,      3,      4,      7,      21,     22,     257,   258,
                                   259,    260,    1001,   4095,   65535,  66047,  66048,  66049, 132097,
                                   262147, 491520, 1048576};
    const int            nl     = (int)(sizeof lens / sizeof lens[0]);
    batch                b;
    b.n    = nl * K_COUNT;
    b.off  = malloc(sizeof(int64_t) * (b.n + 1));
    b.kind = malloc(sizeof(int) * b.n);
    b.off[0] = first_off;
    for (int i = 0; i < b.n; i++) b.off[i + 1] = b.off[i] + lens[i % nl];
    b.data = malloc((size_t)b.off[b.n]);
    CK_ASSERT(b.off && b.kind && b.data);
    for (int64_t j = 0; j < first_off; j++) b.data[j] = 0; /* zeros before the first segment: no run into it */
    for (int i = 0; i < b.n; i++) {
        b.kind[i] = i / nl;
        synth(b.data + b.off[i], lens[i % nl], i / nl, i);
    }
    return b;
}

/* A 4K frame's passes as 16-scanline PXR24 chunks: FG (RGB, grainy gradients), Matte (a soft-edged
 * disc), Processed (premultiplied RGBA: zero outside the disc). */
static batch make_frame_batch(void) {
    const int W = 3840, H = 2160, R = 16, nch = (H + R - 1) / R;
    batch     b;
    b.n      = 3 * nch;
    b.off    = malloc(sizeof(int64_t) * (b.n + 1));
    b.kind   = malloc(sizeof(int) * b.n);
    b.off[0] = 0;
    const int C[3] = {3, 1, 4};
    for (int i = 0; i < b.n; i++) {
        const int p = i / nch, rows = (i % nch + 1) * R <= H ? R : H - (i % nch) * R;
        b.off[i + 1] = b.off[i] + (int64_t)rows * W * C[p] * 2;
        b.kind[i]    = K_GRAIN;
    }
    b.data = malloc((size_t)b.off[b.n]);
    uint16_t *h[3];
    for (int p = 0; p < 3; p++) h[p] = malloc(sizeof(uint16_t) * (size_t)R * W * C[p]);
    CK_ASSERT(b.off && b.kind && b.data && h[0] && h[1] && h[2]);
    const int order[3][4] = {{2, 1, 0, 0}, {0, 0, 0, 0}, {3, 2, 1, 0}};
    for (int c = 0; c < nch; c++) {
        const int rows = (c + 1) * R <= H ? R : H - c * R;
        for (int y = 0; y < rows; y++)
            for (int x = 0; x < W; x++) {
                const int   yy = c * R + y;
                const float dx = (x - 0.55f * W) / (0.3f * W), dy = (yy - 0.5f * H) / (0.4f * H);
                float       a  = (1.0f - sqrtf(dx * dx + dy * dy)) * 150.0f;
                a              = a < 0.0f ? 0.0f : (a > 1.0f ? 1.0f : a);
                float rgb[3];
                for (int k = 0; k < 3; k++)
                    rgb[k] = 0.4f + 0.3f * sinf(0.003f * x + 0.002f * yy + 1.3f * k) +
                             0.004f * grain((uint32_t)x, (uint32_t)yy, (uint32_t)k);
                const size_t px = (size_t)y * W + x;
                for (int k = 0; k < 3; k++) h[0][px * 3 + k] = ck_f32_to_f16(rgb[k]);
                h[1][px] = ck_f32_to_f16(a);
                for (int k = 0; k < 3; k++) h[2][px * 4 + k] = ck_f32_to_f16(rgb[k] * a);
                h[2][px * 4 + 3] = h[1][px];
            }
        for (int p = 0; p < 3; p++) pxr24(b.data + b.off[p * nch + c], h[p], W, rows, C[p], order[p]);
    }
    for (int p = 0; p < 3; p++) free(h[p]);
    return b;
}

int main(void) {
    ck_backend *be = cuda_backend_or_skip();
    if (!be) return CK_TEST_SKIP;
    CHECK(be->ext.deflate != NULL && be->ext.deflate_scratch_bytes != NULL);
    if (!be->ext.deflate || !be->ext.deflate_scratch_bytes) return test_summary();

    /* every kind and length; then the same with a first segment offset (bytes before it in no segment) */
    for (int v = 0; v < 2; v++) {
        batch b = make_sizes_batch(v ? 13 : 0);
        check_batch(be, v ? "sizes, seg_off[0] = 13" : "sizes", &b, 3, NULL, NULL);
        batch_free(&b);
    }
    /* single segments (n = 1) */
    {
        const int64_t lens[] = {1, 300, 66049, CK_DEFLATE_MAX_SEGMENT};
        for (int k = 0; k < 4; k++) {
            batch b;
            b.n = 1, b.off = malloc(2 * sizeof(int64_t)), b.kind = malloc(sizeof(int));
            b.off[0] = 0, b.off[1] = lens[k], b.kind[0] = k % 2 ? K_RUNS : K_ZEROS;
            b.data = malloc((size_t)lens[k]);
            CK_ASSERT(b.off && b.kind && b.data);
            synth(b.data, lens[k], b.kind[0], k);
            char label[64];
            snprintf(label, sizeof label, "one %s segment of %lld", k_names[b.kind[0]], (long long)lens[k]);
            check_batch(be, label, &b, 1, NULL, NULL);
            batch_free(&b);
        }
    }
    /* a 4K frame's three passes */
    {
        batch   b = make_frame_batch();
        int64_t stored;
        float   ms;
        check_batch(be, "4K frame FG + Matte + Processed", &b, 2, &stored, &ms);
        double        zsec;
        const int64_t z1 = zlib1_bytes(&b, &zsec);
        printf("       zlib compress2 level 1: %lld bytes (ours / zlib-1 = %.3f), %.0f ms on one core; device %.3f ms "
               "= %.1f GB/s\n",
               (long long)z1, (double)stored / (double)z1, 1e3 * zsec, ms,
               ms > 0.0f ? (double)b.off[b.n] / (ms * 1e6) : 0.0);
        printf("       scratch %zu bytes\n", be->ext.deflate_scratch_bytes(b.n, b.off[b.n]));
        batch_free(&b);
    }
    be->destroy(be);
    return test_summary();
}
