#!/usr/bin/env python3
"""Plots and a summary from the merged benchmark CSVs (run-perf.sh's perf_*.csv).

    python3 tools/perf/plot.py --out DIR perf_tmashmem.csv [perf_nvshmem.csv perf_coll.csv ...]

Writes into DIR (where the rows exist): bw_vs_size_np<N>.png (GB/s vs size, put and get, at
each swept SM count), bw_vs_sms_np<N>.png (GB/s and GB/s per SM at the SM sweep's size),
ratio_vs_size_np<N>.png (each tmashmem op over the copy engine), latency_vs_size.png
(ping-pong and op + quiet), msg_rate.png, barrier.png, mcast_np<N>.png, coll_np<N>.png
(busbw), and summary.txt: tmashmem beside NVSHMEM wherever both measured a row, and failed
checks (the goals live in docs/performance.md, not here). Error bars: min..max over
repetitions. Standard library and matplotlib (Agg) only.
"""
import argparse
import collections
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from perf import KEY, TIMED  # noqa: E402  (this script's folder is on sys.path)

INTS = ("pes", "sms", "threads", "bytes")
BUS = {"allreduce": lambda n: 2.0 * (n - 1) / n, "broadcast": lambda n: 1.0}  # else (n-1)/n


def load(paths):
    rows = {}
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
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
    print("plot.py: wrote %s" % os.path.join(out, name))


def panels(out, name, specs, ncols=2):
    """specs: (title, rows, x, metric, label, xlabel, ylabel, options) per panel."""
    specs = [s for s in specs if s[1]]
    if not specs:
        return
    nrows = (len(specs) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(7 * ncols, 5 * nrows), squeeze=False)
    for ax, (title, rows, x, metric, label, xlabel, ylabel, opt) in zip(axes.flat, specs):
        draw(ax, rows, x, metric, label, opt.get("scale", lambda r: 1.0))
        for y, text in opt.get("lines", []):
            ax.axhline(y, color="k", linewidth=0.8, linestyle=":", label=text)
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
        coll = [r for r in pick("coll") if r["pes"] == pes]
        panels(out, "coll_np%d.png" % pes, [
            ("%s, %d PEs" % (op, pes), [r for r in coll if r["op"] == op], "bytes", "gbps", by("runtime"), size,
             "busbw (GB/s)", {"scale": lambda r: BUS.get(r["op"], lambda n: (n - 1.0) / n)(r["pes"])})
            for op in sorted({r["op"] for r in coll})])


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the PNGs and the summary")
    ap.add_argument("csv", nargs="+", help="merged CSV files (perf.py merge)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = load([p for p in args.csv if os.path.exists(p) and os.path.getsize(p) > 0])
    if not rows:
        print("plot.py: no rows in %s" % ", ".join(args.csv), file=sys.stderr)
        return 1
    plots(rows, args.out)
    summary(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
