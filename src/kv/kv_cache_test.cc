#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <tuple>
#include <vector>

namespace herd {
namespace {

TEST(BlockAllocatorTest, ExactIdsAndLifoReuse) {
  BlockAllocator a(4);
  EXPECT_EQ(*a.Allocate(), 0);
  EXPECT_EQ(*a.Allocate(), 1);
  EXPECT_EQ(*a.Allocate(), 2);
  a.Free(1);
  a.Free(0);
  EXPECT_EQ(a.free_count(), 3);
  EXPECT_EQ(*a.Allocate(), 0);  // most recently freed first
  EXPECT_EQ(*a.Allocate(), 1);
  EXPECT_EQ(*a.Allocate(), 3);
  auto r = a.Allocate();
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

TEST(BlockAllocatorTest, DoubleFreeAborts) {
  BlockAllocator a(2);
  int32_t b = *a.Allocate();
  a.Free(b);
  EXPECT_DEATH(a.Free(b), "double free");
}

TEST(KvCacheTest, GeometryAndBudget) {
  KvCacheConfig c{2, 2, 64, 16, 0, DType::kF16};
  EXPECT_EQ(c.BytesPerBlock(), 2u * 2 * 16 * 2 * 64 * 2);
  EXPECT_EQ(KvCacheConfig::BlocksForBudget(c, c.BytesPerBlock() * 10 + 5), 10);
  auto backend = MakeReferenceBackend();
  c.n_blocks = 3;
  auto cache = KvCache::Create(backend.get(), c);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  EXPECT_EQ((*cache)->layers().size(), 2u);
  EXPECT_EQ((*cache)->bytes(), c.BytesPerBlock() * 3);
  c.type = DType::kQ4_0;
  EXPECT_EQ(KvCache::Create(backend.get(), c).status().code(), StatusCode::kUnimplemented);
}

TEST(KvCacheTest, Q8_0HalvesMemoryAndNeedsHeadDimMultipleOf32) {
  KvCacheConfig c{2, 2, 64, 16, 3, DType::kQ8_0};
  EXPECT_EQ(c.LayerBlockBytes(), 16u * 2 * (64 / 32) * 34);
  EXPECT_EQ(c.BytesPerBlock(), 2u * 2 * 16 * 2 * 2 * 34);
  KvCacheConfig f16 = c;
  f16.type = DType::kF16;
  EXPECT_EQ(c.BytesPerBlock() * 64, f16.BytesPerBlock() * 34);  // 34 bytes per 32 values vs 64
  auto backend = MakeReferenceBackend();
  auto cache = KvCache::Create(backend.get(), c);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  EXPECT_EQ((*cache)->layers()[1].type, DType::kQ8_0);
  EXPECT_EQ((*cache)->bytes(), c.BytesPerBlock() * 3);
  c.head_dim = 48;
  const Status s = KvCache::Create(backend.get(), c).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("multiple of 32"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("head_dim 48"), std::string::npos) << s.ToString();
}

// WriteBlock / CopyBlock / ReadBlock move exact bytes, for every cache type and both host
// backends, and touch only the blocks named.
class KvCacheBlockIoTest : public ::testing::TestWithParam<std::tuple<DType, bool>> {};

TEST_P(KvCacheBlockIoTest, WriteCopyReadExactBytes) {
  const auto [type, reference] = GetParam();
  auto backend = reference ? MakeReferenceBackend() : MakeCpuBackend(2);
  const KvCacheConfig c{3, 2, 64, 4, 5, type};
  auto made = KvCache::Create(backend.get(), c);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  KvCache& cache = **made;
  ASSERT_EQ(cache.BlockBytes(), c.BytesPerBlock());
  const size_t n = cache.BlockBytes();
  auto pattern = [&](uint32_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 2654435761u + seed * 40503u) >> 13);
    return v;
  };
  const auto a = pattern(1), b = pattern(2);
  ASSERT_NE(a, b);
  cache.WriteBlock(1, a.data());
  cache.WriteBlock(4, b.data());
  std::vector<uint8_t> got(n);
  cache.ReadBlock(1, got.data());
  EXPECT_EQ(got, a);
  // The host layout: layer l's K block then its V block, each LayerBlockBytes().
  const size_t lb = c.LayerBlockBytes();
  for (int32_t l = 0; l < c.n_layer; ++l) {
    const KvLayerView& view = cache.layers()[static_cast<size_t>(l)];
    EXPECT_EQ(std::memcmp(static_cast<const uint8_t*>(view.k) + lb, a.data() + 2 * l * lb, lb), 0) << l;
    EXPECT_EQ(std::memcmp(static_cast<const uint8_t*>(view.v) + lb, a.data() + (2 * l + 1) * lb, lb), 0) << l;
  }
  cache.CopyBlock(1, 3);
  cache.CopyBlock(4, 1);  // overwrite the source afterwards: 3 must keep a's bytes
  cache.CopyBlock(2, 2);  // no-op
  cache.ReadBlock(3, got.data());
  EXPECT_EQ(got, a);
  cache.ReadBlock(1, got.data());
  EXPECT_EQ(got, b);
  const std::vector<uint8_t> zero(n, 0);
  for (int32_t untouched : {0, 2}) {
    cache.ReadBlock(untouched, got.data());
    EXPECT_EQ(got, zero) << untouched;
  }
  EXPECT_DEATH(cache.CopyBlock(0, 5), "CopyBlock");
  EXPECT_DEATH(cache.ReadBlock(-1, got.data()), "ReadBlock");
  EXPECT_DEATH(cache.WriteBlock(5, a.data()), "WriteBlock");
}

INSTANTIATE_TEST_SUITE_P(Types, KvCacheBlockIoTest,
                         ::testing::Combine(::testing::Values(DType::kF16, DType::kF32, DType::kQ8_0),
                                            ::testing::Bool()));

}  // namespace
}  // namespace herd
