#!/usr/bin/env bash
# one call: build; bench (default, per-pixel resize-sum, the four switches, FP8; singles at 2048 and 512x8);
# GPU op + model tests; the fp16 gate with the four switches; the peer side by side at 2048. Each stage guarded
# by the elapsed time so that the call ends inside 590 s.
set -u
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( ${CALL_LIMIT:-580} - ($(date +%s) - t0) )); }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > $OUT/cmake.log 2>&1
cmake --build build -j16 --target ckey test_cuda_ops test_cuda_model > /tmp/build.log 2>&1 || { grep -E "error" /tmp/build.log | head -20; }
el built
B=build/ckey
F=CK_REFINER_FUSED=auto; K=CK_ATTN_TOKENS_MIN=1024; S=CK_PATCH_S2D=1; P=CK_ATTN_PV56=1
bench() { # switches sizes...
  local v=$1 e="" a; shift; [ "$v" != default ] && e=${v//,/ }
  for a in "$@"; do a=${a//_/ }
    env $e timeout 40 $B bench ${a//=/ } --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null | sed "s/^{/{\"switches\": \"$v\", /"
  done
}
{ for v in default CK_RESIZE_SUM=pixel $F,$K,$S,$P $F,$K,$S,$P,CK_LINEAR_NARROW=1; do bench $v --size=2048 --size=1024 --size=512 --size=512_--batch=8; done
  bench $F,$K,$S,$P,CK_LINEAR_NARROW=1,CK_LN_LINEAR=1 --size=2048 --size=512_--batch=8
  bench CK_ATTN_FP8=1 --size=2048 --size=1024
  bench $F,$K,$S,$P,CK_ATTN_FP8=1 --size=2048
} > $OUT/optin.jsonl
el bench
tt=$(( ($(left) - 20) / 2 )); [ $tt -gt 130 ] && tt=130
for t in test_cuda_ops test_cuda_model; do
  (cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp CK_BIN=$PWD/ckey timeout $tt ./tests/$t > /tmp/$t.log 2>&1; echo "$t rc=$?")
  grep "^NOT OK" /tmp/$t.log | head -10 | cut -c1-160; tail -1 /tmp/$t.log
done
tar -czf $OUT/tests.tgz -C /tmp test_cuda_ops.log test_cuda_model.log
el tests
if [ $(left) -gt 200 ]; then
  for v in $F $K $S $P CK_LINEAR_NARROW=1 CK_LN_ROWS=1; do bench $v --size=2048 --size=512_--batch=8; done >> $OUT/optin.jsonl
fi
el singles
python3 -c "
import json
for l in open('$OUT/optin.jsonl'):
    d=json.loads(l); print('%-62s %5d %d %8.3f %7.3f %7.1f'%(d['switches'], d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
if [ $(left) -gt 150 ]; then
  env $F $K $S $P PYTHONUNBUFFERED=1 timeout $(( $(left) - 100 )) python3 tools/reference/accuracy_gate.py --ckey $B --sizes 512,1024,2048 --precisions fp16 --out /tmp/acc > $OUT/accuracy_all4.log 2>&1
  echo "gate rc=$?"; cp /tmp/acc/accuracy.json $OUT/ 2>/dev/null; grep -A12 "## Gate" $OUT/accuracy_all4.log | cut -c1-160
fi
el gate
if [ $(left) -gt 70 ]; then
  echo "ckey default $(timeout 20 $B bench --size 2048 --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null)" > $OUT/side.log
  echo "ckey four $(env $F $K $S $P timeout 20 $B bench --size 2048 --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null)" >> $OUT/side.log
  PYTHONUNBUFFERED=1 timeout $(left) python3 carry/torch_greenformer.py 2048 compile-half:default,half 2>&1 | grep -v Warning >> $OUT/side.log
  cut -c1-200 $OUT/side.log
fi
el finished
