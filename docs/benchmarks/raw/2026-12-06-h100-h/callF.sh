#!/usr/bin/env bash
# (run F) issue 12: run E's training again to its last step (run E's export did not come back): version 4 + 1250
# steps on data 2, fg terms weighted 3; scored on the development plates (7001), on run E's held-out sets (9931,
# 9932) and on a fresh one (9941, with version 4 and the chroma baseline). Then, GPU to itself: ckey bench and
# the peer at 2048 side by side (issue 11).
set -u
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }; left() { echo $(( 585 - ($(date +%s) - t0) )); }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
mkdir -p $OUT/state /tmp/ev
TRAIN_ARGS="--init models/ckey-small.safetensors --size 1024 --batch 4 --lr 1e-4 --steps 1250 --warmup 100 --seed 9 --recipe 2 --fg-weight 3 --data 2"
echo "train: $TRAIN_ARGS"
(PYTHONUNBUFFERED=1 python3 tools/train/train.py --state /tmp/state --minutes 8 $TRAIN_ARGS > $OUT/train.log 2>&1
 python3 tools/train/train.py --state /tmp/state --export $OUT/next.safetensors --device cpu >> $OUT/train.log 2>&1) &
train_pid=$!
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/cmake.log 2>&1
cmake --build build -j16 --target ckey > /tmp/build.log 2>&1 || grep error /tmp/build.log | head
el built
B=build/ckey
pp=""
for sd in 7001:qe 9931:qh1 9932:qh2 9941:qh3; do $B plates --out /tmp/${sd#*:} --size 2048x2048 --count 16 --seed ${sd%%:*} > /dev/null 2>&1 & pp="$pp $!"; done
wait $pp; el plates
q() { $B quality --plates $1 --device cuda --precision fp16 --md /tmp/ev/$2.md ${@:3} > /tmp/ev/$2.log 2>&1 || tail -2 /tmp/ev/$2.log
      echo "== $2"; grep -E "^\| (full|tile|chroma)" /tmp/ev/$2.md; }
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
q /tmp/qh3 h3_v4 --checkpoint builtin --configs full2048,chroma
q /tmp/qh1 h1_chroma --configs chroma
q /tmp/qh2 h2_chroma --configs chroma
q /tmp/qe dev_chroma --configs chroma
wait $train_pid; el trained; grep -E '^\{"step"' $OUT/train.log | tail -3 | cut -c1-220; tail -2 $OUT/train.log
q /tmp/qe dev_next --checkpoint $OUT/next.safetensors --configs full2048
q /tmp/qh1 h1_next --checkpoint $OUT/next.safetensors --configs full2048
q /tmp/qh2 h2_next --checkpoint $OUT/next.safetensors --configs full2048
q /tmp/qh3 h3_next --checkpoint $OUT/next.safetensors --configs full2048
for s in dev h1 h2; do python3 /tmp/ratios.py /tmp/ev/${s}_chroma.md /tmp/ev/${s}_next.md; done | tee /tmp/ev/ratios.txt
python3 /tmp/ratios.py /tmp/ev/h3_v4.md /tmp/ev/h3_v4.md /tmp/ev/h3_next.md | tee -a /tmp/ev/ratios.txt
(cd /tmp/ev && tar -czf $OUT/evals.tgz *.md ratios.txt)
el held
for a in "--size 2048" "--size 1024" "--size 512" "--size 512 --batch 8" "--size 2048"; do
  timeout 30 $B bench $a --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null; done > $OUT/bench.jsonl
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l); print('%5d %d %8.3f %7.3f %7.1f'%(d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
el bench
if [ $(left) -gt 75 ]; then
  PYTHONUNBUFFERED=1 timeout $(( $(left) - 15 )) python3 carry/torch_greenformer.py 2048 compile-half:default 2>&1 | grep -v Warning > $OUT/peer.log
  cut -c1-300 $OUT/peer.log | tail -4
  timeout 20 $B bench --size 2048 --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null >> $OUT/bench.jsonl; tail -1 $OUT/bench.jsonl | cut -c1-400
fi
el finished
