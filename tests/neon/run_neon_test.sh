#!/usr/bin/env bash
# Cross-compiles base, tensor and kernels for aarch64 (Debian's aarch64-linux-gnu-g++) and runs
# the matmul check (every weight type, NEON dotprod kernels vs the reference) under qemu-aarch64.
# Usage: tests/neon/run_neon_test.sh [BUILD_DIR]   (default: build-neon in the repo root)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build-neon}"
for tool in aarch64-linux-gnu-g++ qemu-aarch64; do
  command -v "$tool" >/dev/null || { echo "run_neon_test: $tool not installed (apt-get install g++-aarch64-linux-gnu qemu-user)" >&2; exit 1; }
done
cmake -S "$root/tests/neon" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-toolchain.cmake" -DHERD_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
# -cpu max: a CPU model with dotprod and fp16, whatever qemu's default is.
qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu "$build/herd_matmul_check"
