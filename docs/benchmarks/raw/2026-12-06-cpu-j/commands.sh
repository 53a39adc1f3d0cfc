#!/usr/bin/env bash
# CPU (2 cores), commit cd2221a + tools/train/fg_study.py: where version 5's fg error lies, and the un-mixing study.
set -eu
for s in 9961:4 7001:16 9971:16; do
  seed=${s%%:*} n=${s#*:}
  ckey plates --out /tmp/p$seed --size 2048x2048 --count $n --seed $seed
  ckey key --image /tmp/p$seed/Plate --hint /tmp/p$seed/AlphaHint --out /tmp/k$seed --checkpoint builtin --size 2048 \
    --device cpu --no-comp --exr-compression none
  python3 tools/train/fg_study.py /tmp/p$seed /tmp/k$seed --count $n
done
