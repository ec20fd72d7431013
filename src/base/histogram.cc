#include "base/histogram.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace herd {

uint64_t HistogramSnapshot::Cumulative(size_t i) const {
  uint64_t total = 0;
  for (size_t b = 0; b <= i && b < counts.size(); ++b) total += counts[b];
  return total;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    HERD_CHECK_MSG(std::isfinite(bounds_[i]), "histogram bounds must be finite");
    HERD_CHECK_MSG(i == 0 || bounds_[i - 1] < bounds_[i], "histogram bounds must increase strictly");
  }
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  // The first bound >= value: le is inclusive.
  const size_t b = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  counts_[b].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot s;
  s.bounds = bounds_;
  s.counts.resize(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    s.counts[i] = counts_[i].load(std::memory_order_relaxed);
    s.count += s.counts[i];
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace herd
