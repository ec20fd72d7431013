// Invariant checks: a failed HERD_CHECK is a bug in herd, never bad user input. It prints
// file:line, the condition and an optional printf-style message, then aborts.
#pragma once

namespace herd::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* cond, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
[[noreturn]] void CheckFailed(const char* file, int line, const char* cond);
}  // namespace herd::internal

#define HERD_CHECK(cond)                                                   \
  do {                                                                     \
    if (__builtin_expect(!(cond), 0))                                      \
      ::herd::internal::CheckFailed(__FILE__, __LINE__, #cond);            \
  } while (0)

#define HERD_CHECK_MSG(cond, ...)                                          \
  do {                                                                     \
    if (__builtin_expect(!(cond), 0))                                      \
      ::herd::internal::CheckFailed(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)

#define HERD_CHECK_EQ(a, b) HERD_CHECK((a) == (b))
#define HERD_CHECK_LT(a, b) HERD_CHECK((a) < (b))
#define HERD_CHECK_LE(a, b) HERD_CHECK((a) <= (b))
#define HERD_CHECK_GE(a, b) HERD_CHECK((a) >= (b))

#ifdef NDEBUG
#define HERD_DCHECK(cond) ((void)0)
#else
#define HERD_DCHECK(cond) HERD_CHECK(cond)
#endif
