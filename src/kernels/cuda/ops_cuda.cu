// Element-wise ops (ops_cuda.h). All are memory-bound: 16-byte accesses where the shape and the
// pointers allow (n_cols % 4 == 0, 16-byte aligned), scalar code otherwise. Norms: one CTA per row.
#include <cstdint>

#include "base/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops_cuda.h"

namespace herd::cuda {
namespace {

bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Sum over the CTA (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ float BlockSum(float v) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // partial[] may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int n_warps = blockDim.x / 32;
  v = lane < n_warps ? partial[lane] : 0.f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One CTA per row. kAdd: x += y first (stored back). kVec: float4 accesses (n_cols % 4 == 0).
template <bool kAdd, bool kVec>
__global__ void RmsNormKernel(float* x, const float* __restrict__ y, const float* __restrict__ w, float eps,
                              int64_t n_cols, float* out) {
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

int NormThreads(int64_t n_cols) {
  int t = 32;
  while (t < 1024 && t * 8 < n_cols) t *= 2;  // ~8+ elements per thread for long rows
  return t;
}

template <bool kAdd>
void LaunchNorm(float* x, const float* y, const float* w, float eps, int64_t n_rows, int64_t n_cols, float* out,
                cudaStream_t stream) {
  if (n_rows <= 0) return;
  HERD_CHECK(n_cols > 0 && n_rows < (1ll << 31));
  const bool vec = n_cols % 4 == 0 && Aligned16(x) && Aligned16(w) && Aligned16(out) && (!kAdd || Aligned16(y));
  const int threads = NormThreads(vec ? n_cols / 4 : n_cols);
  if (vec) {
    RmsNormKernel<kAdd, true><<<static_cast<unsigned>(n_rows), threads, 0, stream>>>(x, y, w, eps, n_cols, out);
  } else {
    RmsNormKernel<kAdd, false><<<static_cast<unsigned>(n_rows), threads, 0, stream>>>(x, y, w, eps, n_cols, out);
  }
  HERD_CUDA_CHECK_LAUNCH();
}

// One CTA per token: the n_rot / 2 (cos, sin) pairs are computed once (double, as the reference)
// into shared memory, then applied to every head.
__global__ void RopeKernel(float* x, int64_t n_heads, int64_t head_dim, const int32_t* __restrict__ positions,
                           const float* __restrict__ inv_freq, int32_t half) {
  extern __shared__ float cs[];  // [half] cos, then [half] sin
  const int64_t t = blockIdx.x;
  const double p = static_cast<double>(positions[t]);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    double s, c;
    sincos(p * static_cast<double>(inv_freq[i]), &s, &c);
    cs[i] = static_cast<float>(c);
    cs[half + i] = static_cast<float>(s);
  }
  __syncthreads();
  float* xt = x + t * n_heads * head_dim;
  const int64_t n_pairs = n_heads * half;
  for (int64_t k = threadIdx.x; k < n_pairs; k += blockDim.x) {
    const int64_t h = k / half;
    const int i = static_cast<int>(k - h * half);
    float2* v = reinterpret_cast<float2*>(xt + h * head_dim) + i;  // head_dim is even: 8-byte aligned
    const float2 a = *v;
    const float c = cs[i], s = cs[half + i];
    *v = make_float2(a.x * c - a.y * s, a.x * s + a.y * c);
  }
}

__device__ __forceinline__ float Silu(float g) { return g / (1.0f + expf(-g)); }

__global__ void SwiGluVec(const float4* gate, const float4* up, float4* out, int64_t n4) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float4 g = gate[i], u = up[i];
    out[i] = make_float4(Silu(g.x) * u.x, Silu(g.y) * u.y, Silu(g.z) * u.z, Silu(g.w) * u.w);
  }
}

__global__ void SwiGluScalar(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = Silu(gate[i]) * up[i];
  }
}

__global__ void AddVec(float4* x, const float4* __restrict__ y, int64_t n4) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float4 a = x[i];
    const float4 b = y[i];
    a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
    x[i] = a;
  }
}

__global__ void AddScalar(float* x, const float* __restrict__ y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] += y[i];
  }
}

// One CTA per output row.
template <bool kVec>
__global__ void GatherRowsKernel(const float* __restrict__ x, const int32_t* __restrict__ rows, int64_t n_cols,
                                 float* __restrict__ out) {
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

cudaError_t ProbeKernels() {
  cudaFuncAttributes attr{};
  return cudaFuncGetAttributes(&attr, AddScalar);
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
  RopeKernel<<<static_cast<unsigned>(n_tok), threads, sizeof(float) * 2 * half, stream>>>(x, n_heads, head_dim,
                                                                                          positions, inv_freq, half);
  HERD_CUDA_CHECK_LAUNCH();
}

void SwiGlu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int kThreads = 256;
  if (n % 4 == 0 && Aligned16(gate) && Aligned16(up) && Aligned16(out)) {
    SwiGluVec<<<ElementwiseBlocks(n / 4, kThreads), kThreads, 0, stream>>>(reinterpret_cast<const float4*>(gate),
                                                                           reinterpret_cast<const float4*>(up),
                                                                           reinterpret_cast<float4*>(out), n / 4);
  } else {
    SwiGluScalar<<<ElementwiseBlocks(n, kThreads), kThreads, 0, stream>>>(gate, up, out, n);
  }
  HERD_CUDA_CHECK_LAUNCH();
}

void Add(float* x, const float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int kThreads = 256;
  if (n % 4 == 0 && Aligned16(x) && Aligned16(y)) {
    AddVec<<<ElementwiseBlocks(n / 4, kThreads), kThreads, 0, stream>>>(reinterpret_cast<float4*>(x),
                                                                        reinterpret_cast<const float4*>(y), n / 4);
  } else {
    AddScalar<<<ElementwiseBlocks(n, kThreads), kThreads, 0, stream>>>(x, y, n);
  }
  HERD_CUDA_CHECK_LAUNCH();
}

void GatherRows(const float* x, const int32_t* rows, int64_t n, int64_t n_cols, float* out, cudaStream_t stream) {
  if (n <= 0 || n_cols <= 0) return;
  HERD_CHECK(n < (1ll << 31));
  const bool vec = n_cols % 4 == 0 && Aligned16(x) && Aligned16(out);
  const int threads = NormThreads(vec ? n_cols / 4 : n_cols);
  if (vec) {
    GatherRowsKernel<true><<<static_cast<unsigned>(n), threads, 0, stream>>>(x, rows, n_cols, out);
  } else {
    GatherRowsKernel<false><<<static_cast<unsigned>(n), threads, 0, stream>>>(x, rows, n_cols, out);
  }
  HERD_CUDA_CHECK_LAUNCH();
}

}  // namespace herd::cuda
