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

# `ckey quality` with the un-mixing in the engine (a6cb423), CPU fp32, full frame at 2048
for s in 7001 9981 9961 9991; do
  ckey plates --out /tmp/p$s --size 2048x2048 --count 16 --seed $s
  ckey quality --checkpoint builtin --plates /tmp/p$s --device cpu --model-size 2048 --configs full2048,chroma \
    --md quality_${s}_unmix.md
done
for s in 9981 9991; do ckey quality --checkpoint builtin --plates /tmp/p$s --device cpu --model-size 2048 --configs full2048 --no-fg-unmix \
  --md quality_${s}_network.md; done
