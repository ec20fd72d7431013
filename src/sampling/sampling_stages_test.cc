#include "sampling/sampling_stages.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace herd {
namespace {

using ::testing::ElementsAre;

// Candidates 0..n-1 with logit = log(prob), so softmax gives back prob (up to rounding).
std::vector<Candidate> FromProbs(const std::vector<float>& probs) {
  std::vector<Candidate> c;
  for (size_t i = 0; i < probs.size(); ++i) c.push_back({static_cast<int32_t>(i), std::log(probs[i]), 0.0f});
  return c;
}
std::vector<Candidate> FromLogits(const std::vector<float>& logits) {
  std::vector<Candidate> c;
  for (size_t i = 0; i < logits.size(); ++i) c.push_back({static_cast<int32_t>(i), logits[i], 0.0f});
  return c;
}
std::vector<int32_t> Ids(const std::vector<Candidate>& c) {
  std::vector<int32_t> ids;
  for (const Candidate& x : c) ids.push_back(x.id);
  return ids;
}

TEST(SamplingStagesTest, LogitBiasAddsAndBans) {
  std::vector<float> l = {1.0f, 2.0f, 3.0f};
  std::vector<std::pair<int32_t, float>> bias = {{0, 0.5f}, {2, -INFINITY}, {0, 0.25f}};
  ApplyLogitBias(l.data(), bias);
  EXPECT_EQ(l[0], 1.75f);  // two entries for one token add up
  EXPECT_EQ(l[1], 2.0f);
  EXPECT_EQ(l[2], -INFINITY);
}

TEST(SamplingStagesTest, PenaltiesExactArithmetic) {
  TokenHistory h(-1);
  for (int32_t id : {0, 0, 1, 2}) h.Push(id);
  std::vector<float> l = {2.0f, -1.0f, 0.5f, 3.0f};
  ApplyPenalties(l.data(), h, /*repeat=*/2.0f, /*frequency=*/0.5f, /*presence=*/0.25f);
  EXPECT_EQ(l[0], 2.0f / 2 - 2 * 0.5f - 0.25f);   // positive: divided; count 2
  EXPECT_EQ(l[1], -1.0f * 2 - 1 * 0.5f - 0.25f);  // negative: multiplied
  EXPECT_EQ(l[2], 0.5f / 2 - 0.5f - 0.25f);
  EXPECT_EQ(l[3], 3.0f);  // not in the window
}

TEST(SamplingStagesTest, RepeatPenaltyAppliesOncePerDistinctToken) {
  TokenHistory h(-1);
  for (int i = 0; i < 5; ++i) h.Push(0);
  std::vector<float> l = {4.0f, 4.0f};
  ApplyPenalties(l.data(), h, 2.0f, 0.0f, 0.0f);
  EXPECT_EQ(l[0], 2.0f);  // not 4 / 2^5
  EXPECT_EQ(l[1], 4.0f);
  ApplyPenalties(l.data(), h, 1.0f, 0.0f, 1.5f);  // presence ignores the count
  EXPECT_EQ(l[0], 0.5f);
  ApplyPenalties(l.data(), h, 1.0f, 0.25f, 0.0f);  // frequency scales with it
  EXPECT_EQ(l[0], 0.5f - 5 * 0.25f);
}

TEST(SamplingStagesTest, SoftmaxAndTemperature) {
  auto c = FromLogits({1.0f, 0.0f, 1000.0f});
  Softmax(c);
  EXPECT_FLOAT_EQ(c[2].p, 1.0f);  // large logits do not overflow
  c = FromLogits({1.0f, 0.0f});
  Softmax(c);
  EXPECT_NEAR(c[0].p / c[1].p, std::exp(1.0), 1e-5);
  ApplyTemperature(c, 2.0f);  // flattens: ratio exp(1/2)
  EXPECT_EQ(c[0].logit, 0.5f);
  Softmax(c);
  EXPECT_NEAR(c[0].p / c[1].p, std::exp(0.5), 1e-5);
  ApplyTemperature(c, 0.25f);  // sharpens: ratio exp(2)
  Softmax(c);
  EXPECT_NEAR(c[0].p / c[1].p, std::exp(2.0), 1e-5);
}

TEST(SamplingStagesTest, TopKKeepsKMostLikelyLowestIdOnTies) {
  auto c = FromLogits({1, 3, 2, 3, 3, 0});
  TopK(c, 2);
  EXPECT_THAT(Ids(c), ElementsAre(1, 3));
  c = FromLogits({1, 3, 2, 3, 3, 0});
  TopK(c, 4);
  EXPECT_THAT(Ids(c), ElementsAre(1, 3, 4, 2));
  c = FromLogits({1, 3, 2});
  TopK(c, 0);  // off
  EXPECT_THAT(Ids(c), ElementsAre(0, 1, 2));
  TopK(c, 3);  // k >= size: unchanged
  EXPECT_THAT(Ids(c), ElementsAre(0, 1, 2));
}

TEST(SamplingStagesTest, TopKFromLogitsMatchesTopK) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> logits(500);
    for (float& l : logits) l = static_cast<float>(rng() % 40);  // many ties
    for (int i = 0; i < 30; ++i) logits[rng() % 500] = -INFINITY;
    const int k = 1 + static_cast<int>(rng() % 600);
    std::vector<Candidate> want;
    for (int i = 0; i < 500; ++i) {
      if (logits[i] > -INFINITY) want.push_back({i, logits[i], 0.0f});
    }
    TopK(want, k);
    if (static_cast<size_t>(k) >= want.size()) std::sort(want.begin(), want.end(), MoreLikely);
    std::vector<Candidate> got;
    TopKFromLogits(logits.data(), 500, k, got);
    EXPECT_EQ(Ids(got), Ids(want)) << "k=" << k;
  }
}

TEST(SamplingStagesTest, TopPKeepsSmallestSetReachingP) {
  const std::vector<float> probs = {0.1f, 0.4f, 0.2f, 0.3f};
  auto run = [&](float p) {
    auto c = FromProbs(probs);
    TopP(c, p);
    return Ids(c);
  };
  // Survivors keep their input order.
  EXPECT_THAT(run(0.35f), ElementsAre(1));           // 0.4
  EXPECT_THAT(run(0.65f), ElementsAre(1, 3));        // 0.4 + 0.3
  EXPECT_THAT(run(0.75f), ElementsAre(1, 2, 3));     // 0.4 + 0.3 + 0.2
  EXPECT_THAT(run(0.95f), ElementsAre(0, 1, 2, 3));  // 1.0
  EXPECT_THAT(run(0.05f), ElementsAre(1));           // never empty
}

TEST(SamplingStagesTest, TopPOnLargeFlatDistributionBreaksTiesById) {
  // 1000 equal logits: p = 0.001 each, ties broken by id, so top-p 0.4995 keeps exactly ids
  // 0..499 (the quickselect needs several rounds).
  std::vector<Candidate> c = FromLogits(std::vector<float>(1000, 0.25f));
  std::reverse(c.begin(), c.end());
  std::vector<Candidate> scratch;
  TopP(c, 0.4995f, &scratch);
  ASSERT_EQ(c.size(), 500u);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(c[i].id, 499 - i);  // input order
}

TEST(SamplingStagesTest, TopPMatchesFullSortOnRandomLogits) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> logits(3000);
    for (float& l : logits) l = static_cast<float>(rng() % 10000) / 1000.0f;
    const float p = 0.05f + 0.045f * trial;
    // Oracle: full sort, then the shortest prefix with cumulative mass >= p.
    auto ref = FromLogits(logits);
    Softmax(ref);
    std::sort(ref.begin(), ref.end(), MoreLikely);
    double cum = 0;
    size_t keep = 0;
    while (keep < ref.size() && cum < p) cum += ref[keep++].p;
    ref.resize(keep);
    auto c = FromLogits(logits);
    TopP(c, p);
    std::vector<int32_t> got = Ids(c), want = Ids(ref);
    EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));  // input order
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want) << "p=" << p;
  }
}

TEST(SamplingStagesTest, MinPThresholdIsRelativeToTheBest) {
  const std::vector<float> probs = {0.15f, 0.5f, 0.1f, 0.25f};  // ratios to the best: .3 1 .2 .5
  auto run = [&](float min_p) {
    auto c = FromProbs(probs);
    MinP(c, min_p);
    return Ids(c);
  };
  EXPECT_THAT(run(0.19f), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(run(0.21f), ElementsAre(0, 1, 3));  // order is kept
  EXPECT_THAT(run(0.31f), ElementsAre(1, 3));
  EXPECT_THAT(run(0.51f), ElementsAre(1));
  // Exactly at the threshold is kept: ratio exp(0) == 1 >= min_p == 1.
  auto c = FromLogits({2.0f, 1.0f, 2.0f});
  MinP(c, 1.0f);
  EXPECT_THAT(Ids(c), ElementsAre(0, 2));
}

TEST(SamplingStagesTest, TypicalPKeepsTokensClosestToTheEntropy) {
  // p = 1/2 1/4 1/8 1/8: entropy H = 1.75 bits; -log2 p = 1 2 3 3, so the distances are
  // .75 .25 1.25 1.25 and the typicality order is 1, 0, 2, 3 (cumulative .25 .75 .875 1).
  const std::vector<float> probs = {0.5f, 0.25f, 0.125f, 0.125f};
  auto run = [&](float p) {
    auto c = FromProbs(probs);
    TypicalP(c, p);
    return Ids(c);
  };
  EXPECT_THAT(run(0.2f), ElementsAre(1));     // top-p 0.2 would keep token 0 instead
  EXPECT_THAT(run(0.7f), ElementsAre(0, 1));  // survivors keep their input order
  EXPECT_THAT(run(0.8f), ElementsAre(0, 1, 2));
  EXPECT_THAT(run(0.9f), ElementsAre(0, 1, 2, 3));
}

TEST(SamplingStagesTest, TypicalPMatchesFullSortOnRandomLogits) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> logits(2000);
    for (float& l : logits) l = static_cast<float>(rng() % 6000) / 1000.0f;
    const float p = 0.05f + 0.045f * trial;
    // Oracle: rank by typicality with a full sort, keep the shortest prefix with mass >= p.
    auto ref = FromLogits(logits);
    Softmax(ref);
    double h = 0;
    for (const Candidate& x : ref) h -= x.p * std::log(static_cast<double>(x.p));
    for (Candidate& x : ref) x.logit = static_cast<float>(-std::fabs(-std::log(static_cast<double>(x.p)) - h));
    std::sort(ref.begin(), ref.end(), MoreLikely);
    double cum = 0;
    size_t keep = 0;
    while (keep < ref.size() && cum < p) cum += ref[keep++].p;
    ref.resize(keep);
    std::vector<int32_t> want = Ids(ref);
    std::sort(want.begin(), want.end());
    auto c = FromLogits(logits);
    TypicalP(c, p);
    EXPECT_EQ(Ids(c), want) << "p=" << p;
  }
}

}  // namespace
}  // namespace herd
