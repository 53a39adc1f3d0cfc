"""No memory growth over 1000 frames (Python's allocations by tracemalloc, the whole process by its
resident set); Keyers on several threads key concurrently and give the single-thread results; keying
releases the GIL."""

import gc
import os
import sys
import threading
import tracemalloc

import numpy as np

import ckey
from helpers import FIXTURE

# one OpenMP thread per Keyer: on small frames more threads cost more than they save (and the threads
# tests then run one Keyer per core)
THREADS = 1


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def frames(n, h=48, w=40, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        rgb = rng.random((h, w, 3), dtype=np.float32)
        hint = (rng.random((h, w)) > 0.4).astype(np.float32)
        out.append((rgb, hint))
    return out


def test_no_growth_over_1000_calls():
    (rgb, hint), = frames(1)
    rgb16 = rgb.astype(np.float16)
    bad = np.zeros((48, 40, 2), np.float32)
    # one frame's outputs are 48 x 40 x (1 + 3 + 4 + 3) float32 = 84 KB, its passes 38 KB more: a leak of
    # either per call would be 84-122 MB over the run
    with ckey.Keyer("random:tiny", size=32, device="cpu", threads=THREADS) as k:

        def one(i):
            if i % 10 == 9:  # the refusal path, too
                try:
                    k.key(bad, hint)
                except ckey.ShapeError:
                    return
                raise AssertionError("a (H, W, 2) plate was accepted")
            out = k.key(rgb16 if i % 3 == 0 else rgb, hint, passes=i % 2 == 0, despill=(i % 5) / 5)
            assert out.alpha.shape == (48, 40)

        for i in range(100):  # warm-up: the allocator's pools, the context's buffers
            one(i)
        gc.collect()
        refs0 = [sys.getrefcount(a) for a in (rgb, rgb16, hint, bad)]
        tracemalloc.start()
        traced0, rss0 = tracemalloc.get_traced_memory()[0], rss_bytes()
        for i in range(1000):
            one(i)
        gc.collect()
        traced1, rss1 = tracemalloc.get_traced_memory()[0], rss_bytes()
        tracemalloc.stop()
        refs1 = [sys.getrefcount(a) for a in (rgb, rgb16, hint, bad)]
    assert refs1 == refs0, "key() keeps references to its inputs"
    assert traced1 - traced0 < 64 << 10, f"Python allocations grew by {traced1 - traced0} bytes"
    assert rss1 - rss0 < 8 << 20, f"the resident set grew by {(rss1 - rss0) / 2**20:.1f} MiB"


def test_no_growth_over_keyers_made_and_closed():
    (rgb, hint), = frames(1)
    for _ in range(5):
        with ckey.Keyer("random:tiny", size=32, device="cpu", threads=THREADS) as k:
            k.key(rgb, hint)
    gc.collect()
    rss0 = rss_bytes()
    for _ in range(40):
        with ckey.Keyer("random:tiny", size=32, device="cpu", threads=THREADS) as k:
            k.key(rgb, hint)
    gc.collect()
    assert rss_bytes() - rss0 < 8 << 20, "Keyers made and closed leave memory behind"


def key_all(keyer, inputs, repeat):
    return [keyer.key(rgb, hint) for _ in range(repeat) for rgb, hint in inputs]


def test_two_keyers_on_two_threads_give_the_single_thread_results():
    jobs = [frames(2, seed=1), frames(2, seed=2, h=56, w=72)]
    params = dict(checkpoint=FIXTURE / "model.safetensors", size=128, device="cpu", threads=THREADS)
    with ckey.Keyer(**params) as k:
        expected = [key_all(k, job, 1) for job in jobs]
    keyers = [ckey.Keyer(**params) for _ in jobs]
    results, errors = [None] * len(jobs), []
    start = threading.Barrier(len(jobs))

    def work(i):
        try:
            start.wait()
            results[i] = key_all(keyers[i], jobs[i], 3)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in keyers:
        k.close()
    assert not errors, errors
    for i, job in enumerate(jobs):
        assert len(results[i]) == 3 * len(job)
        for j, got in enumerate(results[i]):
            want = expected[i][j % len(job)]
            for name in ("alpha", "fg", "processed", "comp"):
                assert np.array_equal(getattr(got, name), getattr(want, name)), (i, j, name)


def test_one_keyer_shared_by_threads_keys_one_frame_at_a_time():
    (rgb, hint), = frames(1, seed=4)
    with ckey.Keyer("random:tiny", size=64, device="cpu", threads=THREADS) as k:
        want = k.key(rgb, hint)
        got = []
        threads = [threading.Thread(target=lambda: got.extend(key_all(k, [(rgb, hint)], 4))) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(got) == 12
    assert all(np.array_equal(g.processed, want.processed) and np.array_equal(g.alpha, want.alpha) for g in got)


def test_keying_releases_the_gil():
    (rgb, hint), = frames(1, h=256, w=256)
    ticks, done = [0], threading.Event()

    def count():
        while not done.is_set():
            ticks[0] += 1

    with ckey.Keyer(FIXTURE / "model.safetensors", size=256, device="cpu", threads=THREADS) as k:
        k.key(rgb, hint)
        counter = threading.Thread(target=count)
        counter.start()
        try:
            before = ticks[0]
            k.key(rgb, hint)  # while the GIL is held here, the counter cannot run a single step
            during = ticks[0] - before
        finally:
            done.set()
            counter.join()
    assert during > 0, "the counting thread never ran while a frame was keyed"
