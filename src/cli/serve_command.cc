// herd serve: the HTTP server. Loads the model (the demo model by default), starts the engine
// and serves the OpenAI API (`/v1/chat/completions`, `/v1/models`) and the Anthropic Messages API
// (`/v1/messages`, `/v1/messages/count_tokens`) and Ollama's `/api/chat`, `/api/generate`,
// `/api/tags`, `/api/version` until SIGINT/SIGTERM, then
// stops accepting, lets in-flight responses finish (up to 10 s) and exits 0.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "base/memory_info.h"
#include "cli/commands.h"
#include "cli/model_loader.h"
#include "cli/serve_config.h"
#include "http/http_server.h"
#include "server/anthropic_routes.h"
#include "server/exchange_util.h"
#include "server/herd_routes.h"
#include "server/ollama_routes.h"
#include "server/openai_routes.h"

namespace herd::cli {
namespace {

struct ServeOptions {
  std::vector<std::string> models;   // -m, preloaded and kept loaded
  std::vector<std::string> aliases;  // --alias, by position with -m
  std::vector<std::string> models_dirs;
  std::string ollama_models;  // empty: $OLLAMA_MODELS or ~/.ollama/models
  bool no_ollama = false;
  std::string keep_alive = "5m";
  std::string max_memory = "0.9";
  int max_loaded_models = 0;
  std::string host = "127.0.0.1";
  int port = 11434;
  int threads = 0;
  int ctx = 4096;
  int batch_tokens = 0;
  std::string kv_type = "f16";
  std::string device = "cpu";
  std::string kv_budget;
  int io_threads = 2;
  std::string cors;
  std::vector<std::string> api_keys;
  std::string api_key_file;
  std::string prefix_cache_file;
  double shutdown_timeout_s = 10;
  std::string config;                  // TOML file
  std::vector<ModelSpec> model_specs;  // its [[model]] tables
};

// "5m", "1h30m", "90s", "300" (seconds), "-1" (forever). Fails the command otherwise.
double ParseKeepAlive(const std::string& text) {
  if (text.empty()) Fail("--keep-alive: empty duration");
  char* end = nullptr;
  const double plain = std::strtod(text.c_str(), &end);
  if (end != nullptr && *end == '\0') return plain;
  if (text[0] == '-') return -1;
  double total = 0;
  const char* p = text.c_str();
  while (*p != '\0') {
    const double v = std::strtod(p, &end);
    if (end == p) Fail("--keep-alive: not a duration: " + text);
    p = end;
    const double unit = *p == 'h' ? 3600 : *p == 'm' ? (p[1] == 's' ? 0.001 : 60) : *p == 's' ? 1 : 0;
    if (unit == 0) Fail("--keep-alive: not a duration: " + text + " (use s, m or h)");
    p += (*p == 'm' && p[1] == 's') ? 2 : 1;
    total += v * unit;
  }
  return total;
}

DeviceSpec DeviceOrFail(const std::string& what, const std::string& text) {
  auto d = ParseDevice(text);
  if (!d.ok()) Fail(what + ": " + d.status().message());
  if (d->cuda && !CudaBuilt()) Fail(what + ": " + text + ": this herd was built without CUDA (nvcc was not found)");
  return *d;
}

size_t MemoryOrFail(const std::string& what, const std::string& text) {
  auto b = ParseMemoryBudget(text, AvailableMemoryBytes());
  if (!b.ok()) Fail(what + ": " + b.status().message());
  return *b;
}

// Registers every model source; returns the number of models.
size_t RegisterModels(const ServeOptions& o, const server::ModelInstanceOptions& defaults,
                      server::ModelRegistry& models) {
  if (o.aliases.size() > o.models.size()) Fail("--alias given more often than -m");
  std::vector<ModelSpec> specs;
  for (size_t i = 0; i < o.models.size(); ++i) {
    specs.push_back({o.models[i], i < o.aliases.size() ? o.aliases[i] : "", {}, {}, {}, {}, {}, {}, {}});
  }
  specs.insert(specs.end(), o.model_specs.begin(), o.model_specs.end());
  if (specs.empty() && o.models_dirs.empty()) specs.push_back({DemoModelPathOrFail(), "", {}, {}, {}, {}, {}, {}, {}});
  for (size_t i = 0; i < specs.size(); ++i) {
    const ModelSpec& spec = specs[i];
    server::ModelInstanceOptions mo = defaults;
    if (spec.ctx) mo.n_ctx = *spec.ctx;
    if (spec.threads) mo.threads = *spec.threads;
    if (spec.batch_tokens) mo.max_batch_tokens = *spec.batch_tokens;
    if (spec.device) mo.device = DeviceOrFail("device of " + spec.path, *spec.device);
    if (spec.kv_type) mo.kv_type = KvTypeFromName(*spec.kv_type);
    if (spec.kv_budget) mo.kv_budget_bytes = MemoryOrFail("kv_budget of " + spec.path, *spec.kv_budget);
    auto entry = server::FileEntry(spec.path, spec.alias, mo);
    if (!entry.ok()) Fail(entry.status().message());
    entry->preload = true;
    for (const std::string& d : spec.devices) entry->devices.push_back(DeviceOrFail("devices of " + spec.path, d));
    if (i == 0) entry->load.prefix_cache_file = o.prefix_cache_file;
    // Fail fast on a file that is not a loadable GGUF, before serving.
    auto estimate = server::ModelInstance::EstimateMemory(entry->load);
    if (!estimate.ok()) Fail(spec.path + ": " + estimate.status().message());
    if (models.Find(entry->name)) Fail("two models are named '" + entry->name + "' (use --alias or alias = ...)");
    models.Register(std::move(entry).value());
  }
  for (const auto& dir : o.models_dirs) {
    auto entries = server::ScanModelsDir(dir, defaults);
    if (!entries.ok()) Fail(entries.status().message());
    for (auto& e : *entries) {
      if (!models.Find(e.name)) models.Register(std::move(e));
    }
  }
  if (!o.no_ollama) {
    const std::string store = o.ollama_models.empty() ? server::DefaultOllamaStore() : o.ollama_models;
    models.SetOllamaStore(store, defaults);  // where /api/pull, /api/copy and /api/delete write
    for (auto& e : server::ScanOllamaStore(store, defaults)) {
      if (!models.Find(e.name)) models.Register(std::move(e));
    }
  }
  return models.Entries().size();
}

void Serve(const ServeOptions& o) {
  // Block the stop signals in every thread (loader, engine and I/O threads inherit the mask);
  // the main thread waits for one at the end.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  server::ModelInstanceOptions defaults;
  defaults.threads = o.threads;
  defaults.n_ctx = o.ctx;
  defaults.max_batch_tokens = o.batch_tokens;
  defaults.device = DeviceOrFail("--device", o.device);
  defaults.kv_type = KvTypeFromName(o.kv_type);
  if (!o.kv_budget.empty()) defaults.kv_budget_bytes = MemoryOrFail("--kv-budget", o.kv_budget);
  server::RegistryOptions ro;
  ro.default_keep_alive_s = ParseKeepAlive(o.keep_alive);
  ro.max_loaded_models = o.max_loaded_models;
  if (!o.max_memory.empty() && o.max_memory != "0") ro.memory_budget_bytes = MemoryOrFail("--max-memory", o.max_memory);
  server::ModelRegistry models(ro);
  const size_t n_models = RegisterModels(o, defaults, models);
  models.Start();
  const std::string name = models.Entries().empty() ? "" : models.Entries().front().name;
  server::ApiKeys keys;
  for (const auto& k : o.api_keys) keys.Add(k);
  if (!o.api_key_file.empty()) {
    const Status loaded = keys.LoadFile(o.api_key_file);
    if (!loaded.ok()) Fail(loaded.message());
  }
  Router router;
  router.SetErrorFormatter(server::TransportErrorInApiShape);
  server::AddOpenAiRoutes(router, models, &keys);
  server::AddAnthropicRoutes(router, models, &keys);
  server::AddOllamaRoutes(router, models, &keys);
  // herd's own: /health, /metrics, /v1/status, /tokenize, /detokenize, /apply-template; counts
  // every request by API, route and status.
  HttpServer* http_server = nullptr;  // set below, before the server starts
  server::HerdRoutesOptions herd;
  herd.keys = &keys;
  herd.http_metrics = std::make_shared<server::HttpMetrics>();
  herd.memory_budget_bytes = ro.memory_budget_bytes;
  herd.open_connections = [&http_server] { return http_server != nullptr ? http_server->active_connections() : 0; };
  server::AddHerdRoutes(router, models, herd);
  HttpServerConfig hc;
  hc.host = o.host;
  hc.port = static_cast<uint16_t>(o.port);
  hc.io_threads = o.io_threads;
  hc.cors_allow_origin = o.cors;
  HttpServer http(hc, std::move(router));
  http_server = &http;
  const Status started = http.Start();
  if (!started.ok()) Fail(started.message());
  std::printf("herd serving %zu model%s at http://%s:%u (OpenAI, Anthropic and Ollama APIs)\n", n_models,
              n_models == 1 ? "" : "s", o.host.c_str(), http.port());
  std::printf(
      "try: curl http://%s:%u/v1/chat/completions -H 'Content-Type: application/json' \\\n"
      "       -d '{\"model\": \"%s\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], "
      "\"max_tokens\": 32}'\n",
      o.host.c_str(), http.port(), name.c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "herd: %s received, finishing in-flight requests\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  http.Stop(std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout_s * 1000)));
}

}  // namespace

void AddServeCommand(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve models over HTTP (OpenAI, Anthropic and Ollama APIs)");
  cmd->add_option("-m,--model", o->models,
                  "GGUF model file, loaded at start and kept loaded; repeatable (default: the built-in demo model "
                  "when no --models-dir is given)");
  cmd->add_option("--alias", o->aliases,
                  "Model id in the API for the -m at the same position (default: the file name without .gguf)");
  cmd->add_option("--models-dir", o->models_dirs,
                  "Serve every *.gguf in this directory, loaded on first use; repeatable");
  cmd->add_option("--ollama-models", o->ollama_models,
                  "Ollama model store to serve from and to pull into (/api/pull; default: $OLLAMA_MODELS, else "
                  "~/.ollama/models)");
  cmd->add_flag("--no-ollama", o->no_ollama, "Do not serve the models in the Ollama store (nor pull into it)");
  cmd->add_option("--keep-alive", o->keep_alive,
                  "How long an idle on-demand model stays loaded (5m, 1h, 300; -1: forever; 0: unload at once)")
      ->capture_default_str();
  cmd->add_option("--max-memory", o->max_memory,
                  "Memory for loaded models (weights + KV): bytes (16GiB) or a fraction of available memory (0.9); "
                  "0: no limit. A model that does not fit unloads least-recently-used idle models")
      ->capture_default_str();
  cmd->add_option("--max-loaded-models", o->max_loaded_models, "Most models loaded at once (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--host", o->host, "Address to bind")->capture_default_str();
  cmd->add_option("--port", o->port, "Port (Ollama's by default)")->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("-t,--threads", o->threads, "Compute threads (0: all cores)");
  cmd->add_option("-c,--ctx", o->ctx, "Longest sequence in tokens")->capture_default_str();
  cmd->add_option("--batch-tokens", o->batch_tokens, "Tokens per engine step (0: 128 on the CPU, 2048 on a GPU)")
      ->capture_default_str();
  cmd->add_option("--device", o->device, "Where models run: cpu, cuda (GPU 0) or cuda:N")->capture_default_str();
  AddKvTypeOption(cmd, &o->kv_type);
  cmd->add_option("--kv-budget", o->kv_budget,
                  "KV pool: bytes (2GiB) or a fraction of available memory (0.3); default: 4 full contexts on the "
                  "CPU, 90% of the GPU memory left after the weights (at most 64 full contexts) on a GPU");
  cmd->add_option("--io-threads", o->io_threads, "HTTP I/O threads")->capture_default_str();
  cmd->add_option("--cors", o->cors, "Access-Control-Allow-Origin value (empty: CORS off)");
  cmd->add_option("--api-key", o->api_keys,
                  "Require this key (Authorization: Bearer KEY or x-api-key: KEY); repeatable");
  cmd->add_option("--prefix-cache-file", o->prefix_cache_file,
                  "Save pinned prompt prefixes (cache_control) here at shutdown and load them at start");
  cmd->add_option("--api-key-file", o->api_key_file, "Require one of the keys in this file (one per line)");
  cmd->add_option("--shutdown-timeout", o->shutdown_timeout_s,
                  "Seconds in-flight requests get to finish after SIGINT/SIGTERM before they are cancelled")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--config", o->config,
                  "TOML configuration file (docs/configuration.md); flags and HERD_* variables take precedence")
      ->envname("HERD_CONFIG");
  for (const char* multi : {"--model", "--alias", "--models-dir", "--api-key"}) cmd->get_option(multi)->delimiter(',');
  AddEnvironmentNames(cmd);
  cmd->callback([o, cmd] {
    if (!o->config.empty()) o->model_specs = ApplyConfigFile(o->config, cmd);
    Serve(*o);
  });
}

}  // namespace herd::cli
