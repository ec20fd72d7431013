#!/usr/bin/env bash
# Where one kernel's instructions go, from ncu's per-instruction counts (on the device machine,
# binaries in $DEV as for device_run.sh): profiles one launch of the kernels matching REGEX in
# CMD (after SKIP launches of them, default 20), then prints the duration, warp instructions,
# issue-slot use and stall reasons, and the SASS grouped by execution count (instructions run
# once per warp vs once per loop trip show up as separate groups), with the hottest lines.
# The full report and the per-instruction CSV stay in $OUT/sass-NAME.*.
# Usage: bench/cuda/sass_profile.sh NAME REGEX [SKIP] -- CMD...
# e.g. bench/cuda/sass_profile.sh q4k GemvQuantKernel -- .dev-main/herd_cuda_matmul_bench \
#        --models 8b --types Q4_K --tok 1 --paths gemv --shape 4096:14336 --reps 5
# (session 22: 615 instructions per warp of the staged Q4_K GEMV, 311 of them once per warp;
# bench/results/cuda-session22-2026-11-28.md)
set -uo pipefail
DEV="${DEV:-.dev-main}"
OUT="${OUT:-/tmp/out}"
export LD_LIBRARY_PATH="$DEV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
name="$1" regex="$2"
skip=20
shift 2
if [ "${1:-}" != "--" ]; then skip="$1"; shift; fi
[ "${1:-}" = "--" ] || { echo "usage: $0 NAME REGEX [SKIP] -- CMD..." >&2; exit 2; }
shift
mkdir -p "$OUT"
rep="$OUT/sass-$name"
ncu --clock-control none --kernel-name "regex:$regex" --launch-skip "$skip" --launch-count 1 --set full \
  --import-source no -f -o "$rep" "$@" >"$rep.run.log" 2>&1 || { tail -5 "$rep.run.log"; exit 1; }
ncu -i "$rep.ncu-rep" --page source --csv --print-source sass >"$rep.sass.csv" 2>"$rep.sass.err"
ncu -i "$rep.ncu-rep" --page details --print-details all >"$rep.details.txt" 2>&1
grep -E "^ +(Duration|Memory Throughput|Issue Slots Busy|Executed Ipc Active|Warp Cycles Per Issued Instruction|Registers Per Thread|Achieved Occupancy|Stall [A-Za-z ]+) " \
  "$rep.details.txt" | sed -E 's/ +/ /g; s/^ /  /' | awk '$NF != "0" && $NF != "0.00" && !seen[$0]++' | head -40
python3 - "$rep.sass.csv" <<'PY'
import csv, collections, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 4]
hdr = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
h, data = rows[hdr], rows[hdr + 1:]
ie, ss, src = h.index("Instructions Executed"), h.index("Warp Stall Sampling (All Samples)"), h.index("Source")
count = lambda r: int(r[ie].replace(",", "") or 0)
samples = lambda r: int(r[ss].replace(",", "") or 0)
total = sum(count(r) for r in data)
groups = collections.defaultdict(lambda: [0, 0, 0])  # execution count -> [lines, instructions, samples]
for r in data:
    g = groups[count(r)]
    g[0] += 1; g[1] += count(r); g[2] += samples(r)
print(f"  {total:,} warp instructions, {len(data)} SASS lines")
print("  executions per line: lines, share of instructions, share of stall samples")
all_s = max(1, sum(samples(r) for r in data))
for c, (n, ins, s) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:8]:
    if c: print(f"    {c:>10,} x {n:4d} lines  {100 * ins / total:5.1f}%  {100 * s / all_s:5.1f}%")
print("  hottest lines by stall samples:")
for r in sorted(data, key=samples, reverse=True)[:12]:
    print(f"    {samples(r):6d} {count(r):>10,}  {r[src].strip()[:70]}")
PY
