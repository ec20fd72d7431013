#include "kernels/cpu/ops_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/quants.h"
#include "tensor/quant_blocks.h"

#if defined(__F16C__) && defined(__AVX2__)
#include <immintrin.h>

#include "kernels/cpu/attention_avx2.h"
#include "kernels/cpu/attention_q8.h"
#define HERD_ATTENTION_AVX2 1
#endif

namespace herd::cpu {
namespace {

// Widens n values (n % 8 == 0 on the fast path) of a cache row into float.
inline void LoadRow(const void* src, DType type, int32_t n, float* dst) {
  if (type == DType::kQ8_0) {
    ref::DequantizeRow(type, src, dst, n);
    return;
  }
  if (type == DType::kF32) {
    const float* s = static_cast<const float*>(src);
    for (int32_t i = 0; i < n; ++i) dst[i] = s[i];
    return;
  }
  const uint16_t* s = static_cast<const uint16_t*>(src);
  int32_t i = 0;
#if defined(__F16C__) && defined(__AVX2__)
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  }
#endif
  for (; i < n; ++i) dst[i] = Fp16ToFp32(s[i]);
}

inline float Dot(const float* a, const float* b, int32_t n) {
  float acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int32_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

#if HERD_ATTENTION_AVX2
// Softmax(q·Kᵀ·scale)·V for G query heads sharing one kv head. q, out: [G, d]; Row is uint16_t
// (f16 cache) or BlockQ8_0 (q8_0 cache); scores: scratch of G · n floats, wd of G · kSumBlock.
template <int G, typename Row>
void RunAvx2(const float* q, int32_t d, const Row* const* krows, const Row* const* vrows, int32_t n, float scale,
             float* scores, float* wd, float* out) {
  if constexpr (std::is_same_v<Row, BlockQ8_0>) {
    avx2::ScoresQ8<G>(q, d, krows, n, scale, scores, n);
  } else {
    avx2::Scores<G>(q, d, krows, n, scale, scores, n);
  }
  float inv[G];
  for (int g = 0; g < G; ++g) {
    float* sg = scores + g * n;
    float m = -INFINITY;
    for (int32_t p = 0; p < n; ++p) m = std::max(m, sg[p]);
    inv[g] = 1.0f / avx2::ExpInPlace(sg, n, m);
  }
  if constexpr (std::is_same_v<Row, BlockQ8_0>) {
    avx2::WeightedSumQ8<G>(scores, n, vrows, n, d, wd, out);
  } else {
    avx2::WeightedSum<G>(scores, n, vrows, n, d, out);
  }
  for (int g = 0; g < G; ++g) {
    for (int32_t i = 0; i < d; ++i) out[g * d + i] *= inv[g];
  }
}

template <typename Row>
void RunAvx2Group(int32_t group, const float* q, int32_t d, const Row* const* krows, const Row* const* vrows, int32_t n,
                  float scale, float* scores, float* wd, float* out) {
  switch (group) {
    case 1: return RunAvx2<1>(q, d, krows, vrows, n, scale, scores, wd, out);
    case 2: return RunAvx2<2>(q, d, krows, vrows, n, scale, scores, wd, out);
    case 3: return RunAvx2<3>(q, d, krows, vrows, n, scale, scores, wd, out);
    case 4: return RunAvx2<4>(q, d, krows, vrows, n, scale, scores, wd, out);
    case 5: return RunAvx2<5>(q, d, krows, vrows, n, scale, scores, wd, out);
    case 6: return RunAvx2<6>(q, d, krows, vrows, n, scale, scores, wd, out);
    case 7: return RunAvx2<7>(q, d, krows, vrows, n, scale, scores, wd, out);
    case 8: return RunAvx2<8>(q, d, krows, vrows, n, scale, scores, wd, out);
  }
  HERD_CHECK_MSG(false, "group %d", group);
}

// Row pointers (K and V) of positions [0, n) of one sequence for one kv head, in position order.
template <typename Row>
void CollectRows(const KvLayerView& c, const int32_t* table, int32_t n, size_t slot_stride, size_t head_off,
                 std::vector<const Row*>* krows, std::vector<const Row*>* vrows) {
  krows->resize(static_cast<size_t>(n));
  vrows->resize(static_cast<size_t>(n));
  for (int32_t p = 0; p < n; ++p) {
    const int64_t slot = static_cast<int64_t>(table[p / c.block_size]) * c.block_size + p % c.block_size;
    const size_t off = static_cast<size_t>(slot) * slot_stride + head_off;
    (*krows)[static_cast<size_t>(p)] = reinterpret_cast<const Row*>(static_cast<const uint8_t*>(c.k) + off);
    (*vrows)[static_cast<size_t>(p)] = reinterpret_cast<const Row*>(static_cast<const uint8_t*>(c.v) + off);
  }
}
#endif

}  // namespace

void RmsNorm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t n_cols, float* out,
             ThreadPool& pool) {
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * n_cols;
      float ss = 0;
#pragma omp simd reduction(+ : ss)
      for (int64_t c = 0; c < n_cols; ++c) ss += xr[c] * xr[c];
      const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n_cols) + eps);
      float* o = out + r * n_cols;
      for (int64_t c = 0; c < n_cols; ++c) o[c] = xr[c] * scale * weight[c];
    }
  };
  if (n_rows < 4) {
    body(0, n_rows);
  } else {
    pool.ParallelFor(n_rows, 1, body);
  }
}

void Rope(float* x, int64_t n_tok, int64_t n_heads, int64_t head_dim, const int32_t* positions, const float* inv_freq,
          int32_t n_rot, ThreadPool& pool) {
  HERD_CHECK(n_rot <= head_dim && n_rot <= 1024);
  auto body = [&](int64_t begin, int64_t end) {
    float cs[512], sn[512];
    for (int64_t t = begin; t < end; ++t) {
      for (int32_t i = 0; i < n_rot / 2; ++i) {
        const double angle = static_cast<double>(positions[t]) * inv_freq[i];
        cs[i] = static_cast<float>(std::cos(angle));
        sn[i] = static_cast<float>(std::sin(angle));
      }
      for (int64_t h = 0; h < n_heads; ++h) {
        float* v = x + (t * n_heads + h) * head_dim;
        for (int32_t i = 0; i < n_rot / 2; ++i) {
          const float a = v[2 * i];
          const float b = v[2 * i + 1];
          v[2 * i] = a * cs[i] - b * sn[i];
          v[2 * i + 1] = a * sn[i] + b * cs[i];
        }
      }
    }
  };
  if (n_tok < 4) {
    body(0, n_tok);
  } else {
    pool.ParallelFor(n_tok, 1, body);
  }
}

void SwiGlu(const float* gate, const float* up, float* out, int64_t n, ThreadPool& pool) {
  auto body = [&](int64_t begin, int64_t end) {
    int64_t i = begin;
#if HERD_ATTENTION_AVX2
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= end; i += 8) {
      const __m256 g = _mm256_loadu_ps(gate + i);
      const __m256 e = avx2::Exp(_mm256_sub_ps(_mm256_setzero_ps(), g));
      _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
    }
#endif
    for (; i < end; ++i) {
      const float g = gate[i];
      out[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
  };
  if (n < 65536) {
    body(0, n);
  } else {
    pool.ParallelFor(n, 4096, body);
  }
}

// Writes one [n] vector in the cache's type (Q8_0: bit-identical to ref::QuantizeRow).
inline void StoreVector(const float* x, DType type, int32_t n, void* dst) {
  switch (type) {
    case DType::kF32: std::memcpy(dst, x, sizeof(float) * static_cast<size_t>(n)); return;
    case DType::kF16: {
      uint16_t* y = static_cast<uint16_t*>(dst);
      int32_t i = 0;
#if HERD_ATTENTION_AVX2
      for (; i + 8 <= n; i += 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      }
#endif
      for (; i < n; ++i) y[i] = Fp32ToFp16(x[i]);
      return;
    }
    case DType::kQ8_0:
#if HERD_ATTENTION_AVX2
      avx2::QuantizeQ8_0(x, n, static_cast<BlockQ8_0*>(dst));
#else
      ref::QuantizeRow(type, x, dst, n);
#endif
      return;
    default: HERD_CHECK_MSG(false, "KV cache type %u not supported", static_cast<unsigned>(type));
  }
}

void StoreKv(const KvLayerView& c, const AttentionBatch& b, const float* k, const float* v) {
  HERD_CHECK(c.head_dim % Traits(c.type).block_size == 0);
  const size_t vec = KvVectorBytes(c.type, c.head_dim);
  const int64_t row = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  for (int64_t t = 0; t < b.n_tokens; ++t) {
    const int32_t s = b.seq[t];
    const int32_t p = b.pos[t];
    HERD_CHECK(p / c.block_size < b.block_table_lens[s]);
    const int32_t block = b.block_tables[s][p / c.block_size];
    HERD_CHECK(block >= 0 && block < c.n_blocks);
    const size_t slot = static_cast<size_t>(block) * c.block_size + p % c.block_size;
    for (int32_t h = 0; h < c.n_kv_heads; ++h) {
      const size_t off = (slot * c.n_kv_heads + h) * vec;
      StoreVector(k + t * row + h * c.head_dim, c.type, c.head_dim, static_cast<uint8_t*>(c.k) + off);
      StoreVector(v + t * row + h * c.head_dim, c.type, c.head_dim, static_cast<uint8_t*>(c.v) + off);
    }
  }
}

void PagedAttention(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads, float scale,
                    float* out, ThreadPool& pool) {
  HERD_CHECK(n_heads % c.n_kv_heads == 0);
  const int32_t group = n_heads / c.n_kv_heads;
  const int32_t d = c.head_dim;
  HERD_CHECK(d % Traits(c.type).block_size == 0);
  const size_t vec = KvVectorBytes(c.type, d);
  const size_t slot_stride = static_cast<size_t>(c.n_kv_heads) * vec;  // bytes between positions
  const int64_t n_tasks = b.n_tokens * c.n_kv_heads;
#if HERD_ATTENTION_AVX2
  const bool fast = ((c.type == DType::kF16 && d % 8 == 0) || c.type == DType::kQ8_0) && group <= 8;
#endif
  pool.ParallelFor(n_tasks, 1, [&](int64_t begin, int64_t end) {
    // Two passes per (token, kv head): scores of all positions for the query heads sharing
    // the kv head (each K row widened once), softmax, then the V-weighted sum (each V row
    // widened once). scores: [group, n_ctx].
    std::vector<float> kbuf(d), vbuf(d), acc(static_cast<size_t>(group) * d), scores, wd;
    std::vector<const uint16_t*> krows, vrows;
    std::vector<const BlockQ8_0*> kq, vq;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t t = task / c.n_kv_heads;
      const int32_t kvh = static_cast<int32_t>(task % c.n_kv_heads);
      const int32_t s = b.seq[t];
      const int32_t n_ctx = b.pos[t] + 1;
      HERD_CHECK((n_ctx + c.block_size - 1) / c.block_size <= b.block_table_lens[s]);
      scores.resize(static_cast<size_t>(group) * n_ctx);
      const float* qg = q + (t * n_heads + static_cast<int64_t>(kvh) * group) * d;
      const size_t head_off = static_cast<size_t>(kvh) * vec;
      float* og = out + (t * n_heads + static_cast<int64_t>(kvh) * group) * d;
#if HERD_ATTENTION_AVX2
      if (fast) {
        if (c.type == DType::kQ8_0) {
          wd.resize(static_cast<size_t>(group) * avx2::kSumBlock);  // WeightedSumQ8: a block of scaled weights
          CollectRows(c, b.block_tables[s], n_ctx, slot_stride, head_off, &kq, &vq);
          RunAvx2Group(group, qg, d, kq.data(), vq.data(), n_ctx, scale, scores.data(), wd.data(), og);
        } else {
          CollectRows(c, b.block_tables[s], n_ctx, slot_stride, head_off, &krows, &vrows);
          RunAvx2Group(group, qg, d, krows.data(), vrows.data(), n_ctx, scale, scores.data(), nullptr, og);
        }
        continue;
      }
#endif
      auto for_each_position = [&](const void* base, auto&& fn) {
        for (int32_t p0 = 0; p0 < n_ctx; p0 += c.block_size) {
          const int32_t block = b.block_tables[s][p0 / c.block_size];
          const uint8_t* blk =
              static_cast<const uint8_t*>(base) + static_cast<size_t>(block) * c.block_size * slot_stride + head_off;
          const int32_t n = std::min(c.block_size, n_ctx - p0);
          for (int32_t i = 0; i < n; ++i) fn(p0 + i, blk + static_cast<size_t>(i) * slot_stride);
        }
      };
      for_each_position(c.k, [&](int32_t p, const uint8_t* row) {
        LoadRow(row, c.type, d, kbuf.data());
        for (int32_t g = 0; g < group; ++g)
          scores[static_cast<size_t>(g) * n_ctx + p] = Dot(qg + g * d, kbuf.data(), d) * scale;
      });
      std::fill(acc.begin(), acc.end(), 0.0f);
      std::vector<float> inv_sum(static_cast<size_t>(group));
      for (int32_t g = 0; g < group; ++g) {
        float* sg = scores.data() + static_cast<size_t>(g) * n_ctx;
        float m = -INFINITY;
        for (int32_t p = 0; p < n_ctx; ++p) m = std::max(m, sg[p]);
        float sum = 0;
        for (int32_t p = 0; p < n_ctx; ++p) {
          sg[p] = std::exp(sg[p] - m);
          sum += sg[p];
        }
        inv_sum[static_cast<size_t>(g)] = 1.0f / sum;
      }
      for_each_position(c.v, [&](int32_t p, const uint8_t* row) {
        LoadRow(row, c.type, d, vbuf.data());
        for (int32_t g = 0; g < group; ++g) {
          const float w = scores[static_cast<size_t>(g) * n_ctx + p];
          float* a = acc.data() + static_cast<size_t>(g) * d;
#pragma omp simd
          for (int32_t i = 0; i < d; ++i) a[i] += w * vbuf[i];
        }
      });
      for (int32_t g = 0; g < group; ++g) {
        float* o = out + (t * n_heads + static_cast<int64_t>(kvh) * group + g) * d;
        const float inv = inv_sum[static_cast<size_t>(g)];
        for (int32_t i = 0; i < d; ++i) o[i] = acc[static_cast<size_t>(g) * d + i] * inv;
      }
    }
  });
}

}  // namespace herd::cpu
