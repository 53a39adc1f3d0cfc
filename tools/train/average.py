"""Averages the weights of several exports of one training run (safetensors, same names and shapes) into
one fp16 safetensors file: the mean in float64, rounded once. Never in the engine's path.

    python3 tools/train/average.py OUT.safetensors A.safetensors B.safetensors [...]

Needs numpy only (reads and writes the format directly); the metadata of the first input is kept.
"""
from __future__ import annotations

import os
import sys

import numpy as np

import safetensors_file

KINDS = {"F16": np.float16, "F32": np.float32, "I64": np.int64}
NAMES = {np.dtype(t): k for k, t in KINDS.items()}


def read(path):
    tensors, meta = safetensors_file.read(path)
    return {k: np.frombuffer(raw, dtype=KINDS[dt]).reshape(shape) for k, (dt, shape, raw) in tensors.items()}, meta


def write(path, tensors, meta):
    safetensors_file.write(path, {k: (NAMES[t.dtype], t.shape, np.ascontiguousarray(t).tobytes())
                                  for k, t in tensors.items()}, meta)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out, ins = argv[0], argv[1:]
    models = [read(p) for p in ins]
    first, meta = models[0]
    for (m, _), p in zip(models[1:], ins[1:]):
        if m.keys() != first.keys() or any(m[k].shape != first[k].shape for k in m):
            print(f"average: {p} does not have the names and shapes of {ins[0]}", file=sys.stderr)
            return 1
    avg = {}
    for k, t in first.items():
        if t.dtype == np.int64:  # counters (BatchNorm's num_batches_tracked): the first's
            avg[k] = t
        else:
            avg[k] = (sum(m[k].astype(np.float64) for m, _ in models) / len(models)).astype(t.dtype)
    meta = dict(meta, averaged=",".join(os.path.basename(p) for p in ins))
    write(out, avg, meta)
    print(f"averaged {len(ins)} models ({len(avg)} tensors) into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
