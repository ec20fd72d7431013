#!/usr/bin/env bash
# Reproduces bench/results/engine-*.md: `herd bench-engine` on the llama-3.2-1b-shaped Q4_K_M
# model (generated once into $MODELS, default /tmp/herd-models) with issue 3's workloads.
# Prints one JSON object per run (see `herd bench-engine --json`) prefixed by its name.
# Usage: bench/run_engine.sh [decode|prefix|coalesce|all]   (default: all)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
herd="$root/build/bin/herd"
models="${MODELS:-/tmp/herd-models}"
vocab="$root/../shared/testdata/vocab/ggml-vocab-gpt-2.gguf"
threads="${THREADS:-2}"
requests="${REQUESTS:-64}"
what="${1:-all}"
mkdir -p "$models"
m="$models/llama-3.2-1b-Q4_K_M.gguf"
[ -f "$m" ] || "$herd" make-model --shape llama-3.2-1b --type Q4_K_M --vocab "$vocab" -o "$m" >/dev/null
run() {
  local name="$1"
  shift
  echo "$name $("$herd" bench-engine -m "$m" -t "$threads" --json "$@")"
}
if [ "$what" = decode ] || [ "$what" = all ]; then
  # Batched decode against one sequence: short prompts, so decode dominates.
  run decode-c1 --requests 4 --concurrency 1 --prompt-len 32 --gen-len 128
  run decode-c8 --requests 16 --concurrency 8 --prompt-len 32 --gen-len 128
  run serve-c8 --requests 16 --concurrency 8 --prompt-len 512 --gen-len 128
fi
if [ "$what" = prefix ] || [ "$what" = all ]; then
  # Time to first token, cold against 400 of 512 prompt tokens shared.
  run prefix-cold --requests "$requests" --concurrency 16 --prompt-len 512 --gen-len 128
  run prefix-shared --requests "$requests" --concurrency 16 --prompt-len 512 --gen-len 128 --shared-prefix 400
  # The same comparison open loop (Poisson arrivals at 0.2 requests/s, 128-token steps): no
  # synchronized waves of arrivals, so time to first token is queueing + the uncached prefill.
  run rate-cold --requests 16 --concurrency 16 --prompt-len 512 --gen-len 128 --batch-tokens 128 --request-rate 0.2
  run rate-shared --requests 16 --concurrency 16 --prompt-len 512 --gen-len 128 --batch-tokens 128 --request-rate 0.2 --shared-prefix 400
fi
if [ "$what" = coalesce ] || [ "$what" = all ]; then
  # 24 requests over 4 distinct prompts, identical ones coalesced or computed separately.
  run coalesce-on --requests 24 --concurrency 8 --prompt-len 128 --gen-len 64 --distinct-prompts 4
  run coalesce-off --requests 24 --concurrency 8 --prompt-len 128 --gen-len 64 --distinct-prompts 4 --no-coalesce
fi
