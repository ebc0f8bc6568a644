#!/usr/bin/env python3
"""The benchmark rows after the run: pool launches into one row per measurement, ask whether
runs agree, and draw the figures.
Standard library only, except `plot` (matplotlib, imported by that subcommand alone).

    tools/perf/perf.py merge LAUNCHES.csv [...] --out MERGED.csv
    tools/perf/perf.py compare RESULTS_A RESULTS_B [RESULTS_C] [--out FILE]
    tools/perf/perf.py plot MERGED.csv [...] --out DIR

merge: rows with the same KEY are one measurement, also when two tests measured it (the
bandwidth size sweep and SM sweep both time 256 MiB at 16 and 132 SMs); they must agree on
iterations and bytes moved. Their per-repetition times (time_us_samples) are pooled, and
min / median / max, GB/s, Mops/s and the ratio to the reference op are recomputed from the
pool, so a row's spread covers what changes from one process to the next. A row fails its
check if it failed in any launch. The output has the input's columns, in first-seen order.

compare: RESULTS_x is a folder (its perf_*.csv) or comma-separated CSV files or quoted globs
('docs/perf/suite_*.csv'; files of other columns are passed over). For every row both share:
does B's median lie within A's spread, do the spreads overlap, how far apart are the medians,
is B slower beyond A's spread. With RESULTS_C also A vs C and B vs C, and the rows slower
beyond A's spread in both B and C. Exits 0 (the verdict is in the text: a measurement).

plot: into DIR (where the rows exist) bw_vs_size_np<N>.png (GB/s vs size, put and get, at each
swept SM count), bw_vs_sms_np<N>.png (GB/s and GB/s per SM at the SM sweep's size),
ratio_vs_size_np<N>.png (each tmashmem op over the copy engine), latency_vs_size.png (ping-pong
and op + quiet), msg_rate.png, barrier.png, mcast_np<N>.png, coll_np<N>.png (busbw),
coll_time_np<N>.png (us per call, the floors as black lines), and summary.txt: tmashmem
beside NVSHMEM wherever both measured a row, and failed checks (the goals live in
docs/performance.md, not here). Error bars: min..max over repetitions.
"""
import argparse
import collections
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


def write_rows(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


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


def load(where):
    """The rows of a result folder (its perf_*.csv) or of comma-separated CSV files / globs."""
    if os.path.isdir(where):
        paths = [p for p in glob.glob(os.path.join(where, "perf_*.csv")) if not p.endswith(".launches.csv")]
    else:
        paths = [p for part in where.split(",") for p in glob.glob(part)]
    return {tuple(r[k] for k in KEY): r for r in read_rows(sorted(paths))[0] if all(r.get(k) for k in KEY[:3])}


def compare(a, b, name_a, name_b):
    """The comparison's text and the keys of the rows B is slower in beyond A's spread."""
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("perf.py compare: no rows in common between %s and %s" % (name_a, name_b))
    lines = ["%s vs %s, %d rows in common" % (name_a, name_b, len(shared))]
    by_test, outliers, slower = {}, [], set()
    for k in shared:
        lo_a, med_a, hi_a, unit = metric(a[k])
        lo_b, med_b, hi_b, _ = metric(b[k])
        diff = (med_b - med_a) / med_a if med_a else 0.0
        overlap = lo_b <= hi_a and lo_a <= hi_b
        by_test.setdefault((k[0], k[1]), []).append((lo_a <= med_b <= hi_a, overlap, abs(diff)))
        if not overlap:
            outliers.append((abs(diff), k, med_a, med_b, lo_a, hi_a, lo_b, hi_b, unit, diff))
            if (diff < 0) == (unit == "GB/s"):
                slower.add(k)
    lines.append("%-10s %-9s %5s %15s %16s %12s %12s %7s" % ("runtime", "test", "rows", "B median in A",
                                                            "spreads overlap", "median |d|", "max |d|",
                                                            "slower"))
    for (rt, test), t in sorted(by_test.items()):
        n, within, over = len(t), sum(x[0] for x in t), sum(x[1] for x in t)
        lines.append("%-10s %-9s %5d %9d (%3.0f%%) %10d (%3.0f%%) %11.2f%% %11.2f%% %7d" %
                     (rt, test, n, within, 100.0 * within / n, over, 100.0 * over / n,
                      100 * statistics.median(x[2] for x in t), 100 * max(x[2] for x in t),
                      sum(1 for k in slower if k[:2] == (rt, test))))
    diffs = [x[2] for t in by_test.values() for x in t]
    lines.append("overall: spreads overlap for %d of %d rows; medians differ by %.2f%% (median), "
                 "%.2f%% (max); B slower beyond A's spread in %d rows" %
                 (len(diffs) - len(outliers), len(diffs), 100 * statistics.median(diffs),
                  100 * max(diffs), len(slower)))
    if outliers:
        lines.append("rows whose spreads do not overlap (largest difference first):")
        for _, k, med_a, med_b, lo_a, hi_a, lo_b, hi_b, unit, diff in sorted(outliers, reverse=True):
            lines.append("  %-8s %-8s %-14s np%s %3s SMs %10s B: A %.4g [%.4g..%.4g] "
                         "B %.4g [%.4g..%.4g] %s (%+.2f%%)%s" %
                         (k[0], k[1], k[2], k[3], k[4], k[6], med_a, lo_a, hi_a, med_b, lo_b, hi_b,
                          unit, 100 * diff, " slower" if k in slower else ""))
    return "\n".join(lines) + "\n", slower


def per_copy(a, b, name_a, name_b):
    """Bandwidth rows measured against the same run's plain SM copy (smcopy_put/get of the same
    runtime, PEs, SMs and size): the rows whose ratio's spread in B lies below A's, a slowdown
    that a slower machine start (which slows the plain copy as much) does not explain."""
    def ratio(run, k):
        ref = run.get(k[:2] + ("smcopy" + k[2][-4:],) + k[3:])
        if not ref or float(ref["gbps_median"]) <= 0:
            return None
        r, q = metric(run[k]), metric(ref)
        return r[0] / q[2], r[1] / q[1], r[2] / q[0]
    rows, slower = 0, []
    for k in sorted(set(a) & set(b)):
        if k[1] != "bw" or k[4] == "0" or k[2].startswith("smcopy"):
            continue
        ra, rb = ratio(a, k), ratio(b, k)
        if ra and rb:
            rows += 1
            if rb[2] < ra[0]:
                slower.append("  %s %s np%s %s SMs %s B: %.3f -> %.3f of the plain copy (%+.1f%%)" %
                              (k[0], k[2], k[3], k[4], k[6], ra[1], rb[1], 100 * (rb[1] / ra[1] - 1)))
    return ("%s vs %s, relative to the same run's plain SM copy: %d of %d bandwidth rows slower "
            "beyond the spread\n" % (name_a, name_b, len(slower), rows)) + "".join(s + "\n" for s in slower)


def compare_runs(names):
    runs = [load(n) for n in names]
    text, slower_b = compare(runs[0], runs[1], names[0], names[1])
    text += "\n" + per_copy(runs[0], runs[1], names[0], names[1])
    if len(runs) == 3:
        text_c, slower_c = compare(runs[0], runs[2], names[0], names[2])
        text += "\n" + text_c + "\n" + per_copy(runs[0], runs[2], names[0], names[2])
        text += "\n" + compare(runs[1], runs[2], names[1], names[2])[0]
        both = sorted(slower_b & slower_c)
        text += "\nslower beyond %s's spread in both %s and %s: %d rows\n" % (
            names[0], names[1], names[2], len(both))
        text += "".join("  %s %s %s np%s %s SMs %s B\n" % (k[0], k[1], k[2], k[3], k[4], k[6])
                        for k in both)
    return text


INTS = ("pes", "sms", "threads", "bytes")
BUS = {"allreduce": lambda n: 2.0 * (n - 1) / n, "broadcast": lambda n: 1.0}  # else (n-1)/n


def plot_rows(paths):
    rows = {}
    for r in read_rows(paths)[0]:
        r.update({k: int(r[k]) for k in INTS})
        r.update({k: float(r[k]) for k in r if k.startswith(("time_us_", "gbps_", "mops_", "ceiling_d2d"))
                  and k != "time_us_samples"})
        rows[tuple(r[k] for k in KEY)] = r  # a later row wins
    return list(rows.values())


def draw(ax, rows, x, metric, label, scale=lambda r: 1.0):
    """One line per label, the median with the min..max spread as error bars."""
    series = collections.defaultdict(list)
    for r in rows:
        series[label(r)].append(r)
    for name, rs in sorted(series.items()):
        rs.sort(key=lambda r: r[x])
        med = [r[metric + "_median"] * scale(r) for r in rs]
        err = [[m - r[metric + "_min"] * scale(r) for m, r in zip(med, rs)],
               [r[metric + "_max"] * scale(r) - m for m, r in zip(med, rs)]]
        dashed = name.startswith("nvshmem")
        ax.errorbar([r[x] for r in rs], med, yerr=err, capsize=2, marker="s" if dashed else "o",
                    markersize=4, linestyle="--" if dashed else "-", label=name)


def size_label(b, _pos=None):
    b = int(round(b))
    unit = next((u for u, k in (("G", 30), ("M", 20), ("K", 10)) if b >= 1 << k and b % (1 << k) == 0), "")
    return "%d%s" % (b >> {"G": 30, "M": 20, "K": 10, "": 0}[unit], unit)


def style(ax, title, xlabel, ylabel, logx=True, logy=False):
    ax.set_xscale("log", base=2) if logx else None
    if logx and "size" in xlabel:
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(size_label))
    ax.set_yscale("log") if logy else None
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.title.set_fontsize(10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def save(fig, out, name):
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=130)
    plt.close(fig)
    print("perf.py plot: wrote %s" % os.path.join(out, name))


def panels(out, name, specs, ncols=2):
    """specs: (title, rows, x, metric, label, xlabel, ylabel, options) per panel."""
    specs = [s for s in specs if s[1]]
    if not specs:
        return
    nrows = (len(specs) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(7 * ncols, 5 * nrows), squeeze=False)
    for ax, (title, rows, x, metric, label, xlabel, ylabel, opt) in zip(axes.flat, specs):
        draw(ax, rows, x, metric, label, opt.get("scale", lambda r: 1.0))
        for i, (y, text) in enumerate(opt.get("lines", [])):  # six distinct black/grey styles
            ax.axhline(y, color=("k", "0.55")[i // 3 % 2], linewidth=0.8,
                       linestyle=(":", "-.", "--")[i % 3], label=text)
        style(ax, title, xlabel, ylabel, opt.get("logx", True), opt.get("logy", False))
    for ax in list(axes.flat)[len(specs):]:
        ax.axis("off")
    save(fig, out, name)


def plots(rows, out):
    by = lambda *k: lambda r: " ".join(str(r[i]) for i in k)  # noqa: E731
    pes_of = lambda test: sorted({r["pes"] for r in rows if r["test"] == test})  # noqa: E731
    ceil = max([r["ceiling_d2d_gbps"] for r in rows if r["test"] == "bw"] or [0.0])
    ceiling = {"lines": [(ceil, "cudaMemcpy D2D %.0f GB/s" % ceil)]} if ceil else {}
    size, sms_, gbps = "message size (bytes)", "SMs (one CTA per SM)", "GB/s (payload)"
    for pes in pes_of("bw"):
        bw = [r for r in rows if r["test"] == "bw" and r["pes"] == pes]
        # The SM counts of the size sweeps (more than two sizes) and the size of the SM sweep.
        swept = sorted(s for s in {r["sms"] for r in bw if r["sms"]}
                       if len({r["bytes"] for r in bw if r["sms"] == s}) > 2)
        sweep = max({r["bytes"] for r in bw}, key=lambda b: len({r["sms"] for r in bw if r["bytes"] == b}))
        spec, sm_spec, ratio = [], [], []
        for d in ("put", "get"):
            mine = [r for r in bw if r["op"].endswith(d)]
            for s in swept:
                spec.append(("%s, %d SMs, %d PE(s)" % (d, s, pes),
                             [r for r in mine if r["sms"] in (s, 0)], "bytes", "gbps", by("runtime", "op"),
                             size, gbps, ceiling))
                ratio.append(("tmashmem %s over cudaMemcpy, %d SMs, %d PE(s)" % (d, s, pes),
                              [r for r in mine if r["runtime"] == "tmashmem" and r["sms"] in (s, 0)
                               and r["ratio_to_ref"] not in ("", "0.0000")], "bytes", "gbps", by("op"), size,
                              "ratio (x)", {"scale": lambda r: 1.0 / float(r["ref_gbps"])}))
            at = [r for r in mine if r["bytes"] == sweep and r["sms"]]
            at = at if len({r["sms"] for r in at}) > 2 else []
            sm_spec += [("%s of %d B, %d PE(s)" % (d, sweep, pes), at, "sms", "gbps", by("runtime", "op"),
                         sms_, gbps, ceiling),
                        ("%s of %d B per SM" % (d, sweep), at, "sms", "gbps", by("runtime", "op"), sms_,
                         "GB/s per SM", {"scale": lambda r: 1.0 / r["sms"]})]
        panels(out, "bw_vs_size_np%d.png" % pes, spec)
        panels(out, "ratio_vs_size_np%d.png" % pes, ratio)
        panels(out, "bw_vs_sms_np%d.png" % pes, sm_spec)
    pick = lambda test: [r for r in rows if r["test"] == test]  # noqa: E731
    panels(out, "latency_vs_size.png", [
        ("ping-pong round trip (median per round trip)", pick("pingpong"), "bytes", "time_us",
         by("runtime", "op"), size, "us", {"logy": True}),
        ("one-sided latency: op + quiet, one thread", pick("msg_lat"), "bytes", "time_us",
         by("runtime", "op"), size, "us", {"logy": True})])
    rate = [dict(r, mops_min=r["mops_median"], mops_max=r["mops_median"]) for r in pick("msg_rate")]
    panels(out, "msg_rate.png", [("message rate inside one persistent kernel", rate, "bytes", "mops",
                                  by("runtime", "op", "sms"), size, "million messages / s", {"logy": True})], 1)
    panels(out, "barrier.png", [("device barrier, back to back in one kernel", pick("barrier"), "pes",
                                 "time_us", by("runtime", "op", "sms"), "PEs (one GPU, MPS)", "us per barrier",
                                 {"logx": False})], 1)
    for pes in pes_of("mcast"):
        panels(out, "mcast_np%d.png" % pes, [
            ("multicast_store fan-out beside a put per PE, %d SMs, %d PEs" % (s, pes),
             [r for r in pick("mcast") if r["pes"] == pes and r["sms"] == s], "bytes", "gbps", by("op"), size,
             "GB/s (every copy counted)", {}) for s in sorted({r["sms"] for r in pick("mcast")})])
    for pes in pes_of("coll"):
        coll = [r for r in pick("coll") if r["pes"] == pes and r["bytes"] > 0]
        # The floors (launch, handshake: rows without data) as black lines on the time panels.
        floors = [(r["time_us_median"], "%s %s" % (r["runtime"], r["op"]))
                  for r in pick("coll") if r["pes"] == pes and r["bytes"] == 0]
        ops = sorted({r["op"] for r in coll})
        panels(out, "coll_np%d.png" % pes, [
            ("%s, %d PEs (line: runtime, n_sms; 0 = default)" % (op, pes), [r for r in coll if r["op"] == op],
             "bytes", "gbps", by("runtime", "sms"), size,
             "busbw (GB/s)", {"scale": lambda r: BUS.get(r["op"], lambda n: (n - 1.0) / n)(r["pes"])})
            for op in ops])
        panels(out, "coll_time_np%d.png" % pes, [
            ("%s, %d PEs: time per call (black lines: floors, no data)" % (op, pes),
             [r for r in coll if r["op"] == op], "bytes", "time_us", by("runtime", "sms"), size,
             "us per call", {"logy": True, "lines": floors}) for op in ops])


def summary(rows, out):
    """tmashmem / NVSHMEM for every row both measured (time for latencies, GB/s otherwise)."""
    lines = ["tmashmem beside nvshmem, same test, op, PEs, SMs, threads and size (median):"]
    nv = {tuple(r[k] for k in KEY[1:]): r for r in rows if r["runtime"] == "nvshmem"}
    for r in rows:
        # The same op, else the longest NVSHMEM op this one is a variant of (signal_relaxed: signal).
        ops = [r["op"][:i] for i in range(len(r["op"]), 0, -1) if r["op"][i:i + 1] in ("", "_")]
        q = next((nv[k] for k in ((r["test"], op) + tuple(r[k] for k in KEY[3:]) for op in ops) if k in nv), None)
        if r["runtime"] != "tmashmem" or q is None:
            continue
        timed = r["test"] in TIMED or r["gbps_median"] <= 0
        a, b = (r["time_us_median"], q["time_us_median"]) if timed else (r["gbps_median"], q["gbps_median"])
        lines.append("  %-9s %-22s np%d %3d SMs %10d B: %10.4g / %10.4g %s = %.3f (nvshmem %s)" %
                     (r["test"], r["op"], r["pes"], r["sms"], r["bytes"], a, b, "us" if timed else "GB/s",
                      a / b if b else 0.0, q["op"]))
    bad = [r for r in rows if r["check"] not in ("ok", "n/a", "")]
    lines += ["FAILED destination check: %s %s %s np%d %d SMs %d B: %s" %
              (r["runtime"], r["test"], r["op"], r["pes"], r["sms"], r["bytes"], r["check"]) for r in bad]
    unchecked = sum(r["check"] in ("n/a", "") for r in rows)
    lines.append("" if bad else "every checked destination OK (%d rows; %d rows without a destination "
                 "check)" % (len(rows) - unchecked, unchecked))
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def plot(paths, out):
    """The plot subcommand: the only part that needs matplotlib (Agg)."""
    global matplotlib, plt
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401
    os.makedirs(out, exist_ok=True)
    rows = plot_rows([p for p in paths if os.path.exists(p) and os.path.getsize(p) > 0])
    if not rows:
        raise ValueError("perf.py plot: no rows in %s" % ", ".join(paths))
    plots(rows, out)
    summary(rows, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for cmd, what in (("merge", "LAUNCHES.csv"), ("compare", "RESULTS"), ("plot", "MERGED.csv")):
        p = sub.add_parser(cmd)
        p.add_argument("inputs", nargs="+", metavar=what)
        p.add_argument("--out", required=cmd != "compare")
    args = ap.parse_args()
    try:
        if args.cmd == "plot":
            return plot(args.inputs, args.out)
        if args.cmd == "compare":
            if len(args.inputs) not in (2, 3):
                raise ValueError("perf.py compare: two or three result folders")
            text = compare_runs(args.inputs)
            sys.stdout.write(text)
            if args.out:
                with open(args.out, "w") as f:
                    f.write(text)
            return
        rows, fields = read_rows(args.inputs)
        if not rows:
            raise ValueError("perf.py merge: no rows in %s" % " ".join(args.inputs))
        write_rows(args.out, merge(rows), fields)
    except ValueError as e:
        sys.exit(str(e))


if __name__ == "__main__":
    main()
