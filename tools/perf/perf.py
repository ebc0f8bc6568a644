#!/usr/bin/env python3
"""The benchmark rows after the run: pool launches into one row per measurement, and ask
whether two runs agree. Standard library only.

    tools/perf/perf.py merge LAUNCHES.csv [...] --out MERGED.csv
    tools/perf/perf.py compare RESULTS_A RESULTS_B [--out FILE]

merge: rows with the same KEY are one measurement, also when two tests measured it (the
bandwidth size sweep and SM sweep both time 256 MiB at 16 and 132 SMs); they must agree on
iterations and bytes moved. Their per-repetition times (time_us_samples) are pooled, and
min / median / max, GB/s, Mops/s and the ratio to the reference op are recomputed from the
pool, so a row's spread covers what changes from one process to the next. A row fails its
check if it failed in any launch. The output has the input's columns, in first-seen order.

compare: RESULTS_x is a folder holding perf_tmashmem.csv and perf_nvshmem.csv (run-perf.sh's
output). For every row both share: does B's median lie within A's spread, do the spreads
overlap, how far apart are the medians. Prints a summary per test and every row whose
spreads do not overlap; exits 0 (the verdict is in the text: a measurement, not a test).
"""
import argparse
import csv
import os
import statistics
import sys

KEY = ("runtime", "test", "op", "pes", "sms", "threads", "bytes")
TIMED = {"pingpong", "msg_lat", "barrier"}  # figure of merit: time per operation


def read_rows(paths):
    rows, fields = [], None
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            fields = fields or reader.fieldnames
            rows.extend(reader)
    return rows, fields


def merge(rows):
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in KEY), []).append(r)
    merged = {}
    for key, rs in groups.items():
        out, first = dict(rs[0]), rs[0]
        samples = [float(x) for r in rs for x in r.get("time_us_samples", "").split(";") if x]
        bad = [r["check"] for r in rs if r["check"] not in ("ok", "n/a")]
        out["check"] = bad[0] if bad else first["check"]
        for k in ("ceiling_d2d_gbps", "ceiling_peer_gbps"):
            out[k] = "%.3f" % statistics.median(float(r[k]) for r in rs)
        if any((r["iters"], r["bytes_moved"]) != (first["iters"], first["bytes_moved"]) for r in rs):
            raise ValueError("perf.py merge: %s: launches disagree on iterations or bytes moved "
                             "(%s); they are not one measurement" %
                             (" ".join(key), ", ".join(r["iters"] for r in rs)))
        if samples:
            iters = int(first["iters"])
            per_iter = float(first["bytes_moved"]) / iters if iters else 0.0
            lo, med, hi = min(samples), statistics.median(samples), max(samples)
            gbps = lambda t: per_iter / (t * 1e3) if t > 0 else 0.0  # noqa: E731
            # Messages per iteration: from the bytes where there are any, else from the first
            # launch's Mops/s x time (rows of 0 bytes: barriers).
            size = int(out["bytes"])
            msgs = per_iter / size if size else float(first["mops_median"]) * float(first["time_us_median"])
            out.update({
                "reps": str(len(samples)),
                "time_us_min": "%.4f" % lo, "time_us_median": "%.4f" % med, "time_us_max": "%.4f" % hi,
                "gbps_min": "%.3f" % gbps(hi), "gbps_median": "%.3f" % gbps(med),
                "gbps_max": "%.3f" % gbps(lo),
                "mops_median": "%.4f" % (msgs / med if med > 0 else 0.0),
                "time_us_samples": ";".join("%.4f" % s for s in samples),
            })
        merged[key] = out
    # The reference op's GB/s: the merged row of the same runtime, test, PEs and size, at the
    # same SM count, else the copy engine's (SMs 0); else the launches' own, median.
    for key, out in merged.items():
        if not out["ref_op"]:
            continue
        rt, test, _, pes, sms, _, size = key
        at = {k[4]: r for k, r in merged.items() if k[:4] == (rt, test, out["ref_op"], pes) and k[6] == size}
        ref = at.get(sms, at.get("0"))
        if ref is not None and float(ref["gbps_median"]) > 0:
            ref_gbps = float(ref["gbps_median"])
        else:
            ref_gbps = statistics.median(float(r["ref_gbps"]) for r in groups[key])
        out["ref_gbps"] = "%.3f" % ref_gbps
        out["ratio_to_ref"] = "%.4f" % (float(out["gbps_median"]) / ref_gbps if ref_gbps else 0.0)
    return list(merged.values())


def metric(r):
    """(min, median, max, unit) of the row's figure of merit: time (us) for latency tests,
    else GB/s."""
    if r["test"] not in TIMED and float(r["gbps_median"] or 0) > 0:
        return float(r["gbps_min"]), float(r["gbps_median"]), float(r["gbps_max"]), "GB/s"
    return float(r["time_us_min"]), float(r["time_us_median"]), float(r["time_us_max"]), "us"


def compare(folder_a, folder_b):
    def load(folder):
        paths = [os.path.join(folder, n) for n in ("perf_tmashmem.csv", "perf_nvshmem.csv")]
        return {tuple(r[k] for k in KEY): r for r in read_rows([p for p in paths if os.path.exists(p)])[0]}
    a, b = load(folder_a), load(folder_b)
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("perf.py compare: no rows in common between %s and %s" % (folder_a, folder_b))
    lines = ["Two runs of the same build: %s vs %s, %d rows in common" % (folder_a, folder_b, len(shared))]
    by_test, outliers = {}, []
    for k in shared:
        lo_a, med_a, hi_a, unit = metric(a[k])
        lo_b, med_b, hi_b, _ = metric(b[k])
        diff = (med_b - med_a) / med_a if med_a else 0.0
        overlap = lo_b <= hi_a and lo_a <= hi_b
        by_test.setdefault((k[0], k[1]), []).append((lo_a <= med_b <= hi_a, overlap, abs(diff)))
        if not overlap:
            outliers.append((abs(diff), k, med_a, med_b, lo_a, hi_a, lo_b, hi_b, unit, diff))
    lines.append("%-10s %-9s %5s %15s %16s %12s %12s" % ("runtime", "test", "rows", "B median in A",
                                                        "spreads overlap", "median |d|", "max |d|"))
    for (rt, test), t in sorted(by_test.items()):
        n, within, over = len(t), sum(x[0] for x in t), sum(x[1] for x in t)
        lines.append("%-10s %-9s %5d %9d (%3.0f%%) %10d (%3.0f%%) %11.2f%% %11.2f%%" %
                     (rt, test, n, within, 100.0 * within / n, over, 100.0 * over / n,
                      100 * statistics.median(x[2] for x in t), 100 * max(x[2] for x in t)))
    diffs = [x[2] for t in by_test.values() for x in t]
    lines.append("overall: spreads overlap for %d of %d rows; medians differ by %.2f%% (median), "
                 "%.2f%% (max)" % (len(diffs) - len(outliers), len(diffs),
                                   100 * statistics.median(diffs), 100 * max(diffs)))
    if outliers:
        lines.append("rows whose spreads do not overlap (largest difference first):")
        for _, k, med_a, med_b, lo_a, hi_a, lo_b, hi_b, unit, diff in sorted(outliers, reverse=True):
            lines.append("  %-8s %-8s %-14s np%s %3s SMs %10s B: A %.4g [%.4g..%.4g] "
                         "B %.4g [%.4g..%.4g] %s (%+.2f%%)" %
                         (k[0], k[1], k[2], k[3], k[4], k[6], med_a, lo_a, hi_a, med_b, lo_b, hi_b,
                          unit, 100 * diff))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("merge", help="pool launches into one row per measurement")
    m.add_argument("inputs", nargs="+")
    m.add_argument("--out", required=True)
    c = sub.add_parser("compare", help="do two result folders agree?")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--out")
    args = ap.parse_args()
    try:
        if args.cmd == "merge":
            rows, fields = read_rows(args.inputs)
            if not rows:
                raise ValueError("perf.py merge: no rows in %s" % " ".join(args.inputs))
            with open(args.out, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
                w.writeheader()
                w.writerows(merge(rows))
        else:
            text = compare(args.a, args.b)
            sys.stdout.write(text)
            if args.out:
                with open(args.out, "w") as f:
                    f.write(text)
    except ValueError as e:
        sys.exit(str(e))


if __name__ == "__main__":
    main()
