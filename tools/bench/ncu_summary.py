#!/usr/bin/env python3
"""Per-kernel device time of one forward from an ncu CSV (metric gpu__time_duration.sum).

    python3 tools/bench/ncu_summary.py ncu.csv [--top 40]

The profiled program runs the same forward at least twice at its end (`ckey bench --runs 2 --compile 0`):
the last forward is found as the shortest tail of kernels that repeats the kernels just before it. Prints a
Markdown table of the kernels of that forward grouped by name (calls, total and mean microseconds, share),
and the sum, which is the forward's device time without launch gaps.
"""
import argparse
import csv
import re
import sys


def short(name: str) -> str:
    name = re.sub(r"\(.*$", "", name)  # arguments
    name = re.sub(r"^void ", "", name)
    return name[:110]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--order", help="also write the last forward's kernels in launch order (name, grid, µs)")
    a = ap.parse_args()
    rows = []
    with open(a.csv, newline="") as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "nsecond")
        us = v / 1000.0 if unit.startswith("n") else v * 1000.0 if unit.startswith("m") else v
        rows.append((r["Kernel Name"], us, r.get("Grid Size", ""), r.get("Block Size", "")))
    if not rows:
        print("no kernel rows in", a.csv)
        return 1
    names = [r[0] for r in rows]
    period = None
    for p in range(20, len(names) // 2 + 1):
        if names[-p:] == names[-2 * p:-p]:
            period = p
            break
    if period is None:
        print(f"no repeating forward found among {len(rows)} kernels; summing all")
        period = len(rows)
    last = rows[-period:]
    total = sum(r[1] for r in last)
    if a.order:
        with open(a.order, "w") as f:
            for n, us, grid, block in last:
                f.write(f"{us:10.1f}  {grid:>18} {block:>14}  {short(n)}\n")
    agg = {}
    for n, us, _, _ in last:
        k = short(n)
        c, t = agg.get(k, (0, 0.0))
        agg[k] = (c + 1, t + us)
    print(f"one forward: {period} kernels, {total / 1000.0:.3f} ms of device time\n")
    print("| kernel | calls | total µs | mean µs | share |")
    print("|---|---|---|---|---|")
    for k, (c, t) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:a.top]:
        print(f"| `{k}` | {c} | {t:.1f} | {t / c:.1f} | {100.0 * t / total:.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
