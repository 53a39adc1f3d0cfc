#!/usr/bin/env bash
# GPU machine: one invocation of the built-in keyer's training (tools/train/train.py), then a quick check of
# the result with `ckey quality` beside the shipped model. Usage (repository root, on the GPU machine):
#   TRAIN_ARGS="--init models/ckey-small.safetensors --steps 2600 --lr 4e-4 --seed 2 --recipe 2" \
#   TRAIN_MIN=7.5 scripts/device/train_small.sh
# The state resumes from carry/train_state when it holds one (the files a previous call brought back) and is
# written to $OUT/state; the exported fp16 model goes to $OUT/ckey-small-next.safetensors. ckey is built on
# the CPUs while the GPU trains. EVAL_SEED (default 7001, a development seed) picks the 16 2048² plates of the
# check (EVAL_COUNT, EVAL_SIZE); EVAL=0 skips it.
set -uo pipefail
OUT=${OUT:-/tmp/ckey-out}
mkdir -p "$OUT/state"
exec > >(tee -a "$OUT/train.log") 2>&1
start=$(date +%s)
echo "commit $(cat carry/BUILD_COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)  date $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader

if [ -f carry/train_state/meta.json ]; then
    cp carry/train_state/model.pt carry/train_state/adam.pt carry/train_state/meta.json "$OUT/state/"
    echo "resuming from carry/train_state"
fi

build_pid=""
if [ "${EVAL:-1}" != 0 ]; then
    blas="" exr=""
    if [ -d carry/deps ]; then
        blas="-DCK_BLAS_ROOT=$PWD/carry/deps" exr="-DCK_EXR_ROOT=$PWD/carry/deps"
        export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
    fi
    gen=""
    command -v ninja > /dev/null && gen="-G Ninja"
    (cmake -S . -B build $gen -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real $blas $exr > /tmp/cmake.log 2>&1 &&
        nice cmake --build build -j12 --target ckey > /tmp/build.log 2>&1; echo "build rc=$? ($(( $(date +%s) - start )) s)") &
    build_pid=$!
fi

PYTHONUNBUFFERED=1 python3 tools/train/train.py --state "$OUT/state" --minutes "${TRAIN_MIN:-7.5}" ${TRAIN_ARGS:-}
echo "training rc=$? ($(( $(date +%s) - start )) s)"
python3 tools/train/train.py --state "$OUT/state" --export "$OUT/ckey-small-next.safetensors" --device cpu

if [ -n "$build_pid" ]; then
    wait "$build_pid"
    B=build/ckey
    [ -x $B ] || { grep -E "error" /tmp/build.log | head -20; exit 1; }
    seed=${EVAL_SEED:-7001}
    $B plates --out /tmp/qe --size "${EVAL_SIZE:-2048x2048}" --count "${EVAL_COUNT:-16}" --seed "$seed" > /dev/null 2>&1
    echo "plates seed $seed ($(( $(date +%s) - start )) s)"
    $B quality --checkpoint "$OUT/ckey-small-next.safetensors" --plates /tmp/qe --device cuda --precision fp16 \
        --configs "${EVAL_CONFIGS:-full2048,tile1024/64,chroma}" --md "$OUT/eval_next.md" > /dev/null 2> /tmp/eval_next.log
    echo "== new model (rc=$?)"; cat "$OUT/eval_next.md"
    $B quality --checkpoint builtin --plates /tmp/qe --device cuda --precision fp16 --configs full2048 \
        --md "$OUT/eval_shipped.md" > /dev/null 2> /tmp/eval_shipped.log
    echo "== shipped model (rc=$?)"; cat "$OUT/eval_shipped.md"
fi
echo "done in $(( $(date +%s) - start )) s"
