// HTTP request counts by API, route pattern and status (`herd_http_requests_total`), collected
// by wrapping every dispatched request's responder (Router::SetResponderWrap).
//
// A request is counted once, when it answers: the status of Respond, or of StartStream for a
// stream (a stream that later fails still counts as its 200); a handler that drops its responder
// without answering counts as the 500 the transport then sends. Requests the router did not match
// count under route "unmatched" (their 404/405). Transport errors answered before routing (400
// unparseable, 408, 413, 431, 503 at the connection limit) are not counted. Cost: one mutex-held
// map update per request.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "http/router.h"

namespace herd::server {

// Which API a route belongs to: "anthropic" (/v1/messages...), "ollama" (/api/... and /),
// "openai" (other /v1/...), else "herd" (/health, /metrics, /v1/status, /tokenize, ...).
std::string_view ApiOfRoute(std::string_view pattern_or_path);

class HttpMetrics : public std::enable_shared_from_this<HttpMetrics> {
 public:
  struct Count {
    std::string api, route;
    int status = 0;
    int64_t count = 0;
  };

  // Installs the counting wrapper on `router`; the router keeps this object alive.
  void Attach(Router& router);
  void Record(std::string_view api, std::string_view route, int status);
  std::vector<Count> Counts() const;  // sorted by api, route, status

 private:
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, int64_t> counts_;
};

}  // namespace herd::server
