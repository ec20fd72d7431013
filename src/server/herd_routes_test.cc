// herd's own routes end to end (a real HttpServer, the tiny random model): exact /metrics values
// after a known sequence of requests, read back with a strict exposition-format parser; /health
// while a preloaded model loads; /v1/status; tokenize / detokenize / apply-template against the
// model's own tokenizer and chat prompt; API keys.
#include "server/herd_routes.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

#include "server/openai_routes.h"
#include "server/prometheus_check.h"
#include "server/replica_picker.h"
#include "server/server_test_util.h"

namespace herd::server {
namespace {

using nlohmann::json;

// A harness with the OpenAI and herd routes, counting HTTP requests; `registry` is the
// harness's, to look at the model directly.
struct Harness {
  std::shared_ptr<HttpMetrics> http = std::make_shared<HttpMetrics>();
  ModelRegistry* registry = nullptr;
  std::unique_ptr<testing::ServerHarness> server;

  explicit Harness(const ApiKeys* keys = nullptr) {
    server = std::make_unique<testing::ServerHarness>([this, keys](Router& r, ModelRegistry& m) {
      registry = &m;
      AddOpenAiRoutes(r, m, keys);
      HerdRoutesOptions o;
      o.keys = keys;
      o.http_metrics = http;
      o.open_connections = [] { return 1; };
      o.memory_budget_bytes = 1ull << 30;
      AddHerdRoutes(r, m, o);
    });
  }
  ModelLease Model(const std::string& name = "tiny") const {
    std::promise<ModelLease> p;
    registry->Acquire(name, std::nullopt, [&p](ModelLease l, const api::ApiError&) { p.set_value(std::move(l)); });
    return p.get_future().get();
  }
  testing::TestResponse Call(const std::string& method, const std::string& path, const std::string& body = "",
                             const std::string& headers = "") const {
    return server->Call(method, path, body, headers);
  }
};

// Waits until the engine's published stats include `n` finished requests (they are published
// at the end of the step in which the last one ended, after its client got the answer).
void WaitFinished(const ModelLease& model, int64_t n) {
  for (int i = 0; i < 6000 && model->engine().stats().requests_finished < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(model->engine().stats().requests_finished, n);
}

testing::Exposition Scrape(const Harness& s) {
  const testing::TestResponse r = s.Call("GET", "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  testing::Exposition e;
  std::string error;
  EXPECT_TRUE(testing::ParseExposition(r.body, &e, &error)) << error << "\n" << r.body;
  return e;
}

double Sample(const testing::Exposition& e, const std::string& key) {
  auto it = e.samples.find(key);
  EXPECT_NE(it, e.samples.end()) << key;
  return it == e.samples.end() ? -1 : it->second;
}

std::string Chat(const std::string& user, int max_tokens) {
  return json{{"model", "tiny"},
              {"messages", {{{"role", "user"}, {"content", user}}}},
              {"max_tokens", max_tokens},
              {"temperature", 0}}
      .dump();
}

TEST(HerdRoutesTest, MetricsAfterKnownRequests) {
  Harness s;
  const std::string m = "{model_name=\"tiny\"}";
  {
    // Before any request the loaded model's series exist, at zero.
    const testing::Exposition e = Scrape(s);
    EXPECT_EQ(Sample(e, "vllm:num_requests_running" + m), 0);
    EXPECT_EQ(Sample(e, "vllm:generation_tokens_total" + m), 0);
    EXPECT_EQ(Sample(e, "vllm:time_to_first_token_seconds_count" + m), 0);
    EXPECT_EQ(e.types.at("vllm:prompt_tokens_total"), "counter");
    EXPECT_EQ(e.types.at("vllm:kv_cache_usage_perc"), "gauge");
    EXPECT_EQ(e.types.at("vllm:e2e_request_latency_seconds"), "histogram");
  }
  int prompt = 0, completion = 0, gaps = 0, two_or_more = 0, stopped = 0, length = 0;
  const char* users[] = {"Hello there.", "What is the capital of France?", "Count: one two three."};
  for (const char* u : users) {
    const testing::TestResponse r = s.Call("POST", "/v1/chat/completions", Chat(u, 6));
    ASSERT_EQ(r.status, 200) << r.body;
    const json j = json::parse(r.body);
    const int c = j["usage"]["completion_tokens"];
    prompt += j["usage"]["prompt_tokens"].get<int>();
    completion += c;
    gaps += c - 1;
    two_or_more += c >= 2 ? 1 : 0;
    (j["choices"][0]["finish_reason"] == "length" ? length : stopped) += 1;
  }
  EXPECT_EQ(
      s.Call("POST", "/v1/chat/completions", R"({"model":"nope","messages":[{"role":"user","content":"x"}]})").status,
      404);
  EXPECT_EQ(s.Call("GET", "/nowhere").status, 404);
  EXPECT_EQ(s.Call("GET", "/health").status, 200);

  const testing::Exposition e = Scrape(s);
  const ModelLease model = s.Model();
  WaitFinished(model, 3);
  const EngineStats stats = model->engine().stats();
  EXPECT_EQ(Sample(e, "vllm:num_requests_running" + m), 0);
  EXPECT_EQ(Sample(e, "vllm:num_requests_waiting" + m), 0);
  EXPECT_EQ(Sample(e, "vllm:kv_cache_usage_perc" + m), 0);  // finished requests' blocks are cached, free
  EXPECT_EQ(Sample(e, "vllm:prompt_tokens_total" + m), prompt);
  EXPECT_EQ(Sample(e, "vllm:generation_tokens_total" + m), completion);
  EXPECT_EQ(Sample(e, "vllm:num_preemptions_total" + m), 0);
  EXPECT_EQ(Sample(e, "vllm:prefix_cache_queries_total" + m), stats.prefix.queried_tokens);
  EXPECT_EQ(Sample(e, "vllm:prefix_cache_hits_total" + m), stats.prefix.hit_tokens);
  EXPECT_EQ(Sample(e, "herd_prompt_tokens_computed_total" + m), stats.prompt_tokens_computed);
  EXPECT_EQ(Sample(e, "herd_host_sampled_rows_total" + m), stats.host_sampled_rows);
  EXPECT_GT(stats.host_sampled_rows, 0);  // a host backend samples every row on the host
  EXPECT_EQ(Sample(e, "vllm:request_success_total{finished_reason=\"length\",model_name=\"tiny\"}"), length);
  EXPECT_EQ(Sample(e, "vllm:request_success_total{finished_reason=\"stop\",model_name=\"tiny\"}"), stopped);
  EXPECT_EQ(Sample(e, "vllm:request_success_total{finished_reason=\"abort\",model_name=\"tiny\"}"), 0);
  EXPECT_EQ(Sample(e, "vllm:request_success_total{finished_reason=\"error\",model_name=\"tiny\"}"), 0);
  for (const char* h :
       {"vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds"}) {
    EXPECT_EQ(Sample(e, std::string(h) + "_count" + m), 3) << h;
    EXPECT_EQ(Sample(e, std::string(h) + "_bucket{le=\"+Inf\",model_name=\"tiny\"}"), 3) << h;
    EXPECT_GT(Sample(e, std::string(h) + "_sum" + m), 0) << h;
  }
  EXPECT_EQ(Sample(e, "vllm:inter_token_latency_seconds_count" + m), gaps);
  EXPECT_EQ(Sample(e, "vllm:time_per_output_token_seconds_count" + m), gaps);
  EXPECT_EQ(Sample(e, "vllm:request_time_per_output_token_seconds_count" + m), two_or_more);
  EXPECT_GE(Sample(e, "vllm:e2e_request_latency_seconds_sum" + m),
            Sample(e, "vllm:time_to_first_token_seconds_sum" + m));
  // vLLM's bucket bounds.
  for (const char* le : {"0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25", "0.5", "0.75",
                         "1",     "2.5",   "5",    "7.5",  "10",   "20",   "40",   "80",  "160",  "640", "2560"}) {
    Sample(e, std::string("vllm:time_to_first_token_seconds_bucket{le=\"") + le + "\",model_name=\"tiny\"}");
  }

  EXPECT_EQ(Sample(e, R"(herd_http_requests_total{api="openai",route="/v1/chat/completions",status="200"})"), 3);
  EXPECT_EQ(Sample(e, R"(herd_http_requests_total{api="openai",route="/v1/chat/completions",status="404"})"), 1);
  EXPECT_EQ(Sample(e, R"(herd_http_requests_total{api="herd",route="unmatched",status="404"})"), 1);
  EXPECT_EQ(Sample(e, R"(herd_http_requests_total{api="herd",route="/health",status="200"})"), 1);
  EXPECT_EQ(Sample(e, R"(herd_http_requests_total{api="herd",route="/metrics",status="200"})"), 1);  // the first
  size_t http_series = 0;
  for (const auto& [k, v] : e.samples) http_series += k.rfind("herd_http_requests_total", 0) == 0 ? 1 : 0;
  EXPECT_EQ(http_series, 5u);
  EXPECT_EQ(Sample(e, "herd_models_loaded"), 1);
  EXPECT_EQ(Sample(e, "herd_model_memory_bytes" + m), static_cast<double>(model->memory_bytes()));
}

TEST(HerdRoutesTest, ApiOfRoute) {
  EXPECT_EQ(ApiOfRoute("/v1/chat/completions"), "openai");
  EXPECT_EQ(ApiOfRoute("/v1/models/{id}"), "openai");
  EXPECT_EQ(ApiOfRoute("/v1/messages"), "anthropic");
  EXPECT_EQ(ApiOfRoute("/v1/messages/count_tokens"), "anthropic");
  EXPECT_EQ(ApiOfRoute("/api/chat"), "ollama");
  EXPECT_EQ(ApiOfRoute("/"), "ollama");
  EXPECT_EQ(ApiOfRoute("/v1/status"), "herd");
  EXPECT_EQ(ApiOfRoute("/tokenize"), "herd");
  EXPECT_EQ(ApiOfRoute("/health"), "herd");
}

TEST(HerdRoutesTest, HealthIsLoadingWhileAPreloadedModelLoads) {
  // The preloaded model's file becomes a FIFO after registration: its load blocks in open()
  // until the test opens the other end, so the "loading" state is observed, not raced.
  const std::string dir = ::testing::TempDir() + "herd_health_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/slow.gguf";
  std::filesystem::copy_file(testing::TestModelPath("tiny", "F32"), path,
                             std::filesystem::copy_options::overwrite_existing);
  ModelRegistry* registry = nullptr;
  auto server = std::make_unique<testing::ServerHarness>(
      [&](Router& r, ModelRegistry& m) {
        registry = &m;
        auto entry = FileEntry(path, "slow", {});
        ASSERT_TRUE(entry.ok());
        entry->preload = true;
        ASSERT_TRUE(m.Register(*entry));
        std::filesystem::remove(path);
        ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
        m.Start();
        AddHerdRoutes(r, m, {});
      },
      /*with_model=*/false);
  testing::TestResponse r = server->Call("GET", "/health");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.body, R"({"status":"loading"})");
  const json status = json::parse(server->Call("GET", "/v1/status").body);
  EXPECT_EQ(status["models"][0]["name"], "slow");
  EXPECT_EQ(status["models"][0]["state"], "loading");
  {
    testing::Exposition e;
    std::string error;
    ASSERT_TRUE(testing::ParseExposition(server->Call("GET", "/metrics").body, &e, &error)) << error;
    EXPECT_EQ(e.samples.at("herd_models_loaded"), 0);
    EXPECT_GT(e.samples.at("herd_model_memory_bytes{model_name=\"slow\"}"), 0);  // reserved while loading
    EXPECT_EQ(e.samples.at("vllm:num_requests_running{model_name=\"slow\"}"), 0);
  }

  const int fd = open(path.c_str(), O_WRONLY);  // meets the loader's open(); closing gives it EOF
  ASSERT_GE(fd, 0);
  close(fd);
  for (int i = 0; i < 600 && registry->Loading(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  r = server->Call("GET", "/health");
  EXPECT_EQ(r.status, 200);  // the load failed (a FIFO is no GGUF file): nothing loads any more
  EXPECT_EQ(r.body, R"({"status":"ok"})");
  EXPECT_EQ(json::parse(server->Call("GET", "/v1/status").body)["models"][0]["state"], "unloaded");
  server.reset();
  std::filesystem::remove_all(dir);
}

TEST(HerdRoutesTest, Status) {
  Harness s;
  ASSERT_EQ(s.Call("POST", "/v1/chat/completions", Chat("Hi", 3)).status, 200);
  ModelLease model = s.Model();
  WaitFinished(model, 1);
  const EngineStats stats = model->engine().stats();
  const size_t memory = model->memory_bytes();
  model.reset();  // not in use any more
  const testing::TestResponse r = s.Call("GET", "/v1/status");
  ASSERT_EQ(r.status, 200);
  const json j = json::parse(r.body);
  EXPECT_EQ(j["server"]["name"], "herd");
  EXPECT_EQ(j["server"]["http_connections"], 1);
  EXPECT_GE(j["server"]["uptime_seconds"].get<double>(), 0);
  EXPECT_EQ(j["memory"]["budget_bytes"], 1ull << 30);
  EXPECT_EQ(j["memory"]["reserved_bytes"], memory);
  EXPECT_EQ(j["memory"]["free_in_budget_bytes"], (1ull << 30) - memory);
  ASSERT_EQ(j["models"].size(), 1u);
  const json& m = j["models"][0];
  EXPECT_EQ(m["name"], "tiny");
  EXPECT_EQ(m["state"], "loaded");
  EXPECT_EQ(m["source"], "file");
  EXPECT_EQ(m["memory_bytes"], memory);
  EXPECT_EQ(m["expires_at"], "never");  // added loaded: kept
  EXPECT_EQ(m["active_requests"], 0);
  const json& engine = m["engine"];
  EXPECT_EQ(engine["kv_blocks_total"], stats.total_blocks);
  EXPECT_EQ(engine["kv_blocks_used"], 0);
  EXPECT_EQ(engine["running"], 0);
  EXPECT_EQ(engine["waiting"], 0);
  EXPECT_EQ(engine["generated_tokens"], stats.generated_tokens);
  EXPECT_EQ(engine["prefix_cache_queried_tokens"], stats.prefix.queried_tokens);
  EXPECT_EQ(engine["requests_finished"]["length"].get<int>() + engine["requests_finished"]["stop"].get<int>(), 1);
}

// A model with two replicas (both on the CPU here): each request goes to the replica its user
// prefers (affinity: both are idle); /v1/status lists each replica, /metrics labels each
// replica's series.
TEST(HerdRoutesTest, ReplicasInStatusAndMetrics) {
  auto server = std::make_unique<testing::ServerHarness>(
      [&](Router& r, ModelRegistry& m) {
        testing::RegisterTinyReplicas(m, "tiny");
        AddOpenAiRoutes(r, m, nullptr);
        AddHerdRoutes(r, m, {});
      },
      /*with_model=*/false);
  // A user whose requests prefer replica 1, and the number of requests each replica should see.
  std::string user;
  for (int i = 0; user.empty(); ++i) {
    api::ChatRequest c;
    c.user = "user-" + std::to_string(i);
    if (PreferredReplica(AffinityKey(c), 2) == 1) user = c.user;
  }
  for (int i = 0; i < 2; ++i) {
    json body = json::parse(Chat("Hi", 3));
    body["user"] = user;
    ASSERT_EQ(server->Call("POST", "/v1/chat/completions", body.dump()).status, 200);
  }
  const json status = json::parse(server->Call("GET", "/v1/status").body);
  ASSERT_EQ(status["models"].size(), 2u);
  for (int k = 0; k < 2; ++k) {
    const json& m = status["models"][k];
    EXPECT_EQ(m["name"], "tiny");
    EXPECT_EQ(m["replica"], k);
    EXPECT_EQ(m["replicas"], 2);
    EXPECT_EQ(m["device"], "cpu");
    EXPECT_EQ(m["state"], "loaded");
    EXPECT_EQ(m["load_failures"], 0);
  }
  testing::Exposition e;
  std::string error;
  auto finished = [](const char* reason) {  // the parser's key: labels sorted by name
    return std::string("vllm:request_success_total{finished_reason=\"") + reason +
           "\",model_name=\"tiny\",replica=\"1\"}";
  };
  for (int i = 0; i < 600; ++i) {  // the engine publishes its counters at the end of its step
    e = {};
    ASSERT_TRUE(testing::ParseExposition(server->Call("GET", "/metrics").body, &e, &error)) << error;
    if (e.samples[finished("length")] + e.samples[finished("stop")] == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(e.samples[finished("length")] + e.samples[finished("stop")], 2);
  EXPECT_GT(Sample(e, "vllm:generation_tokens_total{model_name=\"tiny\",replica=\"1\"}"), 0);
  EXPECT_EQ(Sample(e, "vllm:generation_tokens_total{model_name=\"tiny\",replica=\"0\"}"), 0);
  EXPECT_GT(Sample(e, "herd_model_memory_bytes{model_name=\"tiny\",replica=\"0\"}"), 0);
  EXPECT_EQ(Sample(e, "herd_models_loaded"), 2);
  server.reset();
}

TEST(HerdRoutesTest, TokenizeDetokenizeRoundTrip) {
  Harness s;
  const ModelLease model = s.Model();
  const Tokenizer& tok = model->tokenizer();
  const std::string text = "Hello world, how are you?";
  testing::TestResponse r = s.Call("POST", "/tokenize", json{{"model", "tiny"}, {"content", text}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json tokens = json::parse(r.body)["tokens"];
  EXPECT_EQ(tokens.get<std::vector<int32_t>>(), tok.Encode(text, false, true));
  ASSERT_GT(tokens.size(), 1u);

  r = s.Call("POST", "/detokenize", json{{"model", "tiny"}, {"tokens", tokens}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), (json{{"content", text}}));

  // "prompt" instead of "content", "model" left out (one model), specials added, pieces.
  r = s.Call("POST", "/tokenize", json{{"prompt", text}, {"add_special", true}, {"with_pieces", true}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json pieces = json::parse(r.body)["tokens"];
  const std::vector<int32_t> with_special = tok.Encode(text, true, true);
  ASSERT_EQ(pieces.size(), with_special.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(pieces[i]["id"], with_special[i]);
    EXPECT_EQ(pieces[i]["piece"], tok.TokenToPiece(with_special[i], true));
  }
}

TEST(HerdRoutesTest, ApplyTemplateIsWhatChatUses) {
  Harness s;
  const std::string body =
      R"({"model":"tiny","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi!"}]})";
  testing::TestResponse r = s.Call("POST", "/apply-template", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string prompt = json::parse(r.body)["prompt"];
  EXPECT_NE(prompt.find("Be brief."), std::string::npos);
  EXPECT_NE(prompt.find("Hi!"), std::string::npos);

  // The chat route tokenizes exactly this text.
  const ModelLease model = s.Model();
  api::ChatRequest chat;
  chat.model = "tiny";
  chat.messages = {{"system", "Be brief.", "", ""}, {"user", "Hi!", "", ""}};
  std::vector<int32_t> tokens;
  api::ApiError error;
  ASSERT_TRUE(model->ChatPrompt(chat, &tokens, &error));
  std::string text;
  ASSERT_TRUE(model->ChatText(chat, &text, &error));
  EXPECT_EQ(text, prompt);
  std::vector<int32_t> from_text = model->tokenizer().Encode(prompt, false, true);
  const Vocab& v = model->tokenizer().vocab();
  if (v.add_bos && (from_text.empty() || from_text[0] != v.bos)) from_text.insert(from_text.begin(), v.bos);
  EXPECT_EQ(from_text, tokens);
  // ... and reports that many prompt tokens.
  r = s.Call("POST", "/v1/chat/completions",
             R"({"model":"tiny","max_tokens":1,"messages":[{"role":"system","content":"Be brief."},)"
             R"({"role":"user","content":"Hi!"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["usage"]["prompt_tokens"], tokens.size());
}

TEST(HerdRoutesTest, Errors) {
  Harness s;
  const auto expect = [&](const std::string& path, const std::string& body, int status, const std::string& type) {
    const testing::TestResponse r = s.Call("POST", path, body);
    EXPECT_EQ(r.status, status) << path << " " << body << " -> " << r.body;
    const json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.body;
    EXPECT_EQ(j["error"]["code"], status) << r.body;
    EXPECT_EQ(j["error"]["type"], type) << r.body;
    EXPECT_TRUE(j["error"]["message"].is_string()) << r.body;
  };
  expect("/tokenize", R"({"model":"nope","content":"x"})", 404, "not_found_error");
  expect("/detokenize", R"({"model":"nope","tokens":[1]})", 404, "not_found_error");
  expect("/apply-template", R"({"model":"nope","messages":[{"role":"user","content":"x"}]})", 404, "not_found_error");
  expect("/tokenize", "{not json", 400, "invalid_request_error");
  expect("/tokenize", "[1,2]", 400, "invalid_request_error");
  expect("/tokenize", R"({"model":"tiny"})", 400, "invalid_request_error");
  expect("/tokenize", R"({"model":"tiny","content":5})", 400, "invalid_request_error");
  expect("/tokenize", R"({"model":"tiny","content":"x","add_special":"yes"})", 400, "invalid_request_error");
  expect("/tokenize", R"({"model":7,"content":"x"})", 400, "invalid_request_error");
  expect("/detokenize", R"({"model":"tiny","tokens":"1 2"})", 400, "invalid_request_error");
  expect("/detokenize", R"({"model":"tiny","tokens":[1,"2"]})", 400, "invalid_request_error");
  expect("/detokenize", R"({"model":"tiny","tokens":[-1]})", 400, "invalid_request_error");
  expect("/detokenize", R"({"model":"tiny","tokens":[100000000]})", 400, "invalid_request_error");
  expect("/apply-template", R"({"model":"tiny","messages":"hi"})", 400, "invalid_request_error");
  expect("/apply-template", R"({"model":"tiny"})", 400, "invalid_request_error");
}

TEST(HerdRoutesTest, ApiKeysGuardTheApiRoutesOnly) {
  ApiKeys keys;
  keys.Add("secret");
  Harness s(&keys);
  EXPECT_EQ(s.Call("GET", "/health").status, 200);
  EXPECT_EQ(s.Call("GET", "/metrics").status, 200);
  for (const char* path : {"/tokenize", "/detokenize", "/apply-template"}) {
    const testing::TestResponse r = s.Call("POST", path, R"({"content":"x"})");
    EXPECT_EQ(r.status, 401) << path;
    EXPECT_EQ(json::parse(r.body)["error"]["type"], "authentication_error") << r.body;
  }
  EXPECT_EQ(s.Call("GET", "/v1/status").status, 401);
  EXPECT_EQ(s.Call("GET", "/v1/status", "", "Authorization: Bearer secret\r\n").status, 200);
  EXPECT_EQ(s.Call("POST", "/tokenize", R"({"content":"x"})", "x-api-key: secret\r\n").status, 200);
}

}  // namespace
}  // namespace herd::server
