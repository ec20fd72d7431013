// `herd bench serve` against herd itself, in process: the tiny random model behind the OpenAI,
// Anthropic and Ollama routes and the token routes. Checks that the numbers are consistent:
// token counts equal what the server reported (per request and in the engine's own counters),
// percentiles are ordered, throughput is tokens over wall time, errors are counted by kind.
#include "cli/bench_serve/bench_serve.h"

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>

#include "server/anthropic_routes.h"
#include "server/completion_routes.h"
#include "server/herd_routes.h"
#include "server/ollama_routes.h"
#include "server/openai_routes.h"
#include "server/server_test_util.h"

namespace herd::bench {
namespace {

class BenchServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerHarness([](Router& r, server::ModelRegistry& m) {
      server::AddOpenAiRoutes(r, m);
      server::AddCompletionRoutes(r, m);
      server::AddAnthropicRoutes(r, m);
      server::AddOllamaRoutes(r, m);
      server::AddHerdRoutes(r, m);
    });
  }
  static void TearDownTestSuite() { delete server_; }

  static BenchServeOptions Options(Api api) {
    BenchServeOptions o;
    o.url = "http://127.0.0.1:" + std::to_string(server_->port());
    o.request.api = api;
    o.request.model = "tiny";
    o.request.ignore_eos = true;
    o.workload.input_len = 24;
    o.workload.output_len = 6;
    o.workload.num_prompts = 5;
    o.concurrency = {1, 3};
    o.seed = 11;
    o.progress = false;
    return o;
  }

  static int64_t GenerationTokens() {
    for (const auto& s : server_->registry().Status()) {
      if (s.entry.name == "tiny") return s.entry.load.metrics->Snapshot().generation_tokens;
    }
    ADD_FAILURE() << "no model 'tiny'";
    return -1;
  }

  // Runs the benchmark and checks what must hold for every run; returns the report.
  static BenchReport Run(const BenchServeOptions& o) {
    std::ostringstream out;
    const auto t0 = std::chrono::steady_clock::now();
    auto report = RunBenchServe(o, out);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    if (!report.ok()) return {};
    EXPECT_NE(out.str().find("herd bench serve: "), std::string::npos) << out.str();
    EXPECT_EQ(report->summaries.size(), o.concurrency.size());
    EXPECT_EQ(report->json["runs"].size(), o.concurrency.size());
    for (size_t i = 0; i < report->summaries.size(); ++i) {
      const RunSummary& s = report->summaries[i];
      const RunResult& run = report->runs[i];
      EXPECT_EQ(s.concurrency, o.concurrency[i]);
      for (const Distribution* d : {&s.ttft_ms, &s.tpot_ms, &s.itl_ms, &s.e2e_ms}) {
        EXPECT_LE(d->min, d->p50);
        EXPECT_LE(d->p50, d->p90);
        EXPECT_LE(d->p90, d->p99);
        EXPECT_LE(d->p99, d->max);
        EXPECT_GE(d->mean, d->min);
        EXPECT_LE(d->mean, d->max);
      }
      // Throughput is tokens (and requests) over the run's wall time, which lies between the
      // last request's end and the test's own clock around the whole call.
      EXPECT_GT(s.duration_s, 0);
      EXPECT_LE(s.duration_s, wall);
      int64_t out_tokens = 0, prompt_tokens = 0;
      for (const RequestRecord& r : run.records) {
        EXPECT_LE(r.start_s + r.e2e_s, s.duration_s + 1e-9);
        if (!r.ok) continue;
        out_tokens += r.output_tokens;
        prompt_tokens += r.usage_prompt_tokens >= 0 ? r.usage_prompt_tokens : r.fitted_prompt_tokens;
      }
      EXPECT_EQ(s.total_output_tokens, out_tokens);
      EXPECT_EQ(s.total_prompt_tokens, prompt_tokens);
      EXPECT_DOUBLE_EQ(s.output_throughput, static_cast<double>(out_tokens) / s.duration_s);
      EXPECT_DOUBLE_EQ(s.request_throughput, s.completed / s.duration_s);
      EXPECT_DOUBLE_EQ(s.total_token_throughput, static_cast<double>(out_tokens + prompt_tokens) / s.duration_s);
      const auto& j = report->json["runs"][i];
      EXPECT_EQ(j["total_output_tokens"], s.total_output_tokens);
      EXPECT_EQ(j["requests"], s.requests);
      EXPECT_EQ(j["per_request"].size(), run.records.size());
    }
    return std::move(report).value();
  }

  // Every request succeeded and its counts are the server's.
  static void ExpectServerCounts(const BenchReport& report, bool exact_length) {
    for (const RunResult& run : report.runs) {
      for (const RequestRecord& r : run.records) {
        EXPECT_TRUE(r.ok) << r.error_kind << ": " << r.error;
        EXPECT_EQ(r.http_status, 200);
        EXPECT_TRUE(r.tokens_from_usage);
        EXPECT_EQ(r.output_tokens, r.usage_output_tokens);
        EXPECT_GT(r.usage_prompt_tokens, 0);
        if (exact_length) {
          EXPECT_EQ(r.output_tokens, r.requested_output);
        }
        EXPECT_LE(r.output_tokens, r.requested_output);
        // Deltas carry at least one token each (several when a character spans tokens).
        EXPECT_GE(r.deltas, 1);
        EXPECT_LE(r.deltas, r.output_tokens);
        EXPECT_EQ(static_cast<int64_t>(r.itl_s.size()), r.deltas - 1);
        EXPECT_GE(r.ttft_s, 0);
        EXPECT_LE(r.ttft_s, r.e2e_s);
      }
    }
  }

  static inline testing::ServerHarness* server_ = nullptr;
};

TEST_F(BenchServeTest, OpenAiCountsAreTheServersOwn) {
  const int64_t before = GenerationTokens();
  const BenchReport report = Run(Options(Api::kOpenAiChat));
  const int64_t generated = GenerationTokens() - before;
  EXPECT_EQ(report.calibration.method, "tokenize");
  ExpectServerCounts(report, /*exact_length=*/true);  // ignore_eos: always max_tokens
  int64_t total = 0;
  for (const RunSummary& s : report.summaries) {
    EXPECT_EQ(s.requests, 5);
    EXPECT_EQ(s.completed, 5);
    EXPECT_EQ(s.output_from_usage, 5);
    EXPECT_EQ(s.shorter_than_requested + s.longer_than_requested, 0);
    EXPECT_TRUE(LengthWarnings(s, true).empty());
    total += s.total_output_tokens;
  }
  // The engine's own count of generated tokens saw exactly what the benchmark counted (the
  // tokenize calibration generates nothing).
  EXPECT_EQ(total, generated);
  EXPECT_FALSE(report.error_rate_exceeded);
  for (const RunResult& run : report.runs) {
    for (const RequestRecord& r : run.records) EXPECT_GT(r.usage_prompt_tokens, r.fitted_prompt_tokens);  // + template
  }
}

// /v1/completions sends the text as it is: the server's prompt count is the fitted count (by the
// server's own /tokenize) plus the same special tokens (BOS) for every request.
TEST_F(BenchServeTest, CompletionsPromptsHaveTheFittedLength) {
  BenchServeOptions o = Options(Api::kOpenAiCompletions);
  o.concurrency = {2};
  const BenchReport report = Run(o);
  ExpectServerCounts(report, true);
  const RequestRecord& first = report.runs[0].records[0];
  const int64_t specials = first.usage_prompt_tokens - first.fitted_prompt_tokens;
  EXPECT_GE(specials, 0);
  EXPECT_LE(specials, 2);
  for (const RequestRecord& r : report.runs[0].records) {
    EXPECT_EQ(r.usage_prompt_tokens - r.fitted_prompt_tokens, specials);
    EXPECT_LE(std::abs(r.fitted_prompt_tokens - o.workload.input_len), 3);  // words of up to ~6 tokens here
  }
}

TEST_F(BenchServeTest, CompletionsAnthropicAndOllama) {
  for (Api api : {Api::kOpenAiCompletions, Api::kAnthropic, Api::kOllama}) {
    SCOPED_TRACE(ApiName(api));
    BenchServeOptions o = Options(api);
    o.concurrency = {2};
    o.workload.num_prompts = 4;
    const BenchReport report = Run(o);
    // Anthropic and Ollama have no ignore_eos: lengths are at most max_tokens.
    ExpectServerCounts(report, /*exact_length=*/api == Api::kOpenAiCompletions);
    EXPECT_EQ(report.summaries[0].completed, 4);
    EXPECT_EQ(report.json["config"]["ignore_eos_sent"], api == Api::kOpenAiCompletions);
  }
}

TEST_F(BenchServeTest, MultiturnTurnsFollowEachOther) {
  BenchServeOptions o = Options(Api::kOpenAiChat);
  o.workload.kind = "multiturn";
  o.workload.turns = 3;
  o.workload.turn_len = 8;
  o.workload.num_prompts = 6;
  o.concurrency = {2};
  o.request_rate = 100;  // Poisson arrivals of sessions
  const BenchReport report = Run(o);
  ExpectServerCounts(report, true);
  std::map<int, const RequestRecord*> last;                // per session, the previous turn
  for (const RequestRecord& r : report.runs[0].records) {  // completion order
    auto it = last.find(r.session);
    if (r.turn == 0) {
      EXPECT_EQ(it, last.end());
    } else {
      ASSERT_NE(it, last.end());
      EXPECT_EQ(it->second->turn, r.turn - 1);
      // Sent after the previous turn ended, with its answer and a new message in the prompt.
      EXPECT_GE(r.start_s, it->second->start_s + it->second->e2e_s - 1e-9);
      EXPECT_GT(r.usage_prompt_tokens, it->second->usage_prompt_tokens + it->second->output_tokens);
    }
    last[r.session] = &r;
  }
  EXPECT_EQ(last.size(), 2u);
}

TEST_F(BenchServeTest, WrongModelIsAnErrorForEveryRequest) {
  BenchServeOptions o = Options(Api::kOpenAiChat);
  o.request.model = "no-such-model";
  o.concurrency = {2};
  const BenchReport report = Run(o);
  EXPECT_EQ(report.calibration.method, "default");
  const RunSummary& s = report.summaries[0];
  EXPECT_EQ(s.completed, 0);
  EXPECT_EQ(s.failed, 5);
  EXPECT_EQ(s.errors.at("http_404"), 5);
  EXPECT_NE(s.first_error.find("no-such-model"), std::string::npos) << s.first_error;
  EXPECT_TRUE(report.error_rate_exceeded);
  EXPECT_EQ(report.json["error_rate_exceeded"], true);
}

TEST_F(BenchServeTest, RefusedConnectionsAreCounted) {
  BenchServeOptions o = Options(Api::kOllama);
  o.url = "http://127.0.0.1:1";  // nothing listens on port 1
  o.concurrency = {3};
  o.workload.num_prompts = 4;
  o.max_error_rate = 1.0;  // every request failing is still within this threshold
  const BenchReport report = Run(o);
  EXPECT_EQ(report.summaries[0].errors.at("connection"), 4);
  EXPECT_FALSE(report.error_rate_exceeded);
}

TEST_F(BenchServeTest, BadOptionsAreErrors) {
  std::ostringstream out;
  BenchServeOptions o = Options(Api::kOpenAiChat);
  o.url = "https://127.0.0.1:1";
  EXPECT_FALSE(RunBenchServe(o, out).ok());
  o = Options(Api::kOpenAiChat);
  o.concurrency = {0};
  EXPECT_FALSE(RunBenchServe(o, out).ok());
  o = Options(Api::kOpenAiChat);
  o.workload.shared_prefix_len = 100;  // not below input_len
  EXPECT_FALSE(RunBenchServe(o, out).ok());
}

}  // namespace
}  // namespace herd::bench
