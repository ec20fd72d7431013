#include "sampling/token_history.h"

#include <gtest/gtest.h>

namespace herd {
namespace {

TEST(TokenHistoryTest, BoundedWindowForgetsOldTokens) {
  TokenHistory h(3);
  for (int32_t id : {7, 7, 8}) h.Push(id);
  EXPECT_EQ(h.Count(7), 2);
  EXPECT_EQ(h.Count(8), 1);
  EXPECT_EQ(h.size(), 3u);
  h.Push(9);  // window is now 7 8 9
  EXPECT_EQ(h.Count(7), 1);
  h.Push(9);  // 8 9 9
  EXPECT_EQ(h.Count(7), 0);
  EXPECT_EQ(h.Count(9), 2);
  EXPECT_EQ(h.counts().size(), 2u);  // tokens that left the window are not listed
  EXPECT_EQ(h.size(), 3u);
}

TEST(TokenHistoryTest, WholeHistoryAndOff) {
  TokenHistory all(-1);
  for (int i = 0; i < 1000; ++i) all.Push(i % 10);
  EXPECT_EQ(all.Count(3), 100);
  EXPECT_EQ(all.size(), 1000u);
  TokenHistory off(0);
  off.Push(1);
  EXPECT_EQ(off.Count(1), 0);
  EXPECT_EQ(off.size(), 0u);
  EXPECT_TRUE(off.counts().empty());
}

}  // namespace
}  // namespace herd
