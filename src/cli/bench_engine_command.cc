// herd bench-engine -m MODEL --requests 64 --concurrency 16 --prompt-len 512 --gen-len 128
//                   [--shared-prefix 400] [--batch-tokens 512] [-t THREADS] [--no-prefix-cache]
//                   [--request-rate R] [--distinct-prompts K] [--no-coalesce] [--kv-budget 2GiB|0.3] [--json]
//
// An offline serving workload through the engine (no HTTP): `concurrency` requests are kept in
// flight until `requests` have finished (closed loop), or, with --request-rate, requests arrive
// at Poisson times and at most `concurrency` are in flight (open loop). Prompts are random token ids; the first
// `shared-prefix` tokens are the same for every request (an agent's system prompt). Generation
// is greedy with end-of-generation ignored, so every request produces exactly gen-len tokens.
// Times come from the engine's own event timestamps, so the reader's delay does not count.
//
// Reported: prompt and generated tokens/s over the wall time of the run; "decode tok/s", the
// generated tokens of decode-only steps over those steps' time (the batched decode rate,
// without prefill work mixed in); time to first token, inter-token latency and end-to-end
// latency percentiles; prefix-cache hit rate.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <mutex>
#include <random>
#include <vector>

#include "base/memory_info.h"
#include "base/quantile.h"
#include "cli/commands.h"
#include "cli/model_loader.h"
#include "engine/engine.h"
#include "io/file_identity.h"
#include "kernels/matmul.h"

namespace herd::cli {
namespace {

struct BenchEngineOptions {
  std::string model;
  int requests = 64;
  int concurrency = 16;
  int prompt_len = 512;
  int gen_len = 128;
  int shared_prefix = 0;
  int batch_tokens = 512;
  int threads = 0;
  int seed = 1;
  double rate = 0;        // requests/s, Poisson arrivals; 0: submit whenever a slot is free
  int distinct = 0;       // 0: every prompt different; else prompts cycle through this many
  float temperature = 0;  // 0: greedy
  int top_k = 0;          // with temperature > 0: top-k truncation (0: off)
  float top_p = 1;
  float repeat_penalty = 1;  // != 1: every request penalizes repeats
  int logit_bias = 0;        // > 0: every request biases this many random tokens (+-1, one banned)
  int sampling_threads = 0;  // EngineOptions::sampling_threads
  bool no_prefix_cache = false;
  bool no_coalesce = false;
  bool json = false;
  std::string kv_type = "f16";
  std::string device = "cpu";
  std::string kv_budget;  // empty: room for every in-flight sequence at full length
};

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
};

Percentiles Summarize(std::vector<double> v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return Quantile(v, q); };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  for (double x : v) p.mean += x;
  p.mean /= static_cast<double>(v.size());
  return p;
}

double Ms(EngineClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct InFlight {
  std::shared_ptr<RequestStream> stream;
  EngineClock::time_point submitted, last_token;
  bool got_first = false;
};

void RunBenchEngine(const BenchEngineOptions& o) {
  if (o.requests < 1 || o.concurrency < 1 || o.prompt_len < 1 || o.gen_len < 1) {
    Fail("--requests, --concurrency, --prompt-len and --gen-len must be positive");
  }
  if (o.shared_prefix < 0 || o.shared_prefix > o.prompt_len) Fail("--shared-prefix must be in [0, --prompt-len]");
  const int32_t per_seq = o.prompt_len + o.gen_len;
  // KV pool: every in-flight sequence at full length, plus room for cached prefixes.
  size_t budget = 0;
  if (!o.kv_budget.empty()) {
    auto b = ParseMemoryBudget(o.kv_budget, AvailableMemoryBytes());
    if (!b.ok()) Fail("--kv-budget: " + b.status().message());
    budget = *b;
  }
  LoadedModel lm = LoadModelOrFail(o.model, o.threads, per_seq * (o.concurrency + 1) + 64, KvTypeFromName(o.kv_type),
                                   budget, o.device);
  EngineOptions eo;
  eo.scheduler.max_batch_tokens = o.batch_tokens;
  eo.scheduler.max_running = std::max(o.concurrency, 1);
  eo.n_ctx = std::max(per_seq, 16);
  eo.prefix_caching = !o.no_prefix_cache;
  auto identity = FileIdentityAt(o.model);
  if (!identity.ok()) Fail(identity.status().message());
  eo.cache_key = *identity;
  eo.coalesce_identical = !o.no_coalesce;
  eo.sampling_threads = o.sampling_threads;
  auto created = Engine::Create(lm.model.get(), lm.cache.get(), nullptr, eo);
  if (!created.ok()) Fail(created.status().message());
  Engine& engine = **created;

  const int32_t n_vocab = lm.model->config().n_vocab;
  std::mt19937 rng(static_cast<unsigned>(o.seed));
  auto token = [&] { return static_cast<int32_t>(rng() % static_cast<unsigned>(n_vocab)); };
  std::vector<int32_t> shared(static_cast<size_t>(o.shared_prefix));
  for (auto& t : shared) t = token();
  std::vector<std::vector<int32_t>> distinct;
  auto make_request = [&] {
    GenerationRequest r;
    if (o.distinct > 0 && static_cast<int>(distinct.size()) == o.distinct) {
      r.prompt = distinct[static_cast<size_t>(rng() % static_cast<unsigned>(o.distinct))];
    } else {
      r.prompt = shared;
      while (static_cast<int>(r.prompt.size()) < o.prompt_len) r.prompt.push_back(token());
      if (o.distinct > 0) distinct.push_back(r.prompt);
    }
    r.sampling.temperature = o.temperature;
    r.sampling.top_k = o.top_k;
    r.sampling.top_p = o.top_p;
    r.sampling.repeat_penalty = o.repeat_penalty;
    for (int i = 0; i < o.logit_bias; ++i) {
      const float bias = i == 0 ? -std::numeric_limits<float>::infinity() : (i % 2 == 0 ? 1.0f : -1.0f);
      r.sampling.logit_bias.emplace_back(token(), bias);
    }
    if (o.temperature > 0) r.sampling.seed = rng();  // greedy runs keep the prompts of earlier versions
    r.max_tokens = o.gen_len;
    r.ignore_eos = true;
    return r;
  };

  // Warm-up: fault the weights in, outside the measurement.
  {
    GenerationRequest w;
    w.prompt = {1, 2, 3, 4, 5, 6, 7, 8};
    w.max_tokens = 2;
    w.ignore_eos = true;
    w.sampling.temperature = 0.0f;
    auto s = engine.Submit(w);
    if (!s.ok()) Fail(s.status().message());
    while (engine.Busy()) engine.Step();
  }
  const EngineStats before = engine.stats();

  std::mutex mu;
  std::condition_variable cv;
  bool news = false;
  auto notify = [&] {
    {
      std::lock_guard lock(mu);
      news = true;
    }
    cv.notify_one();
  };
  engine.Start();
  std::vector<InFlight> live;
  std::vector<double> ttft, itl, e2e;
  int submitted = 0, finished = 0, errors = 0;
  int64_t generated = 0;
  const auto t0 = EngineClock::now();
  EngineClock::time_point t_end = t0;
  // Open loop (--request-rate): arrival times drawn up front from an exponential distribution,
  // so the load does not depend on how fast the engine answers.
  std::mt19937_64 arrivals_rng(static_cast<uint64_t>(o.seed) + 17);
  std::exponential_distribution<double> gap(o.rate > 0 ? o.rate : 1.0);
  EngineClock::time_point next_arrival = t0;
  auto arrived = [&] { return o.rate <= 0 || EngineClock::now() >= next_arrival; };
  while (finished < o.requests) {
    while (submitted < o.requests && static_cast<int>(live.size()) < o.concurrency && arrived()) {
      if (o.rate > 0) {
        next_arrival +=
            std::chrono::duration_cast<EngineClock::duration>(std::chrono::duration<double>(gap(arrivals_rng)));
      }
      InFlight f;
      f.submitted = EngineClock::now();
      auto s = engine.Submit(make_request());
      if (!s.ok()) Fail(s.status().message());
      f.stream = *s;
      f.stream->SetNotify(notify);
      live.push_back(std::move(f));
      ++submitted;
    }
    {
      std::unique_lock lock(mu);
      auto wait = std::chrono::milliseconds(20);
      if (o.rate > 0 && submitted < o.requests) {
        wait = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(next_arrival - EngineClock::now()),
                          std::chrono::milliseconds(0), wait);
      }
      cv.wait_for(lock, wait, [&] { return news; });
      news = false;
    }
    for (size_t i = 0; i < live.size();) {
      InFlight& f = live[i];
      EngineEvent ev;
      bool done = false;
      while (f.stream->TryNext(&ev)) {
        if (ev.kind == EngineEvent::Kind::kToken) {
          ++generated;
          if (!f.got_first) {
            ttft.push_back(Ms(ev.time - f.submitted));
            f.got_first = true;
          } else {
            itl.push_back(Ms(ev.time - f.last_token));
          }
          f.last_token = ev.time;
        } else {
          if (ev.finish == FinishReason::kError) ++errors;
          e2e.push_back(Ms(ev.time - f.submitted));
          t_end = std::max(t_end, ev.time);
          done = true;
        }
      }
      if (done) {
        live.erase(live.begin() + static_cast<long>(i));
        ++finished;
      } else {
        ++i;
      }
    }
  }
  engine.Stop();
  const EngineStats after = engine.stats();
  const double wall = std::chrono::duration<double>(t_end - t0).count();
  const double prompt_tps = static_cast<double>(o.requests) * o.prompt_len / wall;
  const double gen_tps = static_cast<double>(generated) / wall;
  const double decode_s = after.decode_step_seconds - before.decode_step_seconds;
  const double decode_tps =
      decode_s > 0 ? static_cast<double>(after.decode_step_tokens - before.decode_step_tokens) / decode_s : 0.0;
  const int64_t queried = after.prefix.queried_tokens - before.prefix.queried_tokens;
  const int64_t hits = after.prefix.hit_tokens - before.prefix.hit_tokens;
  const double hit_rate = queried > 0 ? static_cast<double>(hits) / static_cast<double>(queried) : 0.0;
  const Percentiles a = Summarize(ttft), b = Summarize(itl), c = Summarize(e2e);
  const std::string kernels = lm.device.cuda ? lm.backend->name() : cpu::MatMulIsaName();
  if (o.json) {
    std::printf(
        "{\"model\": \"%s\", \"device\": \"%s\", \"isa\": \"%s\", \"threads\": %d, \"kv_type\": \"%s\", \"requests\": "
        "%d, "
        "\"concurrency\": %d, \"request_rate\": %.3f, \"prompt_len\": %d, \"gen_len\": %d, \"shared_prefix\": %d, "
        "\"batch_tokens\": %d, "
        "\"prefix_cache\": %s, \"wall_s\": %.3f, \"prompt_tok_s\": %.2f, \"gen_tok_s\": %.2f, \"decode_tok_s\": %.2f, "
        "\"ttft_ms\": {\"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f, \"mean\": %.1f}, "
        "\"itl_ms\": {\"p50\": %.2f, \"p90\": %.2f, \"p99\": %.2f, \"mean\": %.2f}, "
        "\"e2e_ms\": {\"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f, \"mean\": %.1f}, "
        "\"cache_hit_rate\": %.4f, \"coalesced\": %lld, \"preemptions\": %lld, \"errors\": %d, "
        "\"step_s\": %.3f, \"forward_s\": %.3f, \"sample_s\": %.3f, \"steps\": %lld, \"queued_steps\": %lld, "
        "\"decode_steps\": %lld, \"decode_step_tokens\": %lld, \"host_sampled_rows\": %lld}\n",
        o.model.c_str(), lm.device.ToString().c_str(), kernels.c_str(), lm.threads, o.kv_type.c_str(), o.requests,
        o.concurrency, o.rate, o.prompt_len, o.gen_len, o.shared_prefix, o.batch_tokens,
        o.no_prefix_cache ? "false" : "true", wall, prompt_tps, gen_tps, decode_tps, a.p50, a.p90, a.p99, a.mean, b.p50,
        b.p90, b.p99, b.mean, c.p50, c.p90, c.p99, c.mean, hit_rate,
        static_cast<long long>(after.coalesced - before.coalesced),
        static_cast<long long>(after.preemptions - before.preemptions), errors,
        after.step_seconds - before.step_seconds, after.forward_seconds - before.forward_seconds,
        after.sample_seconds - before.sample_seconds, static_cast<long long>(after.steps - before.steps),
        static_cast<long long>(after.queued_steps - before.queued_steps),
        static_cast<long long>(after.decode_steps - before.decode_steps),
        static_cast<long long>(after.decode_step_tokens - before.decode_step_tokens),
        static_cast<long long>(after.host_sampled_rows - before.host_sampled_rows));
  } else {
    std::printf("model: %s  device %s, kernels %s, %d threads, kv %s\n", o.model.c_str(), lm.device.ToString().c_str(),
                kernels.c_str(), lm.threads, o.kv_type.c_str());
    std::printf("workload: %d requests, concurrency %d, prompt %d (shared prefix %d), gen %d, batch %d tokens%s\n",
                o.requests, o.concurrency, o.prompt_len, o.shared_prefix, o.gen_len, o.batch_tokens,
                o.no_prefix_cache ? ", prefix cache off" : "");
    std::printf("wall %.2f s | prompt %.1f tok/s | generated %.1f tok/s | decode steps %.1f tok/s\n", wall, prompt_tps,
                gen_tps, decode_tps);
    std::printf("| metric (ms) | p50 | p90 | p99 | mean |\n|---|---|---|---|---|\n");
    std::printf("| time to first token | %.1f | %.1f | %.1f | %.1f |\n", a.p50, a.p90, a.p99, a.mean);
    std::printf("| inter-token latency | %.2f | %.2f | %.2f | %.2f |\n", b.p50, b.p90, b.p99, b.mean);
    std::printf("| end-to-end latency | %.1f | %.1f | %.1f | %.1f |\n", c.p50, c.p90, c.p99, c.mean);
    std::printf(
        "prefix cache hit rate %.1f%% | coalesced %lld | preemptions %lld | errors %d\n"
        "steps: %.2f s (forward %.2f s, sampling %.2f s) in %lld steps (%lld pipelined)\n",
        100.0 * hit_rate, static_cast<long long>(after.coalesced - before.coalesced),
        static_cast<long long>(after.preemptions - before.preemptions), errors,
        after.step_seconds - before.step_seconds, after.forward_seconds - before.forward_seconds,
        after.sample_seconds - before.sample_seconds, static_cast<long long>(after.steps - before.steps),
        static_cast<long long>(after.queued_steps - before.queued_steps));
  }
  if (errors > 0) Fail(StrFormat("%d requests failed", errors));
}

}  // namespace

void AddBenchEngineCommand(CLI::App& app) {
  auto o = std::make_shared<BenchEngineOptions>();
  CLI::App* cmd = app.add_subcommand("bench-engine", "Run an offline serving workload through the batching engine");
  cmd->add_option("-m,--model", o->model, "GGUF model file")->required();
  cmd->add_option("--requests", o->requests, "Requests in total")->capture_default_str();
  cmd->add_option("--concurrency", o->concurrency, "Requests in flight at once")->capture_default_str();
  cmd->add_option("--prompt-len", o->prompt_len, "Prompt tokens per request")->capture_default_str();
  cmd->add_option("--gen-len", o->gen_len, "Generated tokens per request")->capture_default_str();
  cmd->add_option("--shared-prefix", o->shared_prefix, "Leading prompt tokens shared by all requests")
      ->capture_default_str();
  cmd->add_option("--batch-tokens", o->batch_tokens, "Token budget per engine step")->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "Threads (0: all cores)");
  cmd->add_option("--seed", o->seed, "Seed of the random prompts")->capture_default_str();
  cmd->add_flag("--no-prefix-cache", o->no_prefix_cache, "Disable automatic prefix caching");
  cmd->add_option("--temperature", o->temperature, "Sampling temperature of every request (0: greedy)")
      ->capture_default_str();
  cmd->add_option("--top-k", o->top_k, "Top-k of every request (0: off)")->capture_default_str();
  cmd->add_option("--top-p", o->top_p, "Top-p of every request (1: off)")->capture_default_str();
  cmd->add_option("--repeat-penalty", o->repeat_penalty, "Repeat penalty of every request (1: off)")
      ->capture_default_str();
  cmd->add_option("--logit-bias", o->logit_bias,
                  "Bias this many random tokens in every request (+-1; the first is banned; 0: off)")
      ->capture_default_str();
  cmd->add_option("--sampling-threads", o->sampling_threads,
                  "Threads sampling rows on the host (0: up to 8; 1: the engine thread)")
      ->capture_default_str();
  cmd->add_option("--request-rate", o->rate, "Poisson arrivals at this many requests/s (0: closed loop)");
  cmd->add_option("--distinct-prompts", o->distinct, "Draw prompts from this many distinct ones (0: all distinct)");
  cmd->add_flag("--no-coalesce", o->no_coalesce, "Compute identical greedy requests separately");
  AddKvTypeOption(cmd, &o->kv_type);
  AddDeviceOption(cmd, &o->device);
  cmd->add_option("--kv-budget", o->kv_budget,
                  "KV pool size: bytes (4GiB, 512MiB) or a fraction of available memory (0.3); default: every "
                  "in-flight sequence at full length");
  cmd->add_flag("--json", o->json, "One JSON object on stdout");
  cmd->callback([o] { RunBenchEngine(*o); });
}

}  // namespace herd::cli
