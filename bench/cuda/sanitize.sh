#!/usr/bin/env bash
# On the GPU machine, after bench/cuda/unpack.sh: compute-sanitizer (memcheck, racecheck,
# synccheck) on GPU test binaries in quick mode (HERD_CUDA_TEST_QUICK=1), one summary line per
# tool; full logs in $OUT/sanitize/. racecheck instruments threads' shared-memory accesses, not
# TMA or distributed-shared-memory traffic (cluster merges rest on the tests' oracles).
#   bench/cuda/sanitize.sh BINARY [GTEST_FILTER] [TOOLS]
# e.g. bench/cuda/sanitize.sh herd_cuda_attention_test '*F16*:*Rope*' "memcheck racecheck"
# EXCLUDE=kns=nvjet skips kernels whose names contain "nvjet" (cuBLAS's own, whose TMA traffic
# racecheck reports as hazards: 68 reports in fused_input_test's hinted tests, 2026-11-26);
# passed as --kernel-name-exclude (not yet run on the device with it).
set -uo pipefail
DEV="${DEV:-.dev-main}"
OUT="${OUT:-/tmp/out}"
CS="${CS:-/usr/local/cuda/bin/compute-sanitizer}"
export LD_LIBRARY_PATH="$DEV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT/sanitize"
bin="$1"
filter="${2:-*}"
status=0
for tool in ${3:-memcheck racecheck synccheck}; do
  log="$OUT/sanitize/$bin-$tool.log"
  t0=$SECONDS
  HERD_CUDA_TEST_QUICK=1 HERD_TEST_DEVICE=cuda "$CS" --tool "$tool" ${EXCLUDE:+--kernel-name-exclude "$EXCLUDE"} \
    "$DEV/$bin" --gtest_filter="$filter" >"$log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && status=1
  echo "$bin $tool: rc=$rc $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1) $(grep -E "^\[  (PASSED|FAILED) " "$log" | head -1) ($((SECONDS - t0)) s)"
done
exit $status
