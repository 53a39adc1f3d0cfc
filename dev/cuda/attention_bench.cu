/* Attention kernels of src/ops/cuda/attention.cu: validation against an fp64 CPU reference and timing over the
 * GreenFormer shapes (docs: docs/model_spec.md §3) at S = 512, 1024, 2048, head dims 56 and 64.
 *
 * Versions and ideas (the variants attention.h lists; "auto" is what the op picks):
 *   simt      f32 parity path: one thread per query row, fp32 FMAs, online softmax over 32-key tiles.
 *   small     Hiera mask units (Tq <= 16, Tk <= 64): one group per warp, several groups per block, a single
 *             cp.async tile, mma.sync m16n8k16; memory bound, so no padded rows are moved.
 *   flash64   FlashAttention-2 structure: 4 warps × 16 query rows, 64-key K/V tiles double-buffered with
 *             cp.async, S and O on mma.sync with fp32 accumulators, P re-packed in registers, ldmatrix(.trans)
 *             from XOR-swizzled (D = 64) or odd-pitch (D = 56) shared rows. HD = 56 runs natively
 *             (3 k16 + 1 k8 MMA steps, 7 output n-tiles), 12.5 % fewer MMAs than padding to 64.
 *   flash128  the same with 32 rows per warp: every K/V fragment feeds two m-tiles, halving shared-memory
 *             traffic per MMA; 2 blocks per SM at ~240 registers. Default for long global rows.
 *   wgmma     Hopper warpgroup MMA (sm_90a image on a 9.0 device, else "n/a"): 2 warpgroups × 64 query rows,
 *             64-key tiles in a 4-stage cp.async ring of 128-byte-swizzled tiles read through smem descriptors,
 *             Q and P as register A operands, S(j) = Q·K(j)ᵀ issued together with P(j-1)·V(j-1) so the softmax
 *             of tile j runs under the previous P·V; 2 blocks per SM. HD 56 is padded to 64 inside.
 *             Not in "auto" until it measures faster than flash128 (CK_ATTN_VARIANT=wgmma opts in).
 *   Also in every tensor-core kernel: exp2 on ex2.approx.ftz with scale·log2e folded into one FFMA, the O
 *   rescale skipped (warp vote) when no row max moved, output staged through shared memory for 16-byte
 *   coalesced stores. Ideas not yet tried: part of the exp2s as an FMA polynomial (MUFU is ~75 % of the MMA
 *   time at HD 64), ones column of V for the row sums at HD 56, split-K for G·Tq too small to fill the GPU.
 *
 * First, CUDA Graph capture: the first call of auto / flash128 / wgmma happens inside a global-mode stream
 * capture, and the replayed graph must equal an eager launch bit for bit (--no-capture skips it).
 * Checks per (shape, dtype, HD, variant): inputs are drawn on the device from a counter-based hash (fresh seed
 * per check; the host recomputes the same values bit for bit), the output is poisoned with NaN and fenced by
 * guard bytes; after the run every output element must be finite (every row written), the guards intact, and
 * sampled rows (corners included) within atol + rtol·|ref| of an fp64 softmax on the same rounded inputs.
 * Timing: cudaEvents around each launch, L2 flushed before each (the flush also hides host launch latency;
 * with --no-flush a short spin kernel does), median of --reps (20) after 3 warm-ups;
 * TF/s counts 4·G·Tq·Tk·HD (HD as given: 64 counts the padding).
 *
 * Build (repository root):
 *   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_80,code=sm_80 -Iinclude -Isrc \
 *        dev/cuda/attention_bench.cu src/ops/cuda/attention.cu src/core/log.c src/core/tensor.c -o attn_bench
 *   (or: make -C dev/cuda attn_bench)
 * Run:
 *   OUT=/some/dir ./attn_bench                      all shapes, bf16 + fp16 + fp32, HD 56 + 64, every variant
 *   ./attn_bench --dtype bf16 --hd 56 --size 2048   a subset; --variant flash128 forces one variant,
 *                                                    --simt adds the SIMT kernel to the 16-bit runs,
 *                                                    --reps N, --no-flush, --no-capture, --filter <text>
 *   compute-sanitizer ./attn_bench --size 512 --reps 1   (memcheck / racecheck of every kernel)
 * The table goes to stdout; with OUT set, the same rows go to $OUT/attention_bench.csv. Exit status 1 when any
 * check fails.
 */
#include <algorithm>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ops/cuda/attention.h"

#include "cuda_check.h"

static cudaStream_t g_stream;
extern "C" cudaStream_t ck_cuda_stream(ck_backend *be) {
    (void)be;
    return g_stream;
}
/* as the backend's: 128 MiB of op temporaries */
static void *g_scratch;
extern "C" void *ck_cuda_scratch(ck_backend *be, size_t *bytes) {
    (void)be;
    *bytes = g_scratch ? (size_t)128 << 20 : 0;
    return g_scratch;
}
extern "C" void ck__cuda_failed(const char *file, int line, const char *expr, const char *what) {
    fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, expr, what);
    exit(2);
}

/* ---- inputs: a counter-based hash, identical on host and device ---------------------------------------- */
/* Irwin–Hall sum of four 16-bit uniforms in integers (exact), one int→float conversion and two float multiplies
 * (correctly rounded, no contraction possible): the host reproduces every device value bit for bit. */
__host__ __device__ static inline float bench_rand(uint64_t seed, uint64_t i, float scale) {
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z          = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z          = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const int s = (int)(z & 0xffff) + (int)((z >> 16) & 0xffff) + (int)((z >> 32) & 0xffff) + (int)(z >> 48) - 131070;
    const float u = (float)s * (1.0f / 37837.0f); /* unit variance */
    return u * scale;
}
template <typename T> __host__ __device__ static inline T bench_to(float f);
template <> __host__ __device__ inline float bench_to<float>(float f) { return f; }
template <> __host__ __device__ inline __half bench_to<__half>(float f) { return __float2half_rn(f); }
template <> __host__ __device__ inline __nv_bfloat16 bench_to<__nv_bfloat16>(float f) { return __float2bfloat16_rn(f); }
static inline double bench_back(float f) { return f; }
static inline double bench_back(__half h) { return __half2float(h); }
static inline double bench_back(__nv_bfloat16 h) { return __bfloat162float(h); }

template <typename T> __global__ void fill_kernel(T *p, int64_t n, uint64_t seed, float scale) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        p[i] = bench_to<T>(bench_rand(seed, (uint64_t)i, scale));
}
template <typename T> __global__ void count_nonfinite_kernel(const T *p, int64_t n, unsigned long long *count) {
    unsigned long long c = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float f = (float)p[i];
        c += !isfinite(f);
    }
    if (c) atomicAdd(count, c);
}

/* Keeps the GPU busy while the host enqueues the start event, the launch and the stop event, so host launch
 * latency never shows up between the events (the L2-flush memset does the same job when it runs). */
__global__ void delay_kernel(long long cycles) {
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

/* ---- shapes ---------------------------------------------------------------------------------------------- */
struct Shape {
    std::string name;
    int         S;
    int64_t     G;
    int         Tq, Tk;
};
static std::vector<Shape> model_shapes() {
    std::vector<Shape> v;
    for (int S : {512, 1024, 2048}) {
        const int64_t nwin = (int64_t)(S / 32) * (S / 32);
        const int     T2 = (S / 16) * (S / 16), T3 = (S / 32) * (S / 32);
        v.push_back({"win64 blk0-1", S, 2 * nwin, 64, 64});
        v.push_back({"win16x64 blk2", S, 4 * nwin, 16, 64});
        v.push_back({"win16 blk3-4", S, 4 * nwin, 16, 16});
        v.push_back({"win4x16 blk5", S, 8 * nwin, 4, 16});
        v.push_back({"global blk6-20", S, 8, T2, T2});
        v.push_back({"global-qpool blk21", S, 16, T3, T2});
        v.push_back({"global blk22-23", S, 16, T3, T3});
    }
    /* ragged shapes (not the model's): partial query blocks, a partial last key tile, fewer keys than a tile */
    v.push_back({"ragged", 512, 3, 1000, 777});
    v.push_back({"ragged-short", 512, 7, 300, 100});
    v.push_back({"ragged", 2048, 5, 3001, 4500});
    /* batch 4 at 2048: the window kernels at G up to 131072 */
    const int64_t nwin = 64 * 64;
    v.push_back({"win64 blk0-1 B4", 2048, 4 * 2 * nwin, 64, 64});
    v.push_back({"win16x64 blk2 B4", 2048, 4 * 4 * nwin, 16, 64});
    v.push_back({"win16 blk3-4 B4", 2048, 4 * 4 * nwin, 16, 16});
    v.push_back({"win4x16 blk5 B4", 2048, 4 * 8 * nwin, 4, 16});
    return v;
}

/* ---- one check + timing ------------------------------------------------------------------------------------ */
struct Opts {
    std::vector<ck_dtype> dtypes{CK_DTYPE_BF16, CK_DTYPE_F16, CK_DTYPE_F32};
    std::vector<int>      hds{56, 64};
    std::vector<int>      sizes{512, 1024, 2048};
    int                   variant = -1; /* -1: every variant that serves the shape */
    int                   fa3_cfg = -2; /* -2: every configuration of the fa3 variant; -1: its own choice */
    int                   simt    = 0;
    int                   reps    = 20;
    int                   flush   = 1;
    int                   capture = 1;
    std::string           filter;
};

struct Result {
    int    used = -1;
    double ms = 0, tflops = 0, max_abs = 0, tol_used = 0;
    long   nonfinite = 0, bad = 0;
    int    guard_ok = 1;
};

static void  *g_flush;
static size_t g_flush_bytes = 512u << 20;

template <typename T>
static Result run_one(const Shape &sh, int HD, ck_dtype dt, int variant, const Opts &op, uint64_t seed) {
    Result        r;
    const int64_t nq = sh.G * sh.Tq * HD, nk = sh.G * (int64_t)sh.Tk * HD;
    const size_t  guard = 4096, ob = (size_t)nq * sizeof(T);
    T            *q, *k, *v;
    char         *obuf;
    CU(cudaMalloc(&q, nq * sizeof(T)));
    CU(cudaMalloc(&k, nk * sizeof(T)));
    CU(cudaMalloc(&v, nk * sizeof(T)));
    CU(cudaMalloc(&obuf, ob + 2 * guard));
    T *o = (T *)(obuf + guard);
    /* q spread 2: scores with sd ~2, so softmax rows are peaky and the running max moves across tiles */
    const float qs = 2.0f;
    fill_kernel<T><<<1024, 256, 0, g_stream>>>(q, nq, seed * 3 + 0, qs);
    fill_kernel<T><<<1024, 256, 0, g_stream>>>(k, nk, seed * 3 + 1, 1.0f);
    fill_kernel<T><<<1024, 256, 0, g_stream>>>(v, nk, seed * 3 + 2, 1.0f);
    CU(cudaGetLastError());
    CU(cudaMemsetAsync(obuf, 0xA5, ob + 2 * guard, g_stream));
    CU(cudaMemsetAsync(o, 0xFF, ob, g_stream)); /* NaN in f32, f16 and bf16 */

    const int64_t sq[3] = {sh.G, sh.Tq, HD}, sk[3] = {sh.G, sh.Tk, HD};
    ck_tensor     tq = ck_tensor_make(q, dt, 3, sq), tk = ck_tensor_make(k, dt, 3, sk), tv = ck_tensor_make(v, dt, 3, sk),
              to = ck_tensor_make(o, dt, 3, sq);
    const float scale = 1.0f / sqrtf(56.0f); /* the model's scale, also at HD = 64 (padding) */
    ck_backend  be;
    memset(&be, 0, sizeof be);

    r.used = ck__attention_cuda_variant(&be, &to, &tq, &tk, &tv, scale, (ck_attn_variant)variant);
    if (r.used < 0) {
        cudaFree(q), cudaFree(k), cudaFree(v), cudaFree(obuf);
        return r;
    }
    CU(cudaGetLastError());
    CU(cudaStreamSynchronize(g_stream));

    /* every element written and finite */
    unsigned long long *cnt;
    CU(cudaMalloc(&cnt, sizeof *cnt));
    CU(cudaMemsetAsync(cnt, 0, sizeof *cnt, g_stream));
    count_nonfinite_kernel<T><<<1024, 256, 0, g_stream>>>(o, nq, cnt);
    CU(cudaGetLastError());
    unsigned long long nonfinite = 0;
    CU(cudaMemcpyAsync(&nonfinite, cnt, sizeof nonfinite, cudaMemcpyDeviceToHost, g_stream));
    std::vector<unsigned char> gbytes(2 * guard);
    CU(cudaMemcpyAsync(gbytes.data(), obuf, guard, cudaMemcpyDeviceToHost, g_stream));
    CU(cudaMemcpyAsync(gbytes.data() + guard, obuf + guard + ob, guard, cudaMemcpyDeviceToHost, g_stream));
    CU(cudaStreamSynchronize(g_stream));
    CU(cudaFree(cnt));
    r.nonfinite = (long)nonfinite;
    for (unsigned char b : gbytes) r.guard_ok &= b == 0xA5;

    /* sampled rows against fp64 on the same rounded inputs: few groups when K/V are long (the host regenerates
     * a whole group per sampled group), many when they are short; the first and last row always */
    const double atol = dt == CK_DTYPE_F32 ? 1e-5 : dt == CK_DTYPE_F16 ? 2e-3 : 1e-2;
    const double rtol = dt == CK_DTYPE_F32 ? 1e-4 : dt == CK_DTYPE_F16 ? 4e-3 : 1e-2;
    const int64_t ngroups = std::min<int64_t>(sh.G, sh.Tk >= 4096 ? 4 : 32);
    const int     rows_per_group = std::max(1, std::min(sh.Tq, 64 / (int)ngroups));
    std::vector<double> kd((size_t)sh.Tk * HD), vd((size_t)sh.Tk * HD), s(sh.Tk), qd(HD);
    std::vector<T>      orow(HD);
    uint64_t            pick = seed * 0x2545F4914F6CDD1Dull + 1;
    auto next = [&]() { return (pick = pick * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
    for (int64_t gi = 0; gi < ngroups; gi++) {
        const int64_t g = gi == 0 ? 0 : gi == ngroups - 1 ? sh.G - 1 : (int64_t)(next() % (uint64_t)sh.G);
        for (int64_t j = 0; j < (int64_t)sh.Tk * HD; j++) {
            const int64_t idx = g * (int64_t)sh.Tk * HD + j;
            kd[j]             = bench_back(bench_to<T>(bench_rand(seed * 3 + 1, (uint64_t)idx, 1.0f)));
            vd[j]             = bench_back(bench_to<T>(bench_rand(seed * 3 + 2, (uint64_t)idx, 1.0f)));
        }
        for (int ri = 0; ri < rows_per_group; ri++) {
            const int i = ri == 0 ? 0 : ri == rows_per_group - 1 ? sh.Tq - 1 : (int)(next() % (uint64_t)sh.Tq);
            for (int d = 0; d < HD; d++)
                qd[d] = bench_back(bench_to<T>(bench_rand(seed * 3, (uint64_t)((g * sh.Tq + i) * HD + d), qs)));
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < sh.Tk; j++) {
                double dot = 0;
                for (int d = 0; d < HD; d++) dot += qd[d] * kd[(size_t)j * HD + d];
                s[j] = dot * (double)scale;
                mx   = std::max(mx, s[j]);
            }
            for (int j = 0; j < sh.Tk; j++) sum += (s[j] = exp(s[j] - mx));
            CU(cudaMemcpy(orow.data(), o + (g * sh.Tq + i) * HD, HD * sizeof(T), cudaMemcpyDeviceToHost));
            for (int d = 0; d < HD; d++) {
                double ref = 0;
                for (int j = 0; j < sh.Tk; j++) ref += s[j] * vd[(size_t)j * HD + d];
                ref /= sum;
                const double got = bench_back(orow[d]);
                if (!isfinite(got)) continue; /* counted above */
                const double err = fabs(got - ref), tol = atol + rtol * fabs(ref);
                r.max_abs  = std::max(r.max_abs, err);
                r.tol_used = std::max(r.tol_used, err / tol);
                if (err > tol) {
                    if (r.bad < 3)
                        fprintf(stderr, "    mismatch g=%lld row=%d col=%d: got %.6f ref %.6f\n", (long long)g, i, d,
                                got, ref);
                    r.bad++;
                }
            }
        }
    }

    /* timing */
    cudaEvent_t e0, e1;
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    std::vector<float> ms;
    int reps = op.reps;
    for (int it = 0; it < 3 + reps; it++) {
        if (op.flush) CU(cudaMemsetAsync(g_flush, it & 0xff, g_flush_bytes, g_stream));
        else delay_kernel<<<1, 1, 0, g_stream>>>(100000); /* ~50 µs */
        CU(cudaEventRecord(e0, g_stream));
        ck__attention_cuda_variant(&be, &to, &tq, &tk, &tv, scale, (ck_attn_variant)variant);
        CU(cudaEventRecord(e1, g_stream));
        CU(cudaEventSynchronize(e1));
        float t = 0;
        CU(cudaEventElapsedTime(&t, e0, e1));
        if (it == 0 && t > 200.0f) reps = std::min(reps, 3); /* slow paths (f32 at 16k tokens) */
        if (it >= 3) ms.push_back(t);
        if (it >= 3 + reps - 1) break;
    }
    CU(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    r.ms     = ms[ms.size() / 2];
    r.tflops = 4.0 * (double)sh.G * sh.Tq * sh.Tk * HD / (r.ms * 1e-3) / 1e12;
    CU(cudaEventDestroy(e0));
    CU(cudaEventDestroy(e1));
    CU(cudaFree(q));
    CU(cudaFree(k));
    CU(cudaFree(v));
    CU(cudaFree(obuf));
    return r;
}

/* The op must be capturable into a CUDA Graph (the backend captures the whole forward). The first call of each
 * variant in the process happens here, inside a global-mode capture, so the lazy device queries of the launcher
 * run under capture too; the replayed graph must then match an eager launch bit for bit. */
template <typename T> static int capture_check(const Shape &sh, int HD, ck_dtype dt, int variant) {
    const int64_t nq = sh.G * sh.Tq * HD, nk = sh.G * (int64_t)sh.Tk * HD;
    T            *q, *k, *v, *o1, *o2;
    CU(cudaMalloc(&q, nq * sizeof(T)));
    CU(cudaMalloc(&k, nk * sizeof(T)));
    CU(cudaMalloc(&v, nk * sizeof(T)));
    CU(cudaMalloc(&o1, nq * sizeof(T)));
    CU(cudaMalloc(&o2, nq * sizeof(T)));
    fill_kernel<T><<<1024, 256, 0, g_stream>>>(q, nq, 101, 2.0f);
    fill_kernel<T><<<1024, 256, 0, g_stream>>>(k, nk, 102, 1.0f);
    fill_kernel<T><<<1024, 256, 0, g_stream>>>(v, nk, 103, 1.0f);
    CU(cudaMemsetAsync(o1, 0xFF, nq * sizeof(T), g_stream));
    CU(cudaMemsetAsync(o2, 0x00, nq * sizeof(T), g_stream));
    CU(cudaStreamSynchronize(g_stream));
    const int64_t sq[3] = {sh.G, sh.Tq, HD}, sk[3] = {sh.G, sh.Tk, HD};
    ck_tensor     tq = ck_tensor_make(q, dt, 3, sq), tk = ck_tensor_make(k, dt, 3, sk), tv = ck_tensor_make(v, dt, 3, sk),
              t1 = ck_tensor_make(o1, dt, 3, sq), t2 = ck_tensor_make(o2, dt, 3, sq);
    const float scale = 1.0f / sqrtf(56.0f);
    ck_backend  be;
    memset(&be, 0, sizeof be);

    cudaGraph_t graph = NULL;
    CU(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeGlobal));
    const int         used = ck__attention_cuda_variant(&be, &t1, &tq, &tk, &tv, scale, (ck_attn_variant)variant);
    const cudaError_t cap  = cudaStreamEndCapture(g_stream, &graph);
    int               ok   = 1;
    if (used >= 0) {
        CU(cap);
        cudaGraphExec_t exec;
        CU(cudaGraphInstantiate(&exec, graph, 0));
        CU(cudaGraphLaunch(exec, g_stream));
        ck__attention_cuda_variant(&be, &t2, &tq, &tk, &tv, scale, (ck_attn_variant)variant);
        CU(cudaStreamSynchronize(g_stream));
        std::vector<T> h1(nq), h2(nq);
        CU(cudaMemcpy(h1.data(), o1, nq * sizeof(T), cudaMemcpyDeviceToHost));
        CU(cudaMemcpy(h2.data(), o2, nq * sizeof(T), cudaMemcpyDeviceToHost));
        ok = memcmp(h1.data(), h2.data(), nq * sizeof(T)) == 0;
        CU(cudaGraphExecDestroy(exec));
    }
    if (graph) CU(cudaGraphDestroy(graph));
    printf("# capture %-20s S=%-4d %s HD=%d %-8s -> %-8s %s\n", sh.name.c_str(), sh.S, dt == CK_DTYPE_BF16 ? "bf16" : "fp32",
           HD, ck__attn_variant_name(variant), ck__attn_variant_name(used),
           used < 0 ? "n/a" : ok ? "ok (graph replay == eager)" : "FAIL (graph replay != eager)");
    CU(cudaFree(q));
    CU(cudaFree(k));
    CU(cudaFree(v));
    CU(cudaFree(o1));
    CU(cudaFree(o2));
    return ok;
}

static const char *dt_short(ck_dtype dt) { return dt == CK_DTYPE_BF16 ? "bf16" : dt == CK_DTYPE_F16 ? "fp16" : "fp32"; }

static void usage(void) {
    fprintf(stderr, "usage: attn_bench [--dtype bf16|fp16|fp32|all] [--hd 56|64|all] [--size 512|1024|2048|all]\n"
                    "                  [--variant auto|simt|small|flash64|flash128|wgmma|fa3|all] [--simt] [--reps N]\n"
                    "                  [--fa3-config N|auto|all] [--no-flush] [--no-capture] [--filter TEXT]\n");
    exit(2);
}

int main(int argc, char **argv) {
    Opts op;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--dtype") && val) {
            i++;
            if (!strcmp(val, "bf16")) op.dtypes = {CK_DTYPE_BF16};
            else if (!strcmp(val, "fp16")) op.dtypes = {CK_DTYPE_F16};
            else if (!strcmp(val, "fp32")) op.dtypes = {CK_DTYPE_F32};
            else if (strcmp(val, "all")) usage();
        } else if (!strcmp(a, "--hd") && val) {
            i++;
            if (strcmp(val, "all")) op.hds = {atoi(val)};
        } else if (!strcmp(a, "--size") && val) {
            i++;
            if (strcmp(val, "all")) op.sizes = {atoi(val)};
        } else if (!strcmp(a, "--variant") && val) {
            i++;
            op.variant = -1;
            if (strcmp(val, "all")) {
                for (int vv = 0; vv < CK_ATTN_VARIANT_COUNT; vv++)
                    if (!strcmp(val, ck__attn_variant_name(vv))) op.variant = vv;
                if (op.variant < 0) usage();
            }
        } else if (!strcmp(a, "--fa3-config") && val) {
            i++;
            op.fa3_cfg = strcmp(val, "all") ? strcmp(val, "auto") ? atoi(val) : -1 : -2;
            if (op.fa3_cfg >= ck__attn_fa3_configs()) usage();
        } else if (!strcmp(a, "--simt")) {
            op.simt = 1;
        } else if (!strcmp(a, "--reps") && val) {
            i++;
            op.reps = std::max(1, atoi(val));
        } else if (!strcmp(a, "--no-flush")) {
            op.flush = 0;
        } else if (!strcmp(a, "--no-capture")) {
            op.capture = 0;
        } else if (!strcmp(a, "--filter") && val) {
            i++;
            op.filter = val;
        } else {
            usage();
        }
    }

    int dev = 0;
    CU(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, dev));
    int driver = 0, runtime = 0;
    CU(cudaDriverGetVersion(&driver));
    CU(cudaRuntimeGetVersion(&runtime));
    printf("# device %s, sm_%d%d, %d SMs, driver %d, runtime %d", prop.name, prop.major, prop.minor,
           prop.multiProcessorCount, driver, runtime);
#ifdef __CUDA_ARCH_LIST__
#define CK_STR2(...) #__VA_ARGS__
#define CK_STR(...) CK_STR2(__VA_ARGS__)
    printf(", built for %s", CK_STR(__CUDA_ARCH_LIST__));
#endif
    printf("\n");
    CU(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    CU(cudaMalloc(&g_flush, g_flush_bytes));
    CU(cudaMalloc(&g_scratch, (size_t)128 << 20));

    FILE       *csv = NULL;
    const char *out = getenv("OUT");
    if (out && *out) {
        std::string path = std::string(out) + "/attention_bench.csv";
        csv              = fopen(path.c_str(), "w");
        if (!csv) fprintf(stderr, "attn_bench: cannot write %s\n", path.c_str());
        else fprintf(csv, "S,shape,dtype,HD,G,Tq,Tk,variant,used,ms,tflops,max_abs,tol_used,nonfinite,bad,guard_ok,status\n");
    }

    printf("%-5s %-20s %-4s %-3s %7s %6s %6s %-22s %-9s %10s %8s %10s %6s %s\n", "S", "shape", "dt", "HD", "G", "Tq",
           "Tk", "variant", "used", "ms", "TF/s", "max_abs", "tol%", "status");
    int      failures = 0, checks = 0;
    uint64_t seed     = 1;
    if (op.capture) {
        const Shape win{"win16x64 blk2", 512, 1024, 16, 64}, glob{"global blk6-20", 512, 8, 1024, 1024};
        failures += !capture_check<__nv_bfloat16>(glob, 56, CK_DTYPE_BF16, CK_ATTN_AUTO);
        failures += !capture_check<__nv_bfloat16>(glob, 56, CK_DTYPE_BF16, CK_ATTN_FLASH128);
        failures += !capture_check<__nv_bfloat16>(glob, 64, CK_DTYPE_BF16, CK_ATTN_WGMMA);
        for (int c = 0; c < ck__attn_fa3_configs(); c++) {
            ck__attn_fa3_select(c);
            failures += !capture_check<__half>(glob, 64, CK_DTYPE_F16, CK_ATTN_FA3);
            checks++;
        }
        ck__attn_fa3_select(-1);
        failures += !capture_check<__nv_bfloat16>(win, 56, CK_DTYPE_BF16, CK_ATTN_AUTO);
        failures += !capture_check<float>(win, 56, CK_DTYPE_F32, CK_ATTN_AUTO);
        checks += 5;
    }
    for (const Shape &sh : model_shapes()) {
        if (std::find(op.sizes.begin(), op.sizes.end(), sh.S) == op.sizes.end()) continue;
        if (!op.filter.empty() && sh.name.find(op.filter) == std::string::npos) continue;
        for (ck_dtype dt : op.dtypes)
            for (int HD : op.hds) {
                std::vector<int> variants;
                if (op.variant >= 0) variants = {op.variant};
                else if (dt == CK_DTYPE_F32) variants = {CK_ATTN_AUTO};
                else {
                    variants = {CK_ATTN_AUTO, CK_ATTN_SMALL, CK_ATTN_FLASH64, CK_ATTN_FLASH128, CK_ATTN_WGMMA, CK_ATTN_FA3};
                    if (op.simt) variants.push_back(CK_ATTN_SIMT);
                }
                /* the fa3 variant once per configuration of its ladder (a row each, "fa3/<config>") */
                std::vector<std::pair<int, int>> runs;
                for (int var : variants) {
                    if (var != CK_ATTN_FA3) runs.push_back({var, -2});
                    else if (op.fa3_cfg >= -1) runs.push_back({var, op.fa3_cfg});
                    else
                        for (int c = -1; c < ck__attn_fa3_configs(); c++) runs.push_back({var, c});
                }
                for (const auto &run : runs) {
                    const int   var = run.first;
                    std::string vname = ck__attn_variant_name(var);
                    if (run.second >= -1) {
                        ck__attn_fa3_select(run.second);
                        vname += std::string("/") + (run.second < 0 ? "auto" : ck__attn_fa3_config_name(run.second));
                    }
                    Result r;
                    seed++;
                    if (dt == CK_DTYPE_BF16) r = run_one<__nv_bfloat16>(sh, HD, dt, var, op, seed);
                    else if (dt == CK_DTYPE_F16) r = run_one<__half>(sh, HD, dt, var, op, seed);
                    else r = run_one<float>(sh, HD, dt, var, op, seed);
                    ck__attn_fa3_select(-1); /* the "auto" rows and the op keep the per-shape choice */
                    if (r.used < 0) {
                        if (op.variant >= 0 || var == CK_ATTN_AUTO)
                            printf("%-5d %-20s %-4s %-3d %7lld %6d %6d %-9s %-9s %10s\n", sh.S, sh.name.c_str(),
                                   dt_short(dt), HD, (long long)sh.G, sh.Tq, sh.Tk, vname.c_str(), "n/a",
                                   "-");
                        continue;
                    }
                    checks++;
                    const bool ok = r.bad == 0 && r.nonfinite == 0 && r.guard_ok;
                    failures += !ok;
                    const char *status = ok ? "ok" : r.nonfinite ? "FAIL(nonfinite)" : !r.guard_ok ? "FAIL(guard)"
                                                                                                    : "FAIL(values)";
                    printf("%-5d %-20s %-4s %-3d %7lld %6d %6d %-22s %-9s %10.4f %8.1f %10.3g %5.0f%% %s\n", sh.S,
                           sh.name.c_str(), dt_short(dt), HD, (long long)sh.G, sh.Tq, sh.Tk, vname.c_str(),
                           ck__attn_variant_name(r.used), r.ms, r.tflops, r.max_abs, 100 * r.tol_used, status);
                    fflush(stdout);
                    if (csv)
                        fprintf(csv, "%d,%s,%s,%d,%lld,%d,%d,%s,%s,%.5f,%.2f,%.4g,%.3f,%ld,%ld,%d,%s\n", sh.S,
                                sh.name.c_str(), dt_short(dt), HD, (long long)sh.G, sh.Tq, sh.Tk,
                                vname.c_str(), ck__attn_variant_name(r.used), r.ms, r.tflops, r.max_abs,
                                r.tol_used, r.nonfinite, r.bad, r.guard_ok, ok ? "ok" : "FAIL");
                }
            }
    }
    if (csv) fclose(csv);
    CU(cudaFree(g_flush));
    CU(cudaStreamDestroy(g_stream));
    printf("# %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
