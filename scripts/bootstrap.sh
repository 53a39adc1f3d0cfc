#!/usr/bin/env bash
# One-step set-up on a fresh Debian/Ubuntu machine: install what is missing, build, then
#   sample : key a sample frame (the main job) into out/sample/
#   test   : run the test suite (ctest), plus the file parsers and the frame pipeline under AddressSanitizer
# Usage: scripts/bootstrap.sh sample|test
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-sample}

# libmicrohttpd-dev: `ckey serve` (the review page's server; not built without it)
pkgs="build-essential cmake pkg-config libopenblas-dev libpng-dev libjpeg-dev libopenexr-dev libdeflate-dev libtiff-dev libavformat-dev libavcodec-dev libswscale-dev libavutil-dev libmicrohttpd-dev"
# test-only: OpenColorIO (the colour transforms' reference), clang (the fuzz harnesses), tmux (Ctrl-C in a
# real terminal), Slurm + munge, ffprobe and a venv for openjd-cli (the render-farm tests); installed before
# the build, which looks for OpenColorIO
if [ "$mode" = test ]; then
    pkgs="$pkgs libopencolorio-dev clang libclang-rt-dev libomp-dev tmux slurm-wlm munge ffmpeg python3-venv"
    # the Python package (python/): CPython's headers, numpy, pytest, pip (and the venv above); imageio +
    # FreeImage read ckey's files in its tests
    pkgs="$pkgs python3-dev python3-numpy python3-pytest python3-pip python3-imageio libfreeimage3"
    # `ckey serve`'s page in a real browser: headless Chromium driven by chromium-driver through python3-selenium
    pkgs="$pkgs chromium chromium-driver python3-selenium"
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "== installing: $pkgs"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y $pkgs

jobs=$(nproc 2>/dev/null || echo 2)
echo "== building (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"

case "$mode" in
sample)
    # a short generated green-screen clip (ckey plates: 4 frames of 1280x720 with rough hints), keyed with
    # $CKEY_CHECKPOINT when set, else with the built-in small keyer: every pass and a ProRes 4444 video
    rm -rf out/sample
    ./build/ckey plates --out out/sample/plates --size 1280x720 --count 4 --format png --seed 11 > /dev/null
    ./build/ckey key --image out/sample/plates/Plate --hint out/sample/plates/AlphaHint --out out/sample \
        --video-out prores ${CKEY_CHECKPOINT:+--checkpoint "$CKEY_CHECKPOINT"}
    echo "== passes written under out/sample/{Matte,FG,Processed,Comp}, video out/sample/Plate_prores4444.mov"
    ;;
test)
    # the render-farm tests: a two-node Slurm cluster on 127.0.0.1 (slurm-wlm, munge), ffprobe (ffmpeg) to
    # count the videos' frames, openjd-cli from PyPI (into a venv under build/ when the system pip refuses)
    if ! command -v openjd > /dev/null; then
        python3 -m pip install --quiet openjd-cli 2> /dev/null ||
            { python3 -m venv build/farm-venv && build/farm-venv/bin/pip install --quiet openjd-cli; } ||
            echo "== openjd-cli could not be installed: test_farm_openjd will skip"
    fi
    export PATH="$PATH:$PWD/build/farm-venv/bin"
    (cd build && ctest --output-on-failure -j2)
    # the Python package against a CPU-only, position-independent ckey_core (build/python-ext), with
    # Debian's Python, which the packages above serve: into it, else (its pip refuses) into a venv under
    # build/ that sees its numpy; then its tests, which compare with build/ckey's files
    echo "== the Python package (python/): pip install, pytest"
    py=/usr/bin/python3
    py_build=(env CKEY_BUILD_DIR="$PWD/build/python-ext" CKEY_CUDA=OFF CKEY_BUILD_JOBS="$jobs")
    if ! "${py_build[@]}" $py -m pip install --quiet --no-build-isolation ./python 2> /dev/null; then
        $py -m venv --system-site-packages build/python-venv
        py=build/python-venv/bin/python
        "${py_build[@]}" $py -m pip install --quiet --no-build-isolation ./python
    fi
    CKEY_BIN="$PWD/build/ckey" $py -m pytest -q -p no:cacheprovider python/tests
    echo "== file parsers and the frame pipeline (threads) under AddressSanitizer + UBSan (build-asan/)"
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCK_SANITIZE=ON -DCK_WITH_CUDA=OFF
    cmake --build build-asan -j"$jobs" --target test_checkpoint test_image_io test_png_direct ckey \
        test_checkpoint_changes test_jpeg_strict crashers_replay_deps
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure \
        -R 'test_checkpoint|test_image_io|test_png_direct|test_pipeline|test_jpeg_strict|crashers_replay')
    echo "== fuzzing smoke run: each loader's libFuzzer harness for 10 s, seeded with tests/crashers/ (build-fuzz/, clang)"
    CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCK_WITH_CUDA=OFF -DCK_FUZZ=ON
    cmake --build build-fuzz -j"$jobs" --target fuzz_all
    fuzz/smoke.sh build-fuzz 10
    ;;
*)
    echo "usage: $0 sample|test" >&2
    exit 2
    ;;
esac
