/* gemm_probe: where the Hopper GEMM (src/ops/cuda/gemm_sm90.cu) differs from a float64 product, on patterns that
 * name the operand element each output used. Standalone diagnostic; Hopper only.
 *
 *   make -C dev/cuda gemm_probe && dev/cuda/gemm_probe
 *
 * Probe "k-of-row": x[m][k] = (k == m mod K), w[n][k] = k + 256·(n mod 8), so y[m][n] names the k and the n mod 8
 * that the tile used for that output; "k-of-col" the same with the roles swapped; "random": N(0,1) operands,
 * the errors counted per 8-row × 8-column cell of the 128 × 128 tile. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <random>
#include <vector>

#include "ops/cuda/gemm_sm90.h"

#include "cuda_check.h"

static std::vector<float> run(const std::vector<float> &x, const std::vector<float> &w, int64_t M, int N, int K,
                              double *ms) {
    std::vector<__half> hx(x.size()), hw(w.size());
    for (size_t i = 0; i < x.size(); i++) hx[i] = __float2half(x[i]);
    for (size_t i = 0; i < w.size(); i++) hw[i] = __float2half(w[i]);
    void *dx, *dw, *dy;
    CU(cudaMalloc(&dx, hx.size() * 2));
    CU(cudaMalloc(&dw, hw.size() * 2));
    CU(cudaMalloc(&dy, (size_t)M * N * 2));
    CU(cudaMemcpy(dx, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dw, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));
    CU(cudaMemset(dy, 0xff, (size_t)M * N * 2));
    ck__gemm_args g;
    memset(&g, 0, sizeof g);
    g.x = dx, g.w = dw, g.y = dy, g.M = M, g.N = N, g.K = K;
    if (!ck__gemm_sm90(&g, 0)) { printf("declined\n"); exit(1); }
    CU(cudaDeviceSynchronize());
    cudaEvent_t a, b;
    cudaEventCreate(&a), cudaEventCreate(&b);
    cudaEventRecord(a);
    for (int i = 0; i < 20; i++) ck__gemm_sm90(&g, 0);
    cudaEventRecord(b);
    CU(cudaEventSynchronize(b));
    float t = 0;
    cudaEventElapsedTime(&t, a, b);
    *ms = t / 20;
    std::vector<__half> hy((size_t)M * N);
    CU(cudaMemcpy(hy.data(), dy, hy.size() * 2, cudaMemcpyDeviceToHost));
    cudaFree(dx), cudaFree(dw), cudaFree(dy);
    std::vector<float> y(hy.size());
    for (size_t i = 0; i < y.size(); i++) y[i] = __half2float(hy[i]);
    return y;
}

static void probe(int64_t M, int N, int K) {
    double ms;
    /* k-of-row */
    std::vector<float> x((size_t)M * K), w((size_t)N * K);
    for (int64_t m = 0; m < M; m++)
        for (int k = 0; k < K; k++) x[m * K + k] = (k == m % K);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) w[(size_t)n * K + k] = (float)(k + 256 * (n % 8));
    std::vector<float> y = run(x, w, M, N, K, &ms);
    int64_t bad = 0, shown = 0;
    for (int64_t m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const float want = (float)(m % K + 256 * (n % 8)), got = y[m * N + n];
            if (got != want && bad++ < 12 && shown++ < 12)
                printf("  k-of-row m=%lld n=%d: got k=%d n%%8=%d (raw %g), want k=%lld n%%8=%d\n", (long long)m, n,
                       (int)got % 256, (int)got / 256, got, (long long)(m % K), n % 8);
        }
    printf("%lldx%dx%d k-of-row: %lld of %lld wrong\n", (long long)M, N, K, (long long)bad, (long long)M * N);
    /* k-of-col */
    for (int64_t m = 0; m < M; m++)
        for (int k = 0; k < K; k++) x[m * K + k] = (float)(k + 256 * (m % 8));
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) w[(size_t)n * K + k] = (k == n % K);
    y = run(x, w, M, N, K, &ms);
    bad = 0, shown = 0;
    for (int64_t m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const float want = (float)(n % K + 256 * (m % 8)), got = y[m * N + n];
            if (got != want && bad++ < 12 && shown++ < 12)
                printf("  k-of-col m=%lld n=%d: got k=%d m%%8=%d (raw %g), want k=%d m%%8=%lld\n", (long long)m, n,
                       (int)got % 256, (int)got / 256, got, n % K, (long long)(m % 8));
        }
    printf("%lldx%dx%d k-of-col: %lld of %lld wrong\n", (long long)M, N, K, (long long)bad, (long long)M * N);
    /* random, errors per 8 × 8 cell of the tile */
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto &v : x) v = __half2float(__float2half(nd(rng)));
    for (auto &v : w) v = __half2float(__float2half(nd(rng) / sqrtf((float)K)));
    y = run(x, w, M, N, K, &ms);
    static int64_t cell[16][16];
    memset(cell, 0, sizeof cell);
    double e2 = 0, r2 = 0;
    for (int64_t m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)x[m * K + k] * w[(size_t)n * K + k];
            const double e = y[m * N + n] - s;
            e2 += e * e, r2 += s * s;
            if (fabs(e) > 2e-3 * (1 + fabs(s))) cell[(m % 128) / 8][(n % 128) / 8]++;
        }
    printf("%lldx%dx%d random: nmse %.3e, %.3f ms (%.0f TF/s); wrong per 8x8 cell (rows: m/8, cols: n/8):\n",
           (long long)M, N, K, e2 / r2, ms, 2.0 * M * N * K / ms * 1e-9);
    for (int i = 0; i < 16; i++) {
        printf("   ");
        for (int j = 0; j < 16; j++) printf(" %5lld", (long long)cell[i][j]);
        printf("\n");
    }
}

int main() {
    probe(128, 128, 64);
    probe(128, 128, 128);
    probe(256, 256, 256);
    probe(256, 200, 112);
    probe(4096, 896, 224);
    return 0;
}
