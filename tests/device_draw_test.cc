// ref::DrawRow (kernels/draw.h: what Backend::DrawRows computes on every backend, the CUDA kernel
// included) against herd::Sampler::Sample on the same row and seed: the same token for rows of
// random logits, rows with heavy ties (the nucleus cut inside a run of equal logits), rows with
// -inf entries, one number or none, across temperatures, top_p and min_p, with logit bias and
// penalties applied first (ref::PenalizeRow over Sampler::DeviceAdjustments); and which samplers
// may draw on the device at all (Sampler::TakesDeviceDraw).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/draw.h"
#include "sampling/sampler.h"
#include "sampling/sampling_stages.h"

namespace herd {
namespace {

Sampler Make(const SamplingParams& p, int32_t n_vocab) {
  auto s = Sampler::Create(p, n_vocab);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

// The entries a device applies for s (as ModelRunner builds them).
std::vector<PenaltyEntry> EntriesOf(const Sampler& s) {
  std::vector<Sampler::DeviceAdjustment> adjustments;
  s.DeviceAdjustments(&adjustments);
  std::vector<PenaltyEntry> entries;
  for (const Sampler::DeviceAdjustment& a : adjustments) {
    const uint32_t flags = (a.biased ? PenaltyEntry::kBiased : 0u) | (a.penalized ? PenaltyEntry::kPenalized : 0u);
    entries.push_back(PenaltyEntry{a.id, a.subtrahend, a.bias, flags});
  }
  return entries;
}

TEST(DeviceDrawTest, RefDrawRowGivesTheSamplersTokens) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float temps[] = {0.05f, 0.5f, 1.0f, 1.5f, 3.0f};
  const float top_ps[] = {1.0f, 0.95f, 0.9f, 0.5f, 0.1f, 0.001f};
  const float min_ps[] = {0.0f, 0.0f, 0.02f, 0.2f};
  int draws = 0, distinct_from_argmax = 0, biased = 0;
  for (int32_t n : {1, 2, 7, 1000, 50000}) {
    for (int kind = 0; kind < 4; ++kind) {
      for (int trial = 0; trial < (n >= 50000 ? 12 : 60); ++trial) {
        SamplingParams p;
        p.temperature = temps[rng() % 5];
        p.top_p = top_ps[rng() % 6];
        p.min_p = min_ps[rng() % 4];
        p.seed = rng();
        if (trial % 3 == 1) {  // repetition penalties, applied first (ref::PenalizeRow)
          p.repeat_penalty = 1.3f;
          p.frequency_penalty = 0.2f;
          p.presence_penalty = 0.1f;
          p.penalty_last_n = 8;
        }
        if (trial % 2 == 1 && n >= 7) {  // logit bias, applied first: a ban, a token listed twice
          std::uniform_int_distribution<int32_t> id(0, std::min(n, 20) - 1);
          p.logit_bias = {{id(rng), 2.5f * normal(rng)}, {id(rng), -std::numeric_limits<float>::infinity()}};
          p.logit_bias.push_back({p.logit_bias[0].first, 1.0f});
          p.logit_bias.push_back({id(rng), 4.0f});
        }
        std::vector<float> row(static_cast<size_t>(n));
        const float scale = kind == 3 ? 0.05f : 3.0f;  // kind 3: nearly flat, the nucleus is most of the row
        for (float& x : row) x = scale * normal(rng);
        for (size_t i = 0; i < row.size(); ++i) {
          if (kind == 1) row[i] = std::round(row[i]);  // ties
          if (kind == 2 && rng() % 5 == 0) row[i] = -std::numeric_limits<float>::infinity();
        }
        SCOPED_TRACE("n " + std::to_string(n) + " kind " + std::to_string(kind) + " trial " + std::to_string(trial));
        Sampler host = Make(p, n), device = Make(p, n);
        ASSERT_TRUE(device.TakesDeviceDraw());
        for (int step = 0; step < 3; ++step) {
          std::vector<float> copy = row;
          const int32_t want = host.Sample(copy.data()).id;
          std::vector<float> penalized = row;
          const std::vector<PenaltyEntry> entries = EntriesOf(device);
          ref::PenalizeRow(penalized.data(), RowPenalty{p.repeat_penalty, 0, static_cast<int32_t>(entries.size())},
                           entries.data());
          const Sampler::DeviceDraw d = device.NextDeviceDraw();
          const int32_t got = ref::DrawRow(penalized.data(), n, RowDraw{d.temperature, d.top_p, d.min_p, 0.0f, d.u});
          if (want == 0 && got == -1) continue;  // no number in the row: the Sampler's 0, the device's "none"
          EXPECT_EQ(got, want) << "temperature " << p.temperature << " top_p " << p.top_p << " min_p " << p.min_p
                               << " u " << d.u;
          ++draws;
          host.Accept(want);  // the windows move on
          device.Accept(got);
          biased += p.logit_bias.empty() ? 0 : 1;
          int32_t arg = 0;
          for (int32_t i = 1; i < n; ++i) arg = row[static_cast<size_t>(i)] > row[static_cast<size_t>(arg)] ? i : arg;
          distinct_from_argmax += got != arg;
        }
      }
    }
  }
  EXPECT_GT(draws, 1000);
  EXPECT_GT(biased, 300);
  EXPECT_GT(distinct_from_argmax, 300);  // they were draws, not argmaxes
}

// A bias moves the draw: a token with a large bias is drawn (nearly) always; a banned token never.
TEST(DeviceDrawTest, BiasOnTheDeviceMovesTheDraw) {
  const int32_t n = 500;
  std::vector<float> row(n, 0.0f);
  SamplingParams p;
  p.temperature = 1.0f;
  p.logit_bias = {{123, 30.0f}, {7, -std::numeric_limits<float>::infinity()}};
  Sampler s = Make(p, n);
  const std::vector<PenaltyEntry> entries = EntriesOf(s);
  ASSERT_EQ(entries.size(), 2u);
  ref::PenalizeRow(row.data(), RowPenalty{1.0f, 0, 2}, entries.data());
  EXPECT_EQ(row[123], 30.0f);
  EXPECT_EQ(row[7], -std::numeric_limits<float>::infinity());
  for (int i = 0; i < 20; ++i) {
    const Sampler::DeviceDraw d = s.NextDeviceDraw();
    EXPECT_EQ(ref::DrawRow(row.data(), n, RowDraw{d.temperature, d.top_p, d.min_p, 0.0f, d.u}), 123);
  }
}

// A token listed twice gets the sum of its biases, once; params() lists each token once in id order.
TEST(DeviceDrawTest, RepeatedBiasIsMergedInIdOrder) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.repeat_penalty = 1.5f;
  p.penalty_last_n = 4;
  p.logit_bias = {{9, 1.0f}, {2, -1.0f}, {9, 0.5f}};
  Sampler s = Make(p, 20);
  ASSERT_EQ(s.params().logit_bias.size(), 2u);
  EXPECT_EQ(s.params().logit_bias[0], std::make_pair(int32_t{2}, -1.0f));
  EXPECT_EQ(s.params().logit_bias[1], std::make_pair(int32_t{9}, 1.5f));
  s.Accept(9);
  s.Accept(4);
  std::vector<Sampler::DeviceAdjustment> a;
  s.DeviceAdjustments(&a);
  ASSERT_EQ(a.size(), 3u);  // 2 (bias), 9 (bias and penalty), 4 (penalty)
  EXPECT_TRUE(a[0].id == 2 && a[0].biased && !a[0].penalized);
  EXPECT_TRUE(a[1].id == 9 && a[1].biased && a[1].penalized && a[1].bias == 1.5f);
  EXPECT_TRUE(a[2].id == 4 && !a[2].biased && a[2].penalized);
  std::vector<float> host(20, 2.0f), device(20, 2.0f);
  s.Sample(host.data());  // leaves the adjusted row
  const std::vector<PenaltyEntry> entries = EntriesOf(s);
  ref::PenalizeRow(device.data(), RowPenalty{p.repeat_penalty, 0, static_cast<int32_t>(entries.size())},
                   entries.data());
  EXPECT_EQ(device, host);
  EXPECT_EQ(host[9], (2.0f + 1.5f) / 1.5f);
}

// DrawFixed's integer arithmetic is the double product it stands for: every 61st float bit
// pattern in [0, 2) and each exponent's first and last patterns.
TEST(DeviceDrawTest, DrawFixedIsTheTruncatedDoubleProduct) {
  auto reference = [](float p) {
    return static_cast<uint64_t>(static_cast<double>(p) * static_cast<double>(uint64_t{1} << kDrawFracBits));
  };
  auto check = [&](uint32_t bits) {
    float p;
    std::memcpy(&p, &bits, sizeof(p));
    ASSERT_EQ(DrawFixed(p), reference(p)) << "bits " << bits;
  };
  const uint32_t two = 0x40000000u;  // 2.0f
  for (uint32_t b = 0; b < two; b += 61) check(b);
  for (uint32_t e = 0; e < (two >> 23); ++e) {
    check(e << 23);
    check((e << 23) | 0x7FFFFFu);
  }
  EXPECT_EQ(DrawFixed(1.0f), uint64_t{1} << kDrawFracBits);
  EXPECT_EQ(DrawFixed(-0.0f), 0u);
}

TEST(DeviceDrawTest, GreedyRowsAndRowsWithoutNumbers) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> row = {1.0f, 3.0f, nan, 3.0f, -inf};
  EXPECT_EQ(ref::DrawRow(row.data(), 5, RowDraw{}), 1);  // greedy: the first of the largest
  const std::vector<float> none = {nan, -inf, nan};
  EXPECT_EQ(ref::DrawRow(none.data(), 3, RowDraw{1.0f, 1.0f, 0.0f, 0.0f, 0.5}), -1);
  const std::vector<float> one = {-inf, 2.0f, nan};
  EXPECT_EQ(ref::DrawRow(one.data(), 3, RowDraw{1.0f, 0.5f, 0.0f, 0.0f, 0.99}), 1);
}

// FinishDeviceToken from a row's stats and candidates gives Sample's report: the same logprob
// and top list (bit for bit with the host's stats; on a device only the double sum's order
// differs).
TEST(DeviceDrawTest, FinishDeviceTokenGivesTheReport) {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (int trial = 0; trial < 50; ++trial) {
    const int32_t n = 3000;
    std::vector<float> row(n);
    for (float& x : row) x = normal(rng);
    if (trial % 5 == 0) row[7] = -std::numeric_limits<float>::infinity();
    SamplingParams p;
    p.temperature = trial % 2 == 0 ? 0.0f : 0.8f;
    p.logprobs = true;
    p.n_probs = trial % 7;
    p.seed = 77 + static_cast<uint64_t>(trial);
    Sampler host = Make(p, n), device = Make(p, n);
    std::vector<float> copy = row;
    const SampledToken want = host.Sample(copy.data());
    const RowLogprobStats st = ref::LogprobStatsOfRow(row.data(), n, want.id);
    std::vector<Candidate> top;
    TopKFromLogits(row.data(), n, std::max(1, p.n_probs), top);
    const SampledToken got = device.FinishDeviceToken(want.id, st.id_logit, st.log_z, top);
    EXPECT_EQ(got.id, want.id);
    EXPECT_EQ(got.logprob, want.logprob) << "trial " << trial;
    ASSERT_EQ(got.top.size(), want.top.size()) << "trial " << trial;
    for (size_t j = 0; j < want.top.size(); ++j) {
      EXPECT_EQ(got.top[j].id, want.top[j].id);
      EXPECT_EQ(got.top[j].logprob, want.top[j].logprob);
    }
  }
}

TEST(DeviceDrawTest, WhichSamplersDrawOnTheDevice) {
  SamplingParams p;
  p.temperature = 0.8f;
  EXPECT_TRUE(Make(p, 100).TakesDeviceDraw());
  p.top_k = 100;  // >= n_vocab: no top-k
  EXPECT_TRUE(Make(p, 100).TakesDeviceDraw());
  p.top_k = 40;  // the top-k candidates path instead
  EXPECT_FALSE(Make(p, 100).TakesDeviceDraw());
  p.top_k = 0;
  p.repeat_penalty = 1.1f;
  p.penalty_last_n = -1;
  Sampler penalized = Make(p, 5000);
  EXPECT_TRUE(penalized.TakesDeviceDraw());  // penalties applied on the device first
  for (int32_t id = 0; id <= static_cast<int32_t>(Sampler::kMaxDeviceAdjustedTokens); ++id) penalized.Accept(id);
  EXPECT_FALSE(penalized.TakesDeviceDraw());  // too many distinct tokens in the window
  p.repeat_penalty = 1.0f;
  p.typical_p = 0.9f;
  EXPECT_FALSE(Make(p, 100).TakesDeviceDraw());
  p.typical_p = 1.0f;
  p.logprobs = true;
  p.n_probs = 5;
  EXPECT_TRUE(Make(p, 100).TakesDeviceDraw());  // logprobs reported from the device's stats
  p.n_probs = Sampler::kMaxDeviceTopLogprobs + 1;
  EXPECT_FALSE(Make(p, 100).TakesDeviceDraw());
  p.logprobs = false;
  p.n_probs = 0;
  p.logit_bias = {{3, 1.0f}, {4, -std::numeric_limits<float>::infinity()}};
  EXPECT_TRUE(Make(p, 100).TakesDeviceDraw());  // the bias applied on the device first
  p.logit_bias.clear();
  for (int32_t id = 0; id < 100; ++id) p.logit_bias.push_back({id, -std::numeric_limits<float>::infinity()});
  EXPECT_FALSE(Make(p, 100).TakesDeviceDraw());  // every token banned: the host's token 0
  p.logit_bias.clear();
  for (int32_t id = 0; id <= static_cast<int32_t>(Sampler::kMaxDeviceAdjustedTokens); ++id) {
    p.logit_bias.push_back({id, 1.0f});
  }
  EXPECT_FALSE(Make(p, 5000).TakesDeviceDraw());  // too many biased tokens
  p.logit_bias.clear();
  p.temperature = 0.0f;  // greedy: the argmax path
  EXPECT_FALSE(Make(p, 100).TakesDeviceDraw());
}

}  // namespace
}  // namespace herd
