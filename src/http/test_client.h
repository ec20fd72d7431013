// Test-only: a minimal blocking HTTP/1.1 client over a raw POSIX socket, so tests control
// every byte (garbage, partial headers, pipelining, disconnects) and read chunked streams one
// chunk at a time. Every read has a deadline; nothing here is timed beyond liveness.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace herd::testing {

struct TestResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

class TestClient {
 public:
  using ms = std::chrono::milliseconds;

  explicit TestClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
    int one = 1;
    if (fd_ >= 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~TestClient() { Close(); }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Closes with an RST instead of a FIN (SO_LINGER 0).
  void Reset() {
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    Close();
  }

  bool Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads a status line and headers. Leaves the body in the buffer.
  std::optional<TestResponse> ReadHead(ms timeout = ms(5000)) {
    auto deadline = Clock::now() + timeout;
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return std::nullopt;
    }
    std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    TestResponse r;
    size_t line_end = head.find("\r\n");
    std::string status_line = head.substr(0, line_end);
    if (status_line.size() < 12 || status_line.compare(0, 5, "HTTP/") != 0) return std::nullopt;
    r.status = std::atoi(status_line.c_str() + 9);
    size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      size_t e = head.find("\r\n", pos);
      if (e == std::string::npos) e = head.size();
      std::string line = head.substr(pos, e - pos);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        size_t v = line.find_first_not_of(' ', colon + 1);
        r.headers[name] = v == std::string::npos ? "" : line.substr(v);
      }
      pos = e + 2;
    }
    return r;
  }

  // Reads a whole response: Content-Length, chunked, or (head) no body. Interim 1xx
  // responses are returned as they are (call again for the final one).
  std::optional<TestResponse> ReadResponse(bool head = false, ms timeout = ms(5000)) {
    auto deadline = Clock::now() + timeout;
    auto r = ReadHead(timeout);
    if (!r || head || r->status < 200 || r->status == 204 || r->status == 304) return r;
    if (r->Header("transfer-encoding") == "chunked") {
      while (true) {
        auto chunk = ReadChunk(std::chrono::duration_cast<ms>(deadline - Clock::now()));
        if (!chunk) return std::nullopt;
        if (chunk->empty()) break;
        r->body += *chunk;
      }
      return r;
    }
    if (r->headers.count("content-length")) {
      size_t len = std::strtoull(r->Header("content-length").c_str(), nullptr, 10);
      while (buf_.size() < len) {
        if (!Fill(deadline)) return std::nullopt;
      }
      r->body = buf_.substr(0, len);
      buf_.erase(0, len);
      return r;
    }
    while (Fill(deadline)) {  // delimited by close
    }
    r->body = std::move(buf_);
    buf_.clear();
    return r;
  }

  // The next chunk's data; "" for the terminating chunk; nullopt on timeout or close.
  std::optional<std::string> ReadChunk(ms timeout = ms(5000)) {
    auto deadline = Clock::now() + timeout;
    size_t eol;
    while ((eol = buf_.find("\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return std::nullopt;
    }
    size_t size = std::strtoull(buf_.c_str(), nullptr, 16);
    while (buf_.size() < eol + 2 + size + 2) {
      if (!Fill(deadline)) return std::nullopt;
    }
    std::string data = buf_.substr(eol + 2, size);
    buf_.erase(0, eol + 2 + size + 2);
    return data;
  }

  // True once the server closed the connection (EOF or reset) within `timeout`, with no
  // further bytes arriving.
  bool WaitClosed(ms timeout = ms(5000)) {
    auto deadline = Clock::now() + timeout;
    size_t before = buf_.size();
    while (Fill(deadline)) {
    }
    return closed_ && buf_.size() == before;
  }

  int fd() const { return fd_; }

 private:
  using Clock = std::chrono::steady_clock;

  // Reads what is available before `deadline`; false on timeout, EOF or error.
  bool Fill(Clock::time_point deadline) {
    if (fd_ < 0 || closed_) return false;
    auto left = std::chrono::duration_cast<ms>(deadline - Clock::now()).count();
    if (left < 0) left = 0;
    pollfd p{fd_, POLLIN, 0};
    int pr = ::poll(&p, 1, static_cast<int>(left));
    if (pr <= 0) return false;
    char tmp[65536];
    ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool closed_ = false;
  std::string buf_;
};

}  // namespace herd::testing
