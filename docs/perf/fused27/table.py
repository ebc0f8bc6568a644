#!/usr/bin/env python3
"""Ratio GEMM alone / fused (the benchmark's slowest-PE medians) per shape and build, every
run of call1.sh or call2.sh side by side: python3 table.py out/pass1/c1 out/pass2/c1.
Q: main; S1, S0: claimed tiles in the reduce-scatter, one SM less / whole share; W: call 2's tree."""
import collections, glob, os, sys

KEEP = {"fused, copy warps": "copy warps", "fused default, A not kept": "default",
        "fused fast": "fast", "fused deterministic": "deterministic", "unfused": "unfused"}
BUILDS = ("Q", "S1", "S0", "W")
rows = collections.OrderedDict()  # (np, shape, variant) -> {build: [ratios]}
for d in sys.argv[1:]:
    for log in sorted(glob.glob(os.path.join(d, "*.log"))):
        name = os.path.basename(log).split(".")
        if name[0] not in BUILDS:
            continue
        for line in open(log):
            if not line.startswith("csv,"):
                continue
            f = line.rstrip("\n").split(",", 5)
            variant = f[5].strip()
            if variant not in KEEP:
                continue
            key = (int(f[2]), f[1], KEEP[variant])
            rows.setdefault(key, collections.defaultdict(list))[name[0]].append(float(f[4]))
present = [b for b in BUILDS if any(b in by for by in rows.values())]
print("| PEs | shape | variant | " + " | ".join(present) + " |")
print("|---|---|---|" + "---|" * len(present))
for (np_, shape, variant), by in sorted(rows.items(), key=lambda kv: (-kv[0][0], kv[0][1].split()[0], kv[0][1], kv[0][2])):
    cells = [", ".join(f"{v:.2f}" for v in by.get(b, [])) or "-" for b in present]
    print(f"| {np_} | {shape} | {variant} | " + " | ".join(cells) + " |")
