// Errors as the APIs report them, protocol-neutral. Every recoverable herd error (a Status) maps
// to an HTTP status in exactly one place (HttpStatusFor); each protocol then renders ApiError in
// its own shape (OpenAI {"error": {...}}, Anthropic {"type": "error", ...}, Ollama {"error": "..."}).
#pragma once

#include <string>

#include "base/status.h"

namespace herd::api {

enum class ErrorKind {
  kInvalidRequest,  // 400: malformed JSON, a bad or unsupported parameter
  kAuthentication,  // 401
  kNotFound,        // 404: unknown model or route
  kTooLarge,        // 413
  kUnprocessable,   // 422
  kOverloaded,      // 429 (Anthropic: 529): queue full
  kUnavailable,     // 503 (Anthropic: 529): a model cannot be loaded now (memory held by busy models)
  kInternal,        // 500
};

struct ApiError {
  ErrorKind kind = ErrorKind::kInvalidRequest;
  std::string message;
  std::string param;  // the offending field ("messages[1].role"), empty when none
  std::string code;   // machine-readable detail, e.g. "context_length_exceeded"
};

ApiError InvalidRequest(std::string message, std::string param = {});

// Request parsers report the first invalid field through this: `return v.Fail("...", "param");`.
struct Validator {
  ApiError* error;
  bool Fail(std::string message, std::string param = {}) const {
    *error = InvalidRequest(std::move(message), std::move(param));
    return false;
  }
};

// The one mapping from herd's StatusCode to an API error kind.
ApiError FromStatus(const Status& status);

// Default HTTP status of a kind (protocols may override kOverloaded: Anthropic uses 529).
// Responses of kinds kOverloaded and kUnavailable carry `Retry-After: kRetryAfterSeconds`.
int HttpStatusFor(ErrorKind kind);
inline constexpr int kRetryAfterSeconds = 1;
inline bool ShouldRetry(ErrorKind kind) { return kind == ErrorKind::kOverloaded || kind == ErrorKind::kUnavailable; }

}  // namespace herd::api
