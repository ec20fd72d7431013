#include "sampling/sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <set>

namespace herd {
namespace {

using ::testing::ElementsAre;

Sampler Make(const SamplingParams& p, int32_t n_vocab) {
  Result<Sampler> s = Sampler::Create(p, n_vocab);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

SamplingParams Seeded(uint64_t seed) {
  SamplingParams p;
  p.seed = seed;
  return p;
}

// Samples from a copy of `logits` (Sample modifies the row).
int32_t SampleCopy(Sampler& s, std::vector<float> logits) { return s.Sample(logits.data()).id; }

std::vector<float> RandomLogits(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> l(n);
  for (float& x : l) x = static_cast<float>(rng() % 8000) / 1000.0f - 4.0f;
  return l;
}

TEST(SamplerTest, CreateRejectsInvalidParams) {
  SamplingParams p;
  p.top_p = 2;
  Result<Sampler> s = Sampler::Create(p, 10);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "top_p must be in (0, 1], got 2");
}

TEST(SamplerTest, GreedyPicksArgmaxLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0;
  Sampler s = Make(p, 5);
  EXPECT_EQ(SampleCopy(s, {1, 5, 3, 5, -2}), 1);
  EXPECT_EQ(SampleCopy(s, {-3, -1, -1, -2, -1}), 1);
  EXPECT_EQ(SampleCopy(s, {0, 0, 0, 0, 0}), 0);
  EXPECT_EQ(SampleCopy(s, {0, 0, 0, 0, 9}), 4);
  EXPECT_EQ(ArgMax(std::vector<float>{NAN, 1, 2}.data(), 3), 2);
}

TEST(SamplerTest, TopK1EqualsGreedy) {
  SamplingParams g;
  g.temperature = 0;
  SamplingParams k = Seeded(123);
  k.top_k = 1;
  k.temperature = 1.7f;
  Sampler greedy = Make(g, 200), topk = Make(k, 200);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> l = RandomLogits(200, i);
    l[i] = l[i + 100] = 4.5f;  // a tie for the maximum, broken towards the lower id
    EXPECT_EQ(SampleCopy(topk, l), SampleCopy(greedy, l));
    EXPECT_EQ(SampleCopy(greedy, l), i);
  }
}

// SampleTopCandidates (the device top-k path) against Sample on the whole row: the same tokens,
// draw for draw, for rows with ties, -inf and NaN, and the truncation stages after top-k.
TEST(SamplerTest, TopCandidatesGiveTheSameTokensAsTheRow) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  struct Case {
    int top_k;
    float top_p, min_p, typical_p, temperature;
  };
  const Case cases[] = {{40, 0.9f, 0.0f, 1.0f, 0.8f},
                        {1, 1.0f, 0.0f, 1.0f, 1.0f},
                        {64, 0.95f, 0.05f, 1.0f, 1.3f},
                        {7, 1.0f, 0.0f, 0.7f, 0.5f},
                        {20, 0.5f, 0.2f, 1.0f, 2.0f}};
  for (const Case& c : cases) {
    SamplingParams p = Seeded(77 + c.top_k);
    p.top_k = c.top_k, p.top_p = c.top_p, p.min_p = c.min_p, p.typical_p = c.typical_p;
    p.temperature = c.temperature;
    Sampler row = Make(p, 500), top = Make(p, 500);
    ASSERT_TRUE(top.TakesTopCandidates(64));
    EXPECT_FALSE(top.TakesTopCandidates(c.top_k - 1));
    for (int i = 0; i < 200; ++i) {
      std::vector<float> l = RandomLogits(500, 1000 + i);  // steps of 0.001: many ties
      if (i % 3 == 0) l[i] = nan, l[i + 1] = -inf;
      if (i % 50 == 7) std::fill(l.begin(), l.end(), -inf);  // every token banned
      std::vector<Candidate> best;
      TopKFromLogits(l.data(), 500, 64, best);  // what a device returns for K = 64
      EXPECT_EQ(top.SampleTopCandidates(best).id, SampleCopy(row, l)) << "k " << c.top_k << " step " << i;
    }
  }
  SamplingParams g;
  g.temperature = 0;
  EXPECT_FALSE(Make(g, 500).TakesTopCandidates(64));  // greedy: the argmax path
  SamplingParams pen = Seeded(1);
  pen.top_k = 40;
  pen.repeat_penalty = 1.1f;
  pen.penalty_last_n = -1;  // the whole history
  Sampler penalized = Make(pen, 5000);
  EXPECT_TRUE(penalized.TakesTopCandidates(64));  // the device applies the penalties first
  for (int32_t id = 0; id <= static_cast<int32_t>(Sampler::kMaxDeviceAdjustedTokens); ++id) penalized.Accept(id);
  EXPECT_FALSE(penalized.TakesTopCandidates(64));  // a window too wide for the device
  SamplingParams lp = Seeded(1);
  lp.top_k = 40;
  lp.logprobs = true;
  lp.n_probs = 20;
  EXPECT_TRUE(Make(lp, 500).TakesTopCandidates(64));  // reported from the device (FinishDeviceToken)
  lp.n_probs = Sampler::kMaxDeviceTopLogprobs + 1;
  EXPECT_FALSE(Make(lp, 500).TakesTopCandidates(64));
  SamplingParams bias = Seeded(1);
  bias.top_k = 40;
  bias.logit_bias = {{3, 1.0f}};
  EXPECT_TRUE(Make(bias, 500).TakesTopCandidates(64));  // the device applies the bias first
  bias.logit_bias.clear();
  for (int32_t id = 0; id < 500; ++id) bias.logit_bias.push_back({id, -INFINITY});
  EXPECT_FALSE(Make(bias, 500).TakesTopCandidates(64));  // every token banned: the host's token 0
}

TEST(SamplerTest, SameSeedSameTokensDifferentSeedDifferentTokens) {
  SamplingParams p = Seeded(42);
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.01f;
  p.temperature = 0.8f;
  auto run = [&](uint64_t seed) {
    p.seed = seed;
    Sampler s = Make(p, 1000);
    std::vector<int32_t> out;
    for (int i = 0; i < 100; ++i) out.push_back(SampleCopy(s, RandomLogits(1000, 5 + i % 3)));
    return out;
  };
  const std::vector<int32_t> a = run(42);
  EXPECT_EQ(a, run(42));
  EXPECT_NE(a, run(43));
  EXPECT_GT(std::set<int32_t>(a.begin(), a.end()).size(), 5u);  // it does sample, not argmax
  // A copy forks the sequence: both continue identically.
  Sampler s = Make(p, 1000);
  SampleCopy(s, RandomLogits(1000, 1));
  Sampler t = s;
  for (int i = 0; i < 20; ++i) EXPECT_EQ(SampleCopy(s, RandomLogits(1000, i)), SampleCopy(t, RandomLogits(1000, i)));
}

TEST(SamplerTest, RandomSeedIsResolvedAndReplayable) {
  Sampler s = Make(SamplingParams{}, 100);  // default seed is kRandomSeed
  EXPECT_NE(s.seed(), kRandomSeed);
  Sampler replay = Make(Seeded(s.seed()), 100);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(SampleCopy(s, RandomLogits(100, i)), SampleCopy(replay, RandomLogits(100, i)));
}

// Pearson's chi-square of observed counts against expected probabilities.
double ChiSquare(const std::vector<int>& counts, const std::vector<double>& probs, int n) {
  double chi2 = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    double e = probs[i] * n;
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi2;
}

std::vector<double> SoftmaxRef(const std::vector<float>& l, double t) {
  std::vector<double> p(l.size());
  double sum = 0;
  for (size_t i = 0; i < l.size(); ++i) sum += p[i] = std::exp(l[i] / t);
  for (double& x : p) x /= sum;
  return p;
}

TEST(SamplerTest, FrequenciesMatchSoftmaxAtSeveralTemperatures) {
  const std::vector<float> logits = {0.0f, 0.5f, 1.0f, -1.0f, 2.0f, 0.3f, -0.5f, 1.5f};
  const int n = 200000;
  for (float t : {1.0f, 0.5f, 2.0f}) {
    SamplingParams p = Seeded(2024);
    p.temperature = t;
    Sampler s = Make(p, 8);
    std::vector<int> counts(8);
    for (int i = 0; i < n; ++i) ++counts[SampleCopy(s, logits)];
    // 7 degrees of freedom: P(chi2 > 24.32) = 0.001 for a correct sampler. The seed is fixed, so
    // the test is deterministic; a sampler off by a few percent on any token scores in the hundreds.
    EXPECT_LT(ChiSquare(counts, SoftmaxRef(logits, t), n), 24.32) << "temperature " << t;
    // Against the distribution of a different temperature the same counts fail clearly.
    EXPECT_GT(ChiSquare(counts, SoftmaxRef(logits, t * 1.25), n), 100.0) << "temperature " << t;
  }
}

TEST(SamplerTest, TruncationLimitsWhatIsSampled) {
  // p = .1 .4 .2 .3: top-p .65 keeps {1, 3}, with frequencies .4/.7 and .3/.7.
  const std::vector<float> probs = {0.1f, 0.4f, 0.2f, 0.3f};
  std::vector<float> logits;
  for (float q : probs) logits.push_back(std::log(q));
  SamplingParams p = Seeded(9);
  p.top_p = 0.65f;
  Sampler s = Make(p, 4);
  const int n = 70000;
  std::vector<int> counts(4);
  for (int i = 0; i < n; ++i) ++counts[SampleCopy(s, logits)];
  EXPECT_EQ(counts[0], 0);
  EXPECT_EQ(counts[2], 0);
  EXPECT_LT(ChiSquare(counts, {1e-12, 4.0 / 7, 1e-12, 3.0 / 7}, n), 10.83);  // 1 dof, 0.001

  SamplingParams m = Seeded(9);
  m.min_p = 0.6f;  // ratios .25 1 .5 .75: keeps {1, 3}
  m.top_k = 3;     // {1, 3, 2}
  Sampler sm = Make(m, 4);
  std::set<int32_t> seen;
  for (int i = 0; i < 2000; ++i) seen.insert(SampleCopy(sm, logits));
  EXPECT_THAT(seen, ElementsAre(1, 3));

  SamplingParams ty = Seeded(9);
  ty.typical_p = 0.2f;  // p = 1/2 1/4 1/8 1/8 keeps only the most typical token, 1
  Sampler st = Make(ty, 4);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(SampleCopy(st, {std::log(0.5f), std::log(0.25f), std::log(0.125f), std::log(0.125f)}), 1);
}

TEST(SamplerTest, LogitBiasBansAndBoosts) {
  SamplingParams p;
  p.temperature = 0;
  p.logit_bias = {{2, -INFINITY}, {0, 1.5f}};
  Sampler s = Make(p, 3);
  std::vector<float> l = {0.0f, 1.0f, 9.0f};
  EXPECT_EQ(s.Sample(l.data()).id, 0);                 // 2 banned, 0 boosted to 1.5 > 1
  EXPECT_THAT(l, ElementsAre(1.5f, 1.0f, -INFINITY));  // the row holds the adjusted logits

  SamplingParams q = Seeded(5);
  q.temperature = 5;  // flat: a ban must still hold
  q.logit_bias = {{1, -INFINITY}};
  Sampler r = Make(q, 3);
  for (int i = 0; i < 1000; ++i) EXPECT_NE(SampleCopy(r, {0.0f, 0.1f, 0.0f}), 1);
  SamplingParams all = q;
  all.logit_bias = {{0, -INFINITY}, {1, -INFINITY}, {2, -INFINITY}};
  Sampler none = Make(all, 3);
  EXPECT_EQ(SampleCopy(none, {0, 0, 0}), 0);  // documented fallback
}

TEST(SamplerTest, PenaltiesUseTheAcceptedWindow) {
  SamplingParams p;
  p.temperature = 0;
  p.repeat_penalty = 2.0f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  p.penalty_last_n = 3;
  Sampler s = Make(p, 4);
  s.Accept(std::vector<int32_t>{3, 0, 0, 1});  // window: 0 0 1
  EXPECT_EQ(s.history().Count(3), 0);
  std::vector<float> l = {2.0f, -1.0f, 0.5f, 3.0f};
  EXPECT_EQ(s.Sample(l.data()).id, 3);
  EXPECT_THAT(l, ElementsAre(2.0f / 2 - 2 * 0.5f - 0.25f, -1.0f * 2 - 0.5f - 0.25f, 0.5f, 3.0f));

  // Penalties change the greedy choice: 1 was most likely but is repeated.
  SamplingParams q;
  q.temperature = 0;
  q.repeat_penalty = 1.5f;
  Sampler t = Make(q, 3);
  EXPECT_EQ(SampleCopy(t, {1.0f, 1.2f, 0.0f}), 1);
  t.Accept(1);
  EXPECT_EQ(SampleCopy(t, {1.0f, 1.2f, 0.0f}), 0);  // 1.2 / 1.5 = 0.8 < 1

  SamplingParams off = q;
  off.penalty_last_n = 0;
  Sampler u = Make(off, 3);
  u.Accept(1);
  EXPECT_EQ(SampleCopy(u, {1.0f, 1.2f, 0.0f}), 1);
}

TEST(SamplerTest, LogprobsAreOfTheAdjustedDistributionBeforeTemperatureAndTruncation) {
  SamplingParams p = Seeded(1);
  p.temperature = 0.3f;
  p.top_k = 1;
  p.n_probs = 2;
  p.logit_bias = {{0, -INFINITY}};
  Sampler s = Make(p, 4);
  std::vector<float> l = {5.0f, 1.0f, 2.0f, 3.0f};
  SampledToken t = s.Sample(l.data());
  const double log_z = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_EQ(t.id, 3);
  EXPECT_NEAR(t.logprob, 3.0 - log_z, 1e-6);
  ASSERT_EQ(t.top.size(), 2u);
  EXPECT_EQ(t.top[0].id, 3);
  EXPECT_NEAR(t.top[0].logprob, 3.0 - log_z, 1e-6);
  EXPECT_EQ(t.top[1].id, 2);
  EXPECT_NEAR(t.top[1].logprob, 2.0 - log_z, 1e-6);

  p.n_probs = 4;  // more than the unbanned tokens: banned ones are left out; ties by id
  Sampler all = Make(p, 4);
  std::vector<float> eq = {0.0f, 1.0f, 1.0f, 0.5f};
  t = all.Sample(eq.data());
  ASSERT_EQ(t.top.size(), 3u);
  EXPECT_EQ(t.top[0].id, 1);
  EXPECT_EQ(t.top[1].id, 2);
  EXPECT_EQ(t.top[2].id, 3);

  SamplingParams none;
  none.temperature = 0;
  Sampler n = Make(none, 2);
  t = n.Sample(std::vector<float>{0.0f, 1.0f}.data());
  EXPECT_TRUE(std::isnan(t.logprob));  // not requested
  EXPECT_TRUE(t.top.empty());
  none.logprobs = true;
  Sampler lp = Make(none, 2);
  t = lp.Sample(std::vector<float>{0.0f, 0.0f}.data());
  EXPECT_NEAR(t.logprob, std::log(0.5), 1e-6);
}

TEST(SamplerTest, StopTokens) {
  SamplingParams p;
  p.stop_tokens = {2, 7};
  Sampler s = Make(p, 10);
  EXPECT_TRUE(s.IsStopToken(2));
  EXPECT_TRUE(s.IsStopToken(7));
  EXPECT_FALSE(s.IsStopToken(3));
}

TEST(SamplerDeathTest, AcceptOutsideVocabularyIsABug) {
  Sampler s = Make(SamplingParams{}, 10);
  EXPECT_DEATH(s.Accept(10), "outside the vocabulary");
}

}  // namespace
}  // namespace herd
