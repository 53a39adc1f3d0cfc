#!/usr/bin/env bash
# ctest crashers_replay: every file of the crashers corpus, and the large crashers make_crashers writes at
# test time, through every harness's replay driver (fuzz/replay_main.c: no crash, a 2 GB address-space
# limit, no allocation failure).
# Usage: replay_all.sh BIN_DIR CORPUS_DIR LARGE_DIR HARNESS...
set -uo pipefail
bin=$1 corpus=$2 large=$3
shift 3
# in a sanitizer build (CK_SANITIZE) the 2 GB bound is ASan's (replay_main.c), and undefined behaviour fails
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=2048:allocator_may_return_null=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:print_stacktrace=1"
rm -rf "$large" && mkdir -p "$large"
"$bin/make_crashers" --large "$large" > /dev/null || { echo "make_crashers --large failed"; exit 1; }
failed=0
for h in "$@"; do
    log="$bin/replay_$h.log"
    if "$bin/replay_$h" "$corpus" "$large" > "$log" 2>&1; then
        echo "ok     replay_$h: $(tail -n 1 "$log")"
    else
        rc=$?
        echo "FAIL   replay_$h (exit $rc); the failed inputs, and the last lines of $log:"
        grep '^FAIL ' "$log"
        tail -n 4 "$log"
        failed=1
    fi
done
exit $failed
