// Shared between attention_cuda.cu (dispatch, StoreKv, split merge), attention_split.cc (split policy) and the
// per-KV-type kernel instantiations (attention_{f16,f32,q8}.cu, each compiling attention_kernel.cuh for one type).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/matmul_internal.h"
#include "tensor/dtype.h"

namespace herd::cuda::attn {

constexpr int kThreads = 128;         // 4 warps per CTA
constexpr int kTile = 32;             // KV positions per tile (one per lane in the softmax)
constexpr int kItemRows = 16;         // query rows (tokens × heads of one kv head) per work item, at most
constexpr int kMaxHeadDim = 256;      // generic kernel limit
constexpr int kMaxSplits = 64;        // split-K CTAs per work item, at most
constexpr int kMinTilesPerSplit = 2;  // tensor-core prefill: a split covers at least this many tiles
constexpr int kStages = 3;            // K/V tiles in shared memory: one computed, two in flight

enum class KvKind { kF16, kF32, kQ8_0 };

// Everything the kernel needs; pointers are device memory. Grid: one CTA per
// (token, head chunk, split, kv head), kv head fastest: blockIdx.x =
// ((t * head_chunks + hc) * s_max + s) * n_kv_heads + kvh. CTAs whose token does not start a
// work item, or whose split is beyond the item's split count, exit at once. An item's splits:
// ns = min(s_max, ceil(tiles / min_tiles)) ranges of whole tiles (SIMT kernels), merged by the
// merge kernel.
struct Params {
  const uint8_t* k;
  const uint8_t* v;
  int32_t block_size;
  int32_t n_kv_heads;
  int32_t head_dim;
  int32_t vec_bytes;    // KvVectorBytes(type, head_dim)
  int32_t block_shift;  // log2(block_size) when it is a power of two, else -1
  const int32_t* pos;
  const int32_t* seq;
  const int32_t* const* tables;
  int32_t n_tokens;
  int32_t n_heads;
  int32_t group;        // n_heads / n_kv_heads
  int32_t head_chunks;  // ceil(group / kItemRows)
  int32_t s_max;        // splits per item at most (grid dimension)
  int32_t min_tiles;    // SIMT kernels: tiles per split at least
  float scale_log2;     // scale * log2(e): scores are kept in the exp2 domain
  const float* q;
  int64_t q_stride;  // floats between q's token rows (n_heads * head_dim unless the RoPE is fused)
  float* out;
  // When set, every output value is also written rounded to half (bfloat16 when out_half_bf16),
  // as ConvertActivations rounds it: the O projection's tensor-core input (PagedAttentionHalf).
  void* out_half;
  int32_t out_half_bf16;
  // Split-K partials (only when s_max > 1): part_o [n_tokens, n_heads, s_max, head_dim] (normalised
  // per split), part_ml [n_tokens, n_heads, s_max] (running max in the exp2 domain, sum of weights),
  // nsplit [n_tokens]: splits used by the token's item (1: out written directly).
  float* part_o;
  float2* part_ml;
  int32_t* nsplit;
  // RoPE and the K/V store of this step's tokens, fused into the decode kernel (rope_inv_freq
  // non-null; only for batches of one token per sequence, one head chunk, SIMT decode, head_dim
  // 64 / 128, F16 / F32 caches): q is read unrotated and rotated as it is loaded; the CTA whose
  // split holds the token's position takes that K/V row from new_k / new_v [n_tokens,
  // n_kv_heads * head_dim] (k head kvh rotated) instead of copying it, and writes it into the
  // caches (kc, vc: k, v writable). Bits as RopeStoreKv's. q, new_k and new_v may be strided
  // (column ranges of one matmul output).
  const float* rope_inv_freq;
  const int32_t* rope_positions;
  int32_t rope_half;
  const float* new_k;
  const float* new_v;
  int64_t new_k_stride;  // floats between token rows of new_k / new_v
  int64_t new_v_stride;
  uint8_t* kc;
  uint8_t* vc;
  // With the fused RoPE + K/V store, a batch of decode tokens only, in a CUDA graph: the decode
  // kernel copies its first tiles' K/V (rows of earlier positions) before griddepcontrol.wait,
  // so their memory latency overlaps the kernels before it. Within a graph only this kernel
  // writes the cache rows of these layers' tokens during the step (their new rows, taken from
  // new_k / new_v after the wait), and the graph of the previous step has completed (stream
  // order); outside graphs an earlier kernel of the stream could in principle still be writing.
  int32_t copy_before_wait;
  int64_t n_slots;  // positions the caches hold (n_blocks * block_size): the TMA kernel's tensor maps
};

// Shared-memory row pitch (bytes) of one raw K vector of `vec_bytes`: F16/F32 rows padded
// by 16 bytes (16-byte column reads of 32 rows hit distinct banks), Q8_0 rows an odd number of
// 4-byte words (2-byte reads of 32 rows hit distinct banks).
constexpr int RowPitch(KvKind kind, int vec_bytes) {
  if (kind != KvKind::kQ8_0) return vec_bytes + 16;
  const int words = (vec_bytes + 3) / 4;
  return 4 * (words % 2 == 1 ? words : words + 1);
}

// V rows need no padding (a warp reads consecutive values of one row): 4-byte multiples.
constexpr int VRowPitch(int vec_bytes) { return (vec_bytes + 3) / 4 * 4; }

// Dynamic shared memory of a kernel instance with `rm` query rows per item.
constexpr size_t SmemBytes(KvKind kind, int vec_bytes, int hd, int rm) {
  return static_cast<size_t>(kStages) * kTile * (RowPitch(kind, vec_bytes) + VRowPitch(vec_bytes))  // raw K, V
         + sizeof(float) * (static_cast<size_t>(rm) * hd          // Q rows, pre-scaled
                            + 4 * rm * kTile                      // partial scores per warp
                            + kTile * rm                          // probabilities [pos][row]
                            + 3 * rm                              // max, sum, rescale per row
                            + (kind == KvKind::kQ8_0 ? 0 : hd));  // fused RoPE: [hd / 2] cos, sin
}

#ifdef __CUDACC__
// out[i] = o, and out_half[i] = o rounded to bfloat16 (bf16) or half as ConvertActivations
// rounds it, when out_half is set.
__device__ __forceinline__ void StoreOut(float* out, void* out_half, int bf16, int64_t i, float o) {
  out[i] = o;
  if (out_half != nullptr) {
    if (bf16) {
      static_cast<__nv_bfloat16*>(out_half)[i] = __float2bfloat16_rn(o);
    } else {
      static_cast<__half*>(out_half)[i] = __float2half_rn(o);
    }
  }
}
__device__ __forceinline__ void StoreOut(const Params& p, int64_t i, float o) {
  StoreOut(p.out, p.out_half, p.out_half_bf16, i, o);
}

// The split count of a decode item over positions [0, ctx): its kTile-position tiles dealt in
// equal runs over at most s_max splits of at least min_tiles tiles each. For split < the count,
// that split's tiles are [*tile_begin, *tile_end).
__device__ __forceinline__ int SplitTiles(const Params& p, int ctx, int split, int* tile_begin, int* tile_end) {
  const int n_tiles = (ctx + kTile - 1) / kTile;
  int ns = (n_tiles + p.min_tiles - 1) / p.min_tiles;
  ns = ns < p.s_max ? ns : p.s_max;
  const int tps = (n_tiles + ns - 1) / ns;
  ns = (n_tiles + tps - 1) / tps;
  *tile_begin = split * tps;
  *tile_end = n_tiles < *tile_begin + tps ? n_tiles : *tile_begin + tps;
  return ns;
}

// Row maxima of an mma.sync accumulator tile: a row's values sit on the 4 lanes of a quad.
__device__ __forceinline__ void QuadMax(float& a, float& b) {
#pragma unroll
  for (int o = 1; o < 4; o <<= 1) {
    a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
    b = fmaxf(b, __shfl_xor_sync(0xffffffffu, b, o));
  }
}
// Row sums of an mma.sync accumulator tile (layout as QuadMax).
__device__ __forceinline__ void QuadSum(float& a, float& b) {
#pragma unroll
  for (int o = 1; o < 4; o <<= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
  }
}
#endif  // __CUDACC__

// Launches the kernels for one KV type (defined in attention_{f16,f32,q8}.cu): the decode kernel
// (rows_small: query rows a decode item needs, 4, 8 or 16) and, if `prefill` (the batch may hold
// runs of consecutive positions, i.e. n_tokens > 1), the prefill kernel, both over `grid` CTAs.
void LaunchF16(const Params& p, int rows_small, bool prefill, unsigned grid, cudaStream_t stream);
void LaunchF32(const Params& p, int rows_small, bool prefill, unsigned grid, cudaStream_t stream);
void LaunchQ8_0(const Params& p, int rows_small, bool prefill, unsigned grid, cudaStream_t stream);
// The tensor-core prefill kernel for F16 caches (attention_prefill_tc.cu), over its own grid
// (n_tokens * s_max * n_kv_heads). False, launching nothing, where it does not apply (head_dim
// other than 64 / 128, group > 64): then the SIMT prefill kernel must run.
bool LaunchPrefillTcF16(const Params& p, cudaStream_t stream);
// Whether the split-K decode kernel of F16 caches with head_dim 64 / 128 runs its tile products on
// tensor cores (attention_simt_mma.cuh): HERD_CUDA_ATTN_MMA, default on; only in batches of at
// least kMmaMinTokens tokens (one sequence: 8B Q4_K_M tg128 -1.7% with it,
// bench/results/cuda-session9-2026-11-26.md).
bool DecodeMmaEnabled();
constexpr int kMmaMinTokens = 8;
// That variant with its K/V tiles loaded by a producer warp through TMA (attention_decode_tma.cu;
// same bits): launches it over `grid` for `rows` (4, 8 or 16) query rows and returns true while
// SetDecodeTma is on, on sm_90 with tensor maps, for head_dim 64 / 128, one head chunk and a
// block size that is a power of two >= 16; else launches nothing and returns false.
bool LaunchDecodeTmaF16(const Params& p, int rows, unsigned grid, cudaStream_t stream);

// The split count per work item (Params::s_max) of a launch (host side, attention_split.cc).
enum class SplitPath {
  kDefault,         // SIMT split kernel: one decode token, prefill runs, F32 / Q8_0 caches
  kSimtSmallBatch,  // F16 decode batch of 2-7 tokens on the SIMT split kernel
  kMma,             // decode batch on the split kernel's tensor-core variant
  kDecodeTc,        // the head_dim 64 tensor-core decode kernel
};
struct SplitInputs {
  int num_sms = 1;
  int ctas_per_sm = 12, min_tiles = 1, max_splits = kMaxSplits;  // AttentionSplitPolicy
  int head_dim = 128;
  int64_t units = 1;        // work items: tokens x kv heads x head chunks
  int64_t cache_tiles = 1;  // kTile-position tiles the cache holds
  SplitPath path = SplitPath::kDefault;
  int mma_divisor = 2;  // kMma: HERD_CUDA_ATTN_MMA_SPLIT_DIV
};
int32_t SplitsPerItem(const SplitInputs& in);
// The policy now in force into `in` (ctas_per_sm, min_tiles, max_splits: SetAttentionSplitPolicy
// or HERD_CUDA_ATTN; mma_divisor: HERD_CUDA_ATTN_MMA_SPLIT_DIV).
void FillSplitPolicy(SplitInputs* in);
// Whether the tensor-core decode kernel (attention_decode_tc.cu) takes the shape: head_dim 64,
// GQA group <= 16.
bool DecodeTcApplies(int head_dim, int group);
// That kernel for the decode tokens of the batch, over the SIMT kernels' grid (head_chunks == 1).
void LaunchDecodeTcF16(const Params& p, unsigned grid, cudaStream_t stream);

#ifdef __CUDACC__
// Normalised weights w[0..ns) of the ns split partials of output row th (token * n_heads + head):
// w_s = l_s * 2^(m_s - max m) / sum. One warp (all 32 lanes call it), each lane two splits. A
// split that saw no visible position (l = 0) weighs 0.
__device__ __forceinline__ void SplitWeights(const float2* part_ml, int64_t th, int s_max, int ns, float* w) {
  static_assert(kMaxSplits <= 64);
  const int lane = threadIdx.x % 32;
  const float2* ml = part_ml + th * s_max;
  const float2 a = lane < ns ? ml[lane] : make_float2(-INFINITY, 0.f);
  const float2 b = lane + 32 < ns ? ml[lane + 32] : make_float2(-INFINITY, 0.f);
  float m = fmaxf(a.x, b.x);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  const float wa = a.y > 0.f ? a.y * exp2f(a.x - m) : 0.f;
  const float wb = b.y > 0.f ? b.y * exp2f(b.x - m) : 0.f;
  float den = wa + wb;
  for (int o = 16; o > 0; o >>= 1) den += __shfl_xor_sync(0xffffffffu, den, o);
  if (lane < ns) w[lane] = wa / den;
  if (lane + 32 < ns) w[lane + 32] = wb / den;
}

// The order in which both merge kernels (MergeSplitsKernel, MergeQuantizeKernel) sum a value over
// its splits, so their outputs are equal bit for bit: chunks of kMergeChunk consecutive splits,
// each summed in split order from 0 (MergeChunk), then the chunk sums added in chunk order
// (MergeAddChunk). The chunks are independent: a CTA may sum them on separate threads (at one
// token and 50-64 splits a sequential sum is a chain of ~60 dependent L2 loads, ~12 us).
constexpr int kMergeChunk = 8;
constexpr int kMergeChunks = (kMaxSplits + kMergeChunk - 1) / kMergeChunk;
// Chunk c's sum of N consecutive values (stride `stride` floats between splits) at src, weights w.
template <int N>
__device__ __forceinline__ void MergeChunk(const float* w, const float* src, int64_t stride, int ns, int c,
                                           float (&acc)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = 0.f;
  const int s0 = c * kMergeChunk, s1 = min(ns, s0 + kMergeChunk);
  if (s1 - s0 == kMergeChunk) {  // whole chunks: every load in flight at once
    float x[kMergeChunk][N];
#pragma unroll
    for (int s = 0; s < kMergeChunk; ++s) {
#pragma unroll
      for (int i = 0; i < N; ++i) x[s][i] = src[(s0 + s) * stride + i];
    }
#pragma unroll
    for (int s = 0; s < kMergeChunk; ++s) {
#pragma unroll
      for (int i = 0; i < N; ++i) acc[i] = fmaf(w[s0 + s], x[s][i], acc[i]);
    }
  } else {
    for (int s = s0; s < s1; ++s) {
#pragma unroll
      for (int i = 0; i < N; ++i) acc[i] = fmaf(w[s], src[s * stride + i], acc[i]);
    }
  }
}
template <int N>
__device__ __forceinline__ void MergeAddChunk(int c, const float (&chunk)[N], float (&total)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) total[i] = c == 0 ? chunk[i] : total[i] + chunk[i];
}
#endif  // __CUDACC__

// The split merge fused with the quantization of the attention output for the O projection's
// quantized GEMV (attention_merge_quant.cu): one CTA per (token, kv head) merges the group's
// rows (as MergeSplitsKernel; rows written directly by the attention kernels are read back) and
// writes them to out and, as QuantizeActivations(format) would, into buffer. Queues nothing and
// returns false unless group * head_dim is a multiple of 256 (whole Q8_K blocks per CTA, whole
// warps) up to 8192 and n_heads * head_dim a multiple of 2048 (no padding).
bool LaunchMergeQuantize(const Params& p, DType format, void* buffer, cudaStream_t stream,
                         internal::QuantizedActivations* q);

// The small-batch decode kernel (attention_decode_small.cu): decode tokens only (each its
// sequence's one token), F16 cache, head_dim 64 / 128, group <= kSmallMaxGroup; the split merge
// and the outputs in the same launch: out, out_half when set, and with `format` Q8_0 / Q8_1 /
// Q8_K the O projection's int8 activations in `buffer` (as LaunchMergeQuantize; *activations
// describes them; needs group * head_dim a multiple of 256), none for kF32. Uses of Params:
// everything the decode kernel reads and s_max (splits per token at most, <= kSmallMaxSplits:
// the grid is n_tokens x n_kv_heads x s_max, the splits of a token's kv head one thread-block
// cluster); not part_o / part_ml / nsplit, min_tiles, head_chunks. min_split: positions per split
// at least (a multiple of 16).
constexpr int kSmallMaxGroup = 8;
constexpr int kSmallMaxSplits = 8;
bool SmallDecodeShapeApplies(int head_dim, int group);
// Its splits per token (Params::s_max, host side, attention_split.cc): min(policy.max_splits,
// num_sms / (n_tokens * n_kv_heads), ceil(max_context / policy.min_split)), at least 1.
int32_t SmallDecodeSplits(const SmallDecodePolicy& policy, int num_sms, int64_t n_tokens, int32_t n_kv_heads,
                          int32_t max_context);
void LaunchSmallDecode(const Params& p, int32_t min_split, DType format, void* buffer,
                       internal::QuantizedActivations* activations, cudaStream_t stream);
bool MergeQuantizeTakes(int32_t n_heads, int32_t group, int32_t head_dim, DType format);

// Aborts (file:line) on a cache the CUDA kernels do not take: types F16 / F32 / Q8_0, head_dim a
// multiple of the type's block, positive sizes.
void CheckCache(const KvLayerView& c);

}  // namespace herd::cuda::attn
