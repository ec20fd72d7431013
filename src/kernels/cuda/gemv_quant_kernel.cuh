// The quantized GEMV kernel (matmul_gemv.cu has the work split and the launch policy), shared by
// the one-type instances (matmul_gemv.cu) and the mixed-pair instances (matmul_gemv_mixed.cu,
// compiled apart to keep each file's build short). Internal.
#pragma once

#include <cuda_fp16.h>

#include <climits>
#include <cstdint>

#include "kernels/cuda/gemv_common.cuh"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/quant_decode.cuh"
#include "kernels/cuda/quant_dot.cuh"
#include "kernels/cuda/quant_stage.cuh"

namespace herd::cuda::internal::gemv {

struct QuantArgs {
  Segs segs;
  int64_t row_bytes;   // of the T0 weights
  int64_t row_bytes1;  // of the T1 weights
  int t1_row0;         // first row (of the concatenation) of a T1 weight; INT_MAX: none
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

// Lane `lane`'s share of one step of one weight row (staged in `buf`, `nb` blocks) against
// every token row: acc[t] += w . x[t].
template <DType T, int NT>
__device__ __forceinline__ void DotStep(const uint8_t* buf, const QuantizedActivations& x, int step, int lane, int nb,
                                        int n_tok, float (&acc)[NT]) {
  if (!LaneActive<T>(lane, nb)) return;
  Lane<T> w;
  LaneLoad<T>(w, buf, lane, nb);
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (t < n_tok) {
      ActLane xl;
      LoadAct<T>(x, t, step, lane, xl);
      acc[t] += w.Dot(xl);
    }
  }
}

// HERD_GEMV_ACT_EARLY=0 (variant builds, A/B runs): one-token instances load a step's
// activations after the wait for its weights, as every instance did before 2026-11-26.
#ifndef HERD_GEMV_ACT_EARLY
#define HERD_GEMV_ACT_EARLY 1
#endif
#ifndef HERD_GEMV_ACT_EARLY_MIXED  // the same for launches of two types (0: off for them)
#define HERD_GEMV_ACT_EARLY_MIXED 1
#endif
// HERD_GEMV_FAST_DIV / HERD_GEMV_COPY_UNROLL (variant builds): the step index split by a float
// reciprocal instead of an integer division; whole aligned steps copied by an unrolled loop.
#ifndef HERD_GEMV_FAST_DIV
#define HERD_GEMV_FAST_DIV 1
#endif
#ifndef HERD_GEMV_COPY_UNROLL
#define HERD_GEMV_COPY_UNROLL 1
#endif
// HERD_GEMV_NO_MATH (timing builds only, wrong results): 1 skips the weight decode and dot
// products of one-token instances, 2 also their activation loads.
#ifndef HERD_GEMV_NO_MATH
#define HERD_GEMV_NO_MATH 0
#endif
// HERD_GEMV_FAST_SETUP=0 (variant builds, A/B runs): the work split's per-block values by integer
// divisions (three, ~70 of a one-token warp's ~615 instructions at 8B) instead of shifts by
// log2(wpr) and, where a block has a single row group, no division at all. H200 tg128 8B Q4_K_M
// 490.6 -> 499.7 tok/s with the shifts (8B Q4_K lm_head 90.6 -> 79.8 us); 8B Q8_0 381.3 -> 380.5.
#ifndef HERD_GEMV_FAST_SETUP
#define HERD_GEMV_FAST_SETUP 1
#endif

// Copies a step of `bytes` from src to dst (both 16-byte aligned) by the 32 lanes of a warp:
// kFull (a whole step of the type) unrolled, else StageCopy's loop.
template <int kFull>
__device__ __forceinline__ void StageCopyStep(uint8_t* dst, const uint8_t* src, int bytes, bool aligned, int lane) {
  if (HERD_GEMV_COPY_UNROLL && aligned && bytes == kFull) {
#pragma unroll
    for (int i = 0; i < (kFull / 16 + 31) / 32; ++i) {
      const int off = (lane + 32 * i) * 16;
      if ((i + 1) * 32 * 16 <= kFull || off < kFull) CpAsync16(dst + off, src + off);
    }
  } else {
    StageCopy(dst, src, bytes, aligned, lane, 32);
  }
}

// Persistent over rows: block b takes row groups b, b + gridDim.x, ... (kWarps / wpr rows per
// group); the wpr warps of a row take its steps interleaved, each streaming its steps through
// its own ring of kStages shared-memory buffers, so the copies of the next steps (of this row
// or the next) are in flight while one is computed. Per step each lane decodes its 64 weight
// codes once and multiplies them with every token row (quant_dot.cuh); one-token instances load
// the step's activations before waiting for its weights, so the two latencies overlap.
// Rows from a.t1_row0 on are of type T1 (T1 == T0: one type; else a pair with the same block
// size and activation format, e.g. Q4_K Q/K with a Q6_K V: one launch instead of two).
// kEarlyAct = false: the one-token instance without the early loads (fewer registers, more
// resident blocks; LaunchGemvQuant picks it where that fits the grid in one wave).
template <DType T0, DType T1, int NT, bool kEarlyAct = true>
__global__ void __launch_bounds__(kWarps * 32, NT == 1 ? HERD_GEMV_MIN_BLOCKS : 0)
    GemvQuantKernel(const __grid_constant__ QuantArgs a) {
  using B0 = QBlock<T0>;
  using B1 = QBlock<T1>;
  static_assert(B0::kValues == B1::kValues, "mixed launches need one block size");
  constexpr int kBuf = (B0::kStepBytes > B1::kStepBytes ? B0::kStepBytes : B1::kStepBytes) + kSmemPad;
  __shared__ __align__(16) uint8_t smem[kWarps][kStages][kBuf];
  PdlTrigger();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wpr = a.wpr;                 // 1, 2 or 4 (WarpsPerRow)
  const int wpr_log2 = 31 - __clz(wpr);  // HERD_GEMV_FAST_SETUP: shifts for the divisions by wpr
  const int rpb = HERD_GEMV_FAST_SETUP ? kWarps >> wpr_log2 : kWarps / wpr;
  const int part = HERD_GEMV_FAST_SETUP ? warp & (wpr - 1) : warp % wpr;
  const int total = a.segs.total_rows;
  const int row_stride = gridDim.x * rpb;
  const int first_row = blockIdx.x * rpb + (HERD_GEMV_FAST_SETUP ? warp >> wpr_log2 : warp / wpr);
  const int r0 = blockIdx.x * rpb;
  const int rem = total - r0;  // groups: block-uniform; one where the grid covers the rest at once
  const int groups = rem <= 0 ? 0 : HERD_GEMV_FAST_SETUP && rem <= row_stride ? 1 : (rem + row_stride - 1) / row_stride;
  // steps per part (the last part may have fewer)
  const int sp = HERD_GEMV_FAST_SETUP ? (a.n_steps + wpr - 1) >> wpr_log2 : (a.n_steps + wpr - 1) / wpr;
  const int len = groups * sp;
  const float inv_sp = 1.f / static_cast<float>(sp);
  constexpr bool kEarly = NT == 1 && kEarlyAct && HERD_GEMV_ACT_EARLY && (T0 == T1 || HERD_GEMV_ACT_EARLY_MIXED);
  // j / sp (block-uniform choice of the path).
  auto div_sp = [&](int j) { return HERD_GEMV_FAST_DIV && len <= kSmallDivMax ? SmallDiv(j, inv_sp) : j / sp; };

  // Blocks of step `step` (0 when the row or the step does not exist).
  auto step_blocks = [&](int gr, int step) {
    return gr < total && step < a.n_steps ? min(B0::kStep, a.blocks_per_row - step * B0::kStep) : 0;
  };
  auto issue = [&](int j) {
    if (j < len) {
      const int k = div_sp(j);
      const int gr = first_row + k * row_stride;
      const int step = part + (j - k * sp) * wpr;
      const int nb = step_blocks(gr, step);
      if (nb > 0) {
        const int seg = FindSeg(a.segs, gr);
        const int64_t row = gr - a.segs.row0[seg];
        const bool t1 = T0 != T1 && gr >= a.t1_row0;
        const int64_t off = t1 ? row * a.row_bytes1 + static_cast<int64_t>(step) * B1::kStepBytes
                               : row * a.row_bytes + static_cast<int64_t>(step) * B0::kStepBytes;
        if (t1) {
          StageCopyStep<B1::kStepBytes>(smem[warp][j % kStages], a.segs.w[seg] + off, nb * B1::kBytes, a.aligned, lane);
        } else {
          StageCopyStep<B0::kStepBytes>(smem[warp][j % kStages], a.segs.w[seg] + off, nb * B0::kBytes, a.aligned, lane);
        }
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
    const int k = div_sp(j), s = j - k * sp;
    const int gr = first_row + k * row_stride;
    const int step = part + s * wpr;
    const int nb = step_blocks(gr, step);
    ActLane early;  // NT == 1: this step's activations, loaded before the wait for its weights
    if constexpr (kEarly && HERD_GEMV_NO_MATH < 2) {
      if (nb > 0 && LaneActive<T0>(lane, nb)) LoadAct<T0>(a.x, 0, step, lane, early);
    }
    CpAsyncWait<kStages - 1>();
    __syncwarp();
    if (nb > 0) {
      const bool t1 = T0 != T1 && gr >= a.t1_row0;
      if constexpr (NT == 1 && HERD_GEMV_NO_MATH) {
        acc[0] += static_cast<float>(HERD_GEMV_NO_MATH < 2 ? early.q[0] & 1 : 0);
      } else if constexpr (kEarly) {
        if (LaneActive<T0>(lane, nb)) {
          if (t1) {
            Lane<T1> w;
            LaneLoad<T1>(w, smem[warp][j % kStages], lane, nb);
            acc[0] += w.Dot(early);
          } else {
            Lane<T0> w;
            LaneLoad<T0>(w, smem[warp][j % kStages], lane, nb);
            acc[0] += w.Dot(early);
          }
        }
      } else if (t1) {
        DotStep<T1, NT>(smem[warp][j % kStages], a.x, step, lane, nb, a.n_tok, acc);
      } else {
        DotStep<T0, NT>(smem[warp][j % kStages], a.x, step, lane, nb, a.n_tok, acc);
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

template <DType T1>
struct QuantKernelWith {
  template <DType T0, int NT>
  struct K {
    static constexpr auto kFn = GemvQuantKernel<T0, T1, NT>;
  };
};
template <DType T1>
struct PlainKernelWith {
  template <DType T0, int NT>
  struct K {
    static constexpr auto kFn = GemvQuantKernel<T0, T1, NT, false>;
  };
};

// HERD_CUDA_GEMV_WAVE_RULE (default 1; matmul_gemv.cu): whether one-token launches whose grid
// would fit one wave only without the early activation loads take the instance without them.
bool GemvWaveRule();

// One launch of GemvQuantKernel<T0, T1, n> for a.n_tok tokens (LaunchByTok: 1, 2, 4 or 8
// accumulators), `blocks` row groups, `per_block` of them per thread block (0: persistent).
// One token, one group per block: the early-load instance (56 registers for Q4_K: 9 blocks per
// H100 SM) unless the grid fits one wave of the plain one (40: 12 blocks) but not of it, e.g. an
// 8B Q/K/V launch of 1,536 blocks, where the second partial wave costs more than the early loads
// save.
template <DType T0, DType T1>
void LaunchGemvQuant(const QuantArgs& a, int blocks, int per_block, bool pdl, cudaStream_t stream) {
  if (a.n_tok <= 1 && per_block == 1 && GemvWaveRule()) {
    static const int early = ResidentBlocks(GemvQuantKernel<T0, T1, 1, true>);
    static const int plain = ResidentBlocks(GemvQuantKernel<T0, T1, 1, false>);
    if (blocks > early && blocks <= plain) {
      LaunchGrid<PlainKernelWith<T1>::template K, T0, 1>(a, blocks, per_block, pdl, stream);
      return;
    }
  }
  LaunchByTok<QuantKernelWith<T1>::template K, T0>(a, blocks, per_block, pdl, stream);
}

// The type a weight of type t shares a launch with in the usual mixes (llama.cpp's _M file
// types give V and down more bits: Q4_K with Q6_K, Q5_K with Q6_K, Q3_K with Q4_K, Q2_K with
// Q3_K); t itself for none. Both have 256-value blocks and Q8_K activations.
constexpr DType MixPartner(DType t) {
  switch (t) {
    case DType::kQ4_K: return DType::kQ6_K;
    case DType::kQ5_K: return DType::kQ6_K;
    case DType::kQ3_K: return DType::kQ4_K;
    case DType::kQ2_K: return DType::kQ3_K;
    default: return t;
  }
}

// The one-token GEMV that reads K-quant weights in place (gemv_quant_direct.cu) over `blocks`
// thread blocks of kWarps / a.wpr rows, for t0 alone (t1 == t0) or with t1 == MixPartner(t0).
// Returns false, queueing nothing, where it does not apply: a.n_tok != 1, unaligned rows, a wpr
// other than 1, 2 or 4, a type other than Q2_K..Q6_K, or another pair.
bool LaunchGemvQuantDirect(DType t0, DType t1, const QuantArgs& a, int blocks, bool pdl, cudaStream_t stream);
// Steps whose weights one warp of that kernel loads together (the work split's per_part).
inline constexpr int kDirectStepsPerWarp = 2;

// LaunchGemvQuant<t0, MixPartner(t0)> (matmul_gemv_mixed.cu); false for a t0 without a partner.
bool LaunchGemvQuantMixed(DType t0, const QuantArgs& a, int blocks, int per_block, bool pdl, cudaStream_t stream);

}  // namespace herd::cuda::internal::gemv
