"""Doubles the width of a GreenFormer's refiner without changing what it computes, so that training can go on
from a shipped model with more capacity where the edges are made. Never in the engine's path.

    python3 tools/train/widen.py IN.safetensors OUT.safetensors [--seed 0]

Every hidden channel c of the refiner (width C, GroupNorm with 8 groups of C/8) becomes two channels in the
same group of the new width 2C (8 groups of 2C/8): each copy has c's incoming weights, bias and GroupNorm
affine, so a group holds every value of the old group twice and its mean and variance do not change; the
layers that read the hidden map split c's outgoing weight between the two copies as r and 1 - r (r drawn in
[0.35, 0.65] per channel and layer, from --seed), so their sums are the old ones and the copies' gradients
differ, which lets training pull them apart. The network's output is the old one up to rounding (fp16 weights:
the split is rounded once per weight). Other tensors are copied byte for byte.

Pure Python (struct's half-float format): runs wherever the repository does, as the engine's own check of
the result does (`ckey quality` on the old and the widened file; see tools/train/README.md).
"""
from __future__ import annotations

import argparse
import os
import random
import struct
import sys

from safetensors_file import read, write

ELEM = {"F16": (2, "e"), "F32": (4, "f")}
GROUPS = 8  # the refiner's GroupNorm groups (CorridorKey's and ckey's engine fix 8)


def unpack(t):
    dtype, shape, raw = t
    _, code = ELEM[dtype]
    return list(struct.unpack("<%d%s" % (len(raw) // ELEM[dtype][0], code), raw))


def pack(dtype, shape, values):
    return dtype, shape, struct.pack("<%d%s" % (len(values), ELEM[dtype][1]), *values)


def widen(t, src, widen_out, widen_in=None):
    """t: (dtype, shape [O, I, ...] or [O]); src[j] = the old channel of new channel j. widen_out: new rows from
    src; widen_in: (copy, factor) per new input channel, the input axis widened the same way and scaled."""
    dtype, shape, _ = t
    v = unpack(t)
    O = shape[0]
    I = shape[1] if len(shape) > 1 else 1
    inner = 1
    for s in shape[2:]:
        inner *= s
    rows = [v[o * I * inner:(o + 1) * I * inner] for o in range(O)]
    if widen_out:
        rows = [rows[s] for s in src]
    if widen_in is not None:
        rows = [[row[src[i] * inner + k] * widen_in[i] for i in range(len(src)) for k in range(inner)] for row in rows]
    new_shape = [len(rows)] + ([len(src) if widen_in is not None else I] if len(shape) > 1 else []) + shape[2:]
    return pack(dtype, new_shape, [x for r in rows for x in r])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", help="safetensors file with a GreenFormer refiner (F16 or F32)")
    ap.add_argument("dst", help="the widened file to write")
    ap.add_argument("--seed", type=int, default=0, help="seed of the weight splits")
    a = ap.parse_args(argv)
    args, seed = [a.src, a.dst], a.seed
    tensors, meta = read(args[0])
    stem = tensors.get("refiner.stem.0.weight")
    if stem is None or any(t[0] not in ELEM for k, t in tensors.items() if k.startswith("refiner.")):
        print(f"widen: {args[0]} has no F16/F32 refiner (refiner.stem.0.weight ...)", file=sys.stderr)
        return 1
    C = stem[1][0]
    if C % GROUPS:
        print(f"widen: the refiner's width {C} is not a multiple of {GROUPS} groups", file=sys.stderr)
        return 1
    per = C // GROUPS
    src = [(j // (2 * per)) * per + (j % per) for j in range(2 * C)]    # new channel -> old channel
    copy = [(j % (2 * per)) // per for j in range(2 * C)]               # 0: first copy, 1: second
    rng = random.Random(seed)
    out = dict(tensors)
    for k, t in tensors.items():
        if not k.startswith("refiner."):
            continue
        reads_hidden = k.endswith(".weight") and len(t[1]) == 4 and t[1][1] == C and not k.startswith("refiner.stem.")
        if reads_hidden:  # this conv's input is the hidden map: split each old channel's weight between its copies
            r = [0.35 + 0.3 * rng.random() for _ in range(C)]
            factor = [r[src[j]] if copy[j] == 0 else 1.0 - r[src[j]] for j in range(2 * C)]
        else:
            factor = None
        writes_hidden = t[1][0] == C  # every refiner tensor but final's has the hidden width first
        if writes_hidden or factor is not None:
            out[k] = widen(t, src, writes_hidden, factor)
    meta = dict(meta, widened=f"refiner {C} -> {2 * C} channels from {os.path.basename(args[0])} (seed {seed})")
    write(args[1], out, meta)
    print(f"widened the refiner of {args[0]} from {C} to {2 * C} channels into {args[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
