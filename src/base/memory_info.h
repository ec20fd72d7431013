// Memory sizes for budgets: what the OS says is available, and "4GiB" / "0.5" style specs.
#pragma once

#include <cstddef>
#include <string_view>

#include "base/status.h"

namespace herd {

// MemAvailable from /proc/meminfo (bytes); 0 when unknown.
size_t AvailableMemoryBytes();

// A memory budget: "<number>[K|M|G|T][i][B]" in bytes (K = 1000, Ki = 1024), or a fraction in
// (0, 1] of `available` ("0.3"). Errors name the spec and the reason.
Result<size_t> ParseMemoryBudget(std::string_view spec, size_t available);

}  // namespace herd
