#include "sampling/sampling_params.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace herd {
namespace {

using ::testing::HasSubstr;

constexpr int32_t kVocab = 100;

// Applies `edit` to default params and returns the validation message ("" when OK).
std::string Check(const std::function<void(SamplingParams&)>& edit) {
  SamplingParams p;
  edit(p);
  Status s = ValidateSamplingParams(p, kVocab);
  if (!s.ok()) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  }
  return s.message();
}

TEST(SamplingParamsTest, DefaultsAndNeutralValuesAreValid) {
  EXPECT_TRUE(ValidateSamplingParams(SamplingParams{}, kVocab).ok());
  EXPECT_EQ(Check([](SamplingParams& p) {
              p.temperature = 0;
              p.top_k = 1000;  // larger than the vocabulary: keeps everything
              p.top_p = 1;
              p.min_p = 1;
              p.typical_p = 0.01f;
              p.penalty_last_n = -1;
              p.presence_penalty = -2;
              p.logit_bias = {{0, -INFINITY}, {99, 5}};
              p.stop_tokens = {0, 99};
              p.n_probs = kMaxNProbs;
            }),
            "");
  SamplingParams p;
  EXPECT_FALSE(p.greedy());
  EXPECT_TRUE(p.penalties_on() == false);
  p.repeat_penalty = 1.1f;
  EXPECT_TRUE(p.penalties_on());
  p.penalty_last_n = 0;
  EXPECT_FALSE(p.penalties_on());
}

TEST(SamplingParamsTest, RejectsOutOfRangeValues) {
  EXPECT_EQ(Check([](SamplingParams& p) { p.temperature = -0.5f; }),
            "temperature must be a finite number >= 0, got -0.5");
  EXPECT_THAT(Check([](SamplingParams& p) { p.temperature = NAN; }), HasSubstr("temperature"));
  EXPECT_EQ(Check([](SamplingParams& p) { p.top_k = -1; }), "top_k must be >= 0 (0 = off), got -1");
  EXPECT_EQ(Check([](SamplingParams& p) { p.top_p = 1.5f; }), "top_p must be in (0, 1], got 1.5");
  EXPECT_EQ(Check([](SamplingParams& p) { p.top_p = 0; }), "top_p must be in (0, 1], got 0");
  EXPECT_EQ(Check([](SamplingParams& p) { p.min_p = -0.25f; }), "min_p must be in [0, 1], got -0.25");
  EXPECT_EQ(Check([](SamplingParams& p) { p.typical_p = 0; }), "typical_p must be in (0, 1], got 0");
  EXPECT_EQ(Check([](SamplingParams& p) { p.repeat_penalty = 0; }),
            "repeat_penalty must be a finite number > 0, got 0");
  EXPECT_THAT(Check([](SamplingParams& p) { p.presence_penalty = INFINITY; }), HasSubstr("presence_penalty"));
  EXPECT_THAT(Check([](SamplingParams& p) { p.frequency_penalty = NAN; }), HasSubstr("frequency_penalty"));
  EXPECT_EQ(Check([](SamplingParams& p) { p.penalty_last_n = -2; }),
            "penalty_last_n must be >= -1 (-1 = whole history, 0 = off), got -2");
  EXPECT_EQ(Check([](SamplingParams& p) {
              p.logit_bias = {{100, 1}};
            }),
            "logit_bias token 100 is outside the vocabulary [0, 100)");
  EXPECT_EQ(Check([](SamplingParams& p) {
              p.logit_bias = {{-1, 1}};
            }),
            "logit_bias token -1 is outside the vocabulary [0, 100)");
  EXPECT_EQ(Check([](SamplingParams& p) {
              p.logit_bias = {{3, INFINITY}};
            }),
            "logit_bias for token 3 must be finite or -inf, got inf");
  EXPECT_EQ(Check([](SamplingParams& p) {
              p.stop_tokens = {5, 100};
            }),
            "stop token 100 is outside the vocabulary [0, 100)");
  EXPECT_EQ(Check([](SamplingParams& p) { p.n_probs = -1; }), "n_probs must be in [0, 100], got -1");
  EXPECT_EQ(Check([](SamplingParams& p) { p.n_probs = kMaxNProbs + 1; }), "n_probs must be in [0, 100], got 101");
  EXPECT_EQ(ValidateSamplingParams(SamplingParams{}, 0).message(), "vocabulary size must be positive, got 0");
}

}  // namespace
}  // namespace herd
