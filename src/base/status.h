// Recoverable errors as values. A Status is OK or carries a code and a message meant for
// the user ("file.gguf: tensor 'x' extends past the end of the file"). Result<T> holds a
// value or a non-OK Status. No exception crosses a library boundary in herd.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace herd {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad user input (request, flag, file contents)
  kNotFound,         // file / model / key missing
  kOutOfRange,       // a size or index past a limit (context length, file bounds)
  kUnimplemented,    // a valid feature herd does not support (yet)
  kResourceExhausted,// queue full, out of memory budget
  kIo,               // the operating system said no
  kInternal,         // a bug; should not happen
  kCancelled,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Prefixes the message with context: "loading x.gguf: " + message.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status InvalidArgument(std::string message);
Status NotFound(std::string message);
Status OutOfRange(std::string message);
Status Unimplemented(std::string message);
Status ResourceExhausted(std::string message);
Status IoError(std::string message);
Status Internal(std::string message);

// printf-style formatting into std::string.
std::string StrFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Internal("Result constructed from an OK status without a value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace herd

// Propagates a non-OK Status from an expression returning Status.
#define HERD_RETURN_IF_ERROR(expr)           \
  do {                                       \
    ::herd::Status herd_status_ = (expr);    \
    if (!herd_status_.ok()) return herd_status_; \
  } while (0)

#define HERD_CONCAT_INNER(a, b) a##b
#define HERD_CONCAT(a, b) HERD_CONCAT_INNER(a, b)

// HERD_ASSIGN_OR_RETURN(auto x, MakeX()); unwraps a Result<T> or returns its Status.
#define HERD_ASSIGN_OR_RETURN(lhs, expr) \
  HERD_ASSIGN_OR_RETURN_IMPL(HERD_CONCAT(herd_result_, __LINE__), lhs, expr)
#define HERD_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
