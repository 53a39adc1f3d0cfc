"""ckey for Python: the CorridorKey green-screen keyer on numpy arrays.

    import ckey
    with ckey.Keyer() as k:                      # the built-in small keyer (`--checkpoint builtin`)
        out = k.key(rgb, hint)                   # rgb (H, W, 3), hint (H, W): float32 or float16
        matte, fg, processed, comp = out.alpha, out.fg, out.processed, out.comp

    with ckey.Keyer() as k:                      # a shot into files, as `ckey key` writes them
        k.key_shot("plates/", "keyed/", hint="hints/", progress=lambda f: print(f.done, f.total, f.paths))

The work is done by ckey's C library (include/ckey.h, include/ckey_shot.h) through the extension
ckey._ckey: one Keyer is one ck_ctx (the checkpoint loaded and planned for one size); a frame is
ck_key_image_begin + ck_result_finish, a shot ck_shot_key (the frame pipeline, files in and out), both run
with the GIL released. Failures raise ckey.Error subclasses carrying `.status` (the ck_status code) and
ckey's message.
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
    "Keyer", "KeyResult", "Passes", "ShotFrame", "ShotResult", "Error", "InvalidArgumentError", "FileError", "FormatError", "ShapeError",
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


class ShotFrame:
    """A frame of a shot, complete (Keyer.key_shot's progress callable gets one per frame, in frame order):

    frame    its position in the shot (0-based)
    stem     its pass name: the frame file's name without extension, a video frame's index as 00000, ...
    skipped  True when its passes were there already (skip_existing): nothing keyed, no paths
    done     frames complete so far (written or skipped); total: frames in the range
    paths    the files written: Matte, FG, Processed (EXR) and Comp (PNG, when the comp is on)
    seconds  this frame's time in each stage: read, network (its batch's), finish, write, ordered (videos)
    """

    __slots__ = ("frame", "stem", "skipped", "done", "total", "paths", "seconds")

    def __init__(self, frame, stem, skipped, done, total, paths, seconds):
        self.frame, self.stem, self.skipped, self.done, self.total = frame, stem, skipped, done, total
        self.paths, self.seconds = paths, seconds

    def __repr__(self):
        return f"ShotFrame({self.frame}, {self.stem!r}, {self.done}/{self.total}{', skipped' if self.skipped else ''})"


class ShotResult:
    """What Keyer.key_shot did (ck_shot_stats):

    frames, skipped   frames written, frames already there (skip_existing)
    cancelled         True when the progress callable returned False (the frames keyed before are written)
    videos_encoded    frames encoded into the videos from the passes after a resumed whole shot (else 0)
    readers, workers  the pipeline's thread counts
    wall_s            the pipeline's seconds; seconds: busy seconds per stage, summed over the frames
    """

    __slots__ = ("frames", "skipped", "cancelled", "videos_encoded", "readers", "workers", "wall_s", "seconds")

    def __init__(self, frames, skipped, cancelled, videos_encoded, readers, workers, wall_s, seconds):
        self.frames, self.skipped, self.cancelled, self.videos_encoded = frames, skipped, cancelled, videos_encoded
        self.readers, self.workers, self.wall_s, self.seconds = readers, workers, wall_s, seconds

    def __repr__(self):
        return f"ShotResult(frames={self.frames}, skipped={self.skipped}, cancelled={self.cancelled})"


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
    fg_unmix    None (default): as `ckey key` (on with the built-in keyer, off with other checkpoints);
                True / False: --fg-unmix / --no-fg-unmix (the fg un-mixed from the plate where alpha > 0.1)
    despill, despeckle, despeckle_size, comp: the post-processing defaults for key() (None: ckey's
                defaults 0.5, True, 400, True); key() may change them per frame

    Everything but the post-processing is fixed when the Keyer is made: the C API takes the model
    size, device, precision, tiling, colour space / linear flag, refiner settings, keep_highlights and
    fg_unmix in ck_ctx_init only. A Keyer keys on one thread at a time (calls from several threads wait for each
    other); separate Keyers key concurrently.
    """

    def __init__(self, checkpoint=None, size=None, device="auto", precision="auto", tile=0, overlap=64, *,
                 threads=0, batch=0, linear=False, colorspace=None, refiner_scale=None, use_refiner=True,
                 head_dim=0, keep_highlights=False, fg_unmix=None, despill=None, despeckle=None, despeckle_size=None,
                 comp=True):
        self._ctx = None
        checkpoint = BUILTIN if checkpoint is None else _os.fspath(checkpoint)
        dev = _choice("device", device, _DEVICES)
        if size is None:
            size = _DEFAULTS["size"]
            if _is_builtin(checkpoint) and not tile:
                # as `ckey key` (tools/ckey/key.c): 2048 on CUDA, where the built-in keyer keys 2048 plates
                # better than at its training size; its training size on the CPU, where 2048 costs ~4x
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
        if fg_unmix is not None:
            params["fg_unmix"] = 1 if fg_unmix else 0
        params.update(_post_params(despill, despeckle, despeckle_size, None))
        self._ctx = _ckey.Context(checkpoint, params)
        self.checkpoint = checkpoint
        # linear files (EXR, float TIFF) are kept linear on reading with linear=True or a colour space, as
        # `ckey key --linear` / `--colorspace` read them; otherwise they are sRGB-encoded
        self._files_linear = bool(linear) or colorspace is not None

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
    def key(self, rgb, hint, *, despill=None, despeckle=None, despeckle_size=None, comp=None, passes=False,
            out=None):
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

        out    None: new arrays. A KeyResult of an earlier key() of a frame of this size: this frame is keyed
               into its arrays in place (ck_key_image_into: no output memory allocated, the same array objects
               afterwards) and `out` itself is returned. Its arrays must be float32 (H, W), (H, W, 3),
               (H, W, 4), (H, W, 3), C-contiguous, writable and apart from each other and from rgb and hint,
               else ShapeError / DtypeError / InvalidArgumentError, nothing keyed. With the comp off,
               out.comp becomes None (its array is not written); with the comp on and out.comp None, a new
               comp array is made. The passes (passes=True) are new arrays on every call.

        A C-contiguous float32 array is read in place; other layouts and float16 are converted first.
        Returns a KeyResult whose arrays own ckey's output buffers (no copies), or `out`.
        """
        if self._ctx is None:
            raise BadStateError("this Keyer was not made")
        kept = None
        if out is not None:
            if not isinstance(out, KeyResult):
                raise InvalidArgumentError(f"out: expected a KeyResult of an earlier key(), got {type(out).__name__}")
            kept = (out.alpha, out.fg, out.processed, out.comp)
        r = self._ctx.key(rgb, hint, _post_params(despill, despeckle, despeckle_size, comp), bool(passes), kept)
        p = r["passes"]
        p = Passes(p["alpha"], p["fg"], p["processed"], p["comp"]) if p is not None else None
        if out is None:
            return KeyResult(r["alpha"], r["fg"], r["processed"], r["comp"], p)
        out.comp, out.passes = r["comp"], p  # alpha, fg and processed are out's own arrays, keyed in place
        return out

    def key_shot(self, image, out, hint=None, *, frames=None, skip_existing=False, exr="pxr24", video_out=None,
                 progress=None, readers=0, workers=0, despill=None, despeckle=None, despeckle_size=None, comp=None):
        """Keys a shot into files, exactly as `ckey key --image IMAGE [--hint HINT] --out OUT` writes them
        (include/ckey_shot.h): OUT/Matte, FG, Processed/<stem>.exr and OUT/Comp/<stem>.png, each frame's set
        written atomically; the videos of a video source. The frames go through the library's frame pipeline
        (reader, keying and writer threads) with the GIL released.

        image      a plate file, a folder of frames (.png/.jpg/.exr/.tif/.dpx, natural order) or a video
        hint       None: the automatic chroma-difference hint (logged as a warning); a file (every frame), a
                   folder of hints (paired by position) or, for a video, a hint video
        frames     None (all), or (first, last): positions, inclusive (`--frames first-last`)
        skip_existing  keep the frames whose passes are all there and decode (`--skip-existing`)
        exr        "pxr24" (CorridorKey's), "zip" or "none": the EXR passes' compression
        video_out  None: ProRes 4444 + H.264 for a video source, none for frames; "": none; else a comma list
                   of "prores", "ffv1", "h264" (`--video-out`)
        progress   called as progress(ShotFrame) after each frame, in frame order, with the GIL held; returning
                   False stops the run before its next frame (the frames keyed are written; result.cancelled),
                   an exception stops it the same way and is raised here. Ctrl-C (KeyboardInterrupt, when keying
                   on the main thread) stops it too, before the next frame.
        readers, workers   decoding and writing threads (0: ckey's defaults)
        despill, despeckle, despeckle_size, comp: this shot's post-processing (None: the Keyer's)

        Returns a ShotResult. Failures (a missing file, an unreadable frame, an unwritable folder) raise the
        ckey.Error subclass of their status with ckey's message; frames already written stay complete.
        """
        if self._ctx is None:
            raise BadStateError("this Keyer was not made")
        first, count = 0, -1
        if frames is not None:
            first, last = (frames, frames) if isinstance(frames, int) else frames
            if int(last) < int(first) or int(first) < 0:
                raise InvalidArgumentError(f"frames {frames!r}: (first, last) positions with 0 <= first <= last")
            first, count = int(first), int(last) - int(first) + 1
        if exr not in ("pxr24", "zip", "none"):
            raise InvalidArgumentError(f"exr {exr!r}: one of pxr24, zip, none")
        callback = None
        if progress is not None:
            if not callable(progress):
                raise TypeError("progress must be callable")

            def callback(d):
                return progress(ShotFrame(d["frame"], d["stem"], d["skipped"], d["done"], d["total"], d["paths"],
                                          d["seconds"]))

        kw = {}
        if hint is not None:
            kw["hint"] = _os.fspath(hint)
        if video_out is not None:
            kw["video_out"] = str(video_out)
        r = self._ctx.key_shot(_os.fspath(image), _os.fspath(out), first=first, count=count,
                               skip_existing=bool(skip_existing), exr=exr, readers=int(readers), workers=int(workers),
                               input_is_linear=self._files_linear,
                               post=_post_params(despill, despeckle, despeckle_size, comp), progress=callback, **kw)
        return ShotResult(r["frames"], r["skipped"], r["cancelled"], r["videos_encoded"], r["readers"], r["workers"],
                          r["wall_s"], r["seconds"])

    def key_sequence(self, folder, out, hint=None, **options):
        """key_shot on a folder of frames (FileError when `folder` is not one)."""
        if not _os.path.isdir(folder):
            raise FileError(f"{_os.fspath(folder)}: not a folder of frames")
        return self.key_shot(folder, out, hint, **options)

    def key_video(self, video, out, hint=None, **options):
        """key_shot on a video file (FileError when `video` is not a file); its videos are written by default
        (video_out)."""
        if not _os.path.isfile(video):
            raise FileError(f"{_os.fspath(video)}: no such video file")
        return self.key_shot(video, out, hint, **options)

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
