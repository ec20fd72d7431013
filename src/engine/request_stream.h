// The consumer's end of one request: a queue of EngineEvents filled by the engine thread.
// The engine never waits for the consumer (the queue is unbounded; a slow reader only costs
// memory for its own events). Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

#include "engine/request.h"

namespace herd {

class RequestStream {
 public:
  explicit RequestStream(RequestId id) : id_(id) {}
  RequestId id() const { return id_; }

  // Blocks until the next event. Returns false once the request has ended and every event
  // was read.
  bool Next(EngineEvent* event);
  // Next with a deadline: false on timeout too (then ended() tells the two apart).
  bool NextFor(EngineEvent* event, std::chrono::milliseconds timeout);
  // Non-blocking: false when no event is queued.
  bool TryNext(EngineEvent* event);
  // The request has ended (every choice finished) and the queue is empty.
  bool ended() const;

  // `fn` runs on the engine thread after events are queued (and once more at the end). It must
  // not block: wake an event loop, nothing more.
  void SetNotify(std::function<void()> fn);

  // Engine side.
  void Push(EngineEvent event);
  void Close();

 private:
  const RequestId id_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EngineEvent> events_;
  bool closed_ = false;
  std::function<void()> notify_;
};

}  // namespace herd
