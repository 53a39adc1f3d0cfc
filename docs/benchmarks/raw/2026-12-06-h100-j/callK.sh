#!/usr/bin/env bash
# (run K) issues 19 and 11 at today's defaults, GPU to itself: ckey bench at 512 x 8 (twice), 2048, 1024, 512; the
# tiles against the full frame at 2048 (ablation sweep) and whole frames with every pass (2048² and 3840x2160,
# full frame and 768/64 tiles); then, time permitting, the peer at 2048, 1024 and 512 (compile-half:default) and ckey again.
set -u
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }; left() { echo $(( ${CALL_LIMIT:-300} - ($(date +%s) - t0) )); }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/cmake.log 2>&1
cmake --build build -j16 --target ckey > /tmp/build.log 2>&1 || grep error /tmp/build.log | head
el built
B=build/ckey
for a in "--size 512 --batch 8" "--size 2048" "--size 1024" "--size 512" "--size 512 --batch 8"; do
  timeout 30 $B bench $a --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null; done > $OUT/bench.jsonl
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l); print('%5d %d %8.3f %7.3f %7.1f'%(d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
el bench
{ timeout 60 $B bench --sweep ablation --toggles compile --resolution 2048 --tiled 768/64 --device cuda --runs 10 --warmup 3 2>/dev/null
  for f in 2048x2048 3840x2160; do
    timeout 30 $B bench --size 2048 --frame $f --device cuda --precision fp16 --runs 5 --warmup 2 2>/dev/null
    timeout 30 $B bench --tile 768/64 --frame $f --device cuda --precision fp16 --runs 5 --warmup 2 2>/dev/null
  done; } > $OUT/tiles.log 2>&1
grep -vE '^\s*$' $OUT/tiles.log | cut -c1-240 | tail -24
el tiles
if [ $(left) -gt 75 ]; then
  PYTHONUNBUFFERED=1 timeout $(( $(left) - 15 )) python3 carry/torch_greenformer.py 2048,1024,512 compile-half:default 2>&1 | grep -v Warning > $OUT/peer.log
  cut -c1-300 $OUT/peer.log | tail -3
  for s in 2048 1024 512; do timeout 15 $B bench --size $s --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null >> $OUT/bench.jsonl; done; tail -3 $OUT/bench.jsonl | cut -c1-200
fi
el finished
