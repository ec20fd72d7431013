// Pipelined decoding (src/engine/engine_pipeline.cc) forced on over the reference backend: the
// same workload through an engine with it and one without gives the same events — tokens, text,
// finish reasons, usage — across chunked prefill, preemption, prefix-cache hits, stop strings,
// end-of-generation tokens, the context limit, cancellation and sampled requests mixed in; and
// steps really were queued (stats().queued_steps), so a comparison is never of two plain runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace herd {
namespace {

using testing::Drain;
using testing::EngineSetup;
using testing::Fixture;
using testing::Greedy;
using testing::Make;
using testing::Outcome;
using testing::Prompt;

void ExpectSame(const Outcome& got, const Outcome& want, size_t i) {
  EXPECT_EQ(got.tokens, want.tokens) << "request " << i;
  EXPECT_EQ(got.text, want.text) << "request " << i;
  ASSERT_EQ(got.finish.size(), want.finish.size()) << "request " << i;
  for (const auto& [index, w] : want.finish) {
    ASSERT_TRUE(got.finish.count(index)) << "request " << i << " choice " << index;
    const EngineEvent& g = got.finish.at(index);
    EXPECT_EQ(g.finish, w.finish) << "request " << i << " choice " << index;
    EXPECT_EQ(g.usage.completion_tokens, w.usage.completion_tokens) << "request " << i << " choice " << index;
    EXPECT_EQ(g.stop_string, w.stop_string) << "request " << i << " choice " << index;
  }
}

// A workload: requests submitted before step `at`, and cancellations of request `which` before
// step `at` (both in steps of the engine's Step() loop).
struct Arrival {
  int at = 0;
  GenerationRequest request;
};
struct Cancellation {
  int at = 0;
  size_t which = 0;
};

struct RunResult {
  std::vector<Outcome> outcomes;
  EngineStats stats;
};

RunResult RunWorkload(EngineSetup setup, EngineOptions::Pipeline pipeline, const std::vector<Arrival>& arrivals,
                      const std::vector<Cancellation>& cancels = {}) {
  setup.pipeline = pipeline;
  Fixture f = Make(setup);
  std::vector<std::shared_ptr<RequestStream>> streams(arrivals.size());
  for (int step = 0; step < 100000; ++step) {
    bool pending = false;
    for (size_t i = 0; i < arrivals.size(); ++i) {
      if (arrivals[i].at == step) {
        auto s = f.engine->Submit(arrivals[i].request);
        EXPECT_TRUE(s.ok()) << s.status().ToString();
        if (s.ok()) streams[i] = *s;
      }
      pending = pending || arrivals[i].at > step;
    }
    for (const Cancellation& c : cancels) {
      if (c.at == step && streams[c.which]) f.engine->Cancel(streams[c.which]->id());
    }
    if (!pending && !f.engine->Busy()) break;
    f.engine->Step();
    f.engine->CheckInvariants();
  }
  EXPECT_FALSE(f.engine->Busy());
  RunResult run;
  for (auto& s : streams) run.outcomes.push_back(s ? Drain(*s) : Outcome{});
  f.engine->Stop();  // takes a pass still in flight
  run.stats = f.engine->stats();
  EXPECT_EQ(f.engine->kv().free_blocks(), setup.n_blocks);
  return run;
}

// A cancelled request: both runs schedule the same steps, but the pipelined engine has emitted
// one step less when the cancellation lands (that step's pass is in flight and dropped). Its
// tokens are a prefix of the plain run's, at most one shorter per choice; a cancellation that
// came as the plain run emitted the last token ends the pipelined one as cancelled.
void ExpectCancelledPrefix(const Outcome& got, const Outcome& want, size_t i) {
  EXPECT_EQ(got.finish.size(), want.finish.size()) << "request " << i;
  for (const auto& [index, ev] : got.finish) {
    const FinishReason reason = ev.finish;
    const auto& g = got.tokens.count(index) ? got.tokens.at(index) : std::vector<int32_t>{};
    const auto& w = want.tokens.count(index) ? want.tokens.at(index) : std::vector<int32_t>{};
    ASSERT_LE(g.size(), w.size()) << "request " << i << " choice " << index;
    EXPECT_LE(w.size() - g.size(), 1u) << "request " << i << " choice " << index;
    EXPECT_TRUE(std::equal(g.begin(), g.end(), w.begin())) << "request " << i << " choice " << index;
    if (reason != FinishReason::kCancelled) {
      EXPECT_EQ(reason, want.finish.at(index).finish) << "request " << i;
    }
  }
}

// Runs the workload both ways and compares every request's events.
RunResult ExpectSameAsUnpipelined(const EngineSetup& setup, const std::vector<Arrival>& arrivals,
                                  const std::vector<Cancellation>& cancels = {}) {
  // The reference samples on the host (HERD_DEVICE_ARGMAX=0 keeps a GPU backend's rows there
  // too; an unpipelined host backend does anyway).
  setenv("HERD_DEVICE_ARGMAX", "0", 1);
  const RunResult plain = RunWorkload(setup, EngineOptions::Pipeline::kOff, arrivals, cancels);
  unsetenv("HERD_DEVICE_ARGMAX");
  const RunResult piped = RunWorkload(setup, EngineOptions::Pipeline::kOn, arrivals, cancels);
  EXPECT_EQ(plain.stats.queued_steps, 0);
  EXPECT_GT(piped.stats.queued_steps, 0) << "nothing was pipelined: the comparison would be vacuous";
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const bool cancelled =
        std::any_of(cancels.begin(), cancels.end(), [i](const Cancellation& c) { return c.which == i; });
    if (cancelled) {
      ExpectCancelledPrefix(piped.outcomes[i], plain.outcomes[i], i);
    } else {
      ExpectSame(piped.outcomes[i], plain.outcomes[i], i);
    }
  }
  if (cancels.empty()) {
    EXPECT_EQ(piped.stats.generated_tokens, plain.stats.generated_tokens);
  }
  return piped;
}

int32_t Vocab() {
  static const int32_t n = Make(EngineSetup{}).model->config().n_vocab;
  return n;
}

TEST(EnginePipelineTest, GreedyBatchesAcrossChunkedPrefillAndLateArrivals) {
  std::vector<Arrival> a;
  for (int i = 0; i < 6; ++i) a.push_back({3 * i, Greedy(Prompt(20 + 37 * i, i, Vocab()), 12 + 3 * i)});
  EngineSetup s;
  s.max_batch_tokens = 40;  // long prompts go in chunks next to pipelined decode steps
  const RunResult r = ExpectSameAsUnpipelined(s, a);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(r.outcomes[i].finish.at(0).finish, FinishReason::kLength);
    EXPECT_EQ(r.outcomes[i].tokens.at(0).size(), static_cast<size_t>(a[i].request.max_tokens));
  }
}

// Every Step() that runs or queues a pass says so (Engine::Loop waits up to 5 ms after a Step()
// that returns false): also one that queues its pass while none was in flight, as the first
// pass after a prompt does (before the fix: 1 such step of 9 here).
TEST(EnginePipelineTest, StepsThatQueueAPassReportThatTheyRan) {
  EngineSetup setup;
  setup.pipeline = EngineOptions::Pipeline::kOn;
  Fixture f = Make(setup);
  auto s = f.engine->Submit(Greedy(Prompt(20, 0, Vocab()), 8));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  int steps = 0, idle = 0;
  for (; f.engine->Busy() && steps < 1000; ++steps) idle += f.engine->Step() ? 0 : 1;
  EXPECT_EQ(idle, 0) << "of " << steps << " steps";
  const EngineStats st = f.engine->stats();
  EXPECT_GT(st.queued_steps, 0);
  EXPECT_GT(st.step_seconds, 0);
  f.engine->Stop();
}

TEST(EnginePipelineTest, PreemptionOfSequencesWhoseTokenIsInFlight) {
  std::vector<Arrival> a;
  for (int i = 0; i < 5; ++i) a.push_back({0, Greedy(Prompt(30 + 11 * i, 100 + i, Vocab()), 40)});
  EngineSetup s;
  s.n_blocks = 12;  // 192 slots for 5 sequences of ~70-110 tokens: preempts while decoding
  const RunResult r = ExpectSameAsUnpipelined(s, a);
  EXPECT_GT(r.stats.preemptions, 0);
}

TEST(EnginePipelineTest, PrefixCacheHitsOnBlocksCommittedBeforeTheirPassIsTaken) {
  const auto shared = Prompt(70, 7, Vocab());
  std::vector<Arrival> a;
  for (int i = 0; i < 5; ++i) {
    auto p = shared;
    const auto tail = Prompt(3 + i, 50 + i, Vocab());
    p.insert(p.end(), tail.begin(), tail.end());
    a.push_back({4 * i, Greedy(p, 10)});
  }
  const RunResult r = ExpectSameAsUnpipelined(EngineSetup{}, a);
  EXPECT_GT(r.stats.prefix.hit_tokens, 0);
}

TEST(EnginePipelineTest, StopStringsAndEndTokensEndSequencesWithARowInFlight) {
  // A stop string from the middle of a greedy text: found one step after the next pass was
  // queued, whose row for the sequence is then dropped.
  const RunResult probe =
      RunWorkload(EngineSetup{}, EngineOptions::Pipeline::kOff, {{0, Greedy(Prompt(20, 9, Vocab()), 30)}});
  const std::string text = probe.outcomes[0].text.at(0);
  ASSERT_GT(text.size(), 12u);
  GenerationRequest stop = Greedy(Prompt(20, 9, Vocab()), 30);
  stop.stop = {text.substr(text.size() / 2, 5)};
  // An end-of-generation token made certain by a bias (logit_bias is not plain greedy: that
  // request's steps run unpipelined while the others' are queued around it).
  Fixture f = Make(EngineSetup{});
  GenerationRequest eos = Greedy(Prompt(10, 1, Vocab()), 5);
  eos.ignore_eos = false;
  eos.sampling.logit_bias = {{f.tokenizer->vocab().eog.at(0), 1000.0f}};
  std::vector<Arrival> a = {{0, stop}, {0, Greedy(Prompt(25, 3, Vocab()), 30)}, {6, eos}, {2, stop}};
  const RunResult r = ExpectSameAsUnpipelined(EngineSetup{}, a);
  EXPECT_EQ(r.outcomes[0].finish.at(0).finish, FinishReason::kStop);
  EXPECT_LT(r.outcomes[0].tokens.at(0).size(), 30u);
  EXPECT_EQ(r.outcomes[2].finish.at(0).finish, FinishReason::kStop);
  EXPECT_EQ(r.outcomes[2].finish.at(0).usage.completion_tokens, 1);
}

TEST(EnginePipelineTest, TheContextLimitParksASequenceBeforeItsLastTokenIsKnown) {
  EngineSetup s;
  s.n_ctx = 64;
  std::vector<Arrival> a;
  for (int i = 0; i < 3; ++i) {
    GenerationRequest r = Greedy(Prompt(40 + 5 * i, 20 + i, Vocab()), -1);  // until the context is full
    a.push_back({i, r});
  }
  const RunResult r = ExpectSameAsUnpipelined(s, a);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(r.outcomes[i].finish.at(0).finish, FinishReason::kLength);
    EXPECT_EQ(r.outcomes[i].tokens.at(0).size() + a[i].request.prompt.size(), 64u);
  }
}

TEST(EnginePipelineTest, CancellationsWhileAPassIsInFlight) {
  std::vector<Arrival> a;
  for (int i = 0; i < 4; ++i) a.push_back({0, Greedy(Prompt(30 + 9 * i, 40 + i, Vocab()), 40)});
  const RunResult r = ExpectSameAsUnpipelined(EngineSetup{}, a, {{8, 1}, {15, 3}});
  EXPECT_EQ(r.outcomes[1].finish.at(0).finish, FinishReason::kCancelled);
  EXPECT_EQ(r.outcomes[3].finish.at(0).finish, FinishReason::kCancelled);
  EXPECT_EQ(r.outcomes[0].finish.at(0).finish, FinishReason::kLength);
}

TEST(EnginePipelineTest, RandomizedMixOfGreedySampledAndCancelled) {
  EngineSetup s;
  s.n_blocks = 20;
  s.block_size = 8;
  s.max_batch_tokens = 48;
  s.max_running = 6;
  std::mt19937 rng(11);
  const auto shared = Prompt(24, 99, Vocab());
  std::vector<Arrival> a;
  std::vector<Cancellation> c;
  for (int step = 0; step < 300; ++step) {
    if (rng() % 3 == 0) {
      auto p = rng() % 2 ? shared : std::vector<int32_t>{};
      const auto tail = Prompt(1 + static_cast<int>(rng() % 40), static_cast<int>(rng()), Vocab());
      p.insert(p.end(), tail.begin(), tail.end());
      GenerationRequest r = Greedy(p, 1 + static_cast<int32_t>(rng() % 30));
      if (rng() % 4 == 0) {
        r.sampling.temperature = 0.7f;
        r.sampling.seed = rng();
      }
      if (rng() % 5 == 0) r.n = 2;
      a.push_back({step, r});
    }
    if (rng() % 12 == 0 && !a.empty()) c.push_back({step, rng() % a.size()});
  }
  const RunResult r = ExpectSameAsUnpipelined(s, a, c);
  EXPECT_GT(r.stats.preemptions, 0);
}

// Sampled requests without top-k draw on the device (Backend::DrawRows; here its host default,
// ref::DrawRow): plain temperatures, nucleus, min_p and both, each seeded, give the tokens the
// host Sampler gives from the same seeds.
TEST(EnginePipelineTest, FullRowDrawsGiveTheHostSamplersTokens) {
  std::vector<Arrival> a;
  const float temps[] = {0.3f, 0.8f, 1.0f, 1.7f};
  const float top_ps[] = {1.0f, 0.9f, 0.5f, 1.0f};
  const float min_ps[] = {0.0f, 0.0f, 0.05f, 0.1f};
  for (int i = 0; i < 8; ++i) {
    GenerationRequest r = Greedy(Prompt(10 + 3 * i, 200 + i, Vocab()), 30);
    r.sampling.temperature = temps[i % 4];
    r.sampling.top_p = top_ps[(i + i / 4) % 4];
    r.sampling.min_p = min_ps[(i + 2 * (i / 4)) % 4];
    r.sampling.seed = 1000 + static_cast<uint64_t>(i);
    a.push_back({i % 3, r});
  }
  a.push_back({1, Greedy(Prompt(20, 300, Vocab()), 30)});  // greedy rows in the same passes
  const RunResult r = ExpectSameAsUnpipelined(EngineSetup{}, a, {});
  // Every decode step holds sampled rows (all requests run together for ~30 steps), and a pass
  // is queued only when it returns ids: so these steps drew on the "device".
  EXPECT_GE(r.stats.queued_steps, 20);
  EXPECT_EQ(r.stats.host_sampled_rows, 0);
}

// Logit bias (bans, a token listed twice) and repetition penalties (repeat, frequency, presence;
// windows of 8 and 64 tokens and the whole history) are applied on the "device" before its
// argmax, top-k or draw (Backend::PenalizeRows): greedy, top-k and full-row requests with them,
// alone or with top-k and full-row draws in the same passes (StepOutput::topk_with_draws), give
// the host Sampler's tokens, and no row is sampled on the host. Those passes are not queued; the
// greedy request without either, which runs on alone, is.
TEST(EnginePipelineTest, BiasAndPenaltiesOnTheDeviceGiveTheHostSamplersTokens) {
  const int last_ns[] = {64, 8, -1};
  for (const int kind : {0, 1, 2}) {  // full-row draws; top-k draws; both in the same passes
    SCOPED_TRACE("kind " + std::to_string(kind));
    std::vector<Arrival> a;
    for (int i = 0; i < 9; ++i) {
      GenerationRequest r = Greedy(Prompt(10 + 4 * i, 400 + i, Vocab()), 24);
      r.sampling.temperature = i % 3 == 0 ? 0.0f : 0.6f + 0.2f * static_cast<float>(i % 4);
      r.sampling.top_k = kind == 0 ? 0 : kind == 1 ? 40 : (i % 2 == 1 ? 40 : 0);
      r.sampling.repeat_penalty = i % 2 == 0 ? 1.3f : 1.0f;
      r.sampling.frequency_penalty = i % 3 == 1 ? 0.4f : 0.0f;
      r.sampling.presence_penalty = i % 4 == 2 ? 0.3f : 0.1f;
      r.sampling.penalty_last_n = last_ns[i % 3];
      r.sampling.seed = 2000 + static_cast<uint64_t>(i);
      if (i % 3 != 2) {
        const int32_t favoured = r.prompt[static_cast<size_t>(i)], banned = r.prompt[0];
        r.sampling.logit_bias = {{favoured, 1.5f}, {banned, -INFINITY}, {favoured, 0.25f}};
      }
      a.push_back({i % 2, r});
    }
    GenerationRequest biased = Greedy(Prompt(11, 450, Vocab()), 10);  // greedy, a bias alone
    biased.sampling.logit_bias = {{42, 100.0f}};
    a.push_back({0, biased});
    a.push_back({0, Greedy(Prompt(15, 500, Vocab()), 60)});  // neither; runs on alone at the end
    const RunResult r = ExpectSameAsUnpipelined(EngineSetup{}, a, {});
    EXPECT_EQ(r.stats.host_sampled_rows, 0);
    EXPECT_EQ(r.outcomes[9].tokens.at(0), std::vector<int32_t>(10, 42));
  }
}

// Logit bias alone depends on no token: greedy and full-row draws with a bias (bans, a token
// listed twice) run in queued passes and give the host Sampler's tokens.
TEST(EnginePipelineTest, PassesWithBiasAloneAreQueued) {
  std::vector<Arrival> a;
  for (int i = 0; i < 6; ++i) {
    GenerationRequest r = Greedy(Prompt(12 + 5 * i, 700 + i, Vocab()), 28);
    r.sampling.temperature = i % 2 == 0 ? 0.0f : 0.9f;
    r.sampling.top_p = i % 3 == 1 ? 0.8f : 1.0f;
    r.sampling.seed = 4000 + static_cast<uint64_t>(i);
    const int32_t favoured = r.prompt[static_cast<size_t>(i) + 1], banned = r.prompt[0];
    r.sampling.logit_bias = {{favoured, 2.0f}, {banned, -INFINITY}, {favoured, 0.5f}};
    a.push_back({i % 2, r});
  }
  const RunResult r = ExpectSameAsUnpipelined(EngineSetup{}, a, {});
  EXPECT_GE(r.stats.queued_steps, 20);  // every decode step of the ~28
  EXPECT_EQ(r.stats.host_sampled_rows, 0);
}

// Logprobs and top logprobs without the rows on the host (RowLogprobStats, the candidates):
// greedy, top-k and full-row requests, some with penalties, asking for logprobs and 0-5 top
// logprobs, get the host Sampler's tokens, and logprobs and top lists equal to its report
// (the log-normalizer's double sum runs in another order on a device: within 1e-5).
TEST(EnginePipelineTest, LogprobsFromTheDeviceMatchTheHostReport) {
  const int top_ks[] = {0, 40, 0};
  std::vector<Arrival> a;
  for (int i = 0; i < 9; ++i) {
    GenerationRequest r = Greedy(Prompt(12 + 3 * i, 600 + i, Vocab()), 20);
    r.sampling.temperature = i % 3 == 2 ? 0.0f : 0.9f;
    r.sampling.top_k = top_ks[i % 3];
    r.sampling.logprobs = true;
    r.sampling.n_probs = i % 6;
    if (i % 4 == 1) r.sampling.repeat_penalty = 1.2f;
    r.sampling.seed = 3000 + static_cast<uint64_t>(i);
    a.push_back({i % 2, r});
  }
  // The reference: sampled on the host (HERD_DEVICE_ARGMAX=0 keeps a GPU backend's rows there too).
  setenv("HERD_DEVICE_ARGMAX", "0", 1);
  const RunResult plain = RunWorkload(EngineSetup{}, EngineOptions::Pipeline::kOff, a);
  unsetenv("HERD_DEVICE_ARGMAX");
  const RunResult piped = RunWorkload(EngineSetup{}, EngineOptions::Pipeline::kOn, a);
  EXPECT_EQ(piped.stats.host_sampled_rows, 0);
  EXPECT_GT(plain.stats.host_sampled_rows, 0);
  for (size_t i = 0; i < a.size(); ++i) {
    ExpectSame(piped.outcomes[i], plain.outcomes[i], i);
    const auto& want = plain.outcomes[i].logprobs.at(0);
    const auto& got = piped.outcomes[i].logprobs.at(0);
    ASSERT_EQ(got.size(), want.size()) << "request " << i;
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_FALSE(std::isnan(want[k])) << "request " << i;
      EXPECT_NEAR(got[k], want[k], 1e-5) << "request " << i << " token " << k;
      const auto& wt = plain.outcomes[i].tops.at(0)[k];
      const auto& gt = piped.outcomes[i].tops.at(0)[k];
      ASSERT_EQ(gt.size(), wt.size()) << "request " << i << " token " << k;
      EXPECT_EQ(wt.size(), static_cast<size_t>(a[i].request.sampling.n_probs));
      for (size_t j = 0; j < wt.size(); ++j) {
        EXPECT_EQ(gt[j].id, wt[j].id) << "request " << i << " token " << k;
        EXPECT_NEAR(gt[j].logprob, wt[j].logprob, 1e-5) << "request " << i << " token " << k;
      }
    }
  }
}

}  // namespace
}  // namespace herd
