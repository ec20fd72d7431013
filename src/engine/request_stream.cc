#include "engine/request_stream.h"

namespace herd {

bool RequestStream::Next(EngineEvent* event) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !events_.empty() || closed_; });
  if (events_.empty()) return false;
  *event = std::move(events_.front());
  events_.pop_front();
  return true;
}

bool RequestStream::NextFor(EngineEvent* event, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty() || closed_; })) return false;
  if (events_.empty()) return false;
  *event = std::move(events_.front());
  events_.pop_front();
  return true;
}

bool RequestStream::TryNext(EngineEvent* event) {
  std::lock_guard lock(mu_);
  if (events_.empty()) return false;
  *event = std::move(events_.front());
  events_.pop_front();
  return true;
}

bool RequestStream::ended() const {
  std::lock_guard lock(mu_);
  return closed_ && events_.empty();
}

void RequestStream::SetNotify(std::function<void()> fn) {
  std::lock_guard lock(mu_);
  notify_ = std::move(fn);
}

void RequestStream::Push(EngineEvent event) {
  std::function<void()> notify;
  {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(event));
    notify = notify_;
  }
  cv_.notify_all();
  if (notify) notify();
}

void RequestStream::Close() {
  std::function<void()> notify;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    notify = notify_;
  }
  cv_.notify_all();
  if (notify) notify();
}

}  // namespace herd
