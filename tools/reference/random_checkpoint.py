"""Write a random-weight GreenFormer checkpoint (no fixtures, no calibration): for benchmarks and
device parity runs where only the architecture matters.

    python3 tools/reference/random_checkpoint.py --config base_plus --out /tmp/bp.safetensors [--pth]

The pos_embed grid is the training size's (2048 -> 512x512 for base_plus), as in the official file.
"""
import argparse
import os
import sys

import safetensors.torch
import torch

sys.path.insert(0, os.path.dirname(__file__))
import greenformer_ref as gr  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="base_plus", choices=sorted(gr.CONFIGS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pth", action="store_true", help="write torch.save format with the _orig_mod. prefix")
    a = ap.parse_args()
    cfg = gr.CONFIGS[a.config]
    model = gr.build_model(a.config, cfg["default_train_size"])
    gr.init_weights(model, a.seed)
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    if a.pth:
        torch.save({"_orig_mod." + k: v for k, v in sd.items()}, a.out)
    else:
        safetensors.torch.save_file(sd, a.out, metadata={"format": "pt", "head_dim": str(cfg["head_dim"])})
    print(f"wrote {a.out}: {len(sd)} tensors, {sum(v.numel() for v in sd.values())} values")


if __name__ == "__main__":
    main()
