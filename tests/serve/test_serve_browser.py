"""The review page of `ckey serve` in a real browser: Debian's headless Chromium, driven through chromium-driver by
python3-selenium, against a running server on a generated shot (4 frames of 256x144, the built-in model at 256 on
the CPU). Like a user it scrubs to frame 2 (arrow keys on the scrubber), sets despill to 0.2, presses "Key frame",
looks at every view at 1:1, over none, the checkerboard and a colour, side by side and with a wipe, zooms to the
pixel, inspects one, downloads the keyed frame's passes and renders the shot. Checked against `ckey key` run on the
same frame with the same settings:
  - the pixels the page shows (read back from its canvas) equal each view computed from ckey key's files by the
    server's documented rule, exactly (tools/ckey/serve/serve_key.c), and at 800 % each image pixel is an 8x8
    block of that value;
  - the passes the page links to equal ckey key's files byte for byte (same halves, same rounding, same encoding);
  - the render completes and the page lists its outputs.
Screenshots of each view go to $CK_SHOTS (build/tests/serve_screenshots/). Exits 77 (skipped) only when Chromium,
its driver or selenium are not installed."""

import base64
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import serve_common as sc  # noqa: E402

import numpy as np  # noqa: E402

check = sc.Checks()
SHOTS = sc.env_path("CK_SHOTS", sc.TMP / "serve_screenshots")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)


def browser(profile):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    o = Options()
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900",
              "--force-device-scale-factor=1", "--force-color-profile=srgb", "--disable-extensions",
              f"--user-data-dir={profile}"]:
        o.add_argument(a)
    o.binary_location = CHROMIUM
    d = webdriver.Chrome(service=Service(DRIVER), options=o)
    d.set_page_load_timeout(60)
    d.set_script_timeout(60)
    return d


def wait(d, js, timeout=120, what=""):
    t = time.time() + timeout
    while time.time() < t:
        v = d.execute_script(js)
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or js}")


SHOWN = "(document.body.dataset.shown || '').split(' ')[0]"  # the URL pane A shows

READ_PANE = """
const r = window.ckey.viewRect(0);
if (!r) return null;
const c = document.querySelector('#pane-a canvas');
const px = c.getContext('2d').getImageData(r.x, r.y, Math.round(r.w), Math.round(r.h));
let s = '';
for (let i = 0; i < px.data.length; i += 8192) s += String.fromCharCode.apply(null, px.data.subarray(i, i + 8192));
return [px.width, px.height, btoa(s), r.z];
"""


def shown_pixels(d):
    w, h, b64, z = d.execute_script(READ_PANE)
    return np.frombuffer(base64.b64decode(b64), np.uint8).reshape(h, w, 4), z


def select(d, sel_id, value):
    from selenium.webdriver.support.ui import Select
    Select(d.find_element("id", sel_id)).select_by_value(value)


def show(d, view, bg):
    """View A = view over bg at 1:1; waits until the pane shows it. Returns the URL shown."""
    select(d, "bg", "colour" if len(bg) == 6 else bg)
    if len(bg) == 6:
        d.execute_script("const c = document.getElementById('bg-colour'); c.value = '#' + arguments[0];"
                         "c.dispatchEvent(new Event('input'));", bg)
    select(d, "view-a", view)
    want = f"view={view}" + (f"&bg={bg}" if view in ("fg", "processed") else "")
    return wait(d, f"const u = {SHOWN}; return u.includes('{want}') && !u.includes('{want}&') ? u : null",
                30, f"the page showing {want}")


def view_checks(d, ref, shot):
    d.find_element("id", "z-1").click()
    for view, bg in [("plate", "none"), ("hint", "none"), ("matte", "none"), ("fg", "none"), ("fg", "checker"),
                     ("fg", "2050a0"), ("processed", "none"), ("processed", "checker"), ("comp", "checker")]:
        show(d, view, bg)
        d.find_element("id", "z-1").click()
        got, z = shown_pixels(d)
        want = sc.expected_view(ref, "0002", shot / "Plate/0002.png", shot / "AlphaHint/0002.png", view, bg)
        want3 = np.repeat(want[:, :, None], 3, axis=2) if want.ndim == 2 else want
        same = got.shape[:2] == want3.shape[:2] and np.array_equal(got[:, :, :3], want3) and (got[:, :, 3] == 255).all()
        diff = int(np.abs(got[:, :, :3].astype(int) - want3.astype(int)).max()) if got.shape[:2] == want3.shape[:2] else -1
        check(z == 1 and same, f"shown {view} over {bg} at 1:1 equals the view of ckey key's files "
              f"({got.shape[1]}x{got.shape[0]}, max difference {diff})")
        d.save_screenshot(str(SHOTS / f"view_{view}_{bg}.png"))


def zoom_checks(d, ref, shot):
    show(d, "matte", "none")
    d.find_element("id", "z-1").click()
    for _ in range(3):
        d.find_element("id", "z-in").click()
    label = d.find_element("id", "zoom-label").text
    r = d.execute_script("return window.ckey.viewRect(0)")
    c = d.execute_script("const c = document.querySelector('#pane-a canvas'); return [c.width, c.height]")
    matte = sc.expected_view(ref, "0002", None, None, "matte")
    # edge pixels (neither 0 nor 255) that the zoomed pane shows: image pixel (x, y) covers canvas
    # [r.x + 8x, r.x + 8x + 8) x [r.y + 8y, r.y + 8y + 8)
    ys, xs = np.nonzero((matte > 20) & (matte < 235))
    inside = [(x, y) for x, y in zip(xs, ys) if 0 <= r["x"] + 8 * x and r["x"] + 8 * x + 8 <= c[0]
              and 0 <= r["y"] + 8 * y and r["y"] + 8 * y + 8 <= c[1]]
    picks = inside[:: max(1, len(inside) // 5)][:5]
    ok = label == "800%" and r["z"] == 8 and len(picks) == 5
    for x, y in picks:
        block = d.execute_script("return Array.from(document.querySelector('#pane-a canvas').getContext('2d')"
                                 ".getImageData(arguments[0], arguments[1], 8, 8).data)", r["x"] + 8 * int(x), r["y"] + 8 * int(y))
        ok = ok and (np.array(block, np.uint8).reshape(8, 8, 4)[:, :, :3] == matte[y, x]).all()
    check(ok, f"at {label} each of 5 edge pixels {[(int(x), int(y), int(matte[y, x])) for x, y in picks]} is an "
          "8x8 block of its value")
    x, y = (int(v) for v in picks[0])
    d.save_screenshot(str(SHOTS / "zoom_800.png"))
    # a click inspects the pixel under the cursor: the stored values
    from selenium.webdriver.common.action_chains import ActionChains
    canvas = d.find_element("css selector", "#pane-a canvas")
    cw, ch = canvas.size["width"], canvas.size["height"]
    ActionChains(d).move_to_element_with_offset(canvas, int(r["x"] + 8 * x + 4 - cw / 2),
                                                int(r["y"] + 8 * y + 4 - ch / 2)).click().perform()
    text = wait(d, "const t = document.getElementById('pixel').textContent; return t.includes('stored') ? t : null", 30)
    a = sc.read_image(ref / "Matte/0002.exr")
    a = float(a[y, x] if a.ndim == 2 else a[y, x, 0])
    js = repr(float(f"{a:.6g}")).replace("e-0", "e-")  # as the page prints +v.toPrecision(6)
    js = js[:-2] if js.endswith(".0") else js
    check(f"x {x}  y {y}" in text and f"matte{js}" in text.replace(" ", ""),
          f"clicking inspects pixel ({x}, {y}): matte {a:.6g} ({text[:90]!r})")
    d.find_element("id", "z-fit").click()


def main():
    missing = [n for n, v in [("chromium", CHROMIUM), ("chromedriver (chromium-driver)", DRIVER)] if not v]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("python3-selenium")
    if missing:
        print("skipped: not installed: " + ", ".join(missing))
        return sc.SKIP
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = sc.make_shot(sc.TMP / "serve_browser_shot")
    ref = sc.TMP / "serve_browser_ref"
    sc.run("key", "--image", shot / "Plate/0002.png", "--hint", shot / "AlphaHint/0002.png", "--out", ref,
           "--size", "256", "--despill", "0.2", "--quiet")
    srv = sc.Server(shot, "--size", "256", log=sc.TMP / "serve_browser.log")
    d = None
    profile = tempfile.mkdtemp(prefix="chromium-", dir=sc.TMP)  # a fresh profile: no lock left by an earlier run
    try:
        d = browser(profile)
        d.get(srv.url)
        wait(d, "return document.body.dataset.state === 'ready'", 60, "the page to start")
        check(d.current_url.rstrip("/").endswith(str(srv.port)) and "token" not in d.current_url,
              f"the token went into a cookie and out of the address ({d.current_url})")
        d.save_screenshot(str(SHOTS / "start.png"))

        from selenium.webdriver.common.keys import Keys
        scrub = d.find_element("id", "scrub")
        scrub.click()  # the middle of the range: frame 1 or 2; then arrows to the end and back to 2
        for k in [Keys.END, Keys.ARROW_LEFT]:
            scrub.send_keys(k)
        wait(d, "return document.body.dataset.frame === '2'", 30, "the scrubber at frame 2")
        label = d.find_element("id", "frame-label").text
        check("2 / 3" in label and "0002" in label, f"scrubbed to frame 2 ({label!r})")

        despill = d.find_element("id", "s-despill")
        despill.clear()
        despill.send_keys("0.2", Keys.TAB)
        got = d.execute_script("return window.ckey.state.settings.despill")
        check(abs(got - 0.2) < 1e-9, f"despill set to 0.2 in the page ({got})")

        d.find_element("id", "key").click()
        wait(d, "const s = document.getElementById('status'); return s.dataset.busy === '0' && s.dataset.keyId !== '0'",
             120, "the key")
        status = d.find_element("id", "status").text
        check("frame 2 keyed in" in status and " ms" in status, f"the page says what keying took ({status!r})")

        view_checks(d, ref, shot)
        zoom_checks(d, ref, shot)

        for layout in ["side", "wipe"]:
            select(d, "layout", layout)
            select(d, "view-b", "plate")
            show(d, "comp", "checker")
            hidden = d.execute_script("return document.getElementById('pane-b').hidden")
            check(hidden == (layout == "wipe"), f"layout {layout}: pane B {'hidden' if hidden else 'shown'}")
            time.sleep(0.3)
            d.save_screenshot(str(SHOTS / f"layout_{layout}.png"))
        select(d, "layout", "single")

        links = d.execute_script("return ['matte','fg','processed','comp'].map(p => document.getElementById('pass-' + p).href)")
        files = {"matte": "Matte/0002.exr", "fg": "FG/0002.exr", "processed": "Processed/0002.exr", "comp": "Comp/0002.png"}
        for link, (p, rel) in zip(links, files.items()):
            b64 = d.execute_async_script(
                "const done = arguments[1]; fetch(arguments[0]).then(r => r.arrayBuffer()).then(b => {"
                "const u = new Uint8Array(b); let s = ''; for (let i = 0; i < u.length; i += 8192)"
                "s += String.fromCharCode.apply(null, u.subarray(i, i + 8192)); done(btoa(s)); })", link)
            check(base64.b64decode(b64) == (ref / rel).read_bytes(),
                  f"the page's {p} file equals ckey key's {rel} byte for byte")

        d.find_element("id", "render").click()
        # over once the child's exit is in (the page then lists the outputs)
        state = wait(d, "const s = document.getElementById('render-status').dataset.state;"
                        "return document.body.dataset.renderPaths && s !== 'running' ? s : null", 180, "the render")
        paths = json.loads(d.execute_script("return document.body.dataset.renderPaths || '{}'"))
        out_text = d.find_element("id", "render-out").text
        check(state == "completed" and len(paths) == 4 and all(pathlib.Path(p).is_file() for p in paths.values())
              and "outputs in" in out_text, f"render: {state}, outputs listed ({out_text[-120:]!r})")
        d.save_screenshot(str(SHOTS / "render_done.png"))
        check((shot / "Output/Comp/0002.png").read_bytes() == (ref / "Comp/0002.png").read_bytes(),
              "the render's frame 2 equals ckey key's")
    finally:
        if d:
            d.quit()
        shutil.rmtree(profile, ignore_errors=True)
        rc = srv.stop()
    check(rc == 0, f"the server stopped with exit status 0 ({rc})")
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
