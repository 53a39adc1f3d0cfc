/* EXR encoding helpers on the device ("gpu_encode"): the PXR24 byte transform of half-float passes,
 * and the gather that packs compressed chunks back to back for one download.
 *
 * pxr24: one thread per output byte pair (row, file channel, x): the value minus its left neighbour in
 * the same channel (mod 2^16, the first minus 0), high byte into the row's high plane, low byte into its
 * low plane; every output is independent, so the kernel is a plain grid-stride loop.
 * gather: one block computes the exclusive scan of the chunk sizes (a few hundred per 4K frame, summed
 * in 64 bits by one thread: cheap and exact), then a grid copies each chunk's bytes. */
#include "ops/cuda/common.cuh"

__global__ void pxr24_kernel(uint8_t *__restrict__ dst, const uint16_t *__restrict__ src, int w, int h, int C, int o0,
                             int o1, int o2, int o3) {
    const int order[4] = {o0, o1, o2, o3};
    CK_GRID_STRIDE(i, (int64_t)h * C * w) {
        const int     x = (int)(i % w);
        const int64_t r = i / w; /* row * C + file channel */
        const int     k = (int)(r % C);
        const int64_t y = r / C;
        const int     c = order[k];
        const uint16_t v    = src[(y * w + x) * C + c];
        const uint16_t prev = x ? src[(y * w + x - 1) * C + c] : (uint16_t)0;
        const uint16_t d    = (uint16_t)(v - prev);
        uint8_t       *row  = dst + r * 2 * (int64_t)w;
        row[x]              = (uint8_t)(d >> 8);
        row[w + x]          = (uint8_t)d;
    }
}

extern "C" void ck_pxr24_cuda(ck_backend *be, const ck_pxr24_args *a) {
    CK_ASSERT(a && a->src && a->dst && a->w > 0 && a->h > 0 && a->C >= 1 && a->C <= 4);
    for (int k = 0; k < a->C; k++) CK_ASSERT(a->order[k] >= 0 && a->order[k] < a->C);
    ck_cuda      *cu = ck_cuda_of(be);
    const int64_t n  = (int64_t)a->h * a->C * a->w;
    pxr24_kernel<<<ck_grid_for(cu, n, 256), 256, 0, cu->stream>>>(a->dst, a->src, a->w, a->h, a->C, a->order[0],
                                                                    a->C > 1 ? a->order[1] : 0,
                                                                    a->C > 2 ? a->order[2] : 0,
                                                                    a->C > 3 ? a->order[3] : 0);
    CK_KERNEL_CHECK(cu);
}

__global__ void gather_scan_kernel(int64_t *__restrict__ dst_off, const int32_t *__restrict__ bytes, int n) {
    if (threadIdx.x || blockIdx.x) return;
    int64_t acc = 0;
    for (int i = 0; i < n; i++) {
        dst_off[i] = acc;
        acc += bytes[i];
    }
    dst_off[n] = acc;
}

/* One block per segment, its threads copy the bytes (16 at a time where both sides allow it). */
__global__ void gather_copy_kernel(uint8_t *__restrict__ dst, const int64_t *__restrict__ dst_off,
                                   const uint8_t *__restrict__ src, const int64_t *__restrict__ seg_off,
                                   const int32_t *__restrict__ bytes, int n) {
    for (int s = blockIdx.x; s < n; s += gridDim.x) {
        const uint8_t *from = src + seg_off[s];
        uint8_t       *to   = dst + dst_off[s];
        const int64_t  len  = bytes[s];
        for (int64_t j = threadIdx.x; j < len; j += blockDim.x) to[j] = from[j];
    }
}

extern "C" void ck_gather_cuda(ck_backend *be, const ck_gather_args *a) {
    CK_ASSERT(a && a->n >= 0);
    if (a->n == 0) return;
    ck_cuda *cu = ck_cuda_of(be);
    gather_scan_kernel<<<1, 32, 0, cu->stream>>>(a->dst_off, a->bytes, a->n);
    CK_KERNEL_CHECK(cu);
    const int blocks = a->n < 4096 ? a->n : 4096;
    gather_copy_kernel<<<blocks, 256, 0, cu->stream>>>(a->dst, a->dst_off, a->src, a->seg_off, a->bytes, a->n);
    CK_KERNEL_CHECK(cu);
}
