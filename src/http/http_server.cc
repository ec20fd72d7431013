#include "http/http_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "base/log.h"
#include "http/exchange.h"
#include "http/server_state.h"
#include "http/session.h"

namespace herd {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using http_internal::ServerState;
using http_internal::Session;

struct HttpServer::Impl {
  Impl(HttpServerConfig config, Router router)
      : state(std::make_shared<ServerState>(std::move(config), std::move(router))),
        ioc(std::max(1, state->config.io_threads)),
        acceptor(net::make_strand(ioc)),
        retry_timer(acceptor.get_executor()) {}

  void Accept();
  void Reject(tcp::socket socket);
  // Posts Shutdown(force) to every live session; returns how many there were.
  size_t ShutdownSessions(bool force);
  // Waits until no session is left or `timeout` passed; true if none is left.
  bool WaitForSessions(std::chrono::milliseconds timeout);

  std::shared_ptr<ServerState> state;  // declared first: outlives the io_context
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  tcp::acceptor acceptor;
  net::steady_timer retry_timer;
  std::vector<std::thread> threads;
  uint16_t port = 0;
  bool running = false;
};

void HttpServer::Impl::Accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](boost::system::error_code ec, tcp::socket socket) {
    if (!acceptor.is_open() || state->stopping.load()) return;
    if (ec) {
      if (ec == net::error::operation_aborted) return;
      // Out of file descriptors and the like: back off instead of spinning.
      HERD_LOG(kWarn, "http: accept failed: %s", ec.message().c_str());
      retry_timer.expires_after(std::chrono::milliseconds(100));
      retry_timer.async_wait([this](boost::system::error_code tec) {
        if (!tec) Accept();
      });
      return;
    }
    boost::system::error_code opt_ec;
    socket.set_option(tcp::no_delay(true), opt_ec);  // each streamed event leaves at once
    if (state->open_connections.load() >= state->config.max_connections) {
      Reject(std::move(socket));
    } else {
      state->open_connections.fetch_add(1);
      std::make_shared<Session>(std::move(socket), state)->Start();
    }
    Accept();
  });
}

void HttpServer::Impl::Reject(tcp::socket socket) {
  // Best effort and non-blocking: a rejected client must not hold anything.
  HttpResponse r = state->router.FormatError(503, "too many open connections", HttpRequest{});
  r.headers.Set("Retry-After", "1");
  std::string bytes = http_internal::SerializeHead(r.status, r.headers, static_cast<long long>(r.body.size()), false,
                                                   11, state->config.cors_allow_origin) +
                      r.body;
  boost::system::error_code ec;
  socket.non_blocking(true, ec);
  socket.send(net::buffer(bytes), 0, ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

size_t HttpServer::Impl::ShutdownSessions(bool force) {
  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    for (auto& [ptr, weak] : state->sessions) {
      if (auto s = weak.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) s->Shutdown(force);
  size_t n = live.size();
  live.clear();  // outside the lock: dropping the last reference runs ~Session, which locks
  return n;
}

bool HttpServer::Impl::WaitForSessions(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state->mu);
  return state->cv.wait_for(lock, timeout, [&] { return state->sessions.empty(); });
}

HttpServer::HttpServer(HttpServerConfig config, Router router)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(router))) {}

HttpServer::~HttpServer() { Stop(std::chrono::milliseconds(0)); }

Status HttpServer::Start() {
  Impl& m = *impl_;
  if (m.running) return InvalidArgument("http server already started");
  const HttpServerConfig& cfg = m.state->config;
  boost::system::error_code ec;
  net::ip::address address = net::ip::make_address(cfg.host, ec);
  if (ec) return InvalidArgument("bad listen address '" + cfg.host + "': " + ec.message());
  tcp::endpoint endpoint(address, cfg.port);
  std::string where = cfg.host + ":" + std::to_string(cfg.port);
  m.acceptor.open(endpoint.protocol(), ec);
  if (ec) return IoError("http: open socket for " + where + ": " + ec.message());
  m.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  m.acceptor.bind(endpoint, ec);
  if (ec) return IoError("http: bind " + where + ": " + ec.message());
  m.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return IoError("http: listen on " + where + ": " + ec.message());
  m.port = m.acceptor.local_endpoint(ec).port();
  m.running = true;
  m.work.emplace(m.ioc.get_executor());
  net::post(m.acceptor.get_executor(), [&m] { m.Accept(); });
  int n = std::max(1, cfg.io_threads);
  for (int i = 0; i < n; ++i) m.threads.emplace_back([&m] { m.ioc.run(); });
  HERD_LOG(kInfo, "http: listening on %s:%u (%d I/O threads)", cfg.host.c_str(), m.port, n);
  return Status::Ok();
}

uint16_t HttpServer::port() const { return impl_->port; }

int HttpServer::active_connections() const { return impl_->state->open_connections.load(); }

void HttpServer::Stop(std::chrono::milliseconds grace) {
  Impl& m = *impl_;
  if (!m.running) return;
  m.running = false;
  m.state->stopping.store(true);
  net::post(m.acceptor.get_executor(), [&m] {
    boost::system::error_code ec;
    m.acceptor.close(ec);
    m.retry_timer.cancel();
  });
  // Idle connections close now; requests in progress may finish within `grace`.
  m.ShutdownSessions(false);
  if (!m.WaitForSessions(grace)) {
    size_t n = m.ShutdownSessions(true);
    HERD_LOG(kInfo, "http: shutdown grace over, closing %zu connection(s)", n);
    if (!m.WaitForSessions(std::chrono::milliseconds(5000))) {
      HERD_LOG(kWarn, "http: connections still referenced after shutdown");
    }
  }
  m.work.reset();
  m.ioc.stop();
  for (auto& t : m.threads) t.join();
  m.threads.clear();
}

}  // namespace herd
