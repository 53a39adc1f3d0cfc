#!/usr/bin/env bash
# tools/train/widen.py doubles the built-in keyer's refiner width (32 -> 64) without changing its output: the
# widened file has the new shapes and keys 2 plates of 256² (CPU, network at 256) to the same alpha, edge-band
# and fg errors as the original, within fp16 rounding of the split weights.
set -u
fail=0
check() { if eval "$1"; then echo "OK     $2"; else echo "NOT OK $2"; fail=1; fi; }
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="${CK_TMP:-/tmp}/widen"
rm -rf "$tmp" && mkdir -p "$tmp"
py=$(command -v python3) || { echo "python3 not found"; exit 1; }

"$py" "$root/tools/train/widen.py" "$root/models/ckey-small.safetensors" "$tmp/wide.safetensors" --seed 3; rc=$?
check "[ $rc -eq 0 ]" "widen.py exits 0 (got $rc)"
shapes=$("$py" - "$tmp/wide.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
print(h["refiner.stem.0.weight"]["shape"], h["refiner.res4.conv2.weight"]["shape"], h["refiner.final.weight"]["shape"],
      h["encoder.model.pos_embed"]["shape"])
PY
)
echo "$shapes"
check "[ \"$shapes\" = '[64, 7, 3, 3] [64, 64, 3, 3] [4, 64, 1, 1] [1, 65536, 32]' ]" "refiner 64 wide, the rest as before"

"$CK_BIN" plates --out "$tmp/p" --size 256x256 --count 2 --seed 515 > /dev/null 2>&1
for m in orig wide; do
    f="$root/models/ckey-small.safetensors"; [ $m = wide ] && f="$tmp/wide.safetensors"
    "$CK_BIN" quality --checkpoint "$f" --plates "$tmp/p" --device cpu --model-size 256 --configs full \
        --md "$tmp/$m.md" > /dev/null 2>&1
    check "[ $? -eq 0 ]" "ckey quality with the $m model"
done
# | full | alpha MAE | max err | MSE | edge-band MAE | fg MAE | ...
row() { grep '^| full |' "$tmp/$1.md" | head -1 | awk -F'|' '{print $3, $4, $6, $7}'; }
echo "orig: $(row orig)"; echo "wide: $(row wide)"
cmp=$("$py" -c "
import sys
a = [float(x) for x in sys.argv[1].split()]; b = [float(x) for x in sys.argv[2].split()]
tol = [2e-4, 5e-3, 5e-4, 2e-4]  # alpha MAE, max err, edge MAE, fg MAE
print('same' if len(a) == 4 == len(b) and all(abs(x - y) <= t for x, y, t in zip(a, b, tol)) and a[0] > 0 else 'differ')
" "$(row orig)" "$(row wide)")
check "[ \"$cmp\" = same ]" "the widened refiner keys as the original (alpha, max, edge, fg errors)"
exit $fail
