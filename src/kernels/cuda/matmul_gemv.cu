// GEMV-style matmul kernels for small n_tok (decode): each weight row is read from device memory
// once per group of up to 8 tokens and reused for all of them.
//
// Quantized weights: one warp per output row. The row is streamed through a per-warp ring of
// kStages shared-memory buffers of at most kStageBytes (cp.async, several stages in flight), so
// the loads are 16-byte, coalesced and independent of the block layout's alignment; each lane
// then decodes 32-element chunks (quant_decode.cuh) and multiplies them with the int8
// activations by __dp4a, scaling per chunk half in float:
//   acc += d_x * (sc0 * dot(q[0..15]) + sc1 * dot(q[16..31])) + mn0 * d_x*sum(x[0..15]) + mn1 * ...
// Float weights: one warp per row, 16-byte streaming loads (4 per lane in flight), float32 FMAs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/quant_decode.cuh"
#include "kernels/cuda/quant_stage.cuh"

namespace herd::cuda::internal {
namespace {

constexpr int kWarps = 4;          // warps (rows) per thread block
constexpr int kStages = 3;         // shared-memory ring depth per warp
constexpr int kStageBytes = 2048;  // largest stage
constexpr int kMaxTok = 8;         // tokens per launch
constexpr int kStageBuf = kStageBytes + kSmemPad;

struct QuantArgs {
  const uint8_t* w;
  int64_t row_bytes;
  int n_out;
  int blocks_per_row;
  int stage_blocks;  // blocks per stage (a multiple of the aligned group when `aligned`)
  int n_stages;      // stages per row
  bool aligned;      // row starts 16-byte aligned: cp.async path
  const int8_t* xq;
  const float4* xm;
  int64_t n_in;
  int n_tok;  // <= NT
  float* y;
};

template <DType T, int NT>
__global__ void __launch_bounds__(kWarps * 32) GemvQuantKernel(QuantArgs a) {
  using Q = QTraits<T>;
  __shared__ __align__(16) uint8_t smem[kWarps][kStages][kStageBuf];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row = blockIdx.x * kWarps + warp;
  if (row >= a.n_out) return;  // whole warps only; no block-wide barriers below
  const uint8_t* wrow = a.w + row * a.row_bytes;

  auto issue = [&](int s) {
    if (s < a.n_stages) {
      const int b0 = s * a.stage_blocks;
      const int nb = min(a.stage_blocks, a.blocks_per_row - b0);
      StageCopy(smem[warp][s % kStages], wrow + static_cast<int64_t>(b0) * Q::kBlockBytes, nb * Q::kBlockBytes,
                a.aligned, lane, 32);
    }
    CpAsyncCommit();
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) issue(s);

  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.f;
  const int64_t xm_stride = a.n_in / 32;

  for (int s = 0; s < a.n_stages; ++s) {
    issue(s + kStages - 1);
    CpAsyncWait<kStages - 1>();
    __syncwarp();
    const SmemSrc src{smem[warp][s % kStages]};
    const int b0 = s * a.stage_blocks;
    const int nchunks = min(a.stage_blocks, a.blocks_per_row - b0) * Q::kChunks;
    for (int lc = lane; lc < nchunks; lc += 32) {
      Chunk ch;
      DecodeChunk<T>(src, (lc / Q::kChunks) * Q::kBlockBytes, lc % Q::kChunks, ch);
      const int64_t gc = static_cast<int64_t>(b0) * Q::kChunks + lc;  // chunk index within the row
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        if (t < a.n_tok) {
          const int4* xp = reinterpret_cast<const int4*>(a.xq + t * a.n_in) + 2 * gc;
          const int4 x0 = __ldg(xp), x1 = __ldg(xp + 1);
          const float4 m = __ldg(a.xm + t * xm_stride + gc);
          int i0 = __dp4a(ch.w[0], x0.x, 0);
          i0 = __dp4a(ch.w[1], x0.y, i0);
          i0 = __dp4a(ch.w[2], x0.z, i0);
          i0 = __dp4a(ch.w[3], x0.w, i0);
          int i1 = __dp4a(ch.w[4], x1.x, 0);
          i1 = __dp4a(ch.w[5], x1.y, i1);
          i1 = __dp4a(ch.w[6], x1.z, i1);
          i1 = __dp4a(ch.w[7], x1.w, i1);
          float v = m.x * (ch.sc[0] * static_cast<float>(i0) + ch.sc[1] * static_cast<float>(i1));
          if constexpr (Q::kMins) v += ch.mn[0] * m.y + ch.mn[1] * m.z;
          acc[t] += v;
        }
      }
    }
    __syncwarp();  // every lane is done with this buffer before it is refilled
  }
  CpAsyncWait<0>();

#pragma unroll
  for (int t = 0; t < NT; ++t) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], o);
  }
  if (lane == 0) {
#pragma unroll
    for (int t = 0; t < NT; ++t)
      if (t < a.n_tok) a.y[t * static_cast<int64_t>(a.n_out) + row] = acc[t];
  }
}

template <DType T>
__device__ __forceinline__ float ToFloat(uint32_t bits16) {
  if constexpr (T == DType::kBF16) return __uint_as_float(bits16 << 16);
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits16)));
}

// Eight (F16/BF16) or four (F32) weights of one 16-byte vector as floats.
template <DType T>
__device__ __forceinline__ void Unpack16(const uint4& v, float* f) {
  if constexpr (T == DType::kF32) {
    f[0] = __uint_as_float(v.x), f[1] = __uint_as_float(v.y), f[2] = __uint_as_float(v.z), f[3] = __uint_as_float(v.w);
  } else {
    const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      f[2 * k] = ToFloat<T>(u[k] & 0xFFFFu);
      f[2 * k + 1] = ToFloat<T>(u[k] >> 16);
    }
  }
}

template <DType T>
__device__ __forceinline__ float LoadScalar(const void* w, int64_t i) {
  if constexpr (T == DType::kF32) return static_cast<const float*>(w)[i];
  return ToFloat<T>(static_cast<const uint16_t*>(w)[i]);
}

template <DType T, int NT>
__global__ void __launch_bounds__(kWarps * 32)
    GemvFloatKernel(const uint8_t* w, int n_out, int64_t n_in, const float* x, int n_tok, float* y, bool vec) {
  constexpr int kE = T == DType::kF32 ? 4 : 8;  // elements per 16-byte vector
  constexpr int kU = 4;                         // vectors per lane in flight
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * kWarps + (threadIdx.x >> 5);
  if (row >= n_out) return;
  const int64_t row_bytes = n_in * (T == DType::kF32 ? 4 : 2);
  const uint8_t* wrow = w + row * row_bytes;
  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.f;
  if (vec) {
    const uint4* wv = reinterpret_cast<const uint4*>(wrow);
    const int64_t nv = n_in / kE;
    for (int64_t v0 = lane; v0 < nv; v0 += 32 * kU) {
      uint4 raw[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u)
        if (v0 + 32 * u < nv) raw[u] = LoadStreaming(wv + v0 + 32 * u);
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int64_t v = v0 + 32 * u;
        if (v < nv) {
          float f[kE];
          Unpack16<T>(raw[u], f);
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            if (t < n_tok) {
              const float4* xp = reinterpret_cast<const float4*>(x + t * n_in + v * kE);
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
  } else {
    for (int64_t i = lane; i < n_in; i += 32) {
      const float f = LoadScalar<T>(wrow, i);
#pragma unroll
      for (int t = 0; t < NT; ++t)
        if (t < n_tok) acc[t] += f * x[t * n_in + i];
    }
  }
#pragma unroll
  for (int t = 0; t < NT; ++t) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], o);
  }
  if (lane == 0) {
#pragma unroll
    for (int t = 0; t < NT; ++t)
      if (t < n_tok) y[t * static_cast<int64_t>(n_out) + row] = acc[t];
  }
}

// Kernel instance for n tokens (1..8): 1, 2, 4 or 8 accumulators.
template <DType T>
void LaunchQuant(const QuantArgs& a, cudaStream_t stream) {
  const dim3 grid((a.n_out + kWarps - 1) / kWarps), block(kWarps * 32);
  if (a.n_tok <= 1) {
    GemvQuantKernel<T, 1><<<grid, block, 0, stream>>>(a);
  } else if (a.n_tok <= 2) {
    GemvQuantKernel<T, 2><<<grid, block, 0, stream>>>(a);
  } else if (a.n_tok <= 4) {
    GemvQuantKernel<T, 4><<<grid, block, 0, stream>>>(a);
  } else {
    GemvQuantKernel<T, 8><<<grid, block, 0, stream>>>(a);
  }
  HERD_CUDA_CHECK_LAUNCH();
}

template <DType T>
void LaunchFloat(const uint8_t* w, int n_out, int64_t n_in, const float* x, int n_tok, float* y, bool vec,
                 cudaStream_t stream) {
  const dim3 grid((n_out + kWarps - 1) / kWarps), block(kWarps * 32);
  if (n_tok <= 1) {
    GemvFloatKernel<T, 1><<<grid, block, 0, stream>>>(w, n_out, n_in, x, n_tok, y, vec);
  } else if (n_tok <= 2) {
    GemvFloatKernel<T, 2><<<grid, block, 0, stream>>>(w, n_out, n_in, x, n_tok, y, vec);
  } else if (n_tok <= 4) {
    GemvFloatKernel<T, 4><<<grid, block, 0, stream>>>(w, n_out, n_in, x, n_tok, y, vec);
  } else {
    GemvFloatKernel<T, 8><<<grid, block, 0, stream>>>(w, n_out, n_in, x, n_tok, y, vec);
  }
  HERD_CUDA_CHECK_LAUNCH();
}

bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

void GemvQuant(const TensorView& w, const int8_t* xq, const float4* xm, int64_t n_tok, float* y, cudaStream_t stream) {
  const int64_t n_in = w.cols(), n_out = w.rows();
  HERD_CHECK(n_in % 32 == 0 && n_out < (int64_t{1} << 31));
  const bool ok = DispatchQuant(w.type, [&]<DType T>() {
    using Q = QTraits<T>;
    QuantArgs a{};
    a.w = static_cast<const uint8_t*>(w.data);
    a.row_bytes = static_cast<int64_t>(w.row_bytes());
    a.n_out = static_cast<int>(n_out);
    a.blocks_per_row = static_cast<int>(n_in / (32 * Q::kChunks));
    a.aligned = a.row_bytes % 16 == 0 && Aligned16(w.data);
    // Stages: whole aligned groups (or whole blocks on the unaligned path) of at most
    // kStageBytes, split evenly over the row.
    const int unit = a.aligned ? Q::kGroupBlocks : 1;
    const int units = a.blocks_per_row / unit;
    const int max_units = std::max(1, kStageBytes / (unit * Q::kBlockBytes));
    a.n_stages = (units + max_units - 1) / max_units;
    a.stage_blocks = unit * ((units + a.n_stages - 1) / a.n_stages);
    a.n_in = n_in;
    for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
      a.n_tok = static_cast<int>(std::min<int64_t>(kMaxTok, n_tok - t0));
      a.xq = xq + t0 * n_in;
      a.xm = xm + t0 * (n_in / 32);
      a.y = y + t0 * n_out;
      LaunchQuant<T>(a, stream);
    }
  });
  HERD_CHECK_MSG(ok, "GemvQuant: %s is not a quantized weight type", DTypeName(w.type).data());
}

void GemvFloat(const TensorView& w, const float* x, int64_t n_tok, float* y, cudaStream_t stream) {
  const int64_t n_in = w.cols(), n_out = w.rows();
  HERD_CHECK(n_out < (int64_t{1} << 31));
  const int e = w.type == DType::kF32 ? 4 : 8;
  const bool vec = n_in % e == 0 && Aligned16(w.data) && Aligned16(x);
  const auto* wp = static_cast<const uint8_t*>(w.data);
  for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
    const int n = static_cast<int>(std::min<int64_t>(kMaxTok, n_tok - t0));
    const float* xt = x + t0 * n_in;
    float* yt = y + t0 * n_out;
    switch (w.type) {
      case DType::kF32: LaunchFloat<DType::kF32>(wp, static_cast<int>(n_out), n_in, xt, n, yt, vec, stream); break;
      case DType::kF16: LaunchFloat<DType::kF16>(wp, static_cast<int>(n_out), n_in, xt, n, yt, vec, stream); break;
      case DType::kBF16: LaunchFloat<DType::kBF16>(wp, static_cast<int>(n_out), n_in, xt, n, yt, vec, stream); break;
      default: HERD_CHECK_MSG(false, "GemvFloat: %s is not a float type", DTypeName(w.type).data());
    }
  }
}

}  // namespace herd::cuda::internal
