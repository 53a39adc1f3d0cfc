#!/usr/bin/env bash
# validation call: build ckey + GPU op/model tests + fused_bench, run them, time the switches
set -u
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > $OUT/cmake.log 2>&1
( make -C dev/cuda fused_bench > $OUT/fused_build.log 2>&1; echo "fused_bench build rc=$?" ) &
cmake --build build -j14 --target ckey test_cuda_ops test_cuda_model > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -20; }
wait
el built
for t in test_cuda_ops test_cuda_model; do
  (cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp CK_BIN=$PWD/ckey timeout 150 ./tests/$t > $OUT/$t.log 2>&1; echo "$t rc=$?")
  grep -E "NOT OK|FAIL|Assert|assert" $OUT/$t.log | head -12; tail -1 $OUT/$t.log
  el "$t done"
done
OUT=$OUT timeout 120 dev/cuda/fused_bench > $OUT/fused_bench.log 2>&1; echo "fused_bench rc=$?"; tail -30 $OUT/fused_bench.log
el fused
B=build/ckey
for v in default CK_REFINER_FUSED=auto CK_LINEAR_GEMM=1 CK_LINEAR_GEMM=all CK_LN_LINEAR=1 "CK_REFINER_FUSED=auto CK_LINEAR_GEMM=1 CK_LN_LINEAR=1"; do
  e=""; [ "$v" != default ] && e=$v
  for a in "--size=2048" "--size=512 --batch=8"; do
    env $e timeout 60 $B bench ${a//=/ } --device cuda --precision fp16 --runs 10 --warmup 3 2>$OUT/bench_err.log |
      sed "s/^{/{\"switches\": \"$v\", /"
  done
done > $OUT/optin.jsonl
python3 -c "
import json
for l in open('$OUT/optin.jsonl'):
    d=json.loads(l); print('%-60s %5d %d %8.3f %s'%(d['switches'], d['size'], d['batch'], d['median_ms'], d.get('per_image_ms')))"
el optin
