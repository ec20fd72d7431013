// Activation quantization of the integer GEMVs (QuantizeActivations, matmul_internal.h): the
// reference quantizers ref::QuantizeRow(Q8_0 | Q8_1 | Q8_K) on the GPU, bit for bit. Per block
// of B values (32, or 256 for Q8_K): amax = max |x|, d = amax / 127 (Q8_0: rounded to half and
// back), id = d != 0 ? 1 / d : 0, q = clamp(round-half-even(x * id), -127, 127); IEEE division
// and multiplication (nvcc's defaults: no fast-math, denormals kept), so every q and d equals
// the CPU's (QuantizeOctet, quant_act.cuh).
//
// One thread block per (2048-value span, token row), 256 threads of 8 consecutive values each:
// a warp per 256-value block (Q8_K), 4 threads per 32-value block (Q8_0/Q8_1).
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/quant_act.cuh"

namespace herd::cuda::internal {
namespace {

template <DType F>
__global__ void __launch_bounds__(256) QuantizeActKernel(const float* x, int64_t n_in, ActOut o, bool vec) {
  // Launched with programmatic stream serialization (matmul_gemv.cu): let the GEMV after this
  // kernel start its weight loads, then wait for the kernels before it (x, and the previous
  // GEMV still reading the buffers written below).
  PdlTrigger();
  PdlWait();
  const int64_t t = blockIdx.y;
  const int64_t v0 = static_cast<int64_t>(blockIdx.x) * kStepValues + 8 * threadIdx.x;  // first value in the row
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
  QuantizeOctet<F>(v, t, v0, o);
}

}  // namespace

size_t QuantizedActivationBytes(int64_t n_tok, int64_t n_in) { return MakeActLayout(n_tok, n_in).total; }

QuantizedActivations QuantizeActivations(DType format, const float* x, int64_t n_tok, int64_t n_in, void* buffer,
                                         cudaStream_t stream) {
  HERD_CHECK(n_in % (format == DType::kQ8_K ? 256 : 32) == 0 && (reinterpret_cast<uintptr_t>(buffer) & 255) == 0);
  HERD_CHECK(n_tok < 65536);
  const ActLayout l = MakeActLayout(n_tok, n_in);
  const ActOut o = MakeActOut(buffer, l);
  if (n_tok > 0 && n_in > 0) {
    const dim3 grid(static_cast<unsigned>(l.q_stride / kStepValues), static_cast<unsigned>(n_tok));
    const bool pdl = GemvProgrammaticLaunch();
    const bool vec = (reinterpret_cast<uintptr_t>(x) & 15) == 0;  // rows of n_in (a multiple of 32) floats
    switch (format) {
      case DType::kQ8_0:
        LaunchPdlIf(pdl, QuantizeActKernel<DType::kQ8_0>, grid, dim3(256), 0, stream, x, n_in, o, vec);
        break;
      case DType::kQ8_1:
        LaunchPdlIf(pdl, QuantizeActKernel<DType::kQ8_1>, grid, dim3(256), 0, stream, x, n_in, o, vec);
        break;
      case DType::kQ8_K:
        LaunchPdlIf(pdl, QuantizeActKernel<DType::kQ8_K>, grid, dim3(256), 0, stream, x, n_in, o, vec);
        break;
      default: HERD_CHECK_MSG(false, "QuantizeActivations: %s is not an activation format", DTypeName(format).data());
    }
  }
  return ActView(format, o);
}

}  // namespace herd::cuda::internal
