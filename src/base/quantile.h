// Quantiles of measured samples (latency percentiles in the benchmarks).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "base/check.h"

namespace herd {

// The q-quantile (q in [0, 1]) of `sorted` (ascending, not empty), interpolated linearly between
// the two nearest ranks (numpy's default "linear" method): q = 0 is the minimum, q = 1 the maximum.
inline double Quantile(const std::vector<double>& sorted, double q) {
  HERD_CHECK(!sorted.empty());
  const double idx = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(idx);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (idx - static_cast<double>(lo));
}

}  // namespace herd
