#include "base/memory_info.h"

#include <gtest/gtest.h>

namespace herd {
namespace {

TEST(MemoryInfoTest, ParsesSizesAndFractions) {
  EXPECT_EQ(*ParseMemoryBudget("4GiB", 0), size_t{4} << 30);
  EXPECT_EQ(*ParseMemoryBudget("512MiB", 0), size_t{512} << 20);
  EXPECT_EQ(*ParseMemoryBudget("1.5G", 0), size_t{1500000000});
  EXPECT_EQ(*ParseMemoryBudget("2k", 0), size_t{2000});
  EXPECT_EQ(*ParseMemoryBudget("1000", 0), size_t{1000});
  EXPECT_EQ(*ParseMemoryBudget("0.25", 4000), size_t{1000});
  EXPECT_EQ(*ParseMemoryBudget("1", 4000), size_t{4000});
}

TEST(MemoryInfoTest, RejectsBadSpecs) {
  EXPECT_FALSE(ParseMemoryBudget("", 100).ok());
  EXPECT_FALSE(ParseMemoryBudget("-1G", 100).ok());
  EXPECT_FALSE(ParseMemoryBudget("4X", 100).ok());
  EXPECT_FALSE(ParseMemoryBudget("0.5", 0).ok());
  EXPECT_NE(ParseMemoryBudget("4X", 100).status().message().find("unknown unit"), std::string::npos);
}

TEST(MemoryInfoTest, AvailableMemoryIsReported) { EXPECT_GT(AvailableMemoryBytes(), size_t{0}); }

}  // namespace
}  // namespace herd
