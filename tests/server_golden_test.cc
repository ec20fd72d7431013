// Golden-file tests of every API route: a real server on the tiny random model, raw HTTP
// requests, and the normalized responses (status, content type, body or stream events) compared
// byte for byte with tests/golden/<case>.txt.
//
// Normalization keeps shapes, field order, event order and token counts, and replaces what varies
// between runs or machines: ids, timestamps and durations become "<volatile>", generated text
// becomes "<text>" (random weights: the words are not the contract), and runs of identical
// consecutive events collapse into one line with " x N" removed (how many text deltas a token
// stream splits into depends on UTF-8 boundaries of the random tokens).
//
// Regenerate after an intended change: HERD_UPDATE_GOLDEN=1 build/tests/herd_server_golden_test
// and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "server/anthropic_routes.h"
#include "server/ollama_routes.h"
#include "server/openai_routes.h"
#include "server/server_test_util.h"

namespace herd::server {
namespace {

using nlohmann::ordered_json;

struct Case {
  const char* name;
  const char* method;
  const char* path;
  const char* body;
};

// clang-format off
const Case kCases[] = {
  {"openai_models", "GET", "/v1/models", ""},
  {"openai_model", "GET", "/v1/models/tiny", ""},
  {"openai_model_404", "GET", "/v1/models/nope", ""},
  {"openai_chat", "POST", "/v1/chat/completions",
   R"({"model":"tiny","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"max_tokens":6,"temperature":0})"},
  {"openai_chat_n2_logprobs", "POST", "/v1/chat/completions",
   R"({"model":"tiny","messages":[{"role":"user","content":"Hi"}],"max_tokens":3,"n":2,"seed":7,"logprobs":true,"top_logprobs":2})"},
  {"openai_chat_stream", "POST", "/v1/chat/completions",
   R"({"model":"tiny","messages":[{"role":"user","content":"Hi"}],"max_tokens":6,"temperature":0,"stream":true,"stream_options":{"include_usage":true}})"},
  {"openai_chat_unknown_model", "POST", "/v1/chat/completions",
   R"({"model":"nope","messages":[{"role":"user","content":"Hi"}]})"},
  {"openai_chat_bad_json", "POST", "/v1/chat/completions", R"({"model":"tiny",)"},
  {"openai_chat_bad_role", "POST", "/v1/chat/completions",
   R"({"model":"tiny","messages":[{"role":"robot","content":"Hi"}]})"},
  {"openai_chat_unsupported_tools", "POST", "/v1/chat/completions",
   R"({"model":"tiny","messages":[{"role":"user","content":"Hi"}],"tools":[{"type":"function","function":{"name":"f"}}]})"},
  {"openai_chat_context_exceeded", "POST", "/v1/chat/completions",
   R"({"model":"tiny","messages":[{"role":"user","content":"Hi"}],"max_tokens":100000})"},
  {"anthropic_message", "POST", "/v1/messages",
   R"({"model":"tiny","max_tokens":6,"system":"Be brief.","messages":[{"role":"user","content":"Hi"}],"temperature":0})"},
  {"anthropic_stream", "POST", "/v1/messages",
   R"({"model":"tiny","max_tokens":6,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"temperature":0,"stream":true})"},
  {"anthropic_count_tokens", "POST", "/v1/messages/count_tokens",
   R"({"model":"tiny","messages":[{"role":"user","content":"Hi"}]})"},
  {"anthropic_missing_max_tokens", "POST", "/v1/messages",
   R"({"model":"tiny","messages":[{"role":"user","content":"Hi"}]})"},
  {"anthropic_unknown_model", "POST", "/v1/messages",
   R"({"model":"nope","max_tokens":4,"messages":[{"role":"user","content":"Hi"}]})"},
  {"ollama_chat", "POST", "/api/chat",
   R"({"model":"tiny","messages":[{"role":"user","content":"Hi"}],"stream":false,"options":{"num_predict":6,"temperature":0}})"},
  {"ollama_chat_stream", "POST", "/api/chat",
   R"({"model":"tiny","messages":[{"role":"user","content":"Hi"}],"options":{"num_predict":6,"temperature":0}})"},
  {"ollama_generate_stream", "POST", "/api/generate",
   R"({"model":"tiny","prompt":"Once upon","options":{"num_predict":6,"temperature":0}})"},
  {"ollama_generate_raw", "POST", "/api/generate",
   R"({"model":"tiny","prompt":"Once upon","raw":true,"stream":false,"options":{"num_predict":4,"temperature":0}})"},
  {"ollama_load", "POST", "/api/generate", R"({"model":"tiny"})"},
  {"ollama_unknown_model", "POST", "/api/chat", R"({"model":"nope","messages":[{"role":"user","content":"Hi"}]})"},
  {"ollama_images", "POST", "/api/chat",
   R"({"model":"tiny","messages":[{"role":"user","content":"Hi","images":["aGk="]}]})"},
  {"ollama_tags", "GET", "/api/tags", ""},
  {"ollama_version", "GET", "/api/version", ""},
  {"ollama_root", "GET", "/", ""},
  {"ollama_root_head", "HEAD", "/", ""},
  {"unknown_route", "GET", "/v2/nothing", ""},
  {"ollama_unknown_route", "GET", "/api/nothing", ""},
  {"ollama_wrong_method", "GET", "/api/chat", ""},
  {"anthropic_wrong_method", "GET", "/v1/messages", ""},
  {"ollama_latest_suffix", "POST", "/api/generate", R"({"model":"tiny:latest"})"},
};
// clang-format on

bool IsVolatileKey(const std::string& key) {
  static const char* kKeys[] = {"id", "created", "created_at", "modified_at", "expires_at", "system_fingerprint"};
  for (const char* k : kKeys) {
    if (key == k) return true;
  }
  return key.size() > 9 && key.compare(key.size() - 9, 9, "_duration") == 0;
}

bool IsTextKey(const std::string& key) {
  return key == "content" || key == "text" || key == "response" || key == "token";
}

void Normalize(ordered_json& j) {
  if (j.is_array()) {
    for (auto& e : j) Normalize(e);
    return;
  }
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (IsVolatileKey(it.key()) && (it.value().is_string() || it.value().is_number())) {
      it.value() = "<volatile>";
    } else if (IsTextKey(it.key()) && it.value().is_string() && !it.value().get<std::string>().empty()) {
      it.value() = "<text>";
    } else if (it.key() == "bytes" && it.value().is_array()) {
      it.value() = "<bytes>";
    } else if (it.key() == "logprob" && it.value().is_number()) {
      it.value() = "<logprob>";
    } else {
      Normalize(it.value());
    }
  }
}

std::string NormalizeJson(const std::string& text) {
  ordered_json j = ordered_json::parse(text, nullptr, false);
  if (j.is_discarded()) return text;
  Normalize(j);
  return j.dump();
}

// Body lines: one per SSE event ("event: x" + data merged) or NDJSON object; consecutive
// duplicates collapse.
std::string NormalizeBody(const std::string& content_type, const std::string& body) {
  std::vector<std::string> lines;
  if (content_type.rfind("text/event-stream", 0) == 0) {
    std::istringstream in(body);
    std::string line, event;
    while (std::getline(in, line)) {
      if (line.rfind("event: ", 0) == 0) event = line + " | ";
      if (line.rfind("data: ", 0) == 0) {
        lines.push_back(event + "data: " + NormalizeJson(line.substr(6)));
        event.clear();
      }
    }
  } else if (content_type.rfind("application/x-ndjson", 0) == 0) {
    std::istringstream in(body);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty()) lines.push_back(NormalizeJson(line));
    }
  } else if (content_type.rfind("application/json", 0) == 0) {
    ordered_json j = ordered_json::parse(body, nullptr, false);
    if (j.is_discarded()) return body + "\n";
    Normalize(j);
    return j.dump(2) + "\n";
  } else {
    return body + "\n";
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0 && lines[i] == lines[i - 1]) continue;
    out += lines[i] + "\n";
  }
  return out;
}

std::string GoldenPath(const std::string& name) {
  return std::string(HERD_SOURCE_DIR) + "/tests/golden/" + name + ".txt";
}

// Each case gets a fresh server (the tiny model loads in milliseconds), so prefix-cache hits and
// usage counts do not depend on which cases ran before (ctest runs every case in its own process).
class ServerGoldenTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    server_ = std::make_unique<testing::ServerHarness>([](Router& r, ModelRegistry& m) {
      AddOpenAiRoutes(r, m);
      AddAnthropicRoutes(r, m);
      AddOllamaRoutes(r, m);
    });
  }
  std::unique_ptr<testing::ServerHarness> server_;
};

TEST_P(ServerGoldenTest, MatchesTheGoldenFile) {
  const Case& c = GetParam();
  const testing::TestResponse r = server_->Call(c.method, c.path, c.body);
  EXPECT_EQ(server_->ActiveLeasesAfterWait(), 0) << "the request still holds its model";
  std::string got = std::string(c.method) + " " + c.path + "\n" + (*c.body ? std::string(c.body) + "\n" : "");
  got += "--- response\nHTTP " + std::to_string(r.status) + "\n";
  for (const char* h : {"content-type", "retry-after", "cache-control"}) {
    if (!r.Header(h).empty()) got += std::string(h) + ": " + r.Header(h) + "\n";
  }
  got += "\n" + NormalizeBody(r.Header("content-type"), r.body);
  const std::string path = GoldenPath(c.name);
  if (const char* update = std::getenv("HERD_UPDATE_GOLDEN"); update != nullptr && *update == '1') {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << got;
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path << " is missing; run with HERD_UPDATE_GOLDEN=1 to create it";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << "golden file: " << path;
}

INSTANTIATE_TEST_SUITE_P(Routes, ServerGoldenTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// A client that disconnects mid-stream cancels its request: the engine stops generating for it
// and the model's lease is released (the request would otherwise run to the end of the context).
TEST(ServerDisconnectTest, ClosingTheConnectionCancelsTheRequest) {
  for (const char* api : {"openai", "anthropic", "ollama"}) {
    SCOPED_TRACE(api);
    ModelRegistry* registry = nullptr;
    testing::ServerHarness server([&registry](Router& r, ModelRegistry& m) {
      AddOpenAiRoutes(r, m);
      AddAnthropicRoutes(r, m);
      AddOllamaRoutes(r, m);
      registry = &m;
    });
    std::string path = "/v1/chat/completions", body;
    const std::string messages = R"("messages":[{"role":"user","content":"Hi"}])";
    if (std::string(api) == "openai") {
      body = R"({"model":"tiny","stream":true,)" + messages + "}";
    } else if (std::string(api) == "anthropic") {
      path = "/v1/messages";
      body = R"({"model":"tiny","stream":true,"max_tokens":400,)" + messages + "}";
    } else {
      path = "/api/chat";
      body = R"({"model":"tiny",)" + messages + "}";
    }
    testing::TestClient client(server.port());
    ASSERT_TRUE(client.Send("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body));
    auto head = client.ReadHead();
    ASSERT_TRUE(head.has_value());
    ASSERT_EQ(head->status, 200);
    ASSERT_TRUE(client.ReadChunk().has_value());  // generation has started
    client.Reset();
    // The lease goes when the request ends; poll (the engine notices within a step).
    int active = 1;
    for (int i = 0; i < 2000 && active > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      active = registry->Status()[0].active_leases;
    }
    EXPECT_EQ(active, 0);
    std::promise<int64_t> generated;
    registry->Acquire("tiny", std::nullopt, [&generated](ModelLease m, const api::ApiError&) {
      const EngineStats s = m->engine().stats();
      EXPECT_EQ(s.running, 0);
      EXPECT_EQ(s.waiting, 0);
      generated.set_value(s.generated_tokens);
    });
    // Run to the end, the request would have generated 400 (Anthropic) or n_ctx (512) - prompt tokens.
    EXPECT_LT(generated.get_future().get(), 300);
  }
}

}  // namespace
}  // namespace herd::server
