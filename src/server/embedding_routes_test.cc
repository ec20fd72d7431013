// /v1/embeddings, /api/embed and /api/embeddings end to end over HTTP on the tiny random model
// (OpenAI responses validated against the published OpenAPI schema), and the pooling choice
// from GGUF metadata.
#include "server/embedding_routes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "protocols/openai/openapi_check.h"
#include "server/server_test_util.h"

namespace herd::server {
namespace {

using nlohmann::json;
using ::testing::IsEmpty;

constexpr int kEmbd = 256;  // the tiny shape's embedding_length
constexpr int kCtx = 512;   // the harness's context

class EmbeddingRoutesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerHarness([](Router& r, ModelRegistry& m) {
      AddOpenAiEmbeddingRoutes(r, m);
      AddOllamaEmbeddingRoutes(r, m);
    });
  }
  static void TearDownTestSuite() { delete server_; }
  static testing::TestResponse Post(const std::string& path, const json& body) {
    return server_->Call("POST", path, body.dump());
  }
  static json Ok(const std::string& path, const json& body) {
    auto r = Post(path, body);
    EXPECT_EQ(r.status, 200) << body.dump() << " -> " << r.body;
    return json::parse(r.body);
  }
  static std::vector<float> OpenAi(const json& input) {
    const json j = Ok("/v1/embeddings", {{"model", "tiny"}, {"input", input}, {"encoding_format", "float"}});
    return j["data"][0]["embedding"].get<std::vector<float>>();
  }
  static const openai::testing::OpenApiSpec& Spec() { return openai::testing::OpenApiSpec::Get(); }
  static inline testing::ServerHarness* server_ = nullptr;
};

double Norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

void ExpectNear(const std::vector<float>& a, const std::vector<float>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << i;
}

std::vector<float> DecodeBase64Floats(const std::string& s) {
  auto value = [](char c) -> uint32_t {
    if (c >= 'A' && c <= 'Z') return static_cast<uint32_t>(c - 'A');
    if (c >= 'a' && c <= 'z') return static_cast<uint32_t>(c - 'a' + 26);
    if (c >= '0' && c <= '9') return static_cast<uint32_t>(c - '0' + 52);
    return c == '+' ? 62u : 63u;
  };
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 3 < s.size(); i += 4) {
    const uint32_t w = value(s[i]) << 18 | value(s[i + 1]) << 12 | (s[i + 2] == '=' ? 0 : value(s[i + 2]) << 6) |
                       (s[i + 3] == '=' ? 0 : value(s[i + 3]));
    bytes.push_back(static_cast<uint8_t>(w >> 16));
    if (s[i + 2] != '=') bytes.push_back(static_cast<uint8_t>(w >> 8));
    if (s[i + 3] != '=') bytes.push_back(static_cast<uint8_t>(w));
  }
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint32_t u =
        bytes[4 * i] | bytes[4 * i + 1] << 8 | bytes[4 * i + 2] << 16 | static_cast<uint32_t>(bytes[4 * i + 3]) << 24;
    std::memcpy(&out[i], &u, 4);
  }
  return out;
}

TEST_F(EmbeddingRoutesTest, OpenAiFloatAndBase64) {
  const json j = Ok("/v1/embeddings", {{"model", "tiny"}, {"input", "The quick brown fox"}});
  EXPECT_THAT(Spec().Check(j, "CreateEmbeddingResponse"), IsEmpty()) << j.dump().substr(0, 400);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "tiny");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["object"], "embedding");
  EXPECT_EQ(j["data"][0]["index"], 0);
  const auto v = j["data"][0]["embedding"].get<std::vector<float>>();
  ASSERT_EQ(v.size(), static_cast<size_t>(kEmbd));
  EXPECT_NEAR(Norm(v), 1.0, 1e-5);
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 0);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"]);

  const json b =
      Ok("/v1/embeddings", {{"model", "tiny"}, {"input", "The quick brown fox"}, {"encoding_format", "base64"}});
  EXPECT_THAT(Spec().Check(b, "CreateEmbeddingResponse"), ::testing::ElementsAre(::testing::HasSubstr("embedding")))
      << "base64 is a string where the schema says array (the SDKs ask for it and decode it)";
  EXPECT_EQ(DecodeBase64Floats(b["data"][0]["embedding"].get<std::string>()), v);  // bit-exact
}

TEST_F(EmbeddingRoutesTest, BatchesKeepOrderAndMatchSingleInputs) {
  const std::vector<std::string> inputs = {"alpha", "a longer second input with more words", "gamma"};
  const json batch = Ok("/v1/embeddings", {{"model", "tiny"}, {"input", inputs}, {"encoding_format", "float"}});
  ASSERT_EQ(batch["data"].size(), 3u);
  int tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(batch["data"][i]["index"], i);
    // The CPU backend may round differently depending on what a row was batched with.
    ExpectNear(batch["data"][i]["embedding"].get<std::vector<float>>(), OpenAi(inputs[i]), 1e-4);
    tokens += Ok("/v1/embeddings", {{"model", "tiny"}, {"input", inputs[i]}})["usage"]["prompt_tokens"].get<int>();
  }
  EXPECT_EQ(batch["usage"]["prompt_tokens"], tokens);
  const auto a = batch["data"][0]["embedding"].get<std::vector<float>>();
  const auto c = batch["data"][2]["embedding"].get<std::vector<float>>();
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff += std::abs(a[i] - c[i]);
  EXPECT_GT(diff, 1e-2);
}

TEST_F(EmbeddingRoutesTest, TokenInputs) {
  const std::vector<int32_t> ids = {1, 2, 3, 4};
  const json j = Ok("/v1/embeddings", {{"model", "tiny"}, {"input", ids}, {"encoding_format", "float"}});
  EXPECT_EQ(j["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(j["data"][0]["embedding"].size(), static_cast<size_t>(kEmbd));
  const json two = Ok("/v1/embeddings", {{"model", "tiny"}, {"input", {ids, {5, 6}}}, {"encoding_format", "float"}});
  EXPECT_EQ(two["data"].size(), 2u);
  EXPECT_EQ(two["usage"]["prompt_tokens"], 6);
  ExpectNear(two["data"][0]["embedding"].get<std::vector<float>>(), j["data"][0]["embedding"].get<std::vector<float>>(),
             1e-4);
}

TEST_F(EmbeddingRoutesTest, OpenAiErrors) {
  const auto expect = [](const json& body, int status, const std::string& param, const std::string& code = "") {
    auto r = Post("/v1/embeddings", body);
    EXPECT_EQ(r.status, status) << body.dump().substr(0, 200) << " -> " << r.body;
    const json e = json::parse(r.body)["error"];
    EXPECT_EQ(e["param"], param.empty() ? json(nullptr) : json(param)) << r.body;
    if (!code.empty()) {
      EXPECT_EQ(e["code"], code) << r.body;
    }
  };
  expect({{"model", "nope"}, {"input", "x"}}, 404, "model", "model_not_found");
  expect({{"model", "tiny"}, {"input", ""}}, 400, "input");
  expect({{"model", "tiny"}, {"input", "x"}, {"dimensions", 64}}, 400, "dimensions");
  Ok("/v1/embeddings", {{"model", "tiny"}, {"input", "x"}, {"dimensions", kEmbd}});
  std::string long_text;
  for (int i = 0; i < 400; ++i) long_text += "many words ";
  expect({{"model", "tiny"}, {"input", long_text}}, 400, "input", "context_length_exceeded");
  expect({{"model", "tiny"}, {"input", {1, 999999}}}, 400, "");
}

TEST_F(EmbeddingRoutesTest, OllamaEmbed) {
  const json one = Ok("/api/embed", {{"model", "tiny"}, {"input", "The quick brown fox"}});
  EXPECT_EQ(one["model"], "tiny");
  ASSERT_EQ(one["embeddings"].size(), 1u);
  const auto v = one["embeddings"][0].get<std::vector<float>>();
  ASSERT_EQ(v.size(), static_cast<size_t>(kEmbd));
  EXPECT_NEAR(Norm(v), 1.0, 1e-5);
  EXPECT_GT(one["prompt_eval_count"].get<int>(), 0);
  EXPECT_TRUE(one["total_duration"].is_number_integer());
  EXPECT_GE(one["total_duration"].get<int64_t>(), one["load_duration"].get<int64_t>());
  ExpectNear(v, OpenAi("The quick brown fox"), 1e-6);  // the same model through either API

  const json two = Ok("/api/embed", {{"model", "tiny"}, {"input", {"The quick brown fox", "jumps"}}});
  ASSERT_EQ(two["embeddings"].size(), 2u);
  ExpectNear(two["embeddings"][0].get<std::vector<float>>(), v, 1e-4);

  // An empty request only loads the model.
  const json load = Ok("/api/embed", {{"model", "tiny"}});
  EXPECT_EQ(load["embeddings"], json::array());

  auto missing = Post("/api/embed", {{"model", "nope"}, {"input", "x"}});
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(json::parse(missing.body), json({{"error", "model 'nope' not found"}}));
  auto bad = Post("/api/embed", {{"model", "tiny"}, {"input", "x"}, {"options", {{"warp", 9}}}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["error"], "unsupported option: warp");
}

TEST_F(EmbeddingRoutesTest, OllamaTruncation) {
  std::string long_text;
  for (int i = 0; i < 400; ++i) long_text += "many words ";
  // truncate defaults to true: the first kCtx tokens.
  const json cut = Ok("/api/embed", {{"model", "tiny"}, {"input", long_text}});
  EXPECT_EQ(cut["prompt_eval_count"], kCtx);
  auto refused = Post("/api/embed", {{"model", "tiny"}, {"input", long_text}, {"truncate", false}});
  EXPECT_EQ(refused.status, 400) << refused.body;
  // options.num_ctx shortens the window further.
  const json small = Ok("/api/embed", {{"model", "tiny"}, {"input", long_text}, {"options", {{"num_ctx", 8}}}});
  EXPECT_EQ(small["prompt_eval_count"], 8);
}

TEST_F(EmbeddingRoutesTest, OllamaLegacyEmbeddingsAreRaw) {
  const json j = Ok("/api/embeddings", {{"model", "tiny"}, {"prompt", "The quick brown fox"}});
  ASSERT_TRUE(j.contains("embedding"));
  auto raw = j["embedding"].get<std::vector<float>>();
  ASSERT_EQ(raw.size(), static_cast<size_t>(kEmbd));
  const double norm = Norm(raw);
  EXPECT_GT(std::abs(norm - 1.0), 1e-3);  // Ollama's legacy endpoint does not normalize
  for (float& x : raw) x = static_cast<float>(x / norm);
  ExpectNear(raw, OpenAi("The quick brown fox"), 1e-5);
  EXPECT_EQ(Ok("/api/embeddings", {{"model", "tiny"}, {"prompt", ""}}), json({{"embedding", json::array()}}));
}

TEST(PoolingFromMetadataTest, ReadsPoolingType) {
  const auto pooling = [](std::optional<GgufValue> v) {
    GgufWriter w;
    w.Set("general.architecture", GgufValue::Str("llama"));
    if (v) w.Set("llama.pooling_type", *v);
    auto file = GgufFile::FromBytes(w.WriteToBytes(), "test.gguf");
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    return PoolingFromMetadata(**file, "llama");
  };
  EXPECT_EQ(pooling(std::nullopt), Pooling::kMean);
  EXPECT_EQ(pooling(GgufValue::U32(0)), Pooling::kMean);  // none: mean
  EXPECT_EQ(pooling(GgufValue::U32(1)), Pooling::kMean);
  EXPECT_EQ(pooling(GgufValue::U32(2)), Pooling::kCls);
  EXPECT_EQ(pooling(GgufValue::U32(3)), Pooling::kLast);
  EXPECT_EQ(pooling(GgufValue::I32(3)), Pooling::kLast);
  EXPECT_EQ(pooling(GgufValue::U32(4)), Pooling::kMean);  // rank: not an embedding pooling
}

}  // namespace
}  // namespace herd::server
