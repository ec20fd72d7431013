// Internal to src/http: one TCP connection, served on its own strand.
//
// Life of a request: [idle wait (keep-alive) ->] read header -> (100 Continue) -> read body
// -> dispatch to the router -> while the handler answers, one read watches the socket so a
// disconnect cancels the request -> write queued output as the Exchange produces it -> next
// request or close. Every member below is touched only on the strand, except the public
// entry points, which post to it.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "http/exchange.h"
#include "http/server_state.h"

namespace herd::http_internal {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(boost::asio::ip::tcp::socket socket, std::shared_ptr<ServerState> state);
  ~Session();

  // Registers with the server and starts reading the first request.
  void Start();

  // --- Thread-safe entry points (post to the strand) ---
  // The Exchange has output queued.
  void Wake(std::shared_ptr<Exchange> exchange);
  // Drop the connection (cancelling the pending request), e.g. a stream over its buffer limit.
  void Abort(std::string reason);
  // The handler released exchange `id` without completing it.
  void Orphaned(uint64_t id, bool answered);
  // Server shutdown: force=false closes the connection if no request is in progress (one in
  // progress closes when its response completes); force=true closes it now.
  void Shutdown(bool force);

 private:
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

  void StartRequest(bool first);
  void ReadHeader();
  void OnHeader(boost::beast::error_code ec);
  void ReadBody();
  void OnBody(boost::beast::error_code ec);
  void Dispatch();
  void StartMonitor();
  void OnMonitor(boost::beast::error_code ec, size_t n);
  void Pump(const std::shared_ptr<Exchange>& exchange);
  void OnResponseDone(bool keep_alive);

  // Maps a read error to a response (408/413/431/400) or a silent close.
  void FailRead(boost::beast::error_code ec, bool in_body);
  // Writes an error response, then closes gracefully (lingering to drain unread input).
  void SendErrorAndClose(int status, const std::string& message);
  void LingerClose();
  void Drain(size_t total);
  // Header/body read deadline: on expiry the pending read is cancelled (socket kept open so
  // a 408 can still be written). Each arm bumps read_gen_ so stale expiries do nothing.
  void ArmReadTimer(std::chrono::milliseconds timeout);
  void DisarmReadTimer();
  void Close(const char* reason);

  std::string RemoteAddress() const;

  boost::beast::tcp_stream stream_;
  std::shared_ptr<ServerState> state_;
  boost::beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  HttpRequest request_;  // the request being read / handled (method, path, headers)

  boost::asio::steady_timer read_timer_;
  uint64_t read_gen_ = 0;
  bool read_timed_out_ = false;

  std::weak_ptr<Exchange> exchange_;  // the handler's answer in progress
  ExchangeInfo exchange_info_;        // of the request in progress
  uint64_t exchange_id_ = 0;
  bool handling_ = false;  // a request is dispatched and its response not done
  bool writing_ = false;
  bool monitor_pending_ = false;
  bool next_after_monitor_ = false;  // the response finished while the monitor read was pending
  bool shutdown_requested_ = false;
  bool closed_ = false;
  std::string write_buf_;
  std::string remote_;
  int fd_ = -1;  // the socket's descriptor, for the Exchange's direct writes (see exchange.h)
};

}  // namespace herd::http_internal
