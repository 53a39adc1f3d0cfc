"""`ckey serve` over HTTP, against a running server on a generated shot (4 frames of 256x144, the built-in model
at 256 on the CPU):
  - the token: every path refuses a request without it or with a wrong one (401); the header, the bearer, the
    query and the cookie the page gets (303 from /?token=..., HttpOnly, SameSite=Strict) each work;
  - path escapes under /files/: '..' raw and %-encoded, absolute paths, a symbolic link (file and folder) leading
    out of the shot, hidden files, folders, NUL: refused with 400 / 403 / 404, a real file served byte for byte;
  - bad requests: methods (405 with Allow), bodies over the limit (413, also chunked), headers over the limit
    (431), a target over 4096 bytes (414), garbage request lines and headers (400), unknown or repeated query
    keys and out-of-range settings (400); the server answers after every one of them;
  - a frame keyed through the server equals `ckey key`'s files byte for byte (every pass), and its views equal
    the rule computed from those files; the stored values at a pixel are the files' values;
  - concurrent clients: 12 readers and 3 keyers at once, all answered, the same bytes for the same view;
    idle half-open connections do not block others;
  - the render: ckey key --json as a child, its events streamed (render, started, frame_written x4, progress,
    completed, exited 0), a second render refused (409), the files equal to the keyed frame's; cancel: SIGTERM
    reaches the child, `cancelled` then exited 143;
  - SIGTERM stops the server with exit status 0;
  - with a checkpoint file (the tiny test model's .pth) the keyed frame equals `ckey key --checkpoint`'s files.
Registered with ctest only when `serve` is built (libmicrohttpd found)."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import serve_common as sc  # noqa: E402

import numpy as np  # noqa: E402

check = sc.Checks()
SETTINGS = {"size": "256", "despill": "0.2", "despeckle": "0"}


def q(d):
    return "&".join(f"{k}={v}" for k, v in d.items())


def token_checks(srv):
    for path in ["/", "/app.js", "/api/info", "/api/render", "/files/0/Plate/0000.png", "/nowhere"]:
        st, _, _ = srv.request("GET", path, token=False)
        check(st == 401, f"GET {path} without the token: 401 (got {st})")
    bad = srv.token[:-1] + ("0" if srv.token[-1] != "0" else "1")
    for hdrs in [{"X-Ckey-Token": bad}, {"X-Ckey-Token": srv.token[:-1]}, {"X-Ckey-Token": srv.token + "0"},
                 {"Authorization": "Bearer " + bad}, {"Cookie": f"ckey_token_{srv.port}={bad}"},
                 {"Cookie": f"ckey_token_{srv.port + 1}={srv.token}"}]:
        st, _, _ = srv.request("GET", "/api/info", headers=hdrs, token=False)
        check(st == 401, f"a wrong token {list(hdrs)[0]}: 401 (got {st})")
    st, _, _ = srv.request("POST", "/api/key?frame=0&token=" + bad, token=False)
    check(st == 401, f"a wrong token in the query: 401 (got {st})")
    st, h, _ = srv.request("GET", "/?token=" + srv.token, token=False)
    cookie = h.get("set-cookie", "")
    check(st == 303 and h.get("location") == "/" and cookie.startswith(f"ckey_token_{srv.port}={srv.token};")
          and "HttpOnly" in cookie and "SameSite=Strict" in cookie, f"/?token=: 303 to / with the cookie ({st}, {cookie})")
    for hdrs in [{"Authorization": "Bearer " + srv.token}, {"Cookie": cookie.split(";")[0]}]:
        st, _, body = srv.request("GET", "/api/info", headers=hdrs, token=False)
        check(st == 200 and b'"shots"' in body, f"the token as {list(hdrs)[0]}: 200 (got {st})")
    st, h, body = srv.request("GET", "/", headers={"Cookie": cookie.split(";")[0]}, token=False)
    csp = h.get("content-security-policy", "")
    check(st == 200 and b"<canvas>" in body and "default-src 'self'" in csp,
          f"the page with the cookie: 200, a Content-Security-Policy ({st})")
    st, _, body = srv.request("GET", "/api/info?token=" + srv.token, token=False)
    check(st == 200, f"the token in the query of an API call: 200 (got {st})")


def path_checks(srv, shot):
    outside = sc.TMP / "serve_outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("not for the page\n")
    for name, target in [("leak.txt", outside / "secret.txt"), ("leakdir", outside)]:
        link = shot / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    (shot / ".hidden.txt").write_text("hidden\n")
    cases = [
        ("/files/0/../../../../etc/passwd", 403), ("/files/0/Plate/../../serve_outside/secret.txt", 403),
        ("/files/0/%2e%2e/%2e%2e/etc/passwd", 403), ("/files/0/..%2f..%2fetc%2fpasswd", 403),
        ("/files/0/%2fetc%2fpasswd", 403), ("/files/0//etc/passwd", 403), ("/files/0/leak.txt", 403),
        ("/files/0/leakdir/secret.txt", 403), ("/files/0/.hidden.txt", 404), ("/files/0/Plate", 404),
        ("/files/0/Plate/", 404), ("/files/0/Plate/0000.png%00.txt", 400), ("/files/0/nothing.png", 404),
        ("/files/1/Plate/0000.png", 404), ("/files/-1/Plate/0000.png", 404), ("/files/x/Plate/0000.png", 404),
        ("/files/0/Plate/./0000.png", 404), ("/files/0/Plate/%zz", 400), ("/files/0", 404),
    ]
    for target, want in cases:
        st, _, body = srv.request("GET", target)
        check(st == want and b"not for the page" not in body and b"root:" not in body,
              f"GET {target}: {want} (got {st})")
    st, h, body = srv.request("GET", "/files/0/Plate/0001.png")
    check(st == 200 and body == (shot / "Plate" / "0001.png").read_bytes() and h.get("content-type") == "image/png",
          f"GET /files/0/Plate/0001.png: the file ({st}, {len(body)} bytes)")
    check(srv.alive(), "the server answers after the path escapes")


def bad_request_checks(srv):
    for method, target, want, allow in [("DELETE", "/api/info", 405, "GET, HEAD, POST"),
                                        ("PUT", "/api/key?frame=0", 405, "GET, HEAD, POST"),
                                        ("POST", "/api/info", 405, "GET, HEAD"), ("GET", "/api/key?frame=0", 405, "POST"),
                                        ("POST", "/api/render/events", 405, "GET, HEAD"), ("POST", "/", 405, None)]:
        st, h, _ = srv.request(method, target)
        check(st == want and (allow is None or h.get("allow") == allow),
              f"{method} {target}: {want} Allow {allow} (got {st}, {h.get('allow')})")
    st, _, _ = srv.request("POST", "/api/key?frame=0", body=b"x" * 5000)
    check(st == 413, f"a 5000-byte body: 413 (got {st})")
    chunked = (f"POST /api/render/cancel HTTP/1.1\r\nHost: x\r\nX-Ckey-Token: {srv.token}\r\nTransfer-Encoding: chunked\r\n"
               "Connection: close\r\n\r\n").encode() + b"".join(b"400\r\n" + b"y" * 1024 + b"\r\n" for _ in range(8)) + b"0\r\n\r\n"
    st, _, _ = sc.parse_response(srv.raw(chunked))
    check(st == 413, f"an 8 KB chunked body: 413 (got {st})")
    st, _, _ = srv.request("GET", "/api/info", headers={"X-Pad": "a" * 40000})
    check(st == 431, f"40 KB of headers: 431 (got {st})")
    st, _, _ = srv.request("GET", "/api/info?" + "a" * 5000)
    check(st in (414, 431), f"a 5 KB target: 414 (got {st})")
    for raw, what in [(b"HELLO\r\n\r\n", "a request line without a target"),
                      (b"GET /api/info HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", "a header without a colon"),
                      (b"GET /api/info HTTP/1.1\r\n\r\n", "HTTP/1.1 without Host"),
                      (b"GET api/info HTTP/1.1\r\nHost: x\r\n\r\n", "a target that is not a path"),
                      (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(64), "a TLS hello")]:
        st, _, _ = sc.parse_response(srv.raw(raw, timeout=20))
        check(st == 400 or st == 0, f"{what}: 400 or closed (got {st})")
    for target, want in [("/api/info?x=%zz", 400), ("/api/info?x=1", 400), ("/api/frame?frame=0&frame=1&view=plate", 400),
                         ("/api/frame?frame=0&view=plate&%00=1", 400), ("/api/frame?frame=0&view=matte", 400),
                         ("/api/frame?frame=4&view=plate", 404), ("/api/frame?shot=1&frame=0&view=plate", 404),
                         ("/api/view?id=99999&view=comp", 404), ("/api/view?id=x&view=comp", 400),
                         ("/api/pixel?id=1&x=-1&y=0", 400), ("/api/pass?id=1&pass=../../etc/passwd", 400),
                         ("/api/info#frag", 400), ("/api/nothing", 404)]:
        st, _, _ = srv.request("GET", target)
        check(st == want, f"GET {target}: {want} (got {st})")
    for extra, want in [("size=100", 400), ("size=0", 400), ("tile=100", 400), ("tile=256&overlap=256", 400),
                        ("despill=1.5", 400), ("despill=nan", 400), ("despeckle=2", 400), ("refiner_scale=1e9", 400),
                        ("precision=fp8", 400), ("despeckle_size=0", 400), ("frame=-1", 404), ("colour=red", 400)]:
        st, _, _ = srv.request("POST", "/api/key?frame=0&" + extra if "frame=" not in extra else "/api/key?" + extra)
        check(st == want, f"POST /api/key {extra}: {want} (got {st})")
    check(srv.alive(), "the server answers after the bad requests")


def key_checks(srv, shot, ref):
    st, h, body = srv.request("POST", "/api/key?frame=1&" + q(SETTINGS))
    k = json.loads(body) if st == 200 else {}
    check(st == 200 and k.get("width") == 256 and k.get("height") == 144 and "key;dur=" in h.get("server-timing", ""),
          f"POST /api/key frame 1: 200, 256x144, Server-Timing ({st}, {h.get('server-timing')})")
    if st != 200:
        return None
    ms = k["ms"]
    check(ms["key"] > 0 and ms["total"] >= ms["key"], f"server times: key {ms['key']:.1f} ms, total {ms['total']:.1f} ms")
    names = {"matte": "Matte/0001.exr", "fg": "FG/0001.exr", "processed": "Processed/0001.exr", "comp": "Comp/0001.png"}
    for p, rel in names.items():
        st, _, body = srv.request("GET", f"/api/pass?id={k['id']}&pass={p}")
        check(st == 200 and body == (ref / rel).read_bytes(), f"pass {p} of the keyed frame equals ckey key's {rel} "
              f"byte for byte ({st}, {len(body)} vs {(ref / rel).stat().st_size} bytes)")
    for view, bg in [("plate", "checker"), ("hint", "checker"), ("matte", "checker"), ("fg", "none"), ("fg", "checker"),
                     ("fg", "3060c0"), ("processed", "none"), ("processed", "checker"), ("comp", "checker")]:
        st, h, body = srv.request("GET", f"/api/view?id={k['id']}&view={view}&bg={bg}")
        want = sc.expected_view(ref, "0001", shot / "Plate/0001.png", shot / "AlphaHint/0001.png", view, bg)
        got = sc.png_pixels(body) if st == 200 else None
        same = got is not None and got.shape == want.shape and np.array_equal(got, want)
        diff = int(np.abs(got.astype(int) - want.astype(int)).max()) if got is not None and got.shape == want.shape else -1
        check(same, f"view {view} over {bg}: the rule applied to ckey key's files (max difference {diff})")
    st, _, body = srv.request("GET", f"/api/pixel?id={k['id']}&x=131&y=77")
    px = json.loads(body) if st == 200 else {}
    a = sc.read_image(ref / "Matte/0001.exr")
    fg = sc.read_image(ref / "FG/0001.exr")
    check(st == 200 and np.float32(px["matte"]) == (a[77, 131] if a.ndim == 2 else a[77, 131, 0])
          and np.array_equal(np.float32(px["fg"]), fg[77, 131, :3]), f"/api/pixel: the files' values at (131, 77)")
    return k


def concurrency_checks(srv):
    # idle connections that never finish their headers hold a thread each, not the server
    idle = [socket.create_connection((srv.host, srv.port)) for _ in range(5)]
    for s in idle:
        s.sendall(b"GET /api/info HTTP/1.1\r\nHost: x\r\n")
    results, lock = [], threading.Lock()

    def reader(i):
        st1, _, b1 = srv.request("GET", "/api/info")
        st2, _, b2 = srv.request("GET", f"/api/frame?frame={i % 4}&view=plate")
        with lock:
            results.append(("read", i, st1, st2, b2))

    def keyer(i):
        st, _, body = srv.request("POST", f"/api/key?frame={i}&" + q(SETTINGS))
        with lock:
            results.append(("key", i, st, json.loads(body).get("id") if st == 200 else None, b""))

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(12)]
    threads += [threading.Thread(target=keyer, args=(i,)) for i in range(3)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    reads = [r for r in results if r[0] == "read"]
    keys = [r for r in results if r[0] == "key"]
    check(len(reads) == 12 and all(r[2] == 200 and r[3] == 200 for r in reads),
          f"12 concurrent readers answered 200 ({len(reads)} in {time.time() - t0:.1f} s)")
    by_frame = {}
    for r in reads:
        by_frame.setdefault(r[1] % 4, set()).add(r[4])
    check(all(len(v) == 1 for v in by_frame.values()), "the same plate view gives the same bytes to every client")
    ids = [r[3] for r in keys]
    check(len(keys) == 3 and all(r[2] == 200 for r in keys) and len(set(ids)) == 3,
          f"3 concurrent keys answered 200 with distinct ids {ids}")
    for s in idle:
        s.close()
    check(srv.alive(), "the server answers after the concurrent clients")


def events(srv, timeout=300):
    """The render's event stream until the server ends it: the parsed JSON events."""
    st, h, body = srv.request("GET", "/api/render/events", timeout=timeout)
    out = []
    for block in body.decode().split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data: "):
                out.append(json.loads(line[6:]))
    return st, h.get("content-type"), out


def render_checks(srv, shot, keyed):
    out = shot / "Output"
    st, _, body = srv.request("POST", "/api/render?" + q(SETTINGS))
    check(st == 202 and json.loads(body).get("started"), f"POST /api/render: 202 ({st} {body[:80]!r})")
    st2, _, _ = srv.request("POST", "/api/render?" + q(SETTINGS))
    check(st2 == 409, f"a second render while one runs: 409 (got {st2})")
    st, ctype, ev = events(srv)
    kinds = [e["event"] for e in ev]
    check(st == 200 and ctype == "text/event-stream", f"the event stream: 200 text/event-stream ({st} {ctype})")
    check(kinds[:2] == ["render", "started"] and kinds.count("frame_written") == 4 and kinds[-2:] == ["completed", "exited"]
          and ev[-1]["exit_code"] == 0, f"events: render, started, 4 frame_written, completed, exited 0 ({kinds})")
    argv = ev[0]["argv"] if ev else []
    check("--json" in argv and "--despill" in argv and argv[argv.index("--despill") + 1] == "0.200000003",
          f"the child is ckey key --json with the page's settings ({' '.join(argv[1:])})")
    written = [e for e in ev if e["event"] == "frame_written"]
    check(all(pathlib.Path(p).is_file() for e in written for p in e["paths"].values()),
          "every path in frame_written exists")
    if keyed:
        for p, rel in {"matte": "Matte/0001.exr", "processed": "Processed/0001.exr", "comp": "Comp/0001.png"}.items():
            st, _, body = srv.request("GET", f"/api/pass?id={keyed['id']}&pass={p}")
            check(st == 200 and body == (out / rel).read_bytes(), f"the render's {rel} equals the frame keyed by the server")
    st, _, body = srv.request("GET", "/api/render")
    state = json.loads(body)
    check(st == 200 and not state["running"] and state["exit_code"] == 0, f"GET /api/render after it: {state}")
    st, _, _ = srv.request("POST", "/api/render/cancel")
    check(st == 409, f"cancel with no render running: 409 (got {st})")

    # cancel: a slower render (512) into an emptied Output/, SIGTERM once its first frame is there
    subprocess.run(["rm", "-rf", str(out)], check=True)
    st, _, _ = srv.request("POST", "/api/render?size=512&despill=0.2")
    got = []
    t = threading.Thread(target=lambda: got.append(events(srv)))
    t.start()
    first = sc.wait_for(lambda: list((out / "Comp").glob("*.png")) if (out / "Comp").is_dir() else None, 120)
    st_c, _, _ = srv.request("POST", "/api/render/cancel")
    t.join(300)
    ev = got[0][2] if got else []
    kinds = [e["event"] for e in ev]
    check(st == 202 and first and st_c == 202, f"render, a first frame, then cancel: 202, 202 ({st}, {st_c})")
    ended = ev[-1] if ev else {}
    cancelled = [e for e in ev if e["event"] == "cancelled"]
    check(cancelled and cancelled[0]["frames_written"] < 4 and ended.get("event") == "exited"
          and ended.get("exit_code") == 143, f"cancelled: the child's cancelled event, exited 143 ({kinds[-3:]}, {ended})")
    check(srv.alive(), "the server answers after the renders")


def checkpoint_file_checks(shot):
    """A checkpoint file (.pth, as CorridorKey.pth is read) instead of the built-in keyer: the tiny test model."""
    pth = sc.env_path("CK_FIXTURES", "tests/fixtures") / "tiny" / "s128" / "model.pth"
    ref = sc.TMP / "serve_http_ref_pth"
    sc.run("key", "--image", shot / "Plate/0000.png", "--hint", shot / "AlphaHint/0000.png", "--out", ref,
           "--checkpoint", pth, "--size", "128", "--head-dim", "8", "--quiet")
    srv = sc.Server(shot, "--checkpoint", pth, "--size", "128", "--head-dim", "8", log=sc.TMP / "serve_http_pth.log")
    try:
        st, _, body = srv.request("GET", "/api/info")
        info = json.loads(body)
        check(st == 200 and info["checkpoint"] == str(pth) and info["defaults"]["size"] == 128,
              f"--checkpoint model.pth: the server keys with it at 128 ({info.get('checkpoint')})")
        st, _, body = srv.request("POST", "/api/key?frame=0")
        k = json.loads(body)
        for p, rel in {"matte": "Matte/0000.exr", "fg": "FG/0000.exr", "processed": "Processed/0000.exr",
                       "comp": "Comp/0000.png"}.items():
            st2, _, data = srv.request("GET", f"/api/pass?id={k.get('id')}&pass={p}")
            check(st == 200 and st2 == 200 and data == (ref / rel).read_bytes(),
                  f"with model.pth: pass {p} equals ckey key --checkpoint model.pth's {rel}")
    finally:
        check(srv.stop() == 0, "the second server stopped")


def main():
    try:
        import imageio  # noqa: F401
    except ImportError:
        print("python3-imageio is missing: needed to read ckey's files")
        return 1
    shot = sc.make_shot(sc.TMP / "serve_http_shot")
    ref = sc.TMP / "serve_http_ref"
    sc.run("key", "--image", shot / "Plate" / "0001.png", "--hint", shot / "AlphaHint" / "0001.png", "--out", ref,
           "--size", SETTINGS["size"], "--despill", SETTINGS["despill"], "--no-despeckle", "--quiet")
    srv = sc.Server(shot, "--size", "256", log=sc.TMP / "serve_http.log")
    try:
        token_checks(srv)
        path_checks(srv, shot)
        bad_request_checks(srv)
        keyed = key_checks(srv, shot, ref)
        concurrency_checks(srv)
        render_checks(srv, shot, keyed)
    finally:
        rc = srv.stop()
    check(rc == 0, f"SIGTERM stops the server with exit status 0 (got {rc})")
    checkpoint_file_checks(shot)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
