// Small helpers shared by the micro-benchmarks' command lines and timers.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace herd::bench {

// Seconds on a monotonic clock.
inline double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// "a,b,,c" -> {"a", "b", "c"} (empty items dropped).
inline std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    const size_t j = std::min(s.find(',', i), s.size());
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace herd::bench
