#!/usr/bin/env bash
# Where a decode step's GPU time goes: runs `herd bench-model -p 0 -n 24 -r 1` under ncu (on the
# device machine, binaries in $DEV as for device_run.sh), skips SKIP kernel launches (default
# 3500: model warm-up and the first decode steps), profiles the next COUNT (default 1000, a few
# CUDA-graph-replayed decode steps) and prints per kernel: launches and µs per step (steps =
# launches of the ArgMax kernel, one per step), share of the kernel time. ncu serialises
# kernels, so PDL overlap and launch gaps are not in these numbers: compare their sum with the
# measured time per token.
# Usage: bench/cuda/kernel_profile.sh SHAPE TYPE [SKIP] [COUNT]  (model from device_run.sh)
set -uo pipefail
DEV="${DEV:-.dev-main}"
OUT="${OUT:-/tmp/out}"
export LD_LIBRARY_PATH="$DEV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
m="/tmp/models/$1-$2.gguf"
csv="$OUT/ncu-$1-$2.csv"
ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip "${3:-3500}" \
  --launch-count "${4:-1000}" "$DEV/herd" bench-model -m "$m" --device cuda -p 0 -n 24 -r 1 >"$csv" 2>/dev/null
python3 - "$csv" "$1-$2" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr, rows = rows[0], rows[1:]
ki, vi, ui = hdr.index("Kernel Name"), hdr.index("Metric Value"), hdr.index("Metric Unit")
tot, cnt = collections.Counter(), collections.Counter()
for r in rows:
    name = r[ki].split("(")[0].split("<")[0].replace("void ", "")
    v = float(r[vi].replace(",", ""))
    v = v / 1000 if r[ui] == "nsecond" else v * 1000 if r[ui] == "msecond" else v  # -> usecond
    tot[name] += v
    cnt[name] += 1
steps = max(1, sum(c for n, c in cnt.items() if "ArgMax" in n))
all_us = sum(tot.values())
print(f"{sys.argv[2]}: {len(rows)} kernels profiled, {steps} steps: {len(rows) / steps:.0f} kernels and "
      f"{all_us / steps:.0f} us of kernel time per step")
for name, v in tot.most_common():
    print(f"  {name[:48]:48s} {cnt[name] / steps:6.1f} x {v / steps:8.1f} us {100 * v / all_us:5.1f}%")
PY
