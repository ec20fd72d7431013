#include "server/replica_picker.h"

#include <string_view>

namespace herd::server {

namespace {

// FNV-1a over bytes, then a 64-bit finalizer (splitmix64) so nearby keys spread.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Hasher {
  uint64_t h = 0xcbf29ce484222325ull;
  void Add(std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;  // separator: ("ab", "c") differs from ("a", "bc")
  }
};

}  // namespace

int PreferredReplica(uint64_t key, int n) {
  int best = 0;
  uint64_t best_score = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t score = Mix(key ^ Mix(static_cast<uint64_t>(i)));
    if (i == 0 || score > best_score) best = i, best_score = score;
  }
  return best;
}

uint64_t AffinityKey(const api::ChatRequest& chat) {
  Hasher h;
  if (!chat.user.empty()) {
    h.Add("user");
    h.Add(chat.user);
    return h.h;
  }
  for (const api::ChatMessage& m : chat.messages) {
    h.Add(m.role);
    h.Add(m.content);
    if (m.role == "user") break;
  }
  return h.h;
}

uint64_t AffinityKey(const api::CompletionRequest& completion) {
  Hasher h;
  const std::string& p = completion.prompts.empty() ? completion.prompt : completion.prompts[0].text;
  h.Add(completion.system);
  h.Add(std::string_view(p).substr(0, 1024));
  return h.h;
}

ReplicaChoice PickReplica(std::span<const ReplicaView> replicas, std::optional<uint64_t> affinity) {
  ReplicaChoice c;
  int first_unloaded = -1, first_unloaded_any = -1;  // that can_load / any
  for (int i = 0; i < static_cast<int>(replicas.size()); ++i) {
    const ReplicaView& r = replicas[i];
    switch (r.state) {
      case ModelState::kLoaded:
        if (c.serve < 0 || r.active < replicas[c.serve].active) c.serve = i;
        break;
      case ModelState::kLoading:
        if (c.wait < 0 || r.waiters < replicas[c.wait].waiters) c.wait = i;
        break;
      case ModelState::kUnloaded:
        if (first_unloaded < 0 && r.can_load) first_unloaded = i;
        if (first_unloaded_any < 0) first_unloaded_any = i;
        break;
    }
  }
  if (c.serve >= 0) {
    c.wait = -1;
    // Every loaded replica is busy: bring up another one unless one is already on its way.
    bool loading = false;
    for (const ReplicaView& r : replicas) loading = loading || r.state == ModelState::kLoading;
    if (replicas[c.serve].active > 0 && !loading) c.load = first_unloaded;
    if (affinity) {
      const int p = PreferredReplica(*affinity, static_cast<int>(replicas.size()));
      if (replicas[p].state == ModelState::kLoaded && replicas[p].active <= replicas[c.serve].active + kAffinitySlack) {
        c.serve = p;
      }
    }
  } else if (c.wait < 0) {
    // Nothing serves or loads: this request needs a load even of a replica that just failed.
    c.load = first_unloaded >= 0 ? first_unloaded : first_unloaded_any;
  }
  return c;
}

}  // namespace herd::server
