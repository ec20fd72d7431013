// GEMV kernels for F32/F16/BF16 weights at one token (decode): 16-byte streaming loads, kU
// vectors per lane in flight (the next batch loaded while one is multiplied, the first before
// the dependency wait), float32 FMAs; the work split and launch helpers of gemv_common.cuh.
// kU and the 4-warp row split (FloatWarpsPerRow) depend on the GPU's peak memory bandwidth
// (FloatTuning): below 4 TB/s (H100 SXM, 3.35 TB/s) kU 4 with the split, measured best there;
// at or above it (H200, 4.8 TB/s) kU 2 without the split: H200 tg128 8B F16 215.6 -> 239.3 and
// 1B F16 1,105 -> 1,168 tok/s (8B, kU 1 / 3 / 4 / 8 without the split: 221.4 / 229.7 / 227.7 /
// 188.8 against kU 2's 233.7, one lease; bench/results/cuda-session21-2026-11-28.md). Results
// do not depend on either choice (the same products are summed in the same order).
// GemvFloatGlu runs gate and up as one launch with the SwiGLU in the epilogue.
// PDL: used for launches of at most GemvOptions::float_pdl_max_mb MiB of weights, default 512:
// every launch of a llama-3.1-8b layer (gate/up 235 MB, down 117 MB) but not its 1 GB lm_head.
// On H100 (2026-11-25, since the first loads are issued before the dependency wait) 512 against
// 64 gave llama-3.1-8b F16 b=1 +1.2% (176.0 vs 174.0 tok/s, 4 runs each) and llama-3.2-1b F16
// +0.8%; earlier kernels lost 3% with PDL on large launches (cuda-models-2026-11-22.md).

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/float_unpack.cuh"
#include "kernels/cuda/gemv_common.cuh"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/quant_stage.cuh"

namespace herd::cuda::internal {
namespace {

using namespace gemv;  // NOLINT(google-build-using-namespace): the shared GEMV helpers

// Float GEMV: split a row only while each part keeps at least this many 512-byte units (the
// float grid target is GemvOptions::float_want_warps). On H100 decode with float_want_warps
// 16384 instead of 4096, llama-3.1-8b F16 gained 0.7-1.2% (its 4096-6144-row matrices split 4
// ways) and llama-3.2-1b F16 lost 2-3% (its down projection split 4 ways): default kept at 4096
// (bench/results/cuda-models-2026-11-22.md).
constexpr int64_t kFloatMinUnits = 4;

template <DType T>
__device__ __forceinline__ float LoadScalar(const uint8_t* w, int64_t i) {
  if constexpr (T == DType::kF32) return reinterpret_cast<const float*>(w)[i];
  return ToFloat<T>(reinterpret_cast<const uint16_t*>(w)[i]);
}

struct FloatArgs {
  Segs segs;
  int64_t n_in;
  const float* x;
  int n_tok;
  int wpr;
  int elem_bytes;  // of the weights (2 or 4)
  bool vec;        // rows and x 16-byte aligned: vector path
  // GLU mode (GemvFloatGlu): segs = {gate, up} of n_glu rows each; a block's first rpb / 2 row
  // slots are gate rows, the others the same up rows, and glu_out[t, j] = silu(gate) * up.
  float* glu_out;
  int n_glu;
};

// Lane `lane` of part `part` takes 16-byte vectors part * 32 + lane + k * 32 * wpr of its row,
// kU at a time; the next kU are loaded while one batch is multiplied, and the first batch is
// loaded before griddepcontrol.wait (weights are never written by kernels), so the DRAM latency
// of the first loads overlaps the previous kernel's tail when launched with PDL.
template <DType T, int NT, int kU>
__global__ void __launch_bounds__(kWarps * 32) GemvFloatKernel(const __grid_constant__ FloatArgs a) {
  constexpr int kE = T == DType::kF32 ? 4 : 8;  // elements per 16-byte vector
  PdlTrigger();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int rpb = kWarps / a.wpr, slot = warp / a.wpr, half = rpb / 2;
  const int glu_row = blockIdx.x * half + (slot < half ? slot : slot - half);  // GLU mode: row of gate/up
  const int gr = a.glu_out == nullptr ? blockIdx.x * rpb + slot
                 : glu_row < a.n_glu  ? glu_row + (slot < half ? 0 : a.n_glu)
                                      : a.segs.total_rows;  // past the end: no row
  const int part = warp % a.wpr;
  const bool valid = gr < a.segs.total_rows;
  const int seg = FindSeg(a.segs, valid ? gr : 0);
  const int row = gr - a.segs.row0[seg];
  const int64_t n_in = a.n_in;
  const uint8_t* wrow = a.segs.w[seg] + row * n_in * (T == DType::kF32 ? 4 : 2);
  const uint4* wv = reinterpret_cast<const uint4*>(wrow);
  const int64_t nv = n_in / kE;
  const int stride = 32 * a.wpr;
  uint4 next[kU];
  auto load = [&](int64_t v0) {
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (v0 + stride * u < nv) next[u] = LoadStreaming(wv + v0 + stride * u);
  };
  const int64_t first = part * 32 + lane;
  if (valid && a.vec) load(first);
  PdlWait();  // x may come from the kernel before this one
  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.f;
  if (valid && a.vec) {
    for (int64_t v0 = first; v0 < nv; v0 += stride * kU) {
      uint4 raw[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) raw[u] = next[u];
      if (v0 + stride * kU < nv) load(v0 + stride * kU);
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int64_t v = v0 + stride * u;
        if (v < nv) {
          float f[kE];
          Unpack16<T>(raw[u], f);
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            if (t < a.n_tok) {
              const float4* xp = reinterpret_cast<const float4*>(a.x + t * n_in + v * kE);
#pragma unroll
              for (int k = 0; k < kE / 4; ++k) {
                const float4 xv = __ldg(xp + k);
                acc[t] += f[4 * k] * xv.x + f[4 * k + 1] * xv.y + f[4 * k + 2] * xv.z + f[4 * k + 3] * xv.w;
              }
            }
          }
        }
      }
    }
  } else if (valid) {
    for (int64_t i = part * 32 + lane; i < n_in; i += 32 * a.wpr) {
      const float f = LoadScalar<T>(wrow, i);
#pragma unroll
      for (int t = 0; t < NT; ++t)
        if (t < a.n_tok) acc[t] += f * a.x[t * n_in + i];
    }
  }
  if (a.glu_out == nullptr) {
    ReduceAndStore<NT>(acc, a.wpr, valid, a.segs.y[seg], a.segs.n_out[seg], row, a.n_tok);
    return;
  }
  __shared__ float rows[kWarps * NT];  // [t][slot]
  ReduceAndStore<NT>(acc, a.wpr, valid, rows, kWarps, slot, a.n_tok);
  __syncthreads();
  if (slot < half && warp % a.wpr == 0 && lane < a.n_tok && glu_row < a.n_glu) {
    const float g = rows[lane * kWarps + slot], u = rows[lane * kWarps + slot + half];
    a.glu_out[static_cast<int64_t>(lane) * a.n_glu + glu_row] = g / (1.0f + expf(-g)) * u;  // as SwiGlu
  }
}

int64_t EnvOr(const char* name, int64_t fallback) {
  const char* e = std::getenv(name);
  return e == nullptr ? fallback : std::atoll(e);
}
// Initial values from HERD_CUDA_FLOAT_PDL_MB / _WANT_WARPS / _PER_PART (GemvOptions otherwise).
std::atomic<int64_t> g_float_pdl_max_mb{EnvOr("HERD_CUDA_FLOAT_PDL_MB", GemvOptions{}.float_pdl_max_mb)};
std::atomic<int64_t> g_float_want_warps{EnvOr("HERD_CUDA_FLOAT_WANT_WARPS", GemvOptions{}.float_want_warps)};
std::atomic<int64_t> g_float_per_part{EnvOr("HERD_CUDA_FLOAT_PER_PART", GemvOptions{}.float_per_part)};
std::atomic<int64_t> g_float_ring_max_mb{EnvOr("HERD_CUDA_FLOAT_RING_MB", GemvOptions{}.float_ring_max_mb)};
constexpr int64_t kSplit4MinRows = 4096;

// The bandwidth-dependent choices (see the top), for the first device it runs on (all GPUs of
// one process are taken to be alike).
struct FloatTuning {
  int64_t split4_units;  // launches of >= kSplit4MinRows rows of <= this many units: 4 warps a row
  int vectors;           // kU
};
FloatTuning DeviceTuning() { return HighBandwidthDevice() ? FloatTuning{0, 2} : FloatTuning{64, 4}; }
// Overrides (GemvOptions; HERD_CUDA_FLOAT_SPLIT4_UNITS / HERD_CUDA_FLOAT_VECTORS initially): -1 / 0
// for the device's choice.
std::atomic<int64_t> g_float_split4_units{EnvOr("HERD_CUDA_FLOAT_SPLIT4_UNITS", -1)};
std::atomic<int> g_float_vectors{static_cast<int>(EnvOr("HERD_CUDA_FLOAT_VECTORS", 0))};
FloatTuning Tuning() {
  FloatTuning t = DeviceTuning();
  const int64_t split4 = g_float_split4_units.load(std::memory_order_relaxed);
  const int vectors = g_float_vectors.load(std::memory_order_relaxed);
  if (split4 >= 0) t.split4_units = split4;
  if (vectors != 0) t.vectors = vectors;
  HERD_CHECK_MSG(t.vectors == 2 || t.vectors == 4, "float GEMV vectors in flight must be 2 or 4, not %d", t.vectors);
  return t;
}

template <DType T, int NT>
struct FloatKernelU2 {
  static constexpr auto kFn = GemvFloatKernel<T, NT, 2>;
};
template <DType T, int NT>
struct FloatKernelU4 {
  static constexpr auto kFn = GemvFloatKernel<T, NT, 4>;
};

template <DType T>
void LaunchFloat(const FloatArgs& a, int blocks, bool pdl, cudaStream_t stream) {
  if (Tuning().vectors == 2) {  // one instance per choice: 2x the float GEMV kernels
    LaunchByTok<FloatKernelU2, T>(a, blocks, 1, pdl, stream);
  } else {
    LaunchByTok<FloatKernelU4, T>(a, blocks, 1, pdl, stream);
  }
}
void LaunchFloat(DType type, const FloatArgs& a, int blocks, bool pdl, cudaStream_t stream) {
  switch (type) {
    case DType::kF32: LaunchFloat<DType::kF32>(a, blocks, pdl, stream); break;
    case DType::kF16: LaunchFloat<DType::kF16>(a, blocks, pdl, stream); break;
    case DType::kBF16: LaunchFloat<DType::kBF16>(a, blocks, pdl, stream); break;
    default: HERD_CHECK_MSG(false, "GemvFloat: %s is not a float type", DTypeName(type).data());
  }
}

// Warps per row of a launch of `rows` rows of `units` 512-byte units: split rows only while the
// grid has few warps; except, where Tuning() says so (H100), wide launches of short rows: 4 warps
// per row, so that a lane's whole share is one batch of loads, issued before the dependency wait
// (H100, llama-3.1-8b F16 Q/K/V and O; on H200 it loses, see the top). GLU launches take the
// same split, so that MatMulSwiGlu equals MatMulShared + SwiGlu exactly; where 4 warps per row
// leave no room for a gate row and its up row in one block (4-warp blocks) GemvFloatGlu declines
// and the caller runs MatMulShared + SwiGlu: 8B F16 b=1 +0.5% over the GLU epilogue at 1-2
// warps per row (H100, 2026-11-25).
int FloatWarpsPerRow(int64_t rows, int64_t units) {
  if (rows >= kSplit4MinRows && units <= Tuning().split4_units && units >= 4 * kFloatMinUnits) return 4;
  return WarpsPerRow(rows, units, g_float_per_part.load(), g_float_want_warps.load(), kFloatMinUnits);
}

int64_t WeightBytes(const FloatArgs& a) { return static_cast<int64_t>(a.segs.total_rows) * a.n_in * a.elem_bytes; }

// PDL for a launch of a's weights (see the top).
bool FloatPdl(const FloatArgs& a) {
  return WeightBytes(a) <= (g_float_pdl_max_mb.load(std::memory_order_relaxed) << 20);
}

// The ring kernel for a one-token launch of a's weights (GemvOptions::float_ring_max_mb).
bool Ring(const FloatArgs& a) {
  const int64_t mb = g_float_ring_max_mb.load(std::memory_order_relaxed);
  return mb > 0 && WeightBytes(a) <= (mb << 20);
}

}  // namespace

bool gemv::HighBandwidthDevice() {
  static const bool fast = [] {
    int dev = 0, khz = 0, bits = 0;
    HERD_CUDA_CHECK(cudaGetDevice(&dev));
    HERD_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev));
    HERD_CUDA_CHECK(cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, dev));
    const double peak_bytes_per_s = 2.0 * khz * 1e3 * bits / 8;  // double data rate
    return peak_bytes_per_s >= 4e12;
  }();
  return fast;
}

void gemv::SetFloatGemvOptions(const GemvOptions& o) {
  g_float_pdl_max_mb.store(o.float_pdl_max_mb);
  g_float_want_warps.store(o.float_want_warps);
  g_float_per_part.store(o.float_per_part);
  g_float_vectors.store(o.float_vectors);
  g_float_split4_units.store(o.float_split4_units);
  g_float_ring_max_mb.store(o.float_ring_max_mb);
}

bool GemvFloatGlu(const TensorView& gate, const TensorView& up, const float* x, int64_t n_tok, float* out,
                  cudaStream_t stream) {
  HERD_CHECK(gate.type == up.type && gate.rows() == up.rows() && gate.cols() == up.cols());
  HERD_CHECK(gate.rows() < INT_MAX / 2);
  const DType type = gate.type;
  const int64_t n_in = gate.cols();
  const int e = type == DType::kF32 ? 4 : 8;
  const TensorView ws[2] = {gate, up};
  float* const ys[2] = {out, out};  // unused in GLU mode
  FloatArgs a{};
  MakeSegs(ws, ys, 0, 2, &a.segs);
  a.n_in = n_in;
  a.elem_bytes = type == DType::kF32 ? 4 : 2;
  a.vec = n_in % e == 0 && Aligned16(x) && Aligned16(gate.data) && Aligned16(up.data);
  if (n_tok == 1 && Ring(a)) {
    if (LaunchFloatRing(type, a.segs, n_in, x, out, static_cast<int>(gate.rows()), FloatPdl(a), stream)) return true;
  }
  // GemvFloat's split of the same rows (so the results equal MatMulShared's); a block must hold
  // a gate row and its up row.
  a.wpr = FloatWarpsPerRow(a.segs.total_rows, (n_in / e + 31) / 32);
  if (a.wpr > kWarps / 2) return false;
  if (n_tok == 0 || gate.rows() == 0) return true;
  a.n_glu = static_cast<int>(gate.rows());
  const int half = kWarps / a.wpr / 2;
  const int blocks = (a.n_glu + half - 1) / half;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
    FloatArgs at = a;
    at.n_tok = static_cast<int>(std::min<int64_t>(kMaxTok, n_tok - t0));
    at.x = x + t0 * n_in;
    at.glu_out = out + t0 * gate.rows();
    LaunchFloat(type, at, blocks, FloatPdl(at), stream);
  }
  return true;
}

void GemvFloat(std::span<const TensorView> ws, std::span<float* const> ys, const float* x, int64_t n_tok,
               cudaStream_t stream) {
  if (ws.empty() || n_tok == 0) return;
  const DType type = ws[0].type;
  const int64_t n_in = ws[0].cols();
  const int e = type == DType::kF32 ? 4 : 8;
  for (size_t first = 0; first < ws.size(); first += kMaxSegs) {
    const size_t n = std::min<size_t>(kMaxSegs, ws.size() - first);
    FloatArgs a{};
    MakeSegs(ws, ys, first, n, &a.segs);
    if (a.segs.total_rows == 0) continue;
    a.n_in = n_in;
    a.elem_bytes = type == DType::kF32 ? 4 : 2;
    a.vec = n_in % e == 0 && Aligned16(x);
    for (size_t k = first; k < first + n; ++k) {
      HERD_CHECK(ws[k].type == type && ws[k].cols() == n_in);
      a.vec = a.vec && Aligned16(ws[k].data);
    }
    a.wpr = FloatWarpsPerRow(a.segs.total_rows, (n_in / e + 31) / 32);
    const int rows_per_block = kWarps / a.wpr;
    const int blocks = (a.segs.total_rows + rows_per_block - 1) / rows_per_block;
    for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
      FloatArgs at = a;
      at.n_tok = static_cast<int>(std::min<int64_t>(kMaxTok, n_tok - t0));
      at.x = x + t0 * n_in;
      for (int k = 0; k < kMaxSegs; ++k)
        if (at.segs.y[k] != nullptr) at.segs.y[k] += t0 * at.segs.n_out[k];
      if (at.n_tok == 1 && Ring(at) && LaunchFloatRing(type, at.segs, n_in, at.x, nullptr, 0, FloatPdl(at), stream)) {
        continue;
      }
      LaunchFloat(type, at, blocks, FloatPdl(at), stream);
    }
  }
}

}  // namespace herd::cuda::internal
