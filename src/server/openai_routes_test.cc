// The OpenAI routes end to end: a real HttpServer on an ephemeral port, the tiny random model,
// raw HTTP requests; responses and stream chunks validated against the published OpenAPI schemas.
#include "server/openai_routes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "protocols/openai/openapi_check.h"
#include "sampling/json_recognizer.h"
#include "server/server_test_util.h"

namespace herd::server {
namespace {

using nlohmann::json;
using ::testing::IsEmpty;

class OpenAiRoutesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerHarness([](Router& r, ModelRegistry& m) { AddOpenAiRoutes(r, m); });
  }
  static void TearDownTestSuite() { delete server_; }
  static testing::TestResponse Call(const std::string& method, const std::string& path, const std::string& body = "") {
    return server_->Call(method, path, body);
  }
  static const openai::testing::OpenApiSpec& Spec() { return openai::testing::OpenApiSpec::Get(); }
  static inline testing::ServerHarness* server_ = nullptr;
};

const char* kChat = R"({"model": "tiny", "messages": [{"role": "system", "content": "Be brief."},
  {"role": "user", "content": "Say something."}], "max_tokens": 8, "temperature": 0)";

TEST_F(OpenAiRoutesTest, ListsModels) {
  auto r = Call("GET", "/v1/models");
  ASSERT_EQ(r.status, 200);
  const json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][0]["id"], "tiny");
  EXPECT_EQ(json::parse(Call("GET", "/v1/models/tiny").body)["object"], "model");
  auto missing = Call("GET", "/v1/models/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(json::parse(missing.body)["error"]["code"], "model_not_found");
}

TEST_F(OpenAiRoutesTest, ChatCompletionAndItsStreamAgree) {
  auto whole = Call("POST", "/v1/chat/completions", std::string(kChat) + "}");
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json j = json::parse(whole.body);
  EXPECT_THAT(Spec().Check(j, "CreateChatCompletionResponse"), IsEmpty()) << j.dump(2);
  const int completion = j["usage"]["completion_tokens"];
  EXPECT_GE(completion, 1);
  EXPECT_LE(completion, 8);
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 5);

  auto streamed = Call("POST", "/v1/chat/completions",
                       std::string(kChat) + R"(, "stream": true, "stream_options": {"include_usage": true}})");
  ASSERT_EQ(streamed.status, 200);
  EXPECT_EQ(streamed.Header("content-type"), "text/event-stream");
  std::string text;
  std::vector<json> chunks;
  size_t pos = 0;
  bool done = false;
  while (pos < streamed.body.size()) {
    const size_t end = streamed.body.find("\n\n", pos);
    ASSERT_NE(end, std::string::npos);
    const std::string event = streamed.body.substr(pos, end - pos);
    pos = end + 2;
    ASSERT_EQ(event.rfind("data: ", 0), 0u) << event;
    if (event == "data: [DONE]") {
      done = true;
      continue;
    }
    ASSERT_FALSE(done) << "data after [DONE]";
    chunks.push_back(json::parse(event.substr(6)));
    EXPECT_THAT(Spec().Check(chunks.back(), "CreateChatCompletionStreamResponse"), IsEmpty()) << event;
  }
  ASSERT_TRUE(done);
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks.front()["choices"][0]["delta"]["role"], "assistant");
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    const json& d = chunks[i]["choices"][0]["delta"];
    if (d.contains("content")) text += d["content"].get<std::string>();
  }
  const json& finish = chunks[chunks.size() - 2];
  EXPECT_EQ(finish["choices"][0]["finish_reason"], j["choices"][0]["finish_reason"]);
  const json& usage = chunks.back();
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], completion);
  // Greedy: the stream says exactly what the whole response said.
  EXPECT_EQ(text, j["choices"][0]["message"]["content"].get<std::string>());
}

TEST_F(OpenAiRoutesTest, ErrorsHaveTheOpenAiShape) {
  auto bad_json = Call("POST", "/v1/chat/completions", "{not json");
  EXPECT_EQ(bad_json.status, 400);
  EXPECT_EQ(json::parse(bad_json.body)["error"]["type"], "invalid_request_error");
  auto bad_param = Call("POST", "/v1/chat/completions",
                        R"({"model": "tiny", "messages": [{"role": "user", "content": "x"}], "temperature": 5})");
  EXPECT_EQ(bad_param.status, 400);
  EXPECT_EQ(json::parse(bad_param.body)["error"]["param"], "temperature");
  auto no_model =
      Call("POST", "/v1/chat/completions", R"({"model": "gpt-9", "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(no_model.status, 404);
  EXPECT_EQ(json::parse(no_model.body)["error"]["code"], "model_not_found");
  auto too_long = Call("POST", "/v1/chat/completions",
                       R"({"model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": 100000})");
  EXPECT_EQ(too_long.status, 400);
  EXPECT_EQ(json::parse(too_long.body)["error"]["code"], "context_length_exceeded");
}

TEST_F(OpenAiRoutesTest, JsonObjectResponseFormatGivesAJsonObject) {
  // The bias on the tiny vocabulary's '"', '}' and ']' byte tokens makes the random model close
  // strings and containers; either way the content is an object, or a valid prefix of one.
  const std::string body = R"({"model": "tiny", "messages": [{"role": "user", "content": "JSON please"}],
    "max_tokens": 120, "temperature": 0, "response_format": {"type": "json_object"},
    "logit_bias": {"37": 3, "128": 1.5, "96": 1.5}})";
  auto r = Call("POST", "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  const std::string content = j["choices"][0]["message"]["content"];
  if (j["choices"][0]["finish_reason"] == "stop") {
    const json parsed = json::parse(content, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << content;
    EXPECT_TRUE(parsed.is_object()) << content;
  } else {
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    JsonRecognizer prefix;
    EXPECT_TRUE(prefix.Feed(content)) << content;
  }
  auto schema = Call("POST", "/v1/chat/completions",
                     R"({"model": "tiny", "messages": [{"role": "user", "content": "x"}],
                         "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}})");
  EXPECT_EQ(schema.status, 400);
  EXPECT_EQ(json::parse(schema.body)["error"]["param"], "response_format.type");
}

}  // namespace
}  // namespace herd::server
