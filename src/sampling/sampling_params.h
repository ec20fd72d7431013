// Per-request sampling parameters: a plain struct (no pointers, no behaviour) so the engine can
// store it per sequence and a GPU backend can implement the same chain from the same fields.
// Neutral values switch a stage off; the chain in sampler.h runs only the stages that are on.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/status.h"

namespace herd {

// A seed of kRandomSeed asks the Sampler to draw one from std::random_device (Sampler::seed()
// reports the seed it used, so a caller can echo it back and replay the request).
inline constexpr uint64_t kRandomSeed = ~uint64_t{0};

struct SamplingParams {
  float temperature = 1.0f;        // 0 = greedy (argmax, lowest id on ties); must be >= 0
  int top_k = 0;                   // keep the k most likely tokens; 0 = off
  float top_p = 1.0f;              // nucleus: smallest set with mass >= top_p; 1 = off; (0, 1]
  float min_p = 0.0f;              // keep tokens with p >= min_p * p_max; 0 = off; [0, 1]
  float typical_p = 1.0f;          // locally typical sampling; 1 = off; (0, 1]
  float repeat_penalty = 1.0f;     // divide positive / multiply negative logits of seen tokens; 1 = off; > 0
  float presence_penalty = 0.0f;   // subtracted once from the logit of every seen token; 0 = off
  float frequency_penalty = 0.0f;  // subtracted count times from the logit of a seen token; 0 = off
  int penalty_last_n = 64;         // penalty window in tokens; -1 = whole history, 0 = penalties off
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token, added to its logit); -inf bans a token
  uint64_t seed = kRandomSeed;
  std::vector<int32_t> stop_tokens;  // tokens that end the sequence (see Sampler::IsStopToken)
  bool logprobs = false;             // report SampledToken::logprob (implied by n_probs > 0)
  int n_probs = 0;                   // also report the n most likely alternatives with their logprobs

  bool greedy() const { return temperature == 0.0f; }
  bool penalties_on() const {
    return penalty_last_n != 0 && (repeat_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f);
  }
};

// Most alternatives one step may report (bounds the per-step cost of n_probs).
inline constexpr int kMaxNProbs = 100;

// Checks every field against its range for a model with n_vocab tokens. The message names the
// field and the offending value ("top_p must be in (0, 1], got 1.5").
Status ValidateSamplingParams(const SamplingParams& params, int32_t n_vocab);

}  // namespace herd
