#!/usr/bin/env bash
# tools/train/greenscreen.py, the training data's second recipe (needs torch: skipped, exit 77, where the
# Python found, $CK_TORCH_PYTHON or python3, has none): the long motion blur keeps a layer's mass and spreads a
# square over exactly its length; data 2 batches are valid (alpha and fg in [0, 1], no NaN) and hold wide,
# partly covered, coloured regions (fast props, tinted glass): over 1.5× data 1's at the same seed.
py="${CK_TORCH_PYTHON:-python3}"
"$py" -c "import torch" 2> /dev/null || { echo "SKIP: no torch for $py (tools/train/ needs it)"; exit 77; }
root="$(cd "$(dirname "$0")/.." && pwd)"
PYTHONPATH="$root/tools/train" "$py" - <<'PY'
import math, sys
import torch
from greenscreen import GreenScreen, motion_blur_long

fail = 0
def check(ok, what):
    global fail
    print(("OK     " if ok else "NOT OK ") + what)
    fail |= not ok

# a 16 px square, blurred 64 px along x and 20 px along the diagonal
x = torch.zeros(2, 4, 256, 256)
x[:, :, 120:136, 120:136] = 1
y = motion_blur_long(x, torch.tensor([64.0, 20.0]), torch.tensor([0.0, math.pi / 4]))
mass = y.sum((1, 2, 3)) / x.sum((1, 2, 3))
check(bool(((mass - 1).abs() < 0.02).all()), f"mass kept: {mass.tolist()}")
row = (y[0, 0, 128] > 0.01).nonzero().flatten()
ext = int(row.max() - row.min() + 1)
check(abs(ext - (16 + 64 - 1)) <= 2, f"x extent {ext} px (a 16 px square blurred over 64 px: 79)")
check(abs(float(y[0, 0, 128].max()) - 16 / 64) < 0.01, f"plateau {float(y[0, 0, 128].max()):.4f} (16/64)")
col = (y[0, 0, :, 128] > 0.01).nonzero().flatten()
check(int(col.max() - col.min() + 1) <= 18, "nothing spread across the motion")

def wide_bright(data):
    """Pixels inside wide partly covered regions (0.1 < alpha < 0.9 over the whole 9 × 9 neighbourhood, so not
    an edge or a strand) of a saturated colour (channels 0.25 apart), over 6 batches of 4."""
    g = GreenScreen(256, "cpu", 11, data)
    n, valid = 0, True
    for i in range(6):
        rgb, hint, alpha, fg = g.batch(4, i)
        valid &= all(bool(torch.isfinite(t).all()) and float(t.min()) >= 0 and float(t.max()) <= 1
                     for t in (rgb, hint, alpha, fg))
        part = ((alpha > 0.1) & (alpha < 0.9)).float()
        wide = -torch.nn.functional.max_pool2d(-part, 9, 1, 4) > 0.5
        n += int((wide & (fg.amax(1, keepdim=True) - fg.amin(1, keepdim=True) > 0.25)).sum())
    return n, valid

n1, v1 = wide_bright(1)
n2, v2 = wide_bright(2)
check(v1 and v2, "data 1 and 2: rgb, hint, alpha and fg finite and in [0, 1]")
check(n2 > 1.5 * n1, f"wide, partly covered, coloured pixels: data 2 {n2}, data 1 {n1}")
sys.exit(1 if fail else 0)
PY
