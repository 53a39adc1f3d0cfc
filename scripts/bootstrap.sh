#!/usr/bin/env bash
# One-step set-up on a fresh Debian/Ubuntu machine: install what is missing, build, then
#   sample : key a sample frame (the main job) into out/sample/
#   test   : run the test suite (ctest), plus the file parsers and the frame pipeline under AddressSanitizer
# Usage: scripts/bootstrap.sh sample|test
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-sample}

pkgs="build-essential cmake pkg-config libopenblas-dev libpng-dev libjpeg-dev libopenexr-dev libdeflate-dev libavformat-dev libavcodec-dev libswscale-dev libavutil-dev"
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
    ckpt=${CKEY_CHECKPOINT:-}
    size=2048
    if [ -z "$ckpt" ]; then
        # No official checkpoint configured: use the small random-weight test model, so the run shows
        # the whole pipeline but not a real key. See README "Getting the checkpoint".
        ckpt=tests/fixtures/tiny/s128/model.safetensors
        size=128
        echo "== CKEY_CHECKPOINT not set: keying with the tiny random-weight test model (not a real key)"
    fi
    ./build/ckey key --image tests/fixtures/tiny/s128/frame_rgb.png --hint tests/fixtures/tiny/s128/frame_hint.png \
        --checkpoint "$ckpt" --size "$size" --out out/sample
    echo "== passes written under out/sample/{Matte,FG,Processed,Comp}"
    ;;
test)
    (cd build && ctest --output-on-failure -j2)
    echo "== file parsers and the frame pipeline (threads) under AddressSanitizer + UBSan (build-asan/)"
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCK_SANITIZE=ON -DCK_WITH_CUDA=OFF
    cmake --build build-asan -j"$jobs" --target test_checkpoint test_image_io test_png_direct ckey
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -R 'test_checkpoint|test_image_io|test_png_direct|test_pipeline')
    ;;
*)
    echo "usage: $0 sample|test" >&2
    exit 2
    ;;
esac
