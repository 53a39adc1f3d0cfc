#!/usr/bin/env bash
# issue 12: a second 1024 fine-tune cycle from run Q's export (step 1500), then scored on the development plates.
set -u
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
mkdir -p $OUT/state
B=build/ckey; ls -la $B || { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/cmake.log 2>&1; cmake --build build -j16 --target ckey > /tmp/build.log 2>&1; }
$B plates --out /tmp/qe --size 2048x2048 --count 16 --seed 7001 > /dev/null 2>&1 &
PYTHONUNBUFFERED=1 python3 tools/train/train.py --state $OUT/state --minutes ${TRAIN_MIN:-7.2} $TRAIN_ARGS > $OUT/train.log 2>&1
python3 tools/train/train.py --state $OUT/state --export $OUT/ckey-small-next.safetensors --device cpu >> $OUT/train.log 2>&1
el trained; grep -E '^\{"step"' $OUT/train.log | tail -4 | cut -c1-200; tail -2 $OUT/train.log
wait
$B quality --checkpoint $OUT/ckey-small-next.safetensors --plates /tmp/qe --device cuda --precision fp16 --configs full2048 --md $OUT/eval.md > /dev/null 2>&1
cat $OUT/eval.md | grep -E "^\| full|checkpoint"
el finished
