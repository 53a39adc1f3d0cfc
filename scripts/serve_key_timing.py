#!/usr/bin/env python3
"""Server time of keying one frame from the review page: starts `ckey serve` on a generated plate, asks it to key
that frame RUNS times over HTTP (POST /api/key, what the page's "Key frame" button sends) and prints the times the
server reports for each (its Server-Timing: read = decoding the plate, 0 once cached; load = making the context,
first run only; key = ck_key_passes: upload, network, post-processing, download; total = the whole request in the
server, with copying the passes out for the views), then the median of the warm runs (all but the first).

    scripts/serve_key_timing.py --ckey build/ckey --runs 20 -- --device cuda
    scripts/serve_key_timing.py --plate 3840x2160 --size 2048 -- --device cuda --checkpoint CorridorKey.pth

Everything after "--" goes to `ckey serve` as given. Standard library only."""

import argparse
import json
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckey", default="build/ckey")
    ap.add_argument("--plate", default="2048x2048", help="the plate's size, WxH (default 2048x2048)")
    ap.add_argument("--size", type=int, default=2048, help="model size (default 2048)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("serve_args", nargs="*", help="after --: more `ckey serve` options (--device cuda ...)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ckey-serve-timing-")
    try:
        subprocess.run([a.ckey, "plates", "--out", tmp + "/shot", "--size", a.plate, "--count", "1", "--format", "png"],
                       check=True, capture_output=True)
        srv = subprocess.Popen([a.ckey, "serve", tmp + "/shot", "--port", "0", "--size", str(a.size), *a.serve_args],
                               stdout=subprocess.PIPE, text=True)
        try:
            ready, _, _ = select.select([srv.stdout], [], [], 120)
            url = srv.stdout.readline().strip() if ready else ""
            if not url.startswith("http://"):
                sys.exit(f"ckey serve did not start (printed {url!r})")
            base, token = url.split("/?token=")
            rows = []
            for i in range(a.runs):
                req = urllib.request.Request(f"{base}/api/key?frame=0", method="POST", headers={"X-Ckey-Token": token})
                try:
                    with urllib.request.urlopen(req, timeout=600) as r:
                        k = json.loads(r.read())
                except urllib.error.HTTPError as e:
                    sys.exit(f"the key failed: HTTP {e.code}: {e.read().decode(errors='replace').strip()}")
                ms = k["ms"]
                rows.append(ms)
                print(f"run {i + 1:3d}: total {ms['total']:8.2f} ms  key {ms['key']:8.2f}  read {ms['read']:7.2f}  "
                      f"load {ms['load']:8.2f}  copy {ms['copy']:6.2f}   {k['keyer']['device']} {k['keyer']['precision']}"
                      f" {k['width']}x{k['height']} at {k['settings']['size']}", flush=True)
            warm = rows[1:] or rows
            summary = {"plate": a.plate, "size": a.size, "runs": len(rows), "device": k["keyer"]["device"],
                       "precision": k["keyer"]["precision"],
                       "median_total_ms": statistics.median(r["total"] for r in warm),
                       "median_key_ms": statistics.median(r["key"] for r in warm),
                       "first_total_ms": rows[0]["total"]}
            print(json.dumps(summary))
        finally:
            srv.send_signal(signal.SIGTERM)
            srv.wait(60)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
