#!/usr/bin/env bash
# (run M) issue 12: the built-in keyer with the fg un-mixed from the plate (auto on), on the GPU in fp16: the GPU
# tests that touch it, then `ckey quality` on fresh held-out sets (16 x 2048², seeds 10001 and 10011; 8 x 3840x2160,
# seed 10021) and on seed 9981 (measured on the CPU before: 0.379 / 0.432 / 0.403), with and without the un-mixing;
# the seed's table (precisions, tiles, no refiner) on 10011; the host cost of the un-mixing in a 4K clip.
set -u
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }; left() { echo $(( 570 - ($(date +%s) - t0) )); }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
mkdir -p /tmp/evM
cmake -S . -B buildM -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/evM/cmake.log 2>&1
cmake --build buildM -j16 --target ckey > /tmp/evM/build.log 2>&1 || grep error /tmp/evM/build.log | head
el built ckey
B=buildM/ckey
pp=""
for sd in 10001:2048x2048:16 10011:2048x2048:16 9981:2048x2048:16 10021:3840x2160:8; do
  IFS=: read s f n <<< "$sd"; $B plates --out /tmp/p$s --size $f --count $n --seed $s > /tmp/evM/plates$s.log 2>&1 & pp="$pp $!"; done
GT="test_cuda_colorspace test_cuda_passes test_unmix test_builtin"
cmake --build buildM -j12 --target $GT > /tmp/evM/build_tests.log 2>&1 || grep error /tmp/evM/build_tests.log | head
for t in $GT; do (cd buildM && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp timeout 120 ./tests/$t > /tmp/evM/$t.log 2>&1; echo "$t rc=$?"); grep -cE "^ok|PASS" /tmp/evM/$t.log; grep -E "NOT OK|FAIL|SKIP" /tmp/evM/$t.log | head -5; done
wait $pp; el plates and tests
q() { $B quality --plates $1 --device cuda --precision fp16 --checkpoint builtin --md /tmp/evM/$2.md ${@:3} > /tmp/evM/$2.log 2>&1 || tail -2 /tmp/evM/$2.log
      echo "== $2"; grep -E "^\| (full|tile|chroma)" /tmp/evM/$2.md | head -20; grep -A12 "Against the baseline" /tmp/evM/$2.md | grep -E "^\| (full|tile)"; }
q /tmp/p10001 a10001 --configs full2048,chroma
q /tmp/p10001 a10001_network --configs full2048,chroma --no-fg-unmix
q /tmp/p9981 a9981 --configs full2048,chroma
el 2048 sets
q /tmp/p10021 k10021 --configs full2048,tile768/64,chroma
el 4K set
q /tmp/p10011 t10011 --configs full2048,full2048@fp32,full2048@bf16,tile512/64,tile768/64,tile1024/64,full2048-norefiner,chroma
el seed table
if [ $(left) -gt 60 ]; then q /tmp/p10011 t10011_network --configs full2048,tile768/64,chroma --no-fg-unmix; fi
if [ $(left) -gt 60 ]; then q /tmp/p10021 k10021_network --configs full2048,tile768/64,chroma --no-fg-unmix; fi
el quality done
(cd /tmp/evM && tar -czf $OUT/evM.tgz *.md *.log)
el finished
