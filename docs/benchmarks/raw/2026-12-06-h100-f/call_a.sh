#!/usr/bin/env bash
# (run A) issue 12: version 3 widened to a 64-channel refiner (tools/train/widen.py), trained at 1024 (batch 4),
# the rest of the network at a quarter of the refiner's rate, while ckey builds and the GPU tests run; scored on
# the development plates (seed 7001) and a fresh held-out set (seed 9811). Issue 11: the new refiner bands
# (504 rows at 2048) with the 64 MiB scratch against the previous default (248-row bands, 128 MiB), exclusive.
set -u
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }; left() { echo $(( 585 - ($(date +%s) - t0) )); }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
mkdir -p $OUT/state
python3 tools/train/widen.py models/ckey-small.safetensors /tmp/wide.safetensors --seed 0
TRAIN_ARGS=${TRAIN_ARGS:-"--init /tmp/wide.safetensors --size 1024 --batch 4 --lr 1.5e-4 --steps 950 --warmup 100 --seed 7 --recipe 2 --fg-weight 2 --rest-lr-scale 0.25"}
(PYTHONUNBUFFERED=1 python3 tools/train/train.py --state $OUT/state --minutes ${TRAIN_MIN:-6.0} $TRAIN_ARGS > $OUT/train.log 2>&1
 python3 tools/train/train.py --state $OUT/state --export $OUT/next.safetensors --device cpu >> $OUT/train.log 2>&1) &
train_pid=$!
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/cmake.log 2>&1
cmake --build build -j16 --target ckey test_cuda_ops test_cuda_model > /tmp/build.log 2>&1 || grep error /tmp/build.log | head
el built; head -c 1000 $OUT/train.log
B=build/ckey
for t in test_cuda_ops test_cuda_model; do
  (cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp CK_BIN=$PWD/ckey timeout 120 ./tests/$t > /tmp/$t.log 2>&1; echo "$t rc=$?")
  grep "^NOT OK" /tmp/$t.log | head -10 | cut -c1-160; tail -1 /tmp/$t.log
done
tar -czf $OUT/tests.tgz -C /tmp test_cuda_ops.log test_cuda_model.log
el tests
$B plates --out /tmp/qe --size 2048x2048 --count 16 --seed 7001 > /dev/null 2>&1
$B plates --out /tmp/qh --size 2048x2048 --count 16 --seed 9811 > /dev/null 2>&1
el plates
wait $train_pid; el trained; grep -E '^\{"step"' $OUT/train.log | tail -4 | cut -c1-220; tail -2 $OUT/train.log
python3 tools/train/average.py $OUT/avg.safetensors $OUT/next.safetensors /tmp/wide.safetensors
q() { $B quality --plates $1 --device cuda --precision fp16 --md /tmp/$2.md ${@:3} > /tmp/$2.log 2>&1 || tail -2 /tmp/$2.log
      echo "== $2"; grep -E "^\| (full|chroma)|checkpoint" /tmp/$2.md; }
cat > /tmp/ratios.py <<'PY'
import sys
def row(p, name):
    for l in open(p):
        c = [x.strip() for x in l.split("|")]
        if len(c) > 6 and c[1] == name:
            return float(c[2]), float(c[5]), float(c[6])
b = row(sys.argv[1], "chroma")
for p in sys.argv[2:]:
    r = [x / y for x, y in zip(row(p, "full2048"), b)]
    print(p.split("/")[-1][:-3], "worst %.4f" % max(r), "alpha/edge/fg", " ".join("%.4f" % x for x in r))
PY
q /tmp/qe dev_v3 --checkpoint builtin --configs full2048,chroma
q /tmp/qe dev_wide0 --checkpoint /tmp/wide.safetensors --configs full2048
q /tmp/qe dev_next --checkpoint $OUT/next.safetensors --configs full2048
q /tmp/qe dev_avg --checkpoint $OUT/avg.safetensors --configs full2048
python3 /tmp/ratios.py /tmp/dev_v3.md /tmp/dev_v3.md /tmp/dev_wide0.md /tmp/dev_next.md /tmp/dev_avg.md | tee /tmp/dev_ratios.txt
el dev
q /tmp/qh held_v3 --checkpoint builtin --configs full2048,chroma
q /tmp/qh held_next --checkpoint $OUT/next.safetensors --configs full2048
q /tmp/qh held_avg --checkpoint $OUT/avg.safetensors --configs full2048
python3 /tmp/ratios.py /tmp/held_v3.md /tmp/held_v3.md /tmp/held_next.md /tmp/held_avg.md | tee /tmp/held_ratios.txt
(cd /tmp && tar -czf $OUT/evals.tgz dev_*.md held_*.md dev_ratios.txt held_ratios.txt)
el held
bench() { for a in "$@"; do a=${a//_/ }; timeout 40 $B bench ${a//=/ } --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null; done; }
for k in 1 2; do
  [ $(left) -gt 30 ] && bench --size=2048 | sed 's/^{/{"v": "default", /'
  [ $(left) -gt 30 ] && CK_CUDA_SCRATCH_MB=128 CK_REFINER_BAND=248 bench --size=2048 | sed 's/^{/{"v": "previous", /'
done > $OUT/bench.jsonl
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l); print('%-9s %5d %8.3f %7.1f %s'%(d['v'], d['size'], d['median_ms'], d['device_peak_mib'], d['alpha_center']))"
el finished
