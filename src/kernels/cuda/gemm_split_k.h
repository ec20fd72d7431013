// Split-K for the tensor-core GEMM kernels (matmul_quant_tc.cu, matmul_half_tc.cu): how many
// splits of K a launch takes, and the kernel adding the splits' partial sums. Internal.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace herd::cuda::internal {

constexpr int kMaxSplitSegs = 4;  // weights per launch

// Where the summed outputs go: segment s (weight s of the launch) owns rows
// [row0[s], row0[s] + n_out[s]) of the concatenation and writes y[s] [n_tok, n_out[s]].
struct SplitOutputs {
  float* y[kMaxSplitSegs];
  int n_out[kMaxSplitSegs];
  int row0[kMaxSplitSegs];  // INT_MAX past n_segs
  int n_segs;
  int total_rows;
};

// The GPU's streaming multiprocessors (read once).
int MultiProcessors();

// Splits of K (1..max_splits, at most n_k) for `ctas` CTAs of one CTA per SM without splitting:
// the count whose last wave is fullest, each extra split charged 2% (partials written and
// summed); a split launch keeps at most 2 CTAs per SM (which bounds the partials:
// splits x n_tok x rows <= 2 x SMs x 128 x 128 for 128 x 128 tiles).
int ChooseSplits(int64_t ctas, int n_k, int max_splits);

// y[seg][t, r] = sum over s < splits of partial[s][t][row0[seg] + r], added in split order
// (deterministic). partial: [splits][n_tok][total_rows] float. Launched with PDL.
void SumSplits(const SplitOutputs& o, const float* partial, int splits, int64_t n_tok, cudaStream_t stream);

}  // namespace herd::cuda::internal
