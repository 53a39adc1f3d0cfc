#!/usr/bin/env bash
# short: build ckey; the new default at 2048/1024/512/512x8; ncu sections of the narrow GEMM in the forward.
set -u
t0=$(date +%s); O=$OUT
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( ${CALL_LIMIT:-140} - ($(date +%s) - t0) )); }
tar -xJf carry/deps.tar.xz -C carry 2>/dev/null
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/cmake.log 2>&1
cmake --build build -j16 --target ckey > /tmp/build.log 2>&1 || grep -E "error" /tmp/build.log | head
el built
B=build/ckey
for a in "--size 2048" "--size 1024" "--size 512" "--size 512 --batch 8"; do
  timeout 20 $B bench $a --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null; done > $O/bench.jsonl
python3 -c "
import json
for l in open('$O/bench.jsonl'):
    d=json.loads(l); print('default %5d %d %8.3f %7.3f %7.1f'%(d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
el bench
if [ $(left) -gt 25 ]; then
  CK_LINEAR_NARROW=1 timeout $(( $(left) - 5 )) ncu -k regex:gemm_narrow --launch-count 3 --section SpeedOfLight --section WarpStateStats \
    --section LaunchStats --section MemoryWorkloadAnalysis $B bench --size 2048 --device cuda --precision fp16 --runs 1 --warmup 0 --compile 0 > $O/ncu_narrow.log 2>&1
  grep -E "gemm_narrow_kernel|Duration|Throughput|Registers|Dynamic Shared|Warp Cycles Per Issued|Grid Size|Block Size|Stall|Mem Busy|Max Bandwidth" $O/ncu_narrow.log | head -60 | cut -c1-150
fi
el finished
