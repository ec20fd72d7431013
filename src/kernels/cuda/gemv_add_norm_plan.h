// The shared-memory ring of one GemvQuantAddNorm launch (gemv_add_norm.cu), chosen on the host:
// consumer warps, rows per chunk, stage size and count, and the dynamic shared memory they take.
// Host code only (no GPU needed to test it: gemv_add_norm_plan_test.cc).
#pragma once

#include <cstdint>

namespace herd::cuda::internal {

inline constexpr int64_t kAddNormStepValues = 2048;  // quant_dot.cuh's kStepValues (checked there)

struct AddNormShape {
  int n_steps = 0;        // 2048-value steps per row (<= 31)
  int64_t row_bytes = 0;  // the widest row type's bytes per row
  int total_rows = 0;     // rows of the launch (all weights)
  int sms = 0;            // multiprocessors: one CTA each, at most total_rows
  int warps = 16;         // wanted consumer warps
  int stages = 4;         // wanted ring stages
  int items = 2;          // wanted (row, step) items per warp in a chunk
  int64_t max_smem = 200 * 1024;
  int smem_pad = 16;       // slack bytes per stage (kSmemPad)
  int partial_floats = 1;  // partial-sum floats per (row, step) item
  bool norm = true;        // the CTAs compute the quantized activation row (false: GemvQuantRing)
};

struct AddNormPlan {
  int consumers = 0;      // consumer warps, a multiple of n_steps
  int rows = 0;           // rows per chunk (items x consumers / n_steps)
  int items = 0;          // items per warp in a chunk as planned (<= the wanted count)
  int stage_bytes = 0;    // a multiple of 128
  int stages = 0;         // >= 2
  int partial_bytes = 0;  // per-CTA partial sums, [rows of a CTA + 1][n_steps][partial_floats], 16-byte rounded
  int64_t smem = 0;       // stages x stage_bytes + partial_bytes + the Q8_K / Q8_0 activation row
  int grid = 0;
};

// The plan for `s`, or false where none fits: more steps than 31, an activation row wider than
// two octets per consumer thread, or not even two stages of one item per warp in max_smem.
// Stages drop first (to 2), then items per warp (to 1), so a wanted shape that does not fit a
// wide row still launches with fewer rows per chunk.
bool PlanAddNormRing(const AddNormShape& s, AddNormPlan* plan);

}  // namespace herd::cuda::internal
