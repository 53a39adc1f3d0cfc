#!/usr/bin/env bash
# The Open Job Description template farm/openjd/ckey-shot.yaml (the job format of AWS Deadline Cloud), run
# locally by openjd-cli (skipped with exit 77 when `openjd` is not installed): `openjd check` accepts it;
# `openjd run --step Key` over frame numbers 1001-1006 in chunks of 2 runs 3 chunk tasks that write every
# frame exactly once (their own events), byte-identical to a single `ckey key` run; `--step Assemble` writes
# a manifest listing the 6 frames with their frame numbers and SHA-256s (checked with Python's hashlib) and
# a ProRes 4444 of 6 frames (ffprobe) equal to the single run's.
set -u
fail=0
check() { if eval "$1"; then echo "OK     $2"; else echo "NOT OK $2"; fail=1; fi; }
repo=$(cd "$(dirname "$0")/.." && pwd)
template="$repo/farm/openjd/ckey-shot.yaml"
if ! command -v openjd > /dev/null; then
    echo "SKIP: openjd-cli is not installed (pip install openjd-cli): the OpenJD template was not run"
    exit 77
fi
tmp="${CK_TMP:-/tmp}/farm_openjd"
rm -rf "$tmp" && mkdir -p "$tmp/shot/Plate" "$tmp/shot/Hint"
"$CK_BIN" plates --out "$tmp/plates" --format png --count 6 --size 64x64 > /dev/null 2>&1 ||
    { echo "SKIP: ckey plates cannot write PNG plates in this build"; exit 77; }
for i in 0 1 2 3 4 5; do # frame numbers as a farm's plates have them
    cp "$tmp/plates/Plate/000$i.png" "$tmp/shot/Plate/plate.$((1001 + i)).png"
    cp "$tmp/plates/AlphaHint/000$i.png" "$tmp/shot/Hint/plate.$((1001 + i)).png"
done
kopts="--checkpoint builtin --threads 1"
"$CK_BIN" key --image "$tmp/shot/Plate" --hint "$tmp/shot/Hint" --size 64 --device cpu $kopts --video-out prores \
    --out "$tmp/ref" --quiet 2> "$tmp/ref.err" ||
    { echo "SKIP: this build cannot write the passes and videos ($(head -1 "$tmp/ref.err"))"; exit 77; }

timeout 60 openjd check "$template" > "$tmp/check.out" 2>&1; rc=$?
check "[ $rc -eq 0 ]" "openjd check: $(tail -1 "$tmp/check.out")"
out="$tmp/out"
params=(-p "Input=$tmp/shot/Plate" -p "Hint=$tmp/shot/Hint" -p "Output=$out" -p Frames=1001-1006 -p ChunkSize=2
        -p Size=64 -p Device=cpu -p "KeyOptions=$kopts" -p VideoOut=prores -p "CkeyCommand=$CK_BIN")
timeout 180 openjd run "$template" --step Key "${params[@]}" > "$tmp/key.out" 2>&1; rc=$?
check "[ $rc -eq 0 ] && grep -q 'Chunks run: 3' '$tmp/key.out'" "openjd run --step Key: exit $rc, $(grep 'Chunks run' "$tmp/key.out")"
chunks=$(cat "$out"/.farm/tasks/*.ndjson 2> /dev/null | grep '"event": "task"' | sed 's/.*"frames": "\([^"]*\)".*/\1/' | sort | tr '\n' ' ')
check "[ '$chunks' = '1001-1002 1003-1004 1005-1006 ' ]" "contiguous chunks of 2 frame numbers ($chunks)"
written=$(cat "$out"/.farm/tasks/*.ndjson 2> /dev/null | grep '"event": "frame_written"' | sed 's/.*"stem": "\([^"]*\)".*/\1/' | sort | tr '\n' ' ')
check "[ '$written' = 'plate.1001 plate.1002 plate.1003 plate.1004 plate.1005 plate.1006 ' ]" "every frame written exactly once ($written)"
same=1
for d in Matte FG Processed Comp; do diff -r "$tmp/ref/$d" "$out/$d" > /dev/null || same=0; done
check "[ $same -eq 1 ]" "passes byte-identical to one ckey key process"

timeout 180 openjd run "$template" --step Assemble "${params[@]}" > "$tmp/asm.out" 2>&1; rc=$?
check "[ $rc -eq 0 ]" "openjd run --step Assemble: exit $rc"
msg=$(python3 - "$out" << 'EOF' 2>&1
import hashlib, json, os, sys
out = sys.argv[1]
m = json.load(open(os.path.join(out, "Plate_manifest.json")))
assert [f["number"] for f in m["frames"]] == list(range(1001, 1007)), m["frames"]
for f in m["frames"]:
    assert len(f["files"]) == 4 and f["node"], f
    for x in f["files"]:
        assert hashlib.sha256(open(os.path.join(out, x["path"]), "rb").read()).hexdigest() == x["sha256"], x
assert [t["exit_code"] for t in m["tasks"]] == [0, 0, 0], m["tasks"]
print("frames 1001-1006, 24 files hashed as listed, 3 tasks")
EOF
); rc=$?
check "[ $rc -eq 0 ]" "manifest: $msg"
if command -v ffprobe > /dev/null; then
    n=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$out/Plate_prores4444.mov")
    check "[ '$n' = 6 ]" "ProRes 4444: $n frames (ffprobe)"
else
    echo "SKIP: ffprobe not installed: the video's frame count is not checked"
fi
check "cmp -s '$out/Plate_prores4444.mov' '$tmp/ref/Plate_prores4444.mov'" "ProRes 4444 equals the single run's, byte for byte"
exit $fail
