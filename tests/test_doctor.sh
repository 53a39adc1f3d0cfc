#!/usr/bin/env bash
# `ckey doctor` on this machine: --json exits 0 with a recommendation (the CPU when no CUDA device is
# visible, else CUDA); a stored sweep of this device whose full-frame 2048 row does not fit forces tiles
# (the seed rule); `ckey key --preset auto` keys with it. HOME points at a scratch folder so no local
# checkpoint or stored sweep changes the answer.
set -u
fail=0
check() { if eval "$1"; then echo "OK     $2"; else echo "NOT OK $2"; fail=1; fi; }

tmp="${CK_TMP:-/tmp}/doctor"
rm -rf "$tmp" && mkdir -p "$tmp/home"
export HOME="$tmp/home"
unset CKEY_CHECKPOINT

json=$("$CK_BIN" doctor --json); rc=$?
echo "$json"
check "[ $rc -eq 0 ]" "ckey doctor --json exits 0 (got $rc)"
check "echo \"\$json\" | grep -q '\"recommendation\": {\"device\": '" "a recommendation"
if echo "$json" | grep -q '"cuda_devices": \[\]'; then
    check "echo \"\$json\" | grep -q '\"recommendation\": {\"device\": \"cpu\", \"feasible\": true, \"precision\": \"fp32\"'" \
          "no CUDA device: the CPU, fp32"
else
    check "echo \"\$json\" | grep -q '\"recommendation\": {\"device\": \"cuda\"'" "a CUDA device: CUDA"
fi
check "echo \"\$json\" | grep -q '\"found\": null'" "no checkpoint in the scratch HOME"

"$CK_BIN" doctor > "$tmp/human.txt"; rc=$?
check "[ $rc -eq 0 ] && grep -q '^Recommendation' '$tmp/human.txt'" "human-readable report"

# a stored CPU sweep in which full frame at 2048 needs more memory than any machine has
if echo "$json" | grep -q '"cuda_devices": \[\]'; then
    model=$(echo "$json" | sed -n 's/.*"cpu": {"model": "\([^"]*\)".*/\1/p')
    cat > "$tmp/bench.json" <<JSON
{"header": {"sweep": "ablation", "date": "x", "device": "cpu", "device_name": "$model", "commit": "x", "checkpoint": "random:base_plus", "random_weights": 1, "warmup": 1, "runs": 2, "half": "n/a", "threads": 0, "peak": "rss", "toggles": {}, "dropped": {}, "median_rule": "", "p95_rule": ""},
"rows": [
{"res": 2048, "config": "baseline", "mode": "full", "tile": 0, "overlap": 0, "tiles": 0, "toggles": {"slim": 0}, "precision": "float32", "status": "ok", "first_ms": 1, "median_ms": 100.0, "median_upper_ms": 1, "min_ms": 1, "p95_ms": 1, "peak_mib": 999999999.0, "activation_mib": 1, "weights_mib": 1, "speed_vs_baseline": 1, "mem_vs_baseline": 1},
{"res": 2048, "config": "tiled 768/64 (9 tiles)", "mode": "tiled", "tile": 768, "overlap": 64, "tiles": 9, "toggles": {}, "precision": "float32", "status": "ok", "first_ms": 1, "median_ms": 200.0, "median_upper_ms": 1, "min_ms": 1, "p95_ms": 1, "peak_mib": 900.0, "activation_mib": 1, "weights_mib": 1, "speed_vs_baseline": 1, "mem_vs_baseline": 1}
]}
JSON
    tj=$("$CK_BIN" doctor --json --bench-json "$tmp/bench.json"); rc=$?
    echo "$tj" | tail -2
    check "[ $rc -eq 0 ] && echo \"\$tj\" | grep -q '\"bench_json_usable\": true'" "the stored sweep of this CPU is used"
    check "echo \"\$tj\" | grep -q '\"mode\": \"tiled\", \"size\": 2048, \"tile\": 768, \"overlap\": 64'" \
          "full frame does not fit: tiled 768/64"
    check "echo \"\$tj\" | grep -q '\"peak_mib\": 900, \"source\": \"bench\"'" "measured working set reported"
fi

# the built-in keyer: found in the library, tilings in its measured quality order (largest tile first)
bt=$("$CK_BIN" doctor --checkpoint builtin 2>&1); rc=$?
check "[ $rc -eq 0 ] && echo \"\$bt\" | grep -q 'built-in small keyer (in the library)'" "doctor: builtin is found and loads"
order=$(echo "$bt" | grep -o 'tiled [0-9]*/64' | head -3 | tr '\n' ' ')
check "[ \"$order\" = 'tiled 1024/64 tiled 768/64 tiled 512/64 ' ]" "doctor: builtin tilings 1024, 768, 512 (got $order)"
order=$("$CK_BIN" doctor --checkpoint random:tiny 2>&1 | grep -o 'tiled [0-9]*/64' | head -3 | tr '\n' ' ')
check "[ \"$order\" = 'tiled 768/64 tiled 512/64 tiled 1024/64 ' ]" "doctor: other weights keep the seed's order (got $order)"

# --preset auto in ckey key (the tiny model; --size after the preset overrides its 2048)
fx="$CK_FIXTURES/tiny/s128"
"$CK_BIN" key --preset auto --size 64 --checkpoint random:tiny --image "$fx/frame_rgb.png" \
    --hint "$fx/frame_hint.png" --out "$tmp/out" --quiet 2> "$tmp/key.log"; rc=$?
if grep -q "EXR support not built" "$tmp/key.log"; then
    echo "SKIP   ckey key --preset auto (this build cannot write the EXR passes)"
else
    check "[ $rc -eq 0 ] && [ -f '$tmp/out/Matte/frame_rgb.exr' ]" "ckey key --preset auto keys a frame"
fi
"$CK_BIN" key --preset nope --image x --out "$tmp/o2" 2> /dev/null; rc=$?
check "[ $rc -eq 2 ]" "unknown preset: usage error (got $rc)"

[ $fail -eq 0 ] && echo PASS || echo FAIL
exit $fail
