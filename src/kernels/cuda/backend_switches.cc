#include "kernels/cuda/backend_switches.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace herd::cuda {
namespace {

bool EnvOn(const char* name, bool fallback) {
  const char* e = std::getenv(name);
  return e == nullptr ? fallback : std::strcmp(e, "0") != 0;
}

int64_t EnvCols(const char* name, int64_t fallback) {
  const char* e = std::getenv(name);
  return e == nullptr ? fallback : std::max<int64_t>(0, std::atoll(e));
}

}  // namespace

BackendSwitches BackendSwitches::FromEnv() {
  BackendSwitches s;
  s.graphs = EnvOn("HERD_CUDA_GRAPHS", s.graphs);
  s.pinned_d2h = EnvOn("HERD_CUDA_PINNED_D2H", s.pinned_d2h);
  s.kernel_copies = EnvOn("HERD_CUDA_KERNEL_COPIES", s.kernel_copies);
  s.fuse = EnvOn("HERD_CUDA_FUSE", s.fuse);
  s.fuse_inputs = s.fuse && EnvOn("HERD_CUDA_FUSE_INPUT", s.fuse_inputs);
  s.norm_in_gemv_max_cols = s.fuse_inputs ? EnvCols("HERD_CUDA_NORM_IN_GEMV", s.norm_in_gemv_max_cols) : 0;
  s.norm_in_qkv_min_cols = EnvCols("HERD_CUDA_NORM_IN_QKV", s.norm_in_qkv_min_cols);
  if (s.norm_in_qkv_min_cols == 0) s.norm_in_qkv_min_cols = INT64_MAX;  // 0: off
  s.norm_in_gemv_q8_0_min_cols = EnvCols("HERD_CUDA_NORM_IN_GEMV_Q8_0", s.norm_in_gemv_q8_0_min_cols);
  if (s.norm_in_gemv_q8_0_min_cols == 0) s.norm_in_gemv_q8_0_min_cols = INT64_MAX;  // 0: off
  s.attn_quant_out = s.fuse_inputs && EnvOn("HERD_CUDA_ATTN_QUANT_OUT", s.attn_quant_out);
  s.attn_half_out = s.fuse_inputs && EnvOn("HERD_CUDA_ATTN_HALF_OUT", s.attn_half_out);
  s.norm_pdl_after_blas = EnvOn("HERD_CUDA_NORM_PDL_AFTER_BLAS", s.norm_pdl_after_blas);
  return s;
}

}  // namespace herd::cuda
