#!/usr/bin/env bash
# On the GPU machine, after bench/cuda/unpack.sh: runs one decode benchmark RUNS times under each
# set of environment variables, every run with a wall-clock limit, and counts the runs that did
# not finish (a stall shows as a timeout). For switches that must be shown not to hang before
# they become defaults (the float GEMV ring, HERD_CUDA_FLOAT_RING_MB: one stalled run in session
# 26, call 7). One line per run in $OUT/soak.log, a summary per set on stdout.
#   bench/cuda/soak.sh MODEL RUNS LIMIT_S "A=1 B=2" "C=3"...   (MODEL: a .gguf path)
# REPS (default 3) sets bench-model's -r: tg128 repetitions per process.
# e.g. bench/cuda/soak.sh /tmp/models/1b.gguf 100 30 "HERD_CUDA_FLOAT_RING_MB=16" "HERD_CUDA_FLOAT_RING_MB=40"
set -uo pipefail
DEV="${DEV:-.dev-main}"
OUT="${OUT:-/tmp/out}"
export LD_LIBRARY_PATH="$DEV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT"
model=$1 runs=$2 limit=$3
shift 3
for e in "$@"; do
  read -r -a vars <<< "$e"
  stalled=0 failed=0
  for i in $(seq "$runs"); do
    t0=$SECONDS
    env "${vars[@]}" timeout "$limit" "$DEV/herd" bench-model -m "$model" --device cuda -p 0 -n 128 -r "${REPS:-3}" \
      > "$OUT/soak-run.txt" 2>&1
    rc=$?
    line=$(grep -E "tg128" "$OUT/soak-run.txt" | tail -1)
    if [ "$rc" -eq 124 ]; then
      stalled=$((stalled + 1))
    elif [ -z "$line" ]; then
      failed=$((failed + 1))
    fi
    echo "$e run $i: $((SECONDS - t0)) s ${line:-no result}" >> "$OUT/soak.log"
  done
  echo "$e: $runs runs, $stalled stalled (over $limit s), $failed without a result"
done
