#!/usr/bin/env python3
"""Compare .npy arrays: max-abs / mean-abs / max-rel differences.

    python3 tools/reference/compare.py A.npy B.npy [--atol 1e-4]
    python3 tools/reference/compare.py DIR_A DIR_B [--atol 1e-4]    # every .npy present in both

Shapes must match exactly, except that size-1 leading dimensions are ignored (so (1,1,S,S) compares
with (S,S)). With --atol, exits with status 1 if any max-abs difference exceeds it.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np


def _squeeze_leading(a: np.ndarray) -> np.ndarray:
    while a.ndim > 1 and a.shape[0] == 1:
        a = a[0]
    return a


def compare(a_path: str, b_path: str):
    a = np.load(a_path)
    b = np.load(b_path)
    sa, sb = _squeeze_leading(a), _squeeze_leading(b)
    if sa.shape != sb.shape:
        return dict(error=f"shape mismatch {a.shape} vs {b.shape}")
    a64 = sa.astype(np.float64)
    b64 = sb.astype(np.float64)
    d = np.abs(a64 - b64)
    bad = ~(np.isfinite(a64) & np.isfinite(b64))
    if bad.any():
        d[bad] = np.inf
    idx = np.unravel_index(int(np.argmax(d)), d.shape) if d.size else ()
    scale = max(float(np.abs(b64).max()) if b64.size else 0.0, 1e-30)
    return dict(shape=tuple(a.shape), max_abs=float(d.max()) if d.size else 0.0,
                mean_abs=float(d.mean()) if d.size else 0.0, max_rel=float(d.max() / scale) if d.size else 0.0,
                argmax=tuple(int(i) for i in idx), a_at=float(a64[idx]) if d.size else 0.0,
                b_at=float(b64[idx]) if d.size else 0.0, nonfinite=int(bad.sum()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--atol", type=float, default=None, help="fail (exit 1) if max-abs exceeds this")
    args = ap.parse_args(argv)

    if os.path.isdir(args.a) and os.path.isdir(args.b):
        names = sorted(set(n for n in os.listdir(args.a) if n.endswith(".npy"))
                       & set(n for n in os.listdir(args.b) if n.endswith(".npy")))
        pairs = [(n, os.path.join(args.a, n), os.path.join(args.b, n)) for n in names]
    else:
        pairs = [(os.path.basename(args.a), args.a, args.b)]
    if not pairs:
        print("no common .npy files")
        return 1
    failed = False
    w = max(len(n) for n, _, _ in pairs)
    for name, pa, pb in pairs:
        r = compare(pa, pb)
        if "error" in r:
            print(f"{name:{w}s}  ERROR {r['error']}")
            failed = True
            continue
        flag = ""
        if args.atol is not None and not (r["max_abs"] <= args.atol):
            flag = "  FAIL"
            failed = True
        print(f"{name:{w}s}  {str(r['shape']):18s} max_abs={r['max_abs']:.3e} mean_abs={r['mean_abs']:.3e} "
              f"max_rel={r['max_rel']:.3e} at {r['argmax']} ({r['a_at']:.6g} vs {r['b_at']:.6g})"
              + (f" nonfinite={r['nonfinite']}" if r["nonfinite"] else "") + flag)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
