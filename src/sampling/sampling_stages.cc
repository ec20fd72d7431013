#include "sampling/sampling_stages.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "base/check.h"

namespace herd {

void ApplyLogitBias(float* logits, std::span<const std::pair<int32_t, float>> bias) {
  for (const auto& [id, b] : bias) logits[id] += b;
}

void ApplyPenalties(float* logits, const TokenHistory& history, float repeat, float frequency, float presence) {
  for (const auto& [id, count] : history.counts()) {
    logits[id] = PenalizedLogit(logits[id], repeat, PenaltySubtrahend(count, frequency, presence));
  }
}

void Softmax(std::vector<Candidate>& c) {
  HERD_CHECK(!c.empty());
  float max = c[0].logit;
  for (const Candidate& x : c) max = std::max(max, x.logit);
  double sum = 0.0;
  for (Candidate& x : c) {
    x.p = std::exp(x.logit - max);
    sum += x.p;
  }
  const double inv = 1.0 / sum;
  for (Candidate& x : c) x.p = static_cast<float>(x.p * inv);
}

void TopK(std::vector<Candidate>& c, int k) {
  if (k <= 0 || static_cast<size_t>(k) >= c.size()) return;
  std::nth_element(c.begin(), c.begin() + (k - 1), c.end(), MoreLikely);
  c.resize(k);
  std::sort(c.begin(), c.end(), MoreLikely);
}

namespace {

// Reorders `work` (whose p sum to about 1) and returns its least likely member (MoreLikely order)
// of the shortest most-likely-first prefix with mass >= target; nullopt when the whole list falls
// short by rounding. Quickselect on mass: halves the range per round, so expected O(n), no sort.
std::optional<Candidate> MassThreshold(std::vector<Candidate>& work, double target) {
  size_t lo = 0, hi = work.size();
  double before = 0.0;  // mass of the candidates more likely than all of work[lo, hi)
  while (hi - lo > 64) {
    const size_t mid = lo + (hi - lo) / 2;
    std::nth_element(work.begin() + lo, work.begin() + mid, work.begin() + hi, MoreLikely);
    double upper = 0.0;  // mass of work[lo, mid]
    for (size_t i = lo; i <= mid; ++i) upper += work[i].p;
    if (before + upper >= target) {
      hi = mid + 1;
    } else {
      before += upper;
      lo = mid + 1;
    }
  }
  std::sort(work.begin() + lo, work.begin() + hi, MoreLikely);
  for (size_t i = lo; i < hi; ++i) {
    before += work[i].p;
    if (before >= target) return work[i];
  }
  return std::nullopt;
}

}  // namespace

void TopKFromLogits(const float* logits, int32_t n, int k, std::vector<Candidate>& out) {
  HERD_CHECK(k > 0);
  const size_t cap = static_cast<size_t>(k);
  out.clear();
  out.reserve(cap + 1);
  // With MoreLikely as "less", the heap's front is its least likely member. Ids arrive in
  // increasing order, so a later token that only ties the front loses the tie.
  for (int32_t i = 0; i < n; ++i) {
    const float l = logits[i];
    if (!(l > -std::numeric_limits<float>::infinity())) continue;
    if (out.size() == cap && !(l > out.front().logit)) continue;
    out.push_back({i, l, 0.0f});
    std::push_heap(out.begin(), out.end(), MoreLikely);
    if (out.size() > cap) {
      std::pop_heap(out.begin(), out.end(), MoreLikely);
      out.pop_back();
    }
  }
  std::sort_heap(out.begin(), out.end(), MoreLikely);
}

void TypicalP(std::vector<Candidate>& c, float p, std::vector<Candidate>* scratch) {
  Softmax(c);
  double entropy = 0.0;
  for (const Candidate& x : c) {
    if (x.p > 0.0f) entropy -= x.p * std::log(static_cast<double>(x.p));
  }
  // Typicality as a "logit": minus the distance of -log p from the entropy (higher = more
  // typical); zero-probability tokens are the least typical.
  auto typicality = [entropy](const Candidate& x) {
    if (x.p <= 0.0f) return -std::numeric_limits<float>::infinity();
    return static_cast<float>(-std::fabs(-std::log(static_cast<double>(x.p)) - entropy));
  };
  std::vector<Candidate> local;
  std::vector<Candidate>& work = scratch ? *scratch : local;
  work.resize(c.size());
  for (size_t i = 0; i < c.size(); ++i) work[i] = {c[i].id, typicality(c[i]), c[i].p};
  const std::optional<Candidate> t = MassThreshold(work, p);
  if (!t) return;
  std::erase_if(c, [&](const Candidate& x) { return MoreLikely(*t, {x.id, typicality(x), x.p}); });
}

void TopP(std::vector<Candidate>& c, float p, std::vector<Candidate>* scratch) {
  Softmax(c);
  std::vector<Candidate> local;
  std::vector<Candidate>& work = scratch ? *scratch : local;
  work.assign(c.begin(), c.end());
  const std::optional<Candidate> t = MassThreshold(work, p);
  if (!t) return;
  std::erase_if(c, [&](const Candidate& x) { return MoreLikely(*t, x); });
}

void MinP(std::vector<Candidate>& c, float min_p) {
  HERD_CHECK(!c.empty());
  float max = c[0].logit;
  for (const Candidate& x : c) max = std::max(max, x.logit);
  std::erase_if(c, [&](const Candidate& x) { return std::exp(x.logit - max) < min_p; });
}

void ApplyTemperature(std::vector<Candidate>& c, float t) {
  HERD_CHECK(t > 0.0f);
  for (Candidate& x : c) x.logit /= t;
}

}  // namespace herd
