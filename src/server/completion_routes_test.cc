// POST /v1/completions end to end: a real HttpServer, the tiny random model, raw HTTP requests;
// responses and chunks validated against the published OpenAPI schema (CreateCompletionResponse).
#include "server/completion_routes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "io/gguf.h"
#include "protocols/openai/completion_response.h"
#include "protocols/openai/openapi_check.h"
#include "server/server_test_util.h"
#include "tokenizer/tokenizer.h"

namespace herd::server {
namespace {

using nlohmann::json;
using ::testing::IsEmpty;

class CompletionRoutesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerHarness([](Router& r, ModelRegistry& m) { AddCompletionRoutes(r, m); });
    file_ = std::move(GgufFile::Open(testing::TestModelPath("tiny", "F32"))).value().release();
    tokenizer_ = std::move(Tokenizer::FromGguf(*file_)).value().release();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete tokenizer_;
    delete file_;
  }
  static testing::TestResponse Post(const json& body) { return server_->Call("POST", "/v1/completions", body.dump()); }
  static json Whole(json body, bool check_schema = true) {
    auto r = Post(body);
    EXPECT_EQ(r.status, 200) << r.body;
    const json j = json::parse(r.body);
    if (check_schema) {
      EXPECT_THAT(Spec().Check(j, "CreateCompletionResponse"), IsEmpty()) << j.dump(2);
    }
    return j;
  }
  // A greedy request that never picks an end-of-generation token, so it runs to max_tokens.
  static json Greedy(json prompt, int max_tokens) {
    json bias = json::object();
    for (int32_t id : tokenizer_->vocab().eog) bias[std::to_string(id)] = -100;
    return json{
        {"model", "tiny"}, {"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"logit_bias", bias}};
  }
  // The data events of an SSE body, each parsed; checks the [DONE] terminator.
  static std::vector<json> Chunks(const std::string& body) {
    std::vector<json> out;
    size_t pos = 0;
    bool done = false;
    while (pos < body.size()) {
      const size_t end = body.find("\n\n", pos);
      EXPECT_NE(end, std::string::npos);
      if (end == std::string::npos) break;
      const std::string event = body.substr(pos, end - pos);
      pos = end + 2;
      EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
      EXPECT_FALSE(done) << "data after [DONE]";
      if (event == "data: [DONE]") {
        done = true;
        continue;
      }
      out.push_back(json::parse(event.substr(6)));
    }
    EXPECT_TRUE(done);
    return out;
  }
  static const openai::testing::OpenApiSpec& Spec() { return openai::testing::OpenApiSpec::Get(); }
  static inline testing::ServerHarness* server_ = nullptr;
  static inline GgufFile* file_ = nullptr;
  static inline Tokenizer* tokenizer_ = nullptr;
};

TEST_F(CompletionRoutesTest, WholeResponse) {
  const json j = Whole(Greedy("Once upon a time", 7));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["model"], "tiny");
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  const auto prompt = tokenizer_->Encode("Once upon a time", true, true);
  EXPECT_EQ(j["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(j["usage"]["completion_tokens"], 7);
  EXPECT_EQ(j["usage"]["total_tokens"], prompt.size() + 7);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  // OpenAI's default max_tokens is 16.
  json dflt = Greedy("Once upon a time", 0);
  dflt.erase("max_tokens");
  EXPECT_EQ(Whole(dflt)["usage"]["completion_tokens"], 16);
}

TEST_F(CompletionRoutesTest, StreamAgreesWithTheWholeResponse) {
  const json whole = Whole(Greedy("The sky is", 6));
  json req = Greedy("The sky is", 6);
  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  auto r = Post(req);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("content-type"), "text/event-stream");
  const std::vector<json> chunks = Chunks(r.body);
  ASSERT_GE(chunks.size(), 3u);
  std::string text;
  int finishes = 0;
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    const json& c = chunks[i];
    EXPECT_EQ(c["id"], chunks[0]["id"]);
    EXPECT_EQ(c["object"], "text_completion");
    EXPECT_TRUE(c["usage"].is_null());
    ASSERT_EQ(c["choices"].size(), 1u);
    text += c["choices"][0]["text"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) {
      ++finishes;
      EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
      EXPECT_THAT(Spec().Check(c, "CreateCompletionResponse"),
                  ::testing::ElementsAre("$.usage: expected type \"object\", got null"));
    }
  }
  EXPECT_EQ(finishes, 1);
  EXPECT_EQ(text, whole["choices"][0]["text"]);
  const json& usage = chunks.back();
  EXPECT_THAT(Spec().Check(usage, "CreateCompletionResponse"), IsEmpty()) << usage.dump();
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"], whole["usage"]);
}

// ignore_eos (herd extension, as vLLM's): with every end-of-generation token made certain, a
// request still runs to max_tokens; without it, it stops at the first token.
TEST_F(CompletionRoutesTest, IgnoreEosRunsToMaxTokens) {
  json bias = json::object();
  for (int32_t id : tokenizer_->vocab().eog) bias[std::to_string(id)] = 100;
  json req = {
      {"model", "tiny"}, {"prompt", "Once upon a time"}, {"max_tokens", 9}, {"temperature", 0}, {"logit_bias", bias}};
  const json stops = Whole(req);
  EXPECT_EQ(stops["choices"][0]["finish_reason"], "stop");
  EXPECT_LT(stops["usage"]["completion_tokens"].get<int>(), 9);
  req["ignore_eos"] = true;
  const json runs = Whole(req);
  EXPECT_EQ(runs["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(runs["usage"]["completion_tokens"], 9);
  req["ignore_eos"] = "yes";
  EXPECT_EQ(Post(req).status, 400);
}

TEST_F(CompletionRoutesTest, PromptArraysAndTokenPrompts) {
  const json a = Whole(Greedy("alpha beta", 4));
  const json b = Whole(Greedy("gamma", 4));
  json both = Greedy(json::array({"alpha beta", "gamma"}), 4);
  both["n"] = 2;
  const json j = Whole(both);
  ASSERT_EQ(j["choices"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["text"], (i < 2 ? a : b)["choices"][0]["text"]) << i;  // greedy: equal choices
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"],
            a["usage"]["prompt_tokens"].get<int>() + b["usage"]["prompt_tokens"].get<int>());
  EXPECT_EQ(j["usage"]["completion_tokens"], 16);

  // The same prompts as token ids (what the string encodes to, BOS included).
  const auto ids_a = tokenizer_->Encode("alpha beta", true, true);
  const auto ids_b = tokenizer_->Encode("gamma", true, true);
  EXPECT_EQ(Whole(Greedy(ids_a, 4))["choices"][0]["text"], a["choices"][0]["text"]);
  const json nested = Whole(Greedy(json::array({ids_a, ids_b}), 4));
  EXPECT_EQ(nested["choices"][1]["text"], b["choices"][0]["text"]);
}

TEST_F(CompletionRoutesTest, EchoAndLogprobs) {
  const std::string prompt = "Echo me";
  const json plain = Whole(Greedy(prompt, 5));
  json echo_req = Greedy(prompt, 5);
  echo_req["echo"] = true;
  const json echoed = Whole(echo_req);
  EXPECT_EQ(echoed["choices"][0]["text"], prompt + plain["choices"][0]["text"].get<std::string>());

  json lp_req = Greedy(prompt, 5);
  lp_req["logprobs"] = 2;
  const json with_lp = Whole(lp_req);
  EXPECT_EQ(with_lp["choices"][0]["text"], plain["choices"][0]["text"]);
  const json& lp = with_lp["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 5u);
  ASSERT_EQ(lp["token_logprobs"].size(), 5u);
  ASSERT_EQ(lp["top_logprobs"].size(), 5u);
  ASSERT_EQ(lp["text_offset"].size(), 5u);
  int32_t offset = openai::CodePoints(prompt);  // offsets count from the start of the prompt
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(lp["text_offset"][i], offset);
    offset += openai::CodePoints(lp["tokens"][i].get<std::string>());
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    // Greedy: the chosen token is the likeliest, so the top-2 dict holds it.
    const json& top = lp["top_logprobs"][i];
    EXPECT_EQ(top.size(), 2u);
    ASSERT_TRUE(top.contains(lp["tokens"][i].get<std::string>()));
    EXPECT_EQ(top[lp["tokens"][i].get<std::string>()], lp["token_logprobs"][i]);
  }

  // echo + logprobs: the prompt's tokens first, with null logprobs (not computed by the engine).
  json both = lp_req;
  both["echo"] = true;
  auto r = Post(both);
  ASSERT_EQ(r.status, 200);
  const json j = json::parse(r.body);
  const json& elp = j["choices"][0]["logprobs"];
  const auto prompt_ids = tokenizer_->Encode(prompt, true, true);
  ASSERT_EQ(elp["tokens"].size(), prompt_ids.size() + 5);
  for (size_t i = 0; i < prompt_ids.size(); ++i) {
    EXPECT_TRUE(elp["token_logprobs"][i].is_null());
    EXPECT_TRUE(elp["top_logprobs"][i].is_null());
    EXPECT_EQ(elp["tokens"][i], tokenizer_->TokenToPiece(prompt_ids[i]));
  }
  EXPECT_EQ(elp["text_offset"][0], 0);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(elp["tokens"][prompt_ids.size() + i], lp["tokens"][i]);
    EXPECT_EQ(elp["text_offset"][prompt_ids.size() + i], lp["text_offset"][i]);
  }
  // The schema types token_logprobs items as numbers; OpenAI itself returns null for the first
  // prompt token. Only that differs.
  EXPECT_THAT(Spec().Check(j, "CreateCompletionResponse"),
              ::testing::ElementsAre(::testing::HasSubstr("token_logprobs[0]: expected type \"number\", got null")));

  // max_tokens 0 with echo: just the prompt (the loglikelihood pattern of eval harnesses).
  json zero = echo_req;
  zero["max_tokens"] = 0;
  const json z = Whole(zero);
  EXPECT_EQ(z["choices"][0]["text"], prompt);
  EXPECT_EQ(z["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(z["usage"]["completion_tokens"], 0);
}

TEST_F(CompletionRoutesTest, StreamedEchoAndLogprobs) {
  json req = Greedy("Stream me", 4);
  req["echo"] = true;
  req["logprobs"] = 1;
  const json whole = Whole(req, /*check_schema=*/false);  // null prompt logprobs: see EchoAndLogprobs
  req["stream"] = true;
  auto r = Post(req);
  ASSERT_EQ(r.status, 200);
  std::string text;
  std::vector<json> offsets, tokens;
  for (const json& c : Chunks(r.body)) {
    text += c["choices"][0]["text"].get<std::string>();
    const json& lp = c["choices"][0]["logprobs"];
    if (lp.is_null()) continue;
    for (const json& o : lp["text_offset"]) offsets.push_back(o);
    for (const json& t : lp["tokens"]) tokens.push_back(t);
  }
  EXPECT_EQ(text, whole["choices"][0]["text"]);
  EXPECT_EQ(json(offsets), whole["choices"][0]["logprobs"]["text_offset"]);
  EXPECT_EQ(json(tokens), whole["choices"][0]["logprobs"]["tokens"]);
}

TEST_F(CompletionRoutesTest, CachedTokensFromThePrefixCache) {
  std::string prompt;
  for (int i = 0; i < 12; ++i) prompt += "the quick brown fox jumps ";
  const json first = Whole(Greedy(prompt, 2));
  const json second = Whole(Greedy(prompt, 2));
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  EXPECT_GT(second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 16);
  EXPECT_EQ(second["choices"][0]["text"], first["choices"][0]["text"]);
}

TEST_F(CompletionRoutesTest, Errors) {
  const auto expect = [](const json& body, int status, const std::string& param, const std::string& code = "") {
    auto r = Post(body);
    EXPECT_EQ(r.status, status) << body.dump() << " -> " << r.body;
    const json e = json::parse(r.body)["error"];
    EXPECT_EQ(e["param"], param.empty() ? json(nullptr) : json(param)) << r.body;
    if (!code.empty()) {
      EXPECT_EQ(e["code"], code) << r.body;
    }
  };
  expect({{"model", "tiny"}, {"prompt", "x"}, {"suffix", "y"}}, 400, "suffix");
  expect({{"model", "tiny"}, {"prompt", "x"}, {"best_of", 3}}, 400, "best_of");
  expect({{"model", "tiny"}, {"prompt", "x"}, {"temperature", "hot"}}, 400, "temperature");
  expect({{"model", "nope"}, {"prompt", "x"}}, 404, "model", "model_not_found");
  expect({{"model", "tiny"}, {"prompt", "x"}, {"max_tokens", 100000}}, 400, "", "context_length_exceeded");
  expect({{"model", "tiny"}, {"prompt", json::array({1, 999999})}}, 400, "prompt");
  auto bad = server_->Call("POST", "/v1/completions", "{oops");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["error"]["type"], "invalid_request_error");
}

}  // namespace
}  // namespace herd::server
