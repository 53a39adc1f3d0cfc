#!/usr/bin/env bash
# GPU machine: the linears as cuDNN graphs (CK_LINEAR_CUDNN=1, src/ops/cuda/linear_cudnn.c) in one call, most
# telling first, each step bounded by what is left of CALL_LIMIT (seconds, default 585):
#   1. builds ckey, test_cuda_ops and dev/cuda/matmul_probe (OpenBLAS and OpenEXR from carry/deps.tar.xz);
#   2. the probe: each stage's fc1 (+ exact GELU) and the first stage's qkv at 2048 as cuDNN graphs, with and
#      without the LayerNorm on the operand, against cuBLASLt alone and with the GELU pass (matmul_probe.log);
#   3. ckey bench at 2048: default, CK_LINEAR_CUDNN=1 (fc1), with CK_LN_LINEAR=1 (the LayerNorm-linears too),
#      default again, with the plan log (which problems cuDNN took);
#   4. test_cuda_ops (its cuDNN cases check that the graphs ran, against the CPU);
#   5. 512 x 8 and 1024, default against both switches;
#   6. the fp16 precision gate at 2048 with both switches (tools/reference/accuracy_gate.py).
# Usage (repository root, on the GPU machine): scripts/device/linear_cudnn_check.sh   (logs: $OUT/logs.tgz)
set -u
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }; left() { echo $(( ${CALL_LIMIT:-585} - ($(date +%s) - t0) )); }
OUT=${OUT:-/tmp/ckey-out}; mkdir -p "$OUT"
. scripts/device/carry_deps.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "commit $(cat carry/BUILD_COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null) date $(date -u +%FT%TZ)"
(make -C dev/cuda matmul_probe > /tmp/mp_build.log 2>&1 || tail -5 /tmp/mp_build.log) &
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real $CK_DEPS_OPTS > /tmp/cmake.log 2>&1
cmake --build build -j16 --target ckey test_cuda_ops > /tmp/build.log 2>&1 || grep error /tmp/build.log | head
wait; el built
timeout $(( $(left) > 400 ? 100 : 50 )) dev/cuda/matmul_probe --max-cfg 3 --graphs glq 0 1 2 3 4 > "$OUT/matmul_probe.log" 2>&1
echo "probe rc=$?"; grep -E "^==|ms .*TFLOP|NOT fin|FAILED|heuristics" "$OUT/matmul_probe.log" | cut -c1-150 | head -60
el probe
B=build/ckey
bench() { # env assignments; S, BATCH from the environment
    timeout 60 env "$@" $B bench --size ${S:-2048} ${BATCH:+--batch $BATCH} --device cuda --precision fp16 --runs 10 \
        --warmup 3 2> /tmp/bench_err.log
    grep -E "linear cuDNN" /tmp/bench_err.log | sort | uniq -c | cut -c1-200 | head -12
}
for v in "X=0" "CK_LINEAR_CUDNN=1" "CK_LINEAR_CUDNN=1 CK_LN_LINEAR=1" "X=0"; do echo "== 2048 $v"; bench $v; done 2>&1 |
    tee "$OUT/bench2048.log" | cut -c1-400
el bench
(cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp timeout 200 ./tests/test_cuda_ops > "$OUT/test_cuda_ops.log" 2>&1
    echo "test_cuda_ops rc=$?")
grep -E "NOT OK|cuDNN graphs|FAIL" "$OUT/test_cuda_ops.log" | head -20; tail -2 "$OUT/test_cuda_ops.log"
el ops
if [ "$(left)" -gt 60 ]; then
    for v in "X=0" "CK_LINEAR_CUDNN=1 CK_LN_LINEAR=1" "X=0"; do echo "== 512x8 $v"; S=512 BATCH=8 bench $v; done 2>&1 |
        tee "$OUT/bench512x8.log" | cut -c1-300
    for v in "X=0" "CK_LINEAR_CUDNN=1 CK_LN_LINEAR=1"; do echo "== 1024 $v"; S=1024 bench $v; done 2>&1 |
        tee -a "$OUT/bench512x8.log" | cut -c1-300
fi
el more bench
if [ "$(left)" -gt 100 ]; then
    env CK_LINEAR_CUDNN=1 CK_LN_LINEAR=1 PYTHONUNBUFFERED=1 timeout $(( $(left) - 10 )) python3 tools/reference/accuracy_gate.py \
        --ckey $B --sizes 2048 --precisions fp16 --out /tmp/acc_cudnn > "$OUT/accuracy_cudnn.log" 2>&1
    echo "accuracy (CK_LINEAR_CUDNN=1 CK_LN_LINEAR=1) rc=$?"; grep -A10 "## Gate" "$OUT/accuracy_cudnn.log"
fi
el finished
(cd "$OUT" && tar -czf logs.tgz --remove-files *.log)
