#include "server/replica_picker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace herd::server {
namespace {

constexpr auto kU = ModelState::kUnloaded;
constexpr auto kL = ModelState::kLoading;
constexpr auto kR = ModelState::kLoaded;

ReplicaChoice Pick(const std::vector<ReplicaView>& v, std::optional<uint64_t> key = std::nullopt) {
  return PickReplica(v, key);
}

TEST(ReplicaPickerTest, LeastBusyLoadedReplicaServes) {
  const auto c = Pick({{kR, 3, 0}, {kR, 1, 0}, {kR, 1, 0}, {kR, 2, 0}});
  EXPECT_EQ(c.serve, 1);  // the fewest in flight, lowest index on a tie
  EXPECT_EQ(c.wait, -1);
  EXPECT_EQ(c.load, -1);  // nothing unloaded
}

TEST(ReplicaPickerTest, AnIdleReplicaServesWithoutLoadingMore) {
  const auto c = Pick({{kR, 2, 0}, {kR, 0, 0}, {kU, 0, 0}});
  EXPECT_EQ(c.serve, 1);
  EXPECT_EQ(c.load, -1);
}

TEST(ReplicaPickerTest, AllBusyServesAndLoadsTheFirstUnloaded) {
  const auto c = Pick({{kR, 1, 0}, {kU, 0, 0}, {kU, 0, 0}});
  EXPECT_EQ(c.serve, 0);
  EXPECT_EQ(c.load, 1);
  EXPECT_EQ(c.wait, -1);
}

TEST(ReplicaPickerTest, AllBusyWhileOneLoadsLoadsNoMore) {
  const auto c = Pick({{kR, 4, 0}, {kL, 0, 0}, {kU, 0, 0}});
  EXPECT_EQ(c.serve, 0);  // served now; the loading one takes later requests
  EXPECT_EQ(c.load, -1);
  EXPECT_EQ(c.wait, -1);
}

TEST(ReplicaPickerTest, NoneLoadedWaitsOnTheLoadingOneWithFewestWaiters) {
  const auto c = Pick({{kL, 0, 5}, {kU, 0, 0}, {kL, 0, 2}});
  EXPECT_EQ(c.serve, -1);
  EXPECT_EQ(c.wait, 2);
  EXPECT_EQ(c.load, -1);
}

TEST(ReplicaPickerTest, NothingLoadedOrLoadingLoadsTheFirst) {
  const auto c = Pick({{kU, 0, 0}, {kU, 0, 0}});
  EXPECT_EQ(c.serve, -1);
  EXPECT_EQ(c.wait, -1);
  EXPECT_EQ(c.load, 0);
}

TEST(ReplicaPickerTest, AReplicaThatJustFailedIsNotLoadedToShareWork) {
  ReplicaView failed{kU, 0, 0};
  failed.can_load = false;
  auto c = Pick({{kR, 2, 0}, failed, {kU, 0, 0}});
  EXPECT_EQ(c.serve, 0);
  EXPECT_EQ(c.load, 2);  // the next one that can load
  c = Pick({{kR, 2, 0}, failed});
  EXPECT_EQ(c.serve, 0);
  EXPECT_EQ(c.load, -1);
  c = Pick({failed, failed});  // nothing else serves: the request tries it all the same
  EXPECT_EQ(c.serve, -1);
  EXPECT_EQ(c.load, 0);
}

TEST(ReplicaPickerTest, SingleReplica) {
  EXPECT_EQ(Pick({{kR, 7, 0}}).serve, 0);
  EXPECT_EQ(Pick({{kR, 7, 0}}).load, -1);
  EXPECT_EQ(Pick({{kL, 0, 1}}).wait, 0);
  EXPECT_EQ(Pick({{kU, 0, 0}}).load, 0);
}

// A key whose preferred replica among `n` is `want`.
uint64_t KeyFor(int want, int n) {
  for (uint64_t k = 1;; ++k) {
    if (PreferredReplica(k, n) == want) return k;
  }
}

TEST(ReplicaPickerTest, AffinityKeepsTheKeysReplicaWithinTheSlack) {
  const uint64_t k1 = KeyFor(1, 3);
  // Replica 1 has kAffinitySlack more requests than the least busy: still preferred.
  EXPECT_EQ(Pick({{kR, 0, 0}, {kR, kAffinitySlack, 0}, {kR, 2, 0}}, k1).serve, 1);
  // One more and the least busy takes the request.
  EXPECT_EQ(Pick({{kR, 0, 0}, {kR, kAffinitySlack + 1, 0}, {kR, 2, 0}}, k1).serve, 0);
  // The preferred replica is not loaded: the least busy loaded one.
  EXPECT_EQ(Pick({{kR, 3, 0}, {kU, 0, 0}, {kR, 2, 0}}, k1).serve, 2);
  // Without a key: the least busy.
  EXPECT_EQ(Pick({{kR, 0, 0}, {kR, 1, 0}, {kR, 2, 0}}).serve, 0);
}

TEST(ReplicaPickerTest, PreferredReplicaSpreadsKeysAndMovesFewWhenAReplicaIsAdded) {
  int count[2] = {0, 0}, moved = 0;
  for (uint64_t k = 0; k < 4000; ++k) {
    const int two = PreferredReplica(k * 0x9e3779b97f4a7c15ull, 2);
    ++count[two];
    const int three = PreferredReplica(k * 0x9e3779b97f4a7c15ull, 3);
    if (three != two) {
      ++moved;
      EXPECT_EQ(three, 2);  // a key moves only to the new replica
    }
  }
  EXPECT_GT(count[0], 1700);
  EXPECT_GT(count[1], 1700);
  EXPECT_GT(moved, 1000);  // about a third
  EXPECT_LT(moved, 1700);
}

api::ChatMessage Msg(const std::string& role, const std::string& content) { return {role, content, "", ""}; }

TEST(ReplicaPickerTest, ChatAffinityKeyFollowsTheConversationOrTheUser) {
  api::ChatRequest turn1, turn2, other;
  turn1.messages = {Msg("system", "You are terse."), Msg("user", "Plan a trip.")};
  turn2.messages = turn1.messages;
  turn2.messages.push_back(Msg("assistant", "Where to?"));
  turn2.messages.push_back(Msg("user", "Lisbon."));
  other.messages = {Msg("system", "You are terse."), Msg("user", "Write a poem.")};
  EXPECT_EQ(AffinityKey(turn1), AffinityKey(turn2));  // same conversation
  EXPECT_NE(AffinityKey(turn1), AffinityKey(other));
  api::ChatRequest u1 = turn1, u2 = other;
  u1.user = u2.user = "alice";
  EXPECT_EQ(AffinityKey(u1), AffinityKey(u2));  // the user decides when given
  u2.user = "bob";
  EXPECT_NE(AffinityKey(u1), AffinityKey(u2));
}

TEST(ReplicaPickerTest, CompletionAffinityKeyIsThePromptPrefix) {
  api::CompletionRequest a, b, c;
  const std::string prefix(1024, 'x');
  a.prompt = prefix + "first";
  b.prompt = prefix + "second";
  c.prompt = "y" + prefix;
  EXPECT_EQ(AffinityKey(a), AffinityKey(b));
  EXPECT_NE(AffinityKey(a), AffinityKey(c));
}

}  // namespace
}  // namespace herd::server
