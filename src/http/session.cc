#include "http/session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "base/log.h"
#include "base/status.h"

namespace herd::http_internal {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

constexpr size_t kLingerDrainBytes = 1u << 20;
constexpr std::chrono::milliseconds kLingerTime{1000};
const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace

Session::Session(tcp::socket socket, std::shared_ptr<ServerState> state)
    : stream_(std::move(socket)), state_(std::move(state)), read_timer_(stream_.get_executor()) {
  remote_ = RemoteAddress();
  fd_ = stream_.socket().native_handle();
}

Session::~Session() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->sessions.erase(this);
    state_->open_connections.fetch_sub(1, std::memory_order_relaxed);
  }
  state_->cv.notify_all();
}

std::string Session::RemoteAddress() const {
  beast::error_code ec;
  auto ep = stream_.socket().remote_endpoint(ec);
  if (ec) return "";
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

void Session::Start() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->sessions[this] = weak_from_this();
  }
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->StartRequest(true); });
}

// --- thread-safe entry points ---

void Session::Wake(std::shared_ptr<Exchange> exchange) {
  net::post(stream_.get_executor(), [self = shared_from_this(), e = std::move(exchange)] { self->Pump(e); });
}

void Session::Abort(std::string reason) {
  net::post(stream_.get_executor(), [self = shared_from_this(), reason = std::move(reason)] {
    HERD_LOG(kInfo, "http: %s: %s", self->remote_.c_str(), reason.c_str());
    self->Close("aborted");
  });
}

void Session::Orphaned(uint64_t id, bool answered) {
  net::post(stream_.get_executor(), [self = shared_from_this(), id, answered] {
    if (self->closed_ || !self->handling_ || id != self->exchange_id_) return;
    if (answered) {
      self->Close("stream abandoned by its handler");
      return;
    }
    HERD_LOG(kError, "http: handler for %s %s did not respond", self->request_.method.c_str(),
             self->request_.path.c_str());
    auto e = std::make_shared<Exchange>(self, self->exchange_info_);
    self->exchange_ = e;
    e->Respond(self->state_->router.FormatError(500, "the handler did not respond", self->request_));
  });
}

void Session::Shutdown(bool force) {
  net::post(stream_.get_executor(), [self = shared_from_this(), force] {
    self->shutdown_requested_ = true;
    if (force || !self->handling_) self->Close("server shutdown");
  });
}

// --- reading a request ---

void Session::ArmReadTimer(std::chrono::milliseconds timeout) {
  uint64_t gen = ++read_gen_;
  read_timer_.expires_after(timeout);
  read_timer_.async_wait([self = shared_from_this(), gen](beast::error_code ec) {
    if (ec || gen != self->read_gen_ || self->closed_) return;
    self->read_timed_out_ = true;
    beast::error_code ignored;
    self->stream_.socket().cancel(ignored);
  });
}

void Session::DisarmReadTimer() {
  ++read_gen_;
  read_timer_.cancel();
}

void Session::StartRequest(bool first) {
  if (closed_) return;
  if (state_->stopping.load() || shutdown_requested_) {
    Close("server shutdown");
    return;
  }
  const HttpServerConfig& cfg = state_->config;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(std::min<size_t>(cfg.max_header_bytes, UINT32_MAX)));
  parser_->body_limit(cfg.max_body_bytes);
  request_ = HttpRequest{};
  if (first || buffer_.size() > 0) {
    ReadHeader();
    return;
  }
  // Keep-alive: wait up to idle_timeout for the first bytes of the next request (a timeout
  // closes the socket), then the header timeout applies.
  stream_.expires_after(cfg.idle_timeout);
  stream_.async_read_some(buffer_.prepare(1024), [self = shared_from_this()](beast::error_code ec, size_t n) {
    if (self->closed_) return;
    if (ec) {
      self->Close("idle");
      return;
    }
    self->buffer_.commit(n);
    self->ReadHeader();
  });
}

void Session::ReadHeader() {
  stream_.expires_never();
  read_timed_out_ = false;
  ArmReadTimer(state_->config.header_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
}

void Session::OnHeader(beast::error_code ec) {
  DisarmReadTimer();
  if (closed_) return;
  if (ec) {
    FailRead(ec, false);
    return;
  }
  const auto& req = parser_->get();
  request_.method = std::string(req.method_string());
  request_.target = std::string(req.target());
  size_t q = request_.target.find('?');
  request_.path = request_.target.substr(0, q);
  request_.query = q == std::string::npos ? "" : request_.target.substr(q + 1);
  request_.version = static_cast<int>(req.version());
  for (const auto& field : req) request_.headers.Add(field.name_string(), field.value());
  request_.remote_address = remote_;
  if (parser_->is_done()) {
    Dispatch();
    return;
  }
  auto expect = request_.headers.Get("Expect");
  if (expect && EqualsIgnoreCase(*expect, "100-continue") && request_.version >= 11) {
    stream_.expires_after(state_->config.write_timeout);
    net::async_write(stream_, net::buffer(kContinue), [self = shared_from_this()](beast::error_code wec, size_t) {
      if (self->closed_) return;
      if (wec) {
        self->Close("write failed");
        return;
      }
      self->ReadBody();
    });
    return;
  }
  ReadBody();
}

void Session::ReadBody() {
  stream_.expires_never();
  read_timed_out_ = false;
  ArmReadTimer(state_->config.body_timeout);
  http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
    self->DisarmReadTimer();
    if (self->closed_) return;
    if (ec) {
      self->FailRead(ec, true);
      return;
    }
    self->Dispatch();
  });
}

void Session::FailRead(beast::error_code ec, bool in_body) {
  const HttpServerConfig& cfg = state_->config;
  if (read_timed_out_) {
    if (!in_body && !parser_->got_some()) {
      Close("no request before the header timeout");
      return;
    }
    SendErrorAndClose(408, in_body ? "request body not received within the body timeout"
                                   : "request header not received within the header timeout");
  } else if (ec == http::error::body_limit) {
    SendErrorAndClose(413, StrFormat("request body exceeds the limit of %zu bytes", cfg.max_body_bytes));
  } else if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    SendErrorAndClose(431, StrFormat("request header exceeds the limit of %zu bytes", cfg.max_header_bytes));
  } else if (ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
             ec == net::error::operation_aborted || ec == http::error::partial_message) {
    Close("client closed");
  } else {
    SendErrorAndClose(400, "malformed HTTP request: " + ec.message());
  }
}

// --- handling ---

void Session::Dispatch() {
  request_.body = std::move(parser_->get().body());
  bool keep_alive = parser_->get().keep_alive() && !state_->stopping.load() && !shutdown_requested_;
  parser_.reset();
  const HttpServerConfig& cfg = state_->config;
  exchange_info_ = ExchangeInfo{++exchange_id_,
                                request_.method == "HEAD",
                                keep_alive,
                                request_.version,
                                cfg.cors_allow_origin,
                                cfg.max_stream_buffer_bytes,
                                cfg.direct_writes ? fd_ : -1};
  auto e = std::make_shared<Exchange>(shared_from_this(), exchange_info_);
  exchange_ = e;
  handling_ = true;
  if (!cfg.cors_allow_origin.empty() && request_.method == "OPTIONS" &&
      request_.headers.Has("Access-Control-Request-Method")) {
    HttpResponse r;
    r.status = 204;
    r.headers.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS");
    r.headers.Set("Access-Control-Allow-Headers", request_.headers.GetOr("Access-Control-Request-Headers", "*"));
    r.headers.Set("Access-Control-Max-Age", "86400");
    e->Respond(std::move(r));
  } else {
    state_->router.Dispatch(request_, e);
  }
  bool answered = e->complete_queued();
  e.reset();  // the handler holds it now, or the pending write does, or it is orphaned
  if (handling_ && !closed_ && !answered) StartMonitor();
}

void Session::StartMonitor() {
  // Bytes already buffered are a pipelined request: a read now could not tell a disconnect.
  // The read is small: it only learns of a close (or the start of a pipelined request).
  if (monitor_pending_ || buffer_.size() > 0) return;
  monitor_pending_ = true;
  stream_.expires_never();
  stream_.async_read_some(buffer_.prepare(512),
                          [self = shared_from_this()](beast::error_code ec, size_t n) { self->OnMonitor(ec, n); });
}

void Session::OnMonitor(beast::error_code ec, size_t n) {
  monitor_pending_ = false;
  if (!ec) buffer_.commit(n);
  if (closed_) return;
  if (next_after_monitor_) {  // the response completed and cancelled this read
    next_after_monitor_ = false;
    if (ec && ec != net::error::operation_aborted) {
      Close("client closed");
    } else {
      StartRequest(false);
    }
    return;
  }
  if (ec == net::error::operation_aborted) return;
  if (ec) {
    Close("client disconnected");  // cancels the request in progress
    return;
  }
  // Data while the response is pending: a pipelined request, read once this one is done.
}

void Session::Pump(const std::shared_ptr<Exchange>& e) {
  if (closed_ || !handling_ || e->id() != exchange_id_ || writing_) return;
  Exchange::Output out = e->TakeOutput();
  if (out.bytes.empty()) {
    if (out.complete) {
      e->Detach();
      OnResponseDone(out.keep_alive);
    }
    return;
  }
  writing_ = true;
  write_buf_ = std::move(out.bytes);
  stream_.expires_after(state_->config.write_timeout);
  net::async_write(stream_, net::buffer(write_buf_),
                   [self = shared_from_this(), e, complete = out.complete, keep_alive = out.keep_alive](
                       beast::error_code ec, size_t) {
                     self->writing_ = false;
                     if (self->closed_) return;
                     if (ec) {
                       self->Close(ec == beast::error::timeout ? "write timeout" : "write failed");
                       return;
                     }
                     if (complete) {
                       e->Detach();
                       self->OnResponseDone(keep_alive);
                       return;
                     }
                     self->Pump(e);
                   });
}

void Session::OnResponseDone(bool keep_alive) {
  handling_ = false;
  exchange_.reset();
  if (!keep_alive || state_->stopping.load() || shutdown_requested_) {
    LingerClose();
    return;
  }
  if (monitor_pending_) {
    next_after_monitor_ = true;
    beast::error_code ec;
    stream_.socket().cancel(ec);
    return;
  }
  StartRequest(false);
}

// --- errors and closing ---

void Session::SendErrorAndClose(int status, const std::string& message) {
  handling_ = false;
  HttpResponse r = state_->router.FormatError(status, message, request_);
  std::string bytes = SerializeHead(r.status, r.headers, static_cast<long long>(r.body.size()), false, 11,
                                    state_->config.cors_allow_origin);
  if (request_.method != "HEAD") bytes += r.body;
  write_buf_ = std::move(bytes);
  writing_ = true;
  stream_.expires_after(std::min(state_->config.write_timeout, std::chrono::milliseconds(10'000)));
  net::async_write(stream_, net::buffer(write_buf_), [self = shared_from_this()](beast::error_code ec, size_t) {
    self->writing_ = false;
    if (ec) {
      self->Close("write failed");
      return;
    }
    self->LingerClose();
  });
}

void Session::LingerClose() {
  // Half-close, then read and discard what the client still sends (bounded in bytes and
  // time), so that closing does not reset the connection before the client read our answer.
  if (closed_) return;
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec || monitor_pending_) {
    Close("done");
    return;
  }
  stream_.expires_after(kLingerTime);  // one deadline for the whole drain
  Drain(0);
}

void Session::Drain(size_t total) {
  buffer_.clear();
  stream_.async_read_some(buffer_.prepare(16384), [self = shared_from_this(), total](beast::error_code ec, size_t n) {
    if (ec || total + n > kLingerDrainBytes || self->closed_) {
      self->Close("done");
      return;
    }
    self->Drain(total + n);
  });
}

void Session::Close(const char* reason) {
  if (closed_) return;
  closed_ = true;
  HERD_LOG(kDebug, "http: %s closed (%s)", remote_.c_str(), reason);
  DisarmReadTimer();
  handling_ = false;
  if (auto e = exchange_.lock()) {
    exchange_.reset();
    e->Cancel();
  }
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
}

}  // namespace herd::http_internal
