#!/usr/bin/env bash
# (run I) issue 19 at today's defaults, short: ckey bench at 512 x 8 (twice); whole frames with every pass
# (2048² full frame and 768/64 tiles, 3840x2160 768/64 tiles).
set -u
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/cmake.log 2>&1
cmake --build build -j16 --target ckey > /tmp/build.log 2>&1 || grep error /tmp/build.log | head
el built
B=build/ckey
for k in 1 2; do timeout 20 $B bench --size 512 --batch 8 --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null; done > $OUT/bench.jsonl
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l); print('%5d %d %8.3f %7.3f %7.1f'%(d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
el bench
{ timeout 25 $B bench --size 2048 --frame 2048x2048 --device cuda --precision fp16 --runs 5 --warmup 2 2>/dev/null
  timeout 25 $B bench --tile 768/64 --frame 2048x2048 --device cuda --precision fp16 --runs 5 --warmup 2 2>/dev/null
  timeout 25 $B bench --tile 768/64 --frame 3840x2160 --device cuda --precision fp16 --runs 5 --warmup 2 2>/dev/null; } > $OUT/frames.log 2>&1
grep -vE '^\s*$' $OUT/frames.log | cut -c1-300 | tail -12
el finished
