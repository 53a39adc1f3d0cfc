/* Pre- and post-processing on the host, exactly as CorridorKey's engine (model_spec §7, §9).
 *
 * All images are interleaved float32 NHWC (one frame: H, W, C). Functions are multi-threaded with
 * OpenMP over rows and allocate nothing per call unless stated (scratch is passed in or documented).
 */
#ifndef CK_FRAME_OPS_H
#define CK_FRAME_OPS_H

#include "core/check.h"

/* ---- resampling (resample.c) ---- */

/* torchvision resize(BILINEAR, antialias=True), align_corners=False; PIL-style triangle filter when
 * downscaling, plain bilinear when upscaling. Separable, computed in float. */
void ck_resize_bilinear_aa(float *dst, int dst_w, int dst_h, const float *src, int src_w, int src_h, int ch);

/* OpenCV resize(INTER_LANCZOS4): 8 taps, replicate border, no antialias. */
void ck_resize_lanczos4(float *dst, int dst_w, int dst_h, const float *src, int src_w, int src_h, int ch);

/* OpenCV resize(INTER_LINEAR) on float (used when a hint's size differs from its image). */
void ck_resize_linear_cv(float *dst, int dst_w, int dst_h, const float *src, int src_w, int src_h, int ch);

/* PyTorch F.interpolate(mode="bicubic", align_corners=False), A = -0.75, clamped taps, no antialias.
 * Used for pos_embed: src is a (src_h, src_w, ch) grid of embeddings. */
void ck_resize_bicubic_torch(float *dst, int dst_w, int dst_h, const float *src, int src_w, int src_h, int ch);

/* ---- colour (color.c) ---- */
float ck_linear_to_srgb(float x); /* max(x,0); 12.92x below 0.0031308, else 1.055 x^(1/2.4) - 0.055 */
float ck_srgb_to_linear(float x); /* max(x,0); x/12.92 below 0.04045, else ((x+0.055)/1.055)^2.4 */

/* ---- pre-processing (preprocess.c) ---- */

/* Builds the network input x (S, S, 4) NHWC: RGB resized to S×S (bilinear+antialias), linear→sRGB
 * after the resize when input_is_linear, ImageNet-normalized; channel 3 = hint resized the same way,
 * unnormalized. rgb has 3 channels; hint 1 channel (any size; resized to the image size first with
 * ck_resize_linear_cv when it differs, as CorridorKey). `scratch` must hold
 * ck_preprocess_scratch_floats(...) floats. */
size_t ck_preprocess_scratch_floats(int img_w, int img_h, int hint_w, int hint_h, int S);
void   ck_preprocess(float *x_out, const float *rgb, int img_w, int img_h, const float *hint, int hint_w,
                     int hint_h, int S, int input_is_linear, float *scratch);

/* ---- post-processing (postprocess.c) ---- */

typedef struct ck_post_params {
    float despill;        /* 0..1 ("average" mode); <= 0 skips */
    int   despeckle;      /* 1: clean_matte (components >= despeckle_size, dilate 25, blur 5) */
    int   despeckle_size; /* area threshold, default 400 */
    int   comp;           /* write comp */
} ck_post_params;

/* Despeckle (clean_matte_opencv): 8-connected components of (alpha > 0.5) with area >= min_area,
 * 51×51 elliptical dilation, 11×11 Gaussian blur (σ 2, reflect-101, 8-bit as OpenCV), then
 * out = alpha * blurred/255. out may alias alpha. Allocates its own scratch (w*h*8 bytes). */
ck_status ck_despeckle(float *out, const float *alpha, int w, int h, int min_area);

/* Despill "average" on sRGB fg (n pixels × 3), in place. */
void ck_despill(float *fg, size_t n_pixels, float strength);

/* From alpha (h,w,1) and fg (h,w,3) at the frame size (already resized back), produce
 * processed (h,w,4: linear premultiplied, despilled, despeckled) and comp (h,w,3 sRGB over the
 * 128-px checkerboard 0.15/0.55), as CorridorKey's _postprocess_opencv steps 2-6. comp may be NULL. */
ck_status ck_postprocess(float *processed, float *comp, const float *alpha, const float *fg, int w, int h,
                         const ck_post_params *pp);

#endif
