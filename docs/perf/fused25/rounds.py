#!/usr/bin/env python3
"""Per log of docs/perf/fused25/run.sh: per shape and variant, the median and best over rounds
(after the two warm-up rounds) of the slowest PE's time, and how many rounds were slow (over
1.1 x the variant's best round).
  python3 docs/perf/fused25/rounds.py LOG..."""
import re
import statistics
import sys


def parse(path):
    rows = {}
    for line in open(path):
        if not line.startswith("round,"):
            continue
        f = line.strip().split(",")
        nums = []
        while f and re.fullmatch(r"[0-9.]+", f[-1]):
            nums.insert(0, float(f.pop()))
        title, rnd, variant = f[2], int(f[3]), ",".join(f[4:])
        if rnd < 2:
            continue
        rows.setdefault((title, variant), []).append(max(nums))
    return rows


for path in sys.argv[1:]:
    print(path)
    gemm = {}
    rows = parse(path)
    for (title, variant), ts in rows.items():
        if variant == "gemm only":
            gemm[title] = statistics.median(ts)
    for (title, variant), ts in rows.items():
        med, best = statistics.median(ts), min(ts)
        slow = sum(t > 1.1 * best for t in ts)
        ratio = gemm.get(title, 0) / med if med else 0
        print(f"  {title:32s} {variant:28s} med {med:7.3f} best {best:7.3f} "
              f"slow {slow:2d}/{len(ts)} vs gemm {ratio:.3f}")
