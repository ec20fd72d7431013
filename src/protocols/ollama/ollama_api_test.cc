#include "protocols/ollama/ollama_api.h"

#include <gtest/gtest.h>

namespace herd::ollama {
namespace {

using nlohmann::json;

TEST(OllamaApiTest, ChatRequestWithOptionsFormatAndKeepAlive) {
  const json body = json::parse(R"({
    "model": "llama3.2", "format": "json", "keep_alive": "1h30m",
    "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
    "options": {"num_ctx": 8192, "num_predict": 64, "temperature": 0.2, "top_k": 20, "top_p": 0.8,
                "min_p": 0.1, "typical_p": 0.9, "repeat_penalty": 1.1, "repeat_last_n": 32,
                "presence_penalty": 0.5, "frequency_penalty": 0.25, "seed": 42, "stop": ["</s>"],
                "num_thread": 8, "num_gpu": 99}})");
  api::ChatRequest r;
  api::ApiError e;
  ASSERT_TRUE(ParseChatRequest(body, &r, &e)) << e.message;
  EXPECT_TRUE(r.stream);  // Ollama streams unless told not to
  EXPECT_TRUE(r.options.json_object);
  EXPECT_DOUBLE_EQ(*r.keep_alive_seconds, 5400);
  EXPECT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.options.num_ctx, 8192);
  EXPECT_EQ(r.options.max_tokens, 64);
  EXPECT_FLOAT_EQ(*r.options.temperature, 0.2f);
  EXPECT_EQ(r.options.top_k, 20);
  EXPECT_EQ(r.options.repeat_last_n, 32);
  EXPECT_EQ(r.options.seed, 42u);
  EXPECT_EQ(r.options.stop, std::vector<std::string>{"</s>"});
}

TEST(OllamaApiTest, GenerateRequestAndLoadOnlyRequests) {
  api::CompletionRequest g;
  api::ApiError e;
  ASSERT_TRUE(ParseGenerateRequest(
      json::parse(R"({"model": "m", "prompt": "Why?", "system": "sys", "raw": true, "stream": false,
                      "keep_alive": 0, "options": {"num_predict": -1}})"),
      &g, &e))
      << e.message;
  EXPECT_EQ(g.prompt, "Why?");
  EXPECT_EQ(g.system, "sys");
  EXPECT_TRUE(g.raw);
  EXPECT_FALSE(g.stream);
  EXPECT_DOUBLE_EQ(*g.keep_alive_seconds, 0);
  EXPECT_FALSE(g.options.max_tokens.has_value());  // -1: until the context is full
  api::ChatRequest load;
  ASSERT_TRUE(ParseChatRequest(json::parse(R"({"model": "m"})"), &load, &e));  // loads the model only
  EXPECT_TRUE(load.messages.empty());
}

TEST(OllamaApiTest, ErrorsAreOllamaShaped) {
  const char* bad[] = {
      R"({"messages": []})",
      R"({"model": "m", "format": {"type": "object"}})",
      R"({"model": "m", "keep_alive": "5 minutes"})",
      R"({"model": "m", "options": {"mirostat_tau_x": 1}})",
      R"({"model": "m", "options": {"temperature": "hot"}})",
      R"({"model": "m", "messages": [{"role": "user", "content": "x", "images": ["aGk="]}]})",
      R"({"model": "m", "messages": [{"role": "robot", "content": "x"}]})",
      R"({"model": "m", "tools": [{"type": "function"}]})",
      R"({"model": "m", "stream": "yes"})",
  };
  for (const char* b : bad) {
    api::ChatRequest r;
    api::ApiError e;
    EXPECT_FALSE(ParseChatRequest(json::parse(b), &r, &e)) << b;
    EXPECT_EQ(ErrorBody(e), json({{"error", e.message}}));
    EXPECT_FALSE(e.message.empty());
  }
  api::CompletionRequest g;
  api::ApiError e;
  EXPECT_FALSE(ParseGenerateRequest(json::parse(R"({"model": "m", "images": ["x"]})"), &g, &e));
  EXPECT_FALSE(ParseGenerateRequest(json::parse(R"({"model": "m", "context": [1, 2]})"), &g, &e));
  EXPECT_FALSE(ParseGenerateRequest(json::parse(R"({"model": "m", "suffix": "end"})"), &g, &e));
}

TEST(OllamaApiTest, FormatJsonOrNothingSchemasNotYet) {
  for (const auto& [format, json_object] :
       {std::pair<const char*, bool>{R"("json")", true}, {R"("")", false}, {"null", false}}) {
    api::ChatRequest r;
    api::ApiError e;
    ASSERT_TRUE(ParseChatRequest(json::parse(std::string(R"({"model": "m", "format": )") + format + "}"), &r, &e))
        << e.message;
    EXPECT_EQ(r.options.json_object, json_object) << format;
  }
  api::CompletionRequest g;
  api::ApiError e;
  EXPECT_FALSE(ParseGenerateRequest(
      json::parse(R"({"model": "m", "prompt": "p", "format": {"type": "object", "properties": {}}})"), &g, &e));
  EXPECT_EQ(e.param, "format");
  EXPECT_NE(e.message.find("not supported yet"), std::string::npos) << e.message;
}

TEST(OllamaApiTest, Durations) {
  double s = 0;
  EXPECT_TRUE(ParseDuration("5m", &s));
  EXPECT_DOUBLE_EQ(s, 300);
  EXPECT_TRUE(ParseDuration("-1", &s));
  EXPECT_DOUBLE_EQ(s, -1);
  EXPECT_TRUE(ParseDuration("-1m", &s));
  EXPECT_DOUBLE_EQ(s, -60);
  EXPECT_TRUE(ParseDuration("250ms", &s));
  EXPECT_DOUBLE_EQ(s, 0.25);
  EXPECT_TRUE(ParseDuration(json(30), &s));
  EXPECT_DOUBLE_EQ(s, 30);
  EXPECT_FALSE(ParseDuration("", &s));
  EXPECT_FALSE(ParseDuration("5 minutes", &s));
  EXPECT_FALSE(ParseDuration("m", &s));
}

TEST(OllamaApiTest, ResponseObjects) {
  EXPECT_EQ(CreatedAt(1763794800123456789LL), "2025-11-22T07:00:00.123456789Z");
  const json chunk = ChatChunk("m", "t", "Hel");
  EXPECT_EQ(chunk.dump(),
            R"({"created_at":"t","done":false,"message":{"content":"Hel","role":"assistant"},"model":"m"})");
  Timings t{1000, 10, 200, 700, 12, 5};
  const json done = ChatDone("m", "t", "", "stop", t);
  EXPECT_EQ(done["done"], true);
  EXPECT_EQ(done["done_reason"], "stop");
  EXPECT_EQ(done["total_duration"], 1000);
  EXPECT_EQ(done["prompt_eval_count"], 12);
  EXPECT_EQ(done["eval_count"], 5);
  EXPECT_EQ(done["eval_duration"], 700);
  const json gen = GenerateDone("m", "t", "", "length", t);
  EXPECT_EQ(gen["response"], "");
  EXPECT_EQ(gen["done_reason"], "length");
}

}  // namespace
}  // namespace herd::ollama
