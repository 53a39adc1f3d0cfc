/* Host emulation of src/ops/cuda/gemm_sm90.cu (the encoder linears' GEMM with its epilogue) and of
 * src/ops/cuda/gemm_narrow.cu (the same for K ≤ 128 with the weight resident, persistent blocks): the kernels' own
 * source on the CPU through dev/cuda/emu_core.h (one coroutine per CUDA thread, cp.async landing at issue or only
 * at wait_group, wgmma through the 128-byte-swizzled descriptors), against a float64 product with the epilogue's
 * roundings replayed: every output within two units in the last place of its dtype. Partial tiles in M, N and K,
 * a K long enough to wrap the ring, GELU, ReLU, residuals (also aliasing y), biases in the dtype and in float32,
 * float16 and bfloat16; guard bytes around y. What it cannot see: timing, bank conflicts, or a misreading of the
 * PTX layouts shared by kernel and emulator (tests/test_cuda_ops.c on the GPU is the final word).
 *
 *   make -C dev/cuda gemm_emu && ./dev/cuda/gemm_emu [-v]
 * ctest runs it as test_gemm_emu wherever the CUDA backend is built.
 */
#include "emu_core.h"

#define CK_GEMM_LAUNCH(kern, grid, block, smem, stream, ...) emu::launch_smem(kern, grid, block, smem, __VA_ARGS__)
#include "../../src/ops/cuda/gemm_sm90.cu"
#define CK_NARROW_SMS 3 /* a small persistent grid: each block walks several tiles, the last ones partial */
#include "../../src/ops/cuda/gemm_narrow.cu"

#include <cmath>

using emu::f2h;
using emu::h2f;
using emu::ulp;

static int g_verbose, g_fail, g_count;

struct Case {
    bool bf16;
    int  M, N, K, act, bias, res; /* bias: 0 none, 1 dtype, 2 float32; res: 0 none, 1 own buffer, 2 aliasing y */
    bool ln;                      /* a LayerNorm in front: x normalized on the fly with given row statistics */
};

static void run_case(const Case &c, int copy_mode, uint32_t seed, bool narrow) {
    const bool   bf = c.bf16;
    const size_t guard = 256;
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<uint16_t> x((size_t)c.M * c.K), w((size_t)c.N * c.K), bt(c.N), r((size_t)c.M * c.N);
    std::vector<uint16_t> y((size_t)c.M * c.N + 2 * guard);
    std::vector<float>    bfv(c.N);
    for (auto &v : x) v = f2h(nd(rng), bf);
    for (auto &v : w) v = f2h(nd(rng) / sqrtf((float)c.K), bf);
    for (int n = 0; n < c.N; n++) bfv[n] = 0.5f * nd(rng), bt[n] = f2h(bfv[n], bf);
    for (auto &v : r) v = f2h(nd(rng), bf);
    std::vector<float> lns(2 * (size_t)c.M), lng(c.K), lnb(c.K);
    for (int m = 0; m < c.M; m++) lns[2 * m] = 0.3f * nd(rng), lns[2 * m + 1] = 0.5f + 0.01f * (float)(m % 50);
    for (int k = 0; k < c.K; k++) lng[k] = 1.0f + 0.3f * nd(rng), lnb[k] = 0.3f * nd(rng);
    /* the operand as the kernel forms it: ((x − mean)·rstd)·γ + β in float32, rounded to the dtype */
    std::vector<float> xa((size_t)c.M * c.K);
    for (int m = 0; m < c.M; m++)
        for (int k = 0; k < c.K; k++) {
            const float v = h2f(x[(size_t)m * c.K + k], bf);
            xa[(size_t)m * c.K + k] = c.ln ? h2f(f2h(((v - lns[2 * m]) * lns[2 * m + 1]) * lng[k] + lnb[k], bf), bf) : v;
        }
    const uint16_t poison = 0x7FFF;
    std::fill(y.begin(), y.end(), poison);
    if (c.res == 2) std::copy(r.begin(), r.end(), y.begin() + guard);
    emu::bufs = {{(const char *)x.data(), x.size() * 2}, {(const char *)w.data(), w.size() * 2}};
    emu::deferred_copies = copy_mode;

    ck__gemm_args a;
    memset(&a, 0, sizeof a);
    a.x = x.data(), a.w = w.data(), a.y = y.data() + guard;
    a.bias_t = c.bias == 1 ? bt.data() : nullptr, a.bias_f = c.bias == 2 ? bfv.data() : nullptr;
    a.res = c.res == 1 ? (const void *)r.data() : c.res == 2 ? (const void *)(y.data() + guard) : nullptr;
    a.M = c.M, a.N = c.N, a.K = c.K, a.act = c.act, a.bf16 = bf;
    if (c.ln) a.ln_stats = lns.data(), a.ln_g = lng.data(), a.ln_b = lnb.data();
    const long mma0 = emu::n_mma;
    const int  ran  = narrow ? ck__gemm_narrow_sm90(&a, nullptr) : ck__gemm_sm90(&a, nullptr);
    g_count++;
    char name[160];
    snprintf(name, sizeof name, "%s %s M=%-4d N=%-4d K=%-4d act=%d bias=%d res=%d ln=%d copies=%s",
             narrow ? "narrow" : "tiled ", bf ? "bf16" : "f16 ", c.M, c.N, c.K, c.act, c.bias, c.res, (int)c.ln,
             copy_mode ? "deferred" : "at-issue");
    if (!ran) {
        printf("NOT OK %s: the launcher declined\n", name);
        g_fail++;
        return;
    }
    long bad = 0;
    for (size_t i = 0; i < guard; i++)
        if (y[i] != poison || y[guard + (size_t)c.M * c.N + i] != poison) bad++;
    if (bad) {
        printf("NOT OK %s: guard bytes overwritten\n", name);
        g_fail++;
        return;
    }
    double worst = 0, max_err = 0;
    for (int m = 0; m < c.M; m++)
        for (int n = 0; n < c.N; n++) {
            double acc = 0;
            for (int k = 0; k < c.K; k++) acc += (double)xa[(size_t)m * c.K + k] * h2f(w[(size_t)n * c.K + k], bf);
            double       f   = acc + (c.bias == 1 ? h2f(bt[n], bf) : c.bias == 2 ? bfv[n] : 0.0);
            const double pre = f;
            if (c.act) {
                f = h2f(f2h((float)f, bf), bf);
                f = c.act == 1 ? 0.5 * f * (1.0 + erf(f / sqrt(2.0))) : (f > 0 ? f : 0);
            }
            const double rr  = c.res ? h2f(r[(size_t)m * c.N + n], bf) : 0.0;
            const double ref = f + rr;
            const double got = h2f(y[guard + (size_t)m * c.N + n], bf);
            const double err = std::isfinite(got) ? fabs(got - ref) : INFINITY;
            /* one rounding of the output, one of the linear's output before the activation (its slope ≤ 1.13),
             * float32 accumulation */
            const double tol = ulp(ref, bf) + (c.act ? 1.2 * ulp(pre, bf) : 0.0) + 1e-6 * (1 + fabs(acc));
            max_err = std::max(max_err, err), worst = std::max(worst, err / tol);
            if (!(err <= tol) && bad++ < 3) printf("  m=%d n=%d got %.6f ref %.6f\n", m, n, got, ref);
        }
    const bool ok = bad == 0;
    if (!ok) g_fail++;
    if (!ok || g_verbose)
        printf("%s %s: max_abs %.3g (%.0f%% of tol) bad %ld wgmma %ld\n", ok ? "ok    " : "NOT OK", name, max_err,
               100 * worst, bad, emu::n_mma - mma0);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-v")) g_verbose = 1;
    const Case cases[] = {
        /* bf16    M    N    K  act bias res ln */
        {false, 128, 128, 64, 0, 0, 0, false},  {false, 200, 136, 112, 1, 1, 0, false},
        {true, 200, 136, 112, 1, 1, 0, false},  {false, 130, 64, 256, 1, 2, 1, false},
        {true, 64, 256, 320, 2, 1, 0, false},   {false, 257, 128, 96, 0, 1, 2, false},
        {true, 100, 24, 448, 1, 1, 1, false},   {false, 96, 448, 112, 1, 1, 0, false},
        {false, 200, 336, 112, 0, 1, 0, true},  {true, 130, 448, 112, 1, 1, 0, true},
        {false, 70, 128, 224, 1, 2, 1, true},   {true, 129, 136, 200, 0, 1, 0, true},
    };
    /* the narrow kernel's: K ≤ 128 (one or two 64-wide operand tiles), N ≤ 512 (one to four 128-column chunks,
     * odd counts too), M over several tiles per block of the 3-block grid and a partial last tile */
    const Case narrow_cases[] = {
        /* bf16    M    N    K  act bias res ln */
        {false, 128, 128, 64, 0, 0, 0, false},  {false, 700, 336, 112, 0, 1, 0, false},
        {true, 700, 448, 112, 1, 1, 0, false},  {false, 1000, 112, 112, 0, 1, 2, false},
        {false, 391, 448, 112, 1, 2, 1, false}, {true, 300, 512, 128, 2, 1, 0, false},
        {false, 257, 24, 40, 1, 1, 1, false},   {true, 129, 136, 8, 0, 2, 2, false},
        {false, 520, 336, 112, 0, 1, 0, true},  {true, 650, 448, 112, 1, 1, 0, true},
        {false, 1, 256, 96, 1, 1, 1, true},     {false, 900, 384, 64, 0, 0, 0, false},
    };
    uint32_t seed = 1;
    for (int mode = 0; mode < 2; mode++)
        for (const Case &c : cases) run_case(c, mode, seed++, false);
    for (int mode = 0; mode < 2; mode++)
        for (const Case &c : narrow_cases) run_case(c, mode, seed++, true);
    printf("gemm_emu: %d cases, %d failed\n", g_count, g_fail);
    return g_fail ? 1 : 0;
}
