#!/bin/bash
# per-plate quality of the built-in on p9811 (CPU), one plate at a time
cd /tmp
for i in $(seq -w 0 15); do n=00$i; d=/tmp/pp/$n; mkdir -p $d/Plate $d/AlphaHint $d/Truth/Alpha $d/Truth/FG
  for sub in Plate AlphaHint Truth/Alpha Truth/FG; do ln -sf /tmp/p9811/$sub/$n.* $d/$sub/; done
  /work/main/build-cuda/ckey quality --checkpoint builtin --plates $d --device cpu --configs full2048,chroma --json /tmp/pp/$n.json > /dev/null 2>&1
done
echo done > /tmp/pp/DONE
