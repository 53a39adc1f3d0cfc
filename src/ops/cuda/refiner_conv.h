/* The refiner's fused 3×3 convolution on Hopper (src/ops/cuda/refiner_conv.cu), as a plain launcher that the
 * conv3x3_gn op (ops/cuda/conv3x3_gn.cu) and the host emulation (dev/cuda/refiner_emu.cpp) both call.
 *
 *     y rows [row0, row0 + h) = conv3×3(act(x), w, dilation d, zero padding d) + bias
 *     act(x) = ReLU(x · scale + shift [+ residual]) per channel, scale = rstd·γ, shift = β − mean·scale from the
 *              frozen GroupNorm statistics `stats` (B, 8, 2) (mean, rstd); act(x) = x when stats is NULL
 *     a_out rows [row0, row0 + h) = act(x) as loaded (optional; with stats only)
 *     moments (B, H, nseg, 8, 2) float32: for every output row and 128-pixel segment (nseg = ⌈W/128⌉), the
 *              (mean, M2) of each group of 8 channels of y as stored (rounded to y's dtype)
 *
 * x (B, H, W, CIN), y (B, h, W, 64), w (64, CIN, 3, 3), all float16 or all bfloat16; bias, γ, β float32 (64 / CIN).
 * CIN = 64 (the residual blocks; dilation 1, 2, 4 or 8) or 8 (the stem: dilation 1, no act).
 * The padding is applied after act (zeros of the normalized map, as in the unfused GroupNorm → conv).
 */
#ifndef CK_OPS_CUDA_REFINER_CONV_H
#define CK_OPS_CUDA_REFINER_CONV_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CK_RCONV_C 64      /* output channels (and the residual blocks' input channels) */
#define CK_RCONV_GROUPS 8  /* GroupNorm groups: 8 channels each */
#define CK_RCONV_SEG 128   /* pixels per row segment: one warpgroup's output tile, and the moments' unit */

typedef struct ck__rconv_args {
    const void  *x;       /* (B, H, W, in_channels) */
    void        *y;       /* (B, h, W, 64): output rows row0 .. row0 + h − 1 */
    const void  *w;       /* (64, 64, 3, 3) */
    const float *bias;    /* (64) */
    const float *stats;   /* (B, 8, 2) (mean, rstd) of x's GroupNorm, or NULL: no act on the input */
    const float *gamma;   /* (64), with stats */
    const float *beta;    /* (64), with stats */
    const void  *residual; /* (B, H, W, 64) added before the ReLU, or NULL; with stats only */
    void        *a_out;    /* (B, H, W, 64): act(x) over the band's rows, or NULL; with stats only */
    float       *moments; /* (B, H, nseg, 8, 2) */
    int          B, H, W, row0, h, dilation;
    int          in_channels; /* 64 or 8 */
    int          bf16;    /* 0: float16, 1: bfloat16 */
    int          sm_count;
} ck__rconv_args;

/* Enqueues the kernel and returns 1, or returns 0 where it cannot run (not a compute capability 9.0 device
 * with the sm_90a image, dilation not 1, 2, 4 or 8, a pointer not 16-byte aligned, a residual or a_out without
 * stats or with the stem's 8 channels). Allocates nothing and
 * synchronizes nothing (graph capturable). Deterministic: no atomics. */
int ck__refiner_conv(const ck__rconv_args *a, cudaStream_t stream);

/* Shared memory the kernel asks for at a dilation and input width (bytes). */
size_t ck__refiner_conv_smem(int dilation, int in_channels);

#ifdef __cplusplus
}
#endif

#endif
