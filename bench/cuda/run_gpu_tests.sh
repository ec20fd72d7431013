#!/usr/bin/env bash
# On the GPU machine, after bench/cuda/unpack.sh: runs every GPU test binary found in $DEV
# (default .dev-main) and the engine suites with HERD_TEST_DEVICE=cuda (pipelined decoding is
# on by default there), printing one summary line per binary; full logs go to $OUT/tests/.
#   bench/cuda/run_gpu_tests.sh [BINARY...]   (default: all of them that are present)
set -uo pipefail
DEV="${DEV:-.dev-main}"
OUT="${OUT:-/tmp/out}"
export LD_LIBRARY_PATH="$DEV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT/tests"
# Every herd_cuda_*_test carried (kernel suites: matmul, attention, backend, fused input, draw,
# quant dot, attention split, forward), then the engine suites.
mapfile -t kernels < <(find "$DEV" -maxdepth 1 -name 'herd_cuda_*_test' -type f -printf '%f\n' | sort)
engine=(herd_engine_e2e_test herd_engine_pipeline_test herd_embedding_test herd_engine_json_test
        herd_engine_persistence_test)
wanted=("$@")
[ ${#wanted[@]} -eq 0 ] && wanted=("${kernels[@]}" "${engine[@]}")
status=0
for t in "${wanted[@]}"; do
  [ -x "$DEV/$t" ] || { echo "$t: not carried"; continue; }
  t0=$SECONDS
  HERD_TEST_DEVICE=cuda "$DEV/$t" >"$OUT/tests/$t.log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && status=1
  summary=$(grep -E "^\[  (PASSED|FAILED) " "$OUT/tests/$t.log" | head -1)
  echo "$t: rc=$rc $summary ($((SECONDS - t0)) s)"
  grep -E "^\[  FAILED  \] [A-Za-z]" "$OUT/tests/$t.log" | sort -u | head -20
done
exit $status
