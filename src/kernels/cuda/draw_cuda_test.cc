// DrawRows on the device against the host default (Backend::DrawRows = ref::DrawRow per row):
// the same ids for rows of random logits, of few distinct values (ties at the nucleus cut, where
// the lower ids must be taken first), with NaN / -inf sprinkled, with a single number, none at
// all, and at vocabulary widths 1 to 600001 (odd ones too), for greedy rows, plain temperature
// draws, top_p alone and with min_p, near-zero and near-one u.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
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
  // Widths around the draw's 256-id groups, and past 524,288 ids (larger groups: 9 and 10 ids a lane).
  for (int64_t cols : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{255}, int64_t{257}, int64_t{1000}, int64_t{4099},
                       int64_t{128256}, int64_t{524289}, int64_t{600001}}) {
    if (cols >= 500000 && std::getenv("HERD_CUDA_TEST_QUICK") != nullptr) continue;  // sanitizer runs
    for (int kind = 0; kind < 6; ++kind) {
      const int64_t rows = cols >= 500000 ? 7 : cols >= 100000 ? 21 : 42;
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

// PenalizeRows on the device against the host default, bit for bit: rows with no entries, a
// few, and 1,000 (more than a block's threads), repeat 1 (only the subtraction), > 1 and < 1,
// on positive, negative and zero logits; entries with a logit bias (finite or -inf) alone, with
// the penalty, and penalties alone.
TEST_F(CudaDrawTest, PenalizeRowsEqualsTheHostLoop) {
  std::unique_ptr<Backend> host = MakeReferenceBackend();
  std::mt19937 rng(23);
  const int64_t rows = 6, cols = 5003;
  std::vector<float> x = RandomNormal(static_cast<size_t>(rows * cols), 80, 4.f);
  for (size_t i = 0; i < x.size(); i += 97) x[i] = 0.0f;
  const int32_t counts[] = {0, 3, 1000, 17, 1, 250};
  const float repeats[] = {1.0f, 1.3f, 0.7f, 1.0f, 2.0f, 1.1f};
  std::vector<RowPenalty> pens(static_cast<size_t>(rows));
  std::vector<PenaltyEntry> entries;
  for (int64_t r = 0; r < rows; ++r) {
    RowPenalty& p = pens[static_cast<size_t>(r)];
    p.repeat = repeats[r];
    p.begin = static_cast<int32_t>(entries.size());
    std::vector<int32_t> ids(static_cast<size_t>(cols));
    for (int32_t i = 0; i < cols; ++i) ids[static_cast<size_t>(i)] = i;
    std::shuffle(ids.begin(), ids.end(), rng);  // distinct ids
    for (int32_t e = 0; e < counts[r]; ++e) {
      PenaltyEntry pe{ids[static_cast<size_t>(e)], static_cast<float>(rng() % 5) * 0.37f + 0.1f};
      if (e % 3 != 0) {  // biased; of those, a third without the penalty; every 7th a ban
        pe.bias = e % 7 == 0 ? -INFINITY : static_cast<float>(static_cast<int>(rng() % 21) - 10) * 0.61f;
        pe.flags = PenaltyEntry::kBiased | (e % 3 == 1 ? PenaltyEntry::kPenalized : 0u);
      }
      entries.push_back(pe);
    }
    p.end = static_cast<int32_t>(entries.size());
  }
  std::vector<float> want = x;
  host->PenalizeRows(want.data(), rows, cols, pens.data(), entries.data());
  float* dx = Upload(x);
  backend_->PenalizeRows(dx, rows, cols, Upload(pens), Upload(entries));
  const std::vector<float> got = Download(dx, x.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * x.size()), 0);
  EXPECT_NE(std::memcmp(want.data(), x.data(), sizeof(float) * x.size()), 0);  // it changed something
}

// LogprobStatsRows on the device against the host loop: the chosen id's logit exactly (NaN for
// ids < 0), the log-normalizer within 1e-6 (expf differs from the host's in the last bits and
// the double sum runs in another order);
// a row without a number gets -inf.
TEST_F(CudaDrawTest, LogprobStatsRowsMatchTheHostLoop) {
  std::unique_ptr<Backend> host = MakeReferenceBackend();
  const int64_t rows = 5, cols = 128256;
  std::vector<float> x = RandomNormal(static_cast<size_t>(rows * cols), 90, 3.f);
  for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(3 * cols + c)] = -INFINITY;  // row 3: no number
  for (int64_t c = 0; c < cols; c += 3) x[static_cast<size_t>(cols + c)] = -INFINITY;
  const std::vector<int32_t> ids = {5, 128255, -1, 0, 77};
  std::vector<RowLogprobStats> want(static_cast<size_t>(rows));
  host->LogprobStatsRows(x.data(), rows, cols, ids.data(), want.data());
  RowLogprobStats* dst = Upload(std::vector<RowLogprobStats>(static_cast<size_t>(rows)));
  backend_->LogprobStatsRows(Upload(x), rows, cols, Upload(ids), dst);
  const std::vector<RowLogprobStats> got = Download(dst, static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const RowLogprobStats &g = got[static_cast<size_t>(r)], &w = want[static_cast<size_t>(r)];
    if (r == 3) {
      EXPECT_EQ(g.log_z, -INFINITY);
    } else {
      EXPECT_NEAR(g.log_z, w.log_z, 1e-6) << "row " << r;
    }
    if (ids[static_cast<size_t>(r)] < 0) {
      EXPECT_TRUE(std::isnan(g.id_logit));
    } else {
      EXPECT_EQ(g.id_logit, w.id_logit) << "row " << r;
    }
  }
}

}  // namespace
}  // namespace herd::cuda
