#!/usr/bin/env python3
"""Reference fixtures for tests/test_frame_ops.c (resampling, pre- and post-processing).

Every output comes from the library CorridorKey itself calls (model_spec §7, §9):
  - torch.nn.functional.interpolate(mode="bilinear", antialias=True) and mode="bicubic", CPU, float32;
  - torchvision.transforms.v2.functional.resize / normalize for the network input;
  - cv2.resize (INTER_LANCZOS4, INTER_LINEAR), cv2.connectedComponentsWithStats, cv2.dilate with the
    MORPH_ELLIPSE element, cv2.GaussianBlur on uint8;
  - numpy float32 for despill and the sRGB transfer functions, as CorridorKeyModule/core/color_utils.py
    (revision d836296) evaluates them on the CPU path.

Images are stored as float32 .npy in (H, W, C) order (NHWC, the engine's layout); a 1-channel image is
(H, W, 1). File names: <case>.in.npy / <case>.out.npy, plus extra inputs where a case needs them.
The C test lists the cases it expects, so keep the two in step.

Usage: python3 tools/reference/make_frame_ops_fixtures.py [--out tests/fixtures/frame_ops]
"""
import argparse
import os

import cv2
import numpy as np
import torch
import torch.nn.functional as F
import torchvision.transforms.v2.functional as TF
from torchvision.transforms import InterpolationMode

torch.set_num_threads(1)
f32 = np.float32


def to_nchw(a):
    """(H, W, C) numpy -> contiguous (1, C, H, W) tensor (torch's kernels depend on the memory format)."""
    return torch.from_numpy(np.ascontiguousarray(a)).permute(2, 0, 1)[None].contiguous()


def to_hwc(t):
    return np.ascontiguousarray(t[0].permute(1, 2, 0).numpy())


def torch_resize(a, w, h, mode):
    kw = dict(mode=mode, align_corners=False)
    if mode == "bilinear":
        kw["antialias"] = True
    return to_hwc(F.interpolate(to_nchw(a), size=(h, w), **kw))


def cv_resize(a, w, h, interp):
    out = cv2.resize(a, (w, h), interpolation=interp)
    return out.reshape(h, w, a.shape[2])


# ---- colour (color_utils.py at d836296, numpy float32) ----

def linear_to_srgb(x):
    x = np.clip(x, 0.0, None)
    return np.where(x <= 0.0031308, x * 12.92, 1.055 * np.power(x, 1.0 / 2.4) - 0.055)


def srgb_to_linear(x):
    x = np.clip(x, 0.0, None)
    return np.where(x <= 0.04045, x / 12.92, np.power((x + 0.055) / 1.055, 2.4))


def despill(image, strength):
    if strength <= 0.0:
        return image
    r, g, b = image[..., 0], image[..., 1], image[..., 2]
    limit = (r + b) / 2.0
    spill = np.maximum(g - limit, 0.0)
    out = np.stack([r + spill * 0.5, g - spill, b + spill * 0.5], axis=-1)
    if strength < 1.0:
        return image * (1.0 - strength) + out * strength
    return out


def clean_matte(alpha, area_threshold, dilation=25, blur_size=5):
    """clean_matte_opencv: alpha (H, W) float32."""
    mask = (alpha > 0.5).astype(np.uint8) * 255
    n, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    keep = np.zeros(n, np.uint8)
    keep[1:] = stats[1:, cv2.CC_STAT_AREA] >= area_threshold
    cleaned = keep[labels] * np.uint8(255)
    k = 2 * dilation + 1
    cleaned = cv2.dilate(cleaned, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
    b = 2 * blur_size + 1
    cleaned = cv2.GaussianBlur(cleaned, (b, b), 0)
    return alpha * (cleaned.astype(np.float32) / 255.0)


def checkerboard(w, h, size=128, c1=0.15, c2=0.55):
    x = np.arange(w) // size
    y = np.arange(h) // size
    xg, yg = np.meshgrid(x, y)
    bg = np.where((xg + yg) % 2 == 0, c1, c2).astype(np.float32)
    return np.stack([bg, bg, bg], axis=-1)


def postprocess(alpha, fg, despill_strength, despeckle, despeckle_size):
    """_postprocess_opencv steps 2-6 on frame-size alpha (H, W, 1) and sRGB fg (H, W, 3)."""
    a = clean_matte(alpha[:, :, 0], despeckle_size)[:, :, None] if despeckle else alpha
    fg_d = despill(fg, despill_strength)
    fg_lin = srgb_to_linear(fg_d)
    processed = np.concatenate([fg_lin * a, a], axis=-1)
    bg_lin = srgb_to_linear(checkerboard(fg.shape[1], fg.shape[0]))
    comp = linear_to_srgb(fg_lin * a + bg_lin * (1.0 - a))
    return processed.astype(f32), comp.astype(f32)


# ---- test images ----

def smooth_image(rng, h, w, c, lo=0.0, hi=1.0):
    """Random field with some structure (noise plus a ramp), so that resampling errors are visible."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = (np.sin(xx[..., None] * 0.37 + np.arange(c) * 0.9) * np.cos(yy[..., None] * 0.23) + 1) / 2
    noise = rng.random((h, w, c), dtype=f32)
    return (lo + (hi - lo) * (0.6 * base + 0.4 * noise)).astype(f32)


def matte(rng, h, w, blobs, noise_dots):
    """A synthetic alpha with large blobs, small specks and soft edges."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    a = np.zeros((h, w), f32)
    for cy, cx, ry, rx in blobs:
        d = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2
        a = np.maximum(a, np.clip(1.5 - d, 0, 1))
    for _ in range(noise_dots):
        y, x = rng.integers(0, h), rng.integers(0, w)
        s = rng.integers(1, 4)
        a[y:y + s, x:x + s] = rng.uniform(0.55, 1.0)
    a += rng.normal(0, 0.03, a.shape).astype(f32)
    return a.astype(f32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "../../tests/fixtures/frame_ops"))
    args = ap.parse_args()
    out = os.path.normpath(args.out)
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(1234)

    def save(name, arr):
        arr = np.ascontiguousarray(arr, dtype=f32)
        np.save(os.path.join(out, name + ".npy"), arr)

    # ---- resizes: (case, src_w, src_h, dst_w, dst_h, ch) ----
    aa_cases = [
        ("aa_up_37x23_64x64_c3", 37, 23, 64, 64, 3),
        ("aa_down_40x30_23x17_c4", 40, 30, 23, 17, 4),
        ("aa_down_60x34_32x18_c3", 60, 34, 32, 18, 3),      # the 4K -> 2048 ratios (1.875, 1.89)
        ("aa_down_120x60_13x7_c1", 120, 60, 13, 7, 1),      # 9.2x, 8.6x: 21-tap filters
        ("aa_down_96x54_23x13_c1", 96, 54, 23, 13, 1),      # 1920x1080-like, scaled down small
        ("aa_w1_1x50_7x13_c1", 1, 50, 7, 13, 1),            # 1-pixel-wide input
        ("aa_to_w1_50x37_1x9_c1", 50, 37, 1, 9, 1),         # 1-pixel-wide output
        ("aa_hsame_60x50_60x29_c1", 60, 50, 60, 29, 1),   # width unchanged: vertical pass only
    ]
    for name, sw, sh, dw, dh, c in aa_cases:
        src = smooth_image(rng, sh, sw, c)
        save(name + ".in", src)
        if dw == 1:
            # torch 2.15's CPU antialiased vertical pass returns the first output row for every row
            # when the tensor is 1 pixel wide. Run torch's own two passes separately instead: the
            # horizontal one to width 1, then the vertical one on a copy widened to 2 columns.
            hpass = torch_resize(src, 1, sh, "bilinear")
            ref = torch_resize(np.repeat(hpass, 2, axis=1), 2, dh, "bilinear")[:, :1]
        else:
            ref = torch_resize(src, dw, dh, "bilinear")
        save(name + ".out", ref)

    bc_cases = [  # pos_embed-like grids (g, g, C)
        ("bc_32_16_c4", 32, 32, 16, 16, 4),
        ("bc_16_40_c4", 16, 16, 40, 40, 4),
        ("bc_7_3_c3", 7, 7, 3, 3, 3),
        ("bc_3_7_c3", 3, 3, 7, 7, 3),
        ("bc_48_18_c2", 48, 48, 18, 18, 2),
    ]
    for name, sw, sh, dw, dh, c in bc_cases:
        src = rng.standard_normal((sh, sw, c)).astype(f32) * 0.02
        save(name + ".in", src)
        save(name + ".out", torch_resize(src, dw, dh, "bicubic"))

    lz_cases = [
        ("lz_down_64x64_37x23_c1", 64, 64, 37, 23, 1),
        ("lz_up_37x23_52x41_c3", 37, 23, 52, 41, 3),
        ("lz_up_20x15_43x31_c4", 20, 15, 43, 31, 4),
        ("lz_w1_1x30_1x17_c1", 1, 30, 1, 17, 1),
        ("lz_hsame_50x40_50x23_c1", 50, 40, 50, 23, 1),
        ("lz_step_32x32_71x45_c1", 32, 32, 71, 45, 1),      # hard edges: ringing outside [0, 1]
    ]
    for name, sw, sh, dw, dh, c in lz_cases:
        src = smooth_image(rng, sh, sw, c)
        if name.startswith("lz_step"):
            src = np.zeros((sh, sw, c), f32)
            src[8:24, 10:20] = 1.0
        save(name + ".in", src)
        save(name + ".out", cv_resize(src, dw, dh, cv2.INTER_LANCZOS4))

    lin_cases = [
        ("lin_up_37x23_64x64_c1", 37, 23, 64, 64, 1),
        ("lin_down_70x50_43x29_c1", 70, 50, 43, 29, 1),
        ("lin_half_40x40_20x20_c1", 40, 40, 20, 20, 1),
        ("lin_up_37x23_50x40_c3", 37, 23, 50, 40, 3),
        ("lin_w1_1x50_1x77_c1", 1, 50, 1, 77, 1),
    ]
    for name, sw, sh, dw, dh, c in lin_cases:
        src = smooth_image(rng, sh, sw, c, -0.5, 1.5)
        save(name + ".in", src)
        save(name + ".out", cv_resize(src, dw, dh, cv2.INTER_LINEAR))

    # ---- pre-processing: torchvision on (1, C, H, W) float32, as _preprocess_input ----
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    pre_cases = [  # (case, w, h, hint_w, hint_h, S, input_is_linear, hi)
        ("pre_srgb_37x23_s48", 37, 23, 37, 23, 48, 0, 1.0),
        ("pre_linear_60x34_hint45x25_s32", 60, 34, 45, 25, 32, 1, 1.5),
        ("pre_down_60x34_s32", 60, 34, 60, 34, 32, 0, 1.0),
    ]
    for name, w, h, hw, hh, S, lin, hi in pre_cases:
        rgb = smooth_image(rng, h, w, 3, 0.0, hi)
        hint = smooth_image(rng, hh, hw, 1)
        hint_img = hint if (hw, hh) == (w, h) else cv_resize(hint, w, h, cv2.INTER_LINEAR)
        img = TF.resize(to_nchw(rgb), [S, S], interpolation=InterpolationMode.BILINEAR)
        if lin:
            img = img.clamp(min=0.0)
            img = torch.where(img <= 0.0031308, img * 12.92, 1.055 * torch.pow(img, 1.0 / 2.4) - 0.055)
        m = TF.resize(to_nchw(hint_img), [S, S], interpolation=InterpolationMode.BILINEAR)
        img = TF.normalize(img, mean, std)
        x = torch.cat([img, m], dim=1)
        save(name + ".rgb", rgb)
        save(name + ".hint", hint)
        save(name + ".out", to_hwc(x))

    # ---- colour and despill (numpy float32) ----
    xs = np.concatenate([
        np.linspace(-0.5, 2.0, 2001, dtype=f32),
        np.array([0.0, 0.0031308, 0.04045, 1.0, 1e-8, 3e-3, 0.04, 0.041], f32),
    ]).astype(f32)
    save("color_x", xs[:, None, None])
    save("color_lin2srgb", linear_to_srgb(xs).astype(f32)[:, None, None])
    save("color_srgb2lin", srgb_to_linear(xs).astype(f32)[:, None, None])

    fg = rng.uniform(-0.1, 1.1, (600, 1, 3)).astype(f32)
    fg[:100, 0, 1] += 0.5  # plenty of green spill
    save("despill_fg", fg)
    for tag, s in (("100", 1.0), ("075", 0.75), ("050", 0.5)):
        save("despill_s" + tag, despill(fg, s).astype(f32))

    # ---- despeckle (clean_matte_opencv) ----
    ds_cases = []
    a = matte(rng, 90, 120, [(35, 45, 15, 20), (65, 90, 12, 16), (75, 20, 5, 6)], 30)
    # components right at the threshold: 20x20 = 400 kept, 19x21 = 399 removed, and two 10x20
    # rectangles touching only at a corner (8-connected: one component of 400)
    a[2:22, 96:116] = 0.9
    a[2:21, 2:23] = 0.9
    a[60:70, 30:50] = 0.8
    a[70:80, 50:70] = 0.8
    ds_cases.append(("ds_120x90", a, 400))
    ds_cases.append(("ds_120x90_area50", a, 50))
    small = rng.uniform(0, 1, (5, 7)).astype(f32)
    ds_cases.append(("ds_7x5", small, 3))            # kernels wider than the image: repeated reflection
    row = (rng.uniform(0, 1, (1, 30)) > 0.3).astype(f32) * 0.9
    ds_cases.append(("ds_30x1", row, 4))             # one row: the blur shrinks to 11x1
    for name, alpha, area in ds_cases:
        if not name.endswith("_area50"):  # that case reuses ds_120x90.in
            save(name + ".in", alpha[:, :, None])
        save(name + ".out", clean_matte(alpha, area)[:, :, None])
        np.save(os.path.join(out, name + ".area.npy"), np.array([area], f32))

    # ---- full post-processing (frame-size alpha and fg) ----
    h, w = 16, 132  # crosses the 128-px checker boundary
    alpha = np.clip(matte(rng, h, w, [(8, 60, 10, 40), (8, 122, 7, 8)], 10), -0.02, 1.02)[:, :, None]
    fgi = smooth_image(rng, h, w, 3, -0.05, 1.05)
    fgi[..., 1] += 0.2
    save("post.alpha", alpha)
    save("post.fg", fgi)
    for tag, s, dsp in (("a", 1.0, 1), ("b", 0.5, 0), ("c", 0.0, 1)):
        processed, comp = postprocess(alpha, fgi, s, dsp, 400)
        save("post_%s.processed" % tag, processed)
        if tag != "c":  # the comp formula does not depend on the variant; two are enough
            save("post_%s.comp" % tag, comp)

    total = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print("wrote %d files, %.1f KiB, to %s" % (len(os.listdir(out)), total / 1024, out))


if __name__ == "__main__":
    main()
