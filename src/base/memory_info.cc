#include "base/memory_info.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace herd {

size_t AvailableMemoryBytes() {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  size_t kb = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned long long v = 0;
    if (std::sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
      kb = static_cast<size_t>(v);
      break;
    }
  }
  std::fclose(f);
  return kb * 1024;
}

Result<size_t> ParseMemoryBudget(std::string_view spec, size_t available) {
  const std::string s(spec);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !(v > 0)) {
    return InvalidArgument("memory budget '" + s + "': expected a positive size (e.g. 4GiB) or a fraction (e.g. 0.5)");
  }
  std::string unit(end);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.empty() && v <= 1.0) {
    if (available == 0) return InvalidArgument("memory budget '" + s + "': available memory is unknown");
    return static_cast<size_t>(v * static_cast<double>(available));
  }
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  const bool binary = !unit.empty() && unit.back() == 'I';
  if (binary) unit.pop_back();
  const double base = binary ? 1024.0 : 1000.0;
  double mult = 1;
  if (unit == "K") {
    mult = base;
  } else if (unit == "M") {
    mult = base * base;
  } else if (unit == "G") {
    mult = base * base * base;
  } else if (unit == "T") {
    mult = base * base * base * base;
  } else if (!unit.empty() || binary) {
    return InvalidArgument("memory budget '" + s + "': unknown unit (use K, M, G, T with optional i and B)");
  }
  return static_cast<size_t>(v * mult);
}

}  // namespace herd
