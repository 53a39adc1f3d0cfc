"""Where the built-in keyer's fg error on opaque pixels comes from: plates 0-3 of `ckey plates --seed 9921` (2048²)
keyed by `ckey key --device cpu --size 2048` (version 5) into out/; per plate the opaque pixels' fg error split into a
low-pass part (15x15 box mean) and the rest, its mean per channel (bias), and by distance from the subject's edge."""
import OpenEXR, numpy as np
def rd(p):
    with OpenEXR.File(p) as f:
        ch = f.channels()
        out = {k: v.pixels.astype(np.float64) for k, v in ch.items()}
    return out
for i in ["0000","0001","0002","0003"]:
    fg = rd(f"out/FG/{i}.exr"); tf = rd(f"/tmp/h21/Truth/FG/{i}.exr"); ta = rd(f"/tmp/h21/Truth/Alpha/{i}.exr")
    def arr(d):
        if "RGB" in d: return d["RGB"]
        if len(d)==1: return list(d.values())[0]
        return np.stack([d[k] for k in ("R","G","B")], -1)
    F, T, A = arr(fg), arr(tf), arr(ta)
    if A.ndim == 3: A = A[..., 0]
    m = A >= 1.0
    e = F - T
    # high-pass of the error: minus its 15x15 box mean
    def box(x, r=7):
        c = np.cumsum(np.cumsum(np.pad(x, ((r+1, r), (r+1, r)), mode="edge"), 0), 1)
        k = 2*r+1
        return (c[k:, k:] - c[:-k, k:] - c[k:, :-k] + c[:-k, :-k]) / (k*k)
    hp = np.stack([e[..., c] - box(e[..., c]) for c in range(3)], -1)
    tex = np.stack([T[..., c] - box(T[..., c]) for c in range(3)], -1)
    print(i, "opaque frac %.3f" % m.mean(), "MAE %.5f" % np.abs(e[m]).mean(), "bias RGB", np.round(e[m].mean(0), 5),
          "|lowpass err| %.5f" % np.abs((e - hp)[m]).mean(), "|highpass err| %.5f" % np.abs(hp[m]).mean(),
          "truth texture |hp| %.5f" % np.abs(tex[m]).mean(), "keys", list(fg.keys()), list(ta.keys()))
print("--- the opaque pixels' fg error by distance from the edge")
import torch
for i in ["0000","0001","0002","0003"]:
    F, T, A = fg["RGB"], tf["RGB"], ta["Y"]
    if A.ndim == 3: A = A[..., 0]
    m = A >= 1.0
    mt = torch.from_numpy(m.astype(np.float32))[None, None]
    mp = torch.nn.functional.max_pool2d
    ers = {r: (1 - mp(mp(1 - mt, (1, 2*r+1), 1, (0, r)), (2*r+1, 1), 1, (r, 0)))[0, 0].numpy() > 0.5 for r in (1, 8, 32, 128)}
    for lo, hi in ((1, 8), (8, 32), (32, 128), (128, None)):
        s = ers[lo] & (~ers[hi] if hi else True)
        if s.sum(): print("   dist %4d-%4s px: n %7d MAE %.5f bias" % (lo, str(hi)[:4], s.sum(), np.abs((F - T)[s]).mean()), np.round((F - T)[s].mean(0), 4), "truth mean", np.round(T[s].mean(0), 3))
