#!/usr/bin/env bash
# `herd bench serve` as a user runs it: `herd serve` on a generated tiny model in the background,
# then the benchmark binary against it. Checks the exit statuses (0 for a clean run, 2 when the
# error rate is exceeded, non-zero for a bad flag) and the JSON report's counts.
# Usage: bench_serve_cli_test.sh HERD_BINARY
set -euo pipefail
HERD=$1
dir=$(mktemp -d)
pid=
cleanup() {
  if [[ -n $pid ]]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- server log:" >&2; tail -20 "$dir/serve.err" >&2 || true; exit 1; }

"$HERD" make-model --shape tiny --type Q8_0 --seed 7 -t 1 -o "$dir/tiny.gguf" > /dev/null
mkdir "$dir/store"
env -i PATH="$PATH" HOME="$dir" "$HERD" serve -m "$dir/tiny.gguf" --alias tiny --ollama-models "$dir/store" \
  --host 127.0.0.1 --port 0 -t 1 -c 1024 --io-threads 1 > "$dir/serve.out" 2> "$dir/serve.err" &
pid=$!
url=
for _ in $(seq 1 300); do
  url=$(sed -n 's/^herd serving .* at \(http:\/\/[0-9.]*:[0-9]*\).*/\1/p' "$dir/serve.out" | head -1)
  [[ -n $url ]] && break
  kill -0 "$pid" 2>/dev/null || fail "herd serve exited before serving"
  sleep 0.1
done
[[ -n $url ]] || fail "herd serve did not start within 30 s"

# A clean run: two levels, fixed lengths.
"$HERD" bench serve --url "$url" --model tiny --concurrency 1,2 --num-prompts 3 --input-len 32 --output-len 4 \
  --ignore-eos --seed 1 --no-progress --json "$dir/report.json" > "$dir/bench.out" || fail "clean run exited $?"
grep -q "prompt lengths: fitted with the server's POST /tokenize" "$dir/bench.out" || fail "no tokenize calibration"
grep -q "^ conc " "$dir/bench.out" || fail "no comparison table"
python3 - "$dir/report.json" <<'PY' || fail "JSON report"
import json, sys
j = json.load(open(sys.argv[1]))
assert [r["concurrency"] for r in j["runs"]] == [1, 2], j["runs"]
for r in j["runs"]:
    assert r["completed"] == 3 and r["failed"] == 0, r
    assert r["total_output_tokens"] == 12, r["total_output_tokens"]
    assert r["output_tokens_source"] == {"server_usage": 3, "stream_deltas": 0}
    assert r["requests"] == 3 and len(r["per_request"]) == 3
    assert sum(q["output_tokens"] for q in r["per_request"]) == 12
    for k in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
        d = r[k]
        assert d["min"] <= d["p50"] <= d["p90"] <= d["p99"] <= d["max"], (k, d)
    assert abs(r["output_throughput"] - r["total_output_tokens"] / r["duration_s"]) < 1e-9 * r["output_throughput"]
assert j["error_rate_exceeded"] is False
PY

# A wrong model: every request fails, exit status 2.
set +e
"$HERD" bench serve --url "$url" --model no-such-model --concurrency 2 --num-prompts 2 --input-len 16 \
  --output-len 2 --no-progress > "$dir/wrong.out" 2> "$dir/wrong.err"
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "wrong model: exit $rc, expected 2"
grep -q "error http_404: 2" "$dir/wrong.out" || fail "wrong model: errors not counted by kind"

# A bad flag value: non-zero.
if "$HERD" bench serve --url "$url" --model tiny --concurrency 1,x > /dev/null 2>&1; then fail "bad --concurrency accepted"; fi
# The older benchmark subcommands are still there.
"$HERD" bench-model --help > /dev/null || fail "bench-model is gone"
"$HERD" bench-engine --help > /dev/null || fail "bench-engine is gone"
echo "bench serve CLI: ok"
