// A fixed-bucket histogram of observations (latencies in seconds, token counts), as Prometheus
// histograms count them: bucket i counts observations v <= bounds[i] (and > bounds[i - 1]); one
// overflow bucket counts the rest (le="+Inf").
//
// Observe is lock-free (relaxed atomic adds on the bucket and the sum) and may run on any number of threads while
// others take snapshots. A snapshot's count is the sum of its buckets, so cumulative bucket counts are monotone and the
// +Inf bucket equals the count in every snapshot; only `sum` may lag the buckets by the observations in flight.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace herd {

struct HistogramSnapshot {
  std::vector<double> bounds;    // upper bounds, strictly increasing (no +Inf)
  std::vector<uint64_t> counts;  // per bucket, not cumulative; bounds.size() + 1 entries (last: overflow)
  uint64_t count = 0;            // sum of counts
  double sum = 0;                // sum of observed values

  // Observations <= bounds[i] (i < bounds.size()), or all of them for i == bounds.size().
  uint64_t Cumulative(size_t i) const;
};

class Histogram {
 public:
  // `bounds` must be strictly increasing and finite (checked).
  explicit Histogram(std::vector<double> bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // O(log buckets). NaN is ignored.
  void Observe(double value);
  HistogramSnapshot Snapshot() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1
  std::atomic<double> sum_{0.0};
};

}  // namespace herd
