#!/usr/bin/env python3
"""Generate golden reference data for the GreenFormer engine.

Builds the PyTorch reference network (greenformer_ref.py) with deterministic random weights at the
training grid T, writes the checkpoint in the three on-disk forms the engine must load, reloads it the
way CorridorKey's engine does (prefix strip, bicubic pos_embed resize when S != T), runs one structured
synthetic frame through the exact pre-processing, network and CPU post-processing path
(docs/model_spec.md §7.2, §2-§5, §7.3 CPU path) and dumps every intermediate as float32 .npy.

    python3 tools/reference/make_fixtures.py --config tiny --size 128 --train-size 128 \
        --out tests/fixtures/tiny/s128
    python3 tools/reference/make_fixtures.py --config tiny --size 64 \
        --checkpoint tests/fixtures/tiny/s128/model.pth --out tests/fixtures/tiny/s64
    python3 tools/reference/make_fixtures.py --config base_plus --size 512 --train-size 2048 --out /tmp/bp512

See tools/reference/README.md for the file list and tolerances.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import sys
import time

import cv2
import numpy as np
import safetensors
import safetensors.torch
import timm
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import greenformer_ref as gr  # noqa: E402

DEFAULT_FRAME = {"tiny": (136, 72), "base_plus": (480, 640)}       # (FH, FW)
DEFAULT_DESPECKLE = {"tiny": 20, "base_plus": 400}
CALIB_SIZE = {"tiny": 128, "base_plus": 512}                          # where the output layers are fitted
PREFIX = "_orig_mod."

# ----------------------------------------------------------------------------------------------------
# Synthetic green-screen frame
# ----------------------------------------------------------------------------------------------------


def _smoothstep_edge(signed_dist: np.ndarray, width: float) -> np.ndarray:
    """Coverage from a signed distance (negative inside): linear ramp of `width` px, smoothstepped."""
    t = np.clip(0.5 - signed_dist / width, 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def _ellipse_sd(yy, xx, cy, cx, ry, rx):
    r = np.sqrt(((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2)
    return (r - 1.0) * min(ry, rx)


def _segment_dist(yy, xx, y0, x0, y1, x1):
    dy, dx = y1 - y0, x1 - x0
    t = np.clip(((yy - y0) * dy + (xx - x0) * dx) / (dy * dy + dx * dx), 0.0, 1.0)
    return np.sqrt((yy - (y0 + t * dy)) ** 2 + (xx - (x0 + t * dx)) ** 2)


def make_frame(fh: int, fw: int, seed: int):
    """Returns dict(rgb8 [H,W,3] uint8 RGB, hint8 [H,W] uint8, alpha, fg [H,W,3], target_alpha) (float32).

    Green screen with a lighting gradient and two dark tracking-marker crosses; a subject made of a torso
    ellipse and a head disc with soft edges, a semi-transparent veil, thin hair strands and two small
    separate orange props; 1% noise.
    The hint is the truth alpha coarsened 8x, blurred and slightly dilated, plus a few small specks.
    ``target_alpha`` (used only to calibrate the output layers of the random network) is the truth alpha
    plus the markers and the hint specks as false-positive islands, so that despeckle has work to do.
    """
    rng = np.random.default_rng(seed + 1000)
    yy, xx = np.meshgrid(np.arange(fh, dtype=np.float64) + 0.5, np.arange(fw, dtype=np.float64) + 0.5,
                         indexing="ij")
    u, v = xx / fw, yy / fh
    s = min(fh, fw)
    px = max(s / 72.0, 1.0)  # feature scale in pixels

    bg = np.stack([0.08 + 0.06 * u, 0.50 + 0.18 * (1.0 - v) - 0.08 * u, 0.13 + 0.05 * v], axis=-1)
    markers = np.zeros_like(u)
    for (my, mx) in ((0.12, 0.15), (0.88, 0.86)):  # tracking-marker crosses
        cy, cx = my * fh, mx * fw
        arm, th = 3.5 * px, 1.0 * px
        m = ((np.abs(yy - cy) < th) & (np.abs(xx - cx) < arm)) | ((np.abs(xx - cx) < th) & (np.abs(yy - cy) < arm))
        bg[m] = (0.05, 0.12, 0.06)
        markers[m] = 1.0

    edge = 1.5 * px
    torso = _smoothstep_edge(_ellipse_sd(yy, xx, 0.80 * fh, 0.50 * fw, 0.30 * fh, 0.30 * fw), edge)
    head = _smoothstep_edge(_ellipse_sd(yy, xx, 0.40 * fh, 0.52 * fw, 0.15 * s, 0.14 * s), edge)
    veil = 0.45 * _smoothstep_edge(_ellipse_sd(yy, xx, 0.62 * fh, 0.20 * fw, 0.10 * fh, 0.12 * fw), 3 * edge)
    strands = np.zeros_like(u)
    hy, hx, hr = 0.40 * fh, 0.52 * fw, 0.14 * s
    for ang, length in ((-2.4, 1.9), (-2.0, 2.2), (-1.5, 1.7), (-1.1, 2.1), (-0.6, 1.8), (0.3, 1.6)):
        y0, x0 = hy + hr * 0.9 * math.sin(ang), hx + hr * 0.9 * math.cos(ang)
        y1, x1 = hy + hr * length * math.sin(ang + 0.15), hx + hr * length * math.cos(ang + 0.15)
        d = _segment_dist(yy, xx, y0, x0, y1, x1)
        strands = np.maximum(strands, 0.75 * np.clip(1.0 - d / (0.7 * px), 0.0, 1.0))
    # two small separate props (an orange ball and a smaller one): real foreground islands
    props = np.maximum(_smoothstep_edge(_ellipse_sd(yy, xx, 0.22 * fh, 0.80 * fw, 3.0 * px, 3.0 * px), edge),
                       _smoothstep_edge(_ellipse_sd(yy, xx, 0.55 * fh, 0.88 * fw, 1.6 * px, 1.6 * px), edge))
    alpha = np.maximum.reduce([torso, head, veil, strands, props])

    fg = np.zeros_like(bg)
    fg[:] = (0.22, 0.26, 0.62)
    fg *= (0.8 + 0.3 * v)[..., None]
    w_head = head / np.maximum(alpha, 1e-6)
    fg = fg * (1 - w_head[..., None]) + np.array((0.82, 0.60, 0.50)) * w_head[..., None]
    w_str = np.clip(strands - np.maximum(torso, head), 0, 1) / np.maximum(alpha, 1e-6)
    fg = fg * (1 - w_str[..., None]) + np.array((0.35, 0.22, 0.10)) * w_str[..., None]
    w_veil = np.clip(veil - np.maximum.reduce([torso, head, strands]), 0, 1) / np.maximum(alpha, 1e-6)
    fg = fg * (1 - w_veil[..., None]) + np.array((0.92, 0.92, 0.90)) * w_veil[..., None]
    w_prop = np.clip(props - np.maximum.reduce([torso, head, strands, veil]), 0, 1) / np.maximum(alpha, 1e-6)
    fg = fg * (1 - w_prop[..., None]) + np.array((0.95, 0.45, 0.08)) * w_prop[..., None]
    fg[..., 1] += 0.06 * (1.0 - alpha)  # a little green spill near soft edges

    img = fg * alpha[..., None] + bg * (1.0 - alpha[..., None])
    img += rng.normal(0.0, 0.01, img.shape)
    rgb8 = np.clip(np.rint(img * 255.0), 0, 255).astype(np.uint8)

    small = cv2.resize(alpha.astype(np.float32), (max(fw // 8, 1), max(fh // 8, 1)), interpolation=cv2.INTER_AREA)
    hint = cv2.resize(small, (fw, fh), interpolation=cv2.INTER_LINEAR)
    hint = cv2.GaussianBlur(hint, (0, 0), 1.5 * px)
    hint = np.clip(hint * 1.15, 0.0, 1.0)
    specks = np.zeros_like(u)
    for k in range(5):  # specks in the background
        sy = int(rng.integers(int(0.05 * fh), int(0.50 * fh)))
        sx = int(rng.integers(int(0.02 * fw), int(0.30 * fw))) if k % 2 == 0 else \
            int(rng.integers(int(0.75 * fw), int(0.97 * fw)))
        r = int(round((2 + k % 3) * px))
        hint[max(sy - r, 0):sy + r, max(sx - r, 0):sx + r] = 0.6 + 0.1 * k
        specks[max(sy - r, 0):sy + r, max(sx - r, 0):sx + r] = 1.0
    hint8 = np.clip(np.rint(hint * 255.0), 0, 255).astype(np.uint8)
    target = np.maximum.reduce([alpha, 0.95 * markers, 0.95 * specks])
    return dict(rgb8=rgb8, hint8=hint8, alpha=alpha.astype(np.float32), fg=np.clip(fg, 0, 1).astype(np.float32),
                target_alpha=target.astype(np.float32))


# ----------------------------------------------------------------------------------------------------
# Pre- and post-processing (spec §7.2, §7.3 CPU path, §7.4)
# ----------------------------------------------------------------------------------------------------


def preprocess(rgb: np.ndarray, hint: np.ndarray, S: int) -> torch.Tensor:
    """rgb [H,W,3] float32, hint [H,W] float32 -> x [1,4,S,S] (torchvision resize BILINEAR antialias)."""
    img = torch.from_numpy(rgb).permute(2, 0, 1).unsqueeze(0).contiguous()
    msk = torch.from_numpy(hint)[None, None].contiguous()
    img = F.interpolate(img, size=(S, S), mode="bilinear", align_corners=False, antialias=True)
    msk = F.interpolate(msk, size=(S, S), mode="bilinear", align_corners=False, antialias=True)
    mean = torch.tensor(gr.IMAGENET_MEAN, dtype=torch.float32).view(1, 3, 1, 1)
    std = torch.tensor(gr.IMAGENET_STD, dtype=torch.float32).view(1, 3, 1, 1)
    img = (img - mean) / std
    return torch.cat([img, msk], dim=1)


def srgb_to_linear(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, None)
    return np.where(x <= 0.04045, x / 12.92, np.power((x + 0.055) / 1.055, 2.4)).astype(np.float32)


def linear_to_srgb(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, None)
    return np.where(x <= 0.0031308, x * 12.92, 1.055 * np.power(x, 1.0 / 2.4) - 0.055).astype(np.float32)


def despill(image: np.ndarray, strength: float) -> np.ndarray:
    if strength <= 0.0:
        return image
    r, g, b = image[..., 0], image[..., 1], image[..., 2]
    limit = (r + b) / 2.0
    spill = np.maximum(g - limit, 0.0)
    out = np.stack([r + spill * 0.5, g - spill, b + spill * 0.5], axis=-1)
    if strength < 1.0:
        return image * (1.0 - strength) + out * strength
    return out


def clean_matte(alpha: np.ndarray, area_threshold: int, dilation: int = 25, blur_size: int = 5):
    """CorridorKey's clean_matte_opencv on [H,W] float32. Returns (alpha*safe, info dict, kept, safe)."""
    binary = (alpha > 0.5).astype(np.uint8) * 255
    n, labels, st, _ = cv2.connectedComponentsWithStats(binary, connectivity=8)
    areas = st[:, cv2.CC_STAT_AREA]
    keep = np.zeros(n, dtype=np.uint8)
    keep[1:] = (areas[1:] >= area_threshold).astype(np.uint8)
    kept = (keep[labels] * 255).astype(np.uint8)
    mask = kept
    if dilation > 0:
        k = int(dilation * 2 + 1)
        mask = cv2.dilate(mask, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
    if blur_size > 0:
        b = int(blur_size * 2 + 1)
        mask = cv2.GaussianBlur(mask, (b, b), 0)
    safe = mask.astype(np.float32) / 255.0
    info = dict(components=int(n - 1), kept_areas=sorted(int(a) for a in areas[1:][keep[1:] == 1])[::-1],
                removed_areas=sorted(int(a) for a in areas[1:][keep[1:] == 0])[::-1])
    return alpha * safe, info, kept, mask


def checkerboard(w: int, h: int, size: int = 128, c1: float = 0.15, c2: float = 0.55) -> np.ndarray:
    x = np.arange(w) // size
    y = np.arange(h) // size
    xg, yg = np.meshgrid(x, y)
    bg = np.where((xg + yg) % 2 == 0, c1, c2).astype(np.float32)
    return np.stack([bg, bg, bg], axis=-1)


def postprocess_cpu(alpha_s: np.ndarray, fg_s: np.ndarray, fh: int, fw: int, despill_strength: float,
                    despeckle: bool, despeckle_size: int):
    """alpha_s [S,S,1], fg_s [S,S,3] float32 -> dict of frame-size results (spec §7.3 CPU path)."""
    res_alpha = cv2.resize(np.ascontiguousarray(alpha_s), (fw, fh), interpolation=cv2.INTER_LANCZOS4)
    res_fg = cv2.resize(np.ascontiguousarray(fg_s), (fw, fh), interpolation=cv2.INTER_LANCZOS4)
    if res_alpha.ndim == 3:
        res_alpha = res_alpha[:, :, 0]
    info, kept, safe = None, None, None
    if despeckle:
        proc_alpha, info, kept, safe = clean_matte(res_alpha, despeckle_size)
    else:
        proc_alpha = res_alpha
    proc_alpha = proc_alpha[:, :, None]
    fg_d = despill(res_fg, despill_strength)
    fg_lin = srgb_to_linear(fg_d)
    premul = fg_lin * proc_alpha
    processed = np.concatenate([premul, proc_alpha], axis=-1).astype(np.float32)
    bg_lin = srgb_to_linear(checkerboard(fw, fh))
    comp_lin = fg_lin * proc_alpha + bg_lin * (1.0 - proc_alpha)
    comp = linear_to_srgb(comp_lin)
    return dict(post_alpha=res_alpha.astype(np.float32), post_fg=res_fg.astype(np.float32),
                processed=processed, comp=comp), info, kept, safe


def calibrate(sd_t: dict, config: str, seed: int) -> None:
    """Fit the output layers (greenformer_ref.calibrate_heads) in place in the state dict ``sd_t``.

    The fit always uses the config's default frame (seed ``seed``) at the fixed size CALIB_SIZE[config],
    with pos_embed resized from the training grid as the engine would, so the generated weights depend only
    on (config, T, seed) -- not on --size or --frame. Fixtures at different S share one checkpoint."""
    cs = CALIB_SIZE[config]
    fh, fw = DEFAULT_FRAME[config]
    scene = make_frame(fh, fw, seed)
    rgb = scene["rgb8"].astype(np.float32) / 255.0
    hint = scene["hint8"].astype(np.float32) / 255.0
    x = preprocess(rgb, hint, cs)
    a_tgt = preprocess(scene["fg"], scene["target_alpha"], cs)[:, 3:4]
    f_tgt = F.interpolate(torch.from_numpy(scene["fg"]).permute(2, 0, 1)[None].contiguous(), size=(cs, cs),
                          mode="bilinear", align_corners=False, antialias=True)
    model_c = gr.build_model(config, cs)
    gr.load_state_dict_like_engine(model_c, sd_t)
    gr.calibrate_heads(model_c, x, a_tgt, f_tgt)
    sd_c = model_c.state_dict()
    for k in gr.CALIBRATED_KEYS:
        sd_t[k] = sd_c[k].clone()


# ----------------------------------------------------------------------------------------------------
# Checkpoint writing
# ----------------------------------------------------------------------------------------------------


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def weights_digest(sd: dict) -> str:
    """sha256 over (name, dtype, shape, bytes) of every tensor in order (prefix stripped, fp32 view)."""
    h = hashlib.sha256()
    for k, v in sd.items():
        k = k[len(PREFIX):] if k.startswith(PREFIX) else k
        v = v.float() if v.is_floating_point() else v
        h.update(f"{k}|{v.dtype}|{tuple(v.shape)}|".encode())
        h.update(v.contiguous().numpy().tobytes())
    return h.hexdigest()


def write_checkpoints(sd: dict, out: str, head_dim: int) -> dict:
    sd = {k: v.detach().clone().contiguous() for k, v in sd.items()}
    files = {}
    p = os.path.join(out, "model.pth")
    torch.save({PREFIX + k: v for k, v in sd.items()}, p)
    files["model.pth"] = "bare state dict, keys prefixed '_orig_mod.', fp32"
    p = os.path.join(out, "model.safetensors")
    safetensors.torch.save_file(sd, p, metadata={"format": "pt", "head_dim": str(head_dim)})
    files["model.safetensors"] = "keys without prefix, fp32, metadata format=pt head_dim"
    p = os.path.join(out, "model_fp16_wrapped.pth")
    half = {PREFIX + k: (v.half() if v.is_floating_point() else v) for k, v in sd.items()}
    torch.save({"state_dict": half}, p)
    files["model_fp16_wrapped.pth"] = "{'state_dict': prefixed keys}, fp16 (num_batches_tracked int64)"
    return {name: dict(description=d, sha256=sha256_file(os.path.join(out, name)),
                       bytes=os.path.getsize(os.path.join(out, name))) for name, d in files.items()}


# ----------------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------------


def _np_stats(a: np.ndarray) -> dict:
    a = a.astype(np.float64)
    return dict(min=float(a.min()), max=float(a.max()), mean=float(a.mean()), std=float(a.std()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Generate GreenFormer reference fixtures.")
    ap.add_argument("--config", choices=sorted(gr.CONFIGS), required=True)
    ap.add_argument("--size", type=int, required=True, help="model resolution S (multiple of 32)")
    ap.add_argument("--train-size", type=int, default=None,
                    help="training resolution T of the written checkpoint (pos_embed grid T/4); default S")
    ap.add_argument("--checkpoint", default=None,
                    help="load weights from this .pth/.safetensors instead of generating them (T is taken "
                         "from its pos_embed); no checkpoint files are written")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--frame", default=None, help="frame size HxW (default: tiny 136x72, base_plus 480x640)")
    ap.add_argument("--despill", type=float, default=0.5, help="despill strength (default 0.5)")
    ap.add_argument("--despeckle-size", type=int, default=None,
                    help="despeckle minimum island area (default: tiny 20, base_plus 400)")
    ap.add_argument("--no-despeckle", action="store_true")
    ap.add_argument("--no-blocks", action="store_true", help="do not write block{i}.npy")
    ap.add_argument("--no-calibrate", action="store_true",
                    help="keep the purely random output layers (see greenformer_ref.calibrate_heads)")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = gr.CONFIGS[args.config]
    S = args.size
    fh, fw = DEFAULT_FRAME[args.config] if args.frame is None else map(int, args.frame.lower().split("x"))
    despeckle_size = DEFAULT_DESPECKLE[args.config] if args.despeckle_size is None else args.despeckle_size
    os.makedirs(args.out, exist_ok=True)
    t_start = time.time()
    meta = dict(config=args.config, size=S, frame_height=fh, frame_width=fw, seed=args.seed,
                head_dim=cfg["head_dim"], decoder_dim=cfg["decoder_dim"], refiner_hidden=cfg["refiner_hidden"],
                hiera_kwargs={k: list(v) if isinstance(v, tuple) else v for k, v in cfg["hiera_kwargs"].items()},
                timm_name=cfg["timm_name"])

    # 1. structured input, quantized to 8 bits; the quantized values are the reference input
    scene = make_frame(fh, fw, args.seed)
    cv2.imwrite(os.path.join(args.out, "frame_rgb.png"), cv2.cvtColor(scene["rgb8"], cv2.COLOR_RGB2BGR))
    cv2.imwrite(os.path.join(args.out, "frame_hint.png"), scene["hint8"])
    back = cv2.cvtColor(cv2.imread(os.path.join(args.out, "frame_rgb.png"), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    hback = cv2.imread(os.path.join(args.out, "frame_hint.png"), cv2.IMREAD_UNCHANGED)
    assert np.array_equal(back, scene["rgb8"]) and np.array_equal(hback, scene["hint8"])
    rgb = back.astype(np.float32) / 255.0
    hint = hback.astype(np.float32) / 255.0
    saves = {"frame_rgb": rgb, "frame_hint": hint}
    x = preprocess(rgb, hint, S)

    # 2. weights at the training grid T (generated + calibrated at S, or loaded)
    if args.checkpoint is None:
        T = args.train_size or S
        model_t = gr.build_model(args.config, T)
        gr.init_weights(model_t, args.seed)
        assert gr.check_keys(model_t)
        sd_t = {k: v.clone() for k, v in model_t.state_dict().items()}
        del model_t
        if not args.no_calibrate:
            t0 = time.time()
            calibrate(sd_t, args.config, args.seed)
            print(f"[calibrate] output layers fitted at S={CALIB_SIZE[args.config]} ({time.time() - t0:.1f}s)")
        t0 = time.time()
        ckpt_info = write_checkpoints(sd_t, args.out, cfg["head_dim"])
        del sd_t
        print(f"[ckpt] wrote model.pth / model.safetensors / model_fp16_wrapped.pth ({time.time() - t0:.1f}s)")
        loaded = torch.load(os.path.join(args.out, "model.pth"), map_location="cpu", weights_only=True)
        meta["checkpoint"] = dict(source="generated", calibrated=not args.no_calibrate,
                                  calibration_size=CALIB_SIZE[args.config],
                                  calibrated_keys=list(gr.CALIBRATED_KEYS) if not args.no_calibrate else [],
                                  files=ckpt_info)
    else:
        if args.checkpoint.endswith(".safetensors"):
            loaded = safetensors.torch.load_file(args.checkpoint)
        else:
            loaded = torch.load(args.checkpoint, map_location="cpu", weights_only=True)
        inner = loaded.get("state_dict", loaded)
        pe = [v for k, v in inner.items() if k.endswith("encoder.model.pos_embed")][0]
        T = int(round(math.sqrt(pe.shape[1]))) * 4
        meta["checkpoint"] = dict(source=os.path.relpath(args.checkpoint, args.out),
                                  sha256=sha256_file(args.checkpoint))
    meta["train_size"] = T
    meta["weights_sha256"] = weights_digest(loaded.get("state_dict", loaded))

    # 3. model at S, loaded from the file like the engine does (prefix strip + pos_embed bicubic resize)
    model = gr.build_model(args.config, S)
    gr.load_state_dict_like_engine(model, loaded)
    del loaded
    meta["pos_embed_resized"] = S != T
    meta["pos_embed_grid"] = [T // 4, S // 4]

    # 4. network
    t0 = time.time()
    with torch.no_grad():
        out = model(x, capture=True)
    t_fwd = time.time() - t0
    print(f"[forward] {args.config} S={S}: {t_fwd:.2f}s")
    saves["x"] = x
    names = ["patch", "f1", "f2", "f3", "f4", "alpha_logits", "fg_logits", "alpha_logits_up", "fg_logits_up",
             "alpha_coarse", "fg_coarse", "delta", "alpha", "fg"]
    for k in names:
        saves[k] = out[k]
    if not args.no_blocks:
        for i in range(len(model.hiera.blocks)):
            saves[f"block{i}"] = out[f"block{i}"]
    if S != T:
        saves["pos_embed_resized"] = model.hiera.pos_embed.detach()

    # 5. CPU post-processing at frame size
    alpha_s = out["alpha"][0].permute(1, 2, 0).numpy()
    fg_s = out["fg"][0].permute(1, 2, 0).numpy()
    post, dinfo, kept, safe = postprocess_cpu(alpha_s, fg_s, fh, fw, args.despill, not args.no_despeckle,
                                              despeckle_size)
    saves.update(post)
    if kept is not None:
        saves["despeckle_kept"] = kept.astype(np.float32)
        saves["despeckle_safe"] = safe.astype(np.float32)

    files = {}
    for k, v in saves.items():
        a = v.detach().cpu().float().contiguous().numpy() if torch.is_tensor(v) else np.ascontiguousarray(v)
        assert a.dtype == np.float32, k
        np.save(os.path.join(args.out, k + ".npy"), a)
        files[k + ".npy"] = list(a.shape)

    # 6. description
    a = out["alpha"]
    meta.update(
        input=dict(truth_alpha_stats=_np_stats(scene["alpha"]), frame_rgb_png="frame_rgb.png (8-bit RGB)",
                   frame_hint_png="frame_hint.png (8-bit gray)", float_frames="PNG value / 255 (float32)",
                   preprocess="F.interpolate bilinear align_corners=False antialias=True to SxS; "
                              "(rgb-mean)/std ImageNet; hint raw; cat [R,G,B,hint]"),
        postprocess=dict(path="cpu", resize="cv2.INTER_LANCZOS4", despill_mode="average",
                         despill_strength=args.despill, despeckle=not args.no_despeckle,
                         despeckle_size=despeckle_size, despeckle_dilation=25, despeckle_blur=5,
                         despeckle_result=dinfo, checker_size=128, checker_colors_srgb=[0.15, 0.55]),
        refiner_scale=1.0,
        stats=dict(alpha=gr.stats(a), alpha_fraction_gt_half=float((a > 0.5).float().mean()),
                   fg=gr.stats(out["fg"]), alpha_logits=gr.stats(out["alpha_logits"]),
                   fg_logits=gr.stats(out["fg_logits"]), delta=gr.stats(out["delta"]),
                   delta_abs_mean=float(out["delta"].abs().mean()),
                   post_alpha=_np_stats(post["post_alpha"]), processed_alpha=_np_stats(post["processed"][..., 3]),
                   comp=_np_stats(post["comp"])),
        block_table=gr.block_table(model),
        files=files,
        layout=("all .npy are float32 C-order; network tensors NCHW with batch 1; frame-size outputs HWC "
                "(post_alpha HW); block{i} = output of Hiera block i rerolled to its stage grid (NCHW); "
                "patch = patch_embed(x) + pos_embed as NCHW; delta already x10"),
        versions=dict(torch=torch.__version__, timm=timm.__version__, numpy=np.__version__, opencv=cv2.__version__,
                      safetensors=safetensors.__version__, python=platform.python_version()),
    )
    with open(os.path.join(args.out, "fixture.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")

    st = meta["stats"]
    print("[alpha] " + gr.fmt_stats(st["alpha"]) + f" frac>0.5={st['alpha_fraction_gt_half']:.3f}")
    print("[fg]    " + gr.fmt_stats(st["fg"]))
    print(f"[delta] |delta| mean={st['delta_abs_mean']:.4g} " + gr.fmt_stats(st["delta"]))
    if dinfo:
        print(f"[despeckle] size {despeckle_size}: {dinfo['components']} components, kept {dinfo['kept_areas']}, "
              f"removed {dinfo['removed_areas']}")
    total = sum(os.path.getsize(os.path.join(args.out, n)) for n in os.listdir(args.out))
    print(f"[done] {args.out}: {len(os.listdir(args.out))} files, {total / 1e6:.2f} MB, "
          f"{time.time() - t_start:.1f}s total")
    return 0


if __name__ == "__main__":
    sys.exit(main())
