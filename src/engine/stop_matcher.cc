#include "engine/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace herd {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

const std::string& StopMatcher::matched_string() const {
  static const std::string kNone;
  return matched_ >= 0 ? stops_[static_cast<size_t>(matched_)] : kNone;
}

std::string StopMatcher::Push(std::string_view piece) {
  if (matched()) return {};
  held_.append(piece);
  if (stops_.empty()) return std::exchange(held_, {});
  // Earliest match wins; among matches at the same position, the longest.
  size_t best = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t at = held_.find(stops_[i]);
    if (at == std::string::npos) continue;
    if (at < best || (at == best && stops_[i].size() > stops_[static_cast<size_t>(matched_)].size())) {
      best = at;
      matched_ = static_cast<int>(i);
    }
  }
  if (matched()) {
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }
  // Hold the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const auto& s : stops_) {
    for (size_t len = std::min(s.size() - 1, held_.size()); len > hold; --len) {
      if (std::string_view(held_).substr(held_.size() - len) == std::string_view(s).substr(0, len)) {
        hold = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}

std::string StopMatcher::Flush() { return std::exchange(held_, {}); }

}  // namespace herd
