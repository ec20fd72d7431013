// The parallel / vectorised non-matmul ops against the scalar reference, odd shapes included.
#include "kernels/cpu/ops_cpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "kernels/backend.h"
#include "kernels/ops.h"
#include "kernels/quants.h"

namespace herd {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void ExpectClose(const std::vector<float>& a, const std::vector<float>& b, float rel) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], rel * (1 + std::fabs(a[i]))) << i;
}

TEST(OpsCpuTest, RmsNormMatchesReference) {
  ThreadPool pool(3);
  for (int64_t rows : {1, 2, 5, 17}) {
    for (int64_t cols : {1, 7, 64, 2051}) {
      const auto x = Random(rows * cols, 1);
      const auto w = Random(cols, 2);
      std::vector<float> a(x.size()), b(x.size());
      ref::RmsNorm(x.data(), w.data(), 1e-5f, rows, cols, a.data());
      cpu::RmsNorm(x.data(), w.data(), 1e-5f, rows, cols, b.data(), pool);
      ExpectClose(a, b, 1e-5f);
    }
  }
}

TEST(OpsCpuTest, RopeMatchesReference) {
  ThreadPool pool(2);
  for (int64_t n_tok : {1, 3, 9}) {
    for (int64_t head_dim : {2, 64, 128}) {
      for (int32_t n_rot : {static_cast<int32_t>(head_dim), static_cast<int32_t>(head_dim / 2 / 2 * 2)}) {
        if (n_rot == 0) continue;
        const int64_t heads = 3;
        auto x = Random(n_tok * heads * head_dim, 3);
        auto y = x;
        std::vector<int32_t> pos;
        for (int64_t t = 0; t < n_tok; ++t) pos.push_back(static_cast<int32_t>(t * 977 + 5));
        std::vector<float> factors;
        for (int32_t i = 0; i < n_rot / 2; ++i) factors.push_back(i + 1 == n_rot / 2 ? 8.0f : 1.0f);
        std::vector<float> inv(static_cast<size_t>(n_rot / 2));
        RopeInverseFrequencies(RopeParams{n_rot, 500000.f, 0.5f, factors.data()}, inv.data());
        ref::Rope(x.data(), n_tok, heads, head_dim, pos.data(), inv.data(), n_rot);
        cpu::Rope(y.data(), n_tok, heads, head_dim, pos.data(), inv.data(), n_rot, pool);
        ExpectClose(x, y, 1e-5f);
      }
    }
  }
}

TEST(OpsCpuTest, SwiGluMatchesReference) {
  ThreadPool pool(2);
  for (int64_t n : {1, 13, 70000}) {
    auto g = Random(n, 4, 3.0f);
    const auto u = Random(n, 5);
    const float extremes[] = {100.f, -100.f, 88.5f, -88.5f, 0.f, 1e-8f, -30.f, 30.f};
    for (int64_t i = 0; i < n && i < 8; ++i) g[i] = extremes[i];
    std::vector<float> a(n), b(n);
    ref::SwiGlu(g.data(), u.data(), a.data(), n);
    cpu::SwiGlu(g.data(), u.data(), b.data(), n, pool);
    ExpectClose(a, b, 1e-6f);
  }
}

// Two sequences with scattered blocks, GQA, f16 / f32 / q8_0 caches, odd head dims (q8_0: the
// multiples of 32 it supports). Groups 1, 3, 4 and 8 run the vector kernels, 12 the generic loop.
TEST(OpsCpuTest, PagedAttentionMatchesReference) {
  ThreadPool pool(3);
  for (DType type : {DType::kF16, DType::kF32, DType::kQ8_0}) {
    const std::vector<int32_t> head_dims =
        type == DType::kQ8_0 ? std::vector<int32_t>{32, 64, 128} : std::vector<int32_t>{8, 64, 72};
    for (int32_t head_dim : head_dims) {
      for (int32_t block_size : {1, 16}) {
        for (int32_t n_heads : {2, 6, 8, 16, 24}) {
          SCOPED_TRACE(::testing::Message() << DTypeName(type) << " head_dim " << head_dim << " block_size "
                                            << block_size << " n_heads " << n_heads);
          const int32_t n_kv = 2, n_blocks = 64;
          KvLayerView c;
          c.type = type;
          c.n_blocks = n_blocks;
          c.block_size = block_size;
          c.n_kv_heads = n_kv;
          c.head_dim = head_dim;
          const size_t bytes = static_cast<size_t>(n_blocks) * block_size * n_kv * KvVectorBytes(type, head_dim);
          std::vector<uint8_t> k1(bytes), v1(bytes), k2(bytes), v2(bytes);
          // Sequence 0 has 23 tokens, sequence 1 has 5; the batch holds the last 4 of seq 0 and
          // all of seq 1 (as in a step mixing a prefill chunk and a new request).
          std::vector<std::vector<int32_t>> tables(2);
          for (int32_t b = 0; b < (23 + block_size - 1) / block_size; ++b) tables[0].push_back(n_blocks - 1 - 2 * b);
          for (int32_t b = 0; b < (5 + block_size - 1) / block_size; ++b) tables[1].push_back(2 * b);
          const int32_t* ptrs[2] = {tables[0].data(), tables[1].data()};
          const int32_t lens[2] = {static_cast<int32_t>(tables[0].size()), static_cast<int32_t>(tables[1].size())};
          // First store seq 0's first 19 tokens.
          std::vector<int32_t> pos0, seq0;
          for (int32_t p = 0; p < 19; ++p) {
            pos0.push_back(p);
            seq0.push_back(0);
          }
          const auto kp = Random(19 * n_kv * head_dim, 6), vp = Random(19 * n_kv * head_dim, 7);
          AttentionBatch pre{19, pos0.data(), seq0.data(), ptrs, lens};
          c.k = k1.data();
          c.v = v1.data();
          ref::StoreKv(c, pre, kp.data(), vp.data());
          KvLayerView c2 = c;
          c2.k = k2.data();
          c2.v = v2.data();
          cpu::StoreKv(c2, pre, kp.data(), vp.data());
          ASSERT_EQ(k1, k2);
          ASSERT_EQ(v1, v2);
          std::vector<int32_t> pos, seq;
          for (int32_t p = 19; p < 23; ++p) {
            pos.push_back(p);
            seq.push_back(0);
          }
          for (int32_t p = 0; p < 5; ++p) {
            pos.push_back(p);
            seq.push_back(1);
          }
          const int64_t T = static_cast<int64_t>(pos.size());
          AttentionBatch batch{T, pos.data(), seq.data(), ptrs, lens};
          const auto k = Random(T * n_kv * head_dim, 8), v = Random(T * n_kv * head_dim, 9);
          const auto q = Random(T * n_heads * head_dim, 10, 2.0f);
          ref::StoreKv(c, batch, k.data(), v.data());
          cpu::StoreKv(c2, batch, k.data(), v.data());
          ASSERT_EQ(k1, k2);
          ASSERT_EQ(v1, v2);
          std::vector<float> a(static_cast<size_t>(T * n_heads * head_dim)), b(a.size());
          const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
          ref::PagedAttention(c, batch, q.data(), n_heads, scale, a.data());
          cpu::PagedAttention(c2, batch, q.data(), n_heads, scale, b.data(), pool);
          ExpectClose(a, b, 2e-5f);
        }
      }
    }
  }
}

// Decode tokens over long contexts (the SIMD loops' 32-position blocks, the positions they
// prefetch ahead, partial last blocks), scattered blocks, every GQA group 1-8 and head_dim with
// an odd number of 8-value slices (72), F16 and Q8_0 caches, against the reference.
TEST(OpsCpuTest, PagedAttentionLongContextsMatchReference) {
  ThreadPool pool(2);
  const std::vector<int32_t> ctx = {1, 31, 32, 33, 64, 100, 301, 1000};
  for (DType type : {DType::kF16, DType::kQ8_0}) {
    for (int32_t head_dim : type == DType::kQ8_0 ? std::vector<int32_t>{64, 128} : std::vector<int32_t>{64, 72, 128}) {
      for (int32_t group = 1; group <= 8; ++group) {
        SCOPED_TRACE(::testing::Message() << DTypeName(type) << " head_dim " << head_dim << " group " << group);
        const int32_t n_kv = 2, n_heads = n_kv * group, block_size = 16;
        int32_t n_blocks = 0;
        std::vector<std::vector<int32_t>> tables(ctx.size());
        for (size_t s = 0; s < ctx.size(); ++s) n_blocks += (ctx[s] + block_size - 1) / block_size;
        std::vector<int32_t> ids(static_cast<size_t>(n_blocks));
        for (int32_t i = 0; i < n_blocks; ++i)
          ids[static_cast<size_t>(i)] = (i * 37) % n_blocks;  // 101 blocks: a permutation
        std::vector<const int32_t*> ptrs;
        std::vector<int32_t> lens;
        for (size_t s = 0, next = 0; s < ctx.size(); ++s) {
          for (int32_t b = 0; b < (ctx[s] + block_size - 1) / block_size; ++b) tables[s].push_back(ids[next++]);
          ptrs.push_back(tables[s].data());
          lens.push_back(static_cast<int32_t>(tables[s].size()));
        }
        std::vector<uint8_t> kc(static_cast<size_t>(n_blocks) * block_size * n_kv * KvVectorBytes(type, head_dim));
        std::vector<uint8_t> vc(kc.size());
        const KvLayerView c{kc.data(), vc.data(), type, n_blocks, block_size, n_kv, head_dim};
        // Every position of every sequence stored, then one decode token per sequence at its last.
        std::vector<int32_t> pos, seq, last_pos, last_seq;
        for (size_t s = 0; s < ctx.size(); ++s) {
          for (int32_t p = 0; p < ctx[s]; ++p) {
            pos.push_back(p);
            seq.push_back(static_cast<int32_t>(s));
          }
          last_pos.push_back(ctx[s] - 1);
          last_seq.push_back(static_cast<int32_t>(s));
        }
        const auto n_all = static_cast<int64_t>(pos.size());
        const auto k = Random(static_cast<size_t>(n_all * n_kv * head_dim), 30);
        const auto v = Random(static_cast<size_t>(n_all * n_kv * head_dim), 31);
        ref::StoreKv(c, AttentionBatch{n_all, pos.data(), seq.data(), ptrs.data(), lens.data()}, k.data(), v.data());
        const auto T = static_cast<int64_t>(ctx.size());
        AttentionBatch batch{T, last_pos.data(), last_seq.data(), ptrs.data(), lens.data()};
        batch.may_have_runs = false;
        const auto q = Random(static_cast<size_t>(T * n_heads * head_dim), 32, 2.0f);
        std::vector<float> a(q.size()), b(q.size());
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        ref::PagedAttention(c, batch, q.data(), n_heads, scale, a.data());
        cpu::PagedAttention(c, batch, q.data(), n_heads, scale, b.data(), pool);
        ExpectClose(a, b, 2e-5f);
      }
    }
  }
}

// The reference's Q8_0 cache reads back what it stored: attention over a Q8_0 cache is the
// attention over an F32 cache of the same K/V up to the 8-bit rounding (|Δ| ≤ 2% of max |out|;
// measured 0.56%), so the Q8_0 layout addresses the same slots as the float layouts.
TEST(OpsCpuTest, ReferenceQ8AttentionCloseToF32) {
  const int32_t n_kv = 2, n_heads = 8, d = 64, block_size = 4, n_blocks = 8, T = 13;
  std::vector<int32_t> table = {5, 0, 7, 2};
  const int32_t* tables[1] = {table.data()};
  const int32_t lens[1] = {4};
  std::vector<int32_t> pos, seq(T, 0);
  for (int32_t p = 0; p < T; ++p) pos.push_back(p);
  AttentionBatch batch{T, pos.data(), seq.data(), tables, lens};
  const auto k = Random(T * n_kv * d, 12), v = Random(T * n_kv * d, 13), q = Random(T * n_heads * d, 14);
  std::vector<float> outs[2];
  int i = 0;
  for (DType type : {DType::kF32, DType::kQ8_0}) {
    std::vector<uint8_t> kc(n_blocks * block_size * n_kv * KvVectorBytes(type, d)), vc(kc.size());
    KvLayerView c{kc.data(), vc.data(), type, n_blocks, block_size, n_kv, d};
    ref::StoreKv(c, batch, k.data(), v.data());
    outs[i].resize(q.size());
    ref::PagedAttention(c, batch, q.data(), n_heads, 0.125f, outs[i++].data());
  }
  float max_abs = 0, max_diff = 0;
  for (size_t j = 0; j < q.size(); ++j) {
    max_abs = std::max(max_abs, std::fabs(outs[0][j]));
    max_diff = std::max(max_diff, std::fabs(outs[0][j] - outs[1][j]));
  }
  EXPECT_GT(max_diff, 0.0f);
  EXPECT_LE(max_diff, 0.02f * max_abs);
  std::printf("q8_0 vs f32 attention: max |diff| / max |out| = %.5f\n", max_diff / max_abs);
}

// The CPU Q8_0 quantizer writes the reference's bytes on the awkward inputs too: an all-zero
// block, exact ±.5 ties after scaling, values that clamp at ±127 after the half-rounded
// scale, tiny (subnormal-scale) and huge magnitudes.
TEST(OpsCpuTest, StoreKvQ8MatchesReferenceOnEdgeValues) {
  const int32_t d = 32 * 6;
  std::vector<float> x(d, 0.0f);                                                        // block 0: all zero
  for (int i = 0; i < 32; ++i) x[32 + i] = (i - 16) * 0.5f + (i == 0 ? 127.0f : 0.0f);  // scale 1: ties
  for (int i = 0; i < 32; ++i) x[64 + i] = i % 2 ? 1.0001f : -1.0f;
  for (int i = 0; i < 32; ++i) x[96 + i] = 1e-9f * (i - 7);
  for (int i = 0; i < 32; ++i) x[128 + i] = 6e4f * std::sin(static_cast<float>(i));
  const auto r = Random(32, 11, 5.0f);
  for (int i = 0; i < 32; ++i) x[160 + i] = r[i];
  KvLayerView c;
  c.type = DType::kQ8_0;
  c.n_blocks = 1;
  c.block_size = 1;
  c.n_kv_heads = 1;
  c.head_dim = d;
  const size_t bytes = KvVectorBytes(DType::kQ8_0, d);
  EXPECT_EQ(bytes, 6u * 34);
  std::vector<uint8_t> k1(bytes), v1(bytes), k2(bytes, 0xff), v2(bytes, 0xff);
  const int32_t table[1] = {0};
  const int32_t* tables[1] = {table};
  const int32_t lens[1] = {1};
  const int32_t pos[1] = {0}, seq[1] = {0};
  AttentionBatch batch{1, pos, seq, tables, lens};
  c.k = k1.data();
  c.v = v1.data();
  ref::StoreKv(c, batch, x.data(), x.data());
  c.k = k2.data();
  c.v = v2.data();
  cpu::StoreKv(c, batch, x.data(), x.data());
  EXPECT_EQ(k1, k2);
  EXPECT_EQ(v1, v2);
  // Round trip within half a quantization step (+ the fp16 scale's range limit for tiny blocks).
  std::vector<float> back(d);
  ref::DequantizeRow(DType::kQ8_0, k1.data(), back.data(), d);
  for (int blk = 0; blk < d / 32; ++blk) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[blk * 32 + i]));
    for (int i = blk * 32; i < blk * 32 + 32; ++i) EXPECT_NEAR(back[i], x[i], 0.51f * amax / 127 + 1e-7f) << i;
  }
}

// Backend::ArgMaxRows (the host default every host backend uses): first index of the maximum,
// NaNs never win, -1 for a row of NaNs.
TEST(HostArgMaxRowsTest, TiesNaNsAndEmptyRows) {
  auto be = MakeReferenceBackend();
  const float nan = std::nanf("");
  const std::vector<float> x = {1, 5, 5, 2, nan, -1, nan, -3, nan, nan, nan, nan, -9, -8, -7, -6};
  std::vector<int32_t> ids(4, 99);
  be->ArgMaxRows(x.data(), 4, 4, ids.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 1, -1, 3}));
}

}  // namespace
}  // namespace herd
