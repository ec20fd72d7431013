#!/usr/bin/env bash
# On the GPU machine (after bench/cuda/unpack.sh): the checks and A/Bs of the switches that are off
# by default (built 2026-11-25; the others were measured and removed on 2026-11-26:
# bench/results/cuda-switches-qkv-2026-11-26.md).
#   bench/cuda/pending_ab.sh tests    GPU suites with every switch on (correctness first)
#   bench/cuda/pending_ab.sh engine   8B F16, 128 sequences: each switch off / on, 2 rounds
#   bench/cuda/pending_ab.sh b1       8B F16 and Q4_K_M decode b=1: the switches that touch b=1
# Each A/B line: switch, value, decode tok/s (engine: decode_tok_s; b1: tg_tok_s).
set -uo pipefail
DEV="${DEV:-.dev-main}"
OUT="${OUT:-/tmp/out}"
export LD_LIBRARY_PATH="$DEV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
here="$(dirname "$0")"
all_on=(HERD_CUDA_ATTN_HALF_OUT=1)
switches=("HERD_CUDA_ATTN_HALF_OUT:0 1")
case "${1:-}" in
  tests)
    env "${all_on[@]}" "$here/run_gpu_tests.sh" herd_cuda_fused_input_test herd_cuda_attention_test \
      herd_cuda_forward_test herd_engine_e2e_test herd_engine_pipeline_test herd_cuda_matmul_test ;;
  engine)
    for s in "${switches[@]}"; do
      "$here/device_run.sh" engine-ab llama-3.1-8b F16 128 "${s%%:*}" 2 "${s#*:}" 2>&1 |
        grep -o "\"${s%%:*}\": \"[^\"]*\"\|\"decode_tok_s\": [0-9.]*" | paste - -
    done ;;
  b1)
    for shape_type in "llama-3.1-8b F16" "llama-3.1-8b Q4_K_M"; do
      for s in "${switches[@]}"; do
        # shellcheck disable=SC2086
        "$here/device_run.sh" ab $shape_type "${s%%:*}" 2 "${s#*:}" 2>&1 |
          grep -o "\"model\": \"llama[^\"]*\"\|\"${s%%:*}\": [0-9]*\|\"tg_tok_s\": [0-9.]*" | paste - - -
      done
    done ;;
  *) echo "usage: $0 tests|engine|b1" >&2; exit 2 ;;
esac
