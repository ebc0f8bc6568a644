#!/usr/bin/env python3
"""Plots and a summary from tmashmem-perf / perf_nvshmem CSV files.

    python3 tools/perf/plot.py --out DIR perf_tmashmem.csv [perf_nvshmem.csv ...]

Writes into DIR:
  bw_vs_size_np<N>.png     GB/s vs message size, put and get, at each SM count
  bw_vs_sms_np<N>.png      GB/s (and GB/s per SM) vs SM count at the size of the SM sweep
  latency_vs_size.png      ping-pong round trip and one-sided op+quiet latency vs size
  ratio_vs_size_np<N>.png  each tmashmem op over the best alternative at that point: the
                           SM-driven ones at the same SM count, and the copy engine
  msg_rate.png, barrier.png
  summary.txt              tmashmem beside NVSHMEM wherever both measured a row, and failed
                           checks (the goals live in docs/performance.md, not here)

Error bars are the min..max over repetitions. Standard library and matplotlib (Agg) only.
"""
import argparse
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

COPY_ENGINE = {"memcpy_put", "memcpy_get", "on_stream_put", "on_stream_get"}
STYLE = {"tmashmem": ("-", "o"), "nvshmem": ("--", "s")}
# One colour per operation, the same for both runtimes (the line style tells them apart).
COLORS = {"tile": "tab:red", "nbi": "tab:orange", "block": "tab:blue", "smcopy": "tab:green",
          "memcpy": "black", "on_stream": "tab:gray", "raw_st": "tab:gray", "p": "tab:purple",
          "put": "tab:blue", "put_signal": "tab:orange", "tile_put": "tab:red",
          "signal": "tab:green", "signal_relaxed": "tab:olive", "signal_relaxed_timeout": "tab:cyan",
          "put_signal_thread": "tab:brown", "barrier_all": "tab:blue", "sync_all": "tab:orange"}
INTS = ("pes", "sms", "threads", "bytes", "iters", "reps")
FLOATS = ("time_us_min", "time_us_median", "time_us_max", "gbps_min", "gbps_median", "gbps_max",
          "mops_median", "ceiling_d2d_gbps")


def color(op):
    base = op[:-4] if op.endswith(("_put", "_get")) and op not in COLORS else op
    return COLORS.get(base)


def load(paths):
    """Rows keyed by runtime, test, op, PEs, SMs, threads and size; a later row wins."""
    rows = {}
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                r.update({k: int(r[k]) for k in INTS})
                r.update({k: float(r[k]) for k in FLOATS})
                rows[tuple(r[k] for k in ("runtime", "test", "op", "pes", "sms", "threads", "bytes"))] = r
    return list(rows.values())


def size_label(b, _pos=None):
    b = int(round(b))
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= (1 << shift) and b % (1 << shift) == 0:
            return "%d%s" % (b >> shift, unit)
    return str(b)


def direction(op):
    return "get" if op.endswith("_get") else "put"


def ceiling(rows):
    return max([r["ceiling_d2d_gbps"] for r in rows if r["ceiling_d2d_gbps"] > 0] or [0.0])


def draw(ax, rows, x, metric, label=lambda rt, op, r: "%s %s" % (rt, op), group=("runtime", "op")):
    """One line per group, median with the min..max spread as error bars."""
    series = defaultdict(list)
    for r in rows:
        series[tuple(r[g] for g in group)].append(r)
    for key, rs in sorted(series.items()):
        rs.sort(key=lambda r: r[x])
        med = [r[metric + "_median"] for r in rs]
        err = [[max(0.0, m - r[metric + "_min"]) for m, r in zip(med, rs)],
               [max(0.0, r[metric + "_max"] - m) for m, r in zip(med, rs)]]
        line, mark = STYLE.get(key[0], ("-", "o"))
        ax.errorbar([r[x] for r in rs], med, yerr=err, linestyle=line, marker=mark, markersize=4,
                    capsize=2, color=color(key[1]), label=label(key[0], key[1], rs[0]))


def axes_style(ax, xlabel, ylabel, title, log_x=True, sizes=True, log_y=False):
    if log_x:
        ax.set_xscale("log", base=2)
    if sizes:
        ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    if log_y:  # plain numbers (2, 5, 10) instead of powers of ten
        ax.set_yscale("log")
        for axis in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
            axis(FuncFormatter(lambda v, _p: "%g" % v))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def save(fig, out, name, made):
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=130)
    plt.close(fig)
    made.append(name)


def ce_label(rt, op, _r):
    return "%s (%s)" % (op, rt) if op in COPY_ENGINE else "%s %s" % (rt, op)


def swept_sms(sel):
    """SM counts measured at more than two sizes (the size sweeps, not the SM sweep)."""
    return [s for s in sorted({r["sms"] for r in sel if r["sms"] > 0})
            if len({r["bytes"] for r in sel if r["sms"] == s}) > 2]


def plot_bw(rows, out, made):
    bw = [r for r in rows if r["test"] == "bw"]
    ceil = ceiling(rows)
    for pes in sorted({r["pes"] for r in bw}):
        sel = [r for r in bw if r["pes"] == pes]
        tm_ce = {r["op"] for r in sel if r["runtime"] == "tmashmem" and r["op"] in COPY_ENGINE}
        sel_ce = [r for r in sel if not (r["op"] in tm_ce and r["runtime"] != "tmashmem")]
        sm_counts = swept_sms(sel)
        if sm_counts:  # bandwidth vs size; one copy-engine line per direction
            fig, axes = plt.subplots(len(sm_counts), 2, figsize=(14, 5 * len(sm_counts)), squeeze=False)
            for i, sms in enumerate(sm_counts):
                for j, d in enumerate(("put", "get")):
                    ax = axes[i][j]
                    draw(ax, [r for r in sel_ce if direction(r["op"]) == d and
                              (r["sms"] == sms or r["op"] in COPY_ENGINE)], "bytes", "gbps", ce_label)
                    if ceil:
                        ax.axhline(ceil, color="k", linewidth=0.8, linestyle=":",
                                   label="cudaMemcpy D2D ceiling %.0f GB/s" % ceil)
                    axes_style(ax, "message size (bytes)", "bandwidth (GB/s, payload)",
                               "%s, %d SMs, %d PE(s)" % (d, sms, pes))
            save(fig, out, "bw_vs_size_np%d.png" % pes, made)
        by_size = defaultdict(set)  # the size measured at the most SM counts: the SM sweep
        for r in sel:
            if r["sms"] > 0:
                by_size[r["bytes"]].add(r["sms"])
        size = max(by_size, key=lambda b: (len(by_size[b]), b), default=None)
        if size is not None and len(by_size[size]) >= 3:
            fig, axes = plt.subplots(2, 2, figsize=(14, 10), squeeze=False)
            for j, d in enumerate(("put", "get")):
                pick = [r for r in sel if r["bytes"] == size and r["sms"] > 0 and direction(r["op"]) == d]
                draw(axes[0][j], pick, "sms", "gbps")
                per_sm = [dict(r, **{"gbps_" + k: r["gbps_" + k] / r["sms"] for k in ("min", "median", "max")})
                          for r in pick]
                draw(axes[1][j], per_sm, "sms", "gbps")
                if ceil:
                    axes[0][j].axhline(ceil, color="k", linewidth=0.8, linestyle=":",
                                       label="cudaMemcpy D2D ceiling %.0f GB/s" % ceil)
                for i, ylabel in enumerate(("bandwidth (GB/s, payload)", "bandwidth per SM (GB/s)")):
                    axes_style(axes[i][j], "SMs (one CTA per SM)", ylabel,
                               "%s of %s, %d PE(s)" % (d, size_label(size), pes), sizes=False)
                    axes[i][j].set_xticks(sorted(by_size[size]))
                    axes[i][j].xaxis.set_major_formatter(FuncFormatter(lambda v, _p: "%d" % v))
                    axes[i][j].xaxis.set_minor_formatter(FuncFormatter(lambda v, _p: ""))
            save(fig, out, "bw_vs_sms_np%d.png" % pes, made)
        plot_ratio(sel, pes, out, made)


def best_alternative(sel, r, copy_engine):
    """The best median GB/s at r's size and direction among the alternatives: the copy engine
    (cudaMemcpy), or the SM-driven ones at r's SM count (the plain SM copy, NVSHMEM's ops)."""
    def alternative(q):
        if q["bytes"] != r["bytes"] or direction(q["op"]) != direction(r["op"]):
            return False
        if copy_engine:
            return q["op"].startswith("memcpy")
        return q["op"] not in COPY_ENGINE and q["sms"] == r["sms"] and (
            q["runtime"] != "tmashmem" or q["op"].startswith("smcopy"))
    return max([q["gbps_median"] for q in sel if alternative(q)] or [0.0])


def plot_ratio(sel, pes, out, made):
    mine = [r for r in sel if r["runtime"] == "tmashmem" and r["sms"] > 0 and not r["op"].startswith("smcopy")]
    sm_counts = swept_sms(mine)
    if not sm_counts:
        return
    fig, axes = plt.subplots(2, len(sm_counts), figsize=(7 * len(sm_counts), 10), squeeze=False)
    for col, sms in enumerate(sm_counts):
        for row_i, (engine, what) in enumerate(((False, "max(SM copy, NVSHMEM) at %d SMs" % sms),
                                                (True, "cudaMemcpy (copy engine, no SMs)"))):
            ax = axes[row_i][col]
            groups = defaultdict(list)
            for r in mine:
                best = best_alternative(sel, r, engine) if r["sms"] == sms else 0
                if best > 0:
                    groups[r["op"]].append((r["bytes"], r["gbps_median"] / best))
            for op, pts in sorted(groups.items()):
                pts.sort()
                put = direction(op) == "put"
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o" if put else "^",
                        markersize=5, linestyle="-" if put else "--", color=color(op),
                        label="tmashmem %s" % op)
            ax.axhline(1.0, color="k", linewidth=0.8, linestyle=":")
            axes_style(ax, "message size (bytes)", "ratio (x)",
                       "%d SMs, %d PE(s): tmashmem over %s" % (sms, pes, what))
    save(fig, out, "ratio_vs_size_np%d.png" % pes, made)


def plot_others(rows, out, made):
    pp = [r for r in rows if r["test"] == "pingpong"]
    lat = [r for r in rows if r["test"] == "msg_lat"]
    if pp or lat:
        fig, axes = plt.subplots(1, 2, figsize=(14, 5.5), squeeze=False)
        for ax, sel, title in ((axes[0][0], pp, "ping-pong round trip (median per round trip)"),
                               (axes[0][1], lat, "one-sided latency: op + quiet, one thread")):
            draw(ax, sel, "bytes", "time_us")
            axes_style(ax, "message size (bytes)", "time (microseconds)", title, log_y=True)
        save(fig, out, "latency_vs_size.png", made)
    rate = [r for r in rows if r["test"] == "msg_rate"]
    if rate:
        fig, ax = plt.subplots(figsize=(9, 5.5))
        for r in rate:
            r["mops_min"] = r["mops_max"] = r["mops_median"]
        draw(ax, rate, "bytes", "mops", lambda rt, op, r: "%s %s (%d CTAs x %d thr)" %
             (rt, op, r["sms"], r["threads"]), group=("runtime", "op", "sms"))
        axes_style(ax, "message size (bytes)", "message rate (million messages / s)",
                   "message rate inside one persistent kernel", log_y=True)
        save(fig, out, "msg_rate.png", made)
    bar = [r for r in rows if r["test"] == "barrier"]
    if bar:
        fig, ax = plt.subplots(figsize=(9, 5.5))
        draw(ax, bar, "pes", "time_us", lambda rt, op, r: "%s %s (%d CTA(s) per PE)" % (rt, op, r["sms"]),
             group=("runtime", "op", "sms"))
        ax.set_xticks(sorted({r["pes"] for r in bar}))
        axes_style(ax, "PEs (under MPS; PEs share the GPUs of one node)", "time per barrier (microseconds)",
                   "device barrier latency, back to back in one kernel", log_x=False, sizes=False)
        save(fig, out, "barrier.png", made)


def summary(rows, out):
    """tmashmem / NVSHMEM for every row both measured (time for latencies, GB/s otherwise),
    and the failed checks."""
    lines = ["cudaMemcpy D2D ceiling: %.1f GB/s payload" % ceiling(rows), "",
             "tmashmem beside nvshmem, same test, op, PEs, SMs, threads and size (median):"]
    nv = {(r["test"], r["op"], r["pes"], r["sms"], r["threads"], r["bytes"]): r
          for r in rows if r["runtime"] == "nvshmem"}
    for r in rows:
        # The same op, else the longest NVSHMEM op this one is a variant of (signal_relaxed:
        # signal).
        ops = [r["op"][:i] for i in range(len(r["op"]), 0, -1) if r["op"][i:i + 1] in ("", "_")]
        q = next((nv[k] for k in ((r["test"], op, r["pes"], r["sms"], r["threads"], r["bytes"])
                                  for op in ops) if k in nv), None)
        if r["runtime"] != "tmashmem" or q is None:
            continue
        timed = r["test"] in ("pingpong", "barrier", "msg_lat") or r["gbps_median"] <= 0
        a, b = (r["time_us_median"], q["time_us_median"]) if timed else (r["gbps_median"], q["gbps_median"])
        lines.append("  %-9s %-22s np%d %3d SMs %5s: %10.4g / %10.4g %s = %.3f (nvshmem %s)" %
                     (r["test"], r["op"], r["pes"], r["sms"], size_label(r["bytes"]), a, b,
                      "us" if timed else "GB/s", a / b if b else 0.0, q["op"]))
    bad = [r for r in rows if r["check"] not in ("ok", "n/a", "")]
    lines.append("")
    lines += ["FAILED destination check: %s %s %s np%d %d SMs %d B: %s" %
              (r["runtime"], r["test"], r["op"], r["pes"], r["sms"], r["bytes"], r["check"]) for r in bad]
    if not bad:
        lines.append("every measured destination checked OK (%d rows)" % len(rows))
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the PNGs and the summary")
    ap.add_argument("csv", nargs="+", help="CSV files written by tmashmem-perf / perf_nvshmem")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = load([p for p in args.csv if os.path.exists(p) and os.path.getsize(p) > 0])
    if not rows:
        print("plot.py: no rows in %s" % ", ".join(args.csv), file=sys.stderr)
        return 1
    made = []
    plot_bw(rows, args.out, made)
    plot_others(rows, args.out, made)
    summary(rows, args.out)
    for name in made:
        print("plot.py: wrote %s" % os.path.join(args.out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
