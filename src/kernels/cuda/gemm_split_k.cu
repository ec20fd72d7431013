// Split-K helpers of the tensor-core GEMM kernels (gemm_split_k.h).
#include <algorithm>
#include <climits>

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

SegmentLayout LayoutSegments(std::span<const TensorView> ws, std::span<float* const> ys, int tile_rows) {
  HERD_CHECK(ws.size() == ys.size() && ws.size() <= static_cast<size_t>(kMaxSplitSegs) && tile_rows > 0);
  SegmentLayout l{};
  int rows = 0;
  for (size_t s = 0; s < static_cast<size_t>(kMaxSplitSegs); ++s) {
    l.tile0[s] = l.tiles;
    if (s >= ws.size()) {
      l.out.row0[s] = INT_MAX;
      continue;
    }
    HERD_CHECK(ws[s].rows() < INT_MAX / 2 && rows + ws[s].rows() < INT_MAX / 2);
    l.out.y[s] = ys[s];
    l.out.n_out[s] = static_cast<int>(ws[s].rows());
    l.out.row0[s] = rows;
    l.tiles += (l.out.n_out[s] + tile_rows - 1) / tile_rows;
    rows += l.out.n_out[s];
  }
  l.tile0[kMaxSplitSegs] = l.tiles;
  l.out.n_segs = static_cast<int>(ws.size());
  l.out.total_rows = rows;
  return l;
}

SplitPlan PlanSplits(int64_t ctas, int n_k, int max_splits) {
  SplitPlan p{};
  p.splits = ChooseSplits(ctas, n_k, max_splits);
  p.per_split = (n_k + p.splits - 1) / p.splits;
  p.splits = (n_k + p.per_split - 1) / p.per_split;  // no empty split
  return p;
}

SplitPlan PlanSplits(int64_t ctas, int n_k, int max_splits, int64_t n_tok, int rows, void* scratch,
                     size_t scratch_bytes) {
  SplitPlan p = PlanSplits(ctas, n_k, max_splits);
  if (p.splits > 1) {
    const size_t need = static_cast<size_t>(p.splits) * static_cast<size_t>(n_tok) * static_cast<size_t>(rows) * 4;
    HERD_CHECK_MSG(scratch != nullptr && scratch_bytes >= need, "split-K: scratch of %zu bytes < %zu", scratch_bytes,
                   need);
    p.partial = static_cast<float*>(scratch);
  }
  return p;
}

void SumSplits(const SplitOutputs& o, const float* partial, int splits, int64_t n_tok, cudaStream_t stream) {
  const int64_t n = n_tok * o.total_rows;
  HERD_CHECK(n_tok < (int64_t{1} << 31) && (n + 255) / 256 < (int64_t{1} << 31));
  if (n == 0) return;
  LaunchPdl(SumSplitsKernel, dim3(static_cast<unsigned>((n + 255) / 256)), dim3(256), 0, stream, o, partial, splits,
            static_cast<int>(n_tok));
}

void SumSplitsInto(float* y, int64_t rows, const float* partial, int splits, int64_t n_tok, cudaStream_t stream) {
  HERD_CHECK(rows > 0 && rows < INT_MAX);
  SplitOutputs o{};
  o.y[0] = y;
  o.n_out[0] = static_cast<int>(rows);
  o.row0[0] = 0;
  for (int s = 1; s < kMaxSplitSegs; ++s) o.row0[s] = INT_MAX;
  o.n_segs = 1;
  o.total_rows = static_cast<int>(rows);
  SumSplits(o, partial, splits, n_tok, stream);
}

}  // namespace herd::cuda::internal
