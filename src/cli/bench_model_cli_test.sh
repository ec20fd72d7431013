#!/usr/bin/env bash
# `herd bench-model` as a user runs it, on a generated tiny model (CPU): the JSON and markdown
# reports name the depth (-d, llama-bench's "@ dN"), and bad sizes fail with a message naming the
# flag or the context, without a crash. Speed is not checked here (bench/ measures it).
# Usage: bench_model_cli_test.sh HERD_BINARY
set -euo pipefail
HERD=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$HERD" make-model --shape tiny --type Q8_0 --seed 7 -t 1 -o "$dir/tiny.gguf" > /dev/null 2>&1
"$HERD" bench-model -m "$dir/tiny.gguf" -p 8 -n 4 -d 40 -r 2 -t 1 --json > "$dir/out.json" || fail "json run exited $?"
python3 - "$dir/out.json" <<'PY' || fail "JSON report"
import json, sys
j = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert (j["prompt"], j["gen"], j["depth"], j["reps"]) == (8, 4, 40, 2), j
assert j["pp_tok_s"] > 0 and j["tg_tok_s"] > 0, j
PY
"$HERD" bench-model -m "$dir/tiny.gguf" -p 8 -n 4 -d 40 -r 1 -t 1 > "$dir/out.md" || fail "markdown run exited $?"
grep -q "^| pp8 @ d40 | " "$dir/out.md" || fail "no 'pp8 @ d40' row"
grep -q "^| tg4 @ d40 | " "$dir/out.md" || fail "no 'tg4 @ d40' row"
"$HERD" bench-model -m "$dir/tiny.gguf" -p 8 -n 4 -r 1 -t 1 > "$dir/d0.md" || fail "depth 0 exited $?"
grep -q "^| tg4 | " "$dir/d0.md" || fail "depth 0: no plain 'tg4' row"

# Bad sizes: a message, a non-zero status, no crash (status 1, not a signal's 128+).
set +e
"$HERD" bench-model -m "$dir/tiny.gguf" -d -1 -t 1 > /dev/null 2> "$dir/neg.err"; rc=$?
[[ $rc -eq 1 ]] && grep -q -- "-d must be >= 0" "$dir/neg.err" || fail "negative depth: exit $rc, $(cat "$dir/neg.err")"
# The tiny model's context is 2,048 tokens.
"$HERD" bench-model -m "$dir/tiny.gguf" -p 8 -n 4 -d 4096 -t 1 > /dev/null 2> "$dir/big.err"; rc=$?
[[ $rc -eq 1 ]] && grep -q "exceed the model's context length 2048" "$dir/big.err" ||
  fail "depth past the context: exit $rc, $(cat "$dir/big.err")"
set -e
echo "bench-model CLI: ok"
