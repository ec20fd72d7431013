// herd bench serve --url URL --model NAME [--api openai|completions|anthropic|ollama]
//                  [--concurrency 1,8,32] [--num-prompts N] [--input-len 512] [--output-len 128]
//                  [--shared-prefix-len L] [--workload random|agent|multiturn|dataset]
//                  [--dataset FILE.jsonl] [--turns 4 --turn-len 64] [--ignore-eos]
//                  [--request-rate R|inf] [--seed S] [--temperature T] [--api-key KEY]
//                  [--timeout 600] [--json OUT] [--max-error-rate 0.01] [--no-progress]
//
// A serving benchmark of any server that speaks one of these APIs (herd, llama.cpp's server,
// vLLM, Ollama, ...): see src/cli/bench_serve/. Plain http only. Exit status: 0; 1 for a bad
// option or file; 2 when some level's error rate exceeded --max-error-rate.
#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>

#include "cli/bench_serve/bench_serve.h"
#include "cli/commands.h"

namespace herd::cli {
namespace {

struct BenchServeFlags {
  bench::BenchServeOptions o;
  std::string api = "openai";
  std::string concurrency = "1";
  std::string request_rate = "inf";
  double temperature = 0;
  bool server_temperature = false;
  double timeout_s = 600;
  std::string json_path;
  bool no_progress = false;
  int64_t seed = -1;
};

std::vector<int> ParseLevels(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size() || v < 1) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      Fail("--concurrency: '" + text + "' is not a comma-separated list of positive integers");
    }
  }
  if (out.empty()) Fail("--concurrency: no levels given");
  return out;
}

void RunBenchServe(BenchServeFlags& f) {
  bench::BenchServeOptions& o = f.o;
  const auto api = bench::ParseApi(f.api);
  if (!api) Fail("--api: '" + f.api + "' is not one of openai, completions, anthropic, ollama");
  o.request.api = *api;
  o.concurrency = ParseLevels(f.concurrency);
  if (f.request_rate == "inf") {
    o.request_rate = 0;
  } else {
    try {
      o.request_rate = std::stod(f.request_rate);
    } catch (const std::exception&) {
      Fail("--request-rate: '" + f.request_rate + "' is not a number or 'inf'");
    }
    if (!(o.request_rate > 0)) Fail("--request-rate must be positive (or 'inf')");
  }
  if (f.server_temperature) {
    o.request.temperature.reset();
  } else {
    o.request.temperature = f.temperature;
  }
  if (!(f.timeout_s > 0)) Fail("--timeout must be positive");
  o.timeout = std::chrono::milliseconds(static_cast<int64_t>(f.timeout_s * 1000));
  o.progress = !f.no_progress;
  // A fresh seed per run by default, so a second run does not hit the server's prefix cache
  // with the first run's prompts; the report prints it for reproducing a run.
  o.seed = f.seed >= 0 ? static_cast<uint64_t>(f.seed) : std::random_device{}() % 1000000;
  if (!o.workload.dataset.empty() && o.workload.kind == "random") o.workload.kind = "dataset";
  auto report = bench::RunBenchServe(o, std::cout);
  if (!report.ok()) Fail(report.status().message());
  if (!f.json_path.empty()) {
    std::ofstream out(f.json_path);
    out << report->json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    if (!out) Fail(f.json_path + ": cannot write the JSON report");
    std::cout << "JSON report: " << f.json_path << "\n";
  }
  std::cout << std::flush;
  if (report->error_rate_exceeded) {
    Fail(StrFormat("the error rate exceeded --max-error-rate %g", o.max_error_rate), 2);
  }
}

}  // namespace

void AddBenchCommand(CLI::App& app) {
  CLI::App* group = app.add_subcommand("bench", "Benchmarks (bench serve: a serving benchmark against any server)");
  group->require_subcommand(1);
  auto f = std::make_shared<BenchServeFlags>();
  bench::BenchServeOptions& o = f->o;
  o.workload.num_prompts = 0;  // per level: max(4, 2 x concurrency)
  CLI::App* cmd =
      group->add_subcommand("serve", "Load-test a running server (herd, llama.cpp, vLLM, Ollama) over its HTTP API");
  cmd->add_option("--url", o.url, "The server's base URL (plain http), e.g. http://127.0.0.1:8080")->required();
  cmd->add_option("--model", o.request.model, "The model name to request")->required();
  cmd->add_option("--api", f->api,
                  "openai (/v1/chat/completions), completions (/v1/completions), anthropic (/v1/messages), "
                  "ollama (/api/chat)")
      ->capture_default_str();
  cmd->add_option("--concurrency", f->concurrency, "Requests in flight at most; a list runs one level after another")
      ->capture_default_str();
  cmd->add_option("--num-prompts", o.workload.num_prompts,
                  "Requests per level (0: max(4, 2 x concurrency); multiturn: all turns)")
      ->capture_default_str();
  cmd->add_option("--input-len", o.workload.input_len, "Prompt tokens (agent: the user turn)")->capture_default_str();
  cmd->add_option("--output-len", o.workload.output_len, "Output tokens asked for (max_tokens / num_predict)")
      ->capture_default_str();
  cmd->add_option("--shared-prefix-len", o.workload.shared_prefix_len,
                  "Leading prompt tokens shared by all requests (agent: the system prompt, default 1024)")
      ->capture_default_str();
  cmd->add_option("--workload", o.workload.kind, "random, agent, multiturn or dataset")->capture_default_str();
  cmd->add_option("--dataset", o.workload.dataset,
                  "JSONL prompts: {\"prompt\": ...} or {\"messages\": [...]} per line (implies --workload dataset)");
  cmd->add_option("--turns", o.workload.turns, "multiturn: turns per session")->capture_default_str();
  cmd->add_option("--turn-len", o.workload.turn_len, "multiturn: tokens of each later user message")
      ->capture_default_str();
  cmd->add_flag("--ignore-eos", o.request.ignore_eos,
                "Send ignore_eos: true (OpenAI routes of herd, vLLM, llama.cpp) so every request runs to max_tokens");
  cmd->add_option("--request-rate", f->request_rate, "Poisson arrivals per second, or inf (all at once)")
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "Seed of the prompts and arrival times (default: a fresh one, printed)");
  cmd->add_option("--temperature", f->temperature, "Sampling temperature sent with every request")
      ->capture_default_str();
  cmd->add_flag("--server-temperature", f->server_temperature, "Send no temperature (the server's default)");
  cmd->add_option("--api-key", o.request.api_key, "Sent as Bearer token (x-api-key for anthropic)");
  cmd->add_option("--timeout", f->timeout_s, "Seconds one request may take in all")->capture_default_str();
  cmd->add_option("--json", f->json_path, "Write the report (every level and request) as JSON here");
  cmd->add_option("--max-error-rate", o.max_error_rate, "Exit with status 2 when a level's failed share is above this")
      ->capture_default_str();
  cmd->add_flag("--no-progress", f->no_progress, "No progress display on stderr");
  cmd->callback([f] { RunBenchServe(*f); });
}

}  // namespace herd::cli
