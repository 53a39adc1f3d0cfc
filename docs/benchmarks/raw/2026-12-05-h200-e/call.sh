#!/usr/bin/env bash
set -u
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > $OUT/cmake.log 2>&1
cmake --build build -j16 --target ckey > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -20; }
el built
B=build/ckey
for v in default fused; do
  e=""; [ $v = fused ] && e="CK_REFINER_FUSED=auto"
  env $e timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv --log-file /tmp/ncu_$v.csv \
      $B bench --size 2048 --device cuda --precision fp16 --runs 2 --warmup 0 --compile 0 > /dev/null 2>&1
  echo "ncu $v rc=$?"
  python3 tools/bench/ncu_summary.py /tmp/ncu_$v.csv --top 30 > $OUT/kernels_2048_$v.md 2>&1
  el "$v"
done
