"""Bad inputs raise the ckey.Error subclass of their ck_status, with ckey's message and `.status`; the
Keyer stays usable after a refused frame."""

import numpy as np
import pytest

import ckey
from helpers import FIXTURE, THREADS

# ck_status values (include/ckey.h)
EINVAL, EIO, EFORMAT, ESHAPE, EDTYPE, ENODEV, EBADSTATE, EUNSUPPORTED = -1, -2, -3, -4, -5, -8, -10, -11


@pytest.fixture(scope="module")
def keyer():
    with ckey.Keyer("random:tiny", size=64, device="cpu", threads=THREADS) as k:
        yield k


def frame(h=24, w=40):
    return np.full((h, w, 3), 0.5, np.float32), np.ones((h, w), np.float32)


def test_error_classes_carry_their_status():
    assert issubclass(ckey.ShapeError, ckey.Error) and issubclass(ckey.ShapeError, ValueError)
    assert issubclass(ckey.DtypeError, TypeError) and issubclass(ckey.FileError, OSError)
    assert issubclass(ckey.NoDeviceError, ckey.DeviceError)
    assert (ckey.InvalidArgumentError.status, ckey.FileError.status, ckey.FormatError.status) == (EINVAL, EIO, EFORMAT)
    assert (ckey.ShapeError.status, ckey.DtypeError.status, ckey.NoDeviceError.status) == (ESHAPE, EDTYPE, ENODEV)


@pytest.mark.parametrize("rgb_shape, hint_shape, fragment", [
    ((24, 40), (24, 40), "rgb: shape (24, 40)"),
    ((24, 40, 4), (24, 40), "rgb: shape (24, 40, 4)"),
    ((24, 40, 3, 1), (24, 40), "rgb: shape"),
    ((24, 40, 3), (24, 40, 3), "hint: shape (24, 40, 3)"),
    ((24, 40, 3), (40,), "hint: shape (40,)"),
    ((24, 40, 3), (24, 41), "hint: 41 x 24 pixels; the plate is 40 x 24"),
    ((0, 40, 3), (0, 40), "height and width must be at least 1"),
])
def test_wrong_shapes(keyer, rgb_shape, hint_shape, fragment):
    with pytest.raises(ckey.ShapeError, match=fragment.replace("(", r"\(").replace(")", r"\)")) as e:
        keyer.key(np.zeros(rgb_shape, np.float32), np.zeros(hint_shape, np.float32))
    assert e.value.status == ESHAPE


@pytest.mark.parametrize("which, value", [
    ("rgb", np.zeros((24, 40, 3), np.float64)),
    ("rgb", np.zeros((24, 40, 3), np.uint8)),
    ("hint", np.zeros((24, 40), np.int32)),
    ("rgb", [[[0.5, 0.5, 0.5]]]),
    ("hint", None),
])
def test_wrong_dtypes(keyer, which, value):
    rgb, hint = frame()
    args = (value, hint) if which == "rgb" else (rgb, value)
    with pytest.raises(ckey.DtypeError, match=f"^{which}: ") as e:
        keyer.key(*args)
    assert e.value.status == EDTYPE


def test_keyer_keys_after_refused_frames(keyer):
    with pytest.raises(ckey.ShapeError):
        keyer.key(np.zeros((5, 5, 2), np.float32), np.zeros((5, 5), np.float32))
    out = keyer.key(*frame())
    assert out.alpha.shape == (24, 40) and np.isfinite(out.processed).all()


def test_missing_checkpoint(tmp_path):
    path = tmp_path / "no-such.pth"
    with pytest.raises(ckey.FileError) as e:
        ckey.Keyer(path, device="cpu")
    assert e.value.status == EIO and str(path) in str(e.value) and "cannot open" in str(e.value)


@pytest.mark.parametrize("name, content", [
    ("garbage.safetensors", b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}" + bytes(64)),
    ("garbage.pth", b"PK\x03\x04" + bytes(200)),
    ("empty.pth", b""),
])
def test_corrupt_checkpoint(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ckey.FormatError) as e:
        ckey.Keyer(path, device="cpu")
    assert e.value.status == EFORMAT and str(path) in str(e.value)


def test_truncated_checkpoint(tmp_path):
    # the test model cut in half: a header promising more data than the file holds
    data = (FIXTURE / "model.safetensors").read_bytes()
    path = tmp_path / "half.safetensors"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ckey.FormatError, match="half.safetensors"):
        ckey.Keyer(path, device="cpu")


@pytest.mark.parametrize("kwargs, error, fragment", [
    ({"size": 100}, ckey.InvalidArgumentError, "size 100 is not a positive multiple of 32"),
    ({"tile": 48}, ckey.InvalidArgumentError, "tile 48"),
    ({"device": "tpu"}, ckey.InvalidArgumentError, "device 'tpu'"),
    ({"precision": "int8"}, ckey.InvalidArgumentError, "precision 'int8'"),
    ({"colorspace": "nonsense"}, ckey.InvalidArgumentError, "colour space 'nonsense'"),
    ({"despill": 1.5}, ckey.InvalidArgumentError, "despill 1.5"),
    ({"precision": "fp16"}, ckey.UnsupportedError, "the CPU backend computes in fp32 only"),
])
def test_invalid_options(kwargs, error, fragment):
    with pytest.raises(error, match=fragment):
        ckey.Keyer("random:tiny", **{"size": 64, "device": "cpu", **kwargs})


def test_cuda_without_a_device():
    if ckey.cuda_device_count() > 0:
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(ckey.NoDeviceError) as e:
        ckey.Keyer("random:tiny", size=64, device="cuda")
    assert e.value.status == ENODEV


def test_per_frame_options_are_checked(keyer):
    with pytest.raises(ckey.InvalidArgumentError, match="despill -0.1"):
        keyer.key(*frame(), despill=-0.1)
    with pytest.raises(TypeError):
        keyer.key(*frame(), size=128)  # fixed at load: not a key() argument
    with pytest.raises(ckey.InvalidArgumentError, match="'size' is fixed when the Keyer is made"):
        keyer._ctx.key(*frame(), {"size": 128})


def test_closed_keyer():
    k = ckey.Keyer("random:tiny", size=64, device="cpu")
    with k:
        k.key(*frame())
    assert k.closed
    k.close()  # idempotent
    with pytest.raises(ckey.BadStateError, match="closed") as e:
        k.key(*frame())
    assert e.value.status == EBADSTATE
