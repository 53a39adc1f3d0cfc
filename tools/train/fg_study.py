"""Where a keyer's fg error lies, and how much of it the compositing equation can take back. Never in the
engine's path: reads `ckey plates` truth and the passes `ckey key` wrote for those plates.

    ckey plates --out P --size 2048x2048 --count 16 --seed 9961
    ckey key --image P/Plate --hint P/AlphaHint --out K --checkpoint builtin --size 2048 --no-comp \
        --exr-compression none
    python3 tools/train/fg_study.py P K [--count N]

Prints (1) the fg MAE per bin of truth alpha, each bin's share of the covered pixels (truth alpha > 0, as
`ckey quality` counts them) and of the fg error; (2) the covered pixels' fg MAE of the keyer's own fg and of
un-mixed variants: the plate I (linear), the keyer's alpha a and a screen estimate B give
F = (I − (1 − a)·B) / a, blended in where a ≥ lo (weight clip((a − lo) / 0.15, 0, 1)), with `<0.98` keeping the
keyer's fg wherever a ≥ 0.98. B: the plate averaged over the pixels the keyer calls screen (a < 0.02) within
16 px, else 64, else 256 (box filters over summed-area tables); where none lie within 256 px F is the plate / a.
fg values are compared as `ckey quality` compares them (sRGB-encoded, the FG pass's encoding).

Needs numpy and the OpenEXR Python module.
"""
from __future__ import annotations

import argparse

import numpy as np
import OpenEXR

BINS = [(0.0, 0.05), (0.05, 0.2), (0.2, 0.5), (0.5, 0.8), (0.8, 1.0), (1.0, 1.0)]  # (lo, hi]; (1, 1]: opaque


def read(path):
    with OpenEXR.File(path) as f:
        ch = f.channels()
        if "Y" in ch:
            return np.asarray(ch["Y"].pixels, dtype=np.float64)
        if "RGB" in ch:
            return np.asarray(ch["RGB"].pixels, dtype=np.float64)
        return np.stack([np.asarray(ch[c].pixels, dtype=np.float64) for c in "RGB"], -1)


def to_srgb(x):
    x = np.clip(x, 0.0, 1.0)
    return np.where(x <= 0.0031308, x * 12.92, 1.055 * x ** (1 / 2.4) - 0.055)


def box(x, r):
    """Sum over the (2r + 1)² box around each pixel (clipped at the borders), axes 0 and 1."""
    for ax in (0, 1):
        n = x.shape[ax]
        pad = [(0, 0)] * x.ndim
        pad[ax] = (1, 0)
        c = np.pad(np.cumsum(x, axis=ax), pad)
        i = np.arange(n)
        x = np.take(c, np.clip(i + r + 1, 0, n), axis=ax) - np.take(c, np.clip(i - r, 0, n), axis=ax)
    return x


def screen_estimate(plate, alpha):
    screen = (alpha < 0.02).astype(np.float64)
    est = np.zeros_like(plate)
    done = np.zeros(alpha.shape, dtype=bool)
    near = np.zeros(alpha.shape)
    for r in (16, 64, 256):
        n = box(screen, r)
        s = box(plate * screen[..., None], r) / np.maximum(n, 1e-9)[..., None]
        take = (n > 0.5) & ~done
        est[take] = s[take]
        done |= take
        if r == 64:
            near = done.astype(np.float64)
    return est, near


def bin_mask(t, lo, hi):
    return t >= 1.0 if lo == 1.0 else (t > lo) & (t <= hi) & (t < 1.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("plates")
    ap.add_argument("keyed")
    ap.add_argument("--count", type=int, default=16)
    a = ap.parse_args()
    names = ["net"] + [f"unmix a>={lo}{cap}" for lo in (0.1, 0.15, 0.3) for cap in ("", " <0.98", " near", " near bounded")]
    err = {k: np.zeros(len(BINS)) for k in names}
    cnt = np.zeros(len(BINS))
    for i in range(a.count):
        t = read(f"{a.plates}/Truth/Alpha/{i:04d}.exr")
        tf = read(f"{a.plates}/Truth/FG/{i:04d}.exr")
        plate = read(f"{a.plates}/Plate/{i:04d}.exr")  # linear
        al = np.clip(read(f"{a.keyed}/Matte/{i:04d}.exr"), 0.0, 1.0)
        fg = read(f"{a.keyed}/FG/{i:04d}.exr")
        b, near = screen_estimate(plate, al)
        unmixed = to_srgb((plate - (1.0 - al[..., None]) * b) / np.maximum(al, 1e-3)[..., None])
        plate_s = to_srgb(plate)
        bounded = np.clip(unmixed, np.minimum(fg, plate_s), np.maximum(fg, plate_s))
        cands = {"net": fg}
        for lo in (0.1, 0.15, 0.3):
            w = np.clip((al - lo) / 0.15, 0.0, 1.0)[..., None]
            cands[f"unmix a>={lo}"] = w * unmixed + (1.0 - w) * fg
            w = w * (al < 0.98)[..., None]
            cands[f"unmix a>={lo} <0.98"] = w * unmixed + (1.0 - w) * fg
            w = np.clip((al - lo) / 0.15, 0.0, 1.0) * (near + (1.0 - near) * np.clip((al - 0.8) / 0.15, 0.0, 1.0))
            cands[f"unmix a>={lo} near"] = w[..., None] * unmixed + (1.0 - w[..., None]) * fg
            cands[f"unmix a>={lo} near bounded"] = w[..., None] * bounded + (1.0 - w[..., None]) * fg
        masks = [bin_mask(t, lo, hi) for lo, hi in BINS]
        for j, m in enumerate(masks):
            cnt[j] += m.sum()
        for k, f in cands.items():
            e = np.abs(f - tf).sum(-1) / 3.0
            for j, m in enumerate(masks):
                err[k][j] += e[m].sum()
    labels = [f"({lo},{hi}]" if lo < 1.0 else "1" for lo, hi in BINS]
    net = err["net"]
    print("truth alpha   share of covered   fg MAE   share of fg error")
    for j, lab in enumerate(labels):
        print(f"{lab:12s} {cnt[j] / cnt.sum():12.4f} {net[j] / max(cnt[j], 1):12.5f} {net[j] / net.sum():12.4f}")
    print("\nfg MAE over covered pixels, then per bin")
    for k in names:
        per = " ".join(f"{lab} {err[k][j] / max(cnt[j], 1):.4f}" for j, lab in enumerate(labels))
        print(f"{k:20s} {err[k].sum() / cnt.sum():.5f} | {per}")


if __name__ == "__main__":
    main()
