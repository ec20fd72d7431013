#include "kernels/cuda/gemv_add_norm_plan.h"

#include <algorithm>

namespace herd::cuda::internal {

bool PlanAddNormRing(const AddNormShape& s, AddNormPlan* plan) {
  if (s.n_steps < 1 || s.n_steps > 31 || s.total_rows < 1 || s.sms < 1) return false;
  AddNormPlan p;
  p.consumers = s.n_steps * std::max(1, s.warps / s.n_steps);
  const int per_step = p.consumers / s.n_steps;
  const int64_t q_stride = s.n_steps * kAddNormStepValues;
  if (s.norm && q_stride > int64_t{2} * 8 * 32 * p.consumers) return false;  // two octets a thread
  p.grid = std::min(s.total_rows, s.sms);
  const int64_t rows_per_cta = (s.total_rows + p.grid - 1) / p.grid;
  const int64_t partial = (rows_per_cta + 1) * s.n_steps * int64_t{std::max(1, s.partial_floats)} * 4;
  p.partial_bytes = static_cast<int>((partial + 15) / 16 * 16);
  // The activation row: int8 values, d per <= 32, sums per 16 (none without the norm).
  const int64_t format = s.norm ? q_stride + q_stride / 8 + q_stride / 8 : 0;
  for (p.items = std::max(1, s.items); p.items >= 1; --p.items) {
    p.rows = p.items * per_step;
    const int64_t stage = (p.rows * s.row_bytes + s.smem_pad + 127) / 128 * 128;
    p.stage_bytes = static_cast<int>(stage);
    for (p.stages = std::max(2, s.stages); p.stages > 2; --p.stages)
      if (p.stages * stage + p.partial_bytes + format <= s.max_smem) break;
    p.smem = p.stages * stage + p.partial_bytes + format;
    if (p.smem <= s.max_smem) {
      *plan = p;
      return true;
    }
  }
  return false;
}

}  // namespace herd::cuda::internal
