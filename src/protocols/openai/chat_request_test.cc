#include "protocols/openai/chat_request.h"

#include <gtest/gtest.h>

namespace herd::openai {
namespace {

using nlohmann::json;

json Minimal() { return json::parse(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}]})"); }

api::ApiError Reject(const json& body) {
  api::ChatRequest r;
  api::ApiError e;
  EXPECT_FALSE(ParseChatRequest(body, &r, &e)) << body.dump();
  return e;
}

TEST(OpenAiChatRequestTest, ParsesEveryImplementedField) {
  const json body = json::parse(R"({
    "model": "llama", "stream": true, "stream_options": {"include_usage": true},
    "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "developer", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "user", "content": "hi", "name": "ann"},
      {"role": "assistant", "content": null},
      {"role": "tool", "content": "42", "tool_call_id": "call_1"}],
    "max_completion_tokens": 64, "temperature": 0.5, "top_p": 0.9, "n": 2, "stop": ["\n\n", "END"],
    "seed": 7, "presence_penalty": 0.5, "frequency_penalty": -0.5, "logit_bias": {"15": -100, "7": 2.5},
    "logprobs": true, "top_logprobs": 3, "response_format": {"type": "json_object"}, "user": "u1",
    "top_k": 40, "min_p": 0.05, "ignore_eos": true})");
  api::ChatRequest r;
  api::ApiError e;
  ASSERT_TRUE(ParseChatRequest(body, &r, &e)) << e.message;
  EXPECT_EQ(r.model, "llama");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  ASSERT_EQ(r.messages.size(), 5u);
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.messages[2].name, "ann");
  EXPECT_EQ(r.messages[3].content, "");
  EXPECT_EQ(r.messages[4].tool_call_id, "call_1");
  const api::GenerationOptions& o = r.options;
  EXPECT_EQ(o.max_tokens, 64);
  EXPECT_FLOAT_EQ(*o.temperature, 0.5f);
  EXPECT_FLOAT_EQ(*o.top_p, 0.9f);
  EXPECT_EQ(o.n, 2);
  EXPECT_EQ(o.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.logit_bias.size(), 2u);
  EXPECT_TRUE(o.logprobs);
  EXPECT_EQ(o.top_logprobs, 3);
  EXPECT_TRUE(o.json_object);
  EXPECT_EQ(o.top_k, 40);
  EXPECT_FLOAT_EQ(*o.min_p, 0.05f);
  EXPECT_TRUE(o.ignore_eos);
  EXPECT_EQ(r.user, "u1");
}

TEST(OpenAiChatRequestTest, AbsentFieldsStayAbsent) {
  api::ChatRequest r;
  api::ApiError e;
  ASSERT_TRUE(ParseChatRequest(Minimal(), &r, &e));
  EXPECT_FALSE(r.options.max_tokens.has_value());
  EXPECT_FALSE(r.options.temperature.has_value());
  EXPECT_FALSE(r.options.seed.has_value());
  EXPECT_EQ(r.options.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.options.ignore_eos);
}

TEST(OpenAiChatRequestTest, ErrorsNameTheParameter) {
  struct Case {
    const char* patch;  // merged into the minimal body
    const char* param;
  } cases[] = {
      {R"({"temperature": 2.5})", "temperature"},
      {R"({"top_p": "high"})", "top_p"},
      {R"({"n": 0})", "n"},
      {R"({"max_tokens": 0})", "max_tokens"},
      {R"({"stop": ["a", "b", "c", "d", "e"]})", "stop"},
      {R"({"stop": 5})", "stop"},
      {R"({"logit_bias": {"abc": 1}})", "logit_bias"},
      {R"({"logit_bias": {"5": 101}})", "logit_bias"},
      {R"({"top_logprobs": 2})", "top_logprobs"},
      {R"({"response_format": {"type": "json_schema"}})", "response_format.type"},
      {R"({"stream_options": {"include_usage": true}})", "stream_options"},
      {R"({"tools": []})", "tools"},
      {R"({"tool_choice": "auto"})", "tool_choice"},
      {R"({"frobnicate": 1})", "frobnicate"},
      {R"({"model": 3})", "model"},
      {R"({"messages": []})", "messages"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": null}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "messages[0].content[0].type"},
      {R"({"messages": [{"role": "tool", "content": "x"}]})", "messages[0].tool_call_id"},
      {R"({"store": true})", "store"},
  };
  for (const Case& c : cases) {
    json body = Minimal();
    body.merge_patch(json::parse(c.patch));
    const api::ApiError e = Reject(body);
    EXPECT_EQ(e.param, c.param) << c.patch << " -> " << e.message;
    EXPECT_EQ(e.kind, api::ErrorKind::kInvalidRequest);
    EXPECT_FALSE(e.message.empty());
  }
  EXPECT_EQ(Reject(json::array()).kind, api::ErrorKind::kInvalidRequest);
  json no_messages = Minimal();
  no_messages.erase("messages");
  EXPECT_EQ(Reject(no_messages).param, "messages");
}

TEST(OpenAiChatRequestTest, ResponseFormatTextAndJsonObjectAreAcceptedJsonSchemaIsNotYet) {
  for (const auto& [type, json_object] : {std::pair<const char*, bool>{"text", false}, {"json_object", true}}) {
    json body = Minimal();
    body["response_format"] = {{"type", type}};
    api::ChatRequest r;
    api::ApiError e;
    ASSERT_TRUE(ParseChatRequest(body, &r, &e)) << e.message;
    EXPECT_EQ(r.options.json_object, json_object) << type;
  }
  json schema = Minimal();
  schema["response_format"] = json::parse(R"({"type": "json_schema", "json_schema": {"name": "x", "schema": {}}})");
  const api::ApiError e = Reject(schema);
  EXPECT_EQ(e.param, "response_format.type");
  EXPECT_NE(e.message.find("not supported yet"), std::string::npos) << e.message;
}

TEST(OpenAiChatRequestTest, ErrorBodyHasTheOpenAiShape) {
  const json body = ErrorBody(api::InvalidRequest("temperature must be in [0, 2], got 3", "temperature"));
  EXPECT_EQ(body.dump(),
            R"({"error":{"code":null,"message":"temperature must be in [0, 2], got 3","param":"temperature",)"
            R"("type":"invalid_request_error"}})");
  api::ApiError overloaded = api::FromStatus(ResourceExhausted("overloaded: 10 requests"));
  EXPECT_EQ(api::HttpStatusFor(overloaded.kind), 429);
  EXPECT_EQ(ErrorBody(overloaded)["error"]["type"], "server_error");
  api::ApiError ctx = api::FromStatus(OutOfRange("too long"));
  EXPECT_EQ(ErrorBody(ctx)["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(api::HttpStatusFor(ctx.kind), 400);
  EXPECT_EQ(api::HttpStatusFor(api::FromStatus(NotFound("model x")).kind), 404);
}

}  // namespace
}  // namespace herd::openai
