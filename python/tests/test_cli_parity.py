"""Frames keyed through Python equal, bit for bit, the passes `ckey key --device cpu` writes for the same
files: the KeyResult's float32 arrays rounded to half as ck_passes_from_result rounds them (and the
comp to 8 bits), and the exact passes from key(..., passes=True), against the EXR / PNG files read by
FreeImage."""

import numpy as np

import ckey
from helpers import FIXTURE, THREADS, assert_matches_files, read_hint, read_plate, run_cli


def test_fixture_frame_with_the_test_model(ckey_bin, imageio, tmp_path):
    run_cli(ckey_bin, "key", "--image", FIXTURE / "frame_rgb.png", "--hint", FIXTURE / "frame_hint.png",
            "--out", tmp_path, "--checkpoint", FIXTURE / "model.safetensors", "--size", 128, "--device", "cpu",
            "--threads", THREADS, "--quiet")
    rgb = read_plate(imageio, FIXTURE / "frame_rgb.png")
    hint = read_hint(imageio, FIXTURE / "frame_hint.png")
    with ckey.Keyer(FIXTURE / "model.safetensors", size=128, device="cpu", threads=THREADS) as k:
        result = k.key(rgb, hint, passes=True)
    assert result.alpha.shape == (136, 72) and result.processed.shape == (136, 72, 4)
    assert_matches_files(imageio, tmp_path, "frame_rgb", result)


def test_plates_plate_with_the_builtin_keyer_at_its_default_size(ckey_bin, imageio, tmp_path):
    # a 16-bit sRGB plate and hint from `ckey plates`; no --size on either side: the built-in keyer's
    # CPU default (its training size) must be chosen alike
    plates = tmp_path / "plates"
    run_cli(ckey_bin, "plates", "--out", plates, "--size", "160x96", "--count", 1, "--format", "png", "--seed", 5)
    run_cli(ckey_bin, "key", "--image", plates / "Plate" / "0000.png", "--hint", plates / "AlphaHint" / "0000.png",
            "--out", tmp_path / "out", "--checkpoint", "builtin", "--device", "cpu", "--threads", THREADS, "--quiet")
    rgb = read_plate(imageio, plates / "Plate" / "0000.png")
    hint = read_hint(imageio, plates / "AlphaHint" / "0000.png")
    assert rgb.shape == (96, 160, 3) and hint.shape == (96, 160)
    with ckey.Keyer(device="cpu", threads=THREADS) as k:
        assert k.size == ckey.BUILTIN_TRAIN_SIZE
        result = k.key(rgb, hint, passes=True)
    assert_matches_files(imageio, tmp_path / "out", "0000", result)


def test_linear_exr_plate_tiled_with_per_frame_post_processing(ckey_bin, imageio, tmp_path):
    # a half-float linear EXR plate keyed as linear light, in 64-pixel tiles, with despill and despeckle
    # changed: on the command line at load, in Python per frame
    plates = tmp_path / "plates"
    run_cli(ckey_bin, "plates", "--out", plates, "--size", "150x100", "--count", 1, "--seed", 9)
    run_cli(ckey_bin, "key", "--image", plates / "Plate" / "0000.exr", "--hint", plates / "AlphaHint" / "0000.png",
            "--out", tmp_path / "out", "--checkpoint", FIXTURE / "model.safetensors", "--linear", "--tile", 64,
            "--overlap", 16, "--despill", 0.8, "--despeckle-size", 30, "--device", "cpu", "--threads", THREADS,
            "--quiet")
    rgb = read_plate(imageio, plates / "Plate" / "0000.exr")
    hint = read_hint(imageio, plates / "AlphaHint" / "0000.png")
    with ckey.Keyer(FIXTURE / "model.safetensors", tile=64, overlap=16, linear=True, device="cpu",
                    threads=THREADS) as k:
        assert k.params["tile"] == 64 and k.params["tile_overlap"] == 16 and k.params["input_is_linear"]
        result = k.key(rgb, hint, despill=0.8, despeckle_size=30, passes=True)
        default = k.key(rgb, hint)
    assert_matches_files(imageio, tmp_path / "out", "0000", result)
    # the per-frame settings did change this frame, and only the post-processed passes
    assert np.array_equal(default.alpha, result.alpha) and np.array_equal(default.fg, result.fg)
    assert not np.array_equal(default.processed, result.processed)
