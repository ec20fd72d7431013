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
// Only 256-value K-quants come here: their lanes read whole 4-byte words inside their own block
// (Words in quant_dot.cuh reads no word past the one holding a block's last byte), so nothing
// past a weight's last byte is read. 32-value blocks (Q8_0: 34 bytes) would read up to 3 bytes
// past it; they stay staged.
#include "kernels/cuda/gemv_quant_kernel.cuh"

namespace herd::cuda::internal::gemv {
namespace {

// acc += this lane's share of steps part, part + wpr, ... of weight row `w` of type T against
// x's token 0, kSteps steps' weights loaded at a time. Calls PdlWait once, after the first
// group's weight loads (`waited` set).
template <DType T, int kSteps>
__device__ __forceinline__ void DirectRow(const uint8_t* __restrict__ w, const QuantArgs& a, int part, int lane,
                                          float& acc, bool& waited) {
  using B = QBlock<T>;
  for (int s0 = part; s0 < a.n_steps; s0 += kSteps * a.wpr) {
    Lane<T> wl[kSteps];
    bool on[kSteps];
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      const int step = s0 + u * a.wpr;
      const int nb = step < a.n_steps ? min(B::kStep, a.blocks_per_row - step * B::kStep) : 0;
      on[u] = nb > 0 && LaneActive<T>(lane, nb);
      if (on[u]) LaneLoad<T>(wl[u], w + static_cast<int64_t>(step) * B::kStepBytes, lane, nb);
    }
    if (!waited) {
      PdlWait();  // x comes from the kernel before this one
      waited = true;
    }
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      if (on[u]) {
        ActLane x;
        LoadAct<T>(a.x, 0, s0 + u * a.wpr, lane, x);
        acc += wl[u].Dot(x);
      }
    }
  }
}

// One token; rows from a.t1_row0 on are of type T1 (T1 == T0: one type). a.wpr: 1, 2 or 4.
// kSteps: 1 where every part is a single step (fewer registers, more resident warps: 56 for
// Q4_K, 64 with Q6_K partners, against 72 / 80 with 2), else 2.
template <DType T0, DType T1, int kSteps>
__global__ void __launch_bounds__(kWarps * 32) GemvQuantDirectKernel(const __grid_constant__ QuantArgs a) {
  PdlTrigger();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wpr_log2 = 31 - __clz(a.wpr);
  const int part = warp & (a.wpr - 1);
  const int gr = (blockIdx.x * kWarps + warp) >> wpr_log2;
  const bool valid = gr < a.segs.total_rows;
  const int seg = FindSeg(a.segs, valid ? gr : 0);
  const int64_t row = (valid ? gr : 0) - a.segs.row0[seg];
  float acc[1] = {0.f};
  bool waited = false;
  if (valid) {
    if (T0 != T1 && gr >= a.t1_row0) {
      DirectRow<T1, kSteps>(a.segs.w[seg] + row * a.row_bytes1, a, part, lane, acc[0], waited);
    } else {
      DirectRow<T0, kSteps>(a.segs.w[seg] + row * a.row_bytes, a, part, lane, acc[0], waited);
    }
  }
  if (!waited) PdlWait();  // before writing y
  ReduceAndStore<1>(acc, a.wpr, valid, a.segs.y[seg], a.segs.n_out[seg], static_cast<int>(row), 1);
}

template <DType T0, DType T1>
void Launch(const QuantArgs& a, int blocks, bool pdl, cudaStream_t stream) {
  const bool one_step = (a.n_steps + a.wpr - 1) / a.wpr == 1;
  LaunchPdlIf(pdl, one_step ? GemvQuantDirectKernel<T0, T1, 1> : GemvQuantDirectKernel<T0, T1, 2>,
              dim3(static_cast<unsigned>(blocks)), dim3(kWarps * 32), 0, stream, a);
}

}  // namespace

bool LaunchGemvQuantDirect(DType t0, DType t1, const QuantArgs& a, int blocks, bool pdl, cudaStream_t stream) {
  if (a.n_tok != 1 || !a.aligned || a.wpr < 1 || (a.wpr & (a.wpr - 1)) != 0) return false;
  const bool mixed = t0 != t1;
  if (mixed && MixPartner(t0) != t1) return false;
  bool launched = false;
  DispatchQuant(t0, [&]<DType T>() {
    if constexpr (QBlock<T>::kValues == 256) {  // the K-quants; T alone or with its partner
      if (!mixed) {
        Launch<T, T>(a, blocks, pdl, stream);
        launched = true;
      } else if constexpr (MixPartner(T) != T) {
        Launch<T, MixPartner(T)>(a, blocks, pdl, stream);
        launched = true;
      }
    }
  });
  return launched;
}

}  // namespace herd::cuda::internal::gemv
