#!/usr/bin/env bash
# (run C) issue 12: version 3 fine-tuned at 1024 on training data 2 (greenscreen.py: props in front of the
# subject moving fast or far out of focus, tinted glass) while ckey builds; the export and its mean with
# version 3 scored on the development plates (seed 7001) and, with version 3, on fresh held-out plates (seed 9911).
set -u
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }; left() { echo $(( 585 - ($(date +%s) - t0) )); }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
mkdir -p $OUT/state
TRAIN_ARGS=${TRAIN_ARGS:-"--init models/ckey-small.safetensors --size 1024 --batch 4 --lr 1e-4 --steps 950 --warmup 100 --seed 8 --recipe 2 --fg-weight 2 --data 2"}
(PYTHONUNBUFFERED=1 python3 tools/train/train.py --state $OUT/state --minutes ${TRAIN_MIN:-5.5} $TRAIN_ARGS > $OUT/train.log 2>&1
 python3 tools/train/train.py --state $OUT/state --export $OUT/next.safetensors --device cpu >> $OUT/train.log 2>&1) &
train_pid=$!
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/cmake.log 2>&1
cmake --build build -j16 --target ckey > /tmp/build.log 2>&1 || grep error /tmp/build.log | head
el built; head -c 600 $OUT/train.log
B=build/ckey
$B plates --out /tmp/qe --size 2048x2048 --count 16 --seed 7001 > /dev/null 2>&1
$B plates --out /tmp/qh --size 2048x2048 --count 16 --seed 9911 > /dev/null 2>&1
el plates
wait $train_pid; el trained; grep -E '^\{"step"' $OUT/train.log | tail -6 | cut -c1-220; tail -2 $OUT/train.log
python3 tools/train/average.py $OUT/avg.safetensors $OUT/next.safetensors models/ckey-small.safetensors
q() { $B quality --plates $1 --device cuda --precision fp16 --md /tmp/$2.md ${@:3} > /tmp/$2.log 2>&1 || tail -2 /tmp/$2.log
      echo "== $2"; grep -E "^\| (full|chroma)" /tmp/$2.md; }
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
q /tmp/qe dev_next --checkpoint $OUT/next.safetensors --configs full2048,chroma
q /tmp/qe dev_avg --checkpoint $OUT/avg.safetensors --configs full2048
python3 /tmp/ratios.py /tmp/dev_next.md /tmp/dev_next.md /tmp/dev_avg.md | tee /tmp/dev_ratios.txt
el dev
q /tmp/qh held_v3 --checkpoint builtin --configs full2048,chroma
q /tmp/qh held_next --checkpoint $OUT/next.safetensors --configs full2048
q /tmp/qh held_avg --checkpoint $OUT/avg.safetensors --configs full2048
python3 /tmp/ratios.py /tmp/held_v3.md /tmp/held_v3.md /tmp/held_next.md /tmp/held_avg.md | tee /tmp/held_ratios.txt
(cd /tmp && tar -czf $OUT/evals.tgz dev_*.md held_*.md dev_ratios.txt held_ratios.txt)
el finished
