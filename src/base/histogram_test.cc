#include "base/histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

namespace herd {
namespace {

TEST(HistogramTest, BoundsAreInclusiveUpperLimits) {
  Histogram h({0.1, 1.0, 10.0});
  for (double v : {0.05, 0.1, 0.5, 1.0, 1.0000001, 10.0, 11.0, 1e9}) h.Observe(v);
  const HistogramSnapshot s = h.Snapshot();
  ASSERT_EQ(s.counts.size(), 4u);
  EXPECT_EQ(s.counts[0], 2u);  // 0.05, 0.1
  EXPECT_EQ(s.counts[1], 2u);  // 0.5, 1.0
  EXPECT_EQ(s.counts[2], 2u);  // 1.0000001, 10
  EXPECT_EQ(s.counts[3], 2u);  // overflow
  EXPECT_EQ(s.count, 8u);
  EXPECT_EQ(s.Cumulative(0), 2u);
  EXPECT_EQ(s.Cumulative(1), 4u);
  EXPECT_EQ(s.Cumulative(2), 6u);
  EXPECT_EQ(s.Cumulative(3), 8u);
  EXPECT_DOUBLE_EQ(s.sum, 0.05 + 0.1 + 0.5 + 1.0 + 1.0000001 + 10.0 + 11.0 + 1e9);
}

TEST(HistogramTest, NegativeValuesGoToTheFirstBucketAndNanIsIgnored) {
  Histogram h({0.0, 1.0});
  h.Observe(-3.0);
  h.Observe(std::nan(""));
  const HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.counts[0], 1u);
  EXPECT_EQ(s.count, 1u);
  EXPECT_DOUBLE_EQ(s.sum, -3.0);
}

TEST(HistogramTest, ConcurrentObserversLoseNothing) {
  Histogram h({1.0, 2.0, 3.0});
  constexpr int kThreads = 4, kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < kEach; ++i) h.Observe(static_cast<double>((i + t) % 4) + 0.5);
    });
  }
  // Snapshots taken meanwhile are internally consistent.
  for (int i = 0; i < 100; ++i) {
    const HistogramSnapshot s = h.Snapshot();
    EXPECT_EQ(s.Cumulative(s.bounds.size()), s.count);
  }
  for (auto& th : threads) th.join();
  const HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.count, static_cast<uint64_t>(kThreads * kEach));
  for (uint64_t c : s.counts) EXPECT_EQ(c, static_cast<uint64_t>(kThreads * kEach / 4));
  // Every value is k + 0.5 for k in 0..3, equally often: exact in binary floating point.
  EXPECT_DOUBLE_EQ(s.sum, kThreads * kEach * 2.0);
}

TEST(HistogramDeathTest, BoundsMustIncrease) { EXPECT_DEATH(Histogram({1.0, 1.0}), "increase"); }

}  // namespace
}  // namespace herd
