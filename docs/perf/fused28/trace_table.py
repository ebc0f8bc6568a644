#!/usr/bin/env python3
"""Traced benchmark logs (trace.patch / dr.patch): per shape and variant, the medians over the
timed rounds (2 and on) of the round's last end over PEs, and of the PEs' mean per-warpgroup
phases (take, init, ml, epi, of which wepi and wsum are blocked waits) and per-CTA producer
waits (permit, claim), in us; half-tiles per warpgroup; waits that blocked (sum over PEs).
  python3 docs/perf/fused28/trace_table.py LOG..."""
import re
import statistics
import sys

FIELDS = ["end", "take", "init", "ml", "epi", "wepi", "wsum", "permit", "claim", "ht", "blocked"]

for path in sys.argv[1:]:
    rows = {}  # (title, variant) -> round -> [dict per PE]
    for line in open(path):
        if not line.startswith("trace,"):
            continue
        f = line.rstrip("\n").split(",")
        title, rnd, variant = f[1], int(f[2]), f[3]
        if rnd < 2:
            continue
        kv = {}
        for item in f[5:]:
            m = re.match(r"([a-z0-9]+) ([-0-9.]+)", item)
            if m:
                kv[m.group(1)] = float(m.group(2))
        rows.setdefault((title, variant), {}).setdefault(rnd, []).append(kv)
    print(path)
    print(f"  {'shape':32s} {'variant':20s} " + " ".join(f"{x:>7s}" for x in FIELDS))
    for (title, variant), rounds in rows.items():
        vals = []
        for x in FIELDS:
            per_round = []
            for pes in rounds.values():
                if x == "end":
                    per_round.append(max(p.get("end", 0) for p in pes))
                elif x == "blocked":
                    per_round.append(sum(p.get(x, 0) for p in pes))
                else:
                    per_round.append(statistics.mean(p.get(x, 0) for p in pes))
            vals.append(statistics.median(per_round))
        print(f"  {title[15:]:32s} {variant:20s} " + " ".join(f"{v:7.1f}" for v in vals))
