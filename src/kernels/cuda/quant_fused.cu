// The op that produces a quantized GEMV's input, fused with the quantization of that input
// (matmul_internal.h: RmsNormQuantize, SwiGluQuantize): at decode, each matmul group would
// otherwise pay a separate quantization kernel and one more dependent-kernel wait.
//
// RmsNormQuantize: one CTA per token row of n_cols <= 8192 values, q_stride / 8 threads (256 to
// 1024), thread j holding values [8j, 8j + 8) (zeros past n_cols): x (+= y), the sum of squares
// over the CTA, out = x * scale * weight, then QuantizeOctet on the same registers.
// SwiGluQuantize: the grid of QuantizeActivations (one CTA per 2048-value span and row, 256
// threads of 8 values), each thread computing its 8 values of silu(gate) * up first.
// Both are launched with programmatic dependent launch (launch_pdl.cuh): the norm weight is read
// before PdlWait, everything else after it.
#include <cuda_runtime.h>

#include <cstdint>

#include "base/check.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/quant_act.cuh"

namespace herd::cuda::internal {
namespace {

constexpr int64_t kMaxNormCols = 8192;  // 1024 threads x 8 values

__device__ __forceinline__ void Load8(const float* p, float (&v)[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
__device__ __forceinline__ void Store8(float* p, const float (&v)[8]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}

template <bool kAdd, DType F>
__global__ void __launch_bounds__(1024) RmsNormQuantKernel(float* x, const float* y, const float* __restrict__ w,
                                                           float eps, int64_t n_cols, float* out, ActOut o) {
  PdlTrigger();
  const int64_t t = blockIdx.x;
  const int64_t v0 = 8 * static_cast<int64_t>(threadIdx.x);
  const bool in = v0 < n_cols;  // n_cols is a multiple of 8
  float g[8] = {}, a[8] = {};
  if (in) Load8(w + v0, g);
  PdlWait();
  float* xr = x + t * n_cols;
  if (in) {
    Load8(xr + v0, a);
    if constexpr (kAdd) {
      float b[8];
      Load8(y + t * n_cols + v0, b);
#pragma unroll
      for (int i = 0; i < 8; ++i) a[i] += b[i];
      Store8(xr + v0, a);
    }
  }
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) ss += a[i] * a[i];
  const float scale = rsqrtf(BlockSum(ss) / static_cast<float>(n_cols) + eps);
  float v[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = a[i] * scale * g[i];  // 0 past n_cols (a = g = 0)
  if (in) Store8(out + t * n_cols + v0, v);
  QuantizeOctet<F>(v, t, v0, o);
}

template <DType F>
__global__ void __launch_bounds__(256)
    SwiGluQuantKernel(const float* gate, const float* up, float* out, int64_t n_in, ActOut o) {
  PdlTrigger();
  PdlWait();
  const int64_t t = blockIdx.y;
  const int64_t v0 = static_cast<int64_t>(blockIdx.x) * kStepValues + 8 * threadIdx.x;
  float v[8] = {};
  if (v0 < n_in) {  // n_in is a multiple of 8
    float g[8], u[8];
    Load8(gate + t * n_in + v0, g);
    Load8(up + t * n_in + v0, u);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = Silu(g[i]) * u[i];
    Store8(out + t * n_in + v0, v);
  }
  QuantizeOctet<F>(v, t, v0, o);
}

bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }
int64_t FormatBlock(DType format) { return format == DType::kQ8_K ? 256 : 32; }
bool IsFormat(DType f) { return f == DType::kQ8_0 || f == DType::kQ8_1 || f == DType::kQ8_K; }

template <bool kAdd>
void LaunchNormQuant(DType format, dim3 grid, dim3 block, cudaStream_t stream, float* x, const float* y, const float* w,
                     float eps, int64_t n_cols, float* out, const ActOut& o) {
  switch (format) {
    case DType::kQ8_0:
      return LaunchPdl(RmsNormQuantKernel<kAdd, DType::kQ8_0>, grid, block, 0, stream, x, y, w, eps, n_cols, out, o);
    case DType::kQ8_1:
      return LaunchPdl(RmsNormQuantKernel<kAdd, DType::kQ8_1>, grid, block, 0, stream, x, y, w, eps, n_cols, out, o);
    default:
      return LaunchPdl(RmsNormQuantKernel<kAdd, DType::kQ8_K>, grid, block, 0, stream, x, y, w, eps, n_cols, out, o);
  }
}

}  // namespace

bool RmsNormQuantize(DType format, float* x, const float* y, const float* weight, float eps, int64_t n_tok,
                     int64_t n_cols, float* out, void* buffer, cudaStream_t stream, QuantizedActivations* q) {
  if (!IsFormat(format) || n_tok <= 0 || n_tok >= (1ll << 31) || n_cols <= 0 || n_cols > kMaxNormCols ||
      n_cols % FormatBlock(format) != 0 || !Aligned16(x) || !Aligned16(weight) || !Aligned16(out) ||
      (y != nullptr && !Aligned16(y))) {
    return false;
  }
  HERD_CHECK((reinterpret_cast<uintptr_t>(buffer) & 255) == 0);
  const ActLayout l = MakeActLayout(n_tok, n_cols);
  const ActOut o = MakeActOut(buffer, l);
  const dim3 grid(static_cast<unsigned>(n_tok)), block(static_cast<unsigned>(l.q_stride / 8));
  if (y != nullptr) {
    LaunchNormQuant<true>(format, grid, block, stream, x, y, weight, eps, n_cols, out, o);
  } else {
    LaunchNormQuant<false>(format, grid, block, stream, x, nullptr, weight, eps, n_cols, out, o);
  }
  *q = ActView(format, o);
  return true;
}

bool SwiGluQuantize(DType format, const float* gate, const float* up, float* out, int64_t n_tok, int64_t n_in,
                    void* buffer, cudaStream_t stream, QuantizedActivations* q) {
  if (!IsFormat(format) || n_tok <= 0 || n_tok >= 65536 || n_in <= 0 || n_in % FormatBlock(format) != 0 ||
      !Aligned16(gate) || !Aligned16(up) || !Aligned16(out)) {
    return false;
  }
  HERD_CHECK((reinterpret_cast<uintptr_t>(buffer) & 255) == 0);
  const ActLayout l = MakeActLayout(n_tok, n_in);
  const ActOut o = MakeActOut(buffer, l);
  const dim3 grid(static_cast<unsigned>(l.q_stride / kStepValues), static_cast<unsigned>(n_tok)), block(256);
  switch (format) {
    case DType::kQ8_0:
      LaunchPdl(SwiGluQuantKernel<DType::kQ8_0>, grid, block, 0, stream, gate, up, out, n_in, o);
      break;
    case DType::kQ8_1:
      LaunchPdl(SwiGluQuantKernel<DType::kQ8_1>, grid, block, 0, stream, gate, up, out, n_in, o);
      break;
    default: LaunchPdl(SwiGluQuantKernel<DType::kQ8_K>, grid, block, 0, stream, gate, up, out, n_in, o); break;
  }
  *q = ActView(format, o);
  return true;
}

}  // namespace herd::cuda::internal
