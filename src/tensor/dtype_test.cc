#include "tensor/dtype.h"

#include <gtest/gtest.h>

#include "tensor/tensor.h"

namespace herd {
namespace {

TEST(DTypeTest, IdsAndSizesMatchGguf) {
  EXPECT_EQ(DTypeFromId(12), DType::kQ4_K);
  EXPECT_EQ(DTypeFromId(30), DType::kBF16);
  EXPECT_FALSE(DTypeFromId(4).has_value());   // removed Q4_2
  EXPECT_FALSE(DTypeFromId(15).has_value());  // Q8_K is not a storage type
  EXPECT_EQ(RowBytes(DType::kQ4_K, 4096), 16u * 144u);
  EXPECT_EQ(RowBytes(DType::kF16, 7), 14u);
  EXPECT_EQ(DTypeFromName("q6_k"), DType::kQ6_K);
  EXPECT_FALSE(DTypeFromName("q7").has_value());
}

TEST(TensorViewTest, ShapeString) {
  auto t = TensorView::Matrix(DType::kF32, 3, 5, nullptr);
  EXPECT_EQ(t.ShapeString(), "[3, 5]");
  EXPECT_EQ(t.rows(), 3);
  EXPECT_EQ(t.bytes(), 60u);
}

}  // namespace
}  // namespace herd
