#!/usr/bin/env python3
"""Reference values for ARRI LogC4 / AWG4 from OpenColorIO >= 2.2 (Debian bookworm's 2.1 lacks it).

Writes tests/fixtures/colorspace/logc4_ocio.txt, read by tests/test_colorspace_ocio.cpp:
  header lines starting with '#' (OCIO version, transform names, the layout);
  'matrix' + 9 numbers: OCIO's AWG4 -> ACES2065-1 matrix (row-major), as its built-in uses it;
  'fwd' + 6 numbers: LogC4 code values R G B, then linear Rec.709 R G B;
  'inv' + 6 numbers: linear Rec.709 R G B, then LogC4 code values R G B.
The forward transform is OCIO's chain ARRI_LOGC4_to_ACES2065-1, ACEScg_to_ACES2065-1 (inverse),
UTILITY - ACES-AP1_to_LINEAR-REC709_BFD; the inverse is that chain inverted.

Usage: python3 -m venv /tmp/ocio && /tmp/ocio/bin/pip install opencolorio &&
       /tmp/ocio/bin/python tools/ocio/make_logc4_fixture.py tests/fixtures/colorspace/logc4_ocio.txt
"""
import sys

import PyOpenColorIO as ocio

STYLES = ["ARRI_LOGC4_to_ACES2065-1", "ACEScg_to_ACES2065-1", "UTILITY - ACES-AP1_to_LINEAR-REC709_BFD"]


def chain():
    g = ocio.GroupTransform()
    g.appendTransform(ocio.BuiltinTransform(STYLES[0]))
    g.appendTransform(ocio.BuiltinTransform(STYLES[1], ocio.TRANSFORM_DIR_INVERSE))
    g.appendTransform(ocio.BuiltinTransform(STYLES[2]))
    return g


def cpu(transform, direction):
    cfg = ocio.Config.CreateRaw()
    proc = cfg.getProcessor(transform, direction)
    return proc, proc.getOptimizedCPUProcessor(ocio.OPTIMIZATION_NONE)


def inputs():
    """65 code values per channel (1/64 steps, channels offset against each other), grey, mixed
    triples from a fixed linear congruential sequence, and code values down to -0.1 (the toe)."""
    v = [i / 64.0 for i in range(65)]
    rows = [(v[i], v[(i + 21) % 65], v[(i + 43) % 65]) for i in range(65)]
    rows += [(x, x, x) for x in v[::4]]
    s = 12345
    for _ in range(24):
        t = []
        for _ in range(3):
            s = (1103515245 * s + 12345) % 2**31
            t.append(s / 2**31)
        rows.append(tuple(t))
    rows += [(-0.1 * i / 8.0, -0.05 * i / 8.0, 0.02 * i) for i in range(1, 9)]
    return rows


def main(path):
    _, fwd = cpu(chain(), ocio.TRANSFORM_DIR_FORWARD)
    _, inv = cpu(chain(), ocio.TRANSFORM_DIR_INVERSE)
    # the AWG4 -> AP0 matrix: the built-in's own ops
    group = cfg_group(STYLES[0])
    mats = [t for t in group if isinstance(t, ocio.MatrixTransform)]
    assert len(mats) == 1, "expected one matrix in " + STYLES[0]
    m16 = mats[0].getMatrix()
    out = ["# ARRI LogC4 / AWG4 reference values from OpenColorIO " + ocio.__version__,
           "# forward chain: " + STYLES[0] + " ; " + STYLES[1] + " (inverse) ; " + STYLES[2],
           "# inverse: the same chain, TRANSFORM_DIR_INVERSE; CPU processors with OPTIMIZATION_NONE, float32",
           "# matrix: AWG4 -> ACES2065-1 (row-major) from " + STYLES[0],
           "# fwd: LogC4 R G B -> linear Rec.709 R G B ; inv: linear Rec.709 R G B -> LogC4 R G B",
           "matrix " + " ".join("%.17g" % m16[4 * r + c] for r in range(3) for c in range(3))]
    fwd_rows = []
    for rgb in inputs():
        o = fwd.applyRGB(list(rgb))
        fwd_rows.append(o)
        out.append("fwd " + " ".join("%.9g" % x for x in list(rgb) + list(o)))
    ramp = [(x * 4.0, x * 2.0, x * 8.0) for x in [i / 16.0 for i in range(17)]]
    toe = [(-0.05 * i / 8.0, 0.01 * i, -0.02 * i / 8.0) for i in range(1, 9)]  # AWG4 below t
    for lin in fwd_rows + ramp + toe:
        o = inv.applyRGB(list(lin))
        out.append("inv " + " ".join("%.9g" % x for x in list(lin) + list(o)))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def cfg_group(style):
    cfg = ocio.Config.CreateRaw()
    proc = cfg.getProcessor(ocio.BuiltinTransform(style), ocio.TRANSFORM_DIR_FORWARD)
    return list(proc.createGroupTransform())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/colorspace/logc4_ocio.txt")
