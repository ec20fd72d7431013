// Which instance of a model with several replicas (ModelEntry::devices: one instance per device)
// takes a request: the registry's routing rule, kept apart so it can be tested on its own.
//
// Rule (least busy, more replicas when all are busy):
// - serve: the loaded replica with the fewest requests in flight (the lowest index on a tie);
// - load: when every loaded replica is busy (or none is loaded and none is loading), the first
//   unloaded replica starts loading; with `serve` set the request does not wait for it, later
//   requests find it loaded;
// - wait: when none is loaded but some are loading, the loading one with the fewest waiters.
// Cost: one pass over the replicas.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "server/model_registry.h"

namespace herd::server {

struct ReplicaView {
  ModelState state = ModelState::kUnloaded;
  int32_t active = 0;  // requests holding a lease on it
  size_t waiters = 0;  // requests waiting for it to load
};

struct ReplicaChoice {
  int serve = -1;  // lease this loaded replica now
  int wait = -1;   // queue the request on this loading replica
  int load = -1;   // start loading this unloaded replica (the request waits on it if serve and wait are -1)
};

ReplicaChoice PickReplica(std::span<const ReplicaView> replicas);

}  // namespace herd::server
