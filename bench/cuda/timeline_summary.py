#!/usr/bin/env python3
"""Summarises a kernel timeline (bench/cuda/kernel_timeline.cc CSV) of a decode benchmark.

Takes the CUDA graph launched most often (the decode step of `herd bench-model -p 0`), drops its
first WARMUP launches, and reports per launch (= one step):
  - the step's GPU span (first kernel start -> last kernel end) and the host gap between steps;
  - per kernel name: launches per step, mean duration (start -> end, which for a PDL-launched
    kernel includes its wait on the previous one) and mean *marginal* time: how far the kernel
    moves the step's completion frontier (end_i - end_{i-1} in launch order). Marginal times add
    up to the span, so they attribute in-graph time without double counting overlaps;
  - the nodes of the median step, in order (first NODES of them), with offsets from the step's
    start, to see one layer's pipeline.
Usage: timeline_summary.py CSV [--warmup 2] [--nodes 40] [--graph GRAPH_ID]
"""
import argparse
import signal
import collections
import csv
import re
import statistics


def short_name(name: str) -> str:
    n = name.replace("void ", "").replace("(anonymous namespace)::", "")
    # Drop the argument list: the last top-level parenthesised group.
    depth = 0
    for i in range(len(n) - 1, -1, -1):
        if n[i] == ")":
            depth += 1
        elif n[i] == "(":
            depth -= 1
            if depth == 0:
                n = n[:i]
                break
    n = re.sub(r"\b[A-Za-z_]\w*::", "", n)  # namespaces and classes
    n = re.sub(r"\(DType\)(\d+)", r"T\1", n)
    return n.strip()


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--nodes", type=int, default=40)
    ap.add_argument("--graph", type=int, default=None)
    a = ap.parse_args()

    rows = list(csv.DictReader(open(a.csv)))
    graph_rows = [r for r in rows if int(r["graph_id"]) != 0]
    if not graph_rows:
        print(f"{a.csv}: {len(rows)} kernels, none from a CUDA graph")
        return
    # Steps: a graph's kernels in start order, a new step wherever a node id repeats (does not
    # rely on how CUPTI sets correlation ids for graph launches).
    nodes_of = collections.defaultdict(list)
    for r in graph_rows:
        nodes_of[int(r["graph_id"])].append(
            (int(r["start_ns"]), int(r["end_ns"]), short_name(r["name"]), r["grid_x"], int(r["graph_node_id"])))
    split = {}
    for g, ks in nodes_of.items():
        ks.sort()
        cur, seen, out = [], set(), []
        for k in ks:
            if k[4] in seen:
                out.append(cur)
                cur, seen = [], set()
            cur.append(k[:4])
            seen.add(k[4])
        if cur:
            out.append(cur)
        split[g] = out
    by_graph = {g: len(v) for g, v in split.items()}
    gid = a.graph if a.graph is not None else max(by_graph, key=by_graph.get)
    steps = split[gid]
    steps = steps[a.warmup:]
    if not steps:
        print("no steps after warm-up")
        return
    spans = [max(x[1] for x in s) - s[0][0] for s in steps]
    gaps = [steps[i + 1][0][0] - max(x[1] for x in steps[i]) for i in range(len(steps) - 1)]
    print(f"graph {gid}: {len(steps)} steps after {a.warmup} warm-up, {len(steps[0])} kernels per step "
          f"(graphs seen: {dict(by_graph)})")
    print(f"step GPU span: median {statistics.median(spans) / 1e3:.1f} us; host gap between steps: "
          f"median {statistics.median(gaps) / 1e3 if gaps else 0:.1f} us")

    dur = collections.defaultdict(float)
    marg = collections.defaultdict(float)
    cnt = collections.Counter()
    for s in steps:
        frontier = s[0][0]
        for start, end, name, _ in s:
            dur[name] += end - start
            marg[name] += max(0, end - frontier)
            frontier = max(frontier, end)
            cnt[name] += 1
    n = len(steps)
    total = sum(marg.values()) / n
    print(f"{'kernel':60s} {'per step':>8s} {'mean us':>8s} {'marginal us/step':>16s} {'share':>6s}")
    for name, m in sorted(marg.items(), key=lambda kv: -kv[1]):
        c = cnt[name] / n
        print(f"{name[:60]:60s} {c:8.1f} {dur[name] / cnt[name] / 1e3:8.2f} {m / n / 1e3:16.1f} "
              f"{100 * m / n / total:5.1f}%")
    med = sorted(range(n), key=lambda i: spans[i])[n // 2]
    s = steps[med]
    t0 = s[0][0]
    print(f"median step ({spans[med] / 1e3:.1f} us), first {a.nodes} nodes: start / end us from the step's start, "
          f"marginal us")
    frontier = t0
    for i, (start, end, name, grid) in enumerate(s[:a.nodes]):
        print(f"  {i:3d} {name[:56]:56s} grid {grid:>6s} {(start - t0) / 1e3:8.2f} {(end - t0) / 1e3:8.2f} "
              f"{max(0, end - frontier) / 1e3:7.2f}")
        frontier = max(frontier, end)


if __name__ == "__main__":
    main()
