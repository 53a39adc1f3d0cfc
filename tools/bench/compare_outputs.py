"""Compare two network outputs written by `ckey bench --dump` ((S, S, 4): alpha, fg R, G, B).

    python3 tools/bench/compare_outputs.py A.npy B.npy [--label "bf16 vs fp32"] [--alpha-tol X --fg-tol Y]

Prints one JSON line with alpha and fg max-abs / mean-abs; exits 1 when a tolerance is exceeded.
"""
import argparse
import json
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--label", default="")
    ap.add_argument("--alpha-tol", type=float, default=None)
    ap.add_argument("--fg-tol", type=float, default=None)
    x = ap.parse_args()
    a, b = np.load(x.a).astype(np.float64), np.load(x.b).astype(np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    d = np.abs(a - b)
    r = dict(label=x.label, a=x.a, b=x.b, alpha_max_abs=float(d[..., 0].max()), alpha_mean_abs=float(d[..., 0].mean()),
             fg_max_abs=float(d[..., 1:].max()), fg_mean_abs=float(d[..., 1:].mean()),
             finite=bool(np.isfinite(a).all() and np.isfinite(b).all()))
    ok = r["finite"]
    if x.alpha_tol is not None:
        ok = ok and r["alpha_max_abs"] <= x.alpha_tol
    if x.fg_tol is not None:
        ok = ok and r["fg_max_abs"] <= x.fg_tol
    r["pass"] = ok
    print(json.dumps(r))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
