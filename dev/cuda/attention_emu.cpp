/* Host emulation of src/ops/cuda/attention.cu: runs the real kernel source on the CPU, one coroutine per
 * CUDA thread, so fragment layouts, swizzles, masks, tile indexing and the cp.async pipeline can be checked
 * on a machine without a GPU. Every thread of a block is a ucontext coroutine; warp collectives (ldmatrix,
 * mma.sync, shfl, __syncwarp) and __syncthreads are rendezvous points where the emulator switches threads,
 * and the collectives follow the register layouts of the PTX ISA ("Matrix Fragments for mma.m16n8k16",
 * "ldmatrix"). cp.async copies land either at issue or only at cp.async.wait_group (two modes), which
 * exposes a missing wait or barrier and a stage overwritten while still being read. Global reads through
 * cp.async are bounds-checked against the input tensors; outputs are poisoned (NaN) and fenced with guard
 * bytes. The FA3 kernel (attention_fa3.cuh) also gets the copy engine (3-D boxes landing 128-byte swizzled,
 * rows out of bounds zero-filled, reads bounds-checked; at issue, or deferred until some thread waits),
 * transaction barriers (phases, arrival counts, expected bytes), named barriers and wgmma with both operands
 * in shared memory; a producer that refills a stage before its release, or a consumer that never releases
 * one, ends in the deadlock report. The path straight from qkv runs with P·V over all 64 columns
 * (CK_ATTN_PV56=0) and over a head's 56 (the default, wgmma m64n56k16), which must be the form issued. Two
 * emulated devices: 132 SMs, where small shapes split their keys, and
 * 2, where every block walks all of its keys through the ring. What it cannot see: real timing, bank
 * conflicts, register spills, or a misreading of the PTX layouts shared by kernel and emulator (the GPU
 * bench, dev/cuda/attention_bench.cu, is the final word).
 *
 * Build and run (from the repository root):
 *   make -C dev/cuda attn_emu && ./dev/cuda/attn_emu          (or: ./dev/cuda/attn_emu -v)
 * ctest runs it as test_attention_emu wherever the CUDA backend is built.
 */
#define CK_ATTN_EMU 1

#include "emu_core.h"

#define CK_ATTN_LAUNCH(kern, grid, block, stream, ...) emu::launch(kern, grid, block, __VA_ARGS__)
#define CK_ATTN_LAUNCH_SMEM(kern, grid, block, smem, stream, ...) emu::launch_smem(kern, grid, block, smem, __VA_ARGS__)
#include "../../src/ops/cuda/attention.cu"

extern "C" cudaStream_t ck_cuda_stream(ck_backend *be) {
    (void)be;
    return nullptr;
}
static std::vector<float> g_scratch((size_t)16 << 20); /* 64 MiB, as a backend's op temporaries */
extern "C" void *ck_cuda_scratch(ck_backend *be, size_t *bytes) {
    (void)be;
    *bytes = g_scratch.size() * sizeof(float);
    return g_scratch.data();
}
extern "C" void ck__cuda_failed(const char *file, int line, const char *expr, const char *what) {
    fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, expr, what);
    exit(2);
}

/* ------------------------------------------------------------------------------------------------------- */

static uint16_t to_bits(float f, ck_dtype dt) {
    if (dt == CK_DTYPE_BF16) return ck_f32_to_bf16(f);
    return ck_f32_to_f16(f);
}
static float from_bits(uint16_t h, ck_dtype dt) { return dt == CK_DTYPE_BF16 ? ck_bf16_to_f32(h) : ck_f16_to_f32(h); }

struct Case {
    ck_dtype dt;
    int      HD;
    int64_t  G;
    int      Tq, Tk;
    int      variant; /* requested */
    int      expect;  /* variant that must run (-1: must be refused) */
    float    qscale;  /* spread of the scores: larger = peakier softmax, more rescaling */
};

static int g_verbose, g_fail, g_count;
/* CK_ATTN_FP8=1 cases: the e4m3 copies live in the scratch (the copy engine reads them there), and the output is
 * held to the FP8 path's own bound, a relative RMS error against float64 (tools/reference/fp8_attention_error.py:
 * 5e-2 at score std 1, 8e-2 at 2; a wrong key order or scale gives ~1) */
static int          g_fp8;
static const double kFp8RelRms = 0.15;
static void         fp8_allow_scratch() {
    if (g_fp8) emu::bufs.push_back({(const char *)g_scratch.data(), g_scratch.size() * sizeof(float)});
}

static void run_case(const Case &c, int copy_mode, uint32_t seed) {
    const size_t es = ck_dtype_size(c.dt);
    const size_t nq = (size_t)c.G * c.Tq * c.HD, nk = (size_t)c.G * c.Tk * c.HD;
    const size_t guard = 256;
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    /* inputs at their stored precision; the fp64 reference reads the same rounded values */
    std::vector<double>  qd(nq), kd(nk), vd(nk);
    std::vector<uint8_t> qb(nq * es), kb(nk * es), vb(nk * es), ob(nq * es + 2 * guard);
    auto fill = [&](std::vector<double> &d, std::vector<uint8_t> &b, size_t n, float sc) {
        for (size_t i = 0; i < n; i++) {
            const float f = nd(rng) * sc;
            if (c.dt == CK_DTYPE_F32) {
                memcpy(&b[i * 4], &f, 4);
                d[i] = f;
            } else {
                const uint16_t h = to_bits(f, c.dt);
                memcpy(&b[i * 2], &h, 2);
                d[i] = from_bits(h, c.dt);
            }
        }
    };
    fill(qd, qb, nq, c.qscale);
    fill(kd, kb, nk, 1.0f);
    fill(vd, vb, nk, 1.0f);
    memset(ob.data(), 0xA5, ob.size());
    memset(ob.data() + guard, 0xFF, nq * es); /* NaN in every dtype */
    emu::bufs = {{(const char *)qb.data(), qb.size()}, {(const char *)kb.data(), kb.size()},
                 {(const char *)vb.data(), vb.size()}};
    fp8_allow_scratch();
    emu::deferred_copies = copy_mode;

    const int64_t sq[3] = {c.G, c.Tq, c.HD}, sk[3] = {c.G, c.Tk, c.HD};
    ck_tensor     q = ck_tensor_make(qb.data(), c.dt, 3, sq), k = ck_tensor_make(kb.data(), c.dt, 3, sk),
              v = ck_tensor_make(vb.data(), c.dt, 3, sk), o = ck_tensor_make(ob.data() + guard, c.dt, 3, sq);
    const float scale = 1.0f / sqrtf(56.0f);
    const long  mma0  = emu::n_mma;
    const int   fp80  = g_fa3_fp8_calls;
    const int   used  = ck__attention_cuda_variant(nullptr, &o, &q, &k, &v, scale, (ck_attn_variant)c.variant);
    if (g_fp8 && g_fa3_fp8_calls == fp80) {
        printf("NOT OK %s HD=%d Tq=%d Tk=%d: the FP8 path was not taken\n", ck_dtype_name(c.dt), c.HD, c.Tq, c.Tk);
        g_fail++, g_count++;
        return;
    }
    g_count++;
    char name[160];
    snprintf(name, sizeof name, "%-4s HD=%-2d G=%-3lld Tq=%-4d Tk=%-4d %-8s -> %-8s copies=%s%s", ck_dtype_name(c.dt),
             c.HD, (long long)c.G, c.Tq, c.Tk, ck__attn_variant_name(c.variant), ck__attn_variant_name(used),
             copy_mode ? "deferred" : "at-issue", g_emu_device ? " sms=2" : "");
    if (g_fp8) snprintf(name + strlen(name), sizeof name - strlen(name), " fp8");
    if (c.variant == CK_ATTN_FA3 && g_fa3_config >= 0)
        snprintf(name + strlen(name), sizeof name - strlen(name), " %s", ck__attn_fa3_config_name(g_fa3_config));
    if (used != c.expect) {
        printf("NOT OK %s: expected variant %s\n", name, ck__attn_variant_name(c.expect));
        g_fail++;
        return;
    }
    if (used < 0) {
        if (g_verbose) printf("ok     %s (refused as expected)\n", name);
        return;
    }
    for (size_t i = 0; i < guard; i++)
        if (ob[i] != 0xA5 || ob[guard + nq * es + i] != 0xA5) {
            printf("NOT OK %s: guard bytes overwritten\n", name);
            g_fail++;
            return;
        }
    const double atol = c.dt == CK_DTYPE_F32 ? 2e-6 : c.dt == CK_DTYPE_F16 ? 2e-3 : 1.2e-2;
    const double rtol = c.dt == CK_DTYPE_F32 ? 1e-5 : c.dt == CK_DTYPE_F16 ? 4e-3 : 1.2e-2;
    double       max_err = 0, worst = 0, se = 0, sr = 0;
    long         bad = 0, nonfinite = 0;
    std::vector<double> s(c.Tk);
    for (int64_t g = 0; g < c.G; g++)
        for (int i = 0; i < c.Tq; i++) {
            const double *qr = &qd[((size_t)g * c.Tq + i) * c.HD];
            double        mx = -INFINITY, sum = 0;
            for (int j = 0; j < c.Tk; j++) {
                const double *kr = &kd[((size_t)g * c.Tk + j) * c.HD];
                double        dot = 0;
                for (int d = 0; d < c.HD; d++) dot += qr[d] * kr[d];
                s[j] = dot * scale;
                mx   = std::max(mx, s[j]);
            }
            for (int j = 0; j < c.Tk; j++) sum += (s[j] = exp(s[j] - mx));
            for (int d = 0; d < c.HD; d++) {
                double ref = 0;
                for (int j = 0; j < c.Tk; j++) ref += s[j] * vd[((size_t)g * c.Tk + j) * c.HD + d];
                ref /= sum;
                const size_t idx = ((size_t)g * c.Tq + i) * c.HD + d;
                double       got;
                if (c.dt == CK_DTYPE_F32) {
                    float f;
                    memcpy(&f, &ob[guard + idx * 4], 4);
                    got = f;
                } else {
                    uint16_t h;
                    memcpy(&h, &ob[guard + idx * 2], 2);
                    got = from_bits(h, c.dt);
                }
                if (!std::isfinite(got)) {
                    if (nonfinite++ < 3) printf("  non-finite at g=%lld row=%d col=%d\n", (long long)g, i, d);
                    continue;
                }
                const double err = fabs(got - ref), tol = atol + rtol * fabs(ref);
                max_err = std::max(max_err, err);
                worst   = std::max(worst, err / tol);
                se += err * err, sr += ref * ref;
                if (!g_fp8 && err > tol && bad++ < 3)
                    printf("  g=%lld row=%d col=%d got %.6f ref %.6f\n", (long long)g, i, d, got, ref);
            }
        }
    const double rel_rms = sr > 0 ? sqrt(se / sr) : 0.0;
    if (g_fp8) worst = rel_rms / kFp8RelRms, bad = rel_rms > kFp8RelRms;
    const bool ok = bad == 0 && nonfinite == 0;
    if (!ok) g_fail++;
    if (!ok || g_verbose)
        printf("%s %s: max_abs %.3g rel_rms %.3g (%.0f%% of tol) bad %ld nonfinite %ld mma %ld\n",
               ok ? "ok    " : "NOT OK", name, max_err, rel_rms, 100 * worst, bad, nonfinite, emu::n_mma - mma0);
}

/* The qkv-direct cases' buffers: a random qkv projection of nqkv 16-bit values (the q columns, the first C of
 * every 3C, with twice the spread of k and v) and their float64 values, and an output of ny values poisoned with
 * NaN between guard bytes; registered as the emulator's only input. */
struct QkvIO {
    static constexpr size_t guard = 256;
    ck_dtype                dt;
    int64_t                 ny;
    std::vector<double>     xd;
    std::vector<uint8_t>    xb, yb;
    QkvIO(ck_dtype dt_, int64_t nqkv, int64_t C, int64_t ny_, int copy_mode, uint32_t seed)
        : dt(dt_), ny(ny_), xd(nqkv), xb(nqkv * 2), yb(ny_ * 2 + 2 * guard) {
        std::mt19937                    rng(seed);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (int64_t i = 0; i < nqkv; i++) {
            const uint16_t h = to_bits(nd(rng) * (i % (3 * C) < C ? 2.0f : 1.0f), dt);
            memcpy(&xb[i * 2], &h, 2);
            xd[i] = from_bits(h, dt);
        }
        memset(yb.data(), 0xA5, yb.size());
        memset(yb.data() + guard, 0xFF, ny * 2);
        emu::bufs            = {{(const char *)xb.data(), xb.size()}};
        emu::deferred_copies = copy_mode;
    }
    void *y() { return yb.data() + guard; }
    bool  guards_ok() const {
        for (size_t i = 0; i < guard; i++)
            if (yb[i] != 0xA5 || yb[guard + ny * 2 + i] != 0xA5) return false;
        return true;
    }
    double y_at(int64_t i) const {
        uint16_t h;
        memcpy(&h, &yb[guard + i * 2], 2);
        return from_bits(h, dt);
    }
};

/* The attention_qkv op's direct path (ck__attention_tokens_fa3): q, k, v read from a (B, T, 3·heads·56) qkv buffer
 * as strided 56-column views, o written into (B, T, heads·56) with guard bytes around it, against fp64. */
static void run_tokens_case(ck_dtype dt, int64_t B, int T, int heads, int copy_mode, uint32_t seed) {
    const int     HD = 56;
    const int64_t C = (int64_t)heads * HD, nqkv = B * T * 3 * C, ny = B * T * C;
    QkvIO                      io(dt, nqkv, C, ny, copy_mode, seed);
    fp8_allow_scratch();
    const std::vector<double> &xd = io.xd;
    const int64_t              sx[3] = {B, T, 3 * C}, sy[3] = {B, T, C};
    ck_tensor x = ck_tensor_make(io.xb.data(), dt, 3, sx), y = ck_tensor_make(io.y(), dt, 3, sy);
    const float   scale = 1.0f / sqrtf(56.0f);
    const int     fp80  = g_fa3_fp8_calls;
    const int     used  = ck__attention_tokens_fa3(nullptr, &y, &x, heads, scale);
    g_count++;
    char name[160];
    snprintf(name, sizeof name, "%-4s tokens B=%lld T=%d heads=%d copies=%s%s%s", ck_dtype_name(dt), (long long)B, T,
             heads, copy_mode ? "deferred" : "at-issue", g_emu_device ? " sms=2" : "", g_fp8 ? " fp8" : "");
    bool ok = used == 1 && io.guards_ok() && (!g_fp8 || g_fa3_fp8_calls > fp80);
    if (g_fp8 && g_fa3_fp8_calls == fp80) printf("  the FP8 path was not taken\n");
    double worst = 0, max_err = 0, se = 0, sr = 0;
    long   bad = 0;
    std::vector<double> s(T);
    for (int64_t b = 0; ok && b < B; b++)
        for (int h = 0; h < heads; h++)
            for (int i = 0; i < T; i++) {
                const double *qr = &xd[(b * T + i) * 3 * C + h * HD];
                double        mx = -INFINITY, sum = 0;
                for (int j = 0; j < T; j++) {
                    const double *kr  = &xd[(b * T + j) * 3 * C + C + h * HD];
                    double        dot = 0;
                    for (int d = 0; d < HD; d++) dot += qr[d] * kr[d];
                    s[j] = dot * scale;
                    mx   = std::max(mx, s[j]);
                }
                for (int j = 0; j < T; j++) sum += (s[j] = exp(s[j] - mx));
                for (int d = 0; d < HD; d++) {
                    double ref = 0;
                    for (int j = 0; j < T; j++) ref += s[j] * xd[(b * T + j) * 3 * C + 2 * C + h * HD + d];
                    ref /= sum;
                    const double got = io.y_at((b * T + i) * C + h * HD + d), tol = (dt == CK_DTYPE_F16 ? 2e-3 : 1.2e-2) * (1 + fabs(ref));
                    const double err = std::isfinite(got) ? fabs(got - ref) : INFINITY;
                    max_err = std::max(max_err, err);
                    worst   = std::max(worst, err / tol);
                    se += err * err, sr += ref * ref;
                    if (!g_fp8 && err > tol && bad++ < 3)
                        printf("  b=%lld head=%d row=%d col=%d got %.6f ref %.6f\n", (long long)b, h, i, d, got, ref);
                }
            }
    const double rel_rms = sr > 0 ? sqrt(se / sr) : 0.0;
    if (g_fp8) worst = rel_rms / kFp8RelRms, bad = !(rel_rms <= kFp8RelRms);
    ok = ok && bad == 0;
    if (!ok) g_fail++;
    if (!ok || g_verbose)
        printf("%s %s: used %d max_abs %.3g rel_rms %.3g (%.0f%% of tol) bad %ld\n", ok ? "ok    " : "NOT OK", name,
               used, max_err, rel_rms, 100 * worst, bad);
}

/* The attention_qkv op's windowed path (ck__attention_windows): qkv (B, H, W, 3·heads·HD) in win_h×win_w mask units,
 * queries 2×2 max-pooled or not, o written into (B, H/p, W/p, heads·HD) with guard bytes around it, against fp64. */
static void run_window_case(ck_dtype dt, int64_t B, int H, int W, int heads, int HD, int win_h, int win_w, int q_pool,
                            int copy_mode, uint32_t seed) {
    const int     pool = q_pool ? 2 : 1, Hq = H / pool, Wq = W / pool, qw = win_w / pool, qh = win_h / pool;
    const int     T = win_h * win_w, Tq = T / (pool * pool);
    const int64_t C = (int64_t)heads * HD, nqkv = B * H * W * 3 * C, ny = B * Hq * Wq * C;
    QkvIO                      io(dt, nqkv, C, ny, copy_mode, seed);
    fp8_allow_scratch();
    const std::vector<double> &xd = io.xd;
    const int64_t              sx[4] = {B, H, W, 3 * C}, sy[4] = {B, Hq, Wq, C};
    ck_tensor x = ck_tensor_make(io.xb.data(), dt, 4, sx), y = ck_tensor_make(io.y(), dt, 4, sy);
    const float   scale = 1.0f / sqrtf((float)HD);
    const int     used  = ck__attention_windows(nullptr, &y, &x, heads, win_h, win_w, q_pool, scale);
    g_count++;
    char name[160];
    snprintf(name, sizeof name, "%-4s windows B=%lld %dx%d heads=%d hd=%d win %dx%d%s copies=%s", ck_dtype_name(dt),
             (long long)B, H, W, heads, HD, win_h, win_w, q_pool ? " q_pool" : "", copy_mode ? "deferred" : "at-issue");
    bool ok = used == 1 && io.guards_ok();
    double worst = 0, max_err = 0;
    long   bad = 0;
    std::vector<double> s(T), qv(HD);
    auto tok = [&](int64_t b, int yy, int xx) { return ((b * H + yy) * W + xx) * 3 * C; };
    for (int64_t b = 0; ok && b < B; b++)
        for (int h = 0; h < heads; h++)
            for (int wy = 0; wy < H / win_h; wy++)
                for (int wx = 0; wx < W / win_w; wx++)
                    for (int i = 0; i < Tq; i++) {
                        const int qy = wy * win_h + pool * (i / qw), qx = wx * win_w + pool * (i % qw);
                        for (int d = 0; d < HD; d++) {
                            double m = -INFINITY;
                            for (int dy = 0; dy < pool; dy++)
                                for (int dx = 0; dx < pool; dx++) m = std::max(m, xd[tok(b, qy + dy, qx + dx) + h * HD + d]);
                            qv[d] = m;
                        }
                        double mx = -INFINITY, sum = 0;
                        for (int j = 0; j < T; j++) {
                            double dot = 0;
                            for (int d = 0; d < HD; d++)
                                dot += qv[d] * xd[tok(b, wy * win_h + j / win_w, wx * win_w + j % win_w) + C + h * HD + d];
                            s[j] = dot * scale;
                            mx   = std::max(mx, s[j]);
                        }
                        for (int j = 0; j < T; j++) sum += (s[j] = exp(s[j] - mx));
                        const int oy = wy * qh + i / qw, ox = wx * qw + i % qw;
                        for (int d = 0; d < HD; d++) {
                            double ref = 0;
                            for (int j = 0; j < T; j++)
                                ref += s[j] * xd[tok(b, wy * win_h + j / win_w, wx * win_w + j % win_w) + 2 * C + h * HD + d];
                            ref /= sum;
                            const double got = io.y_at(((b * Hq + oy) * Wq + ox) * C + h * HD + d), tol = (dt == CK_DTYPE_F16 ? 2e-3 : 1.2e-2) * (1 + fabs(ref));
                            const double err = std::isfinite(got) ? fabs(got - ref) : INFINITY;
                            max_err = std::max(max_err, err);
                            worst   = std::max(worst, err / tol);
                            if (err > tol && bad++ < 3)
                                printf("  b=%lld head=%d out=(%d,%d) col=%d got %.6f ref %.6f\n", (long long)b, h, oy, ox, d,
                                       got, ref);
                        }
                    }
    ok = ok && bad == 0;
    if (!ok) g_fail++;
    if (!ok || g_verbose)
        printf("%s %s: used %d max_abs %.3g (%.0f%% of tol) bad %ld\n", ok ? "ok    " : "NOT OK", name, used, max_err,
               100 * worst, bad);
}

int main(int argc, char **argv) {
    int fp8_only = 0; /* --fp8: the FP8 cases alone */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) g_verbose = 1;
        if (!strcmp(argv[i], "--fp8")) fp8_only = 1;
    }
    const ck_dtype BF = CK_DTYPE_BF16, HF = CK_DTYPE_F16, F32 = CK_DTYPE_F32;
    const int A = CK_ATTN_AUTO, SI = CK_ATTN_SIMT, SM = CK_ATTN_SMALL, F64 = CK_ATTN_FLASH64,
              F128 = CK_ATTN_FLASH128, WG = CK_ATTN_WGMMA, FA = CK_ATTN_FA3;
    const Case cases[] = {
        /* flash kernels: ragged Tq / Tk, several K tiles (both stages), peaky and flat softmax */
        {BF, 56, 2, 130, 77, F64, F64, 2.0f},
        {HF, 64, 1, 64, 64, F64, F64, 1.0f},
        {BF, 64, 2, 200, 300, F128, F128, 3.0f},
        {HF, 56, 1, 129, 129, F128, F128, 2.0f},
        {BF, 56, 1, 70, 200, F128, F128, 4.0f},
        {HF, 64, 1, 33, 1, F64, F64, 1.0f},
        {BF, 8, 2, 70, 90, F64, F64, 2.0f},
        {HF, 16, 1, 65, 130, F64, F64, 2.0f},
        {BF, 32, 1, 40, 64, F64, F64, 2.0f},
        {BF, 32, 1, 40, 64, F128, -1, 2.0f},
        /* mask-unit kernel: every NKT, ragged Tq / Tk, group counts that leave warps idle */
        {BF, 56, 7, 16, 64, SM, SM, 2.0f},
        {HF, 64, 5, 16, 64, SM, SM, 2.0f},
        {BF, 64, 5, 16, 16, SM, SM, 2.0f},
        {HF, 56, 9, 4, 16, SM, SM, 2.0f},
        {BF, 64, 6, 11, 50, SM, SM, 3.0f},
        {HF, 56, 3, 16, 30, SM, SM, 2.0f},
        {BF, 56, 2, 1, 1, SM, SM, 1.0f},
        {BF, 8, 3, 16, 40, SM, SM, 2.0f},
        {HF, 16, 3, 7, 64, SM, SM, 2.0f},
        {BF, 32, 5, 16, 20, SM, SM, 2.0f},
        {BF, 56, 2, 17, 64, SM, -1, 2.0f},
        {BF, 56, 2, 16, 65, SM, -1, 2.0f},
        /* Hopper kernel: one tile, ragged tiles, a ring that wraps several times, partial query blocks */
        {BF, 64, 1, 128, 64, WG, WG, 2.0f},
        {HF, 56, 2, 130, 300, WG, WG, 3.0f},
        {BF, 56, 1, 64, 1000, WG, WG, 4.0f},
        {HF, 64, 1, 200, 65, WG, WG, 2.0f},
        {BF, 64, 2, 17, 1, WG, WG, 1.0f},
        {BF, 56, 1, 128, 129, WG, WG, 2.0f},
        {BF, 32, 1, 64, 64, WG, -1, 2.0f},
        /* FA3 kernel (HD 64): one tile, ragged query blocks and keys, a ring that wraps several times, more key
         * tiles than stages, fewer keys than a tile; these shapes leave most of a wave idle, so the key split
         * and its merge run too */
        {HF, 64, 1, 64, 128, FA, FA, 2.0f},
        {BF, 64, 2, 200, 700, FA, FA, 3.0f},
        {HF, 64, 1, 130, 1000, FA, FA, 4.0f},
        {BF, 64, 3, 100, 65, FA, FA, 2.0f},
        {HF, 64, 1, 257, 300, FA, FA, 1.0f},
        {HF, 64, 3, 128, 600, FA, FA, 2.0f}, /* on 2 SMs: a full wave, then one tile split two ways */
        {BF, 64, 2, 64, 4100, FA, FA, 3.0f}, /* a long ring (33 tiles, one partial) */
        {HF, 56, 1, 64, 128, FA, -1, 2.0f},
        /* automatic choice */
        {HF, 64, 3, 64, 64, A, F64, 2.0f},
        {BF, 56, 4, 4, 16, A, SM, 2.0f},
        {BF, 56, 2, 16, 64, A, SM, 2.0f},
        {BF, 56, 1, 300, 300, A, F64, 2.0f},
        {BF, 48, 2, 20, 40, A, SI, 2.0f},
        {F32, 56, 2, 20, 40, A, SI, 2.0f},
        /* SIMT kernel */
        {F32, 56, 2, 70, 45, SI, SI, 2.0f},
        {F32, 64, 1, 16, 100, SI, SI, 3.0f},
        {F32, 20, 2, 33, 33, SI, SI, 2.0f},
        {F32, 8, 3, 4, 16, SI, SI, 2.0f},
        {HF, 56, 1, 40, 70, SI, SI, 2.0f},
        {F32, 80, 1, 4, 4, SI, -1, 2.0f},
    };
    uint32_t seed = 1234;
    for (const Case &c : cases) {
        if (fp8_only) break;
        for (int mode = 0; mode < 2; mode++) {
            if (c.dt == CK_DTYPE_F32 && mode == 1) continue; /* the SIMT kernel issues no cp.async */
            run_case(c, mode, seed++);
            if (c.variant == FA) { /* and on the two-SM device: no key split, the whole ring */
                g_emu_device = 1;
                run_case(c, mode, seed++);
                g_emu_device = 0;
            }
        }
    }
    /* every configuration of the FA3 ladder (the cases above run the per-shape choice): a ragged shape on both
     * devices, deferred and at issue */
    const Case ladder[] = {{BF, 64, 2, 200, 700, FA, FA, 3.0f}, {HF, 64, 3, 128, 600, FA, FA, 2.0f}};
    for (int cfg = 0; cfg < (fp8_only ? 0 : ck__attn_fa3_configs()); cfg++) {
        ck__attn_fa3_select(cfg);
        for (const Case &c : ladder)
            for (int mode = 0; mode < 2; mode++)
                for (int dev = 0; dev < 2; dev++) {
                    g_emu_device = dev;
                    run_case(c, mode, seed++);
                }
    }
    ck__attn_fa3_select(-1);
    /* attention_qkv straight from qkv: several heads and images (one launch), ragged rows and keys, both devices;
     * first with P·V over all 64 columns (CK_ATTN_PV56=0) */
    g_fa3_tokens_min = 1;
    setenv("CK_ATTN_PV56", "0", 1);
    for (int dev = 0; dev < (fp8_only ? 0 : 2); dev++)
        for (int mode = 0; mode < 2; mode++) {
            g_emu_device = dev;
            run_tokens_case(HF, 1, 300, 2, mode, seed++);
            run_tokens_case(BF, 2, 200, 3, mode, seed++);
            run_tokens_case(HF, 3, 130, 2, mode, seed++); /* one launch: a tile's rows run into the next image's */
        }
    /* the same with P·V over the 56 columns of a head (the default): the m64n56k16 form must be the one issued */
    unsetenv("CK_ATTN_PV56");
    for (int dev = 0; dev < (fp8_only ? 0 : 2); dev++)
        for (int mode = 0; mode < 2; mode++) {
            g_emu_device   = dev;
            const long n56 = n_wgmma56;
            run_tokens_case(HF, 1, 300, 2, mode, seed++);
            run_tokens_case(BF, 3, 130, 2, mode, seed++);
            if (n_wgmma56 == n56) {
                printf("NOT OK P·V over 56 columns (the default) was not issued\n");
                g_fail++;
            }
        }
    /* the FP8 option (CK_ATTN_FP8=1, float16 only): the packed layout with ragged rows and keys (a split tail on
     * 132 SMs, the whole ring on 2), and straight from qkv; bfloat16 keeps the 16-bit kernel */
    setenv("CK_ATTN_FP8", "1", 1);
    g_fp8 = 1;
    const Case fp8_cases[] = {{HF, 64, 2, 200, 700, FA, FA, 1.0f}, {HF, 64, 1, 130, 300, FA, FA, 2.0f}};
    for (int dev = 0; dev < 2; dev++)
        for (int mode = 0; mode < 2; mode++) {
            g_emu_device = dev;
            for (const Case &c : fp8_cases) run_case(c, mode, seed++);
            run_tokens_case(HF, 1, 300, 2, mode, seed++);
            run_tokens_case(HF, 2, 200, 2, mode, seed++); /* a launch per image */
        }
    g_fp8 = 0;
    run_tokens_case(BF, 1, 200, 2, 0, seed++);
    unsetenv("CK_ATTN_FP8");
    g_fa3_tokens_min = kFa3TokensMin;
    g_emu_device = 0;
    /* mask units straight from qkv: every kernel shape the windowed path instantiates for the model's windows
     * (64 keys with 64 or 16 pooled queries, 16 keys with 16 or 4), head dims 56, 32 and 64, non-square windows,
     * group counts that leave blocks partly empty */
    for (int mode = 0; mode < (fp8_only ? 0 : 2); mode++) {
        run_window_case(HF, 2, 16, 16, 2, 56, 8, 8, 0, mode, seed++);
        run_window_case(BF, 1, 16, 16, 2, 56, 8, 8, 1, mode, seed++);
        run_window_case(HF, 1, 8, 8, 3, 56, 4, 4, 0, mode, seed++);
        run_window_case(BF, 1, 8, 12, 3, 56, 4, 4, 1, mode, seed++);
        run_window_case(HF, 3, 8, 16, 1, 32, 8, 8, 0, mode, seed++);
        run_window_case(HF, 1, 8, 16, 1, 32, 8, 8, 1, mode, seed++);
        run_window_case(BF, 1, 8, 16, 3, 56, 4, 8, 0, mode, seed++);
        run_window_case(HF, 1, 8, 16, 3, 56, 4, 8, 1, mode, seed++);
        run_window_case(HF, 1, 8, 8, 1, 64, 8, 8, 0, mode, seed++);
        run_window_case(BF, 1, 12, 12, 3, 56, 6, 6, 1, mode, seed++);
    }
    printf("%d cases, %d failed (mma %ld, ldmatrix %ld, cp.async %ld, tma %ld emulated)\n", g_count, g_fail,
           emu::n_mma, emu::n_ldsm, emu::n_cp, emu::n_tma);
    return g_fail ? 1 : 0;
}
