/* Host emulation of src/ops/cuda/resize.cu's kernels: their own source on the CPU, each CUDA thread run in turn
 * (they share nothing and never synchronize, so no coroutines are needed), blocks in a shuffled order. Every output
 * must carry exactly the bits of the CPU reference's arithmetic (src/ops/cpu/resize.c: its float32 taps, the
 * association μ0·(λ0·a + λ1·b) + μ1·(λ0·c + λ1·d), sources summed in order in float32, one rounding to the dtype):
 * the per-pixel resize-sum kernel, the column-walking one (the default, which must also equal the per-pixel one),
 * and resize_bilinear's kernel, plain and accumulating, in float32, float16 and bfloat16; sources that upsample,
 * downsample (rows skipped by the vertical taps) or keep the size, 1 to 4 of them, odd row counts (a last group
 * shorter than kResizeRows), rows of fewer than 256 vectors; guard vectors around y stay untouched. What it cannot
 * see: timing, or the device's own float conversions (tests/test_cuda_ops.c on the GPU compares with the CPU
 * backend). Built with contraction off, as the CPU reference is.
 *
 *   make -C dev/cuda resize_emu && ./dev/cuda/resize_emu [-v]
 * ctest runs it as test_resize_emu wherever the CUDA backend is built.
 */
#include "emu_core.h"

/* the one intrinsic resize.cu uses that emu_core.h does not supply (host float division is IEEE) */
float __fdiv_rn(float a, float b) { return a / b; }

#include "../../src/ops/cuda/resize.cu"

#include <cmath>

static int g_verbose, g_fail, g_count;
static std::mt19937 g_sched(7);

/* every thread of a grid in turn, blocks shuffled (a kernel must not depend on the order) */
template <typename F> static void run_grid(dim3 grid, dim3 block, F kernel) {
    std::vector<uint3> order;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned yb = 0; yb < grid.y; yb++)
            for (unsigned x = 0; x < grid.x; x++) order.push_back(make_uint3(x, yb, z));
    std::shuffle(order.begin(), order.end(), g_sched);
    gridDim = grid, blockDim = block;
    for (const uint3 &b : order) {
        blockIdx = b;
        for (unsigned t = 0; t < block.x; t++) {
            threadIdx = make_uint3(t, 0, 0);
            kernel();
        }
    }
}

template <typename T> static T from_f(float f);
template <> float from_f<float>(float f) { return f; }
template <> __half from_f<__half>(float f) { return __float2half_rn(f); }
template <> __nv_bfloat16 from_f<__nv_bfloat16>(float f) { return __float2bfloat16_rn(f); }
template <typename T> static double to_d(T v) { return (double)ck_ldf<T>(v); }
template <typename T> static const char *name_of();
template <> const char *name_of<float>() { return "f32 "; }
template <> const char *name_of<__half>() { return "f16 "; }
template <> const char *name_of<__nv_bfloat16>() { return "bf16"; }
/* The CPU reference's arithmetic (src/ops/cpu/resize.c: its taps and association, float32 without contraction):
 * the value at output (oy, ox) of channel ch of image b of a (B, H, W, C) source. */
static void cpu_tap(int d, int out, int in, int &i0, int &i1, float &l0, float &l1) {
    const float scale = (float)in / (float)out;
    float       src   = scale * ((float)d + 0.5f) - 0.5f;
    if (src < 0.0f) src = 0.0f;
    i0 = (int)src;
    if (i0 > in - 1) i0 = in - 1;
    i1 = i0 + (i0 < in - 1 ? 1 : 0);
    l1 = src - (float)i0;
    l0 = 1.0f - l1;
}
template <typename T>
static float cpu_bilinear(const T *x, int H, int W, int C, int b, int oy, int ox, int ch, int Ho, int Wo) {
    int   y0, y1, x0, x1;
    float h0, h1, w0, w1;
    cpu_tap(oy, Ho, H, y0, y1, h0, h1), cpu_tap(ox, Wo, W, x0, x1, w0, w1);
    auto at = [&](int yy, int xx) { return ck_ldf<T>(x[(((size_t)b * H + yy) * W + xx) * C + ch]); };
    return h0 * (w0 * at(y0, x0) + w1 * at(y0, x1)) + h1 * (w0 * at(y1, x0) + w1 * at(y1, x1));
}

struct Case {
    int B, C, Ho, Wo, n;
    int h[4], w[4];
};

template <typename T> static void run_case(const Case &c, uint32_t seed) {
    constexpr int V = ck_v16<T>::V;
    std::mt19937  rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<std::vector<T>>     xs(c.n);
    ck_resize_srcs                  src = {};
    src.n                               = c.n;
    for (int k = 0; k < c.n; k++) {
        xs[k].resize((size_t)c.B * c.h[k] * c.w[k] * c.C);
        for (auto &v : xs[k]) v = from_f<T>(nd(rng));
        src.x[k] = xs[k].data(), src.h[k] = c.h[k], src.w[k] = c.w[k];
    }
    const size_t   ny = (size_t)c.B * c.Ho * c.Wo * c.C, guard = 64;
    const T        poison = from_f<T>(-12345.0f);
    std::vector<T> ypix(ny), ycol(ny + 2 * guard, poison);
    T             *yc = ycol.data() + guard;

    const int64_t tot = (int64_t)c.B * c.Ho * c.Wo * (c.C / V);
    run_grid(dim3(64), dim3(64), [&]() { resize_sum_kernel<T, V>(ypix.data(), src, c.C, c.Ho, c.Wo, tot); });
    const int64_t rowv = (int64_t)c.Wo * (c.C / V), groups = (c.Ho + kResizeRows - 1) / kResizeRows;
    const int     thr  = rowv >= 256 ? 256 : (int)((rowv + 31) / 32 * 32);
    const dim3    grid((unsigned)(c.B * groups), (unsigned)((rowv + thr - 1) / thr));
    auto          cols = [&]() {
        if (c.n == 1) resize_sum_cols_kernel<T, V, 1>(yc, src, c.C, c.Ho, c.Wo, (int)groups);
        else if (c.n == 2) resize_sum_cols_kernel<T, V, 2>(yc, src, c.C, c.Ho, c.Wo, (int)groups);
        else if (c.n == 3) resize_sum_cols_kernel<T, V, 3>(yc, src, c.C, c.Ho, c.Wo, (int)groups);
        else resize_sum_cols_kernel<T, V, 4>(yc, src, c.C, c.Ho, c.Wo, (int)groups);
    };
    run_grid(grid, dim3(thr), cols);
    g_count++;

    char name[160];
    snprintf(name, sizeof name, "%s B=%d C=%-3d %3dx%-3d from", name_of<T>(), c.B, c.C, c.Ho, c.Wo);
    for (int k = 0; k < c.n; k++)
        snprintf(name + strlen(name), sizeof name - strlen(name), " %dx%d", c.h[k], c.w[k]);
    long guards = 0, differ = 0, far = 0; /* far: outputs off the CPU reference's arithmetic */
    for (size_t i = 0; i < guard; i++) {
        if (memcmp(&ycol[i], &poison, sizeof(T))) guards++;
        if (memcmp(&ycol[guard + ny + i], &poison, sizeof(T))) guards++;
    }
    for (int b = 0; b < c.B; b++)
        for (int oy = 0; oy < c.Ho; oy++)
            for (int ox = 0; ox < c.Wo; ox++)
                for (int ch = 0; ch < c.C; ch++) {
                    const size_t i = (((size_t)b * c.Ho + oy) * c.Wo + ox) * c.C + ch;
                    float        acc = 0.0f;
                    for (int k = 0; k < c.n; k++) {
                        const float v = cpu_bilinear(xs[k].data(), c.h[k], c.w[k], c.C, b, oy, ox, ch, c.Ho, c.Wo);
                        acc           = k ? acc + v : v;
                    }
                    const T want = from_f<T>(acc);
                    if (memcmp(&ypix[i], &want, sizeof(T)) && far++ < 3)
                        printf("  b=%d y=%d x=%d c=%d: per-pixel %.8g, the CPU's arithmetic %.8g\n", b, oy, ox, ch,
                               to_d(ypix[i]), to_d(want));
                    if (memcmp(&yc[i], &ypix[i], sizeof(T)) && differ++ < 3)
                        printf("  b=%d y=%d x=%d c=%d: column-walking %.8g, per-pixel %.8g\n", b, oy, ox, ch,
                               to_d(yc[i]), to_d(ypix[i]));
                }
    const bool ok = guards == 0 && differ == 0 && far == 0;
    if (!ok) g_fail++;
    if (!ok || g_verbose)
        printf("%s %s: per-pixel kernel %ld off the CPU's arithmetic, column-walking %ld off the per-pixel, %ld "
               "guards hit\n",
               ok ? "ok    " : "NOT OK", name, far, differ, guards);
}

/* resize_kernel (resize_bilinear: one source, optionally accumulated onto y) against the CPU's arithmetic */
template <typename T> static void run_single(int B, int C, int H, int W, int Ho, int Wo, int accumulate, uint32_t seed) {
    constexpr int V = ck_v16<T>::V;
    std::mt19937  rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<T> x((size_t)B * H * W * C), y0((size_t)B * Ho * Wo * C);
    for (auto &v : x) v = from_f<T>(nd(rng));
    for (auto &v : y0) v = from_f<T>(nd(rng));
    std::vector<T> y = y0;
    const int64_t  tot = (int64_t)B * Ho * Wo * (C / V);
    run_grid(dim3(37), dim3(64), [&]() { resize_kernel<T, V>(y.data(), x.data(), H, W, C, Ho, Wo, accumulate, tot); });
    g_count++;
    long far = 0;
    for (int b = 0; b < B; b++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Wo; ox++)
                for (int ch = 0; ch < C; ch++) {
                    const size_t i = (((size_t)b * Ho + oy) * Wo + ox) * C + ch;
                    const float  v = cpu_bilinear(x.data(), H, W, C, b, oy, ox, ch, Ho, Wo);
                    const T      want = from_f<T>(accumulate ? ck_ldf<T>(y0[i]) + v : v);
                    if (memcmp(&y[i], &want, sizeof(T)) && far++ < 3)
                        printf("  b=%d y=%d x=%d c=%d: kernel %.8g, the CPU's arithmetic %.8g\n", b, oy, ox, ch,
                               to_d(y[i]), to_d(want));
                }
    if (far) g_fail++;
    if (far || g_verbose)
        printf("%s %s resize B=%d C=%d %dx%d -> %dx%d%s: %ld off the CPU's arithmetic\n", far ? "NOT OK" : "ok    ",
               name_of<T>(), B, C, H, W, Ho, Wo, accumulate ? " +=" : "", far);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-v")) g_verbose = 1;
    const Case cases[] = {
        /* B   C   Ho   Wo  n   source heights          widths */
        {1, 512, 32, 32, 3, {4, 8, 16}, {4, 8, 16}},          /* the decoder's sum at S = 128: ×8, ×4, ×2 */
        {2, 64, 40, 48, 3, {5, 10, 21}, {6, 12, 24}},         /* five groups of rows, the last source one row taller */
        {1, 16, 12, 22, 3, {1, 3, 6}, {2, 5, 11}},            /* a second group of four rows; a one-row source */
        {2, 24, 19, 13, 4, {7, 40, 19, 2}, {3, 29, 13, 1}},   /* downsampling rows (skipped), the same size, 1 column */
        {1, 32, 9, 300, 1, {9}, {150}},                       /* rows of 1200 vectors: several blocks per row */
        {3, 8, 17, 5, 2, {33, 4}, {11, 2}},                   /* one vector per pixel; rows of 5 vectors */
    };
    uint32_t seed = 1;
    for (const Case &c : cases) {
        run_case<float>(c, seed++);
        run_case<__half>(c, seed++);
        run_case<__nv_bfloat16>(c, seed++);
    }
    const int single[][7] = {{1, 64, 16, 16, 32, 32, 0}, {2, 24, 5, 7, 13, 4, 1}, {1, 16, 9, 9, 3, 2, 0}};
    for (const auto &t : single) {
        run_single<float>(t[0], t[1], t[2], t[3], t[4], t[5], t[6], seed++);
        run_single<__half>(t[0], t[1], t[2], t[3], t[4], t[5], t[6], seed++);
        run_single<__nv_bfloat16>(t[0], t[1], t[2], t[3], t[4], t[5], t[6], seed++);
    }
    printf("resize_emu: %d cases, %d failed\n", g_count, g_fail);
    return g_fail ? 1 : 0;
}
