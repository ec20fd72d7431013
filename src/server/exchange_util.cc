#include "server/exchange_util.h"

#include <atomic>
#include <chrono>
#include <cstdio>

namespace herd::server {

HttpResponse ErrorResponse(int status, std::string body, api::ErrorKind kind) {
  HttpResponse r = HttpResponse::Json(status, std::move(body));
  if (api::ShouldRetry(kind)) r.headers.Set("Retry-After", std::to_string(api::kRetryAfterSeconds));
  return r;
}

std::string NewResponseId(std::string_view prefix) {
  static std::atomic<uint64_t> counter{0};
  const auto now = std::chrono::system_clock::now().time_since_epoch().count();
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%012llx%04llx", static_cast<unsigned long long>(now) & 0xffffffffffffULL,
                static_cast<unsigned long long>(counter.fetch_add(1) & 0xffff));
  return std::string(prefix) + buf;
}

}  // namespace herd::server
