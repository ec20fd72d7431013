#include "protocols/ollama/embed.h"

#include <gtest/gtest.h>

namespace herd::ollama {
namespace {

using nlohmann::json;

api::EmbeddingRequest Embed(const std::string& body) {
  api::EmbeddingRequest r;
  api::ApiError e;
  EXPECT_TRUE(ParseEmbedRequest(json::parse(body), &r, &e)) << body << ": " << e.message;
  return r;
}

api::ApiError RejectEmbed(const std::string& body) {
  api::EmbeddingRequest r;
  api::ApiError e;
  EXPECT_FALSE(ParseEmbedRequest(json::parse(body), &r, &e)) << body;
  return e;
}

TEST(OllamaEmbedTest, ParsesInputTruncateOptionsKeepAlive) {
  auto one = Embed(R"({"model": "m", "input": "hello"})");
  EXPECT_EQ(one.model, "m");
  ASSERT_EQ(one.inputs.size(), 1u);
  EXPECT_EQ(one.inputs[0].text, "hello");
  EXPECT_TRUE(one.truncate);   // Ollama's default
  EXPECT_TRUE(one.normalize);  // /api/embed normalizes
  auto many = Embed(R"({"model": "m", "input": ["a", "b"], "truncate": false, "keep_alive": "10m",
                        "options": {"num_ctx": 256, "temperature": 0.2, "num_thread": 4}, "dimensions": 64})");
  EXPECT_EQ(many.inputs.size(), 2u);
  EXPECT_FALSE(many.truncate);
  EXPECT_EQ(many.keep_alive_seconds, 600.0);
  EXPECT_EQ(many.num_ctx, 256);
  EXPECT_EQ(many.dimensions, 64);
  EXPECT_TRUE(Embed(R"({"model": "m"})").inputs.empty());  // a load request
  EXPECT_TRUE(Embed(R"({"model": "m", "input": ""})").inputs.empty());

  EXPECT_EQ(RejectEmbed(R"({"input": "x"})").param, "model");
  EXPECT_EQ(RejectEmbed(R"({"model": "m", "input": 3})").param, "input");
  EXPECT_EQ(RejectEmbed(R"({"model": "m", "input": ["a", 3]})").param, "input");
  EXPECT_EQ(RejectEmbed(R"({"model": "m", "input": "a", "truncate": "yes"})").param, "truncate");
  EXPECT_EQ(RejectEmbed(R"({"model": "m", "input": "a", "options": {"warp": 9}})").param, "options.warp");
  EXPECT_EQ(RejectEmbed(R"({"model": "m", "input": "a", "options": {"num_ctx": 0}})").param, "options.num_ctx");
  EXPECT_EQ(RejectEmbed(R"({"model": "m", "input": "a", "keep_alive": "soon"})").param, "keep_alive");
  EXPECT_EQ(RejectEmbed(R"({"model": "m", "input": "a", "prompt": "b"})").param, "prompt");
}

TEST(OllamaEmbedTest, LegacyEmbeddingsRequest) {
  api::EmbeddingRequest r;
  api::ApiError e;
  ASSERT_TRUE(ParseEmbeddingsRequest(json::parse(R"({"model": "m", "prompt": "hi", "keep_alive": 0})"), &r, &e));
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].text, "hi");
  EXPECT_FALSE(r.normalize);  // Ollama's legacy endpoint returns the raw vector
  EXPECT_EQ(r.keep_alive_seconds, 0.0);
  EXPECT_FALSE(ParseEmbeddingsRequest(json::parse(R"({"model": "m", "prompt": ["a"]})"), &r, &e));
  EXPECT_EQ(e.param, "prompt");
  EXPECT_FALSE(ParseEmbeddingsRequest(json::parse(R"({"model": "m", "input": "a"})"), &r, &e));
  EXPECT_EQ(e.param, "input");
}

TEST(OllamaEmbedTest, Responses) {
  const json j = EmbedResponse("m", {{0.6f, 0.8f}}, 1500, 200, 3);
  EXPECT_EQ(j, json::parse(R"({"model": "m", "embeddings": [[0.6000000238418579, 0.800000011920929]],
                              "total_duration": 1500, "load_duration": 200, "prompt_eval_count": 3})"));
  EXPECT_EQ(EmbedResponse("m", {}, 0, 0, 0)["embeddings"], json::array());
  EXPECT_EQ(EmbeddingsResponse({1.0f}), json::parse(R"({"embedding": [1.0]})"));
  EXPECT_EQ(EmbeddingsResponse({}), json::parse(R"({"embedding": []})"));
}

}  // namespace
}  // namespace herd::ollama
