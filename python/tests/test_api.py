"""The package's surface: version, defaults, lifetime, the result's arrays, per-frame and load-time
settings, and ckey's log reaching Python's logging."""

import logging
import re

import numpy as np
import pytest

import ckey
from helpers import FIXTURE, REPO

THREADS = 1


def frame(h=40, w=56, seed=0):
    rng = np.random.default_rng(seed)
    rgb = rng.random((h, w, 3), dtype=np.float32)
    rgb[:, :, 1] = np.maximum(rgb[:, :, 1], 0.6)  # greenish, so that despill has something to do
    hint = np.zeros((h, w), np.float32)
    hint[h // 4: 3 * h // 4, w // 4: 3 * w // 4] = 1
    return rgb, hint


def test_version_is_the_headers():
    header = (REPO / "include" / "ckey.h").read_text()
    parts = [re.search(rf"#define CK_VERSION_{p} (\d+)", header).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    assert ckey.__version__ == ".".join(parts)


def test_builtin_keyer_defaults():
    with ckey.Keyer(device="cpu") as k:
        assert k.checkpoint == ckey.BUILTIN
        assert k.size == ckey.BUILTIN_TRAIN_SIZE == 1024  # models/ckey-small.safetensors' train_size
        assert k.device == "cpu" and not k.closed
        assert "size=1024" in repr(k)
        assert k.params["fg_unmix"] == 1  # auto: the built-in keyer's fg is un-mixed from the plate
    assert k.closed and "closed" in repr(k)
    with ckey.Keyer(device="cpu", fg_unmix=False) as k:
        assert k.params["fg_unmix"] == 0
    # tiled: the model runs at the tile size, whatever the rule for full frames
    with ckey.Keyer(ckey.BUILTIN, tile=256, device="cpu") as k:
        assert k.size == 256 and k.params["tile_overlap"] == 64
    # another checkpoint: ckey's default size
    with ckey.Keyer("random:tiny", device="cpu") as k:
        assert k.size == 2048 and k.params["fg_unmix"] == 0


def test_result_arrays():
    rgb, hint = frame()
    with ckey.Keyer("random:tiny", size=64, device="cpu", threads=THREADS) as k:
        out = k.key(rgb, hint)
        no_comp = k.key(rgb, hint, comp=False, passes=True)
    assert out.alpha.shape == (40, 56) and out.fg.shape == (40, 56, 3)
    assert out.processed.shape == (40, 56, 4) and out.comp.shape == (40, 56, 3)
    for a in (out.alpha, out.fg, out.processed, out.comp):
        assert a.dtype == np.float32 and a.flags.c_contiguous and a.flags.writeable and a.flags.owndata is False
    assert out["alpha"] is out.alpha and out.passes is None
    with pytest.raises(KeyError):
        out["matte"]
    assert no_comp.comp is None and no_comp.passes.comp is None
    assert no_comp.passes.alpha.dtype == np.float16 and no_comp.passes.processed.shape == (40, 56, 4)
    assert np.array_equal(no_comp.processed, out.processed)


@pytest.mark.parametrize("linear", [False, True])
def test_float16_strided_and_byte_swapped_inputs_key_like_contiguous_float32(linear):
    # the same values handed over as float16, as a non-contiguous view or big-endian are converted, then
    # keyed alike
    rng = np.random.default_rng(3)
    rgb16 = rng.random((40, 56, 3), dtype=np.float32).astype(np.float16)
    hint16 = (rng.random((40, 56)) > 0.5).astype(np.float16)
    rgb32, hint32 = rgb16.astype(np.float32), hint16.astype(np.float32)
    wide = np.zeros((40, 56, 6), np.float32)
    wide[:, :, ::2] = rgb32  # every other channel: a strided (H, W, 3) view
    with ckey.Keyer("random:tiny", size=64, device="cpu", threads=1, linear=linear) as k:
        ref = k.key(rgb32, hint32)
        big_endian = rgb32.astype(">f4")
        for rgb, hint in ((rgb16, hint16), (wide[:, :, ::2], hint32[:, :, None]), (rgb32, hint16), (big_endian, hint32)):
            got = k.key(rgb, hint)
            for name in ("alpha", "fg", "processed", "comp"):
                assert np.array_equal(getattr(got, name), getattr(ref, name)), name


def test_arrays_outlive_their_keyer():
    rgb, hint = frame()
    with ckey.Keyer("random:tiny", size=64, device="cpu", threads=THREADS) as k:
        out = k.key(rgb, hint, passes=True)
        copy = out.processed.copy(), out.passes.fg.copy()
    del k
    assert np.array_equal(out.processed, copy[0]) and np.array_equal(out.passes.fg, copy[1])


def test_per_frame_post_processing_equals_the_same_setting_at_load():
    rgb, hint = frame(seed=2)
    common = dict(checkpoint="random:tiny", size=64, device="cpu", threads=THREADS)
    settings = dict(despill=1.0, despeckle=False, despeckle_size=10)
    with ckey.Keyer(**common, **settings) as loaded:
        want = loaded.key(rgb, hint, passes=True)
    with ckey.Keyer(**common) as k:
        got = k.key(rgb, hint, passes=True, **settings)
        default = k.key(rgb, hint)
    for name in ("alpha", "fg", "processed", "comp"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
        assert np.array_equal(getattr(got.passes, name), getattr(want.passes, name)), name
    assert not np.array_equal(default.processed, got.processed)


def test_colour_space_and_linear_are_load_settings():
    rgb, hint = frame(seed=3)
    with ckey.Keyer("random:tiny", size=64, device="cpu", threads=THREADS) as srgb, \
         ckey.Keyer("random:tiny", size=64, device="cpu", threads=THREADS, linear=True) as linear, \
         ckey.Keyer("random:tiny", size=64, device="cpu", threads=THREADS, colorspace="LogC3") as logc3:
        assert (srgb.colorspace, linear.colorspace, logc3.colorspace) == ("srgb", "linear", "logc3")
        assert logc3.params["input_is_linear"]
        a, b, c = (k.key(rgb, hint).alpha for k in (srgb, linear, logc3))
    assert not np.array_equal(a, b) and not np.array_equal(b, c)
    names = ckey.colorspace_names()
    assert names[:3] == ["srgb", "linear", "logc3"] and "rec2020-linear" in names


def test_fixture_model_matches_the_reference_outputs():
    # the PyTorch reference's post-processed output for this frame (tests/fixtures, tools/reference/)
    rgb = np.load(FIXTURE / "frame_rgb.npy")
    hint = np.load(FIXTURE / "frame_hint.npy")
    with ckey.Keyer(FIXTURE / "model.safetensors", size=128, device="cpu", threads=THREADS) as k:
        out = k.key(rgb, hint)
    assert np.abs(out.processed - np.load(FIXTURE / "processed.npy")).max() < 1e-4
    assert np.abs(out.comp - np.load(FIXTURE / "comp.npy")).max() < 1e-4


def test_log_goes_to_the_ckey_logger(caplog):
    with caplog.at_level(logging.INFO, logger="ckey"):
        ckey.Keyer("random:tiny", size=64, device="cpu").close()
        with pytest.raises(ckey.FileError):
            ckey.Keyer("/nonexistent/model.pth", device="cpu")
    infos = [r for r in caplog.records if r.name == "ckey" and r.levelno == logging.INFO]
    assert any("activations" in r.getMessage() for r in infos)
    # a failure comes back as the exception, and is not also logged as an error
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
