#!/usr/bin/env bash
# Render farms, part 1 (no scheduler needed): which frames a task keys. --shard I/N is 0-based (N/N is an
# error that says so and names --shard auto); --shard auto under Slurm array tasks numbered from 1 and
# with a step, and under a Kubernetes Indexed Job (--shard-count / CKEY_SHARD_COUNT), covers a 6-frame shot
# exactly once, byte-identical to one process; a Slurm list array, a missing count and an index past the
# count are errors; --frame-numbers selects by the number in the file names.
# Part 2, on a real two-node Slurm cluster on 127.0.0.1 (scripts/slurm-local.sh; skipped with exit 77 when
# Slurm is not installed): `ckey farm slurm --chunk 2 --wait` writes every frame exactly once (the tasks'
# own events), spread over both nodes (Slurm's own NodeList), byte-identical to a single `ckey key` run,
# with a manifest of all 6 frames whose SHA-256s match the files (Python's hashlib) and a ProRes 4444 of 6
# frames (ffprobe) equal to the single run's; after two frames' passes are deleted, resubmitting keys just
# those two (an array of their 2 chunks; every other file's mtime unchanged); a corrupt frame makes the
# task of its chunk fail and `--wait` return non-zero, with no manifest; a plain `sbatch --array=1-3` of
# `ckey key --shard auto` covers the shot.
set -u
fail=0
check() { if eval "$1"; then echo "OK     $2"; else echo "NOT OK $2"; fail=1; fi; }
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_MAX SLURM_ARRAY_TASK_COUNT SLURM_ARRAY_TASK_STEP \
      SLURM_ARRAY_JOB_ID SLURM_JOB_ID JOB_COMPLETION_INDEX CKEY_SHARD_COUNT SLURM_CONF
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp="${CK_TMP:-/tmp}/farm_slurm"
rm -rf "$tmp" && mkdir -p "$tmp"
"$CK_BIN" plates --out "$tmp/plates" --format png --count 6 --size 64x64 > /dev/null 2>&1 ||
    { echo "SKIP: ckey plates cannot write PNG plates in this build"; exit 77; }
plate="$tmp/plates/Plate" hint="$tmp/plates/AlphaHint"
kopts=(--checkpoint builtin --size 64 --device cpu --threads 1)
key() { "$CK_BIN" key --image "$plate" --hint "$hint" "${kopts[@]}" "$@"; }
key --out "$tmp/ref" --video-out prores --quiet 2> "$tmp/ref.err" ||
    { echo "SKIP: this build cannot write the passes and videos ($(head -1 "$tmp/ref.err"))"; exit 77; }
same_as_ref() { for d in Matte FG Processed Comp; do diff -r "$tmp/ref/$d" "$1/$d" > /dev/null || return 1; done; }
# the positions the `started` events of the given --json outputs cover, sorted (duplicates kept)
covered() { cat "$@" | grep '"event": "started"' | sed 's/.*"frames": \([0-9]*\), "first": \([0-9]*\).*/\2 \1/' |
            while read -r f n; do for ((i = f; i < f + n; i++)); do echo $i; done; done | sort -n | tr '\n' ' '; }
all6="0 1 2 3 4 5 "

# ---- part 1: shards and frame numbers, scheduler environments set by hand ----
key --out "$tmp/x" --shard 3/3 2> "$tmp/s33.err"; rc=$?
check "[ $rc -eq 2 ] && grep -q '0-based' '$tmp/s33.err' && grep -q -- '--shard auto' '$tmp/s33.err'" \
      "--shard 3/3: usage error saying shards are 0-based and naming --shard auto (exit $rc)"
key --out "$tmp/x" --shard auto 2> "$tmp/noenv.err"; rc=$?
check "[ $rc -eq 2 ] && grep -q SLURM_ARRAY_TASK_ID '$tmp/noenv.err'" "--shard auto outside a scheduler: usage error (exit $rc)"
for t in 1 2 3; do
    SLURM_ARRAY_TASK_ID=$t SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=3 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_STEP=1 \
        key --out "$tmp/slurm1" --shard auto --json > "$tmp/slurm1_$t.json" 2> /dev/null || fail=1
done
check "[ \"\$(covered '$tmp'/slurm1_*.json)\" = '$all6' ] && same_as_ref '$tmp/slurm1'" \
      "Slurm array 1-3 (1-based): each frame once ($(covered "$tmp"/slurm1_*.json)), same bytes as one process"
for t in 10 14 18 22 26; do
    SLURM_ARRAY_TASK_ID=$t SLURM_ARRAY_TASK_MIN=10 SLURM_ARRAY_TASK_MAX=26 SLURM_ARRAY_TASK_COUNT=5 SLURM_ARRAY_TASK_STEP=4 \
        key --out "$tmp/slurm4" --shard auto --json > "$tmp/slurm4_$t.json" 2> /dev/null || fail=1
done
check "[ \"\$(covered '$tmp'/slurm4_*.json)\" = '$all6' ] && same_as_ref '$tmp/slurm4'" \
      "Slurm array 10-26:4: each frame once ($(covered "$tmp"/slurm4_*.json)), same bytes"
SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=5 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_STEP=1 \
    key --out "$tmp/x" --shard auto 2> "$tmp/list.err"; rc=$?
check "[ $rc -eq 2 ] && grep -q 'not a range' '$tmp/list.err'" "Slurm list array (--array=1,2,5): refused (exit $rc)"
for t in 0 1 2 3; do
    JOB_COMPLETION_INDEX=$t key --out "$tmp/k8s" --shard auto --shard-count 4 --json > "$tmp/k8s_$t.json" 2> /dev/null || fail=1
done
check "[ \"\$(covered '$tmp'/k8s_*.json)\" = '$all6' ] && same_as_ref '$tmp/k8s'" \
      "Kubernetes Indexed Job, 4 completions: each frame once ($(covered "$tmp"/k8s_*.json)), same bytes"
JOB_COMPLETION_INDEX=1 key --out "$tmp/x" --shard auto 2> "$tmp/k8s_nocount.err"; rc=$?
check "[ $rc -eq 2 ] && grep -q -- '--shard-count' '$tmp/k8s_nocount.err'" "JOB_COMPLETION_INDEX without a count: usage error (exit $rc)"
JOB_COMPLETION_INDEX=4 CKEY_SHARD_COUNT=4 key --out "$tmp/x" --shard auto 2> "$tmp/k8s_past.err"; rc=$?
check "[ $rc -eq 2 ] && grep -q 'outside 0-3' '$tmp/k8s_past.err'" "JOB_COMPLETION_INDEX past CKEY_SHARD_COUNT: usage error (exit $rc)"
mkdir -p "$tmp/num/Plate" "$tmp/num/Hint"
for i in 0 1 2 3 4 5; do
    ln -s "$plate/000$i.png" "$tmp/num/Plate/plate.$((1001 + i)).png"
    ln -s "$hint/000$i.png" "$tmp/num/Hint/plate.$((1001 + i)).png"
done
"$CK_BIN" key --image "$tmp/num/Plate" --hint "$tmp/num/Hint" "${kopts[@]}" --quiet --out "$tmp/num/out" --frame-numbers 1002-1004
rc=$?
check "[ $rc -eq 0 ] && [ \"\$(ls '$tmp/num/out/Matte' | tr '\n' ' ')\" = 'plate.1002.exr plate.1003.exr plate.1004.exr ' ] &&
       cmp -s '$tmp/num/out/Matte/plate.1002.exr' '$tmp/ref/Matte/0001.exr' && cmp -s '$tmp/num/out/FG/plate.1004.exr' '$tmp/ref/FG/0003.exr'" \
      "--frame-numbers 1002-1004 keys plate.1002-1004 (positions 1-3, same bytes)"
"$CK_BIN" key --image "$tmp/num/Plate" --hint "$tmp/num/Hint" "${kopts[@]}" --out "$tmp/x" --frame-numbers 1005-1009 2> "$tmp/fn.err"
rc=$?
check "[ $rc -eq 2 ] && grep -q 'numbered 1001-1006' '$tmp/fn.err'" "--frame-numbers past the shot: usage error naming its numbers (exit $rc)"

# ---- part 2: a localhost Slurm cluster ----
export PATH="$PATH:/usr/sbin:/sbin"
for t in sbatch scontrol slurmctld slurmd munged; do
    if ! command -v $t > /dev/null; then
        [ $fail -ne 0 ] && exit 1
        echo "SKIP: Slurm is not installed ($t missing; apt-get install slurm-wlm munge): the farm job was not run"
        exit 77
    fi
done
cluster="$tmp/cluster"
stop_cluster() { timeout 60 "$repo/scripts/slurm-local.sh" stop "$cluster"; }
trap stop_cluster EXIT
timeout 60 "$repo/scripts/slurm-local.sh" start "$cluster" 2 > "$tmp/cluster.out" 2>&1; rc=$?
if [ $rc -ne 0 ]; then
    cat "$tmp/cluster.out"
    if [ "$(id -u)" -ne 0 ] && [ $fail -eq 0 ]; then echo "SKIP: the local Slurm cluster did not start as a non-root user"; exit 77; fi
    echo "NOT OK the local Slurm cluster started (exit $rc)"
    exit 1
fi
export SLURM_CONF="$cluster/slurm.conf"
echo "OK     two-node Slurm cluster up: $(sinfo -h -N -o '%N/%t' | tr '\n' ' ')"
farm() { timeout 240 "$CK_BIN" farm slurm "$1" --hint "$2" --out "$3" --chunk 2 --wait --video-out prores "${kopts[@]}"; }
ptasks() { scontrol -o show job "$1" | grep -o ' ArrayTaskId=[0-9]*' | cut -d= -f2 | sort -n | tr '\n' ' '; }
written() { cat "$@" 2> /dev/null | grep '"event": "frame_written"' | sed 's/.*"stem": "\([^"]*\)".*/\1/' | sort | tr '\n' ' '; }

out="$tmp/farm"
job=$(farm "$plate" "$hint" "$out" 2> "$tmp/farm1.err"); rc=$?
check "[ $rc -eq 0 ] && [ -n '$job' ]" "ckey farm slurm --wait: exit $rc, array job ${job:-none} ($(tail -1 "$tmp/farm1.err"))"
check "[ \"\$(ptasks $job)\" = '0 1 2 ' ]" "3 array tasks of 2 frames ($(ptasks "$job"))"
check "[ \"\$(written '$out'/.farm/tasks/*_$job.ndjson)\" = '0000 0001 0002 0003 0004 0005 ' ]" \
      "every frame written exactly once ($(written "$out"/.farm/tasks/*_"$job".ndjson))"
nodes=$(scontrol -o show job "$job" | grep -o ' NodeList=[^ ]*' | cut -d= -f2 | sort -u | tr '\n' ' ')
check "[ '$nodes' = 'n1 n2 ' ]" "the tasks ran on both nodes (Slurm: $nodes)"
check "same_as_ref '$out'" "passes byte-identical to one ckey key process"
cat > "$tmp/manifest.py" << 'EOF'
import hashlib, json, os, sys
out, want_nodes = sys.argv[1], sys.argv[2].split()
m = json.load(open(os.path.join(out, "Plate_manifest.json")))
stems = [f["stem"] for f in m["frames"]]
assert stems == ["%04d" % i for i in range(6)], stems
for f in m["frames"]:
    assert len(f["files"]) == 4, f
    for x in f["files"]:
        data = open(os.path.join(out, x["path"]), "rb").read()
        assert hashlib.sha256(data).hexdigest() == x["sha256"] and len(data) == x["bytes"], x
    assert f["node"] in ("n1", "n2"), f
assert sorted(m["nodes"]) == want_nodes and sum(m["nodes"].values()) == 6, m["nodes"]
v = m["videos"][0]
assert hashlib.sha256(open(os.path.join(out, v["path"]), "rb").read()).hexdigest() == v["sha256"], v
print("6 frames, 24 files and the video hashed as listed; frames per node", m["nodes"])
EOF
command -v python3 > /dev/null || echo "NOT OK python3 is needed to read the manifest"
msg=$(python3 "$tmp/manifest.py" "$out" "n1 n2" 2>&1); rc=$?
check "[ $rc -eq 0 ]" "manifest: $msg"
vid_frames() { ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1"; }
if command -v ffprobe > /dev/null; then
    check "[ \"\$(vid_frames '$out/Plate_prores4444.mov')\" = 6 ]" "ProRes 4444: $(vid_frames "$out/Plate_prores4444.mov") frames (ffprobe)"
else
    echo "SKIP: ffprobe not installed: the video's frame count is not checked"
fi
check "cmp -s '$out/Plate_prores4444.mov' '$tmp/ref/Plate_prores4444.mov'" "ProRes 4444 equals the single run's, byte for byte"

# resubmission: two frames' passes gone (all of 0001, the matte of 0004); the rest must not be touched
rm "$out"/*/0001.* "$out/Matte/0004.exr"
find "$out"/Matte "$out"/FG "$out"/Processed "$out"/Comp -type f ! -name '0001.*' ! -name '0004.*' -printf '%p %T@\n' | sort > "$tmp/mtimes.before"
job2=$(farm "$plate" "$hint" "$out" 2> "$tmp/farm2.err"); rc=$?
check "[ $rc -eq 0 ] && grep -q '2 of 6 frames to key (2 of 3 chunks' '$tmp/farm2.err'" "resubmission: 2 of 6 frames to key (exit $rc)"
check "[ \"\$(ptasks $job2)\" = '0 2 ' ]" "resubmission: the array holds their chunks only ($(ptasks "$job2"))"
check "[ \"\$(written '$out'/.farm/tasks/*_$job2.ndjson)\" = '0001 0004 ' ]" \
      "resubmission keyed just 0001 and 0004 ($(written "$out"/.farm/tasks/*_"$job2".ndjson))"
find "$out"/Matte "$out"/FG "$out"/Processed "$out"/Comp -type f ! -name '0001.*' ! -name '0004.*' -printf '%p %T@\n' | sort > "$tmp/mtimes.after"
check "cmp -s '$tmp/mtimes.before' '$tmp/mtimes.after' && [ \$(wc -l < '$tmp/mtimes.after') -eq 16 ]" \
      "resubmission: the other 16 files keep their mtimes"
check "same_as_ref '$out' && cmp -s '$out/Plate_prores4444.mov' '$tmp/ref/Plate_prores4444.mov'" "resubmission: passes and video equal the single run's"
msg=$(python3 "$tmp/manifest.py" "$out" "n1 n2" 2>&1); rc=$?
check "[ $rc -eq 0 ]" "resubmission: manifest again lists every frame ($msg)"

# a corrupt frame in chunk 1: its task fails, --wait says so, no manifest
mkdir -p "$tmp/bad" && cp -r "$plate" "$tmp/bad/Plate" && echo "not a png" > "$tmp/bad/Plate/0003.png"
farm "$tmp/bad/Plate" "$hint" "$tmp/bad/out" > /dev/null 2> "$tmp/bad.err"; rc=$?
check "[ $rc -ne 0 ] && grep -q 'task 1 (frames 2-3) FAILED' '$tmp/bad.err'" "a failing task: --wait exits $rc, naming task 1 ($(grep -m1 'task 1' "$tmp/bad.err"))"
check "[ ! -e '$tmp/bad/out/Plate_manifest.json' ] && [ -e '$tmp/bad/out/Matte/0005.exr' ]" "no manifest; the other chunks' frames are there"
"$CK_BIN" farm assemble "$tmp/bad/out" 2> "$tmp/bad_asm.err"; rc=$?
check "[ $rc -eq 1 ] && grep -q 'missing or undecodable passes: 0003' '$tmp/bad_asm.err'" "ckey farm assemble names the missing frame (exit $rc)"

# a plain array job of ckey key --shard auto, numbered from 1
cat > "$tmp/auto.sh" << EOF
#!/bin/bash
exec "$CK_BIN" key --image "$plate" --hint "$hint" ${kopts[*]} --out "$tmp/auto" --shard auto --json > "$tmp/auto_\$SLURM_ARRAY_TASK_ID.json"
EOF
timeout 180 sbatch --wait --array=1-3 --output="$tmp/auto_%a.log" "$tmp/auto.sh" > /dev/null; rc=$?
check "[ $rc -eq 0 ] && [ \"\$(covered '$tmp'/auto_*.json)\" = '$all6' ] && same_as_ref '$tmp/auto'" \
      "sbatch --array=1-3 of --shard auto: exit $rc, each frame once ($(covered "$tmp"/auto_*.json)), same bytes"
exit $fail
