// Shared between attention_cuda.cu (dispatch, StoreKv, split merge) and the per-KV-type kernel
// instantiations (attention_{f16,f32,q8}.cu, each compiling attention_kernel.cuh for one type).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace herd::cuda::attn {

constexpr int kThreads = 128;         // 4 warps per CTA
constexpr int kTile = 32;             // KV positions per tile (one per lane in the softmax)
constexpr int kItemRows = 16;         // query rows (tokens × heads of one kv head) per work item, at most
constexpr int kMaxHeadDim = 256;      // generic kernel limit
constexpr int kMaxSplits = 32;        // split-K CTAs per work item, at most
constexpr int kMinTilesPerSplit = 2;  // a split covers at least this many tiles (64 positions)

enum class KvKind { kF16, kF32, kQ8_0 };

// Everything the kernel needs; pointers are device memory. Grid: one CTA per
// (token, head chunk, split, kv head), kv head fastest: blockIdx.x =
// ((t * head_chunks + hc) * s_max + s) * n_kv_heads + kvh. CTAs whose token does not start a
// work item, or whose split is beyond the item's split count, exit at once.
struct Params {
  const uint8_t* k;
  const uint8_t* v;
  int32_t block_size;
  int32_t n_kv_heads;
  int32_t head_dim;
  int32_t vec_bytes;  // KvVectorBytes(type, head_dim)
  const int32_t* pos;
  const int32_t* seq;
  const int32_t* const* tables;
  int32_t n_tokens;
  int32_t n_heads;
  int32_t group;        // n_heads / n_kv_heads
  int32_t head_chunks;  // ceil(group / kItemRows)
  int32_t s_max;        // splits per item at most (grid dimension)
  float scale_log2;     // scale * log2(e): scores are kept in the exp2 domain
  const float* q;
  float* out;
  // Split-K partials (only when s_max > 1): part_o [n_tokens, n_heads, s_max, head_dim] (normalised
  // per split), part_ml [n_tokens, n_heads, s_max] (running max in the exp2 domain, sum of weights),
  // nsplit [n_tokens]: splits used by the token's item (1: out written directly).
  float* part_o;
  float2* part_ml;
  int32_t* nsplit;
};

// Dynamic shared memory of a kernel instance with `rm` query rows per item, for head_dim `hd`.
inline size_t SmemBytes(int hd, int rm) {
  const size_t floats = 4 * kTile               // slot byte offsets (int64), two tiles
                        + rm * hd               // Q rows, pre-scaled
                        + 2 * kTile * (hd + 4)  // K and V tiles, float, rows padded by 16 bytes
                        + 4 * rm * kTile        // partial scores, one set per warp
                        + kTile * rm            // probabilities [position][row]
                        + 3 * rm;               // running max, sum, rescale factor per row
  return floats * sizeof(float);
}

// Launches the kernels for one KV type (defined in attention_{f16,f32,q8}.cu): the decode kernel
// (rows_small: query rows a decode item needs, 4, 8 or 16) and, if `prefill` (the batch may hold
// runs of consecutive positions, i.e. n_tokens > 1), the prefill kernel, both over `grid` CTAs.
void LaunchF16(const Params& p, int rows_small, bool prefill, unsigned grid, cudaStream_t stream);
void LaunchF32(const Params& p, int rows_small, bool prefill, unsigned grid, cudaStream_t stream);
void LaunchQ8_0(const Params& p, int rows_small, bool prefill, unsigned grid, cudaStream_t stream);

}  // namespace herd::cuda::attn
