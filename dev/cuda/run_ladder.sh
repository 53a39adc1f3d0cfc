#!/usr/bin/env bash
# GPU machine: the attention ladder in one call. Validates and times every variant (and every fa3
# configuration) at the model's 2048 shapes and the ragged ones, fp16 and bf16 at HD 64, then counts the
# instructions that matter in each fa3 kernel's SASS (HGMMA, MUFU.EX2, TMA loads, register moves, local memory).
# Usage (repository root): dev/cuda/run_ladder.sh [extra attn_bench args]; needs dev/cuda/attn_bench (make -C dev/cuda attn_bench).
set -uo pipefail
OUT=${OUT:-/tmp/ckey-out}
mkdir -p "$OUT"
B=dev/cuda/attn_bench
[ -x $B ] || make -C dev/cuda attn_bench > "$OUT/attn_build.log" 2>&1 || { tail -20 "$OUT/attn_build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
if command -v cuobjdump > /dev/null; then
    cuobjdump -sass $B > "$OUT/attn_sass.txt" 2>&1
    awk '/Function :/ { f = $3 } f ~ /fa3/ && /HGMMA|MUFU\.EX2|UTMALDG|USETMAXREG|LDL|STL|SYNCS/ {
            match($0, /(HGMMA|MUFU\.EX2|UTMALDG|USETMAXREG|LDL|STL|SYNCS)[.A-Z0-9_]*/); c[f " " substr($0, RSTART, RLENGTH)]++ }
         END { for (k in c) print c[k], k }' "$OUT/attn_sass.txt" | sed 's/_ZN[0-9A-Za-z_]*attention_fa3_kernel/fa3/' | sort -k2 > "$OUT/attn_sass_counts.txt"
    echo "SASS counts (fa3 kernels): $(wc -l < "$OUT/attn_sass_counts.txt") lines in attn_sass_counts.txt"
    grep "I6__halfLi2ELi2ELi0ELi1E" "$OUT/attn_sass_counts.txt" | head -20
fi
OUT=$OUT timeout 300 $B --dtype fp16 --hd 64 --size 2048 "$@" 2>&1 | tee "$OUT/attn_fp16_2048.log" | grep -E "global|ragged|capture|checks"
cp "$OUT/attention_bench.csv" "$OUT/attention_bench_fp16_2048.csv" 2>/dev/null
OUT=$OUT timeout 200 $B --dtype bf16 --hd 64 --size 2048 --filter global --variant fa3 --no-capture "$@" 2>&1 | tee "$OUT/attn_bf16_2048.log" | grep -E "global|checks"
OUT=$OUT timeout 200 $B --dtype fp16 --hd 64 --size 512 --variant fa3 --no-capture "$@" 2>&1 | tee "$OUT/attn_fp16_512.log" | grep -E "global|ragged|checks"
