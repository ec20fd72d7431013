// HttpServer: asynchronous HTTP/1.1 on Boost.Beast/Asio (hidden behind this header).
//
// - `io_threads` threads run all connections; each connection is served on its own strand,
//   so a connection costs a socket, its buffers and no thread. Handlers run on those threads
//   and must not block; they answer through a thread-safe Responder (see responder.h).
// - Keep-alive (HTTP/1.1 default, HTTP/1.0 with "Connection: keep-alive"), HEAD (headers
//   only), "Expect: 100-continue", chunked streaming flushed per write (sent from the
//   writing thread itself while the socket is idle: `direct_writes`).
// - Limits, each answered with the router's error formatter: body over max_body_bytes → 413,
//   header block over max_header_bytes → 431, a request not fully received within
//   header_timeout (from its first byte; from accept for a new connection) or body_timeout
//   (for the body) → 408, unparseable request → 400, more than max_connections open → 503.
//   A keep-alive connection idle for idle_timeout is closed; a client that stops reading for
//   write_timeout, or lets a stream queue more than max_stream_buffer_bytes, is disconnected
//   (its request cancelled). After a transport error the connection is closed.
// - A client that disconnects while its response is pending (detected by a read on the idle
//   socket, or by a failed write) cancels the request: Responder::OnCancel callbacks run.
// - Stop(grace): stops accepting, closes idle connections, lets in-flight responses finish
//   for up to `grace`, then closes the rest (cancelling them) and joins the threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "http/router.h"

namespace herd {

struct HttpServerConfig {
  std::string host = "127.0.0.1";  // IPv4 or IPv6 literal ("0.0.0.0", "::")
  uint16_t port = 11434;           // 0: the OS picks one (read it back with port())
  int io_threads = 2;
  size_t max_body_bytes = 64u << 20;
  size_t max_header_bytes = 64u << 10;
  std::chrono::milliseconds header_timeout{30'000};
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds idle_timeout{120'000};
  std::chrono::milliseconds write_timeout{60'000};  // per socket write of a response
  int max_connections = 4096;
  size_t max_stream_buffer_bytes = 8u << 20;  // queued, unsent bytes of one stream
  // CORS: empty = off. Otherwise the Access-Control-Allow-Origin value ("*" or one origin)
  // added to every response, and OPTIONS preflight requests are answered with 204.
  std::string cors_allow_origin;
  // Stream events written straight from the producing thread when the socket is idle (one
  // non-blocking send, no hand-off to an I/O thread); false: every write goes through the
  // connection's I/O thread. Same bytes either way (see src/http/exchange.h).
  bool direct_writes = true;
};

class HttpServer {
 public:
  HttpServer(HttpServerConfig config, Router router);
  ~HttpServer();  // Stop(0) if still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the I/O threads. Errors: bad address, port in use.
  Status Start();
  // The bound port (the chosen one when config.port was 0). Valid after Start().
  uint16_t port() const;
  // Graceful shutdown (see above). Idempotent; blocks until the threads are joined.
  void Stop(std::chrono::milliseconds grace);

  // Open connections right now (accepted and not yet closed).
  int active_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace herd
