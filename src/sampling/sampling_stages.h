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

// p = softmax(logit) over the list (max subtracted, sum in double). Order is kept. O(n) exp.
void Softmax(std::vector<Candidate>& c);

// Keeps the k most likely (MoreLikely), sorted most likely first. k <= 0 or k >= size: no change.
// O(n + k log k) via nth_element.
void TopK(std::vector<Candidate>& c, int k);

// Locally typical sampling (Meier et al. 2022): with H the entropy of softmax(c), orders tokens by
// |-log p - H| ascending (then id) and keeps the shortest prefix whose mass is >= p. Sets p
// (renormalized over the whole input, not the kept set). O(n log n).
void TypicalP(std::vector<Candidate>& c, float p);

// Nucleus: keeps the smallest most-likely-first prefix whose probability mass is >= p; the result
// is sorted most likely first and p holds the probabilities over the input list. Sorts lazily
// (partial sorts of 64, 512, ... elements), so a peaked distribution costs O(n), not O(n log n).
void TopP(std::vector<Candidate>& c, float p);

// Keeps tokens with p >= min_p * p_max, i.e. exp(logit - max_logit) >= min_p. Order is kept. O(n).
void MinP(std::vector<Candidate>& c, float min_p);

// logit /= t for t > 0.
void ApplyTemperature(std::vector<Candidate>& c, float t);

}  // namespace herd
