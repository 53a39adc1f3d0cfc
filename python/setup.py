"""Builds ckey's Python package: `pip install ./python` from the repository's top.

The extension ckey._ckey is built by CMake (python/CMakeLists.txt), which adds ckey's own CMake project
and builds its static library ckey_core position-independent, with the CUDA backend when nvcc is found.
Environment:
  CKEY_BUILD_DIR   the CMake build folder to use (kept: a reinstall rebuilds only what changed);
                   default: a folder under setuptools' build_temp
  CKEY_CUDA        ON / OFF: force the CUDA backend on or off (default: on when nvcc is found)
  CKEY_BUILD_JOBS  parallel compile jobs (default: the core count)
  CKEY_CMAKE_ARGS  extra CMake arguments, split on spaces (e.g. -DCK_BLAS_ROOT=/opt/openblas)
"""

import json
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent


def ckey_version():
    """MAJOR.MINOR.PATCH from include/ckey.h, the one place it is written."""
    text = (REPO / "include" / "ckey.h").read_text()
    parts = [re.search(rf"#define CK_VERSION_{p} (\d+)", text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def builtin_train_size():
    """The built-in keyer's training size: the "train_size" metadata of models/ckey-small.safetensors, the
    file the build embeds into the library, read as src/model/builtin.c reads it (512 when absent or not
    a multiple of 32). ckey's public header does not offer it."""
    with open(REPO / "models" / "ckey-small.safetensors", "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    try:
        size = int(header.get("__metadata__", {}).get("train_size", 512))
    except ValueError:
        size = 512
    return size if size >= 32 and size % 32 == 0 else 512


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import numpy

        target = pathlib.Path(self.get_ext_fullpath(ext.name)).resolve()
        build_dir = pathlib.Path(os.environ.get("CKEY_BUILD_DIR") or pathlib.Path(self.build_temp) / "cmake").resolve()
        build_dir.mkdir(parents=True, exist_ok=True)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        args = [
            "cmake", "-S", str(HERE), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
            f"-DCKEY_SOURCE_DIR={REPO}",
            f"-DCKEY_PYTHON_INCLUDE={sysconfig.get_paths()['include']}",
            f"-DCKEY_NUMPY_INCLUDE={numpy.get_include()}",
            f"-DCKEY_EXT_SUFFIX={suffix}",
            f"-DCKEY_BUILTIN_TRAIN_SIZE={builtin_train_size()}",
        ]
        if not (build_dir / "CMakeCache.txt").exists() and shutil.which("ninja"):
            args += ["-G", "Ninja"]
        cuda = os.environ.get("CKEY_CUDA", "").upper()
        if cuda in ("ON", "OFF"):
            args.append(f"-DCK_WITH_CUDA={cuda}")
        args += os.environ.get("CKEY_CMAKE_ARGS", "").split()
        jobs = os.environ.get("CKEY_BUILD_JOBS") or str(os.cpu_count() or 2)
        subprocess.check_call(args)
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "_ckey", "-j", jobs])
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(build_dir / f"_ckey{suffix}", target)


setup(
    version=ckey_version(),
    packages=["ckey"],
    ext_modules=[Extension("ckey._ckey", sources=["src/ckey_module.c", "src/context.c", "src/shot.c"])],
    cmdclass={"build_ext": CMakeBuild},
)
