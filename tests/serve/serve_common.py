"""Shared by the tests of `ckey serve` (test_serve_http.py, test_serve_browser.py): a generated shot, the server as a
child process with its printed address, raw HTTP, and the views computed independently from the files `ckey key`
writes, by the rule tools/ckey/serve/serve_key.c states (8-bit = floor(clip(v, 0, 1) * 255 + 0.5) of the stored
value; composites in linear light with C's float32 steps and libm's powf, as ckey's colour functions)."""

import ctypes
import os
import pathlib
import select
import signal
import socket
import subprocess
import sys
import time

import numpy as np

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests
F32 = np.float32


def env_path(name, default):
    return pathlib.Path(os.environ.get(name, default))


CKEY = env_path("CK_BIN", "build/ckey")
TMP = env_path("CK_TMP", "/tmp")


def run(*args, check=True):
    p = subprocess.run([str(CKEY), *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"ckey {' '.join(map(str, args))}: exit {p.returncode}\n{p.stderr}")
    return p


def make_shot(root, count=4, size="256x144", seed=7):
    """`ckey plates` writes a shot: Plate/ and AlphaHint/ PNG frames (and Truth/, unused here)."""
    root = pathlib.Path(root)
    if root.exists():
        subprocess.run(["rm", "-rf", str(root)], check=True)
    run("plates", "--out", root, "--size", size, "--count", count, "--format", "png", "--seed", seed)
    return root


class Server:
    """`ckey serve SHOT --port 0 ARGS` with its address read from the one line it prints on stdout."""

    def __init__(self, shot, *args, log=None):
        self.log = open(log or TMP / "serve.log", "w")
        self.proc = subprocess.Popen([str(CKEY), "serve", str(shot), "--port", "0", *map(str, args)],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline().strip() if ready else ""
        if not line.startswith("http://"):
            self.proc.kill()
            raise AssertionError(f"ckey serve printed no address (got {line!r}); see {self.log.name}")
        self.url = line
        hostport, self.token = line[len("http://"):].split("/?token=")
        self.host, port = hostport.rsplit(":", 1)
        self.port = int(port)

    def request(self, method, target, headers=None, body=None, token=True, timeout=120):
        """(status, headers dict with lower-case names, body bytes); the target is sent exactly as given."""
        h = dict(headers or {})
        if token:
            h.setdefault("X-Ckey-Token", self.token)
        if body is not None:
            h.setdefault("Content-Length", str(len(body)))
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host}:{self.port}", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in h.items()]
        data = ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")
        return parse_response(self.raw(data, timeout))

    def raw(self, data, timeout=60):
        """Sends bytes as they are and reads until the server closes (or timeout)."""
        with socket.create_connection((self.host, self.port), timeout=timeout) as s:
            s.sendall(data)
            try:
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            out = b""
            while True:
                try:
                    k = s.recv(65536)
                except (ConnectionResetError, socket.timeout):
                    break
                if not k:
                    break
                out += k
            return out

    def alive(self):
        st, _, body = self.request("GET", "/api/info")
        return st == 200 and b'"shots"' in body

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = -9
        self.log.close()
        return rc


def parse_response(raw):
    if not raw:
        return 0, {}, b""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding") == "chunked":
        out, rest = b"", body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            n = int(size_line.split(b";")[0] or b"0", 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        body = out
    return status, headers, body


# ---- the views, from ckey key's files ----

def read_image(path):
    import imageio
    path = pathlib.Path(path)
    return np.asarray(imageio.imread(str(path), format={".png": "PNG-FI", ".exr": "EXR-FI"}[path.suffix]))


_libm = ctypes.CDLL("libm.so.6")
_libm.powf.restype = ctypes.c_float
_libm.powf.argtypes = [ctypes.c_float, ctypes.c_float]


def powf(x, e):
    """libm's powf element by element (ckey's colour functions call it), once per distinct value."""
    x = np.asarray(x, dtype=F32)
    u, inv = np.unique(x, return_inverse=True)
    return np.array([_libm.powf(float(v), float(e)) for v in u], dtype=F32)[inv].reshape(x.shape)


def lin_to_srgb(x):  # src/pipeline/color.c ck_linear_to_srgb
    x = np.maximum(np.asarray(x, dtype=F32), F32(0))
    hi = F32(1.055) * powf(np.maximum(x, F32(0.0031308)), F32(1.0 / 2.4)) - F32(0.055)
    return np.where(x <= F32(0.0031308), x * F32(12.92), hi).astype(F32)


def srgb_to_lin(x):  # ck_srgb_to_linear
    x = np.maximum(np.asarray(x, dtype=F32), F32(0))
    hi = powf((np.maximum(x, F32(0.04045)) + F32(0.055)) / F32(1.055), F32(2.4))
    return np.where(x <= F32(0.04045), x / F32(12.92), hi).astype(F32)


def u8r(v):
    v = np.asarray(v, dtype=F32)
    t = np.floor(v * F32(255) + F32(0.5))
    return np.where(~(v > 0), 0, np.where(v >= 1, 255, t)).astype(np.uint8)


def background(h, w, bg):
    """bg 'checker' (128-px squares of sRGB 0.15 / 0.55), 'none' or 'RRGGBB', linear, (h, w, 3)."""
    if bg == "checker":
        cb = srgb_to_lin(np.array([0.15, 0.55], dtype=F32))
        y, x = np.mgrid[0:h, 0:w]
        return np.repeat(cb[((x >> 7) + (y >> 7)) & 1][:, :, None], 3, axis=2)
    if bg == "none":
        return np.zeros((h, w, 3), F32)
    rgb = [int(bg[i:i + 2], 16) / F32(255) for i in (0, 2, 4)]
    return np.broadcast_to(srgb_to_lin(np.array(rgb, dtype=F32)), (h, w, 3))


def unit(samples):
    """ckey's decoding of integer samples: float32 division by 255 or 65535 (src/io/image_buf.c)."""
    return samples.astype(F32) / F32(255 if samples.dtype == np.uint8 else 65535)


def expected_view(out_dir, stem, plate, hint, view, bg="checker"):
    """The view of one frame keyed by `ckey key` into out_dir (Matte/FG/Processed/Comp), uint8 (h, w) or (h, w, 3)."""
    out_dir = pathlib.Path(out_dir)
    if view == "plate":
        p = unit(read_image(plate))
        return u8r(np.repeat(p[:, :, None], 3, axis=2) if p.ndim == 2 else p[:, :, :3])
    if view == "hint":
        p = unit(read_image(hint))
        return u8r(p if p.ndim == 2 else p[:, :, 0])
    if view == "comp":
        return read_image(out_dir / "Comp" / f"{stem}.png")
    a = read_image(out_dir / "Matte" / f"{stem}.exr").astype(F32)
    if a.ndim == 3:
        a = a[:, :, 0]
    if view == "matte":
        return u8r(a)
    b = background(a.shape[0], a.shape[1], bg)
    if view == "fg":
        fg = read_image(out_dir / "FG" / f"{stem}.exr").astype(F32)[:, :, :3]
        if bg == "none":
            return u8r(fg)
        a3 = a[:, :, None]
        return u8r(lin_to_srgb(srgb_to_lin(fg) * a3 + b * (F32(1) - a3)))
    if view == "processed":
        p = read_image(out_dir / "Processed" / f"{stem}.exr").astype(F32)
        a4 = p[:, :, 3:4]
        return u8r(lin_to_srgb(p[:, :, :3] + b * (F32(1) - a4)))
    raise ValueError(view)


def png_pixels(data):
    """An 8-bit PNG's samples (the server's views), through FreeImage."""
    import imageio
    return np.asarray(imageio.imread(data, format="PNG-FI"))


class Checks:
    """Loud checks with one verdict, like tests/harness.h."""

    def __init__(self):
        self.n = self.failed = 0

    def __call__(self, cond, what):
        self.n += 1
        if cond:
            print(f"OK     {what}")
        else:
            self.failed += 1
            print(f"NOT OK {what}")
        sys.stdout.flush()
        return cond

    def summary(self):
        print(f"{'FAIL' if self.failed else 'PASS'}: {self.n} checks, {self.failed} failures")
        return 1 if self.failed else 0


def wait_for(pred, timeout, step=0.05):
    t = time.time() + timeout
    while time.time() < t:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()
