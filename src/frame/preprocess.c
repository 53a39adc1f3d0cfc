/* Network input for one frame, as CorridorKeyEngine._preprocess_input (model_spec §7.2).
 *
 * x (S, S, 4) NHWC:
 *   x[..., 0:3] = (srgb(resize_aa(rgb)) - mean) / std     srgb() only when the input is linear
 *   x[..., 3]   = resize_aa(hint')                        unnormalized
 * where hint' is the hint resized to the image size with OpenCV INTER_LINEAR when the sizes differ.
 * Both resizes write straight into x (pixel stride 4); the colour step then runs in place. Mean and
 * std are float32 and applied as a subtraction followed by a division, as torchvision's normalize.
 * No clamping anywhere: HDR values and hints outside [0, 1] pass through.
 */
#include "frame/frame_ops.h"

static const float k_mean[3] = {0.485f, 0.456f, 0.406f};
static const float k_std[3]  = {0.229f, 0.224f, 0.225f};

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* Scratch layout: [hint at image size, only when resized (img_h, img_w)] [shared resize workspace]. */
static size_t hint_buf_floats(int img_w, int img_h, int hint_w, int hint_h) {
    return (hint_w == img_w && hint_h == img_h) ? 0 : (size_t)img_w * img_h;
}

size_t ck_preprocess_scratch_floats(int img_w, int img_h, int hint_w, int hint_h, int S) {
    CK_ASSERT(img_w > 0 && img_h > 0 && hint_w > 0 && hint_h > 0 && S > 0);
    size_t ws = ck_resize_ws_floats(CK_RESIZE_BILINEAR_AA, S, S, img_w, img_h, 3);
    ws        = max_sz(ws, ck_resize_ws_floats(CK_RESIZE_BILINEAR_AA, S, S, img_w, img_h, 1));
    if (hint_w != img_w || hint_h != img_h)
        ws = max_sz(ws, ck_resize_ws_floats(CK_RESIZE_LINEAR_CV, img_w, img_h, hint_w, hint_h, 1));
    size_t total = 0;
    CK_ASSERT(ck_add_size(ws, hint_buf_floats(img_w, img_h, hint_w, hint_h), &total));
    return total;
}

void ck_preprocess(float *x_out, const float *rgb, int img_w, int img_h, const float *hint, int hint_w,
                   int hint_h, int S, int input_is_linear, float *scratch) {
    CK_ASSERT(x_out && rgb && hint && scratch);
    CK_ASSERT(img_w > 0 && img_h > 0 && hint_w > 0 && hint_h > 0 && S > 0);

    float       *hint_img = scratch; /* (img_h, img_w) when the hint needs resizing */
    float       *ws       = scratch + hint_buf_floats(img_w, img_h, hint_w, hint_h);
    const float *h        = hint;
    if (hint_w != img_w || hint_h != img_h) {
        ck_resize_ws(CK_RESIZE_LINEAR_CV, hint_img, 1, img_w, img_h, hint, hint_w, hint_h, 1, ws);
        h = hint_img;
    }
    ck_resize_ws(CK_RESIZE_BILINEAR_AA, x_out + 3, 4, S, S, h, img_w, img_h, 1, ws);
    ck_resize_ws(CK_RESIZE_BILINEAR_AA, x_out, 4, S, S, rgb, img_w, img_h, 3, ws);

#pragma omp parallel for schedule(static)
    for (int y = 0; y < S; y++) {
        float *row = x_out + (size_t)y * S * 4;
        for (int x = 0; x < S; x++) {
            float *p = row + (size_t)x * 4;
            for (int c = 0; c < 3; c++) {
                float v = input_is_linear ? ck_linear_to_srgb(p[c]) : p[c];
                p[c]    = (v - k_mean[c]) / k_std[c];
            }
        }
    }
}
