#!/usr/bin/env python3
"""Two trees side by side from the A/B CSVs of docs/perf/pdl22/wide.sh and docs/perf/pdl23/ab.sh
(<prefix>_<tree>_np<N>[_g<G>]_<round>.csv, each run a fresh process):
   python3 docs/perf/pdl23/ab_table.py DIR PREFIX TREE_A TREE_B
Per (PEs, graph, op, size): A's and B's median us (first round), then A/B per round (above 1:
B is faster). The floor rows (launch, launch_overlap, handshake) are listed too."""
import collections, csv, glob, os, re, sys
d, prefix, ta, tb = sys.argv[1:5]
t = {}
pat = re.compile(re.escape(prefix) + r"_(\w+?)_np(\d+)(?:_g(\d))?_(\d+)\.csv$")
for f in glob.glob(os.path.join(d, "**", prefix + "_*.csv"), recursive=True):
    m = pat.search(os.path.basename(f))
    if not m: continue
    tree, np_, g, rnd = m.group(1), int(m.group(2)), int(m.group(3) or 0), int(m.group(4))
    for r in csv.DictReader(open(f)):
        t[(tree, np_, g, rnd, r["op"], int(r["bytes"]))] = float(r["time_us_median"])
rounds = sorted({k[3] for k in t})
keys = sorted({(k[1], k[2], k[4], k[5]) for k in t}, key=lambda k: (k[0], k[1], k[2], k[3]))
def size(b): return "-" if b == 0 else f"{b >> 20}M" if b >= 1 << 20 else f"{b >> 10}K" if b >= 1024 else f"{b}B"
last = None
for np_, g, op, b in keys:
    if (np_, g) != last:
        print(f"\n{np_} PEs, {'in a graph' if g else 'enqueued'}: {ta} / {tb} us, {ta}/{tb} per round {rounds}")
        last = (np_, g)
    a = [t.get((ta, np_, g, r, op, b)) for r in rounds]
    c = [t.get((tb, np_, g, r, op, b)) for r in rounds]
    ratios = ",".join(f"{x / y:.3f}" for x, y in zip(a, c) if x and y)
    print(f"  {op:14s} {size(b):>5s}  {a[0] or 0:7.3f} / {c[0] or 0:7.3f}  ({ratios})")
