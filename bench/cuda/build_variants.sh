#!/usr/bin/env bash
# Builds variants of one CUDA kernel source for A/B runs on the device machine, without
# touching the build tree: each variant recompiles SRC with extra nvcc flags (-D switches, or
# -I DIR to shadow a header), puts the object into a copy of the static library that holds it,
# and relinks the given targets against that copy. Binaries land in OUT_DIR (default
# .dev-bench) as TARGET_NAME, stripped, then all are packed into OUT_DIR/v.tgz for `carry`
# (unpack there with `tar xzf v.tgz`).
#   bench/cuda/build_variants.sh SRC[,SRC...] "NAME [NVCC FLAGS...]" ... -- TARGET...
# (several sources of one library: each is recompiled with the variant's flags)
# e.g. bench/cuda/build_variants.sh src/kernels/cuda/matmul_quant_tc.cu "base" "nowg -DHERD_QTC_WGMMA=0" \
#        -- herd_cuda_matmul_bench herd_cuda_matmul_test
# Needs a configured and built tree in BUILD (default build); the compile and link lines are
# read from ninja (`ninja -t commands`), so they follow the CMake configuration.
set -euo pipefail
BUILD="${BUILD:-build}"
OUT_DIR="${OUT_DIR:-.dev-bench}"
IFS=, read -r -a srcs <<<"$1"
for i in "${!srcs[@]}"; do srcs[$i]="$(realpath "${srcs[$i]}")"; done
shift
variants=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do variants+=("$1"); shift; done
[ "${1:-}" = "--" ] || { echo "usage: $0 SRC \"NAME [FLAGS...]\"... -- TARGET..." >&2; exit 2; }
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || { echo "no targets" >&2; exit 2; }
out="$(realpath -m "$OUT_DIR")"
rm -rf "$out"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$BUILD"
# The compile line of each source (its object is the one the library holds).
compiles=() objs=()
for src in "${srcs[@]}"; do
  compile="$(ninja -t commands | grep -F -- "-c $src" | grep -- "-o " | head -1)"
  [ -n "$compile" ] || { echo "no compile line for $src in $BUILD" >&2; exit 1; }
  compiles+=("$compile")
  objs+=("$(sed -E 's/.* -o ([^ ]+).*/\1/' <<<"$compile")")
done
lib="$(ninja -t query "${objs[0]}" | awk '/outputs:/{getline; print $1; exit}')"
[ -n "$lib" ] || { echo "no library holds ${objs[0]}" >&2; exit 1; }
for v in "${variants[@]}"; do
  read -r name flags <<<"$v"
  cp "$lib" "$tmp/lib.a"
  for i in "${!compiles[@]}"; do
    # Extra flags go right after the compiler, so -I DIR shadows the tree's headers.
    o="$tmp/$(basename "${objs[$i]}")"
    cmd="$(sed -E "s#^(\S*ccache )?(\S*nvcc)#\2 ${flags:-}#; s# -MD -MT \S+ -MF \S+##; s# -o \S+# -o $o#" <<<"${compiles[$i]}")"
    eval "$cmd"
    (cd "$tmp" && ar r lib.a "$(basename "$o")" 2>/dev/null)
  done
  for t in "${targets[@]}"; do
    link="$(ninja -t commands "$t" | tail -1 | sed -E 's/^: && //; s/ && (:|cd ).*$//')"
    exe="$(sed -E 's/.* -o ([^ ]+).*/\1/' <<<"$link")"
    link="${link//$lib/$tmp/lib.a}"
    link="${link/ -o $exe / -o $out/${t}_$name }"
    eval "$link"
    strip "$out/${t}_$name"
  done
  echo "built $name"
done
cd "$out"
tar czf "$tmp/v.tgz" ./*
rm -f ./*
mv "$tmp/v.tgz" .
ls -la "$out"
echo "carry $OUT_DIR; on the device: cd $OUT_DIR && tar xzf v.tgz"
