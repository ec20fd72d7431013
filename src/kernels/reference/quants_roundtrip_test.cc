// Quantize -> dequantize error of every type, and invariants of the activation formats.
//
// Relative RMSE (rmse(x - deq(q(x))) / rms(x)) measured on N(0,1) data, 512 rows x 1024,
// with herd's quantizers (quants_fit.cc / quants_k_quantize.cc), g++ 12 -O2 x86-64:
//   F16 0.00021  BF16 0.00166  Q8_0 0.00536  Q8_1 0.00536  Q8_K 0.00698
//   Q6_K 0.0169  Q5_1 0.0336  Q5_K 0.0344  Q5_0 0.0400
//   Q4_1 0.0696  Q4_K 0.0699  Q4_0 0.0810  Q3_K 0.1434  Q2_K 0.2619
// The asserted bounds sit 2-8% above these, so a quantizer regression fails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/quants.h"
#include "kernels/reference/quants_test_util.h"
#include "tensor/quant_blocks.h"

namespace herd::ref {
namespace {

using testing::Gaussian;

std::vector<float> RoundTrip(DType t, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(RowBytes(t, n));
  QuantizeRow(t, x.data(), q.data(), n);
  std::vector<float> y(n);
  DequantizeRow(t, q.data(), y.data(), n);
  return y;
}

double RelRmse(const std::vector<float>& x, const std::vector<float>& y) {
  double se = 0, ss = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    se += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    ss += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(se / ss);
}

struct RmseCase {
  DType type;
  double bound;
};

class QuantRoundTrip : public ::testing::TestWithParam<RmseCase> {};

TEST_P(QuantRoundTrip, GaussianRelativeRmse) {
  const RmseCase c = GetParam();
  const int64_t kRows = 512, kCols = 1024;
  const auto x = Gaussian(kRows * kCols, 1234);
  // Quantize row by row as the model quantizer does (the result is the same as one long row).
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < kRows; ++r) {
    std::vector<float> row(x.begin() + r * kCols, x.begin() + (r + 1) * kCols);
    const auto out = RoundTrip(c.type, row);
    std::copy(out.begin(), out.end(), y.begin() + r * kCols);
  }
  const double rel = RelRmse(x, y);
  RecordProperty("rel_rmse", std::to_string(rel));
  std::printf("  %-5s rel RMSE %.5f (bound %.5f)\n", DTypeName(c.type).data(), rel, c.bound);
  EXPECT_LT(rel, c.bound);
}

TEST_P(QuantRoundTrip, ScaledAndShiftedData) {
  // Not centred and not unit scale: mins/offsets must carry the shift, scales the magnitude.
  const RmseCase c = GetParam();
  for (const float mean : {0.f, 0.5f, -0.5f}) {
    const auto x = Gaussian(4096, 99, 1e-2f, mean * 1e-2f);
    const double rel = RelRmse(x, RoundTrip(c.type, x));
    // A shifted distribution has a larger RMS, so the relative error can only drop for the
    // formats with a min; allow the symmetric ones 1.5x.
    EXPECT_LT(rel, 1.5 * c.bound) << "mean " << mean;
  }
}

TEST_P(QuantRoundTrip, ZerosStayZero) {
  const RmseCase c = GetParam();
  const std::vector<float> x(512, 0.f);
  for (const float v : RoundTrip(c.type, x)) ASSERT_EQ(v, 0.f);
}

TEST_P(QuantRoundTrip, SparseOutliers) {
  // Mostly zeros with a few large values: zeros must stay (almost) zero and outliers survive.
  const RmseCase c = GetParam();
  std::vector<float> x(512, 0.f);
  x[3] = 10.f;
  x[300] = -7.f;
  x[511] = 0.25f;
  const auto y = RoundTrip(c.type, x);
  EXPECT_NEAR(y[3], 10.f, 10.f * c.bound * 4);
  EXPECT_NEAR(y[300], -7.f, 10.f * c.bound * 4);
  EXPECT_LT(RelRmse(x, y), 2 * c.bound);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, QuantRoundTrip,
    ::testing::Values(RmseCase{DType::kF32, 1e-9}, RmseCase{DType::kF16, 0.00023}, RmseCase{DType::kBF16, 0.0018},
                      RmseCase{DType::kQ8_0, 0.0056}, RmseCase{DType::kQ8_1, 0.0056}, RmseCase{DType::kQ8_K, 0.0073},
                      RmseCase{DType::kQ6_K, 0.0175}, RmseCase{DType::kQ5_1, 0.0350}, RmseCase{DType::kQ5_0, 0.0415},
                      RmseCase{DType::kQ5_K, 0.0355}, RmseCase{DType::kQ4_1, 0.0720}, RmseCase{DType::kQ4_0, 0.0835},
                      RmseCase{DType::kQ4_K, 0.0720}, RmseCase{DType::kQ3_K, 0.148}, RmseCase{DType::kQ2_K, 0.270}),
    [](const auto& info) { return std::string(DTypeName(info.param.type)); });

TEST(QuantActivations, Q8_KBsumsAndRange) {
  const auto x = Gaussian(7 * kQK_K, 7, 3.f);
  std::vector<BlockQ8_K> q(7);
  QuantizeRow(DType::kQ8_K, x.data(), q.data(), 7 * kQK_K);
  for (int b = 0; b < 7; ++b) {
    float amax = 0;
    for (int i = 0; i < kQK_K; ++i) amax = std::max(amax, std::fabs(x[b * kQK_K + i]));
    EXPECT_FLOAT_EQ(q[b].d * 127.f, amax);
    int qmax = 0;
    for (int j = 0; j < kQK_K / 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) {
        sum += q[b].qs[16 * j + i];
        qmax = std::max(qmax, std::abs(static_cast<int>(q[b].qs[16 * j + i])));
        EXPECT_NEAR(q[b].qs[16 * j + i] * q[b].d, x[b * kQK_K + 16 * j + i], 0.5f * q[b].d * 1.0001f);
      }
      EXPECT_EQ(q[b].bsums[j], sum) << "block " << b << " group " << j;
    }
    EXPECT_EQ(qmax, 127);
  }
}

TEST(QuantActivations, Q8_1SumIsScaledCodeSum) {
  const auto x = Gaussian(5 * kQK8_1, 8, 2.f, 0.7f);
  std::vector<BlockQ8_1> q(5);
  QuantizeRow(DType::kQ8_1, x.data(), q.data(), 5 * kQK8_1);
  for (int b = 0; b < 5; ++b) {
    int sum = 0;
    for (int i = 0; i < kQK8_1; ++i) sum += q[b].qs[i];
    EXPECT_EQ(q[b].s, q[b].d * static_cast<float>(sum));
  }
}

TEST(QuantActivations, VecDotTypes) {
  EXPECT_EQ(VecDotType(DType::kF32), DType::kF32);
  EXPECT_EQ(VecDotType(DType::kF16), DType::kF32);
  EXPECT_EQ(VecDotType(DType::kBF16), DType::kF32);
  EXPECT_EQ(VecDotType(DType::kQ4_0), DType::kQ8_0);
  EXPECT_EQ(VecDotType(DType::kQ5_0), DType::kQ8_0);
  EXPECT_EQ(VecDotType(DType::kQ8_0), DType::kQ8_0);
  EXPECT_EQ(VecDotType(DType::kQ4_1), DType::kQ8_1);
  EXPECT_EQ(VecDotType(DType::kQ5_1), DType::kQ8_1);
  for (DType t : {DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    EXPECT_EQ(VecDotType(t), DType::kQ8_K);
  }
}

}  // namespace
}  // namespace herd::ref
