#!/usr/bin/env bash
# GPU machine: the fg un-mixing's device kernels (frame/cuda/postprocess.cu + frame/unmix_px.h, opt-in with
# CK_UNMIX_DEVICE=1) against the host, and what they save. Usage (repository root, on the GPU machine; OpenBLAS
# and OpenEXR from carry/deps.tar.xz as the other suites):  scripts/device/unmix_check.sh
#   1. builds ckey and the GPU tests GT (default test_cuda_postprocess: the kernels on synthetic frames, one ulp
#      from the host; test_cuda_colorspace: the engine end to end in five camera colour spaces, full frame and
#      tiled, the un-mixing off and on; test_cuda_passes: the device post-processing and encoding of every other
#      context, which the same file serves);
#   2. the built-in keyer's whole frame (ck_key_passes, every pass) at FRAMES (default 3840x2160): the un-mixing
#      on the device (CK_UNMIX_DEVICE=1), on the host (=0, the default), and off.
# It builds in build/ with speed_suite.sh's options, so `scripts/device/unmix_check.sh && scripts/device/speed_suite.sh
# tiles` (batches, tiles and whole frames; add `peer` for the side-by-side table) builds once.
# Logs go to $OUT/unmix_check.tgz.
set -u
OUT=${OUT:-/tmp/ckey-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
. scripts/device/carry_deps.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null) date $(date -u +%FT%TZ)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real $CK_DEPS_OPTS > $OUT/cmake.log 2>&1
GT="${GT:-test_cuda_postprocess test_cuda_colorspace test_cuda_passes}"
cmake --build build -j16 --target ckey $GT > $OUT/build.log 2>&1 || grep -E "error" $OUT/build.log | head
el built
for t in $GT; do (cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp timeout 150 ./tests/$t > $OUT/$t.log 2>&1; echo "$t rc=$?"); grep -E "^NOT OK|FAIL|PASS|SKIP" $OUT/$t.log | tail -4; done
grep -E "^(ok|NOT OK)" $OUT/test_cuda_colorspace.log | cut -c1-200 | head -24
grep -E "un-mix" $OUT/test_cuda_postprocess.log | cut -c1-220
el tests
B=build/ckey
frame() { # frame size, CK_UNMIX_DEVICE, further options
  echo "== builtin frame $1 CK_UNMIX_DEVICE=$2 ${*:3}"
  CK_UNMIX_DEVICE=$2 timeout 60 $B bench --checkpoint builtin --size 2048 --frame $1 --device cuda --precision fp16 \
    --runs 10 --warmup 3 "${@:3}" 2>/dev/null |
    grep -oE '"(median_ms|e2e_median_ms|device_peak_mib|frame|frame_postprocess_on_device|frame_median_ms|frame_pageable_inputs_median_ms)": [^,}]*' | tr '\n' ' '; echo
}
for f in ${FRAMES:-3840x2160}; do frame $f 1; frame $f 0; frame $f 0 --no-fg-unmix; done | tee $OUT/builtin_frames.log
el builtin frames
rm -f $OUT/cmake.log; (cd $OUT && tar -czf unmix_check.tgz --remove-files *)
el finished
