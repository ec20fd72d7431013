// The quantized GEMV for one token with K-quant weights read in place ("direct"): each lane loads
// its own bytes of a step (a quarter of a 256-value block, quant_dot.cuh) straight from global
// memory into registers with Lane<T>::Load, the decode the staged kernel (gemv_quant_kernel.cuh)
// runs on its shared-memory copy. Without the copy, its ring bookkeeping and the warp barriers,
// a warp runs far fewer instructions (the PTX of the Q4_K instance: ~200 for two steps, setup
// and reduction included; the staged kernel executes 615 SASS instructions per warp of two steps,
// ncu on an H200, 8B Q4_K 4096 -> 14336; the direct kernel's SASS was not counted), but holds
// the loaded words in registers (48-80), so fewer warps are resident. Measured on an H200
// (bench/results/cuda-session22-2026-11-28.md) it wins for Q3_K (whose decode from shared memory costs most; 8B lm_head
// 136 -> 105 us) and for rows of a single 2048-value step (1B-class models: lm_head 49.9 -> 44.3 us in Q4_K), and loses
// or ties for the other K-quants' rows of several steps; matmul_gemv.cu picks it so.
//
// Work split: the staged kernel's (a block of kWarps warps covers kWarps / wpr rows; the wpr
// warps of a row take its steps interleaved and add their sums through shared memory), one row
// part per warp. A warp loads the weights of up to kDirectStepsPerWarp steps before their
// activations, so those loads are in flight together; the first group's weights are loaded
// before PdlWait (they do not depend on the kernel before).
//
// Staged variant (kSmem; GemvOptions::quant_direct_smem, HERD_CUDA_GEMV_DIRECT_SMEM): the warp
// first copies its steps' bytes into its own shared-memory slice with 16-byte cp.async (a Q6_K
// step of 1,680 bytes is 4 copy instructions a lane), then each lane reads its words from there.
// In place, each of a lane's ~29 four-byte loads of a Q6_K step touches 16 different lines of the
// step, so L1/TEX, not DRAM, bounds the launch (ncu, H200, 1B lm_head 2048 -> 128256 Q6_K: L1/TEX
// 95%, DRAM 48%; 71 us against 49 us for reading its bytes alone).
//
// Only 256-value K-quants come here: their lanes read whole 4-byte words inside their own block
// (Words in quant_dot.cuh reads no word past the one holding a block's last byte), so nothing
// past a weight's last byte is read. 32-value blocks (Q8_0: 34 bytes) would read up to 3 bytes
// past it; they stay staged.
#include "kernels/cuda/gemv_quant_kernel.cuh"

namespace herd::cuda::internal::gemv {
namespace {

// acc += this lane's share of steps part, part + wpr, ... of weight row `w` of type T against
// x's token 0, kSteps steps' weights loaded at a time. Calls PdlWait once, after the first
// group's weight loads (`waited` set). kSmem: the weights go through `stage` (this warp's
// kSteps slices of kSliceBytes) by cp.async.
template <DType T, int kSteps, bool kSmem, int kSliceBytes>
__device__ __forceinline__ void DirectRow(const uint8_t* __restrict__ w, const QuantArgs& a, int part, int lane,
                                          float& acc, bool& waited, uint8_t* stage) {
  using B = QBlock<T>;
  static_assert(B::kStepBytes <= kSliceBytes);
  for (int s0 = part; s0 < a.n_steps; s0 += kSteps * a.wpr) {
    Lane<T> wl[kSteps];
    bool on[kSteps];
    int nbs[kSteps];
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      const int step = s0 + u * a.wpr;
      nbs[u] = step < a.n_steps ? min(B::kStep, a.blocks_per_row - step * B::kStep) : 0;
      on[u] = nbs[u] > 0 && LaneActive<T>(lane, nbs[u]);
      if constexpr (kSmem) {
        const uint8_t* src = w + static_cast<int64_t>(step) * B::kStepBytes;
        for (int off = 16 * lane; off < nbs[u] * B::kBytes; off += 32 * 16)
          CpAsync16(stage + u * kSliceBytes + off, src + off);  // nb * kBytes: a multiple of 16 (aligned rows)
      } else {
        if (on[u]) LaneLoad<T>(wl[u], w + static_cast<int64_t>(step) * B::kStepBytes, lane, nbs[u]);
      }
    }
    if constexpr (kSmem) CpAsyncCommit();
    if (!waited) {
      PdlWait();  // x comes from the kernel before this one
      waited = true;
    }
    ActLane x[kSteps];
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
      if (on[u]) LoadAct<T>(a.x, 0, s0 + u * a.wpr, lane, x[u]);
    if constexpr (kSmem) {
      CpAsyncWait<0>();
      __syncwarp();
#pragma unroll
      for (int u = 0; u < kSteps; ++u)
        if (on[u]) LaneLoad<T>(wl[u], stage + u * kSliceBytes, lane, nbs[u]);
      __syncwarp();  // every lane has its words before the next group's copies overwrite them
    }
#pragma unroll
    for (int u = 0; u < kSteps; ++u)
      if (on[u]) acc += wl[u].Dot(x[u]);
  }
}

// One token; rows from a.t1_row0 on are of type T1 (T1 == T0: one type). a.wpr: 1, 2 or 4.
// kSteps: 1 where every part is a single step (fewer registers, more resident warps: 56 for
// Q4_K, 64 with Q6_K partners, against 72 / 80 with 2), else 2. kSmem: shared-memory slices of
// kSteps x the larger step's bytes a warp (Q6_K, one step: 6.7 KB a block).
template <DType T0, DType T1, int kSteps, bool kSmem>
__global__ void __launch_bounds__(kWarps * 32) GemvQuantDirectKernel(const __grid_constant__ QuantArgs a) {
  constexpr int kSlice = QBlock<T0>::kStepBytes > QBlock<T1>::kStepBytes ? QBlock<T0>::kStepBytes
                                                                          : QBlock<T1>::kStepBytes;
  __shared__ __align__(16) uint8_t stage[kSmem ? kWarps * kSteps * kSlice : 16];
  PdlTrigger();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wpr_log2 = 31 - __clz(a.wpr);
  const int part = warp & (a.wpr - 1);
  const int gr = (blockIdx.x * kWarps + warp) >> wpr_log2;
  const bool valid = gr < a.segs.total_rows;
  const int seg = FindSeg(a.segs, valid ? gr : 0);
  const int64_t row = (valid ? gr : 0) - a.segs.row0[seg];
  uint8_t* my_stage = stage + (kSmem ? warp * kSteps * kSlice : 0);
  float acc[1] = {0.f};
  bool waited = false;
  if (valid) {
    if (T0 != T1 && gr >= a.t1_row0) {
      DirectRow<T1, kSteps, kSmem, kSlice>(a.segs.w[seg] + row * a.row_bytes1, a, part, lane, acc[0], waited,
                                           my_stage);
    } else {
      DirectRow<T0, kSteps, kSmem, kSlice>(a.segs.w[seg] + row * a.row_bytes, a, part, lane, acc[0], waited,
                                           my_stage);
    }
  }
  if (!waited) PdlWait();  // before writing y
  ReduceAndStore<1>(acc, a.wpr, valid, a.segs.y[seg], a.segs.n_out[seg], static_cast<int>(row), 1);
}

template <DType T0, DType T1, bool kSmem>
void LaunchSmem(const QuantArgs& a, int blocks, bool pdl, cudaStream_t stream) {
  const bool one_step = (a.n_steps + a.wpr - 1) / a.wpr == 1;
  LaunchPdlIf(pdl, one_step ? GemvQuantDirectKernel<T0, T1, 1, kSmem> : GemvQuantDirectKernel<T0, T1, 2, kSmem>,
              dim3(static_cast<unsigned>(blocks)), dim3(kWarps * 32), 0, stream, a);
}
template <DType T0, DType T1>
void Launch(const QuantArgs& a, int blocks, bool smem, bool pdl, cudaStream_t stream) {
  if (smem) {
    LaunchSmem<T0, T1, true>(a, blocks, pdl, stream);
  } else {
    LaunchSmem<T0, T1, false>(a, blocks, pdl, stream);
  }
}

}  // namespace

bool LaunchGemvQuantDirect(DType t0, DType t1, const QuantArgs& a, int blocks, bool smem, bool pdl,
                           cudaStream_t stream) {
  if (a.n_tok != 1 || !a.aligned || a.wpr < 1 || (a.wpr & (a.wpr - 1)) != 0) return false;
  const bool mixed = t0 != t1;
  if (mixed && MixPartner(t0) != t1) return false;
  bool launched = false;
  DispatchQuant(t0, [&]<DType T>() {
    if constexpr (QBlock<T>::kValues == 256) {  // the K-quants; T alone or with its partner
      if (!mixed) {
        Launch<T, T>(a, blocks, smem, pdl, stream);
        launched = true;
      } else if constexpr (MixPartner(T) != T) {
        Launch<T, MixPartner(T)>(a, blocks, smem, pdl, stream);
        launched = true;
      }
    }
  });
  return launched;
}

}  // namespace herd::cuda::internal::gemv
