#include "server/prometheus_text.h"

#include <charconv>
#include <cmath>

#include "base/check.h"

namespace herd::server {
namespace {

bool ValidName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  HERD_CHECK(ec == std::errc());
  return std::string(buf, end);
}

void PrometheusWriter::Family(std::string_view name, std::string_view type, std::string_view help) {
  HERD_CHECK_MSG(ValidName(name), "invalid metric name");
  HERD_CHECK(type == "counter" || type == "gauge" || type == "histogram");
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += EscapeHelp(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PrometheusWriter::Labels(const MetricLabels& labels, std::string_view le) {
  if (labels.empty() && le.empty()) return;
  out_ += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    HERD_CHECK_MSG(ValidName(k) && k.find(':') == std::string::npos, "invalid label name");
    if (!first) out_ += ',';
    first = false;
    out_ += k;
    out_ += "=\"";
    out_ += EscapeLabelValue(v);
    out_ += '"';
  }
  if (!le.empty()) {
    if (!first) out_ += ',';
    out_ += "le=\"";
    out_ += le;
    out_ += '"';
  }
  out_ += '}';
}

void PrometheusWriter::Sample(std::string_view name, const MetricLabels& labels, double value) {
  HERD_CHECK_MSG(ValidName(name), "invalid metric name");
  out_ += name;
  Labels(labels, {});
  out_ += ' ';
  out_ += FormatMetricValue(value);
  out_ += '\n';
}

void PrometheusWriter::Histogram(std::string_view name, const MetricLabels& labels, const HistogramSnapshot& h) {
  const std::string bucket = std::string(name) + "_bucket";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= h.bounds.size(); ++i) {
    cumulative += h.counts[i];
    out_ += bucket;
    Labels(labels, i < h.bounds.size() ? FormatMetricValue(h.bounds[i]) : "+Inf");
    out_ += ' ';
    out_ += std::to_string(cumulative);
    out_ += '\n';
  }
  Sample(std::string(name) + "_sum", labels, h.sum);
  Sample(std::string(name) + "_count", labels, static_cast<double>(h.count));
}

}  // namespace herd::server
