#!/usr/bin/env bash
# A short fuzzing run of every harness (CI, scripts/bootstrap.sh test): each fuzz_* of BUILD_DIR (a CK_FUZZ
# build) runs for SECONDS (default 10) seeded with tests/crashers/ and the valid image and checkpoint
# fixtures, two at a time, under a 2 GB RSS limit.
# New inputs go to BUILD_DIR/fuzz-corpus/<harness>/ (the seed folder is only read); a crash, leak, timeout
# or out-of-memory input is saved as BUILD_DIR/fuzz-artifacts/<harness>-* and fails the run: replay it with
# the normal build's replay_<harness>, and add it to tests/crashers/ once fixed.
# Usage: fuzz/smoke.sh BUILD_DIR [SECONDS]
set -uo pipefail
build=$1 secs=${2:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
corpus=$build/fuzz-corpus artifacts=$build/fuzz-artifacts
mkdir -p "$corpus" "$artifacts"
# images are kept small while fuzzing (each input is decoded whole): 4 Mpx
export CKEY_MAX_PIXELS=${CKEY_MAX_PIXELS:-4000000} OMP_NUM_THREADS=1
run_one() {
    local bin=$1 name
    name=$(basename "$bin")
    mkdir -p "$corpus/$name"
    if "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
        -artifact_prefix="$artifacts/$name-" "$corpus/$name" "$root/tests/crashers" "$root/tests/fixtures/images" \
        "$root/tests/fixtures/ckpt" > "$build/$name.log" 2>&1; then
        local runs
        runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$build/$name.log" | awk '{print $2}')
        echo "ok     $name: $runs inputs"
    else
        echo "FAIL   $name (log $build/$name.log):"
        grep -E 'ERROR|SUMMARY|Test unit written' "$build/$name.log" | head -n 5
        return 1
    fi
}
export -f run_one
export corpus artifacts build secs root
bins=$(ls "$build"/fuzz/fuzz_* 2>/dev/null | grep -v '\.log$')
[ -n "$bins" ] || { echo "no fuzz_* executables under $build/fuzz (configure with -DCK_FUZZ=ON)"; exit 1; }
printf '%s\n' $bins | xargs -P 2 -I{} bash -c 'run_one {}'
