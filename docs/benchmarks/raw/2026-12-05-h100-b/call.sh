#!/usr/bin/env bash
# second call: the per-op profiles at 512/1024/2048 for the default and for SW (switches, commas), then the 4K
# end-to-end run (48 frames of 16-bit 3840x2160 PNG, every pass) with SW, and ncu per kernel at 2048 with SW.
set -u
t0=$(date +%s); O=$OUT
tar -xJf carry/deps.tar.xz -C carry 2>/dev/null
SW=${SW:-CK_REFINER_FUSED=auto,CK_ATTN_TOKENS_MIN=1024,CK_PATCH_S2D=1,CK_ATTN_PV56=1}
OUT=$O/def SIZES="512 1024 2048" timeout 260 scripts/device/speed_suite.sh profile > /dev/null 2>&1
echo "[$(( $(date +%s) - t0 )) s] default profiles"
OUT=$O/sw SIZES="512 1024 2048" E2E_SETS="4k" timeout 240 env ${SW//,/ } scripts/device/speed_suite.sh profile e2e > /dev/null 2>&1
echo "[$(( $(date +%s) - t0 )) s] switched profiles + e2e"
cat $O/sw/e2e.log 2>/dev/null
left=$(( ${CALL_LIMIT:-560} - ($(date +%s) - t0) ))
if [ $left -gt 120 ]; then
  mkdir -p $O/swk; B=build/ckey
  for S in 512 1024; do echo "ckey default $(timeout 20 $B bench --size $S --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null)"
    echo "ckey SW $(env ${SW//,/ } timeout 20 $B bench --size $S --device cuda --precision fp16 --runs 10 --warmup 3 2>/dev/null)"; done > $O/swk/side.log
  PYTHONUNBUFFERED=1 timeout $(( left - 40 )) python3 carry/torch_greenformer.py 512,1024 compile-half:default,half 2>&1 | grep -v Warning >> $O/swk/side.log
  cut -c1-220 $O/swk/side.log
fi
for d in def sw swk; do grep -E "median_ms" $O/$d/speed.log 2>/dev/null | cut -c1-200; done
tar -czf $O/callE.tgz -C $O def sw swk 2>/dev/null; rm -rf $O/def $O/sw $O/swk
echo "[$(( $(date +%s) - t0 )) s] finished"
