// Split-K helpers of the tensor-core GEMM kernels (gemm_split_k.h).
#include <algorithm>

#include "base/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm_split_k.h"
#include "kernels/cuda/launch_pdl.cuh"

namespace herd::cuda::internal {
namespace {

__global__ void SumSplitsKernel(const __grid_constant__ SplitOutputs o, const float* __restrict__ partial, int splits,
                                int n_tok) {
  PdlTrigger();
  PdlWait();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<int64_t>(n_tok) * o.total_rows) return;
  const int t = static_cast<int>(i / o.total_rows), gr = static_cast<int>(i % o.total_rows);
  int seg = 0;
#pragma unroll
  for (int s = 1; s < kMaxSplitSegs; ++s) seg += s < o.n_segs && gr >= o.row0[s];
  float v = 0.f;
  for (int s = 0; s < splits; ++s) v += partial[(static_cast<int64_t>(s) * n_tok + t) * o.total_rows + gr];
  o.y[seg][static_cast<int64_t>(t) * o.n_out[seg] + gr - o.row0[seg]] = v;
}

}  // namespace

int MultiProcessors() {
  static const int sms = [] {
    int dev = 0, n = 0;
    HERD_CUDA_CHECK(cudaGetDevice(&dev));
    HERD_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return std::max(1, n);
  }();
  return sms;
}

int ChooseSplits(int64_t ctas, int n_k, int max_splits) {
  const int sms = MultiProcessors();
  int best = 1;
  double best_score = 0;
  for (int s = 1; s <= std::min(max_splits, n_k); ++s) {
    const int64_t n = ctas * s;
    if (s > 1 && n > 2 * sms) break;
    const double fill = static_cast<double>(n) / static_cast<double>((n + sms - 1) / sms * sms);
    const double score = fill * (1.0 - 0.02 * (s - 1));
    if (score > best_score + 1e-9) best = s, best_score = score;
  }
  return best;
}

void SumSplits(const SplitOutputs& o, const float* partial, int splits, int64_t n_tok, cudaStream_t stream) {
  const int64_t n = n_tok * o.total_rows;
  HERD_CHECK(n_tok < (int64_t{1} << 31) && (n + 255) / 256 < (int64_t{1} << 31));
  if (n == 0) return;
  LaunchPdl(SumSplitsKernel, dim3(static_cast<unsigned>((n + 255) / 256)), dim3(256), 0, stream, o, partial, splits,
            static_cast<int>(n_tok));
}

}  // namespace herd::cuda::internal
