/* Bilinear resize (align_corners=False, no antialias) of NHWC feature maps on CUDA, optionally
 * accumulating into y. ref: ATen UpSample.h area_pixel_compute_source_index and upsample_bilinear2d;
 * CPU reference ops/cpu/resize.c, whose tap arithmetic is reproduced operation for operation
 * (src = scale·(d + 0.5) − 0.5 with separate roundings, clamp at 0, i0 = ⌊src⌋ ≤ in − 1, second tap
 * clamped at the edge, λ1 = src − i0, λ0 = 1 − λ1), so both backends pick identical taps and weights.
 * One thread per 16-byte channel vector of an output pixel (per element when C does not allow it). */
#include "ops/cuda/common.cuh"

struct ck_tap {
    int   i0, i1;
    float l0, l1;
};

__device__ __forceinline__ ck_tap resize_tap(int d, int out, int in) {
    const float scale = __fdiv_rn((float)in, (float)out);
    float       src   = __fsub_rn(__fmul_rn(scale, __fadd_rn((float)d, 0.5f)), 0.5f);
    if (src < 0.0f) src = 0.0f;
    int i0 = (int)src;
    if (i0 > in - 1) i0 = in - 1;
    ck_tap t;
    t.i0 = i0;
    t.i1 = i0 + (i0 < in - 1 ? 1 : 0);
    t.l1 = __fsub_rn(src, (float)i0);
    t.l0 = __fsub_rn(1.0f, t.l1);
    return t;
}

template <typename T, int V>
__global__ void resize_kernel(T *__restrict__ y, const T *__restrict__ x, int H, int W, int C, int Ho, int Wo,
                              int accumulate, int64_t total) {
    const int ncv = C / V;
    CK_GRID_STRIDE(i, total) {
        const int     cv = (int)(i % ncv);
        const int64_t p  = i / ncv;
        const int     ox = (int)(p % Wo);
        const int64_t r  = p / Wo;
        const int     oy = (int)(r % Ho);
        const int64_t b  = r / Ho;
        const ck_tap  ty = resize_tap(oy, Ho, H), tx = resize_tap(ox, Wo, W);
        const T      *r0 = x + (b * H + ty.i0) * (int64_t)W * C + (int64_t)cv * V;
        const T      *r1 = x + (b * H + ty.i1) * (int64_t)W * C + (int64_t)cv * V;
        const ck_vec<T, V> va = ck_vload<T, V>(r0 + (int64_t)tx.i0 * C), vb = ck_vload<T, V>(r0 + (int64_t)tx.i1 * C);
        const ck_vec<T, V> vc = ck_vload<T, V>(r1 + (int64_t)tx.i0 * C), vd = ck_vload<T, V>(r1 + (int64_t)tx.i1 * C);
        ck_vec<T, V>       out;
        if (accumulate) out = ck_vload<T, V>(y + i * V);
#pragma unroll
        for (int j = 0; j < V; j++) {
            /* h0·(w0·a + w1·b) + h1·(w0·c + w1·d), the CPU's association */
            const float top = __fadd_rn(__fmul_rn(tx.l0, ck_ldf(va.v[j])), __fmul_rn(tx.l1, ck_ldf(vb.v[j])));
            const float bot = __fadd_rn(__fmul_rn(tx.l0, ck_ldf(vc.v[j])), __fmul_rn(tx.l1, ck_ldf(vd.v[j])));
            float       v   = __fadd_rn(__fmul_rn(ty.l0, top), __fmul_rn(ty.l1, bot));
            if (accumulate) v = __fadd_rn(ck_ldf(out.v[j]), v);
            out.v[j] = ck_stf<T>(v);
        }
        ck_vstore<T, V>(y + i * V, out);
    }
}

template <typename T>
static void launch(ck_cuda *cu, const ck_tensor *y, const ck_tensor *x, int accumulate) {
    const int64_t B = x->shape[0], H = x->shape[1], W = x->shape[2], C = x->shape[3];
    const int64_t Ho = y->shape[1], Wo = y->shape[2];
    CK_ASSERT(H <= 0x7fffffff && W <= 0x7fffffff && C <= 0x7fffffff && Ho <= 0x7fffffff && Wo <= 0x7fffffff);
    constexpr int V    = ck_v16<T>::V;
    const int64_t npix = B * Ho * Wo;
    const int     vec  = C % V == 0 && ck_aligned(x->data, 16) && ck_aligned(y->data, 16);
    T            *Y    = (T *)y->data;       /* (B, Ho, Wo, C) */
    const T      *X    = (const T *)x->data; /* (B, H, W, C) */
    if (vec) {
        const int64_t n = npix * (C / V);
        resize_kernel<T, V><<<ck_grid_for(cu, n, 256), 256, 0, cu->stream>>>(Y, X, (int)H, (int)W, (int)C, (int)Ho,
                                                                              (int)Wo, accumulate, n);
    } else {
        const int64_t n = npix * C;
        resize_kernel<T, 1><<<ck_grid_for(cu, n, 256), 256, 0, cu->stream>>>(Y, X, (int)H, (int)W, (int)C, (int)Ho,
                                                                              (int)Wo, accumulate, n);
    }
    CK_KERNEL_CHECK(cu);
}

extern "C" void ck_resize_bilinear_cuda(ck_backend *be, const ck_tensor *y, const ck_tensor *x, int accumulate) {
    ck_cuda *cu = ck_cuda_of(be);
    CK_ASSERT(ck_is_float_dtype(x->dtype) && y->dtype == x->dtype && x->data != y->data);
    CK_DISPATCH_FLOAT(x->dtype, T, launch<T>(cu, y, x, accumulate));
}
