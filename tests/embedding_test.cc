// Embeddings through the engine: the pooled vector equals one computed here from a direct,
// single-sequence Model::Embed over the whole prompt, for prompts longer than one chunk while
// generation requests share the steps; the generation requests' outputs are unchanged by it;
// pooling kinds, truncation, limits, cancellation and preemption.
//
// The reference backend computes every row independently of the batch, so "equal" is exact up
// to the float rounding of the pooling itself (bounded at 1e-6 below).
#include "engine/embedding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string_view>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace herd {
namespace {

using testing::EngineSetup;
using testing::Fixture;
using testing::Greedy;
using testing::Make;
using testing::Prompt;

// Hidden states of every position of `prompt` ([n, n_embd]) from one Embed call on a fresh cache.
std::vector<float> DirectHidden(const std::vector<int32_t>& prompt) {
  auto file = std::move(GgufFile::Open(testing::TestModelPath("tiny", "F32"))).value();
  auto backend = MakeReferenceBackend();
  auto model = std::move(LoadModel(*file, backend.get())).value();
  const ModelConfig& c = model->config();
  const int32_t block = 16;
  const int32_t n = static_cast<int32_t>(prompt.size());
  KvCacheConfig kc{c.n_layer, c.n_head_kv, c.head_dim, block, (n + block - 1) / block, DType::kF16};
  auto cache = std::move(KvCache::Create(backend.get(), kc)).value();
  ForwardBatch b;
  b.tokens = prompt;
  b.block_tables.emplace_back();
  for (int32_t i = 0; i < kc.n_blocks; ++i) b.block_tables[0].push_back(i);
  for (int32_t p = 0; p < n; ++p) {
    b.pos.push_back(p);
    b.seq.push_back(0);
    b.logit_rows.push_back(p);
  }
  std::vector<float> hidden(static_cast<size_t>(n) * c.n_embd);
  const Status st = model->Embed(b, cache->layers(), hidden.data());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return hidden;
}

std::vector<double> Normalized(std::vector<double> v) {
  double norm = 0;
  for (double x : v) norm += x * x;
  norm = std::sqrt(norm);
  for (double& x : v) x /= norm;
  return v;
}

// The expected vector: mean of all rows, or one row, L2-normalized.
std::vector<double> Expected(const std::vector<float>& hidden, int32_t n_embd, Pooling pooling) {
  const int32_t n = static_cast<int32_t>(hidden.size()) / n_embd;
  std::vector<double> v(static_cast<size_t>(n_embd), 0.0);
  if (pooling == Pooling::kMean) {
    for (int32_t r = 0; r < n; ++r) {
      for (int32_t j = 0; j < n_embd; ++j) v[j] += hidden[static_cast<size_t>(r) * n_embd + j];
    }
    for (double& x : v) x /= n;
  } else {
    const int32_t r = pooling == Pooling::kCls ? 0 : n - 1;
    for (int32_t j = 0; j < n_embd; ++j) v[j] = hidden[static_cast<size_t>(r) * n_embd + j];
  }
  return Normalized(v);
}

void RunToIdle(Engine& e) {
  int64_t n = 0;
  while (e.Busy()) {
    e.Step();
    e.CheckInvariants();
    ASSERT_LT(++n, 100000) << "engine does not finish";
  }
}

// The single finished event of an embedding stream.
EngineEvent Finished(RequestStream& s) {
  EngineEvent ev, last;
  int n = 0;
  while (s.TryNext(&ev)) {
    EXPECT_EQ(ev.kind, EngineEvent::Kind::kFinished);
    last = ev;
    ++n;
  }
  EXPECT_EQ(n, 1);
  EXPECT_TRUE(s.ended());
  return last;
}

std::vector<int32_t> Tokens(RequestStream& s) {
  std::vector<int32_t> out;
  EngineEvent ev;
  while (s.TryNext(&ev)) {
    if (ev.kind == EngineEvent::Kind::kToken) out.push_back(ev.token);
  }
  return out;
}

// The reference backend sums in the same order however the prompt is chunked (1e-6). With
// HERD_TEST_DEVICE=cuda the engine runs on the GPU while DirectHidden stays on the reference
// backend: the GPU's tensor-core prefill attention rounds q and the softmax weights to f16
// (~1e-3 relative per row, see bench/results/cuda-attention-2026-11-22.md), so 1e-3 (of the unit
// vector, or of 1 + |value| for raw means; measured: ≤ 3e-4).
double Tolerance() {
  const char* device = std::getenv("HERD_TEST_DEVICE");
  return device != nullptr && std::string_view(device).starts_with("cuda") ? 1e-3 : 1e-6;
}

void ExpectVector(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  const double tol = Tolerance();
  double norm = 0;
  for (size_t j = 0; j < got.size(); ++j) {
    EXPECT_NEAR(got[j], want[j], tol) << "dimension " << j;
    norm += static_cast<double>(got[j]) * got[j];
  }
  EXPECT_NEAR(norm, 1.0, 1e-5);
}

TEST(EmbeddingEngineTest, LongPromptAmidGenerationEqualsDirectEmbed) {
  EngineSetup s;
  s.max_batch_tokens = 24;  // the 150-token prompt takes 7+ steps, sharing them with decoders
  Fixture f = Make(s);
  const int32_t n_vocab = f.model->config().n_vocab;
  const int32_t n_embd = f.model->config().n_embd;
  const std::vector<int32_t> prompt = Prompt(150, 7, n_vocab);
  const std::vector<GenerationRequest> gen = {Greedy(Prompt(20, 1, n_vocab), 12), Greedy(Prompt(35, 2, n_vocab), 9)};

  // Generation alone (the ground truth for "the embedding does not disturb it").
  std::vector<std::vector<int32_t>> alone;
  {
    Fixture g = Make(s);
    for (const auto& r : gen) {
      auto st = g.engine->Submit(r);
      ASSERT_TRUE(st.ok());
      RunToIdle(*g.engine);
      alone.push_back(Tokens(**st));
    }
  }

  auto g0 = f.engine->Submit(gen[0]);
  ASSERT_TRUE(g0.ok());
  f.engine->Step();  // generation is already decoding when the embedding arrives
  auto emb = f.engine->SubmitEmbedding({prompt, Pooling::kMean});
  ASSERT_TRUE(emb.ok()) << emb.status().ToString();
  auto g1 = f.engine->Submit(gen[1]);
  ASSERT_TRUE(g1.ok());
  RunToIdle(*f.engine);

  const EngineEvent done = Finished(**emb);
  EXPECT_EQ(done.finish, FinishReason::kStop);
  EXPECT_EQ(done.usage.prompt_tokens, 150);
  EXPECT_EQ(done.usage.completion_tokens, 0);
  ExpectVector(done.embedding, Expected(DirectHidden(prompt), n_embd, Pooling::kMean));
  EXPECT_EQ(Tokens(**g0), alone[0]);
  EXPECT_EQ(Tokens(**g1), alone[1]);
  // Its blocks are freed, not cached: only the generation prompts' full blocks stay in the index.
  EXPECT_EQ(f.engine->kv().free_blocks(), s.n_blocks);
  EXPECT_EQ(f.engine->stats().prefix.hit_tokens, 0);
}

TEST(EmbeddingEngineTest, PoolingKinds) {
  EngineSetup s;
  s.max_batch_tokens = 16;
  Fixture f = Make(s);
  const int32_t n_embd = f.model->config().n_embd;
  const std::vector<int32_t> prompt = Prompt(40, 3, f.model->config().n_vocab);
  const std::vector<float> hidden = DirectHidden(prompt);
  std::map<Pooling, std::vector<float>> got;
  for (Pooling p : {Pooling::kMean, Pooling::kLast, Pooling::kCls}) {
    auto st = f.engine->SubmitEmbedding({prompt, p});
    ASSERT_TRUE(st.ok());
    RunToIdle(*f.engine);
    got[p] = Finished(**st).embedding;
    ExpectVector(got[p], Expected(hidden, n_embd, p));
  }
  // Different rows pool to different vectors.
  double diff = 0;
  for (int32_t j = 0; j < n_embd; ++j) diff += std::abs(got[Pooling::kMean][j] - got[Pooling::kLast][j]);
  EXPECT_GT(diff, 1e-2);
  // Without normalization: the plain mean.
  EmbeddingRequest raw{prompt, Pooling::kMean};
  raw.normalize = false;
  auto st = f.engine->SubmitEmbedding(raw);
  ASSERT_TRUE(st.ok());
  RunToIdle(*f.engine);
  const std::vector<float> mean = Finished(**st).embedding;
  const int32_t n = static_cast<int32_t>(prompt.size());
  for (int32_t j = 0; j < n_embd; j += 17) {
    double sum = 0;
    for (int32_t r = 0; r < n; ++r) sum += hidden[static_cast<size_t>(r) * n_embd + j];
    EXPECT_NEAR(mean[j], sum / n, Tolerance() * (1 + std::abs(sum / n)));
  }
}

TEST(EmbeddingEngineTest, LimitsTruncationAndCancel) {
  EngineSetup s;
  s.n_ctx = 64;
  s.max_batch_tokens = 16;
  Fixture f = Make(s);
  const int32_t n_vocab = f.model->config().n_vocab;
  const std::vector<int32_t> prompt = Prompt(100, 4, n_vocab);
  auto too_long = f.engine->SubmitEmbedding({prompt, Pooling::kMean});
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(f.engine->SubmitEmbedding({{}, Pooling::kMean}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.engine->SubmitEmbedding({{n_vocab}, Pooling::kMean}).status().code(), StatusCode::kInvalidArgument);

  EmbeddingRequest cut{prompt, Pooling::kMean};
  cut.truncate = true;
  auto truncated = f.engine->SubmitEmbedding(cut);
  ASSERT_TRUE(truncated.ok());
  RunToIdle(*f.engine);
  const EngineEvent done = Finished(**truncated);
  EXPECT_EQ(done.usage.prompt_tokens, 64);
  const std::vector<int32_t> head(prompt.begin(), prompt.begin() + 64);
  ExpectVector(done.embedding, Expected(DirectHidden(head), f.model->config().n_embd, Pooling::kMean));

  auto cancelled = f.engine->SubmitEmbedding({head, Pooling::kMean});
  ASSERT_TRUE(cancelled.ok());
  f.engine->Step();  // the first chunk runs
  f.engine->Cancel((*cancelled)->id());
  RunToIdle(*f.engine);
  const EngineEvent c = Finished(**cancelled);
  EXPECT_EQ(c.finish, FinishReason::kCancelled);
  EXPECT_TRUE(c.embedding.empty());
  EXPECT_EQ(f.engine->kv().free_blocks(), s.n_blocks);
}

TEST(EmbeddingEngineTest, PreemptedEmbeddingRestartsItsPooling) {
  // A pool of 10 blocks (160 tokens): two long decoders and a 100-token embedding cannot all
  // fit, so someone is preempted and recomputed; every result must still be exact.
  EngineSetup s;
  s.n_blocks = 10;
  s.max_batch_tokens = 16;
  s.prefix_caching = false;
  Fixture f = Make(s);
  const int32_t n_vocab = f.model->config().n_vocab;
  const std::vector<int32_t> prompt = Prompt(100, 5, n_vocab);
  std::vector<std::shared_ptr<RequestStream>> gen;
  for (int i = 0; i < 2; ++i) {
    auto st = f.engine->Submit(Greedy(Prompt(8, 10 + i, n_vocab), 60));
    ASSERT_TRUE(st.ok());
    gen.push_back(*st);
  }
  for (int i = 0; i < 3; ++i) f.engine->Step();
  EmbeddingRequest req{prompt, Pooling::kMean};
  req.priority = -1;  // the embedding is the preemption victim
  auto emb = f.engine->SubmitEmbedding(req);
  ASSERT_TRUE(emb.ok());
  RunToIdle(*f.engine);
  EXPECT_GT(f.engine->stats().preemptions, 0);
  ExpectVector(Finished(**emb).embedding, Expected(DirectHidden(prompt), f.model->config().n_embd, Pooling::kMean));
}

}  // namespace
}  // namespace herd
