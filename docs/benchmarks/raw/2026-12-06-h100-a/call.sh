#!/usr/bin/env bash
# one call at HEAD: build; the folded GroupNorm 2 against its apply pass at 512 and 512x8; GPU model + op tests; the fp16/bf16 precision gate at 512/1024/2048; ckey at
# 2048/1024/512/512x8; the compiled original side by side at 2048 and 512. Guarded by elapsed time (CALL_LIMIT).
set -u
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( ${CALL_LIMIT:-570} - ($(date +%s) - t0) )); }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > $OUT/cmake.log 2>&1
cmake --build build -j16 --target ckey test_cuda_ops test_cuda_model > /tmp/build.log 2>&1 || { grep -E "error" /tmp/build.log | head -20; }
el built
B=build/ckey
bench() { for a in "$@"; do a=${a//_/ }; timeout 40 $B bench ${a//=/ } --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null; done; }
bench --size=2048 --size=1024 --size=512 --size=512_--batch=8 > $OUT/ckey_before.jsonl
for k in 1 2; do
  CK_REFINER_FOLD=0 bench --size=512_--batch=8 --size=512 | sed 's/^{/{"fold": 0, /'
  bench --size=512_--batch=8 --size=512 | sed 's/^{/{"fold": 1, /'
done > $OUT/fold.jsonl
python3 -c "
import json
for l in open('$OUT/fold.jsonl'):
    d=json.loads(l); print('fold=%d %5d %d %8.3f %7.3f %7.1f'%(d['fold'], d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
el bench
for t in test_cuda_model test_cuda_ops; do
  (cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp CK_BIN=$PWD/ckey timeout 120 ./tests/$t > /tmp/$t.log 2>&1; echo "$t rc=$?")
  grep "^NOT OK" /tmp/$t.log | head -10 | cut -c1-160; tail -1 /tmp/$t.log
done
tar -czf $OUT/tests.tgz -C /tmp test_cuda_ops.log test_cuda_model.log
el tests
PYTHONUNBUFFERED=1 timeout 150 python3 tools/reference/accuracy_gate.py --ckey $B --sizes 512,1024,2048 --precisions fp16,bf16 --out /tmp/acc > $OUT/accuracy.log 2>&1
echo "gate rc=$?"; cp /tmp/acc/accuracy.json $OUT/ 2>/dev/null; grep -A12 "## Gate" $OUT/accuracy.log | cut -c1-160
el gate
if [ $(left) -gt 150 ]; then
  PYTHONUNBUFFERED=1 timeout $(( $(left) - 25 )) python3 carry/torch_greenformer.py 2048,512 compile-half:default,half 2>&1 | grep -v Warning > $OUT/peer.log
  cat $OUT/peer.log | cut -c1-200
fi
el peer
bench --size=2048 --size=512 --size=512_--batch=8 > $OUT/ckey_after.jsonl
python3 -c "
import json
for f in ('ckey_before','ckey_after'):
    for l in open('$OUT/'+f+'.jsonl'):
        d=json.loads(l); print('%-12s %5d %d %8.3f %7.3f %7.1f'%(f, d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
el finished
