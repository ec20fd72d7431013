#!/usr/bin/env bash
# Reproduces bench/results/cpu-models-*.md: generates llama-3.2-1b-shaped random-weight models
# (once, into $MODELS, default /tmp/herd-models) and runs `herd bench-model` on each type with the
# peer's settings (prompt 256, decode 128, 2 threads). Prints a markdown table.
# Usage: bench/run_cpu_models.sh [TYPES...]   (default: Q4_0 Q4_K_M Q8_0 F16)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
herd="$root/build/bin/herd"
models="${MODELS:-/tmp/herd-models}"
vocab="$root/../shared/testdata/vocab/ggml-vocab-gpt-2.gguf"
threads="${THREADS:-2}"
reps="${REPS:-3}"
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(Q4_0 Q4_K_M Q8_0 F16)
mkdir -p "$models"
echo "| type | file GB | prompt 256 tok/s | decode tok/s | decode ceiling at BW GB/s |"
echo "|---|---|---|---|---|"
for t in "${types[@]}"; do
  m="$models/llama-3.2-1b-$t.gguf"
  [ -f "$m" ] || "$herd" make-model --shape llama-3.2-1b --type "$t" --vocab "$vocab" -o "$m" >/dev/null 2>&1
  json=$("$herd" bench-model -m "$m" -p 256 -n 128 -t "$threads" -r "$reps" --json)
  python3 - "$t" "$json" <<'PY'
import json, sys
t, j = sys.argv[1], json.loads(sys.argv[2])
print(f"| {t} | {j['file_gb']:.3f} | {j['pp_tok_s']:.1f} ± {j['pp_sd']:.1f} | {j['tg_tok_s']:.2f} ± {j['tg_sd']:.2f} | (bandwidth / {j['file_gb']:.3f} GB) |")
PY
done
