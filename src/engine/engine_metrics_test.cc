// EngineMetrics as the engine records it: counts after a known sequence of requests, driven step
// by step (Engine::Step) on the tiny random test model with the reference backend.
#include "engine/engine_metrics.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/engine.h"
#include "io/gguf.h"
#include "model/test_models.h"

namespace herd {
namespace {

struct Fixture {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<KvCache> cache;
  std::unique_ptr<Engine> engine;
};

constexpr int32_t kBlocks = 32;

Fixture Make(std::shared_ptr<EngineMetrics> metrics = nullptr, int32_t max_running = 64) {
  Fixture f;
  f.file = std::move(GgufFile::Open(testing::TestModelPath("tiny", "F32"))).value();
  f.backend = MakeReferenceBackend();
  f.model = std::move(LoadModel(*f.file, f.backend.get())).value();
  f.tokenizer = std::move(Tokenizer::FromGguf(*f.file)).value();
  const ModelConfig& c = f.model->config();
  KvCacheConfig kc{c.n_layer, c.n_head_kv, c.head_dim, 16, kBlocks, DType::kF16};
  f.cache = std::move(KvCache::Create(f.backend.get(), kc)).value();
  EngineOptions o;
  o.scheduler.max_running = max_running;
  o.n_ctx = 256;
  o.cache_key = "metrics-test";
  o.metrics = std::move(metrics);
  f.engine = std::move(Engine::Create(f.model.get(), f.cache.get(), f.tokenizer.get(), o)).value();
  return f;
}

GenerationRequest Greedy(int32_t first_token, int32_t n_prompt, int32_t max_tokens) {
  GenerationRequest r;
  for (int32_t i = 0; i < n_prompt; ++i) r.prompt.push_back((first_token + 7 * i) % 50 + 1);
  r.sampling.temperature = 0.0f;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

void RunAll(Engine& e) {
  while (e.Busy()) e.Step();
}

TEST(EngineMetricsTest, CountsAfterKnownRequests) {
  Fixture f = Make();
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 3; ++i) streams.push_back(f.engine->Submit(Greedy(i * 3, 20, 5)).value());
  f.engine->Step();
  EngineMetricsSnapshot mid = f.engine->metrics()->Snapshot();
  const EngineStats stats = f.engine->stats();
  EXPECT_EQ(mid.running, stats.running);
  EXPECT_EQ(mid.waiting, stats.waiting);
  EXPECT_EQ(mid.running, 3);
  EXPECT_EQ(mid.total_blocks, kBlocks);
  EXPECT_EQ(mid.used_blocks, stats.total_blocks - stats.free_blocks);
  EXPECT_GT(mid.used_blocks, 0);
  EXPECT_EQ(mid.ttft.count, 3u);  // the whole prompts fit one step: each sampled its first token
  RunAll(*f.engine);

  const EngineMetricsSnapshot s = f.engine->metrics()->Snapshot();
  EXPECT_EQ(s.ttft.count, 3u);
  EXPECT_EQ(s.e2e.count, 3u);
  EXPECT_EQ(s.queue.count, 3u);
  EXPECT_EQ(s.request_tpot.count, 3u);
  EXPECT_EQ(s.itl.count, 3u * 4u);  // 5 tokens each: 4 gaps
  EXPECT_EQ(s.prompt_tokens, 60);
  EXPECT_EQ(s.prompt_tokens_computed, f.engine->stats().prompt_tokens_computed);
  EXPECT_EQ(s.generation_tokens, 15);
  EXPECT_EQ(s.finished[static_cast<size_t>(FinishReason::kLength)], 3);
  EXPECT_EQ(s.finished[static_cast<size_t>(FinishReason::kStop)], 0);
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.waiting, 0);
  EXPECT_EQ(s.used_blocks, 0);  // finished sequences' blocks are cached but free
  EXPECT_EQ(s.prefix_queries, f.engine->stats().prefix.queried_tokens);
  EXPECT_EQ(s.preemptions, 0);
  EXPECT_GE(s.e2e.sum, s.ttft.sum);

  // The same prompt again hits the prefix cache (whole blocks: 16 of its 20 tokens).
  auto again = f.engine->Submit(Greedy(0, 20, 2)).value();
  RunAll(*f.engine);
  const EngineMetricsSnapshot t = f.engine->metrics()->Snapshot();
  EXPECT_EQ(t.prefix_hits, 16);
  EXPECT_EQ(t.prefix_hits, f.engine->stats().prefix.hit_tokens);
  EXPECT_EQ(t.prefix_queries, f.engine->stats().prefix.queried_tokens);
  EXPECT_EQ(t.prompt_tokens, 80);
  EXPECT_EQ(t.e2e.count, 4u);
}

TEST(EngineMetricsTest, CancelledAndEmptyRequestsEnd) {
  Fixture f = Make();
  auto a = f.engine->Submit(Greedy(1, 10, 50)).value();
  f.engine->Step();
  f.engine->Cancel(a->id());
  auto b = f.engine->Submit(Greedy(2, 10, 0)).value();  // max_tokens 0: ends at admission, never scheduled
  RunAll(*f.engine);
  const EngineMetricsSnapshot s = f.engine->metrics()->Snapshot();
  EXPECT_EQ(s.finished[static_cast<size_t>(FinishReason::kCancelled)], 1);
  EXPECT_EQ(s.finished[static_cast<size_t>(FinishReason::kLength)], 1);
  EXPECT_EQ(s.e2e.count, 2u);
  EXPECT_EQ(s.queue.count, 1u);         // b was never scheduled
  EXPECT_EQ(s.ttft.count, 1u);          // only a sampled a token
  EXPECT_EQ(s.request_tpot.count, 0u);  // a made one token
}

TEST(EngineMetricsTest, CountersSurviveTheEngineGaugesDoNot) {
  auto metrics = std::make_shared<EngineMetrics>();
  {
    Fixture f = Make(metrics);
    auto a = f.engine->Submit(Greedy(3, 12, 3)).value();
    RunAll(*f.engine);
    auto b = f.engine->Submit(Greedy(4, 12, 30)).value();
    f.engine->Step();
    EXPECT_EQ(metrics->Snapshot().running, 1);
  }  // the engine goes with b unfinished: b ends as cancelled
  EngineMetricsSnapshot s = metrics->Snapshot();
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.used_blocks, 0);
  EXPECT_EQ(s.total_blocks, 0);
  EXPECT_EQ(s.finished[static_cast<size_t>(FinishReason::kLength)], 1);
  EXPECT_EQ(s.finished[static_cast<size_t>(FinishReason::kCancelled)], 1);
  EXPECT_EQ(s.generation_tokens, 4);  // 3 + b's first
  Fixture g = Make(metrics);          // the model is loaded again
  auto c = g.engine->Submit(Greedy(5, 12, 2)).value();
  RunAll(*g.engine);
  s = metrics->Snapshot();
  EXPECT_EQ(s.generation_tokens, 6);
  EXPECT_EQ(s.e2e.count, 3u);
  EXPECT_EQ(s.total_blocks, kBlocks);
}

TEST(EngineMetricsTest, CompleteWhenTheClientSeesTheEnd) {
  // With the engine on its own thread, a reader that saw its stream end finds its request in
  // the metrics (recorded before the stream closes, not at the end of the step).
  Fixture f = Make();
  f.engine->Start();
  for (int i = 1; i <= 5; ++i) {
    auto stream = f.engine->Submit(Greedy(10 + i, 9, 4)).value();
    EngineEvent ev;
    while (stream->Next(&ev)) {
    }
    const EngineMetricsSnapshot s = f.engine->metrics()->Snapshot();
    EXPECT_EQ(s.e2e.count, static_cast<uint64_t>(i));
    EXPECT_EQ(s.generation_tokens, 4 * i);
    EXPECT_EQ(s.prompt_tokens, 9 * i);
    EXPECT_EQ(s.running, 0);
    EXPECT_EQ(s.used_blocks, 0);
  }
  f.engine->Stop();
}

TEST(EngineMetricsTest, PreemptionsAreCounted) {
  // 32 blocks of 16 tokens; three requests that each grow to 14 blocks cannot all stay.
  Fixture f = Make();
  auto a = f.engine->Submit(Greedy(6, 16, 200)).value();
  auto b = f.engine->Submit(Greedy(7, 16, 200)).value();
  auto c = f.engine->Submit(Greedy(8, 16, 200)).value();
  RunAll(*f.engine);
  const EngineMetricsSnapshot s = f.engine->metrics()->Snapshot();
  EXPECT_EQ(s.preemptions, f.engine->stats().preemptions);
  EXPECT_GT(s.preemptions, 0);
  EXPECT_EQ(s.generation_tokens, 600);
  EXPECT_EQ(s.finished[static_cast<size_t>(FinishReason::kLength)], 3);
}

}  // namespace
}  // namespace herd
