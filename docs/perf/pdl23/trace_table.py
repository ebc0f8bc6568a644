#!/usr/bin/env python3
"""The phases of the traced LL calls (docs/perf/pdl23/trace.sh, trace.patch), from its logs:
   python3 docs/perf/pdl23/trace_table.py DIR
Per run, kind and size: the median over the printed windows (each the mean of up to 127 calls,
windows of fewer than 100 calls left out) of each phase of CTA 0's thread 0, in ns, PE by PE."""
import collections, glob, os, re, statistics, sys
kinds = ["allgather", "reducescatter", "allreduce", "alltoall", "alltoallv", "broadcast"]
pat = re.compile(r"\[trace PE (\d+)\] kind (\d) size (\d+) calls (\d+): wait (\d+) epoch (\d+) "
                 r"send (\d+) poll (\d+) barrier (\d+) end (\d+) \| restart (\d+) period (\d+)")
names = ["wait", "epoch", "send", "poll", "barrier", "end", "restart", "period"]
for f in sorted(glob.glob(os.path.join(sys.argv[1], "**", "trace_*.log"), recursive=True)):
    rows = collections.defaultdict(list)
    for line in open(f):
        m = pat.search(line)
        if not m or int(m.group(4)) < 100: continue
        pe, kind, size = int(m.group(1)), int(m.group(2)), int(m.group(3))
        rows[(kind, size, pe)].append([int(x) for x in m.groups()[4:]])
    print(f"\n{os.path.basename(f)[:-4]} (ns; size: the kernel's size argument)")
    print("| kind | size | PE | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 3) + "|")
    for (kind, size, pe), v in sorted(rows.items()):
        med = [statistics.median(c) for c in zip(*v)]
        print(f"| {kinds[kind]} | {size} | {pe} | " + " | ".join(f"{x:.0f}" for x in med) + " |")
