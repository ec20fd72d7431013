#include "api/api_error.h"

namespace herd::api {

ApiError InvalidRequest(std::string message, std::string param) {
  return ApiError{ErrorKind::kInvalidRequest, std::move(message), std::move(param), {}};
}

ApiError FromStatus(const Status& status) {
  ApiError e;
  e.message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument: e.kind = ErrorKind::kInvalidRequest; break;
    case StatusCode::kOutOfRange:
      e.kind = ErrorKind::kInvalidRequest;
      e.code = "context_length_exceeded";
      break;
    case StatusCode::kUnimplemented: e.kind = ErrorKind::kInvalidRequest; break;
    case StatusCode::kNotFound: e.kind = ErrorKind::kNotFound; break;
    case StatusCode::kResourceExhausted: e.kind = ErrorKind::kOverloaded; break;
    case StatusCode::kOk:
    case StatusCode::kIo:
    case StatusCode::kInternal:
    case StatusCode::kCancelled: e.kind = ErrorKind::kInternal; break;
  }
  return e;
}

int HttpStatusFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidRequest: return 400;
    case ErrorKind::kAuthentication: return 401;
    case ErrorKind::kNotFound: return 404;
    case ErrorKind::kTooLarge: return 413;
    case ErrorKind::kUnprocessable: return 422;
    case ErrorKind::kOverloaded: return 429;
    case ErrorKind::kUnavailable: return 503;
    case ErrorKind::kInternal: return 500;
  }
  return 500;
}

}  // namespace herd::api
