#!/usr/bin/env bash
# On the GPU machine, after bench/cuda/unpack.sh: compute-sanitizer (memcheck, racecheck,
# synccheck) on GPU test binaries in quick mode (HERD_CUDA_TEST_QUICK=1), one summary line per
# tool; full logs in $OUT/sanitize/. racecheck instruments threads' shared-memory accesses, not
# TMA or distributed-shared-memory traffic (cluster merges rest on the tests' oracles).
#   bench/cuda/sanitize.sh BINARY [GTEST_FILTER] [TOOLS]
# TAG=NAME names the run in the log file ($BINARY-$TAG-$TOOL.log) and the summary line, for
# several runs of one binary with different filters at once (sanitize_all.sh's parts).
# e.g. bench/cuda/sanitize.sh herd_cuda_attention_test '*F16*:*Rope*' "memcheck racecheck"
# racecheck reports hazards inside cuBLAS's own nvjet_* kernels (their TMA traffic, which it does
# not model); the summary line counts the reports outside them separately ("herd: N"). Do not
# exclude those kernels with --kernel-name-exclude kns=nvjet: with it, racecheck 2025.3 fails
# ("Internal Sanitizer Error: failed to handle a hardware exception", then an illegal address in
# the next herd kernel), seen on the H200 2026-11-28.
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
  log="$OUT/sanitize/$bin${TAG:+-$TAG}-$tool.log"
  t0=$SECONDS
  HERD_CUDA_TEST_QUICK=1 HERD_TEST_DEVICE=cuda "$CS" --tool "$tool" "$DEV/$bin" --gtest_filter="$filter" >"$log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && status=1
  herd=""
  [ "$tool" = racecheck ] && herd="herd: $(grep -E "Race reported between" "$log" | grep -vc "at nvjet_") reports outside cuBLAS"
  echo "$bin${TAG:+ [$TAG]} $tool: rc=$rc $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1) $herd $(grep -E "^\[  (PASSED|FAILED) " "$log" | head -1) ($((SECONDS - t0)) s)"
done
exit $status
