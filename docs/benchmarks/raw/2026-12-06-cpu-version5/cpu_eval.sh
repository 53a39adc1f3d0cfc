#!/bin/bash
# version 5 on the held-out sets version 4 was measured on (seed 9921 2048² and 9922 3840x2160 on the CPU; seed
# 9911 was measured on the GPU for version 4), CPU fp32 (2 threads)
B=/work/main/build-cuda/ckey; cd /tmp; mkdir -p ev5
[ -d h21 ] || $B plates --out h21 --size 2048x2048 --count 16 --seed 9921 > /dev/null 2>&1
$B quality --plates h21 --device cpu --checkpoint builtin --configs full2048,chroma --md ev5/h21_v5.md --json ev5/h21_v5.json > ev5/h21_v5.log 2>&1
rm -rf h11; $B plates --out h11 --size 2048x2048 --count 16 --seed 9911 > /dev/null 2>&1
$B quality --plates h11 --device cpu --checkpoint builtin --configs full2048,chroma --md ev5/h11_v5.md --json ev5/h11_v5.json > ev5/h11_v5.log 2>&1
[ -d h22 ] || $B plates --out h22 --size 3840x2160 --count 8 --seed 9922 > /dev/null 2>&1
$B quality --plates h22 --device cpu --checkpoint builtin --configs full2048 --md ev5/h22_v5.md --json ev5/h22_v5.json > ev5/h22_v5.log 2>&1
echo done > ev5/DONE
# afterwards, a last fresh set
$B plates --out h51 --size 2048x2048 --count 16 --seed 9951 > /dev/null 2>&1
$B quality --plates h51 --device cpu --checkpoint builtin --configs full2048,chroma --md ev5/h51_v5.md --json ev5/h51_v5.json > ev5/h51_v5.log 2>&1
