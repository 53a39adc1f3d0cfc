#!/usr/bin/env bash
# One call, two jobs: (1) issue 12: the 1024 fine-tune of the built-in keyer resumed on the GPU from t=0 while ckey
# builds and the GPU tests and the fp16 gate (seeds 0 and 1) run beside it (correctness only); (2) once training is
# done, exclusive timings: ckey bench at the defaults (twice) and the 2048 refiner-band experiments, then the new model
# scored on 16 development plates beside the shipped one, the peer at 2048.
set -u
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( ${CALL_LIMIT:-575} - ($(date +%s) - t0) )); }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
mkdir -p $OUT/state
[ -f carry/train_state/meta.json ] && cp carry/train_state/{model.pt,adam.pt,meta.json} $OUT/state/ && echo "resuming from carry/train_state"
TRAIN_ARGS=${TRAIN_ARGS:-"--init models/ckey-small.safetensors --size 1024 --batch 4 --lr 2e-4 --steps 1500 --seed 3 --recipe 2 --fg-weight 2"}
(PYTHONUNBUFFERED=1 python3 tools/train/train.py --state $OUT/state --minutes ${TRAIN_MIN:-5.2} $TRAIN_ARGS > $OUT/train.log 2>&1;
 python3 tools/train/train.py --state $OUT/state --export $OUT/ckey-small-next.safetensors --device cpu >> $OUT/train.log 2>&1) &
train_pid=$!
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/cmake.log 2>&1
cmake --build build -j16 --target ckey test_cuda_ops test_cuda_model > /tmp/build.log 2>&1 || { grep -E "error" /tmp/build.log | head -20; }
el built
B=build/ckey
for t in test_cuda_model test_cuda_ops; do
  (cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp CK_BIN=$PWD/ckey timeout 150 ./tests/$t > /tmp/$t.log 2>&1; echo "$t rc=$?")
  grep "^NOT OK" /tmp/$t.log | head -10 | cut -c1-160; grep -i "exact" /tmp/$t.log | head -4 | cut -c1-160; tail -1 /tmp/$t.log
done
el tests
$B plates --out /tmp/qe --size 2048x2048 --count 16 --seed 7001 > /dev/null 2>&1 &
PYTHONUNBUFFERED=1 timeout 120 python3 tools/reference/accuracy_gate.py --ckey $B --sizes 512,1024,2048 --precisions fp16 \
  --out /tmp/acc > /tmp/acc_seed0.log 2>&1
echo "gate seed 0 rc=$?"; sed -n '/Distance to float64/,$p' /tmp/acc_seed0.log | cut -c1-200
el gate0
if [ $(left) -gt 300 ]; then
PYTHONUNBUFFERED=1 timeout 100 python3 tools/reference/accuracy_gate.py --ckey $B --sizes 512,1024,2048 --precisions fp16 \
  --seed 1 --out /tmp/acc1 > /tmp/acc_seed1.log 2>&1
echo "gate seed 1 rc=$?"; sed -n '/Distance to float64/,$p' /tmp/acc_seed1.log | cut -c1-200
fi
tar -czf $OUT/logs.tgz -C /tmp test_cuda_ops.log test_cuda_model.log acc_seed0.log $(cd /tmp && ls acc_seed1.log 2>/dev/null)
el gate1
wait $train_pid; el "training done"; grep -E '^\{"step"' $OUT/train.log | tail -3 | cut -c1-200; tail -2 $OUT/train.log
bench() { for a in "$@"; do a=${a//_/ }; timeout 40 $B bench ${a//=/ } --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null; done; }
sizes="--size=2048 --size=1024 --size=512 --size=512_--batch=8"
for k in 1 2; do
  bench $sizes | sed 's/^{/{"v": "default", /'
  CK_CUDA_SCRATCH_MB=64 bench --size=2048 | sed 's/^{/{"v": "scratch64", /'
  CK_CUDA_SCRATCH_MB=64 CK_REFINER_BAND=440 bench --size=2048 | sed 's/^{/{"v": "s64-band440", /'
done > $OUT/bench.jsonl
CK_REFINER_BAND=off bench --size=2048 | sed 's/^{/{"v": "band-off", /' >> $OUT/bench.jsonl
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l); print('%-9s %5d %d %8.3f %7.3f %7.1f'%(d['v'], d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
el bench
wait
if [ -f $OUT/ckey-small-next.safetensors ]; then
  $B quality --checkpoint $OUT/ckey-small-next.safetensors --plates /tmp/qe --device cuda --precision fp16 --configs full2048,chroma --md /tmp/eval_next.md > /dev/null 2>&1
  echo "== new"; cat /tmp/eval_next.md
  $B quality --checkpoint builtin --plates /tmp/qe --device cuda --precision fp16 --configs full2048 --md /tmp/eval_shipped.md > /dev/null 2>&1
  echo "== shipped"; cat /tmp/eval_shipped.md
  cat /tmp/eval_next.md /tmp/eval_shipped.md > $OUT/eval.md
fi
el eval
if [ $(left) -gt 75 ]; then
  PYTHONUNBUFFERED=1 timeout $(( $(left) - 10 )) python3 carry/torch_greenformer.py 2048 compile-half:default 2>&1 | grep -v Warning > /tmp/peer.log
  cut -c1-200 /tmp/peer.log; bench --size=2048 | sed 's/^{/{"v": "after-peer", /' >> $OUT/bench.jsonl; tail -1 $OUT/bench.jsonl | cut -c1-200
fi
el finished
