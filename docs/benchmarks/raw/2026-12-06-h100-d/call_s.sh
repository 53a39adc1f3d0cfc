#!/usr/bin/env bash
# issue 12: finish run R's 1024 fine-tune cycle (steps 1580 -> 1900) while ckey builds, export it, score it on the
# development plates (seed 7001), then on fresh held-out plates beside the shipped model: 16 at 2048² (seed 9511,
# full frame at 2048 and the chroma baseline) and 8 at 3840×2160 (seed 9512).
set -u
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
mkdir -p $OUT/state && cp carry/state/* $OUT/state/
(PYTHONUNBUFFERED=1 python3 tools/train/train.py --state $OUT/state --minutes 3 > $OUT/train.log 2>&1
 python3 tools/train/train.py --state $OUT/state --export $OUT/e1900.safetensors --device cpu >> $OUT/train.log 2>&1) &
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/cmake.log 2>&1
cmake --build build -j16 --target ckey > /tmp/build.log 2>&1 || grep error /tmp/build.log | head
el built
B=build/ckey
$B plates --out /tmp/qe --size 2048x2048 --count 16 --seed 7001 > /dev/null 2>&1
$B plates --out /tmp/h2k --size 2048x2048 --count 16 --seed 9511 > /dev/null 2>&1
$B plates --out /tmp/h4k --size 3840x2160 --count 8 --seed 9512 > /dev/null 2>&1
el plates
wait; el trained; grep -E '^\{"step"' $OUT/train.log | tail -2 | cut -c1-200; tail -2 $OUT/train.log
q() { $B quality --plates $1 --device cuda --precision fp16 --md /tmp/$2.md ${@:3} > /dev/null 2>&1; echo "== $2"; grep -E "^\| (full|chroma)|checkpoint|edge band" /tmp/$2.md; }
q /tmp/qe dev_e1900 --checkpoint $OUT/e1900.safetensors --configs full2048
q /tmp/h2k h2k_e1900 --checkpoint $OUT/e1900.safetensors --configs full2048,chroma
q /tmp/h2k h2k_v2 --checkpoint builtin --configs full2048
q /tmp/h4k h4k_e1900 --checkpoint $OUT/e1900.safetensors --configs full2048,chroma
q /tmp/h4k h4k_v2 --checkpoint builtin --configs full2048
el evals
tar -czf $OUT/evals.tgz -C /tmp dev_e1900.md h2k_e1900.md h2k_v2.md h4k_e1900.md h4k_v2.md
el finished
