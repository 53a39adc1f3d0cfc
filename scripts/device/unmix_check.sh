#!/usr/bin/env bash
# GPU machine: the fg un-mixing's device kernels (frame/cuda/postprocess.cu + frame/unmix_px.h, opt-in with
# CK_UNMIX_DEVICE=1) against the host, and what they save. Usage (repository root, on the GPU machine; OpenBLAS
# and OpenEXR from carry/deps.tar.xz as the other suites):  scripts/device/unmix_check.sh
#   1. builds ckey and the GPU tests GT (default test_cuda_postprocess: the kernels on synthetic frames, one ulp
#      from the host; test_cuda_colorspace: the engine end to end in five camera colour spaces, full frame and
#      tiled, the un-mixing off and on);
#   2. the built-in keyer's whole frame (ck_key_passes, every pass) at FRAMES (default 3840x2160): the un-mixing
#      on the device (CK_UNMIX_DEVICE=1), on the host (=0, the default), and off;
#   3. on an H200 (or FULL=1) the figures of the tiles-and-batches and the speed issues: 512 x 8, 2048 / 1024 /
#      512, tiles against the full frame, 4K tiled, and `compile-half:default` from carry/torch_greenformer.py.
# Logs go to $OUT/unmix_check.tgz; CALL_LIMIT (seconds, default 570) bounds the peer's share.
set -u
OUT=${OUT:-/tmp/ckey-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }; left() { echo $(( ${CALL_LIMIT:-570} - ($(date +%s) - t0) )); }
deps=""
if [ -f carry/deps.tar.xz ] || [ -d carry/deps ]; then
  [ -d carry/deps ] || tar -xJf carry/deps.tar.xz -C carry
  deps="-DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps"
  export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader); echo "$gpu"; echo "commit $(cat carry/BUILD_COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null) date $(date -u +%FT%TZ)"
cmake -S . -B build-unmix -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real $deps > $OUT/cmake.log 2>&1
GT="${GT:-test_cuda_postprocess test_cuda_colorspace}"
cmake --build build-unmix -j16 --target ckey $GT > $OUT/build.log 2>&1 || grep -E "error" $OUT/build.log | head
el built
for t in $GT; do (cd build-unmix && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp timeout 150 ./tests/$t > $OUT/$t.log 2>&1; echo "$t rc=$?"); grep -E "^NOT OK|FAIL|PASS|SKIP" $OUT/$t.log | tail -4; done
grep -E "^(ok|NOT OK)" $OUT/test_cuda_colorspace.log | cut -c1-200 | head -24
grep -E "un-mix" $OUT/test_cuda_postprocess.log | cut -c1-220
el tests
B=build-unmix/ckey
for f in ${FRAMES:-3840x2160}; do
  for v in "1" "0" "0 --no-fg-unmix"; do
    echo "== builtin frame $f CK_UNMIX_DEVICE=$v"; CK_UNMIX_DEVICE=${v%% *} timeout 60 $B bench --checkpoint builtin --size 2048 --frame $f --device cuda --precision fp16 --runs 10 --warmup 3 $([ "${v#* }" != "$v" ] && echo "${v#* }") 2>/dev/null | cut -c1-400
  done
done | tee $OUT/builtin_frames.log
el builtin frames
if [[ "$gpu" == *H200* ]] || [ "${FULL:-0}" = 1 ]; then
  for a in "--size 512 --batch 8" "--size 2048" "--size 1024" "--size 512" "--size 512 --batch 8"; do
    timeout 30 $B bench $a --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null; done > $OUT/bench.jsonl
  python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l); print('%5d %d %8.3f %7.3f %7.1f'%(d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
  el bench
  { timeout 60 $B bench --sweep ablation --toggles compile --resolution 2048 --tiled 768/64 --device cuda --runs 10 --warmup 3 2>/dev/null
    for f in 2048x2048 3840x2160; do
      timeout 30 $B bench --size 2048 --frame $f --device cuda --precision fp16 --runs 5 --warmup 2 2>/dev/null
      timeout 30 $B bench --tile 768/64 --frame $f --device cuda --precision fp16 --runs 5 --warmup 2 2>/dev/null
    done; } > $OUT/tiles.log 2>&1
  grep -vE '^\s*$' $OUT/tiles.log | cut -c1-240 | tail -24
  el tiles
  if [ $(left) -gt 75 ]; then
    PYTHONUNBUFFERED=1 timeout $(( $(left) - 15 )) python3 carry/torch_greenformer.py 2048,1024,512 compile-half:default 2>&1 | grep -v Warning > $OUT/peer.log
    cut -c1-300 $OUT/peer.log | tail -3
    for s in 2048 1024 512; do timeout 15 $B bench --size $s --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null >> $OUT/bench.jsonl; done; tail -3 $OUT/bench.jsonl | cut -c1-200
  fi
fi
rm -f $OUT/cmake.log; (cd $OUT && tar -czf unmix_check.tgz --remove-files *)
el finished
