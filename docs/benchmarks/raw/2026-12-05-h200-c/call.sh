#!/usr/bin/env bash
set -u
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > $OUT/cmake.log 2>&1
( make -C dev/cuda fused_bench > $OUT/fb_build.log 2>&1 ) &
cmake --build build -j14 --target ckey test_cuda_ops test_cuda_model > $OUT/build.log 2>&1 || { grep -E "error" $OUT/build.log | head -20; }
wait
el built
for t in test_cuda_ops test_cuda_model; do
  (cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp CK_BIN=$PWD/ckey timeout 150 ./tests/$t > /tmp/$t.log 2>&1; echo "$t rc=$?")
  grep "^NOT OK" /tmp/$t.log | head -10 | cut -c1-160; tail -1 /tmp/$t.log; gzip -c /tmp/$t.log > $OUT/$t.log.gz
done
el tests
OUT=$OUT timeout 60 dev/cuda/fused_bench > $OUT/fused_bench.log 2>&1; grep gemm $OUT/fused_bench.log | cut -c1-150
el fused_bench
B=build/ckey
ALL3="CK_REFINER_FUSED=auto CK_LINEAR_GEMM=1 CK_LN_LINEAR=1"
for v in default CK_REFINER_FUSED=auto CK_LINEAR_GEMM=1 CK_LINEAR_GEMM=all CK_LN_LINEAR=1 "$ALL3" "$ALL3 CK_RESIZE_SUM4=1" "$ALL3 CK_LN_ROWS=1"; do
  e=""; [ "$v" != default ] && e=$v
  for a in "--size=2048" "--size=1024" "--size=512" "--size=512 --batch=8"; do
    env $e timeout 60 $B bench ${a//=/ } --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null |
      sed "s/^{/{\"switches\": \"$v\", /"
  done
done > $OUT/optin.jsonl
python3 -c "
import json
for l in open('$OUT/optin.jsonl'):
    d=json.loads(l); print('%-72s %5d %d %8.3f %7.3f %7.1f'%(d['switches'], d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
el bench
for v in default all3; do
  e=""; [ $v = all3 ] && e=$ALL3
  env $e $B bench --size 2048 --device cuda --precision fp16 --runs 3 --warmup 2 --profile 1 > $OUT/prof_$v.log 2>&1
  echo "== $v: $(grep 'op profile' $OUT/prof_$v.log)"
done
el profiles
env $ALL3 PYTHONUNBUFFERED=1 timeout 330 python3 tools/reference/accuracy_gate.py --ckey $B --sizes 512,1024,2048 --out /tmp/acc > $OUT/accuracy_all3.log 2>&1
echo "gate rc=$?"; cp /tmp/acc/accuracy.json $OUT/ 2>/dev/null; grep -A14 "## Gate" $OUT/accuracy_all3.log | cut -c1-160
el gate
