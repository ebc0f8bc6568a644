#!/usr/bin/env python3
"""Do two runs of the benchmark suite agree? Compares every row the two result folders
share (same runtime, test, op, PEs, SMs, threads, size) and says, for each, whether the
second run's median lies within the first run's spread (min..max over repetitions),
whether the two spreads overlap, and by how much the medians differ.

    tools/perf/compare.py RESULTS_A RESULTS_B [--out FILE]

RESULTS_x is a folder that holds perf_tmashmem.csv and perf_nvshmem.csv (run-perf.sh's
output). Prints a summary per test and every row whose spreads do not overlap; exits 0
(the verdict is in the text: this is a measurement, not a test).
"""
import argparse
import csv
import os
import statistics
import sys

from merge import KEY  # what makes two rows one measurement


def load(folder):
    rows = {}
    for name in ("perf_tmashmem.csv", "perf_nvshmem.csv"):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for r in csv.DictReader(f):
                rows[tuple(r[k] for k in KEY)] = r
    return rows


TIMED = {"pingpong", "msg_lat", "barrier"}  # figure of merit: time per operation


def metric(r):
    """(min, median, max) of the row's figure of merit: time in microseconds for
    latency tests, else GB/s."""
    if r["test"] not in TIMED and float(r["gbps_median"] or 0) > 0:
        return float(r["gbps_min"]), float(r["gbps_median"]), float(r["gbps_max"]), "GB/s"
    return float(r["time_us_min"]), float(r["time_us_median"]), float(r["time_us_max"]), "us"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--out")
    args = ap.parse_args()
    a, b = load(args.a), load(args.b)
    shared = sorted(set(a) & set(b))
    if not shared:
        sys.exit("compare.py: no rows in common between %s and %s" % (args.a, args.b))
    lines = ["Two runs of the same build: %s vs %s, %d rows in common" %
             (args.a, args.b, len(shared))]
    by_test = {}
    outliers = []
    for k in shared:
        lo_a, med_a, hi_a, unit = metric(a[k])
        lo_b, med_b, hi_b, _ = metric(b[k])
        diff = (med_b - med_a) / med_a if med_a else 0.0
        within = lo_a <= med_b <= hi_a
        overlap = lo_b <= hi_a and lo_a <= hi_b
        t = by_test.setdefault((k[0], k[1]), [])
        t.append((within, overlap, abs(diff)))
        if not overlap:
            outliers.append((abs(diff), k, med_a, med_b, lo_a, hi_a, lo_b, hi_b, unit))
    lines.append("%-10s %-9s %5s %15s %16s %12s %12s" %
                 ("runtime", "test", "rows", "B median in A", "spreads overlap", "median |d|",
                  "max |d|"))
    for (rt, test), t in sorted(by_test.items()):
        n = len(t)
        lines.append("%-10s %-9s %5d %9d (%3.0f%%) %10d (%3.0f%%) %11.2f%% %11.2f%%" %
                     (rt, test, n, sum(x[0] for x in t), 100.0 * sum(x[0] for x in t) / n,
                      sum(x[1] for x in t), 100.0 * sum(x[1] for x in t) / n,
                      100 * statistics.median(x[2] for x in t), 100 * max(x[2] for x in t)))
    total = sum(len(t) for t in by_test.values())
    lines.append("overall: spreads overlap for %d of %d rows; medians differ by %.2f%% (median), "
                 "%.2f%% (max)" % (total - len(outliers), total,
                                   100 * statistics.median(x[2] for t in by_test.values() for x in t),
                                   100 * max(x[2] for t in by_test.values() for x in t)))
    if outliers:
        lines.append("rows whose spreads do not overlap (largest difference first):")
        for d, k, med_a, med_b, lo_a, hi_a, lo_b, hi_b, unit in sorted(outliers, reverse=True):
            lines.append("  %-8s %-8s %-14s np%s %3s SMs %10s B: A %.4g [%.4g..%.4g] "
                         "B %.4g [%.4g..%.4g] %s (%+.2f%%)" %
                         (k[0], k[1], k[2], k[3], k[4], k[6], med_a, lo_a, hi_a, med_b, lo_b, hi_b,
                          unit, 100 * (med_b - med_a) / med_a if med_a else 0.0))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
