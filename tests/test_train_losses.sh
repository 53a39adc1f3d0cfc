#!/usr/bin/env bash
# tools/train/train.py's interior colour-cast term (needs torch: skipped, exit 77, where the Python found,
# $CK_TORCH_PYTHON or python3, has none): a constant cast of 0.01 over an opaque subject scores 0.01 while
# zero-mean grain four times larger scores under a third of that; cells less than half opaque do not count;
# losses() adds it with its weight; and a two-step training run on the CPU stores the weight in its state.
py="${CK_TORCH_PYTHON:-python3}"
"$py" -c "import torch, timm" 2> /dev/null || { echo "SKIP: no torch/timm for $py (tools/train/ needs them)"; exit 77; }
root="$(cd "$(dirname "$0")/.." && pwd)"
state="$(mktemp -d)"
trap 'rm -rf "$state"' EXIT
PYTHONPATH="$root/tools/train" "$py" - "$root" "$state" <<'PY'
import json, os, subprocess, sys
import torch
import train

fail = 0
def check(ok, what):
    global fail
    print(("OK     " if ok else "NOT OK ") + what)
    fail |= not ok

g = torch.Generator().manual_seed(5)
fg = torch.rand(2, 3, 64, 64, generator=g)
alpha = torch.ones(2, 1, 64, 64)
cast = train.interior_cast(fg + 0.01, fg, alpha)
check(abs(float(cast) - 0.01) < 1e-5, f"constant cast 0.01 scores {float(cast):.6f}")
noise = torch.randn(2, 3, 64, 64, generator=g) * 0.05
grain = train.interior_cast(fg + noise, fg, alpha)
l1 = float(noise.abs().mean())
check(float(grain) < 0.0033 and l1 > 0.035, f"grain of L1 {l1:.4f} scores {float(grain):.5f} (< 0.0033)")

# the left half transparent and wrong by 0.5: no effect; one opaque pixel in a transparent cell: no effect
alpha2 = alpha.clone()
alpha2[..., :32] = 0
alpha2[..., 5, 5] = 1
pf = fg + 0.01
pf[..., :32] += 0.5
check(abs(float(train.interior_cast(pf, fg, alpha2)) - 0.01) < 1e-5, "cells under half opaque left out")

pa, ca = alpha * 0.9, alpha * 0.8
cf = fg - 0.02
t0, p0 = train.losses(pa, fg + 0.01, ca, cf, alpha, fg, 2, 1.0)
t1, p1 = train.losses(pa, fg + 0.01, ca, cf, alpha, fg, 2, 1.0, cast_weight=2.0)
check("cast" not in p0 and abs(float(p1["cast"]) - 0.01) < 1e-5, "the cast part reported only when weighted")
check(abs(float(t1 - t0) - 2.0 * (0.01 + 0.5 * 0.02)) < 1e-5, f"total grows by 2 x (0.01 + 0.5 x 0.02): {float(t1 - t0):.6f}")

root, state = sys.argv[1], sys.argv[2]
cmd = [sys.executable, os.path.join(root, "tools/train/train.py"), "--state", state, "--steps", "2", "--batch", "1",
       "--size", "128", "--recipe", "2", "--cast-weight", "0.5", "--warmup", "1", "--device", "cpu", "--minutes", "5"]
r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
meta = json.load(open(os.path.join(state, "meta.json"))) if r.returncode == 0 else {}
check(r.returncode == 0 and meta.get("step") == 2 and meta.get("cast_weight") == 0.5,
      f"a 2-step CPU run keeps cast_weight in its state (rc {r.returncode}{', ' + r.stderr[-300:] if r.returncode else ''})")
sys.exit(1 if fail else 0)
PY
