// herd bench-model -m MODEL -p 512 -n 128 [-d DEPTH] [-t THREADS] [-r REPS] [--kv-type f16|f32|q8_0]
//                  [--device cpu|cuda[:N]] [--logits] [--sync] [--json]
//
// Measures like llama-bench: prompt processing (pp) = one forward pass over p tokens (chunked by
// --batch); text generation (tg) = n single-token greedy decode steps, each step's choice (the
// argmax, computed on the GPU there: 4 bytes come back) fed back as the next token, as a
// temperature-0 request runs. Where the model can queue passes (the CUDA backend) the steps are
// pipelined as the engine runs them: step i + 1 is queued, taking step i's choice on the device,
// before that choice reaches the host (tg_mode "greedy-pipelined"); --sync waits for each choice
// first, as llama-bench's tg does ("greedy"). --logits instead copies each step's full logits to
// the host and feeds a fixed token sequence (this bench's tg before 2026-11-24). Both start from a
// context that already holds --depth tokens (llama-bench's -d; default 0: an empty context),
// prefilled before each measurement and not timed, so "tg128 @ d4096" is decode speed 4,096
// tokens into a conversation. Each repetition uses a fresh KV cache state; a warm-up run first
// faults the weights into memory. Reports mean ± sample standard deviation of tokens/s.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "cli/commands.h"
#include "cli/model_loader.h"
#include "engine/generation_session.h"
#include "kernels/matmul.h"

namespace herd::cli {
namespace {

struct BenchOptions {
  std::string model;
  int prompt = 512;
  int gen = 128;
  int depth = 0;  // tokens already in the context when pp and tg start (not timed)
  int threads = 0;
  int reps = 3;
  int batch = 512;
  bool json = false;
  std::string kv_type = "f16";
  std::string device = "cpu";
  bool logits = false;  // tg copies every step's full logits to the host instead of greedy ids
  bool sync = false;    // tg runs one step at a time instead of pipelined
};

struct Stats {
  double mean = 0, sd = 0;
};

Stats Summarize(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() > 1) {
    for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
    s.sd = std::sqrt(s.sd / static_cast<double>(v.size() - 1));
  }
  return s;
}

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void RunBench(const BenchOptions& o) {
  if (o.prompt < 0 || o.gen < 0 || o.depth < 0 || o.reps < 1 || o.batch < 1) {
    Fail("bench-model: -p, -n and -d must be >= 0, -r and -b >= 1");
  }
  LoadedModel lm =
      LoadModelOrFail(o.model, o.threads, o.depth + o.prompt + o.gen + 16, KvTypeFromName(o.kv_type), 0, o.device);
  Model& model = *lm.model;
  const int32_t n_vocab = model.config().n_vocab;
  std::vector<int32_t> prompt;
  for (int i = 0; i < o.prompt; ++i) prompt.push_back((i * 7919 + 1) % n_vocab);
  std::vector<int32_t> context;  // the --depth tokens every measurement starts after
  for (int i = 0; i < o.depth; ++i) context.push_back((i * 104729 + 3) % n_vocab);
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  GenerationSession session(&model, lm.cache.get(), o.batch);
  auto check = [](const Status& s) {
    if (!s.ok()) Fail(s.message());
  };
  auto start_at_depth = [&] {  // an empty KV cache state, then the context (not timed)
    session.Reset();
    if (!context.empty()) check(session.Append(context, nullptr));
  };
  // Warm-up (not measured): touches every weight, and runs the measured shapes once so lazily
  // sized buffers (GPU scratch, cuBLAS workspaces, captured decode graphs) exist before timing.
  start_at_depth();
  check(session.Append(o.prompt > 0 ? prompt : std::vector<int32_t>{1, 2, 3, 4}, logits.data()));
  for (int i = 0; i < 3; ++i) check(session.Append({5}, logits.data()));
  int32_t next = 0;
  for (int i = 0; i < 3; ++i) check(session.AppendGreedy({5}, &next));
  std::vector<int32_t> choices;
  check(session.DecodeGreedy(5, 4, o.sync, &choices));  // the pipelined steps' graphs

  std::vector<double> pp, tg;
  for (int r = 0; r < o.reps; ++r) {
    if (o.prompt > 0) {
      start_at_depth();
      const auto t0 = std::chrono::steady_clock::now();
      check(session.Append(prompt, logits.data()));
      pp.push_back(o.prompt / Seconds(t0, std::chrono::steady_clock::now()));
    }
    if (o.gen > 0) {
      start_at_depth();
      int32_t tok = 1;
      const auto t0 = std::chrono::steady_clock::now();
      if (o.logits) {
        for (int i = 0; i < o.gen; ++i) {
          check(session.Append({tok}, logits.data()));
          tok = (tok * 31 + 7) % n_vocab;
        }
      } else {
        check(session.DecodeGreedy(tok, o.gen, o.sync, &choices));  // each choice is the next input
      }
      tg.push_back(o.gen / Seconds(t0, std::chrono::steady_clock::now()));
    }
  }
  const Stats p = Summarize(pp), g = Summarize(tg);
  const double gb = static_cast<double>(lm.file->file_size()) / 1e9;
  const std::string kv_name(DTypeName(lm.cache->config().type));
  const char* kv = kv_name.c_str();
  // The kernels: the CPU's instruction set, or the GPU backend's name (the device).
  const std::string kernels = lm.device.cuda ? lm.backend->name() : cpu::MatMulIsaName();
  // tg mode: full logits to the host, greedy one step at a time, or greedy pipelined.
  const char* mode = o.logits ? "logits" : (o.sync || !model.CanQueue() ? "greedy" : "greedy-pipelined");
  if (o.json) {
    std::printf(
        "{\"model\": \"%s\", \"file_gb\": %.4f, \"device\": \"%s\", \"isa\": \"%s\", \"threads\": %d, \"reps\": %d, "
        "\"kv_type\": \"%s\", \"prompt\": %d, \"gen\": %d, \"depth\": %d, \"pp_tok_s\": %.3f, \"pp_sd\": %.3f, "
        "\"tg_tok_s\": %.3f, \"tg_sd\": %.3f, \"tg_mode\": \"%s\"}\n",
        o.model.c_str(), gb, lm.device.ToString().c_str(), kernels.c_str(), lm.threads, o.reps, kv, o.prompt, o.gen,
        o.depth, p.mean, p.sd, g.mean, g.sd, mode);
    return;
  }
  std::printf("model: %s (%.3f GB) %s\n", o.model.c_str(), gb, model.config().Describe().c_str());
  std::printf("backend: %s, kernels %s, %d threads, %d reps, kv cache %s, tg %s\n", lm.device.ToString().c_str(),
              kernels.c_str(), lm.threads, o.reps, kv, mode);
  std::printf("| test | tokens/s |\n|---|---|\n");
  // llama-bench's names: "tg128 @ d4096" when the context holds 4,096 tokens first.
  const std::string at = o.depth > 0 ? " @ d" + std::to_string(o.depth) : "";
  if (o.prompt > 0) std::printf("| pp%d%s | %.2f ± %.2f |\n", o.prompt, at.c_str(), p.mean, p.sd);
  if (o.gen > 0) std::printf("| tg%d%s | %.2f ± %.2f |\n", o.gen, at.c_str(), g.mean, g.sd);
}

}  // namespace

void AddBenchModelCommand(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench-model", "Measure prompt-processing and decode speed of one model");
  cmd->add_option("-m,--model", o->model, "GGUF model file")->required();
  cmd->add_option("-p,--prompt", o->prompt, "Prompt tokens (0: skip)")->capture_default_str();
  cmd->add_option("-n,--gen", o->gen, "Generated tokens (0: skip)")->capture_default_str();
  cmd->add_option("-d,--depth", o->depth, "Tokens already in the context when pp and tg start (not timed)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "Threads (0: all cores)");
  cmd->add_option("-r,--reps", o->reps, "Repetitions")->capture_default_str();
  cmd->add_option("-b,--batch", o->batch, "Most tokens per forward pass")->capture_default_str();
  AddKvTypeOption(cmd, &o->kv_type);
  AddDeviceOption(cmd, &o->device);
  cmd->add_flag("--logits", o->logits, "tg: copy every step's logits to the host (no greedy feedback)");
  cmd->add_flag("--sync", o->sync, "tg: wait for each step's choice before running the next (as llama-bench)");
  cmd->add_flag("--json", o->json, "One JSON object on stdout");
  cmd->callback([o] { RunBench(*o); });
}

}  // namespace herd::cli
