// The Ollama routes end to end over HTTP on the tiny random model.
#include "server/ollama_routes.h"

#include <gtest/gtest.h>

#include "sampling/json_recognizer.h"
#include "server/server_test_util.h"

namespace herd::server {
namespace {

using nlohmann::json;

class OllamaRoutesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerHarness([](Router& r, ModelRegistry& m) { AddOllamaRoutes(r, m); });
  }
  static void TearDownTestSuite() { delete server_; }
  static testing::TestResponse Call(const std::string& method, const std::string& path, const std::string& body = "") {
    return server_->Call(method, path, body);
  }
  static std::vector<json> Lines(const std::string& body) {
    std::vector<json> out;
    size_t pos = 0;
    while (pos < body.size()) {
      const size_t nl = body.find('\n', pos);
      EXPECT_NE(nl, std::string::npos);
      if (nl == std::string::npos) break;
      out.push_back(json::parse(body.substr(pos, nl - pos)));
      pos = nl + 1;
    }
    return out;
  }
  static inline testing::ServerHarness* server_ = nullptr;
};

const char* kChat = R"({"model": "tiny", "messages": [{"role": "user", "content": "Why is the sky blue?"}],
  "options": {"temperature": 0, "num_predict": 6})";

TEST_F(OllamaRoutesTest, ChatStreamsNdjsonByDefaultAndAgreesWithTheWholeAnswer) {
  auto streamed = Call("POST", "/api/chat", std::string(kChat) + "}");
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_EQ(streamed.Header("content-type"), "application/x-ndjson");
  const auto lines = Lines(streamed.body);
  ASSERT_GE(lines.size(), 1u);
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["model"], "tiny");
    EXPECT_EQ(lines[i]["message"]["role"], "assistant");
    EXPECT_EQ(lines[i]["done"], i + 1 == lines.size());
    text += lines[i]["message"]["content"].get<std::string>();
  }
  const json& fin = lines.back();
  for (const char* k : {"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count",
                        "eval_duration"}) {
    EXPECT_TRUE(fin.contains(k)) << k;
  }
  EXPECT_LE(fin["eval_count"].get<int>(), 6);
  EXPECT_TRUE(fin["done_reason"] == "stop" || fin["done_reason"] == "length");

  auto whole = Call("POST", "/api/chat", std::string(kChat) + R"(, "stream": false})");
  ASSERT_EQ(whole.status, 200);
  const json w = json::parse(whole.body);
  EXPECT_EQ(w["done"], true);
  EXPECT_EQ(w["message"]["content"].get<std::string>(), text);
  EXPECT_EQ(w["eval_count"], fin["eval_count"]);
}

TEST_F(OllamaRoutesTest, GenerateRawAndTemplated) {
  auto raw =
      Call("POST", "/api/generate",
           R"({"model": "tiny", "prompt": "Once upon", "raw": true, "stream": false, "options": {"num_predict": 3}})");
  ASSERT_EQ(raw.status, 200) << raw.body;
  const json r = json::parse(raw.body);
  EXPECT_TRUE(r["response"].is_string());
  EXPECT_EQ(r["done"], true);
  EXPECT_LT(r["prompt_eval_count"].get<int>(), 10);  // raw: no template around the prompt
  auto templated = Call(
      "POST", "/api/generate",
      R"({"model": "tiny", "prompt": "Once upon", "system": "s", "stream": false, "options": {"num_predict": 3}})");
  ASSERT_EQ(templated.status, 200);
  EXPECT_GT(json::parse(templated.body)["prompt_eval_count"].get<int>(), r["prompt_eval_count"].get<int>());
}

TEST_F(OllamaRoutesTest, ListingVersionRootAndErrors) {
  const json tags = json::parse(Call("GET", "/api/tags").body);
  EXPECT_EQ(tags["models"][0]["name"], "tiny");
  EXPECT_GT(tags["models"][0]["size"].get<int64_t>(), 0);
  EXPECT_TRUE(json::parse(Call("GET", "/api/version").body)["version"].is_string());
  EXPECT_EQ(Call("GET", "/").status, 200);
  EXPECT_EQ(Call("HEAD", "/").status, 200);
  auto missing = Call("POST", "/api/chat", R"({"model": "nope", "messages": []})");
  EXPECT_EQ(missing.status, 404);
  EXPECT_TRUE(json::parse(missing.body)["error"].is_string());
  auto bad = Call("POST", "/api/chat", R"({"model": "tiny", "options": {"bogus": 1}})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_TRUE(json::parse(bad.body)["error"].get<std::string>().find("bogus") != std::string::npos);
  auto load = Call("POST", "/api/chat", R"({"model": "tiny", "stream": false})");
  EXPECT_EQ(load.status, 200);
  EXPECT_EQ(json::parse(load.body)["done_reason"], "load");
}

TEST_F(OllamaRoutesTest, FormatJsonGivesAJsonObject) {
  for (const char* path : {"/api/chat", "/api/generate"}) {
    const std::string input = std::string(path) == "/api/chat"
                                  ? R"("messages": [{"role": "user", "content": "JSON please"}])"
                                  : R"("prompt": "JSON please")";
    auto r = Call("POST", path,
                  R"({"model": "tiny", )" + input +
                      R"(, "format": "json", "stream": false, "options": {"temperature": 0, "num_predict": 60}})");
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = json::parse(r.body);
    const std::string content = std::string(path) == "/api/chat" ? j["message"]["content"] : j["response"];
    if (j["done_reason"] == "stop") {
      const json parsed = json::parse(content, nullptr, false);
      ASSERT_FALSE(parsed.is_discarded()) << content;
      EXPECT_TRUE(parsed.is_object()) << content;
    } else {
      EXPECT_EQ(j["done_reason"], "length");
      JsonRecognizer prefix;
      EXPECT_TRUE(prefix.Feed(content)) << content;
      EXPECT_FALSE(prefix.complete()) << content;
    }
  }
  auto schema = Call("POST", "/api/chat", R"({"model": "tiny", "messages": [], "format": {"type": "object"}})");
  EXPECT_EQ(schema.status, 400);
  EXPECT_NE(json::parse(schema.body)["error"].get<std::string>().find("schema"), std::string::npos);
}

}  // namespace
}  // namespace herd::server
