#!/usr/bin/env bash
# Where a decode step's GPU time goes: runs `herd bench-model -p 0 -n 24 -r 1` under ncu (on the
# device machine, binaries in $DEV as for device_run.sh), skips SKIP kernel launches (default
# 3500: model warm-up and the first decode steps), profiles the next COUNT (default 1000, a few
# CUDA-graph-replayed decode steps) and prints per kernel: launches and µs per step (steps =
# launches of GatherRowsKernel, one per step), share of the kernel time. ncu serialises
# kernels, so PDL overlap and launch gaps are not in these numbers: compare their sum with the
# measured time per token.
# Usage: bench/cuda/kernel_profile.sh SHAPE TYPE [SKIP] [COUNT] [CONC]  (model from device_run.sh)
# With CONC: `herd bench-engine` with CONC sequences of 512 prompt / 64 generated tokens instead
# (greedy; prefill steps first, then CONC-token decode steps; steps = GatherRows launches).
set -uo pipefail
DEV="${DEV:-.dev-main}"
OUT="${OUT:-/tmp/out}"
export LD_LIBRARY_PATH="$DEV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
m="/tmp/models/$1-$2.gguf"
csv="$OUT/ncu-$1-$2.csv"
if [ -n "${5:-}" ]; then
  run=("$DEV/herd" bench-engine -m "$m" --device cuda --requests "$5" --concurrency "$5" --prompt-len 512 --gen-len 64
       --batch-tokens 8192)
else
  run=("$DEV/herd" bench-model -m "$m" --device cuda -p 0 -n 24 -r 1)
fi
ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip "${3:-3500}" \
  --launch-count "${4:-1000}" "${run[@]}" >"$csv" 2>/dev/null
python3 - "$csv" "$1-$2" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr, rows = rows[0], rows[1:]
ki, vi, ui = hdr.index("Kernel Name"), hdr.index("Metric Value"), hdr.index("Metric Unit")
tot, cnt = collections.Counter(), collections.Counter()
for r in rows:
    name = r[ki].replace("void ", "").replace("(anonymous namespace)", "").replace("<unnamed>", "")
    name = name[:name.find("(")] if "(" in name else name
    name = name.split("<")[0] + " " + r[hdr.index("Grid Size")]
    v = float(r[vi].replace(",", ""))
    v = v / 1000 if r[ui] in ("ns", "nsecond") else v * 1000 if r[ui] in ("ms", "msecond") else v  # -> us
    tot[name] += v
    cnt[name] += 1
steps = max(1, sum(c for n, c in cnt.items() if "GatherRows" in n))
all_us = sum(tot.values())
print(f"{sys.argv[2]}: {len(rows)} kernels profiled, {steps} steps: {len(rows) / steps:.0f} kernels and "
      f"{all_us / steps:.0f} us of kernel time per step")
for name, v in tot.most_common():
    print(f"  {name[:48]:48s} {cnt[name] / steps:6.1f} x {v / steps:8.1f} us {100 * v / all_us:5.1f}%")
PY
