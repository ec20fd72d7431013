#!/usr/bin/env python3
"""Summarizes the per-slot phase table that a -DHERD_DIAG_ADDNORM_PHASES build prints at exit
(gemv_add_norm_diag.cuh): the median over launch slots of each column.

Usage: addnorm_phases_summary.py STDERR_FILE

Slots are split in two groups by their dot-product phase (below / above half the largest), which
separates a model's Q/K/V launches from its gate/up launches where both carry the norm. Columns,
in us:
  phases 0-1 .. 6-7: entry -> release -> x/y loaded -> barrier -> quantized -> norm done -> dots
                     done -> rows stored;
  L:                 the producer's copies landed, relative to the release;
  span:              first release -> last CTA's end;
  w0 chunks:         warp 0's chunks 0-3, as "wait returned / rows done", relative to the release.
"""
import re
import statistics
import sys


def parse(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.split("|")
            head = parts[0].split()
            if len(parts) < 4 or not head or not head[0].isdigit():
                continue
            phases = [float(x) for x in head[1:8]]
            chunks = []
            rest = parts[1:]
            if "chunks" in parts[1]:
                chunks = [float(x) for x in re.findall(r"-?[0-9]+\.[0-9]+", parts[1])]
                rest = parts[2:]
            rows.append((phases + [float(rest[0]), float(rest[1])], chunks))
    return rows


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = parse(sys.argv[1])
    if not rows:
        sys.exit(f"{sys.argv[1]}: no phase rows (was the binary built with -DHERD_DIAG_ADDNORM_PHASES?)")
    top = max(r[0][5] for r in rows)
    for name, group in (("short", [r for r in rows if r[0][5] < top / 2]),
                        ("long", [r for r in rows if r[0][5] >= top / 2])):
        if not group:
            continue
        med = [statistics.median(c) for c in zip(*[g[0] for g in group])]
        line = (f"{name:5s} slots={len(group):2d} phases " + " ".join(f"{x:5.2f}" for x in med[:7]) +
                f" | L {med[7]:5.2f} | span {med[8]:6.2f}")
        chunks = [g[1] for g in group if g[1]]
        if chunks:
            cm = [statistics.median(c) for c in zip(*chunks)]
            line += " | w0 chunks " + " ".join(f"{cm[i]:5.2f}/{cm[i + 1]:5.2f}" for i in range(0, len(cm) - 1, 2))
        print(line)


if __name__ == "__main__":
    main()
