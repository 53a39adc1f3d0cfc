#!/usr/bin/env python3
"""Precision gate on the GPU machine: ckey's 16-bit forwards against a float64 run of the original model.

    python3 tools/reference/accuracy_gate.py --ckey build/ckey --sizes 512,1024,2048 --out /tmp/acc \
        [--precisions fp16,bf16] [--variant NAME:ENV=VAL,ENV=VAL ...] [--intermediates] [--seed 0]

For each size S it runs, on one frame and one set of weights:
  ref64      the reference model (greenformer_ref.py, timm Hiera) in float64 on the GPU: the truth;
  half       the reference model with fp16 weights and input (model.half(), as the original engine runs);
  bf16ac     the reference model in fp32 under torch.autocast(bfloat16);
  fp32       the reference model in fp32, TF32 off;
  ckey:P     `ckey bench --input x.npy --dump out.npy` at precision P (and each --variant: extra
             environment for ckey, e.g. conv_kernel:CK_CONV=kernel);
and prints the max and mean |d| of alpha and fg against ref64, then the gate:
  ckey fp16 max and mean <= 1.1 x half's, ckey bf16 max and mean <= 1.25 x bf16ac's (alpha and fg).
Exit status 1 when a gated row fails. --intermediates also compares f1..f4, the decoder logits and the
refiner delta (relative RMS against ref64), to tell where a 16-bit path loses precision.

Weights ("realistic random"; timm's 0.02 init gives flat attention and constant outputs, which hides
errors): greenformer_ref.init_weights (fan-in scaled truncated normals, non-trivial LayerNorm / BatchNorm /
GroupNorm affines and running statistics, a smooth pos_embed field), then
  - every qkv weight redrawn from N(0, 1/fan_in), so attention scores q.k/sqrt(d) have std ~ 1;
  - the decoder classifiers and the refiner's final conv rescaled (weight and bias together) so that, on the
    calibration frame at S = 512 in float64, alpha logits have std 2.5, fg logits std 1.5 and the refiner's
    delta (x10 included) std 1 logit: outputs neither flat nor saturated.
The measured statistics at every S are printed with the table (attention score std of one global block
included). The frame is make_fixtures.make_frame (subject, hair strands, veil, props, 1 % noise) at S x S,
pre-processed as the engine does.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import greenformer_ref as gr  # noqa: E402  (sets strict fp32: TF32 off)
import make_fixtures as mf  # noqa: E402
import safetensors.torch  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.use_deterministic_algorithms(False)  # cuBLAS on the GPU; the comparison needs no bitwise repeatability
DEV = "cuda"
TARGET_STD = {"alpha": 2.5, "fg": 1.5, "delta": 1.0}


def realistic_weights(seed: int) -> dict:
    """The state dict (float32, CPU) described in the module docstring, before output rescaling."""
    model = gr.build_model("base_plus", 2048)
    gr.init_weights(model, seed)
    gen = torch.Generator().manual_seed(seed + 77)
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    for k, v in sd.items():
        if k.endswith("attn.qkv.weight"):
            sd[k] = torch.randn(v.shape, generator=gen) / math.sqrt(v.shape[1])
    return sd


def build(sd: dict, size: int, dtype: torch.dtype) -> gr.GreenFormer:
    model = gr.build_model("base_plus", size)
    gr.load_state_dict_like_engine(model, sd)
    return model.to(DEV, dtype).eval()


def forward(model: gr.GreenFormer, x: torch.Tensor, autocast: torch.dtype | None = None) -> dict:
    """alpha, fg and the intermediates (NCHW, float64 numpy on request), with the refiner's delta."""
    with torch.no_grad(), torch.autocast("cuda", dtype=autocast or torch.float16, enabled=autocast is not None):
        feats = model.encoder(x)
        al = model.alpha_decoder(feats)
        fl = model.fg_decoder(feats)
        S = x.shape[2:]
        a_up = F.interpolate(al, size=S, mode="bilinear", align_corners=False)
        f_up = F.interpolate(fl, size=S, mode="bilinear", align_corners=False)
        delta = model.refiner(x[:, :3], torch.cat([torch.sigmoid(a_up), torch.sigmoid(f_up)], dim=1))
        alpha = torch.sigmoid(a_up + delta[:, 0:1])
        fg = torch.sigmoid(f_up + delta[:, 1:4])
    out = {"alpha": alpha[0, 0], "fg": fg[0].permute(1, 2, 0), "logits": torch.cat([al, fl], 1)[0].permute(1, 2, 0),
           "delta": delta[0].permute(1, 2, 0)}
    for i, f in enumerate(feats):
        out[f"f{i + 1}"] = f[0].permute(1, 2, 0)
    return {k: v.float().cpu().numpy() for k, v in out.items()}


PARTS = ("encoder", "decoders", "refiner", "head")


def forward_mixed(m64: gr.GreenFormer, m16: gr.GreenFormer, x64: torch.Tensor, half_parts: tuple) -> dict:
    """The forward of `forward` with the parts in half_parts run by the fp16 model on fp16 inputs and the
    others by the float64 model, every part's outputs carried between parts in float64 ("head" = the
    upsampling of the logits, the sigmoids and the final logit sum). Tells which part's 16-bit arithmetic
    sets the distance of the fp16 model to float64."""
    def run(part, fn, *args):
        lo = part in half_parts
        args = [a.to(torch.float16 if lo else torch.float64) for a in args]
        out = fn(m16 if lo else m64, *args)
        return [o.to(torch.float64) for o in out] if isinstance(out, (list, tuple)) else out.to(torch.float64)

    with torch.no_grad():
        feats = run("encoder", lambda m, a: m.encoder(a), x64)
        al = run("decoders", lambda m, *f: m.alpha_decoder(list(f)), *feats)
        fl = run("decoders", lambda m, *f: m.fg_decoder(list(f)), *feats)
        S = x64.shape[2:]

        def up(m, a, f):
            a_up = F.interpolate(a, size=S, mode="bilinear", align_corners=False)
            f_up = F.interpolate(f, size=S, mode="bilinear", align_corners=False)
            return a_up, f_up, torch.cat([torch.sigmoid(a_up), torch.sigmoid(f_up)], dim=1)
        a_up, f_up, coarse = run("head", up, al, fl)
        delta = run("refiner", lambda m, a, c: m.refiner(a, c), x64[:, :3], coarse)
        alpha, fg = run("head", lambda m, a, f, d: (torch.sigmoid(a + d[:, 0:1]), torch.sigmoid(f + d[:, 1:4])),
                        a_up, f_up, delta)
    return {"alpha": alpha[0, 0].float().cpu().numpy(), "fg": fg[0].permute(1, 2, 0).float().cpu().numpy()}


def score_std(model: gr.GreenFormer, x: torch.Tensor) -> float:
    """Std of q.k/sqrt(d) in the first global-attention block (a sample of 2048 queries x all keys)."""
    hiera = model.hiera
    blk = next(b for b in hiera.blocks if not b.attn.use_mask_unit_attn and b.attn.q_stride == 1)
    grab = {}
    h = blk.attn.register_forward_hook(lambda m, inp, out: grab.setdefault("x", inp[0].detach()))
    with torch.no_grad():
        model.encoder(x)
    h.remove()
    a = blk.attn
    t = grab["x"]
    B, N, _ = t.shape
    qkv = a.qkv(t).reshape(B, -1, 3, a.heads, a.head_dim).permute(2, 0, 3, 1, 4)
    q, k = qkv[0][:, :, :2048], qkv[1]
    s = (q @ k.transpose(-1, -2)) / math.sqrt(a.head_dim)
    return float(s.double().std())


def rescale_outputs(sd: dict, x512: torch.Tensor) -> dict:
    """Scale the two classifiers and refiner.final so the logit / delta stds hit TARGET_STD (float64)."""
    model = build(sd, 512, torch.float64)
    o = forward(model, x512.to(DEV, torch.float64))
    del model
    sa = float(o["logits"][..., 0].std())
    sf = float(o["logits"][..., 1:].std())
    for name, s, tgt in (("alpha_decoder.classifier", sa, TARGET_STD["alpha"]),
                         ("fg_decoder.classifier", sf, TARGET_STD["fg"])):
        sd[name + ".weight"] = sd[name + ".weight"] * (tgt / s)
        sd[name + ".bias"] = sd[name + ".bias"] * (tgt / s)
    model = build(sd, 512, torch.float64)
    o = forward(model, x512.to(DEV, torch.float64))
    del model
    sdl = float(o["delta"].std())
    sd["refiner.final.weight"] = sd["refiner.final.weight"] * (TARGET_STD["delta"] / sdl)
    sd["refiner.final.bias"] = sd["refiner.final.bias"] * (TARGET_STD["delta"] / sdl)
    return sd


def make_input(size: int, seed: int) -> torch.Tensor:
    scene = mf.make_frame(size, size, seed)
    rgb = scene["rgb8"].astype(np.float32) / 255.0
    hint = scene["hint8"].astype(np.float32) / 255.0
    return mf.preprocess(rgb, hint, size)  # [1, 4, S, S] float32


def dist(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(d.max()), float(d.mean())


def rel_rms(a: np.ndarray, ref: np.ndarray) -> float:
    r = ref.astype(np.float64)
    return float(np.sqrt(np.mean((a.astype(np.float64) - r) ** 2)) / max(np.sqrt(np.mean(r ** 2)), 1e-30))


def run_ckey(args, ckpt: str, xpath: str, size: int, prec: str, env_extra: dict, tag: str) -> dict | None:
    odir = os.path.join(args.out, f"s{size}_{tag}")
    os.makedirs(odir, exist_ok=True)
    cmd = [args.ckey, "bench", "--checkpoint", ckpt, "--size", str(size), "--device", "cuda", "--precision", prec,
           "--input", xpath, "--dump", os.path.join(odir, "out.npy"), "--runs", "1", "--warmup", "0"]
    if args.intermediates:
        cmd += ["--dump-intermediates", odir]
    env = dict(os.environ, **env_extra)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"ckey {tag} at {size} failed ({r.returncode}): {r.stderr.strip()[-600:]}", flush=True)
        return None
    o = np.load(os.path.join(odir, "out.npy"))  # (S, S, 4): alpha, fg
    res = {"alpha": o[..., 0], "fg": o[..., 1:]}
    if args.intermediates:
        for n in ("f1", "f2", "f3", "f4"):
            res[n] = np.load(os.path.join(odir, n + ".npy"))[0]
        res["logits"] = np.load(os.path.join(odir, "logits.npy"))[0]
        res["delta"] = np.load(os.path.join(odir, "delta_raw.npy"))[0] * 10.0
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckey", default="build/ckey")
    ap.add_argument("--sizes", default="512,1024,2048")
    ap.add_argument("--precisions", default="fp16,bf16")
    ap.add_argument("--variant", action="append", default=[], help="NAME:ENV=VAL[,ENV=VAL]: extra ckey fp16 run")
    ap.add_argument("--intermediates", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--attribute", action="store_true",
                    help="also run the fp16 reference with one part at a time in fp16 (the rest float64), "
                         "with all parts but one, and in float64 on fp16-rounded weights")
    ap.add_argument("--out", default="/tmp/ckey-accuracy")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    precs = [p for p in args.precisions.split(",") if p]

    t0 = time.time()
    sd = rescale_outputs(realistic_weights(args.seed), make_input(512, args.seed))
    ckpt = os.path.join(args.out, "realistic_base_plus.safetensors")
    safetensors.torch.save_file({k: v.contiguous() for k, v in sd.items()}, ckpt,
                                metadata={"format": "pt", "head_dim": "56"})
    print(f"weights ready ({time.time() - t0:.0f} s): {ckpt}", flush=True)

    rows, stats, inter, failed = [], [], [], []
    for S in sizes:
        x = make_input(S, args.seed)
        xpath = os.path.join(args.out, f"x{S}.npy")
        np.save(xpath, x[0].permute(1, 2, 0).contiguous().numpy())
        runs = {}
        m = build(sd, S, torch.float64)
        runs["ref64"] = forward(m, x.to(DEV, torch.float64))
        stats.append(dict(size=S, score_std=score_std(m, x.to(DEV, torch.float64)),
                          alpha_logit_std=float(runs["ref64"]["logits"][..., 0].std()),
                          fg_logit_std=float(runs["ref64"]["logits"][..., 1:].std()),
                          delta_std=float(runs["ref64"]["delta"].std()),
                          alpha_mean=float(runs["ref64"]["alpha"].mean()),
                          alpha_sat=float(((runs["ref64"]["alpha"] < 1e-3) | (runs["ref64"]["alpha"] > 1 - 1e-3)).mean())))
        del m
        torch.cuda.empty_cache()
        m = build(sd, S, torch.float16)
        runs["half"] = forward(m, x.to(DEV, torch.float16))
        if args.attribute:
            m64 = build(sd, S, torch.float64)
            for p in PARTS:
                runs["half:only " + p] = forward_mixed(m64, m, x.to(DEV, torch.float64), (p,))
                runs["half:all but " + p] = forward_mixed(m64, m, x.to(DEV, torch.float64),
                                                          tuple(q for q in PARTS if q != p))
            del m64
            # the weights' own share: float64 arithmetic on the fp16-rounded parameters and buffers
            m16w = build({k: v.half().double() if v.is_floating_point() else v for k, v in sd.items()}, S, torch.float64)
            runs["fp16 weights, float64 arithmetic"] = forward(m16w, x.to(DEV, torch.float64))
            del m16w
        del m
        m = build(sd, S, torch.float32)
        runs["bf16ac"] = forward(m, x.to(DEV), torch.bfloat16)
        runs["fp32"] = forward(m, x.to(DEV))
        del m
        torch.cuda.empty_cache()
        for p in precs:
            r = run_ckey(args, ckpt, xpath, S, p, {}, "ckey_" + p)
            if r is not None:
                runs["ckey:" + p] = r
            else:
                failed.append(f"ckey:{p}@{S}")
        for v in args.variant:
            name, _, envs = v.partition(":")
            env = dict(e.split("=", 1) for e in envs.split(",") if e)
            r = run_ckey(args, ckpt, xpath, S, "fp16", env, "ckey_fp16_" + name)
            if r is not None:
                runs["ckey:fp16:" + name] = r
        ref = runs["ref64"]
        for name, r in runs.items():
            if name == "ref64":
                continue
            am, aa = dist(r["alpha"], ref["alpha"])
            fm, fa = dist(r["fg"], ref["fg"])
            rows.append(dict(size=S, run=name, alpha_max=am, alpha_mean=aa, fg_max=fm, fg_mean=fa))
            if args.intermediates and "f1" in r:
                inter.append(dict(size=S, run=name, **{k: rel_rms(r[k], ref[k])
                                                       for k in ("f1", "f2", "f3", "f4", "logits", "delta")}))
        print(f"S={S} done ({time.time() - t0:.0f} s)", flush=True)

    print("\n## Statistics of the float64 reference (realistic random weights)\n")
    print("| S | attention score std (first global block) | alpha logit std | fg logit std | delta std | "
          "mean alpha | alpha within 1e-3 of 0 or 1 |")
    print("|---|---|---|---|---|---|---|")
    for s in stats:
        print(f"| {s['size']} | {s['score_std']:.3f} | {s['alpha_logit_std']:.3f} | {s['fg_logit_std']:.3f} | "
              f"{s['delta_std']:.3f} | {s['alpha_mean']:.3f} | {s['alpha_sat']:.3f} |")
    print("\n## Distance to float64 (max / mean |d|)\n")
    print("| S | run | alpha max | alpha mean | fg max | fg mean |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['size']} | {r['run']} | {r['alpha_max']:.3e} | {r['alpha_mean']:.3e} | {r['fg_max']:.3e} | "
              f"{r['fg_mean']:.3e} |")
    if inter:
        print("\n## Intermediates: relative RMS distance to float64\n")
        print("| S | run | f1 | f2 | f3 | f4 | logits | delta |")
        print("|---|---|---|---|---|---|---|---|")
        for r in inter:
            print(f"| {r['size']} | {r['run']} | " + " | ".join(f"{r[k]:.2e}" for k in
                                                             ("f1", "f2", "f3", "f4", "logits", "delta")) + " |")

    gate = []
    for S in sizes:
        by = {r["run"]: r for r in rows if r["size"] == S}
        for mine, peer, factor in (("ckey:fp16", "half", 1.1), ("ckey:bf16", "bf16ac", 1.25)):
            if mine.split(":")[1] not in precs:
                continue
            if mine not in by:
                gate.append(dict(size=S, run=mine, ok=False, why="no result"))
                continue
            worst = max(by[mine][k] / max(by[peer][k], 1e-30) for k in ("alpha_max", "alpha_mean", "fg_max", "fg_mean"))
            gate.append(dict(size=S, run=mine, peer=peer, worst_ratio=worst, bound=factor, ok=worst <= factor))
    print("\n## Gate (worst of the four ratios to the PyTorch run of the same precision)\n")
    print("| S | run | against | worst ratio | bound | pass |")
    print("|---|---|---|---|---|---|")
    for g in gate:
        print(f"| {g['size']} | {g['run']} | {g.get('peer', '-')} | {g.get('worst_ratio', float('nan')):.3f} | "
              f"{g.get('bound', '-')} | {'yes' if g['ok'] else 'NO'} |")
    with open(os.path.join(args.out, "accuracy.json"), "w") as f:
        json.dump(dict(stats=stats, rows=rows, intermediates=inter, gate=gate, failed=failed), f, indent=1)
    ok = all(g["ok"] for g in gate) and not failed
    print(f"\naccuracy gate: {'PASS' if ok else 'FAIL'}  ({time.time() - t0:.0f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
