// Sampler: turns one row of logits into the next token of one sequence.
//
// The chain, in llama.cpp's default order; a stage whose parameter is neutral does not run:
//   1. logit bias         logits[id] += bias (-inf bans a token)
//   2. penalties          over the last penalty_last_n accepted tokens, each distinct token once:
//                         repeat (divide positive / multiply negative logits), then
//                         frequency (-= count * f) and presence (-= p)
//   -- logprobs are taken here: log-softmax of the logits after bias and penalties, before
//      truncation and temperature (the model's distribution as adjusted by the request) --
//   3. greedy             temperature == 0: argmax (lowest id on ties), nothing below runs, no sort
//   4. top-k              a k-heap scan of the row, then only k candidates go on (no full list)
//   5. typical-p          quickselect on mass by typicality, no full sort
//   6. top-p              quickselect on mass by likelihood, no full sort
//   7. min-p              a threshold against the best logit, no sort
//   8. temperature        logit /= temperature
//   9. softmax and draw   one uniform double from the sequence's RNG
// Ties are broken towards the lower token id everywhere (see MoreLikely).
//
// Measured at n_vocab = 128256 (one core of the dev VM, throwaway benchmark, best of 200):
// greedy 31 us; top_k 40 + top_p .95 + min_p .05 + temp .8: 128 us; temperature alone (exp over
// the whole row): 600 us; top_p .9 alone on a flat row: 2.7 ms; logprobs add one exp pass (~450 us).
//
// Determinism: the RNG is std::mt19937_64 (its output is fixed by the C++ standard) seeded with
// params.seed, and uniforms are built from its raw bits, so the same seed, parameters and logits
// give the same tokens on every platform. Every non-greedy Sample() consumes exactly one draw.
//
// A Sampler belongs to one sequence and is not thread-safe; copying one forks the sequence
// (RNG state and penalty window included).
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "base/status.h"
#include "sampling/sampling_params.h"
#include "sampling/sampling_stages.h"
#include "sampling/token_history.h"

namespace herd {

struct TokenLogprob {
  int32_t id;
  float logprob;
};

struct SampledToken {
  int32_t id = -1;
  // log p(id) in the distribution described above; NaN unless params.logprobs or n_probs > 0.
  // -inf never occurs for a sampled token unless every token was banned.
  float logprob = std::numeric_limits<float>::quiet_NaN();
  // The n_probs most likely tokens of that distribution, most likely first (lower id on ties);
  // banned tokens (-inf) are left out. The sampled token may or may not be among them.
  std::vector<TokenLogprob> top;
};

class Sampler {
 public:
  // Validates params (see ValidateSamplingParams) and resolves kRandomSeed. A token listed more
  // than once in logit_bias gets the sum of its biases; params().logit_bias holds each token once,
  // in id order.
  static Result<Sampler> Create(const SamplingParams& params, int32_t n_vocab);

  // Picks the next token from logits[0, n_vocab). The row is modified: on return it holds the
  // logits after bias and penalties. Cost: O(n_vocab) plus what the active stages need (see
  // above); no allocation after the first call unless n_probs > 0. If every token is banned the
  // result is token 0 (with logprob -inf when logprobs are requested).
  SampledToken Sample(float* logits);

  // Logprobs a device can report (FinishDeviceToken): none, or n_probs up to this many.
  static constexpr int32_t kMaxDeviceTopLogprobs = 64;
  bool LogprobsFitDevice() const;
  // Completes a token chosen on the device (by its argmax or draw, or by SampleTopCandidates /
  // the first candidate) with the logprobs the params ask for, as Sample's report computes
  // them: id_logit, the chosen id's logit in the (penalized) row; log_z, that row's
  // log-normalizer (kernels' RowLogprobStats); top, the row's most likely tokens, most likely
  // first (at least n_probs of them where the row has that many numbers).
  SampledToken FinishDeviceToken(int32_t id, float id_logit, double log_z, std::span<const Candidate> top) const;

  // Logit bias and penalties a device can apply (DeviceAdjustments): at most this many tokens
  // between the bias and the penalty window's distinct tokens, and not every token banned.
  static constexpr size_t kMaxDeviceAdjustedTokens = 1024;
  bool AdjustmentsFitDevice() const;
  // What Sample does to the row before it picks (logit bias, then penalties): one entry per token
  // it changes (ids distinct). The caller's device adjusts the row with them (kernels/draw.h
  // AdjustLogit, with params().repeat_penalty) before its argmax, top-k or draw.
  struct DeviceAdjustment {
    int32_t id;
    bool biased;  // logit += bias first
    float bias;
    bool penalized;  // then logit = PenalizedLogit(logit, params().repeat_penalty, subtrahend)
    float subtrahend;
  };
  void DeviceAdjustments(std::vector<DeviceAdjustment>* out) const;

  // Whether SampleTopCandidates can stand in for Sample: a non-greedy draw with 0 < top_k <=
  // max_k (top_k < n_vocab) and nothing that needs the whole row on the host (logit bias and
  // penalties only as AdjustmentsFitDevice, logprobs as LogprobsFitDevice).
  bool TakesTopCandidates(int32_t max_k) const;
  // Sample for such a sampler from the row's most likely tokens instead of the row: `top` holds
  // at least min(top_k, number of finite logits) of them, most likely first (MoreLikely: higher
  // logit, lower id on ties; no -inf or NaN), e.g. a device's top-k pass — taken after the
  // bias and penalties (DeviceAdjustments) when they are on. Consumes one draw and returns what Sample(row)
  // would return, bit for bit.
  SampledToken SampleTopCandidates(std::span<const Candidate> top);

  // Whether a device can draw for this sampler from the full row (Backend::DrawRows, whose
  // semantics are this class's): a non-greedy draw without top-k (top_k 0 or >= n_vocab),
  // typical-p; logit bias and penalties only as AdjustmentsFitDevice (the device applies
  // DeviceAdjustments first), logprobs as LogprobsFitDevice.
  bool TakesDeviceDraw() const;
  // What such a draw needs, consuming one draw (as Sample does): the caller's device picks the
  // token with it; Accept that token as usual.
  struct DeviceDraw {
    float temperature, top_p, min_p;
    double u;
  };
  DeviceDraw NextDeviceDraw();

  // Records a token of the sequence (prompt tokens and generated ones) in the penalty window.
  void Accept(int32_t id);
  void Accept(std::span<const int32_t> ids) {
    for (int32_t id : ids) Accept(id);
  }

  bool IsStopToken(int32_t id) const;

  const SamplingParams& params() const { return params_; }
  int32_t n_vocab() const { return n_vocab_; }
  uint64_t seed() const { return seed_; }  // the seed in use (kRandomSeed resolved)
  const TokenHistory& history() const { return history_; }

 private:
  Sampler(const SamplingParams& params, int32_t n_vocab, uint64_t seed);

  void Report(const float* logits, SampledToken* out) const;
  int32_t Draw(const float* logits);
  // Stages 5-9 on scratch_ (the candidates after top-k) with the uniform u.
  int32_t DrawFromCandidates(double u);
  double Uniform();  // in [0, 1), 53 random bits

  SamplingParams params_;
  int32_t n_vocab_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  TokenHistory history_;
  bool bias_bans_all_ = false;      // logit_bias is -inf for every token
  std::vector<Candidate> scratch_;  // candidate list reused across steps
  std::vector<Candidate> work_;     // scratch of typical-p / top-p
};

// Index of the largest value in [0, n); the lowest index on ties. NaN values are never chosen
// (an all-NaN row gives 0). O(n), no sort.
int32_t ArgMax(const float* values, int32_t n);

}  // namespace herd
