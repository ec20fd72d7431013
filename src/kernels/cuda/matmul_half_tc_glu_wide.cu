// GemmHalfTcGluWide (matmul_internal.h): GemmHalfTcGlu for 65+ tokens with CTA tiles of 128 gate
// rows and the same 128 up rows (GemmHalfTcGlu's tiles: 64 + 64), so that each 128-token x tile
// read from L2 feeds 32 KB of weights instead of 16 KB.
//
// Why: at 128 tokens an x tile ([128 tokens][64 values], 16 KB) is as large as the 64 + 64-row
// weight tile it multiplies, and every CTA reads its own copy from L2. ncu on the H200 shows
// GemmHalfTc's 4096 -> 2 x 14336 launch at 128 tokens with the L2 87.6% busy and DRAM 65%
// (bench/results/cuda-session23-2026-11-28.md). Here L2 carries 1.5x the weight bytes instead of
// 2x. Sharing x tiles between CTAs by TMA multicast, the other way to cut that traffic, lost
// (same file).
//
// Structure (as GemmHalfTcKernel, one CTA per SM): one producer thread issues per 64-value stage
// three TMA boxes (gate [128][64], up [128][64], x [128][64], 48 KB, 128-byte swizzle) onto the
// stage's FULL mbarrier, kStages = 4 ahead (192 KB). Two consumer warpgroups: warpgroup g takes
// gate rows 64 g.. and the same up rows, 4 wgmma m64n128k16 for each per stage, and keeps both
// sums in registers (2 x 64 floats a thread): the SwiGLU is computed in registers, with no
// exchange through shared memory. The products and their order are GemmHalfTcGlu's: the outputs
// are the same bits (GemmHalfTcTest.WideGluEqualsGlu, run on the H200).
//
// Measured on the H200 (bench/results/cuda-session24-2026-11-28.md): the 8B launch 4096 ->
// 2 x 14336 at 128 tokens 79 -> 73 us (L2 87.6% -> 78.7% busy) on 112 of the 132 SMs;
// bench-engine, 128 sequences: 8B F16 +1.8% (BF16 +4.6%), 1B F16 +1.4% (64 CTAs). On by default;
// HERD_CUDA_HALF_TC_GLU_WIDE=0 or SetGemmHalfTcGluWide(0) switches it off. Spreading the 8B launch
// over all SMs by stream-K lost (90 vs 87 us for the same kernel one CTA a tile; patch in
// bench/results/patches/).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/tma.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace herd::cuda::internal {
namespace {

constexpr int kN = 128;                       // tokens per CTA tile
constexpr int kRows = 128;                    // gate rows (and as many up rows) per CTA tile
constexpr int kStageK = 64;                   // values per stage: one 128-byte swizzle row
constexpr int kStages = 4;                    // 4 x 48 KB: one CTA per SM
constexpr int kThreads = 8 * 32 + 32;         // two consumer warpgroups + one producer warp
constexpr int kWBytes = kRows * kStageK * 2;  // 16 KB: gate (or up) rows of one stage
constexpr int kXBytes = kN * kStageK * 2;     // 16 KB: x of one stage
constexpr int kStageBytes = 2 * kWBytes + kXBytes;
constexpr size_t kSmemBytes = 1024 + static_cast<size_t>(kStages) * kStageBytes;

struct WideGluArgs {
  CUtensorMap gate, up;  // [n_ff][n_in], boxes [128][64]
  CUtensorMap x;         // [n_tok][n_in], boxes [128][64]
  float* out;            // [n_tok][n_ff]: silu(gate) * up
  void* half_out;        // when set, the same rounded to half (half_bf16: bfloat16)
  int half_bf16;
  int n_tok, n_ff;
  int k_stages;  // ceil(n_in / 64)
};

template <bool kBf16>
__global__ void __launch_bounds__(kThreads, 1) GemmHalfTcGluWideKernel(const __grid_constant__ WideGluArgs a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(16) uint8_t smem_unaligned[];
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  // 1024-byte aligned base (the swizzle's repeat); stage s: gate, up, x at s * kStageBytes.
  const uint32_t base = (SmemAddr(smem_unaligned) + 1023) & ~1023u;
  PdlTrigger();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int tok0 = blockIdx.x * kN, row0 = blockIdx.y * kRows, n = a.k_stages;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      MbarInit(SmemAddr(&full[s]), 1);
      MbarInit(SmemAddr(&empty[s]), 8);  // one arrival per consumer warp
    }
    FenceMbarInit();
  }
  __syncthreads();

  if (warp == 8) {  // ---- the producer: one thread issues the stage copies ----
    if (lane != 0) return;
    PrefetchTensorMap(&a.gate);
    PrefetchTensorMap(&a.up);
    PrefetchTensorMap(&a.x);
    auto load_w = [&](int i, int s) {
      const uint32_t dst = base + s * kStageBytes, bar = SmemAddr(&full[s]);
      TmaLoad2d(dst, &a.gate, i * kStageK, row0, bar);
      TmaLoad2d(dst + kWBytes, &a.up, i * kStageK, row0, bar);
    };
    auto load_x = [&](int i, int s) {
      TmaLoad2d(base + s * kStageBytes + 2 * kWBytes, &a.x, i * kStageK, tok0, SmemAddr(&full[s]));
    };
    const int pre = min(n, kStages);
    for (int i = 0; i < pre; ++i) {  // weights: no kernel of the stream writes them
      MbarArriveExpectTx(SmemAddr(&full[i]), kStageBytes);
      load_w(i, i);
    }
    PdlWait();  // x comes from the kernel before
    for (int i = 0; i < pre; ++i) load_x(i, i);
    for (int i = pre; i < n; ++i) {
      const int s = i % kStages;
      MbarWait(SmemAddr(&empty[s]), ((i / kStages) - 1) & 1);  // the consumers released use i - kStages
      MbarArriveExpectTx(SmemAddr(&full[s]), kStageBytes);
      load_w(i, s);
      load_x(i, s);
    }
    return;
  }

  // ---- consumers: warpgroup wg computes gate and up rows [64 wg, 64 wg + 64) x 128 tokens ----
  PdlWait();  // out may be read by the kernel before
  const int wg = warp >> 2;
  float g[kN / 2], u[kN / 2];
#pragma unroll
  for (int k = 0; k < kN / 2; ++k) g[k] = 0.f, u[k] = 0.f;
  for (int i = 0; i < n; ++i) {
    const int s = i % kStages;
    MbarWait(SmemAddr(&full[s]), (i / kStages) & 1);
    const uint32_t g_s = base + s * kStageBytes + 64 * wg * 128, u_s = g_s + kWBytes;
    const uint32_t x_s = base + s * kStageBytes + 2 * kWBytes;
    WgmmaFence();
#pragma unroll
    for (int m = 0; m < kStageK / 16; ++m) {
      WgmmaM64K16<kN, kBf16>(g, WgmmaDesc(g_s + 32 * m), WgmmaDesc(x_s + 32 * m));
      WgmmaM64K16<kN, kBf16>(u, WgmmaDesc(u_s + 32 * m), WgmmaDesc(x_s + 32 * m));
    }
    WgmmaCommit();
    WgmmaWait<1>();  // stage i - 1's group is done (i's may still run): release its buffer
    if (i > 0 && lane == 0) MbarArrive(SmemAddr(&empty[(i - 1) % kStages]));
  }
  WgmmaWait<0>();
  // g[k], u[k]: row 64 wg + 16 (warp % 4) + lane / 4 (+8), token 2 (lane % 4) (+1) + 8 j.
  const int r0 = row0 + 64 * wg + 16 * (warp & 3) + (lane >> 2), t0 = tok0 + 2 * (lane & 3);
  ForEachWgmmaAcc<kN>([&](int k, int dt, int dr) {
    const int tok = t0 + dt, r = r0 + dr;
    if (tok >= a.n_tok || r >= a.n_ff) return;
    const float v = Silu(g[k]) * u[k];  // as SwiGlu
    const int64_t o = static_cast<int64_t>(tok) * a.n_ff + r;
    a.out[o] = v;
    if (a.half_out != nullptr) {
      if (a.half_bf16) {
        static_cast<__nv_bfloat16*>(a.half_out)[o] = __float2bfloat16_rn(v);
      } else {
        static_cast<__half*>(a.half_out)[o] = __float2half_rn(v);
      }
    }
  });
#else
  __trap();  // the host launches this kernel only on sm_90 (GemmHalfTcAvailable)
#endif
}

// HERD_CUDA_HALF_TC_GLU_WIDE: 1 (default) on, 0 off (GemmHalfTcGlu's 64 + 64-row tiles).
std::atomic<int>& WideMode() {
  static std::atomic<int> mode{[] {
    const char* e = std::getenv("HERD_CUDA_HALF_TC_GLU_WIDE");
    return e == nullptr ? 1 : std::atoi(e);
  }()};
  return mode;
}

template <bool kBf16>
void Launch(const WideGluArgs& a, cudaStream_t stream) {
  static std::atomic<uint64_t> raised{0};
  RaiseDynamicSmem(GemmHalfTcGluWideKernel<kBf16>, static_cast<int>(kSmemBytes), raised);
  const dim3 grid(static_cast<unsigned>((a.n_tok + kN - 1) / kN), static_cast<unsigned>((a.n_ff + kRows - 1) / kRows));
  LaunchPdl(GemmHalfTcGluWideKernel<kBf16>, grid, dim3(kThreads), kSmemBytes, stream, a);
}

}  // namespace

void SetGemmHalfTcGluWide(int mode) { WideMode().store(mode); }

bool GemmHalfTcGluWide(const TensorView& gate, const TensorView& up, const void* x_half, int64_t n_tok, float* out,
                       void* half_out, bool half_out_bf16, cudaStream_t stream) {
  const int mode = WideMode().load(std::memory_order_relaxed);
  if (mode <= 0 || n_tok <= 64) return false;
  HERD_CHECK(n_tok < INT_MAX / 128 && (gate.rows() + kRows - 1) / kRows < 65536);
  const bool bf16 = gate.type == DType::kBF16;
  const int64_t n_in = gate.cols();
  WideGluArgs a{};
  const TensorView* w[2] = {&gate, &up};
  CUtensorMap* maps[2] = {&a.gate, &a.up};
  for (int s = 0; s < 2; ++s) {
    const Status st = EncodeTensorMap2d(maps[s], w[s]->data, bf16, static_cast<uint64_t>(gate.rows()),
                                        static_cast<uint64_t>(n_in), gate.row_bytes(), kRows);
    HERD_CHECK_MSG(st.ok(), "GemmHalfTcGluWide: %s", st.ToString().c_str());
  }
  const Status st = EncodeTensorMap2d(&a.x, x_half, bf16, static_cast<uint64_t>(n_tok), static_cast<uint64_t>(n_in),
                                      static_cast<uint64_t>(n_in) * 2, kN);
  HERD_CHECK_MSG(st.ok(), "GemmHalfTcGluWide: %s", st.ToString().c_str());
  a.out = out;
  a.half_out = half_out;
  a.half_bf16 = half_out_bf16 ? 1 : 0;
  a.n_tok = static_cast<int>(n_tok);
  a.n_ff = static_cast<int>(gate.rows());
  a.k_stages = static_cast<int>((n_in + kStageK - 1) / kStageK);
  if (bf16) {
    Launch<true>(a, stream);
  } else {
    Launch<false>(a, stream);
  }
  return true;
}

}  // namespace herd::cuda::internal
