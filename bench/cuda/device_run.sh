#!/usr/bin/env bash
# Runs on the GPU machine (the `device` tool) from the repository root, with the binaries built
# here copied into $DEV (default .dev-main): herd, herd_cuda_forward_test and whatever shared
# library the device lacks (libtomlplusplus.so.3), plus the vocabulary ggml-vocab-gpt-2.gguf.
#   bench/cuda/device_run.sh tests            GPU tests (forward pass vs CPU, every type)
#   bench/cuda/device_run.sh models SHAPE TYPES...   bench-model rows: pp512 and tg128
#   bench/cuda/device_run.sh engine SHAPE TYPE CONC  bench-engine: CONC parallel 512 in / 128 out
#   bench/cuda/device_run.sh engine-ab SHAPE TYPE CONC VAR [ROUNDS] [VALUES]  bench-engine as above
#                                  with VAR set to each of VALUES (default "0 1") in turn, ROUNDS times
#   bench/cuda/device_run.sh ab SHAPE TYPE VAR [ROUNDS] [VALUES]  decode b=1 (tg128) with VAR set
#                                  to each of VALUES (default "0 1") in turn, ROUNDS times (default 2)
#   bench/cuda/device_run.sh engine-bins SHAPE TYPE CONC ROUNDS BIN...  bench-engine as above with
#                                  each herd binary BIN (e.g. $DEV/herd_old $DEV/herd) in turn, ROUNDS times
#   bench/cuda/device_run.sh bins SHAPE TYPE ROUNDS BIN...  decode b=1 (tg128) with each herd binary
#                                  BIN in turn, ROUNDS times
#   bench/cuda/device_run.sh envs SHAPE TYPE ROUNDS "A=1 B=2" "C=3"...  decode b=1 (tg128) with each
#                                  set of variables in turn ("-" for none), ROUNDS times
#   bench/cuda/device_run.sh engine-envs SHAPE TYPE CONC ROUNDS "A=1 B=2" "-"...  bench-engine as
#                                  above with each set of variables in turn ("-" for none)
# Models are generated on the device (random weights, real shapes) into /tmp/models.
set -uo pipefail
DEV="${DEV:-.dev-main}"
OUT="${OUT:-/tmp/out}"
export LD_LIBRARY_PATH="$DEV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
herd="$DEV/herd"
models=/tmp/models
mkdir -p "$models" "$OUT"
model() {  # SHAPE TYPE -> path (generated once)
  local m="$models/$1-$2.gguf"
  if [ ! -f "$m" ]; then
    local t0=$SECONDS
    "$herd" make-model --shape "$1" --type "$2" --vocab "$DEV/ggml-vocab-gpt-2.gguf" -o "$m" >/dev/null 2>&1 ||
      echo "make-model $1 $2 failed" >&2
    echo "generated $m in $((SECONDS - t0)) s" >&2
  fi
  echo "$m"
}
each_env() {  # ROUNDS FN SETS...: FN with each set of variables ("A=1 B=2", or "-" for none) in turn
  local rounds=$1 fn=$2 e
  shift 2
  for _ in $(seq "$rounds"); do
    for e in "$@"; do
      local vars=()
      [ "$e" != "-" ] && read -r -a vars <<< "$e"
      "$fn" "$e" "${vars[@]}"
    done
  done
}
case "${1:-}" in
  tests)
    "$DEV/herd_cuda_forward_test" 2>&1 | tee "$OUT/forward_test.log" | grep -E "^\[  |agreement|identical|DIFFER|Failure|Expected|Which" ;;
  models)
    shape="$2"; shift 2
    for t in "$@"; do
      m=$(model "$shape" "$t")
      "$herd" bench-model -m "$m" --device cuda -p 512 -n 128 -r 3 --json 2>&1 | tee -a "$OUT/bench_model.jsonl"
    done ;;
  engine)
    m=$(model "$2" "$3")
    "$herd" bench-engine -m "$m" --device cuda --requests "$(( $4 * 2 ))" --concurrency "$4" --prompt-len 512 \
      --gen-len 128 --batch-tokens 8192 --json 2>&1 | tee -a "$OUT/bench_engine.jsonl" ;;
  engine-ab)
    m=$(model "$2" "$3")
    for _ in $(seq "${6:-2}"); do
      for v in ${7:-0 1}; do
        r=$(env "$5=$v" "$herd" bench-engine -m "$m" --device cuda --requests "$(( $4 * 2 ))" --concurrency "$4" \
          --prompt-len 512 --gen-len 128 --batch-tokens 8192 --json 2>&1 | tail -1)
        echo "{\"model\": \"$2-$3\", \"concurrency\": $4, \"$5\": \"$v\", \"result\": $r}" | tee -a "$OUT/engine_ab.jsonl"
      done
    done ;;
  ab)
    m=$(model "$2" "$3")
    for _ in $(seq "${5:-2}"); do
      for v in ${6:-0 1}; do
        r=$(env "$4=$v" "$herd" bench-model -m "$m" --device cuda -p 0 -n 128 -r 3 --json 2>&1 | tail -1)
        echo "{\"model\": \"$2-$3\", \"$4\": $v, \"result\": $r}" | tee -a "$OUT/ab.jsonl"
      done
    done ;;
  engine-bins)
    m=$(model "$2" "$3")
    name="$2-$3" conc=$4 rounds=$5
    shift 5
    for _ in $(seq "$rounds"); do
      for b in "$@"; do
        r=$("$b" bench-engine -m "$m" --device cuda --requests "$(( conc * 2 ))" --concurrency "$conc" \
          --prompt-len 512 --gen-len 128 --batch-tokens 8192 --json 2>&1 | tail -1)
        echo "{\"model\": \"$name\", \"concurrency\": $conc, \"binary\": \"$b\", \"result\": $r}" | tee -a "$OUT/engine_bins.jsonl"
      done
    done ;;
  bins)
    m=$(model "$2" "$3")
    name="$2-$3" rounds=$4
    shift 4
    for _ in $(seq "$rounds"); do
      for b in "$@"; do
        r=$("$b" bench-model -m "$m" --device cuda -p 0 -n 128 -r 3 --json 2>&1 | tail -1)
        echo "{\"model\": \"$name\", \"binary\": \"$b\", \"result\": $r}" | tee -a "$OUT/bins.jsonl"
      done
    done ;;
  envs)
    m=$(model "$2" "$3")
    name="$2-$3"
    tg() {
      local e=$1 r
      shift
      r=$(env "$@" "$herd" bench-model -m "$m" --device cuda -p 0 -n 128 -r 3 --json 2>&1 | tail -1)
      echo "{\"model\": \"$name\", \"env\": \"$e\", \"result\": $r}" | tee -a "$OUT/envs.jsonl"
    }
    rounds=$4
    shift 4
    each_env "$rounds" tg "$@" ;;
  engine-envs)
    m=$(model "$2" "$3")
    name="$2-$3" conc=$4
    eng() {
      local e=$1 r
      shift
      r=$(env "$@" "$herd" bench-engine -m "$m" --device cuda --requests "$(( conc * 2 ))" --concurrency "$conc" \
        --prompt-len 512 --gen-len 128 --batch-tokens 8192 --json 2>&1 | tail -1)
      echo "{\"model\": \"$name\", \"concurrency\": $conc, \"env\": \"$e\", \"result\": $r}" |
        tee -a "$OUT/engine_envs.jsonl"
    }
    rounds=$5
    shift 5
    each_env "$rounds" eng "$@" ;;
  *) echo "usage: $0 tests | models SHAPE TYPES... | engine SHAPE TYPE CONCURRENCY | engine-ab SHAPE TYPE CONC VAR [ROUNDS] [VALUES] | engine-bins SHAPE TYPE CONC ROUNDS BIN... | engine-envs SHAPE TYPE CONC ROUNDS VARS... | bins SHAPE TYPE ROUNDS BIN... | envs SHAPE TYPE ROUNDS VARS... | ab SHAPE TYPE VAR [ROUNDS] [VALUES]" >&2
     exit 2 ;;
esac
