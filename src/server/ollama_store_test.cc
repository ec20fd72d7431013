// OllamaStore: names, manifests, copies, deletes with blob garbage collection; SHA-256 vectors.
#include "server/ollama_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "server/sha256.h"

namespace herd::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Digest(""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Digest("abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;  // incremental over a block boundary equals one shot
  const std::string text(1000, 'x');
  h.Update(text.substr(0, 63));
  h.Update(text.substr(63));
  EXPECT_EQ("sha256:" + h.HexDigest(), Sha256Digest(text));
  EXPECT_EQ("sha256:" + h.HexDigest(), Sha256Digest(""));  // reset after HexDigest
}

TEST(OllamaNameTest, ParsesOllamaNames) {
  auto a = ParseOllamaName("llama3");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "registry.ollama.ai");
  EXPECT_EQ(a->ns, "library");
  EXPECT_EQ(a->model, "llama3");
  EXPECT_EQ(a->tag, "latest");
  EXPECT_EQ(a->Display(), "llama3:latest");
  auto b = ParseOllamaName("me/llama3:8b-q4_K_M");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->ns, "me");
  EXPECT_EQ(b->tag, "8b-q4_K_M");
  EXPECT_EQ(b->Display(), "me/llama3:8b-q4_K_M");
  auto c = ParseOllamaName("127.0.0.1:5000/library/tiny:latest");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "127.0.0.1:5000");
  EXPECT_EQ(c->Display(), "127.0.0.1:5000/library/tiny:latest");
  auto d = ParseOllamaName("localhost:5000/ns/m");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->host, "localhost:5000");
  EXPECT_EQ(d->tag, "latest");
  for (const char* bad : {"", "a/b/c/d", "../x", "x/..", "m:", "-m", "m@sha256:00", "a b", "m:../t", ".", "ns//m"}) {
    auto r = ParseOllamaName(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
  EXPECT_TRUE(IsSha256Digest("sha256:" + std::string(64, 'a')));
  EXPECT_FALSE(IsSha256Digest("sha256:" + std::string(64, 'A')));
  EXPECT_FALSE(IsSha256Digest("sha256:" + std::string(63, 'a')));
  EXPECT_FALSE(IsSha256Digest("md5:" + std::string(67, 'a')));
}

class OllamaStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("herd-store-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "blobs");
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Blob(const std::string& content) {
    const std::string digest = Sha256Digest(content);
    std::ofstream(OllamaStore(root_.string()).BlobPath(digest)) << content;
    return digest;
  }
  static std::string Manifest(const std::string& config,
                              const std::vector<std::pair<std::string, std::string>>& layers) {
    json j{{"schemaVersion", 2}, {"mediaType", kOllamaManifestType}};
    if (!config.empty())
      j["config"] = {{"mediaType", "application/vnd.docker.container.image.v1+json"}, {"digest", config}, {"size", 1}};
    j["layers"] = json::array();
    for (const auto& [type, digest] : layers)
      j["layers"].push_back({{"mediaType", type}, {"digest", digest}, {"size", 1}});
    return j.dump();
  }
  static OllamaName Name(const std::string& s) { return ParseOllamaName(s).value(); }

  fs::path root_;
};

TEST_F(OllamaStoreTest, WriteCopyDeleteCollectsOnlyUnreferencedBlobs) {
  OllamaStore store(root_.string());
  const std::string cfg = Blob("config"), model = Blob("gguf bytes"), license = Blob("license");
  ASSERT_TRUE(store.WriteManifest(Name("one"), Manifest(cfg, {{kOllamaModelLayer, model}})).ok());
  ASSERT_TRUE(store
                  .WriteManifest(Name("me/two:t"), Manifest("", {{kOllamaModelLayer, model},
                                                                 {"application/vnd.ollama.image.license", license}}))
                  .ok());
  EXPECT_TRUE(fs::is_regular_file(root_ / "manifests/registry.ollama.ai/library/one/latest"));
  EXPECT_TRUE(fs::is_regular_file(root_ / "manifests/registry.ollama.ai/me/two/t"));

  auto entry = store.Entry(Name("one"), {});
  ASSERT_TRUE(entry.ok()) << entry.status().ToString();
  EXPECT_EQ(entry->name, "one:latest");
  EXPECT_EQ(entry->load.path, store.BlobPath(model));
  EXPECT_EQ(entry->digest, model);
  EXPECT_EQ(entry->source, ModelSource::kOllama);
  EXPECT_EQ(entry->size_bytes, 10u);
  // The catalog reads what the store writes.
  EXPECT_EQ(ScanOllamaStore(root_.string(), {}).size(), 2u);

  ASSERT_TRUE(store.Copy(Name("one"), Name("copy:v1")).ok());
  EXPECT_EQ(store.ReadManifest(Name("copy:v1")).value(), store.ReadManifest(Name("one")).value());
  EXPECT_EQ(store.Copy(Name("nope"), Name("x")).code(), StatusCode::kNotFound);

  ASSERT_TRUE(store.Delete(Name("one")).ok());
  EXPECT_FALSE(fs::exists(root_ / "manifests/registry.ollama.ai/library/one"));  // empty folder pruned
  EXPECT_TRUE(fs::exists(store.BlobPath(cfg)));                                  // still used by copy:v1
  ASSERT_TRUE(store.Delete(Name("copy:v1")).ok());
  EXPECT_FALSE(fs::exists(store.BlobPath(cfg)));
  EXPECT_TRUE(fs::exists(store.BlobPath(model)));  // still used by me/two:t

  store.Hold(license);  // a pull in progress keeps it
  ASSERT_TRUE(store.Delete(Name("me/two:t")).ok());
  EXPECT_FALSE(fs::exists(store.BlobPath(model)));
  EXPECT_TRUE(fs::exists(store.BlobPath(license)));
  store.Release(license);
  EXPECT_EQ(store.RemoveUnused({license}), 1);
  EXPECT_FALSE(fs::exists(store.BlobPath(license)));
  EXPECT_TRUE(fs::exists(root_ / "manifests"));
  EXPECT_EQ(store.Delete(Name("one")).code(), StatusCode::kNotFound);
}

TEST_F(OllamaStoreTest, MalformedManifests) {
  EXPECT_FALSE(ParseOllamaManifest("nope").ok());
  EXPECT_FALSE(ParseOllamaManifest(R"({"layers": [{"digest": "sha256:zz"}]})").ok());
  EXPECT_FALSE(ParseOllamaManifest(R"({"config": {}})").ok());
  auto m = ParseOllamaManifest(Manifest(Sha256Digest("c"), {{kOllamaModelLayer, Sha256Digest("m")}}));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->Blobs().size(), 2u);
  ASSERT_NE(m->Find(kOllamaModelLayer), nullptr);
  OllamaStore store(root_.string());
  ASSERT_TRUE(
      store.WriteManifest(Name("nomodel"), Manifest("", {{"application/vnd.ollama.image.license", Blob("l")}})).ok());
  EXPECT_EQ(store.Entry(Name("nomodel"), {}).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(store.WriteManifest(Name("noblob"), Manifest("", {{kOllamaModelLayer, Sha256Digest("absent")}})).ok());
  EXPECT_EQ(store.Entry(Name("noblob"), {}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace herd::server
