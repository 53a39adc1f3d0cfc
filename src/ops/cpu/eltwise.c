/* Elementwise ops on the CPU: broadcast add, activations, sigmoid of a (scaled) sum, sigmoid concat. */
#include "ops/cpu/ops_cpu.h"

#include <math.h>

void ck_add_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *a, const ck_tensor *b) {
    (void)be;
    const int64_t n = ck_tensor_numel(a), nb = ck_tensor_numel(b);
    const float  *A = (const float *)a->data, *Bv = (const float *)b->data;
    float        *Y = (float *)y->data;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) Y[i] = A[i] + Bv[i % nb];
}

void ck_activation_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x, ck_act act) {
    (void)be;
    const int64_t n = ck_tensor_numel(x);
    const float  *X = (const float *)x->data;
    float        *Y = (float *)y->data;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        float v = X[i];
        if (act == CK_ACT_RELU) v = v > 0.0f ? v : 0.0f;
        else if (act == CK_ACT_GELU) v = ck_gelu_erf(v);
        Y[i] = v;
    }
}

static inline float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

void ck_sigmoid_add_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *a, const ck_tensor *b, float b_scale) {
    (void)be;
    const int64_t n = ck_tensor_numel(a);
    const float  *A = (const float *)a->data, *Bv = b ? (const float *)b->data : NULL;
    float        *Y = (float *)y->data;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) Y[i] = sigmoidf(Bv ? A[i] + Bv[i] * b_scale : A[i]);
}

void ck_concat_sigmoid_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *a, int a_channels,
                           const ck_tensor *b) {
    (void)be;
    const int64_t CA = ck_tensor_last(a), CB = ck_tensor_last(b), CY = ck_tensor_last(y);
    const int64_t P  = ck_tensor_numel(b) / CB;
    const float  *A = (const float *)a->data, *Bv = (const float *)b->data;
    float        *Y = (float *)y->data;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < P; p++) {
        for (int64_t c = 0; c < a_channels; c++) Y[p * CY + c] = A[p * CA + c];
        for (int64_t c = 0; c < CB; c++) Y[p * CY + a_channels + c] = sigmoidf(Bv[p * CB + c]);
        for (int64_t c = a_channels + CB; c < CY; c++) Y[p * CY + c] = 0.0f;
    }
}

static float load_any(const void *p, ck_dtype t, int64_t i) {
    switch (t) {
    case CK_DTYPE_F16: return ck_f16_to_f32(((const uint16_t *)p)[i]);
    case CK_DTYPE_BF16: return ck_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

void ck_convert_cpu(ck_backend *be, const ck_tensor *y, const ck_tensor *x) {
    (void)be;
    const int64_t n = ck_tensor_numel(x);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const float v = load_any(x->data, x->dtype, i);
        if (y->dtype == CK_DTYPE_F16) ((uint16_t *)y->data)[i] = ck_f32_to_f16(v);
        else if (y->dtype == CK_DTYPE_BF16) ((uint16_t *)y->data)[i] = ck_f32_to_bf16(v);
        else ((float *)y->data)[i] = v;
    }
}
