// LayoutSegments (host only, runs without a GPU): weights of one launch laid end to end in row
// tiles, as the tensor-core GEMM kernels find a tile's weight and the split-K sum a row's output.
#include "kernels/cuda/gemm_split_k.h"

#include <gtest/gtest.h>

#include <climits>
#include <vector>

namespace herd::cuda::internal {
namespace {

TEST(LayoutSegmentsTest, TilesRowsAndOutputsOfEachWeight) {
  std::vector<uint16_t> dummy(8);
  // Q/K/V-like: 300 rows (3 tiles of 128, the last partial), 128 rows (1), 1 row (1).
  const TensorView ws[] = {TensorView::Matrix(DType::kF16, 300, 8, dummy.data()),
                           TensorView::Matrix(DType::kF16, 128, 8, dummy.data()),
                           TensorView::Matrix(DType::kF16, 1, 8, dummy.data())};
  float y0, y1, y2;
  float* const ys[] = {&y0, &y1, &y2};
  const SegmentLayout l = LayoutSegments(ws, ys, 128);
  EXPECT_EQ(l.tiles, 5);
  EXPECT_EQ(l.out.n_segs, 3);
  EXPECT_EQ(l.out.total_rows, 429);
  const int tile0[] = {0, 3, 4, 5, 5};
  const int row0[] = {0, 300, 428, INT_MAX};
  const int n_out[] = {300, 128, 1, 0};
  for (int s = 0; s <= kMaxSplitSegs; ++s) EXPECT_EQ(l.tile0[s], tile0[s]) << s;
  for (int s = 0; s < kMaxSplitSegs; ++s) {
    EXPECT_EQ(l.out.row0[s], row0[s]) << s;
    EXPECT_EQ(l.out.n_out[s], n_out[s]) << s;
  }
  EXPECT_EQ(l.out.y[0], &y0);
  EXPECT_EQ(l.out.y[2], &y2);
  EXPECT_EQ(l.out.y[3], nullptr);

  // One weight in 64-row tiles (the SwiGLU kernel's gate rows).
  const SegmentLayout g = LayoutSegments({ws, 1}, {ys, 1}, 64);
  EXPECT_EQ(g.tiles, 5);
  EXPECT_EQ(g.out.total_rows, 300);
  for (int s = 1; s <= kMaxSplitSegs; ++s) EXPECT_EQ(g.tile0[s], 5) << s;
  for (int s = 1; s < kMaxSplitSegs; ++s) EXPECT_EQ(g.out.row0[s], INT_MAX) << s;
}

}  // namespace
}  // namespace herd::cuda::internal
