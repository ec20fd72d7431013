// Scalar reference paged attention (kernels/attention.h). Cost per token: O(pos * head_dim)
// per head; no blocking or parallelism — this is the oracle.
#include <cmath>
#include <vector>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/attention.h"

namespace herd::ref {
namespace {

// Address of the [head_dim] vector of kv head `h` for position `p` of the token's sequence.
size_t SlotOffset(const KvLayerView& c, const AttentionBatch& b, int64_t t, int32_t p, int32_t h) {
  const int32_t s = b.seq[t];
  const int32_t logical = p / c.block_size;
  HERD_CHECK_MSG(logical < b.block_table_lens[s], "position %d beyond the block table of sequence %d", p, s);
  const int32_t block = b.block_tables[s][logical];
  HERD_CHECK(block >= 0 && block < c.n_blocks);
  const int64_t slot = static_cast<int64_t>(block) * c.block_size + p % c.block_size;
  return static_cast<size_t>((slot * c.n_kv_heads + h) * c.head_dim);
}

float Load(const void* base, DType type, size_t i) {
  if (type == DType::kF16) return Fp16ToFp32(static_cast<const uint16_t*>(base)[i]);
  return static_cast<const float*>(base)[i];
}

void Store(void* base, DType type, size_t i, float v) {
  if (type == DType::kF16) {
    static_cast<uint16_t*>(base)[i] = Fp32ToFp16(v);
  } else {
    static_cast<float*>(base)[i] = v;
  }
}

}  // namespace

void StoreKv(const KvLayerView& c, const AttentionBatch& b, const float* k, const float* v) {
  HERD_CHECK(c.type == DType::kF16 || c.type == DType::kF32);
  const int64_t row = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  for (int64_t t = 0; t < b.n_tokens; ++t) {
    for (int32_t h = 0; h < c.n_kv_heads; ++h) {
      const size_t off = SlotOffset(c, b, t, b.pos[t], h);
      for (int32_t d = 0; d < c.head_dim; ++d) {
        Store(c.k, c.type, off + d, k[t * row + h * c.head_dim + d]);
        Store(c.v, c.type, off + d, v[t * row + h * c.head_dim + d]);
      }
    }
  }
}

void PagedAttention(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads, float scale,
                    float* out) {
  HERD_CHECK(n_heads % c.n_kv_heads == 0);
  const int32_t group = n_heads / c.n_kv_heads;
  const int32_t d = c.head_dim;
  std::vector<double> scores;
  for (int64_t t = 0; t < b.n_tokens; ++t) {
    const int32_t n_ctx = b.pos[t] + 1;
    scores.resize(static_cast<size_t>(n_ctx));
    for (int32_t h = 0; h < n_heads; ++h) {
      const float* qh = q + (t * n_heads + h) * d;
      const int32_t kvh = h / group;
      double max_score = -INFINITY;
      for (int32_t p = 0; p < n_ctx; ++p) {
        const size_t off = SlotOffset(c, b, t, p, kvh);
        double dot = 0;
        for (int32_t i = 0; i < d; ++i) dot += static_cast<double>(qh[i]) * Load(c.k, c.type, off + i);
        scores[p] = dot * scale;
        if (scores[p] > max_score) max_score = scores[p];
      }
      double sum = 0;
      for (int32_t p = 0; p < n_ctx; ++p) {
        scores[p] = std::exp(scores[p] - max_score);
        sum += scores[p];
      }
      float* oh = out + (t * n_heads + h) * d;
      for (int32_t i = 0; i < d; ++i) {
        double acc = 0;
        for (int32_t p = 0; p < n_ctx; ++p) acc += scores[p] * Load(c.v, c.type, SlotOffset(c, b, t, p, kvh) + i);
        oh[i] = static_cast<float>(acc / sum);
      }
    }
  }
}

}  // namespace herd::ref
