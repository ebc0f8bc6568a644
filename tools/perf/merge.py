#!/usr/bin/env python3
"""Merges the rows of several launches of tmashmem-perf / perf_nvshmem into one row per
measurement, so that the spread a row reports covers what changes from one process to the
next (physical placement of the heap, copy-engine channel, clocks), not only what changes
between repetitions inside one process.

    tools/perf/merge.py LAUNCHES.csv [...] --out MERGED.csv

Rows with the same runtime, test, op, PEs, SMs, threads and size are one measurement, also
when two tests measured it (the bandwidth size sweep and SM sweep both time 256 MiB at 16
and 132 SMs); they must agree on iterations and bytes moved. Their per-repetition times
(the time_us_samples column) are pooled, and min / median / max, GB/s, Mops/s and the
ratio to the reference op are recomputed from the pool. A row fails its check if it failed
in any launch. The output has the input's columns, in first-seen order.
"""
import argparse
import csv
import statistics
import sys

KEY = ("runtime", "test", "op", "pes", "sms", "threads", "bytes")


def merge(rows):
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in KEY), []).append(r)
    merged = {}
    for key, rs in groups.items():
        out = dict(rs[0])
        samples = [float(x) for r in rs for x in r.get("time_us_samples", "").split(";") if x]
        bad = [r["check"] for r in rs if r["check"] not in ("ok", "n/a")]
        out["check"] = bad[0] if bad else rs[0]["check"]
        for k in ("ceiling_d2d_gbps", "ceiling_peer_gbps"):
            out[k] = "%.3f" % statistics.median(float(r[k]) for r in rs)
        if any((r["iters"], r["bytes_moved"]) != (rs[0]["iters"], rs[0]["bytes_moved"])
               for r in rs):
            raise ValueError("merge.py: %s: launches disagree on iterations or bytes moved "
                             "(%s); they are not one measurement" %
                             (" ".join(key), ", ".join(r["iters"] for r in rs)))
        if samples:
            iters = int(rs[0]["iters"])
            per_iter_bytes = float(rs[0]["bytes_moved"]) / iters if iters else 0.0
            lo, med, hi = min(samples), statistics.median(samples), max(samples)
            gbps = lambda t: per_iter_bytes / (t * 1e3) if t > 0 else 0.0  # noqa: E731
            # Messages per iteration: from the bytes where there are any, else from the
            # first launch's Mops/s x time (rows of 0 bytes: barriers).
            size = int(out["bytes"])
            t0 = float(rs[0]["time_us_median"])
            msgs = (per_iter_bytes / size if size else float(rs[0]["mops_median"]) * t0)
            out.update({
                "reps": str(len(samples)),
                "time_us_min": "%.4f" % lo, "time_us_median": "%.4f" % med,
                "time_us_max": "%.4f" % hi,
                "gbps_min": "%.3f" % gbps(hi), "gbps_median": "%.3f" % gbps(med),
                "gbps_max": "%.3f" % gbps(lo),
                "mops_median": "%.4f" % (msgs / med if med > 0 else 0.0),
                "time_us_samples": ";".join("%.4f" % s for s in samples),
            })
        merged[key] = out
    # The reference op's GB/s: the merged row of the same runtime, test, PEs and size,
    # at the same SM count, else the copy engine's (SMs 0).
    by_point = {}  # (runtime, test, op, PEs, size) -> {SMs: row}
    for k, r in merged.items():
        by_point.setdefault((k[0], k[1], k[2], k[3], k[6]), {})[k[4]] = r
    for key, out in merged.items():
        if not out["ref_op"]:
            continue
        rt, test, _, pes, sms, _, size = key
        at = by_point.get((rt, test, out["ref_op"], pes, size), {})
        ref = at.get(sms, at.get("0"))
        if ref is not None and float(ref["gbps_median"]) > 0:
            ref_gbps = float(ref["gbps_median"])
        else:  # the reference was not in these files: the launches' own, median
            ref_gbps = statistics.median(float(r["ref_gbps"]) for r in groups[key])
        out["ref_gbps"] = "%.3f" % ref_gbps
        out["ratio_to_ref"] = "%.4f" % (float(out["gbps_median"]) / ref_gbps if ref_gbps else 0.0)
    return list(merged.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows, fields = [], None
    for path in args.inputs:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            fields = fields or reader.fieldnames
            rows.extend(reader)
    if not rows:
        sys.exit("merge.py: no rows in %s" % " ".join(args.inputs))
    try:
        merged = merge(rows)
    except ValueError as e:
        sys.exit(str(e))
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(merged)


if __name__ == "__main__":
    main()
