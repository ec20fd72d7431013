// GenerationSession: AppendGreedy and DecodeGreedy (pipelined and one step at a time) return
// what Append's logits give to ArgMax, across a prompt longer than n_batch (chunked) and
// single-token steps fed back.
#include "engine/generation_session.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "io/gguf.h"
#include "kernels/backend.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "model/test_models.h"
#include "sampling/sampler.h"

namespace herd {
namespace {

TEST(GenerationSessionTest, AppendGreedyMatchesArgMaxOfLogits) {
  auto file = GgufFile::Open(testing::TestModelPath("tiny", "F32"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::unique_ptr<Backend> backend = MakeCpuBackend(2);
  auto model = LoadModel(**file, backend.get());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  auto cache = KvCache::Create(backend.get(), KvCacheConfig{c.n_layer, c.n_head_kv, c.head_dim, 16, 8, DType::kF32});
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();

  std::vector<int32_t> prompt;
  for (int i = 0; i < 21; ++i) prompt.push_back((i * 37 + 3) % c.n_vocab);
  GenerationSession with_logits(model->get(), cache->get(), /*n_batch=*/8);
  std::vector<float> logits(static_cast<size_t>(c.n_vocab));
  ASSERT_TRUE(with_logits.Append(prompt, logits.data()).ok());
  std::vector<int32_t> expected;
  for (int step = 0; step < 6; ++step) {
    expected.push_back(ArgMax(logits.data(), c.n_vocab));
    ASSERT_TRUE(with_logits.Append({expected.back()}, logits.data()).ok());
  }
  with_logits.Reset();

  GenerationSession greedy(model->get(), cache->get(), /*n_batch=*/8);
  int32_t next = -1;
  ASSERT_TRUE(greedy.AppendGreedy(prompt, &next).ok());
  for (int step = 0; step < 6; ++step) {
    EXPECT_EQ(next, expected[static_cast<size_t>(step)]) << "step " << step;
    ASSERT_TRUE(greedy.AppendGreedy({next}, &next).ok());
  }
  EXPECT_EQ(greedy.n_past(), 21 + 6);
  greedy.Reset();

  // DecodeGreedy, pipelined (the llama model queues passes; each step takes the previous one's
  // choice on the device) and one step at a time: the same choices as the logits path.
  ASSERT_TRUE((*model)->CanQueue());
  for (const bool sync : {false, true}) {
    SCOPED_TRACE(sync ? "sync" : "pipelined");
    GenerationSession s(model->get(), cache->get(), /*n_batch=*/8);
    int32_t first = -1;
    ASSERT_TRUE(s.AppendGreedy(prompt, &first).ok());
    EXPECT_EQ(first, expected[0]);
    std::vector<int32_t> out;
    ASSERT_TRUE(s.DecodeGreedy(first, 5, sync, &out).ok());
    EXPECT_EQ(out, std::vector<int32_t>(expected.begin() + 1, expected.end()));
    EXPECT_EQ(s.n_past(), 21 + 5);
    std::vector<int32_t> fed = prompt;
    fed.insert(fed.end(), expected.begin(), expected.begin() + 5);
    EXPECT_EQ(s.tokens(), fed);
    ASSERT_TRUE(s.DecodeGreedy(first, 0, sync, &out).ok());
    EXPECT_TRUE(out.empty());
  }
}

}  // namespace
}  // namespace herd
