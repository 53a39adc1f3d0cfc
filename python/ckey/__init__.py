"""ckey for Python: the CorridorKey green-screen keyer on numpy arrays.

    import ckey
    with ckey.Keyer() as k:                      # the built-in small keyer (`--checkpoint builtin`)
        out = k.key(rgb, hint)                   # rgb (H, W, 3), hint (H, W): float32 or float16
        matte, fg, processed, comp = out.alpha, out.fg, out.processed, out.comp

The work is done by ckey's C library (include/ckey.h) through the extension ckey._ckey: one Keyer is
one ck_ctx (the checkpoint loaded and planned for one size), and a frame is ck_key_image_begin +
ck_result_finish, keyed with the GIL released. Failures raise ckey.Error subclasses carrying `.status`
(the ck_status code) and ckey's message.
"""

import os as _os

from . import _ckey
from ._ckey import (  # noqa: F401  (re-exported)
    BadStateError,
    DeviceError,
    DtypeError,
    Error,
    FileError,
    FormatError,
    InvalidArgumentError,
    MissingTensorError,
    NoDeviceError,
    OutOfMemoryError,
    ShapeError,
    UnsupportedError,
)

__version__ = _ckey.version()

__all__ = [
    "Keyer", "KeyResult", "Passes", "Error", "InvalidArgumentError", "FileError", "FormatError", "ShapeError",
    "DtypeError", "MissingTensorError", "OutOfMemoryError", "NoDeviceError", "DeviceError", "BadStateError",
    "UnsupportedError", "cuda_device_count", "colorspace_names", "BUILTIN", "BUILTIN_TRAIN_SIZE",
]

#: The checkpoint name of the built-in small keyer (embedded in the library; `ckey key --checkpoint builtin`).
BUILTIN = "builtin"
#: The size the built-in keyer was trained at (its CPU default size).
BUILTIN_TRAIN_SIZE = _ckey.BUILTIN_TRAIN_SIZE

_DEVICES = {"auto": 0, "cpu": 1, "cuda": 2}
_PRECISIONS = {"fp32": 0, "bf16": 1, "fp16": 2, "auto": 3}
_DEFAULTS = _ckey.Context.default_params()


def cuda_device_count():
    """CUDA devices this process sees (0 in a build without CUDA, or without a driver or device)."""
    return _ckey.cuda_device_count()


def colorspace_names():
    """The short names of the colour spaces Keyer(colorspace=...) takes (ck_colorspace_name of each; the
    parser also takes "rec709" and OCIO-style long names, any case)."""
    names, value = [], 1  # 0 is CK_CS_DEFAULT: "as linear= says"
    while True:
        try:
            names.append(_ckey.colorspace_name(value))
        except InvalidArgumentError:
            return names
        value += 1


def _is_builtin(checkpoint):
    return checkpoint in ("builtin", "builtin:small")


def _choice(name, value, table):
    if value not in table:
        raise InvalidArgumentError(f"{name} {value!r}: one of {', '.join(table)}")
    return table[value]


class Passes:
    """The passes as CorridorKey's files store them (ck_passes_from_result): `alpha` (H, W), `fg`
    (H, W, 3) and `processed` (H, W, 4) float16, the EXR passes' exact samples; `comp` (H, W, 3) uint8,
    the Comp PNG's (None when the comp is off)."""

    __slots__ = ("alpha", "fg", "processed", "comp")

    def __init__(self, alpha, fg, processed, comp):
        self.alpha, self.fg, self.processed, self.comp = alpha, fg, processed, comp

    def __repr__(self):
        return f"Passes({self.alpha.shape[1]}x{self.alpha.shape[0]})"


class KeyResult:
    """One keyed frame, float32 numpy arrays at the frame's size (ck_result after ck_result_finish):

    alpha      (H, W)     linear coverage, not despeckled (the Matte pass)
    fg         (H, W, 3)  straight sRGB-encoded foreground, not despilled (FG)
    processed  (H, W, 4)  linear premultiplied RGBA, despilled and despeckled, in the plate's gamut (Processed)
    comp       (H, W, 3)  sRGB preview over a checkerboard (Comp), None when comp=False
    passes     Passes, when key(..., passes=True), else None
    """

    __slots__ = ("alpha", "fg", "processed", "comp", "passes")

    def __init__(self, alpha, fg, processed, comp, passes=None):
        self.alpha, self.fg, self.processed, self.comp, self.passes = alpha, fg, processed, comp, passes

    def __getitem__(self, name):
        if name not in self.__slots__:
            raise KeyError(name)
        return getattr(self, name)

    def __repr__(self):
        return f"KeyResult({self.alpha.shape[1]}x{self.alpha.shape[0]}{', passes' if self.passes else ''})"


class Keyer:
    """A loaded keyer: ck_ctx_init(checkpoint, params), freed by close() or at the end of a `with` block.

    checkpoint  None or "builtin": the built-in small keyer (`ckey key --checkpoint builtin`; $CKEY_CHECKPOINT
                and ./CorridorKey.pth, which `ckey key` looks for first, are not consulted); a path to
                CorridorKey.pth or a .safetensors file; "random:tiny" / "random:base_plus" (random weights,
                for tests and benchmarks)
    size        model resolution S (multiple of 32). None: for the built-in keyer 2048 on CUDA and its
                training size (BUILTIN_TRAIN_SIZE) on the CPU, as `ckey key`; for other checkpoints 2048
    device      "auto" (CUDA when usable, else the CPU with a notice), "cpu" or "cuda"
    precision   "auto" (fp32 on the CPU, fp16 on CUDA), "fp32", "bf16" or "fp16" (CUDA only)
    tile        0: the frame is resized to `size`; N: the model runs at N on tiles of the plate at its
                native size, stepped by tile - overlap (`ckey key --tile N --overlap PX`)
    overlap     tile overlap in pixels (with tile)
    threads     CPU threads (0: all cores); CPU results depend on it
    batch       images per forward (tiles of a plate), 0 = auto
    linear      rgb is linear light (sRGB-encoded after the resize); else sRGB-encoded values
    colorspace  the plates' encoding by name (colorspace_names(); overrides linear), e.g. "logc3"
    refiner_scale, use_refiner, head_dim, keep_highlights: as `ckey key` --refiner-scale, --no-refiner,
                --head-dim, --keep-highlights
    despill, despeckle, despeckle_size, comp: the post-processing defaults for key() (None: ckey's
                defaults 0.5, True, 400, True); key() may change them per frame

    Everything but the post-processing is fixed when the Keyer is made: the C API takes the model
    size, device, precision, tiling, colour space / linear flag, refiner settings and keep_highlights in
    ck_ctx_init only. A Keyer keys on one thread at a time (calls from several threads wait for each
    other); separate Keyers key concurrently.
    """

    def __init__(self, checkpoint=None, size=None, device="auto", precision="auto", tile=0, overlap=64, *,
                 threads=0, batch=0, linear=False, colorspace=None, refiner_scale=None, use_refiner=True,
                 head_dim=0, keep_highlights=False, despill=None, despeckle=None, despeckle_size=None, comp=True):
        self._ctx = None
        checkpoint = BUILTIN if checkpoint is None else _os.fspath(checkpoint)
        dev = _choice("device", device, _DEVICES)
        if size is None:
            size = _DEFAULTS["size"]
            if _is_builtin(checkpoint) and not tile:
                # as `ckey key` (tools/ckey/key.c): 2048 on CUDA, where the built-in keyer keys 2048 plates
                # better than at its training size; its training size on the CPU, where 2048 costs ~16x
                cuda = device == "cuda" or (device == "auto" and cuda_device_count() > 0)
                size = 2048 if cuda else BUILTIN_TRAIN_SIZE
        params = {
            "size": int(size), "device": dev, "precision": _choice("precision", precision, _PRECISIONS),
            "tile": int(tile), "tile_overlap": int(overlap) if tile else 0, "threads": int(threads),
            "max_batch": int(batch), "input_is_linear": bool(linear), "use_refiner": bool(use_refiner),
            "head_dim": int(head_dim), "keep_highlights": bool(keep_highlights), "comp": bool(comp),
        }
        if colorspace is not None:
            params["colorspace"] = _ckey.colorspace_parse(colorspace)
        if refiner_scale is not None:
            params["refiner_scale"] = float(refiner_scale)
        params.update(_post_params(despill, despeckle, despeckle_size, None))
        self._ctx = _ckey.Context(checkpoint, params)
        self.checkpoint = checkpoint

    # -- lifetime --
    def close(self):
        """Frees the context (ck_ctx_free). Idempotent; waits for a frame being keyed on another thread.
        Arrays already returned stay valid: they own their memory."""
        if self._ctx is not None:
            self._ctx.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def closed(self):
        return self._ctx is None or self._ctx.closed

    # -- what was loaded --
    @property
    def params(self):
        """The ck_params in effect (ck_ctx_params), as a dict keyed by the C field names."""
        return self._ctx.params

    @property
    def size(self):
        """The model resolution S the keyer runs at (the tile size in tiled mode)."""
        return self._ctx.params["size"]

    @property
    def device(self):
        """"cpu", or the CUDA backend's name (ck_ctx_device_name)."""
        return self._ctx.device_name

    @property
    def colorspace(self):
        """The plates' colour space in effect, by its short name."""
        return _ckey.colorspace_name(self._ctx.params["colorspace"])

    @property
    def max_batch(self):
        return self._ctx.max_batch

    @property
    def activation_bytes(self):
        return self._ctx.activation_bytes

    @property
    def weight_bytes(self):
        return self._ctx.weight_bytes

    # -- keying --
    def key(self, rgb, hint, *, despill=None, despeckle=None, despeckle_size=None, comp=None, passes=False):
        """Keys one frame: ck_key_image_begin (the network) + ck_result_finish (resize back, despill,
        despeckle, premultiply, comp), with the GIL released.

        rgb    numpy float32 or float16 (H, W, 3): sRGB-encoded values, or linear light / the Keyer's
               colour space when it was made with linear=True or colorspace=... (fixed at load: the C API
               takes the plates' encoding in ck_ctx_init)
        hint   numpy float32 or float16 (H, W) or (H, W, 1), the same H and W: rough alpha, 1 = foreground
        despill, despeckle, despeckle_size, comp: this frame's post-processing (None: the Keyer's);
               ck_result_finish takes them per frame
        passes True: also the passes' exact samples as CorridorKey's files store them (ck_passes_from_result:
               half floats, round to nearest even; the comp as uint8(clip(v, 0, 1) * 255) truncated)

        A C-contiguous float32 array is read in place; other layouts and float16 are converted first.
        Returns a KeyResult whose arrays own ckey's output buffers (no copies).
        """
        if self._ctx is None:
            raise BadStateError("this Keyer was not made")
        out = self._ctx.key(rgb, hint, _post_params(despill, despeckle, despeckle_size, comp), bool(passes))
        p = out["passes"]
        return KeyResult(out["alpha"], out["fg"], out["processed"], out["comp"],
                         Passes(p["alpha"], p["fg"], p["processed"], p["comp"]) if p is not None else None)

    def __repr__(self):
        if self.closed:
            return f"<ckey.Keyer {self.checkpoint!r} closed>"
        tiled = f", tile={self.params['tile']}/{self.params['tile_overlap']}" if self.params["tile"] else ""
        return f"<ckey.Keyer {self.checkpoint!r} size={self.size} device={self.device!r}{tiled}>"


def _post_params(despill, despeckle, despeckle_size, comp):
    """The post-processing fields given (None: unchanged), checked as `ckey key` checks its options."""
    post = {}
    if despill is not None:
        despill = float(despill)
        if not 0.0 <= despill <= 1.0:
            raise InvalidArgumentError(f"despill {despill}: must be between 0 and 1")
        post["despill"] = despill
    if despeckle is not None:
        post["despeckle"] = bool(despeckle)
    if despeckle_size is not None:
        if int(despeckle_size) < 0:
            raise InvalidArgumentError(f"despeckle_size {despeckle_size}: must be 0 or more")
        post["despeckle_size"] = int(despeckle_size)
    if comp is not None:
        post["comp"] = bool(comp)
    return post
