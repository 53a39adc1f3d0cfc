"""Procedural green/blue-screen training data, generated on the GPU in batches (tools/train/).

Every sample is built from scratch from one torch.Generator (seeded per batch), nothing read from disk:

subject alpha (linear coverage), a union of
  - soft bodies: thresholded multi-octave value noise and random ellipses, with edge widths from a hard
    1 px to a soft 12 px ramp; a quarter of the ellipses are close-ups 1.5-3.5x larger;
  - hair and fur: hundreds of thin strands grown outward from the body's edge as random smooth curves,
    drawn by splatting sub-pixel points (partial coverage, tapering opacity);
  - thin wires: long curves 0.4-2 px wide crossing the frame;
  - semi-transparent regions: smoke (noise-modulated alpha 0.05-0.6) and glass (flat alpha 0.1-0.5 with
    a tinted, darkened fg);
  - holes punched into bodies;
  then motion blur (a random line kernel) or defocus (Gaussian) on some samples, applied to alpha and to
  the premultiplied foreground together, as a camera would.
data 2 adds (train.py --data 2; data 1 is version 3's recipe):
  - props in front of the subject (a swung bat, a thrown ball, a waving hand's sleeve): bars and discs in
    bright colours, each moving fast (a line blur of 2-25 % of the frame, box-filtered along the motion
    after a rotation) or far out of focus (Gaussian, 1-3 % of the frame), so wide regions are partly covered
    by a colour that is not dark and not grey;
  - tinted glass and gels: half the glass in a saturated colour instead of the dark tint.
subject colour (straight, linear light): multi-octave noise textures in random non-screen hues, stripes
  and blotches, fine 2-8 px surface detail and weave patterns, with the screen's spill on the subject near its edges and a little bounce light overall.
screen: green or blue base colour, uneven lighting (a low-frequency field, 0.35-1.25×, and a vignette), wrinkles
  (mid-frequency noise), occasional tracking markers.
camera: composite in linear light (plate = fg·α + screen·(1 − α)), exposure and white balance jitter,
  sRGB encoding, grain, 4:2:0 chroma subsampling and 8-bit quantization with blocky chroma.
hint, degraded the way users' hints are: 8× down/up-sampled, eroded or dilated, offset, with holes, or
  the chroma-difference matte of the plate (as `ckey`'s automatic hint), often combined.

Targets: alpha (linear), fg (straight, sRGB-encoded, as the network outputs it). Inputs: the plate in
sRGB and the hint. Shapes NCHW float32 on the device: rgb (B,3,S,S), hint (B,1,S,S), alpha (B,1,S,S),
fg (B,3,S,S).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def _u(gen, shape, lo=0.0, hi=1.0, device="cuda"):
    return lo + (hi - lo) * torch.rand(shape, generator=gen, device=device)


def value_noise(gen, b, s, octaves, base_cells, device, persistence=0.5):
    """Multi-octave value noise in [0, 1]-ish: random grids bicubically upsampled. (b,1,s,s)."""
    out = torch.zeros(b, 1, s, s, device=device)
    amp, total = 1.0, 0.0
    cells = base_cells
    for _ in range(octaves):
        g = torch.rand(b, 1, cells + 3, cells + 3, generator=gen, device=device)
        up = F.interpolate(g, size=(s + 3 * s // cells, s + 3 * s // cells), mode="bicubic", align_corners=False)
        out += amp * up[:, :, : s, : s]
        total += amp
        amp *= persistence
        cells *= 2
    return out / total


def srgb_encode(x):
    x = x.clamp(min=0.0)
    return torch.where(x <= 0.0031308, 12.92 * x, 1.055 * x.clamp(min=1e-8) ** (1 / 2.4) - 0.055)


def srgb_decode(x):
    x = x.clamp(min=0.0)
    return torch.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4)


def gaussian_blur(x, sigma, rmax=24):
    """Per-sample sigma (b,) Gaussian blur, separable, radius ≤ rmax."""
    b = x.shape[0]
    r = int(min(rmax, max(1, math.ceil(3 * float(sigma.max())))))
    t = torch.arange(-r, r + 1, device=x.device, dtype=x.dtype)
    k = torch.exp(-0.5 * (t[None] / sigma[:, None].clamp(min=1e-3)) ** 2)
    k = k / k.sum(1, keepdim=True)  # (b, 2r+1)
    c = x.shape[1]
    xr = x.reshape(1, b * c, *x.shape[2:])
    kk = k.repeat_interleave(c, 0)
    xr = F.conv2d(F.pad(xr, (r, r, 0, 0), mode="replicate"), kk[:, None, None, :], groups=b * c)
    xr = F.conv2d(F.pad(xr, (0, 0, r, r), mode="replicate"), kk[:, None, :, None], groups=b * c)
    return xr.reshape(x.shape)


def motion_blur(x, length, angle):
    """Line-kernel blur per sample: length (b,) px, angle (b,) rad."""
    b, c, s, _ = x.shape
    r = int(min(20, max(1, math.ceil(float(length.max()) / 2))))
    yy, xx = torch.meshgrid(torch.arange(-r, r + 1, device=x.device), torch.arange(-r, r + 1, device=x.device),
                            indexing="ij")
    yy, xx = yy.float()[None], xx.float()[None]
    ca, sa = torch.cos(angle)[:, None, None], torch.sin(angle)[:, None, None]
    along = xx * ca + yy * sa
    across = -xx * sa + yy * ca
    k = ((across.abs() < 0.75) & (along.abs() <= length[:, None, None] / 2)).float() + 1e-6
    k = k / k.sum((1, 2), keepdim=True)
    xr = x.reshape(1, b * c, s, s)
    kk = k.repeat_interleave(c, 0)[:, None]
    xr = F.conv2d(F.pad(xr, (r, r, r, r), mode="replicate"), kk, groups=b * c)
    return xr.reshape(b, c, s, s)


def motion_blur_long(x, length, angle):
    """Line blur of any length (b,) px at angle (b,) rad, for premultiplied layers that are zero outside the
    frame: rotate the motion onto x (on a canvas holding the whole rotated frame), a box filter along x from a
    running sum, rotate back. Bilinear resampling twice softens by about a pixel, within the blur."""
    b, c, s, _ = x.shape
    big = int(math.ceil(s * 1.415)) + 2
    ca, sa = torch.cos(angle), torch.sin(angle)
    z = torch.zeros_like(ca)
    k = big / s  # canvas coordinates in the frame's normalized units
    fwd = torch.stack([torch.stack([ca * k, -sa * k, z], -1), torch.stack([sa * k, ca * k, z], -1)], 1)
    canvas = F.grid_sample(x, F.affine_grid(fwd, (b, c, big, big), align_corners=False), align_corners=False)
    cs = F.pad(torch.cumsum(canvas, 3), (1, 0))  # (b,c,big,big+1): cs[..., i] = sum of columns < i
    out = torch.empty_like(canvas)
    for i in range(b):
        n = max(1, int(round(float(length[i]))))
        lo = (torch.arange(big, device=x.device) - n // 2).clamp(0, big)
        hi = (lo + n).clamp(0, big)
        out[i] = (cs[i][..., hi] - cs[i][..., lo]) / n
    inv = torch.stack([torch.stack([ca / k, sa / k, z], -1), torch.stack([-sa / k, ca / k, z], -1)], 1)
    return F.grid_sample(out, F.affine_grid(inv, (b, c, s, s), align_corners=False), align_corners=False)


def props(gen, b, s, screen_hue, xx, yy, device):
    """Premultiplied (alpha, rgb·alpha) (b,4,s,s) of up to three objects in front of the subject, each in one
    bright colour, moving fast or far out of focus (see the module's docstring, data 2); zero for 61 % of the
    samples (each object is there with probability 0.15)."""
    out = torch.zeros(b, 4, s, s, device=device)
    for _ in range(3):
        cx, cy = _u(gen, (b, 1, 1, 1), 0.05, 0.95, device) * s, _u(gen, (b, 1, 1, 1), 0.05, 0.95, device) * s
        hw = _u(gen, (b, 1, 1, 1), 0.01, 0.06, device) * s
        hh = hw * torch.exp(_u(gen, (b, 1, 1, 1), 0.0, math.log(6.0), device))
        rot = _u(gen, (b, 1, 1, 1), 0, math.pi, device)
        u = (xx - cx) * torch.cos(rot) + (yy - cy) * torch.sin(rot)
        v = -(xx - cx) * torch.sin(rot) + (yy - cy) * torch.cos(rot)
        bar = torch.sigmoid((hw - u.abs()) / 0.6) * torch.sigmoid((hh - v.abs()) / 0.6)
        disc = torch.sigmoid((hw - torch.sqrt(u * u + v * v)) / 0.6)
        a = torch.where(_u(gen, (b, 1, 1, 1), device=device) < 0.6, bar, disc)
        a = a * (_u(gen, (b, 1, 1, 1), device=device) < 0.15).float()
        col = random_hue_colors(gen, b, screen_hue, device, 1)[:, 0].view(b, 3, 1, 1)
        col = col * _u(gen, (b, 1, 1, 1), 0.6, 1.0, device) / col.amax(1, keepdim=True).clamp(min=1e-3) \
            * _u(gen, (b, 1, 1, 1), 0.4, 1.0, device)  # not dark: value 0.24-1
        pm = torch.cat([a, a * col], 1)
        if _u(gen, (1,), device=device).item() < 0.65:
            pm = motion_blur_long(pm, _u(gen, (b,), 0.02, 0.25, device) * s, _u(gen, (b,), 0, math.pi, device))
        else:
            sig = _u(gen, (b,), 0.01, 0.03, device) * s
            pm = gaussian_blur(pm, sig, rmax=int(math.ceil(3 * 0.03 * s)))
        out = pm + (1 - pm[:, :1]) * out
    return out


def splat_curves(gen, b, s, n, steps, start, heading, curl, width, opacity, length, device):
    """Anti-aliased thin curves: n per sample, `steps` points each, grown from start (b,n,2) in direction
    heading (b,n) with random curvature; coverage accumulated by bilinear splats of sub-pixel points.
    Returns (b,1,s,s) coverage in [0,1]."""
    step = (length / steps)[..., None]  # (b,n,1)
    ang = heading[..., None] + torch.cumsum(curl[..., None] * torch.randn(b, n, steps, generator=gen, device=device)
                                            * 0.15, dim=2)
    dx, dy = torch.cos(ang) * step, torch.sin(ang) * step
    px = start[..., 0:1] + torch.cumsum(dx, 2)
    py = start[..., 1:2] + torch.cumsum(dy, 2)
    t = torch.linspace(1.0, 0.2, steps, device=device)[None, None]  # tapering
    wgt = (opacity[..., None] * t * step.clamp(max=1.0) * width[..., None]).flatten(1)  # per point coverage
    px, py = px.flatten(1), py.flatten(1)
    img = torch.zeros(b, s * s, device=device)
    x0, y0 = px.floor(), py.floor()
    fx, fy = px - x0, py - y0
    for ox, oy, w in ((0, 0, (1 - fx) * (1 - fy)), (1, 0, fx * (1 - fy)), (0, 1, (1 - fx) * fy), (1, 1, fx * fy)):
        xi, yi = (x0 + ox).long(), (y0 + oy).long()
        ok = (xi >= 0) & (xi < s) & (yi >= 0) & (yi < s)
        idx = (yi.clamp(0, s - 1) * s + xi.clamp(0, s - 1))
        img.scatter_add_(1, idx, w * wgt * ok)
    return img.view(b, 1, s, s).clamp(0, 1)


def random_hue_colors(gen, b, screen_hue, device, k=3):
    """k random colours per sample, hue kept away from the screen's (linear RGB, (b,k,3))."""
    h = _u(gen, (b, k), device=device)
    # keep hue at least 0.12 turns away from the screen hue
    d = (h - screen_hue[:, None] + 0.5) % 1.0 - 0.5
    h = torch.where(d.abs() < 0.15, h + 0.3, h) % 1.0
    sat = _u(gen, (b, k), 0.0, 0.85, device)
    val = _u(gen, (b, k), 0.08, 0.95, device)
    i = (h * 6).floor()
    f = h * 6 - i
    p, q, t = val * (1 - sat), val * (1 - f * sat), val * (1 - (1 - f) * sat)
    i = i.long() % 6
    r = torch.stack([val, q, p, p, t, val], -1).gather(-1, i[..., None])[..., 0]
    g = torch.stack([t, val, val, q, p, p], -1).gather(-1, i[..., None])[..., 0]
    bl = torch.stack([p, p, t, val, val, q], -1).gather(-1, i[..., None])[..., 0]
    return srgb_decode(torch.stack([r, g, bl], -1))


def chroma_hint(rgb_srgb, blue):
    """The chroma-difference matte of the plate (the idea of ckey's automatic hint), at full resolution."""
    r, g, b = rgb_srgb[:, 0:1], rgb_srgb[:, 1:2], rgb_srgb[:, 2:3]
    bl = blue.view(-1, 1, 1, 1)
    sc = torch.where(bl, b, g)
    other = torch.where(bl, torch.maximum(r, g), torch.maximum(r, b))
    d = (sc - other) / sc.clamp(min=0.02)
    k = torch.quantile(d.flatten(1).clamp(min=0), 0.9, dim=1).clamp(min=1e-3).view(-1, 1, 1, 1)
    return 1 - ((d / k - 0.1) / 0.5).clamp(0, 1)


class GreenScreen:
    """Batches of (rgb, hint, alpha, fg) at size s on `device`."""

    def __init__(self, size: int = 512, device: str = "cuda", seed: int = 0, data: int = 1):
        self.s, self.device, self.seed, self.data = size, device, seed, data

    def batch(self, b: int, index: int):
        dev, s = self.device, self.s
        gen = torch.Generator(device=dev).manual_seed(self.seed * 1_000_003 + index)
        yy, xx = torch.meshgrid(torch.arange(s, device=dev, dtype=torch.float32),
                                torch.arange(s, device=dev, dtype=torch.float32), indexing="ij")

        # ---- subject alpha ----
        n = value_noise(gen, b, s, 4, int(_u(gen, (1,), 2, 6, dev).item()), dev)
        thr = _u(gen, (b, 1, 1, 1), 0.5, 0.72, dev)
        soft = torch.exp(_u(gen, (b, 1, 1, 1), math.log(0.004), math.log(0.06), dev))
        body = torch.sigmoid((n - thr) / soft)
        # ellipses (torso/head-like blobs)
        ne = 3
        cx, cy = _u(gen, (b, ne, 1, 1), 0.2, 0.8, dev) * s, _u(gen, (b, ne, 1, 1), 0.25, 1.1, dev) * s
        rx, ry = _u(gen, (b, ne, 1, 1), 0.06, 0.3, dev) * s, _u(gen, (b, ne, 1, 1), 0.08, 0.4, dev) * s
        # close-ups (a subject filling the frame, as a tile of a large plate sees it)
        zoom = torch.where(_u(gen, (b, 1, 1, 1), device=dev) < 0.25, _u(gen, (b, 1, 1, 1), 1.5, 3.5, dev),
                           torch.ones(b, 1, 1, 1, device=dev))
        rx, ry = rx * zoom, ry * zoom
        edge = torch.exp(_u(gen, (b, ne, 1, 1), math.log(0.6), math.log(10.0), dev))
        rr = torch.sqrt(((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2)
        ell = torch.sigmoid((1 - rr) * torch.minimum(rx, ry) / edge)
        use_ell = (_u(gen, (b, ne, 1, 1), device=dev) < 0.6).float()
        ell = (ell * use_ell).amax(1, keepdim=True)
        use_body = (_u(gen, (b, 1, 1, 1), device=dev) < 0.5).float()
        alpha = torch.maximum(body * use_body, ell)
        # holes
        hn = value_noise(gen, b, s, 2, 8, dev)
        holes = torch.sigmoid((hn - _u(gen, (b, 1, 1, 1), 0.72, 0.95, dev)) / 0.01)
        alpha = alpha * (1 - holes * (_u(gen, (b, 1, 1, 1), device=dev) < 0.4).float())

        # hair / fur strands from the body's edge, outward (along the alpha gradient)
        gx = F.pad(alpha[:, :, :, 2:] - alpha[:, :, :, :-2], (1, 1, 0, 0))
        gy = F.pad(alpha[:, :, 2:, :] - alpha[:, :, :-2, :], (0, 0, 1, 1))
        edge_w = (gx.abs() + gy.abs()).flatten(1) + 1e-6
        ns = 384
        pick = torch.multinomial(edge_w, ns, replacement=True, generator=gen)  # (b, ns)
        sx, sy = (pick % s).float(), (pick // s).float()
        gxs = gx.flatten(1).gather(1, pick)
        gys = gy.flatten(1).gather(1, pick)
        heading = torch.atan2(-gys, -gxs) + _u(gen, (b, ns), -0.6, 0.6, dev)
        hair_len = _u(gen, (b, 1), 4, 60, dev) * _u(gen, (b, ns), 0.4, 1.0, dev)
        hair_on = (_u(gen, (b, 1), device=dev) < 0.65).float()
        hair = splat_curves(gen, b, s, ns, 48, torch.stack([sx, sy], -1), heading, _u(gen, (b, ns), 0.0, 2.0, dev),
                            _u(gen, (b, ns), 0.3, 1.1, dev), _u(gen, (b, ns), 0.3, 1.0, dev) * hair_on,
                            hair_len, dev)
        alpha = torch.maximum(alpha, hair)
        # wires
        nw = 4
        wire_on = (_u(gen, (b, nw), device=dev) < 0.3).float()
        wstart = torch.stack([_u(gen, (b, nw), -0.1, 1.1, dev) * s, _u(gen, (b, nw), -0.1, 0.2, dev) * s], -1)
        wires = splat_curves(gen, b, s, nw, 4 * s, wstart, _u(gen, (b, nw), 0.3, 2.8, dev),
                             _u(gen, (b, nw), 0.0, 0.05, dev), _u(gen, (b, nw), 0.4, 2.0, dev),
                             wire_on, torch.full((b, nw), 1.6 * s, device=dev), dev)
        alpha = torch.maximum(alpha, wires)
        # smoke and glass
        smoke_n = value_noise(gen, b, s, 5, 4, dev)
        smoke = (smoke_n - 0.5).clamp(0, 1) * 2 * _u(gen, (b, 1, 1, 1), 0.1, 0.7, dev)
        smoke = smoke * (_u(gen, (b, 1, 1, 1), device=dev) < 0.15).float()
        gcx, gcy = _u(gen, (b, 1, 1, 1), 0.1, 0.9, dev) * s, _u(gen, (b, 1, 1, 1), 0.1, 0.9, dev) * s
        grx, gry = _u(gen, (b, 1, 1, 1), 0.05, 0.25, dev) * s, _u(gen, (b, 1, 1, 1), 0.05, 0.25, dev) * s
        glass_m = torch.sigmoid((1 - torch.sqrt(((xx - gcx) / grx) ** 2 + ((yy - gcy) / gry) ** 2)) * 40)
        glass_m = glass_m * (_u(gen, (b, 1, 1, 1), device=dev) < 0.2).float()
        glass_a = _u(gen, (b, 1, 1, 1), 0.1, 0.5, dev)

        # ---- subject colour (linear, straight) ----
        blue = _u(gen, (b,), device=dev) < 0.25
        screen_hue = torch.where(blue, torch.full((b,), 0.62, device=dev), torch.full((b,), 0.33, device=dev))
        cols = random_hue_colors(gen, b, screen_hue, dev, 4)  # (b,4,3)
        t1 = value_noise(gen, b, s, 5, int(_u(gen, (1,), 3, 12, dev).item()), dev)
        t2 = value_noise(gen, b, s, 3, 6, dev)
        stripes = 0.5 + 0.5 * torch.sin((xx * _u(gen, (b, 1, 1, 1), -0.3, 0.3, dev)
                                         + yy * _u(gen, (b, 1, 1, 1), -0.3, 0.3, dev)) + _u(gen, (b, 1, 1, 1), 0, 6, dev))
        stripes = stripes * (_u(gen, (b, 1, 1, 1), device=dev) < 0.3).float()
        w0 = t1
        w1 = (t2 > 0.5).float() * 0.7 + stripes * 0.3
        c0, c1, c2, c3 = (cols[:, i].view(b, 3, 1, 1) for i in range(4))
        fg = c0 * (1 - w0) + c1 * w0
        fg = fg * (1 - w1) + c2 * w1
        hair_col = c3 * _u(gen, (b, 1, 1, 1), 0.3, 1.2, dev)
        hw = (hair / alpha.clamp(min=1e-3)).clamp(0, 1)
        fg = fg * (1 - hw) + hair_col * hw
        fg = fg * (0.6 + 0.8 * value_noise(gen, b, s, 3, 3, dev))  # shading
        # fine surface detail (weave, print, pores: 2-8 px), which the refiner has to pass through from the
        # plate rather than smooth away
        fine = value_noise(gen, b, s, 2, max(8, int(s / _u(gen, (1,), 2, 8, dev).item())), dev)
        fine_amp = _u(gen, (b, 1, 1, 1), 0.0, 0.8, dev)
        fg = fg * (1 + fine_amp * (fine - 0.5))
        theta = _u(gen, (b, 1, 1, 1), 0, math.pi, dev)
        period = _u(gen, (b, 1, 1, 1), 2.5, 10, dev)
        weave = torch.sin(2 * math.pi * (xx * torch.cos(theta) + yy * torch.sin(theta)) / period)
        weave_amp = _u(gen, (b, 1, 1, 1), 0.0, 0.4, dev) * (_u(gen, (b, 1, 1, 1), device=dev) < 0.35).float()
        fg = (fg * (1 + weave_amp * weave)).clamp(0, 1)
        # glass: dark tinted; with data 2, half of it a saturated gel colour instead
        tint = fg * 0.3 + 0.05
        if self.data >= 2:
            gel = random_hue_colors(gen, b, screen_hue, dev, 1)[:, 0].view(b, 3, 1, 1)
            gel = gel / gel.amax(1, keepdim=True).clamp(min=1e-3) * _u(gen, (b, 1, 1, 1), 0.3, 0.95, dev)
            tint = torch.where(_u(gen, (b, 1, 1, 1), device=dev) < 0.5, gel * (0.7 + 0.3 * fg), tint)
        fg = torch.where(glass_m > 0.5, tint, fg)
        alpha = torch.maximum(alpha, glass_m * glass_a)
        smoke_col = _u(gen, (b, 1, 1, 1), 0.3, 0.9, dev).expand(b, 3, 1, 1)
        sw = (smoke / torch.maximum(alpha + smoke, torch.full_like(alpha, 1e-3))).clamp(0, 1)
        fg = fg * (1 - sw) + smoke_col * sw
        alpha = 1 - (1 - alpha) * (1 - smoke)

        # ---- screen ----
        base_g = torch.stack([_u(gen, (b,), 0.05, 0.3, dev), _u(gen, (b,), 0.35, 0.85, dev),
                              _u(gen, (b,), 0.04, 0.3, dev)], -1)
        base_b = torch.stack([_u(gen, (b,), 0.03, 0.2, dev), _u(gen, (b,), 0.08, 0.4, dev),
                              _u(gen, (b,), 0.4, 0.9, dev)], -1)
        screen = torch.where(blue[:, None], base_b, base_g).view(b, 3, 1, 1)
        # dim, grainy screen regions as real sets have them (a real plate's dim corner kept 0.1 alpha when the
        # field's floor was 0.55)
        light = 0.35 + 0.9 * value_noise(gen, b, s, 2, 2, dev)
        vign = 1 - _u(gen, (b, 1, 1, 1), 0.0, 0.5, dev) * (((xx - s / 2) ** 2 + (yy - s / 2) ** 2) / (s * s / 2))
        wrinkle = 1 + _u(gen, (b, 1, 1, 1), 0.0, 0.12, dev) * (value_noise(gen, b, s, 3, 24, dev) - 0.5)
        bg = screen * light * vign * wrinkle
        # markers
        mk = (_u(gen, (b, 1, 1, 1), device=dev) < 0.3).float()
        mx = ((xx % 97) < 1.5) & ((yy % 89) < 9) | ((yy % 89) < 1.5) & ((xx % 97) < 9)
        bg = torch.where((mk > 0) & mx, bg * 0 + _u(gen, (b, 3, 1, 1), 0.2, 0.9, dev), bg)
        bg = srgb_decode(srgb_encode(bg.clamp(0, 1)))

        # spill near edges and bounce
        near = gaussian_blur(1 - alpha, _u(gen, (b,), 2, 20, dev))
        spill = _u(gen, (b, 1, 1, 1), 0.0, 0.35, dev) * near * (alpha > 0.01).float()
        fg = fg + spill * screen * light - spill * fg * 0.5
        fg = fg + _u(gen, (b, 1, 1, 1), 0.0, 0.06, dev) * screen
        fg = fg.clamp(0, 1)

        # motion blur / defocus on alpha and premultiplied fg
        pm = torch.cat([alpha, fg * alpha], 1)
        r = _u(gen, (1,), device=dev).item()
        if r < 0.2:
            pm = motion_blur(pm, _u(gen, (b,), 2, 30, dev), _u(gen, (b,), 0, math.pi, dev))
        elif r < 0.35:
            pm = gaussian_blur(pm, _u(gen, (b,), 0.5, 4, dev))
        if self.data >= 2:
            front = props(gen, b, s, screen_hue, xx, yy, dev)
            pm = front + (1 - front[:, :1]) * pm  # the props over the subject, premultiplied
        alpha = pm[:, 0:1].clamp(0, 1)
        fg = (pm[:, 1:4] / alpha.clamp(min=1e-4)).clamp(0, 1)
        fg = torch.where(alpha > 1e-4, fg, torch.zeros_like(fg))

        # ---- camera ----
        # exposure and white balance are the camera's: they scale what it records of the subject too, so the
        # target fg carries them (a target without them asks the network to guess the camera's settings)
        cam = _u(gen, (b, 1, 1, 1), 0.7, 1.3, dev) * _u(gen, (b, 3, 1, 1), 0.9, 1.1, dev)
        plate = (fg * alpha + bg * (1 - alpha)) * cam
        fg = (fg * cam).clamp(0, 1)
        srgb = srgb_encode(plate.clamp(0, 1))
        srgb = srgb + torch.randn(b, 3, s, s, generator=gen, device=dev) * _u(gen, (b, 1, 1, 1), 0.0, 0.04, dev)
        # 4:2:0 chroma and 8-bit quantization (blocky chroma as compressed video)
        yv = 0.299 * srgb[:, 0:1] + 0.587 * srgb[:, 1:2] + 0.114 * srgb[:, 2:3]
        cb, cr = srgb[:, 2:3] - yv, srgb[:, 0:1] - yv
        sub = (_u(gen, (b, 1, 1, 1), device=dev) < 0.6).float()
        cb2 = F.interpolate(F.avg_pool2d(cb, 2), scale_factor=2, mode="bilinear", align_corners=False)
        cr2 = F.interpolate(F.avg_pool2d(cr, 2), scale_factor=2, mode="bilinear", align_corners=False)
        cb, cr = cb * (1 - sub) + cb2 * sub, cr * (1 - sub) + cr2 * sub
        r_, b_ = cr + yv, cb + yv
        g_ = (yv - 0.299 * r_ - 0.114 * b_) / 0.587
        srgb = torch.cat([r_, g_, b_], 1).clamp(0, 1)
        srgb = torch.round(srgb * 255) / 255

        # ---- hint ----
        hint = alpha.clone()
        k = int(_u(gen, (1,), device=dev).item() * 5)
        if k == 0:  # 8x down / up
            hint = F.interpolate(F.avg_pool2d(hint, 8), size=(s, s), mode="bilinear", align_corners=False)
        elif k == 1:  # eroded or dilated, blurred
            rad = int(_u(gen, (1,), 1, 12, dev).item())
            hint = F.max_pool2d(hint, 2 * rad + 1, 1, rad) if _u(gen, (1,), device=dev).item() < 0.5 \
                else -F.max_pool2d(-hint, 2 * rad + 1, 1, rad)
            hint = gaussian_blur(hint, _u(gen, (b,), 1, 8, dev))
        elif k == 2:  # offset
            dy, dx = (int(v) for v in _u(gen, (2,), -16, 16, dev).tolist())
            hint = torch.roll(hint, (dy, dx), (2, 3))
            hint = F.interpolate(F.avg_pool2d(hint, 4), size=(s, s), mode="bilinear", align_corners=False)
        elif k == 3:  # chroma difference of the plate, coarse
            hint = chroma_hint(srgb, blue)
            hint = F.interpolate(-F.max_pool2d(-F.avg_pool2d(hint, 8), 3, 1, 1), size=(s, s), mode="bilinear",
                                 align_corners=False)
        else:  # binary, with holes
            hint = (F.avg_pool2d(hint, 4) > 0.5).float()
            hint = F.interpolate(hint, size=(s, s), mode="nearest")
        hole = value_noise(gen, b, s, 2, 6, dev) > _u(gen, (b, 1, 1, 1), 0.8, 1.05, dev)
        hint = torch.where(hole, torch.zeros_like(hint), hint).clamp(0, 1)

        fg_srgb = srgb_encode(fg)
        return srgb, hint, alpha, fg_srgb
