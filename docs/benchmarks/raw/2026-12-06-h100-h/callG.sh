#!/usr/bin/env bash
# (run G) issue 12: version 5 (embedded) on the fresh held-out set 9941 (16 × 2048²): the seed's table (full frame
# at 2048 against tiles 512/64, 768/64, 1024/64 and without the refiner: ms, peak, MAEs), fp32 / fp16 / bf16 and the
# chroma baseline; then 8 fresh 3840×2160 plates (seed 9942): full frame at 2048, tiled 768/64 at native scale,
# chroma. GPU to itself: the ms are read.
set -u
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
sha256sum models/ckey-small.safetensors
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/cmake.log 2>&1
cmake --build build -j16 --target ckey > /tmp/build.log 2>&1 || grep error /tmp/build.log | head
el built
B=build/ckey
$B plates --out /tmp/qh3 --size 2048x2048 --count 16 --seed 9941 > /dev/null 2>&1 & p1=$!
$B plates --out /tmp/q4 --size 3840x2160 --count 8 --seed 9942 > /dev/null 2>&1 & p2=$!
wait $p1; el plates
$B quality --plates /tmp/qh3 --device cuda --precision fp16 --checkpoint builtin \
  --configs full2048,full2048@fp32,full2048@bf16,tile512/64,tile768/64,tile1024/64,full2048-norefiner,chroma \
  --md $OUT/h3_v5_table.md > $OUT/h3_v5_table.log 2>&1; grep -E "^\| (full|tile|chroma)" $OUT/h3_v5_table.md
el table
wait $p2; el plates4k
$B quality --plates /tmp/q4 --device cuda --precision fp16 --checkpoint builtin --configs full2048,tile768/64,chroma \
  --md $OUT/h4k_v5.md > $OUT/h4k_v5.log 2>&1; grep -E "^\| (full|tile|chroma)" $OUT/h4k_v5.md
el finished
