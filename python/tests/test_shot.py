"""Keyer.key_shot / key_sequence / key_video (include/ckey_shot.h): the output folder equals, file for file and
byte for byte, the one `ckey key` writes for the same shot and options; the progress callable sees every
frame once, in order; a stopped run leaves complete frames only; bad paths raise with ckey's message."""

import filecmp
import os
import pathlib
import signal
import subprocess

import pytest

import ckey
from helpers import FIXTURE, THREADS, run_cli

MODEL = FIXTURE / "model.safetensors"
PASSES = ("Matte", "FG", "Processed", "Comp")


def files_of(folder):
    """Every file under folder, relative (hidden ones too: a partial file must show)."""
    folder = pathlib.Path(folder)
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def assert_same_folders(got, want, expect_count):
    names = files_of(want)
    assert len(names) == expect_count, names
    assert files_of(got) == names
    differ = [n for n in names if not filecmp.cmp(pathlib.Path(got) / n, pathlib.Path(want) / n, shallow=False)]
    assert differ == [], f"files differ from ckey key's: {differ}"


def cli_key(ckey_bin, *args):
    return run_cli(ckey_bin, "key", *args, "--checkpoint", MODEL, "--size", 128, "--device", "cpu", "--threads",
                   THREADS, "--quiet")


@pytest.fixture(scope="module")
def plates(ckey_bin, tmp_path_factory):
    """Four 16-bit PNG plates with hints (ckey plates), and two linear EXR plates."""
    root = tmp_path_factory.mktemp("plates")
    run_cli(ckey_bin, "plates", "--out", root / "png", "--size", "96x64", "--count", 4, "--format", "png", "--seed", 3)
    run_cli(ckey_bin, "plates", "--out", root / "exr", "--size", "80x72", "--count", 2, "--seed", 8)
    # a longer shot for the stop tests: the frame pipeline may hold a few frames in flight when a run is
    # stopped, so stopping at frame 1 of 4 can still finish all 4; of 24 it cannot
    run_cli(ckey_bin, "plates", "--out", root / "long", "--size", "96x64", "--count", 24, "--format", "png", "--seed", 4)
    return root


@pytest.fixture(scope="module")
def keyer():
    with ckey.Keyer(MODEL, size=128, device="cpu", threads=THREADS) as k:
        yield k


def test_sequence_with_hints_equals_ckey_key(ckey_bin, plates, keyer, tmp_path):
    cli_key(ckey_bin, "--image", plates / "png" / "Plate", "--hint", plates / "png" / "AlphaHint", "--out",
            tmp_path / "cli")
    r = keyer.key_sequence(plates / "png" / "Plate", tmp_path / "py", hint=plates / "png" / "AlphaHint")
    assert (r.frames, r.skipped, r.cancelled, r.videos_encoded) == (4, 0, False, 0)
    assert_same_folders(tmp_path / "py", tmp_path / "cli", 4 * 4)


def test_linear_exr_plates_auto_hint_zip_and_shot_look_equal_ckey_key(ckey_bin, plates, tmp_path):
    # EXR plates kept linear, no hint (the automatic one), ZIP-compressed EXR passes, no comp and a stronger
    # despill for this shot only
    cli_key(ckey_bin, "--image", plates / "exr" / "Plate", "--out", tmp_path / "cli", "--linear", "--exr-compression",
            "zip", "--no-comp", "--despill", 0.9)
    with ckey.Keyer(MODEL, size=128, device="cpu", threads=THREADS, linear=True) as k:
        r = k.key_shot(plates / "exr" / "Plate", tmp_path / "py", exr="zip", comp=False, despill=0.9)
        assert k._ctx.params["despill"] == 0.5 and k._ctx.params["comp"]  # the Keyer's look is back
    assert r.frames == 2
    assert_same_folders(tmp_path / "py", tmp_path / "cli", 2 * 3)


def test_a_range_then_resume_equals_one_ckey_key_run(ckey_bin, plates, keyer, tmp_path):
    cli_key(ckey_bin, "--image", plates / "png" / "Plate", "--hint", plates / "png" / "AlphaHint", "--out",
            tmp_path / "cli")
    hint = plates / "png" / "AlphaHint"
    r = keyer.key_shot(plates / "png" / "Plate", tmp_path / "py", hint=hint, frames=(1, 2))
    assert (r.frames, r.skipped) == (2, 0)
    assert sorted(os.listdir(tmp_path / "py" / "Matte")) == ["0001.exr", "0002.exr"]
    seen = []
    r = keyer.key_shot(plates / "png" / "Plate", tmp_path / "py", hint=hint, skip_existing=True,
                       progress=lambda f: seen.append((f.frame, f.skipped, len(f.paths))))
    assert (r.frames, r.skipped) == (2, 2)
    assert seen == [(0, False, 4), (1, True, 0), (2, True, 0), (3, False, 4)]
    assert_same_folders(tmp_path / "py", tmp_path / "cli", 4 * 4)


def test_progress_once_per_frame_in_order_with_its_files(plates, keyer, tmp_path):
    calls = []

    def progress(f):
        # the frame's files are all there when it is reported
        assert all(os.path.isfile(p) for p in f.paths)
        calls.append((f.frame, f.stem, f.done, f.total, tuple(os.path.relpath(p, tmp_path) for p in f.paths),
                      sorted(f.seconds)))

    # several readers and workers: frames may finish out of order, the reports do not
    r = keyer.key_shot(plates / "png" / "Plate", tmp_path, hint=plates / "png" / "AlphaHint", readers=3, workers=3,
                       progress=progress)
    assert r.frames == 4 and (r.readers, r.workers) == (3, 3)
    stages = ["finish", "network", "ordered", "read", "write"]
    assert calls == [(i, f"{i:04d}", i + 1, 4, tuple(f"{d}/{i:04d}.{'png' if d == 'Comp' else 'exr'}" for d in PASSES),
                      stages) for i in range(4)]


def complete_sets(out):
    """The stems with all four passes; asserts that no other file (partial, hidden, lone pass) is there."""
    names = files_of(out)
    stems = sorted({pathlib.Path(n).stem for n in names})
    expect = sorted(f"{d}/{s}.{'png' if d == 'Comp' else 'exr'}" for s in stems for d in PASSES)
    assert names == expect, f"not complete sets of passes only: {names}"
    return stems


def test_progress_returning_false_stops_with_complete_frames_only(plates, keyer, tmp_path):
    seen = []
    r = keyer.key_shot(plates / "long" / "Plate", tmp_path, hint=plates / "long" / "AlphaHint",
                       progress=lambda f: seen.append(f.frame) or False)
    assert r.cancelled
    assert seen == [0]  # no call after the one that stopped the run
    stems = complete_sets(tmp_path)
    assert 1 <= r.frames < 24 and len(stems) == r.frames and stems[0] == "0000"


def test_an_exception_in_progress_stops_the_run_and_propagates(plates, keyer, tmp_path):
    class Stop(Exception):
        pass

    def progress(f):
        if f.frame == 1:
            raise Stop("frame 1")

    with pytest.raises(Stop, match="frame 1"):
        keyer.key_shot(plates / "long" / "Plate", tmp_path, hint=plates / "long" / "AlphaHint", progress=progress)
    assert 2 <= len(complete_sets(tmp_path)) < 24
    # the Keyer keys on afterwards
    r = keyer.key_shot(plates / "png" / "Plate", tmp_path / "again", hint=plates / "png" / "AlphaHint")
    assert r.frames == 4


@pytest.fixture
def python_sigint():
    """Python's own Ctrl-C handler, as an interactive session has it: a runner started in the background (a CI
    job under a non-interactive shell) inherits SIGINT ignored, and Python then installs no handler."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_ctrl_c_raises_keyboard_interrupt_with_complete_frames_only(plates, keyer, tmp_path, python_sigint):
    def progress(f):
        if f.frame == 0:
            signal.raise_signal(signal.SIGINT)  # as a terminal's Ctrl-C: handled on the main thread

    with pytest.raises(KeyboardInterrupt):
        keyer.key_shot(plates / "long" / "Plate", tmp_path, hint=plates / "long" / "AlphaHint", progress=progress)
    assert 1 <= len(complete_sets(tmp_path)) < 24


def cli_error(ckey_bin, *args):
    proc = subprocess.run([str(ckey_bin), "key", *map(str, args), "--checkpoint", str(MODEL), "--size", "128",
                           "--device", "cpu", "--quiet"], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    return proc.stderr


@pytest.mark.parametrize("case", ["missing", "empty", "hints", "out"])
def test_bad_paths_raise_with_ckeys_message(ckey_bin, plates, keyer, tmp_path, case):
    out = tmp_path / "out"
    hint = None
    if case == "missing":
        image, err = tmp_path / "nothing.png", ckey.FileError
    elif case == "empty":
        image, err = tmp_path / "empty", ckey.FileError
        image.mkdir()
    elif case == "hints":  # 4 frames, 2 hints
        image, hint, err = plates / "png" / "Plate", plates / "exr" / "AlphaHint", ckey.ShapeError
    else:  # the output folder's place is taken by a file
        image, err = plates / "png" / "Plate", ckey.FileError
        out.write_text("")
        out = out / "sub"
    with pytest.raises(err) as info:
        keyer.key_shot(image, out, hint=hint)
    message = str(info.value)
    assert str(image if case != "hints" else hint) in message or str(out) in message
    stderr = cli_error(ckey_bin, "--image", image, *(["--hint", hint] if hint else []), "--out", out)
    assert f"ckey: {message}\n" in stderr or f"ckey: error: {message}\n" in stderr, (message, stderr)


def test_out_of_range_frames_raise(plates, keyer, tmp_path):
    with pytest.raises(ckey.InvalidArgumentError, match=r"frames 2-5 are outside the shot's 0-3"):
        keyer.key_shot(plates / "png" / "Plate", tmp_path, frames=(2, 5))
    assert not any(tmp_path.iterdir())


def test_video_equals_ckey_key_with_its_videos(ckey_bin, plates, keyer, tmp_path):
    # a video to key: the FFV1 video ckey writes from a keyed sequence (FG with the matte as alpha)
    src = tmp_path / "src"
    proc = subprocess.run([str(ckey_bin), "key", "--image", str(plates / "png" / "Plate"), "--out", str(src),
                           "--video-out", "ffv1", "--checkpoint", str(MODEL), "--size", "128", "--device", "cpu",
                           "--quiet"], capture_output=True, text=True)
    video = src / "Plate_ffv1.mkv"
    if proc.returncode != 0 or not video.is_file():
        pytest.skip(f"this ckey writes no videos (built without FFmpeg?): {proc.stderr.strip()}")
    cli_key(ckey_bin, "--image", video, "--out", tmp_path / "cli", "--frames", "1-3")
    frames = []
    r = keyer.key_video(video, tmp_path / "py", frames=(1, 3), progress=lambda f: frames.append(f.stem))
    assert r.frames == 3 and frames == ["00001", "00002", "00003"]
    # the passes and the default videos (ProRes 4444, H.264 of the comp)
    assert "Plate_ffv1_prores4444.mov" in os.listdir(tmp_path / "py")
    assert_same_folders(tmp_path / "py", tmp_path / "cli", 3 * 4 + 2)
    with pytest.raises(ckey.FileError, match="no such video file"):
        keyer.key_video(tmp_path / "none.mkv", tmp_path / "x")
    with pytest.raises(ckey.FileError, match="not a folder of frames"):
        keyer.key_sequence(video, tmp_path / "x")
