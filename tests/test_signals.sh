#!/usr/bin/env bash
# Interrupting `ckey key`: SIGINT and SIGTERM during a 240-frame run (the signals are sent to the process
# directly: ckey installs its handlers itself, so this holds for background jobs too) end it with exit 130 /
# 143, the message "interrupted", a `cancelled` event with --json, no partial file anywhere under the output,
# every written frame complete (all four passes, none empty), and a --skip-existing rerun that keys the
# rest (more frames skipped in a row than the pipeline has slots: this once deadlocked); a SIGKILLed video
# shot resumed with --skip-existing ends with the same videos as an uninterrupted run. Partial files of a
# process that died (fake ones, of a pid that no longer runs) are removed when the next run starts, and said
# so; a live process's are left alone.
set -u
fail=0
check() { if eval "$1"; then echo "OK     $2"; else echo "NOT OK $2"; fail=1; fi; }

fx="$CK_FIXTURES/tiny/s128"
tmp="${CK_TMP:-/tmp}/signals"
rm -rf "$tmp" && mkdir -p "$tmp/shot" "$tmp/hint"
for i in $(seq -w 1 240); do
    ln -s "$fx/frame_rgb.png" "$tmp/shot/f$i.png"
    ln -s "$fx/frame_hint.png" "$tmp/hint/f$i.png"
done
args=(key --image "$tmp/shot" --hint "$tmp/hint" --checkpoint "$fx/model.safetensors" --size 128 --device cpu
      --workers 1 --readers 1)
probe=$("$CK_BIN" key --image "$fx/frame_rgb.png" --hint "$fx/frame_hint.png" --checkpoint "$fx/model.safetensors" \
        --size 128 --device cpu --quiet --out "$tmp/probe" 2>&1) || { echo "SKIP: this build cannot write the passes ($probe)"; exit 0; }

for sig in INT TERM; do
    out="$tmp/out_$sig"
    "$CK_BIN" "${args[@]}" --out "$out" --json > "$tmp/$sig.json" 2> "$tmp/$sig.err" & # ckey itself, no subshell
    pid=$!
    # wait until some frames are written, then signal
    for _ in $(seq 1 200); do
        [ "$(ls "$out/Matte" 2> /dev/null | wc -l)" -ge 3 ] && break
        sleep 0.05
    done
    kill -$sig $pid
    for _ in $(seq 1 600); do kill -0 $pid 2> /dev/null || break; sleep 0.05; done
    kill -KILL $pid 2> /dev/null # still running after 30 s: the check below fails
    wait $pid; rc=$?
    want=$([ $sig = INT ] && echo 130 || echo 143)
    n=$(ls "$out/Matte" | wc -l)
    check "[ $rc -eq $want ]" "SIG$sig: exit $rc (want $want)"
    check "grep -q 'interrupted (SIG$sig)' '$tmp/$sig.err'" "SIG$sig: says interrupted ($(grep interrupted "$tmp/$sig.err" | head -1))"
    check "grep -q '\"event\": \"cancelled\", \"signal\": \"SIG$sig\", \"frames_written\": $n,' '$tmp/$sig.json'" \
          "SIG$sig: cancelled event with frames_written $n"
    check "[ \$(find '$out' -name '.*' -type f | wc -l) -eq 0 ] && [ \$(find '$out' -name '*.tmp.*' | wc -l) -eq 0 ]" \
          "SIG$sig: no partial files"
    check "[ $n -ge 3 ] && [ $n -lt 240 ]" "SIG$sig: stopped part way ($n of 240 frames)"
    complete=1
    for f in "$out"/Matte/*.exr; do
        s=$(basename "$f" .exr)
        for p in FG/$s.exr Processed/$s.exr Comp/$s.png; do [ -s "$out/$p" ] || complete=0; done
    done
    check "[ $complete -eq 1 ] && [ \$(ls '$out/Comp' | wc -l) -eq $n ]" "SIG$sig: every written frame has its four passes"
done

# Ctrl-C in a real terminal (tmux): the terminal sends SIGINT to the foreground process group, as for a user
if command -v tmux > /dev/null 2>&1; then
    out="$tmp/out_tty"
    sock="$tmp/tmux.sock"
    printf '%q ' "$CK_BIN" "${args[@]}" --out "$out" > "$tmp/tty.cmd"
    echo "2> '$tmp/tty.err'; echo \$? > '$tmp/tty.rc'" >> "$tmp/tty.cmd"
    tmux -S "$sock" new-session -d -s cktty -x 120 -y 20 "bash '$tmp/tty.cmd'"
    for _ in $(seq 1 200); do
        [ "$(ls "$out/Matte" 2> /dev/null | wc -l)" -ge 3 ] && break
        sleep 0.05
    done
    tmux -S "$sock" send-keys -t cktty C-c
    for _ in $(seq 1 600); do [ -s "$tmp/tty.rc" ] && break; sleep 0.05; done
    tmux -S "$sock" kill-server 2> /dev/null
    n=$(ls "$out/Matte" 2> /dev/null | wc -l)
    check "[ \"\$(cat '$tmp/tty.rc' 2> /dev/null)\" = 130 ]" "Ctrl-C in a terminal: exit $(cat "$tmp/tty.rc" 2> /dev/null) (want 130)"
    check "grep -q 'interrupted (SIGINT)' '$tmp/tty.err'" "Ctrl-C in a terminal: says interrupted"
    check "[ \$(find '$out' -name '.*' -type f | wc -l) -eq 0 ] && [ $n -ge 3 ] && [ $n -lt 240 ]" \
          "Ctrl-C in a terminal: no partial files, stopped part way ($n of 240 frames)"
else
    echo "SKIP: Ctrl-C in a terminal (tmux not installed)"
fi

# resume: --skip-existing keys the rest
timeout 300 "$CK_BIN" "${args[@]}" --out "$tmp/out_INT" --skip-existing --quiet; rc=$?
check "[ $rc -eq 0 ] && [ \$(ls '$tmp/out_INT/Matte' | wc -l) -eq 240 ]" "--skip-existing after SIGINT completes the shot"

# an empty pass (and a damaged one) is not "existing": --skip-existing keys those frames again and says so
: > "$tmp/out_INT/Matte/f007.exr"
head -c 100 "$tmp/out_INT/Processed/f009.exr" > "$tmp/x.exr" && mv "$tmp/x.exr" "$tmp/out_INT/Processed/f009.exr"
"$CK_BIN" "${args[@]}" --out "$tmp/out_INT" --skip-existing --json > "$tmp/resume.json" 2> "$tmp/resume.err"; rc=$?
check "[ $rc -eq 0 ] && [ -s '$tmp/out_INT/Matte/f007.exr' ] && [ \$(stat -c %s '$tmp/out_INT/Processed/f009.exr') -gt 100 ]" \
      "--skip-existing keys an empty and a truncated pass's frames again"
check "grep -q 'f007.exr does not decode' '$tmp/resume.err' && grep -c '\"frame_written\"' '$tmp/resume.json' | grep -qx 2" \
      "--skip-existing: says which pass did not decode, 2 frames written"

# a video shot killed (SIGKILL: no handler runs) and resumed with --skip-existing ends with the ProRes 4444
# and H.264 an uninterrupted run writes, byte for byte; the killed run's partial video is swept
if "$CK_BIN" encode --help > /dev/null 2>&1 && "$CK_BIN" "${args[@]}" --out "$tmp/vfull" --video-out prores,h264 --quiet \
        2> "$tmp/vfull.err"; then
    "$CK_BIN" "${args[@]}" --out "$tmp/vkill" --video-out prores,h264 --quiet 2> /dev/null &
    pid=$!
    for _ in $(seq 1 200); do
        [ "$(ls "$tmp/vkill/Matte" 2> /dev/null | wc -l)" -ge 3 ] && break
        sleep 0.05
    done
    kill -KILL $pid; wait $pid 2> /dev/null
    "$CK_BIN" "${args[@]}" --out "$tmp/vkill" --skip-existing --video-out prores,h264 --quiet 2> "$tmp/vkill.err"; rc=$?
    check "[ $rc -eq 0 ] && cmp -s '$tmp/vfull/shot_prores4444.mov' '$tmp/vkill/shot_prores4444.mov' && cmp -s '$tmp/vfull/shot_comp.mp4' '$tmp/vkill/shot_comp.mp4'" \
          "SIGKILL, then --skip-existing: the videos equal an uninterrupted run's, byte for byte"
    check "[ \$(find '$tmp/vkill' -name '.*' -type f | wc -l) -eq 0 ]" "SIGKILL, then --skip-existing: the partial video is gone"
else
    echo "SKIP: no video support in this build ($(head -1 "$tmp/vfull.err" 2> /dev/null))"
fi

# partial files of a dead process are swept, a live process's stay
dead=$(sh -c 'echo $$'); sleep 0.1
mkdir -p "$tmp/sweep/Matte" "$tmp/sweep/Comp"
touch "$tmp/sweep/Matte/.f001.partial$dead.exr" "$tmp/sweep/Comp/.f001.partial$dead.png" \
      "$tmp/sweep/.shot.partial${dead}_prores4444.mov" "$tmp/sweep/Matte/.f002.partial$$.exr"
"$CK_BIN" key --image "$fx/frame_rgb.png" --hint "$fx/frame_hint.png" --checkpoint "$fx/model.safetensors" \
    --size 128 --device cpu --out "$tmp/sweep" 2> "$tmp/sweep.err"; rc=$?
check "[ $rc -eq 0 ] && grep -q 'removed 3 partial files' '$tmp/sweep.err'" "start-up sweep: 3 dead-process partial files removed, said so"
check "[ ! -e '$tmp/sweep/Matte/.f001.partial$dead.exr' ] && [ -e '$tmp/sweep/Matte/.f002.partial$$.exr' ]" \
      "start-up sweep: the live process's file is kept"
rm -rf "$tmp"
exit $fail
