"""Nuke: key a plate Read node's frames with ckey, using a second Read node as the alpha hint, write the
passes as EXR / PNG sequences and bring the Processed pass back as a Read node.

UNTESTED HERE: Nuke is not installed where ckey is developed and tested. The snippet uses Nuke's
documented Python API (nuke.toNode, knob evaluate, nuke.ProgressTask, nuke.nodes.Read), OpenImageIO's
Python bindings to read and write the files, and ckey's Python API (tested in python/tests/).

Set-up: Nuke's Python needs numpy, OpenImageIO (`pip install OpenImageIO`) and ckey (`pip install
./python` from the ckey repository), installed with the same Python version as Nuke's. Then, in the
Script Editor:

    import nuke_ckey
    nuke_ckey.key_read_nodes("Read1", "Read2", "/shots/sh010/ckey")

Files are read as `ckey key` reads them: EXR plates are scene-linear (keyed with linear=True, negatives
clamped), 8/16-bit files sRGB-encoded; the hint is the first channel of its file.
"""

import os

import numpy as np
import nuke
import OpenImageIO as oiio

import ckey


def _read(path):
    """A file's pixels as float32 (H, W, C): OpenImageIO scales 8/16-bit samples to [0, 1]."""
    image = oiio.ImageInput.open(path)
    if image is None:
        raise IOError(f"{path}: {oiio.geterror()}")
    try:
        pixels = image.read_image(oiio.FLOAT)
    finally:
        image.close()
    return np.asarray(pixels, dtype=np.float32).reshape(image.spec().height, image.spec().width, -1)


def _write(path, pixels, channel_names, pixel_type):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    h, w = pixels.shape[:2]
    spec = oiio.ImageSpec(w, h, len(channel_names), pixel_type)
    spec.channelnames = channel_names
    out = oiio.ImageOutput.create(path)
    if out is None or not out.open(path, spec):
        raise IOError(f"{path}: {oiio.geterror()}")
    out.write_image(np.ascontiguousarray(pixels.reshape(h, w, len(channel_names))))
    out.close()


def key_read_nodes(plate_node, hint_node, out_dir, checkpoint=None, first=None, last=None, **keyer_options):
    """Keys frames first..last (default: the plate Read node's range) into out_dir/{Matte,FG,Processed,
    Comp}/<frame>.exr|png and returns a new Read node of the Processed sequence. checkpoint: None for
    ckey's built-in small keyer, or a path to CorridorKey.pth; keyer_options go to ckey.Keyer (size,
    device, tile, overlap, despill, ...)."""
    plate, hint = nuke.toNode(plate_node), nuke.toNode(hint_node)
    if plate is None or hint is None:
        raise ValueError(f"no node named {plate_node if plate is None else hint_node}")
    first = int(plate["first"].value()) if first is None else first
    last = int(plate["last"].value()) if last is None else last
    linear = plate["file"].evaluate(first).lower().endswith(".exr")
    task = nuke.ProgressTask("ckey")
    with ckey.Keyer(checkpoint, linear=linear, **keyer_options) as keyer:
        for frame in range(first, last + 1):
            if task.isCancelled():
                break
            task.setMessage(f"frame {frame}")
            rgb = _read(plate["file"].evaluate(frame))[:, :, :3]
            if linear:
                rgb = np.maximum(rgb, 0.0)
            alpha_hint = _read(hint["file"].evaluate(frame))[:, :, 0]
            out = keyer.key(np.ascontiguousarray(rgb), np.ascontiguousarray(alpha_hint))
            name = f"{frame:04d}"
            _write(os.path.join(out_dir, "Matte", name + ".exr"), out.alpha, ("Y",), oiio.HALF)
            _write(os.path.join(out_dir, "FG", name + ".exr"), out.fg, ("R", "G", "B"), oiio.HALF)
            _write(os.path.join(out_dir, "Processed", name + ".exr"), out.processed, ("R", "G", "B", "A"), oiio.HALF)
            # OpenImageIO rounds to 8 bits where `ckey key` truncates: a preview either way
            _write(os.path.join(out_dir, "Comp", name + ".png"), out.comp, ("R", "G", "B"), oiio.UINT8)
            task.setProgress(int(100 * (frame - first + 1) / (last - first + 1)))
    del task
    return nuke.nodes.Read(file=os.path.join(out_dir, "Processed", "####.exr"), first=first, last=last)
