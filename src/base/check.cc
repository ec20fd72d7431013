#include "base/check.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace herd::internal {

void CheckFailed(const char* file, int line, const char* cond, const char* fmt, ...) {
  std::fprintf(stderr, "%s:%d: CHECK failed: %s: ", file, line, cond);
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::abort();
}

void CheckFailed(const char* file, int line, const char* cond) {
  std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, cond);
  std::fflush(stderr);
  std::abort();
}

}  // namespace herd::internal
