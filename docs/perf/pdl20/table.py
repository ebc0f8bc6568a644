#!/usr/bin/env python3
"""The on-stream collectives with TMASHMEM_COLL_PDL on and off, and NVSHMEM, per (PEs, graph,
op, size), from the CSVs of docs/perf/pdl20/run.sh (one pass or several):
   python3 docs/perf/pdl20/table.py DIR
Each cell: on us / off us / NVSHMEM us (off/on, NVSHMEM/on), medians; with several passes, the
ratios are per pass, joined by ','."""
import csv, glob, os, sys
d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out")
t = {}
for f in glob.glob(os.path.join(d, "**", "coll_*.csv"), recursive=True):
    name = os.path.basename(f)[:-4]          # coll_<variant>_np<N>_g<G>_p<P>
    _, var, np_, g, p = name.split("_")
    for r in csv.DictReader(open(f)):
        if int(r["bytes"]) == 0: continue
        t[(var, int(np_[2:]), int(g[1:]), p, r["op"], int(r["bytes"]))] = float(r["time_us_median"])
ops = ["allreduce", "allgather", "reducescatter", "alltoall", "broadcast"]
passes = sorted({k[3] for k in t})
def size(b): return f"{b >> 20}M" if b >= 1 << 20 else f"{b >> 10}K"
for np_ in (2, 4):
    for g in (0, 1):
        sizes = sorted({k[5] for k in t if k[1] == np_ and k[2] == g})
        if not sizes: continue
        print(f"\n{np_} PEs, {'in a graph' if g else 'enqueued'}: PDL on / off / NVSHMEM, us "
              f"(off/on, NVSHMEM/on; passes {','.join(passes)})")
        print("| op | " + " | ".join(size(s) for s in sizes) + " |")
        print("|---" * (len(sizes) + 1) + "|")
        for op in ops:
            cells = []
            for s in sizes:
                on = [t.get(("tm-on", np_, g, p, op, s)) for p in passes]
                off = [t.get(("tm-off", np_, g, p, op, s)) for p in passes]
                nv = [t.get(("nv", np_, g, p, op, s)) for p in passes]
                if on[0] is None: cells.append("-"); continue
                r1 = ",".join(f"{b / a:.2f}" for a, b in zip(on, off) if a and b)
                r2 = ",".join(f"{b / a:.2f}" for a, b in zip(on, nv) if a and b)
                nv0 = next((x for x in nv if x), None)
                cells.append(f"{on[0]:.3g} / {off[0] or 0:.3g} / {nv0 or 0:.3g} ({r1}; {r2 or 'n.a.'})")
            print(f"| {op} | " + " | ".join(cells) + " |")
