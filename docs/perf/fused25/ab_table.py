#!/usr/bin/env python3
"""verify.sh's A/B: per PE count, shape and variant, the ratio gemm only / variant (median of
20 rounds) of the library before (old: each PE's whole share of the SMs) and the tree (new: one
SM of each share left free), the range over the two passes.
  python3 docs/perf/fused25/ab_table.py DIR"""
import glob
import os
import sys

d = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(d, "ab.*.log"))):
    side = os.path.basename(path).split(".")[1]
    for line in open(path):
        if not line.startswith("csv,"):
            continue
        _, title, pes, med, ratio, variant = line.strip().split(",", 5)
        if "copy SMs" in variant or variant == "gemm only":
            continue
        rows.setdefault((int(pes), title, variant), {}).setdefault(side, []).append(float(ratio))


def rng(v):
    return f"{min(v):.2f}-{max(v):.2f}" if v else "-"


print("| PEs | shape | variant | before | after |")
print("|---|---|---|---|---|")
for (pes, title, variant), sides in sorted(rows.items(), key=lambda x: (-x[0][0], x[0][1])):
    print(f"| {pes} | {title} | {variant} | {rng(sides.get('old', []))} | {rng(sides.get('new', []))} |")
