#!/usr/bin/env bash
# On the GPU machine: unpacks the binaries carried in .dev-pack (bins.tar.gz or .xz of herd and the CUDA
# test/bench binaries, built here; plus libtomlplusplus.so.3 and the gpt-2 vocabulary) into
# .dev-main, where bench/cuda/device_run.sh expects them. The carried tree must stay under the
# device tool's 64 MiB, which the uncompressed binaries exceed.
set -euo pipefail
mkdir -p .dev-main
for f in .dev-pack/bins.tar.*; do tar -C .dev-main -xf "$f"; done  # .gz, or .xz when gzip is too big
cp .dev-pack/libtomlplusplus.so.3 .dev-pack/ggml-vocab-gpt-2.gguf .dev-main/
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
