// The batching engine end to end on a small random-weight model: every sequence's greedy output
// in a batch equals its output alone, across chunked prefill, preemption and recompute,
// prefix-cache hits and n > 1; cancellation, limits, stop strings; a randomized stress test
// with invariants checked after every step.
//
// The reference backend computes every token's row independently of the batch it is in, so
// "equal to alone" is exact here. (The SIMD backend switches kernels with the batch size:
// there, batched and alone logits differ in the last bits; see docs/ARCHITECTURE.md.)
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <thread>

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

void RunToIdle(Engine& e, int64_t* steps = nullptr) {
  int64_t n = 0;
  while (e.Busy()) {
    e.Step();
    e.CheckInvariants();
    ASSERT_LT(++n, 100000) << "engine does not finish";
  }
  if (steps) *steps = n;
}

// Each request run alone on a fresh engine (no prefix cache): the ground truth.
std::vector<Outcome> Alone(const std::vector<GenerationRequest>& reqs) {
  std::vector<Outcome> out;
  for (const auto& r : reqs) {
    EngineSetup s;
    s.prefix_caching = false;
    Fixture f = Make(s);
    auto stream = f.engine->Submit(r);
    EXPECT_TRUE(stream.ok()) << stream.status().ToString();
    RunToIdle(*f.engine);
    out.push_back(Drain(**stream));
  }
  return out;
}

std::vector<Outcome> Together(Engine& e, const std::vector<GenerationRequest>& reqs) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& r : reqs) {
    auto s = e.Submit(r);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    streams.push_back(*s);
  }
  RunToIdle(e);
  std::vector<Outcome> out;
  for (auto& s : streams) out.push_back(Drain(*s));
  return out;
}

void ExpectSameTokens(const std::vector<Outcome>& got, const std::vector<Outcome>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].tokens, want[i].tokens) << "request " << i;
  }
}

int32_t Vocab() {
  static const int32_t n = Make(EngineSetup{}).model->config().n_vocab;
  return n;
}

TEST(EngineTest, BatchedGreedyEqualsAloneAcrossChunkedPrefill) {
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(Greedy(Prompt(20 + 37 * i, i, Vocab()), 12 + i));
  const auto alone = Alone(reqs);
  EngineSetup s;
  s.max_batch_tokens = 40;  // prompts of up to 205 tokens go in chunks, mixed with decode tokens
  Fixture f = Make(s);
  const auto together = Together(*f.engine, reqs);
  ExpectSameTokens(together, alone);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(together[i].tokens.at(0).size(), static_cast<size_t>(reqs[i].max_tokens));
    EXPECT_EQ(together[i].finish.at(0).finish, FinishReason::kLength);
    EXPECT_EQ(together[i].finish.at(0).usage.completion_tokens, reqs[i].max_tokens);
    EXPECT_EQ(together[i].finish.at(0).usage.prompt_tokens, static_cast<int32_t>(reqs[i].prompt.size()));
    EXPECT_EQ(together[i].text.at(0), alone[i].text.at(0));
  }
  const EngineStats st = f.engine->stats();
  EXPECT_EQ(st.free_blocks, 64);  // everything released (cached blocks count as free)
  EXPECT_EQ(st.requests_finished, 6);
}

TEST(EngineTest, PreemptionAndRecomputeKeepOutputsExact) {
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 5; ++i) reqs.push_back(Greedy(Prompt(30 + 11 * i, 100 + i, Vocab()), 40));
  const auto alone = Alone(reqs);
  EngineSetup s;
  s.n_blocks = 12;  // 192 token slots for 5 sequences of ~70-110 tokens: must preempt
  s.block_size = 16;
  Fixture f = Make(s);
  const auto together = Together(*f.engine, reqs);
  ExpectSameTokens(together, alone);
  EXPECT_GT(f.engine->stats().preemptions, 0);
}

TEST(EngineTest, PrefixCacheHitsSkipComputeAndKeepOutputsExact) {
  const auto shared = Prompt(100, 7, Vocab());
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 4; ++i) {
    auto p = shared;
    const auto tail = Prompt(5 + i, 50 + i, Vocab());
    p.insert(p.end(), tail.begin(), tail.end());
    reqs.push_back(Greedy(p, 10));
  }
  const auto alone = Alone(reqs);
  Fixture f = Make(EngineSetup{});
  // The first request warms the cache; the rest reuse its 6 full blocks (96 tokens).
  auto first = Together(*f.engine, {reqs[0]});
  EXPECT_EQ(first[0].finish.at(0).usage.cached_tokens, 0);
  const int64_t computed_before = f.engine->stats().prompt_tokens_computed;
  auto rest = Together(*f.engine, {reqs[1], reqs[2], reqs[3]});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(rest[static_cast<size_t>(i)].finish.at(0).usage.cached_tokens, 96);
    EXPECT_EQ(rest[static_cast<size_t>(i)].tokens, alone[static_cast<size_t>(i + 1)].tokens);
  }
  EXPECT_EQ(first[0].tokens, alone[0].tokens);
  EXPECT_EQ(f.engine->stats().prompt_tokens_computed - computed_before, 10 + 11 + 12);  // 106..108 - 96
  EXPECT_EQ(f.engine->stats().prefix.hit_tokens, 3 * 96);
}

TEST(EngineTest, NChoicesShareThePromptAndEachMatchesItsOwnSeed) {
  GenerationRequest r;
  r.prompt = Prompt(40, 3, Vocab());  // 2.5 blocks: the partial third block is shared, then copied
  r.sampling.temperature = 0.9f;
  r.sampling.seed = 1000;
  r.max_tokens = 15;
  r.ignore_eos = true;
  r.n = 3;
  std::vector<GenerationRequest> singles;
  for (int i = 0; i < 3; ++i) {
    GenerationRequest one = r;
    one.n = 1;
    one.sampling.seed = 1000 + static_cast<uint64_t>(i);
    singles.push_back(one);
  }
  const auto alone = Alone(singles);
  Fixture f = Make(EngineSetup{});
  const auto got = Together(*f.engine, {r});
  ASSERT_EQ(got[0].tokens.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got[0].tokens.at(i), alone[static_cast<size_t>(i)].tokens.at(0)) << "choice " << i;
    EXPECT_EQ(got[0].finish.at(i).usage.completion_tokens, 15);
  }
  EXPECT_NE(got[0].tokens.at(0), got[0].tokens.at(1));      // different seeds, different samples
  EXPECT_EQ(f.engine->stats().prompt_tokens_computed, 40);  // the prompt ran once
}

// Sampling from the device's top-k candidates (ModelRunner on a GPU backend: every row greedy or
// a top_k <= 64 draw) gives the tokens of sampling the whole row (HERD_DEVICE_ARGMAX=0 copies the
// logits). Meaningful with HERD_TEST_DEVICE=cuda; on host backends both runs copy logits.
TEST(EngineTest, TopKDrawsFromDeviceCandidatesMatchTheWholeRow) {
  ASSERT_GT(Vocab(), 64);  // top_k 64 < n_vocab: every request qualifies for the device path
  std::vector<GenerationRequest> reqs;
  const int top_ks[] = {40, 1, 64, 7};
  for (int i = 0; i < 4; ++i) {
    GenerationRequest r;
    r.prompt = Prompt(20 + 7 * i, 50 + i, Vocab());
    r.sampling.temperature = 0.5f + 0.3f * static_cast<float>(i);
    r.sampling.top_k = top_ks[i];
    r.sampling.top_p = i == 2 ? 0.9f : 1.0f;
    r.sampling.min_p = i == 3 ? 0.05f : 0.0f;
    r.sampling.seed = 70 + static_cast<uint64_t>(i);
    r.max_tokens = 24;
    r.ignore_eos = true;
    reqs.push_back(r);
  }
  reqs.push_back(Greedy(Prompt(33, 60, Vocab()), 24));  // greedy rows ride along (first candidate)
  Fixture device = Make(EngineSetup{});
  const auto got = Together(*device.engine, reqs);
  setenv("HERD_DEVICE_ARGMAX", "0", 1);
  Fixture host = Make(EngineSetup{});
  unsetenv("HERD_DEVICE_ARGMAX");
  const auto want = Together(*host.engine, reqs);
  ExpectSameTokens(got, want);
  for (const auto& o : got) EXPECT_EQ(o.tokens.at(0).size(), 24u);
}

// Rows sampled on the host (penalties, logit bias, typical-p, logprobs: nothing a device path
// takes) are drawn on several threads (EngineOptions::sampling_threads): the same tokens and
// logprobs as on one thread, whatever the interleaving.
TEST(EngineTest, HostSamplingOnThreadsGivesTheTokensOfOneThread) {
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 12; ++i) {
    GenerationRequest r;
    r.prompt = Prompt(12 + 5 * i, 90 + i, Vocab());
    r.sampling.temperature = 0.4f + 0.2f * static_cast<float>(i % 5);
    r.sampling.seed = 500 + static_cast<uint64_t>(i);
    if (i % 4 == 0) r.sampling.repeat_penalty = 1.3f;
    if (i % 4 == 1) r.sampling.logit_bias = {{static_cast<int32_t>(i), 2.0f}};
    if (i % 4 == 2) r.sampling.typical_p = 0.8f;
    if (i % 4 == 3) r.sampling.presence_penalty = 0.5f;
    if (i % 3 == 0) r.sampling.logprobs = true, r.sampling.n_probs = 3;
    r.max_tokens = 20;
    r.ignore_eos = true;
    reqs.push_back(r);
  }
  EngineSetup one;
  one.sampling_threads = 1;
  EngineSetup four;
  four.sampling_threads = 4;
  Fixture a = Make(one), b = Make(four);
  const auto want = Together(*a.engine, reqs);
  const auto got = Together(*b.engine, reqs);
  ExpectSameTokens(got, want);
  for (size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_EQ(got[i].logprobs.size(), want[i].logprobs.size()) << "request " << i;
    for (const auto& [index, lp] : want[i].logprobs) {
      const std::vector<float>& g = got[i].logprobs.at(index);
      ASSERT_EQ(g.size(), lp.size()) << "request " << i;
      for (size_t k = 0; k < lp.size(); ++k) {
        // Bit for bit (NaN where not requested).
        EXPECT_TRUE(std::memcmp(&g[k], &lp[k], sizeof(float)) == 0) << "request " << i << " token " << k;
      }
      if (i % 3 == 0) {
        EXPECT_FALSE(std::isnan(lp.at(0))) << "request " << i;  // logprobs were on
      }
    }
  }
}

TEST(EngineTest, GreedyNChoicesAreIdentical) {
  GenerationRequest r = Greedy(Prompt(33, 4, Vocab()), 8);
  r.n = 4;
  const auto alone = Alone({Greedy(Prompt(33, 4, Vocab()), 8)});
  Fixture f = Make(EngineSetup{});
  const auto got = Together(*f.engine, {r});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got[0].tokens.at(i), alone[0].tokens.at(0));
}

TEST(EngineTest, CancelFreesBlocksBeforeTheNextStep) {
  Fixture f = Make(EngineSetup{});
  auto a = f.engine->Submit(Greedy(Prompt(50, 1, Vocab()), 100));
  auto b = f.engine->Submit(Greedy(Prompt(60, 2, Vocab()), 20));
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 5; ++i) f.engine->Step();
  const int32_t free_before = f.engine->kv().free_blocks();
  f.engine->Cancel((*a)->id());
  f.engine->Step();
  EXPECT_GE(f.engine->kv().free_blocks(), free_before + 3);  // a's 4 blocks back (b may have grown one)
  RunToIdle(*f.engine);
  const Outcome oa = Drain(**a), ob = Drain(**b);
  EXPECT_EQ(oa.finish.at(0).finish, FinishReason::kCancelled);
  EXPECT_LT(oa.tokens.at(0).size(), 100u);
  EXPECT_EQ(ob.finish.at(0).finish, FinishReason::kLength);
  EXPECT_EQ(ob.tokens.at(0), Alone({Greedy(Prompt(60, 2, Vocab()), 20)})[0].tokens.at(0));
  f.engine->Cancel(12345);  // unknown ids are ignored
  f.engine->Step();
}

TEST(EngineTest, StopStringsEndTheTextAcrossTokens) {
  auto base = Alone({Greedy(Prompt(20, 9, Vocab()), 30)})[0];
  const std::string text = base.text.at(0);
  ASSERT_GT(text.size(), 12u);
  // A stop string taken from the middle of the greedy text: the output is the text before it.
  const std::string stop = text.substr(text.size() / 2, 5);
  const size_t at = text.find(stop);
  GenerationRequest r = Greedy(Prompt(20, 9, Vocab()), 30);
  r.stop = {stop, "never-there"};
  Fixture f = Make(EngineSetup{});
  const auto got = Together(*f.engine, {r})[0];
  EXPECT_EQ(got.text.at(0), text.substr(0, at));
  EXPECT_EQ(got.finish.at(0).finish, FinishReason::kStop);
  EXPECT_EQ(got.finish.at(0).stop_string, stop);
  EXPECT_LT(got.tokens.at(0).size(), 30u);
}

TEST(EngineTest, EndOfGenerationTokensStopUnlessIgnored) {
  // Ban everything but one end-of-generation token: the first sample is it.
  Fixture f = Make(EngineSetup{});
  const int32_t eos = f.tokenizer->vocab().eog.at(0);
  GenerationRequest r = Greedy(Prompt(10, 1, Vocab()), 5);
  r.ignore_eos = false;
  r.sampling.logit_bias = {{eos, 1000.0f}};
  auto got = Together(*f.engine, {r})[0];
  EXPECT_TRUE(got.tokens[0].empty());  // the end token is not streamed
  EXPECT_EQ(got.finish.at(0).finish, FinishReason::kStop);
  EXPECT_EQ(got.finish.at(0).usage.completion_tokens, 1);
  r.ignore_eos = true;
  got = Together(*f.engine, {r})[0];
  EXPECT_EQ(got.tokens.at(0), std::vector<int32_t>(5, eos));
  EXPECT_EQ(got.finish.at(0).finish, FinishReason::kLength);
}

TEST(EngineTest, LimitsAreClearErrors) {
  EngineSetup s;
  s.n_ctx = 100;
  s.n_blocks = 4;  // 64 token slots
  s.max_running = 1;
  s.max_waiting = 1;
  Fixture f = Make(s);
  EXPECT_EQ(f.engine->Submit(Greedy({}, 5)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.engine->Submit(Greedy({Vocab()}, 5)).status().code(), StatusCode::kInvalidArgument);
  auto too_long = f.engine->Submit(Greedy(Prompt(90, 1, Vocab()), 20));
  EXPECT_EQ(too_long.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(too_long.status().message().find("context length (100)"), std::string::npos);
  auto pool = f.engine->Submit(Greedy(Prompt(60, 1, Vocab()), 20));  // fits 100, not 64 slots
  EXPECT_EQ(pool.status().code(), StatusCode::kInvalidArgument);
  GenerationRequest bad = Greedy(Prompt(5, 1, Vocab()), 5);
  bad.sampling.top_p = 2.0f;
  EXPECT_EQ(f.engine->Submit(bad).status().code(), StatusCode::kInvalidArgument);
  // Truncation keeps the first `keep` and the latest tokens.
  GenerationRequest t = Greedy(Prompt(90, 1, Vocab()), 20);
  t.truncate = true;
  t.truncate_keep = 4;
  s.n_blocks = 16;
  Fixture g = Make(s);
  auto ts = g.engine->Submit(t);
  ASSERT_TRUE(ts.ok()) << ts.status().ToString();
  RunToIdle(*g.engine);
  EXPECT_EQ(Drain(**ts).finish.at(0).usage.prompt_tokens, 80);
  // Overload: one running + one waiting, the third is refused.
  auto a = g.engine->Submit(Greedy(Prompt(5, 1, Vocab()), 5));
  auto b = g.engine->Submit(Greedy(Prompt(5, 2, Vocab()), 5));
  auto c = g.engine->Submit(Greedy(Prompt(5, 3, Vocab()), 5));
  EXPECT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("overloaded"), std::string::npos);
  RunToIdle(*g.engine);
  EXPECT_TRUE(g.engine->Submit(Greedy(Prompt(5, 3, Vocab()), 5)).ok());  // room again
  RunToIdle(*g.engine);
}

TEST(EngineTest, HigherPriorityRunsFirst) {
  EngineSetup s;
  s.max_running = 1;
  Fixture f = Make(s);
  auto low = f.engine->Submit(Greedy(Prompt(5, 1, Vocab()), 3));
  GenerationRequest hi = Greedy(Prompt(5, 2, Vocab()), 3);
  hi.priority = 5;
  auto high = f.engine->Submit(hi);
  RunToIdle(*f.engine);
  // The low-priority request starts only when the high one has nothing left to compute (with
  // pipelined decoding that is while the high one's last token is still on the device) and
  // streams its first token after the high one has finished.
  const RequestTimings h = Drain(**high).finish.at(0).timings, l = Drain(**low).finish.at(0).timings;
  EXPECT_LT(h.first_token, l.first_scheduled);
  EXPECT_LE(h.finished, l.first_token);
}

TEST(EngineTest, PinsKeepAPrefixCachedUnderPressure) {
  EngineSetup s;
  s.n_blocks = 16;
  Fixture f = Make(s);
  GenerationRequest r = Greedy(Prompt(70, 5, Vocab()), 2);
  r.pins = {{64, std::chrono::seconds(300)}};
  Together(*f.engine, {r});
  EXPECT_EQ(f.engine->kv().pinned_blocks(), 4);
  // Fill the pool with other prompts: the pinned prefix survives.
  for (int i = 0; i < 4; ++i) Together(*f.engine, {Greedy(Prompt(100, 60 + i, Vocab()), 2)});
  GenerationRequest again = Greedy(Prompt(70, 5, Vocab()), 2);
  EXPECT_EQ(Together(*f.engine, {again})[0].finish.at(0).usage.cached_tokens, 64);
}

TEST(EngineTest, RandomizedStressKeepsInvariantsAndFinishesEverything) {
  EngineSetup s;
  s.n_blocks = 20;
  s.block_size = 8;
  s.max_batch_tokens = 48;
  s.max_running = 6;
  Fixture f = Make(s);
  std::mt19937 rng(7);
  const auto shared = Prompt(24, 99, Vocab());
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int step = 0; step < 600; ++step) {
    if (rng() % 3 == 0 && streams.size() < 80) {
      auto p = rng() % 2 ? shared : std::vector<int32_t>{};
      const auto tail = Prompt(1 + static_cast<int>(rng() % 40), static_cast<int>(rng()), Vocab());
      p.insert(p.end(), tail.begin(), tail.end());
      GenerationRequest r = Greedy(p, 1 + static_cast<int32_t>(rng() % 30));
      r.n = 1 + static_cast<int32_t>(rng() % 3);
      if (rng() % 2) r.sampling.temperature = 0.7f;
      auto st = f.engine->Submit(r);
      if (st.ok()) streams.push_back(*st);
    }
    if (rng() % 10 == 0 && !streams.empty()) f.engine->Cancel(streams[rng() % streams.size()]->id());
    f.engine->Step();
    f.engine->CheckInvariants();
  }
  RunToIdle(*f.engine);
  for (auto& st : streams) {
    const Outcome o = Drain(*st);
    EXPECT_FALSE(o.finish.empty());
    for (const auto& [index, ev] : o.finish) {
      if (ev.finish != FinishReason::kCancelled) {
        EXPECT_EQ(ev.usage.completion_tokens,
                  static_cast<int32_t>(o.tokens.count(index) ? o.tokens.at(index).size() : 0));
      }
    }
  }
  EXPECT_EQ(f.engine->kv().free_blocks(), 20);
  EXPECT_GT(f.engine->stats().preemptions, 0);
  EXPECT_GT(f.engine->stats().prefix.hit_tokens, 0);
}

TEST(EngineTest, ThreadedSubmittersGetTheSameTokensAsAlone) {
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(Greedy(Prompt(10 + 9 * i, 300 + i, Vocab()), 10));
  const auto alone = Alone(reqs);
  Fixture f = Make(EngineSetup{});
  f.engine->Start();
  std::vector<std::vector<int32_t>> got(reqs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < reqs.size(); ++i) {
    threads.emplace_back([&, i] {
      auto s = f.engine->Submit(reqs[i]);
      ASSERT_TRUE(s.ok());
      EngineEvent ev;
      while ((*s)->Next(&ev)) {
        if (ev.kind == EngineEvent::Kind::kToken) got[i].push_back(ev.token);
      }
    });
  }
  for (auto& t : threads) t.join();
  f.engine->Stop();
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(got[i], alone[i].tokens.at(0));
}

TEST(EngineTest, IdenticalGreedyRequestsCoalesceIntoOneComputation) {
  const auto alone = Alone({Greedy(Prompt(40, 11, Vocab()), 12)});
  Fixture f = Make(EngineSetup{});
  auto a = f.engine->Submit(Greedy(Prompt(40, 11, Vocab()), 12));
  auto b = f.engine->Submit(Greedy(Prompt(40, 11, Vocab()), 12));
  GenerationRequest sampled = Greedy(Prompt(40, 11, Vocab()), 12);
  sampled.sampling.temperature = 0.5f;  // not greedy: never coalesced
  auto c = f.engine->Submit(sampled);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  for (int i = 0; i < 4; ++i) f.engine->Step();
  auto late = f.engine->Submit(Greedy(Prompt(40, 11, Vocab()), 12));  // joins mid-generation: replay
  auto cancelled = f.engine->Submit(Greedy(Prompt(40, 11, Vocab()), 12));
  ASSERT_TRUE(late.ok() && cancelled.ok());
  f.engine->Step();
  f.engine->Cancel((*cancelled)->id());  // leaves alone; the others go on
  RunToIdle(*f.engine);
  EXPECT_EQ(f.engine->stats().coalesced, 3);
  for (auto* s : {&a, &b, &late}) {
    const Outcome o = Drain(***s);
    EXPECT_EQ(o.tokens.at(0), alone[0].tokens.at(0));
    EXPECT_EQ(o.finish.at(0).finish, FinishReason::kLength);
  }
  EXPECT_EQ(Drain(**cancelled).finish.at(0).finish, FinishReason::kCancelled);
  // The prompt ran twice: once for the coalesced group, once for the sampled request (admitted
  // in the same step, before the group's blocks were committed to the prefix cache).
  EXPECT_EQ(f.engine->stats().prompt_tokens_computed, 40 + 40);
  EXPECT_EQ(f.engine->kv().free_blocks(), 64);
}

TEST(EngineTest, CancellingEveryCoalescedSubscriberStopsTheComputation) {
  Fixture f = Make(EngineSetup{});
  auto a = f.engine->Submit(Greedy(Prompt(20, 12, Vocab()), 200));
  auto b = f.engine->Submit(Greedy(Prompt(20, 12, Vocab()), 200));
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 3; ++i) f.engine->Step();
  f.engine->Cancel((*a)->id());
  f.engine->Cancel((*b)->id());
  f.engine->Step();
  EXPECT_FALSE(f.engine->Busy());
  EXPECT_EQ(Drain(**a).finish.at(0).finish, FinishReason::kCancelled);
  EXPECT_EQ(Drain(**b).finish.at(0).finish, FinishReason::kCancelled);
  EXPECT_EQ(f.engine->kv().free_blocks(), 64);
}

}  // namespace
}  // namespace herd
