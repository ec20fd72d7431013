#include "sampling/sampling_stages.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"

namespace herd {

void ApplyLogitBias(float* logits, std::span<const std::pair<int32_t, float>> bias) {
  for (const auto& [id, b] : bias) logits[id] += b;
}

void ApplyPenalties(float* logits, const TokenHistory& history, float repeat, float frequency, float presence) {
  for (const auto& [id, count] : history.counts()) {
    float& l = logits[id];
    if (repeat != 1.0f) l = l > 0.0f ? l / repeat : l * repeat;
    l -= static_cast<float>(count) * frequency + presence;
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

void TypicalP(std::vector<Candidate>& c, float p) {
  Softmax(c);
  double entropy = 0.0;
  for (const Candidate& x : c) {
    if (x.p > 0.0f) entropy -= x.p * std::log(static_cast<double>(x.p));
  }
  // (distance from the entropy, index); zero-probability tokens are the least typical.
  std::vector<std::pair<double, size_t>> order(c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    double d = c[i].p > 0.0f ? std::fabs(-std::log(static_cast<double>(c[i].p)) - entropy)
                             : std::numeric_limits<double>::infinity();
    order[i] = {d, i};
  }
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    return a.first < b.first || (a.first == b.first && c[a.second].id < c[b.second].id);
  });
  std::vector<Candidate> kept;
  double cum = 0.0;
  for (const auto& [d, i] : order) {
    kept.push_back(c[i]);
    cum += c[i].p;
    if (cum >= p) break;
  }
  c = std::move(kept);
}

void TopP(std::vector<Candidate>& c, float p) {
  Softmax(c);
  const size_t n = c.size();
  size_t done = 0;  // c[0, done) is sorted and holds the most likely tokens
  size_t next = std::min<size_t>(n, 64);
  double cum = 0.0;
  for (;;) {
    // Everything in [done, n) is less likely than c[0, done), so extending the sorted prefix
    // only needs a partial sort of the remainder.
    std::partial_sort(c.begin() + done, c.begin() + next, c.end(), MoreLikely);
    for (size_t i = done; i < next; ++i) {
      cum += c[i].p;
      if (cum >= p) {
        c.resize(i + 1);
        return;
      }
    }
    if (next == n) return;  // mass fell short of p by rounding: keep everything
    done = next;
    next = std::min(n, next * 8);
  }
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
