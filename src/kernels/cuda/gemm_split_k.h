// Launch layout shared by the tensor-core GEMM kernels (matmul_quant_tc.cu, matmul_half_tc.cu):
// the weights of one launch laid end to end in row tiles, how many splits of K the launch takes,
// and the kernel adding the splits' partial sums. Internal.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "tensor/tensor.h"

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

// Weights sharing a launch, end to end in tiles of tile_rows rows: `out` (y, n_out, row0 of each
// weight; past the last one row0 = INT_MAX and n_out = 0), tile0[s] the first tile of weight s
// (tile0[s] = tiles for s >= n_segs), `tiles` in all. Plain kernel-argument data (by value).
struct SegmentLayout {
  SplitOutputs out;
  int tile0[kMaxSplitSegs + 1];
  int tiles;
};
SegmentLayout LayoutSegments(std::span<const TensorView> ws, std::span<float* const> ys, int tile_rows);

#ifdef __CUDACC__
// Where tile `tile` of layout l lies: its weight (segment) and that weight's first row in it.
struct TilePos {
  int seg;
  int row_in_seg;
};
__device__ __forceinline__ TilePos LocateTile(const SegmentLayout& l, int tile, int tile_rows) {
  int seg = 0;
#pragma unroll
  for (int s = 1; s < kMaxSplitSegs; ++s) seg += s < l.out.n_segs && tile >= l.tile0[s];
  return {seg, (tile - l.tile0[seg]) * tile_rows};
}
#endif

// The GPU's streaming multiprocessors (read once).
int MultiProcessors();

// Splits of K (1..max_splits, at most n_k) for `ctas` CTAs of one CTA per SM without splitting:
// the count whose last wave is fullest, each extra split charged 2% (partials written and
// summed); a split launch keeps at most 2 CTAs per SM (which bounds the partials:
// splits x n_tok x rows <= 2 x SMs x 128 x 128 for 128 x 128 tiles).
int ChooseSplits(int64_t ctas, int n_k, int max_splits);

// A launch's split of n_k units of K: ChooseSplits, then units per split such that no split is
// empty; partial = scratch when splits > 1 (checked: [splits][n_tok][rows] floats fit
// scratch_bytes), else nullptr.
struct SplitPlan {
  int splits;
  int per_split;
  float* partial;
};
SplitPlan PlanSplits(int64_t ctas, int n_k, int max_splits, int64_t n_tok, int rows, void* scratch,
                     size_t scratch_bytes);
// The same split without partials (a kernel that adds its splits itself): partial = nullptr.
SplitPlan PlanSplits(int64_t ctas, int n_k, int max_splits);

// y[seg][t, r] = sum over s < splits of partial[s][t][row0[seg] + r], added in split order
// (deterministic). partial: [splits][n_tok][total_rows] float. Launched with PDL.
void SumSplits(const SplitOutputs& o, const float* partial, int splits, int64_t n_tok, cudaStream_t stream);
// The same for one output y [n_tok, rows] of partial [splits][n_tok][rows].
void SumSplitsInto(float* y, int64_t rows, const float* partial, int splits, int64_t n_tok, cudaStream_t stream);

}  // namespace herd::cuda::internal
