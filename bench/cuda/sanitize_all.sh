#!/usr/bin/env bash
# On the GPU machine, after bench/cuda/unpack.sh: compute-sanitizer over every GPU test binary
# carried in $DEV (herd_cuda_*_test), every test of each, in quick mode, one job per binary and
# tool, JOBS of them at once on the one GPU (each job is its own process and CUDA context, so
# they share the GPU without sharing state; the sanitizers' host-side work is what parallelism
# buys). One summary line per job as it ends (bench/cuda/sanitize.sh's), full logs in
# $OUT/sanitize/. racecheck lines also count the reports outside cuBLAS's nvjet kernels (whose
# TMA traffic racecheck reports as hazards it cannot model; see sanitize.sh).
#   bench/cuda/sanitize_all.sh [TOOLS]   (default "memcheck racecheck synccheck")
#   JOBS (default 4), TIMEOUT seconds per job (default 540), ONLY="bin1 bin2" to pick binaries,
#   FILTER_<binary>=GTEST_FILTER to narrow one binary (e.g. FILTER_herd_cuda_forward_test='-*Replicas*'),
#   PARTS_<binary>="FILTER1 FILTER2 ..." to run one binary as several jobs, one per filter, tagged
#   p1, p2, ... (racecheck of a forward type took 160-210 s at 1,000 steps, before quick mode cut
#   them to 100; e.g.
#   PARTS_herd_cuda_forward_test="CudaForwardTest.* *GpuMatchesCpu/? *GpuMatchesCpu/1?").
set -uo pipefail
DEV="${DEV:-.dev-main}"
export DEV OUT="${OUT:-/tmp/out}"
JOBS="${JOBS:-4}"
TIMEOUT="${TIMEOUT:-540}"
here="$(cd "$(dirname "$0")" && pwd)"
bins=(${ONLY:-$(find "$DEV" -maxdepth 1 -name 'herd_cuda_*_test' -type f -printf '%f\n' | sort)})
[ ${#bins[@]} -gt 0 ] || { echo "no herd_cuda_*_test binaries in $DEV" >&2; exit 2; }
jobs=()  # "BIN TOOL FILTER TAG" (TAG "-": none; filters hold no spaces)
for tool in ${1:-memcheck racecheck synccheck}; do
  for bin in "${bins[@]}"; do
    parts="PARTS_$bin" filter="FILTER_$bin"
    if [ -n "${!parts:-}" ]; then
      i=0
      set -f  # the filters' globs are gtest's, not the shell's
      for f in ${!parts}; do jobs+=("$bin $tool $f p$((++i))"); done
      set +f
    else
      jobs+=("$bin $tool ${!filter:-*} -")
    fi
  done
done
run_one() {  # BIN TOOL FILTER TAG
  local tag="$4"
  [ "$tag" = - ] && tag=""
  TAG="$tag" timeout "$TIMEOUT" "$here/sanitize.sh" "$1" "$3" "$2" || {
    local rc=$?
    [ $rc -eq 124 ] && echo "$1${tag:+ [$tag]} $2: TIMEOUT after $TIMEOUT s"
    return $rc
  }
}
export -f run_one
export here TIMEOUT
printf '%s\n' "${jobs[@]}" | xargs -P "$JOBS" -L 1 bash -c 'run_one "$0" "$1" "$2" "$3"'
