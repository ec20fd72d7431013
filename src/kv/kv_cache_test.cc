#include "kv/kv_cache.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace herd
