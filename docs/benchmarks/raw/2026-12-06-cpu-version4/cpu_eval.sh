#!/bin/bash
# version 4 against version 3 on fresh held-out plates, CPU fp32 (2 threads)
B=/work/main/build-cuda/ckey; cd /tmp; rm -rf h21 h22; mkdir -p ev
$B plates --out h21 --size 2048x2048 --count 16 --seed 9921 > /dev/null 2>&1
$B plates --out h22 --size 3840x2160 --count 8 --seed 9922 > /dev/null 2>&1
for s in h21 h22; do
  $B quality --plates $s --device cpu --checkpoint builtin --configs full2048,full1024,chroma --md ev/${s}_v4.md --json ev/${s}_v4.json > ev/${s}_v4.log 2>&1
  $B quality --plates $s --device cpu --checkpoint /work/stash/v3.safetensors --configs full2048,full1024 --md ev/${s}_v3.md --json ev/${s}_v3.json > ev/${s}_v3.log 2>&1
done
echo done > ev/DONE
