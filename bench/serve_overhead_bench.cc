// The server's cost per streamed token: HTTP + JSON + SSE/NDJSON on top of the engine. Run:
//   build/bin/herd_serve_overhead_bench [--model FILE.gguf] [--streams 16] [--tokens 256]
//                                       [--repeat 3] [--direct-writes 1|0]
//
// The same workload (S streams, each a distinct greedy prompt generating T tokens) runs twice on
// fresh model instances of the same file, 1 compute thread:
//  - engine only: requests submitted to the Engine in-process, one thread per stream draining
//    events (the least any server must do);
//  - through the API: herd's routes on an HttpServer; the clients run in a forked child process,
//    so this process's CPU time is the server's alone (I/O threads, engine thread, JSON).
// Overhead per token = server CPU seconds / tokens (API run) - CPU seconds / tokens (engine run),
// for each API (OpenAI SSE, Anthropic SSE, Ollama NDJSON). With the default tiny random model the
// forward pass is cheap, so the difference is not lost in compute noise; tokens are counted by
// the engine, not the client.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "http/http_server.h"
#include "http/test_client.h"
#include "model/test_models.h"
#include "server/anthropic_routes.h"
#include "server/model_registry.h"
#include "server/ollama_routes.h"
#include "server/openai_routes.h"

namespace herd {
namespace {

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Options {
  std::string model;
  int streams = 16;
  int tokens = 256;
  int repeat = 3;  // each path runs this often; the least CPU per token is reported (noise only adds)
  bool direct_writes = true;  // HttpServerConfig::direct_writes (--direct-writes 0 to compare)
};

std::unique_ptr<server::ModelInstance> LoadModel(const Options& o) {
  server::ModelInstanceOptions mo;
  mo.path = o.model;
  mo.name = std::string(1, 'm');  // (= "m" trips GCC 12 -Wrestrict at -O3)
  mo.threads = 1;
  mo.n_ctx = 1024;
  mo.kv_budget_bytes = 0;
  auto m = server::ModelInstance::Load(mo);
  if (!m.ok()) {
    std::fprintf(stderr, "%s: %s\n", o.model.c_str(), m.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(m).value();
}

std::string Prompt(int i) { return "Story number " + std::to_string(i) + ": once upon a time"; }

struct Run {
  double cpu = 0, wall = 0;
  int64_t tokens = 0;
};

Run EngineOnly(const Options& o) {
  auto model = LoadModel(o);
  const int64_t before = model->engine().stats().generated_tokens;
  const double cpu0 = CpuSeconds(), wall0 = WallSeconds();
  std::vector<std::thread> consumers;
  for (int i = 0; i < o.streams; ++i) {
    api::ChatRequest chat;
    chat.messages.push_back({"user", Prompt(i), "", ""});
    std::vector<int32_t> prompt;
    api::ApiError error;
    if (!model->ChatPrompt(chat, &prompt, &error)) std::exit(1);
    api::GenerationOptions go;
    go.max_tokens = o.tokens;
    go.temperature = 0;
    GenerationRequest r = model->ToGenerationRequest(std::move(prompt), go, o.tokens);
    r.ignore_eos = true;
    auto stream = model->engine().Submit(std::move(r));
    if (!stream.ok()) std::exit(1);
    consumers.emplace_back([s = *stream] {
      EngineEvent ev;
      while (s->Next(&ev)) {
      }
    });
  }
  for (auto& t : consumers) t.join();
  Run run{CpuSeconds() - cpu0, WallSeconds() - wall0, model->engine().stats().generated_tokens - before};
  return run;
}

// The client side, in the child process: S concurrent streams, read to the end.
[[noreturn]] void Clients(uint16_t port, const std::string& api, const Options& o) {
  std::vector<std::thread> threads;
  for (int i = 0; i < o.streams; ++i) {
    threads.emplace_back([&, i] {
      std::string path, body;
      const std::string msg = R"("messages":[{"role":"user","content":")" + Prompt(i) + R"("}])";
      const std::string n = std::to_string(o.tokens);
      if (api == "openai") {
        path = "/v1/chat/completions";
        body = R"({"model":"m","stream":true,"temperature":0,"max_tokens":)" + n + "," + msg + "}";
      } else if (api == "anthropic") {
        path = "/v1/messages";
        body = R"({"model":"m","stream":true,"temperature":0,"max_tokens":)" + n + "," + msg + "}";
      } else {
        path = "/api/chat";
        body = R"({"model":"m","options":{"temperature":0,"num_predict":)" + n + "}," + msg + "}";
      }
      testing::TestClient c(port);
      c.Send("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body);
      auto head = c.ReadHead(std::chrono::milliseconds(600000));
      if (!head || head->status != 200) std::_Exit(2);
      while (auto chunk = c.ReadChunk(std::chrono::milliseconds(600000))) {
        if (chunk->empty()) break;
      }
    });
  }
  for (auto& t : threads) t.join();
  std::_Exit(0);
}

Run ThroughApi(const Options& o, const std::string& api) {
  server::ModelRegistry models;
  models.AddLoaded(LoadModel(o));
  Router router;
  server::AddOpenAiRoutes(router, models);
  server::AddAnthropicRoutes(router, models);
  server::AddOllamaRoutes(router, models);
  HttpServerConfig hc;
  hc.port = 0;
  hc.direct_writes = o.direct_writes;
  HttpServer http(hc, std::move(router));
  if (!http.Start().ok()) std::exit(1);
  int64_t before = 0;
  models.Acquire("m", std::nullopt, [&before](server::ModelLease m, const api::ApiError&) {
    before = m->engine().stats().generated_tokens;
  });
  const double cpu0 = CpuSeconds(), wall0 = WallSeconds();
  const pid_t child = fork();
  if (child == 0) Clients(http.port(), api, o);
  int status = 0;
  waitpid(child, &status, 0);
  Run run{CpuSeconds() - cpu0, WallSeconds() - wall0, 0};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s clients failed (status %d)\n", api.c_str(), status);
    std::exit(1);
  }
  models.Acquire("m", std::nullopt, [&](server::ModelLease m, const api::ApiError&) {
    run.tokens = m->engine().stats().generated_tokens - before;
  });
  http.Stop(std::chrono::milliseconds(1000));
  return run;
}

}  // namespace
}  // namespace herd

int main(int argc, char** argv) {
  herd::Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--model")) o.model = argv[i + 1];
    if (!std::strcmp(argv[i], "--streams")) o.streams = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--tokens")) o.tokens = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeat")) o.repeat = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--direct-writes")) o.direct_writes = std::atoi(argv[i + 1]) != 0;
  }
  herd::SetLogLevel(herd::LogLevel::kWarn);
  if (o.model.empty()) o.model = herd::testing::TestModelPath("tiny", "F32");
  std::printf("model %s, %d streams x %d tokens, 1 compute thread, 2 I/O threads, direct writes %s, best of %d\n",
              o.model.c_str(), o.streams, o.tokens, o.direct_writes ? "on" : "off", o.repeat);
  const auto best = [&o](const std::function<herd::Run()>& run) {
    herd::Run b;
    for (int i = 0; i < o.repeat; ++i) {
      const herd::Run r = run();
      if (i == 0 || r.cpu / static_cast<double>(r.tokens) < b.cpu / static_cast<double>(b.tokens)) b = r;
    }
    return b;
  };
  const herd::Run base = best([&o] { return herd::EngineOnly(o); });
  const double base_us = base.cpu / static_cast<double>(base.tokens) * 1e6;
  std::printf("%-22s %8s %10s %10s %14s %14s\n", "path", "tokens", "wall s", "cpu s", "cpu us/token",
              "overhead us/tok");
  std::printf("%-22s %8lld %10.3f %10.3f %14.2f %14s\n", "engine only", static_cast<long long>(base.tokens), base.wall,
              base.cpu, base_us, "-");
  for (const char* api : {"openai", "anthropic", "ollama"}) {
    const herd::Run r = best([&o, api] { return herd::ThroughApi(o, api); });
    const double us = r.cpu / static_cast<double>(r.tokens) * 1e6;
    std::printf("%-22s %8lld %10.3f %10.3f %14.2f %14.2f\n", (std::string(api) + " stream").c_str(),
                static_cast<long long>(r.tokens), r.wall, r.cpu, us, us - base_us);
  }
  return 0;
}
