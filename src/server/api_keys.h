// Optional API keys (`herd serve --api-key K` / `--api-key-file F`): a request must carry one of
// them as `Authorization: Bearer K` or `x-api-key: K` (Anthropic's header); otherwise it gets a
// 401 in the API's own error shape. No keys configured: every request is allowed.
#pragma once

#include <functional>
#include <string>
#include <unordered_set>

#include "api/api_error.h"
#include "base/status.h"
#include "http/router.h"

namespace herd::server {

class ApiKeys {
 public:
  void Add(std::string key) { keys_.insert(std::move(key)); }
  // One key per line; blank lines and lines starting with '#' are skipped. Errors name the file.
  Status LoadFile(const std::string& path);
  bool enabled() const { return !keys_.empty(); }
  bool Allows(const HttpRequest& request) const;

 private:
  std::unordered_set<std::string> keys_;
};

// `handler` behind the key check; `reject` renders the 401 in the API's shape.
HttpHandler RequireKey(const ApiKeys* keys, std::function<HttpResponse(const api::ApiError&)> reject,
                       HttpHandler handler);

}  // namespace herd::server
