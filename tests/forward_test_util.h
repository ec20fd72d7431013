// Shared by the forward-pass tests (forward_test.cc: CPU vs reference; cuda_forward_test.cc: GPU
// vs CPU): a model with its backend and KV cache, and a sequence run alone.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace herd::testing {

struct LoadedForward {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<KvCache> cache;
};

// The model at `path` on `backend`, with a cache of n_blocks blocks of 16 tokens.
inline LoadedForward LoadForward(const std::string& path, std::unique_ptr<Backend> backend, int32_t n_blocks,
                                 DType kv_type = DType::kF16) {
  LoadedForward l;
  auto f = GgufFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  l.file = std::move(f).value();
  l.backend = std::move(backend);
  auto m = LoadModel(*l.file, l.backend.get());
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  l.model = std::move(m).value();
  const ModelConfig& c = l.model->config();
  KvCacheConfig kc{c.n_layer, c.n_head_kv, c.head_dim, 16, n_blocks, kv_type};
  l.cache = std::move(KvCache::Create(l.backend.get(), kc)).value();
  return l;
}

// Appends tokens p[from, to) at positions from.. as sequence `seq` of b.
inline void AppendTokens(ForwardBatch& b, const std::vector<int32_t>& p, size_t from, size_t to, int32_t seq) {
  for (size_t i = from; i < to; ++i) {
    b.tokens.push_back(p[i]);
    b.pos.push_back(static_cast<int32_t>(i));
    b.seq.push_back(seq);
  }
}

// One forward pass of prompt p at positions 0.. as sequence 0 in `blocks`: the last row's logits.
inline std::vector<float> RunAlone(LoadedForward& l, const std::vector<int32_t>& p, std::vector<int32_t> blocks) {
  ForwardBatch b;
  AppendTokens(b, p, 0, p.size(), 0);
  b.block_tables = {std::move(blocks)};
  b.logit_rows = {static_cast<int32_t>(p.size()) - 1};
  std::vector<float> logits(static_cast<size_t>(l.model->config().n_vocab));
  EXPECT_TRUE(l.model->Forward(b, l.cache->layers(), logits.data()).ok());
  return logits;
}

// logits[top] minus the largest other logit (top: the argmax). Another path whose logits are
// within d of these everywhere picks the same top-1 token wherever this margin exceeds 2 d: the
// steps with a margin of at most 2 d are the near ties, the only ones where the tokens can differ.
inline float TopTwoMargin(const std::vector<float>& logits, int32_t top) {
  float second = -INFINITY;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (static_cast<int32_t>(i) != top) second = std::max(second, logits[i]);
  }
  return logits[static_cast<size_t>(top)] - second;
}

}  // namespace herd::testing
