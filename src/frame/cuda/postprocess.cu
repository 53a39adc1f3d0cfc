/* Frame post-processing on the device ("gpu_postprocess"): ck_result_finish's arithmetic (api.c, then
 * frame/postprocess.c and resample.c), operation for operation, with the results stored as the
 * writers store them (half for the EXR passes, 8-bit truncation for the comp).
 *
 * Kernels, in launch order on the backend stream:
 *   1. pp_hpass, pp_vpass (skipped when the source has the frame's size, as the host skips the resize): OpenCV
 *      Lanczos-4 with the host's taps. Horizontally acc = 0, acc += s·w left to right; vertically the
 *      host's row loop sums the first W & ~3 elements of a row as s0·w0 + (s1·w1 + (… + s7·w7)) and
 *      the tail left to right, W = w for alpha and 3w for fg (they are resized as separate images), so
 *      each channel of each pixel takes the order its element index within its row selects. Every
 *      product is rounded before it is added (__fmul_rn/__fadd_rn: nvcc must not contract).
 *   2. despeckle (when asked), all in integers, so the kept mask, the dilation and the blur equal the
 *      host's to the bit:
 *        pp_ccl_init      mask = alpha > 0.5; every pixel's label = its horizontal run's first pixel
 *                         (block-wide max-scan per row), area counters zeroed
 *        pp_ccl_merge     8-connected union-find between adjacent rows (Playne–Hawick: roots hooked
 *                         with atomicMin towards the smaller index, path shortening in find)
 *        pp_ccl_flatten   every label → its root (run starts first, then the rest)
 *        pp_ccl_area      pixels per root (atomicAdd, aggregated over a warp's equal labels)
 *        pp_ccl_keep      kept = label's area >= min_area (the kept set does not depend on which
 *                         pixel ends up as root, so the result is deterministic)
 *        pp_dil_rowdist   per pixel, distance to the nearest kept pixel of its row (only ≤ 25 matters)
 *        pp_dil_ellipse   dilation by the 51×51 ellipse: set if some row y+dy has a kept pixel within
 *                         the ellipse half-width of dy (the host's two-step formulation)
 *        pp_blur_h        11-tap Gaussian along x on the 0/255 image, exact in 16 bits
 *      the vertical 11-tap pass (32-bit sum rounded once, reflect-101) runs inside kernel 3.
 *   0. fg un-mixing (a->unmix_plate, after the resize): pp_unmix_cells, one thread per 16 × 16 cell summing its
 *      screen pixels, pp_unmix_est, one thread per cell taking the nearest box that holds screen, both with the
 *      host's functions (frame/unmix_px.h), so in the host's order; the blend itself runs per pixel inside
 *      kernel 3.
 *   3. pp_colour: raw alpha and fg (un-mixed, when asked) to half; alpha·blurred/255, despill, sRGB→linear, premultiply,
 *      processed RGBA to half; checkerboard comp, linear→sRGB, uint8(clip(v,0,1)·255) truncated.
 *      Processed in the plate's gamut and its highlights (a->cs, a->plate) through colorspace.h's
 *      ck_cs_processed_px, as the host; the comp stays the Rec.709 preview.
 *      powf is the device's (it may differ from glibc's by an ulp; everything else is exact: this file is
 *      compiled with --fmad=false, so the shared host/device formulas round as the host's do).
 *
 * Scratch (ck_postprocess_cuda_scratch_bytes; N = w·h, every buffer 256-byte aligned):
 *   region A: tmp (sh, w, 4) float32 during the resize; then labels (h, w) int32, area (h, w) int32,
 *             kept mask (h, w) uint8 (later the dilated mask) and row distances (h, w) uint8 during the
 *             despeckle, hsum (h, w) uint16 over the labels for the blur:  max(16·sh·w, 10·N) bytes
 *   region B: res (h, w, 4) float32 resized alpha, fg R, G, B (absent without a resize):  16·N bytes
 *   region C: the un-mixing's cells (gh, gw, 4) double and est (gh, gw, 5) float (unmix_px.h; gw, gh = w, h
 *             over 16 rounded up): 52 bytes a cell, reserved whether or not a frame un-mixes
 * At S = 2048 and a 3840×2160 frame: 125,829,120 + 132,710,400 + 1,036,800 + 648,192 = 260,224,512 bytes (248.2 MiB).
 */
#include "ops/cuda/common.cuh"

extern "C" {
#include "frame/frame_ops.h"
#include "frame/unmix_px.h"
}

enum { PP_DIL = 25, PP_BLUR = 5, PP_KB = 2 * PP_BLUR + 1, PP_THREADS = 256 };

/* Despeckle constants, passed by value. */
typedef struct pp_consts {
    int half[2 * PP_DIL + 1]; /* ellipse row half-widths, dy = i - PP_DIL */
    int kx[PP_KB], ky[PP_KB]; /* Gaussian taps (8 fraction bits); kx already times 255 */
    int nx, ny;               /* taps used: 11, or 1 along an axis of size 1 (as GaussianBlur) */
} pp_consts;

/* ---- scratch layout ---- */

static size_t pp_align(size_t n) { return (n + 255) & ~(size_t)255; }

typedef struct pp_layout {
    size_t tmp;                            /* region A during the resize */
    size_t labels, area, keep, dist, hsum; /* region A during the despeckle (hsum over labels) */
    size_t res;                            /* region B */
    size_t cells, est;                     /* region C */
    int    gw, gh;                         /* the un-mixing's cell grid */
    size_t total;
} pp_layout;

static pp_layout pp_plan(int sw, int sh, int w, int h) {
    const size_t N      = (size_t)w * h;
    const int    resize = !(w == sw && h == sh);
    pp_layout    L;
    L.tmp = L.labels = L.hsum = 0;
    L.area                   = pp_align(N * sizeof(int32_t));
    L.keep                   = L.area + pp_align(N * sizeof(int32_t));
    L.dist                   = L.keep + pp_align(N);
    const size_t despeckle_b = L.dist + pp_align(N);
    const size_t tmp_b       = resize ? pp_align((size_t)sh * w * 4 * sizeof(float)) : 0;
    L.res                    = tmp_b > despeckle_b ? tmp_b : despeckle_b;
    L.gw                     = (w + CK_UNMIX_CELL - 1) / CK_UNMIX_CELL;
    L.gh                     = (h + CK_UNMIX_CELL - 1) / CK_UNMIX_CELL;
    const size_t cells       = (size_t)L.gw * L.gh;
    L.cells                  = L.res + (resize ? pp_align(N * 4 * sizeof(float)) : 0);
    L.est                    = L.cells + pp_align(cells * 4 * sizeof(double));
    L.total                  = L.est + pp_align(cells * 5 * sizeof(float));
    return L;
}

extern "C" size_t ck_postprocess_cuda_scratch_bytes(int sw, int sh, int w, int h) {
    CK_ASSERT(sw > 0 && sh > 0 && w > 0 && h > 0);
    return pp_plan(sw, sh, w, h).total;
}

/* ---- 1. Lanczos-4 resize ---- */

/* tmp (sh, w, 4) = horizontal pass over every row of out (sh, sw, 4); HResizeLanczos4's order. */
__global__ void pp_hpass(float4 *__restrict__ tmp, const float4 *__restrict__ out, int sw, int sh, int w,
                         const int32_t *__restrict__ idx, const float *__restrict__ wt) {
    CK_GRID_STRIDE(i, (int64_t)sh * w) {
        const int64_t x = i % w, y = i / w;
        const float4 *row = out + y * sw;
        float4        a   = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float4 r  = row[idx[x * 8 + j]];
            const float  wj = wt[x * 8 + j];
            a.x = __fadd_rn(a.x, __fmul_rn(r.x, wj)), a.y = __fadd_rn(a.y, __fmul_rn(r.y, wj));
            a.z = __fadd_rn(a.z, __fmul_rn(r.z, wj)), a.w = __fadd_rn(a.w, __fmul_rn(r.w, wj));
        }
        tmp[i] = a;
    }
}

/* One vertical sum: `vec` selects the host's vectorized order (taps 7 → 0, the running sum on the
 * right) or its scalar tail (taps 0 → 7). */
__device__ __forceinline__ float pp_lz_v(const float v[8], const float wv[8], bool vec) {
    float acc;
    if (vec) {
        acc = __fmul_rn(v[7], wv[7]);
#pragma unroll
        for (int j = 6; j >= 0; j--) acc = __fadd_rn(__fmul_rn(v[j], wv[j]), acc);
    } else {
        acc = __fmul_rn(v[0], wv[0]);
#pragma unroll
        for (int j = 1; j < 8; j++) acc = __fadd_rn(acc, __fmul_rn(v[j], wv[j]));
    }
    return acc;
}

/* res (h, w, 4) = vertical pass over tmp (sh, w, 4). */
__global__ void pp_vpass(float4 *__restrict__ res, const float4 *__restrict__ tmp, int w, int h,
                         const int32_t *__restrict__ idx, const float *__restrict__ wt) {
    const int64_t nv_alpha = (int64_t)w & ~(int64_t)3;       /* alpha rows hold w elements */
    const int64_t nv_fg    = (3 * (int64_t)w) & ~(int64_t)3; /* fg rows hold 3w */
    CK_GRID_STRIDE(i, (int64_t)h * w) {
        const int64_t x = i % w, y = i / w;
        float4        r[8];
        float         wv[8];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            r[j]  = tmp[(int64_t)idx[y * 8 + j] * w + x];
            wv[j] = wt[y * 8 + j];
        }
        float v[8], o[4];
#pragma unroll
        for (int j = 0; j < 8; j++) v[j] = r[j].x;
        o[0] = pp_lz_v(v, wv, x < nv_alpha);
#pragma unroll
        for (int j = 0; j < 8; j++) v[j] = r[j].y;
        o[1] = pp_lz_v(v, wv, 3 * x + 0 < nv_fg);
#pragma unroll
        for (int j = 0; j < 8; j++) v[j] = r[j].z;
        o[2] = pp_lz_v(v, wv, 3 * x + 1 < nv_fg);
#pragma unroll
        for (int j = 0; j < 8; j++) v[j] = r[j].w;
        o[3] = pp_lz_v(v, wv, 3 * x + 2 < nv_fg);
        res[i] = make_float4(o[0], o[1], o[2], o[3]);
    }
}

/* ---- 2. despeckle: connected components ---- */

/* Inclusive max-scan over the block (blockDim.x = PP_THREADS); *total = the block's maximum. `wsum`
 * holds one value per warp. Every thread of the block must call it. */
__device__ int pp_block_max_scan(int v, int *wsum, int *total) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = PP_THREADS / 32;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int n = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v = max(v, n);
    }
    if (lane == 31) wsum[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int t = lane < nwarps ? wsum[lane] : -1;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int n = __shfl_up_sync(0xffffffffu, t, o);
            if (lane >= o) t = max(t, n);
        }
        if (lane < nwarps) wsum[lane] = t;
    }
    __syncthreads();
    if (warp > 0) v = max(v, wsum[warp - 1]);
    *total = wsum[nwarps - 1];
    __syncthreads(); /* wsum is reused by the next call */
    return v;
}

/* One block per row (grid-stride over rows): label (h, w) = y·w + (first column of the pixel's run)
 * for alpha > 0.5, else -1; area (h, w) = 0. The run start of a foreground pixel is the largest
 * "run starts here" column at or left of it, a max-scan carried across the row's tiles. */
__global__ void pp_ccl_init(int32_t *__restrict__ label, int32_t *__restrict__ area, const float *__restrict__ res,
                            int w, int h) {
    __shared__ int wsum[PP_THREADS / 32];
    for (int y = blockIdx.x; y < h; y += gridDim.x) {
        const float *row   = res + (size_t)y * w * 4; /* alpha at [4x] */
        int          carry = -1;
        for (int x0 = 0; x0 < w; x0 += PP_THREADS) {
            const int  x    = x0 + threadIdx.x;
            const bool fg   = x < w && row[(size_t)x * 4] > 0.5f;
            const bool pfg  = fg && x > 0 && row[(size_t)(x - 1) * 4] > 0.5f;
            int        tot  = -1;
            const int  scan = pp_block_max_scan(fg && !pfg ? x : -1, wsum, &tot);
            if (x < w) {
                const size_t i = (size_t)y * w + x;
                label[i]       = fg ? (int32_t)((size_t)y * w + (size_t)max(scan, carry)) : -1;
                area[i]        = 0;
            }
            carry = max(carry, tot);
        }
    }
}

/* Root of x. Labels only decrease and label[v] <= v with equality exactly at roots; the walk
 * shortens the path behind it (each visited node is pointed at its grandparent, a plain store that
 * may race with other walks or hooks: any ancestor is a valid parent, so connectivity is kept). */
__device__ __forceinline__ int32_t pp_uf_find(int32_t *label, int32_t x) {
    volatile int32_t *L   = label;
    int32_t           cur = L[x];
    if (cur != x) {
        int32_t prev = x, next;
        while (cur > (next = L[cur])) {
            L[prev] = next;
            prev    = cur;
            cur     = next;
        }
    }
    return cur;
}

/* Joins the trees of a and b: the larger root is hooked under the smaller with atomicMin; when
 * another thread hooked it first, the union is retried from the value it held. */
__device__ void pp_uf_union(int32_t *label, int32_t a, int32_t b) {
    a = pp_uf_find(label, a);
    b = pp_uf_find(label, b);
    while (a != b) {
        if (a < b) {
            const int32_t t = a;
            a               = b;
            b               = t;
        }
        const int32_t old = atomicMin(&label[a], b);
        if (old == a) break;
        a = pp_uf_find(label, old);
        b = pp_uf_find(label, b);
    }
}

/* 8-connectivity between row y-1 and row y. Pixels of one run share a label already, so a pixel
 * joins its upper neighbour N only where the overlap of the two runs starts (not both W and NW
 * foreground: there the pixel to the left joined the same pair); the diagonals only when N is
 * background. */
__global__ void pp_ccl_merge(int32_t *label, int w, int64_t n) {
    CK_GRID_STRIDE(k, n - w) {
        const int32_t i = (int32_t)(k + w);
        if (label[i] < 0) continue;
        const int  x    = (int)(i % w);
        const bool wfg  = x > 0 && label[i - 1] >= 0;
        const bool nfg  = label[i - w] >= 0;
        const bool nwfg = x > 0 && label[i - w - 1] >= 0;
        const bool nefg = x + 1 < w && label[i - w + 1] >= 0;
        if (nfg) {
            if (!(wfg && nwfg)) pp_uf_union(label, i, i - w);
        } else {
            if (nwfg && !wfg) pp_uf_union(label, i, i - w - 1);
            if (nefg) pp_uf_union(label, i, i - w + 1);
        }
    }
}

/* label ← root, read-only walks (each thread stores only its own label, so no store can replace a
 * root by an intermediate node). Run starts first (`starts`), then the other pixels, whose labels
 * point at their run start and so reach the root in one or two steps. */
__global__ void pp_ccl_flatten(int32_t *label, int w, int64_t n, int starts) {
    CK_GRID_STRIDE(i, n) {
        int32_t l = label[i];
        if (l < 0) continue;
        const bool is_start = (i % w) == 0 || label[i - 1] < 0;
        if (is_start != (starts != 0)) continue;
        const volatile int32_t *L = label;
        int32_t                 p;
        while ((p = L[l]) != l) l = p;
        label[i] = l;
    }
}

/* area[root] = pixels of the component. Lanes of a warp with equal labels (neighbours along a row)
 * add once; the loop is uniform per block so every lane reaches __match_any_sync. */
__global__ void pp_ccl_area(int32_t *__restrict__ area, const int32_t *__restrict__ label, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t base = (int64_t)blockIdx.x * blockDim.x; base < n; base += stride) {
        const int64_t  i   = base + threadIdx.x;
        const int32_t  l   = i < n ? label[i] : -1;
        const unsigned grp = __match_any_sync(0xffffffffu, l);
        if (l >= 0 && (int)(threadIdx.x & 31) == __ffs(grp) - 1) atomicAdd(&area[l], __popc(grp));
    }
}

__global__ void pp_ccl_keep(uint8_t *__restrict__ keep, const int32_t *__restrict__ label,
                            const int32_t *__restrict__ area, int64_t n, int min_area) {
    CK_GRID_STRIDE(i, n) {
        const int32_t l = label[i];
        keep[i]         = l >= 0 && area[l] >= min_area;
    }
}

/* ---- 2. despeckle: dilation and blur ---- */

/* dist (h, w) = distance to the nearest kept pixel in the same row, or 255 beyond PP_DIL (the host
 * caps at 255; only distances up to the largest half-width, PP_DIL, change the dilation). One block
 * per PP_THREADS columns of a row, the row segment and its halo in shared memory. */
__global__ void pp_dil_rowdist(uint8_t *__restrict__ dist, const uint8_t *__restrict__ keep, int w, int h) {
    __shared__ uint8_t seg[PP_THREADS + 2 * PP_DIL];
    const int          tiles = (w + PP_THREADS - 1) / PP_THREADS;
    for (int64_t t = blockIdx.x; t < (int64_t)tiles * h; t += gridDim.x) {
        const int64_t  y   = t / tiles;
        const int      x0  = (int)(t % tiles) * PP_THREADS;
        const uint8_t *row = keep + y * w;
        for (int k = threadIdx.x; k < PP_THREADS + 2 * PP_DIL; k += blockDim.x) {
            const int xx = x0 - PP_DIL + k;
            seg[k]       = xx >= 0 && xx < w ? row[xx] : 0;
        }
        __syncthreads();
        const int x = x0 + threadIdx.x;
        if (x < w) {
            int d = 255;
            for (int dx = 0; dx <= PP_DIL; dx++)
                if (seg[threadIdx.x + PP_DIL - dx] | seg[threadIdx.x + PP_DIL + dx]) {
                    d = dx;
                    break;
                }
            dist[y * w + x] = (uint8_t)d;
        }
        __syncthreads();
    }
}

/* dil (h, w) = 1 where some row y+dy inside the image has a kept pixel within half[dy] of x (dilate
 * treats the outside as -inf). Rows nearest first: foreground interiors stop after one compare. */
__global__ void pp_dil_ellipse(uint8_t *__restrict__ dil, const uint8_t *__restrict__ dist, int w, int h,
                               pp_consts c) {
    CK_GRID_STRIDE(i, (int64_t)w * h) {
        const int64_t  x = i % w, y = i / w;
        const uint8_t *col = dist + x;
        int            o   = col[y * w] <= c.half[PP_DIL];
#pragma unroll
        for (int m = 1; m <= PP_DIL; m++) {
            if (o) break;
            if (y - m >= 0 && col[(y - m) * w] <= c.half[PP_DIL - m]) o = 1;
            if (y + m < h && col[(y + m) * w] <= c.half[PP_DIL + m]) o = 1;
        }
        dil[i] = (uint8_t)o;
    }
}

/* OpenCV borderInterpolate(BORDER_REFLECT_101), repeated for kernels wider than the image. */
__device__ __forceinline__ int pp_reflect101(int p, int len) {
    if (len == 1) return 0;
    while ((unsigned)p >= (unsigned)len) p = p < 0 ? -p : 2 * (len - 1) - p;
    return p;
}

/* hsum (h, w) = horizontal Gaussian of the 0/255 image: Σ 255·kx[j]·dil, at most 255·256 (exact in
 * 16 bits, as OpenCV's ufixedpoint16 row buffer). */
__global__ void pp_blur_h(uint16_t *__restrict__ hsum, const uint8_t *__restrict__ dil, int w, int h,
                          pp_consts c) {
    const int rx = c.nx / 2;
    CK_GRID_STRIDE(i, (int64_t)w * h) {
        const int64_t  x = i % w, y = i / w;
        const uint8_t *row = dil + y * w;
        int            acc = 0;
#pragma unroll
        for (int j = 0; j < PP_KB; j++)
            if (j < c.nx) acc += c.kx[j] * row[pp_reflect101((int)x + j - rx, w)];
        hsum[i] = (uint16_t)acc;
    }
}

/* ---- 3. colour, half and 8-bit stores ---- */

/* ck_f32_to_f16: round to nearest even; NaN keeps its sign and becomes the quiet 0x7e00. */
__device__ __forceinline__ uint16_t pp_half(float f) {
    if (f != f) return (uint16_t)(((__float_as_uint(f) >> 16) & 0x8000u) | 0x7e00u);
    return __half_as_ushort(__float2half_rn(f));
}

/* The PNG writer's rule: (clip(v, 0, 1) · 255) truncated, NaN → 0. */
__device__ __forceinline__ uint8_t pp_u8(float v) {
    if (!(v > 0.0f)) return 0;
    if (v > 1.0f) v = 1.0f;
    return (uint8_t)__float2uint_rz(__fmul_rn(v, 255.0f));
}

/* color.c, float32 operation for operation */
__device__ __forceinline__ float pp_srgb_to_linear(float x) {
    x = x < 0.0f ? 0.0f : x;
    if (x <= 0.04045f) return __fdiv_rn(x, 12.92f);
    return powf(__fdiv_rn(__fadd_rn(x, 0.055f), 1.055f), 2.4f);
}

__device__ __forceinline__ float pp_linear_to_srgb(float x) {
    x = x < 0.0f ? 0.0f : x;
    if (x <= 0.0031308f) return __fmul_rn(x, 12.92f);
    return __fsub_rn(__fmul_rn(1.055f, powf(x, (float)(1.0 / 2.4))), 0.055f);
}

/* ---- 0. fg un-mixing: the screen estimate (frame/unmix_px.h) ---- */

/* cells (gh, gw, 4) and est (gh, gw, 5): one thread per cell, with the host's functions (unmix_px.h). */
__global__ void pp_unmix_cells(double *__restrict__ cells, const float4 *__restrict__ res,
                               const float *__restrict__ plate, int w, int h, int gw, int gh, ck_cs_post cs) {
    CK_GRID_STRIDE(c, (int64_t)gw * gh) {
        ck_unmix_cell_sum((const float *)res, 4, plate, w, h, (int)(c % gw), (int)(c / gw), &cs, cells + c * 4);
    }
}

__global__ void pp_unmix_est(float *__restrict__ est, const double *__restrict__ cells, int gw, int gh) {
    CK_GRID_STRIDE(c, (int64_t)gw * gh) { ck_unmix_cell_est(cells, gw, gh, (int)(c % gw), (int)(c / gw), est + c * 5); }
}

/* despill_px ("average"); keep = (float)(1 - (double)s), computed on the host. */
__device__ __forceinline__ void pp_despill(float *p, float s, float keep) {
    const float r = p[0], g = p[1], b = p[2];
    const float limit = __fdiv_rn(__fadd_rn(r, b), 2.0f);
    const float d     = __fsub_rn(g, limit);
    const float spill = d < 0.0f ? 0.0f : d; /* NaN stays */
    float       rn = __fadd_rn(r, __fmul_rn(spill, 0.5f)), gn = __fsub_rn(g, spill);
    float       bn = __fadd_rn(b, __fmul_rn(spill, 0.5f));
    if (s < 1.0f) {
        rn = __fadd_rn(__fmul_rn(r, keep), __fmul_rn(rn, s));
        gn = __fadd_rn(__fmul_rn(g, keep), __fmul_rn(gn, s));
        bn = __fadd_rn(__fmul_rn(b, keep), __fmul_rn(bn, s));
    }
    p[0] = rn, p[1] = gn, p[2] = bn;
}

/* Per pixel of res (h, w, 4): alpha (h, w) and fg (h, w, 3) as half; when hsum is given, the
 * vertical Gaussian pass (32-bit sum, one rounding, saturated to 8 bits) and alpha·(blurred/255);
 * then ck_postprocess's colour steps into processed (h, w, 4) half and comp (h, w, 3) bytes. */
__global__ void pp_colour(const float4 *__restrict__ res, const uint16_t *__restrict__ hsum, int w, int h,
                          pp_consts c, float s, float keep, float bg0, float bg1, uint16_t *__restrict__ alpha_o,
                          uint16_t *__restrict__ fg_o, uint16_t *__restrict__ proc, uint8_t *__restrict__ comp,
                          ck_cs_post cs, const float *__restrict__ plate, const float *__restrict__ est,
                          const float *__restrict__ uplate, int gw, int gh, float unmix_lo) {
    const int recolour = cs.gamut || plate != NULL;
    const int ry = c.ny / 2;
    CK_GRID_STRIDE(i, (int64_t)w * h) {
        const int64_t x = i % w, y = i / w;
        float4        v = res[i];
        if (est) {
            float f[3] = {v.y, v.z, v.w};
            ck_unmix_px(est, gw, gh, (int)x, (int)y, v.x, uplate + i * 3, &cs, unmix_lo, f);
            v.y = f[0], v.z = f[1], v.w = f[2];
        }
        alpha_o[i]      = pp_half(v.x);
        fg_o[i * 3 + 0] = pp_half(v.y), fg_o[i * 3 + 1] = pp_half(v.z), fg_o[i * 3 + 2] = pp_half(v.w);

        float a = v.x;
        if (hsum) {
            uint32_t acc = 0;
#pragma unroll
            for (int k = 0; k < PP_KB; k++)
                if (k < c.ny) acc += (uint32_t)c.ky[k] * hsum[(int64_t)pp_reflect101((int)y + k - ry, h) * w + x];
            uint32_t b = (acc + (1u << 15)) >> 16;
            b          = b > 255 ? 255 : b;
            a          = __fmul_rn(v.x, __fdiv_rn((float)b, 255.0f));
        }
        float col[3] = {v.y, v.z, v.w};
        if (!(s <= 0.0f)) pp_despill(col, s, keep);
        const float bg    = (((x >> 7) + (y >> 7)) & 1) ? bg1 : bg0;
        const float one_a = __fsub_rn(1.0f, a);
        float       lin3[3], pa3[3];
#pragma unroll
        for (int k = 0; k < 3; k++) {
            const float lin = pp_srgb_to_linear(col[k]);
            const float pa  = __fmul_rn(lin, a);
            lin3[k] = lin, pa3[k] = pa;
            if (comp) comp[i * 3 + k] = pp_u8(pp_linear_to_srgb(__fadd_rn(pa, __fmul_rn(bg, one_a))));
        }
        if (recolour) ck_cs_processed_px(&cs, lin3, plate ? plate + i * 3 : NULL, a, pa3);
#pragma unroll
        for (int k = 0; k < 3; k++) proc[i * 4 + k] = pp_half(pa3[k]);
        proc[i * 4 + 3] = pp_half(a);
    }
}

/* ---- host side ---- */

/* postprocess.c's ellipse_half_widths (getStructuringElement(MORPH_ELLIPSE)) and Gaussian taps
 * (getGaussianKernelBitExact + fixed-point error diffusion: for 11 taps the table below). */
static void pp_make_consts(pp_consts *c, int w, int h) {
    const int    r      = PP_DIL;
    const double inv_r2 = 1.0 / ((double)r * r);
    for (int i = 0; i < 2 * r + 1; i++) {
        const int dy = i - r;
        c->half[i]   = (int)lrint(r * sqrt((double)(r * r - dy * dy) * inv_r2));
    }
    static const int g11[PP_KB] = {2, 7, 17, 31, 45, 52, 45, 31, 17, 7, 2};
    c->nx = w == 1 ? 1 : PP_KB;
    c->ny = h == 1 ? 1 : PP_KB;
    for (int j = 0; j < PP_KB; j++) {
        c->kx[j] = 255 * (c->nx == 1 ? (j == 0 ? 256 : 0) : g11[j]);
        c->ky[j] = c->ny == 1 ? (j == 0 ? 256 : 0) : g11[j];
    }
}

extern "C" void ck_postprocess_cuda(ck_backend *be, const ck_postprocess_args *a) {
    ck_cuda      *cu = ck_cuda_of(be);
    const int     sw = a->sw, sh = a->sh, w = a->w, h = a->h;
    const int64_t n = (int64_t)w * h;
    CK_ASSERT(sw > 0 && sh > 0 && w > 0 && h > 0 && n <= INT32_MAX); /* labels are int32 pixel indices */
    CK_ASSERT(a->out && a->alpha && a->fg && a->processed && a->scratch);
    CK_ASSERT(ck_aligned(a->out, 16) && ck_aligned(a->scratch, 256));
    const int       resize = !(w == sw && h == sh);
    const pp_layout L      = pp_plan(sw, sh, w, h);
    uint8_t        *base   = (uint8_t *)a->scratch;
    const unsigned  grid   = ck_grid_for(cu, n, PP_THREADS);

    const float4 *res = (const float4 *)a->out;
    if (resize) {
        CK_ASSERT(a->idx_x && a->w_x && a->idx_y && a->w_y);
        float4 *tmp = (float4 *)(base + L.tmp), *rb = (float4 *)(base + L.res);
        pp_hpass<<<ck_grid_for(cu, (int64_t)sh * w, PP_THREADS), PP_THREADS, 0, cu->stream>>>(
            tmp, (const float4 *)a->out, sw, sh, w, a->idx_x, a->w_x);
        CK_KERNEL_CHECK(cu);
        pp_vpass<<<grid, PP_THREADS, 0, cu->stream>>>(rb, tmp, w, h, a->idx_y, a->w_y);
        CK_KERNEL_CHECK(cu);
        res = rb;
    }

    float *est = NULL;
    if (a->unmix_plate) {
        CK_ASSERT(a->unmix_lo > 0.0f && a->unmix_lo < 1.0f);
        double        *cells = (double *)(base + L.cells);
        const unsigned cgrid = ck_grid_for(cu, (int64_t)L.gw * L.gh, 128);
        est                  = (float *)(base + L.est);
        pp_unmix_cells<<<cgrid, 128, 0, cu->stream>>>(cells, res, a->unmix_plate, w, h, L.gw, L.gh, a->cs);
        CK_KERNEL_CHECK(cu);
        pp_unmix_est<<<cgrid, 128, 0, cu->stream>>>(est, cells, L.gw, L.gh);
        CK_KERNEL_CHECK(cu);
    }

    pp_consts c;
    pp_make_consts(&c, w, h);
    const uint16_t *hsum = NULL;
    if (a->despeckle) {
        int32_t  *label = (int32_t *)(base + L.labels), *area = (int32_t *)(base + L.area);
        uint8_t  *keep = base + L.keep, *dist = base + L.dist, *dil = keep;
        uint16_t *hs   = (uint16_t *)(base + L.hsum);
        pp_ccl_init<<<ck_grid_for(cu, (int64_t)h * PP_THREADS, PP_THREADS), PP_THREADS, 0, cu->stream>>>(
            label, area, (const float *)res, w, h);
        CK_KERNEL_CHECK(cu);
        if (h > 1) {
            pp_ccl_merge<<<ck_grid_for(cu, n - w, PP_THREADS), PP_THREADS, 0, cu->stream>>>(label, w, n);
            CK_KERNEL_CHECK(cu);
        }
        for (int starts = 1; starts >= 0; starts--) {
            pp_ccl_flatten<<<grid, PP_THREADS, 0, cu->stream>>>(label, w, n, starts);
            CK_KERNEL_CHECK(cu);
        }
        pp_ccl_area<<<grid, PP_THREADS, 0, cu->stream>>>(area, label, n);
        CK_KERNEL_CHECK(cu);
        pp_ccl_keep<<<grid, PP_THREADS, 0, cu->stream>>>(keep, label, area, n, a->despeckle_size);
        CK_KERNEL_CHECK(cu);
        const int64_t  tiles = (int64_t)((w + PP_THREADS - 1) / PP_THREADS) * h; /* one block each */
        const unsigned tgrid = ck_grid_for(cu, tiles * PP_THREADS, PP_THREADS);
        pp_dil_rowdist<<<tgrid, PP_THREADS, 0, cu->stream>>>(dist, keep, w, h);
        CK_KERNEL_CHECK(cu);
        pp_dil_ellipse<<<grid, PP_THREADS, 0, cu->stream>>>(dil, dist, w, h, c);
        CK_KERNEL_CHECK(cu);
        pp_blur_h<<<grid, PP_THREADS, 0, cu->stream>>>(hs, dil, w, h, c);
        CK_KERNEL_CHECK(cu);
        hsum = hs;
    }

    /* create_checkerboard's 0.15 / 0.55 through the host's own srgb_to_linear */
    const float bg0 = ck_srgb_to_linear(0.15f), bg1 = ck_srgb_to_linear(0.55f);
    const float s = a->despill, keep_s = (float)(1.0 - (double)s);
    pp_colour<<<grid, PP_THREADS, 0, cu->stream>>>(res, hsum, w, h, c, s, keep_s, bg0, bg1, a->alpha, a->fg,
                                                   a->processed, a->comp, a->cs, a->plate, est, a->unmix_plate,
                                                   L.gw, L.gh, a->unmix_lo);
    CK_KERNEL_CHECK(cu);
}
