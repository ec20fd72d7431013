// Element-wise ops (ops_cuda.h). All are memory-bound: 16-byte accesses where the shape and the
// pointers allow (n_cols % 4 == 0, 16-byte aligned), scalar code otherwise. Norms: one CTA per row.
// Every kernel is launched with programmatic dependent launch (launch_pdl.cuh): it lets its
// successor launch at entry and waits for its predecessor before touching activations.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/check.h"
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_arch.h"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/rope_cuda.cuh"

namespace herd::cuda {
namespace {

bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// One CTA per row. kAdd: x += y first (stored back). kVec: float4 accesses (n_cols % 4 == 0).
// y is read only before the block-wide sum and out written only after it, so out may alias y.
template <bool kAdd, bool kVec>
__global__ void RmsNormKernel(float* x, const float* y, const float* __restrict__ w, float eps, int64_t n_cols,
                              float* out) {
  PdlTrigger();
  PdlWait();
  const int64_t row = blockIdx.x;
  float* xr = x + row * n_cols;
  float* outr = out + row * n_cols;
  float ss = 0.f;
  if constexpr (kVec) {
    const int64_t n4 = n_cols / 4;
    for (int64_t i = threadIdx.x; i < n4; i += blockDim.x) {
      float4 a = reinterpret_cast<const float4*>(xr)[i];
      if constexpr (kAdd) {
        const float4 b = reinterpret_cast<const float4*>(y + row * n_cols)[i];
        a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
        reinterpret_cast<float4*>(xr)[i] = a;
      }
      ss += a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w;
    }
  } else {
    for (int64_t i = threadIdx.x; i < n_cols; i += blockDim.x) {
      float a = xr[i];
      if constexpr (kAdd) {
        a += y[row * n_cols + i];
        xr[i] = a;
      }
      ss += a * a;
    }
  }
  const float scale = rsqrtf(BlockSum(ss) / static_cast<float>(n_cols) + eps);
  // Each thread re-reads only the elements it wrote or read above, so out == x is safe.
  if constexpr (kVec) {
    const int64_t n4 = n_cols / 4;
    for (int64_t i = threadIdx.x; i < n4; i += blockDim.x) {
      const float4 a = reinterpret_cast<const float4*>(xr)[i];
      const float4 g = reinterpret_cast<const float4*>(w)[i];
      reinterpret_cast<float4*>(outr)[i] =
          make_float4(a.x * scale * g.x, a.y * scale * g.y, a.z * scale * g.z, a.w * scale * g.w);
    }
  } else {
    for (int64_t i = threadIdx.x; i < n_cols; i += blockDim.x) outr[i] = xr[i] * scale * w[i];
  }
}

// Rows of at most 2 * blockDim.x float4s: x (and y) and the weight held in registers, the
// weight loaded before waiting for the previous kernel (weights are not written by kernels).
// Same sums in the same order as RmsNormKernel<kAdd, true> with the same block size.
template <bool kAdd>
__global__ void RmsNormRegKernel(float* x, const float* y, const float* __restrict__ w, float eps, int64_t n_cols,
                                 float* out) {
  PdlTrigger();
  const int n4 = static_cast<int>(n_cols / 4);
  const int i0 = threadIdx.x, i1 = threadIdx.x + blockDim.x;
  const bool h0 = i0 < n4, h1 = i1 < n4;
  const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
  const float4* w4 = reinterpret_cast<const float4*>(w);
  const float4 g0 = h0 ? w4[i0] : zero, g1 = h1 ? w4[i1] : zero;
  PdlWait();
  const int64_t row = blockIdx.x;
  float4* x4 = reinterpret_cast<float4*>(x + row * n_cols);
  float4 a0 = h0 ? x4[i0] : zero, a1 = h1 ? x4[i1] : zero;
  if constexpr (kAdd) {
    const float4* y4 = reinterpret_cast<const float4*>(y + row * n_cols);
    const float4 b0 = h0 ? y4[i0] : zero, b1 = h1 ? y4[i1] : zero;
    a0.x += b0.x, a0.y += b0.y, a0.z += b0.z, a0.w += b0.w;
    a1.x += b1.x, a1.y += b1.y, a1.z += b1.z, a1.w += b1.w;
    if (h0) x4[i0] = a0;
    if (h1) x4[i1] = a1;
  }
  float ss = 0.f;
  if (h0) ss += a0.x * a0.x + a0.y * a0.y + a0.z * a0.z + a0.w * a0.w;
  if (h1) ss += a1.x * a1.x + a1.y * a1.y + a1.z * a1.z + a1.w * a1.w;
  const float scale = rsqrtf(BlockSum(ss) / static_cast<float>(n_cols) + eps);
  float4* o4 = reinterpret_cast<float4*>(out + row * n_cols);
  if (h0) o4[i0] = make_float4(a0.x * scale * g0.x, a0.y * scale * g0.y, a0.z * scale * g0.z, a0.w * scale * g0.w);
  if (h1) o4[i1] = make_float4(a1.x * scale * g1.x, a1.y * scale * g1.y, a1.z * scale * g1.z, a1.w * scale * g1.w);
}

// Threads for rows of n items (floats or float4s): up to 2 per thread in flight for short rows
// (a decode step's single row is latency-bound), at most 1024.
int NormThreads(int64_t n) {
  int t = 32;
  while (t < 1024 && t * 2 < n) t *= 2;
  return t;
}

template <bool kAdd>
void LaunchNorm(float* x, const float* y, const float* w, float eps, int64_t n_rows, int64_t n_cols, float* out,
                cudaStream_t stream) {
  if (n_rows <= 0) return;
  HERD_CHECK(n_cols > 0 && n_rows < (1ll << 31));
  const bool vec = n_cols % 4 == 0 && Aligned16(x) && Aligned16(w) && Aligned16(out) && (!kAdd || Aligned16(y));
  const int threads = NormThreads(vec ? n_cols / 4 : n_cols);
  const auto grid = static_cast<unsigned>(n_rows);
  if (vec && n_cols / 4 <= 2 * threads) {
    LaunchPdl(RmsNormRegKernel<kAdd>, grid, threads, 0, stream, x, y, w, eps, n_cols, out);
  } else if (vec) {
    LaunchPdl(RmsNormKernel<kAdd, true>, grid, threads, 0, stream, x, y, w, eps, n_cols, out);
  } else {
    LaunchPdl(RmsNormKernel<kAdd, false>, grid, threads, 0, stream, x, y, w, eps, n_cols, out);
  }
}

// One CTA per token: the n_rot / 2 (cos, sin) pairs are computed once (double, as the reference)
// into shared memory, before waiting for the previous kernel (positions and inv_freq are not
// written by kernels), then applied to every head.
__global__ void RopeKernel(float* x, int64_t n_heads, int64_t head_dim, const int32_t* __restrict__ positions,
                           const float* __restrict__ inv_freq, int32_t half) {
  extern __shared__ float cs[];  // [half] cos, then [half] sin
  PdlTrigger();
  const int64_t t = blockIdx.x;
  RopeAngles(positions[t], inv_freq, half, cs);
  __syncthreads();
  PdlWait();
  RopeRotate(x + t * n_heads * head_dim, n_heads, head_dim, half, cs);
}

__global__ void SwiGluVec(const float4* gate, const float4* up, float4* out, int64_t n4) {
  PdlTrigger();
  PdlWait();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float4 g = gate[i], u = up[i];
    out[i] = make_float4(Silu(g.x) * u.x, Silu(g.y) * u.y, Silu(g.z) * u.z, Silu(g.w) * u.w);
  }
}

__global__ void SwiGluScalar(const float* gate, const float* up, float* out, int64_t n) {
  PdlTrigger();
  PdlWait();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = Silu(gate[i]) * up[i];
  }
}

__global__ void AddVec(float4* x, const float4* __restrict__ y, int64_t n4) {
  PdlTrigger();
  PdlWait();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float4 a = x[i];
    const float4 b = y[i];
    a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
    x[i] = a;
  }
}

__global__ void AddScalar(float* x, const float* __restrict__ y, int64_t n) {
  PdlTrigger();
  PdlWait();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] += y[i];
  }
}

// One CTA per output row.
template <bool kVec>
__global__ void GatherRowsKernel(const float* __restrict__ x, const int32_t* __restrict__ rows, int64_t n_cols,
                                 float* __restrict__ out) {
  PdlTrigger();
  PdlWait();
  const int64_t i = blockIdx.x;
  const float* src = x + static_cast<int64_t>(rows[i]) * n_cols;
  float* dst = out + i * n_cols;
  if constexpr (kVec) {
    for (int64_t c = threadIdx.x; c < n_cols / 4; c += blockDim.x)
      reinterpret_cast<float4*>(dst)[c] = reinterpret_cast<const float4*>(src)[c];
  } else {
    for (int64_t c = threadIdx.x; c < n_cols; c += blockDim.x) dst[c] = src[c];
  }
}

// Grid for a grid-stride element-wise kernel of `n` items: enough CTAs to fill the GPU, no more.
unsigned ElementwiseBlocks(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 8192 ? blocks : 8192);
}

}  // namespace

bool PdlEnabled() {
  static const bool enabled = [] {
    const char* e = std::getenv("HERD_CUDA_PDL");
    return e == nullptr || std::strcmp(e, "0") != 0;
  }();
  return enabled && Sm90PlusCode();
}

cudaError_t ProbeKernels(int* code_cc) {
  cudaFuncAttributes attr{};
  const cudaError_t err = cudaFuncGetAttributes(&attr, AddScalar);
  // ptxVersion: the virtual architecture the kernel was compiled from (90 for the build's sm_90a
  // machine code, 80 for its compute_80 PTX compiled by the driver). Every translation unit is
  // built for the same targets, so the runtime makes the same choice for all of them.
  if (code_cc != nullptr) *code_cc = err == cudaSuccess ? attr.ptxVersion : 0;
  return err;
}

void RmsNorm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t n_cols, float* out,
             cudaStream_t stream) {
  LaunchNorm<false>(const_cast<float*>(x), nullptr, weight, eps, n_rows, n_cols, out, stream);
}

void AddRmsNorm(float* x, const float* y, const float* weight, float eps, int64_t n_rows, int64_t n_cols, float* out,
                cudaStream_t stream) {
  LaunchNorm<true>(x, y, weight, eps, n_rows, n_cols, out, stream);
}

void Rope(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* positions, const float* inv_freq,
          int32_t n_rot, cudaStream_t stream) {
  HERD_CHECK(n_rot > 0 && n_rot % 2 == 0 && n_rot <= head_dim && head_dim % 2 == 0);
  if (n_tok <= 0 || n_heads <= 0) return;
  const int32_t half = n_rot / 2;
  const int64_t pairs = n_heads * half;
  const int threads = pairs >= 256 ? 256 : (pairs >= 128 ? 128 : 64);
  LaunchPdl(RopeKernel, static_cast<unsigned>(n_tok), threads, sizeof(float) * 2 * half, stream, x, n_heads, head_dim,
            positions, inv_freq, half);
}

void SwiGlu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int kThreads = 256;
  if (n % 4 == 0 && Aligned16(gate) && Aligned16(up) && Aligned16(out)) {
    LaunchPdl(SwiGluVec, ElementwiseBlocks(n / 4, kThreads), kThreads, 0, stream, reinterpret_cast<const float4*>(gate),
              reinterpret_cast<const float4*>(up), reinterpret_cast<float4*>(out), n / 4);
  } else {
    LaunchPdl(SwiGluScalar, ElementwiseBlocks(n, kThreads), kThreads, 0, stream, gate, up, out, n);
  }
}

void Add(float* x, const float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int kThreads = 256;
  if (n % 4 == 0 && Aligned16(x) && Aligned16(y)) {
    LaunchPdl(AddVec, ElementwiseBlocks(n / 4, kThreads), kThreads, 0, stream, reinterpret_cast<float4*>(x),
              reinterpret_cast<const float4*>(y), n / 4);
  } else {
    LaunchPdl(AddScalar, ElementwiseBlocks(n, kThreads), kThreads, 0, stream, x, y, n);
  }
}

void GatherRows(const float* x, const int32_t* rows, int64_t n, int64_t n_cols, float* out, cudaStream_t stream) {
  if (n <= 0 || n_cols <= 0) return;
  HERD_CHECK(n < (1ll << 31));
  const bool vec = n_cols % 4 == 0 && Aligned16(x) && Aligned16(out);
  const int threads = NormThreads(vec ? n_cols / 4 : n_cols);
  if (vec) {
    LaunchPdl(GatherRowsKernel<true>, static_cast<unsigned>(n), threads, 0, stream, x, rows, n_cols, out);
  } else {
    LaunchPdl(GatherRowsKernel<false>, static_cast<unsigned>(n), threads, 0, stream, x, rows, n_cols, out);
  }
}

}  // namespace herd::cuda
