#!/usr/bin/env bash
# issue 12: averaged exports of the 1024 fine-tune (avg2 = steps 1500 + 1900, avg3 = 1500 + 1580 + 1900) scored on the
# development plates (seed 7001); the best of e1900 / avg2 / avg3 there (worst of the three ratios to the chroma
# baseline) is then scored on the held-out plates (seeds 9511, 9512) if it is not e1900 (already scored in run S).
set -u
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
tar -xJf carry/deps.tar.xz -C carry
export LD_LIBRARY_PATH=$PWD/carry/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:$PWD/carry/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; echo "commit $(cat carry/BUILD_COMMIT) date $(date -u +%FT%TZ)"
B=build/ckey
[ -x $B ] || { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCK_BLAS_ROOT=$PWD/carry/deps -DCK_EXR_ROOT=$PWD/carry/deps > /tmp/cmake.log 2>&1
  cmake --build build -j16 --target ckey > /tmp/build.log 2>&1 || grep error /tmp/build.log | head; }
el built
$B plates --out /tmp/qe --size 2048x2048 --count 16 --seed 7001 > /dev/null 2>&1 &
$B plates --out /tmp/h2k --size 2048x2048 --count 16 --seed 9511 > /dev/null 2>&1 &
$B plates --out /tmp/h4k --size 3840x2160 --count 8 --seed 9512 > /dev/null 2>&1 &
for k in 1 2; do timeout 30 $B bench --size 512 --batch 8 --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null | cut -c1-400; done > $OUT/bench.jsonl
wait; el plates
q() { $B quality --plates $1 --device cuda --precision fp16 --md $OUT/$2.md ${@:3} > /dev/null 2>&1; echo "== $2"; grep -E "^\| (full|chroma)" $OUT/$2.md; }
q /tmp/qe dev_avg2 --checkpoint carry/avg2.safetensors --configs full2048
q /tmp/qe dev_avg3 --checkpoint carry/avg3.safetensors --configs full2048
best=$(python3 - $OUT <<'PY'
import sys
ch=(0.02124,0.23941,0.05372); cand={'e1900':(0.00974,0.12884,0.02738)}
for n in ('avg2','avg3'):
    r=[l for l in open(f'{sys.argv[1]}/dev_{n}.md') if l.startswith('| full2048')][0].split('|')
    cand[n]=(float(r[2]),float(r[5]),float(r[6]))
for n,v in cand.items(): print(n, ['%.3f'%(a/b) for a,b in zip(v,ch)], file=sys.stderr)
print(min(cand, key=lambda n: max(a/b for a,b in zip(cand[n],ch))))
PY
)
echo "best on dev: $best"
if [ "$best" != e1900 ]; then
  q /tmp/h2k h2k_$best --checkpoint carry/$best.safetensors --configs full2048
  q /tmp/h4k h4k_$best --checkpoint carry/$best.safetensors --configs full2048
fi
el finished
