// Ollama's model-management routes end to end over HTTP: show (header only, nothing loaded),
// ps, copy, delete, and pull from a small registry this test serves with herd's own HTTP server
// (a manifest and the blobs of a generated tiny model; blobs redirect to a "CDN" path).
#include "server/ollama_admin_routes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "io/gguf.h"
#include "protocols/ollama/ollama_models.h"
#include "server/ollama_routes.h"
#include "server/ollama_store.h"
#include "server/server_test_util.h"
#include "server/sha256.h"

namespace herd::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<json> Lines(const std::string& body) {
  std::vector<json> out;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

// A registry serving named manifests and content-addressed blobs.
class FakeRegistry {
 public:
  FakeRegistry() {
    Router router;
    router.Get("/v2/{ns}/{model}/manifests/{tag}", [this](HttpRequest& req, std::shared_ptr<Responder> r) {
      const std::string key = req.PathParam("ns") + "/" + req.PathParam("model") + ":" + req.PathParam("tag");
      auto it = manifests_.find(key);
      if (it == manifests_.end())
        return r->Respond(HttpResponse::Json(404, R"({"errors":[{"code":"MANIFEST_UNKNOWN"}]})"));
      accept_ = req.headers.GetOr("Accept", "");
      HttpResponse resp = HttpResponse::Text(200, it->second);
      resp.headers.Set("Content-Type", kOllamaManifestType);
      r->Respond(std::move(resp));
    });
    router.Get("/v2/{ns}/{model}/blobs/{digest}", [](HttpRequest& req, std::shared_ptr<Responder> r) {
      HttpResponse resp = HttpResponse::Text(307, "");
      resp.headers.Set("Location", "/cdn/" + req.PathParam("digest"));
      r->Respond(std::move(resp));
    });
    router.Get("/cdn/{digest}", [this](HttpRequest& req, std::shared_ptr<Responder> r) {
      if (req.PathParam("digest") == stalled_) {  // never answered while the server runs
        std::lock_guard lock(mu_);
        parked_.push_back(std::move(r));
        return;
      }
      auto it = blobs_.find(req.PathParam("digest"));
      if (it == blobs_.end()) return r->Respond(HttpResponse::Text(404, "no such blob"));
      HttpResponse resp = HttpResponse::Text(200, it->second);
      resp.headers.Set("Content-Type", "application/octet-stream");
      r->Respond(std::move(resp));
    });
    HttpServerConfig c;
    c.port = 0;
    server_ = std::make_unique<HttpServer>(c, std::move(router));
    EXPECT_TRUE(server_->Start().ok());
  }
  ~FakeRegistry() { server_->Stop(std::chrono::milliseconds(500)); }

  std::string host() const { return "127.0.0.1:" + std::to_string(server_->port()); }
  // Adds `content` as a blob (served as `served`, e.g. corrupted, when given); returns its layer.
  json Blob(const std::string& media_type, const std::string& content, const std::string* served = nullptr) {
    const std::string digest = Sha256Digest(content);
    blobs_[digest] = served ? *served : content;
    return {{"mediaType", media_type}, {"digest", digest}, {"size", content.size()}};
  }
  std::string Add(const std::string& name, const json& config, const std::vector<json>& layers) {
    const json m{{"schemaVersion", 2}, {"mediaType", kOllamaManifestType}, {"config", config}, {"layers", layers}};
    manifests_[name] = m.dump();
    return manifests_[name];
  }
  std::string accept() const { return accept_; }
  void Stall(const std::string& digest) { stalled_ = digest; }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<Responder>> parked_;
  std::string stalled_;
  std::map<std::string, std::string> manifests_, blobs_;  // written before the first pull only
  std::string accept_;
  std::unique_ptr<HttpServer> server_;
};

class OllamaAdminRoutesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    store_ = new std::string((fs::temp_directory_path() / ("herd-admin-test-" + std::to_string(::getpid()))).string());
    fs::remove_all(*store_);
    registry_ = new FakeRegistry();
    const std::string gguf = ReadAll(testing::TestModelPath("tiny", "Q8_0"));
    const json config = registry_->Blob("application/vnd.docker.container.image.v1+json",
                                        R"({"model_format":"gguf","model_family":"llama"})");
    const json model = registry_->Blob(kOllamaModelLayer, gguf);
    const json license = registry_->Blob("application/vnd.ollama.image.license", "Tiny License 1.0");
    *(manifest_ = new std::string()) = registry_->Add("library/tiny:latest", config, {model, license});
    std::string corrupted = gguf;
    corrupted[corrupted.size() / 2] ^= 1;
    const json bad = registry_->Blob(kOllamaModelLayer, gguf + "x", &corrupted);
    bad_digest_ = new std::string(bad["digest"]);
    registry_->Add("library/bad:latest", config, {bad});
    const json stalled = registry_->Blob(kOllamaModelLayer, gguf + "stalled");
    registry_->Stall(stalled["digest"]);
    registry_->Add("library/stalled:latest", config, {stalled});
    server_ = new testing::ServerHarness([](Router& r, ModelRegistry& m) {
      ModelInstanceOptions o;
      o.threads = 1;
      o.n_ctx = 512;
      m.SetOllamaStore(*store_, o);
      auto lazy = FileEntry(testing::TestModelPath("tiny", "Q8_0"), "lazy", o);
      EXPECT_TRUE(lazy.ok());
      m.Register(std::move(lazy).value());
      m.Start();  // the loader thread, for models loaded on first use
      models_ = &m;
      AddOllamaRoutes(r, m);
    });
  }
  static void TearDownTestSuite() {
    delete server_;
    delete registry_;
    fs::remove_all(*store_);
    delete store_;
    delete manifest_;
    delete bad_digest_;
  }
  static testing::TestResponse Call(const std::string& method, const std::string& path, const json& body) {
    return server_->Call(method, path, body.dump());
  }
  static std::set<std::string> Tags() {
    std::set<std::string> out;
    const json tags = json::parse(server_->Call("GET", "/api/tags").body);
    for (const json& m : tags["models"]) out.insert(m["name"].get<std::string>());
    return out;
  }
  static std::vector<std::string> Partials() {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(fs::path(*store_) / "blobs", ec)) {
      if (f.path().filename().string().find("partial") != std::string::npos) out.push_back(f.path());
    }
    return out;
  }

  static inline testing::ServerHarness* server_ = nullptr;
  static inline FakeRegistry* registry_ = nullptr;
  static inline ModelRegistry* models_ = nullptr;
  static inline std::string* store_ = nullptr;
  static inline std::string* manifest_ = nullptr;
  static inline std::string* bad_digest_ = nullptr;
};

TEST_F(OllamaAdminRoutesTest, ShowReadsTheHeaderWithoutLoading) {
  const std::string path = testing::TestModelPath("tiny", "Q8_0");
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok());
  uint64_t params = 0;
  for (const auto& t : (*file)->tensors()) {
    uint64_t n = 1;
    for (int64_t d : t.ne) n *= static_cast<uint64_t>(d);
    params += n;
  }
  auto r = Call("POST", "/api/show", {{"model", "lazy"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json show = json::parse(r.body);
  EXPECT_EQ(show["details"]["format"], "gguf");
  EXPECT_EQ(show["details"]["family"], "llama");
  EXPECT_EQ(show["details"]["families"], json::array({"llama"}));
  EXPECT_EQ(show["details"]["parameter_size"], ollama::HumanNumber(params));
  EXPECT_EQ(show["details"]["quantization_level"], "Q8_0");
  EXPECT_EQ(show["details"]["parent_model"], "");
  const json& info = show["model_info"];
  EXPECT_EQ(info["general.architecture"], "llama");
  EXPECT_EQ(info["general.parameter_count"], params);
  EXPECT_EQ(info["llama.context_length"], (*file)->GetI64("llama.context_length").value());
  EXPECT_EQ(info["llama.embedding_length"], (*file)->GetI64("llama.embedding_length").value());
  ASSERT_TRUE(info.contains("tokenizer.ggml.tokens"));
  EXPECT_TRUE(info["tokenizer.ggml.tokens"].is_null());
  const auto tmpl = (*file)->GetString("tokenizer.chat_template");
  EXPECT_EQ(show["template"], tmpl.ok() ? *tmpl : "");
  EXPECT_EQ(show["capabilities"], json::array({"completion"}));
  EXPECT_TRUE(show["modified_at"].get<std::string>().ends_with("Z"));
  EXPECT_NE(show["modelfile"].get<std::string>().find("FROM " + path + "\n"), std::string::npos);
  EXPECT_EQ(show["parameters"].get<std::string>().rfind("num_ctx", 0), 0u);
  EXPECT_NE(show["parameters"].get<std::string>().find(" 512"), std::string::npos);
  // Verbose: the tokenizer arrays in full.
  auto verbose = json::parse(Call("POST", "/api/show", {{"name", "lazy"}, {"verbose", true}}).body);
  EXPECT_EQ(verbose["model_info"]["tokenizer.ggml.tokens"].size(),
            (*file)->GetStringArray("tokenizer.ggml.tokens").value().size());
  // Nothing was loaded.
  for (const ModelStatus& s : models_->Status()) {
    if (s.entry.name == "lazy") {
      EXPECT_EQ(s.state, ModelState::kUnloaded);
    }
  }
  auto missing = Call("POST", "/api/show", {{"model", "nope"}});
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, R"({"error":"model 'nope' not found"})");
  EXPECT_EQ(Call("POST", "/api/show", json::object()).status, 400);
}

// A model with two replicas is one /api/ps element (as Ollama lists a model), its size the sum.
TEST(OllamaAdminReplicasTest, PsListsAReplicatedModelOnce) {
  ModelRegistry* registry = nullptr;
  testing::ServerHarness server(
      [&](Router& r, ModelRegistry& m) {
        testing::RegisterTinyReplicas(m, "twin");
        registry = &m;
        AddOllamaRoutes(r, m);
      },
      /*with_model=*/false);
  uint64_t total = 0;
  for (const ModelStatus& s : registry->Status()) {
    ASSERT_EQ(s.state, ModelState::kLoaded);
    total += s.memory_bytes;
  }
  const json ps = json::parse(server.Call("GET", "/api/ps").body);
  ASSERT_EQ(ps["models"].size(), 1u) << ps.dump();
  EXPECT_EQ(ps["models"][0]["name"], "twin");
  EXPECT_EQ(ps["models"][0]["size"], total);
  EXPECT_GT(ps["models"][0]["expires_at"].get<std::string>(), "2200");  // preloaded: kept
}

TEST_F(OllamaAdminRoutesTest, PsListsLoadedModels) {
  auto r = Call("GET", "/api/ps", nullptr);
  ASSERT_EQ(r.status, 200);
  const json ps = json::parse(r.body);
  bool tiny = false;
  for (const json& m : ps["models"]) {
    EXPECT_NE(m["name"], "lazy");  // registered, not loaded
    if (m["name"] != "tiny") continue;
    tiny = true;
    EXPECT_EQ(m["model"], "tiny");
    EXPECT_GT(m["size"].get<uint64_t>(), 0u);
    EXPECT_EQ(m["size_vram"], 0);
    EXPECT_EQ(m["context_length"], 512);
    EXPECT_EQ(m["details"]["family"], "llama");
    EXPECT_EQ(m["details"]["quantization_level"], "F32");
    EXPECT_GT(m["expires_at"].get<std::string>(), "2200");  // kept loaded: the far future
  }
  EXPECT_TRUE(tiny) << r.body;
}

TEST_F(OllamaAdminRoutesTest, CopyAndDeleteFileModels) {
  auto copied = Call("POST", "/api/copy", {{"source", "tiny"}, {"destination", "tiny-copy"}});
  ASSERT_EQ(copied.status, 200) << copied.body;
  EXPECT_EQ(copied.body, "");
  EXPECT_TRUE(Tags().count("tiny-copy:latest"));
  EXPECT_EQ(Call("POST", "/api/show", {{"model", "tiny-copy"}}).status, 200);
  EXPECT_EQ(Call("POST", "/api/copy", {{"source", "nope"}, {"destination", "x"}}).status, 404);
  EXPECT_EQ(Call("POST", "/api/copy", {{"source", "tiny"}, {"destination", "bad name!"}}).status, 400);
  EXPECT_EQ(Call("POST", "/api/copy", {{"source", "tiny"}}).status, 400);
  auto deleted = Call("DELETE", "/api/delete", {{"model", "tiny-copy"}});
  EXPECT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_FALSE(Tags().count("tiny-copy:latest"));
  EXPECT_TRUE(fs::exists(testing::TestModelPath("tiny", "F32")));  // files are never deleted
  EXPECT_EQ(Call("DELETE", "/api/delete", {{"model", "tiny-copy"}}).status, 404);
  // A model serving a request is deleted at once (as Ollama does); the request keeps its model,
  // which unloads when the request ends.
  ASSERT_EQ(Call("POST", "/api/copy", {{"source", "lazy"}, {"destination", "busy"}}).status, 200);
  std::promise<ModelLease> leased;
  models_->Acquire("busy", std::nullopt, [&](ModelLease l, const api::ApiError&) { leased.set_value(std::move(l)); });
  ModelLease lease = leased.get_future().get();
  ASSERT_TRUE(lease);
  auto busy = Call("DELETE", "/api/delete", {{"model", "busy"}});
  EXPECT_EQ(busy.status, 200) << busy.body;
  EXPECT_FALSE(Tags().count("busy:latest"));
  EXPECT_EQ(Call("POST", "/api/show", {{"model", "busy"}}).status, 404);
  EXPECT_EQ(lease->name(), "busy:latest");
  lease.reset();
  EXPECT_EQ(Call("DELETE", "/api/delete", {{"model", "busy"}}).status, 404);
  // The harness's model is pinned in memory.
  auto pinned = Call("DELETE", "/api/delete", {{"name", "tiny"}});
  EXPECT_EQ(pinned.status, 409);
  EXPECT_NE(json::parse(pinned.body)["error"].get<std::string>().find("tiny"), std::string::npos);
}

TEST_F(OllamaAdminRoutesTest, PullStreamsProgressThenServesTheModel) {
  const std::string name = registry_->host() + "/library/tiny:latest";
  auto r = Call("POST", "/api/pull", {{"model", name}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Header("content-type"), "application/x-ndjson");
  EXPECT_EQ(registry_->accept(), kOllamaManifestType);
  const auto events = Lines(r.body);
  ASSERT_GE(events.size(), 5u) << r.body;
  EXPECT_EQ(events.front(), json({{"status", "pulling manifest"}}));
  EXPECT_EQ(events.back(), json({{"status", "success"}}));
  const OllamaManifest manifest = ParseOllamaManifest(*manifest_).value();
  std::map<std::string, uint64_t> completed;  // digest -> last "completed"
  std::vector<std::string> statuses;
  for (const json& e : events) {
    ASSERT_FALSE(e.contains("error")) << e.dump();
    const std::string status = e["status"];
    if (statuses.empty() || statuses.back() != status) statuses.push_back(status);
    if (!e.contains("digest")) continue;
    const std::string digest = e["digest"];
    EXPECT_EQ(status, "pulling " + digest.substr(7, 12));
    EXPECT_GE(e["completed"].get<uint64_t>(), completed[digest]);  // never goes back
    completed[digest] = e["completed"];
  }
  for (const OllamaLayer& l : manifest.Blobs()) EXPECT_EQ(completed[l.digest], l.size) << l.digest;
  const std::vector<std::string> tail(statuses.end() - 3, statuses.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"verifying sha256 digest", "writing manifest", "success"}));
  // The store: the manifest byte for byte, every blob under its digest, no temporary files.
  OllamaStore store(*store_);
  const OllamaName on = ParseOllamaName(name).value();
  EXPECT_EQ(ReadAll(store.ManifestPath(on)), *manifest_);
  for (const OllamaLayer& l : manifest.Blobs()) {
    EXPECT_EQ(Sha256Digest(ReadAll(store.BlobPath(l.digest))), l.digest);
  }
  EXPECT_TRUE(Partials().empty());
  // Listed and usable.
  EXPECT_TRUE(Tags().count(name));
  auto chat = Call("POST", "/api/chat",
                   {{"model", name},
                    {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                    {"stream", false},
                    {"options", {{"num_predict", 3}}}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(json::parse(chat.body)["done"], true);
  const json show = json::parse(Call("POST", "/api/show", {{"model", name}}).body);
  EXPECT_EQ(show["license"], "Tiny License 1.0");
  bool listed = false;
  const json ps = json::parse(Call("GET", "/api/ps", nullptr).body);
  for (const json& m : ps["models"]) {
    if (m["name"] == name) {
      listed = true;
      EXPECT_EQ("sha256:" + m["digest"].get<std::string>(), manifest.Find(kOllamaModelLayer)->digest);
    }
  }
  EXPECT_TRUE(listed);

  // Pulling again downloads nothing (every blob's first event is complete) and replaces the
  // manifest; without streaming the answer is one object.
  auto again = Call("POST", "/api/pull", {{"model", name}});
  ASSERT_EQ(again.status, 200) << again.body;
  std::set<std::string> seen;
  bool removing = false;
  for (const json& e : Lines(again.body)) {
    removing = removing || e["status"] == "removing any unused layers";
    if (!e.contains("digest") || !seen.insert(e["digest"].get<std::string>()).second) continue;
    EXPECT_EQ(e["completed"], e["total"]) << e.dump();
  }
  EXPECT_EQ(seen.size(), manifest.Blobs().size());
  EXPECT_TRUE(removing);
  auto whole = Call("POST", "/api/pull", {{"model", name}, {"stream", false}});
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.body, R"({"status":"success"})");

  // A copy shares the blobs: deleting the original keeps them, deleting the copy removes them.
  ASSERT_EQ(Call("POST", "/api/copy", {{"source", name}, {"destination", "tinycopy"}}).status, 200);
  const OllamaName copy = ParseOllamaName("tinycopy").value();
  EXPECT_EQ(ReadAll(store.ManifestPath(copy)), *manifest_);
  ASSERT_EQ(Call("DELETE", "/api/delete", {{"model", name}}).status, 200);
  EXPECT_FALSE(fs::exists(store.ManifestPath(on)));
  EXPECT_FALSE(Tags().count(name));
  for (const OllamaLayer& l : manifest.Blobs()) EXPECT_TRUE(fs::exists(store.BlobPath(l.digest)));
  ASSERT_EQ(Call("DELETE", "/api/delete", {{"model", "tinycopy"}}).status, 200);
  for (const OllamaLayer& l : manifest.Blobs()) EXPECT_FALSE(fs::exists(store.BlobPath(l.digest)));
  EXPECT_EQ(Call("DELETE", "/api/delete", {{"model", "tinycopy"}}).status, 404);
}

TEST_F(OllamaAdminRoutesTest, PullErrors) {
  // A corrupted blob: an error, no manifest, no blob, no temporary file.
  const std::string bad = registry_->host() + "/library/bad";
  auto whole = Call("POST", "/api/pull", {{"model", bad}, {"stream", false}});
  EXPECT_EQ(whole.status, 500);
  const std::string message = json::parse(whole.body)["error"];
  EXPECT_EQ(message.rfind("digest mismatch, file must be downloaded again: want sha256:", 0), 0u) << message;
  auto streamed = Call("POST", "/api/pull", {{"model", bad}});
  ASSERT_EQ(streamed.status, 200);
  const auto events = Lines(streamed.body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["error"], message);
  OllamaStore store(*store_);
  EXPECT_FALSE(fs::exists(store.ManifestPath(ParseOllamaName(bad).value())));
  EXPECT_FALSE(fs::exists(store.BlobPath(*bad_digest_)));
  EXPECT_TRUE(Partials().empty());
  EXPECT_FALSE(Tags().count(bad + ":latest"));

  auto unknown = Call("POST", "/api/pull", {{"model", registry_->host() + "/library/nope"}, {"stream", false}});
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.body, R"({"error":"pull model manifest: file does not exist"})");
  EXPECT_EQ(Call("POST", "/api/pull", {{"model", "bad name!"}}).status, 400);
  EXPECT_EQ(Call("POST", "/api/pull", {{"stream", false}}).status, 400);
  // Nothing listens there: a network error, as an NDJSON error line when streaming.
  auto refused = Call("POST", "/api/pull", {{"model", "127.0.0.1:1/library/x"}});
  ASSERT_EQ(refused.status, 200);
  EXPECT_TRUE(Lines(refused.body).back().contains("error"));
}

TEST_F(OllamaAdminRoutesTest, ClientDisconnectCancelsThePull) {
  const std::string name = registry_->host() + "/library/stalled";
  testing::TestClient client(server_->port());
  const std::string body = json{{"model", name}}.dump();
  ASSERT_TRUE(client.Send("POST /api/pull HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\n\r\n" + body));
  ASSERT_TRUE(client.ReadHead().has_value());
  const auto wait_for = [](const std::function<bool()>& done) {
    for (int i = 0; i < 1000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
  };
  ASSERT_TRUE(wait_for([] { return !Partials().empty(); }));  // downloading the stalled blob
  client.Close();
  EXPECT_TRUE(wait_for([] { return Partials().empty(); }));  // cancelled, temporary file removed
  EXPECT_FALSE(fs::exists(OllamaStore(*store_).ManifestPath(ParseOllamaName(name).value())));
  EXPECT_FALSE(Tags().count(name + ":latest"));
}

}  // namespace
}  // namespace herd::server
