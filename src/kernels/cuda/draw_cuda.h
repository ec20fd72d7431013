// Sampling on the GPU without top-k (Backend::DrawRows): each logit row's drawn id, so only ids
// leave the device. Semantics and arithmetic: ref::DrawRow (kernels/draw.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/draw.h"

namespace herd::cuda {

// ids[r] = ref::DrawRow(x + r * n_cols, n_cols, draws[r]); x: [n_rows, n_cols] float, draws:
// [n_rows], ids: [n_rows], all device memory. One block of 1024 threads per row (up to 65,535
// rows); a greedy row reads x once, a draw 3 times (top_p = 1) or 8 times (top_p < 1, four
// 8-bit radix passes for the nucleus), plus 256 ids for the walk. Programmatic dependent
// launch: x may come from the kernel before.
void DrawRows(const float* x, int64_t n_rows, int64_t n_cols, const RowDraw* draws, int32_t* ids, cudaStream_t stream);

// ref::PenalizeRow on each row r of x: [n_rows, n_cols] with penalties[r] over entries; one
// block of 128 threads per row, one thread per entry. Programmatic dependent launch.
void PenalizeRows(float* x, int64_t n_rows, int64_t n_cols, const RowPenalty* penalties, const PenaltyEntry* entries,
                  cudaStream_t stream);

// stats[r] = ref::LogprobStatsOfRow(row r of x, n_cols, ids[r]); one block of 1024 threads per
// row, two passes (max, then the double sum). Programmatic dependent launch.
void LogprobStatsRows(const float* x, int64_t n_rows, int64_t n_cols, const int32_t* ids, RowLogprobStats* stats,
                      cudaStream_t stream);

}  // namespace herd::cuda
