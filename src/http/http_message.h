// herd's own HTTP message types. Protocol handlers (OpenAI, Anthropic, Ollama) see only these,
// never Boost.Beast types. Plain values: copying a request copies its body.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace herd {

// Header fields in arrival order. Names compare case-insensitively (RFC 9110); a name may repeat.
class Headers {
 public:
  // The first value of `name`, or nullopt. O(number of fields).
  std::optional<std::string_view> Get(std::string_view name) const;
  // The first value of `name`, or `fallback`.
  std::string GetOr(std::string_view name, std::string_view fallback) const;
  bool Has(std::string_view name) const { return Get(name).has_value(); }
  // Replaces every field called `name` by one field.
  void Set(std::string_view name, std::string_view value);
  // Appends a field (a repeated name is kept, as for Set-Cookie).
  void Add(std::string_view name, std::string_view value);
  void Remove(std::string_view name);

  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }
  size_t size() const { return fields_.size(); }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// Decodes %XX escapes; with plus_is_space also '+' (query strings). Malformed escapes are
// kept literally.
std::string PercentDecode(std::string_view s, bool plus_is_space);

struct HttpRequest {
  std::string method;  // as sent, upper case by convention: "GET", "POST", "HEAD", ...
  std::string target;  // the request target as sent: "/v1/models/x%3Ay?a=1"
  std::string path;    // target before '?', not decoded: "/v1/models/x%3Ay"
  std::string query;   // target after '?', not decoded: "a=1" (empty if none)
  int version = 11;    // 10 for HTTP/1.0, 11 for HTTP/1.1
  Headers headers;
  std::string body;
  std::string remote_address;  // "127.0.0.1:53422"

  // Filled by the Router: {name} captures (percent-decoded) and, for prefix routes, "*"
  // holding the rest of the path after the prefix.
  std::vector<std::pair<std::string, std::string>> path_params;

  // A path parameter by name ("" if absent).
  std::string PathParam(std::string_view name) const;
  // The first query parameter `name`, percent-decoded; nullopt if absent.
  std::optional<std::string> QueryParam(std::string_view name) const;
};

// A complete (non-streamed) response. The server adds Content-Length, Date and Connection;
// for HEAD requests it sends the headers only (Content-Length still the body's).
struct HttpResponse {
  int status = 200;
  Headers headers;
  std::string body;

  static HttpResponse Text(int status, std::string body);  // text/plain; charset=utf-8
  static HttpResponse Json(int status, std::string body);  // application/json
};

// "OK", "Not Found", ...; "Unknown" for codes without a standard phrase.
std::string_view StatusReason(int status);

// A generic JSON error body: {"error":{"code":413,"message":"..."}} (message JSON-escaped).
// The protocol layer replaces it with its own shapes via Router::SetErrorFormatter.
std::string GenericErrorJson(int status, std::string_view message);

// Escapes a string for inclusion inside JSON double quotes.
std::string JsonEscape(std::string_view s);

}  // namespace herd
