#!/usr/bin/env bash
set -u
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > $OUT/cmake.log 2>&1
( make -C dev/cuda fused_bench > $OUT/fb_build.log 2>&1 ) &
cmake --build build -j14 --target ckey > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -20; }
wait
el built
B=build/ckey
for v in default CK_REFINER_FUSED=auto CK_LINEAR_GEMM=1; do
  e=""; [ "$v" != default ] && e=$v
  for c in 0 1; do
    env $e $B bench --size 2048 --compile $c --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null |
      python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print('%-24s compile=%d %8.3f'%('$v', d['compile'], d['median_ms']))"
  done
done
el bench
for v in default all3; do
  e=""; [ $v = all3 ] && e="CK_REFINER_FUSED=auto CK_LINEAR_GEMM=1 CK_LN_LINEAR=1"
  echo "== profile $v"; env $e $B bench --size 2048 --device cuda --precision fp16 --runs 3 --warmup 2 --profile 1 2>&1 | grep -E "profile|  [a-z]" | cut -c1-70
done
el profiles
OUT=$OUT timeout 150 stdbuf -oL dev/cuda/fused_bench 2>&1 | cut -c1-150
el fused_bench
