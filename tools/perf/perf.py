#!/usr/bin/env python3
"""The benchmark rows after the run. Standard library only, except `plot` (matplotlib).

    tools/perf/perf.py merge LAUNCHES.csv [...] --out MERGED.csv
    tools/perf/perf.py compare RESULTS_A RESULTS_B [RESULTS_C] [--out FILE]
    tools/perf/perf.py plot MERGED.csv [...] --out DIR

merge: rows of one KEY are one measurement (also from two tests: the size and SM sweeps both time
256 MiB at 16 and 132 SMs) and must agree on iters and bytes_moved; every figure is recomputed from
all launches' pooled time_us_samples, so a row's spread covers what changes from one process to the
next. A check failed in any launch stays failed. The input's columns, in first-seen order.
compare: RESULTS is a folder (its perf_*.csv) or comma-separated CSV files or quoted globs (files of
other columns are passed over). Per shared row: is B's median in A's spread, do the spreads overlap,
is B slower beyond A's spread; then the same relative to each run's plain SM copy. With RESULTS_C
also A vs C, B vs C and the rows slower in both B and C. Exits 0: the verdict is in the text.
plot: into DIR the figures of docs/performance.md and mcast_np<N>.png (medians, min..max error
bars; a figure of one panel is one column wide) and summary.txt:
tmashmem beside NVSHMEM wherever both measured a row, and the failed destination checks.
"""
import argparse
import csv
import glob
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


def merge(paths, out_path):
    rows, fields = read_rows(paths)
    if not rows:
        raise ValueError("perf.py merge: no rows in %s" % " ".join(paths))
    groups, merged = {}, {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in KEY), []).append(r)
    for key, rs in groups.items():
        first = rs[0]
        if any((r["iters"], r["bytes_moved"]) != (first["iters"], first["bytes_moved"]) for r in rs):
            raise ValueError("perf.py merge: %s: launches disagree on iterations or bytes moved (%s); they "
                             "are not one measurement" % (" ".join(key), ", ".join(r["iters"] for r in rs)))
        bad = [r["check"] for r in rs if r["check"] not in ("ok", "n/a")]
        out = merged[key] = dict(first, check=bad[0] if bad else first["check"])
        for k in ("ceiling_d2d_gbps", "ceiling_peer_gbps"):
            out[k] = "%.3f" % statistics.median(float(r[k]) for r in rs)
        samples = [float(x) for r in rs for x in r.get("time_us_samples", "").split(";") if x]
        if not samples:
            continue
        per_iter = float(first["bytes_moved"]) / int(first["iters"]) if int(first["iters"]) else 0.0
        lo, med, hi = min(samples), statistics.median(samples), max(samples)
        # Messages per iteration: from the bytes where there are any, else from the first
        # launch's Mops/s x time (rows of 0 bytes: barriers).
        size = int(first["bytes"])
        msgs = per_iter / size if size else float(first["mops_median"]) * float(first["time_us_median"])
        out.update(reps=str(len(samples)), time_us_min="%.4f" % lo, time_us_median="%.4f" % med,
                   time_us_max="%.4f" % hi, mops_median="%.4f" % (msgs / med if med > 0 else 0.0),
                   time_us_samples=";".join("%.4f" % s for s in samples))
        for stat, t in (("min", hi), ("median", med), ("max", lo)):  # the most time, the least GB/s
            out["gbps_" + stat] = "%.3f" % (per_iter / (t * 1e3) if t > 0 else 0.0)
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
    with open(out_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(merged.values())


def metric(r):
    """(min, median, max, unit) of the row's figure of merit: time for latency tests, else GB/s."""
    if r["test"] not in TIMED and float(r["gbps_median"] or 0) > 0:
        return float(r["gbps_min"]), float(r["gbps_median"]), float(r["gbps_max"]), "GB/s"
    return float(r["time_us_min"]), float(r["time_us_median"]), float(r["time_us_max"]), "us"


def compare(a, b, name_a, name_b):
    """The comparison's text and the keys of the rows B is slower in beyond A's spread."""
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("perf.py compare: no rows in common between %s and %s" % (name_a, name_b))
    by_test, outliers, slower = {}, [], set()
    for k in shared:
        lo_a, med_a, hi_a, unit = metric(a[k])
        lo_b, med_b, hi_b, _ = metric(b[k])
        diff = (med_b - med_a) / med_a if med_a else 0.0
        overlap = lo_b <= hi_a and lo_a <= hi_b
        by_test.setdefault(k[:2], []).append((lo_a <= med_b <= hi_a, overlap, abs(diff)))
        if overlap:
            continue
        if (diff < 0) == (unit == "GB/s"):
            slower.add(k)
        line = "  %-8s %-8s %-14s np%s %3s SMs %10s B: " % (k[:5] + k[6:])
        line += "A %.4g [%.4g..%.4g] B %.4g [%.4g..%.4g] %s (%+.2f%%)" % (
            med_a, lo_a, hi_a, med_b, lo_b, hi_b, unit, 100 * diff)
        outliers.append((abs(diff), k, line + (" slower" if k in slower else "")))
    lines = ["%s vs %s, %d rows in common" % (name_a, name_b, len(shared)),
             "%-10s %-9s %5s %15s %16s %12s %12s %7s" % ("runtime", "test", "rows", "B median in A",
                                                        "spreads overlap", "median |d|", "max |d|", "slower")]
    for (rt, test), t in sorted(by_test.items()):
        n, within, over = len(t), sum(x[0] for x in t), sum(x[1] for x in t)
        lines.append("%-10s %-9s %5d %9d (%3.0f%%) %10d (%3.0f%%) %11.2f%% %11.2f%% %7d" % (
            rt, test, n, within, 100.0 * within / n, over, 100.0 * over / n,
            100 * statistics.median(x[2] for x in t), 100 * max(x[2] for x in t),
            sum(1 for k in slower if k[:2] == (rt, test))))
    diffs = [x[2] for t in by_test.values() for x in t]
    lines.append("overall: spreads overlap for %d of %d rows; medians differ by %.2f%% (median), %.2f%% "
                 "(max); B slower beyond A's spread in %d rows" % (
                     len(diffs) - len(outliers), len(diffs), 100 * statistics.median(diffs),
                     100 * max(diffs), len(slower)))
    if outliers:
        lines.append("rows whose spreads do not overlap (largest difference first):")
        lines += [line for _, _, line in sorted(outliers, reverse=True)]
    return "\n".join(lines) + "\n", slower


def per_copy(a, b, name_a, name_b):
    """Bandwidth rows against the same run's plain SM copy (smcopy_put/get of the same runtime,
    PEs, SMs and size): those whose ratio's spread in B lies below A's, a slowdown that a slower
    machine start (which slows the plain copy as much) does not explain."""
    def ratios(run):  # (min, median, max) of each SM-driven bandwidth row over its plain copy
        out = {}
        for k, r in run.items():
            ref = run.get(k[:2] + ("smcopy" + k[2][-4:],) + k[3:])
            sm_driven = k[1] == "bw" and k[4] != "0" and not k[2].startswith("smcopy")
            if not sm_driven or not ref or float(ref["gbps_median"]) <= 0:
                continue
            (lo, med, hi, _), (ref_lo, ref_med, ref_hi, _) = metric(r), metric(ref)
            out[k] = lo / ref_hi, med / ref_med, hi / ref_lo
        return out
    ra, rb = ratios(a), ratios(b)
    shared = sorted(set(ra) & set(rb))
    slower = ["  %s %s np%s %s SMs %s B: %.3f -> %.3f of the plain copy (%+.1f%%)\n" % (
        k[0], k[2], k[3], k[4], k[6], ra[k][1], rb[k][1], 100 * (rb[k][1] / ra[k][1] - 1))
        for k in shared if rb[k][2] < ra[k][0]]
    return ("%s vs %s, relative to the same run's plain SM copy: %d of %d bandwidth rows slower "
            "beyond the spread\n" % (name_a, name_b, len(slower), len(shared))) + "".join(slower)


def load(where):
    """The rows of a result folder (its perf_*.csv) or of comma-separated CSV files / globs."""
    if os.path.isdir(where):
        paths = [p for p in glob.glob(os.path.join(where, "perf_*.csv")) if not p.endswith(".launches.csv")]
    else:
        paths = [p for part in where.split(",") for p in glob.glob(part)]
    rows = read_rows(sorted(paths))[0]
    return {tuple(r[k] for k in KEY): r for r in rows if all(r.get(k) for k in KEY[:3])}


def compare_runs(names, out_path):
    if len(names) not in (2, 3):
        raise ValueError("perf.py compare: two or three result folders")
    runs = [load(n) for n in names]
    text, slower_b = compare(runs[0], runs[1], names[0], names[1])
    text += "\n" + per_copy(runs[0], runs[1], names[0], names[1])
    if len(runs) == 3:
        text_c, slower_c = compare(runs[0], runs[2], names[0], names[2])
        text += "\n" + text_c + "\n" + per_copy(runs[0], runs[2], names[0], names[2])
        text += "\n" + compare(runs[1], runs[2], names[1], names[2])[0]
        both = sorted(slower_b & slower_c)
        text += "\nslower beyond %s's spread in both %s and %s: %d rows\n" % (*names, len(both))
        text += "".join("  %s %s %s np%s %s SMs %s B\n" % (k[:5] + k[6:]) for k in both)
    sys.stdout.write(text)
    if out_path:
        with open(out_path, "w") as f:
            f.write(text)


def plot_rows(paths):
    """The rows, numbers as numbers; of two rows with one key the later wins."""
    rows = {}
    for r in read_rows(paths)[0]:
        r.update({k: int(r[k]) for k in KEY[3:]})
        r.update({k: float(v) for k, v in r.items()
                  if k.startswith(("time_us_", "gbps_", "mops_", "ceiling_d2d")) and k != "time_us_samples"})
        rows[tuple(r[k] for k in KEY)] = r
    return list(rows.values())


XLABEL = {"bytes": "message size (bytes)", "sms": "SMs (one CTA per SM)", "pes": "PEs (one GPU, MPS)"}


def size_label(b, _pos=None):
    """The tick of a size axis: 16384 -> 16K."""
    b = int(round(b))
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return "%d%s" % (b >> shift, unit)
    return str(b)


def figure(out, name, panels, x="bytes", y="gbps", label=("runtime", "op"), logy=False):
    """One PNG of the panels (title, y label, rows, [(y, text) drawn across]) that have rows; in
    each, a line per label: y's median over x, min..max error bars, NVSHMEM's dashed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    panels = [p for p in panels if p[2]]
    if not panels:
        return
    cols, n = min(2, len(panels)), (len(panels) + 1) // 2
    fig, axes = plt.subplots(n, cols, figsize=(7 * cols, 5 * n), squeeze=False)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    for ax, (title, ylabel, rows, lines) in zip(axes.flat, panels):
        series = {}
        for r in sorted(rows, key=lambda r: r[x]):
            series.setdefault(" ".join(str(r[k]) for k in label), []).append(r)
        for text, rs in sorted(series.items()):
            med = [r[y + "_median"] for r in rs]
            err = [[m - r[y + "_min"] for m, r in zip(med, rs)], [r[y + "_max"] - m for m, r in zip(med, rs)]]
            nv = text.startswith("nvshmem")
            ax.errorbar([r[x] for r in rs], med, yerr=err, capsize=2, marker="s" if nv else "o", markersize=4,
                        linestyle="--" if nv else "-", label=text)
        for i, (level, text) in enumerate(lines):  # six distinct black/grey styles
            ax.axhline(level, color=("k", "0.55")[i // 3 % 2], linewidth=0.8,
                       linestyle=(":", "-.", "--")[i % 3], label=text)
        ax.set_title(title, fontsize=10)
        ax.set(xlabel=XLABEL[x], ylabel=ylabel, yscale="log" if logy else "linear")
        if x != "pes":
            ax.set_xscale("log", base=2)
        if x == "bytes":
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(size_label))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=130)
    plt.close(fig)
    print("perf.py plot: wrote %s" % os.path.join(out, name))


def scaled(rows, factor):
    """Copies of the rows with their GB/s times factor(row)."""
    return [dict(r, **{k: r[k] * factor(r) for k in ("gbps_min", "gbps_median", "gbps_max")}) for r in rows]


def plot(paths, out):
    rows = plot_rows([p for p in paths if os.path.exists(p) and os.path.getsize(p) > 0])
    if not rows:
        raise ValueError("perf.py plot: no rows in %s" % ", ".join(paths))
    os.makedirs(out, exist_ok=True)

    def of(test, **match):
        return [r for r in rows if r["test"] == test and all(r[k] == v for k, v in match.items())]
    ceil = max([r["ceiling_d2d_gbps"] for r in of("bw")] or [0.0])
    ceiling = [(ceil, "cudaMemcpy D2D %.0f GB/s" % ceil)] if ceil else []
    for pes in sorted({r["pes"] for r in of("bw")}):
        bw = of("bw", pes=pes)
        # The SM counts of the size sweeps (more than two sizes) and the size of the SM sweep.
        swept = sorted(s for s in {r["sms"] for r in bw if r["sms"]}
                       if len({r["bytes"] for r in bw if r["sms"] == s}) > 2)
        sweep = max({r["bytes"] for r in bw}, key=lambda b: len({r["sms"] for r in bw if r["bytes"] == b}))
        sizes, ratios, sms = [], [], []
        for d in ("put", "get"):
            mine = [r for r in bw if r["op"].endswith(d)]
            for s in swept:
                at = [r for r in mine if r["sms"] in (s, 0)]  # and the copy engine's rows, in every panel
                sizes.append(("%s, %d SMs, %d PE(s)" % (d, s, pes), "GB/s (payload)", at, ceiling))
                at = [r for r in at if r["runtime"] == "tmashmem" and r["ratio_to_ref"] not in ("", "0.0000")]
                ratios.append(("tmashmem %s over cudaMemcpy, %d SMs, %d PE(s)" % (d, s, pes), "ratio (x)",
                               scaled(at, lambda r: 1.0 / float(r["ref_gbps"])), []))
            at = [r for r in mine if r["bytes"] == sweep and r["sms"]]
            at = at if len({r["sms"] for r in at}) > 2 else []
            sms.append(("%s of %d B, %d PE(s)" % (d, sweep, pes), "GB/s (payload)", at, ceiling))
            per_sm = scaled(at, lambda r: 1.0 / r["sms"])
            sms.append(("%s of %d B per SM" % (d, sweep), "GB/s per SM", per_sm, []))
        figure(out, "bw_vs_size_np%d.png" % pes, sizes)
        figure(out, "ratio_vs_size_np%d.png" % pes, ratios, label=("op",))
        figure(out, "bw_vs_sms_np%d.png" % pes, sms, x="sms")
    figure(out, "latency_vs_size.png", [
        ("ping-pong round trip (median per round trip)", "us", of("pingpong"), []),
        ("one-sided latency: op + quiet, one thread", "us", of("msg_lat"), [])], y="time_us", logy=True)
    # The message rate has a median only.
    rate = [dict(r, mops_min=r["mops_median"], mops_max=r["mops_median"]) for r in of("msg_rate")]
    figure(out, "msg_rate.png", [("message rate inside one persistent kernel", "million messages / s",
                                  rate, [])], y="mops", label=("runtime", "op", "sms"), logy=True)
    figure(out, "barrier.png", [("device barrier, back to back in one kernel", "us per barrier",
                                 of("barrier"), [])], x="pes", y="time_us", label=("runtime", "op", "sms"))
    for pes in sorted({r["pes"] for r in of("mcast")}):
        figure(out, "mcast_np%d.png" % pes, [
            ("multicast_store fan-out beside a put per PE, %d SMs, %d PEs" % (s, pes),
             "GB/s (every copy counted)", of("mcast", pes=pes, sms=s), [])
            for s in sorted({r["sms"] for r in of("mcast", pes=pes)})], label=("op",))
    for pes in sorted({r["pes"] for r in of("coll")}):
        # The floors (launch, handshake: rows without data) as horizontal lines on the time panels.
        floors = [(r["time_us_median"], r["runtime"] + " " + r["op"]) for r in of("coll", pes=pes, bytes=0)]
        busbw, times = [], []
        for op in sorted({r["op"] for r in of("coll", pes=pes) if r["bytes"]}):
            at = [r for r in of("coll", pes=pes, op=op) if r["bytes"]]
            # nccl-tests' bus bandwidth: all-reduce 2(n-1)/n of the algorithm's, broadcast 1, else (n-1)/n.
            bus = {"allreduce": 2.0 * (pes - 1) / pes, "broadcast": 1.0}.get(op, (pes - 1.0) / pes)
            busbw.append(("%s, %d PEs (line: runtime, n_sms; 0 = default)" % (op, pes), "busbw (GB/s)",
                          scaled(at, lambda r: bus), []))
            times.append(("%s, %d PEs: time per call (black lines: floors, no data)" % (op, pes),
                          "us per call", at, floors))
        figure(out, "coll_np%d.png" % pes, busbw, label=("runtime", "sms"))
        figure(out, "coll_time_np%d.png" % pes, times, y="time_us", label=("runtime", "sms"), logy=True)
    summary(rows, out)


def summary(rows, out):
    """tmashmem / NVSHMEM for every row both measured (time for latencies, GB/s otherwise), and
    the failed destination checks."""
    lines = ["tmashmem beside nvshmem, same test, op, PEs, SMs, threads and size (median):"]
    nv = {tuple(r[k] for k in KEY[1:]): r for r in rows if r["runtime"] == "nvshmem"}
    for r in [r for r in rows if r["runtime"] == "tmashmem"]:
        # The same op, else the longest NVSHMEM op this one is a variant of (signal_relaxed: signal).
        ops = [r["op"][:i] for i in range(len(r["op"]), 0, -1) if r["op"][i:i + 1] in ("", "_")]
        keys = [(r["test"], op) + tuple(r[k] for k in KEY[3:]) for op in ops]
        q = next((nv[k] for k in keys if k in nv), None)
        if q is None:
            continue
        timed = r["test"] in TIMED or r["gbps_median"] <= 0
        y, unit = ("time_us_median", "us") if timed else ("gbps_median", "GB/s")
        lines.append("  %-9s %-22s np%d %3d SMs %10d B: %10.4g / %10.4g %s = %.3f (nvshmem %s)" % (
            r["test"], r["op"], r["pes"], r["sms"], r["bytes"], r[y], q[y], unit,
            r[y] / q[y] if q[y] else 0.0, q["op"]))
    bad = [r for r in rows if r["check"] not in ("ok", "n/a", "")]
    lines += ["FAILED destination check: %s %s %s np%d %d SMs %d B: %s" % (
        r["runtime"], r["test"], r["op"], r["pes"], r["sms"], r["bytes"], r["check"]) for r in bad]
    unchecked = sum(r["check"] in ("n/a", "") for r in rows)
    lines.append("" if bad else "every checked destination OK (%d rows; %d rows without a destination "
                 "check)" % (len(rows) - unchecked, unchecked))
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for cmd, what in (("merge", "LAUNCHES.csv"), ("compare", "RESULTS"), ("plot", "MERGED.csv")):
        p = sub.add_parser(cmd)
        p.add_argument("inputs", nargs="+", metavar=what)
        p.add_argument("--out", required=cmd != "compare")
    args = ap.parse_args()
    try:
        {"merge": merge, "compare": compare_runs, "plot": plot}[args.cmd](args.inputs, args.out)
    except ValueError as e:
        sys.exit(str(e))


if __name__ == "__main__":
    main()
