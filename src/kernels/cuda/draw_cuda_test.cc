// DrawRows on the device against the host default (Backend::DrawRows = ref::DrawRow per row):
// the same ids for rows of random logits, of few distinct values (ties at the nucleus cut, where
// the lower ids must be taken first), with NaN / -inf sprinkled, with a single number, none at
// all, and at vocabulary widths 1 to 128256 (odd ones too), for greedy rows, plain temperature
// draws, top_p alone and with min_p, near-zero and near-one u.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/cuda_test_util.h"
#include "kernels/draw.h"

namespace herd::cuda {
namespace {

using testing::CudaBackendTest;
using testing::RandomNormal;

class CudaDrawTest : public CudaBackendTest {};

std::vector<RowDraw> Draws(int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  const RowDraw shapes[] = {
      {0.0f, 1.0f, 0.0f, 0.0f, 0.5},                                   // greedy
      {1.0f, 1.0f, 0.0f, 0.0f, 0.0},                                   // plain draw
      {0.7f, 0.9f, 0.0f, 0.0f, 0.0},                                   // nucleus
      {1.3f, 0.5f, 0.05f, 0.0f, 0.0},  {0.8f, 1.0f, 0.1f, 0.0f, 0.0},  // min_p alone
      {2.0f, 0.999f, 0.0f, 0.0f, 0.0},                                 // nearly the whole row
      {0.2f, 0.01f, 0.0f, 0.0f, 0.0},                                  // a tiny nucleus
  };
  constexpr int kShapes = sizeof(shapes) / sizeof(shapes[0]);
  std::vector<RowDraw> d(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    d[static_cast<size_t>(r)] = shapes[r % kShapes];
    const int edge = static_cast<int>(rng() % 8);
    d[static_cast<size_t>(r)].u = edge == 0 ? 0.0 : edge == 1 ? 1.0 - 0x1.0p-53 : uni(rng);
  }
  return d;
}

TEST_F(CudaDrawTest, DrawRowsEqualsTheHostReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::unique_ptr<Backend> host = MakeReferenceBackend();
  std::mt19937 rng(11);
  int64_t drawn = 0;
  for (int64_t cols : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{1000}, int64_t{4099}, int64_t{128256}}) {
    for (int kind = 0; kind < 6; ++kind) {
      const int64_t rows = cols >= 100000 ? 21 : 42;
      std::vector<float> x = RandomNormal(static_cast<size_t>(rows * cols), 60 + kind, kind == 5 ? 0.3f : 3.f);
      for (size_t i = 0; i < x.size(); ++i) {
        if (kind == 1) x[i] = std::round(x[i]);  // ~15 distinct values: big ties
        if (kind == 2 && rng() % 7 == 0) x[i] = rng() % 2 ? nan : -inf;
        if (kind == 3 && i % static_cast<size_t>(cols) != 3) x[i] = -inf;  // one number per row (or none)
        if (kind == 4) x[i] = nan;                                         // no number at all
      }
      const std::vector<RowDraw> d = Draws(rows, 70 + static_cast<uint32_t>(kind));
      SCOPED_TRACE("cols " + std::to_string(cols) + " kind " + std::to_string(kind));
      std::vector<int32_t> want(static_cast<size_t>(rows));
      host->DrawRows(x.data(), rows, cols, d.data(), want.data());
      int32_t* ids = Upload(std::vector<int32_t>(want.size(), 0x7fffffff));  // not -1: unwritten shows
      backend_->DrawRows(Upload(x), rows, cols, Upload(d), ids);
      const std::vector<int32_t> got = Download(ids, want.size());
      EXPECT_EQ(got, want);
      for (size_t r = 0; r < want.size(); ++r) drawn += d[r].temperature > 0.0f && want[r] >= 0;
    }
  }
  EXPECT_GT(drawn, 300);  // the draws above really drew
}

// A draw is a draw: over many u, a plain temperature-1 draw over four logits lands on each id
// with its softmax probability, and a nucleus of 0.8 over [3, 2, 1, 0] (masses .64, .24, .09, .03) only takes ids 0
// and 1.
TEST_F(CudaDrawTest, FrequenciesFollowTheDistribution) {
  const int64_t rows = 4000, cols = 4;
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(r * cols + c)] = static_cast<float>(3 - c);
  for (const float top_p : {1.0f, 0.8f}) {
    std::vector<RowDraw> d(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) d[static_cast<size_t>(r)] = {1.0f, top_p, 0.0f, 0.0f, (r + 0.5) / rows};
    int32_t* ids = Upload(std::vector<int32_t>(static_cast<size_t>(rows), -7));
    backend_->DrawRows(Upload(x), rows, cols, Upload(d), ids);
    std::vector<int> hist(cols, 0);
    for (int32_t id : Download(ids, static_cast<size_t>(rows))) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, cols);
      ++hist[static_cast<size_t>(id)];
    }
    double z = 0.0, z2 = std::exp(3.0) + std::exp(2.0);
    for (int c = 0; c < cols; ++c) z += std::exp(3.0 - c);
    for (int c = 0; c < cols; ++c) {
      const double want = top_p == 1.0f ? std::exp(3.0 - c) / z : (c < 2 ? std::exp(3.0 - c) / z2 : 0.0);
      EXPECT_NEAR(hist[static_cast<size_t>(c)] / static_cast<double>(rows), want, 0.002) << "id " << c;
    }
  }
}

}  // namespace
}  // namespace herd::cuda
