/* Host emulation of src/ops/cuda/resize.cu's resize-sum kernels: the kernels' own source on the CPU, each CUDA
 * thread run in turn (they share nothing and never synchronize, so no coroutines are needed), blocks in a shuffled
 * order. The column-walking kernel (the default) must give the per-pixel kernel's bits for every output, in
 * float32, float16 and bfloat16, for 1 to 4 sources that upsample, downsample (rows skipped by the vertical taps)
 * or keep the size, odd row counts (a last group shorter than kResizeRows) and rows of fewer than 256 vectors;
 * the column-walking kernel is also held against a float64 sum with the kernels' own tap weights (within one unit
 * in the last place of the dtype plus the float32 sums' rounding), and guard vectors around y must stay
 * untouched. What it cannot see: timing, or the device's own float conversions (tests/test_cuda_ops.c on the GPU
 * compares against the CPU backend).
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
template <typename T> static double ulp_of(double v) {
    const int    mant = sizeof(T) == 4 ? 23 : std::is_same<T, __half>::value ? 10 : 7;
    const double a    = std::max(fabs(v), sizeof(T) == 4 ? 1e-30 : std::is_same<T, __half>::value ? 6.1e-5 : 1e-30);
    return ldexp(1.0, (int)floor(log2(a)) - mant);
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
    long guards = 0, differ = 0, far = 0;
    for (size_t i = 0; i < guard; i++) {
        if (memcmp(&ycol[i], &poison, sizeof(T))) guards++;
        if (memcmp(&ycol[guard + ny + i], &poison, sizeof(T))) guards++;
    }
    double worst = 0;
    for (int b = 0; b < c.B; b++)
        for (int oy = 0; oy < c.Ho; oy++)
            for (int ox = 0; ox < c.Wo; ox++)
                for (int ch = 0; ch < c.C; ch++) {
                    const size_t i = (((size_t)b * c.Ho + oy) * c.Wo + ox) * c.C + ch;
                    if (memcmp(&yc[i], &ypix[i], sizeof(T)) && differ++ < 3)
                        printf("  b=%d y=%d x=%d c=%d: column-walking %.8g, per-pixel %.8g\n", b, oy, ox, ch,
                               to_d(yc[i]), to_d(ypix[i]));
                    double ref = 0, mag = 0; /* the sum, and the sum of its terms' magnitudes */
                    for (int k = 0; k < c.n; k++) {
                        /* the kernels' own taps (float32 weights, the CPU's arithmetic): what is checked here
                         * is the blend and the sums */
                        const ck_tap ty = resize_tap(oy, c.Ho, c.h[k]), tx = resize_tap(ox, c.Wo, c.w[k]);
                        const int    y0 = ty.i0, y1 = ty.i1, x0 = tx.i0, x1 = tx.i1;
                        const double ly = ty.l1, lx = tx.l1;
                        auto at = [&](int yy, int xx) {
                            return to_d(xs[k][(((size_t)b * c.h[k] + yy) * c.w[k] + xx) * c.C + ch]);
                        };
                        ref += (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x1)) +
                               ly * ((1 - lx) * at(y1, x0) + lx * at(y1, x1));
                        mag += (1 - ly) * ((1 - lx) * fabs(at(y0, x0)) + lx * fabs(at(y0, x1))) +
                               ly * ((1 - lx) * fabs(at(y1, x0)) + lx * fabs(at(y1, x1)));
                    }
                    /* one rounding of the output, and the float32 products and sums relative to the terms */
                    const double err = fabs(to_d(yc[i]) - ref), tol = ulp_of<T>(ref) + 16.0 * ldexp(mag, -24);
                    worst = std::max(worst, err / tol);
                    if (!(err <= tol)) far++;
                }
    const bool ok = guards == 0 && differ == 0 && far == 0;
    if (!ok) g_fail++;
    if (!ok || g_verbose)
        printf("%s %s: %ld differ from the per-pixel kernel, %ld beyond tolerance (worst %.0f%%), %ld guards hit\n",
               ok ? "ok    " : "NOT OK", name, differ, far, 100 * worst, guards);
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
    printf("resize_emu: %d cases, %d failed\n", g_count, g_fail);
    return g_fail ? 1 : 0;
}
