// HttpClient: an asynchronous HTTP/1.1 client for many concurrent, streamed responses on one I/O
// thread (Boost.Beast/Asio, hidden behind this header). Plain http only: no TLS.
//
// - Send() may be called from any thread. The handlers of a request run on the client's I/O
//   thread, in order: on_response(status, headers) when the header block has arrived, on_data
//   for each piece of the body as it arrives (chunked transfer decoded; one piece is at most
//   16 KiB and is whatever the socket had, not an SSE event or a line), then on_done exactly
//   once. Handlers must not block: every stream of the client waits for them.
// - Connections are kept alive and reused per host:port. A reused connection that fails before
//   any byte of the response arrived (the server closed it while it was idle) is retried once
//   on a fresh connection; after that every failure is reported, never retried.
// - ClientRequest::timeout bounds the whole exchange, from connecting to the last body byte.
// - Post / PostAfter run a function on the I/O thread, so a caller (a load generator) can keep
//   its state there without locks. Cost: one steady_timer per PostAfter.
// - The destructor stops the I/O thread: requests still in flight are dropped without on_done.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "http/http_message.h"

namespace herd {

namespace http_internal {
struct ClientCore;
}

// "http://host[:port][/base/path]" split for requests. https and other schemes are an error.
struct HttpUrl {
  std::string host;       // without brackets for an IPv6 literal
  std::string port;       // "80" when not given
  std::string base_path;  // without a trailing '/', "" for the root
  // Errors: InvalidArgument (not an http URL, https, empty host, bad port).
  static Result<HttpUrl> Parse(std::string_view text);
  std::string HostHeader() const;  // "host:port" ("[::1]:port" for IPv6)
};

struct ClientRequest {
  std::string host;
  std::string port = "80";
  std::string method = "POST";
  std::string target = "/";  // path and query
  Headers headers;           // Host, Content-Length and User-Agent are added when absent
  std::string body;
  std::chrono::milliseconds timeout{600'000};
};

enum class ClientError {
  kNone,
  kConnect,   // resolving, connecting, or the connection failing (reset, closed mid-response)
  kTimeout,   // ClientRequest::timeout passed
  kProtocol,  // the server's bytes are not a valid HTTP/1.1 response
  kAborted,   // on_data returned false
};
const char* ClientErrorName(ClientError e);  // "connection", "timeout", "protocol", "aborted"

struct ClientResult {
  ClientError error = ClientError::kNone;
  std::string message;  // empty when error is kNone
  int status = 0;       // 0 when no header block arrived
};

struct ClientHandlers {
  std::function<void(int status, const Headers& headers)> on_response;  // optional
  std::function<bool(std::string_view data)> on_data;                   // optional; false aborts
  std::function<void(const ClientResult& result)> on_done;              // optional
};

struct ClientResponse {
  int status = 0;
  Headers headers;
  std::string body;
};

class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  void Send(ClientRequest request, ClientHandlers handlers);
  void Post(std::function<void()> fn);
  void PostAfter(std::chrono::steady_clock::duration delay, std::function<void()> fn);

  // Blocking convenience: the whole response. Any HTTP status is a value; transport failures
  // are errors (kIo, naming the host and the reason). Must not be called on the I/O thread.
  Result<ClientResponse> Fetch(ClientRequest request);

  // Whether the calling thread is the client's I/O thread.
  bool OnIoThread() const;

 private:
  std::shared_ptr<http_internal::ClientCore> impl_;
};

}  // namespace herd
