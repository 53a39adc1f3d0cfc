#!/usr/bin/env python3
"""PyTorch reference implementation of the CorridorKey "GreenFormer" network.

This mirrors CorridorKeyModule/core/model_transformer.py (see docs/model_spec.md §2-§6): a timm Hiera
encoder wrapped by timm's features_only machinery (FeatureGetterNet), with the patch embedding replaced
by a 4-input conv, two SegFormer-style decoder heads, a dilated CNN refiner and the logit-space
residual combination. Module attribute names are chosen so that ``state_dict()`` produces exactly the
key names and order of the released checkpoint (spec §6.2, without the ``_orig_mod.`` prefix).

Two configurations:

``base_plus``  -- the production network: ``timm.create_model("hiera_base_plus_224", features_only=True,
                  img_size=S)``; decoder width 256, refiner width 64, head_dim 56, 24 blocks, 367 keys.

``tiny``       -- a small network with the same structure, for committed test fixtures. The encoder is
                  timm's ``Hiera`` class built through the same ``create_model(..., features_only=True)``
                  path (registered name ``hiera_tiny_224`` with every architectural argument overridden),
                  so it is wrapped by the same FeatureGetterNet and keys stay ``encoder.model.*``:

                      embed_dim=16, num_heads=2, stages=(1, 2, 2, 1), q_pool=3, q_stride=(2, 2),
                      mask_unit_size=(8, 8), mask_unit_attn=(True, True, False, False),
                      dim_mul=2, head_mul=2, patch 7x7 / stride 4 / pad 3, mlp_ratio=4

                  decoder width 32, refiner width 16 (GroupNorm with 8 groups of 2 channels).
                  stage_ends = [0, 2, 4, 5], q-pool blocks = [1, 3, 5], head_dim = 16/2 = 8 everywhere.

    Tiny block table (the mask-unit flag is read before the stage counter advances, so the first block
    of a stage uses the previous stage's setting -- the "lag"):

    blk stage  C_in->C_out heads q_stride  expand proj + 2x2 pool  window(flat)  attention
    0   0      16 -> 16    2     1         no                      64            mask-unit   (stage end 0)
    1   1      16 -> 32    4     4         yes                     16            mask-unit + q-pool
    2   1      32 -> 32    4     1         no                      16            mask-unit   (stage end 1)
    3   2      32 -> 64    8     4         yes                     4             mask-unit + q-pool (lagged flag)
    4   2      64 -> 64    8     1         no                      4             global      (stage end 2)
    5   3      64 -> 128   16    4         yes                     1             global + q-pool (stage end 3)

    So the tiny config covers: plain windowed blocks (0, 2), windowed q-pool with the projected pooled
    residual (1), the lagged windowed block at the start of stage 2 (3), global attention (4) and global
    attention with q-pooling (5). At S=128 the stage grids are 32, 16, 8, 4 and there are 4x4 = 16 mask
    units; at S=64 the grids are 16, 8, 4, 2 with 2x2 mask units.

Numerics: everything runs in float32 on the CPU with TF32 disabled and deterministic algorithms.

Run this file directly for self-checks:

    python3 tools/reference/greenformer_ref.py --config base_plus --size 2048 --keys   # 367-key check
    python3 tools/reference/greenformer_ref.py --config tiny --size 128                # forward + stats
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
import timm
import torch
import torch.nn as nn
import torch.nn.functional as F

# ----------------------------------------------------------------------------------------------------
# Numerics: strict fp32, deterministic.
# ----------------------------------------------------------------------------------------------------


def set_strict_fp32() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.use_deterministic_algorithms(True)


set_strict_fp32()

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

CONFIGS = {
    "base_plus": dict(
        timm_name="hiera_base_plus_224",
        hiera_kwargs={},
        decoder_dim=256,
        refiner_hidden=64,
        head_dim=56,
        default_train_size=2048,
    ),
    "tiny": dict(
        timm_name="hiera_tiny_224",
        hiera_kwargs=dict(
            embed_dim=16,
            num_heads=2,
            stages=(1, 2, 2, 1),
            q_pool=3,
            q_stride=(2, 2),
            mask_unit_size=(8, 8),
            mask_unit_attn=(True, True, False, False),
            dim_mul=2.0,
            head_mul=2.0,
            patch_kernel=(7, 7),
            patch_stride=(4, 4),
            patch_padding=(3, 3),
            mlp_ratio=4.0,
        ),
        decoder_dim=32,
        refiner_hidden=16,
        head_dim=8,
        default_train_size=128,
    ),
    # the built-in keyer (tools/train/): Hiera widths 32/64/128/256, blocks 1/2/3/1, head_dim 32
    "small": dict(
        timm_name="hiera_tiny_224",
        hiera_kwargs=dict(
            embed_dim=32,
            num_heads=1,
            stages=(1, 2, 3, 1),
            q_pool=3,
            q_stride=(2, 2),
            mask_unit_size=(8, 8),
            mask_unit_attn=(True, True, False, False),
            dim_mul=2.0,
            head_mul=2.0,
            patch_kernel=(7, 7),
            patch_stride=(4, 4),
            patch_padding=(3, 3),
            mlp_ratio=4.0,
        ),
        decoder_dim=64,
        refiner_hidden=32,
        head_dim=32,
        default_train_size=512,
    ),
}

# ----------------------------------------------------------------------------------------------------
# Modules (names match the checkpoint keys)
# ----------------------------------------------------------------------------------------------------


class MLP(nn.Module):
    """Per-pixel linear embedding C_in -> C_out (key: ``linear_cN.proj``)."""

    def __init__(self, input_dim: int, embed_dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(input_dim, embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


class DecoderHead(nn.Module):
    def __init__(self, feature_channels, embedding_dim: int, output_dim: int) -> None:
        super().__init__()
        self.linear_c4 = MLP(feature_channels[3], embedding_dim)
        self.linear_c3 = MLP(feature_channels[2], embedding_dim)
        self.linear_c2 = MLP(feature_channels[1], embedding_dim)
        self.linear_c1 = MLP(feature_channels[0], embedding_dim)
        self.linear_fuse = nn.Conv2d(embedding_dim * 4, embedding_dim, kernel_size=1, bias=False)
        self.bn = nn.BatchNorm2d(embedding_dim)
        self.relu = nn.ReLU(inplace=True)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Conv2d(embedding_dim, output_dim, kernel_size=1)

    @staticmethod
    def _embed(lin: MLP, c: torch.Tensor) -> torch.Tensor:
        n, _, h, w = c.shape
        return lin(c.flatten(2).transpose(1, 2)).transpose(1, 2).reshape(n, -1, h, w)

    def forward(self, features) -> torch.Tensor:
        c1, c2, c3, c4 = features
        size = c1.shape[2:]
        _c4 = F.interpolate(self._embed(self.linear_c4, c4), size=size, mode="bilinear", align_corners=False)
        _c3 = F.interpolate(self._embed(self.linear_c3, c3), size=size, mode="bilinear", align_corners=False)
        _c2 = F.interpolate(self._embed(self.linear_c2, c2), size=size, mode="bilinear", align_corners=False)
        _c1 = self._embed(self.linear_c1, c1)
        x = self.linear_fuse(torch.cat([_c4, _c3, _c2, _c1], dim=1))
        x = self.relu(self.bn(x))
        x = self.dropout(x)
        return self.classifier(x)


class RefinerBlock(nn.Module):
    def __init__(self, channels: int, dilation: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=dilation, dilation=dilation)
        self.gn1 = nn.GroupNorm(8, channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=dilation, dilation=dilation)
        self.gn2 = nn.GroupNorm(8, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.gn1(self.conv1(x)))
        out = self.gn2(self.conv2(out))
        return self.relu(out + x)


class CNNRefinerModule(nn.Module):
    def __init__(self, in_channels: int = 7, hidden_channels: int = 64, out_channels: int = 4) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, hidden_channels, 3, padding=1),
            nn.GroupNorm(8, hidden_channels),
            nn.ReLU(inplace=True),
        )
        self.res1 = RefinerBlock(hidden_channels, 1)
        self.res2 = RefinerBlock(hidden_channels, 2)
        self.res3 = RefinerBlock(hidden_channels, 4)
        self.res4 = RefinerBlock(hidden_channels, 8)
        self.final = nn.Conv2d(hidden_channels, out_channels, 1)

    def forward(self, img: torch.Tensor, coarse_pred: torch.Tensor) -> torch.Tensor:
        x = torch.cat([img, coarse_pred], dim=1)
        x = self.stem(x)
        x = self.res4(self.res3(self.res2(self.res1(x))))
        return self.final(x) * 10.0


def create_encoder(config: str, img_size: int) -> nn.Module:
    """timm features_only Hiera (FeatureGetterNet with ``.model``), patched to 4 input channels."""
    cfg = CONFIGS[config]
    enc = timm.create_model(
        cfg["timm_name"], pretrained=False, features_only=True, img_size=img_size, **cfg["hiera_kwargs"]
    )
    old = enc.model.patch_embed.proj
    new = nn.Conv2d(4, old.out_channels, kernel_size=old.kernel_size, stride=old.stride,
                    padding=old.padding, bias=True)
    with torch.no_grad():
        new.weight.zero_()
        new.weight[:, :3] = old.weight
        new.bias.copy_(old.bias)
    enc.model.patch_embed.proj = new
    return enc


class GreenFormer(nn.Module):
    def __init__(self, config: str = "base_plus", img_size: int = 2048) -> None:
        super().__init__()
        cfg = CONFIGS[config]
        self.config = config
        self.img_size = img_size
        self.encoder = create_encoder(config, img_size)
        ch = self.encoder.feature_info.channels()
        self.feature_channels = ch
        self.alpha_decoder = DecoderHead(ch, cfg["decoder_dim"], 1)
        self.fg_decoder = DecoderHead(ch, cfg["decoder_dim"], 3)
        self.refiner = CNNRefinerModule(7, cfg["refiner_hidden"], 4)
        self.refiner_scale = 1.0

    @property
    def hiera(self):
        return self.encoder.model

    def forward(self, x: torch.Tensor, capture: bool = False):
        """Returns {"alpha", "fg"}; with capture=True also every intermediate (NCHW fp32).

        Captured per-block outputs are rerolled to spatial order with timm's own ``Reroll`` module
        (``hiera.reroll(x, block_idx)``, valid for every block index: its schedule is indexed by
        block) and permuted to NCHW.
        """
        out = {}
        hiera = self.hiera
        hooks = []
        if capture:
            def make_hook(i):
                def hook(_m, _inp, y):
                    out[f"block{i}"] = hiera.reroll(y, i).permute(0, 3, 1, 2).contiguous()
                return hook
            for i, blk in enumerate(hiera.blocks):
                hooks.append(blk.register_forward_hook(make_hook(i)))
            with torch.no_grad():
                p = hiera.patch_embed(x) + hiera.pos_embed  # [B, N0, C0] raster order
                g = x.shape[-1] // 4
                out["patch"] = p.transpose(1, 2).reshape(x.shape[0], -1, g, g).contiguous()
        try:
            features = self.encoder(x)
        finally:
            for h in hooks:
                h.remove()
        alpha_logits = self.alpha_decoder(features)
        fg_logits = self.fg_decoder(features)
        size = x.shape[2:]
        a_up = F.interpolate(alpha_logits, size=size, mode="bilinear", align_corners=False)
        fg_up = F.interpolate(fg_logits, size=size, mode="bilinear", align_corners=False)
        a_coarse = torch.sigmoid(a_up)
        fg_coarse = torch.sigmoid(fg_up)
        delta = self.refiner(x[:, :3], torch.cat([a_coarse, fg_coarse], dim=1))
        if self.refiner_scale != 1.0:
            delta = delta * self.refiner_scale
        alpha = torch.sigmoid(a_up + delta[:, 0:1])
        fg = torch.sigmoid(fg_up + delta[:, 1:4])
        out["alpha"] = alpha
        out["fg"] = fg
        if capture:
            for i, f in enumerate(features):
                out[f"f{i + 1}"] = f
            out.update(alpha_logits=alpha_logits, fg_logits=fg_logits, alpha_logits_up=a_up,
                       fg_logits_up=fg_up, alpha_coarse=a_coarse, fg_coarse=fg_coarse, delta=delta)
        return out


def build_model(config: str, img_size: int) -> GreenFormer:
    if img_size % 32:
        raise ValueError(f"img_size must be a multiple of 32, got {img_size}")
    return GreenFormer(config, img_size).eval()


def block_table(model: GreenFormer):
    """[(idx, C_in, C_out, heads, q_stride, expand, window_size, mask_unit_attn, stage_end)]."""
    h = model.hiera
    rows = []
    for i, b in enumerate(h.blocks):
        a = b.attn
        rows.append(dict(block=i, c_in=b.dim, c_out=b.dim_out, heads=a.heads, head_dim=a.head_dim,
                         q_stride=a.q_stride, expand_proj=b.proj is not None, window_size=a.window_size,
                         mask_unit_attn=bool(a.use_mask_unit_attn), stage_end=i in h.stage_ends))
    return rows


# ----------------------------------------------------------------------------------------------------
# Deterministic random initialisation that keeps activations O(1)
# ----------------------------------------------------------------------------------------------------


def _smooth_field(gen: torch.Generator, grid: int, channels: int, amp: float) -> torch.Tensor:
    """Sum of three random plane waves per channel on a grid x grid lattice -> [grid*grid, channels]."""
    yy, xx = torch.meshgrid(torch.arange(grid, dtype=torch.float64), torch.arange(grid, dtype=torch.float64),
                            indexing="ij")
    u = (yy.flatten() + 0.5) / grid
    v = (xx.flatten() + 0.5) / grid
    out = torch.zeros(grid * grid, channels, dtype=torch.float64)
    for _ in range(3):
        fy = (torch.rand(channels, generator=gen, dtype=torch.float64) * 2 - 1) * 6.0
        fx = (torch.rand(channels, generator=gen, dtype=torch.float64) * 2 - 1) * 6.0
        ph = torch.rand(channels, generator=gen, dtype=torch.float64) * 2 * math.pi
        out += torch.sin(u[:, None] * fy[None] * math.pi + v[:, None] * fx[None] * math.pi + ph[None])
    return (out * (amp / math.sqrt(1.5))).float()


def init_weights(model: GreenFormer, seed: int = 0) -> None:
    """Fill every parameter and buffer deterministically from ``seed``.

    The scales are chosen so that activations stay O(1) through the whole network and the outputs are
    not saturated (untrained timm init with std 0.02 everywhere gives near-uniform attention and nearly
    constant outputs, which makes a poor test signal):

    - Linear / conv weights: truncated normal (+-2 std), std = gain / sqrt(fan_in) with gain 1 for
      qkv, fc1, expand proj, patch embed, decoder projections/fuse and refiner 3x3 convs, gain 0.5
      for the residual-branch outputs attn.proj and mlp.fc2, gain 2.5 for the decoder classifiers, and
      std 0.1 / sqrt(H) for the refiner's final 1x1 conv (so |delta| = 10 * final(...) is O(0.1-3)).
    - Biases: 0.02 * randn (decoder classifier and refiner final: 0.1 * randn and 0.01 * randn).
    - LayerNorm / GroupNorm / BatchNorm affine: gamma = 1 + 0.1 * randn, beta = 0.1 * randn.
    - BatchNorm running_mean = 0.1 * randn, running_var ~ U(0.5, 1.5); num_batches_tracked = 0.
    - pos_embed: a smooth random field (three plane waves per channel, rms 0.25) plus truncated-normal
      noise with std 0.02, so that resizing the table (bicubic) has a visible downstream effect.

    Parameters are visited in state_dict order and drawn from a single generator, so the result
    depends only on (config, training grid, seed).
    """
    gen = torch.Generator().manual_seed(seed)
    hidden = CONFIGS[model.config]["refiner_hidden"]
    sd = model.state_dict(keep_vars=True)

    def tn(t: torch.Tensor, std: float) -> torch.Tensor:
        return nn.init.trunc_normal_(torch.empty_like(t, dtype=torch.float32), 0.0, std, -2 * std, 2 * std,
                                     generator=gen)

    def rn(t: torch.Tensor) -> torch.Tensor:
        return torch.randn(t.shape, generator=gen)

    with torch.no_grad():
        for name, t in sd.items():
            if name.endswith("num_batches_tracked"):
                t.zero_()
                continue
            leaf = name.rsplit(".", 1)[-1]
            owner = name.rsplit(".", 1)[0]
            if name == "encoder.model.pos_embed":
                n, c = t.shape[1], t.shape[2]
                g = int(round(math.sqrt(n)))
                assert g * g == n
                t.copy_((_smooth_field(gen, g, c, 0.25) + tn(t[0], 0.02)).unsqueeze(0))
            elif leaf == "running_mean":
                t.copy_(0.1 * rn(t))
            elif leaf == "running_var":
                t.copy_(0.5 + torch.rand(t.shape, generator=gen))
            elif t.dim() == 1 and any(k in owner for k in ("norm", ".bn", "gn", "stem.1")):
                if leaf == "weight":
                    t.copy_(1.0 + 0.1 * rn(t))
                else:
                    t.copy_(0.1 * rn(t))
            elif leaf == "bias":
                if owner.endswith("classifier"):
                    t.copy_(0.1 * rn(t))
                elif owner == "refiner.final":
                    t.copy_(0.01 * rn(t))
                else:
                    t.copy_(0.02 * rn(t))
            elif leaf == "weight":
                fan_in = t[0].numel()
                if owner == "refiner.final":
                    std = 0.1 / math.sqrt(hidden)
                elif owner.endswith("classifier"):
                    std = 2.5 / math.sqrt(fan_in)
                elif owner.endswith("attn.proj") or owner.endswith("mlp.fc2"):
                    std = 0.5 / math.sqrt(fan_in)
                else:
                    std = 1.0 / math.sqrt(fan_in)
                t.copy_(tn(t, std))
            else:
                raise RuntimeError(f"no init rule for {name}")


def _ridge(feats: torch.Tensor, target: torch.Tensor, rel_lambda: float = 1e-3):
    """Least squares with a bias column and a small ridge term on the weights (float64).

    feats [N, D], target [N, K] -> (weight [K, D], bias [K])."""
    f = feats.double()
    t = target.double()
    a = torch.cat([f, torch.ones(f.shape[0], 1, dtype=torch.float64)], dim=1)
    g = a.T @ a
    lam = rel_lambda * float(torch.diagonal(g)[:-1].mean())
    reg = torch.eye(g.shape[0], dtype=torch.float64) * lam
    reg[-1, -1] = 0.0
    sol = torch.linalg.solve(g + reg, a.T @ t)  # [D+1, K]
    return sol[:-1].T.float().contiguous(), sol[-1].float().contiguous()


def _logit(p: torch.Tensor, lo: float = 0.03) -> torch.Tensor:
    p = p.clamp(lo, 1.0 - lo)
    return torch.log(p) - torch.log1p(-p)


def calibrate_heads(model: GreenFormer, x: torch.Tensor, alpha_target: torch.Tensor, fg_target: torch.Tensor,
                    coarse_from_hint: bool = True):
    """Data-dependent init of the three output layers so a random network behaves like a keyer.

    x [1,4,S,S] is a pre-processed calibration frame, alpha_target [1,1,S,S] and fg_target [1,3,S,S] its
    ground truth in [0,1]. With everything else random, the layers that are linear in their inputs are
    fitted by ridge regression (logits of the targets clipped to [0.03, 0.97], i.e. |logit| <= 3.48):

    1. ``alpha_decoder.classifier`` / ``fg_decoder.classifier`` on the post-ReLU decoder features against
       the 4x4-average-pooled targets (for alpha, by default the pre-processed hint channel x[:, 3], so
       the coarse matte is blurry and keeps the hint's specks, like a network that trusts its hint);
    2. then ``refiner.final`` on the refiner's last hidden features against
       (logit(target) - coarse logits) / 10 at full resolution.

    Only these five tensors (weights and biases) change. The result is still an arbitrary, fixed set of
    weights for testing; it just produces a structured, non-saturated matte and a refiner delta whose
    size resembles a trained model's.
    """
    feats = {}

    def grab(name):
        def hook(_m, inp, _out):
            feats[name] = inp[0].detach()
        return hook

    hs = [model.alpha_decoder.classifier.register_forward_hook(grab("a")),
          model.fg_decoder.classifier.register_forward_hook(grab("f")),
          model.refiner.final.register_forward_hook(grab("r"))]
    try:
        with torch.no_grad():
            model(x)
            a_t = _logit(F.avg_pool2d(x[:, 3:4] if coarse_from_hint else alpha_target, 4))
            f_t = _logit(F.avg_pool2d(fg_target, 4))
            for key, head, tgt in (("a", model.alpha_decoder, a_t), ("f", model.fg_decoder, f_t)):
                fm = feats[key]
                w, b = _ridge(fm.flatten(2)[0].T, tgt.flatten(2)[0].T)
                head.classifier.weight.copy_(w.view_as(head.classifier.weight))
                head.classifier.bias.copy_(b)
            out = model(x, capture=True)
            fm = feats["r"]
            tgt = torch.cat([_logit(alpha_target) - out["alpha_logits_up"],
                             _logit(fg_target) - out["fg_logits_up"]], dim=1) / 10.0
            w, b = _ridge(fm.flatten(2)[0].T, tgt.flatten(2)[0].T)
            model.refiner.final.weight.copy_(w.view_as(model.refiner.final.weight))
            model.refiner.final.bias.copy_(b)
    finally:
        for h in hs:
            h.remove()


CALIBRATED_KEYS = ("alpha_decoder.classifier.weight", "alpha_decoder.classifier.bias",
                   "fg_decoder.classifier.weight", "fg_decoder.classifier.bias",
                   "refiner.final.weight", "refiner.final.bias")


# ----------------------------------------------------------------------------------------------------
# Checkpoint helpers
# ----------------------------------------------------------------------------------------------------


def resize_pos_embed(v: torch.Tensor, n_dst: int) -> torch.Tensor:
    """CorridorKey's loader: [1, N_src, C] square grid -> bicubic (align_corners=False) -> [1, N_dst, C]."""
    n_src, c = v.shape[1], v.shape[2]
    g_src = int(math.sqrt(n_src))
    g_dst = int(math.sqrt(n_dst))
    v_img = v.permute(0, 2, 1).view(1, c, g_src, g_src)
    v_res = F.interpolate(v_img, size=(g_dst, g_dst), mode="bicubic", align_corners=False)
    return v_res.flatten(2).transpose(1, 2)


def load_state_dict_like_engine(model: GreenFormer, state_dict: dict) -> None:
    """Strip ``_orig_mod.``, unwrap ``state_dict``, resize pos_embed if needed, load (strict)."""
    state_dict = state_dict.get("state_dict", state_dict)
    own = model.state_dict()
    new = {}
    for k, v in state_dict.items():
        if k.startswith("_orig_mod."):
            k = k[len("_orig_mod."):]
        if "pos_embed" in k and k in own and v.shape != own[k].shape:
            v = resize_pos_embed(v, own[k].shape[1])
        if v.is_floating_point():
            v = v.float()
        new[k] = v
    missing, unexpected = model.load_state_dict(new, strict=True)
    assert not missing and not unexpected


# ----------------------------------------------------------------------------------------------------
# Expected key list (spec §6.2) and an independent spatial-layout Hiera (spec §2.4 equivalence)
# ----------------------------------------------------------------------------------------------------


def expected_keys(model: GreenFormer):
    """Key list and shapes as described in spec §6.2, derived from the block table."""
    cfg = CONFIGS[model.config]
    h = model.hiera
    c0 = h.patch_embed.proj.out_channels
    g = model.img_size // 4
    keys = [("encoder.model.pos_embed", (1, g * g, c0)),
            ("encoder.model.patch_embed.proj.weight", (c0, 4, 7, 7)),
            ("encoder.model.patch_embed.proj.bias", (c0,))]
    for r in block_table(model):
        p = f"encoder.model.blocks.{r['block']}."
        ci, co = r["c_in"], r["c_out"]
        keys += [(p + "norm1.weight", (ci,)), (p + "norm1.bias", (ci,))]
        if ci != co:
            keys += [(p + "proj.weight", (co, ci)), (p + "proj.bias", (co,))]
        keys += [(p + "attn.qkv.weight", (3 * co, ci)), (p + "attn.qkv.bias", (3 * co,)),
                 (p + "attn.proj.weight", (co, co)), (p + "attn.proj.bias", (co,)),
                 (p + "norm2.weight", (co,)), (p + "norm2.bias", (co,)),
                 (p + "mlp.fc1.weight", (4 * co, co)), (p + "mlp.fc1.bias", (4 * co,)),
                 (p + "mlp.fc2.weight", (co, 4 * co)), (p + "mlp.fc2.bias", (co,))]
    d = cfg["decoder_dim"]
    ch = model.feature_channels
    for name, k in (("alpha_decoder", 1), ("fg_decoder", 3)):
        p = name + "."
        for lvl in (4, 3, 2, 1):
            keys += [(p + f"linear_c{lvl}.proj.weight", (d, ch[lvl - 1])), (p + f"linear_c{lvl}.proj.bias", (d,))]
        keys += [(p + "linear_fuse.weight", (d, 4 * d, 1, 1))]
        keys += [(p + f"bn.{s}", (d,)) for s in ("weight", "bias", "running_mean", "running_var")]
        keys += [(p + "bn.num_batches_tracked", ()), (p + "classifier.weight", (k, d, 1, 1)),
                 (p + "classifier.bias", (k,))]
    hd = cfg["refiner_hidden"]
    keys += [("refiner.stem.0.weight", (hd, 7, 3, 3)), ("refiner.stem.0.bias", (hd,)),
             ("refiner.stem.1.weight", (hd,)), ("refiner.stem.1.bias", (hd,))]
    for r in range(1, 5):
        p = f"refiner.res{r}."
        keys += [(p + "conv1.weight", (hd, hd, 3, 3)), (p + "conv1.bias", (hd,)),
                 (p + "gn1.weight", (hd,)), (p + "gn1.bias", (hd,)),
                 (p + "conv2.weight", (hd, hd, 3, 3)), (p + "conv2.bias", (hd,)),
                 (p + "gn2.weight", (hd,)), (p + "gn2.bias", (hd,))]
    keys += [("refiner.final.weight", (4, hd, 1, 1)), ("refiner.final.bias", (4,))]
    return keys


def check_keys(model: GreenFormer, verbose: bool = True) -> bool:
    sd = model.state_dict()
    exp = expected_keys(model)
    got = [(k, tuple(v.shape)) for k, v in sd.items()]
    ok = got == exp
    nbt = [k for k in sd if k.endswith("num_batches_tracked")]
    learn = sum(p.numel() for p in model.parameters())
    if model.config == "base_plus" and model.img_size == 2048:
        ok = ok and len(got) == 367 and len(nbt) == 2 and learn == 99_701_688  # spec §6.2 / §6.3
    if verbose:
        print(f"[keys] {model.config} S={model.img_size}: {len(got)} keys ({len(nbt)} num_batches_tracked), "
              f"{learn:,} learnable params; matches spec §6.2 layout/order: {ok}")
        if not ok:
            ge, ee = dict(got), dict(exp)
            for k in ee:
                if k not in ge:
                    print("  missing", k, ee[k])
                elif ge[k] != ee[k]:
                    print("  shape", k, ge[k], "expected", ee[k])
            for k in ge:
                if k not in ee:
                    print("  extra", k, ge[k])
            if set(ge) == set(ee):
                print("  (same set, different order)")
    return ok


def _maxpool2x2_nhwc(t: torch.Tensor) -> torch.Tensor:
    return F.max_pool2d(t.permute(0, 3, 1, 2), 2, 2).permute(0, 2, 3, 1)


def spatial_hiera_forward(hiera: nn.Module, x: torch.Tensor):
    """Hiera forward without unroll/reroll (tokens kept in NHWC raster order), per spec §2.4.

    Pooling = 2x2/stride-2 spatial max-pool; mask-unit attention = non-overlapping windows of
    (grid / mask-units-per-side) tokens, q windows half that side when q is pooled; global attention
    over all tokens. Returns the list of every block output [B, H, W, C].
    """
    t = hiera.patch_embed.proj(x).permute(0, 2, 3, 1)
    b, gh, gw, c = t.shape
    t = t + hiera.pos_embed.view(1, gh, gw, c)
    mu_h, mu_w = hiera.mask_spatial_shape
    outs = []
    for blk in hiera.blocks:
        a = blk.attn
        xn = blk.norm1(t)
        pool = a.q_stride > 1
        r = _maxpool2x2_nhwc(blk.proj(xn)) if blk.do_expand else t
        B, H, W, _ = xn.shape
        heads, hd = a.heads, a.head_dim
        qkv = a.qkv(xn).view(B, H, W, 3, heads, hd)
        q, k, v = qkv[..., 0, :, :], qkv[..., 1, :, :], qkv[..., 2, :, :]  # [B,H,W,heads,hd]
        if pool:
            q = _maxpool2x2_nhwc(q.reshape(B, H, W, heads * hd)).view(B, H // 2, W // 2, heads, hd)
        Hq, Wq = q.shape[1], q.shape[2]
        if a.use_mask_unit_attn:
            wy, wx = H // mu_h, W // mu_w          # key window side on the input grid
            qy, qx = Hq // mu_h, Wq // mu_w        # query window side on the output grid

            def win(z, sy, sx):
                z = z.reshape(B, mu_h, sy, mu_w, sx, heads, hd).permute(0, 5, 1, 3, 2, 4, 6)
                return z.reshape(B, heads, mu_h * mu_w, sy * sx, hd)
            o = F.scaled_dot_product_attention(win(q, qy, qx), win(k, wy, wx), win(v, wy, wx))
            o = o.view(B, heads, mu_h, mu_w, qy, qx, hd).permute(0, 2, 4, 3, 5, 1, 6)
            o = o.reshape(B, Hq, Wq, heads * hd)
        else:
            qf = q.reshape(B, Hq * Wq, heads, hd).transpose(1, 2)
            kf = k.reshape(B, H * W, heads, hd).transpose(1, 2)
            vf = v.reshape(B, H * W, heads, hd).transpose(1, 2)
            o = F.scaled_dot_product_attention(qf, kf, vf).transpose(1, 2).reshape(B, Hq, Wq, heads * hd)
        t = r + a.proj(o)
        t = t + blk.mlp(blk.norm2(t))
        outs.append(t)
    return outs


# ----------------------------------------------------------------------------------------------------
# Self-check entry point
# ----------------------------------------------------------------------------------------------------


def stats(t: torch.Tensor) -> dict:
    t = t.detach().double()
    return dict(min=float(t.min()), max=float(t.max()), mean=float(t.mean()), std=float(t.std()))


def fmt_stats(s: dict) -> str:
    return " ".join(f"{k}={v:.4g}" for k, v in s.items())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="tiny")
    ap.add_argument("--size", type=int, default=None, help="model resolution S (default: training size)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keys", action="store_true", help="only build the model and check the key list")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    S = args.size or CONFIGS[args.config]["default_train_size"]
    model = build_model(args.config, S)
    ok = check_keys(model)
    print("[blocks]")
    for r in block_table(model):
        print("  " + " ".join(f"{k}={v}" for k, v in r.items()))
    if args.keys:
        return 0 if ok else 1
    init_weights(model, args.seed)
    g = torch.Generator().manual_seed(args.seed + 1)
    x = torch.randn(1, 4, S, S, generator=g)
    x[:, 3] = torch.rand(1, S, S, generator=g)
    t0 = time.time()
    with torch.no_grad():
        out = model(x, capture=True)
        sp = spatial_hiera_forward(model.hiera, x)
    print(f"[forward] {time.time() - t0:.2f}s")
    worst = 0.0
    for i, s in enumerate(sp):
        worst = max(worst, float((s.permute(0, 3, 1, 2) - out[f"block{i}"]).abs().max()))
    print(f"[spatial] max |timm unrolled - spatial-layout Hiera| over all blocks = {worst:.3g}")
    for k in ("patch", "f1", "f2", "f3", "f4", "alpha_logits", "fg_logits", "delta", "alpha", "fg"):
        print(f"  {k:13s} {tuple(out[k].shape)} {fmt_stats(stats(out[k]))}")
    print(f"  |delta| mean = {float(out['delta'].abs().mean()):.4g}")
    return 0 if ok and worst < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
