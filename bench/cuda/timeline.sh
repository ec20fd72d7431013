#!/usr/bin/env bash
# On the GPU machine: runs a command under the kernel-timeline injection library
# (libherd_kernel_timeline.so in $DEV, built here from bench/cuda/kernel_timeline.cc; needs
# libcupti.so.13, carried in $DEV when the machine lacks it) and summarises its most launched
# CUDA graph (bench/cuda/timeline_summary.py): per kernel, time per decode step inside the graph.
#   bench/cuda/timeline.sh NAME COMMAND...   (CSV in $OUT/timeline-NAME.csv, summary on stdout)
# e.g. bench/cuda/timeline.sh q4km .dev-main/herd bench-model -m /tmp/models/llama-3.1-8b-Q4_K_M.gguf \
#        --device cuda -p 0 -n 64 -r 1
set -uo pipefail
DEV="${DEV:-.dev-main}"
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT"
name="$1"
shift
csv="$OUT/timeline-$name.csv"
LD_LIBRARY_PATH="$DEV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CUDA_INJECTION64_PATH="$(realpath "$DEV/libherd_kernel_timeline.so")" \
  HERD_TIMELINE_OUT="$csv" "$@" >"$OUT/timeline-$name.log" 2>&1
tail -2 "$OUT/timeline-$name.log"
python3 "$(dirname "$0")/timeline_summary.py" "$csv" ${SUMMARY_ARGS:-}  # e.g. SUMMARY_ARGS="--nodes 60"
