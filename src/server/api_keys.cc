#include "server/api_keys.h"

#include <fstream>

namespace herd::server {

Status ApiKeys::LoadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open the API key file");
  std::string line;
  int added = 0;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    Add(line.substr(start));
    ++added;
  }
  if (added == 0) return InvalidArgument(path + ": the API key file holds no key");
  return Status::Ok();
}

bool ApiKeys::Allows(const HttpRequest& request) const {
  if (keys_.empty()) return true;
  if (auto auth = request.headers.Get("authorization")) {
    constexpr std::string_view kBearer = "Bearer ";
    if (auth->size() > kBearer.size() && auth->substr(0, kBearer.size()) == kBearer &&
        keys_.count(std::string(auth->substr(kBearer.size()))) != 0) {
      return true;
    }
  }
  if (auto key = request.headers.Get("x-api-key")) return keys_.count(std::string(*key)) != 0;
  return false;
}

HttpHandler RequireKey(const ApiKeys* keys, std::function<HttpResponse(const api::ApiError&)> reject,
                       HttpHandler handler) {
  if (keys == nullptr || !keys->enabled()) return handler;
  return
      [keys, reject = std::move(reject), handler = std::move(handler)](HttpRequest& req, std::shared_ptr<Responder> r) {
        if (!keys->Allows(req)) {
          api::ApiError e{api::ErrorKind::kAuthentication, "invalid or missing API key", "", "invalid_api_key"};
          return r->Respond(reject(e));
        }
        handler(req, std::move(r));
      };
}

}  // namespace herd::server
