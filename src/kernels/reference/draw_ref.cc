#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/draw.h"

namespace herd::ref {
namespace {

uint32_t KeyOf(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return DrawKey(bits);
}

}  // namespace

int32_t DrawRow(const float* x, int64_t n, const RowDraw& d) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  // Pass 1: the largest number m, the first index holding the largest non-NaN value (ArgMaxRows:
  // -inf counts there), how many entries are numbers (> -inf: what the Sampler draws from).
  float m = neg_inf;
  int64_t arg = -1, count = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] == x[i] && (arg < 0 || x[i] > x[arg])) arg = i;
    if (x[i] > neg_inf) {
      ++count;
      m = x[i] > m ? x[i] : m;
    }
  }
  if (d.temperature <= 0.0f) return static_cast<int32_t>(arg);
  if (count == 0) return -1;
  if (count == 1) return static_cast<int32_t>(arg);

  // Nucleus: the shortest "more likely first" prefix with mass >= top_p, found as its last
  // member's key theta (radix select on DrawKey, 8 bits a pass, masses in fixed point) and,
  // where several entries share theta, the last id of theirs it takes (tie_last).
  bool cut = false;
  uint32_t theta = 0;
  int64_t tie_last = n;
  if (d.top_p < 1.0f) {
    double s1 = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      if (x[i] > neg_inf) s1 += static_cast<double>(std::exp(x[i] - m));
    }
    const double inv1 = 1.0 / s1;
    const uint64_t target = DrawFixed(d.top_p);
    uint32_t prefix = 0;
    uint64_t above = 0;  // mass of the entries more likely than the current range
    for (int shift = 24; shift >= 0; shift -= 8) {
      uint64_t mass[256] = {};
      uint32_t cnt[256] = {};
      const uint32_t hi = shift == 24 ? 0u : ~((1u << (shift + 8)) - 1u);
      for (int64_t i = 0; i < n; ++i) {
        if (!(x[i] > neg_inf)) continue;
        const uint32_t k = KeyOf(x[i]);
        if ((k & hi) != prefix) continue;
        const uint32_t b = (k >> shift) & 255u;
        mass[b] += DrawShare(std::exp(x[i] - m), inv1);
        ++cnt[b];
      }
      const int chosen = NucleusBin(mass, target, &above);
      if (chosen < 0) break;  // the whole row falls short by rounding: no cut (as the Sampler)
      prefix |= static_cast<uint32_t>(chosen) << shift;
      if (shift == 0) {
        cut = true;
        theta = prefix;
        // Entries at theta share one probability: the first j of them (id order) complete the mass.
        const uint64_t j = NucleusTiesTaken(mass[chosen], cnt[chosen], target, above);
        if (j < cnt[chosen]) {
          uint64_t seen = 0;
          for (int64_t i = 0; i < n; ++i) {
            if (x[i] > neg_inf && KeyOf(x[i]) == theta && ++seen == j) {
              tie_last = i;
              break;
            }
          }
        }
      }
    }
  }
  auto kept = [&](int64_t i) {
    if (!(x[i] > neg_inf)) return false;
    if (cut) {
      const uint32_t k = KeyOf(x[i]);
      if (k < theta || (k == theta && i > tie_last)) return false;
    }
    return d.min_p <= 0.0f || std::exp(x[i] - m) >= d.min_p;
  };

  // Temperature, then the inverse CDF in id order.
  const float t = d.temperature;
  const float mt = t != 1.0f ? m / t : m;
  auto weight = [&](int64_t i) { return std::exp((t != 1.0f ? x[i] / t : x[i]) - mt); };
  double s2 = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    if (kept(i)) s2 += static_cast<double>(weight(i));
  }
  const double inv2 = 1.0 / s2;
  const uint64_t u = static_cast<uint64_t>(d.u * static_cast<double>(uint64_t{1} << kDrawFracBits));
  uint64_t cum = 0;
  int64_t last_positive = -1, last = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (!kept(i)) continue;
    const float p = static_cast<float>(static_cast<double>(weight(i)) * inv2);
    cum += DrawFixed(p);
    if (u < cum) return static_cast<int32_t>(i);
    last = i;
    if (p > 0.0f) last_positive = i;
  }
  // The probabilities summed to u or less by rounding: the last possible token.
  return static_cast<int32_t>(last_positive >= 0 ? last_positive : last);
}

RowLogprobStats LogprobStatsOfRow(const float* x, int64_t n, int32_t id) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  RowLogprobStats st;
  float m = neg_inf;
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;  // NaN never wins
  if (!(m > neg_inf)) {
    st.log_z = -std::numeric_limits<double>::infinity();
  } else {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      if (x[i] > neg_inf) sum += static_cast<double>(std::exp(x[i] - m));
    }
    st.log_z = static_cast<double>(m) + std::log(sum);
  }
  st.id_logit = id >= 0 && id < n ? x[id] : std::numeric_limits<float>::quiet_NaN();
  return st;
}

void PenalizeRow(float* x, const RowPenalty& p, const PenaltyEntry* entries) {
  for (int32_t e = p.begin; e < p.end; ++e) {
    float& l = x[entries[e].id];
    l = AdjustLogit(l, p.repeat, entries[e]);
  }
}

}  // namespace herd::ref
