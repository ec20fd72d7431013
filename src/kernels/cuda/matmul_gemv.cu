// GEMV-style matmul kernels for quantized weights at small n_tok (decode): each weight row is read
// from device memory once per group of up to 8 tokens and reused for all of them. The work split
// and launch helpers are shared with the float GEMV (gemv_common.cuh, matmul_gemv_float.cu).
//
// Work split: a thread block of kWarps warps covers kWarps / wpr output rows; the `wpr` warps of
// one row (1, 2 or 4, chosen per call so that no warp has more than split_stages stages and
// the grid has enough warps) take interleaved parts of the row and add their sums through
// shared memory. Up to kMaxSegs weights sharing x (Q/K/V, gate/up) run as one launch over their
// concatenated rows. The quantized kernel's blocks may also loop over several row groups
// (GemvOptions::groups_per_block; 0 = persistent, one wave), prefetching the next row while
// computing one. Measured on H100 (bench/results/cuda-matmul-2026-11-22.md): one group per
// block is best except for many rows of a single step (n_in <= 2048, >= 8192 rows: two).
//
// Quantized weights: a row is cut into steps of 2048 values (whole blocks); each warp streams
// the steps of its part of the row through a ring of kStages shared-memory buffers (cp.async,
// 16-byte); in a step, lane L decodes its 64 weight codes (quant_dot.cuh: a quarter of a
// K-quant block or two 32-value blocks) once and multiplies them by dp4a with the int8
// activations of every token row (the reference's activation format, quant_act.cu), scaling
// the integer block sums exactly as ref::VecDot does.
//
// Ordering (programmatic dependent launch, PDL): the activation quantization kernel and the
// quantized GEMV are launched with programmatic stream serialization, so each may start while
// the kernel before it still runs; each waits (griddepcontrol.wait) before reading or writing
// anything that kernel or earlier ones touch (the GEMV issues only its weight copies first).
// The GEMV kernels let their successor start early (griddepcontrol.launch_dependents at entry):
// a kernel launched after them with programmatic stream serialization must itself
// griddepcontrol.wait before touching y. Kernels launched normally are unaffected.
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <climits>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemv_common.cuh"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/quant_decode.cuh"
#include "kernels/cuda/quant_dot.cuh"
#include "kernels/cuda/quant_stage.cuh"
#include "kernels/quants.h"

namespace herd::cuda::internal {
namespace {

using namespace gemv;  // NOLINT(google-build-using-namespace): the shared GEMV helpers

struct QuantArgs {
  Segs segs;
  int64_t row_bytes;
  int blocks_per_row;
  int n_steps;   // 2048-value steps per row (the last may be partial)
  int wpr;       // warps per row
  bool aligned;  // rows start 16-byte aligned: cp.async path
  QuantizedActivations x;
  int n_tok;  // <= NT
};

// Lane `lane`'s activations of token row t for step `step` (quant_dot.cuh, matmul_internal.h).
template <DType T>
__device__ __forceinline__ void LoadAct(const QuantizedActivations& x, int t, int step, int lane, ActLane& a) {
  const uint4* q = reinterpret_cast<const uint4*>(x.q + t * x.q_stride + static_cast<int64_t>(step) * kStepValues);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint4 v = __ldg(q + 32 * i + lane);
    a.q[4 * i] = v.x, a.q[4 * i + 1] = v.y, a.q[4 * i + 2] = v.z, a.q[4 * i + 3] = v.w;
  }
  constexpr bool kSums = T != DType::kQ8_0 && T != DType::kQ4_1 && T != DType::kQ5_1;
  if constexpr (kSums) {
    const uint2 sv = __ldg(reinterpret_cast<const uint2*>(x.sums + t * x.g_stride + step * (kStepValues / 16)) + lane);
    a.s[0] = static_cast<int16_t>(sv.x & 0xFFFFu), a.s[1] = static_cast<int>(sv.x) >> 16;
    a.s[2] = static_cast<int16_t>(sv.y & 0xFFFFu), a.s[3] = static_cast<int>(sv.y) >> 16;
  } else {
    a.s[0] = a.s[1] = a.s[2] = a.s[3] = 0;
  }
  const float* d = x.d + t * x.d_stride;
  if constexpr (QBlock<T>::kValues == 256) {
    a.d0 = __ldg(d + step * (kStepValues / 256) + (lane >> 2));
    a.d1 = 0.f;
  } else {
    const float2 dd = __ldg(reinterpret_cast<const float2*>(d + step * (kStepValues / 32)) + lane);
    a.d0 = dd.x, a.d1 = dd.y;
  }
  if constexpr (T == DType::kQ4_1 || T == DType::kQ5_1) {
    const float2 ss = __ldg(reinterpret_cast<const float2*>(x.s + t * x.d_stride + step * (kStepValues / 32)) + lane);
    a.m0 = ss.x, a.m1 = ss.y;
  } else {
    a.m0 = a.m1 = 0.f;
  }
}

// Persistent over rows: block b takes row groups b, b + gridDim.x, ... (kWarps / wpr rows per
// group); the wpr warps of a row take its steps interleaved, each streaming its steps through
// its own ring of kStages shared-memory buffers, so the copies of the next steps (of this row
// or the next) are in flight while one is computed. Per step each lane decodes its 64 weight
// codes once and multiplies them with every token row (quant_dot.cuh).
template <DType T, int NT>
__global__ void __launch_bounds__(kWarps * 32) GemvQuantKernel(const __grid_constant__ QuantArgs a) {
  using B = QBlock<T>;
  constexpr int kBuf = B::kStepBytes + kSmemPad;
  __shared__ __align__(16) uint8_t smem[kWarps][kStages][kBuf];
  PdlTrigger();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wpr = a.wpr, rpb = kWarps / wpr;
  const int part = warp % wpr;
  const int total = a.segs.total_rows;
  const int row_stride = gridDim.x * rpb;
  const int first_row = blockIdx.x * rpb + warp / wpr;
  const int r0 = blockIdx.x * rpb;
  const int groups = r0 < total ? (total - r0 + row_stride - 1) / row_stride : 0;  // block-uniform
  const int sp = (a.n_steps + wpr - 1) / wpr;  // steps per part (the last part may have fewer)
  const int len = groups * sp;

  // Blocks of step `step` (0 when the row or the step does not exist).
  auto step_blocks = [&](int gr, int step) {
    return gr < total && step < a.n_steps ? min(B::kStep, a.blocks_per_row - step * B::kStep) : 0;
  };
  auto issue = [&](int j) {
    if (j < len) {
      const int k = j / sp;
      const int gr = first_row + k * row_stride;
      const int step = part + (j - k * sp) * wpr;
      const int nb = step_blocks(gr, step);
      if (nb > 0) {
        const int seg = FindSeg(a.segs, gr);
        const int64_t row = gr - a.segs.row0[seg];
        StageCopy(smem[warp][j % kStages],
                  a.segs.w[seg] + row * a.row_bytes + static_cast<int64_t>(step) * B::kStepBytes, nb * B::kBytes,
                  a.aligned, lane, 32);
      }
    }
    CpAsyncCommit();
  };
#pragma unroll
  for (int j = 0; j < kStages - 1; ++j) issue(j);
  PdlWait();  // x comes from the kernel before this one

  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.f;
  for (int j = 0; j < len; ++j) {
    issue(j + kStages - 1);
    CpAsyncWait<kStages - 1>();
    __syncwarp();
    const int k = j / sp, s = j - k * sp;
    const int gr = first_row + k * row_stride;
    const int step = part + s * wpr;
    const int nb = step_blocks(gr, step);
    if (nb > 0 && LaneActive<T>(lane, nb)) {
      Lane<T> w;
      LaneLoad<T>(w, smem[warp][j % kStages], lane, nb);
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        if (t < a.n_tok) {
          ActLane x;
          LoadAct<T>(a.x, t, step, lane, x);
          acc[t] += w.Dot(x);
        }
      }
    }
    __syncwarp();  // every lane is done with this buffer before it is refilled
    if (s == sp - 1) {
      const bool valid = gr < total;
      const int seg = FindSeg(a.segs, valid ? gr : 0);
      ReduceAndStore<NT>(acc, wpr, valid, a.segs.y[seg], a.segs.n_out[seg], gr - a.segs.row0[seg], a.n_tok);
#pragma unroll
      for (int t = 0; t < NT; ++t) acc[t] = 0.f;
    }
  }
  CpAsyncWait<0>();
}

std::atomic<bool> g_pdl{true};
std::atomic<int> g_groups_per_block{-1};
std::atomic<int> g_split_stages{kStages - 1};

template <DType T, int NT>
struct QuantKernel {
  static constexpr auto kFn = GemvQuantKernel<T, NT>;
};

}  // namespace

bool GemvProgrammaticLaunch() { return g_pdl.load(std::memory_order_relaxed); }

void SetGemvOptions(const GemvOptions& o) {
  g_pdl.store(o.pdl);
  g_groups_per_block.store(o.groups_per_block);
  g_split_stages.store(o.split_stages);
  gemv::SetFloatGemvOptions(o);
}

void GemvQuant(std::span<const TensorView> ws, std::span<float* const> ys, const QuantizedActivations& x, int64_t n_tok,
               cudaStream_t stream) {
  if (ws.empty() || n_tok == 0) return;
  const DType type = ws[0].type;
  const int64_t n_in = ws[0].cols();
  HERD_CHECK_MSG(x.format == ref::VecDotType(type), "GemvQuant: %s weights need %s activations, got %s",
                 DTypeName(type).data(), DTypeName(ref::VecDotType(type)).data(), DTypeName(x.format).data());
  const bool ok = DispatchQuant(type, [&]<DType T>() {
    using B = QBlock<T>;
    HERD_CHECK(n_in % B::kValues == 0);
    for (size_t first = 0; first < ws.size(); first += kMaxSegs) {
      const size_t n = std::min<size_t>(kMaxSegs, ws.size() - first);
      QuantArgs a{};
      MakeSegs(ws, ys, first, n, &a.segs);
      if (a.segs.total_rows == 0) continue;
      a.row_bytes = static_cast<int64_t>(ws[first].row_bytes());
      a.blocks_per_row = static_cast<int>(n_in / B::kValues);
      a.n_steps = static_cast<int>((n_in + kStepValues - 1) / kStepValues);
      a.aligned = a.row_bytes % 16 == 0;
      for (size_t k = first; k < first + n; ++k) {
        HERD_CHECK(ws[k].type == type && ws[k].cols() == n_in);
        a.aligned = a.aligned && Aligned16(ws[k].data);
      }
      a.wpr = WarpsPerRow(a.segs.total_rows, a.n_steps, g_split_stages.load(std::memory_order_relaxed));
      const int rows_per_block = kWarps / a.wpr;
      const int blocks = (a.segs.total_rows + rows_per_block - 1) / rows_per_block;
      int groups_per_block = g_groups_per_block.load(std::memory_order_relaxed);
      if (groups_per_block < 0) groups_per_block = a.n_steps == 1 && a.segs.total_rows >= 8192 ? 2 : 1;
      for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
        QuantArgs at = a;
        at.n_tok = static_cast<int>(std::min<int64_t>(kMaxTok, n_tok - t0));
        at.x = x;
        at.x.q += t0 * x.q_stride;
        at.x.d += t0 * x.d_stride;
        at.x.s += t0 * x.d_stride;
        at.x.sums += t0 * x.g_stride;
        for (int k = 0; k < kMaxSegs; ++k)
          if (at.segs.y[k] != nullptr) at.segs.y[k] += t0 * at.segs.n_out[k];
        LaunchByTok<QuantKernel, T>(at, blocks, groups_per_block, GemvProgrammaticLaunch(), stream);
      }
    }
  });
  HERD_CHECK_MSG(ok, "GemvQuant: %s is not a quantized weight type", DTypeName(type).data());
}

}  // namespace herd::cuda::internal
