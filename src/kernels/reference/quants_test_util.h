// Test helpers for the quant tests: deterministic Gaussian data (own Box-Muller, so values do
// not depend on the standard library's distribution implementation).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace herd::ref::testing {

inline std::vector<float> Gaussian(int64_t n, uint32_t seed, float sigma = 1.f, float mean = 0.f) {
  std::mt19937 rng(seed);
  auto uniform = [&] { return (static_cast<double>(rng()) + 0.5) / 4294967296.0; };
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double t = 2.0 * M_PI * uniform();
    x[i] = mean + sigma * static_cast<float>(r * std::cos(t));
    if (i + 1 < n) x[i + 1] = mean + sigma * static_cast<float>(r * std::sin(t));
  }
  return x;
}

}  // namespace herd::ref::testing
