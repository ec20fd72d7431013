// Leave-one-out profiling hook of the CUDA backend's ops (cuda_backend.cu). Internal.
#pragma once

#ifdef HERD_DIAG_SKIP_OPS
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#endif

namespace herd::cuda {

// Leave-one-out profiling (diagnostic builds only; the device has no timeline profiler and ncu
// times kernels outside the graph): built with -DHERD_DIAG_SKIP_OPS (bench/cuda/build_variants.sh
// src/kernels/cuda/cuda_backend.cu,src/kernels/cuda/attention_cuda.cu "diag -DHERD_DIAG_SKIP_OPS"
// -- herd), HERD_DIAG_SKIP=op,... skips those ops of single-token batches: qkv, o, down, glu (gate/up
// and SwiGLU), head, attn, rope, norm, merge (the attention split merge), so that the decode
// step's time with and without an op gives its cost inside the graph. Outputs are wrong in such
// runs; normal builds have no hook.
#ifdef HERD_DIAG_SKIP_OPS
inline bool DiagSkip(const char* what, int64_t n_tok) {
  const char* e = std::getenv("HERD_DIAG_SKIP");
  if (e == nullptr || n_tok != 1) return false;
  const std::string list = std::string(",") + e + ",";
  return list.find(std::string(",") + what + ",") != std::string::npos;
}
// In a CudaBackend op: skip it (dropping any fusion hint) when listed.
#define DIAG_SKIP(what, n)               \
  if (::herd::cuda::DiagSkip(what, n)) { \
    ForgetFusion();                      \
    return;                              \
  }
// HERD_DIAG_SHARED_KEEP=K: the Q/K/V MatMulShared of single-token batches runs only its first K weights.
inline size_t DiagSharedKeep(size_t n, int64_t n_tok) {
  const char* e = std::getenv("HERD_DIAG_SHARED_KEEP");
  return e == nullptr || n_tok != 1 ? n : std::min<size_t>(n, std::strtoul(e, nullptr, 10));
}
#else
#define DIAG_SKIP(what, n)
#endif

}  // namespace herd::cuda
