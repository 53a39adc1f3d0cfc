#!/usr/bin/env bash
set -u
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > $OUT/cmake.log 2>&1
( make -C dev/cuda gemm_probe > $OUT/probe_build.log 2>&1 && cp dev/cuda/gemm_probe /tmp/gp_new &&
  make -C dev/cuda -B gemm_probe GEMM_SRC=../../carry/gemm_sm90_old.cu >> $OUT/probe_build.log 2>&1 && cp dev/cuda/gemm_probe /tmp/gp_old ) &
cmake --build build -j14 --target ckey test_cuda_ops test_cuda_model > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -20; }
wait
el built
timeout 60 /tmp/gp_new > $OUT/probe_new.log 2>&1; echo "probe new rc=$?"; cut -c1-140 $OUT/probe_new.log | head -90
timeout 60 /tmp/gp_old > $OUT/probe_old.log 2>&1; echo "probe old rc=$?"; grep -E "wrong|nmse" $OUT/probe_old.log | cut -c1-140
el probes
for t in test_cuda_ops test_cuda_model; do
  (cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp CK_BIN=$PWD/ckey timeout 150 ./tests/$t > /tmp/$t.log 2>&1; echo "$t rc=$?")
  grep "NOT OK" /tmp/$t.log | sed 's/ n=.*//; s/[0-9]\+x[0-9]\+/S/g' | sort | uniq -c | sort -rn | head -25
  grep "NOT OK" /tmp/$t.log | grep -v "bf16\] linear\|fp16\] linear" | head -10 | cut -c1-200
  tail -1 /tmp/$t.log; gzip -c /tmp/$t.log > $OUT/$t.log.gz
done
el tests
B=build/ckey
for v in default CK_REFINER_FUSED=auto; do
  echo "== profile 2048 $v"
  env $( [ $v != default ] && echo $v ) $B bench --size 2048 --device cuda --precision fp16 --runs 3 --warmup 2 --profile 1 > /tmp/prof.log 2>&1
  cp /tmp/prof.log $OUT/prof_$v.log
  grep -iE "conv|group|gn|refiner|total|graph" /tmp/prof.log | head -20
done
el done
