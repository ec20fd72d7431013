// The op that produces a matmul's input, fused with the conversion of that input for the matmul
// (matmul_internal.h: RmsNormQuantize / SwiGluQuantize for the int8 GEMV, RmsNormToHalf /
// SwiGluToHalf for the tensor-core path): each matmul group would otherwise pay a separate
// conversion kernel and one more dependent-kernel wait.
//
// Norm kernels: one CTA per token row of n_cols <= 8192 values, q_stride / 8 threads (256 to
// 1024), thread j holding values [8j, 8j + 8) (zeros past n_cols): x (+= y, where y may be 2 or 4
// partial sums added in order: MatMulSlicedK), the sum of squares over the CTA,
// out = x * scale * weight, then the output policy on the same registers.
// SwiGLU kernels: the grid of QuantizeActivations (one CTA per 2048-value span and row, 256
// threads of 8 values), each thread computing its 8 values of silu(gate) * up first.
// Output policies: ToInt8<F> (QuantizeOctet: every lane of the warp, padding included) and
// ToHalf<T> (8 values rounded to T, only inside the row; ConvertActivations' rounding).
// All are launched with programmatic dependent launch (launch_pdl.cuh): the norm weight is read
// before PdlWait, everything else after it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <type_traits>

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

// Writes values [v0, v0 + 8) of row t of an n-wide input in the GEMV's int8 format.
template <DType F>
struct ToInt8 {
  ActOut o;
  __device__ __forceinline__ void operator()(const float (&v)[8], int64_t t, int64_t v0, int64_t n) const {
    (void)n;
    QuantizeOctet<F>(v, t, v0, o);
  }
};
// ... or as half / bfloat16 (the tensor-core path's input), [n_tok, n].
template <typename T>
struct ToHalf {
  T* out;
  __device__ __forceinline__ void operator()(const float (&v)[8], int64_t t, int64_t v0, int64_t n) const {
    if (v0 >= n) return;
    T h[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if constexpr (std::is_same_v<T, __half>) {
        h[i] = __float2half_rn(v[i]);
      } else {
        h[i] = __float2bfloat16_rn(v[i]);
      }
    }
    *reinterpret_cast<uint4*>(out + t * n + v0) = *reinterpret_cast<const uint4*>(h);
  }
};

// late_trigger: the next kernel may launch only once this CTA has its sum (after its loads), so a
// successor's weight prefetch does not compete with them; else at entry. kSlices > 1: y is that
// many partial sums y + s * slice_stride, all loaded at once (registers: rows of at most 4096
// values, 512 threads, so up to 128 registers a thread and no spills).
template <bool kAdd, int kSlices, class Out>
__global__ void __launch_bounds__(kSlices > 1 ? 512 : 1024)
    RmsNormFusedKernel(float* x, const float* y, const float* __restrict__ w, float eps, int64_t n_cols, float* out,
                       Out emit, bool late_trigger, int64_t slice_stride) {
  if (!late_trigger) PdlTrigger();
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
      const float* yr = y + t * n_cols + v0;
      float b[kSlices][8];
#pragma unroll
      for (int s = 0; s < kSlices; ++s) Load8(yr + s * slice_stride, b[s]);
#pragma unroll
      for (int s = 1; s < kSlices; ++s) {
#pragma unroll
        for (int i = 0; i < 8; ++i) b[0][i] += b[s][i];
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) a[i] += b[0][i];
      Store8(xr + v0, a);
    }
  }
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) ss += a[i] * a[i];
  const float scale = rsqrtf(BlockSum(ss) / static_cast<float>(n_cols) + eps);
  if (late_trigger) PdlTrigger();
  float v[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = a[i] * scale * g[i];  // 0 past n_cols (a = g = 0)
  if (in) Store8(out + t * n_cols + v0, v);
  emit(v, t, v0, n_cols);
}

template <class Out>
__global__ void __launch_bounds__(256)
    SwiGluFusedKernel(const float* gate, const float* up, float* out, int64_t n_in, Out emit) {
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
  emit(v, t, v0, n_in);
}

bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }
int64_t FormatBlock(DType format) { return format == DType::kQ8_K ? 256 : 32; }
bool IsFormat(DType f) { return f == DType::kQ8_0 || f == DType::kQ8_1 || f == DType::kQ8_K; }

// Slices: 2 or 4 of them, rows of at most kMaxSlicedCols values, 16-byte aligned slice starts.
constexpr int64_t kMaxSlicedCols = 4096;
bool NormTakes(int64_t n_tok, int64_t n_cols, const float* x, const float* y, const float* w, const float* out,
               YSlices ys = {}) {
  const bool slices_ok = ys.n == 1 || ((ys.n == 2 || ys.n == 4) && y != nullptr && n_cols <= kMaxSlicedCols &&
                                       ys.stride >= n_tok * n_cols && ys.stride % 4 == 0);
  return n_tok > 0 && n_tok < (1ll << 31) && n_cols > 0 && n_cols <= kMaxNormCols && n_cols % 8 == 0 && Aligned16(x) &&
         Aligned16(w) && Aligned16(out) && (y == nullptr || Aligned16(y)) && slices_ok;
}
bool GluTakes(int64_t n_tok, int64_t n_in, const float* gate, const float* up, const float* out) {
  return n_tok > 0 && n_tok < 65536 && n_in > 0 && n_in % 8 == 0 && Aligned16(gate) && Aligned16(up) && Aligned16(out);
}

template <class Out>
void LaunchNorm(const Out& emit, int64_t n_tok, int64_t n_cols, cudaStream_t stream, float* x, const float* y,
                const float* w, float eps, float* out, bool pdl, YSlices ys) {
  const dim3 grid(static_cast<unsigned>(n_tok));
  const dim3 block(static_cast<unsigned>(MakeActLayout(1, n_cols).q_stride / 8));
  // A norm of several rows launched plainly (pdl false: after a cuBLAS GEMM) also lets the next
  // kernel launch only after its sums (HERD_CUDA_NORM_LATE_TRIGGER=0: at entry): on H200 (8B F16,
  // 128 sequences) the gate/up GEMM's weight prefetch, launched at the norm's entry, stretched the
  // norm from 4.2 to 7.0 us for less than that in the GEMM. After herd's own kernels (quantized
  // GEMMs, b=1 GEMVs) the trigger stays at entry.
  static const bool late = [] {
    const char* e = std::getenv("HERD_CUDA_NORM_LATE_TRIGGER");
    return e == nullptr || e[0] != '0';
  }();
  const bool late_trigger = late && n_tok > 1 && !pdl;
  pdl = pdl && PdlEnabled();
  if (y == nullptr) {
    LaunchPdlIf(pdl, RmsNormFusedKernel<false, 1, Out>, grid, block, 0, stream, x, y, w, eps, n_cols, out, emit,
                late_trigger, int64_t{0});
    return;
  }
  switch (ys.n) {
    case 2:
      LaunchPdlIf(pdl, RmsNormFusedKernel<true, 2, Out>, grid, block, 0, stream, x, y, w, eps, n_cols, out, emit,
                  late_trigger, ys.stride);
      return;
    case 4:
      LaunchPdlIf(pdl, RmsNormFusedKernel<true, 4, Out>, grid, block, 0, stream, x, y, w, eps, n_cols, out, emit,
                  late_trigger, ys.stride);
      return;
    default:
      HERD_CHECK(ys.n == 1);
      LaunchPdlIf(pdl, RmsNormFusedKernel<true, 1, Out>, grid, block, 0, stream, x, y, w, eps, n_cols, out, emit,
                  late_trigger, int64_t{0});
  }
}

template <class Out>
void LaunchGlu(const Out& emit, int64_t n_tok, int64_t n_in, cudaStream_t stream, const float* gate, const float* up,
               float* out) {
  const dim3 grid(static_cast<unsigned>(MakeActLayout(1, n_in).q_stride / kStepValues), static_cast<unsigned>(n_tok));
  LaunchPdl(SwiGluFusedKernel<Out>, grid, dim3(256), 0, stream, gate, up, out, n_in, emit);
}

// Calls fn(policy) with the int8 policy of `format` writing into buffer.
template <typename Fn>
QuantizedActivations WithInt8(DType format, int64_t n_tok, int64_t n_in, void* buffer, Fn fn) {
  HERD_CHECK((reinterpret_cast<uintptr_t>(buffer) & 255) == 0);
  const ActOut o = MakeActOut(buffer, MakeActLayout(n_tok, n_in));
  switch (format) {
    case DType::kQ8_0: fn(ToInt8<DType::kQ8_0>{o}); break;
    case DType::kQ8_1: fn(ToInt8<DType::kQ8_1>{o}); break;
    default: fn(ToInt8<DType::kQ8_K>{o}); break;
  }
  return ActView(format, o);
}

}  // namespace

bool RmsNormQuantize(DType format, float* x, const float* y, const float* weight, float eps, int64_t n_tok,
                     int64_t n_cols, float* out, void* buffer, cudaStream_t stream, QuantizedActivations* q, bool pdl,
                     YSlices y_slices) {
  if (!IsFormat(format) || n_cols % FormatBlock(format) != 0 ||
      !NormTakes(n_tok, n_cols, x, y, weight, out, y_slices)) {
    return false;
  }
  *q = WithInt8(format, n_tok, n_cols, buffer, [&](const auto& emit) {
    LaunchNorm(emit, n_tok, n_cols, stream, x, y, weight, eps, out, pdl, y_slices);
  });
  return true;
}

bool SwiGluQuantize(DType format, const float* gate, const float* up, float* out, int64_t n_tok, int64_t n_in,
                    void* buffer, cudaStream_t stream, QuantizedActivations* q) {
  if (!IsFormat(format) || n_in % FormatBlock(format) != 0 || !GluTakes(n_tok, n_in, gate, up, out)) return false;
  *q = WithInt8(format, n_tok, n_in, buffer,
                [&](const auto& emit) { LaunchGlu(emit, n_tok, n_in, stream, gate, up, out); });
  return true;
}

bool RmsNormToHalf(bool bf16, float* x, const float* y, const float* weight, float eps, int64_t n_tok, int64_t n_cols,
                   float* out, void* half_out, cudaStream_t stream, bool pdl, YSlices y_slices) {
  if (!NormTakes(n_tok, n_cols, x, y, weight, out, y_slices) || !Aligned16(half_out)) return false;
  if (bf16) {
    LaunchNorm(ToHalf<__nv_bfloat16>{static_cast<__nv_bfloat16*>(half_out)}, n_tok, n_cols, stream, x, y, weight, eps,
               out, pdl, y_slices);
  } else {
    LaunchNorm(ToHalf<__half>{static_cast<__half*>(half_out)}, n_tok, n_cols, stream, x, y, weight, eps, out, pdl,
               y_slices);
  }
  return true;
}

bool SwiGluToHalf(bool bf16, const float* gate, const float* up, float* out, int64_t n_tok, int64_t n_in,
                  void* half_out, cudaStream_t stream) {
  if (!GluTakes(n_tok, n_in, gate, up, out) || !Aligned16(half_out)) return false;
  if (bf16) {
    LaunchGlu(ToHalf<__nv_bfloat16>{static_cast<__nv_bfloat16*>(half_out)}, n_tok, n_in, stream, gate, up, out);
  } else {
    LaunchGlu(ToHalf<__half>{static_cast<__half*>(half_out)}, n_tok, n_in, stream, gate, up, out);
  }
  return true;
}

}  // namespace herd::cuda::internal
