// Minimal leveled logging to stderr: HERD_LOG(kInfo, "loaded %s in %.1f ms", path, ms).
// The level comes from HERD_LOG_LEVEL (debug|info|warn|error) or SetLogLevel().
#pragma once

namespace herd {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void LogMessage(LogLevel level, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace herd

#define HERD_LOG(level, ...)                                                  \
  do {                                                                        \
    if (::herd::LogLevel::level >= ::herd::GetLogLevel())                     \
      ::herd::LogMessage(::herd::LogLevel::level, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
