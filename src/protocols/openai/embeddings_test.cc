#include "protocols/openai/embeddings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "protocols/openai/openapi_check.h"

namespace herd::openai {
namespace {

using nlohmann::json;
using ::testing::IsEmpty;

api::EmbeddingRequest Accept(const std::string& body) {
  api::EmbeddingRequest r;
  api::ApiError e;
  EXPECT_TRUE(ParseEmbeddingRequest(json::parse(body), &r, &e)) << body << ": " << e.message;
  return r;
}

api::ApiError Reject(const std::string& body) {
  api::EmbeddingRequest r;
  api::ApiError e;
  EXPECT_FALSE(ParseEmbeddingRequest(json::parse(body), &r, &e)) << body;
  return e;
}

TEST(OpenAiEmbeddingRequestTest, InputShapesAndOptions) {
  auto one = Accept(R"({"model": "m", "input": "hello"})");
  ASSERT_EQ(one.inputs.size(), 1u);
  EXPECT_EQ(one.inputs[0].text, "hello");
  EXPECT_FALSE(one.base64);
  EXPECT_FALSE(one.truncate);  // OpenAI: too long is an error
  EXPECT_FALSE(one.dimensions);
  auto many = Accept(R"({"model": "m", "input": ["a", "b"], "encoding_format": "base64", "dimensions": 8,
                         "user": "u"})");
  EXPECT_EQ(many.inputs.size(), 2u);
  EXPECT_TRUE(many.base64);
  EXPECT_EQ(many.dimensions, 8);
  EXPECT_EQ(many.user, "u");
  auto ids = Accept(R"({"model": "m", "input": [5, 6]})");
  ASSERT_EQ(ids.inputs.size(), 1u);
  EXPECT_EQ(ids.inputs[0].tokens, (std::vector<int32_t>{5, 6}));
  auto nested = Accept(R"({"model": "m", "input": [[5], [6, 7]]})");
  EXPECT_EQ(nested.inputs.size(), 2u);

  EXPECT_EQ(Reject(R"({"model": "m", "input": ""})").param, "input");
  EXPECT_EQ(Reject(R"({"model": "m", "input": ["a", ""]})").param, "input[1]");
  EXPECT_EQ(Reject(R"({"model": "m", "input": []})").param, "input");
  EXPECT_EQ(Reject(R"({"model": "m"})").param, "input");
  EXPECT_EQ(Reject(R"({"model": "m", "input": "a", "encoding_format": "int8"})").param, "encoding_format");
  EXPECT_EQ(Reject(R"({"model": "m", "input": "a", "dimensions": 0})").param, "dimensions");
  EXPECT_EQ(Reject(R"({"model": "m", "input": "a", "pooling": "cls"})").param, "pooling");
  json too_many = {{"model", "m"}, {"input", json::array()}};
  for (int i = 0; i < 2049; ++i) too_many["input"].push_back("x");
  api::EmbeddingRequest r;
  api::ApiError e;
  EXPECT_FALSE(ParseEmbeddingRequest(too_many, &r, &e));
  EXPECT_EQ(e.param, "input");
}

TEST(OpenAiEmbeddingResponseTest, Base64IsLittleEndianFloat32) {
  // 1.0f = 00 00 80 3f; -2.0f = 00 00 00 c0; 0.5f = 00 00 00 3f.
  EXPECT_EQ(EmbeddingBase64({1.0f}), "AACAPw==");
  EXPECT_EQ(EmbeddingBase64({1.0f, -2.0f}), "AACAPwAAAMA=");
  EXPECT_EQ(EmbeddingBase64({1.0f, -2.0f, 0.5f}), "AACAPwAAAMAAAAA/");
  EXPECT_EQ(EmbeddingBase64({}), "");
}

TEST(OpenAiEmbeddingResponseTest, ListMatchesTheSchema) {
  const json j = EmbeddingList("m", {{0.6f, 0.8f}, {1.0f, 0.0f}}, false, 7);
  EXPECT_THAT(testing::OpenApiSpec::Get().Check(j, "CreateEmbeddingResponse"), IsEmpty()) << j.dump(2);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["data"][1]["object"], "embedding");
  EXPECT_EQ(j["data"][0]["embedding"][1].get<float>(), 0.8f);
  EXPECT_EQ(j["usage"], json({{"prompt_tokens", 7}, {"total_tokens", 7}}));
  const json b = EmbeddingList("m", {{1.0f}}, true, 1);
  EXPECT_EQ(b["data"][0]["embedding"], "AACAPw==");
}

}  // namespace
}  // namespace herd::openai
