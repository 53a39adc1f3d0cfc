/* Host emulation of src/ops/cuda/refiner_conv.cu (the refiner's fused 3×3 convolution on wgmma): the kernel's
 * own source runs on the CPU through dev/cuda/emu_core.h (one coroutine per CUDA thread, emulated wgmma with
 * the swizzled and the unswizzled K-major descriptors, named barriers), against a float64 reference:
 *   - y = conv3×3(act(x)) + bias, act = GroupNorm with frozen statistics + ReLU (or none), formed from the same
 *     rounded operand values the kernel forms; every output within one unit in the last place of its dtype
 *     (plus the float32 accumulation's share);
 *   - the moments of every (row, 128-pixel segment, group) against float64 moments of the kernel's own outputs;
 *   - rows outside the requested band, the guard bytes around y and the moments of other rows untouched;
 * over float16 and bfloat16, dilations 1, 2, 4, 8, partial segments, narrow images, bands, batches of two, and
 * two emulated devices (132 SMs: one chain per warpgroup; 2 SMs: each warpgroup walks many chains through its
 * ring). What it cannot see: timing, bank conflicts, or a misreading of the PTX layouts shared by kernel and
 * emulator (the GPU op test, tests/test_cuda_ops.c, is the final word).
 *
 *   make -C dev/cuda refiner_emu && ./dev/cuda/refiner_emu [-v]
 * ctest runs it as test_refiner_emu wherever the CUDA backend is built.
 */
#include "emu_core.h"

#define CK_RCONV_LAUNCH(kern, grid, block, smem, stream, ...) emu::launch_smem(kern, grid, block, smem, __VA_ARGS__)
#include "../../src/ops/cuda/refiner_conv.cu"

#include <cmath>

using emu::f2h;
using emu::h2f;
using emu::ulp;

static int g_verbose, g_fail, g_count;


struct Case {
    bool bf16;
    int  B, H, W, row0, h, d;
    bool act;
    int  cin; /* 64 (residual blocks) or 8 (the stem) */
    bool inf; /* one input value +Inf (row 3, pixel 50, channel 2): only its 3×3 neighbourhood may turn non-finite */
    bool res; /* a folded GroupNorm 2: the residual added before the ReLU, the formed input stored to a_out */
    bool aout_only; /* a folded stem GroupNorm: the formed input stored to a_out, no residual */
};

static void run_case(const Case &c, uint32_t seed) {
    const bool   bf = c.bf16;
    const int    CI = c.cin;
    const size_t nx = (size_t)c.B * c.H * c.W * CI, ny = (size_t)c.B * c.h * c.W * 64;
    const int    nseg = (c.W + 127) / 128;
    const size_t nm   = (size_t)c.B * c.H * nseg * 8 * 2, guard = 512;
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<uint16_t> x(nx), w(64 * CI * 9), y(ny + 2 * guard);
    std::vector<float>    bias(64), gamma(64), beta(64), stats(c.B * 16), mom(nm + 2 * 64);
    const bool            aout = c.res || c.aout_only;
    std::vector<uint16_t> rs(c.res ? nx : 0), ao(aout ? nx + 2 * guard : 0);
    for (auto &v : x) v = f2h(nd(rng) * 1.5f + 0.3f, bf);
    for (auto &v : rs) v = f2h(nd(rng) + 0.2f, bf);
    if (c.inf) x[((size_t)3 * c.W + 50) * CI + 2] = bf ? 0x7F80 : 0x7C00;
    for (auto &v : w) v = f2h(nd(rng) / sqrtf(9.0f * CI), bf); /* outputs of order one */
    for (int i = 0; i < 64; i++) bias[i] = 0.3f * nd(rng), gamma[i] = 1.0f + 0.3f * nd(rng), beta[i] = 0.5f * nd(rng);
    for (int i = 0; i < c.B * 8; i++) stats[2 * i] = 0.3f + 0.2f * nd(rng), stats[2 * i + 1] = 0.6f + 0.1f * (float)i;
    const uint16_t poison = 0x7FFF; /* NaN in both dtypes */
    std::fill(y.begin(), y.end(), poison);
    std::fill(ao.begin(), ao.end(), poison);
    std::fill(mom.begin(), mom.end(), NAN);
    emu::bufs = {{(const char *)x.data(), x.size() * 2}};

    ck__rconv_args a;
    memset(&a, 0, sizeof a);
    a.x = x.data(), a.y = y.data() + guard, a.w = w.data(), a.bias = bias.data();
    a.stats = c.act ? stats.data() : nullptr, a.gamma = gamma.data(), a.beta = beta.data();
    a.moments = mom.data() + 64;
    if (c.res) a.residual = rs.data();
    if (aout) a.a_out = ao.data() + guard;
    a.B = c.B, a.H = c.H, a.W = c.W, a.row0 = c.row0, a.h = c.h, a.dilation = c.d, a.bf16 = bf, a.in_channels = CI;
    a.sm_count = g_emu_device ? 2 : 132;
    const long mma0 = emu::n_mma;
    const int  ran  = ck__refiner_conv(&a, nullptr);
    g_count++;
    char name[160];
    snprintf(name, sizeof name, "%s cin=%-2d B=%d H=%-3d W=%-3d rows [%d,%d) d=%d act=%d%s sms=%d", bf ? "bf16" : "f16 ",
             CI, c.B, c.H, c.W, c.row0, c.row0 + c.h, c.d, (int)c.act, c.res ? "+res" : aout ? "+a_out" : "", a.sm_count);
    if (!ran) {
        printf("NOT OK %s: the launcher declined\n", name);
        g_fail++;
        return;
    }
    long bad = 0;
    for (size_t i = 0; i < guard; i++)
        if (y[i] != poison || y[guard + ny + i] != poison || (aout && (ao[i] != poison || ao[guard + nx + i] != poison)))
            bad++;
    for (int i = 0; i < 64; i++)
        if (!std::isnan(mom[i]) || !std::isnan(mom[64 + nm + i])) bad++;
    if (bad) {
        printf("NOT OK %s: guard bytes overwritten\n", name);
        g_fail++;
        return;
    }
    /* act(x) as the kernel forms it: float32 operations in the same order, rounded to the dtype */
    std::vector<double> ax(nx);
    long                abad = 0; /* a_out: the formed input, bit for bit, over the band's rows; untouched elsewhere */
    for (size_t i = 0; i < nx; i++) {
        const int   ch = (int)(i % CI), b = (int)(i / ((size_t)c.H * c.W * CI)), g = ch / 8;
        const int   row = (int)((i / ((size_t)c.W * CI)) % c.H);
        const float v  = h2f(x[i], bf);
        if (!c.act) {
            ax[i] = v;
            continue;
        }
        const float mean = stats[(b * 8 + g) * 2], rstd = stats[(b * 8 + g) * 2 + 1];
        const float sc = rstd * gamma[ch], sh = beta[ch] - mean * sc;
        float       f  = v * sc + sh;
        if (c.res) f += h2f(rs[i], bf);
        const uint16_t fa = f2h(f > 0.0f ? f : 0.0f, bf);
        ax[i]             = h2f(fa, bf);
        if (aout) {
            const bool     in_band = row >= c.row0 && row < c.row0 + c.h;
            const uint16_t want    = in_band ? fa : poison;
            if (ao[guard + i] != want && abad++ < 3)
                printf("  a_out b=%d row=%d elem %zu: got 0x%04x want 0x%04x\n", b, row, i, ao[guard + i], want);
        }
    }
    double worst = 0, max_err = 0, mworst = 0;
    long   nbad = 0, mbad = 0;
    std::vector<double> out((size_t)c.W * 64);
    for (int b = 0; b < c.B; b++)
        for (int i = 0; i < c.h; i++) {
            const int yy = c.row0 + i;
            for (int px = 0; px < c.W; px++)
                for (int oc = 0; oc < 64; oc++) {
                    double s = bias[oc];
                    for (int ky = 0; ky < 3; ky++) {
                        const int iy = yy + (ky - 1) * c.d;
                        if (iy < 0 || iy >= c.H) continue;
                        for (int kx = 0; kx < 3; kx++) {
                            const int ix = px + (kx - 1) * c.d;
                            if (ix < 0 || ix >= c.W) continue;
                            const double *xr = &ax[(((size_t)b * c.H + iy) * c.W + ix) * CI];
                            for (int ic = 0; ic < CI; ic++) s += xr[ic] * h2f(w[(oc * CI + ic) * 9 + ky * 3 + kx], bf);
                        }
                    }
                    const double got = h2f(y[guard + (((size_t)b * c.h + i) * c.W + px) * 64 + oc], bf);
                    out[(size_t)px * 64 + oc] = got;
                    if (!std::isfinite(s)) { /* the reference is Inf or NaN here: so must the kernel be */
                        if (std::isfinite(got) && nbad++ < 3)
                            printf("  y b=%d row=%d px=%d oc=%d got %.6f, not the non-finite reference\n", b, yy, px, oc, got);
                        continue;
                    }
                    const double err = std::isfinite(got) ? fabs(got - s) : INFINITY;
                    const double tol = ulp(s, bf) + 1e-5 * (1 + fabs(s));
                    max_err = std::max(max_err, err), worst = std::max(worst, err / tol);
                    if (!(err <= tol) && nbad++ < 3)
                        printf("  y b=%d row=%d px=%d oc=%d got %.6f ref %.6f\n", b, yy, px, oc, got, s);
                }
            /* the moments of the kernel's own rounded outputs, per segment and group */
            for (int sg = 0; sg < nseg; sg++)
                for (int g = 0; g < 8; g++) {
                    const int p0 = sg * 128, p1 = std::min(c.W, p0 + 128);
                    double    m = 0, m2 = 0;
                    for (int px = p0; px < p1; px++)
                        for (int k = 0; k < 8; k++) m += out[(size_t)px * 64 + 8 * g + k];
                    m /= 8.0 * (p1 - p0);
                    for (int px = p0; px < p1; px++)
                        for (int k = 0; k < 8; k++) m2 += (out[(size_t)px * 64 + 8 * g + k] - m) * (out[(size_t)px * 64 + 8 * g + k] - m);
                    const float *gm = &mom[64 + ((((size_t)b * c.H + yy) * nseg + sg) * 8 + g) * 2];
                    if (!std::isfinite(m) || !std::isfinite(m2)) continue; /* a segment with a non-finite output */
                    const double em = fabs(gm[0] - m), em2 = fabs(gm[1] - m2);
                    const double tm = 2e-6 * (fabs(m) + sqrt(m2 / (8.0 * (p1 - p0)))), tm2 = 2e-5 * m2 + 1e-9;
                    mworst = std::max(mworst, std::max(em / tm, em2 / tm2));
                    if (!(em <= tm && em2 <= tm2) && mbad++ < 3)
                        printf("  moments b=%d row=%d seg=%d g=%d got (%.7g, %.7g) ref (%.7g, %.7g)\n", b, yy, sg, g,
                               gm[0], gm[1], m, m2);
                }
        }
    /* moments of rows outside the band stay untouched */
    for (int b = 0; b < c.B; b++)
        for (int yy = 0; yy < c.H; yy++) {
            if (yy >= c.row0 && yy < c.row0 + c.h) continue;
            for (int k = 0; k < nseg * 16; k++)
                if (!std::isnan(mom[64 + (((size_t)b * c.H + yy) * nseg) * 16 + k]) && mbad++ < 3)
                    printf("  moments of row %d (outside the band) written\n", yy);
        }
    const bool ok = nbad == 0 && mbad == 0 && abad == 0;
    if (!ok) g_fail++;
    if (!ok || g_verbose)
        printf("%s %s: max_abs %.3g (%.0f%% of tol), moments at %.0f%% of tol, bad %ld/%ld, wgmma %ld\n",
               ok ? "ok    " : "NOT OK", name, max_err, 100 * worst, 100 * mworst, nbad, mbad, emu::n_mma - mma0);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-v")) g_verbose = 1;
    const Case cases[] = {
        /* bf16  B  H    W  row0  h  d  act  cin */
        {false, 1, 6, 128, 0, 6, 1, false, 64},  {false, 1, 9, 130, 0, 9, 1, true, 64},  {true, 1, 9, 130, 0, 9, 1, true, 64},
        {false, 2, 7, 40, 0, 7, 2, true, 64},    {true, 1, 12, 200, 0, 12, 4, false, 64}, {false, 1, 20, 136, 5, 7, 8, true, 64},
        {true, 2, 18, 150, 0, 18, 8, true, 64},  {false, 1, 11, 256, 3, 6, 4, true, 64},  {false, 1, 5, 24, 0, 5, 8, true, 64},
        {true, 1, 16, 129, 0, 16, 2, true, 64},
        /* chains grown until the tasks fit one round of the warpgroups (27 → 35 steps with two SMs) */
        {false, 1, 35, 384, 0, 35, 1, true, 64},
        /* the stem: 8 input channels, dilation 1, no act */
        {false, 1, 7, 136, 0, 7, 1, false, 8}, {true, 2, 6, 200, 0, 6, 1, false, 8}, {false, 1, 9, 40, 2, 5, 1, false, 8},
        {false, 1, 8, 130, 0, 8, 1, false, 8, true}, {false, 1, 8, 130, 0, 8, 1, false, 64, true},
        /* a folded GroupNorm 2: the residual and a_out (whole maps, a band, chains longer than one round) */
        {false, 1, 9, 130, 0, 9, 1, true, 64, false, true}, {true, 2, 18, 150, 0, 18, 8, true, 64, false, true},
        {false, 1, 20, 136, 5, 7, 2, true, 64, false, true}, {true, 1, 35, 260, 0, 35, 4, true, 64, false, true},
        /* a folded stem GroupNorm: a_out without a residual */
        {false, 2, 11, 140, 0, 11, 1, true, 64, false, false, true}, {true, 1, 12, 200, 2, 7, 1, true, 64, false, false, true},
    };
    uint32_t seed = 1;
    for (int dev = 0; dev < 2; dev++) {
        g_emu_device = dev;
        for (const Case &c : cases) run_case(c, seed++);
    }
    printf("refiner_emu: %d cases, %d failed\n", g_count, g_fail);
    return g_fail ? 1 : 0;
}
