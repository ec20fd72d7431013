#include "protocols/openai/completion_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "protocols/openai/completion_response.h"
#include "protocols/openai/openapi_check.h"

namespace herd::openai {
namespace {

using nlohmann::json;
using ::testing::IsEmpty;

api::CompletionRequest Accept(const std::string& body) {
  api::CompletionRequest r;
  api::ApiError e;
  EXPECT_TRUE(ParseCompletionRequest(json::parse(body), &r, &e)) << body << ": " << e.message;
  return r;
}

api::ApiError Reject(const std::string& body) {
  api::CompletionRequest r;
  api::ApiError e;
  EXPECT_FALSE(ParseCompletionRequest(json::parse(body), &r, &e)) << body;
  return e;
}

TEST(OpenAiCompletionRequestTest, ParsesEveryImplementedField) {
  const auto r = Accept(R"({"model": "m", "prompt": "Once", "max_tokens": 5, "temperature": 0.5, "top_p": 0.9,
    "n": 3, "best_of": 3, "stop": ["\n"], "seed": 11, "presence_penalty": 1, "frequency_penalty": -1,
    "logit_bias": {"7": -100}, "echo": true, "logprobs": 2, "stream": true,
    "stream_options": {"include_usage": true}, "suffix": null, "user": "u", "top_k": 4, "ignore_eos": true})");
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].text, "Once");
  EXPECT_FALSE(r.prompts[0].is_tokens);
  EXPECT_EQ(r.options.max_tokens, 5);
  EXPECT_EQ(r.options.temperature, 0.5f);
  EXPECT_EQ(r.options.top_p, 0.9f);
  EXPECT_EQ(r.options.n, 3);
  EXPECT_EQ(r.options.stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(r.options.seed, 11u);
  EXPECT_EQ(r.options.presence_penalty, 1.0f);
  EXPECT_EQ(r.options.frequency_penalty, -1.0f);
  ASSERT_EQ(r.options.logit_bias.size(), 1u);
  EXPECT_EQ(r.options.logit_bias[0].first, 7);
  EXPECT_TRUE(r.echo);
  EXPECT_TRUE(r.options.logprobs);
  EXPECT_EQ(r.options.top_logprobs, 2);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.user, "u");
  EXPECT_EQ(r.options.top_k, 4);
  EXPECT_TRUE(r.options.ignore_eos);
}

TEST(OpenAiCompletionRequestTest, DefaultsStayAbsent) {
  const auto r = Accept(R"({"model": "m", "prompt": "x"})");
  EXPECT_FALSE(r.options.max_tokens);  // the server applies OpenAI's 16
  EXPECT_FALSE(r.options.logprobs);
  EXPECT_FALSE(r.echo);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.options.ignore_eos);
  EXPECT_EQ(r.options.n, 1);
  // logprobs 0: the sampled token's logprob, no alternatives.
  const auto zero = Accept(R"({"model": "m", "prompt": "x", "logprobs": 0, "max_tokens": 0})");
  EXPECT_TRUE(zero.options.logprobs);
  EXPECT_EQ(zero.options.top_logprobs, 0);
  EXPECT_EQ(zero.options.max_tokens, 0);
}

TEST(OpenAiCompletionRequestTest, PromptShapes) {
  auto strings = Accept(R"({"model": "m", "prompt": ["a", "b c"]})");
  ASSERT_EQ(strings.prompts.size(), 2u);
  EXPECT_EQ(strings.prompts[1].text, "b c");
  auto ids = Accept(R"({"model": "m", "prompt": [1, 2, 3]})");
  ASSERT_EQ(ids.prompts.size(), 1u);
  EXPECT_TRUE(ids.prompts[0].is_tokens);
  EXPECT_EQ(ids.prompts[0].tokens, (std::vector<int32_t>{1, 2, 3}));
  auto nested = Accept(R"({"model": "m", "prompt": [[1, 2], [3]]})");
  ASSERT_EQ(nested.prompts.size(), 2u);
  EXPECT_EQ(nested.prompts[1].tokens, std::vector<int32_t>{3});
  EXPECT_EQ(Accept(R"({"model": "m", "prompt": ""})").prompts[0].text, "");

  EXPECT_EQ(Reject(R"({"model": "m"})").param, "prompt");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": []})").param, "prompt");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": 5})").param, "prompt");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": ["a", 1]})").param, "prompt[1]");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": [[1], []]})").param, "prompt[1]");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": [1, -2]})").param, "prompt");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": [[1], "a"]})").param, "prompt[1]");
}

TEST(OpenAiCompletionRequestTest, RejectsWhatHerdDoesNotDo) {
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": "x", "suffix": "end"})").param, "suffix");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": "x", "best_of": 3})").param, "best_of");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": "x", "best_of": 2, "n": 3})").param, "best_of");
  Accept(R"({"model": "m", "prompt": "x", "best_of": 1, "n": 2, "suffix": ""})");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": "x", "logprobs": 6})").param, "logprobs");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": "x", "logprobs": true})").param, "logprobs");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": "x", "max_tokens": -1})").param, "max_tokens");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": "x", "temperature": "hot"})").param, "temperature");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": "x", "stream_options": {"include_usage": true}})").param,
            "stream_options");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": "x", "stop": ["a", "b", "c", "d", "e"]})").param, "stop");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": "x", "logit_bias": {"x": 1}})").param, "logit_bias");
  EXPECT_EQ(Reject(R"({"model": "m", "prompt": "x", "messages": []})").param, "messages");
  EXPECT_EQ(Reject(R"({"prompt": "x"})").param, "model");
  EXPECT_EQ(Reject(R"([1])").param, "");
}

LegacyLogprobs SomeLogprobs(bool with_prompt) {
  LegacyLogprobs lp;
  if (with_prompt) {
    lp.tokens = {"Once"};
    lp.token_logprobs = {std::nullopt};
    lp.top_logprobs = {std::nullopt};
    lp.text_offset = {0};
  }
  lp.tokens.push_back(" upon");
  lp.token_logprobs.push_back(-0.5f);
  lp.top_logprobs.push_back(std::vector<std::pair<std::string, float>>{{" upon", -0.5f}, {" a", -1.25f}});
  lp.text_offset.push_back(4);
  return lp;
}

TEST(OpenAiCompletionResponseTest, WholeAndChunksMatchTheSchema) {
  const ResponseHeader h{"cmpl-1", 1763790000, "m", ""};
  CompletionChoiceOut a{0, " upon", "length", SomeLogprobs(false)};
  CompletionChoiceOut b{1, " a time", "stop", std::nullopt};
  const json j = Completion(h, {a, b}, {4, 3, 1});
  EXPECT_THAT(testing::OpenApiSpec::Get().Check(j, "CreateCompletionResponse"), IsEmpty()) << j.dump(2);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"], json({" upon"}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["top_logprobs"][0], json({{" upon", -0.5}, {" a", -1.25}}));
  EXPECT_EQ(j["choices"][0]["logprobs"]["text_offset"], json({4}));
  EXPECT_TRUE(j["choices"][1]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["total_tokens"], 7);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 1);

  CompletionChoiceOut streaming{1, " a", "", std::nullopt};
  const json c = CompletionChunk(h, streaming, true);
  // The schema is shared by whole responses and chunks; streamed chunks carry finish_reason null
  // until the choice ends and usage null with include_usage (OpenAI's documented stream shape),
  // which the schema does not mark nullable. Those two, and nothing else, differ.
  EXPECT_THAT(testing::OpenApiSpec::Get().Check(c, "CreateCompletionResponse"),
              ::testing::ElementsAre("$.choices[0].finish_reason: expected type \"string\", got null",
                                     "$.usage: expected type \"object\", got null"))
      << c.dump(2);
  EXPECT_THAT(testing::OpenApiSpec::Get().Check(CompletionChunk(h, a, false), "CreateCompletionResponse"), IsEmpty());
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(c["usage"].is_null());
  const json u = CompletionUsageChunk(h, {4, 3, 0});
  EXPECT_THAT(testing::OpenApiSpec::Get().Check(u, "CreateCompletionResponse"), IsEmpty()) << u.dump(2);
  EXPECT_TRUE(u["choices"].empty());
}

TEST(OpenAiCompletionResponseTest, EchoedPromptTokensHaveNullLogprobs) {
  const json j = Completion({"cmpl-1", 1, "m", ""}, {{0, "Once upon", "length", SomeLogprobs(true)}}, {1, 1, 0});
  const json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"Once", " upon"}));
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["token_logprobs"][1], -0.5);
  EXPECT_EQ(lp["text_offset"], json({0, 4}));
}

TEST(OpenAiCompletionResponseTest, CodePoints) {
  EXPECT_EQ(CodePoints(""), 0);
  EXPECT_EQ(CodePoints("abc"), 3);
  EXPECT_EQ(CodePoints("h\xc3\xa9llo \xe2\x82\xac"), 7);  // é and €
}

}  // namespace
}  // namespace herd::openai
