#!/usr/bin/env python3
"""Plots and a summary from tmashmem-perf / perf_nvshmem CSV files.

    python3 tools/perf/plot.py --out DIR perf_tmashmem.csv [perf_nvshmem.csv ...]

Writes into DIR:
  bw_vs_size_np<N>.png     GB/s vs message size, put and get, at each SM count
  bw_vs_sms_np<N>.png      GB/s vs SM count at the largest size (and GB/s per SM)
  latency_vs_size.png      ping-pong round trip and one-sided op+quiet latency vs size
  ratio_vs_size_np<N>.png  each tmashmem op over the best alternative at that point: the
                           SM-driven ones at the same SM count, and the copy engine
  msg_rate.png, barrier.png
  summary.txt / summary.md the issue targets read out of the numbers, and failed checks

Only the standard library and matplotlib (Agg backend) are used.
"""
import argparse
import csv
import math
import os
import sys
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

COPY_ENGINE = {"memcpy_put", "memcpy_get", "on_stream_put", "on_stream_get"}
STYLE = {"tmashmem": "-", "nvshmem": "--"}
MARK = {"tmashmem": "o", "nvshmem": "s"}
# One colour per operation, the same for both runtimes (the line style tells them apart).
COLORS = {"tile": "tab:red", "nbi": "tab:orange", "block": "tab:blue", "smcopy": "tab:green",
          "memcpy": "black", "on_stream": "tab:gray", "raw_st": "tab:gray", "p": "tab:purple",
          "put": "tab:blue", "put_signal": "tab:orange", "tile_put": "tab:red",
          "signal": "tab:green", "signal_relaxed": "tab:olive",
          "signal_relaxed_timeout": "tab:cyan",
          "put_signal_thread": "tab:brown", "barrier_all": "tab:blue", "sync_all": "tab:orange"}


def color(op):
    if op in COLORS:
        return COLORS[op]
    for suffix in ("_put", "_get"):
        if op.endswith(suffix) and op[: -len(suffix)] in COLORS:
            return COLORS[op[: -len(suffix)]]
    return None


def load(paths):
    """Rows keyed by everything but the measurements; a later file or row wins."""
    rows = OrderedDict()
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                for k in ("pes", "sms", "threads", "bytes", "iters", "reps"):
                    r[k] = int(r[k])
                for k in ("time_us_min", "time_us_median", "time_us_max", "gbps_min",
                          "gbps_median", "gbps_max", "mops_median", "ref_gbps",
                          "ratio_to_ref", "ceiling_d2d_gbps", "ceiling_peer_gbps"):
                    r[k] = float(r[k])
                key = (r["runtime"], r["test"], r["op"], r["pes"], r["sms"], r["threads"],
                       r["bytes"])
                rows[key] = r
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
    vals = [r["ceiling_d2d_gbps"] for r in rows if r["ceiling_d2d_gbps"] > 0]
    return max(vals) if vals else 0.0


def series(rows, key_fn, x_fn, y_fn):
    out = defaultdict(list)
    for r in rows:
        out[key_fn(r)].append((x_fn(r), y_fn(r), r))
    for k in out:
        out[k].sort(key=lambda t: t[0])
    return out


def errbars(pts):
    """Median with the min..max spread over repetitions as error bars."""
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    lo = [max(0.0, p[1] - p[2]["gbps_min"]) for p in pts]
    hi = [max(0.0, p[2]["gbps_max"] - p[1]) for p in pts]
    return xs, ys, [lo, hi]


def label(runtime, op):
    return "%s %s" % (runtime, op) if op not in COPY_ENGINE else "%s (%s)" % (op, runtime)


def plain_log_y(ax):
    """Log y axis with plain numbers (2, 5, 10) instead of powers of ten."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: "%g" % v))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _p: "%g" % v))
    ax.tick_params(axis="y", which="minor", labelsize=7)


def finish(fig, path, made):
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    made.append(path)


def plot_bw_vs_size(rows, out, made):
    bw = [r for r in rows if r["test"] == "bw"]
    for pes in sorted({r["pes"] for r in bw}):
        sel = [r for r in bw if r["pes"] == pes]
        sm_counts = sorted({r["sms"] for r in sel if r["sms"] > 0})
        # SM counts measured at several sizes (the size sweeps, not the SM sweep).
        sm_counts = [s for s in sm_counts
                     if len({r["bytes"] for r in sel if r["sms"] == s}) > 2]
        if not sm_counts:
            continue
        fig, axes = plt.subplots(len(sm_counts), 2, figsize=(14, 5 * len(sm_counts)),
                                 squeeze=False)
        ceil = ceiling(sel)
        for i, sms in enumerate(sm_counts):
            for j, d in enumerate(("put", "get")):
                ax = axes[i][j]
                pick = [r for r in sel if direction(r["op"]) == d and
                        (r["sms"] == sms or r["op"] in COPY_ENGINE)]
                # One copy-engine line per direction (tmashmem's run measured it too).
                pick = [r for r in pick if not (r["op"] in COPY_ENGINE and r["runtime"] != "tmashmem"
                                               and any(q["runtime"] == "tmashmem" and q["op"] == r["op"]
                                                       for q in sel))]
                for (rt, op), pts in sorted(series(pick, lambda r: (r["runtime"], r["op"]),
                                                   lambda r: r["bytes"],
                                                   lambda r: r["gbps_median"]).items()):
                    xs, ys, err = errbars(pts)
                    ax.errorbar(xs, ys, yerr=err, linestyle=STYLE.get(rt, "-"),
                                marker=MARK.get(rt, "o"), markersize=4, capsize=2,
                                color=color(op), label=label(rt, op))
                if ceil:
                    ax.axhline(ceil, color="k", linewidth=0.8, linestyle=":",
                               label="cudaMemcpy D2D ceiling %.0f GB/s" % ceil)
                ax.set_xscale("log", base=2)
                ax.xaxis.set_major_formatter(FuncFormatter(size_label))
                ax.set_xlabel("message size (bytes)")
                ax.set_ylabel("bandwidth (GB/s, payload)")
                ax.set_title("%s, %d SMs, %d PE%s" % (d, sms, pes, "s" if pes > 1 else ""))
                ax.grid(True, which="both", alpha=0.3)
                ax.legend(fontsize=7, loc="upper left")
        finish(fig, os.path.join(out, "bw_vs_size_np%d.png" % pes), made)


def plot_bw_vs_sms(rows, out, made):
    bw = [r for r in rows if r["test"] == "bw" and r["sms"] > 0]
    for pes in sorted({r["pes"] for r in bw}):
        sel = [r for r in bw if r["pes"] == pes]
        if not sel:
            continue
        # The size measured at the most SM counts (the SM sweep).
        by_size = defaultdict(set)
        for r in sel:
            by_size[r["bytes"]].add(r["sms"])
        size = max(by_size, key=lambda b: (len(by_size[b]), b))
        if len(by_size[size]) < 3:
            continue
        sel = [r for r in sel if r["bytes"] == size]
        ceil = ceiling(rows)
        fig, axes = plt.subplots(2, 2, figsize=(14, 10), squeeze=False)
        for j, d in enumerate(("put", "get")):
            pick = [r for r in sel if direction(r["op"]) == d]
            groups = series(pick, lambda r: (r["runtime"], r["op"]), lambda r: r["sms"],
                            lambda r: r["gbps_median"])
            for (rt, op), pts in sorted(groups.items()):
                xs, ys, err = errbars(pts)
                axes[0][j].errorbar(xs, ys, yerr=err, linestyle=STYLE.get(rt, "-"),
                                    marker=MARK.get(rt, "o"), markersize=4, capsize=2,
                                    color=color(op), label=label(rt, op))
                axes[1][j].plot(xs, [y / x for x, y in zip(xs, ys)], linestyle=STYLE.get(rt, "-"),
                                marker=MARK.get(rt, "o"), markersize=4, color=color(op),
                                label=label(rt, op))
            if ceil:
                axes[0][j].axhline(ceil, color="k", linewidth=0.8, linestyle=":",
                                   label="cudaMemcpy D2D ceiling %.0f GB/s" % ceil)
            for i, ylabel in enumerate(("bandwidth (GB/s, payload)", "bandwidth per SM (GB/s)")):
                ax = axes[i][j]
                ax.set_xscale("log", base=2)
                ax.set_xticks(sorted(by_size[size]))
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: "%d" % v))
                ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _p: ""))
                ax.set_xlabel("SMs (one CTA per SM)")
                ax.set_ylabel(ylabel)
                ax.set_title("%s of %s, %d PE%s" % (d, size_label(size), pes,
                                                    "s" if pes > 1 else ""))
                ax.grid(True, which="both", alpha=0.3)
                ax.legend(fontsize=7, loc="upper left")
        finish(fig, os.path.join(out, "bw_vs_sms_np%d.png" % pes), made)


def plot_latency(rows, out, made):
    pp = [r for r in rows if r["test"] == "pingpong"]
    lat = [r for r in rows if r["test"] == "msg_lat"]
    if not pp and not lat:
        return
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.5), squeeze=False)
    for ax, sel, title in ((axes[0][0], pp, "ping-pong round trip (median per round trip)"),
                           (axes[0][1], lat, "one-sided latency: op + quiet, one thread")):
        groups = series(sel, lambda r: (r["runtime"], r["op"]), lambda r: r["bytes"],
                        lambda r: r["time_us_median"])
        for (rt, op), pts in sorted(groups.items()):
            xs = [p[0] for p in pts]
            ys = [p[1] for p in pts]
            lo = [max(0.0, p[1] - p[2]["time_us_min"]) for p in pts]
            hi = [max(0.0, p[2]["time_us_max"] - p[1]) for p in pts]
            ax.errorbar(xs, ys, yerr=[lo, hi], linestyle=STYLE.get(rt, "-"),
                        marker=MARK.get(rt, "o"), markersize=4, capsize=2, color=color(op),
                        label="%s %s" % (rt, op))
        ax.set_xscale("log", base=2)
        plain_log_y(ax)
        ax.xaxis.set_major_formatter(FuncFormatter(size_label))
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("time (microseconds)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    finish(fig, os.path.join(out, "latency_vs_size.png"), made)


def best_alternative(rows, r, copy_engine):
    """The best GB/s at r's point (size, PEs, direction) among the alternatives: the copy
    engine (copy_engine=True), or the SM-driven ones at the same SM count (the plain SM
    copy and every NVSHMEM op)."""
    best, who = 0.0, ""
    for q in rows:
        if q["test"] != "bw" or q["pes"] != r["pes"] or q["bytes"] != r["bytes"]:
            continue
        if direction(q["op"]) != direction(r["op"]):
            continue
        if copy_engine:
            if q["op"] not in COPY_ENGINE or q["op"].startswith("on_stream"):
                continue
        elif q["op"] in COPY_ENGINE or q["sms"] != r["sms"] or not (
                q["runtime"] != "tmashmem" or q["op"].startswith("smcopy")):
            continue
        if q["gbps_median"] > best:
            best, who = q["gbps_median"], "%s %s" % (q["runtime"], q["op"])
    return best, who


def plot_ratio(rows, out, made):
    bw = [r for r in rows if r["test"] == "bw"]
    for pes in sorted({r["pes"] for r in bw}):
        mine = [r for r in bw if r["pes"] == pes and r["runtime"] == "tmashmem" and r["sms"] > 0
                and not r["op"].startswith("smcopy")]
        sm_counts = [s for s in sorted({r["sms"] for r in mine})
                     if len({r["bytes"] for r in mine if r["sms"] == s}) > 2]
        if not sm_counts:
            continue
        fig, axes = plt.subplots(2, len(sm_counts), figsize=(7 * len(sm_counts), 10),
                                 squeeze=False)
        for col, sms in enumerate(sm_counts):
            pick = [r for r in mine if r["sms"] == sms]
            for row_i, (engine, what) in enumerate(
                    ((False, "max(SM copy, NVSHMEM) at %d SMs" % sms),
                     (True, "cudaMemcpy (copy engine, no SMs)"))):
                ax = axes[row_i][col]
                groups = defaultdict(list)
                for r in pick:
                    best, _ = best_alternative(rows, r, engine)
                    if best > 0:
                        groups[r["op"]].append((r["bytes"], r["gbps_median"] / best))
                for op, pts in sorted(groups.items()):
                    pts.sort()
                    ax.plot([p[0] for p in pts], [p[1] for p in pts],
                            marker="o" if direction(op) == "put" else "^", markersize=5,
                            linestyle="-" if direction(op) == "put" else "--",
                            color=color(op), label="tmashmem %s" % op)
                ax.axhline(1.0, color="k", linewidth=0.8, linestyle=":")
                ax.set_xscale("log", base=2)
                ax.xaxis.set_major_formatter(FuncFormatter(size_label))
                ax.set_xlabel("message size (bytes)")
                ax.set_ylabel("ratio (x)")
                ax.set_title("%d SMs, %d PE%s: tmashmem over %s" %
                             (sms, pes, "s" if pes > 1 else "", what), fontsize=10)
                ax.grid(True, which="both", alpha=0.3)
                ax.legend(fontsize=8)
        finish(fig, os.path.join(out, "ratio_vs_size_np%d.png" % pes), made)


def plot_msg_rate(rows, out, made):
    sel = [r for r in rows if r["test"] == "msg_rate"]
    if not sel:
        return
    fig, ax = plt.subplots(figsize=(9, 5.5))
    groups = series(sel, lambda r: (r["runtime"], r["op"], r["sms"]), lambda r: r["bytes"],
                    lambda r: r["mops_median"])
    for (rt, op, sms), pts in sorted(groups.items()):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle=STYLE.get(rt, "-"),
                marker=MARK.get(rt, "o"), markersize=5, color=color(op),
                label="%s %s (%d CTAs x %d thr)" % (rt, op, sms, pts[0][2]["threads"]))
    ax.set_xscale("log", base=2)
    plain_log_y(ax)
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("message rate (million messages / s)")
    ax.set_title("message rate inside one persistent kernel")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    finish(fig, os.path.join(out, "msg_rate.png"), made)


def plot_barrier(rows, out, made):
    sel = [r for r in rows if r["test"] == "barrier"]
    if not sel:
        return
    fig, ax = plt.subplots(figsize=(9, 5.5))
    groups = series(sel, lambda r: (r["runtime"], r["op"], r["sms"]), lambda r: r["pes"],
                    lambda r: r["time_us_median"])
    for (rt, op, sms), pts in sorted(groups.items()):
        ax.plot([p[0] for p in pts], [p[1] for p in pts],
                linestyle=STYLE.get(rt, "-") if sms == 1 else ":", marker=MARK.get(rt, "o"),
                markersize=5, color=color(op),
                label="%s %s (%d CTA%s per PE)" % (rt, op, sms, "s" if sms > 1 else ""))
    ax.set_xlabel("PEs (under MPS; PEs share the GPUs of one node)")
    ax.set_ylabel("time per barrier (microseconds)")
    ax.set_xticks(sorted({r["pes"] for r in sel}))
    ax.set_title("device barrier latency, back to back in one kernel")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    finish(fig, os.path.join(out, "barrier.png"), made)


def find(rows, **kw):
    for r in rows:
        if all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def best_placement(lines, tm, nv, tm_name, nv_name):
    """A round trip's fastest repetition beside its median. Each repetition waits on
    another flag address (perf_driver.cuh); on an H200 the round trip takes one of two
    modes by where the flag sits in the L2, so a median depends on how many repetitions
    drew the slow one, and the minimum compares both runtimes at their best placement."""
    if tm and nv and nv["time_us_min"] > 0 and nv["time_us_median"] > 0:
        lines.append("  %s / nvshmem %s: median %.3f / %.3f us (%.3f), fastest repetition "
                     "%.3f / %.3f us (%.3f), slowest %.3f / %.3f us" %
                     (tm_name, nv_name, tm["time_us_median"], nv["time_us_median"],
                      tm["time_us_median"] / nv["time_us_median"], tm["time_us_min"],
                      nv["time_us_min"], tm["time_us_min"] / nv["time_us_min"],
                      tm["time_us_max"], nv["time_us_max"]))


def summary(rows, out):
    lines = []
    ceil = ceiling(rows)
    lines.append("cudaMemcpy D2D ceiling: %.1f GB/s payload" % ceil)
    bw = [r for r in rows if r["test"] == "bw"]
    big = max((r["bytes"] for r in bw), default=0)
    all_sms = max((r["sms"] for r in bw), default=0)
    pes = 2 if any(r["pes"] == 2 for r in bw) else 1
    verdicts = []

    def target(name, value, goal, higher=True):
        ok = value is not None and (value >= goal if higher else value <= goal)
        shown = "n/a" if value is None else "%.3f" % value
        verdicts.append("%-64s %8s  target %s %.2f  %s" %
                        (name, shown, ">=" if higher else "<=", goal,
                         "MET" if ok else ("NOT MEASURED" if value is None else "MISSED")))

    if big:
        lines.append("bandwidth at %s, %d PEs (PE 0 -> PE 1):" % (size_label(big), pes))
        for sms in sorted({r["sms"] for r in bw if r["bytes"] == big and r["sms"] in (16, all_sms)}):
            row_line = []
            for rt in ("tmashmem", "nvshmem"):
                for op in ("tile_put", "tile_get", "nbi_put", "nbi_get", "block_put",
                           "block_get", "smcopy_put"):
                    r = find(bw, runtime=rt, op=op, sms=sms, bytes=big, pes=pes)
                    if r:
                        row_line.append("%s %s %.0f" % (rt[:2], op, r["gbps_median"]))
            lines.append("  %3d SMs: %s" % (sms, ", ".join(row_line)))
        nv_all = find(bw, runtime="nvshmem", op="block_put", sms=all_sms, bytes=big, pes=pes)
        nv_16 = find(bw, runtime="nvshmem", op="block_put", sms=16, bytes=big, pes=pes)
        for op in ("tile_put", "tile_get"):
            r = find(bw, runtime="tmashmem", op=op, sms=all_sms, bytes=big, pes=pes)
            target("%s, %d SMs, %s: / cudaMemcpy D2D ceiling" % (op, all_sms, size_label(big)),
                   r["gbps_median"] / ceil if r and ceil else None, 0.9)
            target("%s, %d SMs, %s: / nvshmemx_putmem_block (%d SMs)" %
                   (op, all_sms, size_label(big), all_sms),
                   r["gbps_median"] / nv_all["gbps_median"] if r and nv_all else None, 1.1)
            r16 = find(bw, runtime="tmashmem", op=op, sms=16, bytes=big, pes=pes)
            target("%s, 16 SMs, %s: / nvshmemx_putmem_block (16 SMs)" % (op, size_label(big)),
                   r16["gbps_median"] / nv_16["gbps_median"] if r16 and nv_16 else None, 1.45)
            if r16:
                lines.append("  %s at 16 SMs: %.1f GB/s per SM" % (op, r16["gbps_median"] / 16))
    # NVSHMEM's nvshmemx_signal_op orders nothing (a plain store to a P2P peer), so the
    # like-for-like comparison is tmashmem's signal_op_relaxed; signal_op adds a release.
    pp_nv = find(rows, runtime="nvshmem", test="pingpong", op="signal")
    pp_rel = find(rows, runtime="tmashmem", test="pingpong", op="signal_relaxed")
    pp_tm = find(rows, runtime="tmashmem", test="pingpong", op="signal")
    pp_rel_t = find(rows, runtime="tmashmem", test="pingpong", op="signal_relaxed_timeout")
    us = lambda r: "%.3f" % r["time_us_median"] if r else "n/a"
    if pp_tm or pp_nv or pp_rel:
        lines.append("signal ping-pong round trip (median): tmashmem signal_op_relaxed %s us, "
                     "signal_op (release) %s us; nvshmem signal_op %s us" %
                     (us(pp_rel), us(pp_tm), us(pp_nv)))
        target("signal ping-pong: tmashmem signal_op_relaxed / nvshmem signal_op",
               pp_rel["time_us_median"] / pp_nv["time_us_median"] if pp_rel and pp_nv else None,
               1.0, higher=False)
        if pp_tm and pp_nv:
            lines.append("  (signal_op with release / nvshmem signal_op: %.3f, for reference)" %
                         (pp_tm["time_us_median"] / pp_nv["time_us_median"]))
        best_placement(lines, pp_rel, pp_nv, "signal_op_relaxed", "signal_op")
        if pp_rel_t and pp_nv:
            lines.append("  (signal_op_relaxed + signal_wait_until with a timeout: %.3f us, %.3f x "
                         "nvshmem signal_op, whose wait has none)" %
                         (pp_rel_t["time_us_median"],
                          pp_rel_t["time_us_median"] / pp_nv["time_us_median"]))
    # put_signal from one thread: both runtimes order the data before the signal.
    ps_tm = find(rows, runtime="tmashmem", test="pingpong", op="put_signal_thread")
    ps_nv = find(rows, runtime="nvshmem", test="pingpong", op="put_signal_thread")
    if ps_tm or ps_nv:
        lines.append("put_signal (one thread, 8 B) ping-pong: tmashmem put_signal %s us; "
                     "nvshmem putmem_signal %s us" % (us(ps_tm), us(ps_nv)))
        target("put_signal ping-pong, one thread: tmashmem / nvshmem putmem_signal",
               ps_tm["time_us_median"] / ps_nv["time_us_median"] if ps_tm and ps_nv else None,
               1.0, higher=False)
        best_placement(lines, ps_tm, ps_nv, "put_signal", "putmem_signal")
    for size in sorted({r["bytes"] for r in rows
                        if r["test"] == "pingpong" and r["op"] == "put_signal"}):
        a = find(rows, runtime="tmashmem", test="pingpong", op="put_signal", bytes=size)
        b = find(rows, runtime="nvshmem", test="pingpong", op="put_signal", bytes=size)
        if a and b:
            lines.append("put_signal_block ping-pong %7s: tmashmem %.3f us, nvshmem %.3f us "
                         "(%.3f)" % (size_label(size), a["time_us_median"], b["time_us_median"],
                                     a["time_us_median"] / b["time_us_median"]))
    for r in sorted((r for r in rows if r["test"] == "barrier"),
                    key=lambda r: (r["op"], r["pes"], r["sms"], r["runtime"])):
        lines.append("barrier %-12s %d PEs, %3d CTA(s): %-8s %.3f us" %
                     (r["op"], r["pes"], r["sms"], r["runtime"], r["time_us_median"]))
    bad = [r for r in rows if r["check"] not in ("ok", "n/a", "")]
    lines.append("")
    lines.extend(verdicts)
    lines.append("")
    if bad:
        lines.append("FAILED destination checks:")
        for r in bad:
            lines.append("  %s %s %s np%d %d SMs %d B: %s" %
                         (r["runtime"], r["test"], r["op"], r["pes"], r["sms"], r["bytes"],
                          r["check"]))
    else:
        lines.append("every measured destination checked OK (%d rows)" % len(rows))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("```\n" + text + "```\n")
    return not bad


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
    plot_bw_vs_size(rows, args.out, made)
    plot_bw_vs_sms(rows, args.out, made)
    plot_latency(rows, args.out, made)
    plot_ratio(rows, args.out, made)
    plot_msg_rate(rows, args.out, made)
    plot_barrier(rows, args.out, made)
    summary(rows, args.out)
    for p in made:
        print("plot.py: wrote %s" % p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
