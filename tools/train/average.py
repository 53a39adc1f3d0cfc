"""Averages the weights of several exports of one training run (safetensors, same names and shapes) into
one fp16 safetensors file: the mean in float64, rounded once. Never in the engine's path.

    python3 tools/train/average.py OUT.safetensors A.safetensors B.safetensors [...]

Needs numpy only (reads and writes the format directly); the metadata of the first input is kept.
"""
from __future__ import annotations

import json
import os
import struct
import sys

import numpy as np

KINDS = {"F16": np.float16, "F32": np.float32, "I64": np.int64}


def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    out = {}
    for k, v in header.items():
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(data[a:b], dtype=KINDS[v["dtype"]]).reshape(v["shape"])
    return out, meta


def write(path, tensors, meta):
    header, blobs, off = {"__metadata__": meta}, [], 0
    # wider elements first: every tensor then starts aligned to its element size (the header is padded to 8)
    for k in sorted(tensors, key=lambda k: (-tensors[k].dtype.itemsize, k)):
        t = np.ascontiguousarray(tensors[k])
        kind = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[t.dtype]
        header[k] = {"dtype": kind, "shape": list(t.shape), "data_offsets": [off, off + t.nbytes]}
        blobs.append(t.tobytes())
        off += t.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)
    os.replace(path + ".tmp", path)


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
