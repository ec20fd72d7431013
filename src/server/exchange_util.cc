#include "server/exchange_util.h"

#include <atomic>
#include <chrono>
#include <cstdio>

#include "protocols/anthropic/messages.h"
#include "protocols/ollama/ollama_api.h"
#include "protocols/openai/chat_request.h"

namespace herd::server {

HttpResponse ErrorResponse(int status, std::string body, api::ErrorKind kind) {
  HttpResponse r = HttpResponse::Json(status, std::move(body));
  if (api::ShouldRetry(kind)) r.headers.Set("Retry-After", std::to_string(api::kRetryAfterSeconds));
  return r;
}

HttpResponse TransportErrorInApiShape(int status, std::string_view message, const HttpRequest& request) {
  api::ApiError e;
  e.message = std::string(message);
  switch (status) {
    case 401: e.kind = api::ErrorKind::kAuthentication; break;
    case 404: e.kind = api::ErrorKind::kNotFound; break;
    case 413: e.kind = api::ErrorKind::kTooLarge; break;
    case 429: e.kind = api::ErrorKind::kOverloaded; break;
    case 503: e.kind = api::ErrorKind::kUnavailable; break;
    default: e.kind = status >= 500 ? api::ErrorKind::kInternal : api::ErrorKind::kInvalidRequest; break;
  }
  const std::string_view path = request.path;
  std::string body;
  if (path.rfind("/api/", 0) == 0) {
    body = ollama::ErrorBody(e).dump();
  } else if (path.rfind("/v1/messages", 0) == 0) {
    body = anthropic::ErrorBody(e).dump();
  } else {
    body = openai::ErrorBody(e).dump();
  }
  return ErrorResponse(status, std::move(body), e.kind);
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
