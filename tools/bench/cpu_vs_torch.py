"""Side-by-side CPU benchmark: ckey (CPU backend, fp32) vs PyTorch eager fp32 on the same checkpoint.

Both run in one invocation on the same machine, with the same thread count, the same resolution and
the same warm-up/run counts; the two engines alternate in rounds so that machine drift hits both.

    python3 tools/bench/cpu_vs_torch.py --checkpoint /tmp/bp/model.safetensors --config base_plus \
        --size 512 --runs 5 --warmup 1 --rounds 2 --ckey build/ckey --md docs/benchmarks/cpu-512.md

Prints a Markdown table (medians, min, ratio) and writes it to --md when given.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import greenformer_ref as gr  # noqa: E402


def load_checkpoint(path):
    if path.endswith(".safetensors"):
        from safetensors.torch import load_file
        return load_file(path)
    return torch.load(path, map_location="cpu", weights_only=True)


def torch_times(model, x, warmup, runs):
    with torch.inference_mode():
        t0 = time.perf_counter()
        model(x)
        first = (time.perf_counter() - t0) * 1e3
        for _ in range(warmup):
            model(x)
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            model(x)
            ts.append((time.perf_counter() - t0) * 1e3)
    return first, ts


def ckey_times(exe, ckpt, size, threads, warmup, runs, head_dim):
    cmd = [exe, "bench", "--checkpoint", ckpt, "--size", str(size), "--device", "cpu", "--threads", str(threads),
           "--warmup", str(warmup), "--runs", str(runs)]
    if head_dim:
        cmd += ["--head-dim", str(head_dim)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1]), cmd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--config", default="base_plus", choices=sorted(gr.CONFIGS))
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--ckey", default="build/ckey")
    ap.add_argument("--md", default=None)
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    model = gr.build_model(a.config, a.size).eval()
    gr.load_state_dict_like_engine(model, load_checkpoint(a.checkpoint))
    g = torch.Generator().manual_seed(0)
    x = torch.rand(1, 4, a.size, a.size, generator=g) * 2 - 1

    head_dim = gr.CONFIGS[a.config]["head_dim"]
    t_all, c_all, t_first, c_first, c_rss, cmd = [], [], [], [], [], None
    for _ in range(a.rounds):
        first, ts = torch_times(model, x, a.warmup, a.runs)
        t_first.append(first)
        t_all += ts
        res, cmd = ckey_times(a.ckey, a.checkpoint, a.size, a.threads, a.warmup, a.runs, head_dim)
        c_first.append(res["first_ms"])
        c_rss.append(res["peak_rss_mib"])
        # re-create the per-run list from the JSON summary is not possible; keep medians per round
        c_all.append(res)
    c_med = statistics.median([r["median_ms"] for r in c_all])
    c_min = min(r["min_ms"] for r in c_all)
    t_med = statistics.median(t_all)
    t_min = min(t_all)
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"# CPU fp32, S = {a.size}: ckey vs PyTorch eager",
        "",
        f"- date: {datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; threads used: {a.threads}",
        f"- commit: {rev}; torch {torch.__version__}",
        f"- checkpoint: {a.checkpoint} (config {a.config}, random weights)",
        f"- protocol: {a.rounds} rounds alternating engines; each round {a.warmup} warm-up + {a.runs} timed runs",
        f"- command: python3 tools/bench/cpu_vs_torch.py {' '.join(sys.argv[1:])}",
        f"- ckey command: {' '.join(cmd)}",
        "",
        "| engine | median ms | min ms | first run ms | notes |",
        "|---|---|---|---|---|",
        f"| PyTorch {torch.__version__} eager fp32 | {t_med:.1f} | {t_min:.1f} | {statistics.median(t_first):.1f} | "
        f"all runs: {', '.join(f'{t:.0f}' for t in t_all)} |",
        f"| ckey CPU fp32 | {c_med:.1f} | {c_min:.1f} | {statistics.median(c_first):.1f} | per-round medians: "
        f"{', '.join('%.0f' % r['median_ms'] for r in c_all)}; peak RSS {max(c_rss):.0f} MiB |",
        "",
        f"**ratio ckey / PyTorch (median): {c_med / t_med:.2f}x**",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
