// Internal to src/http: one request's answer in flight. Implements both Responder and
// ResponseStream for the handler; any thread may call those. It serializes what the handler
// gives into wire bytes (status line, headers, chunk framing) in a queue and asks its Session
// to write them on the session's strand. The Session drains the queue (TakeOutput) and tells
// the Exchange when the connection failed (Cancel) or the response completed (Detach).
//
// Direct writes: a stream event (Write) that finds the socket idle — nothing queued, no strand
// write in flight, not cancelled — is sent at once from the calling thread with one
// non-blocking sendmsg under mu_, so a lone stream costs no cross-thread wake-up per token.
// Whatever the kernel does not take is queued for the strand as usual. Order holds because
// both paths decide under mu_: the strand owns the socket for writing from the TakeOutput that
// returned bytes until the TakeOutput that returns none. The socket stays open while a direct
// write may run: the Session cancels the Exchange (under mu_) before it closes the socket, and
// a failed strand write keeps the strand's ownership until then.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "http/responder.h"

namespace herd::http_internal {

class Session;

struct ExchangeInfo {
  uint64_t id = 0;          // per session, increasing
  bool head = false;        // HEAD request: headers only
  bool keep_alive = true;   // what the request allows (and the server is not stopping)
  int version = 11;         // 10 or 11
  std::string cors_origin;  // "" = no CORS header
  size_t max_buffer = 0;    // queued unsent bytes beyond which the client is dropped
  int socket_fd = -1;       // the connection's socket for direct writes; -1: strand only
};

// Serializes a status line and headers. `content_length` < 0 means chunked framing (or, for
// HTTP/1.0, a body delimited by closing the connection).
std::string SerializeHead(int status, const Headers& headers, long long content_length, bool keep_alive, int version,
                          const std::string& cors_origin);

class Exchange final : public Responder, public ResponseStream, public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<Session> session, ExchangeInfo info);
  ~Exchange() override;

  // Responder
  void Respond(HttpResponse response) override;
  std::shared_ptr<ResponseStream> StartStream(int status, Headers headers) override;
  void OnCancel(std::function<void()> callback) override;
  bool cancelled() const override { return cancelled_.load(std::memory_order_acquire); }

  // ResponseStream
  bool Write(std::string_view data) override;
  void Finish() override;

  // --- Session side (on the session's strand) ---
  struct Output {
    std::string bytes;        // to write now (may be empty)
    bool complete = false;    // nothing follows `bytes`: the response is done
    bool keep_alive = false;  // meaningful when complete
  };
  // Moves the queued bytes out and re-arms the wake-up of the session.
  Output TakeOutput();
  // The connection is gone: later writes fail, the cancel callback runs (on this thread).
  void Cancel();
  // The response was fully written: drop the reference to the session.
  void Detach();
  uint64_t id() const { return info_.id; }
  // All bytes of the response are queued (a plain Respond happened): no need to watch for a
  // disconnect, the write will tell.
  bool complete_queued() const {
    std::lock_guard<std::mutex> lock(mu_);
    return complete_;
  }

 private:
  // Appends to out_ and wakes the session if needed. Requires mu_ held; returns the session
  // to wake (outside the lock) or null.
  std::shared_ptr<Session> QueueLocked(std::string_view bytes);
  // Sends parts[0..n) with one non-blocking sendmsg when the socket is idle (see the file
  // comment); queues what was not sent. Requires mu_ held; returns the session to wake or null.
  std::shared_ptr<Session> SendOrQueueLocked(const std::string_view* parts, size_t n);

  const ExchangeInfo info_;
  mutable std::mutex mu_;
  std::shared_ptr<Session> session_;  // null once detached or cancelled
  bool answered_ = false;             // Respond or StartStream happened
  bool streaming_ = false;
  bool complete_ = false;  // all bytes of the response are queued
  bool keep_alive_ = false;
  bool chunked_ = false;
  bool wake_posted_ = false;
  bool strand_writing_ = false;  // the strand took bytes and has not yet found the queue empty
  std::string out_;
  std::function<void()> on_cancel_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace herd::http_internal
