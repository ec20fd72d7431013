#include "server/replica_picker.h"

#include <gtest/gtest.h>

#include <vector>

namespace herd::server {
namespace {

constexpr auto kU = ModelState::kUnloaded;
constexpr auto kL = ModelState::kLoading;
constexpr auto kR = ModelState::kLoaded;

ReplicaChoice Pick(const std::vector<ReplicaView>& v) { return PickReplica(v); }

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

TEST(ReplicaPickerTest, SingleReplica) {
  EXPECT_EQ(Pick({{kR, 7, 0}}).serve, 0);
  EXPECT_EQ(Pick({{kR, 7, 0}}).load, -1);
  EXPECT_EQ(Pick({{kL, 0, 1}}).wait, 0);
  EXPECT_EQ(Pick({{kU, 0, 0}}).load, 0);
}

}  // namespace
}  // namespace herd::server
