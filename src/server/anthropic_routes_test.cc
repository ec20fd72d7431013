// The Anthropic routes end to end over HTTP on the tiny random model: message objects, the
// stream's event order, cache_control pins and their usage fields, count_tokens, errors.
#include "server/anthropic_routes.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "server/server_test_util.h"

namespace herd::server {
namespace {

using nlohmann::json;

class AnthropicRoutesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerHarness([](Router& r, ModelRegistry& m) { AddAnthropicRoutes(r, m); });
  }
  static void TearDownTestSuite() { delete server_; }
  static testing::TestResponse Post(const std::string& path, const std::string& body) {
    return server_->Call("POST", path, body, "anthropic-version: 2023-06-01\r\n");
  }
  static inline testing::ServerHarness* server_ = nullptr;
};

json Request(bool stream, bool cache, char fill = 'x') {
  std::string system(400, fill);
  for (size_t i = 0; i < system.size(); i += 7) system[i] = ' ';
  json sys = {{{"type", "text"}, {"text", system}}};
  if (cache) sys[0]["cache_control"] = {{"type", "ephemeral"}};
  return json{{"model", "tiny"},  {"max_tokens", 6}, {"temperature", 0},
              {"stream", stream}, {"system", sys},   {"messages", {{{"role", "user"}, {"content", "Hello there"}}}}};
}

TEST_F(AnthropicRoutesTest, MessageAndStreamAgreeInTheDocumentedEventOrder) {
  auto whole = Post("/v1/messages", Request(false, false).dump());
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json m = json::parse(whole.body);
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_TRUE(m["stop_reason"] == "end_turn" || m["stop_reason"] == "max_tokens");
  EXPECT_GT(m["usage"]["input_tokens"].get<int>(), 50);

  auto streamed = Post("/v1/messages", Request(true, false).dump());
  ASSERT_EQ(streamed.status, 200);
  std::vector<std::string> names;
  std::string text;
  json final_delta;
  size_t pos = 0;
  while (pos < streamed.body.size()) {
    const size_t end = streamed.body.find("\n\n", pos);
    ASSERT_NE(end, std::string::npos);
    const std::string ev = streamed.body.substr(pos, end - pos);
    pos = end + 2;
    const size_t nl = ev.find('\n');
    ASSERT_EQ(ev.rfind("event: ", 0), 0u);
    const std::string name = ev.substr(7, nl - 7);
    const json data = json::parse(ev.substr(nl + 7));
    EXPECT_EQ(data["type"], name);
    if (names.empty() || names.back() != name || name != "content_block_delta") names.push_back(name);
    if (name == "content_block_delta") text += data["delta"]["text"].get<std::string>();
    if (name == "message_delta") final_delta = data;
  }
  std::vector<std::string> expected = {"message_start", "content_block_start", "ping"};
  if (!text.empty()) expected.push_back("content_block_delta");
  for (const char* n : {"content_block_stop", "message_delta", "message_stop"}) expected.push_back(n);
  EXPECT_EQ(names, expected);
  EXPECT_EQ(text, m["content"][0]["text"].get<std::string>());
  EXPECT_EQ(final_delta["delta"]["stop_reason"], m["stop_reason"]);
  EXPECT_EQ(final_delta["usage"]["output_tokens"], m["usage"]["output_tokens"]);
}

TEST_F(AnthropicRoutesTest, CacheControlPinsThePrefixAndUsageSaysSo) {
  const json first = json::parse(Post("/v1/messages", Request(false, true, 'q').dump()).body);
  EXPECT_GT(first["usage"]["cache_creation_input_tokens"].get<int>(), 0) << first.dump();
  // Other prompts in between; the system prompt is still served from cache (that a pin survives
  // pool pressure is tested with the engine: PinsKeepAPrefixCachedUnderPressure).
  for (int i = 0; i < 3; ++i) {
    json other = Request(false, false);
    other["system"][0]["text"] = std::string(300 + i, 'a' + static_cast<char>(i));
    Post("/v1/messages", other.dump());
  }
  const json again = json::parse(Post("/v1/messages", Request(false, true, 'q').dump()).body);
  EXPECT_GE(again["usage"]["cache_read_input_tokens"].get<int>(), 16) << again.dump();
  // Anthropic's accounting: input_tokens + cache_creation_input_tokens + cache_read_input_tokens
  // is the whole prompt, each token counted once.
  const auto total = [](const json& u) {
    return u["input_tokens"].get<int>() + u["cache_creation_input_tokens"].get<int>() +
           u["cache_read_input_tokens"].get<int>();
  };
  json count = Request(false, true, 'q');
  count.erase("max_tokens");
  const json counted = json::parse(Post("/v1/messages/count_tokens", count.dump()).body);
  EXPECT_EQ(total(first["usage"]), counted["input_tokens"].get<int>()) << first.dump();
  EXPECT_EQ(total(again["usage"]), counted["input_tokens"].get<int>()) << again.dump();
}

// A breakpoint on a block inside a message pins up to the end of that block: more than the
// conversation before the message, less than the whole prompt.
TEST_F(AnthropicRoutesTest, BreakpointInsideAMessagePinsToTheEndOfItsBlock) {
  std::string first(150, 'k'), second(150, 'z');
  for (size_t i = 0; i < first.size(); i += 5) first[i] = second[i] = ' ';
  json blocks = json::array();
  blocks.push_back({{"type", "text"}, {"text", first}, {"cache_control", {{"type", "ephemeral"}}}});
  blocks.push_back({{"type", "text"}, {"text", second}});
  json message = json::object();
  message["role"] = "user";
  message["content"] = blocks;
  json r = json::object();
  r["model"] = "tiny";
  r["max_tokens"] = 2;
  r["system"] = "Short system prompt.";
  r["messages"] = json::array({message});
  const auto reply = Post("/v1/messages", r.dump());
  ASSERT_EQ(reply.status, 200) << reply.body;
  const json got = json::parse(reply.body);
  const int created = got["usage"]["cache_creation_input_tokens"].get<int>();
  json before = r;  // the conversation up to the message: the system prompt and a one-byte message
  before["messages"][0]["content"] = "k";
  before.erase("max_tokens");
  json whole = r;
  whole.erase("max_tokens");
  const int n_before = json::parse(Post("/v1/messages/count_tokens", before.dump()).body)["input_tokens"];
  const int n_whole = json::parse(Post("/v1/messages/count_tokens", whole.dump()).body)["input_tokens"];
  EXPECT_GT(created, n_before + 30) << got.dump();
  EXPECT_LT(created, n_whole - 30) << got.dump();
}

// A pinned prefix survives a restart through ModelInstanceOptions::prefix_cache_file.
TEST(PrefixCacheFileTest, PinnedPrefixesAreWarmAfterARestart) {
  const std::string file = ::testing::TempDir() + "/herd-prefix-cache.bin";
  std::remove(file.c_str());
  ModelInstanceOptions o;
  o.path = testing::TestModelPath("tiny", "F32");
  o.name = "tiny";
  o.threads = 1;
  o.n_ctx = 512;
  o.prefix_cache_file = file;
  auto serve_once = [&](int32_t* loaded) {
    auto m = ModelInstance::Load(o);
    EXPECT_TRUE(m.ok());
    *loaded = (*m)->prefix_blocks_loaded();
    ModelRegistry models;
    models.AddLoaded(std::move(m).value());
    Router router;
    AddAnthropicRoutes(router, models);
    HttpServerConfig c;
    c.port = 0;
    HttpServer server(c, std::move(router));
    EXPECT_TRUE(server.Start().ok());
    testing::TestClient client(server.port());
    const std::string body = Request(false, true, 'z').dump();
    EXPECT_TRUE(client.Send("POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
                            "\r\nConnection: close\r\n\r\n" + body));
    auto r = client.ReadResponse(false, std::chrono::milliseconds(60000));
    server.Stop(std::chrono::milliseconds(500));
    return json::parse(r ? r->body : "{}");
  };
  int32_t loaded_first = -1, loaded_second = -1;
  const json first = serve_once(&loaded_first);  // the model unloads at the end of the lambda: saved
  const json second = serve_once(&loaded_second);
  EXPECT_EQ(loaded_first, 0);
  EXPECT_GT(loaded_second, 0);
  EXPECT_EQ(first["usage"]["cache_read_input_tokens"], 0);
  EXPECT_GE(second["usage"]["cache_read_input_tokens"].get<int>(), 16) << second.dump();
  std::remove(file.c_str());
}

TEST_F(AnthropicRoutesTest, ErrorsHaveAnthropicsShape) {
  json no_max = Request(false, false);
  no_max.erase("max_tokens");
  auto r = Post("/v1/messages", no_max.dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["type"], "error");
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "invalid_request_error");
  json unknown = Request(false, false);
  unknown["model"] = "claude-9";
  auto nf = Post("/v1/messages", unknown.dump());
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(json::parse(nf.body)["error"]["type"], "not_found_error");
  EXPECT_EQ(Post("/v1/messages", "{oops").status, 400);
}

}  // namespace
}  // namespace herd::server
