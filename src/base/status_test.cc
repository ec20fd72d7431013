#include "base/status.h"

#include <gtest/gtest.h>

namespace herd {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument(StrFormat("%d is odd", x));
  return x / 2;
}

Status UseHalf(int x, int* out) {
  HERD_ASSIGN_OR_RETURN(*out, Half(x));
  return Status::Ok();
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = NotFound("no such file");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: no such file");
  EXPECT_EQ(s.WithContext("model.gguf").message(), "model.gguf: no such file");
}

TEST(StatusTest, ResultPropagates) {
  int out = 0;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  Status s = UseHalf(7, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "7 is odd");
}

TEST(StatusTest, ResultFromOkStatusIsInternalError) {
  Result<int> r = Status::Ok();
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace herd
