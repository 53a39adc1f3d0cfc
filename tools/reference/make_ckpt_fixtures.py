#!/usr/bin/env python3
"""Small checkpoint files for tests/test_checkpoint.c (the .pth and .safetensors readers).

Every floating tensor holds exact values  base + 0.25 * i  (i = flat element index), small enough to be
exact in fp32, fp16 and bf16, so the C test asserts bit-exact numbers from a table rather than from a
second reference file. The table below and TENSORS in tests/test_checkpoint.c must agree.

  name (after stripping "_orig_mod.")       shape        base    how it is stored in the .pth
  encoder.model.pos_embed                   [1, 4, 3]    -1.0    plain tensor, storage A
  encoder.model.pos_alias                   [2, 3]       -0.25   view of storage A at element offset 3
  encoder.model.patch_embed.proj.weight     [3, 2, 2, 2] -3.0    nn.Parameter (_rebuild_parameter)
  encoder.model.patch_embed.proj.bias       [3]           0.5    nn.Parameter
  refiner.tail                              [6]           3.0    view of a 10-element storage at offset 4
  refiner.row                               [1, 6]        1.0    (6,1) tensor transposed: stride (1, 1)
  refiner.empty                             [0, 3]        -      no elements
  alpha_decoder.bn.num_batches_tracked      []            7      int64 scalar (every file)

Like nn.Module.state_dict(), each dict carries a `_metadata` attribute, which pickles as a BUILD.

Files written to tests/fixtures/ckpt/ (a few KB each):

  bare_f32.pth        torch.save of the bare OrderedDict, keys prefixed "_orig_mod." (archive folder
                      "bare_f32/", i.e. torch names it after the file)
  archive_f32.pth     the same dict saved through a BytesIO (archive folder "archive/")
  wrapped_f16.pth     {"state_dict": <fp16 dict>, "epoch": 3, "info": {...floats, lists, bools, None}}
  bf16_p4.pth         bf16 dict saved with pickle_protocol=4 (FRAME, MEMOIZE, STACK_GLOBAL, ...)
  zip64_f32.pth       the bare_f32 records re-zipped by this script under folder "weights v1/", with
                      zip64 extra fields and zip64 end-of-central-directory records forced on
  f32.safetensors     the fp32 tensors (views made contiguous), metadata {"format": "pt", ...}
  noncontig.pth       a transposed (non-contiguous) 2x3 tensor: must be rejected
  compressed.pth      bare_f32 records deflated: must be rejected
  bigendian.pth       bare_f32 records with byteorder "big": must be rejected
  evil_global.pth     a pickle calling posix.system: must be rejected without running anything
  legacy.pt           pre-1.6 (non-zip) torch.save format: must be rejected with a hint

Usage:  python3 tools/reference/make_ckpt_fixtures.py [out_dir]   (default tests/fixtures/ckpt)
"""
import collections
import io
import os
import pickle
import struct
import sys
import zipfile
import zlib

import numpy as np
import torch
from safetensors.torch import save_file

PREFIX = "_orig_mod."


def ramp(shape, base, dtype):
    n = int(np.prod(shape)) if len(shape) else 1
    return (torch.arange(n, dtype=torch.float64) * 0.25 + base).reshape(shape).to(dtype)


def make_state_dict(dtype):
    """The tensor table above, with the views and parameters built in `dtype` so storages survive."""
    storage_a = ramp([12], -1.0, dtype)
    long10 = ramp([10], 2.0, dtype)
    col = ramp([6, 1], 1.0, dtype)
    sd = collections.OrderedDict()
    sd["encoder.model.pos_embed"] = storage_a.view(1, 4, 3)
    sd["encoder.model.pos_alias"] = storage_a.view(4, 3)[1:3]
    sd["encoder.model.patch_embed.proj.weight"] = torch.nn.Parameter(ramp([3, 2, 2, 2], -3.0, dtype),
                                                                      requires_grad=False)
    sd["encoder.model.patch_embed.proj.bias"] = torch.nn.Parameter(ramp([3], 0.5, dtype))
    sd["refiner.tail"] = long10[4:]
    sd["refiner.row"] = col.t()
    sd["refiner.empty"] = torch.zeros(0, 3, dtype=dtype)
    sd["alpha_decoder.bn.num_batches_tracked"] = torch.tensor(7, dtype=torch.int64)
    assert sd["encoder.model.pos_alias"].storage_offset() == 3
    assert sd["refiner.tail"].storage_offset() == 4
    assert sd["refiner.row"].stride() == (1, 1)
    out = collections.OrderedDict((PREFIX + k, v) for k, v in sd.items())
    # nn.Module.state_dict() carries this attribute, which pickles as a BUILD on the OrderedDict
    out._metadata = collections.OrderedDict([("", {"version": 1}), ("encoder", {"version": 1})])
    return out


def save_bytes(obj, **kw):
    buf = io.BytesIO()
    torch.save(obj, buf, **kw)
    return buf.getvalue()


def zip_records(data):
    """(name, bytes) of every record of a torch.save archive, in archive order."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return [(i.filename, z.read(i.filename)) for i in z.infolist()]


def write_zip(path, entries, zip64=False, deflate=False, align=64):
    """A torch-style archive: records aligned to `align` bytes through a padding extra field (as
    torch's writer does), optionally deflated or with zip64 fields forced on small entries."""
    out, cd = bytearray(), bytearray()
    for name, data in entries:
        nb = name.encode()
        crc = zlib.crc32(data)
        if deflate:
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            cdata, method = c.compress(data) + c.flush(), 8
        else:
            cdata, method = data, 0
        off = len(out)
        pad = (-(off + 30 + len(nb) + 4)) % align
        extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if zip64 else 20, 0, method, 0, 0x21, crc,
                           len(cdata), len(data), len(nb), len(extra)) + nb + extra + cdata
        if zip64:
            cextra = struct.pack("<HHQQQ", 1, 24, len(data), len(cdata), off)
            csz = usz = lho = 0xFFFFFFFF
        else:
            cextra, csz, usz, lho = b"", len(cdata), len(data), off
        ver = 45 if zip64 else 20
        cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, ver, ver, 0, method, 0, 0x21, crc, csz, usz,
                          len(nb), len(cextra), 0, 0, 0, 0, lho) + nb + cextra
    n, cd_off = len(entries), len(out)
    out += cd
    if zip64:
        z64 = len(out)
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(cd), cd_off)
        out += struct.pack("<IIQI", 0x07064B50, 0, z64, 1)
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    else:
        out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(cd), cd_off, 0)
    with open(path, "wb") as f:
        f.write(out)


def rename_folder(entries, folder):
    return [(folder + "/" + name.split("/", 1)[1], data) for name, data in entries]


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo this must never run",))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures", "ckpt")
    os.makedirs(out, exist_ok=True)
    p = lambda name: os.path.join(out, name)

    sd32 = make_state_dict(torch.float32)
    torch.save(sd32, p("bare_f32.pth"))
    with open(p("archive_f32.pth"), "wb") as f:
        f.write(save_bytes(sd32))
    extra = {"lr": 0.125, "tags": ["a", "b"], "ema": True, "sched": None, "step": 123456789012}
    torch.save({"state_dict": make_state_dict(torch.float16), "epoch": 3, "info": extra}, p("wrapped_f16.pth"))
    torch.save(make_state_dict(torch.bfloat16), p("bf16_p4.pth"), pickle_protocol=4)

    records = zip_records(open(p("bare_f32.pth"), "rb").read())
    write_zip(p("zip64_f32.pth"), rename_folder(records, "weights v1"), zip64=True)
    write_zip(p("compressed.pth"), records, deflate=True)
    write_zip(p("bigendian.pth"),
              [(n, b"big" if n.endswith("/byteorder") else d) for n, d in records])

    nc = collections.OrderedDict(w=ramp([2, 3], 0.0, torch.float32).t())
    torch.save(nc, p("noncontig.pth"))

    evil = pickle.dumps(collections.OrderedDict(w=_Evil()), protocol=2)
    write_zip(p("evil_global.pth"), [("evil_global/data.pkl", evil), ("evil_global/byteorder", b"little"),
                                     ("evil_global/version", b"3\n")])

    torch.save({"w": torch.ones(2)}, p("legacy.pt"), _use_new_zipfile_serialization=False)

    st = collections.OrderedDict((k, v.contiguous().clone()) for k, v in sd32.items())
    save_file(st, p("f32.safetensors"), metadata={"format": "pt", "source": "ckey fixture \u00e9\"q\""})

    # Self-checks: torch reads back what the C reader must accept, and rejects nothing it should load.
    for name in ("bare_f32.pth", "archive_f32.pth", "zip64_f32.pth"):
        back = torch.load(p(name), weights_only=True)
        assert list(back.keys()) == list(sd32.keys()), name
        for k in sd32:
            assert torch.equal(back[k], sd32[k]), (name, k)
    back = torch.load(p("wrapped_f16.pth"), weights_only=True)
    assert back["state_dict"]["_orig_mod.refiner.tail"].dtype == torch.float16
    for name in sorted(os.listdir(out)):
        print(f"{os.path.getsize(p(name)):6d}  {name}")


if __name__ == "__main__":
    main()
