#!/usr/bin/env python3
"""How far e4m3 (FP8) attention lands from float64, beside the float16 path, on one attention problem.

    python3 tools/reference/fp8_attention_error.py [--tq 256] [--tk 4096] [--hd 56] [--sharp 1 2] [--seed 0]

q, k, v ~ N(0, 1), scores q·kᵀ/√hd (std ≈ sharp). Paths:
  f16    q, k, v rounded to float16, S and the row sums exact, P = exp(S − max) rounded to float16 before P·V
         (what the float16 kernels do);
  fp8qk  q and k in e4m3 with a scale per row (amax → 448), P·V as f16;
  fp8    also v in e4m3 with a scale per channel, and P·448 in e4m3 (FlashAttention-3's FP8 layout).
Prints the relative RMS and the largest absolute error of the output against float64. numpy only; e4m3 rounding
(round to nearest even, subnormals below 2^-6, saturating at 448) written out here.
"""
import argparse

import numpy as np


def e4m3(x: np.ndarray) -> np.ndarray:
    a = np.abs(x)
    e = np.floor(np.log2(np.maximum(a, 1e-30)))
    step = np.where(a >= 2.0**-6, 2.0 ** (e - 3), 2.0**-9)
    return np.sign(x) * np.minimum(np.rint(a / step) * step, 448.0)


def f16(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).astype(np.float64)


def attention(q, k, v, mode: str) -> np.ndarray:
    sc = 1.0 / np.sqrt(q.shape[1])
    if mode == "f64":
        s = q @ k.T * sc
        p = np.exp(s - s.max(1, keepdims=True))
        return (p @ v) / p.sum(1, keepdims=True)
    if mode == "f16":
        q, k, v = f16(q), f16(k), f16(v)
        s = (q @ k.T) * sc
        p = np.exp(s - s.max(1, keepdims=True))
        return (f16(p) @ v) / p.sum(1, keepdims=True)
    sq = np.abs(q).max(1, keepdims=True) / 448
    sk = np.abs(k).max(1, keepdims=True) / 448
    s = (e4m3(q / sq) @ e4m3(k / sk).T) * sq * sk.T * sc
    p = np.exp(s - s.max(1, keepdims=True))
    l = p.sum(1, keepdims=True)
    if mode == "fp8qk":
        return (f16(p) @ f16(v)) / l
    sv = np.abs(v).max(0, keepdims=True) / 448
    return (e4m3(p * 448) / 448 @ e4m3(v / sv)) * sv / l


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tq", type=int, default=256)
    ap.add_argument("--tk", type=int, default=4096)
    ap.add_argument("--hd", type=int, default=56)
    ap.add_argument("--sharp", type=float, nargs="+", default=[1.0, 2.0])
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    print("| score std | path | rel. RMS | max abs |\n|---|---|---|---|")
    for sharp in a.sharp:
        q = sharp * rng.standard_normal((a.tq, a.hd))
        k, v = rng.standard_normal((a.tk, a.hd)), rng.standard_normal((a.tk, a.hd))
        ref = attention(q, k, v, "f64")
        for mode in ("f16", "fp8qk", "fp8"):
            e = attention(q, k, v, mode) - ref
            print(f"| {sharp:g} | {mode} | {np.sqrt((e**2).mean() / (ref**2).mean()):.3e} | {np.abs(e).max():.3e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
