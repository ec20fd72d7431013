// Prompt fitting against a known counter, the workload shapes, and the report's arithmetic.
#include "cli/bench_serve/workload.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "cli/bench_serve/prompt_text.h"
#include "cli/bench_serve/report.h"

namespace herd::bench {
namespace {

// An "exact" tokenizer: one token per started 3 bytes of each word (a word of 1-3 letters is
// one token, 4-6 two, ...), so lengths are not a fixed multiple of the word count.
TokenCounter ThreeByteCounter(int* calls = nullptr) {
  TokenCounter c;
  c.tokens_per_word = 1.8;
  c.exact = [calls](const std::string& text) -> std::optional<int> {
    if (calls) ++*calls;
    int tokens = 0, run = 0;
    for (char ch : text) {
      if (ch == ' ' || ch == '\n') {
        tokens += (run + 2) / 3;
        run = 0;
      } else {
        ++run;
      }
    }
    return tokens + (run + 2) / 3;
  };
  return c;
}

TEST(PromptTextTest, FitsTheTargetWithAnExactCounter) {
  const TokenCounter counter = ThreeByteCounter();
  PromptText text(1, &counter);
  for (int target : {1, 7, 50, 333, 1000}) {
    const FittedText t = text.Fit("", target);
    EXPECT_TRUE(t.exact);
    EXPECT_EQ(t.tokens, *counter.exact(t.text));
    // One word is at most 3 tokens here, so the closest prefix is within 1 token... or 2 when
    // a 3-token word straddles the target.
    EXPECT_LE(std::abs(t.tokens - target), 1) << target;
  }
  const FittedText prefix = text.Fit("", 40);
  const FittedText whole = text.Fit(prefix.text, 100);
  EXPECT_EQ(whole.text.rfind(prefix.text + " ", 0), 0u);
  EXPECT_LE(std::abs(whole.tokens - 100), 1);
}

TEST(PromptTextTest, EstimatesWithoutAnExactCounter) {
  TokenCounter counter;
  counter.tokens_per_word = 2;
  PromptText text(3, &counter);
  const FittedText t = text.Fit("", 100);
  EXPECT_FALSE(t.exact);
  EXPECT_EQ(t.tokens, 100);  // 50 words at 2 tokens per word
  EXPECT_EQ(counter.Count(t.text), 100);
}

TEST(WorkloadTest, RandomWithASharedPrefix) {
  const TokenCounter counter = ThreeByteCounter();
  WorkloadOptions o;
  o.num_prompts = 6;
  o.input_len = 80;
  o.shared_prefix_len = 30;
  o.output_len = 5;
  auto s = BuildWorkload(o, counter);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->size(), 6u);
  EXPECT_EQ(CountRequests(*s), 6);
  const std::string first = (*s)[0].user_turns[0];
  std::set<std::string> distinct;
  for (const Session& x : *s) {
    ASSERT_EQ(x.user_turns.size(), 1u);
    EXPECT_TRUE(x.exact);
    EXPECT_LE(std::abs(x.turn_tokens[0] - 80), 1);
    EXPECT_EQ(x.max_tokens[0], 5);
    // The first 30 tokens' words are the same in every prompt.
    EXPECT_EQ(x.user_turns[0].substr(0, 40), first.substr(0, 40));
    distinct.insert(x.user_turns[0]);
  }
  EXPECT_EQ(distinct.size(), 6u);
}

TEST(WorkloadTest, AgentSharesTheSystemPromptAndVariesTheUser) {
  const TokenCounter counter = ThreeByteCounter();
  WorkloadOptions o;
  o.kind = "agent";
  o.num_prompts = 5;
  o.input_len = 40;
  o.shared_prefix_len = 800;
  auto s = BuildWorkload(o, counter);
  ASSERT_TRUE(s.ok());
  std::set<std::string> users;
  for (const Session& x : *s) {
    ASSERT_EQ(x.base.size(), 1u);
    EXPECT_EQ(x.base[0].role, "system");
    EXPECT_EQ(x.base[0].content, (*s)[0].base[0].content);
    EXPECT_NE(x.base[0].content.find("\"name\": \"read_file\""), std::string::npos);
    EXPECT_LE(std::abs(x.base_tokens - 800), 1);
    users.insert(x.user_turns[0]);
  }
  EXPECT_EQ(users.size(), 5u);
}

TEST(WorkloadTest, MultiturnSplitsRequestsIntoSessions) {
  const TokenCounter counter = ThreeByteCounter();
  WorkloadOptions o;
  o.kind = "multiturn";
  o.num_prompts = 10;
  o.turns = 4;
  o.input_len = 60;
  o.turn_len = 12;
  auto s = BuildWorkload(o, counter);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->size(), 3u);  // 4 + 4 + 2 turns
  EXPECT_EQ(CountRequests(*s), 10);
  EXPECT_EQ((*s)[2].user_turns.size(), 2u);
  EXPECT_LE(std::abs((*s)[0].turn_tokens[0] - 60), 1);
  EXPECT_LE(std::abs((*s)[0].turn_tokens[1] - 12), 1);
}

TEST(WorkloadTest, DatasetFile) {
  const std::string path = ::testing::TempDir() + "/bench_dataset.jsonl";
  {
    std::ofstream f(path);
    f << R"({"prompt": "hello there"})"
      << "\n\n";
    f << R"({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}], "max_tokens": 3})"
      << "\n";
  }
  const TokenCounter counter = ThreeByteCounter();
  WorkloadOptions o;
  o.kind = "dataset";
  o.dataset = path;
  o.num_prompts = 5;
  o.output_len = 9;
  auto s = BuildWorkload(o, counter);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->size(), 5u);
  EXPECT_EQ((*s)[0].user_turns[0], "hello there");
  EXPECT_EQ((*s)[0].max_tokens[0], 9);
  EXPECT_EQ((*s)[0].turn_tokens[0], 4);  // hel lo the re
  EXPECT_EQ((*s)[1].base.size(), 1u);
  EXPECT_EQ((*s)[1].user_turns[0], "hi");
  EXPECT_EQ((*s)[1].max_tokens[0], 3);
  EXPECT_EQ((*s)[1].base_tokens, 3);
  EXPECT_EQ((*s)[4].user_turns[0], "hello there");  // cycles
  EXPECT_EQ((*s)[4].turn_tokens[0], 4);

  {
    std::ofstream f(path);
    f << R"({"prompt": "a"})"
      << "\n"
      << R"({"text": "b"})"
      << "\n";
  }
  auto bad = BuildWorkload(o, counter);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bench_dataset.jsonl:2"), std::string::npos) << bad.status().message();
  std::remove(path.c_str());
  o.kind = "zipf";
  EXPECT_FALSE(BuildWorkload(o, counter).ok());
}

TEST(ReportTest, PercentilesAndThroughput) {
  const Distribution d = Distribute({4, 1, 3, 2}, 1000);
  EXPECT_EQ(d.n, 4u);
  EXPECT_DOUBLE_EQ(d.min, 1000);
  EXPECT_DOUBLE_EQ(d.p50, 2500);
  EXPECT_DOUBLE_EQ(d.p90, 3700);
  EXPECT_DOUBLE_EQ(d.max, 4000);
  EXPECT_DOUBLE_EQ(d.mean, 2500);

  RunResult run;
  run.duration_s = 2;
  RequestRecord a;
  a.ok = true;
  a.requested_output = 4;
  a.output_tokens = 4;
  a.usage_output_tokens = 4;
  a.tokens_from_usage = true;
  a.deltas = 4;
  a.usage_prompt_tokens = 10;
  a.ttft_s = 0.5;
  a.e2e_s = 1.1;
  a.itl_s = {0.2, 0.2, 0.2};
  RequestRecord b = a;
  b.output_tokens = b.deltas = 2;
  b.usage_output_tokens = -1;
  b.tokens_from_usage = false;
  b.usage_prompt_tokens = -1;
  b.fitted_prompt_tokens = 7;
  RequestRecord c;
  c.error_kind = "http_503";
  c.error = "busy";
  run.records = {a, b, c};
  const RunSummary s = Summarize(run, 2, 0);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.errors.at("http_503"), 1);
  EXPECT_EQ(s.first_error, "http_503: busy");
  EXPECT_EQ(s.total_output_tokens, 6);
  EXPECT_EQ(s.total_prompt_tokens, 17);  // usage for a, own count for b
  EXPECT_DOUBLE_EQ(s.output_throughput, 3);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 11.5);
  EXPECT_EQ(s.output_from_usage, 1);
  EXPECT_EQ(s.output_from_deltas, 1);
  EXPECT_EQ(s.shorter_than_requested, 1);
  // TPOT (1.1 - 0.5) / 3 and / 1: 200 and 600 ms.
  EXPECT_NEAR(s.tpot_ms.min, 200, 1e-9);
  EXPECT_NEAR(s.tpot_ms.p50, 400, 1e-9);
  EXPECT_NEAR(s.tpot_ms.max, 600, 1e-9);
  EXPECT_EQ(s.itl_ms.n, 6u);
  EXPECT_EQ(LengthWarnings(s, true).size(), 1u);
  EXPECT_NE(LengthWarnings(s, true)[0].find("ignored ignore_eos"), std::string::npos);
}

}  // namespace
}  // namespace herd::bench
