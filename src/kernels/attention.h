// Paged attention op family: K/V live in fixed-size blocks owned by the engine's KV cache;
// each sequence has a block table mapping logical block index -> physical block id.
//
// Cache layout per layer:
//   K, V: [n_blocks, block_size, n_kv_heads, <one head_dim vector>]
// where one head_dim vector is KvVectorBytes(type, head_dim) bytes:
//   F16, F32: head_dim elements;
//   Q8_0:     head_dim / 32 GGUF Q8_0 blocks (BlockQ8_0: fp16 scale + 32 int8, 34 bytes), so
//             head_dim must be a multiple of 32; 1.0625 bytes per value (F16: 2).
// Token p of a sequence lives in block table[p / block_size], slot p % block_size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace herd {

// Bytes of one [head_dim] K or V vector of one kv head at one slot.
inline size_t KvVectorBytes(DType type, int32_t head_dim) { return RowBytes(type, head_dim); }

struct KvLayerView {
  void* k = nullptr;         // [n_blocks, block_size, n_kv_heads, KvVectorBytes(type, head_dim)]
  void* v = nullptr;         // same
  DType type = DType::kF16;  // F16, F32 or Q8_0
  int32_t n_blocks = 0;
  int32_t block_size = 16;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
};

// The batch's tokens and the sequences they belong to. Token t belongs to sequence seq[t]
// at position pos[t] and attends causally to positions [0, pos[t]] of that sequence, which
// must already be stored (earlier steps or StoreKv of this step).
struct AttentionBatch {
  int64_t n_tokens = 0;
  const int32_t* pos = nullptr;                  // [n_tokens]
  const int32_t* seq = nullptr;                  // [n_tokens] index into block_tables
  const int32_t* const* block_tables = nullptr;  // [n_seqs] -> [max blocks of that sequence]
  const int32_t* block_table_lens = nullptr;     // [n_seqs]
  // false: every sequence has one token in the batch (a decode step: no runs of positions), which
  // the host knows; device backends then skip their prefill kernels and may fuse the step's K/V
  // store into the attention (Backend::RopeStoreKv right before PagedAttention). true is always
  // correct.
  bool may_have_runs = true;
  // An upper bound on pos + 1 over the batch (the longest context a token attends to), known on
  // the host; 0: unknown. Device backends pick kernels by it (graphs captured for one value are
  // replayed only for batches with the same hint: the caller keys them by it).
  int32_t max_context = 0;
};

namespace ref {

// Writes k, v: [n_tokens, n_kv_heads * head_dim] into the cache slots of each token
// (rounded to f16, or quantized per 32 values to Q8_0 as ref::QuantizeRow does).
void StoreKv(const KvLayerView& cache, const AttentionBatch& batch, const float* k, const float* v);

// q: [n_tokens, n_heads * head_dim] -> out: [n_tokens, n_heads * head_dim].
// Softmax(q·kᵀ * scale) · v per head; query head h uses kv head h / (n_heads / n_kv_heads).
void PagedAttention(const KvLayerView& cache, const AttentionBatch& batch, const float* q, int32_t n_heads, float scale,
                    float* out);

}  // namespace ref
}  // namespace herd
