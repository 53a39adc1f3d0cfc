"""Fixtures of ckey's Python tests: the `ckey` command line tool (CKEY_BIN, else build/ckey) and
imageio, which reads its output files (helpers.py)."""

import os
import pathlib

import pytest

from helpers import REPO


@pytest.fixture(scope="session")
def ckey_bin():
    given = os.environ.get("CKEY_BIN")
    path = pathlib.Path(given) if given else REPO / "build" / "ckey"
    if not path.is_file():
        if given:
            pytest.fail(f"CKEY_BIN={given}: no such program")
        pytest.skip(f"{path} is not built (set CKEY_BIN to the ckey program)")
    return path


@pytest.fixture(scope="session")
def imageio():
    iio = pytest.importorskip("imageio", reason="python3-imageio is needed to read ckey's output files")
    return iio
