"""Keyer.key(..., out=result): the frame keyed into an earlier result's arrays (ck_key_image_into). The
values equal a fresh key's bit for bit; the arrays are the same objects over the same memory afterwards;
arrays of the wrong shape, dtype or layout, read-only or overlapping ones are refused with nothing keyed;
keying frame after frame into one result keeps memory flat; the GIL is released."""

import gc
import os
import resource
import threading
import tracemalloc

import numpy as np
import pytest

import ckey
from helpers import FIXTURE

THREADS = 1
NAMES = ("alpha", "fg", "processed", "comp")


def frame(h=40, w=56, seed=0):
    rng = np.random.default_rng(seed)
    rgb = rng.random((h, w, 3), dtype=np.float32)
    rgb[:, :, 1] = np.maximum(rgb[:, :, 1], 0.6)
    hint = np.zeros((h, w), np.float32)
    hint[h // 4: 3 * h // 4, w // 4: 3 * w // 4] = 1
    return rgb, hint


def address(a):
    return a.__array_interface__["data"][0]


def assert_same_values(got, want, names=NAMES):
    for name in names:
        g, w = getattr(got, name), getattr(want, name)
        assert g.dtype == w.dtype and g.shape == w.shape, name
        assert g.tobytes() == w.tobytes(), f"{name} differs from a fresh key"  # bit for bit, NaNs included


@pytest.fixture(scope="module")
def keyer():
    with ckey.Keyer("random:tiny", size=64, device="cpu", threads=THREADS) as k:
        yield k


@pytest.mark.parametrize("settings", [{}, {"despill": 0.2, "despeckle": False}, {"despeckle_size": 5},
                                      {"passes": True}])
def test_key_into_out_equals_a_fresh_key_in_the_same_arrays(keyer, settings):
    rgb0, hint0 = frame(seed=1)
    rgb, hint = frame(seed=2)
    out = keyer.key(rgb0, hint0)  # another frame's result, of this size
    arrays = [getattr(out, n) for n in NAMES]
    addresses = [address(a) for a in arrays]
    for a in arrays:
        a.fill(np.nan)  # every value must be written
    got = keyer.key(rgb, hint, out=out, **settings)
    want = keyer.key(rgb, hint, **settings)
    assert got is out
    assert all(getattr(out, n) is a for n, a in zip(NAMES, arrays)), "the result's arrays were replaced"
    assert [address(getattr(out, n)) for n in NAMES] == addresses
    assert_same_values(out, want)
    if settings.get("passes"):
        assert_same_values(out.passes, want.passes)
    else:
        assert out.passes is None


def test_the_same_out_again_and_again(keyer):
    frames = [frame(seed=s) for s in range(3)]
    out = keyer.key(*frames[0])
    alpha = out.alpha
    for i in range(6):
        rgb, hint = frames[i % 3]
        keyer.key(rgb, hint, out=out)
        assert out.alpha is alpha
        assert_same_values(out, keyer.key(rgb, hint))


def test_tiled_and_highlights_keyers():
    rgb, hint = frame(h=90, w=150, seed=3)
    rgb[30:60, 50:100] *= 3  # over 1.0: keep_highlights has something to keep
    for kw in ({"tile": 64, "overlap": 16}, {"keep_highlights": True, "linear": True}):
        with ckey.Keyer("random:tiny", size=64, device="cpu", threads=THREADS, **kw) as k:
            out = k.key(*frame(h=90, w=150, seed=4))
            k.key(rgb, hint, out=out)
            assert_same_values(out, k.key(rgb, hint))


def test_comp_off_and_on_again(keyer):
    rgb, hint = frame(seed=5)
    out = keyer.key(rgb, hint)
    comp = out.comp
    before = comp.copy()
    keyer.key(rgb, hint, out=out, comp=False, despill=0.9)
    assert out.comp is None  # as a fresh key without the comp; its array was not written
    assert np.array_equal(comp, before)
    assert_same_values(out, keyer.key(rgb, hint, comp=False, despill=0.9), NAMES[:3])
    alpha = out.alpha
    keyer.key(rgb, hint, out=out)  # the comp on: a new comp array, the others kept
    assert out.alpha is alpha and out.comp is not None and out.comp is not comp
    assert_same_values(out, keyer.key(rgb, hint))


def replaced(out, name, array):
    return ckey.KeyResult(*[array if n == name else getattr(out, n) for n in NAMES])


@pytest.mark.parametrize("name, make, error, fragment", [
    ("alpha", lambda a: np.zeros((40, 55), np.float32), ckey.ShapeError, "out.alpha: shape (40, 55); this frame's is (40, 56)"),
    ("fg", lambda a: np.zeros((40, 56, 4), np.float32), ckey.ShapeError, "out.fg: shape (40, 56, 4); this frame's is (40, 56, 3)"),
    ("processed", lambda a: a[..., :3].copy(), ckey.ShapeError, "out.processed: shape (40, 56, 3)"),
    ("comp", lambda a: a.astype(np.float64), ckey.DtypeError, "out.comp: dtype"),
    ("fg", lambda a: a.astype(">f4"), ckey.DtypeError, "out.fg: dtype"),
    ("alpha", lambda a: np.zeros((56, 40), np.float32).T, ckey.InvalidArgumentError, "out.alpha: not a C-contiguous"),
    ("fg", lambda a: np.zeros((40, 56, 6), np.float32)[..., ::2], ckey.InvalidArgumentError, "out.fg: not a C-contiguous"),
    ("processed", lambda a: a.copy(), None, None),  # any array of the right kind is fine, not only ckey's
    ("comp", lambda a: a.tolist(), ckey.DtypeError, "out.comp: expected a numpy array"),
])
def test_out_arrays_are_checked(keyer, name, make, error, fragment):
    rgb, hint = frame(seed=6)
    out = keyer.key(rgb, hint)
    bad = replaced(out, name, make(getattr(out, name)))
    kept = {n: getattr(bad, n).copy() for n in NAMES if n != name}
    if error is None:
        keyer.key(rgb, hint, out=bad)
        assert_same_values(bad, out)
        return
    with pytest.raises(error) as e:
        keyer.key(rgb, hint, out=bad)
    assert fragment in str(e.value)
    for n, before in kept.items():  # nothing keyed
        assert np.array_equal(getattr(bad, n), before), n


def test_read_only_overlapping_and_wrong_kind_of_out(keyer):
    rgb, hint = frame(seed=7)
    out = keyer.key(rgb, hint)
    read_only = out.fg.copy()
    read_only.flags.writeable = False
    with pytest.raises(ckey.InvalidArgumentError, match="out.fg: read-only"):
        keyer.key(rgb, hint, out=replaced(out, "fg", read_only))
    with pytest.raises(ckey.InvalidArgumentError, match="out.comp: shares memory with out.fg"):
        keyer.key(rgb, hint, out=replaced(out, "comp", out.fg))
    with pytest.raises(ckey.InvalidArgumentError, match="out.fg: shares memory with rgb"):
        keyer.key(rgb, hint, out=replaced(out, "fg", rgb))
    with pytest.raises(ckey.InvalidArgumentError, match="out: expected a KeyResult"):
        keyer.key(rgb, hint, out={"alpha": out.alpha})
    small = keyer.key(*frame(h=24, w=32))
    with pytest.raises(ckey.ShapeError, match=r"out.alpha: shape \(24, 32\); this frame's is \(40, 56\)"):
        keyer.key(rgb, hint, out=small)
    # still keys after the refusals
    assert_same_values(keyer.key(rgb, hint, out=out), keyer.key(rgb, hint))


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_reuse_keeps_memory_flat_and_allocates_no_outputs():
    rgb, hint = frame(h=120, w=160, seed=8)
    # one frame's outputs are 120 x 160 x 11 float32 = 845 KB: 200 calls allocating them would be 165 MB
    with ckey.Keyer("random:tiny", size=64, device="cpu", threads=THREADS) as k:
        out = k.key(rgb, hint)
        for _ in range(20):  # warm-up: the context's own buffers
            k.key(rgb, hint, out=out)
        addresses = [address(getattr(out, n)) for n in NAMES]
        gc.collect()
        tracemalloc.start()
        traced0, rss0 = tracemalloc.get_traced_memory()[0], rss_bytes()
        for i in range(200):
            k.key(rgb, hint, out=out, despill=(i % 5) / 5)
        gc.collect()
        traced1, peak = tracemalloc.get_traced_memory()
        rss1 = rss_bytes()
        tracemalloc.stop()
        assert_same_values(out, k.key(rgb, hint, despill=(199 % 5) / 5))
    assert [address(getattr(out, n)) for n in NAMES] == addresses
    assert traced1 - traced0 < 16 << 10, f"Python allocations grew by {traced1 - traced0} bytes"
    assert peak - traced0 < 64 << 10, f"a call allocated {peak - traced0} bytes through Python (numpy arrays?)"
    assert rss1 - rss0 < 4 << 20, f"the resident set grew by {(rss1 - rss0) / 2**20:.1f} MiB"


def test_reuse_faults_in_no_new_output_memory():
    # what out= is for: a fresh key's outputs (13.5 MB at 640 x 480) are new memory, which the kernel
    # page-faults in on every call once the allocator maps blocks that large afresh; keyed into out, the
    # same pages are written again
    rgb, hint = frame(h=480, w=640, seed=10)
    output_pages = 480 * 640 * 11 * 4 // os.sysconf("SC_PAGE_SIZE")
    with ckey.Keyer("random:tiny", size=64, device="cpu", threads=THREADS) as k:
        out = k.key(rgb, hint)
        for _ in range(3):
            k.key(rgb, hint, out=out)
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(30):
            k.key(rgb, hint, out=out)
        per_call = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 30
    assert per_call < output_pages / 20, f"{per_call:.0f} page faults per call; the outputs are {output_pages} pages"


def test_keying_into_out_releases_the_gil():
    rgb, hint = frame(h=256, w=256, seed=9)
    ticks, done = [0], threading.Event()

    def count():
        while not done.is_set():
            ticks[0] += 1

    with ckey.Keyer(FIXTURE / "model.safetensors", size=256, device="cpu", threads=THREADS) as k:
        out = k.key(rgb, hint)
        counter = threading.Thread(target=count)
        counter.start()
        try:
            before = ticks[0]
            k.key(rgb, hint, out=out)
            during = ticks[0] - before
        finally:
            done.set()
            counter.join()
    assert during > 0, "the counting thread never ran while a frame was keyed into out"
