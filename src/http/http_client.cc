#include "http/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <future>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "base/check.h"

namespace herd {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

Result<HttpUrl> HttpUrl::Parse(std::string_view text) {
  const std::string_view scheme = "http://";
  if (text.rfind("https://", 0) == 0) {
    return InvalidArgument("'" + std::string(text) + "': https is not supported (plain http only)");
  }
  if (text.rfind(scheme, 0) != 0) return InvalidArgument("'" + std::string(text) + "' is not an http:// URL");
  std::string_view rest = text.substr(scheme.size());
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  HttpUrl url;
  if (slash != std::string_view::npos) url.base_path = std::string(rest.substr(slash));
  while (!url.base_path.empty() && url.base_path.back() == '/') url.base_path.pop_back();
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument("'" + std::string(text) + "': unclosed '['");
    url.host = std::string(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return InvalidArgument("'" + std::string(text) + "': bad host");
      port = authority.substr(close + 2);
    }
  } else {
    const size_t colon = authority.find(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (url.host.empty()) return InvalidArgument("'" + std::string(text) + "': no host");
  url.port = port.empty() ? "80" : std::string(port);
  for (char c : url.port) {
    if (c < '0' || c > '9') return InvalidArgument("'" + std::string(text) + "': bad port");
  }
  if (url.port.size() > 5 || std::stoi(url.port) > 65535)
    return InvalidArgument("'" + std::string(text) + "': bad port");
  return url;
}

std::string HttpUrl::HostHeader() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + port;
}

const char* ClientErrorName(ClientError e) {
  switch (e) {
    case ClientError::kNone: return "none";
    case ClientError::kConnect: return "connection";
    case ClientError::kTimeout: return "timeout";
    case ClientError::kProtocol: return "protocol";
    case ClientError::kAborted: return "aborted";
  }
  return "unknown";
}

namespace http_internal {

// A connection with the bytes read past the last response (kept together in the idle pool).
struct Conn {
  explicit Conn(net::io_context& ioc) : stream(ioc) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
};

constexpr size_t kMaxIdlePerHost = 256;
constexpr size_t kChunk = 16 << 10;

struct ClientCore {
  net::io_context ioc{1};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::thread thread;
  std::thread::id thread_id;
  // I/O thread only:
  std::map<std::string, std::vector<std::unique_ptr<Conn>>> idle;
  std::map<std::string, tcp::resolver::results_type> resolved;
  tcp::resolver resolver{ioc};
};
}  // namespace http_internal

namespace {
using http_internal::Conn;
using http_internal::kChunk;
using http_internal::kMaxIdlePerHost;
using Impl = http_internal::ClientCore;

class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::weak_ptr<Impl> impl, net::io_context& ioc, ClientRequest req, ClientHandlers h)
      : impl_(std::move(impl)), ioc_(ioc), req_(std::move(req)), h_(std::move(h)) {
    key_ = req_.host + ":" + req_.port;
    msg_.method_string(req_.method);
    msg_.target(req_.target);
    msg_.version(11);
    for (const auto& [name, value] : req_.headers.fields()) msg_.insert(name, value);
    if (!req_.headers.Has("Host")) msg_.set(bhttp::field::host, HttpUrl{req_.host, req_.port, ""}.HostHeader());
    if (!req_.headers.Has("User-Agent")) msg_.set(bhttp::field::user_agent, "herd-bench");
    msg_.body() = std::move(req_.body);
    msg_.prepare_payload();
    deadline_ = std::chrono::steady_clock::now() + req_.timeout;
  }

  void Start() {
    auto impl = impl_.lock();
    if (!impl) return;
    auto& pool = impl->idle[key_];
    if (!pool.empty() && !retried_) {
      conn_ = std::move(pool.back());
      pool.pop_back();
      reused_ = true;
      return Write();
    }
    reused_ = false;
    auto it = impl->resolved.find(key_);
    if (it != impl->resolved.end()) return Connect(it->second);
    impl->resolver.async_resolve(req_.host, req_.port,
                                 [self = shared_from_this()](beast::error_code ec, tcp::resolver::results_type r) {
                                   if (ec) return self->Fail(ClientError::kConnect, "resolving: " + ec.message());
                                   if (auto impl = self->impl_.lock()) impl->resolved[self->key_] = r;
                                   self->Connect(r);
                                 });
  }

 private:
  void Connect(const tcp::resolver::results_type& endpoints) {
    conn_ = std::make_unique<Conn>(ioc_);
    conn_->stream.expires_at(deadline_);
    conn_->stream.async_connect(endpoints, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
      if (ec) return self->Fail(self->Kind(ec), "connecting: " + ec.message());
      self->conn_->stream.socket().set_option(tcp::no_delay(true), ec);
      self->Write();
    });
  }

  void Write() {
    conn_->stream.expires_at(deadline_);
    bhttp::async_write(conn_->stream, msg_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) {
        if (self->Retry()) return;
        return self->Fail(self->Kind(ec), "sending: " + ec.message());
      }
      self->ReadHeader();
    });
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->body_limit(boost::none);
    const size_t buffered = conn_->buffer.size();
    bhttp::async_read_header(conn_->stream, conn_->buffer, *parser_,
                             [self = shared_from_this(), buffered](beast::error_code ec, size_t) {
                               if (ec) {
                                 if (buffered == 0 && self->conn_->buffer.size() == 0 && self->Retry()) return;
                                 return self->Fail(self->Kind(ec), "reading the response: " + ec.message());
                               }
                               self->status_ = static_cast<int>(self->parser_->get().result_int());
                               if (self->h_.on_response) {
                                 Headers headers;
                                 for (const auto& f : self->parser_->get()) headers.Add(f.name_string(), f.value());
                                 self->h_.on_response(self->status_, headers);
                               }
                               self->ReadBody();
                             });
  }

  void ReadBody() {
    if (parser_->is_done()) return Finish();
    parser_->get().body().data = chunk_;
    parser_->get().body().size = kChunk;
    bhttp::async_read_some(
        conn_->stream, conn_->buffer, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
          if (ec == bhttp::error::need_buffer) ec = {};
          const size_t got = kChunk - self->parser_->get().body().size;
          if (got > 0 && self->h_.on_data && !self->h_.on_data(std::string_view(self->chunk_, got))) {
            return self->Fail(ClientError::kAborted, "aborted by the reader");
          }
          if (ec) return self->Fail(self->Kind(ec), "reading the body: " + ec.message());
          self->ReadBody();
        });
  }

  void Finish() {
    const bool keep = parser_->keep_alive();
    if (keep) {
      auto impl = impl_.lock();
      if (impl) {
        conn_->stream.expires_never();
        auto& pool = impl->idle[key_];
        if (pool.size() < kMaxIdlePerHost) pool.push_back(std::move(conn_));
      }
    }
    conn_.reset();
    Done(ClientResult{ClientError::kNone, "", status_});
  }

  // A reused idle connection failed before the response began: once more on a fresh one.
  bool Retry() {
    if (!reused_ || retried_) return false;
    retried_ = true;
    conn_.reset();
    Start();
    return true;
  }

  ClientError Kind(const beast::error_code& ec) const {
    if (ec == beast::error::timeout) return ClientError::kTimeout;
    if (ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category()) {
      // Beast's parser errors; end_of_stream / partial_message mean the connection ended.
      if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message) return ClientError::kConnect;
      return ClientError::kProtocol;
    }
    return ClientError::kConnect;
  }

  void Fail(ClientError kind, std::string message) {
    if (conn_) {
      beast::error_code ignored;
      conn_->stream.socket().close(ignored);
      conn_.reset();
    }
    Done(ClientResult{kind, std::move(message), status_});
  }

  void Done(const ClientResult& r) {
    if (done_) return;
    done_ = true;
    if (h_.on_done) h_.on_done(r);
  }

  std::weak_ptr<Impl> impl_;
  net::io_context& ioc_;
  ClientRequest req_;
  ClientHandlers h_;
  std::string key_;
  bhttp::request<bhttp::string_body> msg_;
  std::chrono::steady_clock::time_point deadline_;
  std::unique_ptr<Conn> conn_;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_;
  char chunk_[kChunk];
  int status_ = 0;
  bool reused_ = false, retried_ = false, done_ = false;
};

}  // namespace

HttpClient::HttpClient() : impl_(std::make_shared<http_internal::ClientCore>()) {
  impl_->work.emplace(impl_->ioc.get_executor());
  std::promise<std::thread::id> id;
  auto got = id.get_future();
  impl_->thread = std::thread([impl = impl_.get(), &id] {
    id.set_value(std::this_thread::get_id());
    impl->ioc.run();
  });
  impl_->thread_id = got.get();
}

HttpClient::~HttpClient() {
  impl_->work.reset();
  impl_->ioc.stop();
  impl_->thread.join();
  impl_->idle.clear();
}

bool HttpClient::OnIoThread() const { return std::this_thread::get_id() == impl_->thread_id; }

void HttpClient::Send(ClientRequest request, ClientHandlers handlers) {
  auto ex = std::make_shared<Exchange>(impl_, impl_->ioc, std::move(request), std::move(handlers));
  net::post(impl_->ioc, [ex] { ex->Start(); });
}

void HttpClient::Post(std::function<void()> fn) { net::post(impl_->ioc, std::move(fn)); }

void HttpClient::PostAfter(std::chrono::steady_clock::duration delay, std::function<void()> fn) {
  net::post(impl_->ioc, [impl = impl_.get(), delay, fn = std::move(fn)]() mutable {
    auto timer = std::make_shared<net::steady_timer>(impl->ioc, delay);
    timer->async_wait([timer, fn = std::move(fn)](beast::error_code ec) {
      if (!ec) fn();
    });
  });
}

Result<ClientResponse> HttpClient::Fetch(ClientRequest request) {
  HERD_CHECK_MSG(!OnIoThread(), "HttpClient::Fetch called on the client's I/O thread");
  const std::string where = request.host + ":" + request.port + request.target;
  auto out = std::make_shared<ClientResponse>();
  auto done = std::make_shared<std::promise<ClientResult>>();
  auto finished = done->get_future();
  ClientHandlers h;
  h.on_response = [out](int status, const Headers& headers) {
    out->status = status;
    out->headers = headers;
  };
  h.on_data = [out](std::string_view d) {
    out->body.append(d);
    return true;
  };
  h.on_done = [done](const ClientResult& r) { done->set_value(r); };
  Send(std::move(request), std::move(h));
  const ClientResult r = finished.get();
  if (r.error != ClientError::kNone) return IoError(where + ": " + ClientErrorName(r.error) + ": " + r.message);
  return std::move(*out);
}

}  // namespace herd
