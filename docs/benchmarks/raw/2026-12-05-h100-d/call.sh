#!/usr/bin/env bash
# short call: build ckey + test_cuda_ops; bench default and the GEMM switches at 2048 and 512x8; test_cuda_ops;
# profile at 2048. Guarded by elapsed time (CALL_LIMIT).
set -u
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( ${CALL_LIMIT:-200} - ($(date +%s) - t0) )); }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > $OUT/cmake.log 2>&1
cmake --build build -j16 --target ckey test_cuda_ops > /tmp/build.log 2>&1 || { grep -E "error" /tmp/build.log | head -20; }
el built
B=build/ckey
N=CK_LINEAR_NARROW=1; G=CK_LINEAR_GEMM=1; L=CK_LN_LINEAR=1
bench() { # switches sizes...
  local v=$1 e="" a; shift; [ "$v" != default ] && e=${v//,/ }
  for a in "$@"; do a=${a//_/ }
    env $e timeout 30 $B bench ${a//=/ } --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null | sed "s/^{/{\"switches\": \"$v\", /"
  done
}
{ for v in default $N,$G,$L $G $N default; do bench $v --size=2048 --size=512_--batch=8; done
  [ $(left) -gt 120 ] && for v in default $N,$G,$L; do bench $v --size=1024 --size=512; done
} > $OUT/optin.jsonl
el bench
python3 -c "
import json
for l in open('$OUT/optin.jsonl'):
    d=json.loads(l); print('%-62s %5d %d %8.3f %7.3f %7.1f'%(d['switches'], d['size'], d['batch'], d['median_ms'], d['per_image_ms'], d['device_peak_mib']))"
tt=$(( $(left) - 15 )); [ $tt -gt 150 ] && tt=150
if [ $tt -gt 20 ]; then
  (cd build && CK_FIXTURES=$PWD/../tests/fixtures CK_TMP=/tmp CK_BIN=$PWD/ckey timeout $tt ./tests/test_cuda_ops > $OUT/test_cuda_ops.log 2>&1; echo "test_cuda_ops rc=$?")
  grep -E "^NOT OK|gn_moments" $OUT/test_cuda_ops.log | head -12 | cut -c1-160; tail -1 $OUT/test_cuda_ops.log
fi
el tests
[ $(left) -gt 15 ] && timeout $(( $(left) - 3 )) $B bench --size 2048 --device cuda --precision fp16 --runs 3 --warmup 2 --profile 1 > $OUT/profile_2048.log 2>&1
grep -E "op profile|groupnorm|conv2d|linear|layernorm" $OUT/profile_2048.log
el finished
