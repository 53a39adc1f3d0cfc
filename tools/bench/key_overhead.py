"""The Python call's overhead over the C call: ckey.Keyer.key() against ck_key_image (key_overhead_bench) on
the same frame, checkpoint, size and device, in alternating rounds (C, Python, C, Python, ...) so that clock
or thermal drift falls on both. Prints one JSON line: each side's median and the overhead in percent.

    cmake --build BUILD --target key_overhead_bench        # BUILD/fuzz/key_overhead_bench
    pip install ./python                                   # the package, built with CUDA on a GPU machine
    python3 tools/bench/key_overhead.py --bin BUILD/fuzz/key_overhead_bench --size 1024 --device cuda --reuse

Both sides key a (H, W, 3) float32 C-contiguous frame that ckey reads in place and run the network and the
host post-processing. Fresh mode (always measured): each call makes new output buffers (ck_key_image;
Keyer.key()), freed after the clock stops on both sides. With --reuse, the reuse mode too, in the same
rounds: each call keys into the buffers of one result kept from call to call (ck_key_image_into;
Keyer.key(out=result)). The JSON line's top-level c_/python_ fields and overhead_pct are fresh mode's;
"modes" holds each mode's, and reuse_overhead_pct the reuse mode's.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import ckey


def make_frame(w, h):
    """A soft subject over an unevenly lit green screen, and a rough hint."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    r = np.hypot((x - 0.5 * w) / (0.3 * w), (y - 0.55 * h) / (0.4 * h))
    subject = np.clip(1.5 - r, 0, 1)
    light = 0.85 + 0.15 * np.sin(x / w * 3.1) * np.cos(y / h * 2.3)
    green = np.stack([0.12 * light, 0.75 * light, 0.18 * light], axis=-1)
    skin = np.stack([0.8 + 0.1 * np.sin(x / 7), 0.55 + 0.05 * np.cos(y / 5), 0.45 + 0 * x], axis=-1)
    rgb = np.ascontiguousarray(green * (1 - subject[..., None]) + skin * subject[..., None], dtype=np.float32)
    hint = np.ascontiguousarray((r < 1.0).astype(np.float32))
    return rgb, hint


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="key_overhead_bench")
    ap.add_argument("--checkpoint", default="random:base_plus", help="default: the real network's size")
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    ap.add_argument("--frame", default="1920x1080")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--runs", type=int, default=30, help="timed calls per round and side")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reuse", action="store_true",
                    help="also measure the reuse mode: both sides key into buffers kept from call to call")
    a = ap.parse_args()
    w, h = map(int, a.frame.split("x"))
    rgb, hint = make_frame(w, h)
    modes = ["fresh", "reuse"] if a.reuse else ["fresh"]
    c_times, py_times = {m: [] for m in modes}, {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp, ckey.Keyer(a.checkpoint, size=a.size, device=a.device) as k:
        rgb.tofile(os.path.join(tmp, "rgb.f32"))
        hint.tofile(os.path.join(tmp, "hint.f32"))
        for _ in range(a.warmup):
            k.key(rgb, hint)
        kept = k.key(rgb, hint)  # the reuse mode's buffers, as the C side's first warm-up call makes its own
        for _ in range(a.warmup if a.reuse else 0):
            k.key(rgb, hint, out=kept)
        for _ in range(a.rounds):
            for mode in modes:
                out = subprocess.run([a.bin, a.checkpoint, str(a.size), a.device, str(w), str(h),
                                      os.path.join(tmp, "rgb.f32"), os.path.join(tmp, "hint.f32"), str(a.warmup),
                                      str(a.runs), mode], check=True, capture_output=True, text=True).stdout
                c = json.loads(out.strip().splitlines()[-1])
                c_times[mode] += c["times_ms"]
                for _ in range(a.runs):
                    t0 = time.perf_counter()
                    r = k.key(rgb, hint, out=kept if mode == "reuse" else None)
                    py_times[mode].append((time.perf_counter() - t0) * 1e3)
                    # fresh: the result is freed after the clock stops, as the C side frees its ck_result
                    del r
        device = k.device
    per_mode = {}
    for mode in modes:
        c_med, py_med = statistics.median(c_times[mode]), statistics.median(py_times[mode])
        per_mode[mode] = {"calls_per_side": len(c_times[mode]), "c_median_ms": round(c_med, 3),
                          "python_median_ms": round(py_med, 3), "c_min_ms": round(min(c_times[mode]), 3),
                          "python_min_ms": round(min(py_times[mode]), 3),
                          "overhead_pct": round(100.0 * (py_med - c_med) / c_med, 3)}
    line = {"device": device, "c_precision": c["precision"], "size": a.size, "frame": a.frame,
            "checkpoint": a.checkpoint, **per_mode["fresh"], "modes": per_mode}
    if a.reuse:
        line["reuse_overhead_pct"] = per_mode["reuse"]["overhead_pct"]
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
