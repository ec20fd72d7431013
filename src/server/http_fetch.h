// A blocking HTTP/1.1 GET client (Boost.Beast over Asio, TLS through OpenSSL) for the registry
// pulls: one connection per request, redirects followed (also to other hosts, as registries send
// blob downloads to a CDN), the body streamed to a callback chunk by chunk so multi-gigabyte
// blobs never sit in memory. Beast stays inside http_fetch.cc.
//
// Blocking: call it on a thread of its own (a pull's), never on an HTTP server I/O thread.
// Every network step (resolve, connect, TLS handshake, write, each read) has the timeout of
// FetchOptions; `cancelled` is polled every 100 ms and aborts the request within that time.
// https verifies the server's certificate chain against the system's trust store (plus
// `ca_file`) and its host name; there is no option to skip verification.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace herd::server {

struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;    // without brackets for IPv6 literals
  std::string port;    // explicit or the scheme's default
  std::string target;  // path and query, "/" at least
  // Errors: InvalidArgument (not an http(s) URL).
  static Result<Url> Parse(std::string_view text);
  // `location` (absolute, scheme-relative "//host/..." or absolute-path "/...") against this URL.
  Result<Url> Resolve(std::string_view location) const;
  std::string ToString() const;
  std::string HostHeader() const;  // host, with ":port" when not the scheme's default
};

struct FetchOptions {
  std::vector<std::pair<std::string, std::string>> headers;  // extra request headers
  int max_redirects = 5;
  std::chrono::milliseconds timeout{30000};  // per network step
  std::string ca_file;                       // extra trusted certificates (PEM); empty: system only
  std::function<bool()> cancelled;           // polled; true aborts with kCancelled
};

struct FetchResponse {
  int status = 0;
  std::string url;  // after redirects
  std::string content_type;
  std::optional<uint64_t> content_length;
  std::string www_authenticate;
  // The body when no sink took it (non-2xx answers always), cut at `max_body` bytes.
  std::string body;
};

// GETs `url`. For a 2xx answer with `sink`, the body goes to sink(chunk) (sink returning false
// aborts: kCancelled); otherwise it is collected into FetchResponse::body (at most `max_body`
// bytes; more is an error for 2xx answers, cut silently for others). A non-2xx status is not an
// error: the caller reads FetchResponse::status. Errors: InvalidArgument (bad URL, too many
// redirects), IoError (DNS, connect, TLS, protocol, timeout; the message names the URL),
// kCancelled.
Result<FetchResponse> HttpGet(const std::string& url, const FetchOptions& options,
                              const std::function<bool(std::string_view chunk)>& sink = {}, size_t max_body = 8u << 20);

}  // namespace herd::server
