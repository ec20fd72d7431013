// Shared by the engine's end-to-end tests: an engine over the tiny random test model (reference
// backend unless asked otherwise), prompts and greedy requests. HERD_TEST_DEVICE=cuda runs the
// same tests on the GPU backend instead of the reference one (on the device machine: the
// scheduler, prefix cache, preemption and embeddings over device memory, graphs and argmax).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "io/gguf.h"
#include "model/test_models.h"

namespace herd::testing {

// What an ended stream delivered, per choice index: tokens, text, and the finishing event.
struct Outcome {
  std::map<int32_t, std::vector<int32_t>> tokens;
  std::map<int32_t, std::string> text;
  std::map<int32_t, EngineEvent> finish;
  std::map<int32_t, std::vector<float>> logprobs;                  // per token event (NaN unless requested)
  std::map<int32_t, std::vector<std::vector<TokenLogprob>>> tops;  // per token event (top_logprobs)
};

// Drains a stream that has ended (steps must have been run).
inline Outcome Drain(RequestStream& s) {
  Outcome o;
  EngineEvent ev;
  while (s.TryNext(&ev)) {
    o.text[ev.index] += ev.text;
    if (ev.kind == EngineEvent::Kind::kToken) {
      o.tokens[ev.index].push_back(ev.token);
      o.logprobs[ev.index].push_back(ev.logprob);
      o.tops[ev.index].push_back(ev.top);
    } else {
      o.finish[ev.index] = ev;
    }
  }
  EXPECT_TRUE(s.ended());
  return o;
}

struct Fixture {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<KvCache> cache;
  std::unique_ptr<Engine> engine;
};

struct EngineSetup {
  int32_t n_blocks = 64;
  int32_t block_size = 16;
  int32_t max_batch_tokens = 512;
  int32_t max_running = 64;
  int32_t max_waiting = 1024;
  int32_t n_ctx = 0;
  bool prefix_caching = true;
  bool cpu = false;
  DType kv_type = DType::kF16;
  std::string cache_key = "tiny-F32";
  // Pipelined decoding (EngineOptions::pipeline): HERD_TEST_PIPELINE=on forces it on host
  // backends too (the e2e suites run once more that way), =off turns it off everywhere.
  EngineOptions::Pipeline pipeline = PipelineFromEnv();
  int32_t sampling_threads = 0;  // EngineOptions::sampling_threads

  static EngineOptions::Pipeline PipelineFromEnv() {
    const char* e = std::getenv("HERD_TEST_PIPELINE");
    if (e != nullptr && std::string(e) == "on") return EngineOptions::Pipeline::kOn;
    if (e != nullptr && std::string(e) == "off") return EngineOptions::Pipeline::kOff;
    return EngineOptions::Pipeline::kAuto;
  }
};

inline Fixture Make(const EngineSetup& s) {
  Fixture f;
  f.file = std::move(GgufFile::Open(TestModelPath("tiny", "F32"))).value();
  const char* device = std::getenv("HERD_TEST_DEVICE");
  if (!s.cpu && device != nullptr && *device != '\0') {
    f.backend = std::move(MakeBackend(std::move(ParseDevice(device)).value(), 2)).value();
  } else {
    f.backend = s.cpu ? MakeCpuBackend(2) : MakeReferenceBackend();
  }
  f.model = std::move(LoadModel(*f.file, f.backend.get())).value();
  f.tokenizer = std::move(Tokenizer::FromGguf(*f.file)).value();
  const ModelConfig& c = f.model->config();
  KvCacheConfig kc{c.n_layer, c.n_head_kv, c.head_dim, s.block_size, s.n_blocks, s.kv_type};
  f.cache = std::move(KvCache::Create(f.backend.get(), kc)).value();
  EngineOptions o;
  o.scheduler.max_batch_tokens = s.max_batch_tokens;
  o.scheduler.max_running = s.max_running;
  o.scheduler.max_waiting = s.max_waiting;
  o.n_ctx = s.n_ctx;
  o.prefix_caching = s.prefix_caching;
  o.cache_key = s.cache_key;
  o.pipeline = s.pipeline;
  o.sampling_threads = s.sampling_threads;
  f.engine = std::move(Engine::Create(f.model.get(), f.cache.get(), f.tokenizer.get(), o)).value();
  return f;
}

inline std::vector<int32_t> Prompt(int n, int seed, int32_t n_vocab) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(static_cast<int32_t>(rng() % static_cast<unsigned>(n_vocab)));
  return p;
}

inline GenerationRequest Greedy(std::vector<int32_t> prompt, int32_t max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

}  // namespace herd::testing
