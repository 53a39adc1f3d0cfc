/* sRGB transfer functions, as CorridorKey's color_utils.linear_to_srgb / srgb_to_linear (model_spec §7.4).
 *
 * The reference evaluates them in float32 (torch tensors in pre-processing, numpy float32 arrays in
 * post-processing): constants are float32, the clamp is max(x, 0) with no upper bound, the power is a
 * float32 power. NaN passes through (neither the clamp nor the comparison removes it). The references'
 * vector pow (Sleef in torch, SVML in numpy) may differ from libm's powf by an ulp.
 */
#include "frame/frame_ops.h"

#include <math.h>

float ck_linear_to_srgb(float x) {
    x = x < 0.0f ? 0.0f : x;
    if (x <= 0.0031308f) return x * 12.92f;
    /* The exponent 1/2.4 reaches the float32 pow as a float32 scalar. */
    return 1.055f * powf(x, (float)(1.0 / 2.4)) - 0.055f;
}

float ck_srgb_to_linear(float x) {
    x = x < 0.0f ? 0.0f : x;
    if (x <= 0.04045f) return x / 12.92f;
    return powf((x + 0.055f) / 1.055f, 2.4f);
}
