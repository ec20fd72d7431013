// StoreKv, the split-K merge and the PagedAttention dispatch (attention_cuda.h). The attention
// kernel itself: attention_kernel.cuh (instances in attention_{f16,f32,q8}.cu).
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "base/check.h"
#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/cuda_check.h"

namespace herd::cuda {
namespace {

// One CTA per token: its slot is looked up once, then every kv head's K and V vector written.
// F16 / F32: thread per value. Q8_0: warp per 32-value block, quantized as ref::QuantizeRow
// (scale = fp16(amax / 127), q = clamp(rint(x / scale'), -127, 127) with scale' the rounded scale;
// IEEE division and rint give the reference's bytes).
template <DType T>
__global__ void StoreKvKernel(uint8_t* __restrict__ kc, uint8_t* __restrict__ vc, const int32_t* __restrict__ pos,
                              const int32_t* __restrict__ seq, const int32_t* const* __restrict__ tables,
                              int32_t block_size, int32_t n_kv_heads, int32_t head_dim, int32_t vec_bytes,
                              const float* __restrict__ k, const float* __restrict__ v) {
  const int64_t t = blockIdx.x;
  const int32_t p = pos[t];
  const int64_t slot = static_cast<int64_t>(tables[seq[t]][p / block_size]) * block_size + p % block_size;
  const int64_t row0 = slot * n_kv_heads;  // vector index of kv head 0 at this slot
  const int n = n_kv_heads * head_dim;
  const float* kt = k + t * n;
  const float* vt = v + t * n;
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

// Merges the split partials of tokens whose item used more than one split. One CTA per
// (token, head): the first warp turns the splits' (max, sum) into weights (one lane per split,
// kMaxSplits == 32), then every thread sums its dims over the splits (independent loads).
__global__ void MergeSplitsKernel(const float* __restrict__ part_o, const float2* __restrict__ part_ml,
                                  const int32_t* __restrict__ nsplit, int32_t n_heads, int32_t head_dim, int32_t s_max,
                                  float* __restrict__ out) {
  static_assert(attn::kMaxSplits <= 32);
  __shared__ float weight[attn::kMaxSplits];
  const int64_t th = blockIdx.x;  // token * n_heads + head
  const int ns = nsplit[th / n_heads];
  if (ns <= 1) return;  // written directly by the attention kernel
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    const float2 ml = lane < ns ? part_ml[th * s_max + lane] : make_float2(-INFINITY, 0.f);
    float m = ml.x;
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    const float w = ml.y > 0.f ? ml.y * exp2f(ml.x - m) : 0.f;  // a split with no visible position: 0
    float den = w;
    for (int o = 16; o > 0; o >>= 1) den += __shfl_xor_sync(0xffffffffu, den, o);
    if (lane < ns) weight[lane] = w / den;
  }
  __syncthreads();
  const float* o = part_o + th * s_max * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float acc = 0.f;
#pragma unroll 8
    for (int s = 0; s < ns; ++s) acc += weight[s] * o[s * head_dim + d];
    out[th * head_dim + d] = acc;
  }
}

constexpr int kTargetCtasPerSm = 12;

void CheckCache(const KvLayerView& c) {
  HERD_CHECK_MSG(c.type == DType::kF16 || c.type == DType::kF32 || c.type == DType::kQ8_0,
                 "CUDA KV cache type %s not supported", std::string(DTypeName(c.type)).c_str());
  HERD_CHECK_MSG(c.head_dim > 0 && c.head_dim % Traits(c.type).block_size == 0,
                 "head_dim %d not a multiple of the %s block", c.head_dim, std::string(DTypeName(c.type)).c_str());
  HERD_CHECK(c.block_size > 0 && c.n_kv_heads > 0 && c.n_blocks > 0);
}

}  // namespace

AttentionScratch::~AttentionScratch() {
  if (data_ != nullptr) cudaFree(data_);
}

void* AttentionScratch::Reserve(size_t bytes, cudaStream_t stream) {
  if (bytes <= bytes_) return data_;
  if (data_ != nullptr) {
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream));  // queued kernels may still use the old buffer
    HERD_CUDA_CHECK(cudaFree(data_));
    data_ = nullptr;
  }
  bytes = std::max(bytes, bytes_ * 2);
  HERD_CUDA_CHECK(cudaMalloc(&data_, bytes));
  bytes_ = bytes;
  return data_;
}

void StoreKv(const KvLayerView& c, const AttentionBatch& b, const float* k, const float* v, cudaStream_t stream) {
  CheckCache(c);
  if (b.n_tokens <= 0) return;
  HERD_CHECK(b.n_tokens < (1ll << 31));
  const int n = c.n_kv_heads * c.head_dim;
  const int work = c.type == DType::kQ8_0 ? 2 * n : n;  // Q8_0: a warp per 32 values of K and of V
  const int threads = std::min(256, std::max(64, (work + 31) / 32 * 32));
  const auto grid = static_cast<unsigned>(b.n_tokens);
  const auto vec_bytes = static_cast<int32_t>(KvVectorBytes(c.type, c.head_dim));
  auto* kc = static_cast<uint8_t*>(c.k);
  auto* vc = static_cast<uint8_t*>(c.v);
  switch (c.type) {
    case DType::kF16:
      StoreKvKernel<DType::kF16><<<grid, threads, 0, stream>>>(kc, vc, b.pos, b.seq, b.block_tables, c.block_size,
                                                               c.n_kv_heads, c.head_dim, vec_bytes, k, v);
      break;
    case DType::kF32:
      StoreKvKernel<DType::kF32><<<grid, threads, 0, stream>>>(kc, vc, b.pos, b.seq, b.block_tables, c.block_size,
                                                               c.n_kv_heads, c.head_dim, vec_bytes, k, v);
      break;
    default:
      StoreKvKernel<DType::kQ8_0><<<grid, threads, 0, stream>>>(kc, vc, b.pos, b.seq, b.block_tables, c.block_size,
                                                                c.n_kv_heads, c.head_dim, vec_bytes, k, v);
      break;
  }
  HERD_CUDA_CHECK_LAUNCH();
}

void PagedAttention(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads, float scale,
                    float* out, int num_sms, AttentionScratch* scratch, cudaStream_t stream) {
  CheckCache(c);
  HERD_CHECK(n_heads > 0 && n_heads % c.n_kv_heads == 0);
  HERD_CHECK_MSG(c.head_dim % 16 == 0 && c.head_dim <= attn::kMaxHeadDim,
                 "CUDA attention needs head_dim a multiple of 16 up to %d, got %d", attn::kMaxHeadDim, c.head_dim);
  if (b.n_tokens <= 0) return;
  using namespace attn;
  Params p{};
  p.k = static_cast<const uint8_t*>(c.k);
  p.v = static_cast<const uint8_t*>(c.v);
  p.block_size = c.block_size;
  p.n_kv_heads = c.n_kv_heads;
  p.head_dim = c.head_dim;
  p.vec_bytes = static_cast<int32_t>(KvVectorBytes(c.type, c.head_dim));
  p.block_shift = (c.block_size & (c.block_size - 1)) == 0 ? __builtin_ctz(static_cast<unsigned>(c.block_size)) : -1;
  p.pos = b.pos;
  p.seq = b.seq;
  p.tables = b.block_tables;
  p.n_tokens = static_cast<int32_t>(b.n_tokens);
  p.n_heads = n_heads;
  p.group = n_heads / c.n_kv_heads;
  p.head_chunks = (p.group + kItemRows - 1) / kItemRows;
  p.scale_log2 = scale * 1.4426950408889634f;
  p.q = q;
  p.out = out;

  // Splits: about kTargetCtasPerSm CTAs per SM (several waves of the ~3 resident, so the last
  // wave's tail is short) when every token is a decode item; never more than the cache could
  // need (positions / (tile * min tiles per split)).
  const int64_t units = b.n_tokens * c.n_kv_heads * p.head_chunks;
  const int64_t want = (static_cast<int64_t>(std::max(num_sms, 1)) * kTargetCtasPerSm + units - 1) / units;
  const int64_t cache_tiles = (static_cast<int64_t>(c.n_blocks) * c.block_size + kTile - 1) / kTile;
  const int64_t cap = std::max<int64_t>(1, (cache_tiles + kMinTilesPerSplit - 1) / kMinTilesPerSplit);
  p.s_max = static_cast<int32_t>(std::clamp<int64_t>(want, 1, std::min<int64_t>(kMaxSplits, cap)));
  if (p.s_max > 1) {
    const size_t rows = static_cast<size_t>(b.n_tokens) * n_heads * p.s_max;
    const size_t o_bytes = rows * c.head_dim * sizeof(float);
    const size_t ml_bytes = rows * sizeof(float2);
    auto* base = static_cast<uint8_t*>(
        scratch->Reserve(o_bytes + ml_bytes + sizeof(int32_t) * static_cast<size_t>(b.n_tokens), stream));
    p.part_o = reinterpret_cast<float*>(base);
    p.part_ml = reinterpret_cast<float2*>(base + o_bytes);
    p.nsplit = reinterpret_cast<int32_t*>(base + o_bytes + ml_bytes);
  }
  const int64_t grid = units * p.s_max;
  HERD_CHECK_MSG(grid < (1ll << 31), "attention grid too large (%lld CTAs)", static_cast<long long>(grid));
  const int rows_small = p.group <= 4 ? 4 : (p.group <= 8 ? 8 : kItemRows);
  switch (c.type) {
    case DType::kF16: {
      const bool tc = b.n_tokens > 1 && LaunchPrefillTcF16(p, stream);  // runs of positions on tensor cores
      LaunchF16(p, rows_small, b.n_tokens > 1 && !tc, static_cast<unsigned>(grid), stream);
      break;
    }
    case DType::kF32: LaunchF32(p, rows_small, b.n_tokens > 1, static_cast<unsigned>(grid), stream); break;
    default: LaunchQ8_0(p, rows_small, b.n_tokens > 1, static_cast<unsigned>(grid), stream); break;
  }
  if (p.s_max > 1) {
    const int threads = c.head_dim > 64 ? 128 : 64;
    MergeSplitsKernel<<<static_cast<unsigned>(b.n_tokens * n_heads), threads, 0, stream>>>(
        p.part_o, p.part_ml, p.nsplit, n_heads, c.head_dim, p.s_max, out);
    HERD_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace herd::cuda
