#include "server/http_fetch.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

namespace herd::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr size_t kChunk = 64 << 10;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Runs one asynchronous step on a private io_context until it completes, aborting it (by
// closing the socket) on timeout or when the caller's `cancelled` says so.
class Driver {
 public:
  explicit Driver(const FetchOptions& o) : o_(o) {}
  asio::io_context& ioc() { return ioc_; }
  bool cancelled() const { return cancelled_; }
  bool timed_out() const { return timed_out_; }

  using Done = std::function<void(ErrorCode)>;
  ErrorCode Run(const std::function<void(Done)>& start, const std::function<void()>& abort) {
    bool done = false;
    ErrorCode result;
    start([&](ErrorCode ec) {
      result = ec;
      done = true;
    });
    const auto deadline = Clock::now() + o_.timeout;
    bool aborted = false;
    ioc_.restart();
    while (!done) {
      ioc_.run_for(std::chrono::milliseconds(100));
      if (done || aborted) continue;
      if (o_.cancelled && o_.cancelled()) cancelled_ = true;
      if (Clock::now() >= deadline) timed_out_ = true;
      if (cancelled_ || timed_out_) {
        abort();
        aborted = true;
      }
    }
    return result;
  }

 private:
  const FetchOptions& o_;
  asio::io_context ioc_;
  bool cancelled_ = false, timed_out_ = false;
};

struct Hop {
  int status = 0;
  std::string location, content_type, www_authenticate;
  std::optional<uint64_t> content_length;
  std::string body;
};

// Sends the GET over `stream` and reads the answer: a redirect's headers only; a 2xx body into
// `sink` when given; any other body into Hop::body (up to max_body).
template <class Stream>
Status Exchange(Driver& d, Stream& stream, tcp::socket& socket, const Url& url, const FetchOptions& o,
                const std::function<bool(std::string_view)>& sink, size_t max_body, Hop* hop) {
  const std::string where = "GET " + url.ToString();
  const auto fail = [&](const char* what, const ErrorCode& ec) -> Status {
    if (d.cancelled()) return Status(StatusCode::kCancelled, where + ": cancelled");
    if (d.timed_out()) return IoError(where + ": " + what + ": timed out");
    return IoError(where + ": " + what + ": " + ec.message());
  };
  const auto close = [&] {
    ErrorCode ignored;
    socket.close(ignored);
  };
  http::request<http::empty_body> req(http::verb::get, url.target, 11);
  req.set(http::field::host, url.HostHeader());
  req.set(http::field::user_agent, "herd");
  for (const auto& [name, value] : o.headers) req.set(name, value);
  ErrorCode ec = d.Run(
      [&](Driver::Done done) { http::async_write(stream, req, [done](ErrorCode e, size_t) { done(e); }); }, close);
  if (ec) return fail("sending the request", ec);

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  ec = d.Run(
      [&](Driver::Done done) {
        http::async_read_header(stream, buffer, parser, [done](ErrorCode e, size_t) { done(e); });
      },
      close);
  if (ec) return fail("reading the response", ec);
  const auto& head = parser.get();
  hop->status = static_cast<int>(head.result_int());
  hop->location = std::string(head[http::field::location]);
  hop->content_type = std::string(head[http::field::content_type]);
  hop->www_authenticate = std::string(head[http::field::www_authenticate]);
  if (parser.content_length()) hop->content_length = *parser.content_length();
  const bool redirect = hop->status >= 300 && hop->status < 400 && !hop->location.empty();
  if (redirect) return Status::Ok();
  const bool to_sink = sink && hop->status >= 200 && hop->status < 300;
  const bool must_fit = hop->status >= 200 && hop->status < 300;

  std::vector<char> chunk(kChunk);
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    ec = d.Run(
        [&](Driver::Done done) { http::async_read(stream, buffer, parser, [done](ErrorCode e, size_t) { done(e); }); },
        close);
    if (ec == http::error::need_buffer) ec = {};
    // A TLS peer that closes without close_notify ends an EOF-delimited body all the same.
    if (ec == ssl::error::stream_truncated && parser.need_eof()) parser.put_eof(ec);
    if (ec) return fail("reading the body", ec);
    const size_t got = chunk.size() - parser.get().body().size;
    if (got == 0) continue;
    const std::string_view data(chunk.data(), got);
    if (to_sink) {
      if (!sink(data)) return Status(StatusCode::kCancelled, where + ": cancelled");
    } else if (hop->body.size() + got <= max_body) {
      hop->body.append(data);
    } else if (must_fit) {
      return IoError(where + ": the response is larger than " + std::to_string(max_body) + " bytes");
    } else {
      hop->body.append(data.substr(0, max_body - hop->body.size()));
    }
  }
  return Status::Ok();
}

Status OneHop(const Url& url, const FetchOptions& o, const std::function<bool(std::string_view)>& sink, size_t max_body,
              Hop* hop) {
  Driver d(o);
  const std::string where = "GET " + url.ToString();
  tcp::resolver resolver(d.ioc());
  tcp::resolver::results_type endpoints;
  ErrorCode ec = d.Run(
      [&](Driver::Done done) {
        resolver.async_resolve(url.host, url.port, [&endpoints, done](ErrorCode e, tcp::resolver::results_type r) {
          endpoints = std::move(r);
          done(e);
        });
      },
      [&] { resolver.cancel(); });
  if (d.cancelled()) return Status(StatusCode::kCancelled, where + ": cancelled");
  if (ec || d.timed_out()) {
    return IoError(where + ": cannot resolve " + url.host + ": " + (d.timed_out() ? "timed out" : ec.message()));
  }
  tcp::socket socket(d.ioc());
  const auto close = [&] {
    ErrorCode ignored;
    socket.close(ignored);
  };
  ec = d.Run(
      [&](Driver::Done done) {
        asio::async_connect(socket, endpoints, [done](ErrorCode e, const tcp::endpoint&) { done(e); });
      },
      close);
  if (d.cancelled()) return Status(StatusCode::kCancelled, where + ": cancelled");
  if (ec || d.timed_out()) {
    return IoError(where + ": cannot connect to " + url.HostHeader() + ": " +
                   (d.timed_out() ? "timed out" : ec.message()));
  }
  if (url.scheme == "http") return Exchange(d, socket, socket, url, o, sink, max_body, hop);

  ssl::context ctx(ssl::context::tls_client);
  ctx.set_default_verify_paths(ec);
  if (!o.ca_file.empty()) {
    ctx.load_verify_file(o.ca_file, ec);
    if (ec) return IoError(o.ca_file + ": cannot load certificates: " + ec.message());
  }
  ssl::stream<tcp::socket&> tls(socket, ctx);
  if (SSL_set_tlsext_host_name(tls.native_handle(), url.host.c_str()) != 1) {
    return IoError(where + ": cannot set the TLS server name");
  }
  tls.set_verify_mode(ssl::verify_peer);
  tls.set_verify_callback(ssl::host_name_verification(url.host));
  ec = d.Run([&](Driver::Done done) { tls.async_handshake(ssl::stream_base::client, done); }, close);
  if (d.cancelled()) return Status(StatusCode::kCancelled, where + ": cancelled");
  if (ec || d.timed_out()) {
    return IoError(where + ": TLS handshake failed: " + (d.timed_out() ? "timed out" : ec.message()));
  }
  return Exchange(d, tls, socket, url, o, sink, max_body, hop);
}

}  // namespace

Result<Url> Url::Parse(std::string_view text) {
  Url u;
  const size_t sep = text.find("://");
  if (sep == std::string_view::npos) return InvalidArgument("not an http(s) URL: " + std::string(text));
  u.scheme = Lower(text.substr(0, sep));
  if (u.scheme != "http" && u.scheme != "https") return InvalidArgument("not an http(s) URL: " + std::string(text));
  std::string_view rest = text.substr(sep + 3);
  const size_t path = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, path);
  u.target = path == std::string_view::npos ? "/" : std::string(rest.substr(path));
  if (const size_t hash = u.target.find('#'); hash != std::string::npos) u.target.resize(hash);
  if (u.target.empty() || u.target[0] == '?') u.target = "/" + u.target;
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) authority = authority.substr(at + 1);
  std::string_view port;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument("bad IPv6 host in URL: " + std::string(text));
    u.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size() && authority[close + 1] == ':') port = authority.substr(close + 2);
  } else {
    const size_t colon = authority.rfind(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) return InvalidArgument("no host in URL: " + std::string(text));
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return InvalidArgument("bad port in URL: " + std::string(text));
  }
  u.port = port.empty() ? (u.scheme == "https" ? "443" : "80") : std::string(port);
  return u;
}

Result<Url> Url::Resolve(std::string_view location) const {
  if (location.find("://") != std::string_view::npos) return Parse(location);
  if (location.substr(0, 2) == "//") return Parse(scheme + ":" + std::string(location));
  if (location.empty() || location[0] != '/') {
    return InvalidArgument("unsupported relative redirect location: " + std::string(location));
  }
  Url u = *this;
  u.target = std::string(location);
  return u;
}

std::string Url::HostHeader() const {
  const bool v6 = host.find(':') != std::string::npos;
  const std::string h = v6 ? "[" + host + "]" : host;
  const bool default_port = (scheme == "https" && port == "443") || (scheme == "http" && port == "80");
  return default_port ? h : h + ":" + port;
}

std::string Url::ToString() const { return scheme + "://" + HostHeader() + target; }

Result<FetchResponse> HttpGet(const std::string& url, const FetchOptions& options,
                              const std::function<bool(std::string_view)>& sink, size_t max_body) {
  HERD_ASSIGN_OR_RETURN(Url u, Url::Parse(url));
  for (int redirects = 0;; ++redirects) {
    Hop hop;
    HERD_RETURN_IF_ERROR(OneHop(u, options, sink, max_body, &hop));
    if (hop.status >= 300 && hop.status < 400 && !hop.location.empty()) {
      if (redirects >= options.max_redirects) return InvalidArgument("GET " + url + ": too many redirects");
      HERD_ASSIGN_OR_RETURN(u, u.Resolve(hop.location));
      continue;
    }
    FetchResponse r;
    r.status = hop.status;
    r.url = u.ToString();
    r.content_type = std::move(hop.content_type);
    r.content_length = hop.content_length;
    r.www_authenticate = std::move(hop.www_authenticate);
    r.body = std::move(hop.body);
    return r;
  }
}

}  // namespace herd::server
