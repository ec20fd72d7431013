// The models this process serves, by API id: loads them on first use, keeps them while requests
// use them and for keep_alive after, unloads idle ones, and evicts least-recently-used idle models
// when a model to load does not fit the memory budget.
//
// Contract:
// - Acquire(name, ...) calls `done` exactly once, with a lease on the loaded model or an error:
//   at once when the model is loaded; after loading otherwise (on the registry's loader thread;
//   concurrent requests for a loading model wait for the one load). Errors: unknown model (404),
//   the model cannot fit even after evicting every idle model (503, models busy), load failure
//   (500 naming the file).
// - A lease (ModelLease, a shared_ptr) keeps the model loaded. When the last copy of a lease
//   goes, the model's idle deadline becomes now + keep_alive of that request (default: the
//   registry's; < 0: never; 0: unload at once). Models registered with `preload` load at Start
//   and default to never unloading.
// - Replicas (ModelEntry::devices): one instance per device under one name, each loaded, kept
//   and unloaded like a model of its own (memory budget, keep_alive, LRU eviction); a request
//   goes to the loaded replica with the fewest requests in flight, and when all are busy the
//   next unloaded replica starts loading (PickReplica); a replica whose load failed is not tried
//   again for that for kReplicaRetrySeconds. Status lists each replica; its metrics are its own
//   (the first replica's are the name's).
// - Memory: a model's estimate is its file size (weights are used in place from the mapping)
//   plus its KV pool; the sum over loading and loaded models never exceeds the budget.
// - Metrics: each name gets one EngineMetrics (entry.load.metrics, also in ModelStatus::entry)
//   that every load of the model records into, so counters survive unloads and reloads (and
//   a re-Register of the same name); an unloaded model's gauges read 0.
// - Costs: Acquire on a loaded model is a map lookup under one mutex; loads and unloads run on
//   one background thread, never on the caller's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/api_error.h"
#include "server/model_catalog.h"
#include "server/model_instance.h"

namespace herd::server {

using ModelLease = std::shared_ptr<ModelInstance>;

// A replica whose load failed is loaded again to share the work only after this long.
constexpr double kReplicaRetrySeconds = 30;

struct RegistryOptions {
  size_t memory_budget_bytes = 0;     // 0: no limit
  int32_t max_loaded_models = 0;      // 0: no limit
  double default_keep_alive_s = 300;  // Ollama's 5m
};

enum class ModelState { kUnloaded, kLoading, kLoaded };

// One model as /api/ps and /v1/status show it.
struct ModelStatus {
  ModelEntry entry;
  ModelState state = ModelState::kUnloaded;
  int32_t active_leases = 0;
  size_t memory_bytes = 0;  // estimate while loading; measured once loaded
  size_t device_bytes = 0;  // GPU memory held once loaded (weights + KV pool); 0 on the CPU
  // Unix seconds at which an idle model unloads; 0 while in use, -1 when kept loaded forever.
  int64_t expires_at = 0;
  int64_t loaded_at = 0;
  int32_t n_ctx = 0;                  // the loaded engine's context length; 0 while not loaded
  int32_t replica = 0, replicas = 1;  // which instance of the model (entry.load.device is its device)
  int32_t load_failures = 0;          // loads of this instance that failed since it was registered
};

class ModelRegistry {
 public:
  using Done = std::function<void(ModelLease lease, const api::ApiError& error)>;

  explicit ModelRegistry(RegistryOptions options = {});
  ~ModelRegistry();  // stops the loader thread and unloads every model; leases must be gone

  // Adds or replaces the entry named entry.name. Returns false (and changes nothing) if a model
  // of that name is loading or loaded.
  bool Register(ModelEntry entry);
  // Removes the entry: at once if idle (unloading it if loaded); if requests are using it, its name
  // goes now (new requests get 404) and the model unloads when the last of them ends. False if
  // unknown, loading, or added with AddLoaded; with replicas, also while any replica is in use.
  bool Unregister(const std::string& name);

  // Adds an already loaded model (tests, embedders); it stays loaded until the registry goes.
  void AddLoaded(std::unique_ptr<ModelInstance> model);

  // Starts the loader thread and loads the preload entries in the background.
  void Start();

  // keep_alive_s: this request's keep_alive; nullopt: the model's default. affinity: the request's
  // AffinityKey (replica_picker.h), which a model with replicas uses to keep a conversation on
  // one replica; ignored otherwise.
  void Acquire(const std::string& name, std::optional<double> keep_alive_s, Done done,
               std::optional<uint64_t> affinity = std::nullopt);

  // The entry for `name` (exact, or with Ollama's ":latest" added), if registered.
  std::optional<ModelEntry> Find(const std::string& name) const;
  std::vector<ModelEntry> Entries() const;  // sorted by name
  std::vector<ModelStatus> Status() const;  // sorted by name
  // True while any preload entry is still loading (GET /health answers 503 then).
  bool Loading() const;

  // Unloads `name` once idle (Ollama's keep_alive 0 load request); false if unknown.
  bool UnloadWhenIdle(const std::string& name);

  // The Ollama store that /api/pull, /api/copy and /api/delete write to (empty: none; those
  // routes then work only on in-memory entries) and the load options of entries added at run
  // time (pulled or copied models). Thread-safe.
  void SetOllamaStore(std::string root, ModelInstanceOptions entry_defaults);
  std::string ollama_store() const;
  ModelInstanceOptions entry_defaults() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot;
  struct Waiter {
    Done done;
    std::optional<double> keep_alive_s;
  };

  Slot* FindSlot(const std::string& name) const;  // mu_ held
  template <typename F>
  void ForEachSlot(F&& f) const;                                         // every replica; mu_ held
  ModelLease MakeLease(Slot* slot, std::optional<double> keep_alive_s);  // mu_ held
  void Release(Slot* slot, double keep_alive_s);
  // Reserves memory for `slot`, by evicting idle models (moved to unload_) if `evict`; mu_ held.
  bool Reserve(Slot* slot, api::ApiError* error, bool evict = true);
  void Run();  // loader thread
  void LoadSlot(Slot* slot);

  RegistryOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::unique_ptr<Slot>> slots_;
  std::vector<std::unique_ptr<Slot>> retired_;  // unregistered while leased; see Unregister
  std::vector<Slot*> load_queue_;
  std::vector<std::unique_ptr<ModelInstance>> unload_;
  size_t reserved_bytes_ = 0;
  int32_t n_resident_ = 0;  // loading or loaded
  bool stop_ = false;
  std::string ollama_store_;
  ModelInstanceOptions entry_defaults_;
  std::thread loader_;
};

}  // namespace herd::server
