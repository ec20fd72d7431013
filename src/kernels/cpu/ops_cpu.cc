#include "kernels/cpu/ops_cpu.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"
#include "base/fp16.h"

#if defined(__F16C__) && defined(__AVX2__)
#include <immintrin.h>

#include "kernels/cpu/attention_avx2.h"
#define HERD_ATTENTION_AVX2 1
#endif

namespace herd::cpu {
namespace {

// Widens n values (n % 8 == 0 on the fast path) of a cache row into float.
inline void LoadRow(const void* src, DType type, int32_t n, float* dst) {
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
template <int G>
void RunAvx2(const float* q, int32_t d, const uint16_t* const* krows, const uint16_t* const* vrows, int32_t n,
             float scale, float* scores, float* out) {
  avx2::Scores<G>(q, d, krows, n, scale, scores, n);
  float inv[G];
  for (int g = 0; g < G; ++g) {
    float* sg = scores + g * n;
    float m = -INFINITY;
    for (int32_t p = 0; p < n; ++p) m = std::max(m, sg[p]);
    inv[g] = 1.0f / avx2::ExpInPlace(sg, n, m);
  }
  avx2::WeightedSum<G>(scores, n, vrows, n, d, out);
  for (int g = 0; g < G; ++g) {
    for (int32_t i = 0; i < d; ++i) out[g * d + i] *= inv[g];
  }
}

// Softmax(q·Kᵀ·scale)·V for the `group` query heads sharing one kv head. q, out: [group, d].
void RunAvx2Group(int32_t group, const float* q, int32_t d, const uint16_t* const* krows, const uint16_t* const* vrows,
                  int32_t n, float scale, float* scores, float* out) {
  switch (group) {
    case 1: return RunAvx2<1>(q, d, krows, vrows, n, scale, scores, out);
    case 2: return RunAvx2<2>(q, d, krows, vrows, n, scale, scores, out);
    case 3: return RunAvx2<3>(q, d, krows, vrows, n, scale, scores, out);
    case 4: return RunAvx2<4>(q, d, krows, vrows, n, scale, scores, out);
    case 5: return RunAvx2<5>(q, d, krows, vrows, n, scale, scores, out);
    case 6: return RunAvx2<6>(q, d, krows, vrows, n, scale, scores, out);
    case 7: return RunAvx2<7>(q, d, krows, vrows, n, scale, scores, out);
    case 8: return RunAvx2<8>(q, d, krows, vrows, n, scale, scores, out);
  }
  HERD_CHECK_MSG(false, "group %d", group);
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

void StoreKv(const KvLayerView& c, const AttentionBatch& b, const float* k, const float* v) {
  const int64_t row = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  for (int64_t t = 0; t < b.n_tokens; ++t) {
    const int32_t s = b.seq[t];
    const int32_t p = b.pos[t];
    HERD_CHECK(p / c.block_size < b.block_table_lens[s]);
    const int32_t block = b.block_tables[s][p / c.block_size];
    HERD_CHECK(block >= 0 && block < c.n_blocks);
    const int64_t off = (static_cast<int64_t>(block) * c.block_size + p % c.block_size) * row;
    if (c.type == DType::kF32) {
      for (int64_t i = 0; i < row; ++i) {
        static_cast<float*>(c.k)[off + i] = k[t * row + i];
        static_cast<float*>(c.v)[off + i] = v[t * row + i];
      }
    } else {
      for (int64_t i = 0; i < row; ++i) {
        static_cast<uint16_t*>(c.k)[off + i] = Fp32ToFp16(k[t * row + i]);
        static_cast<uint16_t*>(c.v)[off + i] = Fp32ToFp16(v[t * row + i]);
      }
    }
  }
}

void PagedAttention(const KvLayerView& c, const AttentionBatch& b, const float* q, int32_t n_heads, float scale,
                    float* out, ThreadPool& pool) {
  HERD_CHECK(n_heads % c.n_kv_heads == 0);
  const int32_t group = n_heads / c.n_kv_heads;
  const int32_t d = c.head_dim;
  const size_t elem = c.type == DType::kF16 ? 2 : 4;
  const size_t slot_stride = static_cast<size_t>(c.n_kv_heads) * d * elem;  // bytes between positions
  const int64_t n_tasks = b.n_tokens * c.n_kv_heads;
#if HERD_ATTENTION_AVX2
  const bool fast = c.type == DType::kF16 && d % 8 == 0 && group <= 8;
#endif
  pool.ParallelFor(n_tasks, 1, [&](int64_t begin, int64_t end) {
    // Two passes per (token, kv head): scores of all positions for the query heads sharing
    // the kv head (each K row widened once), softmax, then the V-weighted sum (each V row
    // widened once). scores: [group, n_ctx].
    std::vector<float> kbuf(d), vbuf(d), acc(static_cast<size_t>(group) * d), scores;
    std::vector<const uint16_t*> krows, vrows;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t t = task / c.n_kv_heads;
      const int32_t kvh = static_cast<int32_t>(task % c.n_kv_heads);
      const int32_t s = b.seq[t];
      const int32_t n_ctx = b.pos[t] + 1;
      HERD_CHECK((n_ctx + c.block_size - 1) / c.block_size <= b.block_table_lens[s]);
      scores.resize(static_cast<size_t>(group) * n_ctx);
      const float* qg = q + (t * n_heads + static_cast<int64_t>(kvh) * group) * d;
      const size_t head_off = static_cast<size_t>(kvh) * d * elem;
      float* og = out + (t * n_heads + static_cast<int64_t>(kvh) * group) * d;
#if HERD_ATTENTION_AVX2
      if (fast) {
        // Row pointers of this sequence's positions for this kv head, then the vector kernels.
        krows.resize(static_cast<size_t>(n_ctx));
        vrows.resize(static_cast<size_t>(n_ctx));
        for (int32_t p = 0; p < n_ctx; ++p) {
          const int64_t slot =
              static_cast<int64_t>(b.block_tables[s][p / c.block_size]) * c.block_size + p % c.block_size;
          const size_t off = static_cast<size_t>(slot) * slot_stride + head_off;
          krows[static_cast<size_t>(p)] = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(c.k) + off);
          vrows[static_cast<size_t>(p)] = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(c.v) + off);
        }
        RunAvx2Group(group, qg, d, krows.data(), vrows.data(), n_ctx, scale, scores.data(), og);
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
