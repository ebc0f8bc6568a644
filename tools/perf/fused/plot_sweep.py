#!/usr/bin/env python3
"""The communication sweep of tmashmem-fused-bench as an SVG plot and a Markdown table.

    python3 tools/perf/fused/plot_sweep.py --svg OUT.svg bench.np1.log bench.np2.log ...

Reads the bench's "csv,<title>,<PEs>,<median ms>,<ratio to gemm only>,<variant>" lines and
plots, per all-gather shape and PE count, the ratio to "gemm only" of each copier setting:
the GEMM CTAs' idle producer warps ("warps", no SM taken) and 1 .. 16 dedicated copy SMs,
with the unfused sequence as a dashed line. Prints the table to stdout. Standard library only.
"""
import argparse
import re
import sys
from collections import OrderedDict

SETTINGS = [("warps", "fused, copy warps")] + [
    (str(n), "fused, %d copy SMs" % n) for n in (1, 2, 4, 8, 16)
]
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf",
           "#e377c2", "#7f7f7f", "#bcbd22", "#393b79", "#637939"]


def read(paths):
    rows = OrderedDict()  # (title, pes) -> {variant: ratio}
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                if not line.startswith("csv,"):
                    continue
                parts = line.strip().split(",", 5)
                if len(parts) != 6 or not parts[1].startswith("allgather"):
                    continue
                _, title, pes, _ms, ratio, variant = parts
                rows.setdefault((title, int(pes)), {})[variant] = float(ratio)
    return rows


def svg(rows, path):
    w, h, left, right, top, bottom = 760, 420, 60, 250, 20, 50
    xs = [left + i * (w - left - right) / (len(SETTINGS) - 1) for i in range(len(SETTINGS))]
    lo, hi = 0.3, 1.1
    y = lambda r: top + (hi - min(max(r, lo), hi)) / (hi - lo) * (h - top - bottom)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif"'
           ' font-size="11">' % (w, h), '<rect width="100%" height="100%" fill="white"/>']
    for t in (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1):
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' %
                   (left, w - right, y(t), y(t)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>' % (left - 6, y(t) + 4, t))
    for x, (label, _) in zip(xs, SETTINGS):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, h - bottom + 18, label))
    out.append('<text x="%d" y="%d" text-anchor="middle">copiers: the GEMM CTAs\' idle warps, or '
               'N dedicated copy SMs</text>' % ((left + w - right) / 2, h - 12))
    out.append('<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">'
               'gemm-only time / fused time</text>' % ((top + h - bottom) / 2, (top + h - bottom) / 2))
    for i, ((title, pes), ratios) in enumerate(rows.items()):
        colour = COLOURS[i % len(COLOURS)]
        pts = [(x, y(ratios[v])) for x, (_, v) in zip(xs, SETTINGS) if v in ratios]
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' %
                   (colour, " ".join("%.1f,%.1f" % p for p in pts)))
        for p in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (p[0], p[1], colour))
        if "unfused" in ratios:
            out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="4 3"/>'
                       % (left, w - right, y(ratios["unfused"]), y(ratios["unfused"]), colour))
        ly = top + 14 + i * 16
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>' %
                   (w - right + 12, w - right + 32, ly - 4, ly - 4, colour))
        out.append('<text x="%d" y="%d">%d PE%s, %s</text>' %
                   (w - right + 38, ly, pes, "" if pes == 1 else "s", title.split(" ", 1)[1]))
    ly = top + 14 + len(rows) * 16 + 8
    out.append('<text x="%d" y="%d">dashed: unfused, same colour</text>' % (w - right + 12, ly))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--svg", required=True)
    ap.add_argument("logs", nargs="+")
    args = ap.parse_args()
    rows = read(args.logs)
    if not rows:
        sys.exit("no all-gather csv lines in %s" % ", ".join(args.logs))
    svg(rows, args.svg)
    print("| PEs | shape (M x N_local x K) | " + " | ".join(l for l, _ in SETTINGS) + " | unfused |")
    print("|---" * (len(SETTINGS) + 3) + "|")
    for (title, pes), r in rows.items():
        cells = ["%.2f" % r[v] if v in r else "-" for _, v in SETTINGS + [("", "unfused")]]
        print("| %d | %s | %s |" % (pes, title.split(" ", 1)[1], " | ".join(cells)))


if __name__ == "__main__":
    main()
