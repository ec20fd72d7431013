#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace herd {
namespace {

TEST(ThreadPoolTest, RunCallsEveryThreadOnce) {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    std::vector<std::atomic<int>> hits(n);
    for (int rep = 0; rep < 1000; ++rep) {
      pool.Run([&](int ith, int nth) {
        EXPECT_EQ(nth, n);
        hits[ith].fetch_add(1);
      });
    }
    for (int i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1000);
  }
}

TEST(ThreadPoolTest, ParallelForCoversRangeExactlyOnce) {
  ThreadPool pool(3);
  for (int64_t n : {1, 2, 7, 64, 1001}) {
    for (int64_t grain : {1, 4, 16}) {
      std::vector<std::atomic<int>> seen(n);
      pool.ParallelFor(n, grain, [&](int64_t b, int64_t e) {
        EXPECT_LT(b, e);
        EXPECT_EQ(b % grain, 0);
        for (int64_t i = b; i < e; ++i) seen[i].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen[i].load(), 1) << n << " " << grain << " " << i;
    }
  }
}

}  // namespace
}  // namespace herd
