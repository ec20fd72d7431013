#include "http/exchange.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdio>

#include "http/session.h"

namespace herd::http_internal {

namespace {

bool StatusHasNoBody(int status) { return (status >= 100 && status < 200) || status == 204 || status == 304; }

bool IsFramingHeader(std::string_view name) {
  return EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Transfer-Encoding") ||
         EqualsIgnoreCase(name, "Connection");
}

}  // namespace

std::string SerializeHead(int status, const Headers& headers, long long content_length, bool keep_alive, int version,
                          const std::string& cors_origin) {
  std::string out;
  out.reserve(256);
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += StatusReason(status);
  out += "\r\n";
  for (const auto& [name, value] : headers.fields()) {
    if (IsFramingHeader(name)) continue;
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  if (!cors_origin.empty() && !headers.Has("Access-Control-Allow-Origin")) {
    out += "Access-Control-Allow-Origin: " + cors_origin + "\r\n";
    if (cors_origin != "*") out += "Vary: Origin\r\n";
  }
  if (!StatusHasNoBody(status)) {
    if (content_length >= 0) {
      out += "Content-Length: " + std::to_string(content_length) + "\r\n";
    } else if (version >= 11) {
      out += "Transfer-Encoding: chunked\r\n";
    }
  }
  if (!keep_alive) {
    out += "Connection: close\r\n";
  } else if (version == 10) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
  return out;
}

Exchange::Exchange(std::shared_ptr<Session> session, ExchangeInfo info)
    : info_(std::move(info)), session_(std::move(session)) {}

Exchange::~Exchange() {
  // The handler let go without completing its response: the session answers 500 (nothing
  // sent yet) or closes the connection (a stream cut short cannot be completed).
  if (session_ && !complete_) session_->Orphaned(info_.id, answered_);
}

std::shared_ptr<Session> Exchange::QueueLocked(std::string_view bytes) {
  out_.append(bytes);
  if (wake_posted_ || !session_) return nullptr;
  wake_posted_ = true;
  return session_;
}

std::shared_ptr<Session> Exchange::SendOrQueueLocked(const std::string_view* parts, size_t n) {
  size_t sent = 0;
  if (info_.socket_fd >= 0 && session_ && out_.empty() && !wake_posted_ && !strand_writing_) {
    iovec iov[4];
    size_t total = 0;
    for (size_t i = 0; i < n && i < 4; ++i) {
      iov[i].iov_base = const_cast<char*>(parts[i].data());
      iov[i].iov_len = parts[i].size();
      total += parts[i].size();
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n < 4 ? n : 4;
    ssize_t r;
    do {
      r = ::sendmsg(info_.socket_fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);
    // An error other than a full buffer is left to the strand's write, which reports it.
    if (r > 0) sent = static_cast<size_t>(r);
    if (sent == total) return nullptr;
  }
  for (size_t i = 0; i < n; ++i) {  // the unsent rest, in order
    const size_t skip = sent < parts[i].size() ? sent : parts[i].size();
    out_.append(parts[i].substr(skip));
    sent -= skip;
  }
  return QueueLocked("");
}

void Exchange::Respond(HttpResponse response) {
  std::shared_ptr<Session> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (answered_ || cancelled()) return;
    answered_ = true;
    complete_ = true;
    bool close_requested = false;
    if (auto c = response.headers.Get("Connection")) close_requested = EqualsIgnoreCase(*c, "close");
    keep_alive_ = info_.keep_alive && !close_requested;
    long long length = StatusHasNoBody(response.status) ? -1 : static_cast<long long>(response.body.size());
    std::string bytes =
        SerializeHead(response.status, response.headers, length, keep_alive_, info_.version, info_.cors_origin);
    if (!info_.head && !StatusHasNoBody(response.status)) bytes += response.body;
    wake = QueueLocked(bytes);
  }
  if (wake) wake->Wake(shared_from_this());
}

std::shared_ptr<ResponseStream> Exchange::StartStream(int status, Headers headers) {
  std::shared_ptr<Session> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (answered_ || cancelled()) return shared_from_this();  // writes will fail
    answered_ = true;
    streaming_ = true;
    bool close_requested = false;
    if (auto c = headers.Get("Connection")) close_requested = EqualsIgnoreCase(*c, "close");
    // HTTP/1.0 has no chunked encoding: the body ends when the connection closes.
    chunked_ = info_.version >= 11 && !info_.head && !StatusHasNoBody(status);
    keep_alive_ = info_.keep_alive && !close_requested && (chunked_ || info_.head);
    wake = QueueLocked(SerializeHead(status, headers, -1, keep_alive_, info_.version, info_.cors_origin));
  }
  if (wake) wake->Wake(shared_from_this());
  return shared_from_this();
}

void Exchange::OnCancel(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cancelled()) {
      on_cancel_ = std::move(callback);
      return;
    }
  }
  if (callback) callback();
}

bool Exchange::Write(std::string_view data) {
  std::shared_ptr<Session> wake;
  std::shared_ptr<Session> overflow;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!streaming_ || complete_ || cancelled()) return false;
    if (info_.head || data.empty()) return true;
    if (chunked_) {
      char size_line[24];
      int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
      const std::string_view parts[] = {std::string_view(size_line, static_cast<size_t>(n)), data, "\r\n"};
      wake = SendOrQueueLocked(parts, 3);
    } else {
      wake = SendOrQueueLocked(&data, 1);
    }
    if (info_.max_buffer > 0 && out_.size() > info_.max_buffer) overflow = session_;
  }
  if (wake) wake->Wake(shared_from_this());
  if (overflow) {
    overflow->Abort("stream buffer limit exceeded (client not reading)");
    return false;
  }
  return true;
}

void Exchange::Finish() {
  std::shared_ptr<Session> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!streaming_ || complete_ || cancelled()) return;
    complete_ = true;
    wake = QueueLocked(chunked_ ? "0\r\n\r\n" : "");
  }
  if (wake) wake->Wake(shared_from_this());
}

Exchange::Output Exchange::TakeOutput() {
  std::lock_guard<std::mutex> lock(mu_);
  wake_posted_ = false;
  Output o;
  o.bytes.swap(out_);
  strand_writing_ = !o.bytes.empty();
  o.complete = complete_;
  o.keep_alive = keep_alive_;
  return o;
}

void Exchange::Cancel() {
  std::function<void()> callback;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled() || (complete_ && !session_)) return;
    cancelled_.store(true, std::memory_order_release);
    callback = std::move(on_cancel_);
    on_cancel_ = nullptr;
    session_.reset();
    out_.clear();
  }
  if (callback) callback();
}

void Exchange::Detach() {
  std::lock_guard<std::mutex> lock(mu_);
  session_.reset();
  on_cancel_ = nullptr;
}

}  // namespace herd::http_internal
