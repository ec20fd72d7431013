#include "kv/block_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace herd {
namespace {

using ::testing::ElementsAre;

TEST(BlockPoolTest, AllocatesLowestIdsFirstAndReusesEmptyBlocksMostRecentFirst) {
  BlockPool pool(4);
  EXPECT_EQ(pool.Allocate(), 0);
  EXPECT_EQ(pool.Allocate(), 1);
  EXPECT_EQ(pool.Allocate(), 2);
  EXPECT_EQ(pool.free_count(), 1);
  pool.Release(0);
  pool.Release(2);
  EXPECT_THAT(pool.FreeQueue(), ElementsAre(2, 0, 3));
  EXPECT_EQ(pool.Allocate(), 2);
  EXPECT_EQ(pool.Allocate(), 0);
  EXPECT_EQ(pool.Allocate(), 3);
  EXPECT_EQ(pool.Allocate(), std::nullopt);
  pool.CheckInvariants();
}

TEST(BlockPoolTest, CachedBlocksAreEvictedLeastRecentlyReleasedFirstAndOnlyWhenNoEmptyBlockIsLeft) {
  BlockPool pool(4);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(pool.Allocate(), i);
  EXPECT_TRUE(pool.Register(1, 101));
  EXPECT_TRUE(pool.Register(2, 102));
  pool.Release(2);  // cached: tail
  pool.Release(1);  // cached: tail, after 2
  pool.Release(3);  // empty: head
  EXPECT_THAT(pool.FreeQueue(), ElementsAre(3, 2, 1));
  EXPECT_EQ(pool.cached_count(), 2);

  EXPECT_EQ(pool.Allocate(), 3);  // the empty block first
  EXPECT_EQ(pool.stats().evictions, 0);
  EXPECT_EQ(pool.Lookup(102), 2);
  EXPECT_EQ(pool.Allocate(), 2);  // then the LRU cached block, which loses its hash
  EXPECT_EQ(pool.stats().evictions, 1);
  EXPECT_EQ(pool.Lookup(102), -1);
  EXPECT_FALSE(pool.is_cached(2));
  EXPECT_EQ(pool.Lookup(101), 1);
  pool.CheckInvariants();
}

TEST(BlockPoolTest, PrefixHitTakesACachedBlockOutOfTheFreeQueueAndRefCountsShare) {
  BlockPool pool(3);
  ASSERT_EQ(pool.Allocate(), 0);
  ASSERT_TRUE(pool.Register(0, 7));
  pool.Acquire(0);  // a second sequence shares it
  EXPECT_EQ(pool.ref_count(0), 2);
  pool.Release(0);
  EXPECT_EQ(pool.ref_count(0), 1);
  EXPECT_THAT(pool.FreeQueue(), ElementsAre(1, 2));
  pool.Release(0);
  EXPECT_THAT(pool.FreeQueue(), ElementsAre(1, 2, 0));
  pool.Acquire(pool.Lookup(7));  // hit on the cached free block
  EXPECT_EQ(pool.ref_count(0), 1);
  EXPECT_THAT(pool.FreeQueue(), ElementsAre(1, 2));
  pool.CheckInvariants();
}

TEST(BlockPoolTest, RegisterRefusesDuplicateHashesAndSecondHashes) {
  BlockPool pool(2);
  ASSERT_EQ(pool.Allocate(), 0);
  ASSERT_EQ(pool.Allocate(), 1);
  EXPECT_TRUE(pool.Register(0, 5));
  EXPECT_FALSE(pool.Register(1, 5));  // same content cached in block 0 already
  EXPECT_FALSE(pool.Register(0, 6));
  EXPECT_FALSE(pool.is_cached(1));
  EXPECT_EQ(pool.Lookup(5), 0);
  pool.Release(1);
  EXPECT_THAT(pool.FreeQueue(), ElementsAre(1));  // empty: reused first
  pool.CheckInvariants();
}

TEST(BlockPoolTest, AllocateEmptyNeverEvicts) {
  BlockPool pool(3);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(pool.Allocate(), i);
  ASSERT_TRUE(pool.Register(1, 11));
  pool.Release(1);  // cached
  pool.Release(2);  // empty
  EXPECT_THAT(pool.FreeQueue(), ElementsAre(2, 1));
  EXPECT_EQ(pool.AllocateEmpty(), 2);
  EXPECT_EQ(pool.AllocateEmpty(), std::nullopt);  // only cached block 1 is free
  EXPECT_EQ(pool.Lookup(11), 1);
  EXPECT_EQ(pool.stats().evictions, 0);
  EXPECT_EQ(pool.Allocate(), 1);  // Allocate does evict
  EXPECT_EQ(pool.stats().evictions, 1);
  EXPECT_EQ(pool.AllocateEmpty(), std::nullopt);  // nothing free at all
  pool.CheckInvariants();
}

TEST(BlockPoolDeathTest, DoubleReleaseAndOutOfRangeAbort) {
  BlockPool pool(2);
  ASSERT_EQ(pool.Allocate(), 0);
  pool.Release(0);
  EXPECT_DEATH(pool.Release(0), "release of free block 0");
  EXPECT_DEATH(pool.Acquire(5), "block 5 out of range");
  EXPECT_DEATH(pool.Acquire(1), "holds no cached content");
}

}  // namespace
}  // namespace herd
