#!/usr/bin/env python3
"""Per traced benchmark log (trace.patch, call7.sh): per shape, for the fused all-gather with copy
warps, the median over the timed rounds of the first CTA end, the last CTA end and the last start
(us after the round's first CTA start on any PE), over all PEs.
  python3 docs/perf/fused26/trace_table.py LOG..."""
import re
import statistics
import sys

for path in sys.argv[1:]:
    titles = [l.split(",")[1] for l in open(path) if l.startswith("csv,") and "gemm only" in l]
    rounds = {}  # (shape index, round) -> [(start0, start1, end0, end1)]
    count = 0
    prev_round = -1
    shape = -1
    for line in open(path):
        if not line.startswith("trace,") or ", copy warps," not in line:
            continue
        f = line.split(",")
        rnd = int(f[1])
        if rnd < prev_round or shape < 0:
            shape += 1
        prev_round = rnd
        m = re.search(r"start ([-0-9.]+)\.\.([-0-9.]+),end ([-0-9.]+)\.\.([-0-9.]+)", line)
        rounds.setdefault((shape, rnd), []).append(tuple(float(x) for x in m.groups()))
    print(path)
    for s in range(shape + 1):
        rows = [v for (sh, r), v in rounds.items() if sh == s and r >= 2]
        last_start = statistics.median(max(x[1] for x in v) for v in rows)
        first_end = statistics.median(min(x[2] for x in v) for v in rows)
        last_end = statistics.median(max(x[3] for x in v) for v in rows)
        name = titles[s] if s < len(titles) else f"shape {s}"
        print(f"  {name:32s} last start {last_start:7.1f}  first end {first_end:8.1f}  "
              f"last end {last_end:8.1f} us  ({len(rows)} rounds)")
