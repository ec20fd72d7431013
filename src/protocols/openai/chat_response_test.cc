#include "protocols/openai/chat_response.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "protocols/openai/openapi_check.h"

namespace herd::openai {
namespace {

using nlohmann::json;
using ::testing::IsEmpty;

ResponseHeader Header() { return {"chatcmpl-abc", 1763790000, "llama-3.2-1b", ""}; }

std::vector<TokenLogprobOut> SomeLogprobs() {
  TokenLogprobOut t{"Hi", -0.25f, {'H', 'i'}, {}};
  t.top = {{"Hi", -0.25f, {'H', 'i'}, {}}, {"Hello", -1.5f, {'H', 'e', 'l', 'l', 'o'}, {}}};
  return {t};
}

TEST(OpenAiChatResponseTest, CompletionMatchesTheSchema) {
  ChoiceOut a{0, "Hello there", "stop", std::nullopt};
  ChoiceOut b{1, "Hi", "length", SomeLogprobs()};
  const json j = ChatCompletion(Header(), {a, b}, {12, 5, 8});
  EXPECT_THAT(testing::OpenApiSpec::Get().Check(j, "CreateChatCompletionResponse"), IsEmpty()) << j.dump(2);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello there");
  EXPECT_EQ(j["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["total_tokens"], 17);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 8);
  EXPECT_EQ(j["choices"][1]["logprobs"]["content"][0]["top_logprobs"][1]["token"], "Hello");
}

TEST(OpenAiChatResponseTest, StreamChunksMatchTheSchemaInOrder) {
  const auto& spec = testing::OpenApiSpec::Get();
  const json first = ChatChunk(Header(), 0, true, "", "", std::nullopt, true);
  const json mid = ChatChunk(Header(), 0, false, "Hel", "", SomeLogprobs(), true);
  const json last = ChatChunk(Header(), 0, false, "", "stop", std::nullopt, true);
  const json usage = UsageChunk(Header(), {12, 2, 0});
  for (const json* c : {&first, &mid, &last, &usage}) {
    EXPECT_THAT(spec.Check(*c, "CreateChatCompletionStreamResponse"), IsEmpty()) << c->dump(2);
  }
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_EQ(mid["choices"][0]["delta"], json({{"content", "Hel"}}));
  EXPECT_TRUE(mid["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(last["usage"].is_null());
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 2);
  EXPECT_EQ(SseData(json{{"a", 1}}), "data: {\"a\":1}\n\n");
}

TEST(OpenAiChatResponseTest, TheCheckerCatchesBrokenShapes) {
  // The checker must be able to fail: a missing field, a wrong type, a value outside an enum.
  json j = ChatCompletion(Header(), {{0, "x", "stop", std::nullopt}}, {1, 1, 0});
  const auto& spec = testing::OpenApiSpec::Get();
  json no_id = j;
  no_id.erase("id");
  EXPECT_THAT(spec.Check(no_id, "CreateChatCompletionResponse"), ::testing::Contains("$.id: required"));
  json bad_reason = j;
  bad_reason["choices"][0]["finish_reason"] = "eos";
  EXPECT_FALSE(spec.Check(bad_reason, "CreateChatCompletionResponse").empty());
  json bad_type = j;
  bad_type["created"] = "now";
  EXPECT_FALSE(spec.Check(bad_type, "CreateChatCompletionResponse").empty());
  json null_index = j;
  null_index["choices"][0]["index"] = nullptr;  // not nullable
  EXPECT_FALSE(spec.Check(null_index, "CreateChatCompletionResponse").empty());
  json no_refusal = j;
  no_refusal["choices"][0]["message"].erase("refusal");
  EXPECT_FALSE(spec.Check(no_refusal, "CreateChatCompletionResponse").empty());
}

}  // namespace
}  // namespace herd::openai
