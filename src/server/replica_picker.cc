#include "server/replica_picker.h"

namespace herd::server {

ReplicaChoice PickReplica(std::span<const ReplicaView> replicas) {
  ReplicaChoice c;
  int first_unloaded = -1;
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
        if (first_unloaded < 0) first_unloaded = i;
        break;
    }
  }
  if (c.serve >= 0) {
    c.wait = -1;
    // Every loaded replica is busy: bring up another one unless one is already on its way.
    bool loading = false;
    for (const ReplicaView& r : replicas) loading = loading || r.state == ModelState::kLoading;
    if (replicas[c.serve].active > 0 && !loading) c.load = first_unloaded;
  } else if (c.wait < 0) {
    c.load = first_unloaded;
  }
  return c;
}

}  // namespace herd::server
