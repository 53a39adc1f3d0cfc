#!/bin/bash
B=/work/main/build-cuda/ckey; cd /tmp; rm -rf h22
$B plates --out h22 --size 3840x2160 --count 8 --seed 9922 > /dev/null 2>&1
$B quality --plates h22 --device cpu --checkpoint builtin --configs full2048,chroma --md ev/h22_v4.md --json ev/h22_v4.json > ev/h22_v4.log 2>&1
$B quality --plates h22 --device cpu --checkpoint /work/stash/v3.safetensors --configs full2048 --md ev/h22_v3.md --json ev/h22_v3.json > ev/h22_v3.log 2>&1
echo done > ev/DONE4K
