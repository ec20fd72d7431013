// Scalar reference paged attention (kernels/attention.h). Cost per token: O(pos * head_dim)
// per head; no blocking or parallelism — this is the oracle. Every cache type goes through
// ref::QuantizeRow / ref::DequantizeRow one [head_dim] vector at a time, so F16, F32 and Q8_0
// share one code path.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/check.h"
#include "kernels/attention.h"
#include "kernels/quants.h"

namespace herd::ref {
namespace {

void CheckType(const KvLayerView& c) {
  HERD_CHECK_MSG(c.type == DType::kF16 || c.type == DType::kF32 || c.type == DType::kQ8_0,
                 "KV cache type %s not supported", std::string(DTypeName(c.type)).c_str());
  HERD_CHECK_MSG(c.head_dim % Traits(c.type).block_size == 0, "head_dim %d not a multiple of the %s block", c.head_dim,
                 std::string(DTypeName(c.type)).c_str());
}

// Byte offset of the [head_dim] vector of kv head `h` for position `p` of the token's sequence.
size_t SlotOffset(const KvLayerView& c, const AttentionBatch& b, int64_t t, int32_t p, int32_t h) {
  const int32_t s = b.seq[t];
  const int32_t logical = p / c.block_size;
  HERD_CHECK_MSG(logical < b.block_table_lens[s], "position %d beyond the block table of sequence %d", p, s);
  const int32_t block = b.block_tables[s][logical];
  HERD_CHECK(block >= 0 && block < c.n_blocks);
  const int64_t slot = static_cast<int64_t>(block) * c.block_size + p % c.block_size;
  return static_cast<size_t>(slot * c.n_kv_heads + h) * KvVectorBytes(c.type, c.head_dim);
}

}  // namespace

void StoreKv(const KvLayerView& c, const AttentionBatch& b, const float* k, const float* v) {
  CheckType(c);
  const int64_t row = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  for (int64_t t = 0; t < b.n_tokens; ++t) {
    for (int32_t h = 0; h < c.n_kv_heads; ++h) {
      const size_t off = SlotOffset(c, b, t, b.pos[t], h);
      QuantizeRow(c.type, k + t * row + h * c.head_dim, static_cast<uint8_t*>(c.k) + off, c.head_dim);
      QuantizeRow(c.type, v + t * row + h * c.head_dim, static_cast<uint8_t*>(c.v) + off, c.head_dim);
    }
  }
}

void PagedAttention(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads, float scale,
                    float* out) {
  CheckType(c);
  HERD_CHECK(n_heads % c.n_kv_heads == 0);
  const int32_t group = n_heads / c.n_kv_heads;
  const int32_t d = c.head_dim;
  std::vector<double> scores, acc(static_cast<size_t>(d));
  std::vector<float> row(static_cast<size_t>(d));
  for (int64_t t = 0; t < b.n_tokens; ++t) {
    const int32_t n_ctx = b.pos[t] + 1;
    scores.resize(static_cast<size_t>(n_ctx));
    for (int32_t h = 0; h < n_heads; ++h) {
      const float* qh = q + (t * n_heads + h) * d;
      const int32_t kvh = h / group;
      double max_score = -INFINITY;
      for (int32_t p = 0; p < n_ctx; ++p) {
        DequantizeRow(c.type, static_cast<const uint8_t*>(c.k) + SlotOffset(c, b, t, p, kvh), row.data(), d);
        double dot = 0;
        for (int32_t i = 0; i < d; ++i) dot += static_cast<double>(qh[i]) * row[i];
        scores[p] = dot * scale;
        if (scores[p] > max_score) max_score = scores[p];
      }
      double sum = 0;
      for (int32_t p = 0; p < n_ctx; ++p) {
        scores[p] = std::exp(scores[p] - max_score);
        sum += scores[p];
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int32_t p = 0; p < n_ctx; ++p) {
        DequantizeRow(c.type, static_cast<const uint8_t*>(c.v) + SlotOffset(c, b, t, p, kvh), row.data(), d);
        for (int32_t i = 0; i < d; ++i) acc[i] += scores[p] * row[i];
      }
      float* oh = out + (t * n_heads + h) * d;
      for (int32_t i = 0; i < d; ++i) oh[i] = static_cast<float>(acc[i] / sum);
    }
  }
}

}  // namespace herd::ref
