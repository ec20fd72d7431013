// The stages of the sampling chain (see sampler.h for the order), as free functions so each one
// can be tested on a hand-built candidate list and reproduced by another backend.
//
// The logit stages (bias, penalties) edit the full [n_vocab] logit row in place: O(#bias) and
// O(#distinct tokens in the penalty window). The candidate stages work on a list of
// (id, logit, p) and may reorder and shrink it; each keeps at least one candidate.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sampling/token_history.h"

namespace herd {

struct Candidate {
  int32_t id;
  float logit;
  float p;  // probability; valid only right after Softmax (or a stage documented to set it)
};

// Strict total order "more likely first": higher logit, then lower id. Every tie in herd's
// sampling is broken this way, so results do not depend on sort stability.
inline bool MoreLikely(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// logits[id] += bias for each pair (several pairs for one id add up). -inf bans the token.
void ApplyLogitBias(float* logits, std::span<const std::pair<int32_t, float>> bias);

// For each distinct token t in the window with count c (each token once, whatever c is):
//   repeat:    logit > 0 ? logit / repeat : logit * repeat
//   frequency: logit -= c * frequency
//   presence:  logit -= presence
void ApplyPenalties(float* logits, const TokenHistory& history, float repeat, float frequency, float presence);
// The two steps of ApplyPenalties for one token, so a device can apply them with the same bits:
// the amount subtracted for c occurrences, and the penalized logit.
inline float PenaltySubtrahend(int count, float frequency, float presence) {
  return static_cast<float>(count) * frequency + presence;
}
inline float PenalizedLogit(float l, float repeat, float subtrahend) {
  if (repeat != 1.0f) l = l > 0.0f ? l / repeat : l * repeat;
  return l - subtrahend;
}

// p = softmax(logit) over the list (max subtracted, sum in double). Order is kept. O(n) exp.
void Softmax(std::vector<Candidate>& c);

// Keeps the k most likely (MoreLikely), sorted most likely first. k <= 0 or k >= size: no change.
// O(n + k log k) via nth_element.
void TopK(std::vector<Candidate>& c, int k);

// Writes the k most likely tokens of logits[0, n) (skipping -inf and NaN) to `out`, most likely
// first: the same set and order as building all candidates and calling TopK, without building
// them. O(n) compares plus O(log k) per heap entry; used for top-k and for n_probs.
void TopKFromLogits(const float* logits, int32_t n, int k, std::vector<Candidate>& out);

// Locally typical sampling (Meier et al. 2022): with H the entropy of softmax(c), ranks tokens by
// |-log p - H| ascending (then id) and keeps the shortest prefix of that ranking whose mass is >= p.
// Survivors keep their input order; p is left as the softmax over the whole input.
// Expected O(n) (a quickselect on mass, no full sort) plus n logs.
void TypicalP(std::vector<Candidate>& c, float p, std::vector<Candidate>* scratch = nullptr);

// Nucleus: keeps the smallest set of most likely tokens (MoreLikely order) whose mass is >= p.
// Survivors keep their input order; p is left as the softmax over the whole input. Expected O(n):
// a quickselect on mass finds the least likely survivor, then one pass filters; no full sort.
// Mass sums are in double; their order is implementation-defined, which can only matter when a
// prefix's mass equals p to the last bit.
void TopP(std::vector<Candidate>& c, float p, std::vector<Candidate>* scratch = nullptr);

// Both take an optional scratch vector (resized to c.size()) to avoid allocating per call.

// Keeps tokens with p >= min_p * p_max, i.e. exp(logit - max_logit) >= min_p. Order is kept. O(n).
void MinP(std::vector<Candidate>& c, float min_p);

// logit /= t for t > 0.
void ApplyTemperature(std::vector<Candidate>& c, float t);

}  // namespace herd
