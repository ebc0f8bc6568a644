#!/usr/bin/env python3
"""NVSHMEM's time over tmashmem's per (PEs, graph, op, size) from docs/perf/coll19/out:
   python3 docs/perf/coll19/table.py docs/perf/coll19/out"""
import csv, glob, os, sys
d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out")
t = {}
for f in glob.glob(os.path.join(d, "coll_*.csv")):
    name = os.path.basename(f)[:-4]
    rt = "nv" if "nvshmem" in name else "tm"
    np_ = int(name.split("_np")[1][0])
    g = int(name.split("_g")[1][0])
    for r in csv.DictReader(open(f)):
        if int(r["bytes"]) == 0: continue
        t[(rt, np_, g, r["op"], int(r["bytes"]))] = float(r["time_us_median"])
ops = ["allreduce", "allgather", "reducescatter", "alltoall", "broadcast"]
def size(b): return f"{b >> 20}M" if b >= 1 << 20 else f"{b >> 10}K"
for np_ in (2, 4):
    for g in (0, 1):
        print(f"\n{np_} PEs, {'in a graph' if g else 'enqueued'}: tmashmem us / NVSHMEM us (NVSHMEM/tmashmem)")
        sizes = sorted({k[4] for k in t if k[1] == np_ and k[2] == g})
        print("| op | " + " | ".join(size(s) for s in sizes) + " |")
        print("|---" * (len(sizes) + 1) + "|")
        for op in ops:
            cells = []
            for s in sizes:
                a, b = t.get(("tm", np_, g, op, s)), t.get(("nv", np_, g, op, s))
                if a is None: cells.append("-")
                elif b is None: cells.append(f"{a:.3g} / n.a.")
                else: cells.append(f"{a:.3g} / {b:.3g} ({b / a:.2f})")
            print(f"| {op} | " + " | ".join(cells) + " |")
