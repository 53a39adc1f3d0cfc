/* Tiled keying on the device: blending tile outputs into the plate (ck_tile_blend_args) with the host
 * path's arithmetic (tiled.c): per pixel, tile by tile in the list's order, wt = wy·wx, wsum += wt,
 * acc += wt·tout, every product rounded before it is added (__fmul_rn/__fadd_rn: no contraction, as
 * the host's x86-64-v2 code has none); then acc · (1 / wsum). One thread per plate pixel of the batch's
 * bounding box; each walks the batch's tiles (a pixel is covered by a few of them). */
#include "ops/cuda/common.cuh"

__device__ __forceinline__ float tile_lin_to_srgb(float x) { /* frame/color.c ck_linear_to_srgb */
    x = x < 0.0f ? 0.0f : x;
    if (x <= 0.0031308f) return __fmul_rn(x, 12.92f);
    return __fsub_rn(__fmul_rn(1.055f, powf(x, (float)(1.0 / 2.4))), 0.055f);
}

__global__ void tile_blend_kernel(ck_tile_blend_args a) {
    const int     bw = a.bx1 - a.bx0;
    const int64_t n  = (int64_t)bw * (a.by1 - a.by0);
    CK_GRID_STRIDE(i, n) {
        const int     x = a.bx0 + (int)(i % bw), y = a.by0 + (int)(i / bw);
        const int64_t o = (int64_t)y * a.w + x;
        float4        acc = reinterpret_cast<float4 *>(a.acc)[o];
        float         ws  = a.wsum[o];
        for (int t = a.first; t < a.first + a.count; t++) {
            const int32_t *d = a.tiles + 5 * (int64_t)t;
            const int      tx = x - d[0], ty = y - d[1];
            if (tx < 0 || ty < 0 || tx >= a.S || ty >= a.S) continue;
            const float wt = __fmul_rn(a.wy[(int64_t)d[3] * a.S + ty], a.wx[(int64_t)d[2] * a.S + tx]);
            float4      v;
            if (d[4] >= 0) {
                v = reinterpret_cast<const float4 *>(a.out)[((int64_t)d[4] * a.S + ty) * a.S + tx];
            } else if (d[4] == CK_TILE_FG) {
                const float *p = a.rgb + o * 3;
                v = a.input_is_linear ? make_float4(1.0f, tile_lin_to_srgb(p[0]), tile_lin_to_srgb(p[1]),
                                                    tile_lin_to_srgb(p[2]))
                                      : make_float4(1.0f, p[0], p[1], p[2]);
            } else {
                v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            ws    = __fadd_rn(ws, wt);
            acc.x = __fadd_rn(acc.x, __fmul_rn(wt, v.x)), acc.y = __fadd_rn(acc.y, __fmul_rn(wt, v.y));
            acc.z = __fadd_rn(acc.z, __fmul_rn(wt, v.z)), acc.w = __fadd_rn(acc.w, __fmul_rn(wt, v.w));
        }
        reinterpret_cast<float4 *>(a.acc)[o] = acc;
        a.wsum[o]                            = ws;
    }
}

__global__ void tile_normalize_kernel(float4 *__restrict__ acc, const float *__restrict__ wsum, int64_t n) {
    CK_GRID_STRIDE(i, n) {
        const float inv = wsum[i] > 0.0f ? __fdiv_rn(1.0f, wsum[i]) : 0.0f; /* 0 outside a single shortcut tile */
        float4      v   = acc[i];
        acc[i] = make_float4(__fmul_rn(v.x, inv), __fmul_rn(v.y, inv), __fmul_rn(v.z, inv), __fmul_rn(v.w, inv));
    }
}

extern "C" void ck_tile_blend_cuda(ck_backend *be, const ck_tile_blend_args *a) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(a->bx0 >= 0 && a->by0 >= 0 && a->bx1 <= a->w && a->by1 <= a->h && a->bx0 < a->bx1 && a->by0 < a->by1);
    CK_ASSERT(ck_aligned(a->acc, 16) && (!a->out || ck_aligned(a->out, 16)) && a->count >= 1);
    const int64_t n = (int64_t)(a->bx1 - a->bx0) * (a->by1 - a->by0);
    tile_blend_kernel<<<ck_grid_for(cu, n, 256), 256, 0, cu->stream>>>(*a);
    CK_KERNEL_CHECK(cu);
}

extern "C" void ck_tile_normalize_cuda(ck_backend *be, float *acc, const float *wsum, int64_t n) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(ck_aligned(acc, 16));
    tile_normalize_kernel<<<ck_grid_for(cu, n, 256), 256, 0, cu->stream>>>((float4 *)acc, wsum, n);
    CK_KERNEL_CHECK(cu);
}
