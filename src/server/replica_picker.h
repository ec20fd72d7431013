// Which instance of a model with several replicas (ModelEntry::devices: one instance per device)
// takes a request: the registry's routing rule, kept apart so it can be tested on its own.
//
// Rule (least busy, more replicas when all are busy):
// - serve: the loaded replica with the fewest requests in flight (the lowest index on a tie);
// - load: when every loaded replica is busy (or none is loaded and none is loading), the first
//   unloaded replica that can_load starts loading; with `serve` set the request does not wait
//   for it, later requests find it loaded (when nothing is loaded or loading, a replica that
//   cannot load is tried all the same: the request needs one);
// - wait: when none is loaded but some are loading, the loading one with the fewest waiters;
// - affinity: a request with a key (AffinityKey: the same user, or the same conversation, or the
//   same prompt prefix) prefers one replica chosen by rendezvous hashing of the key over the
//   replica indices, so a conversation's turns find their prefix in that replica's KV cache; it is
//   served there while that replica is loaded and has at most kAffinitySlack more requests in
//   flight than the least busy one, else by the least busy.
// Cost: one pass over the replicas.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "api/chat.h"
#include "server/model_registry.h"

namespace herd::server {

struct ReplicaView {
  ModelState state = ModelState::kUnloaded;
  int32_t active = 0;    // requests holding a lease on it
  size_t waiters = 0;    // requests waiting for it to load
  bool can_load = true;  // false: its last load failed moments ago (not tried again yet)
};

struct ReplicaChoice {
  int serve = -1;  // lease this loaded replica now
  int wait = -1;   // queue the request on this loading replica
  int load = -1;   // start loading this unloaded replica (the request waits on it if serve and wait are -1)
};

constexpr int32_t kAffinitySlack = 4;

ReplicaChoice PickReplica(std::span<const ReplicaView> replicas, std::optional<uint64_t> affinity = std::nullopt);

// The replica a key prefers among n (rendezvous hashing: adding a replica moves only the keys
// that now prefer it).
int PreferredReplica(uint64_t key, int n);

// Affinity keys. Chat: the request's user (OpenAI `user`, Anthropic `metadata.user_id`) when set,
// else its messages up to the first user message (system prompt and opening question: stable
// across the turns of one conversation). Completion: the first 1,024 bytes of the prompt.
uint64_t AffinityKey(const api::ChatRequest& chat);
uint64_t AffinityKey(const api::CompletionRequest& completion);

}  // namespace herd::server
