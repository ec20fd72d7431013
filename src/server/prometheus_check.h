// Test helper: a strict parser of the Prometheus text exposition format 0.0.4, as a scraper
// reads it. ParseExposition fails (returns false with a message naming the line) on anything a
// strict reader would reject or that breaks the format's rules:
// - lines: "# HELP name text", "# TYPE name counter|gauge|histogram|summary|untyped", other
//   comments, or samples "name{label="value",...} value" (no timestamps written by herd);
// - names [a-zA-Z_:][a-zA-Z0-9_:]*, label names without ':', label values with only \\, \" and
//   \n escapes, no label repeated, values that parse as floats (or +Inf, -Inf, NaN);
// - one HELP and one TYPE per family, before its samples; a family's samples are contiguous and
//   named as the family (histograms: name_bucket with an le label, name_sum, name_count);
// - histograms: per label set, le bounds strictly increasing and ending in +Inf, cumulative
//   counts monotone, the +Inf bucket equal to _count, and _sum present.
// The result maps "name{l1="v1",l2="v2"}" (labels sorted by name, values unescaped and written
// back escaped) to the value.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace herd::testing {

struct Exposition {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;  // family -> type
  std::map<std::string, std::string> help;   // family -> help (unescaped)
};

namespace prom_internal {

inline bool NameChar(char c, bool first, bool allow_colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (c == ':') return allow_colon;
  return !first && c >= '0' && c <= '9';
}

inline bool ParseName(const std::string& s, size_t* i, bool allow_colon, std::string* out) {
  const size_t start = *i;
  while (*i < s.size() && NameChar(s[*i], *i == start, allow_colon)) ++*i;
  *out = s.substr(start, *i - start);
  return !out->empty();
}

inline bool ParseValue(const std::string& text, double* v) {
  if (text == "+Inf" || text == "Inf") return *v = INFINITY, true;
  if (text == "-Inf") return *v = -INFINITY, true;
  if (text == "NaN") return *v = NAN, true;
  if (text.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && !std::isnan(*v) && !std::isinf(*v);
}

inline std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

inline std::string Key(const std::string& name, const std::map<std::string, std::string>& labels) {
  std::string k = name;
  if (labels.empty()) return k;
  k += '{';
  bool first = true;
  for (const auto& [n, v] : labels) {
    if (!first) k += ',';
    first = false;
    k += n + "=\"" + Escape(v) + "\"";
  }
  return k + "}";
}

struct HistogramSeries {
  std::vector<std::pair<double, double>> buckets;  // (le, cumulative count) in order written
  bool has_sum = false, has_count = false;
  double count = 0;
};

}  // namespace prom_internal

inline bool ParseExposition(const std::string& text, Exposition* out, std::string* error) {
  using namespace prom_internal;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  std::string family, family_type;
  std::set<std::string> finished_families, help_seen;
  std::map<std::string, HistogramSeries> hist;  // label key (without le) -> series, current family
  const auto fail = [&](const std::string& why) {
    *error = "line " + std::to_string(n) + ": " + why + ": " + line;
    return false;
  };
  const auto check_histograms = [&]() {
    for (const auto& [key, h] : hist) {
      if (h.buckets.empty() || !std::isinf(h.buckets.back().first)) {
        *error = key + ": no +Inf bucket";
        return false;
      }
      for (size_t i = 1; i < h.buckets.size(); ++i) {
        if (!(h.buckets[i].first > h.buckets[i - 1].first) || h.buckets[i].second < h.buckets[i - 1].second) {
          *error = key + ": buckets not increasing or counts not cumulative";
          return false;
        }
      }
      if (!h.has_sum || !h.has_count || h.count != h.buckets.back().second) {
        *error = key + ": _sum/_count missing or _count != +Inf bucket";
        return false;
      }
    }
    hist.clear();
    return true;
  };
  if (!text.empty() && text.back() != '\n') {
    *error = "the text does not end with a newline";
    return false;
  }
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream ls(line);
      std::string hash, kind, name;
      ls >> hash >> kind >> name;
      if (hash != "#" || (kind != "HELP" && kind != "TYPE")) continue;  // a plain comment
      size_t i = 0;
      std::string parsed;
      if (!ParseName(name, &i, true, &parsed) || i != name.size()) return fail("bad metric name");
      std::string rest;
      std::getline(ls, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      if (name != family) {
        if (!family.empty()) {
          if (!check_histograms()) return false;
          finished_families.insert(family);
        }
        if (finished_families.count(name)) return fail("family declared twice");
        family = name;
        family_type.clear();
      }
      if (kind == "HELP") {
        if (help_seen.count(name)) return fail("second HELP");
        help_seen.insert(name);
        std::string h;
        for (size_t k = 0; k < rest.size(); ++k) {
          if (rest[k] == '\\' && k + 1 < rest.size()) {
            const char e = rest[++k];
            if (e == 'n') {
              h += '\n';
            } else if (e == '\\') {
              h += '\\';
            } else {
              return fail("bad escape in HELP");
            }
          } else {
            h += rest[k];
          }
        }
        out->help[name] = h;
      } else {
        if (!family_type.empty()) return fail("second TYPE");
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary", "untyped"};
        if (!kTypes.count(rest)) return fail("unknown type");
        family_type = rest;
        out->types[name] = rest;
      }
      continue;
    }
    // A sample.
    size_t i = 0;
    std::string name;
    if (!ParseName(line, &i, true, &name)) return fail("bad sample name");
    std::map<std::string, std::string> labels;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::string label;
        if (!ParseName(line, &i, false, &label)) return fail("bad label name");
        if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') return fail("expected =\"");
        i += 2;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\') {
            if (i + 1 >= line.size()) return fail("dangling escape");
            const char e = line[i + 1];
            if (e == 'n') {
              value += '\n';
            } else if (e == '\\' || e == '"') {
              value += e;
            } else {
              return fail("bad escape in a label value");
            }
            i += 2;
          } else {
            value += line[i++];
          }
        }
        if (i >= line.size()) return fail("unterminated label value");
        ++i;  // closing quote
        if (!labels.emplace(label, value).second) return fail("label repeated");
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return fail("unterminated label set");
      ++i;  // '}'
    }
    if (i >= line.size() || line[i] != ' ') return fail("expected one space before the value");
    double value = 0;
    if (!ParseValue(line.substr(i + 1), &value)) return fail("bad value");
    // The sample must belong to the current family.
    if (family.empty() || family_type.empty()) return fail("sample before HELP/TYPE");
    std::string suffix;
    if (name != family) {
      if (name.rfind(family, 0) != 0) return fail("sample outside its family");
      suffix = name.substr(family.size());
    }
    if (family_type == "histogram") {
      std::map<std::string, std::string> series_labels = labels;
      series_labels.erase("le");
      HistogramSeries& h = hist[Key(family, series_labels)];
      if (suffix == "_bucket") {
        auto le = labels.find("le");
        double bound = 0;
        if (le == labels.end() || !ParseValue(le->second, &bound)) return fail("bucket without a valid le");
        h.buckets.emplace_back(bound, value);
      } else if (suffix == "_sum") {
        h.has_sum = true;
      } else if (suffix == "_count") {
        h.has_count = true;
        h.count = value;
      } else {
        return fail("histogram sample that is not _bucket, _sum or _count");
      }
    } else if (!suffix.empty()) {
      return fail("sample name differs from its family");
    }
    const std::string key = Key(name, labels);
    if (out->samples.count(key)) return fail("sample repeated");
    out->samples[key] = value;
  }
  return check_histograms();
}

}  // namespace herd::testing
