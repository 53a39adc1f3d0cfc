/* Pre- and post-processing on the host, exactly as CorridorKey's engine (model_spec §7, §9).
 *
 * All images are interleaved float32 NHWC (one frame: H, W, C). Functions are multi-threaded with
 * OpenMP over rows and allocate nothing per call unless stated (scratch is passed in or documented).
 *
 * Usage (one frame, S = model size):
 *
 *     float *scratch = malloc(sizeof(float) * ck_preprocess_scratch_floats(w, h, hint_w, hint_h, S));
 *     ck_preprocess(x, rgb, w, h, hint, hint_w, hint_h, S, input_is_linear, scratch);   // x: (S,S,4)
 *     ... network: alpha (S,S,1), fg (S,S,3) ...
 *     ck_resize_lanczos4(alpha_f, w, h, alpha, S, S, 1);                                // CPU path
 *     ck_resize_lanczos4(fg_f, w, h, fg, S, S, 3);
 *     ck_postprocess(processed, comp, alpha_f, fg_f, w, h, &pp);
 *
 * Every resize is separable: a horizontal pass over all source rows into a (src_h, dst_w, C)
 * intermediate, then a vertical pass, each with per-axis tap tables built once per call. The tap
 * weights and the order of the multiply-adds follow the reference binaries the fixtures come from
 * (torch 2.15 CPU, OpenCV 5.0), so results are bit-identical to them on the tested shapes.
 */
#ifndef CK_FRAME_OPS_H
#define CK_FRAME_OPS_H

#include "core/check.h"

/* ---- resampling (resample.c) ---- */

/* The four functions below allocate their workspace per call (tap tables and the intermediate);
 * ck_resize_ws is the same computation in caller-provided memory. */

/* torchvision resize(BILINEAR, antialias=True) = F.interpolate(bilinear, antialias=True,
 * align_corners=False): PIL-style triangle filter whose support grows with the ratio when downscaling,
 * plain bilinear when upscaling; PyTorch's float weights. An axis whose size is unchanged is skipped,
 * as PyTorch does. (torch 2.15's CPU kernel returns wrong rows for 1-pixel-wide images; this does not
 * copy that.) */
void ck_resize_bilinear_aa(float *dst, int dst_w, int dst_h, const float *src, int src_w, int src_h, int ch);

/* The taps of ck_resize_bilinear_aa along one axis of `in` → `out` samples, for device kernels that
 * must sum exactly as it does: output i reads cnt[i] consecutive inputs from idx[i·K] with weights
 * w[i·K ..]; K ≥ ck_resize_aa_max_taps(in, out). Sums run as in ck_resize_bilinear_aa: out = s0·w0,
 * then plain multiply-adds for taps 1 .. 4·⌊(n−1)/4⌋ and fused ones for the rest. */
int  ck_resize_aa_max_taps(int in, int out);
void ck_resize_aa_taps(int in, int out, int K, int32_t *idx, float *w, int32_t *cnt);

/* OpenCV resize(INTER_LANCZOS4): 8 taps from OpenCV's interpolateLanczos4, replicate border, no
 * antialias, float intermediate. */
void ck_resize_lanczos4(float *dst, int dst_w, int dst_h, const float *src, int src_w, int src_h, int ch);

/* The taps of ck_resize_lanczos4 along one axis of `in` → `out` samples, for device kernels that must
 * sum exactly as it does: output i reads inputs idx[8i .. 8i+7] (edge-clamped) with weights w[8i ..]. */
void ck_resize_lanczos4_taps(int in, int out, int32_t *idx, float *w);

/* OpenCV resize(INTER_LINEAR) on float (used when a hint's size differs from its image), as cv2 5.0
 * computes it for sources of at least 2×2 (its IPP path: the fraction taken in double and rounded to
 * float, a + t·(b − a) with one rounding, edge samples repeated). For a 1-pixel-wide or -high source
 * cv2 takes its generic path instead, ~1e-6 away. */
void ck_resize_linear_cv(float *dst, int dst_w, int dst_h, const float *src, int src_w, int src_h, int ch);

/* PyTorch F.interpolate(mode="bicubic", align_corners=False), A = -0.75, clamped taps, no antialias.
 * Used for pos_embed: src is a (src_h, src_w, ch) grid of embeddings. */
void ck_resize_bicubic_torch(float *dst, int dst_w, int dst_h, const float *src, int src_w, int src_h, int ch);

typedef enum ck_resize_mode {
    CK_RESIZE_BILINEAR_AA    = 0, /* ck_resize_bilinear_aa */
    CK_RESIZE_LANCZOS4       = 1, /* ck_resize_lanczos4 */
    CK_RESIZE_LINEAR_CV      = 2, /* ck_resize_linear_cv */
    CK_RESIZE_BICUBIC_TORCH  = 3  /* ck_resize_bicubic_torch */
} ck_resize_mode;

/* Floats of workspace ck_resize_ws needs: two tap tables plus one (src_h, dst_w, ch) intermediate.
 * Tap indices are stored as int32 in it, so pass malloc'd memory, not a declared float array. */
size_t ck_resize_ws_floats(ck_resize_mode mode, int dst_w, int dst_h, int src_w, int src_h, int ch);

/* Resize src (src_h, src_w, ch) into dst, whose pixels are dst_stride floats apart (dst_stride >= ch),
 * so that a resize can fill some channels of a wider interleaved image (then ch <= 1024); dst_stride = ch
 * is the plain (dst_h, dst_w, ch) layout. src and dst must not overlap. */
void ck_resize_ws(ck_resize_mode mode, float *dst, int dst_stride, int dst_w, int dst_h, const float *src,
                  int src_w, int src_h, int ch, float *ws);

/* ---- colour (color.c): ck_linear_to_srgb, ck_srgb_to_linear (ckey.h) ---- */

/* ---- pre-processing (preprocess.c) ---- */

/* Builds the network input x (S, S, 4) NHWC: RGB resized to S×S (bilinear+antialias), linear→sRGB
 * after the resize when input_is_linear, ImageNet-normalized; channel 3 = hint resized the same way,
 * unnormalized. rgb has 3 channels; hint 1 channel (any size; resized to the image size first with
 * ck_resize_linear_cv when it differs, as CorridorKey). `scratch` must hold
 * ck_preprocess_scratch_floats(...) floats of malloc'd memory (see ck_resize_ws_floats). */
size_t ck_preprocess_scratch_floats(int img_w, int img_h, int hint_w, int hint_h, int S);
void   ck_preprocess(float *x_out, const float *rgb, int img_w, int img_h, const float *hint, int hint_w,
                     int hint_h, int S, int input_is_linear, float *scratch);

/* ---- automatic hint (autohint.c): ck_auto_hint (ckey.h) ---- */

/* ---- post-processing (postprocess.c) ---- */

typedef struct ck_post_params {
    float despill;        /* 0..1 ("average" mode); <= 0 skips */
    int   despeckle;      /* 1: clean_matte (components >= despeckle_size, dilate 25, blur 5) */
    int   despeckle_size; /* area threshold, default 400 */
    int   comp;           /* write comp */
    int   colorspace;     /* the plate's ck_colorspace (resolved): Processed goes to its gamut; 0 or a
                             Rec.709 one: unchanged */
    const float *plate;   /* (h, w, 3) the plate as given, for keep_highlights (colorspace.h's rule); NULL:
                             off */
} ck_post_params;

/* Despeckle (clean_matte_opencv): 8-connected components of (alpha > 0.5) with area >= min_area,
 * 51×51 elliptical dilation, 11×11 Gaussian blur (σ 2, reflect-101, 8-bit as OpenCV), then
 * out = alpha * blurred/255. out may alias alpha. Allocates its own scratch: 4 bytes per pixel plus
 * 16 bytes per horizontal run of the binary mask. Returns CK_STATUS_EOOM when that fails. */
ck_status ck_despeckle(float *out, const float *alpha, int w, int h, int min_area);

/* Despill "average" on sRGB fg (n pixels × 3), in place. */
void ck_despill(float *fg, size_t n_pixels, float strength);

/* From alpha (h,w,1) and fg (h,w,3) at the frame size (already resized back), produce
 * processed (h,w,4: linear premultiplied, despilled, despeckled; in the plate's gamut, with its
 * highlights when pp->plate is given: ck_cs_processed_px) and comp (h,w,3 sRGB over the
 * 128-px checkerboard 0.15/0.55), as CorridorKey's _postprocess_opencv steps 2-6. comp may be NULL
 * (then no comp is made, whatever pp->comp says). alpha and fg are not modified. */
ck_status ck_postprocess(float *processed, float *comp, const float *alpha, const float *fg, int w, int h,
                         const ck_post_params *pp);

/* ---- the foreground un-mixed from the plate (unmix.c) ---- */

/* fg (h,w,3) sRGB-encoded, in place: where alpha > lo, blended (weight clamp((alpha − lo) / 0.15, 0, 1)) toward
 * F = (I − (1 − alpha)·B) / alpha in linear Rec.709, clamped to [0, 1] and sRGB-encoded, with I the plate (h,w,3)
 * of colour space `colorspace` (resolved, as the context's) taken to linear Rec.709 as pre-processing takes it,
 * and B the screen behind the pixel: the plate's mean over the pixels with alpha < 0.02 per 16 × 16 cell, from
 * the nearest 3 × 3, 9 × 9 or 33 × 33 cells that hold any, bilinear between cell centres; no screen within
 * 256 px: fg unchanged (the weight is scaled by the share of the interpolation on cells with an estimate), and
 * an estimate from the 33 × 33 cells (screen beyond about 64 px) counts only where alpha ≥ 0.8 (fully from 0.95).
 * alpha (h,w) is read clamped to [0, 1]. Deterministic; allocates about (w·h/256)·84 bytes.
 * Returns CK_STATUS_EOOM when that fails (fg unchanged). */
ck_status ck_fg_unmix(float *fg, const float *alpha, const float *plate, int colorspace, int w, int h, float lo);

/* The alpha above which ckey blends the un-mixed fg in (ck_params.fg_unmix): 0.1, chosen on the development plates
 * (seed 7001) with tools/train/fg_study.py among 0.1, 0.15 and 0.3. */
#define CK_UNMIX_ALPHA_LO 0.1f

#endif
