"""Trains ckey's built-in small keyer (GreenFormer "small", tools/reference/greenformer_ref.py) from scratch
on procedural green-screen data (greenscreen.py), on the GPU machine. Never in the engine's path.

    python3 tools/train/train.py --state DIR [--minutes 9] [--steps 20000] [--batch 12] [--size 512] [--seed 0]
    python3 tools/train/train.py --state DIR --export model.safetensors     # fp16 weights for ckey
    python3 tools/train/train.py --state NEW --init models/ckey-small.safetensors ...   # continue a shipped model
    python3 tools/train/train.py --state NEW --init ... --size 2048 --batch 1 --pos-grid 256 --freeze-bn ...
    python3 tools/train/widen.py models/ckey-small.safetensors wide.safetensors   # refiner width doubled, same output
    python3 tools/train/train.py --state NEW --init wide.safetensors ...          # the width follows the file

One run continues over several invocations: every invocation resumes from DIR (model, optimizer, step,
loss history), trains until --minutes have passed or --steps are done, and saves DIR again (written to
temporary names, then renamed). The learning rate follows one schedule over --steps (linear warm-up, then
cosine), so the result does not depend on how the run was cut into invocations; the data of step k is
batch k of the generator's stream (seeded by --seed and k), so a resumed run sees what an uninterrupted
one would. Adam's moments are stored in bfloat16 (the state's files stay under 16 MB each).

Loss per sample (recipe 1; recipe 2 adds the edge band's L1 and weighs fg uniformly, see losses()): L1 on alpha, L1 on the foreground (sRGB) weighted 0.25 + 0.75·alpha where alpha > 0.002, L1 on alpha's spatial gradients
(edges), and the same alpha/fg terms at half weight on the coarse decoder output σ(logits_up). --cast-weight adds
interior_cast(), the fg's colour cast over opaque interiors.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.utils import parametrize

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, HERE)
import greenformer_ref as gref  # noqa: E402
from greenscreen import GreenScreen  # noqa: E402

MEAN = torch.tensor(gref.IMAGENET_MEAN).view(1, 3, 1, 1)
STD = torch.tensor(gref.IMAGENET_STD).view(1, 3, 1, 1)


def forward(model, rgb, hint):
    """The network as ckey runs it: normalized sRGB + hint in; final and coarse outputs."""
    x = torch.cat([(rgb - MEAN.to(rgb)) / STD.to(rgb), hint], 1)
    feats = model.encoder(x)
    a_log = model.alpha_decoder(feats)
    f_log = model.fg_decoder(feats)
    size = x.shape[2:]
    a_up = F.interpolate(a_log, size=size, mode="bilinear", align_corners=False)
    f_up = F.interpolate(f_log, size=size, mode="bilinear", align_corners=False)
    coarse_a, coarse_f = torch.sigmoid(a_up), torch.sigmoid(f_up)
    delta = model.refiner(x[:, :3], torch.cat([coarse_a, coarse_f], 1))
    return torch.sigmoid(a_up + delta[:, 0:1]), torch.sigmoid(f_up + delta[:, 1:4]), coarse_a, coarse_f


class ResizedPosEmbed(torch.nn.Module):
    """Parametrization of Hiera's pos_embed: the learned table is a [1, G*G, C] grid, the network adds it resized
    to its own token grid with CorridorKey's loader (bicubic), as ckey does when it runs a model above its
    training size. So a model trained at 2048 can keep the 256-grid table of one trained at 1024 (the file stays
    small) and be keyed exactly as it was trained. The bicubic resize is separable and linear: it is applied as
    R · table · Rᵀ with R the resize of the identity, because the backward of torch's bicubic is not
    deterministic."""

    def __init__(self, grid_src, grid_dst):
        super().__init__()
        eye = torch.eye(grid_src).view(grid_src, 1, grid_src, 1)
        r = torch.nn.functional.interpolate(eye, size=(grid_dst, 1), mode="bicubic", align_corners=False)
        self.register_buffer("r", r.view(grid_src, grid_dst).t().contiguous(), persistent=False)  # [g_dst, g_src]

    def forward(self, table):  # [1, G*G, C] -> [1, g*g, C]
        g_src, c = self.r.shape[1], table.shape[2]
        img = table.float().view(g_src, g_src, c)
        with torch.autocast(table.device.type, enabled=False):  # float32, as the loader resizes (not bf16 matmuls)
            out = torch.einsum("yi,ijc,xj->yxc", self.r, img, self.r)
        return out.reshape(1, -1, c).to(table.dtype)


POS_PARAM = "encoder.model.parametrizations.pos_embed.original"


def use_pos_grid(model, size, grid, table=None):
    """Replace the model's pos_embed (grid size/4) by a learned grid x grid table (initialized from `table`, else
    resized from the current one) that the forward pass resizes to size/4."""
    hiera = model.hiera
    if table is None:
        table = hiera.pos_embed.detach()
    if table.shape[1] != grid * grid:
        table = gref.resize_pos_embed(table, grid * grid)
    dev = hiera.pos_embed.device
    hiera.pos_embed = torch.nn.Parameter(table.detach().clone().to(dev))
    parametrize.register_parametrization(hiera, "pos_embed", ResizedPosEmbed(grid, size // 4).to(dev), unsafe=True)
    with torch.no_grad():  # the matrix form against the loader's own resize
        ref = gref.resize_pos_embed(hiera.parametrizations.pos_embed.original, (size // 4) ** 2)
        err = float((hiera.pos_embed - ref).abs().max())
    assert err <= 1e-5 * (1.0 + float(ref.abs().max())), f"position table resize differs from the loader's by {err}"


def interior_cast(pf, fg, alpha, cell=16):
    """The fg's colour cast over opaque interiors: per cell of cell × cell pixels that are at least half opaque
    (alpha ≥ 0.998), the absolute mean error per channel, averaged over such cells. A per-pixel L1 weighs a cast of
    0.01 no more than grain of the same size; this term sees only the cast (zero-mean noise averages out)."""
    solid = (alpha >= 0.998).to(pf.dtype)
    n = F.avg_pool2d(solid, cell)                                  # (B, 1, H/cell, W/cell): opaque share
    e = F.avg_pool2d((pf - fg) * solid, cell) / n.clamp(min=1e-6)  # (B, 3, ..): mean error of the opaque pixels
    keep = (n >= 0.5).to(pf.dtype)
    return (e.abs() * keep).sum() / (3 * keep.sum()).clamp(min=1.0)


def losses(pa, pf, ca, cf, alpha, fg, recipe=1, fg_weight=1.0, cast_weight=0.0):
    """recipe 1 (versions 0 and 1): fg weighted 0.25 + 0.75·alpha on covered pixels. recipe 2 (version 2):
    the terms `ckey quality` scores, each as its own mean: fg uniform over covered pixels, plus L1 on the
    semi-transparent pixels (0.002 < alpha < 0.998, the edge band) with weight 1, so the few edge pixels of a plate
    weigh as much as all its solid ones. fg_weight scales both fg terms (final and coarse). cast_weight adds
    interior_cast() of the final and (at half weight) the coarse fg."""
    covered = alpha > 0.002
    if recipe >= 2:
        w = covered.to(alpha.dtype)
    else:
        w = torch.where(covered, 0.25 + 0.75 * alpha, torch.zeros_like(alpha))
    l_a = (pa - alpha).abs().mean()
    l_f = ((pf - fg).abs() * w).sum() / (3 * w.sum() + 1.0)
    gx = lambda t: t[..., :, 1:] - t[..., :, :-1]  # noqa: E731
    gy = lambda t: t[..., 1:, :] - t[..., :-1, :]  # noqa: E731
    l_g = (gx(pa) - gx(alpha)).abs().mean() + (gy(pa) - gy(alpha)).abs().mean()
    l_ca = (ca - alpha).abs().mean()
    l_cf = ((cf - fg).abs() * w).sum() / (3 * w.sum() + 1.0)
    total = l_a + fg_weight * l_f + 0.5 * l_g + 0.5 * (l_ca + fg_weight * l_cf)
    parts = dict(alpha=l_a, fg=l_f, grad=l_g, coarse=l_ca)
    if recipe >= 2:
        band = ((alpha > 0.002) & (alpha < 0.998)).to(alpha.dtype)  # blur tails leave 1e-7s: not edges
        parts["edge"] = ((pa - alpha).abs() * band).sum() / (band.sum() + 1.0)
        total = total + parts["edge"]
    if cast_weight > 0:
        parts["cast"] = interior_cast(pf, fg, alpha)
        total = total + cast_weight * (parts["cast"] + 0.5 * interior_cast(cf, fg, alpha))
    return total, {k: v.detach() for k, v in parts.items()}  # tensors: read back only when printed (no sync per step)


def lr_at(step, steps, base, warm=500):  # warm: the state's "warmup" (default 500 steps)
    if step < warm:
        return base * (step + 1) / warm
    t = (step - warm) / max(1, steps - warm)
    return base * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


STATE_FILES = ("model.pt", "adam.pt", "meta.json")


def save_state(d, model, opt, meta):
    os.makedirs(d, exist_ok=True)
    moments = {}
    params = [p for g in opt.param_groups for p in g["params"]]  # indexed as load_state indexes them
    for i, p in enumerate(params):
        if p not in opt.state:
            continue
        st = opt.state[p]
        moments[i] = {"exp_avg": st["exp_avg"].to(torch.bfloat16).cpu(), "exp_avg_sq": st["exp_avg_sq"].to(torch.bfloat16).cpu(),
                      "step": st["step"].cpu() if torch.is_tensor(st["step"]) else torch.tensor(st["step"])}
    for name, obj in (("model.pt", {k: v.cpu() for k, v in model.state_dict().items()}), ("adam.pt", moments)):
        torch.save(obj, os.path.join(d, name + ".tmp"))
    with open(os.path.join(d, "meta.json.tmp"), "w") as f:
        json.dump(meta, f, indent=1)
    for name in STATE_FILES:
        os.replace(os.path.join(d, name + ".tmp"), os.path.join(d, name))


def load_state(d, model, opt):
    if not os.path.exists(os.path.join(d, "meta.json")):
        return None
    model.load_state_dict(torch.load(os.path.join(d, "model.pt"), map_location="cpu"))
    moments = torch.load(os.path.join(d, "adam.pt"), map_location="cpu")
    params = [p for g in opt.param_groups for p in g["params"]]
    for i, m in moments.items():
        p = params[int(i)]
        opt.state[p] = {"exp_avg": m["exp_avg"].float().to(p.device), "exp_avg_sq": m["exp_avg_sq"].float().to(p.device),
                        "step": m["step"].float()}
    with open(os.path.join(d, "meta.json")) as f:
        return json.load(f)


def read_safetensors(path):
    """{name: float32/int64 tensor} from a safetensors file (average.read: numpy, no other dependency)."""
    import numpy as np
    from average import read
    arrays, _ = read(path)
    return {k: torch.from_numpy(a.astype(np.float32) if a.dtype != np.int64 else a.copy()) for k, a in arrays.items()}


def export(model, path, size):
    from safetensors.torch import save_file
    sd = {("encoder.model.pos_embed" if k == POS_PARAM else k): (v.half() if v.is_floating_point() else v).contiguous().cpu()
          for k, v in model.state_dict().items()}
    meta = {"format": "pt", "head_dim": str(gref.CONFIGS["small"]["head_dim"]), "train_size": str(size),
            "name": "ckey built-in small keyer", "licence": "same as ckey"}
    save_file(sd, path + ".tmp", metadata=meta)
    os.replace(path + ".tmp", path)
    print(f"exported {len(sd)} tensors to {path} ({os.path.getsize(path) / 1e6:.1f} MB)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--state", required=True)
    ap.add_argument("--minutes", type=float, default=9.0)
    ap.add_argument("--steps", type=int, default=None, help="planned steps (default 6000; a resumed run keeps its own unless given)")
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--export", help="write the fp16 safetensors for ckey and exit")
    ap.add_argument("--init", help="start a new state from these safetensors weights (e.g. the shipped model)")
    ap.add_argument("--recipe", type=int, default=1, choices=(1, 2),
                    help="loss recipe of a new state (see losses(); a resumed run keeps its own)")
    ap.add_argument("--fg-weight", type=float, default=None,
                    help="weight of the fg terms (default 1; a resumed run keeps its own unless given)")
    ap.add_argument("--cast-weight", type=float, default=None,
                    help="weight of the interior colour-cast term (losses(); default 0; a resumed run keeps its own "
                         "unless given)")
    ap.add_argument("--data", type=int, default=1, choices=(1, 2),
                    help="training data of a new state (greenscreen.py: 2 adds fast-moving and defocused props and "
                         "tinted glass; a resumed run keeps its own)")
    ap.add_argument("--rest-lr-scale", type=float, default=1.0,
                    help="a new state's learning-rate factor for everything but the refiner (e.g. 0.2 after widen.py)")
    ap.add_argument("--warmup", type=int, default=500, help="a new state's linear warm-up, in steps")
    ap.add_argument("--pos-grid", type=int, default=None,
                    help="a new state's position table grid (default --size/4); the forward resizes it to --size/4")
    ap.add_argument("--freeze-bn", action="store_true",
                    help="a new state's BatchNorm layers keep their running statistics (for batches of 1 or 2)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args(argv)

    torch.manual_seed(a.seed)
    dev = a.device
    fresh = not os.path.exists(os.path.join(a.state, "meta.json"))
    size, pos_grid, freeze_bn = a.size, a.pos_grid, a.freeze_bn  # a resumed state keeps its own (the note below
    if not fresh:                                                  # names a different --size)
        with open(os.path.join(a.state, "meta.json")) as f:
            m = json.load(f)
        size, pos_grid, freeze_bn = m["size"], m.get("pos_grid"), m.get("freeze_bn", False)
    rest_lr = a.rest_lr_scale if fresh else m.get("rest_lr_scale", 1.0)
    init = read_safetensors(a.init) if fresh and a.init else None
    # the refiner's width: the state's, else the --init file's (tools/train/widen.py doubles it), else the config's
    hidden = gref.CONFIGS["small"]["refiner_hidden"]
    if not fresh:
        hidden = m.get("refiner_hidden", hidden)
    elif init is not None:
        hidden = int(init["refiner.stem.0.weight"].shape[0])
    model = gref.GreenFormer("small", size)
    if hidden != model.refiner.stem[0].out_channels:
        model.refiner = gref.CNNRefinerModule(7, hidden, 4)
    model = model.to(dev)
    if init is not None:
        gref.load_state_dict_like_engine(model, init)  # pos_embed resized to --size
        print(f"initialized from {a.init}")
    if pos_grid and pos_grid != size // 4:
        src = init.get("encoder.model.pos_embed") if init is not None else None
        use_pos_grid(model, size, pos_grid, None if src is None else src.to(dev))
    model.train()
    if freeze_bn:  # eval mode on the BatchNorms: running statistics used and kept, affines still learned
        model.train = lambda mode=True: (torch.nn.Module.train(model, mode), [
            bn.eval() for bn in model.modules() if isinstance(bn, torch.nn.BatchNorm2d)])[0]
        model.train()
    # parameter groups: weight decay on matrices but the position table; with --rest-lr-scale, the refiner's
    # groups apart from the rest (a resumed state rebuilds the same groups, in the same order, from its meta)
    decays = lambda ps: ([p for n, p in ps if p.ndim > 1 and "pos_embed" not in n],  # noqa: E731
                         [p for n, p in ps if not (p.ndim > 1 and "pos_embed" not in n)])
    named = list(model.named_parameters())
    splits = [(named, 1.0)] if rest_lr == 1.0 else [([x for x in named if x[0].startswith("refiner.")], 1.0),
                                                     ([x for x in named if not x[0].startswith("refiner.")], rest_lr)]
    groups = []
    for ps, scale in splits:
        d, nd = decays(ps)
        groups += [{"params": d, "weight_decay": 0.02, "lr_scale": scale},
                   {"params": nd, "weight_decay": 0.0, "lr_scale": scale}]
    opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.99))
    meta = load_state(a.state, model, opt) or {"step": 0, "seed": a.seed, "size": a.size, "batch": a.batch,
                                              "steps": a.steps or 6000, "lr": a.lr, "history": [], "seconds": 0.0,
                                              "recipe": a.recipe, "pos_grid": pos_grid, "freeze_bn": freeze_bn,
                                              "warmup": a.warmup, "refiner_hidden": hidden,
                                              "rest_lr_scale": rest_lr, "data": a.data}
    if a.steps and a.steps != meta["steps"]:
        print(f"note: the schedule now ends at step {a.steps} (was {meta['steps']})")
        meta["steps"] = a.steps
    if a.fg_weight is not None and a.fg_weight != meta.get("fg_weight", 1.0):
        print(f"note: fg terms now weighted {a.fg_weight} (was {meta.get('fg_weight', 1.0)}) from step {meta['step']}")
        meta["fg_weight"] = a.fg_weight
        meta.setdefault("changes", []).append({"step": meta["step"], "fg_weight": a.fg_weight})
    if a.cast_weight is not None and a.cast_weight != meta.get("cast_weight", 0.0):
        print(f"note: cast term now weighted {a.cast_weight} (was {meta.get('cast_weight', 0.0)}) from step {meta['step']}")
        meta["cast_weight"] = a.cast_weight
        meta.setdefault("changes", []).append({"step": meta["step"], "cast_weight": a.cast_weight})
    if a.export:
        model.eval()
        export(model, a.export, meta["size"])
        return 0
    for k in ("seed", "size", "batch"):
        if meta[k] != getattr(a, k):
            print(f"note: resuming with the state's {k} = {meta[k]} (asked {getattr(a, k)})")
    gen = GreenScreen(meta["size"], dev, meta["seed"], meta.get("data", 1))
    t0, step = time.time(), meta["step"]
    acc, n_acc = {}, 0
    print(f"step {step} of {meta['steps']}: training for {a.minutes} min on {dev}", flush=True)
    timed = dev == "cuda"  # GPU time of the data generator and of the training step, per printed window
    events = []
    while step < meta["steps"] and time.time() - t0 < 60 * a.minutes:
        for g in opt.param_groups:
            g["lr"] = lr_at(step, meta["steps"], meta["lr"], meta.get("warmup", 500)) * g["lr_scale"]
        if timed:
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
            ev[0].record()
        with torch.no_grad():
            rgb, hint, alpha, fg = gen.batch(meta["batch"], step)
        if timed:
            ev[1].record()
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=dev == "cuda"), parametrize.cached():
            pa, pf, ca, cf = forward(model, rgb, hint)  # cached: the position table resized once per step
        loss, parts = losses(pa.float(), pf.float(), ca.float(), cf.float(), alpha, fg, meta.get("recipe", 1),
                             meta.get("fg_weight", 1.0), meta.get("cast_weight", 0.0))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if timed:
            ev[2].record()
            events.append(ev)
        step += 1
        for k, v in parts.items():
            acc[k] = acc.get(k, 0.0) + v
        n_acc += 1
        if step % 200 == 0:
            row = {"step": step, "min": round((time.time() - t0) / 60 + meta["seconds"] / 60, 2), **{k: round(float(v) / n_acc, 5) for k, v in acc.items()}, "lr": round(lr_at(step, meta["steps"], meta["lr"], meta.get("warmup", 500)), 6)}
            if events:
                torch.cuda.synchronize()
                row["gen_ms"] = round(sum(e[0].elapsed_time(e[1]) for e in events) / len(events), 2)
                row["step_ms"] = round(sum(e[1].elapsed_time(e[2]) for e in events) / len(events), 2)
                events = []
            meta["history"].append(row)
            print(json.dumps(row), flush=True)
            acc, n_acc = {}, 0
    meta["step"] = step
    meta["seconds"] += time.time() - t0
    save_state(a.state, model, opt, meta)
    print(f"saved step {step} ({meta['seconds'] / 60:.1f} min of training in all) to {a.state}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
