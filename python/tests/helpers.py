"""Helpers of ckey's Python tests: the repository's test model and frame, running the `ckey` command line
tool, and reading its files through imageio's FreeImage plugin (Debian's python3-imageio and
libfreeimage3), a decoder independent of ckey, then rounding Python's results as the passes are."""

import pathlib
import subprocess

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "tiny" / "s128"  # a tiny GreenFormer at S = 128 and a 72x136 frame
THREADS = 2  # CPU results depend on the thread count: the CLI and Python runs use the same


def run_cli(ckey_bin, *args):
    proc = subprocess.run([str(ckey_bin), *map(str, args)], capture_output=True, text=True)
    assert proc.returncode == 0, f"ckey {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr}"
    return proc


def read_image(imageio, path):
    """A file's samples as stored: uint8 / uint16 for PNG, float32 (exactly the halves) for EXR."""
    path = pathlib.Path(path)
    fmt = {".png": "PNG-FI", ".exr": "EXR-FI"}[path.suffix]
    return np.asarray(imageio.imread(str(path), format=fmt))


def as_unit_float(samples):
    """ckey's decoding of integer samples: float32 division by 255 or 65535 (src/io/image_buf.c)."""
    if samples.dtype == np.uint8:
        return samples.astype(np.float32) / np.float32(255)
    if samples.dtype == np.uint16:
        return samples.astype(np.float32) / np.float32(65535)
    return samples.astype(np.float32)


def read_plate(imageio, path):
    """(H, W, 3) float32 as `ckey key` reads a plate: integer files as above, EXR with negatives clamped."""
    v = as_unit_float(read_image(imageio, path))
    if v.ndim == 2:
        v = np.repeat(v[:, :, None], 3, axis=2)
    v = v[:, :, :3]
    if pathlib.Path(path).suffix == ".exr":
        v = np.maximum(v, np.float32(0))
    return np.ascontiguousarray(v)


def read_hint(imageio, path):
    v = as_unit_float(read_image(imageio, path))
    return np.ascontiguousarray(v if v.ndim == 2 else v[:, :, 0])


def half_bits(a):
    """float32 -> IEEE half, round to nearest even (as ck_passes_from_result), as raw bits."""
    return np.asarray(a, dtype=np.float32).astype(np.float16).view(np.uint16)


def comp_bytes(comp):
    """uint8(clip(v, 0, 1) * 255), truncated, NaN -> 0 (ck_f32_to_u8_trunc)."""
    v = np.nan_to_num(np.asarray(comp, dtype=np.float32), nan=0.0)
    return (np.clip(v, 0, 1) * np.float32(255)).astype(np.uint8)


def assert_same_bits(got, want, what):
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs {want.shape}"
    diff = np.count_nonzero(got != want)
    assert diff == 0, f"{what}: {diff} of {got.size} samples differ"


def assert_matches_files(imageio, out_dir, stem, result):
    """The KeyResult rounded as the passes are, and its exact passes, equal the files `ckey key` wrote."""
    out_dir = pathlib.Path(out_dir)
    files = {
        "alpha": read_image(imageio, out_dir / "Matte" / f"{stem}.exr"),
        "fg": read_image(imageio, out_dir / "FG" / f"{stem}.exr"),
        "processed": read_image(imageio, out_dir / "Processed" / f"{stem}.exr"),
    }
    for name, stored in files.items():
        assert stored.dtype == np.float32, f"{name}: EXR read as {stored.dtype}"
        want = half_bits(stored)  # the file's halves, exactly (half -> float32 -> half is lossless)
        assert_same_bits(half_bits(getattr(result, name)), want, f"{name} (rounded to half)")
        if result.passes is not None:
            assert_same_bits(getattr(result.passes, name).view(np.uint16), want, f"passes.{name}")
    comp = read_image(imageio, out_dir / "Comp" / f"{stem}.png")
    assert comp.dtype == np.uint8
    assert_same_bits(comp_bytes(result.comp), comp, "comp (as 8-bit)")
    if result.passes is not None:
        assert_same_bits(result.passes.comp, comp, "passes.comp")
