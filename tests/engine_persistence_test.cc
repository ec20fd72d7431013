// Prefix cache persistence end to end: an engine saves the KV blocks of a prompt, a fresh engine
// (new KV cache, same model file) loads them and serves the same prompt from cache with the
// same greedy output as without any cache.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "io/file_identity.h"
#include "io/gguf.h"
#include "model/test_models.h"

namespace herd {
namespace {

using ::testing::HasSubstr;

using testing::EngineSetup;
using testing::Fixture;
using testing::Greedy;
using testing::Prompt;

// A fresh engine over the tiny test model, keyed by the model file's identity.
Fixture Make(bool prefix_caching = true, DType kv_type = DType::kF16, int32_t n_blocks = 64) {
  EngineSetup s;
  s.prefix_caching = prefix_caching;
  s.kv_type = kv_type;
  s.n_blocks = n_blocks;
  s.cache_key = FileIdentityAt(testing::TestModelPath("tiny", "F32")).value();
  return testing::Make(s);
}

struct Outcome {
  std::vector<int32_t> tokens;
  Usage usage;
};

Outcome RunToEnd(Engine& e, const GenerationRequest& r) {
  auto stream = e.Submit(r);
  EXPECT_TRUE(stream.ok()) << stream.status().ToString();
  Outcome o;
  if (!stream.ok()) return o;
  for (int n = 0; e.Busy(); ++n) {
    e.Step();
    e.CheckInvariants();
    EXPECT_LT(n, 10000);
  }
  EngineEvent ev;
  while ((*stream)->TryNext(&ev)) {
    if (ev.kind == EngineEvent::Kind::kToken) o.tokens.push_back(ev.token);
    if (ev.kind == EngineEvent::Kind::kFinished) o.usage = ev.usage;
  }
  return o;
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/herd-engine-persist-" + std::to_string(getpid()) + "-" + name;
}

TEST(EnginePersistenceTest, AFreshEngineServesASavedPromptFromCacheWithTheSameGreedyTokens) {
  Fixture cold = Make(/*prefix_caching=*/false);
  const auto req = Greedy(Prompt(100, 11, cold.model->config().n_vocab), 12);
  const Outcome want = RunToEnd(*cold.engine, req);
  ASSERT_EQ(want.tokens.size(), 12u);

  const std::string path = TempPath("a.kvc");
  {
    Fixture a = Make();
    const Outcome first = RunToEnd(*a.engine, req);
    EXPECT_EQ(first.usage.cached_tokens, 0);
    EXPECT_EQ(first.tokens, want.tokens);
    ASSERT_TRUE(a.engine->SavePrefixCache(path, {req.prompt}).ok());
  }
  Fixture b = Make();
  auto loaded = b.engine->LoadPrefixCache(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(*loaded, 6);                        // 100 tokens: 6 full blocks of 16
  EXPECT_EQ(b.engine->kv().free_blocks(), 64);  // loaded blocks are cached, not held
  const Outcome got = RunToEnd(*b.engine, req);
  EXPECT_EQ(got.usage.cached_tokens, 96);
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(b.engine->stats().prompt_tokens_computed, 4);
  std::remove(path.c_str());
}

TEST(EnginePersistenceTest, PinnedPrefixesAreSavedAndOtherKvTypesRefuseTheFile) {
  Fixture a = Make();
  const int32_t n_vocab = a.model->config().n_vocab;
  const auto system = Prompt(70, 21, n_vocab);
  auto req = Greedy(system, 4);
  req.pins.push_back({64, std::chrono::seconds(3600)});
  RunToEnd(*a.engine, req);
  EXPECT_EQ(a.engine->kv().pinned_blocks(), 4);
  const std::string path = TempPath("pins.kvc");
  ASSERT_TRUE(a.engine->SavePrefixCache(path, {}).ok());  // the pins alone

  Fixture b = Make();
  EXPECT_EQ(*b.engine->LoadPrefixCache(path), 4);
  auto other = system;
  for (int32_t t : Prompt(9, 22, n_vocab)) other.push_back(t);
  const Outcome got = RunToEnd(*b.engine, Greedy(other, 3));
  EXPECT_EQ(got.usage.cached_tokens, 64);

  Fixture q8 = Make(true, DType::kQ8_0);
  auto r = q8.engine->LoadPrefixCache(path);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("another model, KV type or block size"));
  EXPECT_THAT(r.status().message(), HasSubstr("|F16|16'"));
  EXPECT_THAT(r.status().message(), HasSubstr("|Q8_0|16'"));
  EXPECT_EQ(q8.engine->kv().pool().cached_count(), 0);
  std::remove(path.c_str());
}

TEST(EnginePersistenceTest, ASmallerPoolLoadsWhatFitsAndStillHits) {
  Fixture a = Make();
  const auto req = Greedy(Prompt(100, 31, a.model->config().n_vocab), 2);
  RunToEnd(*a.engine, req);
  const std::string path = TempPath("small.kvc");
  ASSERT_TRUE(a.engine->SavePrefixCache(path, {req.prompt}).ok());
  Fixture b = Make(true, DType::kF16, /*n_blocks=*/10);
  // Hold 7 blocks in a running request so that only 3 are empty.
  auto hold = b.engine->Submit(Greedy(Prompt(100, 32, b.model->config().n_vocab), 5));
  ASSERT_TRUE(hold.ok());
  b.engine->Step();
  ASSERT_EQ(b.engine->kv().free_blocks(), 3);
  EXPECT_EQ(*b.engine->LoadPrefixCache(path), 3);
  b.engine->CheckInvariants();
  b.engine->Cancel((*hold)->id());
  b.engine->Step();
  EXPECT_EQ(RunToEnd(*b.engine, req).usage.cached_tokens, 48);
  std::remove(path.c_str());
}

// The fixture (and the test model file) is made before the fork: the child that aborts
// starts the loop itself, and the parent removes the model file at exit.
TEST(EnginePersistenceDeathTest, SavingOrLoadingWhileTheLoopRunsAborts) {
  Fixture f = Make();
  EXPECT_DEATH(
      {
        f.engine->Start();
        (void)f.engine->LoadPrefixCache(TempPath("never.kvc"));
      },
      "LoadPrefixCache while the engine loop runs");
  EXPECT_DEATH(
      {
        f.engine->Start();
        (void)f.engine->SavePrefixCache(TempPath("never.kvc"), {});
      },
      "SavePrefixCache while the engine loop runs");
  f.engine->Start();
  f.engine->Stop();
  EXPECT_EQ(f.engine->LoadPrefixCache(TempPath("never.kvc")).status().code(),
            StatusCode::kNotFound);  // after Stop: fine
}

}  // namespace
}  // namespace herd
