// herd serve: the HTTP server. Loads the model (the demo model by default), starts the engine
// and serves the OpenAI API (`/v1/chat/completions`, `/v1/models`) and the Anthropic Messages API
// (`/v1/messages`, `/v1/messages/count_tokens`) and Ollama's `/api/chat`, `/api/generate`,
// `/api/tags`, `/api/version` until SIGINT/SIGTERM, then
// stops accepting, lets in-flight responses finish (up to 10 s) and exits 0.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>

#include "base/memory_info.h"
#include "cli/commands.h"
#include "cli/model_loader.h"
#include "http/http_server.h"
#include "server/anthropic_routes.h"
#include "server/ollama_routes.h"
#include "server/openai_routes.h"

namespace herd::cli {
namespace {

struct ServeOptions {
  std::string model;  // empty: the demo model
  std::string alias;
  std::string host = "127.0.0.1";
  int port = 11434;
  int threads = 0;
  int ctx = 4096;
  int batch_tokens = 128;
  std::string kv_type = "f16";
  std::string kv_budget;
  int io_threads = 2;
  std::string cors;
  std::vector<std::string> api_keys;
  std::string api_key_file;
  std::string prefix_cache_file;
};

void Serve(const ServeOptions& o) {
  server::ModelInstanceOptions mo;
  mo.path = o.model.empty() ? DemoModelPathOrFail() : o.model;
  mo.name = o.alias;
  mo.threads = o.threads;
  mo.n_ctx = o.ctx;
  mo.max_batch_tokens = o.batch_tokens;
  mo.kv_type = KvTypeFromName(o.kv_type);
  mo.prefix_cache_file = o.prefix_cache_file;
  if (!o.kv_budget.empty()) {
    auto b = ParseMemoryBudget(o.kv_budget, AvailableMemoryBytes());
    if (!b.ok()) Fail("--kv-budget: " + b.status().message());
    mo.kv_budget_bytes = *b;
  }
  auto model = server::ModelInstance::Load(mo);
  if (!model.ok()) Fail(mo.path + ": " + model.status().message());
  const std::string name = (*model)->name();
  server::ModelRegistry models;
  models.Add(std::move(model).value());
  server::ApiKeys keys;
  for (const auto& k : o.api_keys) keys.Add(k);
  if (!o.api_key_file.empty()) {
    const Status loaded = keys.LoadFile(o.api_key_file);
    if (!loaded.ok()) Fail(loaded.message());
  }
  Router router;
  server::AddOpenAiRoutes(router, models, &keys);
  server::AddAnthropicRoutes(router, models, &keys);
  server::AddOllamaRoutes(router, models, &keys);
  HttpServerConfig hc;
  hc.host = o.host;
  hc.port = static_cast<uint16_t>(o.port);
  hc.io_threads = o.io_threads;
  hc.cors_allow_origin = o.cors;
  HttpServer http(hc, std::move(router));
  // Block the stop signals in every thread (the I/O threads inherit the mask), wait for one here.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  const Status started = http.Start();
  if (!started.ok()) Fail(started.message());
  std::printf("herd serving model '%s' at http://%s:%u (OpenAI, Anthropic and Ollama APIs)\n", name.c_str(),
              o.host.c_str(), http.port());
  std::printf(
      "try: curl http://%s:%u/v1/chat/completions -H 'Content-Type: application/json' \\\n"
      "       -d '{\"model\": \"%s\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], "
      "\"max_tokens\": 32}'\n",
      o.host.c_str(), http.port(), name.c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "herd: %s received, finishing in-flight requests\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  http.Stop(std::chrono::milliseconds(10000));
}

}  // namespace

void AddServeCommand(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over HTTP (OpenAI, Anthropic and Ollama APIs)");
  cmd->add_option("-m,--model", o->model, "GGUF model file (default: the built-in demo model)");
  cmd->add_option("--alias", o->alias, "Model id in the API (default: the file name without .gguf)");
  cmd->add_option("--host", o->host, "Address to bind")->capture_default_str();
  cmd->add_option("--port", o->port, "Port (Ollama's by default)")->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("-t,--threads", o->threads, "Compute threads (0: all cores)");
  cmd->add_option("-c,--ctx", o->ctx, "Longest sequence in tokens")->capture_default_str();
  cmd->add_option("--batch-tokens", o->batch_tokens, "Tokens per engine step (64-128 keeps CPU steps short)")
      ->capture_default_str();
  AddKvTypeOption(cmd, &o->kv_type);
  cmd->add_option("--kv-budget", o->kv_budget,
                  "KV pool: bytes (2GiB) or a fraction of available memory (0.3); default: 4 full contexts");
  cmd->add_option("--io-threads", o->io_threads, "HTTP I/O threads")->capture_default_str();
  cmd->add_option("--cors", o->cors, "Access-Control-Allow-Origin value (empty: CORS off)");
  cmd->add_option("--api-key", o->api_keys,
                  "Require this key (Authorization: Bearer KEY or x-api-key: KEY); repeatable");
  cmd->add_option("--prefix-cache-file", o->prefix_cache_file,
                  "Save pinned prompt prefixes (cache_control) here at shutdown and load them at start");
  cmd->add_option("--api-key-file", o->api_key_file, "Require one of the keys in this file (one per line)");
  cmd->callback([o] { Serve(*o); });
}

}  // namespace herd::cli
