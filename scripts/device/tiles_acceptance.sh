#!/usr/bin/env bash
# GPU machine: the tiles-and-batches figures in one short call (the network at 512 in batches of eight, twice;
# the 2048² and 3840×2160 frames with every pass, full frame at 2048 and in 768/64 tiles; the 4K plate in
# batches of six tiles), then the network at 2048 beside torch_greenformer.py's compile-half:default (carry/).
# Usage (repository root, on the GPU machine; OpenBLAS and OpenEXR from carry/deps.tar.xz):
#   scripts/device/tiles_acceptance.sh        (logs: $OUT/h200.log, $OUT/peer.log)
# CK_PREBUILT=carry/ckey: time that binary (built here by scripts/device/prebuild.sh, without the I/O libraries,
# which the bench does not use) instead of building, for a call with little device time; CK_NO_PEER=1 leaves out
# the side by side at 2048.
set -u
OUT=${OUT:-/tmp/ckey-out}; mkdir -p "$OUT"
. scripts/device/carry_deps.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "commit $(cat carry/BUILD_COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null) date $(date -u +%FT%TZ)"
B=${CK_PREBUILT:-build/ckey} o="--device cuda --precision fp16"
if [ -n "${CK_PREBUILT:-}" ]; then # unpacked, with its libraries' folders, by carry_deps.sh
    ldd "$B" | grep "not found" && exit 1
else
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real $CK_DEPS_OPTS \
        > "$OUT/cmake.log" 2>&1 &&
        cmake --build build -j16 --target ckey > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
fi
{
    for i in 1 2; do $B bench --size 512 --batch 8 $o --runs 10 --warmup 3; done
    $B bench --size 2048 $o --runs 10 --warmup 3
    for f in 2048x2048 3840x2160; do
        $B bench --size 2048 --frame $f $o --runs 5 --warmup 2
        $B bench --tile 768/64 --frame $f $o --runs 5 --warmup 2
    done
    $B bench --tile 768/64 --batch 6 --frame 3840x2160 $o --runs 5 --warmup 2
} 2> /dev/null | tee "$OUT/h200.log" | cut -c1-330
[ -n "${CK_NO_PEER:-}" ] && exit 0
[ -f ../shared/peer/torch_greenformer.py ] && P=../shared/peer/torch_greenformer.py || P=carry/torch_greenformer.py
PYTHONUNBUFFERED=1 timeout 150 python3 $P 2048 compile-half:default 2>&1 | grep -v Warning | tee "$OUT/peer.log" | tail -4
$B bench --size 2048 $o --runs 10 --warmup 3 2> /dev/null | tee -a "$OUT/h200.log" | cut -c1-330
