#!/usr/bin/env bash
# (run W) issue 11: ckey bench at the defaults, with a 64 MiB scratch, and with the scratch plus 440-row refiner
# bands, at 2048, 1024, 512 and 512 x 8, two rounds; then the peer (compile-half:default) at 2048 side by side.
set -u
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( ${CALL_LIMIT:-470} - ($(date +%s) - t0) )); }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/cmake.log 2>&1
cmake --build build -j16 --target ckey > /tmp/build.log 2>&1 || grep error /tmp/build.log | head
el built
B=build/ckey
bench() { for a in "$@"; do a=${a//_/ }; timeout 40 $B bench ${a//=/ } --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null; done; }
sizes="--size=2048 --size=1024 --size=512 --size=512_--batch=8"
for k in 1 2; do
  [ $(left) -gt 150 ] && bench $sizes | sed 's/^{/{"v": "default", /'
  [ $(left) -gt 150 ] && CK_CUDA_SCRATCH_MB=64 bench $sizes | sed 's/^{/{"v": "scratch64", /'
  [ $(left) -gt 150 ] && CK_CUDA_SCRATCH_MB=64 CK_REFINER_BAND=440 bench --size=2048 | sed 's/^{/{"v": "s64-band440", /'
done > $OUT/bench.jsonl
python3 -c "
import json
for l in open('$OUT/bench.jsonl'):
    d=json.loads(l); print('%-11s %5d %d %8.3f %7.3f %7.1f'%(d['v'], d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
el bench
if [ $(left) -gt 70 ]; then
  PYTHONUNBUFFERED=1 timeout $(( $(left) - 5 )) python3 carry/torch_greenformer.py 2048 compile-half:default 2>&1 | grep -v Warning > $OUT/peer.log
  cut -c1-300 $OUT/peer.log | tail -5
fi
el finished
