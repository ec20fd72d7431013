// StoreKv and RopeStoreKv (attention_cuda.h): a decode or prefill batch's new K / V rows into
// the paged caches, the RoPE of q and k before it in the fused form. Launched with programmatic
// dependent launch (launch_pdl.cuh).
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/check.h"
#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/rope_cuda.cuh"

namespace herd::cuda {
namespace {

// Vector index (kv head 0) of token t's slot: block_tables[seq[t]][pos[t] / block_size] *
// block_size + pos[t] % block_size, times n_kv_heads. Reads only the uploaded batch description.
__device__ __forceinline__ int64_t SlotRow(const int32_t* __restrict__ pos, const int32_t* __restrict__ seq,
                                           const int32_t* const* __restrict__ tables, int32_t block_size,
                                           int32_t n_kv_heads, int64_t t) {
  const int32_t p = pos[t];
  return (static_cast<int64_t>(tables[seq[t]][p / block_size]) * block_size + p % block_size) * n_kv_heads;
}

// Writes one token's K and V vectors (kt, vt: [n_kv_heads * head_dim]) at vector row row0 of the
// caches, strided over the CTA. F16 / F32: thread per value. Q8_0: warp per 32-value block,
// quantized as ref::QuantizeRow (scale = fp16(amax / 127), q = clamp(rint(x / scale'), -127, 127)
// with scale' the rounded scale; IEEE division and rint give the reference's bytes).
// kt may point to shared memory (the fused RoPE kernel's rotated head).
template <DType T>
__device__ __forceinline__ void StoreToken(uint8_t* kc, uint8_t* vc, int64_t row0, int32_t n_kv_heads, int32_t head_dim,
                                           int32_t vec_bytes, const float* kt, const float* vt) {
  const int n = n_kv_heads * head_dim;
  if constexpr (T == DType::kF16 || T == DType::kF32) {
    using E = std::conditional_t<T == DType::kF16, __half, float>;
    E* kd = reinterpret_cast<E*>(kc) + row0 * head_dim;  // vectors of one slot are contiguous
    E* vd = reinterpret_cast<E*>(vc) + row0 * head_dim;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      if constexpr (T == DType::kF16) {
        kd[i] = __float2half_rn(kt[i]);
        vd[i] = __float2half_rn(vt[i]);
      } else {
        kd[i] = kt[i];
        vd[i] = vt[i];
      }
    }
  } else {
    const int lane = threadIdx.x % 32;
    const int blocks_per_vec = head_dim / 32;
    const int n_blocks = n / 32;  // Q8_0 blocks of K (and of V) for this token
    for (int b = threadIdx.x / 32; b < 2 * n_blocks; b += blockDim.x / 32) {
      const bool is_v = b >= n_blocks;
      const int bb = is_v ? b - n_blocks : b;
      const int h = bb / blocks_per_vec, j = bb % blocks_per_vec;
      const float x = (is_v ? vt : kt)[bb * 32 + lane];
      float amax = fabsf(x);
      for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
      const __half d = __float2half_rn(amax / 127.f);
      const float df = __half2float(d);
      const float id = df != 0.f ? 1.f / df : 0.f;
      const float q = fminf(fmaxf(rintf(x * id), -127.f), 127.f);
      uint8_t* blk = (is_v ? vc : kc) + (row0 + h) * vec_bytes + j * 34;
      blk[2 + lane] = static_cast<uint8_t>(static_cast<int8_t>(q));
      if (lane == 0) *reinterpret_cast<__half*>(blk) = d;  // 2-byte aligned: vec_bytes and 34 are even
    }
  }
}

// The cache and batch arguments of the store kernels.
struct StoreArgs {
  uint8_t* kc;
  uint8_t* vc;
  const int32_t* pos;
  const int32_t* seq;
  const int32_t* const* tables;
  int32_t block_size;
  int32_t n_kv_heads;
  int32_t head_dim;
  int32_t vec_bytes;
};

// One CTA per token: its slot is looked up once (before waiting for the previous kernel), then
// every kv head's K and V vector written.
template <DType T>
__global__ void StoreKvKernel(const StoreArgs a, const float* __restrict__ k, const float* __restrict__ v) {
  PdlTrigger();
  const int64_t t = blockIdx.x;
  const int64_t row0 = SlotRow(a.pos, a.seq, a.tables, a.block_size, a.n_kv_heads, t);
  PdlWait();
  const int64_t n = static_cast<int64_t>(a.n_kv_heads) * a.head_dim;
  StoreToken<T>(a.kc, a.vc, row0, a.n_kv_heads, a.head_dim, a.vec_bytes, k + t * n, v + t * n);
}

// RoPE of one token's q and k heads (in place), then the store of its k and v. Grid
// (n_tokens, n_kv_heads): CTA (t, j) rotates query heads [j * q_per, (j + 1) * q_per) and kv head
// j, keeps the rotated k head in shared memory and stores it and v head j. The angles and the
// slot are computed before waiting for the previous kernel. The same arithmetic as RopeRotate
// and StoreToken, so the results equal Rope, Rope, StoreKv.
template <DType T>
__global__ void RopeStoreKvKernel(const StoreArgs a, float* q, float* k, const float* __restrict__ v, int32_t n_heads,
                                  int32_t q_per, const int32_t* __restrict__ positions,
                                  const float* __restrict__ inv_freq, int32_t half) {
  extern __shared__ float smem[];
  float* cs = smem;             // [half] cos, [half] sin
  float* kh = smem + 2 * half;  // [head_dim] the rotated k head
  PdlTrigger();
  const int64_t t = blockIdx.x;
  const int j = blockIdx.y;
  const int hd = a.head_dim;
  RopeAngles(positions[t], inv_freq, half, cs);
  const int64_t row0 = SlotRow(a.pos, a.seq, a.tables, a.block_size, a.n_kv_heads, t);
  __syncthreads();
  PdlWait();
  const int q0 = j * q_per, q1 = min(n_heads, q0 + q_per);
  if (q1 > q0) RopeRotate(q + (t * n_heads + q0) * hd, q1 - q0, hd, half, cs);
  float2* kt = reinterpret_cast<float2*>(k + (t * a.n_kv_heads + j) * hd);
  for (int i = threadIdx.x; i < hd / 2; i += blockDim.x) {
    float2 x = kt[i];
    if (i < half) {
      x = RotatePair(x, cs[i], cs[half + i]);
      kt[i] = x;
    }
    reinterpret_cast<float2*>(kh)[i] = x;
  }
  __syncthreads();
  StoreToken<T>(a.kc, a.vc, row0 + j, 1, hd, a.vec_bytes, kh, v + (t * a.n_kv_heads + j) * hd);
}

}  // namespace

namespace {

StoreArgs MakeStoreArgs(const KvLayerView& c, const AttentionBatch& b) {
  return StoreArgs{static_cast<uint8_t*>(c.k),
                   static_cast<uint8_t*>(c.v),
                   b.pos,
                   b.seq,
                   b.block_tables,
                   c.block_size,
                   c.n_kv_heads,
                   c.head_dim,
                   static_cast<int32_t>(KvVectorBytes(c.type, c.head_dim))};
}

int StoreThreads(const KvLayerView& c) {
  const int n = c.n_kv_heads * c.head_dim;
  const int work = c.type == DType::kQ8_0 ? 2 * n : n;  // Q8_0: a warp per 32 values of K and of V
  return std::min(256, std::max(64, (work + 31) / 32 * 32));
}

}  // namespace

void StoreKv(const KvLayerView& c, const AttentionBatch& b, const float* k, const float* v, cudaStream_t stream) {
  attn::CheckCache(c);
  if (b.n_tokens <= 0) return;
  HERD_CHECK(b.n_tokens < (1ll << 31));
  const auto grid = static_cast<unsigned>(b.n_tokens);
  const StoreArgs a = MakeStoreArgs(c, b);
  const int threads = StoreThreads(c);
  switch (c.type) {
    case DType::kF16: LaunchPdl(StoreKvKernel<DType::kF16>, grid, threads, 0, stream, a, k, v); break;
    case DType::kF32: LaunchPdl(StoreKvKernel<DType::kF32>, grid, threads, 0, stream, a, k, v); break;
    default: LaunchPdl(StoreKvKernel<DType::kQ8_0>, grid, threads, 0, stream, a, k, v); break;
  }
}

void RopeStoreKv(const KvLayerView& c, const AttentionBatch& b, float* q, int32_t n_heads, float* k, const float* v,
                 const int32_t* positions, const float* inv_freq, int32_t n_rot, cudaStream_t stream) {
  attn::CheckCache(c);
  HERD_CHECK(n_rot > 0 && n_rot % 2 == 0 && n_rot <= c.head_dim && n_heads > 0);
  if (b.n_tokens <= 0) return;
  HERD_CHECK(b.n_tokens < (1ll << 31) && c.n_kv_heads < 65536);
  const StoreArgs a = MakeStoreArgs(c, b);
  const int32_t half = n_rot / 2;
  const int32_t q_per = (n_heads + c.n_kv_heads - 1) / c.n_kv_heads;
  const int threads = q_per * half >= 256 ? 256 : 128;  // >= 4 warps: a Q8_0 head's blocks at once
  const dim3 grid(static_cast<unsigned>(b.n_tokens), static_cast<unsigned>(c.n_kv_heads));
  const size_t smem = sizeof(float) * (2 * half + c.head_dim);
  switch (c.type) {
    case DType::kF16:
      LaunchPdl(RopeStoreKvKernel<DType::kF16>, grid, threads, smem, stream, a, q, k, v, n_heads, q_per, positions,
                inv_freq, half);
      break;
    case DType::kF32:
      LaunchPdl(RopeStoreKvKernel<DType::kF32>, grid, threads, smem, stream, a, q, k, v, n_heads, q_per, positions,
                inv_freq, half);
      break;
    default:
      LaunchPdl(RopeStoreKvKernel<DType::kQ8_0>, grid, threads, smem, stream, a, q, k, v, n_heads, q_per, positions,
                inv_freq, half);
      break;
  }
}

}  // namespace herd::cuda
