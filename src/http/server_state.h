// Internal to src/http: what the acceptor, the sessions and Stop() share. Not for handlers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "http/http_server.h"
#include "http/router.h"

namespace herd::http_internal {

class Session;

struct ServerState {
  ServerState(HttpServerConfig c, Router r) : config(std::move(c)), router(std::move(r)) {}

  const HttpServerConfig config;
  const Router router;
  std::atomic<bool> stopping{false};
  std::atomic<int> open_connections{0};

  // Live sessions, for Stop(). Guarded by mu; cv is notified when a session goes away.
  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;
};

}  // namespace herd::http_internal
