"""A ComfyUI custom node that keys green-screen frames with ckey.

UNTESTED HERE: ComfyUI is not installed where ckey is developed and tested. The node follows ComfyUI's
documented custom-node interface (INPUT_TYPES / RETURN_TYPES / FUNCTION / NODE_CLASS_MAPPINGS) and its
tensor conventions, and calls only ckey's Python API (tested in python/tests/).

Install: `pip install ./python` (from the ckey repository) into ComfyUI's Python, then copy or link this
folder into ComfyUI/custom_nodes/. The node "ckey: key green screen" takes
  image  IMAGE  torch float32 (B, H, W, 3) in [0, 1], sRGB-encoded (what Load Image gives)
  mask   MASK   torch float32 (B, H, W) or (H, W) in [0, 1], the rough alpha hint (1 = foreground); one mask
                serves every frame of a batch. Load Image's MASK is 1 - the file's alpha: set invert_mask
                when the hint comes from an image's alpha channel that way
and returns
  foreground  IMAGE  (B, H, W, 3) straight sRGB-encoded foreground (the FG pass)
  matte       MASK   (B, H, W) linear alpha (the Matte pass)
  processed   IMAGE  (B, H, W, 4) linear premultiplied RGBA, despilled and despeckled (the Processed pass)
"""

import threading

import numpy as np
import torch

import ckey

_keyers = {}  # (checkpoint, size, device, tile) -> ckey.Keyer, kept while ComfyUI runs
_keyers_lock = threading.Lock()


def _keyer(checkpoint, size, device, tile):
    key = (checkpoint, size, device, tile)
    with _keyers_lock:
        if key not in _keyers:
            _keyers[key] = ckey.Keyer(checkpoint or None, size=size or None, device=device, tile=tile)
        return _keyers[key]


class CkeyKey:
    CATEGORY = "ckey"
    FUNCTION = "key"
    RETURN_TYPES = ("IMAGE", "MASK", "IMAGE")
    RETURN_NAMES = ("foreground", "matte", "processed")

    @classmethod
    def INPUT_TYPES(cls):
        return {
            "required": {
                "image": ("IMAGE",),
                "mask": ("MASK",),
                "despill": ("FLOAT", {"default": 0.5, "min": 0.0, "max": 1.0, "step": 0.05}),
                "despeckle_size": ("INT", {"default": 400, "min": 0, "max": 100000}),
                "invert_mask": ("BOOLEAN", {"default": False}),
            },
            "optional": {
                # empty: the built-in small keyer; else a path to CorridorKey.pth or a .safetensors file
                "checkpoint": ("STRING", {"default": ""}),
                # 0: ckey's default (the built-in keyer: 2048 on CUDA, its training size on the CPU)
                "size": ("INT", {"default": 0, "min": 0, "max": 4096, "step": 32}),
                "device": (["auto", "cuda", "cpu"],),
                # 0: the whole frame at `size`; N: N x N tiles of the plate at its native resolution
                "tile": ("INT", {"default": 0, "min": 0, "max": 4096, "step": 32}),
            },
        }

    def key(self, image, mask, despill, despeckle_size, invert_mask, checkpoint="", size=0, device="auto", tile=0):
        k = _keyer(checkpoint.strip(), size, device, tile)
        frames = image.detach().to("cpu", torch.float32).numpy()  # (B, H, W, 3)
        hints = mask.detach().to("cpu", torch.float32).numpy()
        if hints.ndim == 2:
            hints = hints[None]
        if invert_mask:
            hints = 1.0 - hints
        fgs, mattes, processed = [], [], []
        for i in range(frames.shape[0]):
            hint = hints[i if hints.shape[0] > 1 else 0]
            out = k.key(np.ascontiguousarray(frames[i, :, :, :3]), np.ascontiguousarray(hint),
                        despill=despill, despeckle_size=despeckle_size, comp=False)
            fgs.append(out.fg)
            mattes.append(out.alpha)
            processed.append(out.processed)
        return (torch.from_numpy(np.stack(fgs)), torch.from_numpy(np.stack(mattes)),
                torch.from_numpy(np.stack(processed)))


NODE_CLASS_MAPPINGS = {"CkeyKey": CkeyKey}
NODE_DISPLAY_NAME_MAPPINGS = {"CkeyKey": "ckey: key green screen"}
