#!/usr/bin/env bash
# Multi-GPU smoke test (device tool, a machine with 2 GPUs, e.g. nvidia-h200-x2): one model
# instance per GPU. The same llama-3.2-1b Q4_K_M file is configured twice in a herd.toml, as
# "gpu0" on cuda:0 and "gpu1" on cuda:1; 16 concurrent OpenAI completions (distinct prompts, greedy) go to each name; the
# script prints each name's completed count, each GPU's memory use while both are loaded (both
# must hold a model and its KV pool), the per-model generation-token counters and memory of /metrics, then stops the
# server with SIGTERM. Binaries as for device_run.sh (bench/cuda/unpack.sh first).
# Usage: bench/cuda/unpack.sh && timeout 200 bash bench/cuda/smoke_multi_gpu.sh
# DEV1=cuda:0 puts the second instance on GPU 0 as well (a dry run of the script on one GPU);
# DEV0=cpu DEV1=cpu D=DIR runs it without a GPU (DIR: herd and ggml-vocab-gpt-2.gguf).
# MODE=replicas: one name "llama" with devices = [DEV0, DEV1] (replicas; docs/configuration.md
# "GPUs") instead, 32 concurrent completions to it; /metrics then shows each replica's tokens.
D=${D:-.dev-main}; export LD_LIBRARY_PATH=$D
DEV0=${DEV0:-cuda:0}
DEV1=${DEV1:-cuda:1}
MODE=${MODE:-names}
nvidia-smi --query-gpu=index,name,memory.used --format=csv,noheader
rm -f /tmp/c_*.json
$D/herd make-model --shape llama-3.2-1b --type Q4_K_M --vocab $D/ggml-vocab-gpt-2.gguf -o /tmp/m.gguf >/dev/null 2>&1
if [ "$MODE" = replicas ]; then
cat > /tmp/herd.toml <<TOML
port = 18081
[[model]]
path = "/tmp/m.gguf"
alias = "llama"
devices = ["$DEV0", "$DEV1"]
kv_budget = "2GiB"
TOML
else
cat > /tmp/herd.toml <<TOML
port = 18081
[[model]]
path = "/tmp/m.gguf"
alias = "gpu0"
device = "$DEV0"
kv_budget = "2GiB"
[[model]]
path = "/tmp/m.gguf"
alias = "gpu1"
device = "$DEV1"
kv_budget = "2GiB"
TOML
fi
$D/herd serve --config /tmp/herd.toml > /tmp/serve.log 2>&1 &
SERVER=$!
for i in $(seq 90); do [ "$(curl -s -o /dev/null -w '%{http_code}' localhost:18081/health)" = 200 ] && break; sleep 1; done
curl -s localhost:18081/v1/models | python3 -c 'import json,sys; print("models:", [m["id"] for m in json.load(sys.stdin)["data"]])'
echo "--- GPU memory with both models loaded:"
nvidia-smi --query-gpu=index,memory.used --format=csv,noheader
pids=""
names="gpu0 gpu1"
[ "$MODE" = replicas ] && names="llama llama"
for m in $names; do
  for i in $(seq 16); do
    curl -s -m 90 localhost:18081/v1/completions -H 'content-type: application/json' \
      -d '{"model":"'$m'","prompt":"the '$i'","max_tokens":64,"temperature":0,"ignore_eos":true}' -o /tmp/c_${m}_${i}_$RANDOM.json & pids="$pids $!"
  done
done
sleep 1; nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader
wait $pids
python3 -c '
import glob, json
for m in sorted(set("'"$names"'".split())):
    ok = 0
    texts = set()
    files = glob.glob(f"/tmp/c_{m}_*.json")
    for f in files:
        d = json.load(open(f))
        ok += d.get("usage", {}).get("completion_tokens") == 64
        texts.add(d.get("choices", [{}])[0].get("text"))
    print(m, "completions with 64 tokens:", ok, "of", len(files), "; distinct greedy texts:", len(texts))'
curl -s localhost:18081/metrics | grep -E "^vllm:generation_tokens_total|^herd_model_memory_bytes" | head -6
kill $SERVER; wait $SERVER; echo "exit $?"; grep -iE "error|cuda" /tmp/serve.log | head -5
