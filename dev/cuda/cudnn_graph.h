/* What the stand-alone cuDNN graph probes (convbn_probe.cu, matmul_probe.cu) share: checks that print and go on
 * (a failing configuration is skipped, only a lost CUDA context stops the program), the hash-based data both the
 * host and the device can regenerate, and the backend descriptors: made into a pool released to a mark,
 * pointwise operations in float32. */
#ifndef CK_DEV_CUDNN_GRAPH_H
#define CK_DEV_CUDNN_GRAPH_H

#include <cuda_runtime.h>
#include <cudnn.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef cudnnBackendDescriptor_t bd_t;

static int cd_fail(cudnnStatus_t s, const char *what) {
    char msg[1024] = "";
    cudnnGetLastErrorString(msg, sizeof msg);
    printf("      cuDNN FAILED: %.160s\n        -> %s (%d)%s%s\n", what, cudnnGetErrorString(s), (int)s,
           msg[0] ? "\n        -> last error: " : "", msg);
    return 0;
}
static int cdok(cudnnStatus_t s, const char *what) { return s == CUDNN_STATUS_SUCCESS ? 1 : cd_fail(s, what); }
#define CD(call) cdok((call), #call)

static int cu_fail(cudaError_t e, const char *what) {
    printf("      CUDA FAILED: %.160s -> %s\n", what, cudaGetErrorString(e));
    cudaGetLastError();
    cudaError_t e2 = cudaDeviceSynchronize();
    if (e2 != cudaSuccess) {
        printf("FATAL: the CUDA context is unusable (%s); stopping here.\n", cudaGetErrorString(e2));
        fflush(stdout);
        exit(3);
    }
    return 0;
}
static int cuok(cudaError_t e, const char *what) { return e == cudaSuccess ? 1 : cu_fail(e, what); }
#define CU(call) cuok((call), #call)

/* uniform [0, 1) from (seed, index), the same on host and device */
__host__ __device__ static inline float uhash(uint64_t seed, uint64_t i) {
    uint64_t z = (seed << 40) ^ (i + 0x9E3779B97F4A7C15ull * (seed + 1));
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/* ---- descriptors: a pool, released down to a mark ---- */
enum { BD_POOL = 2048 };
static bd_t g_pool[BD_POOL];
static int  g_npool;
static bd_t mk(cudnnBackendDescriptorType_t t) {
    bd_t d = NULL;
    if (g_npool == BD_POOL || !CD(cudnnBackendCreateDescriptor(t, &d))) return NULL;
    return g_pool[g_npool++] = d;
}
static void pool_release(int mark) {
    while (g_npool > mark) cudnnBackendDestroyDescriptor(g_pool[--g_npool]);
}
#define SET(d, name, type, cnt, ptr) CD(cudnnBackendSetAttribute((d), (name), (type), (cnt), (ptr)))
#define GET(d, name, type, cnt, got, ptr) CD(cudnnBackendGetAttribute((d), (name), (type), (cnt), (got), (ptr)))
#define FIN(d) CD(cudnnBackendFinalize(d))

/* y = mode(x [, b]), computed in float32 */
static bd_t pw_op(cudnnPointwiseMode_t mode, bd_t x, bd_t b, bd_t y) {
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    bd_t            pd = mk(CUDNN_BACKEND_POINTWISE_DESCRIPTOR), op = NULL;
    if (!x || !y || !pd || !SET(pd, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode) ||
        !SET(pd, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec) || !FIN(pd))
        return NULL;
    if (!(op = mk(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)) ||
        !SET(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pd) ||
        !SET(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x) ||
        (b && !SET(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b)) ||
        !SET(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y) || !FIN(op))
        return NULL;
    return op;
}

#endif
