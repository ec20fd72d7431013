#!/usr/bin/env bash
# Installs what herd needs to build and test, from Debian 12 packages only. Idempotent:
# installs only what is missing. Uses sudo when not root.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config python3
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev
  libtomlplusplus-dev               # herd serve --config (TOML)
  libboost1.81-dev                  # Boost.Beast/Asio (header-only) for src/http
  libssl-dev                        # OpenSSL: sha256 of pulled blobs, TLS to https registries
  g++-aarch64-linux-gnu qemu-user   # the NEON kernels are cross-built and tested under qemu
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js >= 18 and npm for the SDK end-to-end tests (tests/sdk). A node already on PATH (e.g.
# NodeSource's nodejs, which bundles npm) is used as it is; otherwise Debian's nodejs and npm.
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$node_major" -lt 18 ]; then
  missing+=(nodejs npm)
elif ! command -v npm >/dev/null; then
  missing+=(npm)
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || true
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
