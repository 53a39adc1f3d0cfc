#!/usr/bin/env python3
"""Reduced-precision study of the GreenFormer network: how far do bf16 / fp16 forwards drift from fp32?

Runs the PyTorch reference network (greenformer_ref.py) once in strict float32 and then in a set of
reduced-precision variants on the same structured synthetic frame (make_fixtures.make_frame, quantized
to 8 bits and pre-processed exactly as the fixtures are), and prints a Markdown table of the differences
of the final outputs and of the coarse (pre-refiner) predictions against the fp32 forward.

    python3 tools/reference/precision_study.py --size 512 --checkpoint /tmp/bp.safetensors
    python3 tools/reference/precision_study.py --size 512 --calibrate     # weights generated in memory

Without --checkpoint the base_plus weights are generated in memory exactly as random_checkpoint.py does
(greenformer_ref.init_weights, seed --seed, training grid 2048); --calibrate additionally fits the three
output layers as make_fixtures.py does (a structured, non-saturated matte, closer to a trained model).

Variants (a part "in bf16" means its parameters are stored in bf16 and its inputs are cast to bf16 on
entry, so every activation inside it is bf16; parts "in fp32" are untouched):

    autocast bf16 / fp16   torch.autocast(device_type="cpu"): matmuls, convs and attention in low
                           precision, norms and the residual stream in fp32
    bf16 weights           parameters rounded to bf16, computation in fp32
    bf16 / fp16            the whole network in bf16 / fp16 (model.to(dtype), input cast)
    ... , X fp32           the whole network in bf16 except part X
    bf16 X only            only part X in bf16

Parts: "stage 0" = patch embedding, position embedding and the blocks of the first Hiera stage;
"encoder" = the whole Hiera; "decoders" = both decoder heads; "refiner" = the CNN refiner.

In every variant the output head -- bilinear upsampling of the decoder logits to S, the coarse sigmoids,
the logit-space sum with the refiner delta and the final sigmoids -- runs in fp32 on the (upcast) logits
and delta, except in the "bf16, outputs bf16" row, where that head also runs in bf16.

Columns: max |d| (and mean |d|) of the final alpha (channel 0) and fg (channels 1-3); max |d| of the
coarse predictions sigmoid(upsampled logits) and of the decoder logits at S/4; max |d| of the refiner
delta (already x10).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import greenformer_ref as gr  # noqa: E402
import make_fixtures as mf  # noqa: E402

# ----------------------------------------------------------------------------------------------------
# Model, weights, input
# ----------------------------------------------------------------------------------------------------


def load_weights(path: str) -> dict:
    if path.endswith(".safetensors"):
        import safetensors.torch
        return safetensors.torch.load_file(path)
    return torch.load(path, map_location="cpu", weights_only=True)


def build_fp32_model(config: str, size: int, checkpoint: str | None, seed: int, calibrate: bool) -> gr.GreenFormer:
    if checkpoint is not None:
        sd = load_weights(checkpoint)
    else:
        model_t = gr.build_model(config, gr.CONFIGS[config]["default_train_size"])
        gr.init_weights(model_t, seed)
        sd = {k: v.clone() for k, v in model_t.state_dict().items()}
        del model_t
    if calibrate:
        sd = {k[len(mf.PREFIX):] if k.startswith(mf.PREFIX) else k: v.float() if v.is_floating_point() else v
              for k, v in sd.get("state_dict", sd).items()}
        mf.calibrate(sd, config, seed)
    model = gr.build_model(config, size)
    gr.load_state_dict_like_engine(model, sd)
    return model


def make_input(config: str, size: int, seed: int) -> torch.Tensor:
    """The fixtures' synthetic green-screen frame and hint, 8-bit quantized, pre-processed to [1,4,S,S]."""
    fh, fw = mf.DEFAULT_FRAME[config]
    scene = mf.make_frame(fh, fw, seed)
    rgb = scene["rgb8"].astype(np.float32) / 255.0
    hint = scene["hint8"].astype(np.float32) / 255.0
    return mf.preprocess(rgb, hint, size)


# ----------------------------------------------------------------------------------------------------
# Mixed-dtype forward
# ----------------------------------------------------------------------------------------------------


def _cast(obj, dtype):
    if torch.is_tensor(obj) and obj.is_floating_point():
        return obj.to(dtype)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_cast(o, dtype) for o in obj)
    return obj


def _param_dtype(module: nn.Module) -> torch.dtype:
    return next(module.parameters()).dtype


def install_cast_hooks(model: gr.GreenFormer) -> None:
    """Cast the inputs of each part to the dtype of its parameters, so parts of mixed dtypes compose."""
    hiera = model.hiera
    parts = [hiera.patch_embed, *hiera.blocks, model.alpha_decoder, model.fg_decoder, model.refiner]
    for m in parts:
        m.register_forward_pre_hook(lambda mod, args: _cast(args, _param_dtype(mod)))


def parts_of(model: gr.GreenFormer) -> dict:
    """name -> list of modules / parameters making up that part of the network."""
    hiera = model.hiera
    stage0 = [hiera.blocks[i] for i in range(hiera.stage_ends[0] + 1)]
    return {
        "stage0": [hiera.patch_embed, *stage0],
        "encoder": [hiera],
        "decoders": [model.alpha_decoder, model.fg_decoder],
        "refiner": [model.refiner],
    }


def set_part_dtype(model: gr.GreenFormer, part: str, dtype: torch.dtype) -> None:
    for m in parts_of(model)[part]:
        m.to(dtype)
    if part == "stage0":  # the position embedding belongs to the Hiera module itself
        hiera = model.hiera
        hiera.pos_embed.data = hiera.pos_embed.data.to(dtype)


def forward(model: gr.GreenFormer, x: torch.Tensor, head_dtype: torch.dtype = torch.float32,
            autocast_dtype: torch.dtype | None = None) -> dict:
    """GreenFormer.forward with the output head in ``head_dtype`` and the body optionally under autocast."""
    with torch.no_grad():
        if autocast_dtype is not None:
            ctx = torch.autocast(device_type="cpu", dtype=autocast_dtype)
        else:
            ctx = torch.autocast(device_type="cpu", enabled=False)
        with ctx:
            features = model.encoder(x)
            alpha_logits = model.alpha_decoder(features)
            fg_logits = model.fg_decoder(features)
        size = x.shape[2:]
        a_up = F.interpolate(alpha_logits.to(head_dtype), size=size, mode="bilinear", align_corners=False)
        fg_up = F.interpolate(fg_logits.to(head_dtype), size=size, mode="bilinear", align_corners=False)
        a_coarse = torch.sigmoid(a_up)
        fg_coarse = torch.sigmoid(fg_up)
        with ctx:
            delta = model.refiner(x[:, :3], torch.cat([a_coarse, fg_coarse], dim=1))
        delta = delta.to(head_dtype)
        alpha = torch.sigmoid(a_up + delta[:, 0:1])
        fg = torch.sigmoid(fg_up + delta[:, 1:4])
    out = dict(alpha=alpha, fg=fg, alpha_coarse=a_coarse, fg_coarse=fg_coarse, alpha_logits=alpha_logits,
               fg_logits=fg_logits, delta=delta)
    return {k: v.float() for k, v in out.items()}


# ----------------------------------------------------------------------------------------------------
# Variants
# ----------------------------------------------------------------------------------------------------

BF16, FP16, FP32 = torch.bfloat16, torch.float16, torch.float32
ALL_PARTS = ("encoder", "decoders", "refiner")


def variants():
    """(label, per-part dtypes applied in order, autocast dtype, head dtype, round weights to bf16)."""
    whole = lambda dt: [(p, dt) for p in ALL_PARTS]  # noqa: E731
    return [
        ("autocast bf16", [], BF16, FP32, False),
        ("autocast fp16", [], FP16, FP32, False),
        ("bf16 weights, fp32 compute", [], None, FP32, True),
        ("bf16", whole(BF16), None, FP32, False),
        ("bf16, outputs bf16", whole(BF16), None, BF16, False),
        ("fp16", whole(FP16), None, FP32, False),
        ("bf16, refiner fp32", whole(BF16) + [("refiner", FP32)], None, FP32, False),
        ("bf16, stage 0 fp32", whole(BF16) + [("stage0", FP32)], None, FP32, False),
        ("bf16, decoders fp32", whole(BF16) + [("decoders", FP32)], None, FP32, False),
        ("bf16 stage 0 only", [("stage0", BF16)], None, FP32, False),
        ("bf16 encoder only", [("encoder", BF16)], None, FP32, False),
        ("bf16 decoders only", [("decoders", BF16)], None, FP32, False),
        ("bf16 refiner only", [("refiner", BF16)], None, FP32, False),
    ]


def make_variant(base: gr.GreenFormer, part_dtypes, round_bf16: bool) -> gr.GreenFormer:
    model = copy.deepcopy(base)
    if round_bf16:
        with torch.no_grad():
            for t in list(model.parameters()) + list(model.buffers()):
                if t.is_floating_point():
                    t.copy_(t.to(BF16).float())
    for part, dt in part_dtypes:
        set_part_dtype(model, part, dt)
    install_cast_hooks(model)
    return model.eval()


# ----------------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------------

COLUMNS = [
    ("alpha max", "alpha", "max"), ("alpha mean", "alpha", "mean"),
    ("fg max", "fg", "max"), ("fg mean", "fg", "mean"),
    ("coarse alpha max", "alpha_coarse", "max"), ("coarse fg max", "fg_coarse", "max"),
    ("alpha logits max", "alpha_logits", "max"), ("fg logits max", "fg_logits", "max"),
    ("delta max", "delta", "max"),
]


def diff_row(ref: dict, out: dict) -> list:
    row = []
    for _, key, kind in COLUMNS:
        d = (out[key].double() - ref[key].double()).abs()
        if not torch.isfinite(d).all():
            row.append("non-finite")
        else:
            row.append(f"{float(d.max() if kind == 'max' else d.mean()):.2e}")
    return row


def describe(ref: dict) -> str:
    a, f, dl = ref["alpha"], ref["fg"], ref["delta"]
    soft = float(((a > 0.02) & (a < 0.98)).float().mean())
    return (f"fp32 reference: alpha mean {float(a.mean()):.3f} std {float(a.std()):.3f}, fraction in (0.02, 0.98) "
            f"{soft:.3f}; fg mean {float(f.mean()):.3f} std {float(f.std()):.3f}; alpha logits "
            f"[{float(ref['alpha_logits'].min()):.2f}, {float(ref['alpha_logits'].max()):.2f}]; "
            f"|delta| mean {float(dl.abs().mean()):.3f} max {float(dl.abs().max()):.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n")[2:]))
    ap.add_argument("--config", choices=sorted(gr.CONFIGS), default="base_plus")
    ap.add_argument("--size", type=int, default=512, help="model resolution S (multiple of 32, default 512)")
    ap.add_argument("--checkpoint", default=None,
                    help=".safetensors / .pth weights (default: generate with greenformer_ref.init_weights)")
    ap.add_argument("--seed", type=int, default=0, help="weight seed (without --checkpoint) and frame seed")
    ap.add_argument("--calibrate", action="store_true",
                    help="fit the output layers to the synthetic frame first (as make_fixtures.py does)")
    ap.add_argument("--only", default=None,
                    help="comma-separated subset of variant labels to run (default: all)")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    t0 = time.time()
    base = build_fp32_model(args.config, args.size, args.checkpoint, args.seed, args.calibrate)
    x = make_input(args.config, args.size, args.seed)
    src = args.checkpoint or f"init_weights(seed={args.seed})"
    print(f"model: {args.config} S={args.size}, weights {src}{', output layers calibrated' if args.calibrate else ''}"
          f" ({time.time() - t0:.1f}s)")
    t0 = time.time()
    ref = forward(base, x)
    print(f"fp32 forward: {time.time() - t0:.1f}s")
    print(describe(ref))
    print()

    wanted = None if args.only is None else {s.strip() for s in args.only.split(",")}
    header = ["variant", *(c[0] for c in COLUMNS), "time s"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for label, part_dtypes, ac, head, round_bf16 in variants():
        if wanted is not None and label not in wanted:
            continue
        model = None
        try:
            model = make_variant(base, part_dtypes, round_bf16)
            t0 = time.time()
            out = forward(model, x.to(_param_dtype(model.hiera.patch_embed)), head_dtype=head, autocast_dtype=ac)
            dt = time.time() - t0
            cells = diff_row(ref, out) + [f"{dt:.1f}"]
        except (RuntimeError, NotImplementedError) as e:
            msg = str(e).split("\n")[0][:80].replace("|", "/")
            cells = [f"unsupported: {msg}"] + [""] * len(COLUMNS)
        print("| " + " | ".join([label, *cells]) + " |", flush=True)
        del model
    return 0


if __name__ == "__main__":
    sys.exit(main())
