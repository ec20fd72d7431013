#include "server/model_registry.h"

#include <algorithm>
#include <utility>

#include "base/check.h"
#include "base/log.h"
#include "server/replica_picker.h"

namespace herd::server {

struct ModelRegistry::Slot {
  ModelEntry entry;
  ModelState state = ModelState::kUnloaded;
  std::unique_ptr<ModelInstance> instance;
  size_t bytes = 0;           // reserved while loading or loaded: the estimate
  double keep_alive_s = 300;  // this model's default
  bool fixed = false;         // AddLoaded: never unloaded
  bool unload_when_idle = false;
  bool retired = false;  // unregistered while serving: unloads and goes when the last lease does
  int32_t active = 0;
  Clock::time_point last_used{};
  std::optional<Clock::time_point> expires;  // idle deadline while loaded and idle; nullopt: never
  int64_t loaded_at = 0;
  std::vector<Waiter> waiters;
  int32_t replica = 0;  // index among the name's replicas
  int32_t load_failures = 0;
  std::optional<Clock::time_point> failed_at;  // the last failed load
  std::vector<std::unique_ptr<Slot>> extra;    // replicas 1.. (in replica 0's slot only)
};

template <typename F>
void ModelRegistry::ForEachSlot(F&& f) const {
  for (const auto& [name, s] : slots_) {
    f(s.get());
    for (const auto& r : s->extra) f(r.get());
  }
}

namespace {

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Gib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace

ModelRegistry::ModelRegistry(RegistryOptions options) : options_(std::move(options)) {}

ModelRegistry::~ModelRegistry() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (loader_.joinable()) loader_.join();
  // Unload every model before checking leases: stopping an engine ends its in-flight requests
  // (kCancelled), and a response that just finished may still hold its lease on the engine
  // thread until that thread returns; both release their leases here (Release needs the slots,
  // which live until the end of this destructor).
  std::vector<std::unique_ptr<ModelInstance>> instances;
  {
    std::lock_guard lock(mu_);
    ForEachSlot([&](Slot* s) {
      if (s->instance) instances.push_back(std::move(s->instance));
    });
    for (auto& s : retired_) {
      if (s->instance) instances.push_back(std::move(s->instance));
    }
  }
  instances.clear();
  ForEachSlot([](Slot* s) { HERD_CHECK_MSG(s->active == 0, "a model lease outlived the registry"); });
  HERD_CHECK_MSG(retired_.empty(), "a lease on a deleted model outlived the registry");
}

bool ModelRegistry::Register(ModelEntry entry) {
  const size_t n = std::max<size_t>(1, entry.devices.size());
  std::vector<std::unique_ptr<Slot>> replicas;
  for (size_t i = 0; i < n; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->entry = entry;
    if (!entry.devices.empty()) slot->entry.load.device = entry.devices[i];
    slot->replica = static_cast<int32_t>(i);
    auto estimate = ModelInstance::EstimateMemory(slot->entry.load);
    slot->bytes = estimate.ok() ? *estimate : entry.size_bytes;
    slot->keep_alive_s = entry.preload ? -1.0 : options_.default_keep_alive_s;
    if (i > 0) slot->entry.load.metrics = std::make_shared<EngineMetrics>();  // its own engine's
    replicas.push_back(std::move(slot));
  }
  std::lock_guard lock(mu_);
  auto& place = slots_[entry.name];
  if (place) {
    bool idle = place->state == ModelState::kUnloaded;
    for (const auto& r : place->extra) idle = idle && r->state == ModelState::kUnloaded;
    if (!idle) return false;
  }
  // The name's metrics (an entry copied from another name must not share that one's).
  replicas[0]->entry.load.metrics = place ? place->entry.load.metrics : std::make_shared<EngineMetrics>();
  for (size_t i = 1; i < n; ++i) replicas[0]->extra.push_back(std::move(replicas[i]));
  place = std::move(replicas[0]);
  return true;
}

bool ModelRegistry::Unregister(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(name);
  if (it == slots_.end() || it->second->fixed || it->second->state == ModelState::kLoading) return false;
  Slot* s = it->second.get();
  if (!s->extra.empty()) {  // replicas: only when none is loading or in use
    bool idle = s->active == 0;
    for (const auto& r : s->extra) idle = idle && r->active == 0 && r->state != ModelState::kLoading;
    if (!idle) return false;
    for (auto& r : s->extra) {
      if (r->state == ModelState::kLoaded) {
        unload_.push_back(std::move(r->instance));
        reserved_bytes_ -= r->bytes;
        --n_resident_;
      }
    }
  }
  if (s->active > 0) {  // serving: the name goes now, the model when its requests end (Release)
    s->retired = true;
    retired_.push_back(std::move(it->second));
    slots_.erase(it);
    return true;
  }
  if (s->state == ModelState::kLoaded) {
    unload_.push_back(std::move(s->instance));
    reserved_bytes_ -= s->bytes;
    --n_resident_;
  }
  slots_.erase(it);
  cv_.notify_all();
  return true;
}

void ModelRegistry::AddLoaded(std::unique_ptr<ModelInstance> model) {
  auto slot = std::make_unique<Slot>();
  slot->entry.name = model->name();
  slot->entry.load.path = model->path();
  slot->entry.load.name = model->name();
  slot->entry.load.metrics = model->engine().metrics();
  slot->entry.size_bytes = model->file_size();
  slot->entry.modified = model->created();
  slot->bytes = model->memory_bytes();
  slot->fixed = true;
  slot->state = ModelState::kLoaded;
  slot->loaded_at = model->created();
  slot->instance = std::move(model);
  std::lock_guard lock(mu_);
  reserved_bytes_ += slot->bytes;
  ++n_resident_;
  slots_[slot->entry.name] = std::move(slot);
}

void ModelRegistry::Start() {
  std::lock_guard lock(mu_);
  if (loader_.joinable()) return;
  ForEachSlot([&](Slot* s) {
    if (!s->entry.preload || s->state != ModelState::kUnloaded) return;
    api::ApiError error;
    if (!Reserve(s, &error)) {
      HERD_LOG(kWarn, "%s: not preloaded: %s", s->entry.name.c_str(), error.message.c_str());
      return;
    }
    s->state = ModelState::kLoading;
    load_queue_.push_back(s);
  });
  loader_ = std::thread([this] { Run(); });
}

ModelRegistry::Slot* ModelRegistry::FindSlot(const std::string& name) const {
  auto it = slots_.find(name);
  if (it == slots_.end()) it = slots_.find(OllamaFullName(name));  // "llama3" names "llama3:latest"
  constexpr std::string_view kLatest = ":latest";                  // and "tiny:latest" names "tiny"
  if (it == slots_.end() && name.size() > kLatest.size() && name.ends_with(kLatest)) {
    it = slots_.find(name.substr(0, name.size() - kLatest.size()));
  }
  return it == slots_.end() ? nullptr : it->second.get();
}

std::optional<ModelEntry> ModelRegistry::Find(const std::string& name) const {
  std::lock_guard lock(mu_);
  const Slot* s = FindSlot(name);
  if (s == nullptr) return std::nullopt;
  return s->entry;
}

std::vector<ModelEntry> ModelRegistry::Entries() const {
  std::lock_guard lock(mu_);
  std::vector<ModelEntry> out;
  for (const auto& [name, s] : slots_) out.push_back(s->entry);
  return out;
}

std::vector<ModelStatus> ModelRegistry::Status() const {
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  const int64_t unix_now = UnixNow();
  std::vector<ModelStatus> out;
  ForEachSlot([&](const Slot* s) {
    ModelStatus st;
    st.replica = s->replica;
    st.load_failures = s->load_failures;
    st.replicas = static_cast<int32_t>(std::max<size_t>(1, s->entry.devices.size()));
    st.entry = s->entry;
    st.state = s->state;
    st.active_leases = s->active;
    st.memory_bytes = s->instance ? s->instance->memory_bytes() : s->bytes;
    st.device_bytes = s->instance ? s->instance->device_memory_bytes() : 0;
    st.loaded_at = s->loaded_at;
    st.n_ctx = s->instance ? s->instance->n_ctx() : 0;
    if (s->state == ModelState::kLoaded && s->active == 0) {
      st.expires_at = (s->fixed || !s->expires)
                          ? -1
                          : unix_now + std::chrono::duration_cast<std::chrono::seconds>(*s->expires - now).count();
    }
    out.push_back(std::move(st));
  });
  return out;
}

bool ModelRegistry::Loading() const {
  std::lock_guard lock(mu_);
  bool loading = false;
  ForEachSlot([&](const Slot* s) { loading = loading || (s->entry.preload && s->state == ModelState::kLoading); });
  return loading;
}

bool ModelRegistry::UnloadWhenIdle(const std::string& name) {
  std::lock_guard lock(mu_);
  Slot* g = FindSlot(name);
  if (g == nullptr) return false;
  std::vector<Slot*> replicas = {g};
  for (auto& r : g->extra) replicas.push_back(r.get());
  for (Slot* s : replicas) {
    if (s->state == ModelState::kLoaded && !s->fixed) {
      if (s->active == 0) {
        s->expires = Clock::now();
      } else {
        s->unload_when_idle = true;
      }
    }
  }
  cv_.notify_all();
  return true;
}

void ModelRegistry::SetOllamaStore(std::string root, ModelInstanceOptions entry_defaults) {
  std::lock_guard lock(mu_);
  ollama_store_ = std::move(root);
  entry_defaults_ = std::move(entry_defaults);
}

std::string ModelRegistry::ollama_store() const {
  std::lock_guard lock(mu_);
  return ollama_store_;
}

ModelInstanceOptions ModelRegistry::entry_defaults() const {
  std::lock_guard lock(mu_);
  return entry_defaults_;
}

void ModelRegistry::Acquire(const std::string& name, std::optional<double> keep_alive_s, Done done,
                            std::optional<uint64_t> affinity) {
  std::unique_lock lock(mu_);
  Slot* s = FindSlot(name);
  if (s == nullptr) {
    lock.unlock();
    return done(nullptr, {api::ErrorKind::kNotFound, "model '" + name + "' not found", "model", "model_not_found"});
  }
  if (!s->extra.empty()) {  // replicas: the least busy one; load another when all are busy
    std::vector<Slot*> replicas = {s};
    for (auto& r : s->extra) replicas.push_back(r.get());
    std::vector<ReplicaView> views;
    const auto now = Clock::now();
    const auto retry = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kReplicaRetrySeconds));
    for (const Slot* r : replicas) {
      views.push_back({r->state, r->active, r->waiters.size(), !r->failed_at || now - *r->failed_at >= retry});
    }
    const ReplicaChoice c = PickReplica(views, affinity);
    if (c.load >= 0) {
      Slot* l = replicas[c.load];
      api::ApiError error;
      // A replica loaded to share work (the request is served meanwhile) uses free room only: it
      // does not push other models out.
      if (Reserve(l, &error, /*evict=*/c.serve < 0)) {
        l->state = ModelState::kLoading;
        load_queue_.push_back(l);
        cv_.notify_all();
        if (c.serve < 0) {
          l->waiters.push_back({std::move(done), keep_alive_s});
          return;
        }
      } else if (c.serve < 0) {
        lock.unlock();
        return done(nullptr, error);
      }
    }
    if (c.serve >= 0) {
      ModelLease lease = MakeLease(replicas[c.serve], keep_alive_s);
      lock.unlock();
      return done(std::move(lease), {});
    }
    HERD_CHECK(c.wait >= 0);
    replicas[c.wait]->waiters.push_back({std::move(done), keep_alive_s});
    return;
  }
  switch (s->state) {
    case ModelState::kLoaded: {
      ModelLease lease = MakeLease(s, keep_alive_s);
      lock.unlock();
      return done(std::move(lease), {});
    }
    case ModelState::kLoading: s->waiters.push_back({std::move(done), keep_alive_s}); return;
    case ModelState::kUnloaded: {
      api::ApiError error;
      if (!Reserve(s, &error)) {
        lock.unlock();
        return done(nullptr, error);
      }
      s->state = ModelState::kLoading;
      s->waiters.push_back({std::move(done), keep_alive_s});
      load_queue_.push_back(s);
      cv_.notify_all();
      return;
    }
  }
}

ModelLease ModelRegistry::MakeLease(Slot* s, std::optional<double> keep_alive_s) {
  ++s->active;
  s->expires.reset();
  const double keep = keep_alive_s.value_or(s->keep_alive_s);
  std::shared_ptr<void> guard(nullptr, [this, s, keep](void*) { Release(s, keep); });
  return ModelLease(guard, s->instance.get());
}

void ModelRegistry::Release(Slot* s, double keep_alive_s) {
  std::lock_guard lock(mu_);
  HERD_CHECK(s->active > 0);
  --s->active;
  s->last_used = Clock::now();
  if (s->active > 0 || s->fixed) return;
  if (s->retired) {
    if (s->instance) unload_.push_back(std::move(s->instance));  // null while the destructor unloads
    reserved_bytes_ -= s->bytes;
    --n_resident_;
    std::erase_if(retired_, [s](const std::unique_ptr<Slot>& r) { return r.get() == s; });
    cv_.notify_all();
    return;
  }
  if (s->unload_when_idle || keep_alive_s == 0) {
    s->expires = s->last_used;
  } else if (keep_alive_s < 0) {
    s->expires.reset();
  } else {
    s->expires =
        s->last_used + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(keep_alive_s));
  }
  s->unload_when_idle = false;
  cv_.notify_all();
}

bool ModelRegistry::Reserve(Slot* s, api::ApiError* error, bool evict) {
  const size_t budget = options_.memory_budget_bytes;
  if (budget > 0 && s->bytes > budget) {
    *error = {
        api::ErrorKind::kUnavailable,
        "model '" + s->entry.name + "' needs " + Gib(s->bytes) + ", more than the memory budget of " + Gib(budget),
        "model", "model_too_large"};
    return false;
  }
  const auto fits = [&] {
    return (budget == 0 || reserved_bytes_ + s->bytes <= budget) &&
           (options_.max_loaded_models <= 0 || n_resident_ < options_.max_loaded_models);
  };
  while (!fits()) {
    Slot* victim = nullptr;  // the least recently used idle model (or replica)
    ForEachSlot([&](Slot* o) {
      if (evict && o->state == ModelState::kLoaded && o->active == 0 && !o->fixed &&
          (victim == nullptr || o->last_used < victim->last_used)) {
        victim = o;
      }
    });
    if (victim == nullptr) {
      *error = {api::ErrorKind::kUnavailable,
                "model '" + s->entry.name + "' does not fit next to the models in use (needs " + Gib(s->bytes) + ", " +
                    Gib(reserved_bytes_) + " of " + Gib(budget) + " reserved); retry when they are idle",
                "model", "model_busy"};
      return false;
    }
    HERD_LOG(kInfo, "unloading '%s' (least recently used) to load '%s'", victim->entry.name.c_str(),
             s->entry.name.c_str());
    victim->state = ModelState::kUnloaded;
    victim->expires.reset();
    unload_.push_back(std::move(victim->instance));
    reserved_bytes_ -= victim->bytes;
    --n_resident_;
  }
  reserved_bytes_ += s->bytes;
  ++n_resident_;
  return true;
}

void ModelRegistry::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    const auto now = Clock::now();
    std::optional<Clock::time_point> next;
    ForEachSlot([&](Slot* s) {
      if (s->state != ModelState::kLoaded || s->active > 0 || s->fixed || !s->expires) return;
      if (*s->expires <= now) {
        HERD_LOG(kInfo, "unloading idle model '%s' (replica %d)", s->entry.name.c_str(), s->replica);
        s->state = ModelState::kUnloaded;
        s->expires.reset();
        unload_.push_back(std::move(s->instance));
        reserved_bytes_ -= s->bytes;
        --n_resident_;
      } else if (!next || *s->expires < *next) {
        next = s->expires;
      }
    });
    if (!unload_.empty()) {
      auto victims = std::move(unload_);
      unload_.clear();
      lock.unlock();
      victims.clear();  // stops engines, saves prefix caches
      lock.lock();
      continue;
    }
    if (stop_) break;
    if (!load_queue_.empty()) {
      Slot* s = load_queue_.front();
      load_queue_.erase(load_queue_.begin());
      lock.unlock();
      LoadSlot(s);
      lock.lock();
      continue;
    }
    if (next) {
      cv_.wait_until(lock, *next);
    } else {
      cv_.wait(lock);
    }
  }
  // Shutting down: queued loads fail.
  for (Slot* s : load_queue_) {
    auto waiters = std::move(s->waiters);
    s->waiters.clear();
    s->state = ModelState::kUnloaded;
    lock.unlock();
    for (auto& w : waiters) w.done(nullptr, {api::ErrorKind::kUnavailable, "the server is shutting down", "", ""});
    lock.lock();
  }
  load_queue_.clear();
}

void ModelRegistry::LoadSlot(Slot* s) {
  const auto started = Clock::now();
  auto loaded = ModelInstance::Load(s->entry.load);  // s->entry does not change while loading
  std::vector<std::pair<Done, ModelLease>> ready;
  api::ApiError error;
  {
    std::lock_guard lock(mu_);
    if (!loaded.ok()) {
      s->state = ModelState::kUnloaded;
      ++s->load_failures;
      s->failed_at = Clock::now();
      reserved_bytes_ -= s->bytes;
      --n_resident_;
      const std::string& why = loaded.status().message();
      const std::string& path = s->entry.load.path;
      error = {api::ErrorKind::kInternal, why.find(path) == std::string::npos ? path + ": " + why : why, "model", ""};
      HERD_LOG(kError, "loading '%s' failed: %s", s->entry.name.c_str(), error.message.c_str());
      for (auto& w : s->waiters) ready.emplace_back(std::move(w.done), nullptr);
    } else {
      s->instance = std::move(loaded).value();
      s->state = ModelState::kLoaded;
      s->loaded_at = UnixNow();
      s->last_used = Clock::now();
      s->instance->set_load_seconds(std::chrono::duration<double>(s->last_used - started).count());
      HERD_LOG(kInfo, "loaded '%s' in %.2f s", s->entry.name.c_str(), s->instance->load_seconds());
      for (auto& w : s->waiters) ready.emplace_back(std::move(w.done), MakeLease(s, w.keep_alive_s));
      if (s->waiters.empty()) {  // a preload: idle from now on
        s->expires.reset();
        if (s->keep_alive_s >= 0) {
          s->expires = s->last_used +
                       std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s->keep_alive_s));
        }
      }
    }
    s->waiters.clear();
  }
  for (auto& [done, lease] : ready) done(std::move(lease), error);
}

}  // namespace herd::server
