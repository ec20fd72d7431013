#include "kv/kv_cache_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace herd {
namespace {

using ::testing::ElementsAre;

std::vector<int32_t> Tokens(int n, int start = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), start);
  return t;
}

KvCacheManagerOptions Opts(int32_t n_blocks, int32_t bs = 4) {
  KvCacheManagerOptions o;
  o.n_blocks = n_blocks;
  o.block_size = bs;
  o.cache_key = "test-model|f16|4";
  return o;
}

TEST(KvCacheManagerTest, ReserveGrowsTheBlockTableAndFailsWithoutChangeWhenThePoolIsShort) {
  KvCacheManager m(Opts(4));
  const auto t = Tokens(10);
  EXPECT_EQ(m.Admit(1, t), 0);
  ASSERT_TRUE(m.Reserve(1, 0, 6));
  EXPECT_THAT(m.BlockTable(1), ElementsAre(0, 1));
  ASSERT_TRUE(m.Reserve(1, 6, 10));
  EXPECT_THAT(m.BlockTable(1), ElementsAre(0, 1, 2));
  EXPECT_EQ(m.Admit(2, Tokens(9, 500)), 0);
  EXPECT_FALSE(m.Reserve(2, 0, 9));  // needs 3 blocks, 1 free
  EXPECT_TRUE(m.BlockTable(2).empty());
  EXPECT_EQ(m.free_blocks(), 1);
  m.CheckInvariants();
}

TEST(KvCacheManagerTest, FullBlocksAreReusedByLaterSequencesWithTheSamePrefix) {
  KvCacheManager m(Opts(8));
  auto a = Tokens(10);
  m.Admit(1, a);
  ASSERT_TRUE(m.Reserve(1, 0, 10));
  m.Commit(1, a, 10);  // blocks 0 and 1 are full: registered; block 2 holds 2 tokens
  EXPECT_EQ(m.CommittedBlocks(1), 2);
  m.Free(1);
  // Tail first: the partial block is empty (head), the full ones cached in reverse order.
  EXPECT_THAT(m.pool().FreeQueue(), ElementsAre(2, 3, 4, 5, 6, 7, 1, 0));

  auto b = Tokens(10);
  b[9] = 7;  // same first 9 tokens
  EXPECT_EQ(m.CachedPrefixLength(b), 8);
  EXPECT_EQ(m.Admit(2, b), 8);
  EXPECT_THAT(m.BlockTable(2), ElementsAre(0, 1));
  ASSERT_TRUE(m.Reserve(2, 8, 10));
  EXPECT_THAT(m.BlockTable(2), ElementsAre(0, 1, 2));
  const PrefixCacheStats s = m.stats();
  EXPECT_EQ(s.queried_tokens, 20);
  EXPECT_EQ(s.hit_tokens, 8);

  // A different first block shares nothing, even with equal later tokens.
  auto c = a;
  c[0] = 1;
  EXPECT_EQ(m.CachedPrefixLength(c), 0);
  m.CheckInvariants();
}

TEST(KvCacheManagerTest, TheLastTokenIsAlwaysComputed) {
  KvCacheManager m(Opts(8));
  auto a = Tokens(8);
  m.Admit(1, a);
  ASSERT_TRUE(m.Reserve(1, 0, 8));
  m.Commit(1, a, 8);
  EXPECT_EQ(m.CommittedBlocks(1), 2);
  EXPECT_EQ(m.CachedPrefixLength(a), 4);  // block 1 holds the last token: recomputed
  EXPECT_EQ(m.CachedPrefixLength(Tokens(9)), 8);
  EXPECT_EQ(m.CachedPrefixLength({}), 0);
  m.CheckInvariants();
}

TEST(KvCacheManagerTest, CachedBlocksSurviveUntilThePoolNeedsThemThenLeastRecentlyUsedGoFirst) {
  KvCacheManager m(Opts(4));
  auto a = Tokens(8, 0), b = Tokens(8, 50);
  m.Admit(1, a);
  ASSERT_TRUE(m.Reserve(1, 0, 8));  // blocks 0, 1
  m.Commit(1, a, 8);
  m.Free(1);
  m.Admit(2, b);
  ASSERT_TRUE(m.Reserve(2, 0, 8));  // empty blocks 2, 3 first: nothing evicted
  EXPECT_THAT(m.BlockTable(2), ElementsAre(2, 3));
  m.Commit(2, b, 8);
  m.Free(2);
  EXPECT_EQ(m.stats().evictions, 0);
  EXPECT_THAT(m.pool().FreeQueue(), ElementsAre(1, 0, 3, 2));
  // A new sequence of 3 blocks evicts a's tail (1), a's head (0), then b's tail (3).
  auto c = Tokens(12, 900);
  m.Admit(3, c);
  ASSERT_TRUE(m.Reserve(3, 0, 12));
  EXPECT_THAT(m.BlockTable(3), ElementsAre(1, 0, 3));
  EXPECT_EQ(m.stats().evictions, 3);
  EXPECT_EQ(m.CachedPrefixLength(Tokens(9, 0)), 0);
  EXPECT_EQ(m.CachedPrefixLength(Tokens(9, 50)), 4);  // b's head block 2 is still cached
  m.CheckInvariants();
}

TEST(KvCacheManagerTest, ForkSharesBlocksAndTheFirstWriteIntoTheSharedPartialBlockCopiesIt) {
  KvCacheManager m(Opts(8));
  auto p = Tokens(6);
  m.Admit(1, p);
  ASSERT_TRUE(m.Reserve(1, 0, 6));
  m.Commit(1, p, 6);
  m.Fork(1, 2);
  EXPECT_THAT(m.BlockTable(2), ElementsAre(0, 1));
  EXPECT_EQ(m.pool().ref_count(0), 2);
  EXPECT_EQ(m.pool().ref_count(1), 2);
  // Child writes position 6 (block 1, shared): it gets a copy.
  EXPECT_EQ(m.BlocksToReserve(2, 6, 7), 1);
  ASSERT_TRUE(m.Reserve(2, 6, 7));
  EXPECT_THAT(m.BlockTable(2), ElementsAre(0, 2));
  auto copies = m.TakeCopies();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, 1);
  EXPECT_EQ(copies[0].dst, 2);
  EXPECT_TRUE(m.TakeCopies().empty());
  // The parent now owns block 1 alone: it writes in place.
  EXPECT_EQ(m.BlocksToReserve(1, 6, 7), 0);
  ASSERT_TRUE(m.Reserve(1, 6, 7));
  EXPECT_THAT(m.BlockTable(1), ElementsAre(0, 1));
  EXPECT_TRUE(m.TakeCopies().empty());
  EXPECT_EQ(m.pool().ref_count(0), 2);  // the full block stays shared
  m.CheckInvariants();
  m.Free(1);
  m.Free(2);
  m.CheckInvariants();
  EXPECT_EQ(m.free_blocks(), 8);
}

TEST(KvCacheManagerTest, PinsKeepPrefixesFromEvictionUntilTheyExpire) {
  KvCacheManager m(Opts(4));
  auto a = Tokens(8, 0);
  m.Admit(1, a);
  ASSERT_TRUE(m.Reserve(1, 0, 8));
  m.Commit(1, a, 8);
  const auto t0 = KvClock::time_point{} + std::chrono::seconds(1000);
  EXPECT_EQ(m.Pin(a, 8, t0 + std::chrono::seconds(300)), 8);
  EXPECT_EQ(m.Pin(a, 8, t0 + std::chrono::seconds(60)), 8);  // same prefix: expiry stays at the later time
  EXPECT_EQ(m.pinned_blocks(), 2);
  m.Free(1);
  m.Admit(2, Tokens(16, 500));
  EXPECT_FALSE(m.Reserve(2, 0, 16));  // the pinned blocks are not evictable
  ASSERT_TRUE(m.Reserve(2, 0, 8));
  EXPECT_THAT(m.BlockTable(2), ElementsAre(2, 3));
  EXPECT_EQ(m.ExpirePins(t0 + std::chrono::seconds(299)), 0);
  EXPECT_EQ(m.ExpirePins(t0 + std::chrono::seconds(300)), 1);
  EXPECT_EQ(m.pinned_blocks(), 0);
  EXPECT_EQ(m.CachedPrefixLength(Tokens(9, 0)), 8);  // still cached, now evictable
  ASSERT_TRUE(m.Reserve(2, 8, 16));
  EXPECT_EQ(m.CachedPrefixLength(Tokens(9, 0)), 0);
  m.CheckInvariants();
}

TEST(KvCacheManagerTest, PinnedChainsListsEachPinnedBlockOnceParentsFirst) {
  KvCacheManager m(Opts(16));  // pins may hold 8 blocks
  EXPECT_TRUE(m.PinnedChains().empty());
  auto a = Tokens(12, 0);
  m.Admit(1, a);
  ASSERT_TRUE(m.Reserve(1, 0, 12));
  m.Commit(1, a, 12);
  m.Free(1);
  const auto now = KvClock::now() + std::chrono::hours(1);
  EXPECT_EQ(m.Pin(a, 12, now), 12);  // blocks 0, 1, 2
  EXPECT_EQ(m.Pin(a, 8, now), 8);    // blocks 0, 1 again: listed once
  const auto chain = m.CachedChain(a);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(m.PinnedChains(), chain);
  EXPECT_EQ(m.cache_key(), "test-model|f16|4");
  EXPECT_EQ(m.root_hash(), RootBlockHash("test-model|f16|4"));
  m.CheckInvariants();
}

TEST(KvCacheManagerTest, PinsAreBoundedAndNeedCachedContent) {
  KvCacheManagerOptions o = Opts(4);
  o.max_pinned_fraction = 0.25f;  // one block
  KvCacheManager m(o);
  auto a = Tokens(8, 0);
  EXPECT_EQ(m.Pin(a, 8, KvClock::now()), 0);  // nothing cached yet
  m.Admit(1, a);
  ASSERT_TRUE(m.Reserve(1, 0, 8));
  m.Commit(1, a, 8);
  EXPECT_EQ(m.Pin(a, 8, KvClock::now()), 0);  // two blocks > the bound
  EXPECT_EQ(m.Pin(a, 5, KvClock::now()), 4);  // the first block only
  m.CheckInvariants();
}

TEST(KvCacheManagerTest, PrefixCachingOffRegistersNothing) {
  KvCacheManagerOptions o = Opts(4);
  o.prefix_caching = false;
  KvCacheManager m(o);
  auto a = Tokens(8);
  m.Admit(1, a);
  ASSERT_TRUE(m.Reserve(1, 0, 8));
  m.Commit(1, a, 8);
  m.Free(1);
  EXPECT_EQ(m.Admit(2, a), 0);
  EXPECT_EQ(m.pool().cached_count(), 0);
}

TEST(KvCacheManagerTest, RandomizedOperationsKeepReferenceCountsExact) {
  std::mt19937 rng(42);
  KvCacheManager m(Opts(24));
  struct Live {
    std::vector<int32_t> tokens;
    int32_t computed = 0;
  };
  std::unordered_map<SeqId, Live> live;
  SeqId next = 1;
  for (int step = 0; step < 5000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 3 || live.empty()) {  // admit a sequence over a few shared prefixes
      Live l;
      const int prefix = static_cast<int>(rng() % 3);
      const int len = 1 + static_cast<int>(rng() % 30);
      for (int i = 0; i < len; ++i) l.tokens.push_back(i < 12 ? prefix * 1000 + i : static_cast<int32_t>(rng() % 50));
      l.computed = m.Admit(next, l.tokens);
      live.emplace(next++, std::move(l));
      continue;
    }
    auto it = live.begin();
    std::advance(it, static_cast<long>(rng() % live.size()));
    Live& l = it->second;
    if (op < 7) {  // compute a chunk, maybe grow by a decoded token
      if (l.computed == static_cast<int32_t>(l.tokens.size())) l.tokens.push_back(static_cast<int32_t>(rng() % 50));
      const int32_t n =
          std::min<int32_t>(static_cast<int32_t>(l.tokens.size()), l.computed + 1 + static_cast<int32_t>(rng() % 8));
      if (m.Reserve(it->first, l.computed, n)) {
        m.TakeCopies();
        l.computed = n;
        m.Commit(it->first, l.tokens, n);
      }
    } else if (op < 8 && l.computed > 0) {
      m.Fork(it->first, next);
      live.emplace(next++, l);
    } else if (op < 9) {
      m.Pin(l.tokens, l.computed, KvClock::time_point{} + std::chrono::seconds(step + static_cast<int>(rng() % 50)));
    } else {
      m.Free(it->first);
      live.erase(it);
    }
    m.ExpirePins(KvClock::time_point{} + std::chrono::seconds(step));
    m.CheckInvariants();
  }
  for (auto& [id, l] : live) m.Free(id);
  m.ExpirePins(KvClock::time_point::max());
  m.CheckInvariants();
  EXPECT_EQ(m.free_blocks(), 24);
}

}  // namespace
}  // namespace herd
