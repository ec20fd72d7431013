// Activation quantization of the integer GEMVs (QuantizeActivations, matmul_internal.h): the
// reference quantizers ref::QuantizeRow(Q8_0 | Q8_1 | Q8_K) on the GPU, bit for bit. Per block
// of B values (32, or 256 for Q8_K): amax = max |x|, d = amax / 127 (Q8_0: rounded to half and
// back), id = d != 0 ? 1 / d : 0, q = clamp(round-half-even(x * id), -127, 127); IEEE division
// and multiplication (nvcc's defaults: no fast-math, denormals kept), so every q and d equals
// the CPU's.
//
// One thread block per (2048-value span, token row), 256 threads of 8 consecutive values each:
// a warp per 256-value block (Q8_K), 4 threads per 32-value block (Q8_0/Q8_1).
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/quant_dot.cuh"

namespace herd::cuda::internal {
namespace {

struct Layout {
  int64_t q_stride, d_stride, g_stride;
  size_t q_bytes, d_bytes, g_bytes, total;
};
Layout MakeLayout(int64_t n_tok, int64_t n_in) {
  Layout l;
  l.q_stride = (n_in + kStepValues - 1) / kStepValues * kStepValues;
  l.d_stride = l.q_stride / 32;
  l.g_stride = l.q_stride / 16;
  l.q_bytes = static_cast<size_t>(n_tok * l.q_stride);      // multiple of 2048
  l.d_bytes = static_cast<size_t>(n_tok * l.d_stride) * 4;  // multiple of 256
  l.g_bytes = static_cast<size_t>(n_tok * l.g_stride) * 2;  // multiple of 256
  l.total = l.q_bytes + 2 * l.d_bytes + l.g_bytes;
  return l;
}

struct ActOut {
  int8_t* q;
  float* d;
  float* s;
  int16_t* sums;
  int64_t q_stride, d_stride, g_stride;
};

template <DType F>
__global__ void __launch_bounds__(256) QuantizeActKernel(const float* x, int64_t n_in, ActOut o, bool vec) {
  // Launched with programmatic stream serialization (matmul_gemv.cu): let the GEMV after this
  // kernel start its weight loads, then wait for the kernels before it (x, and the previous
  // GEMV still reading the buffers written below).
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  constexpr int kB = F == DType::kQ8_K ? 256 : 32;  // values per block
  constexpr int kLanes = kB / 8;                    // threads per block
  const int64_t t = blockIdx.y;
  const int m = threadIdx.x;
  const int64_t v0 = static_cast<int64_t>(blockIdx.x) * kStepValues + 8 * m;  // first value in the row
  float v[8];
  if (v0 < n_in) {  // n_in is a multiple of 32: the whole block is in or out
    const float* p = x + t * n_in + v0;
    if (vec) {
      const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = p[i];
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = 0.f;
  }
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  float d = amax / 127.f;
  if constexpr (F == DType::kQ8_0) d = __half2float(__float2half_rn(d));
  const float id = d != 0.f ? 1.f / d : 0.f;
  uint32_t w[2] = {0, 0};
  int sum = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int q = min(127, max(-127, __float2int_rn(__fmul_rn(v[i], id))));
    w[i / 4] |= (static_cast<uint32_t>(q) & 0xFFu) << (8 * (i % 4));
    sum += q;
  }
  const int64_t u = 8 * m;  // value within the span
  int8_t* qrow = o.q + t * o.q_stride + static_cast<int64_t>(blockIdx.x) * kStepValues;
  *reinterpret_cast<uint2*>(qrow + ActBytePos(u)) = make_uint2(w[0], w[1]);
  const int sum16 = sum + __shfl_xor_sync(0xffffffffu, sum, 1);
  if ((m & 1) == 0)
    o.sums[t * o.g_stride + static_cast<int64_t>(blockIdx.x) * (kStepValues / 16) + m / 2] =
        static_cast<int16_t>(sum16);
  const int sum32 = sum16 + __shfl_xor_sync(0xffffffffu, sum16, 2);
  if (m % kLanes == 0) {
    const int64_t bi = t * o.d_stride + static_cast<int64_t>(blockIdx.x) * (kStepValues / kB) + m / kLanes;
    o.d[bi] = d;
    if constexpr (F == DType::kQ8_1) o.s[bi] = d * static_cast<float>(sum32);
  }
}

}  // namespace

size_t QuantizedActivationBytes(int64_t n_tok, int64_t n_in) { return MakeLayout(n_tok, n_in).total; }

QuantizedActivations QuantizeActivations(DType format, const float* x, int64_t n_tok, int64_t n_in, void* buffer,
                                         cudaStream_t stream) {
  HERD_CHECK(n_in % (format == DType::kQ8_K ? 256 : 32) == 0 && (reinterpret_cast<uintptr_t>(buffer) & 255) == 0);
  HERD_CHECK(n_tok < 65536);
  const Layout l = MakeLayout(n_tok, n_in);
  auto* base = static_cast<uint8_t*>(buffer);
  ActOut o;
  o.q = reinterpret_cast<int8_t*>(base);
  o.d = reinterpret_cast<float*>(base + l.q_bytes);
  o.s = reinterpret_cast<float*>(base + l.q_bytes + l.d_bytes);
  o.sums = reinterpret_cast<int16_t*>(base + l.q_bytes + 2 * l.d_bytes);
  o.q_stride = l.q_stride, o.d_stride = l.d_stride, o.g_stride = l.g_stride;
  if (n_tok > 0 && n_in > 0) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(static_cast<unsigned>(l.q_stride / kStepValues), static_cast<unsigned>(n_tok));
    cfg.blockDim = dim3(256);
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = GemvProgrammaticLaunch() ? 1 : 0;
    const bool vec = (reinterpret_cast<uintptr_t>(x) & 15) == 0;  // rows of n_in (a multiple of 32) floats
    switch (format) {
      case DType::kQ8_0:
        HERD_CUDA_CHECK(cudaLaunchKernelEx(&cfg, QuantizeActKernel<DType::kQ8_0>, x, n_in, o, vec));
        break;
      case DType::kQ8_1:
        HERD_CUDA_CHECK(cudaLaunchKernelEx(&cfg, QuantizeActKernel<DType::kQ8_1>, x, n_in, o, vec));
        break;
      case DType::kQ8_K:
        HERD_CUDA_CHECK(cudaLaunchKernelEx(&cfg, QuantizeActKernel<DType::kQ8_K>, x, n_in, o, vec));
        break;
      default: HERD_CHECK_MSG(false, "QuantizeActivations: %s is not an activation format", DTypeName(format).data());
    }
  }
  QuantizedActivations a;
  a.format = format;
  a.q = o.q, a.d = o.d, a.s = o.s, a.sums = o.sums;
  a.q_stride = l.q_stride, a.d_stride = l.d_stride, a.g_stride = l.g_stride;
  return a;
}

}  // namespace herd::cuda::internal
