import OpenEXR, numpy as np, sys
from PIL import Image
def rd(p):
    with OpenEXR.File(p) as f:
        ch = f.channels()
        k = list(ch.keys())
        return {c: ch[c].pixels.astype(np.float32) for c in k}
n = sys.argv[1]
pl = rd(f'p9811/Plate/{n}.exr'); k = list(pl.keys())
if 'RGB' in pl: rgb = pl['RGB']
elif 'RGBA' in pl: rgb = pl['RGBA'][..., :3]
else: rgb = np.stack([pl['R'], pl['G'], pl['B']], -1)
srgb = np.where(rgb <= 0.0031308, 12.92 * rgb, 1.055 * np.clip(rgb, 0.0031308, None) ** (1 / 2.4) - 0.055)
ta = list(rd(f'p9811/Truth/Alpha/{n}.exr').values())[0]
pa = list(rd(f'kk/Matte/{n}.exr').values())[0]
ta = ta[..., 0] if ta.ndim == 3 else ta; pa = pa[..., 0] if pa.ndim == 3 else pa
hint = np.asarray(Image.open(f'p9811/AlphaHint/{n}.png')).astype(np.float32); hint = hint / hint.max()
if hint.ndim == 3: hint = hint[..., 0]
err = np.abs(pa - ta)
print(n, 'alpha mae', err.mean(), 'edge', err[(ta > 0) & (ta < 1)].mean())
def g(x): return np.repeat(np.clip(x, 0, 1)[..., None], 3, -1)
top = np.concatenate([np.clip(srgb, 0, 1), g(hint)], 1)
bot = np.concatenate([g(ta), g(pa)], 1)
errimg = np.zeros_like(g(err)); errimg[..., 0] = np.clip(err * 4, 0, 1); errimg[..., 1] = np.clip((pa - ta) * 4, 0, 1)
im = np.concatenate([top, bot, np.concatenate([errimg, g(np.abs(pa-ta) > 0.1)], 1)], 0)
Image.fromarray((im * 255).astype(np.uint8)).resize((im.shape[1] // 4, im.shape[0] // 4), Image.BILINEAR).save(f'viz_{n}.png')
