#!/usr/bin/env bash
# GPU machine: the network's speed and 16-bit precision at 512/1024/2048, in one call.
# Usage (repository root, on the GPU machine): scripts/device/speed_suite.sh MODE [MODE...]
#   accuracy  tools/reference/accuracy_gate.py: ckey fp16/bf16 against a float64 run of the reference model,
#             beside PyTorch's fp16-weights and bf16-autocast runs (ACC_SIZES, ACC_ARGS add options)
#   profile   ckey bench --profile 1 (per-op table, synchronized) and the graph timing at each of SIZES
#   kernels   per-kernel device times of one forward at S = 2048 (ncu, gpu__time_duration), summed by kernel
#   attn      dev/cuda attention bench (ATTN_ARGS, default: fp16 at 2048)
#   fused     dev/cuda/fused_bench: the fused refiner convolution against cuDNN and the encoder GEMM (+ GELU) against
#             cuBLASLt (+ the GELU pass) on the model's shapes, one process (fused_bench.log, fused_bench.csv)
#   ladder    dev/cuda/run_ladder.sh: every attention variant and FA3 configuration at 2048 / 512 (fp16, bf16) with
#             the FA3 kernels' SASS counts (attn_fp16_2048.log, attn_sass_counts.txt, ...)
#   peer      the side-by-side table: ckey fp16 and torch_greenformer.py (PEER_MODES) in this call
#   tiles     batches and tiles: network throughput by batch at 512 and 768 (TILE_BATCHES), the full frame
#             against tiled 768/64 and 512/64 at 2048 (sweep), and whole frames (every pass) of 2048² and
#             3840×2160 plates, full frame and tiled (tiles.log)
#   kernels512  per-kernel device times of one forward at S = 512 in batches of 8 (ncu)
#   e2e       `ckey key` end to end (every pass written): a 48-frame 16-bit 3840×2160 PNG clip at 2048 full
#             frame and in 768/64 tiles, and a 1920×1080 clip at 512 in batches of 1 and 8 (e2e.log)
#   quality   `ckey quality` with the built-in model (or QUALITY_CKPT) on 16 held-out 2048² plates and 8
#             3840×2160 plates (`ckey plates` seeds QUALITY_SEED and +1, default 9001): full frame at the model's
#             size and at 2048, tiled 512/64, 768/64, 1024/64, fp16 and fp32, refiner off, and the chroma
#             baseline (quality_2048.md, quality_4k.md)
#   tests     the GPU test programs (GPU_TESTS overrides the list)
#   identity  `ckey key` of an earlier commit (carry/old.tgz: `git archive`, its commit in carry/OLD_COMMIT)
#             and of this tree on the same plates, fp16 and fp32 at S = 512 and 2048 (random:base_plus):
#             every pass file compared byte for byte
#   determinism  this tree's `ckey key` twice (two processes) at 512 and 2048 fp16: the same bytes; and with
#             CK_CONV=kernel (no cuDNN), the earlier commit's (carry/old.tgz) against this tree's
#   scaling   `ckey bench --devices` (SCALE_DEVICES, default all): the network at 2048 with 1..N contexts, and a
#             96-frame 16-bit 3840×2160 clip end to end with 1..N (multi-GPU kinds; `0,0` on one GPU: streams)
#   speed     ckey bench at each of SIZES (fp16, median of 10 after 3)
#   optin     the kernels behind a switch: ckey bench at each of SIZES and 512 × 8 for each of OPTIN_VARIANTS
#             (default: the default; the kernels the defaults replaced, each alone and the last three together:
#             the per-pixel resize-sum `CK_RESIZE_SUM=pixel`, the unfused refiner `CK_REFINER_FUSED=0`,
#             global attention straight from qkv only from 4096 rows `CK_ATTN_TOKENS_MIN=4096`, P·V over 64
#             columns `CK_ATTN_PV56=0`; the options: LayerNorm several rows per warp `CK_LN_ROWS=1`, the patch
#             embedding over 4×4 blocks `CK_PATCH_S2D=1`, the first stage's linears with the weight resident
#             `CK_LINEAR_NARROW=1` (with `CK_LN_LINEAR=1`), FP8 global attention `CK_ATTN_FP8=1`; also
#             CK_LINEAR_GEMM=1|all, CK_LN_LINEAR=1;
#             commas join several) beside each other in one call; the per-op profile and the per-kernel device
#             times (ncu) at 2048 of the default and of each of OPTIN_GATES, then the fp16 precision gate with
#             each of OPTIN_GATES (optin.jsonl, optin_profile.log, accuracy_optin<n>.log; OPTIN_GATE=0 leaves
#             the gate out); run `tests` in the same call for their op tests
#   serve     `ckey serve`'s server time to key one 2048² frame (scripts/serve_key_timing.py, built-in model)
#   pyoverhead  the Python call's overhead over the C call at S = 1024 (tools/bench/key_overhead.py; the
#             package is built into /tmp/pyck), with fresh output buffers per call and keyed into kept ones
#             (--reuse: ck_key_image_into / Keyer.key(out=...))
# Logs go to $OUT (bundled into logs.tgz beside speed.log when more than 8 files: the most that come back). The carried OpenBLAS and OpenEXR: scripts/device/carry_deps.sh.
set -uo pipefail
OUT=${OUT:-/tmp/ckey-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/speed.log") 2>&1
modes=" $* "
has() { [[ "$modes" == *" $1 "* ]]; }
SIZES=${SIZES:-512 1024 2048}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
echo "commit $(cat carry/BUILD_COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)  date $(date -u +%FT%TZ)"
start=$(date +%s)

. scripts/device/carry_deps.sh
# libmicrohttpd for `ckey serve` (carried: the machine has none), where the machine lacks it
if [ -d carry/mhd ] && ! pkg-config --exists libmicrohttpd 2> /dev/null; then
    cp -a carry/mhd/include/. /usr/local/include/ && cp -a carry/mhd/lib/. /usr/local/lib/ && ldconfig
fi
targets="--target ckey"
has tests && targets=""
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real $CK_DEPS_OPTS > "$OUT/cmake.log" 2>&1 ||
    { tail -30 "$OUT/cmake.log"; exit 1; }
cmake --build build -j16 $targets > "$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -30; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
B=build/ckey

if has tests; then
    for t in ${GPU_TESTS:-test_cuda_ops test_cuda_model test_cuda_preprocess test_cuda_postprocess test_cuda_passes \
        test_cuda_deflate test_cuda_batch test_cuda_colorspace test_cuda_fault test_cuda_streams test_cuda_multi test_frame_params}; do
        (cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp CK_BIN=$PWD/ckey timeout 300 ./tests/$t > /tmp/$t.log 2>&1; echo "$t rc=$?")
        { echo "== $t"; cat /tmp/$t.log; } >> "$OUT/tests.log"
        grep -E "NOT OK|SKIP|FAIL" /tmp/$t.log | head -10
        tail -1 /tmp/$t.log
    done
fi

if has identity && [ -f carry/old.tgz ]; then
    echo "== byte identity against $(cat carry/OLD_COMMIT 2>/dev/null) (elapsed $(( $(date +%s) - start )) s)"
    rm -rf /tmp/old /tmp/ident && mkdir -p /tmp/old /tmp/ident && tar -xzf carry/old.tgz -C /tmp/old
    (cd /tmp/old && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real $CK_DEPS_OPTS \
        > "$OUT/identity_build.log" 2>&1 && cmake --build build -j16 --target ckey >> "$OUT/identity_build.log" 2>&1) ||
        tail -20 "$OUT/identity_build.log"
    $B plates --out /tmp/ident/p --size 1280x720 --count 2 --format png --seed 5 > /dev/null 2>&1
    for S in 512 2048; do for P in fp16 fp32; do
        for v in old new; do
            bin=$B; [ $v = old ] && bin=/tmp/old/build/ckey
            $bin key --image /tmp/ident/p/Plate --hint /tmp/ident/p/AlphaHint --out /tmp/ident/${S}_${P}_$v \
                --checkpoint random:base_plus --size $S --precision $P --device cuda > /dev/null 2>&1 || echo "ckey key failed: $v $S $P"
        done
        n=$(find /tmp/ident/${S}_${P}_new -type f | wc -l)
        diff -r /tmp/ident/${S}_${P}_old /tmp/ident/${S}_${P}_new > /dev/null && echo "S=$S $P: $n files identical" ||
            echo "S=$S $P: DIFFER"
    done; done | tee "$OUT/identity.log"
    echo "network speed, the earlier commit's ckey and this tree's in turn (fp16, median of 10 after 3):"
    for S in 512 1024 2048; do for v in old new; do
        bin=$B; [ $v = old ] && bin=/tmp/old/build/ckey
        echo "$v $($bin bench --size $S --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null)"
    done; done | tee -a "$OUT/identity.log"
fi

if has determinism; then
    echo "== determinism (elapsed $(( $(date +%s) - start )) s)"
    if [ -f carry/old.tgz ] && [ ! -x /tmp/old/build/ckey ]; then
        rm -rf /tmp/old && mkdir -p /tmp/old && tar -xzf carry/old.tgz -C /tmp/old
        (cd /tmp/old && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real $CK_DEPS_OPTS \
            > "$OUT/identity_build.log" 2>&1 && cmake --build build -j16 --target ckey >> "$OUT/identity_build.log" 2>&1) ||
            tail -20 "$OUT/identity_build.log"
    fi
    d=/tmp/det && rm -rf $d && mkdir -p $d
    $B plates --out $d/p --size 1280x720 --count 2 --format png --seed 5 > /dev/null 2>&1
    k() { local bin=$1; shift; $bin key --image $d/p/Plate --hint $d/p/AlphaHint --checkpoint random:base_plus --precision fp16 \
        --device cuda "$@" > /dev/null 2>&1 || echo "ckey key failed: $bin $*"; }
    for S in ${DET_SIZES:-512 2048}; do
        k $B --out $d/a$S --size $S; k $B --out $d/b$S --size $S
        diff -r $d/a$S $d/b$S > /dev/null && echo "S=$S fp16, two runs of this tree: identical" || echo "S=$S fp16, two runs: DIFFER"
        # the same with one kernel choice pinned each (which of them, if any, varies from one process to the next)
        for pin in ${DET_PINS-CK_ATTN_VARIANT=wgmma CK_CONV=kernel CK_CONV=cudnn}; do
            (export "$pin"; k $B --out $d/pa$S --size $S; k $B --out $d/pb$S --size $S)
            diff -r $d/pa$S $d/pb$S > /dev/null && echo "S=$S fp16 $pin, two runs: identical" || echo "S=$S fp16 $pin, two runs: DIFFER"
            rm -rf $d/pa$S $d/pb$S
        done
        # DET_ATTN names the attention variant this tree's run tries first (the earlier commit's kernel, when
        # the comparison is about everything but a new attention kernel)
        [ -x /tmp/old/build/ckey ] || continue # no earlier commit carried: this tree's runs only
        CK_CONV=kernel k /tmp/old/build/ckey --out $d/o$S --size $S
        (if [ -n "${DET_ATTN:-}" ]; then export CK_ATTN_VARIANT=$DET_ATTN; fi; CK_CONV=kernel k $B --out $d/n$S --size $S)
        diff -r $d/o$S $d/n$S > /dev/null && echo "S=$S fp16 CK_CONV=kernel ${DET_ATTN:+CK_ATTN_VARIANT=$DET_ATTN}, $(cat carry/OLD_COMMIT) against this tree: identical" ||
            echo "S=$S fp16 CK_CONV=kernel, old against new: DIFFER"
    done | tee "$OUT/determinism.log"
fi

if has scaling; then
    echo "== scaling over devices (elapsed $(( $(date +%s) - start )) s)"
    sc=/tmp/scaling && mkdir -p $sc/Plate $sc/AlphaHint
    $B plates --out $sc/gen --size 3840x2160 --count 8 --format png --seed 3 > /dev/null 2>&1
    for i in $(seq 0 95); do
        j=$(printf %04d $((i % 8))); k=$(printf %05d $i)
        ln -sf $sc/gen/Plate/$j.png $sc/Plate/$k.png; ln -sf $sc/gen/AlphaHint/$j.png $sc/AlphaHint/$k.png
    done
    timeout 500 $B bench --devices ${SCALE_DEVICES:-all} --size 2048 --precision fp16 --warmup 3 --runs 30 \
        --clip $sc/Plate --clip-hint $sc/AlphaHint 2>&1 | tee "$OUT/scaling.jsonl" | grep '"mode"'
fi

if has speed; then
    echo "== speed (elapsed $(( $(date +%s) - start )) s)"
    for S in $SIZES; do $B bench --size $S --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null; done | tee "$OUT/speed.jsonl"
fi

if has optin; then
    echo "== switched kernels against the default (elapsed $(( $(date +%s) - start )) s)"
    # OPTIN_VARIANTS: the settings timed side by side; OPTIN_GATES: the settings profiled per kernel and put
    # through the precision gate (each a space-free list of switches joined by commas)
    old3=CK_REFINER_FUSED=0,CK_ATTN_TOKENS_MIN=4096,CK_ATTN_PV56=0
    variants=${OPTIN_VARIANTS:-default CK_RESIZE_SUM=pixel CK_REFINER_FUSED=0 CK_ATTN_TOKENS_MIN=4096 CK_ATTN_PV56=0 CK_LN_ROWS=1 $old3 CK_PATCH_S2D=1 CK_LINEAR_NARROW=1 CK_LINEAR_NARROW=1,CK_LN_LINEAR=1 CK_ATTN_FP8=1}
    gates=${OPTIN_GATES:-CK_ATTN_FP8=1}
    for v in $variants; do
        e=""; [ "$v" != default ] && e=${v//,/ }
        for a in $(for S in $SIZES; do echo "--size=$S"; done) "--size=512 --batch=8"; do
            env $e timeout 60 $B bench ${a//=/ } --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null |
                sed "s/^{/{\"switches\": \"$v\", /"
        done
    done | tee "$OUT/optin.jsonl" | cut -c1-160
    for v in default $gates; do
        e=""; [ "$v" != default ] && e=${v//,/ }
        echo "== profile 2048, $v"
        env $e timeout 60 $B bench --size 2048 --device cuda --precision fp16 --runs 3 --warmup 2 --profile 1 2>&1 | tail -40
        # device time per kernel of one forward (ncu): the graph-free figure that ranks the paths
        env $e timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum --csv --log-file /tmp/ncu_optin.csv \
            $B bench --size 2048 --device cuda --precision fp16 --runs 2 --warmup 0 --compile 0 > /dev/null 2>&1
        python3 tools/bench/ncu_summary.py /tmp/ncu_optin.csv --top 20
    done > "$OUT/optin_profile.log" 2>&1
    grep -E "^==|^one forward|conv|gn_|groupnorm|fp8|fa3|attention" "$OUT/optin_profile.log" | cut -c1-140 | head -80
    if [ "${OPTIN_GATE:-1}" != 0 ]; then
        n=0
        for v in $gates; do
            n=$((n + 1))
            env ${v//,/ } PYTHONUNBUFFERED=1 timeout 300 python3 tools/reference/accuracy_gate.py --ckey $B \
                --sizes ${ACC_SIZES:-512,1024,2048} --precisions fp16 --out /tmp/acc_optin$n > "$OUT/accuracy_optin$n.log" 2>&1
            echo "accuracy ($v) rc=$?"; grep -A10 "## Gate" "$OUT/accuracy_optin$n.log"
        done
    fi
fi

if has serve; then
    echo "== ckey serve: one 2048 frame keyed from the page (elapsed $(( $(date +%s) - start )) s)"
    timeout 240 python3 scripts/serve_key_timing.py --ckey $B --runs 20 -- --device cuda 2>&1 | tee "$OUT/serve.log" | tail -4
fi

if has pyoverhead; then
    echo "== Python call overhead (elapsed $(( $(date +%s) - start )) s)"
    cmake --build build -j16 --target key_overhead_bench > "$OUT/pyoverhead_build.log" 2>&1 || tail -20 "$OUT/pyoverhead_build.log"
    CKEY_BUILD_DIR=$PWD/build-py CKEY_CMAKE_ARGS="$CK_DEPS_OPTS -DCMAKE_CUDA_ARCHITECTURES=90a-real" CKEY_BUILD_JOBS=16 \
        python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pyck ./python >> "$OUT/pyoverhead_build.log" 2>&1 ||
        tail -30 "$OUT/pyoverhead_build.log"
    # both modes in the same rounds: twice the C runs of one mode
    PYTHONPATH=/tmp/pyck timeout 480 python3 tools/bench/key_overhead.py --bin build/fuzz/key_overhead_bench --size 1024 \
        --device cuda --reuse ${PYOVERHEAD_ARGS:-} 2>&1 | tee "$OUT/pyoverhead.json" | tail -3
    # the same with glibc keeping freed blocks (no fresh pages per call): whether page faults make the difference
    MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296 PYTHONPATH=/tmp/pyck timeout 300 python3 \
        tools/bench/key_overhead.py --bin build/fuzz/key_overhead_bench --size 1024 --device cuda ${PYOVERHEAD_ARGS:-} 2>&1 |
        tee "$OUT/pyoverhead_nofault.json" | tail -3
fi

if has fused; then
    echo "== fused kernels against the libraries (elapsed $(( $(date +%s) - start )) s)"
    make -C dev/cuda fused_bench > "$OUT/fused_bench_build.log" 2>&1 || tail -20 "$OUT/fused_bench_build.log"
    OUT=$OUT timeout 240 dev/cuda/fused_bench 2>&1 | tee "$OUT/fused_bench.log"
fi

if has attn; then
    echo "== attention bench (elapsed $(( $(date +%s) - start )) s)"
    make -C dev/cuda attn_bench > "$OUT/attn_build.log" 2>&1 || tail -20 "$OUT/attn_build.log"
    OUT=$OUT timeout 200 ./dev/cuda/attn_bench ${ATTN_ARGS:---dtype fp16 --size 2048} > "$OUT/attn_bench.log" 2>&1
    echo "attn rc=$?"; tail -40 "$OUT/attn_bench.log"
fi
if has ladder; then
    echo "== attention ladder (elapsed $(( $(date +%s) - start )) s)"
    OUT=$OUT timeout 400 dev/cuda/run_ladder.sh > "$OUT/ladder.log" 2>&1
    echo "ladder rc=$?"; grep -E "blk6-20|checks" "$OUT/attn_fp16_2048.log" | cut -c1-110
fi

if has accuracy; then
    echo "== accuracy gate (elapsed $(( $(date +%s) - start )) s)"
    PYTHONUNBUFFERED=1 timeout 400 python3 tools/reference/accuracy_gate.py --ckey $B --sizes ${ACC_SIZES:-512,1024,2048} \
        --out /tmp/acc ${ACC_ARGS:-} > "$OUT/accuracy.log" 2>&1
    echo "accuracy rc=$?"; cp /tmp/acc/accuracy.json "$OUT/" 2>/dev/null; tail -60 "$OUT/accuracy.log"
fi

if has profile; then
    echo "== profiles (elapsed $(( $(date +%s) - start )) s)"
    for S in $SIZES; do
        $B bench --size $S --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null
        $B bench --size $S --device cuda --precision fp16 --runs 5 --warmup 1 --profile 1 > /dev/null 2> /tmp/profile_$S.log
        { echo "== S=$S"; cat /tmp/profile_$S.log; } >> "$OUT/profiles.log"
        grep -v "^ckey: info" /tmp/profile_$S.log | head -40
    done
fi

if has kernels; then
    echo "== per-kernel times at 2048 (ncu; elapsed $(( $(date +%s) - start )) s)"
    timeout 240 ncu --clock-control none --metrics gpu__time_duration.sum --csv --log-file /tmp/ncu_2048.csv \
        $B bench --size 2048 --device cuda --precision fp16 --runs 2 --warmup 0 --compile 0 > /dev/null 2>&1
    echo "ncu rc=$?"
    python3 tools/bench/ncu_summary.py /tmp/ncu_2048.csv --order "$OUT/kernels_2048_order.txt" | tee "$OUT/kernels_2048.md"
fi

if has peer; then
    echo "== side by side (elapsed $(( $(date +%s) - start )) s)"
    for S in $SIZES; do
        $B bench --size $S --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null
    done
    [ -f ../shared/peer/torch_greenformer.py ] && P=../shared/peer/torch_greenformer.py || P=carry/torch_greenformer.py
    PYTHONUNBUFFERED=1 timeout 480 python3 $P ${PEER_SIZES:-512,1024,2048} ${PEER_MODES:-half,compile-half:default} 2>&1 |
        grep -v Warning | tee "$OUT/peer.log" | tail -12
fi
if has kernels512; then
    echo "== per-kernel times at 512, batches of 8 (ncu; elapsed $(( $(date +%s) - start )) s)"
    timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum --csv --log-file /tmp/ncu_512.csv \
        $B bench --size 512 --batch 8 --device cuda --precision fp16 --runs 2 --warmup 0 --compile 0 > /dev/null 2>&1
    echo "ncu rc=$?"
    python3 tools/bench/ncu_summary.py /tmp/ncu_512.csv | tee "$OUT/kernels_512x8.md" | head -45
fi

if has e2e; then
    echo "== end to end (elapsed $(( $(date +%s) - start )) s)"
    c=/tmp/clips
    # clip W H N: N frames of 8 generated plates, repeated, in $c/WxH/{Plate,AlphaHint}
    clip() {
        local d=$c/$1x$2 i j k
        $B plates --out $d/gen --size $1x$2 --count 8 --format png --seed 3 > /dev/null 2>&1
        mkdir -p $d/Plate $d/AlphaHint
        for i in $(seq 0 $(($3 - 1))); do
            j=$(printf %04d $((i % 8))); k=$(printf %05d $i)
            ln -sf $d/gen/Plate/$j.png $d/Plate/$k.png; ln -sf $d/gen/AlphaHint/$j.png $d/AlphaHint/$k.png
        done
    }
    sets=" ${E2E_SETS:-4k hd} "
    [[ "$sets" == *" 4k "* ]] && clip 3840 2160 48
    [[ "$sets" == *" hd "* ]] && clip 1920 1080 96
    run() { # NAME DIR [ckey key options]
        local name=$1 d=$2; shift 2
        rm -rf /tmp/e2e_out
        $B key --image $d/Plate --hint $d/AlphaHint --out /tmp/e2e_out --device cuda --json "$@" 2>/dev/null |
            grep -E '"completed"|"failed"' > /tmp/e2e_$name.json
        echo "$name ($*): $(grep -o '"fps": [0-9.]*' /tmp/e2e_$name.json)" \
            "$(grep -o '"stage_ms_per_frame": {[^}]*}' /tmp/e2e_$name.json)" \
            "$(grep -o '"device_peak_mib": [0-9.]*' /tmp/e2e_$name.json)" \
            "out $(du -sm /tmp/e2e_out | cut -f1) MB, $(ls /tmp/e2e_out/Matte | wc -l)/$(ls /tmp/e2e_out/Comp | wc -l) frames"
    }
    {
        if [[ "$sets" == *" 4k "* ]]; then
            run 4k_full $c/3840x2160 --checkpoint random:base_plus --size 2048
            run 4k_tiled768 $c/3840x2160 --checkpoint random:base_plus --tile 768 --overlap 64
        fi
        [[ "$sets" == *" hd "* ]] && run hd_512_b1 $c/1920x1080 --checkpoint random:base_plus --size 512
        [[ "$sets" == *" hd "* ]] && run hd_512_b8 $c/1920x1080 --checkpoint random:base_plus --size 512 --batch 8
    } 2>&1 | tee "$OUT/e2e.log"
    rm -rf $c /tmp/e2e_out
fi

if has tiles; then
    echo "== batches and tiles (elapsed $(( $(date +%s) - start )) s)"
    {
        for S in 512 768; do
            for n in ${TILE_BATCHES:-1 4 8 16}; do
                $B bench --size $S --batch $n --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null
            done
        done
        $B bench --sweep ablation --toggles compile --resolution 2048 --tiled 768/64 512/64 --device cuda \
            --runs 10 --warmup 3 2>/dev/null
        for f in 2048x2048 3840x2160; do
            $B bench --size 2048 --frame $f --device cuda --precision fp16 --runs 5 --warmup 2 2>/dev/null
            for t in ${TILE_CONFIGS-768/64 512/64 1024/64}; do
                $B bench --tile $t --frame $f --device cuda --precision fp16 --runs 5 --warmup 2 2>/dev/null
            done
        done
        for n in ${TILE_4K_BATCHES-6 9 18}; do
            $B bench --tile 768/64 --batch $n --frame 3840x2160 --device cuda --precision fp16 --runs 5 --warmup 2 2>/dev/null
        done
    } 2>&1 | tee "$OUT/tiles.log"
fi
if has quality; then
    echo "== quality (elapsed $(( $(date +%s) - start )) s)"
    ck=${QUALITY_CKPT:-builtin}
    cfg=${QUALITY_CONFIGS:-full,full2048,tile512/64,tile768/64,tile1024/64,full@fp32,tile512/64@fp32,full-norefiner,chroma}
    seed=${QUALITY_SEED:-9001}
    $B plates --out /tmp/q2048 --size 2048x2048 --count 16 --seed $seed > /dev/null 2>&1
    $B plates --out /tmp/q4k --size 3840x2160 --count 8 --seed $((seed + 1)) > /dev/null 2>&1
    for set in 2048 4k; do
        $B quality --checkpoint $ck --plates /tmp/q$set --device cuda --precision fp16 --configs $cfg \
            --md "$OUT/quality_$set.md" > /dev/null 2> /tmp/quality_$set.log
        echo "quality $set rc=$? (elapsed $(( $(date +%s) - start )) s)"; cat "$OUT/quality_$set.md"
    done
fi
rm -f "$OUT/cmake.log" "$OUT/build.log" # kept only when the build fails
echo "done in $(( $(date +%s) - start )) s"
# At most 8 files come back from the device machine: past that, everything but this log goes into logs.tgz.
if [ "$(find "$OUT" -maxdepth 1 -type f | wc -l)" -gt 8 ]; then
    (cd "$OUT" && find . -maxdepth 1 -type f ! -name speed.log ! -name logs.tgz -printf '%f\n' | sort |
        tar -czf logs.tgz -T - && find . -maxdepth 1 -type f ! -name speed.log ! -name logs.tgz -delete)
fi
