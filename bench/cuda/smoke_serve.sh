#!/usr/bin/env bash
# Smoke test of `herd serve --device cuda` on the device machine (binaries carried in .dev-main as
# for device_run.sh, herd packed in .dev-main/bins.tar.xz): a 1B Q4_K_M model, two identical seeded
# Ollama /api/generate requests (default options: top_k 40, sampled from the device's top-k
# candidates; the two texts must match), 16 concurrent OpenAI /v1/completions with top_k 40 (each
# must return 32 tokens), the request counters of /metrics, then a graceful SIGTERM.
# Usage (device tool): timeout 150 bash bench/cuda/smoke_serve.sh
D=.dev-main; tar -C $D -xJf $D/bins.tar.xz; export LD_LIBRARY_PATH=$D
$D/herd make-model --shape llama-3.2-1b --type Q4_K_M --vocab $D/ggml-vocab-gpt-2.gguf -o /tmp/m.gguf >/dev/null 2>&1
$D/herd serve -m /tmp/m.gguf --device cuda --port 18080 > /tmp/serve.log 2>&1 &
SERVER=$!
for i in $(seq 60); do curl -s localhost:18080/api/version >/dev/null 2>&1 && break; sleep 1; done
NAME=$(curl -s localhost:18080/v1/models | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
echo "model: $NAME"
echo "--- ollama generate (defaults: top_k 40), 2 identical seeded requests:"
for i in 1 2; do curl -s -m 60 localhost:18080/api/generate -d '{"model":"'$NAME'","prompt":"hello","stream":false,"options":{"seed":7,"num_predict":12}}' | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("response","")[:60].encode(), d.get("eval_count"), d.get("error"))'; done
echo "--- 16 concurrent sampled OpenAI requests with top_k 40:"
pids=""
for i in $(seq 16); do curl -s -m 60 localhost:18080/v1/completions -H 'content-type: application/json' -d '{"model":"'$NAME'","prompt":"the","max_tokens":32,"temperature":0.8,"top_k":40,"seed":'$i'}' -o /tmp/c$i.json & pids="$pids $!"; done
wait $pids
python3 -c '
import json
ok=0
for i in range(1,17):
    d=json.load(open(f"/tmp/c{i}.json")); ok += d.get("usage",{}).get("completion_tokens")==32
    if i == 1: print(str(d)[:300])
print("completions with 32 tokens:", ok, "of 16")'
curl -s localhost:18080/metrics | grep -E "^herd_.*(tokens|requests)_total" | head -5
kill $SERVER; wait $SERVER; tail -3 /tmp/serve.log
