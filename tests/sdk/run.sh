#!/usr/bin/env bash
# The SDK end-to-end tests (herd serve driven by the official openai, @anthropic-ai/sdk and ollama
# npm packages, pinned in package-lock.json).
#
#   tests/sdk/run.sh HERD_BINARY [TEST_FILE...]   install if needed (npm ci), then run the tests
#   tests/sdk/run.sh --install                    only install: npm ci unless node_modules is current
#   tests/sdk/run.sh --no-install HERD_BINARY ... run only; ctest uses this (the network is not touched)
#
# Default test files: openai, anthropic, ollama, auth.
# Exit 77 (ctest's SKIP_RETURN_CODE) when node >= 18 or npm is missing, or with --no-install when
# node_modules is not installed from the lock file; with HERD_REQUIRE_SDK_TESTS=1 (CI) those are
# failures (exit 1) instead.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mode=auto
case "${1:-}" in
  --install) mode=install; shift ;;
  --no-install) mode=run; shift ;;
esac

skip() {
  if [ "${HERD_REQUIRE_SDK_TESTS:-0}" = 1 ]; then
    echo "FAIL sdk tests (HERD_REQUIRE_SDK_TESTS=1): $*" >&2
    exit 1
  fi
  echo "SKIP sdk tests: $*" >&2
  exit 77
}
have_node() {
  command -v node >/dev/null || return 1
  command -v npm >/dev/null || return 1
  [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 18 ]
}
# node_modules/.package-lock.json (written by npm ci) lists the installed packages; the install is
# current when every package of the lock file is there in the locked version.
installed() {
  (cd "$here" && node -e '
    const want = require("./package-lock.json").packages;
    const have = require("./node_modules/.package-lock.json").packages;
    for (const k of Object.keys(want)) if (k && (!have[k] || have[k].version !== want[k].version)) process.exit(1);
  ' 2>/dev/null)
}
install() {
  installed && return 0
  echo "sdk tests: npm ci in $here"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
}

if [ "$mode" = install ]; then
  if ! have_node; then
    [ "${HERD_REQUIRE_SDK_TESTS:-0}" = 1 ] && skip "node >= 18 and npm are needed"
    echo "sdk tests: node >= 18 and npm not found; the SDK tests will be skipped (bash scripts/setup.sh installs them)"
    exit 0
  fi
  install
  exit $?
fi

if [ $# -lt 1 ]; then
  echo "usage: $0 [--no-install] HERD_BINARY [TEST_FILE...] | $0 --install" >&2
  exit 2
fi
[ -x "$1" ] || { echo "sdk tests: $1 is not an executable" >&2; exit 2; }
HERD_BIN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
export HERD_BIN
shift

have_node || skip "node >= 18 and npm are needed (bash scripts/setup.sh installs them)"
if [ "$mode" = run ]; then
  installed || skip "node_modules is not installed from package-lock.json (run: tests/sdk/run.sh --install, or make test)"
else
  install
fi
cd "$here"
if [ $# -eq 0 ]; then
  set -- openai.test.mjs anthropic.test.mjs ollama.test.mjs auth.test.mjs
fi
exec node --test "$@"
