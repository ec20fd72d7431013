// Prometheus text exposition format, version 0.0.4 (what `GET /metrics` serves):
//
//   # HELP <name> <help, with \ and newline escaped>
//   # TYPE <name> counter|gauge|histogram
//   <name>{<label>="<value, with \, " and newline escaped>",...} <value>
//
// One HELP and one TYPE line per family, then all its samples together. Histograms write
// <name>_bucket{...,le="<bound>"} cumulatively for every bound and le="+Inf", then <name>_sum and
// <name>_count (equal to the +Inf bucket). Counter family names carry their _total suffix, as
// Prometheus' own clients write them in this format. Values: integers as integers, other
// numbers in the shortest form that reads back exactly, +Inf / -Inf / NaN.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/histogram.h"

namespace herd::server {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

std::string EscapeLabelValue(std::string_view value);  // \ -> \\, " -> \", newline -> \n
std::string EscapeHelp(std::string_view help);         // \ -> \\, newline -> \n
std::string FormatMetricValue(double value);

class PrometheusWriter {
 public:
  // Starts a family: its HELP and TYPE lines. `type`: "counter", "gauge", "histogram".
  // The name must match [a-zA-Z_:][a-zA-Z0-9_:]* (checked).
  void Family(std::string_view name, std::string_view type, std::string_view help);
  // One sample line of the current family; `name` is the family's name or it plus a suffix.
  void Sample(std::string_view name, const MetricLabels& labels, double value);
  // The _bucket, _sum and _count lines of one labelled histogram of the current family.
  void Histogram(std::string_view name, const MetricLabels& labels, const HistogramSnapshot& h);

  const std::string& text() const { return out_; }

 private:
  void Labels(const MetricLabels& labels, std::string_view le);
  std::string out_;
};

}  // namespace herd::server
