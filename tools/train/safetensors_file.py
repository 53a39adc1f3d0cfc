"""The safetensors format read and written directly (no dependency): the header, the metadata and each tensor's
raw little-endian bytes. Shared by average.py (numpy views over the bytes) and widen.py (pure Python)."""
from __future__ import annotations

import json
import os
import struct

ELEMENT_BYTES = {"F16": 2, "BF16": 2, "F32": 4, "I64": 8}


def read(path):
    """{name: (dtype, shape, bytes)}, metadata"""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items()}, meta


def write(path, tensors, meta):
    """tensors: {name: (dtype, shape, bytes)}; written to a temporary name, then renamed."""
    header, blobs, off = {"__metadata__": meta}, [], 0
    # wider elements first: every tensor then starts aligned to its element size (the header is padded to 8)
    for k in sorted(tensors, key=lambda k: (-ELEMENT_BYTES[tensors[k][0]], k)):
        dtype, shape, raw = tensors[k]
        header[k] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)
    os.replace(path + ".tmp", path)
