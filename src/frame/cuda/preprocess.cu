/* Frame pre-processing on the device ("gpu_preprocess"): the arithmetic of frame/preprocess.c,
 * operation for operation. Antialiased bilinear resize of RGB and hint to S×S with the host's tap
 * tables (ck_resize_aa_taps) and its summation order (s0·w0, plain multiply-adds, then fused ones), an
 * axis of unchanged size skipped as PyTorch does, linear→sRGB when the frame is linear, ImageNet
 * normalization as a subtraction then a division; the hint channel is not normalized.
 * Two kernels: the horizontal pass over all frame rows into tmp (h, S, 4), then the vertical pass, the
 * colour step and the store in the activation dtype. The source may be a tile of a larger plate (pitch).
 * A plate of a converting colour space (a->colorspace) is first decoded in place into linear Rec.709 by
 * pre_colorspace (colorspace.h's ck_cs_plate_px, as the host's ck__ctx_working_plate). */
#include "ops/cuda/common.cuh"

/* rgb (n, 3) in place: code values of cs → linear Rec.709, negatives clamped. */
struct pre_mat3 {
    float m[9];
};
__global__ void pre_colorspace(float *__restrict__ rgb, int64_t n, int cs, pre_mat3 to_working) {
    CK_GRID_STRIDE(i, n) {
        float *p = rgb + i * 3;
        ck_cs_plate_px(cs, to_working.m, p, p);
    }
}

/* (n−1) rounded down to a multiple of 4: taps 1..this are summed unfused (see resample.c). */
__device__ __forceinline__ int aa_unfused(int n) { return ((n - 1) / 4) * 4; }

__global__ void pre_hpass(float *__restrict__ tmp, const float *__restrict__ rgb, const float *__restrict__ hint,
                          int w, int h, int pitch, int S, const int32_t *__restrict__ idx,
                          const float *__restrict__ wt, const int32_t *__restrict__ cnt, int K) {
    CK_GRID_STRIDE(i, (int64_t)h * S) {
        const int     ox = (int)(i % S);
        const int64_t y  = i / S;
        float         o[4];
        if (w == S) { /* unchanged axis: copied */
            for (int c = 0; c < 3; c++) o[c] = rgb[(y * pitch + ox) * 3 + c];
            o[3] = hint[y * pitch + ox];
        } else {
            const int    n = cnt[ox], nu = aa_unfused(n), x0 = idx[(int64_t)ox * K];
            const float *wv = wt + (int64_t)ox * K;
            const float *r  = rgb + (y * pitch + x0) * 3;
            const float *hh = hint + y * pitch + x0;
            for (int c = 0; c < 3; c++) o[c] = __fmul_rn(r[c], wv[0]);
            o[3] = __fmul_rn(hh[0], wv[0]);
            for (int j = 1; j < n; j++) {
                const float wj = wv[j];
                if (j <= nu) {
                    for (int c = 0; c < 3; c++) o[c] = __fadd_rn(o[c], __fmul_rn(r[j * 3 + c], wj));
                    o[3] = __fadd_rn(o[3], __fmul_rn(hh[j], wj));
                } else {
                    for (int c = 0; c < 3; c++) o[c] = __fmaf_rn(r[j * 3 + c], wj, o[c]);
                    o[3] = __fmaf_rn(hh[j], wj, o[3]);
                }
            }
        }
        float4 v = make_float4(o[0], o[1], o[2], o[3]);
        reinterpret_cast<float4 *>(tmp)[i] = v;
    }
}

__device__ __forceinline__ float lin_to_srgb(float x) {
    x = x < 0.0f ? 0.0f : x;
    if (x <= 0.0031308f) return __fmul_rn(x, 12.92f);
    return __fsub_rn(__fmul_rn(1.055f, powf(x, (float)(1.0 / 2.4))), 0.055f);
}

template <typename T>
__global__ void pre_vpass(T *__restrict__ x, const float *__restrict__ tmp, int h, int S,
                          const int32_t *__restrict__ idx, const float *__restrict__ wt,
                          const int32_t *__restrict__ cnt, int K, int linear) {
    const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
    CK_GRID_STRIDE(i, (int64_t)S * S) {
        const int ox = (int)(i % S), oy = (int)(i / S);
        float4    a;
        if (h == S) {
            a = reinterpret_cast<const float4 *>(tmp)[i];
        } else {
            const int     n = cnt[oy], nu = aa_unfused(n), y0 = idx[(int64_t)oy * K];
            const float  *wv = wt + (int64_t)oy * K;
            const float4 *col = reinterpret_cast<const float4 *>(tmp) + (int64_t)y0 * S + ox;
            float4        r   = col[0];
            a = make_float4(__fmul_rn(r.x, wv[0]), __fmul_rn(r.y, wv[0]), __fmul_rn(r.z, wv[0]), __fmul_rn(r.w, wv[0]));
            for (int j = 1; j < n; j++) {
                const float wj = wv[j];
                r              = col[(int64_t)j * S];
                if (j <= nu) {
                    a.x = __fadd_rn(a.x, __fmul_rn(r.x, wj)), a.y = __fadd_rn(a.y, __fmul_rn(r.y, wj));
                    a.z = __fadd_rn(a.z, __fmul_rn(r.z, wj)), a.w = __fadd_rn(a.w, __fmul_rn(r.w, wj));
                } else {
                    a.x = __fmaf_rn(r.x, wj, a.x), a.y = __fmaf_rn(r.y, wj, a.y);
                    a.z = __fmaf_rn(r.z, wj, a.z), a.w = __fmaf_rn(r.w, wj, a.w);
                }
            }
        }
        float v[3] = {a.x, a.y, a.z};
        T    *px   = x + i * 4;
        for (int c = 0; c < 3; c++) {
            const float s = linear ? lin_to_srgb(v[c]) : v[c];
            px[c]         = ck_stf<T>(__fdiv_rn(__fsub_rn(s, mean[c]), stdv[c]));
        }
        px[3] = ck_stf<T>(a.w);
    }
}

extern "C" void ck_preprocess_cuda(ck_backend *be, const ck_preprocess_args *a) {
    ck_cuda      *cu = ck_cuda_of(be);
    const int64_t S  = a->x->shape[1];
    CK_ASSERT(a->x->ndim == 4 && a->x->shape[0] == 1 && a->x->shape[2] == S && a->x->shape[3] == 4);
    CK_ASSERT(ck_aligned(a->tmp, 16) && a->pitch >= a->w);
    if (a->colorspace) {
        CK_ASSERT(a->pitch == a->w); /* the whole frame, uploaded for this frame alone */
        pre_mat3 m;
        memcpy(m.m, a->to_working, sizeof m.m);
        const int64_t n = (int64_t)a->w * a->h;
        pre_colorspace<<<ck_grid_for(cu, n, 256), 256, 0, cu->stream>>>((float *)a->rgb, n, a->colorspace, m);
        CK_KERNEL_CHECK(cu);
    }
    pre_hpass<<<ck_grid_for(cu, (int64_t)a->h * S, 256), 256, 0, cu->stream>>>(
        a->tmp, a->rgb, a->hint, a->w, a->h, a->pitch, (int)S, a->idx_x, a->w_x, a->cnt_x, a->Kx);
    CK_KERNEL_CHECK(cu);
    CK_DISPATCH_FLOAT(a->x->dtype, T,
                      (pre_vpass<T><<<ck_grid_for(cu, S * S, 256), 256, 0, cu->stream>>>(
                          (T *)a->x->data, a->tmp, a->h, (int)S, a->idx_y, a->w_y, a->cnt_y, a->Ky, a->input_is_linear)));
    CK_KERNEL_CHECK(cu);
}
