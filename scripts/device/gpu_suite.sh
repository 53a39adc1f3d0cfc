#!/usr/bin/env bash
# GPU machine suite: build for Hopper, run the GPU tests, the attention bench, precision/parity checks
# on a random-weight Hiera-B+ at S = 512 and 2048, and ckey timings. Logs and results go to $OUT.
# Usage (repository root, on the GPU machine): scripts/device/gpu_suite.sh [parity|profile|bench|check|final|all]
# 4K end to end: final4k (device encoding, host comparisons, plate formats), scale (thread counts), shm
# (outputs on tmpfs vs disk), ab4k (this commit beside an earlier one: carry/old.tgz), trace4k (CK_PIPE_TRACE
# timelines); FRAMES=N sets the clip length (default 96)
# check: parity at 512/2048 and the memory/time of the execution toggles at 512/1024/2048, plus a profile
# (profile also runs the timings; TORCH_MODES=fp16ac,compile adds the PyTorch peers to them)
set -uo pipefail
what=${1:-all}
extra=" ${*:2} "   # further modes after the first: e.g. `gpu_suite.sh check final4k sweep quality doctor`
has() { [ "$what" = "$1" ] || [[ "$extra" == *" $1 "* ]]; }
OUT=${OUT:-/tmp/ckey-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/suite.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
# the tree may be a copy with changes over its git HEAD: carry/BUILD_COMMIT names the commit when given
echo "commit $(cat carry/BUILD_COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)  date $(date -u +%FT%TZ)"
start=$(date +%s)

blas=""
if [ -d carry/deps ] && ! ls /usr/include/x86_64-linux-gnu/cblas.h /usr/include/cblas.h \
    /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h >/dev/null 2>&1; then
    blas="-DCK_BLAS_ROOT=$PWD/carry/deps"
    export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:${LD_LIBRARY_PATH:-}
    echo "using carried OpenBLAS"
fi
exr=""
if [ -d carry/deps/usr/include/OpenEXR ] && ! ls /usr/include/OpenEXR/openexr.h > /dev/null 2>&1; then
    exr="-DCK_EXR_ROOT=$PWD/carry/deps"
    export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
    echo "using carried OpenEXR (C API)"
fi
gen=""
command -v ninja >/dev/null && gen="-G Ninja"
t0=$(date +%s)
# ab4k: the ckey of an earlier commit (carry/old.tgz, its commit in carry/OLD_COMMIT) built beside
old_pid=""
if has ab4k && [ -f carry/old.tgz ]; then
    rm -rf /tmp/old && mkdir -p /tmp/old && tar -xzf carry/old.tgz -C /tmp/old && cp -r carry /tmp/old/
    (cd /tmp/old && cmake -S . -B build $gen -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real $blas $exr \
        > "$OUT/cmake_old.log" 2>&1 && cmake --build build -j16 --target ckey > "$OUT/build_old.log" 2>&1) &
    old_pid=$!
fi
cmake -S . -B build $gen -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real $blas $exr > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
cmake --build build -j16 ${BUILD_TARGET:+--target $BUILD_TARGET} > "$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -30; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"

echo "== ctest"
(cd build && ctest --output-on-failure -j4 -E cuda > "$OUT/ctest.log" 2>&1; echo "ctest (non-GPU tests) rc=$?"; grep -E "tests passed|Failed|\*\*\*" "$OUT/ctest.log")
for t in ${GPU_TESTS:-test_cuda_ops test_cuda_model test_cuda_preprocess test_cuda_postprocess test_cuda_passes test_cuda_deflate}; do
    (cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp ./tests/$t > "$OUT/$t.log" 2>&1; echo "$t rc=$?")
    grep -E "NOT OK|SKIP|PASS|FAIL" "$OUT/$t.log" | tail -15
done

ck=/tmp/bp.safetensors
[ -f $ck ] || python3 tools/reference/random_checkpoint.py --config base_plus --out $ck > /dev/null
B=build/ckey

if [ "$what" = parity ] || [ "$what" = all ]; then
    echo "== attention bench"
    (make -C dev/cuda attn_bench > "$OUT/attn_build.log" 2>&1 && OUT=$OUT timeout 240 ./dev/cuda/attn_bench > "$OUT/attn_bench.log" 2>&1; echo "attn rc=$?")
    tail -45 "$OUT/attn_bench.log"

    echo "== parity and precision (random-weight Hiera-B+)"
    $B bench --checkpoint $ck --size 512 --device cpu --runs 1 --warmup 0 --dump /tmp/o512_cpu.npy
    for S in 512 2048; do
        for p in fp32 bf16 fp16; do
            $B bench --checkpoint $ck --size $S --device cuda --precision $p --runs 3 --warmup 1 --dump /tmp/o${S}_$p.npy
        done
        $B bench --checkpoint $ck --size $S --device cuda --precision fp32 --pad64 1 --runs 1 --warmup 0 --dump /tmp/o${S}_fp32pad.npy
        $B bench --checkpoint $ck --size $S --device cuda --precision bf16 --sdpa 0 --runs 1 --warmup 0 --dump /tmp/o${S}_bf16unf.npy
    done
    C="python3 tools/bench/compare_outputs.py"
    $C /tmp/o512_fp32.npy /tmp/o512_cpu.npy --label "512 cuda fp32 vs cpu fp32" --alpha-tol 1e-4 --fg-tol 1e-4
    for S in 512 2048; do
        $C /tmp/o${S}_bf16.npy /tmp/o${S}_fp32.npy --label "$S bf16 vs fp32" --alpha-tol 5e-3 --fg-tol 1e-2
        $C /tmp/o${S}_fp16.npy /tmp/o${S}_fp32.npy --label "$S fp16 vs fp32" --alpha-tol 5e-3 --fg-tol 1e-2
        $C /tmp/o${S}_fp32pad.npy /tmp/o${S}_fp32.npy --label "$S fp32 pad64 on vs off" --alpha-tol 1e-5 --fg-tol 1e-5
        $C /tmp/o${S}_bf16unf.npy /tmp/o${S}_bf16.npy --label "$S bf16 unfused vs fused attention"
    done
fi

if [ "$what" = check ]; then
    echo "== parity (random-weight Hiera-B+)"
    $B bench --checkpoint $ck --size 512 --device cpu --runs 1 --warmup 0 --dump /tmp/o512_cpu.npy | tail -1
    for S in 512 2048; do
        for p in fp32 fp16 bf16; do
            $B bench --checkpoint $ck --size $S --device cuda --precision $p --runs 2 --warmup 1 --dump /tmp/o${S}_$p.npy | tail -1
        done
        $B bench --checkpoint $ck --size $S --device cuda --precision fp32 --slim 0 --runs 1 --warmup 0 --dump /tmp/o${S}_fp32keep.npy | tail -1
    done
    C="python3 tools/bench/compare_outputs.py"
    $C /tmp/o512_fp32.npy /tmp/o512_cpu.npy --label "512 cuda fp32 vs cpu fp32" --alpha-tol 1e-4 --fg-tol 1e-4
    for S in 512 2048; do
        $C /tmp/o${S}_fp16.npy /tmp/o${S}_fp32.npy --label "$S fp16 vs fp32" --alpha-tol 5e-3 --fg-tol 1e-2
        $C /tmp/o${S}_bf16.npy /tmp/o${S}_fp32.npy --label "$S bf16 vs fp32" --alpha-tol 5e-3 --fg-tol 1e-2
        $C /tmp/o${S}_fp32keep.npy /tmp/o${S}_fp32.npy --label "$S fp32 slim vs keep" --alpha-tol 1e-6 --fg-tol 1e-6
    done
    echo "== toggles: memory and time (elapsed $(( $(date +%s) - start )) s)"
    for S in 512 1024 2048; do
        for cfg in "" "--slim 0" "--compile 0" "--precision bf16"; do
            echo "-- S=$S fp16 $cfg"
            $B bench --checkpoint $ck --size $S --device cuda --runs 10 --warmup 3 $cfg | tail -1
        done
    done
    echo "== per-op profile at 2048 (synchronized per op, no graph)"
    $B bench --checkpoint $ck --size 2048 --device cuda --runs 3 --warmup 1 --profile 1 2>&1 | grep -v "^ckey: info"
fi

if [ "$what" = final ]; then
    echo "== parity at 512 (random-weight Hiera-B+)"
    $B bench --checkpoint $ck --size 512 --device cpu --runs 1 --warmup 0 --dump /tmp/o512_cpu.npy | tail -1
    for p in fp32 fp16 bf16; do
        $B bench --checkpoint $ck --size 512 --device cuda --precision $p --runs 2 --warmup 1 --dump /tmp/o512_$p.npy | tail -1
    done
    $B bench --checkpoint $ck --size 2048 --device cuda --precision fp16 --runs 2 --warmup 1 --dump /tmp/o2048_fp16.npy | tail -1
    $B bench --checkpoint $ck --size 2048 --device cuda --precision fp32 --runs 1 --warmup 0 --dump /tmp/o2048_fp32.npy | tail -1
    C="python3 tools/bench/compare_outputs.py"
    $C /tmp/o512_fp32.npy /tmp/o512_cpu.npy --label "512 cuda fp32 vs cpu fp32" --alpha-tol 1e-4 --fg-tol 1e-4
    $C /tmp/o512_fp16.npy /tmp/o512_fp32.npy --label "512 fp16 vs fp32" --alpha-tol 5e-3 --fg-tol 1e-2
    $C /tmp/o512_bf16.npy /tmp/o512_fp32.npy --label "512 bf16 vs fp32" --alpha-tol 5e-3 --fg-tol 1e-2
    $C /tmp/o2048_fp16.npy /tmp/o2048_fp32.npy --label "2048 fp16 vs fp32" --alpha-tol 5e-3 --fg-tol 1e-2
    echo "== ckey configurations and PyTorch eager fp16 (elapsed $(( $(date +%s) - start )) s)"
    python3 tools/bench/peer_gpu.py --checkpoint $ck --sizes 512,1024,2048 --ckey $B --torch-modes fp16ac \
        --configs "fp16,bf16,fp32,fp16 no-graph,fp16 no-pad64,fp16 unfused-attn,fp16 stage_gc" --out "$OUT" --name peer_gpu | tail -32
    left=$(( 570 - ($(date +%s) - start) ))
    echo "== torch.compile(default) + fp16 autocast beside ckey fp16, ${left} s left"
    timeout $left python3 tools/bench/peer_gpu.py --checkpoint $ck --sizes 512,2048,1024 --ckey $B --torch-modes compile \
        --configs fp16 --out "$OUT" --name peer_compile | grep -E '^\{|^\|'
fi

if [ "$what" = profile ] || [ "$what" = all ]; then
    echo "== per-op profiles (synchronized per op, no graph)"
    for S in 512 2048; do
        $B bench --checkpoint $ck --size $S --device cuda --runs 3 --warmup 1 --profile 1 2>&1 | grep -v "^ckey: info"
    done
fi

if [ "$what" = bench ] || [ "$what" = all ] || [ "$what" = profile ]; then
    echo "== ckey timings"
    python3 tools/bench/peer_gpu.py --checkpoint $ck --sizes 512,1024,2048 --ckey $B --torch-modes "${TORCH_MODES:-}" \
        --configs "${CKEY_CONFIGS:-fp32,bf16,fp16,bf16 no-graph,bf16 no-pad64,bf16 unfused-attn}" --out "$OUT" | tail -40
fi

if has slim; then
    echo "== slim (banded refiner) vs keep: memory and time, fp16"
    for S in 512 1024 2048; do
        for cfg in "" "--slim 0"; do
            echo "-- S=$S $cfg"
            $B bench --checkpoint $ck --size $S --device cuda --runs 10 --warmup 3 $cfg | tail -1
        done
    done
    echo "== per-op profile at 2048 (synchronized per op, no graph); cuDNN plan choices"
    CK_CONV=auto $B bench --checkpoint $ck --size 2048 --device cuda --runs 3 --warmup 1 --profile 1 2>&1 | grep -v "^ckey: info: \(model\|cuda\|cpu\)"
fi

# ---- 4K clips: 8 generated plates (3840x2160) repeated as an N-frame sequence ----
# make_clip4k N [exr] [png8]: $c/Plate (16-bit PNG), $c/PlateExr (half EXR), $c/Plate8 (8-bit PNG, made
# with OpenCV on the machine), $c/AlphaHint
c=/tmp/clip4k
make_clip4k() {
    local n=$1 i j k
    rm -rf $c && $B plates --out $c/gen --size 3840x2160 --count 8 --format png --seed 3 > /dev/null 2>&1
    mkdir -p $c/Plate $c/AlphaHint
    if [[ " $* " == *" exr "* ]]; then
        $B plates --out $c/genexr --size 3840x2160 --count 8 --seed 3 > /dev/null 2>&1
        mkdir -p $c/PlateExr
    fi
    if [[ " $* " == *" png8 "* ]]; then
        python3 -c "
import cv2, glob, os
os.makedirs('$c/gen8', exist_ok=True)
for f in sorted(glob.glob('$c/gen/Plate/*.png')):
    cv2.imwrite('$c/gen8/' + os.path.basename(f), (cv2.imread(f, cv2.IMREAD_UNCHANGED) >> 8).astype('uint8'))
" && mkdir -p $c/Plate8 || echo "no 8-bit plates"
    fi
    for i in $(seq 0 $((n - 1))); do
        j=$(printf %04d $((i % 8))); k=$(printf %05d $i)
        ln -sf $c/gen/Plate/$j.png $c/Plate/$k.png; ln -sf $c/gen/AlphaHint/$j.png $c/AlphaHint/$k.png
        [ -d $c/PlateExr ] && ln -sf $c/genexr/Plate/$j.exr $c/PlateExr/$k.exr
        [ -d $c/Plate8 ] && ln -sf $c/gen8/$j.png $c/Plate8/$k.png
    done
}
# run_clip NAME PLATES OUTDIR [ckey key options]: one timed `ckey key` (S=2048, all four passes), its
# completed event in $OUT/4k_NAME.json, /usr/bin/time in $OUT/4k_NAME.time, a one-line summary
run_clip() {
    local name=$1 plates=$2 out=$3 t0=$(date +%T)
    rm -rf $out
    /usr/bin/time -v $B key --image $c/$plates --hint $c/AlphaHint --checkpoint $ck --size 2048 --out $out --json \
        "${@:4}" 2> $OUT/4k_$name.time | grep -E '"completed"|"failed"' > $OUT/4k_$name.json
    echo "$name [$t0-$(date +%T)] ($plates ${*:4}): $(grep -o '"fps": [0-9.]*' $OUT/4k_$name.json)" \
        "$(grep -o '"stage_ms_per_frame": {[^}]*}' $OUT/4k_$name.json)" \
        "$(grep -o '"workers": [0-9]*' $OUT/4k_$name.json) $(grep -o '"readers": [0-9]*' $OUT/4k_$name.json)" \
        "$(grep -o '"device_peak_mib": [0-9.]*' $OUT/4k_$name.json)" \
        "user $(grep 'User time' $OUT/4k_$name.time | awk '{print $4}') sys $(grep 'System time' $OUT/4k_$name.time | awk '{print $4}')" \
        "out $(du -sm $out | cut -f1) MB $(ls $out/Matte 2> /dev/null | wc -l)/$(ls $out/Comp 2> /dev/null | wc -l) frames"
    rm -rf $out
}

if has final4k; then
    echo "== 4K end to end, passes encoded on the device (elapsed $(( $(date +%s) - start )) s)"
    make_clip4k ${FRAMES:-96} exr png8
    echo "-- model alone and ck_key_passes on a 3840x2160 frame (S=2048 fp16)"
    $B bench --checkpoint $ck --size 2048 --device cuda --runs 10 --warmup 3 --frame 3840x2160 | tail -1 | tee $OUT/4k_bench.json
    run_clip warmup Plate $c/out --frames 0-47
    run_clip png16 Plate $c/out
    run_clip png16_host_encode Plate $c/out --no-gpu-encode
    run_clip png16_host_post Plate $c/out --no-gpu-postprocess
    run_clip png8 Plate8 $c/out
    run_clip exr PlateExr $c/out
    run_clip png16_none Plate $c/out --exr-compression none
    echo "-- device vs host post-processing, both compressed on the host, same network arithmetic"
    echo "   (CK_CONV=kernel): identical files of 8 (Processed/Comp may differ by the device's powf)"
    for m in gpu host; do
        opt="--no-gpu-encode"; [ $m = host ] && opt="--no-gpu-postprocess"
        CK_CONV=kernel $B key --image $c/Plate --hint $c/AlphaHint --checkpoint $ck --size 2048 --out $c/id_$m \
            --frames 0-7 --quiet $opt
    done
    for pass in Matte FG Processed Comp; do
        same=0
        for f in $c/id_gpu/$pass/*; do cmp -s $f $c/id_host/$pass/$(basename $f) && same=$((same+1)); done
        echo "$pass: $same identical"
    done
    rm -rf $c
fi

if has scale; then
    echo "== 4K clips, steady state: worker/reader counts (elapsed $(( $(date +%s) - start )) s)"
    make_clip4k ${FRAMES:-96}
    run_clip warmup Plate $c/out --frames 0-47
    for cfg in "w4:--workers 4" "w8:--workers 8" "w12r12:--workers 12 --readers 12" "w8r16:--workers 8 --readers 16"; do
        run_clip ${cfg%%:*} Plate $c/out ${cfg#*:}
    done
    OMP_WAIT_POLICY=passive run_clip passive Plate $c/out
    rm -rf $c
fi

if has shm; then
    echo "== 4K end to end, outputs on tmpfs vs disk (elapsed $(( $(date +%s) - start )) s)"
    df -h /tmp /dev/shm | tail -2
    make_clip4k ${FRAMES:-96}
    o=/dev/shm/ckey-out
    run_clip warmup Plate $o --frames 0-63
    run_clip disk Plate $c/out
    run_clip tmpfs Plate $o
    rm -rf $c $o
fi

if has ab4k; then
    echo "== 4K end to end, this commit beside $(cat carry/OLD_COMMIT 2>/dev/null) (elapsed $(( $(date +%s) - start )) s)"
    [ -n "$old_pid" ] && { wait $old_pid; echo "old build rc=$?"; }
    make_clip4k ${FRAMES:-96}
    echo "-- model alone and ck_key_passes on a 3840x2160 frame (S=2048 fp16)"
    $B bench --checkpoint $ck --size 2048 --device cuda --runs 10 --warmup 3 --frame 3840x2160 | tail -1 | tee $OUT/4k_bench.json
    (vmstat -w -t 1 > $OUT/vmstat.log 2>&1 &) ; vm=$(pgrep -n vmstat)
    run_clip warmup Plate $c/out --frames 0-47
    for round in 1 2; do
        [ -x /tmp/old/build/ckey ] && B=/tmp/old/build/ckey run_clip old$round Plate $c/out
        CK_PIPE_TRACE=$OUT/trace_new$round.csv run_clip new$round Plate $c/out
    done
    # AB_VARIANTS: name:options entries separated by ';'
    IFS=';' read -ra variants <<< "${AB_VARIANTS:-w4:--workers 4;w8:--workers 8;r6:--readers 6}"
    for cfg in "${variants[@]}"; do
        run_clip new_${cfg%%:*} Plate $c/out ${cfg#*:}
    done
    kill $vm 2> /dev/null
    rm -rf $c
fi

if has trace4k; then
    echo "== 4K end to end with the pipeline's per-frame trace (elapsed $(( $(date +%s) - start )) s)"
    make_clip4k ${FRAMES:-96}
    (vmstat -w -t 1 > $OUT/vmstat.log 2>&1 &) ; vm=$(pgrep -n vmstat)
    run_clip warmup Plate $c/out --frames 0-47
    for cfg in ${TRACE_VARIANTS:-"default:" "w4:--workers 4"}; do
        CK_PIPE_TRACE=$OUT/trace_${cfg%%:*}.csv run_clip trace_${cfg%%:*} Plate $c/out ${cfg#*:}
    done
    CK_PINNED_MB=0 CK_PIPE_TRACE=$OUT/trace_nopin.csv run_clip trace_nopin Plate $c/out
    kill $vm 2> /dev/null
    rm -rf $c
fi

if has sweep; then
    echo "== ckey bench sweeps (elapsed $(( $(date +%s) - start )) s)"
    $B bench --sweep ablation --resolution 512 1024 2048 --warmup 3 --runs 10 --device cuda --checkpoint $ck \
        --tiled 768/64 512/64 512/128 1024/64 --md $OUT/sweep_ablation.md --json $OUT/sweep_ablation.json 2>&1 | tail -60
    if [ -n "${ISOLATE:-}" ]; then
        $B bench --sweep isolate --resolution 2048 --warmup 2 --runs 5 --device cuda --checkpoint $ck \
            --md $OUT/sweep_isolate.md --json $OUT/sweep_isolate.json 2>&1 | tail -20
    fi
fi

if has quality; then
    echo "== quality on plates at 2048 (elapsed $(( $(date +%s) - start )) s)"
    $B quality --checkpoint $ck --size 2048x2048 --count 3 --model-size 2048 --device cuda \
        --configs full,tile768/64,tile512/64,full@fp32,full@bf16,full-norefiner --md $OUT/quality.md --json $OUT/quality.json 2>&1 | tail -30
fi

if has doctor; then
    echo "== ckey doctor"
    mkdir -p ~/.cache/ckey
    [ -f $OUT/sweep_ablation.json ] && cp $OUT/sweep_ablation.json ~/.cache/ckey/bench.json
    $B doctor 2>&1 | tail -30
    $B doctor --json > $OUT/doctor.json 2>&1
fi
if has parity2; then
    echo "== parity with the current refiner (elapsed $(( $(date +%s) - start )) s)"
    $B bench --checkpoint $ck --size 512 --device cpu --runs 1 --warmup 0 --dump /tmp/p512_cpu.npy | tail -1
    $B bench --checkpoint $ck --size 512 --device cuda --precision fp32 --runs 2 --warmup 1 --dump /tmp/p512_fp32.npy | tail -1
    for cfg in "fp32" "fp16" "fp32 --slim 0"; do
        set -- $cfg
        $B bench --checkpoint $ck --size 2048 --device cuda --precision $1 ${2:-} ${3:-} --runs 2 --warmup 1 \
            --dump /tmp/p2048_${1}${2:+keep}.npy | tail -1
    done
    C="python3 tools/bench/compare_outputs.py"
    $C /tmp/p512_fp32.npy /tmp/p512_cpu.npy --label "512 cuda fp32 vs cpu fp32" --alpha-tol 1e-4 --fg-tol 1e-4
    $C /tmp/p2048_fp16.npy /tmp/p2048_fp32.npy --label "2048 fp16 vs fp32" --alpha-tol 5e-3 --fg-tol 1e-2
    $C /tmp/p2048_fp32keep.npy /tmp/p2048_fp32.npy --label "2048 fp32 slim (banded) vs keep" --alpha-tol 1e-6 --fg-tol 1e-6
fi

if has peer1024; then
    echo "== torch.compile(default) + fp16 autocast beside ckey fp16 at 1024 (elapsed $(( $(date +%s) - start )) s)"
    python3 tools/bench/peer_gpu.py --checkpoint $ck --sizes 1024 --ckey $B --torch-modes fp16ac,compile \
        --configs "fp16,fp16 no-graph" --out "$OUT" --name peer_1024 | grep -E '^\{|^\|'
fi

echo "== GPU test summary"
for t in test_cuda_ops test_cuda_model test_cuda_preprocess; do echo "$t: $(grep -E '^(PASS|FAIL|SKIP)' $OUT/$t.log | tail -1)"; done
echo "suite done in $(( $(date +%s) - start )) s"
