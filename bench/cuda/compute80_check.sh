#!/usr/bin/env bash
# On the GPU machine, after bench/cuda/unpack.sh: the compute_80 code paths (Ampere and Ada GPUs)
# on a Hopper GPU. $DEV80 holds herd's GPU test binaries from a build whose only target is
# compute_80 (cmake -B build80 -DHERD_CUDA_ARCHS="-gencode=arch=compute_80,code=compute_80"): the
# driver compiles that PTX for the GPU, and device_arch.h reports code 80, so every sm_90 path is
# off. Runs the suites (bench/cuda/run_gpu_tests.sh) on it, then again with
# HERD_CUDA_SMEM_CAP=101376 (Ada's 99 KB of shared memory per block). The driver's compilations
# are cached in $CUDA_CACHE_PATH; the first suite's time includes them.
#   DEV80=.dev-b80 bench/cuda/compute80_check.sh [BINARY...]
set -uo pipefail
DEV80="${DEV80:-.dev-b80}"
OUT="${OUT:-/tmp/out}"
export CUDA_CACHE_PATH="${CUDA_CACHE_PATH:-/tmp/herd-jit-cache}" CUDA_CACHE_MAXSIZE=4294967296
export LD_LIBRARY_PATH=".dev-main${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # libtomlplusplus
here="$(cd "$(dirname "$0")" && pwd)"
status=0
echo "== compute_80 code"
DEV="$DEV80" OUT="$OUT/c80" "$here/run_gpu_tests.sh" "$@" || status=1
grep -h "device compute capability" "$OUT/c80/tests/herd_cuda_backend_test.log" 2>/dev/null
echo "== compute_80 code, HERD_CUDA_SMEM_CAP=101376"
HERD_CUDA_SMEM_CAP=101376 DEV="$DEV80" OUT="$OUT/c80cap" "$here/run_gpu_tests.sh" "$@" || status=1
exit $status
