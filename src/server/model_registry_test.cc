#include "server/model_registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "model/test_models.h"

namespace herd::server {
namespace {

namespace fs = std::filesystem;

ModelInstanceOptions TinyOptions() {
  ModelInstanceOptions o;
  o.path = testing::TestModelPath("tiny", "F32");
  o.threads = 1;
  o.n_ctx = 256;
  return o;
}

ModelEntry Entry(const std::string& name, bool preload = false) {
  auto e = FileEntry(TinyOptions().path, name, TinyOptions());
  EXPECT_TRUE(e.ok());
  e->preload = preload;
  return *e;
}

struct Acquired {
  ModelLease lease;
  api::ApiError error;
};

// Acquire, waiting for the callback.
Acquired AcquireNow(ModelRegistry& r, const std::string& name, std::optional<double> keep_alive = std::nullopt) {
  std::promise<Acquired> p;
  r.Acquire(name, keep_alive, [&p](ModelLease lease, const api::ApiError& e) { p.set_value({std::move(lease), e}); });
  return p.get_future().get();
}

// The state of `name`'s replica `replica` (0 for a model without replicas).
ModelState ReplicaState(const ModelRegistry& r, const std::string& name, int replica) {
  for (const auto& s : r.Status()) {
    if (s.entry.name == name && s.replica == replica) return s.state;
  }
  return ModelState::kUnloaded;
}
ModelState StateOf(const ModelRegistry& r, const std::string& name) { return ReplicaState(r, name, 0); }

// Polls until the replica reaches `state` (the loader thread loads and unloads asynchronously);
// 20 s at most.
bool WaitForReplica(const ModelRegistry& r, const std::string& name, int replica, ModelState state) {
  for (int i = 0; i < 2000; ++i) {
    if (ReplicaState(r, name, replica) == state) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}
bool WaitForState(const ModelRegistry& r, const std::string& name, ModelState state) {
  return WaitForReplica(r, name, 0, state);
}

TEST(ModelRegistryTest, LoadsOnFirstUseOnceForConcurrentRequests) {
  ModelRegistry r;
  ASSERT_TRUE(r.Register(Entry("a")));
  r.Start();
  EXPECT_EQ(StateOf(r, "a"), ModelState::kUnloaded);
  std::vector<std::promise<Acquired>> promises(6);
  for (auto& p : promises) {
    r.Acquire("a", std::nullopt, [&p](ModelLease l, const api::ApiError& e) { p.set_value({std::move(l), e}); });
  }
  std::vector<Acquired> got;
  for (auto& p : promises) got.push_back(p.get_future().get());
  for (const auto& g : got) {
    ASSERT_NE(g.lease, nullptr) << g.error.message;
    EXPECT_EQ(g.lease.get(), got[0].lease.get());  // one instance: loaded once
  }
  const auto status = r.Status();
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(status[0].state, ModelState::kLoaded);
  EXPECT_EQ(status[0].active_leases, 6);
  EXPECT_EQ(status[0].expires_at, 0);  // in use
  got.clear();
  EXPECT_EQ(r.Status()[0].active_leases, 0);
  EXPECT_GT(r.Status()[0].expires_at, 0);  // idle: unloads after the default 5 minutes
}

TEST(ModelRegistryTest, UnknownModelIsNotFoundAndOllamaNamesResolve) {
  ModelRegistry r;
  ASSERT_TRUE(r.Register(Entry("llama3:latest")));
  r.Start();
  const Acquired missing = AcquireNow(r, "nope");
  EXPECT_EQ(missing.lease, nullptr);
  EXPECT_EQ(missing.error.kind, api::ErrorKind::kNotFound);
  EXPECT_TRUE(r.Find("llama3").has_value());
  EXPECT_EQ(r.Find("llama3")->name, "llama3:latest");
  EXPECT_NE(AcquireNow(r, "llama3").lease, nullptr);
  ASSERT_TRUE(r.Register(Entry("tiny")));
  EXPECT_EQ(r.Find("tiny:latest")->name, "tiny");
  EXPECT_FALSE(r.Find("tiny:8b").has_value());
}

TEST(ModelRegistryTest, KeepAliveZeroUnloadsWhenTheLastLeaseGoes) {
  ModelRegistry r;
  ASSERT_TRUE(r.Register(Entry("a")));
  r.Start();
  Acquired first = AcquireNow(r, "a", 0.0);
  Acquired second = AcquireNow(r, "a", 0.0);
  ASSERT_NE(first.lease, nullptr);
  first = {};
  EXPECT_EQ(StateOf(r, "a"), ModelState::kLoaded);  // still in use by `second`
  second = {};
  EXPECT_TRUE(WaitForState(r, "a", ModelState::kUnloaded));
  EXPECT_NE(AcquireNow(r, "a").lease, nullptr);  // loads again
}

TEST(ModelRegistryTest, NegativeKeepAliveAndPreloadKeepTheModel) {
  ModelRegistry r(RegistryOptions{0, 0, 0.0});  // default keep_alive 0: unload at once
  ASSERT_TRUE(r.Register(Entry("pinned", /*preload=*/true)));
  ASSERT_TRUE(r.Register(Entry("b")));
  r.Start();
  EXPECT_TRUE(WaitForState(r, "pinned", ModelState::kLoaded));
  EXPECT_FALSE(r.Loading());
  { const Acquired a = AcquireNow(r, "b", -1.0); }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(StateOf(r, "b"), ModelState::kLoaded);
  EXPECT_EQ(StateOf(r, "pinned"), ModelState::kLoaded);
  for (const auto& s : r.Status()) EXPECT_EQ(s.expires_at, -1) << s.entry.name;
  // Ollama's unload request.
  EXPECT_TRUE(r.UnloadWhenIdle("b"));
  EXPECT_TRUE(WaitForState(r, "b", ModelState::kUnloaded));
}

TEST(ModelRegistryTest, BudgetEvictsTheLeastRecentlyUsedIdleModel) {
  const size_t one = *ModelInstance::EstimateMemory(TinyOptions());
  RegistryOptions o;
  o.memory_budget_bytes = 2 * one + one / 2;  // room for two
  ModelRegistry r(o);
  for (const char* n : {"a", "b", "c"}) ASSERT_TRUE(r.Register(Entry(n)));
  r.Start();
  { const Acquired a = AcquireNow(r, "a"); }
  { const Acquired b = AcquireNow(r, "b"); }
  { const Acquired a = AcquireNow(r, "a"); }  // b is now the least recently used
  const Acquired c = AcquireNow(r, "c");
  ASSERT_NE(c.lease, nullptr) << c.error.message;
  EXPECT_EQ(StateOf(r, "a"), ModelState::kLoaded);
  EXPECT_EQ(StateOf(r, "b"), ModelState::kUnloaded);
  EXPECT_EQ(StateOf(r, "c"), ModelState::kLoaded);
}

TEST(ModelRegistryTest, BusyModelsAreNotEvictedAndTheRequestGets503) {
  const size_t one = *ModelInstance::EstimateMemory(TinyOptions());
  RegistryOptions o;
  o.memory_budget_bytes = one + one / 2;  // room for one
  ModelRegistry r(o);
  for (const char* n : {"a", "b"}) ASSERT_TRUE(r.Register(Entry(n)));
  r.Start();
  Acquired a = AcquireNow(r, "a");
  ASSERT_NE(a.lease, nullptr);
  const Acquired b = AcquireNow(r, "b");
  EXPECT_EQ(b.lease, nullptr);
  EXPECT_EQ(b.error.kind, api::ErrorKind::kUnavailable);
  EXPECT_EQ(api::HttpStatusFor(b.error.kind), 503);
  EXPECT_NE(b.error.message.find("does not fit"), std::string::npos) << b.error.message;
  a = {};
  EXPECT_NE(AcquireNow(r, "b").lease, nullptr);  // a is idle now: evicted
  EXPECT_EQ(StateOf(r, "a"), ModelState::kUnloaded);
}

TEST(ModelRegistryTest, ModelLargerThanTheBudgetIsRefused) {
  RegistryOptions o;
  o.memory_budget_bytes = 1024;
  ModelRegistry r(o);
  ASSERT_TRUE(r.Register(Entry("a")));
  r.Start();
  const Acquired a = AcquireNow(r, "a");
  EXPECT_EQ(a.lease, nullptr);
  EXPECT_EQ(a.error.code, "model_too_large");
}

TEST(ModelRegistryTest, MaxLoadedModels) {
  RegistryOptions o;
  o.max_loaded_models = 1;
  ModelRegistry r(o);
  for (const char* n : {"a", "b"}) ASSERT_TRUE(r.Register(Entry(n)));
  r.Start();
  { const Acquired a = AcquireNow(r, "a"); }
  EXPECT_NE(AcquireNow(r, "b").lease, nullptr);
  EXPECT_EQ(StateOf(r, "a"), ModelState::kUnloaded);
}

TEST(ModelRegistryTest, LoadFailureNamesTheFileAndLeavesTheModelUnloaded) {
  const fs::path bad = fs::temp_directory_path() / ("herd-bad-" + std::to_string(::getpid()) + ".gguf");
  std::ofstream(bad) << "not a gguf file";
  ModelRegistry r;
  auto e = FileEntry(bad.string(), "bad", TinyOptions());
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(r.Register(*e));
  r.Start();
  const Acquired got = AcquireNow(r, "bad");
  EXPECT_EQ(got.lease, nullptr);
  EXPECT_EQ(got.error.kind, api::ErrorKind::kInternal);
  EXPECT_NE(got.error.message.find(bad.string()), std::string::npos) << got.error.message;
  EXPECT_EQ(StateOf(r, "bad"), ModelState::kUnloaded);
  fs::remove(bad);
}

TEST(ModelRegistryTest, RegisterAndUnregisterRespectLoadedModels) {
  ModelRegistry r;
  ASSERT_TRUE(r.Register(Entry("a")));
  r.Start();
  Acquired a = AcquireNow(r, "a");
  EXPECT_FALSE(r.Register(Entry("a")));  // loaded: not replaced
  a = {};
  EXPECT_TRUE(r.Unregister("a"));
  EXPECT_FALSE(r.Find("a").has_value());
  EXPECT_FALSE(r.Unregister("a"));
}

TEST(ModelRegistryTest, UnregisterWhileServingRemovesTheNameAndUnloadsAfterTheLastLease) {
  RegistryOptions options;
  options.max_loaded_models = 1;
  ModelRegistry r(options);
  ASSERT_TRUE(r.Register(Entry("a")));
  ASSERT_TRUE(r.Register(Entry("b")));
  r.Start();
  Acquired a = AcquireNow(r, "a");
  ASSERT_NE(a.lease, nullptr);
  EXPECT_TRUE(r.Unregister("a"));  // in use: the name goes at once
  EXPECT_FALSE(r.Find("a").has_value());
  EXPECT_EQ(AcquireNow(r, "a").error.kind, api::ErrorKind::kNotFound);
  EXPECT_FALSE(r.Unregister("a"));
  EXPECT_EQ(a.lease->name(), "a");  // the running request keeps its model
  // Still resident: "b" does not fit next to it.
  EXPECT_EQ(AcquireNow(r, "b").error.kind, api::ErrorKind::kUnavailable);
  a = {};  // the last lease: "a" unloads and frees its place
  Acquired b = AcquireNow(r, "b");
  EXPECT_NE(b.lease, nullptr) << b.error.message;
}

// Replicas: two instances of the tiny model on the CPU (the routing does not depend on the device).
ModelEntry Replicated(const std::string& name, bool preload = false) {
  ModelEntry e = Entry(name, preload);
  e.devices = {DeviceSpec{}, DeviceSpec{}};
  return e;
}

TEST(ModelRegistryReplicasTest, LeastBusyReplicaServesAndAnotherLoadsWhenAllAreBusy) {
  ModelRegistry r;
  ASSERT_TRUE(r.Register(Replicated("a")));
  r.Start();
  Acquired a1 = AcquireNow(r, "a");  // loads the first replica only
  ASSERT_NE(a1.lease, nullptr) << a1.error.message;
  const ModelInstance* first = a1.lease.get();
  auto status = r.Status();
  ASSERT_EQ(status.size(), 2u);
  EXPECT_EQ(status[0].replica, 0);
  EXPECT_EQ(status[1].replica, 1);
  EXPECT_EQ(status[0].replicas, 2);
  EXPECT_EQ(status[0].state, ModelState::kLoaded);
  EXPECT_EQ(status[1].state, ModelState::kUnloaded);
  EXPECT_EQ(r.Entries().size(), 1u);  // one model name

  Acquired a2 = AcquireNow(r, "a");  // the only loaded replica is busy: served by it, the second loads
  EXPECT_EQ(a2.lease.get(), first);
  ASSERT_TRUE(WaitForReplica(r, "a", 1, ModelState::kLoaded));
  Acquired a3 = AcquireNow(r, "a");  // the idle second replica
  ASSERT_NE(a3.lease, nullptr);
  const ModelInstance* second = a3.lease.get();
  EXPECT_NE(second, first);
  Acquired a4 = AcquireNow(r, "a");  // 2 in flight on the first, 1 on the second
  EXPECT_EQ(a4.lease.get(), second);
  a1 = {};
  a2 = {};  // the first is idle again
  Acquired a5 = AcquireNow(r, "a");
  EXPECT_EQ(a5.lease.get(), first);
  for (const auto& st : r.Status()) EXPECT_EQ(st.active_leases, st.replica == 0 ? 1 : 2);
}

TEST(ModelRegistryReplicasTest, PreloadLoadsEveryReplicaAndEachHasItsOwnEngine) {
  ModelRegistry r;
  ASSERT_TRUE(r.Register(Replicated("a", /*preload=*/true)));
  r.Start();
  ASSERT_TRUE(WaitForReplica(r, "a", 0, ModelState::kLoaded));
  ASSERT_TRUE(WaitForReplica(r, "a", 1, ModelState::kLoaded));
  EXPECT_FALSE(r.Loading());
  Acquired a = AcquireNow(r, "a");
  Acquired b = AcquireNow(r, "a");
  ASSERT_NE(a.lease, nullptr);
  ASSERT_NE(b.lease, nullptr);
  EXPECT_NE(a.lease.get(), b.lease.get());
  EXPECT_NE(&a.lease->engine(), &b.lease->engine());
  const auto status = r.Status();
  ASSERT_EQ(status.size(), 2u);
  EXPECT_NE(status[0].entry.load.metrics, status[1].entry.load.metrics);
}

TEST(ModelRegistryReplicasTest, UnregisterOnlyWhenNoReplicaIsInUse) {
  ModelRegistry r;
  ASSERT_TRUE(r.Register(Replicated("a")));
  r.Start();
  Acquired a1 = AcquireNow(r, "a");
  Acquired a2 = AcquireNow(r, "a");
  ASSERT_TRUE(WaitForReplica(r, "a", 1, ModelState::kLoaded));
  EXPECT_FALSE(r.Register(Replicated("a")));  // loaded: not replaced
  EXPECT_FALSE(r.Unregister("a"));            // in use
  a1 = {};
  a2 = {};
  EXPECT_TRUE(r.Unregister("a"));
  EXPECT_FALSE(r.Find("a").has_value());
  EXPECT_TRUE(r.Status().empty());
}

TEST(ModelRegistryReplicasTest, BudgetCountsEveryReplica) {
  ModelEntry e = Replicated("a");
  RegistryOptions options;
  options.max_loaded_models = 1;  // room for one instance only
  ModelRegistry r(options);
  ASSERT_TRUE(r.Register(e));
  r.Start();
  Acquired a1 = AcquireNow(r, "a");
  ASSERT_NE(a1.lease, nullptr);
  Acquired a2 = AcquireNow(r, "a");  // all busy, but a second replica does not fit: served by the first
  EXPECT_EQ(a2.lease.get(), a1.lease.get());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(ReplicaState(r, "a", 1), ModelState::kUnloaded);
}

// A replica loaded to share work uses free room only: it does not evict an idle model.
TEST(ModelRegistryReplicasTest, ASecondReplicaDoesNotEvictOtherModels) {
  RegistryOptions options;
  options.max_loaded_models = 2;
  ModelRegistry r(options);
  ASSERT_TRUE(r.Register(Replicated("a")));
  ASSERT_TRUE(r.Register(Entry("b")));
  r.Start();
  ASSERT_NE(AcquireNow(r, "b").lease, nullptr);  // loaded, idle from now on
  Acquired a1 = AcquireNow(r, "a");              // the second model slot
  ASSERT_NE(a1.lease, nullptr) << a1.error.message;
  Acquired a2 = AcquireNow(r, "a");  // busy: a second replica would need a third slot
  EXPECT_EQ(a2.lease.get(), a1.lease.get());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(StateOf(r, "b"), ModelState::kLoaded);
  EXPECT_EQ(ReplicaState(r, "a", 1), ModelState::kUnloaded);
}

// A replica on a device that cannot load (no such GPU here) fails once and is not tried again
// for kReplicaRetrySeconds; its requests are served by the other replica.
TEST(ModelRegistryReplicasTest, AReplicaThatFailsToLoadIsNotRetriedAtOnce) {
  ModelEntry e = Entry("a");
  e.devices = {DeviceSpec{}, DeviceSpec{true, 63}};
  ModelRegistry r;
  ASSERT_TRUE(r.Register(e));
  r.Start();
  auto failures = [&r] {
    for (const auto& s : r.Status()) {
      if (s.replica == 1) return s.load_failures;
    }
    return -1;
  };
  Acquired a1 = AcquireNow(r, "a");
  ASSERT_NE(a1.lease, nullptr) << a1.error.message;
  Acquired a2 = AcquireNow(r, "a");  // the first is busy: the second replica tries to load, and fails
  EXPECT_EQ(a2.lease.get(), a1.lease.get());
  for (int i = 0; i < 2000 && failures() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(failures(), 1);
  ASSERT_TRUE(WaitForReplica(r, "a", 1, ModelState::kUnloaded));
  Acquired a3 = AcquireNow(r, "a");  // all busy again, but the failed replica waits out its retry time
  EXPECT_EQ(a3.lease.get(), a1.lease.get());
  EXPECT_EQ(ReplicaState(r, "a", 1), ModelState::kUnloaded);  // a queued load would show kLoading now
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(failures(), 1);
}

class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("herd-catalog-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  fs::path root_;
};

TEST_F(CatalogTest, ModelsDirListsGgufFilesByName) {
  Write(root_ / "b.gguf", "x");
  Write(root_ / "a.gguf", "xy");
  Write(root_ / "notes.txt", "z");
  auto entries = ScanModelsDir(root_.string(), {});
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].name, "a");
  EXPECT_EQ((*entries)[0].size_bytes, 2u);
  EXPECT_EQ((*entries)[0].load.path, (root_ / "a.gguf").string());
  EXPECT_EQ((*entries)[1].name, "b");
  EXPECT_FALSE(ScanModelsDir((root_ / "missing").string(), {}).ok());
}

TEST_F(CatalogTest, OllamaStoreManifestsNameTheirModelBlobs) {
  const std::string hex(64, 'a'), other(64, 'b');
  Write(root_ / "blobs" / ("sha256-" + hex), "GGUF...");
  const std::string manifest = R"({"schemaVersion":2,"layers":[
      {"mediaType":"application/vnd.ollama.image.template","digest":"sha256:)" +
                               other + R"(","size":1},
      {"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" +
                               hex + R"(","size":7}]})";
  Write(root_ / "manifests/registry.ollama.ai/library/llama3.2/latest", manifest);
  Write(root_ / "manifests/registry.ollama.ai/someone/tiny/q4", manifest);
  Write(root_ / "manifests/example.com/team/m/v1", manifest);
  Write(root_ / "manifests/registry.ollama.ai/library/broken/latest", "{not json");
  Write(root_ / "manifests/registry.ollama.ai/library/noblob/latest",
        R"({"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" + other + R"("}]})");
  const auto entries = ScanOllamaStore(root_.string(), {});
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "example.com/team/m:v1");
  EXPECT_EQ(entries[1].name, "llama3.2:latest");
  EXPECT_EQ(entries[2].name, "someone/tiny:q4");
  EXPECT_EQ(entries[1].digest, "sha256:" + hex);
  EXPECT_EQ(entries[1].size_bytes, 7u);
  EXPECT_EQ(entries[1].load.path, (root_ / "blobs" / ("sha256-" + hex)).string());
  EXPECT_EQ(entries[1].source, ModelSource::kOllama);
  EXPECT_TRUE(ScanOllamaStore((root_ / "missing").string(), {}).empty());
}

TEST(CatalogNamesTest, OllamaFullName) {
  EXPECT_EQ(OllamaFullName("llama3"), "llama3:latest");
  EXPECT_EQ(OllamaFullName("llama3:8b"), "llama3:8b");
  EXPECT_EQ(OllamaFullName("host:5000/ns/m"), "host:5000/ns/m:latest");
}

}  // namespace
}  // namespace herd::server
