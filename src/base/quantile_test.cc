#include "base/quantile.h"

#include <gtest/gtest.h>

namespace herd {
namespace {

TEST(QuantileTest, InterpolatesBetweenRanks) {
  const std::vector<double> v = {1, 2, 3, 4, 10};
  EXPECT_DOUBLE_EQ(Quantile(v, 0.0), 1);
  EXPECT_DOUBLE_EQ(Quantile(v, 1.0), 10);
  EXPECT_DOUBLE_EQ(Quantile(v, 0.5), 3);
  EXPECT_DOUBLE_EQ(Quantile(v, 0.9), 4 + 0.6 * 6);  // index 3.6
  EXPECT_DOUBLE_EQ(Quantile({7}, 0.99), 7);
}

}  // namespace
}  // namespace herd
