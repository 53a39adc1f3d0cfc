#!/usr/bin/env bash
# GPU tests and the stem fold timed; the fp16 gate's alpha max: which default moves it (variants), with intermediates; a second seed for the noise.
set -u
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > $OUT/cmake.log 2>&1
cmake --build build -j16 --target ckey test_cuda_ops test_cuda_model > /tmp/build.log 2>&1 || { grep -E "error" /tmp/build.log | head -20; }
el built
B=build/ckey
for t in test_cuda_model test_cuda_ops; do
  (cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp CK_BIN=$PWD/ckey timeout 60 ./tests/$t > /tmp/$t.log 2>&1; echo "$t rc=$?")
  grep -E "^NOT OK|GroupNorm 2 folded|a_out\)" /tmp/$t.log | head -12 | cut -c1-170; tail -1 /tmp/$t.log
done
bench() { for a in "$@"; do a=${a//_/ }; timeout 40 $B bench ${a//=/ } --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null; done; }
for k in 1 2; do
  CK_REFINER_FOLD=0 bench --size=512_--batch=8 --size=512 | sed 's/^{/{"fold": 0, /'
  bench --size=512_--batch=8 --size=512 | sed 's/^{/{"fold": 1, /'
done > $OUT/fold.jsonl
python3 -c "
import json
for l in open('$OUT/fold.jsonl'):
    d=json.loads(l); print('fold=%d %5d %d %8.3f %7.3f %7.1f'%(d['fold'], d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
el tests+bench
PYTHONUNBUFFERED=1 timeout 110 python3 tools/reference/accuracy_gate.py --ckey $B --sizes 512,1024,2048 --precisions fp16 \
  --variant noln:CK_LN_ROWS=0 --variant s2d:CK_PATCH_S2D=1 --variant unfused:CK_REFINER_FUSED=0 \
  --variant pv64:CK_ATTN_PV56=0 --variant nofold:CK_REFINER_FOLD=0 --variant olddef:CK_PATCH_S2D=1,CK_LN_ROWS=0 \
  --out /tmp/acc > $OUT/acc_variants.log 2>&1
echo "gate rc=$?"; sed -n '/Distance to float64/,$p' $OUT/acc_variants.log | cut -c1-200
el variants
[ $(( $(date +%s) - t0 )) -lt 200 ] && PYTHONUNBUFFERED=1 timeout $(( 270 - ($(date +%s) - t0) )) python3 tools/reference/accuracy_gate.py --ckey $B --sizes 512,1024,2048 --precisions fp16 \
  --seed 1 --out /tmp/acc1 > $OUT/acc_seed1.log 2>&1
echo "gate seed 1 rc=$?"; sed -n '/Distance to float64/,$p' $OUT/acc_seed1.log | cut -c1-200
el finished
