/* Tensors: a data pointer, a dtype and a shape in PyTorch order (outermost first), always contiguous.
 *
 * Activation layouts used throughout the engine (decided once, here):
 *   - images and feature maps are NHWC: (B, H, W, C), channel fastest;
 *   - Hiera tokens stay in spatial raster order, (B, H, W, C) of the current stage grid (no unroll);
 *   - attention operands are grouped per (batch, head, window): (G, T, HD) with G = B*NH*num_windows;
 *   - weights keep their PyTorch layout: Linear (OUT, IN), Conv2d (OC, IC, KH, KW).
 */
#ifndef CK_TENSOR_H
#define CK_TENSOR_H

#include <math.h>
#include <stdint.h>
#include <stddef.h>

typedef enum ck_dtype {
    CK_DTYPE_F32  = 0,
    CK_DTYPE_F16  = 1,
    CK_DTYPE_BF16 = 2,
    CK_DTYPE_I64  = 3,
    CK_DTYPE_F64  = 4,
    CK_DTYPE_I32  = 5,
    CK_DTYPE_U8   = 6,
    CK_DTYPE_COUNT
} ck_dtype;

static inline size_t ck_dtype_size(ck_dtype t) {
    switch (t) {
    case CK_DTYPE_F32: return 4;
    case CK_DTYPE_F16: return 2;
    case CK_DTYPE_BF16: return 2;
    case CK_DTYPE_I64: return 8;
    case CK_DTYPE_F64: return 8;
    case CK_DTYPE_I32: return 4;
    case CK_DTYPE_U8: return 1;
    default: return 0;
    }
}
const char *ck_dtype_name(ck_dtype t);

#define CK_MAX_DIMS 5

typedef struct ck_tensor {
    void    *data;  /* device memory of the backend that owns it */
    ck_dtype dtype;
    int      ndim;
    int64_t  shape[CK_MAX_DIMS];
} ck_tensor;

static inline int64_t ck_tensor_numel(const ck_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}
static inline size_t ck_tensor_nbytes(const ck_tensor *t) {
    return (size_t)ck_tensor_numel(t) * ck_dtype_size(t->dtype);
}
/* Last dimension (channels / features). */
static inline int64_t ck_tensor_last(const ck_tensor *t) { return t->shape[t->ndim - 1]; }

static inline ck_tensor ck_tensor_make(void *data, ck_dtype dt, int ndim, const int64_t *shape) {
    ck_tensor t;
    t.data  = data;
    t.dtype = dt;
    t.ndim  = ndim;
    for (int i = 0; i < CK_MAX_DIMS; i++) t.shape[i] = i < ndim ? shape[i] : 1;
    return t;
}

/* Half-precision conversions (IEEE fp16 and bfloat16), round-to-nearest-even. */
float    ck_f16_to_f32(uint16_t h);
uint16_t ck_f32_to_f16(float f);
float    ck_bf16_to_f32(uint16_t h);
uint16_t ck_f32_to_bf16(float f);

/* CorridorKey's 8-bit sample: (clip(v, 0, 1) * 255).astype(uint8) in float32, truncating. NaN survives
 * np.clip and its uint8 cast is undefined in C; 0 is what numpy produces on x86. */
static inline uint8_t ck_f32_to_u8_trunc(float v) {
    if (!(v > 0.0f)) return 0;
    if (v > 1.0f) v = 1.0f;
    return (uint8_t)(v * 255.0f);
}

/* A 16-bit PNG sample: round(clip(v, 0, 1) * 65535), half to even like np.round; NaN -> 0. */
static inline uint16_t ck_f32_to_u16_round(float v) {
    if (!(v > 0.0f)) return 0;
    if (v > 1.0f) v = 1.0f;
    return (uint16_t)lrintf(v * 65535.0f);
}

#endif
