"""Side-by-side GPU benchmark: ckey (CUDA) vs the original-style PyTorch GreenFormer, one run, one GPU.

For each size: ckey per precision and toggle set (`ckey bench`, CUDA events around the forward, input
on the device), then PyTorch eager fp16 autocast and torch.compile(default) + fp16 autocast (the
original engine's settings: TF32 allowed). Every row: median and min of --runs after --warmup
warm-ups, peak device memory, warm-up (first-frame) time.

    python3 tools/bench/peer_gpu.py --checkpoint /tmp/bp.safetensors --sizes 512,1024,2048 \
        --ckey build/ckey --torch-modes fp16ac,compile --out $OUT

Writes peer_gpu.json and peer_gpu.md into --out.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import greenformer_ref as gr  # noqa: E402

CKEY_CONFIGS = {
    # name: bench flags
    "fp32": ["--precision", "fp32"],
    "bf16": ["--precision", "bf16"],
    "fp16": ["--precision", "fp16"],
    "bf16 no-graph": ["--precision", "bf16", "--compile", "0"],
    "bf16 no-pad64": ["--precision", "bf16", "--pad64", "0"],
    "bf16 unfused-attn": ["--precision", "bf16", "--sdpa", "0"],
    "fp16 no-graph": ["--precision", "fp16", "--compile", "0"],
    "fp16 no-pad64": ["--precision", "fp16", "--pad64", "0"],
    "fp16 unfused-attn": ["--precision", "fp16", "--sdpa", "0"],
    "fp16 stage_gc": ["--precision", "fp16", "--compile", "0", "--stage-gc", "1"],
}


def run_ckey(exe, ckpt, size, flags, warmup, runs):
    cmd = [exe, "bench", "--checkpoint", ckpt, "--size", str(size), "--device", "cuda", "--warmup", str(warmup),
           "--runs", str(runs)] + flags
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return dict(error=(p.stderr or p.stdout)[-400:], cmd=" ".join(cmd))
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["process_s"] = round(time.time() - t0, 2)
    r["cmd"] = " ".join(cmd)
    return r


def time_torch(fn, x, warmup, runs):
    for _ in range(warmup):
        fn(x)
    torch.cuda.synchronize()
    ts = []
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(x)
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts), min(ts)


def run_torch(size, mode, warmup, runs):
    torch.backends.cuda.matmul.allow_tf32 = True  # the original engine's setting
    torch.backends.cudnn.allow_tf32 = True
    torch.use_deterministic_algorithms(False)
    torch.manual_seed(0)
    m = gr.build_model("base_plus", size).cuda().eval()
    x = torch.rand(1, 4, size, size, device="cuda")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    if mode == "fp16ac":
        def fn(x):
            with torch.autocast("cuda", dtype=torch.float16):
                return m(x)
    elif mode == "compile":
        cm = torch.compile(m, mode="default")

        def fn(x):
            with torch.autocast("cuda", dtype=torch.float16):
                return cm(x)
    else:
        raise ValueError(mode)
    with torch.inference_mode():
        t0 = time.time()
        fn(x)
        torch.cuda.synchronize()
        warm = time.time() - t0
        torch.cuda.reset_peak_memory_stats()
        med, mn = time_torch(fn, x, warmup, runs)
    peak = torch.cuda.max_memory_allocated() / 2**20
    del m
    torch.cuda.empty_cache()
    return dict(size=size, engine="torch", mode=mode, median_ms=round(med, 3), min_ms=round(mn, 3),
                peak_mib=round(peak, 1), first_s=round(warm, 2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--sizes", default="512,1024,2048")
    ap.add_argument("--ckey", default="build/ckey")
    ap.add_argument("--configs", default=",".join(CKEY_CONFIGS))
    ap.add_argument("--torch-modes", default="fp16ac,compile")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--name", default="peer_gpu", help="output file stem")
    a = ap.parse_args()
    rows = []
    gpu = torch.cuda.get_device_name()
    for size in [int(s) for s in a.sizes.split(",")]:
        for name in [c for c in a.configs.split(",") if c]:
            r = run_ckey(a.ckey, a.checkpoint, size, CKEY_CONFIGS[name], a.warmup, a.runs)
            r.update(engine="ckey", mode=name, size=size)
            rows.append(r)
            print(json.dumps(r), flush=True)
        for mode in [m for m in a.torch_modes.split(",") if m]:
            try:
                r = run_torch(size, mode, a.warmup, a.runs)
            except Exception as ex:  # report, keep going
                r = dict(size=size, engine="torch", mode=mode, error=str(ex)[:300])
            rows.append(r)
            print(json.dumps(r), flush=True)
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    md = [f"# GPU side by side: ckey vs PyTorch ({gpu})", "",
          f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; commit {rev}; torch {torch.__version__}",
          f"- command: python3 tools/bench/peer_gpu.py {' '.join(sys.argv[1:])}",
          f"- median/min of {a.runs} runs after {a.warmup} warm-ups, CUDA events; random weights", "",
          "| S | engine | mode | median ms | min ms | peak MiB | first frame |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            md.append(f"| {r['size']} | {r['engine']} | {r['mode']} | error: {r['error'][:80]} | | | |")
        elif r["engine"] == "ckey":
            md.append(f"| {r['size']} | ckey | {r['mode']} | {r['median_ms']:.2f} | {r['min_ms']:.2f} | "
                      f"{r['device_peak_mib']:.0f} | {r['first_ms']:.0f} ms |")
        else:
            md.append(f"| {r['size']} | torch | {r['mode']} | {r['median_ms']:.2f} | {r['min_ms']:.2f} | "
                      f"{r['peak_mib']:.0f} | {r['first_s']:.1f} s |")
    text = "\n".join(md) + "\n"
    print(text)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, a.name + ".json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(a.out, a.name + ".md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
